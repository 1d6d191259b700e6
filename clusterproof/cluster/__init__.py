"""The local Slurm cluster: real Slurm daemons on this machine, one compute
node per network namespace.

``up`` starts, in this order: munged (above 29 nodes, one more per 128
nodes), MariaDB (own data directory, socket and port, on 127.0.0.1),
slurmdbd (so ``sacct`` works), registers the cluster with ``sacctmgr``,
slurmctld, and one slurmd per node. Node ``n<i>`` runs in its own network,
hostname (UTS) and mount namespace, with an address on a bridge and a
private hosts file bind-mounted over ``/etc/hosts``. ``down`` stops only the
processes ``up`` started (pid files, command line checked), then removes the
namespaces, links and bridges.

Several clusters coexist through *instances* K in 0..7: instance K has its
own bridges ``cpbr<K>...``, subnets (``198.18.0.<32K>/27`` up to 29 nodes,
``198.19.<8K>.0/21`` up to 1,024), ports, namespace names ``cp<K>n<i>``,
cluster name ``cp<K>`` and run directory. Everything the cluster writes
lives under the run directory (root's: :mod:`~clusterproof.cluster.rundir`)
but its lock files, in /run/clusterproof; nothing goes to /etc.

One module per concern:

- :mod:`~clusterproof.cluster.network`: instances, addresses, ports,
  namespaces, veth pairs and the bridges; running a program as a node;
- :mod:`~clusterproof.cluster.limits`: what this machine must allow for N
  nodes (neighbour table, processes, memory);
- :mod:`~clusterproof.cluster.config`: the spec, the run directory's layout
  and the configuration files rendered from ``slurm/local-cluster/``;
- :mod:`~clusterproof.cluster.daemons`: starting the daemons (:class:`Cluster`);
- :mod:`~clusterproof.cluster.down`: stopping them;
- :mod:`~clusterproof.cluster.states`: what a cluster that is up says of
  itself (node states, strays, problems, status);
- :mod:`~clusterproof.cluster.rundir`: what only root may have made (the
  run directory, the lock files that keep ``up``/``down`` and users apart),
  refused when another user could have;
- :mod:`~clusterproof.cluster.like`: a cluster shaped like a real one's
  description (``up --like FILE``): its node names, hardware, GRES,
  features, partitions and drained nodes;
- :mod:`~clusterproof.cluster.faults`: a node dies, a node comes back;
- :mod:`~clusterproof.cluster.procs`: running programs, pid files, /proc.

The names below are the package's public interface.
"""

from clusterproof.cluster.config import (DB_NAME, DB_USER, DEFAULT_CPUS, DEFAULT_MEM_MIB,
                                         DEFAULT_NODES, TEMPLATES, Layout, Spec, describe, env_dict,
                                         env_lines, hostlist, load_spec, node_names,
                                         parse_node_spec, render, render_all, render_hosts,
                                         run_dir_for, template_values)
from clusterproof.cluster.daemons import DAEMONS, NEEDS_ROOT, PROGRAMS, Cluster
from clusterproof.cluster.states import by_state, summary
from clusterproof.cluster.like import Like, read_like
from clusterproof.cluster.network import (INSTANCES, MAX_NODES, NETWORK, NODES_PER_BRIDGE,
                                          PORT_OFFSETS, SMALL_MAX_NODES, Instance, Network, links,
                                          netns_list, netns_pids)
from clusterproof.cluster.procs import alive, pid_from
from clusterproof.cluster.rundir import (LOCK_DIR, check_run_dir, in_use, open_users_lock,
                                         operation_lock, operation_lock_path, users_lock_path)

__all__ = [
    'DB_NAME', 'DB_USER', 'DEFAULT_CPUS', 'DEFAULT_MEM_MIB', 'DEFAULT_NODES', 'TEMPLATES',
    'Layout', 'Spec', 'describe', 'env_dict', 'env_lines', 'hostlist', 'load_spec', 'node_names',
    'parse_node_spec', 'render',
    'render_all', 'render_hosts', 'run_dir_for', 'template_values',
    'DAEMONS', 'NEEDS_ROOT', 'PROGRAMS', 'Cluster', 'by_state', 'in_use', 'open_users_lock',
    'operation_lock', 'operation_lock_path', 'summary', 'users_lock_path',
    'Like', 'read_like',
    'INSTANCES', 'MAX_NODES', 'NETWORK', 'NODES_PER_BRIDGE', 'PORT_OFFSETS', 'SMALL_MAX_NODES',
    'Instance', 'Network', 'links', 'netns_list', 'netns_pids', 'alive', 'pid_from',
    'LOCK_DIR', 'check_run_dir',
]
