"""What this machine must allow for a local cluster of N nodes, checked
(and, where a kernel limit is too low, raised) before ``up`` starts
anything: the neighbour (ARP) table, the queue of packets waiting for a
processor, the number of processes, memory.

The neighbour table is one table for all network namespaces: the
controller's entry for every node, every node's entry for the controller
and for the nodes it talks to count against ``gc_thresh3`` (1,024 on a
fresh Linux): above it new neighbours are refused ("neighbour table
overflow") and connections time out. A broadcast (an ARP request) on the
bridges is copied to every node's link, and each copy waits in the
processor's backlog, 1,000 packets on a fresh Linux
(``net.core.netdev_max_backlog``): at 1,024 nodes a few ARP requests at once
overflowed it, packets were dropped (``/proc/net/softnet_stat``) and a job's
launch failed with "Connection timed out". Raised limits are host-wide and
are kept after ``down`` (lowering them again could break another cluster).
"""

from pathlib import Path

from clusterproof import ClusterproofError

#: neighbour entries allowed per node of the cluster (gc_thresh3; gc_thresh2,
#: above which entries are collected sooner, is half of it)
NEIGH_PER_NODE = 16
NEIGH = Path('/proc/sys/net/ipv4/neigh/default')
#: packets waiting for a processor, per node (netdev_max_backlog)
BACKLOG_PER_NODE = 16
BACKLOG = Path('/proc/sys/net/core/netdev_max_backlog')
#: processes and threads per node: slurmd's threads, a job step's slurmstepd
#: threads and its tasks
TASKS_PER_NODE = 16
PID_MAX = Path('/proc/sys/kernel/pid_max')
#: memory per node (MiB): slurmd (about 7 MiB resident), the namespaces,
#: a job step's slurmstepd and a small task
MEM_PER_NODE_MIB = 8


def required(nodes):
    """{setting: least value} for a cluster of ``nodes`` nodes."""
    return {NEIGH / 'gc_thresh3': NEIGH_PER_NODE * nodes,
            NEIGH / 'gc_thresh2': NEIGH_PER_NODE * nodes // 2,
            # below this, entries are never collected: no new ARP storm between jobs
            NEIGH / 'gc_thresh1': NEIGH_PER_NODE * nodes // 4,
            BACKLOG: BACKLOG_PER_NODE * nodes}


def _read_int(path):
    return int(Path(path).read_text().split()[0])


def _tasks():
    """Processes and threads running now."""
    count = 0
    for entry in Path('/proc').iterdir():
        if entry.name.isdigit():
            try:
                count += sum(1 for _ in (entry / 'task').iterdir())
            except OSError:
                pass
    return count


def _mem_available_mib():
    for line in Path('/proc/meminfo').read_text().splitlines():
        if line.startswith('MemAvailable:'):
            return int(line.split()[1]) // 1024
    return None


def prepare_host(nodes):
    """Refuse a cluster this machine has no memory for; raise the kernel
    limits it needs that are lower. Returns one line per limit raised."""
    need_mib = MEM_PER_NODE_MIB * nodes
    avail = _mem_available_mib()
    if avail is not None and avail < need_mib:
        raise ClusterproofError(f'{nodes} nodes need about {need_mib} MiB of memory '
                                f'({MEM_PER_NODE_MIB} MiB each); {avail} MiB is available '
                                '(MemAvailable '
                                f'in /proc/meminfo): use fewer nodes or free memory')
    settings = required(nodes)
    settings[PID_MAX] = _tasks() + TASKS_PER_NODE * nodes
    done = []
    for path, least in settings.items():
        now = _read_int(path)
        if now < least:
            try:
                path.write_text(f'{least}\n')
            except OSError as err:
                raise ClusterproofError(f'{path} is {now}; {nodes} nodes need at least {least} '
                                        f'and it could not be raised ({err.strerror}): '
                                        'raise it as root '
                                        f'(sysctl -w) or use fewer nodes') from None
            done.append(f'raised {path} from {now} to {least} for {nodes} nodes '
                        '(host-wide, kept after down)')
    return done
