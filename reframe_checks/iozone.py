"""IOzone N-to-N: T threads, one file each, dealt round-robin over the
client nodes (the published pixstor methodology; docs/storage.md).

``IOzoneSequential``: write pass, then read pass, transfer 16 MiB::

    iozone -i0 -c -e -w -r 16M -s <FileSize> -t T -+n -+m threadlist -+h <master>
    iozone -i1 -c -e -w -r 16M -s <FileSize> -t T -+n -+m threadlist -+h <master>

``IOzoneRandom``: the files are created with the sequential write pass, then
random 4 KiB reads and writes in operations per second::

    iozone -i2 -O -w -r 4K -s <Size> -t T -+n -+m threadlist -+h <master>

Cluster mode, started through Slurm: the job holds min(T, client nodes)
nodes; ``clusterproof placement`` writes the ``-+m`` threadlist from
``$SLURM_JOB_NODELIST`` in the job (one line per thread, round-robin), and
IOzone starts each client with ``$RSH <client_node> -n '<command>'`` where
``RSH`` is ``slurm/iozone-rsh`` (copied to the stage directory): it runs the
client as a step of the job (``srun --overlap -N1 -n1 -w <client_node>``).
The master runs in the job script on the first node; ``-+h`` gives the
clients its address. On the ``local`` system (no scheduler) the threadlist
names this machine and the wrapper starts the clients here: the same cluster
mode code path of IOzone, on one node.

Sizes: at least 2 x the RAM of clients and servers in all, divided by T
(clusterproof/methods/sizing.py); smoke mode uses small files with ``-I`` (O_DIRECT)
and marks the results smoke. Files live in a directory of their own under the
partition's scratch directory, created by the job and removed when it exits,
again after the run, and by the next run if the job was interrupted
(clusterproof/checklib/testdirs.py).

``-S cp_scale=tiny`` keeps the mode's thread counts, placement and command
lines and writes 1 MiB per thread (figures flagged smoke): the acceptance
plan at its real shape where its bytes do not fit (clusterproof published-shape).
A thread count above the system's ``extras['storage']['max_threads']`` skips,
naming the limit (clusterproof/checklib/storage.py).

Stonewalling stays IOzone's default (as published): when the first thread
finishes, the others stop. A run where that cut the work (``Min xfer`` below
the file size) is flagged in ``iozone_stonewalled`` (test and fraction of
the file moved), never hidden; ``-S stonewall=false`` passes ``-x``.

Figures: sequential in GB/s (10^9 B/s, as published; IOzone's kB/s are
1024 B/s) with the slowest and fastest process in MB/s; random in IOPS.
"""

import os
import shlex
import shutil
from pathlib import Path

import reframe as rfm
from reframe.core.backends import getlauncher
from reframe.core.builtins import (parameter, run_after, run_before,
                                   sanity_function, variable)
from reframe.core.exceptions import SanityError

from clusterproof.methods import iozone
from clusterproof.checklib.api import (ClusterproofCheck, REPO, StorageScale, TestDirectories,
                                       ThreadPlacement, by_mode, performance_figure, pinned_spec)
from clusterproof.parsers import iozone as iozone_parser
from clusterproof.paths import private_dir, user_path

IOZONE_SPEC = pinned_spec('iozone')
RSH_WRAPPER = REPO / 'slurm' / 'iozone-rsh'
THREADLIST = 'threadlist'
#: serializes one user's IOzone runs on a machine without scheduler (fixed
#: ports), in the user's private tmpfs directory (mode 0700): no other user can
#: create, replace or hold it. A lock every user may take is one any user may
#: hold forever; two users' runs are not kept apart (docs/reliability.md)
LOCAL_LOCK = 'iozone.lock'


