"""What the storage checks share beyond the thread placement: the scale of
their sizes and the thread counts a system declares it cannot hold. A
storage check mixes this in and sets ``benchmark``; that declaration is the
list of storage benchmarks (clusterproof/methods/declared.py).

``-S cp_scale=tiny`` keeps the mode's plan (thread counts, client nodes,
round-robin placement, command lines) and shrinks only the bytes per thread
(clusterproof/methods/sizing.py). Its figures are flagged smoke
(``cp_smoke``), so they are never compared with references or blessed, and
tagged ``tiny``; ``cp_scale`` is logged with every result.

A thread count above ``extras['storage']['max_threads']`` (see
:func:`clusterproof.methods.placement.over_declared_limit`) SKIPS with the
limit and the key that declared it: the system says it cannot hold that
many, as a system without ``extras['storage']`` says it has no file system
to test. A malformed limit is a configuration error and FAILS.
"""

import reframe as rfm
from reframe.core.builtins import run_after, variable
from reframe.core.exceptions import SanityError

from clusterproof.methods import placement, sizing

#: the task counts (``threads``) of the metadata benchmarks, per mode: mdtest
#: and md-workbench scan the same ones, so that their figures sit side by side
METADATA_THREADS = {'smoke': [2, 4], 'nightly': [4, 16, 64],
                    'acceptance': [2 ** i for i in range(10)]}


class StorageScale(rfm.RegressionTestPlugin):
    """Mixed into the storage checks next to ClusterproofCheck; the check
    sets ``benchmark`` (its key in ``extras['storage']['max_threads']``,
    read by clusterproof/methods/declared.py from the source) and has ``threads``."""

    #: 'full': the mode's sizes; 'tiny': the mode's thread counts and
    #: placement with tiny files (flagged smoke)
    cp_scale = variable(str, value='full')

    #: the storage benchmark, for extras['storage']['max_threads']
    benchmark = ''

    #: its place in the published storage plan that clusterproof published-shape
    #: runs (1, 2, ...; 0: not in it)
    published_plan = 0

    @run_after('init')
    def _cp_tiny_is_smoke(self):
        if self.cp_scale == 'tiny':
            self.cp_smoke = True
            self.tags |= {'smoke', 'tiny'}

    def storage_sizes(self, storage, total=None, transfer=None):
        """Sizes of this check's ``threads`` at its scale (a refusal fails it)."""
        with self.configuration():
            return sizing.compute(storage, self.threads, total=total or None,
                                  transfer=transfer or None, smoke=self.cp_smoke,
                                  scale=self.cp_scale)

    def declared_storage(self):
        """``extras['storage']`` of the partition: skips when there is none,
        or when ``threads`` is more than it declares it holds."""
        storage = self.skip_unless_declared('storage', 'scratch directory, client nodes')
        self.skip_over_declared_thread_limit(storage)
        return storage

    def tiny(self):
        """At ``-S cp_scale=tiny`` (a scale that is not one fails the check)."""
        with self.configuration():
            return sizing.check_scale(self.cp_scale) == 'tiny'

    def refuse_problems(self, run, program):
        """Fail quoting the first ``ERROR``/``WARNING:`` line of a parsed
        ``run`` (its ``problems()``), naming how many more and its source."""
        problems = run.problems()
        if problems:
            more = f' (and {len(problems) - 1} more)' if len(problems) > 1 else ''
            raise SanityError(f'{program} reported: {problems[0]!r}{more}; see {run.source}')

    def skip_over_declared_thread_limit(self, storage):
        """Skip when ``threads`` is above what the system declares it holds."""
        with self.configuration():
            why = placement.over_declared_limit(storage, self.benchmark, self.threads)
        self.skip_if(why is not None, f'{self.current_partition.fullname}: {why}')
