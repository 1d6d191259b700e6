"""Node screening (``clusterproof screen``): every node of a partition
measured with the node-level checks and judged against its peers.

- :mod:`clusterproof.screen.judge`: the judgement, pure functions, with
  its parts: the peers' median, MAD and distances
  (:mod:`clusterproof.screen.stats`), the inventory against the peers'
  (:mod:`clusterproof.screen.peerinventory`), the verdicts and their
  ranking (:mod:`clusterproof.screen.verdicts`), the table, drain lines
  and JSON (:mod:`clusterproof.screen.output`);
- :mod:`clusterproof.screen.results`: samples from ReFrame run reports;
- :mod:`clusterproof.screen.jobs`: one Slurm job per node running every
  check on it (ReFrame inside the job), watched, resumed;
- :mod:`clusterproof.screen.run`: a screening's rounds (first run, repeats
  of outliers), the node pairs;
- :mod:`clusterproof.screen.page`: the screening as one HTML page.

See ``docs/screening.md``.
"""
