"""Hardware inventory: does every node have what the site configuration
declares?

``SystemInventory`` runs one task per node; each task prints its node's
report (``clusterproof inventory --report``). Sanity compares
sockets, cores per socket, threads per core, NUMA nodes and memory with the
partition's ``extras['hardware']``, and the GPUs of each node (``nvidia-smi
-L``, ``rocm-smi`` or ``/sys/class/drm``, and its Slurm record) with the
partition's ``devices`` of type ``gpu``, and fails with one message per
mismatch, naming node, field, expected and found.

``PmemProvisioning`` does the same for persistent memory where a partition
declares ``extras['pmem']``: ``ipmctl show -memoryresources`` (memory mode
or App Direct, capacities), ``ipmctl show -topology`` (DIMM population),
``ndctl list -N`` (namespaces) and the DAX mounts.

The tasks run the Python that runs ReFrame, with this repository on
``PYTHONPATH``: on a cluster, the repository and its ``.venv/`` must be on a
file system the compute nodes share.

Check a node against other figures than the declared ones with ``-S``, e.g.
``-S SystemInventory.expect_memory_gib=512 -S SystemInventory.expect_numa_nodes=8``.
"""

import os
import shutil
import subprocess

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_after, run_before, sanity_function, variable
from reframe.core.exceptions import SanityError

from clusterproof.site import inventory
from clusterproof.parsers import ipmctl
from clusterproof.site import pmem
from clusterproof.checklib.api import ClusterproofCheck, command, partition_node_count

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _NodeReport(rfm.RunOnlyRegressionTest, ClusterproofCheck):
    """One report per node of the partition (base of both checks)."""

    #: nodes to inspect; 0 means every node the partition declares
    #: (clusterproof.site.hardware.partition_node_count; 1 under the local scheduler)
    num_nodes = variable(int, value=0)

    #: ``--pmem`` adds the ipmctl/ndctl output to each report
    report_args = variable(list, value=['--report'])

    @run_after('setup')
    def set_node_count(self):
        if self.num_nodes == 0:
            with self.configuration():
                self.num_nodes = partition_node_count(self.current_partition)
        self.num_tasks = self.num_nodes
        self.num_tasks_per_node = 1

    @run_before('run')
    def set_report_command(self):
        self.executable, *opts = command('inventory')
        self.executable_opts = opts + self.report_args
        self.env_vars['PYTHONPATH'] = REPO

    def node_reports(self):
        text = sn.evaluate(sn.extractall(rf'^{inventory.REPORT_TAG} .*$', self.stdout))
        try:
            return inventory.parse_reports('\n'.join(text), source=str(sn.evaluate(self.stdout)))
        except ValueError as err:
            raise SanityError(str(err)) from None


@rfm.simple_test
class SystemInventory(_NodeReport):
    descr = 'Every node has the declared sockets, cores, threads per core, NUMA nodes and memory'
    valid_systems = ['*']
    valid_prog_environs = ['*']
    tags = {'inventory', 'system'}
    time_limit = '5m'

    #: check the nodes against these figures instead of the declared ones
    expect_sockets = variable(int, type(None), value=None)
    expect_cores_per_socket = variable(int, type(None), value=None)
    expect_threads_per_core = variable(int, type(None), value=None)
    expect_numa_nodes = variable(int, type(None), value=None)
    expect_memory_gib = variable(float, type(None), value=None)
    expect_gpus = variable(int, type(None), value=None)

    #: MemTotal may be this many percent below the declared memory
    memory_tolerance_pct = variable(float, value=inventory.MEMORY_TOLERANCE_PCT)

    def expected_hardware(self):
        hw = dict(self.declared('hardware'))
        gpus = inventory.declared_gpus(self.current_partition.devices)
        if gpus is not None:
            hw['gpus'] = hw['slurm_gpus'] = gpus
        for key in inventory.EXACT_FIELDS + ('memory_gib', 'gpus'):
            override = getattr(self, f'expect_{key}')
            if override is not None:
                hw[key] = override
        return hw

    @sanity_function
    def nodes_match_declaration(self):
        problems = inventory.compare_reports(
            self.expected_hardware(), self.node_reports(),
            expected_nodes=self.num_nodes, tolerance_pct=self.memory_tolerance_pct)
        if problems:
            raise SanityError(f'{len(problems)} mismatch(es) with the declared hardware: '
                              + inventory.format_mismatches(problems))
        return True


@rfm.simple_test
class PmemProvisioning(_NodeReport):
    descr = ('Persistent memory is provisioned as declared: memory mode or App Direct, '
             'DIMMs, namespaces, DAX mounts')
    valid_systems = ['*']
    valid_prog_environs = ['*']
    tags = {'inventory', 'pmem'}
    time_limit = '5m'
    report_args = ['--report', '--pmem']

    @run_after('setup')
    def skip_without_pmem(self):
        self.skip_if(self.declared('pmem', default=None) is None,
                     f'{self.current_partition.fullname} declares no persistent memory '
                     "(extras['pmem'])")
        if self.current_partition.scheduler.registered_name != 'local':
            return      # the compute nodes answer; a missing tool there fails sanity
        missing = [t for t in ('ipmctl', 'ndctl') if shutil.which(t) is None]
        self.skip_if(missing, f'{" and ".join(missing)} not installed on this node '
                              '(apt-get install ipmctl ndctl)')
        probe = subprocess.run(['ipmctl', 'show', '-topology'], capture_output=True, text=True)
        reason = ipmctl.no_pmem_reason(probe.stdout + probe.stderr)
        self.skip_if(reason is not None, f'no persistent memory modules on this node: {reason}')

    @sanity_function
    def provisioning_matches_declaration(self):
        declared = self.declared('pmem')
        reports = self.node_reports()
        problems = []
        for rep in reports:
            node, tools = rep.get('node', '?'), rep.get('pmem', {})
            gone = [f'{" ".join(t["argv"])}: {t["missing"]}'
                    for t in tools.values() if isinstance(t, dict) and t.get('missing')]
            if gone or 'mounts' not in tools:
                problems.append(inventory.Mismatch(
                    node, 'pmem tools', 'ipmctl, ndctl and /proc/mounts',
                    '; '.join(gone) or tools.get('mounts_error', 'no report')))
                continue
            problems += pmem.compare_pmem(
                node, declared, tools['memoryresources']['stdout'] +
                tools['memoryresources']['stderr'], tools['topology']['stdout'] +
                tools['topology']['stderr'], tools['namespaces']['stdout'], tools['mounts'])
        if len(reports) != self.num_nodes:
            problems.append(inventory.Mismatch('job', 'nodes reporting', self.num_nodes,
                                               len(reports)))
        if problems:
            raise SanityError(f'{len(problems)} mismatch(es) with the declared persistent '
                              'memory: ' + inventory.format_mismatches(problems))
        return True
