"""HPL 2.3: double-precision LU solve over MPI, one rank per physical core.

``Hpl`` writes ``HPL.dat`` (N from a fraction of the nodes' memory, default
80 %, rounded down to a multiple of NB; NB declared per processor as
``extras['hardware']['hpl_nb']``, default 192; P x Q as square as possible,
P <= Q) and runs ``xhpl`` from the Spack view on 1 node and, in acceptance
mode, on 2, 4, ... up to the partition's size or 64 nodes. Smoke mode caps N
(seconds, not a measurement of the machine).

Sanity: every residual line PASSED (both the ``0.0038237`` and the
``3.87059020e-03`` formats), none FAILED, and the closing count of passed
tests equals the number of result rows. Figures: Gflops (Rmax) and, where
the partition declares clock and FLOPs per cycle, efficiency = Rmax / Rpeak
with Rpeak = nodes x cores x clock x DP FLOPs per cycle.

Override with ``-S Hpl.problem_size=N``, ``-S Hpl.memory_fraction=0.5``,
``-S Hpl.block_size=224``.
"""

import os

import reframe as rfm
from reframe.core.builtins import (parameter, run_after, run_before,
                                   sanity_function, variable)
from reframe.core.exceptions import SanityError

from clusterproof.methods import hpl
from clusterproof.checklib.api import (ClusterproofCheck, OneRankPerCore, by_mode,
                                       partition_node_count, performance_figure, pinned_spec)
from clusterproof.parsers import hpl as hpl_parser

#: N of smoke runs (seconds on two cores)
SMOKE_N = 2000


@rfm.simple_test
class Hpl(rfm.RunOnlyRegressionTest, ClusterproofCheck, OneRankPerCore):
    descr = 'HPL 2.3 (Rmax and efficiency against Rpeak), single node and multi-node scaling'
    valid_systems = ['*']
    valid_prog_environs = ['*']
    tags = {'compute', 'hpl'}
    time_limit = '2h'
    keep_files = ['HPL.dat']

    #: nodes of the run: 1, 2, 4, ... up to 64 in acceptance mode
    num_nodes = parameter(by_mode({'smoke': [1], 'nightly': [1],
                                   'acceptance': hpl.scaling_nodes(hpl.MAX_SCALING_NODES)}))

    #: N; 0 = from memory_fraction of the nodes' memory (capped in smoke mode)
    problem_size = variable(int, value=0)

    #: fraction of the nodes' memory the matrix fills
    memory_fraction = variable(float, value=hpl.DEFAULT_MEMORY_FRACTION)

    #: blocking factor; 0 = declared extras['hardware']['hpl_nb'] or 192
    block_size = variable(int, value=0)

    @run_after('setup')
    def find_xhpl(self):
        # xhpl has no version option (it would start a run): the version comes
        # from its output header after the run
        self.executable = self.use_binary('xhpl', pinned_spec('hpl'), version_argv=['true'])

    @run_after('setup')
    def set_ranks(self):
        part = self.current_partition
        with self.configuration():
            available = partition_node_count(part)
        self.skip_if(self.num_nodes > available,
                     f'{self.num_nodes} nodes asked, {part.fullname} has {available}')
        self.set_mpi_ranks(self.num_nodes)

    @run_after('setup')
    def write_hpl_dat(self):
        self.problem_size, self.block_size = hpl.input_size(
            self.declared('hardware'), self.num_nodes, self.memory_fraction, self.block_size,
            self.problem_size, smoke_n=SMOKE_N if self.cp_smoke else None)
        p, q = hpl.process_grid(self.num_tasks)
        with open(os.path.join(self.stagedir, 'HPL.dat'), 'w') as fp:
            fp.write(hpl.hpl_dat(self.problem_size, self.block_size, p, q))

    def result(self):
        return self.parsed_output(hpl_parser.parse)

    @sanity_function
    def residuals_passed(self):
        out = self.result()
        why = hpl_parser.verdict(out)
        if why:
            raise SanityError(why)
        self.binary_version = out['version'] or self.binary_version
        return True

    @run_before('performance')
    def drop_efficiency_without_rpeak(self):
        if hpl.declared_rpeak_gflops(self.declared('hardware'), self.num_nodes) is None:
            self.perf_variables.pop('efficiency', None)

    @performance_figure('Gflops', lower_is_better=False)
    def gflops(self):
        return max(r['gflops'] for r in self.result()['results'])

    @performance_figure('%', lower_is_better=False)
    def efficiency(self):
        rpeak = hpl.declared_rpeak_gflops(self.declared('hardware'), self.num_nodes)
        return 100.0 * max(r['gflops'] for r in self.result()['results']) / rpeak
