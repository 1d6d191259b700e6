"""mdtest: metadata rates of the file system under test.

    mdtest -n <files per task> -u -N <stride> -i <repetitions> -w 3901 -e 3901 -d <dir>

T tasks (``threads``, from the mode) are dealt round-robin over the client
nodes exactly as for IOR (docs/ior-mdtest.md): ``srun --distribution=cyclic``,
a hostfile under mpirun, mpirun on this machine for ``local``. Each task
works in a directory of its own (``-u``); ``-N`` shifts the tasks between
phases so that the stat and read phases touch files another client node
created (1 under round-robin placement: the next rank is on the next node;
the stride is computed from the placement and recorded in ``mdtest_stride``).
``-w``/``-e`` write and read 3901 bytes per file (IO500's size), so the read
phase reads data, not just open/close (without them mdtest warns).

``-S cp_scale=tiny`` keeps the mode's task counts, placement and options and
creates at most 10 files per task (figures flagged smoke). A task count
above the system's ``extras['storage']['max_threads']`` skips, naming the
limit (clusterproof/checklib/storage.py).

The test directory is created by the job under the partition's scratch
directory only and removed when the job ends, also when mdtest fails
(clusterproof/checklib/testdirs.py).

Sanity: the ``SUMMARY rate`` table is there with every reported operation,
the task count matches, no ``WARNING:`` or ``ERROR`` line. Figures (ops/s,
mean over the repetitions): file creation, stat, read, removal, tree
creation and removal; never taken from the ``SUMMARY time`` table.
"""

import reframe as rfm
from reframe.core.builtins import (parameter, run_after, run_before,
                                   sanity_function, variable)
from reframe.core.exceptions import SanityError

from clusterproof.checklib.api import (ClusterproofCheck, METADATA_THREADS, ParseError,
                                       RoundRobinRanks, StorageScale, TestDirectories, by_mode,
                                       performance_figure, pinned_spec)
from clusterproof.parsers import mdtest as mdtest_parser
from clusterproof.methods import sizing

MDTEST_SPEC = pinned_spec('ior')      # mdtest comes with IOR

#: the reported rows and their figure names
FIGURES = {
    'file_creation': 'File creation', 'file_stat': 'File stat', 'file_read': 'File read',
    'file_removal': 'File removal', 'tree_creation': 'Tree creation',
    'tree_removal': 'Tree removal',
}


@rfm.simple_test
class Mdtest(rfm.RunOnlyRegressionTest, ClusterproofCheck, RoundRobinRanks, StorageScale,
             TestDirectories):
    descr = 'mdtest metadata rates (file creation, stat, read, removal; tree creation, removal)'
    valid_systems = ['*']
    valid_prog_environs = ['*']
    tags = {'storage', 'mdtest'}
    benchmark = 'mdtest'
    published_plan = 3
    time_limit = '2h'

    #: T, the number of tasks (MPI ranks)
    threads = parameter(by_mode(METADATA_THREADS), type=int)

    #: files (and directories) per task (-n)
    files_per_task = variable(int, value=by_mode({'smoke': 50, 'nightly': 1000,
                                                  'acceptance': 10000}))

    #: repetitions (-i)
    repetitions = variable(int, value=by_mode({'smoke': 1, 'nightly': 3, 'acceptance': 3}))

    #: bytes written to and read from each file (-w, -e)
    file_bytes = variable(int, value=3901)

    #: what ran (logged with each result)
    mdtest_stride = variable(int, value=0)
    mdtest_test_dir = variable(str, value='')

    @run_after('setup')
    def find_mdtest(self):
        # mdtest has no version option; the version comes from its output.
        self.executable = self.use_binary('mdtest', MDTEST_SPEC, version_argv=['true'])

    @run_after('setup')
    def place_tasks(self):
        self.declared_storage()
        if self.tiny():
            self.files_per_task = min(self.files_per_task, sizing.TINY_FILES_PER_TASK)
        self.place_threads()
        self.mdtest_stride = mdtest_parser.stride(self.placement.order())

    @run_before('run')
    def make_test_dir(self):
        self.test_dir = self.test_directory(self.declared('storage', 'scratch'),
                                            f'mdtest-t{self.threads}')
        self.mdtest_test_dir = str(self.test_dir)

    @run_before('run')
    def set_command(self):
        self.executable_opts = [
            '-n', str(self.files_per_task), '-u', '-N', str(self.mdtest_stride),
            '-i', str(self.repetitions), '-w', str(self.file_bytes), '-e', str(self.file_bytes),
            '-d', f'{self.test_dir}/mdtest']

    def result(self):
        if not hasattr(self, '_result'):
            stdout, stderr, out, _err = self.read_job_output('mdtest')
            try:
                self._result = mdtest_parser.parse(stdout, out, stderr=stderr)
            except ParseError as exc:
                raise SanityError(str(exc)) from None
        return self._result

    @sanity_function
    def rates_reported(self):
        run = self.result()
        self.refuse_problems(run, 'mdtest')
        missing = [op for op in FIGURES.values() if op not in run.rates]
        if missing:
            raise SanityError(f'{run.source}: no {", ".join(missing)} in the SUMMARY rate table')
        if run.tasks != self.threads:
            raise SanityError(f'{run.source}: mdtest ran {run.tasks} tasks, expected '
                              f'{self.threads}')
        self.binary_version = run.version or self.binary_version
        return True

    @performance_figure('ops/s', lower_is_better=False)
    def file_creation(self):
        return self.result().rate(FIGURES['file_creation'])

    @performance_figure('ops/s', lower_is_better=False)
    def file_stat(self):
        return self.result().rate(FIGURES['file_stat'])

    @performance_figure('ops/s', lower_is_better=False)
    def file_read(self):
        return self.result().rate(FIGURES['file_read'])

    @performance_figure('ops/s', lower_is_better=False)
    def file_removal(self):
        return self.result().rate(FIGURES['file_removal'])

    @performance_figure('ops/s', lower_is_better=False)
    def tree_creation(self):
        return self.result().rate(FIGURES['tree_creation'])

    @performance_figure('ops/s', lower_is_better=False)
    def tree_removal(self):
        return self.result().rate(FIGURES['tree_removal'])
