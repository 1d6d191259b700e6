"""What a local cluster is and the files that describe it: the spec ``up``
builds (instance, nodes, CPUs and memory of each node, run directory), where
each file lives under the run directory, and the Slurm, slurmdbd and MariaDB
configuration rendered from the templates in ``slurm/local-cluster/``. Pure
functions over plain data.

Nodes may differ: a node spec such as ``n[1-8]:cpus=2,mem=2048;n[9-16]:cpus=1,mem=1024``
gives each group of nodes its CPUs and memory (MiB). Its node sets are read
by the rule of node lists (:mod:`clusterproof.hostlist`: counted before they
are expanded, so ``n[1-100000000]`` is refused at once).
"""

import dataclasses
import json
import os
import re
import shlex
import string
from pathlib import Path

from ClusterShell.NodeSet import NodeSet

from clusterproof import ClusterproofError
from clusterproof.cluster.like import (Like, describe_like, gres_conf_lines, node_line,
                                       partition_line, topology_conf_lines)
from clusterproof.cluster.network import MAX_NODES, Instance, Network
from clusterproof.cluster.rundir import check_path_chars
from clusterproof.paths import REPO
from clusterproof.hostlist import compress, count as hostlist_count, expand as hostlist_expand

TEMPLATES = REPO / 'slurm' / 'local-cluster'
DEFAULT_NODES, DEFAULT_CPUS, DEFAULT_MEM_MIB = 4, 2, 2048
MIN_MEM_PER_CPU = 64             # MiB
NODE_SPEC_KEYS = ('cpus', 'mem')
DB_NAME = 'slurm_acct_db'
#: nodes of a large cluster sharing a munged of their own: munged queues at
#: most 256 connections, and 1,024 job steps starting at once overflowed one
#: ("Failed to connect to munge.socket.2: Resource temporarily unavailable")
MUNGE_NODES = 128
DB_USER = 'slurm'


def node_names(nodes):
    return [f'n{i}' for i in range(1, nodes + 1)]


def hostlist(nodes):
    """Slurm host list of nodes n1..n<nodes>: ``n1`` or ``n[1-4]``."""
    if nodes < 1:
        raise ClusterproofError(f'a cluster needs at least one node, not {nodes}')
    return compress(node_names(nodes))


def run_dir_for(k, run_dir=None):
    """--run-dir, else $CLUSTERPROOF_CLUSTER_DIR, else /tmp/clusterproof-cluster<K>;
    refused (naming which) when it holds a character a run directory does not
    need. The directories above it are resolved once, here; the last part, a
    link, is not followed (``up`` refuses it)."""
    if run_dir:
        given, where = run_dir, '--run-dir'
    elif os.environ.get('CLUSTERPROOF_CLUSTER_DIR'):
        given, where = os.environ['CLUSTERPROOF_CLUSTER_DIR'], '$CLUSTERPROOF_CLUSTER_DIR'
    else:
        return Instance(k).default_run_dir()
    path = Path(os.path.abspath(check_path_chars(given, where)))
    return check_path_chars(path.parent.resolve() / path.name, f'{where} {given!r} leads to')


def _spec_nodes(names, where):
    """The node names of one part of a node spec, counted by the rule of
    node lists (:func:`clusterproof.hostlist.count`) before they are
    expanded: more than an instance holds is refused at once."""
    try:
        n = hostlist_count(names)
        nodes = hostlist_expand(names) if n <= MAX_NODES else None
    except ClusterproofError as err:
        raise ClusterproofError(f'{where}: {names!r} is not a node set ({err})') from None
    if nodes is None:
        raise ClusterproofError(f'{where}: {n} nodes; an instance has at most {MAX_NODES}')
    return nodes


