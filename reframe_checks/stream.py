"""STREAM 5.10: sustainable memory bandwidth of one node.

``Stream`` runs STREAM with one OpenMP thread per physical core (placement
``cores``) or one per L3 domain (``l3``, a CCX on AMD Rome), and, where the
partition declares NUMA node lists, with its memory bound to DRAM
(``numa_dram``) or to persistent-memory/CXL nodes (``numa_pmem``) through
``numactl --membind``. Memory mode (Optane DCPMM as system memory) is a
system of its own (``pmserver-mm``): the same check there gives the
DRAM-versus-DCPMM comparison.

Figures: Copy, Scale, Add, Triad (MB/s = 10^6 bytes/s, best of NTIMES) and,
where the partition declares memory channels and MT/s, the Triad efficiency
against sockets x channels x MT/s x 8 bytes. Sanity: ``Solution Validates``
and all four kernels reported.

The binary is ``stream_c.exe`` from the Spack view (or PATH) when present;
otherwise ``StreamBuild`` compiles ``stream.c`` (fetched by ``scripts/setup``
from the ReFrame-HPC source distribution) with the array size fixed at
compile time: at least 4 x the total last-level cache the partition declares
(``extras['hardware']['llc_mib']``; never the cache of the machine running
ReFrame), and at least the published 120,000,000 elements outside smoke mode.
Threads come from the declared cores or L3 domains. Override them with
``-S StreamBuild.array_size=N`` and ``-S Stream.threads=N``.

``-S Stream.per_numa=1`` (the screening sets it, ``clusterproof screen``):
after the node's run, STREAM again bound to each NUMA domain in turn, its
cores and its memory (``clusterproof.screen.numa``: the domains the node
lists, counted inside the job; none on a node of one domain), each
domain's Triad reported as ``triad@numa<D>``, judged among the same
domains of the peers.
"""

import os

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import (fixture, parameter, run_after,
                                   run_before, sanity_function, variable)
from reframe.core.exceptions import SanityError

from clusterproof.checklib.api import (ClusterproofCheck, binaries, by_mode,
                                       performance_figure, performance_figure_function,
                                       pinned_spec)
from clusterproof.methods import memory
from clusterproof.parsers import stream as stream_parser
from clusterproof.screen import numa

STREAM_SOURCE = binaries.STREAM_SOURCE
STREAM_SPEC = pinned_spec('stream')


class StreamBuild(rfm.CompileOnlyRegressionTest, ClusterproofCheck):
    """STREAM 5.10 for one partition: the Spack binary, or a build of stream.c."""

    descr = 'STREAM 5.10 binary (Spack stream_c.exe, or stream.c built with the array size)'
    build_system = 'SingleSource'
    sourcesdir = None
    sourcepath = 'stream.c'
    executable = 'stream'

    #: elements per array; 0 = from the partition's declared last-level cache (and the mode)
    array_size = variable(int, value=0)

    #: times each kernel runs (the best is reported); published: 100
    ntimes = variable(int, value=by_mode({'smoke': 10, 'nightly': 20, 'acceptance': 100}))

    #: path of the binary the Stream check runs (set here)
    stream_path = variable(str, value='')

    @run_before('compile')
    def choose_binary(self):
        found = binaries.locate('stream_c.exe')
        if found:
            self.build_system = 'CustomBuild'
            self.build_system.commands = ['true']
            self.stream_path = found.path
            self.binary_path = found.path
            return
        self.skip_if(not STREAM_SOURCE.is_file(),
                     f'no stream_c.exe in the Spack view ({binaries.spack_view()}) or on PATH, '
                     f'and no STREAM source at {STREAM_SOURCE}: run scripts/setup (make setup) '
                     'to fetch it, or build the binary with: '
                     f'{binaries.build_command(STREAM_SPEC)}')
        hw = self.declared('hardware')
        with self.configuration():
            if self.array_size == 0:
                minimum = by_mode({'smoke': 0, 'nightly': memory.PUBLISHED_ARRAY_SIZE,
                                   'acceptance': memory.PUBLISHED_ARRAY_SIZE})
                self.array_size = memory.stream_array_size(
                    self.declared('hardware', 'llc_mib'), minimum)
            if hw.get('memory_gib'):
                memory.check_fits(self.array_size, hw['memory_gib'],
                                  where=f'node of {self.current_partition.fullname}')
        self.prebuild_cmds = [f'cp {STREAM_SOURCE} stream.c']
        omp_flag = self.current_environ.extras.get('omp_flag', '-fopenmp')
        self.build_system.cflags = memory.stream_cflags(self.array_size, self.ntimes, omp_flag)
        self.build_system.executable = self.executable
        self.stream_path = os.path.join(self.stagedir, self.executable)
        self.binary_path = self.stream_path
        self.binary_version = '5.10'

    @sanity_function
    def built(self):
        return os.path.isfile(self.stream_path) and os.access(self.stream_path, os.X_OK)