class IOzoneBase(rfm.RunOnlyRegressionTest, ClusterproofCheck, ThreadPlacement, StorageScale,
                 TestDirectories):
    valid_systems = ['*']
    valid_prog_environs = ['*']
    sourcesdir = None
    tags = {'storage', 'iozone'}
    benchmark = 'iozone'
    published_plan = 1
    time_limit = by_mode({'smoke': '10m', 'nightly': '2h', 'acceptance': '12h'})

    #: keep IOzone's stonewalling (published); false passes -x
    stonewall = variable(bool, value=True)

    #: total data written; '' = the declared total or 2 x RAM of clients and
    #: servers (smoke: small files with direct I/O)
    total = variable(str, value='')

    #: the master's address the clients connect back to (-+h); a shell
    #: expression is evaluated in the job on the first node
    master_address = variable(str, value='$(hostname)')

    #: what ran (logged with each result)
    iozone_file_size = variable(str, value='')
    iozone_record_size = variable(str, value='')
    iozone_direct_io = variable(bool, value=False)
    iozone_test_dir = variable(str, value='')
    #: tests cut short by stonewalling, 'test=fraction' ('' when none)
    iozone_stonewalled = variable(str, value='')

    #: which IOzone passes run: 'sequential' or 'random' (set by subclasses)
    kind = 'sequential'

    @run_after('setup')
    def find_iozone(self):
        self.iozone_path = self.use_binary('iozone', IOZONE_SPEC, version_argv=['{exe}', '-v'])
        with self.configuration():
            iozone.check_threads(self.threads, self.binary_version)

    @run_after('setup')
    def size_files(self):
        storage = self.declared_storage()
        self.size = self.storage_sizes(storage, total=self.total)
        self.iozone_file_size = self.size.per_thread_arg
        self.iozone_record_size = self.size.transfer_arg
        self.iozone_direct_io = self.size.direct_io

    @run_after('setup')
    def place_clients(self):
        # One task per client node: the job holds the nodes, the IOzone clients
        # run as overlapping steps started by the RSH wrapper.
        self.place_threads(one_task_per_node=True)
        # IOzone 3.489 listens on fixed ports (20000 and up) and has no option
        # to move them: two IOzone runs on one node collide and hang. Whole
        # nodes under a scheduler; one run at a time on a node without one.
        if self.current_partition.scheduler.registered_name != 'local' and \
                '--exclusive' not in self.current_partition.access:
            self.job.options += ['--exclusive']

    @run_before('run')
    def make_test_dir(self):
        self.test_dir = self.test_directory(
            self.declared('storage', 'scratch'), self.unique_name, self.size.total,
            f'IOzone {self.kind} with {self.threads} threads')
        self.iozone_test_dir = str(self.test_dir)

    @run_before('run')
    def start_master_in_job_script(self):
        self.job.launcher = getlauncher('local')()

    def local_lock(self):
        """The lock of this user's local IOzone runs (the job runs on this
        machine): in the user's own /dev/shm/clusterproof-<uid> (0700)."""
        mine = Path(user_path('/dev/shm/clusterproof'))
        if not self.is_dry_run():
            with self.configuration():
                private_dir(mine)
        return mine / LOCAL_LOCK

    @run_before('run')
    def set_commands(self):
        shutil.copy2(RSH_WRAPPER, os.path.join(self.stagedir, RSH_WRAPPER.name))
        if self.current_partition.scheduler.registered_name == 'local':
            nodes = '$(hostname)'
        else:
            nodes = '$SLURM_JOB_NODELIST'
        self.prerun_cmds = [] if nodes != '$(hostname)' else [
            f'exec 9>>{shlex.quote(str(self.local_lock()))} && flock 9',
        ]
        self.prerun_cmds += [
            self.placement_command(nodes, 'threadlist', '--workdir', str(self.test_dir),
                                   '--iozone', self.iozone_path) + f' > {THREADLIST} || exit 2',
            f'export RSH="$PWD/{RSH_WRAPPER.name}"',
            iozone.space_watchdog(self.test_dir),
        ]
        first, second = self.passes()
        self.executable = iozone.command_line(first, self.master_address)
        self.executable_opts = []
        self.postrun_cmds = [
            'iozone_first_status=$?',
            f'if [ $iozone_first_status -eq 0 ]; then '
            f'{iozone.command_line(second, self.master_address)}; fi',
            'iozone_second_status=$?',
            iozone.stop_space_watchdog(),
            'exit $(( iozone_first_status != 0 ? iozone_first_status : iozone_second_status ))',
        ]

    def passes(self):
        raise NotImplementedError

    def results(self):
        return self.parsed_output(iozone_parser.parse)

    @sanity_function
    def both_passes_complete(self):
        _stdout, stderr, _out, _err = self.read_job_output('IOzone')
        full = [line.strip() for line in stderr.splitlines() if iozone.NO_SPACE_MESSAGE in line]
        if full:
            raise SanityError(full[0])
        parsed = self.results()
        runs = parsed['runs']
        if len(runs) != 2:
            raise SanityError(f'expected 2 IOzone runs in {self.job.stdout}, found {len(runs)}')
        for run in runs:
            if run['threads'] != self.threads or not run['cluster_mode']:
                raise SanityError(f'IOzone ran {run["threads"]} threads (cluster mode: '
                                  f'{run["cluster_mode"]}); expected {self.threads} in '
                                  f'cluster mode: {run["command"]}')
        for name in self.expected_tests:
            entry = iozone_parser.find_test(parsed, name)
            if entry['threads'] != self.threads:
                raise SanityError(f'IOzone {name}: {entry["threads"]} children reported, '
                                  f'expected {self.threads}')
        walled = iozone_parser.stonewalled_tests(parsed)
        self.iozone_stonewalled = ','.join(f'{name}={frac:.3f}'
                                           for name, frac in sorted(walled.items()))
        self.binary_version = parsed['version'] or self.binary_version
        return True

    def figure(self, test, key='children'):
        return iozone_parser.find_test(self.results(), test)[key]