def parse_node_spec(text, cpus=DEFAULT_CPUS, mem=DEFAULT_MEM_MIB):
    """CPUs and memory (MiB) of each node from a node spec
    ``NODES:cpus=C,mem=M;NODES:...`` (``NODES`` a Slurm node set such as
    ``n[1-8]``; a key left out takes ``cpus``/``mem``). Returns
    ``[(cpus, mem)]`` for n1..nN: the spec must name each of n1..nN exactly
    once. Errors name the part of the spec at fault."""
    if not text or not text.strip():
        raise ClusterproofError('--node-spec is empty: give e.g. '
                                'n[1-8]:cpus=2,mem=2048;n[9-16]:cpus=1,mem=1024')
    nodes = {}                          # index -> (cpus, mem, part)
    for part in (p.strip() for p in text.split(';')):
        if not part:
            continue
        where = f'--node-spec part {part!r}'
        names, sep, keys = part.partition(':')
        if not sep:
            raise ClusterproofError(f'{where}: write NODES:cpus=C,mem=MiB, '
                                    'e.g. n[1-4]:cpus=2,mem=2048')
        nodeset = _spec_nodes(names.strip(), where)
        values = {'cpus': cpus, 'mem': mem}
        for item in (k.strip() for k in keys.split(',')):
            key, eq, value = item.partition('=')
            key = key.strip()
            if not eq or key not in NODE_SPEC_KEYS:
                raise ClusterproofError(f'{where}: {item!r} is not one of '
                                        f'{", ".join(k + "=N" for k in NODE_SPEC_KEYS)}')
            if not re.fullmatch(r'[1-9][0-9]*', value.strip()):
                raise ClusterproofError(f'{where}: {key}={value.strip()!r} is not a whole '
                                        'number of '
                                        f'{"CPUs" if key == "cpus" else "MiB"} (1 or more)')
            values[key] = int(value)
        if values['mem'] < MIN_MEM_PER_CPU * values['cpus']:
            raise ClusterproofError(f'{where}: mem={values["mem"]} MiB is less than '
                                    f'{MIN_MEM_PER_CPU} MiB per CPU '
                                    f'({MIN_MEM_PER_CPU * values["cpus"]} MiB for '
                                    f'{values["cpus"]} CPUs)')
        for name in nodeset:
            m = re.fullmatch(r'n([1-9][0-9]*)', name)
            if not m:
                raise ClusterproofError(f'{where}: node {name!r}: the local cluster\'s nodes are '
                                        f'n1..n{MAX_NODES}')
            i = int(m.group(1))
            if i > MAX_NODES:
                raise ClusterproofError(f'{where}: node {name}: an instance has at most '
                                        f'{MAX_NODES} nodes')
            if i in nodes:
                raise ClusterproofError(f'{where}: node {name} is already in part {nodes[i][2]!r}')
            nodes[i] = (values['cpus'], values['mem'], part)
    if not nodes:
        raise ClusterproofError('--node-spec names no node')
    count = max(nodes)
    missing = [f'n{i}' for i in range(1, count + 1) if i not in nodes]
    if missing:
        raise ClusterproofError(f'--node-spec {text!r} leaves out {NodeSet.fromlist(missing)}: '
                                'name every node '
                                f'n1..n{count} once')
    return [nodes[i][:2] for i in range(1, count + 1)]