@rfm.simple_test
class Stream(rfm.RunOnlyRegressionTest, ClusterproofCheck):
    descr = 'STREAM 5.10 memory bandwidth (Copy, Scale, Add, Triad) and Triad efficiency'
    valid_systems = ['*']
    valid_prog_environs = ['+openmp']
    tags = {'memory', 'stream'}

    #: one thread per physical core, or one per L3 domain (CCX)
    placement = parameter(list(memory.PLACEMENTS))

    #: ``local``: the kernel's first-touch placement (as published);
    #: ``dram`` / ``pmem``: ``numactl --membind`` to the declared NUMA nodes
    membind = parameter(by_mode({'smoke': ['local'], 'nightly': ['local', 'dram', 'pmem'],
                                 'acceptance': ['local', 'dram', 'pmem']}))

    #: threads; 0 = from the placement and the declared cores / L3 domains
    threads = variable(int, value=0)

    #: after the node's run, one run bound to each NUMA domain in turn
    #: (``triad@numa<D>``; the screening's); with the first-touch binding only
    per_numa = variable(bool, value=False)

    #: what the run reported (logged with each result)
    stream_array_size = variable(int, value=0)
    stream_threads = variable(int, value=0)

    stream_binary = fixture(StreamBuild, scope='environment')

    num_tasks = 1
    time_limit = '20m'

    @run_after('setup')
    def set_threads(self):
        hw = self.declared('hardware')
        with self.configuration():
            if self.threads == 0:
                self.threads = memory.stream_threads(hw, self.placement)
            self.num_cpus_per_task = memory.stream_threads(hw, 'cores')
        self.env_vars.update(memory.omp_env(self.placement, self.threads))

    @run_after('setup')
    def set_memory_binding(self):
        self.executable = self.stream_binary.stream_path
        self.binary_path = self.stream_binary.binary_path
        if self.membind == 'local':
            if self.per_numa:
                self.postrun_cmds = numa.domain_loop(self.executable)
            return
        nodes = memory.membind_nodes(self.declared('hardware'), self.membind)
        key = {'dram': 'numa_dram', 'pmem': 'numa_pmem'}[self.membind]
        self.skip_if(nodes is None,
                     f"{self.current_partition.fullname} declares no {key} NUMA nodes "
                     f"(extras['hardware'][{key!r}]); nothing to bind to")
        self.executable_opts = [f'--membind={nodes}', self.executable]
        self.executable = 'numactl'

    @run_before('run')
    def unbind_mpirun(self):
        # OpenMPI's mpirun binds a lone rank to one core: let OpenMP place the threads.
        if self.current_partition.launcher_type.registered_name == 'mpirun':
            self.job.launcher.options = ['--bind-to', 'none']

    def result(self):
        return self.parsed_output(_parse_node)

    def domain_results(self):
        """``{domain: parsed run}`` of the per-domain runs (``per_numa``)."""
        return self.parsed_output(_parse_domains)

    @sanity_function
    def solution_validates(self):
        out = self.result()
        if not out['validates']:
            raise SanityError(f'STREAM did not print "{stream_parser.VALIDATES}" '
                              f'({self.job.stdout}): the results are wrong')
        self.stream_array_size = out['array_size'] or 0
        self.stream_threads = out['threads'] or 0
        if self.threads and out['threads'] and out['threads'] != self.threads:
            raise SanityError(f'STREAM counted {out["threads"]} threads, '
                              f'{self.threads} were requested')
        for d, run in (self.domain_results() if self.per_numa else {}).items():
            if not run['validates']:
                raise SanityError(f'STREAM bound to NUMA domain {d} did not print '
                                  f'"{stream_parser.VALIDATES}" ({self.job.stdout})')
        self.binary_version = self.binary_version or '5.10'
        return True

    @run_before('performance')
    def add_domain_figures(self):
        if not self.per_numa or self.is_dry_run():      # --dry-run: nothing ran
            return
        for d, out in self.domain_results().items():
            self.perf_variables[numa.figure(d)] = performance_figure_function(
                sn.defer(out['rates']['Triad']), 'MB/s', lower_is_better=False)

    @run_before('performance')
    def drop_efficiency_without_peak(self):
        if memory.declared_memory_peak_mbs(self.declared('hardware')) is None:
            self.perf_variables.pop('triad_efficiency', None)

    @performance_figure('MB/s', lower_is_better=False)
    def copy(self):
        return self.result()['rates']['Copy']

    @performance_figure('MB/s', lower_is_better=False)
    def scale(self):
        return self.result()['rates']['Scale']

    @performance_figure('MB/s', lower_is_better=False)
    def add(self):
        return self.result()['rates']['Add']

    @performance_figure('MB/s', lower_is_better=False)
    def triad(self):
        return self.result()['rates']['Triad']

    @performance_figure('%', lower_is_better=False)
    def triad_efficiency(self):
        peak = memory.declared_memory_peak_mbs(self.declared('hardware'))
        return memory.efficiency_percent(self.result()['rates']['Triad'], peak)



def _parse_node(text, source='STREAM output'):
    """The node's run of an output that may hold per-domain runs after it."""
    return stream_parser.parse(numa.split(text)[0], source)


def _parse_domains(text, source='STREAM output'):
    """``{domain: parsed run}`` of the per-domain runs (``screen.numa``)."""
    return numa.runs(text, stream_parser.parse, source)[1]
