"""A trivial check for the test suite: one task per node prints its host
name. It proves the scheduler and the launcher of a system work (on ``emu``:
Slurm with accounting, ``srun --mpi=pmix`` and ``mpirun``), and it measures
ReFrame's own overhead per test (``scripts/measure_local_cluster.py``)."""

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_before, sanity_function


@rfm.simple_test
class NodeHostnames(rfm.RunOnlyRegressionTest):
    descr = 'One task per node prints its host name'
    valid_systems = ['emu', 'local']
    valid_prog_environs = ['gnu']
    executable = 'hostname'
    num_tasks_per_node = 1
    time_limit = '2m'

    @run_before('run')
    def set_one_task_per_node(self):
        self.num_tasks = self.current_partition.extras['storage']['client_nodes']

    @sanity_function
    def assert_one_name_per_node(self):
        names = sn.extractall(r'^(\S+)\s*$', self.stdout, 1)
        return sn.all([
            sn.assert_eq(sn.count(names), self.num_tasks,
                         msg='expected {1} host names, found {0}'),
            sn.assert_eq(sn.len(sn.defer(set(names))), self.num_tasks,
                         msg='expected {1} distinct host names, found {0}'),
        ])