@dataclasses.dataclass(frozen=True)
class Spec:
    """What ``up`` builds. ``cpus`` and ``mem`` are each node's, unless
    ``node_spec`` (see :func:`parse_node_spec`) gives nodes their own, or
    ``like`` (a :class:`~clusterproof.cluster.like.Like`) the nodes and
    partitions of a real cluster's description; then ``nodes`` is the
    number of nodes they name. ``max_submit_jobs`` (an association limit in
    slurmdbd) and ``max_array_size`` (slurm.conf), 0 for Slurm's default."""
    instance: int = 0
    nodes: int = DEFAULT_NODES
    cpus: int = DEFAULT_CPUS
    mem: int = DEFAULT_MEM_MIB      # MiB per node
    run_dir: Path = None
    node_spec: str = ''
    like: Like = None
    max_submit_jobs: int = 0
    max_array_size: int = 0

    def __post_init__(self):
        inst = Instance(self.instance)
        if self.cpus < 1:
            raise ClusterproofError(f'--cpus-per-node {self.cpus}: use 1 or more')
        if self.mem < MIN_MEM_PER_CPU * self.cpus:
            raise ClusterproofError(f'--mem-per-node {self.mem} MiB: use at least '
                                    f'{MIN_MEM_PER_CPU} MiB per CPU '
                                    f'({MIN_MEM_PER_CPU * self.cpus} MiB for {self.cpus} CPUs)')
        for key, value in (('--max-submit-jobs', self.max_submit_jobs),
                           ('--max-array-size', self.max_array_size)):
            if value < 0:
                raise ClusterproofError(f'{key} {value}: use 1 or more (0: Slurm\'s default)')
        if self.like is not None:
            object.__setattr__(self, 'nodes', len(self.like.nodes))
        elif self.node_spec:
            hardware = parse_node_spec(self.node_spec, self.cpus, self.mem)
            object.__setattr__(self, 'nodes', len(hardware))
        elif not 1 <= self.nodes <= MAX_NODES:
            raise ClusterproofError(f'--nodes {self.nodes}: use 1..{MAX_NODES}')
        if self.run_dir is None:
            object.__setattr__(self, 'run_dir', inst.default_run_dir())
        object.__setattr__(self, 'run_dir', Path(check_path_chars(self.run_dir, 'run directory')))

    @property
    def inst(self):
        return Instance(self.instance)

    @property
    def net(self):
        """Subnet, addresses and bridges (they depend on the node count)."""
        return Network(self.inst, self.nodes)

    @property
    def munge_groups(self):
        """``[(j, first, last)]``: the groups of nodes n<first>..n<last> with
        a munged of their own (large clusters only; :data:`MUNGE_NODES`)."""
        if not self.net.large:
            return []
        return [(j, first, min(first + MUNGE_NODES - 1, self.nodes))
                for j, first in enumerate(range(1, self.nodes + 1, MUNGE_NODES), 1)]

    def munge_group_of(self, i):
        """The munged group of node ``n<i>``, or None (the controller's munged)."""
        return (i - 1) // MUNGE_NODES + 1 if self.net.large else None

    @property
    def hardware(self):
        """``[(cpus, mem)]`` of nodes n1..nN."""
        if self.like is not None:
            return [(n.cpus, n.mem) for n in self.like.nodes]
        if self.node_spec:
            return parse_node_spec(self.node_spec, self.cpus, self.mem)
        return [(self.cpus, self.mem)] * self.nodes

    @property
    def names(self):
        """Slurm's names of nodes 1..N: as the description declares them,
        else n1..nN. Namespaces and addresses are indexed 1..N in this order."""
        return self.like.names if self.like is not None else node_names(self.nodes)

    @property
    def hostlist(self):
        """Slurm host list of every node."""
        return compress(self.names)

    def name_of(self, i):
        return self.names[i - 1]

    @property
    def min_cpus(self):
        """CPUs of the smallest node: what a check may place on any node."""
        return min(c for c, _ in self.hardware)

    def to_dict(self):
        return {'instance': self.instance, 'nodes': self.nodes, 'cpus': self.cpus,
                'mem': self.mem, 'run_dir': str(self.run_dir), 'node_spec': self.node_spec,
                'like': self.like.to_dict() if self.like is not None else None,
                'max_submit_jobs': self.max_submit_jobs, 'max_array_size': self.max_array_size}


def describe(spec):
    """``4 nodes x 2 CPUs, 2048 MiB each``, or one such phrase per group of
    identical nodes: ``n[1-8] x 2 CPUs, 2048 MiB; n[9-16] x 1 CPU, 1024 MiB``."""
    def hw(c, m):
        return f'{c} CPU{"s" if c > 1 else ""}, {m} MiB'
    if spec.like is not None:
        return describe_like(spec.like)
    if not spec.node_spec:
        return f'{spec.nodes} nodes x {hw(spec.cpus, spec.mem)} each'
    groups = {}
    for i, cm in enumerate(spec.hardware, 1):
        groups.setdefault(cm, []).append(f'n{i}')
    return '; '.join(f'{NodeSet.fromlist(names)} x {hw(*cm)}' for cm, names in groups.items())


class Layout:
    """Where each file of a cluster lives under its run directory."""

    def __init__(self, run_dir):
        self.root = Path(run_dir)
        self.etc = self.root / 'etc'
        self.slurm_conf = self.etc / 'slurm.conf'
        self.slurmdbd_conf = self.etc / 'slurmdbd.conf'   # next to slurm.conf: slurmdbd looks there
        self.my_cnf = self.etc / 'my.cnf'
        self.db_init = self.etc / 'mariadb-init.sql'
        self.hosts = self.etc / 'hosts'
        self.munge_key = self.etc / 'munge.key'
        self.db_pass = self.etc / 'db.pass'
        self.munge_dir = self.root / 'munge'
        self.munge_socket = self.munge_dir / 'munge.socket.2'
        self.run = self.root / 'run'
        self.log = self.root / 'log'
        self.state = self.root / 'state'
        self.spool = self.root / 'spool'
        self.tmp = self.root / 'tmp'
        self.db = self.root / 'db'
        self.marker = self.root / 'cluster.json'
        self.gpu_dir = self.root / 'gpu'       # device files standing for GPUs (gres.conf File=)

    def munge_group_dir(self, j):
        """Socket directory of the munged of node group ``j``; bind-mounted
        over :attr:`munge_dir` in the nodes of the group."""
        return self.root / f'munge-g{j}'

    def pid_file(self, daemon):
        """Pid file of ``daemon`` (``munged g1``: ``munged-g1.pid``)."""
        return self.run / f'{daemon.replace(" ", "-")}.pid'

    def slurmd_pid_file(self, node):
        return self.run / f'slurmd-{node}.pid'


