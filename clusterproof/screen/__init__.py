"""Node screening (``clusterproof screen``): every node of a partition
measured with the node-level checks and judged against its peers.

- :mod:`clusterproof.screen.judge`: the judgement, pure functions (peers'
  median and MAD, distances, verdicts, ranking, drain lines);
- :mod:`clusterproof.screen.results`: samples from ReFrame run reports;
- :mod:`clusterproof.screen.run`: ReFrame with ``--distribute=all`` over the
  nodes in batches, the repeats of outliers.

See ``docs/screening.md``.
"""
