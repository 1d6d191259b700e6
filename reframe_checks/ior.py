"""IOR N-to-1: T threads write one shared file, then read it back.

The published command (pixstor methodology, docs/ior-mdtest.md; the
arguments come from clusterproof/methods/ior.py, as in slurm/ior-n-to-1.sbatch),
in one job:

    ior -a POSIX -v -i 1 -d 3 -e -k -o <dir>/tst.file -w -s 1 -t 16m -b <FileSize>
    ior -a POSIX -v -i 1 -d 3 -e -k -o <dir>/tst.file -r -C -s 1 -t 16m -b <FileSize>

The read runs only when the write succeeded, on the file the write kept
(``-k``). ``-C`` (reorder tasks) makes each task read what a task on another
client node wrote, so no read is served by the node's own page cache; the
option in force is recorded in ``ior_read_reorder`` (``-S
IorSharedFile.read_reorder=`` turns it off, ``-Z`` picks random reordering).

T (``threads``) comes from the mode: 1..512 in powers of two in acceptance.
Threads are dealt round-robin over the client nodes (clusterproof/methods/placement.py):
``srun --distribution=cyclic`` under Slurm's srun launcher, a hostfile with
one client node per rank (written in the job by ``clusterproof placement``)
under mpirun, and mpirun on this machine for the ``local`` system.

FileSize per thread: at least 2 x the RAM of clients and servers in all,
divided by T (clusterproof/methods/sizing.py); smoke mode uses small sizes with
``--posix.odirect`` and marks the results smoke. The test directory is
created by the job under the partition's scratch directory only and removed
when the job ends, also when IOR fails (clusterproof/checklib/testdirs.py).

``-S cp_scale=tiny`` keeps the mode's thread counts, placement and options
(``-C`` included) and writes 1 MiB per thread (figures flagged smoke). A
thread count above the system's ``extras['storage']['max_threads']`` skips,
naming the limit (clusterproof/checklib/storage.py).

Sanity: the output holds the two runs (write, read), both finished with a
summary, the access was one shared file, reads reordered as asked, and no
``WARNING:`` or ``ERROR`` line anywhere (the line is quoted). Figures: write
and read bandwidth, Max and Mean, in
MiB/s (IOR's unit) and GB/s (the published unit); the per-iteration
bandwidths are in ``ior_iterations`` and in the stage directory's output.
"""

import shlex

import reframe as rfm
from reframe.core.builtins import (parameter, run_after, run_before,
                                   sanity_function, variable)
from reframe.core.exceptions import SanityError

from clusterproof.methods import ior
from clusterproof.checklib.api import (ClusterproofCheck, ParseError, RoundRobinRanks, StorageScale,
                                       TestDirectories, by_mode, performance_figure, pinned_spec)
from clusterproof.parsers import ior as ior_parser

IOR_SPEC = pinned_spec('ior')