def _range(first, last):
    return str(first) if first == last else f'[{first}-{last}]'


def node_lines(spec):
    """The ``NodeName`` lines of slurm.conf: one per run of nodes with the
    same hardware and addresses in the same /24, names and addresses as
    ranges (``NodeName=n[1-254] NodeAddr=198.19.0.[2-255]``). Every Slurm
    command and daemon parses slurm.conf: with one line per node, 1,024
    nodes cost each of them about 30 ms of CPU; with ranges, nothing.
    A cluster built ``like`` a description: one line per node, as declared."""
    net, runs = spec.net, []
    if spec.like is not None:
        return '\n'.join(node_line(node, net.node_addr(i))
                         for i, node in enumerate(spec.like.nodes, 1))
    for i, hw in enumerate(spec.hardware, 1):
        head, _, last = net.node_addr(i).rpartition('.')
        if runs and runs[-1][2:4] == [hw, head] and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i, hw, head, int(last)])
    lines = []
    for first, last, (c, m), head, octet in runs:
        lines.append(f'NodeName=n{_range(first, last)} '
                     f'NodeAddr={head}.{_range(octet, octet + last - first)}'
                     + (f' CPUs={c} RealMemory={m}' if (c, m) != (spec.cpus, spec.mem) else ''))
    return '\n'.join(lines)


#: slurm.conf settings that depend on the cluster's size (see slurm.conf.in):
#: up to 29 nodes, and more
SMALL_SETTINGS = {'slurmd_timeout': 20, 'message_timeout': 10,
                  'proctrack': 'proctrack/linuxproc', 'jobacct_gather': 'jobacct_gather/linux'}
LARGE_SETTINGS = {'slurmd_timeout': 300, 'message_timeout': 60,
                  'proctrack': 'proctrack/pgid', 'jobacct_gather': 'jobacct_gather/none'}


def partition_lines(spec):
    """slurm.conf's ``PartitionName`` lines: the description's, else one
    default partition ``emu`` of every node."""
    if spec.like is None:
        return f'PartitionName=emu Nodes={spec.hostlist} Default=YES MaxTime=INFINITE State=UP'
    return '\n'.join(partition_line(p, compress(list(p.nodes))) for p in spec.like.partitions)


def site_settings(spec):
    """slurm.conf lines of the site's limits and generic resources."""
    lines = []
    if spec.like is not None and spec.like.gres_types:
        lines.append(f'GresTypes={",".join(spec.like.gres_types)}')
    if spec.like is not None and spec.like.switches:
        lines.append('TopologyPlugin=topology/tree')     # topology.conf beside slurm.conf
    if spec.max_array_size:
        lines.append(f'MaxArraySize={spec.max_array_size}')
    if spec.max_submit_jobs:
        # association limits (MaxSubmitJobs...) are enforced only with this; a
        # user without an association in slurmdbd (only root has one) is refused
        lines.append('AccountingStorageEnforce=associations,limits')
    return '\n'.join(lines)


def gres_conf(spec):
    lines = (gres_conf_lines(spec.like, Layout(spec.run_dir).gpu_dir) if spec.like is not None
             else ['AutoDetect=off'])
    return ('# gres.conf of the local cluster (generated by `clusterproof cluster up`): '
            'no real devices\n'
            + '\n'.join(lines) + '\n')


