"""Small checks for the reliability tests: long enough to be hit by a fault,
short enough for the test suite.

``ReliabilityQuick``  one task prints its host name; one figure (the task
                      count), so a completed result lands in the perflog and
                      the results database.
``ReliabilityHold``   one task per client node: each writes a file into the
                      test's own directory under the scratch directory
                      (clusterproof.checklib.testdirs, as the storage checks do), holds
                      for ``hold`` seconds (or until the file ``release``
                      exists, when given), then reports done. A node that dies
                      meanwhile fails sanity with a message naming it.
``ReliabilityHang``   a program that never ends; the mode's time limit ends it
                      and the failure says timeout.
"""

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import (run_after, run_before,
                                   sanity_function, variable)
from reframe.core.exceptions import SanityError

from clusterproof.methods import job_failure
from clusterproof.modes import by_mode
from clusterproof.checklib.base import ClusterproofCheck
from clusterproof.reframe_io.figures import performance_figure
from clusterproof.checklib.testdirs import TestDirectories


class SlurmPlacement(rfm.RegressionTestPlugin):
    #: Slurm nodes this test must not run on (``-S avoid_nodes=n2``): the node
    #: test kills n2 and only ReliabilityHold is meant to be on it
    avoid_nodes = variable(str, value='')

    #: ``sbatch --begin`` (e.g. ``now+1hour``): the job stays queued, to be
    #: cancelled before it runs
    begin = variable(str, value='')

    @run_before('run')
    def slurm_options(self):
        if self.current_partition.scheduler.registered_name != 'slurm':
            return
        if self.avoid_nodes:
            self.job.options += [f'--exclude={self.avoid_nodes}']
        if self.begin:
            self.job.options += [f'--begin={self.begin}']


@rfm.simple_test
class ReliabilityQuick(rfm.RunOnlyRegressionTest, ClusterproofCheck, SlurmPlacement):
    descr = 'One task prints its host name (a result that completes)'
    valid_systems = ['emu:srun', 'local']
    valid_prog_environs = ['*']
    num_tasks = 1
    time_limit = '1m'

    @run_after('setup')
    def find_hostname(self):
        self.executable = self.use_binary('hostname', 'hostname')

    @sanity_function
    def printed_a_name(self):
        return sn.assert_found(r'^\S+\s*$', self.stdout)

    @performance_figure('count', lower_is_better=False)
    def tasks(self):
        return sn.count(sn.extractall(r'^(\S+)\s*$', self.stdout, 1))


@rfm.simple_test
class ReliabilityHold(rfm.RunOnlyRegressionTest, ClusterproofCheck, TestDirectories):
    descr = 'One task per client node writes a file in its test directory and holds'
    valid_systems = ['emu:srun', 'local']
    valid_prog_environs = ['*']
    num_tasks_per_node = 1
    time_limit = '2m'

    #: seconds each task holds before reporting done
    hold = variable(int, value=30)

    #: a file: each task stops holding as soon as it exists (a test creates
    #: it when it has seen what it waited for), ``hold`` seconds at most
    release = variable(str, value='')

    @run_after('setup')
    def one_task_per_node(self):
        nodes = 1
        if self.current_partition.scheduler.registered_name != 'local':
            nodes = int(self.declared('storage', 'client_nodes'))
        self.num_tasks = nodes

    @run_after('setup')
    def find_sleep(self):
        self.sleep = self.use_binary('sleep', 'coreutils')

    @run_before('run')
    def make_test_dir(self):
        self.test_dir = self.test_directory(self.declared('storage', 'scratch'), 'hold')
        hold = f'{self.sleep} {self.hold}'
        if self.release:
            hold = (f't=0; while [ ! -e {self.release} ] && [ $t -lt {self.hold} ]; '
                    f'do {self.sleep} 1; t=$((t+1)); done')
        self.executable = 'sh'
        self.executable_opts = ['-c', f"'h=$(hostname); echo start $h; "
                                      f"echo data > {self.test_dir}/file.$h; "
                                      f"{hold}; echo done $h'"]

    @sanity_function
    def every_node_done(self):
        done = sn.evaluate(sn.extractall(r'^done (\S+)', self.stdout, 1))
        if len(set(done)) == self.num_tasks:
            return True
        stdout, stderr, _, _ = self.read_job_output()
        cause = job_failure.failure_cause(stdout + stderr, self.job.state, self.time_limit)
        raise SanityError(f'{len(set(done))} of {self.num_tasks} nodes finished '
                          f'({", ".join(sorted(set(done))) or "none"}); {cause or "cause unknown"}')


@rfm.simple_test
class ReliabilityHang(rfm.RunOnlyRegressionTest, ClusterproofCheck, SlurmPlacement):
    descr = 'A program that never ends: the time limit of the mode ends it'
    valid_systems = ['emu:srun', 'local']
    valid_prog_environs = ['*']
    executable_opts = ['3600']
    num_tasks = 1
    time_limit = by_mode({'smoke': '10s', 'nightly': '1m', 'acceptance': '5m'})

    @run_after('setup')
    def find_sleep(self):
        self.executable = self.use_binary('sleep', 'coreutils')

    @sanity_function
    def finished(self):
        stdout, stderr, _, _ = self.read_job_output()
        text = stdout + stderr
        if 'never printed' in text:
            return True
        cause = job_failure.failure_cause(text, self.job.state, self.time_limit)
        raise SanityError(cause or 'the program ended without output '
                                   f'(Slurm state {self.job.state})')


@rfm.simple_test
class ReliabilityExit(rfm.RunOnlyRegressionTest, ClusterproofCheck, SlurmPlacement):
    descr = 'A program that prints what a good run prints, then exits with a status or a signal'
    valid_systems = ['emu:srun', 'local']
    valid_prog_environs = ['*']
    num_tasks = 1
    time_limit = '2m'

    #: the program's end: ``exit N`` or ``kill -SIG`` (itself)
    end = variable(str, value='exit 3')

    @run_after('setup')
    def find_sh(self):
        self.executable = self.use_binary('sh', 'dash', version_argv=['true'])
        self.executable_opts = ['-c', f"'echo all done; echo something broke >&2; {self.end}'"]

    @run_before('run')
    def keep_going_after_the_program(self):
        # what a check does after its program: the recorded status is the program's
        self.postrun_cmds = ['echo after the program']

    @sanity_function
    def printed_all_done(self):
        return sn.assert_found(r'^all done', self.stdout)