@rfm.simple_test
class IorSharedFile(rfm.RunOnlyRegressionTest, ClusterproofCheck, RoundRobinRanks,
                    StorageScale, TestDirectories):
    descr = 'IOR N-to-1 (one shared file): write, then read with -C, bandwidth Max/Mean'
    valid_systems = ['*']
    valid_prog_environs = ['*']
    tags = {'storage', 'ior'}
    benchmark = 'ior'
    published_plan = 2
    time_limit = '2h'

    #: T, the number of threads (MPI ranks)
    threads = parameter(by_mode({'smoke': [1, 2, 4], 'nightly': [1, 4, 16, 64],
                                 'acceptance': [2 ** i for i in range(10)]}),
                        type=int)

    #: read reordering: '-C' (another node's data), '-Z' (random) or '' (none)
    read_reorder = variable(str, value='-C')

    #: total data written; '' = at least 2 x RAM of clients and servers (smoke: small)
    total = variable(str, value='')

    #: transfer size (IOR -t); '' = declared storage transfer_size or 16m
    transfer_size = variable(str, value='')

    #: repetitions (-i) and delay between them in seconds (-d), as published
    repetitions = variable(int, value=1)
    delay = variable(int, value=3)

    #: what ran (logged with each result)
    ior_block_size = variable(str, value='')
    ior_transfer_size = variable(str, value='')
    ior_direct_io = variable(bool, value=False)
    ior_read_reorder = variable(str, value='')
    ior_test_dir = variable(str, value='')
    ior_iterations = variable(str, value='')

    @run_after('setup')
    def find_ior(self):
        # IOR has no --version option; the version comes from its output banner.
        self.executable = self.use_binary('ior', IOR_SPEC, version_argv=['true'])

    @run_after('setup')
    def size_files(self):
        storage = self.declared_storage()
        size = self.storage_sizes(storage, total=self.total, transfer=self.transfer_size)
        self.ior_block_size = size.per_thread_arg
        self.ior_transfer_size = size.transfer_arg
        self.ior_direct_io = size.direct_io
        self.total_bytes = size.total

    @run_after('setup')
    def place_ranks(self):
        self.place_threads()

    @run_before('run')
    def make_test_dir(self):
        self.test_dir = self.test_directory(self.declared('storage', 'scratch'),
                                            f'ior-t{self.threads}', self.total_bytes,
                                            f'IOR with {self.threads} threads')
        self.ior_test_dir = str(self.test_dir)

    @run_before('run')
    def set_commands(self):
        self.ior_read_reorder = self.read_reorder
        self.executable_opts = self.ior_options('write')
        self.job.num_tasks = self.num_tasks      # the launcher's -np / --ntasks
        launch = self.job.launcher.run_command(self.job)
        read = shlex.join([self.executable] + self.ior_options('read'))
        self.postrun_cmds = [
            'ior_write_status=$?',
            f'if [ $ior_write_status -eq 0 ]; then {launch} {read}; fi',
            'ior_read_status=$?',
            'exit $(( ior_write_status != 0 ? ior_write_status : ior_read_status ))',
        ]

    def ior_options(self, phase):
        return ior.argv(phase, self.test_dir, self.ior_transfer_size, self.ior_block_size,
                        self.repetitions, self.delay, self.read_reorder, self.ior_direct_io)

    def runs(self):
        """``{'write': IorRun, 'read': IorRun}`` from the job's output."""
        if not hasattr(self, '_runs'):
            stdout, stderr, out, err = self.read_job_output('IOR')
            errors, warnings = ior_parser.problem_lines(stdout, stderr)
            problems = errors + warnings
            if problems:
                more = f' (and {len(problems) - 1} more)' if len(problems) > 1 else ''
                raise SanityError(f'IOR reported: {problems[0]!r}{more}; see {out} and {err}')
            parts = ior_parser.split_runs(stdout)
            if len(parts) > 2:
                raise SanityError(f'{out} holds {len(parts)} IOR runs; the job runs one write '
                                  f'and one read: is the output appended to?')
            self._runs = {}
            for i, text in enumerate(parts, 1):
                try:
                    run = ior_parser.parse_text(text, f'{out} (IOR run {i})')
                except ParseError as exc:
                    raise SanityError(str(exc)) from None
                for op in run.summary:
                    self._runs[op] = run
        return self._runs

    @sanity_function
    def both_phases_valid(self):
        runs = self.runs()
        for phase in ior_parser.OPERATIONS:
            if phase not in runs:
                raise SanityError(f'no IOR {phase} result in {self.job.stdout} '
                                  f'(phases found: {", ".join(runs) or "none"})')
            why = ior_parser.check_access(runs[phase], ior_parser.SHARED_FILE)
            if why:
                raise SanityError(why)
            if runs[phase].tasks != self.threads:
                raise SanityError(f'IOR {phase} ran {runs[phase].tasks} tasks, '
                                  f'expected {self.threads}')
        if bool(self.read_reorder) != runs['read'].reorder:
            raise SanityError(f'IOR read reordering: asked {self.read_reorder or "none"!r}, '
                              f'IOR reported reorder={runs["read"].reorder}')
        self.binary_version = runs['write'].version or self.binary_version
        self.ior_iterations = ' '.join(
            f'{r["operation"]}[{r["iter"]}]={r["bw_mib"]:g}MiB/s'
            for phase in ior_parser.OPERATIONS for r in runs[phase].iterations
            if r['operation'] == phase)
        return True

    def bw(self, phase, stat, unit):
        return self.runs()[phase].bandwidth(phase, stat, unit)

    @performance_figure('MiB/s', lower_is_better=False)
    def write_max(self):
        return self.bw('write', 'max', 'MiB/s')

    @performance_figure('MiB/s', lower_is_better=False)
    def write_mean(self):
        return self.bw('write', 'mean', 'MiB/s')

    @performance_figure('MiB/s', lower_is_better=False)
    def read_max(self):
        return self.bw('read', 'max', 'MiB/s')

    @performance_figure('MiB/s', lower_is_better=False)
    def read_mean(self):
        return self.bw('read', 'mean', 'MiB/s')

    @performance_figure('GB/s', lower_is_better=False)
    def write_max_gbs(self):
        return self.bw('write', 'max', 'GB/s')

    @performance_figure('GB/s', lower_is_better=False)
    def read_max_gbs(self):
        return self.bw('read', 'max', 'GB/s')