def template_values(spec, controller_host, db_pass='@DB_PASS@'):
    inst, net, lay = spec.inst, spec.net, Layout(spec.run_dir)
    hardware = spec.hardware
    return {
        'cluster': inst.cluster, 'nodes': spec.nodes, 'cpus': spec.cpus, 'mem': spec.mem,
        # small enough that a job's default memory fits on every node
        # (at least 1: 0 would mean the whole node; a described node may declare RealMemory=1)
        'def_mem_per_cpu': max(1, min(m // c for c, m in hardware)),
        'run_dir': str(spec.run_dir), 'controller_host': controller_host,
        'bridge_addr': net.bridge_addr, 'munge_socket': str(lay.munge_socket),
        'slurmctld_port': inst.port('slurmctld'), 'slurmd_port': inst.port('slurmd'),
        'slurmdbd_port': inst.port('slurmdbd'), 'mariadb_port': inst.port('mariadb'),
        'db_user': DB_USER, 'db_pass': db_pass, 'db_name': DB_NAME,
        'node_lines': node_lines(spec), 'hostlist': spec.hostlist,
        'partition_lines': partition_lines(spec), 'site_settings': site_settings(spec),
        'slurm_conf': str(lay.slurm_conf),
        **(LARGE_SETTINGS if net.large else SMALL_SETTINGS),
    }


def render(template_name, values, templates=TEMPLATES):
    """Fill ``${name}`` placeholders of a template in slurm/local-cluster/."""
    path = Path(templates) / template_name
    try:
        return string.Template(path.read_text()).substitute(values)
    except KeyError as err:
        raise ClusterproofError(f'{path}: placeholder ${{{err.args[0]}}} has no value') from None
    except ValueError as err:
        raise ClusterproofError(f'{path}: bad placeholder ({err})') from None


def render_hosts(spec, controller_host):
    net = spec.net
    lines = ['127.0.0.1 localhost', f'{net.bridge_addr} {controller_host}']
    lines += [f'{net.node_addr(i)} {name}' for i, name in enumerate(spec.names, 1)]
    return '\n'.join(lines) + '\n'


def render_all(spec, controller_host, db_pass):
    """{file name: text} of every generated configuration file."""
    values = template_values(spec, controller_host, db_pass)
    return {
        'slurm.conf': render('slurm.conf.in', values),
        'slurmdbd.conf': render('slurmdbd.conf.in', values),
        'mpi.conf': render('mpi.conf.in', values),
        'my.cnf': render('my.cnf.in', values),
        'mariadb-init.sql': render('mariadb-init.sql.in', values),
        'prolog-slurmctld.sh': render('prolog-slurmctld.sh.in', values),
        'hosts': render_hosts(spec, controller_host),
        'gres.conf': gres_conf(spec),
        **({'topology.conf': '# topology.conf of the local cluster '
            '(generated by `clusterproof cluster up`)\n'
            + '\n'.join(topology_conf_lines(spec.like)) + '\n'}
           if spec.like is not None and spec.like.switches else {}),
    }


def env_dict(spec_or_run_dir):
    """The variables that point client commands (and ReFrame's emu system)
    at a cluster: ``{name: value}``."""
    run_dir = (spec_or_run_dir.run_dir if isinstance(spec_or_run_dir, Spec)
               else Path(spec_or_run_dir))
    env = {'SLURM_CONF': str(Layout(run_dir).slurm_conf)}
    if isinstance(spec_or_run_dir, Spec):
        env.update(CLUSTERPROOF_EMU_NODES=str(spec_or_run_dir.nodes),
                   CLUSTERPROOF_EMU_CPUS=str(spec_or_run_dir.min_cpus))
    return env


def env_lines(spec_or_run_dir):
    """:func:`env_dict` as ``export`` lines for a shell's ``eval``, each
    value quoted."""
    return [f'export {name}={shlex.quote(value)}'
            for name, value in env_dict(spec_or_run_dir).items()]


def load_spec(instance, run_dir=None):
    """The spec of the cluster at the run directory of ``instance``: from its
    cluster.json when it is up, else the defaults."""
    rd = run_dir_for(instance, run_dir)
    marker = Layout(rd).marker
    if marker.exists():
        try:
            data = json.loads(marker.read_text())
            if data['instance'] != instance:
                raise ClusterproofError(f'{rd} holds instance {data["instance"]}, not {instance}: '
                                        f'use --instance {data["instance"]} or another --run-dir')
            like = data.get('like')
            return Spec(instance=instance, nodes=data['nodes'], cpus=data['cpus'],
                        mem=data['mem'], run_dir=rd, node_spec=data.get('node_spec', ''),
                        like=Like.from_dict(like) if like else None,
                        max_submit_jobs=data.get('max_submit_jobs', 0),
                        max_array_size=data.get('max_array_size', 0))
        except (ValueError, KeyError, TypeError) as err:
            raise ClusterproofError(f'{marker}: unreadable ({err}); run clusterproof cluster '
                                    f'down --instance {instance}') from None
    return Spec(instance=instance, run_dir=rd)
