"""md-workbench: metadata and small-file rates of the file system under
test, as IO500 measures them (IOR 4's ``md-workbench``).

    md-workbench -P <precreate per set> -I <objects per set> -D <sets> -R <iterations>
                 -S 3901 -O <offset> -o <dir>

Each task precreates ``-D`` data sets of ``-P`` objects, then, ``-R``
times, in each set reads, stats and deletes ``-I`` objects that another
task wrote and creates ``-I`` new ones; the cleanup phase removes them all.
T tasks (``threads``, from the mode) are dealt round-robin over the client
nodes exactly as for IOR and mdtest (docs/ior-mdtest.md); ``-O`` (the offset
between a writer and its reader, in ranks) is the stride that puts them on
different client nodes, as mdtest's ``-N`` (recorded in ``mdwb_offset``).
Objects are 3901 bytes (IO500's size).

``-S cp_scale=tiny`` keeps the mode's task counts, placement and options
with one data set of at most 10 objects per task (figures flagged smoke). A
task count above the system's ``extras['storage']['max_threads']``
skips, naming the limit (clusterproof/checklib/storage.py).

The test directory is created by the job under the partition's scratch
directory only and removed when the job ends, also when md-workbench fails
(clusterproof/checklib/testdirs.py).

Sanity: the precreate, every benchmark iteration and the cleanup phase are
reported with no error, the task count matches, no ``WARNING:`` or
``ERROR`` line. Figures (iops/s): the rate of each phase (the benchmark's
mean over its iterations) and the slowest single operation of the
benchmark phase (seconds).
"""

import reframe as rfm
from reframe.core.builtins import (parameter, run_after, run_before,
                                   sanity_function, variable)
from reframe.core.exceptions import SanityError

from clusterproof.checklib.api import (ClusterproofCheck, METADATA_THREADS, RoundRobinRanks,
                                       StorageScale, TestDirectories, by_mode, performance_figure,
                                       pinned_spec)
from clusterproof.methods import sizing
from clusterproof.parsers import md_workbench as mdwb_parser
from clusterproof.parsers.mdtest import stride

MD_WORKBENCH_SPEC = pinned_spec('ior')      # md-workbench comes with IOR 4


@rfm.simple_test
class MdWorkbench(rfm.RunOnlyRegressionTest, ClusterproofCheck, RoundRobinRanks, StorageScale,
                  TestDirectories):
    descr = 'md-workbench metadata and small-file rates (precreate, benchmark, cleanup)'
    valid_systems = ['*']
    valid_prog_environs = ['*']
    tags = {'storage', 'md-workbench'}
    benchmark = 'md-workbench'
    time_limit = '2h'

    #: T, the number of tasks (MPI ranks)
    threads = parameter(by_mode(METADATA_THREADS), type=int)

    #: objects precreated per data set (-P)
    precreate_per_set = variable(int, value=by_mode({'smoke': 100, 'nightly': 1000,
                                                     'acceptance': 3000}))

    #: objects read, deleted and created per data set and iteration (-I)
    objects_per_set = variable(int, value=by_mode({'smoke': 10, 'nightly': 100,
                                                   'acceptance': 1000}))

    #: data sets per task (-D)
    data_sets = variable(int, value=by_mode({'smoke': 2, 'nightly': 10, 'acceptance': 10}))

    #: iterations of the benchmark phase (-R)
    iterations = variable(int, value=by_mode({'smoke': 1, 'nightly': 3, 'acceptance': 3}))

    #: bytes of each object (-S)
    object_bytes = variable(int, value=3901)

    #: what ran (logged with each result)
    mdwb_offset = variable(int, value=0)
    mdwb_test_dir = variable(str, value='')

    @run_after('setup')
    def find_md_workbench(self):
        # md-workbench has no version option; the version comes from its output.
        self.executable = self.use_binary('md-workbench', MD_WORKBENCH_SPEC,
                                          version_argv=['true'])

    @run_after('setup')
    def place_tasks(self):
        self.declared_storage()
        if self.tiny():
            self.data_sets = 1
            self.precreate_per_set = min(self.precreate_per_set, sizing.TINY_FILES_PER_TASK)
        self.objects_per_set = min(self.objects_per_set, self.precreate_per_set)
        self.place_threads()
        self.mdwb_offset = stride(self.placement.order())

    @run_before('run')
    def make_test_dir(self):
        self.test_dir = self.test_directory(self.declared('storage', 'scratch'),
                                            f'md-workbench-t{self.threads}')
        self.mdwb_test_dir = str(self.test_dir)

    @run_before('run')
    def set_command(self):
        self.executable_opts = [
            '-P', str(self.precreate_per_set), '-I', str(self.objects_per_set),
            '-D', str(self.data_sets), '-R', str(self.iterations),
            '-S', str(self.object_bytes), '-O', str(self.mdwb_offset),
            '-o', f'{self.test_dir}/md-workbench']

    def result(self):
        return self.parsed_output(mdwb_parser.parse)

    @sanity_function
    def phases_reported(self):
        run = self.result()
        self.refuse_problems(run, 'md-workbench')
        counts = {name: len(run.of(name)) for name in mdwb_parser.PHASES}
        want = {'precreate': 1, 'benchmark': self.iterations, 'cleanup': 1}
        if counts != want or not run.finished:
            raise SanityError(f'{run.source}: md-workbench reported phases {counts}, expected '
                              f'{want} and its "Total runtime" line')
        failed = [p.name for p in run.phases if p.errors]
        if failed:
            raise SanityError(f'{run.source}: md-workbench counted errors in its '
                              f'{", ".join(dict.fromkeys(failed))} phase')
        if run.tasks != self.threads:
            raise SanityError(f'{run.source}: md-workbench ran {run.tasks} tasks, expected '
                              f'{self.threads}')
        self.binary_version = run.version or self.binary_version
        return True

    @performance_figure('iops/s', lower_is_better=False)
    def precreate_rate(self):
        return self.result().rate('precreate')

    @performance_figure('iops/s', lower_is_better=False)
    def benchmark_rate(self):
        return self.result().rate('benchmark')

    @performance_figure('iops/s', lower_is_better=False)
    def cleanup_rate(self):
        return self.result().rate('cleanup')

    @performance_figure('s', lower_is_better=True)
    def benchmark_op_max(self):
        return max(p.op_max for p in self.result().of('benchmark'))
