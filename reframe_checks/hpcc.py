"""HPC Challenge 1.5.0: HPL, DGEMM, STREAM, PTRANS, RandomAccess and FFT in
one MPI run over the nodes of a partition.

``Hpcc`` writes ``hpccinf.txt`` (HPL's N from a fraction of the nodes'
memory, a multiple of NB; P x Q as square as possible; PTRANS at N/2), runs
``hpcc`` (Debian's package, or Spack's) with one rank per physical core,
and reads the summary section of ``hpccoutf.txt``. Sanity: ``Success=1``
and the HPL residual PASSED with the closing count matching. Smoke mode
caps N (seconds, not a measurement of the machine); on the emulated local
cluster one rank runs per node, since the nodes share this machine's cores.

Override with ``-S Hpcc.num_nodes=N``, ``-S Hpcc.problem_size=N``,
``-S Hpcc.memory_fraction=0.5``.
"""

import os

import reframe as rfm
from reframe.core.builtins import run_after, sanity_function, variable
from reframe.core.exceptions import SanityError

from clusterproof.methods import hpl
from clusterproof.checklib.api import (ClusterproofCheck, OneRankPerCore, partition_node_count,
                                       performance_figure, pinned_spec)
from clusterproof.parsers import hpcc as hpcc_parser

#: N of smoke runs (seconds on two cores)
SMOKE_N = 1000


@rfm.simple_test
class Hpcc(rfm.RunOnlyRegressionTest, ClusterproofCheck, OneRankPerCore):
    descr = 'HPC Challenge 1.5.0 (HPL, DGEMM, STREAM, PTRANS, RandomAccess, FFT) over MPI'
    valid_systems = ['*']
    valid_prog_environs = ['*']
    tags = {'compute', 'memory', 'hpcc'}
    time_limit = '30m'
    keep_files = ['hpccinf.txt', 'hpccoutf.txt']

    #: nodes of the run; 0 = every node of the partition
    num_nodes = variable(int, value=0)

    #: HPL's N; 0 = from memory_fraction of the nodes' memory (capped in smoke mode)
    problem_size = variable(int, value=0)

    #: fraction of the nodes' memory HPL's matrix fills
    memory_fraction = variable(float, value=hpl.DEFAULT_MEMORY_FRACTION)

    #: blocking factor; 0 = declared extras['hardware']['hpl_nb'] or 192
    block_size = variable(int, value=0)

    @run_after('setup')
    def find_hpcc(self):
        # hpcc has no version option: the version comes from its summary after the run
        self.executable = self.use_binary('hpcc', pinned_spec('hpcc'), version_argv=['true'])

    @run_after('setup')
    def set_ranks(self):
        part = self.current_partition
        if self.num_nodes == 0:
            with self.configuration():
                self.num_nodes = partition_node_count(part)
        self.set_mpi_ranks(self.num_nodes)

    @run_after('setup')
    def write_input(self):
        self.problem_size, nb = hpl.input_size(
            self.declared('hardware'), self.num_nodes, self.memory_fraction, self.block_size,
            self.problem_size, smoke_n=SMOKE_N if self.cp_smoke else None, smoke_max_nb=80)
        p, q = hpl.process_grid(self.num_tasks)
        with open(os.path.join(self.stagedir, 'hpccinf.txt'), 'w') as fp:
            fp.write(hpl.hpccinf(self.problem_size, nb, p, q))

    def result(self):
        return self.parsed_output(hpcc_parser.parse, 'hpccoutf.txt')

    @sanity_function
    def hpcc_succeeded(self):
        summary = self.result()['summary']
        self.binary_version = '.'.join(str(summary.get(k, '?')) for k in
                                       ('VersionMajor', 'VersionMinor', 'VersionMicro'))
        why = hpcc_parser.verdict(self.result())
        if why:
            raise SanityError(why)
        return True

    def figure(self, name):
        value = self.result()['summary'].get(name)
        if not isinstance(value, (int, float)):
            raise SanityError(f'hpccoutf.txt: summary has no number for {name}')
        return value

    @performance_figure('Tflops', lower_is_better=False)
    def HPL_Tflops(self):
        return self.figure('HPL_Tflops')

    @performance_figure('Gflops', lower_is_better=False)
    def StarDGEMM_Gflops(self):
        return self.figure('StarDGEMM_Gflops')

    @performance_figure('GB/s', lower_is_better=False)
    def StarSTREAM_Triad(self):
        return self.figure('StarSTREAM_Triad')

    @performance_figure('GB/s', lower_is_better=False)
    def SingleSTREAM_Triad(self):
        return self.figure('SingleSTREAM_Triad')

    @performance_figure('GB/s', lower_is_better=False)
    def PTRANS_GBs(self):
        return self.figure('PTRANS_GBs')

    @performance_figure('GUPs', lower_is_better=False)
    def MPIRandomAccess_GUPs(self):
        return self.figure('MPIRandomAccess_GUPs')

    @performance_figure('Gflops', lower_is_better=False)
    def MPIFFT_Gflops(self):
        return self.figure('MPIFFT_Gflops')