@rfm.simple_test
class IOzoneSequential(IOzoneBase):
    descr = 'IOzone N-to-N sequential: write then read, one file per thread, GB/s'
    threads = parameter(iozone.thread_list('sequential'))
    kind = 'sequential'
    expected_tests = ('initial writers', 'readers')

    def passes(self):
        return iozone.sequential_passes(self.iozone_path, self.size, self.threads, THREADLIST,
                                        self.stonewall)

    @performance_figure('GB/s', lower_is_better=False)
    def write_gbs(self):
        return iozone_parser.to_gbps(self.figure('initial writers'))

    @performance_figure('GB/s', lower_is_better=False)
    def read_gbs(self):
        return iozone_parser.to_gbps(self.figure('readers'))

    @performance_figure('MB/s', lower_is_better=False)
    def write_min_process(self):
        return iozone_parser.to_mbps(self.figure('initial writers', 'min'))

    @performance_figure('MB/s', lower_is_better=False)
    def write_max_process(self):
        return iozone_parser.to_mbps(self.figure('initial writers', 'max'))

    @performance_figure('MB/s', lower_is_better=False)
    def read_min_process(self):
        return iozone_parser.to_mbps(self.figure('readers', 'min'))

    @performance_figure('MB/s', lower_is_better=False)
    def read_max_process(self):
        return iozone_parser.to_mbps(self.figure('readers', 'max'))


@rfm.simple_test
class IOzoneRandom(IOzoneBase):
    descr = 'IOzone N-to-N random 4 KiB: files created sequentially, then random I/O, IOPS'
    threads = parameter(iozone.thread_list('random'))
    kind = 'random'
    expected_tests = ('initial writers', 'random readers', 'random writers')

    def passes(self):
        return iozone.random_passes(self.iozone_path, self.size, self.threads, THREADLIST,
                                    self.stonewall)

    @performance_figure('IOPS', lower_is_better=False)
    def random_write(self):
        return self.figure('random writers')

    @performance_figure('IOPS', lower_is_better=False)
    def random_read(self):
        return self.figure('random readers')

    @performance_figure('IOPS', lower_is_better=False)
    def random_write_min_process(self):
        return self.figure('random writers', 'min')

    @performance_figure('IOPS', lower_is_better=False)
    def random_read_min_process(self):
        return self.figure('random readers', 'min')
