"""A local cluster shaped like a real one (``cluster up --like FILE``): the
nodes and partitions of a real cluster's description, read only through
:mod:`clusterproof.parsers.slurm`, checked against what the local cluster
can hold, as plain data that ``up`` renders (:mod:`~clusterproof.cluster.config`)
and stores in the run directory's cluster.json.

A description is any of: the ``NodeName``/``PartitionName`` lines of a
``slurm.conf``; ``scontrol show node`` text (``-o`` or multi-line, any
version); Slurm's JSON of any generation (``sinfo --json``, ``scontrol
show node --json``, slurmrestd's nodes). A second file may give the
partitions (``scontrol show partition`` text or JSON): node records name
their partitions, not their limits. A third may give the tree topology
(``topology.conf``, or ``scontrol show topology`` output): its switches,
cut to the described nodes, become the local cluster's topology.conf.
"""

import dataclasses
import json
import re
from pathlib import Path

from clusterproof import ClusterproofError
from clusterproof.cluster.network import MAX_NODES
from clusterproof.hostlist import compress
from clusterproof.parsers.slurm import (SlurmPartition, SlurmSwitch, membership, nodes_from_json,
                                        nodes_from_scontrol, nodes_from_slurm_conf, parse_topology,
                                        partitions_from_json, partitions_from_scontrol)
from clusterproof.parsers.slurm_values import SlurmFormatError

#: a node's name is its hostname inside its namespace (sethostname: 64 bytes)
NAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9._-]{0,63}')
#: Slurm keeps a node's CPU count in 16 bits
MAX_CPUS = 65535
#: recorded states made so after ``up``: DRAIN (and FAIL, which drains) and DOWN
DRAIN, DOWN = 'DRAIN', 'DOWN'


@dataclasses.dataclass(frozen=True)
class LikeNode:
    """One node as declared: Slurm's name, topology, memory (MiB), GRES
    (``gpu:a100:4,...``), features, and the state to give it after up
    (``''``, ``DRAIN`` or ``DOWN``) with its reason."""
    name: str
    cpus: int
    sockets: int
    cores: int
    threads: int
    mem: int
    gres: tuple = ()
    features: tuple = ()
    state: str = ''
    reason: str = ''


@dataclasses.dataclass(frozen=True)
class LikePartition:
    name: str
    nodes: tuple
    max_nodes: object = None        # None: unlimited
    max_time: object = None         # Slurm's text, None: unlimited
    state: str = 'UP'
    default: bool = False
    hidden: bool = False


@dataclasses.dataclass(frozen=True)
class Like:
    """A described cluster: where it was read from, its nodes (in the order
    declared), partitions, and the names of the nodes left out: in no
    partition (sinfo does not show them, no job can run there)."""
    source: str
    nodes: tuple
    partitions: tuple
    left_out: tuple = ()
    switches: tuple = ()        # parsers.slurm.SlurmSwitch: the tree topology, if declared

    @property
    def names(self):
        return [n.name for n in self.nodes]

    @property
    def gres_types(self):
        """GRES names of every node, in the order first declared."""
        out = []
        for node in self.nodes:
            for item in node.gres:
                name = item.split(':', 1)[0]
                if name not in out:
                    out.append(name)
        return out

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data):
        return cls(source=data['source'],
                   nodes=tuple(LikeNode(**{**n, 'gres': tuple(n['gres']),
                                           'features': tuple(n['features'])})
                               for n in data['nodes']),
                   partitions=tuple(LikePartition(**{**p, 'nodes': tuple(p['nodes'])})
                                    for p in data['partitions']),
                   left_out=tuple(data.get('left_out', ())),
                   switches=tuple(SlurmSwitch(w['name'], tuple(w['nodes']), tuple(w['switches']))
                                  for w in data.get('switches', ())))


def _kind(text):
    """``json``, ``slurm.conf`` or ``scontrol`` from a description's text."""
    if text.lstrip().startswith('{'):
        return 'json'
    if re.search(r'(?m)^\s*NodeName=\S+.*\bCPUTot=', text) or re.search(r'(?m)^\s+CPUAlloc=', text):
        return 'scontrol'
    if re.search(r'(?im)^\s*NodeName=', text):
        return 'slurm.conf'
    return None


def _read(path, what):
    try:
        return Path(path).read_text()
    except OSError as err:
        raise ClusterproofError(f'{what} {path}: cannot be read ({err.strerror})') from None
    except UnicodeDecodeError:
        raise ClusterproofError(f'{what} {path}: not text') from None


def read_partitions(path):
    """``{name: SlurmPartition}`` of a partitions file: ``scontrol show
    partition`` text or JSON, or a slurm.conf's ``PartitionName`` lines."""
    text, source = _read(path, '--like-partitions'), str(path)
    if text.lstrip().startswith('{'):
        return partitions_from_json(text, source)
    if re.search(r'(?im)^\s*NodeName=', text):
        return nodes_from_slurm_conf(text, source)[1]
    parts = partitions_from_scontrol(text, source)
    if not parts:
        raise ClusterproofError(f'{source}: no partition (neither JSON nor PartitionName= lines)')
    return parts


def _state(node):
    words = node.state_words
    if 'DRAIN' in words or 'FAIL' in words:
        return DRAIN
    if 'DOWN' in words:
        return DOWN
    return ''


def _reason(text):
    """A recorded reason without the ``[user@time]`` scontrol appends (Slurm
    appends its own when the reason is set again)."""
    return re.sub(r'\s*\[[^\]@]*@[^\]]*\]$', '', text or '').strip()


def read_like(path, partitions_path=None, topology_path=None):
    """The :class:`Like` of a description file (and optionally a partitions
    file and a ``topology.conf``); a clear error naming the file and node for
    what the local cluster cannot hold."""
    source = str(path)
    text = _read(path, '--like')
    kind = _kind(text)
    parts = {}
    try:
        if kind == 'json':
            nodes = nodes_from_json(text, source)
            data = json.loads(text)
            if isinstance(data, dict) and isinstance(data.get('sinfo'), list):
                parts = partitions_from_json(text, source)
        elif kind == 'slurm.conf':
            nodes, parts = nodes_from_slurm_conf(text, source)
        elif kind == 'scontrol':
            nodes = nodes_from_scontrol(text, source)
        else:
            raise ClusterproofError(f'{source}: neither Slurm JSON, scontrol show node output '
                                    'nor slurm.conf '
                                    'NodeName= lines')
        if partitions_path:
            parts = read_partitions(partitions_path)
        nodes = membership(nodes, parts)
    except SlurmFormatError as err:
        raise ClusterproofError(f'{err}: not a description the local cluster '
                                'can be built from') from None
    like = _build(source, nodes, parts)
    if topology_path:
        like = dataclasses.replace(like, switches=read_topology(topology_path, like))
    return like


def read_topology(path, like):
    """The switches of a ``topology.conf`` (or ``scontrol show topology``
    output) for the described nodes: each switch cut to the nodes the
    description holds, as partitions are; a switch left with nothing below
    it is dropped. A clear error for a switch named below another but
    never declared, or declared twice."""
    source = str(path)
    try:
        switches = parse_topology(_read(path, '--like-topology'), source)
    except SlurmFormatError as err:
        raise ClusterproofError(f'{err}: not a topology the local cluster '
                                'can be built from') from None
    if not switches:
        raise ClusterproofError(f'{source}: no SwitchName= line')
    declared = [sw.name for sw in switches]
    twice = sorted({n for n in declared if declared.count(n) > 1})
    if twice:
        raise ClusterproofError(f'{source}: switch {twice[0]} declared twice')
    for sw in switches:
        unknown = [n for n in sw.switches if n not in declared]
        if unknown:
            raise ClusterproofError(f'{source}: switch {sw.name}: Switches= names '
                                    f'{compress(unknown)}, '
                                    'never declared (SwitchName=)')
    held = set(like.names)
    kept = {sw.name: SlurmSwitch(sw.name, tuple(n for n in sw.nodes if n in held))
            for sw in switches if not sw.switches and any(n in held for n in sw.nodes)}
    if not kept:
        raise ClusterproofError(f'{source}: no switch connects a node of {like.source}')
    upper = [sw for sw in switches if sw.switches]
    names = set(kept)
    while True:                     # a switch is kept once a switch below it is, at any depth
        more = {sw.name for sw in upper if sw.name not in names and names.intersection(sw.switches)}
        if not more:
            break
        names |= more
    kept.update({sw.name: SlurmSwitch(sw.name, (), tuple(n for n in sw.switches if n in names))
                 for sw in upper if sw.name in names})
    return tuple(kept[name] for name in declared if name in kept)


def _build(source, nodes, parts):
    if not nodes:
        raise ClusterproofError(f'{source}: describes no node')
    if len(nodes) > MAX_NODES:
        raise ClusterproofError(f'{source}: {len(nodes)} nodes; an instance holds at most '
                                f'{MAX_NODES} (node {nodes[MAX_NODES].name} is the '
                                f'{MAX_NODES + 1}th): cut the description')
    seen, out = set(), []
    for node in nodes:
        where = f'{source}: node {node.name}'
        if node.name in seen:
            raise ClusterproofError(f'{where}: declared twice')
        seen.add(node.name)
        if not NAME.fullmatch(node.name):
            raise ClusterproofError(f'{where}: not a host name the node can take (letters, digits, '
                                    '".", "_", "-", at most 64)')
        counts = {'CPUs': node.cpus, 'Sockets': node.sockets,
                  'CoresPerSocket': node.cores_per_socket,
                  'ThreadsPerCore': node.threads_per_core, 'RealMemory': node.real_memory_mib}
        for key, value in counts.items():
            if value < 1:
                raise ClusterproofError(f'{where}: {key}={value}: Slurm needs 1 or more')
        if node.cpus > MAX_CPUS:
            raise ClusterproofError(f'{where}: CPUs={node.cpus}: Slurm holds at most '
                                    f'{MAX_CPUS} CPUs a node')
        state = _state(node)
        out.append(LikeNode(
            name=node.name, cpus=node.cpus, sockets=node.sockets, cores=node.cores_per_socket,
            threads=node.threads_per_core, mem=node.real_memory_mib,
            gres=tuple(str(g) for g in node.gres), features=tuple(node.features), state=state,
            reason=((_reason(node.reason) or f'recorded {state} in {Path(source).name}')
                    if state else '')))
    partitions = _partitions(out, nodes, parts)
    held = {name for p in partitions for name in p.nodes}
    kept = tuple(n for n in out if n.name in held)
    if not kept:
        raise ClusterproofError(f'{source}: no node is in a partition')
    return Like(source=source, nodes=kept, partitions=tuple(partitions),
                left_out=tuple(n.name for n in out if n.name not in held))


def _partitions(like_nodes, nodes, parts):
    """The partitions as declared, cut to the described nodes; a partition
    the node records name without a definition gets Slurm's defaults; one
    without a described node is left out (Slurm needs nodes to run a job
    there). No partition at all: one default partition of every node."""
    names = [n.name for n in like_nodes]
    known = set(names)
    order = list(parts)
    for node in nodes:
        order += [p for p in node.partitions if p not in order]
    out = []
    for pname in order:
        part = parts.get(pname, SlurmPartition(name=pname))
        members = [n.name for n in nodes if pname in n.partitions and n.name in known]
        if not members:
            continue
        out.append(LikePartition(name=pname, nodes=tuple(members), max_nodes=part.max_nodes,
                                 max_time=part.max_time, state=part.state or 'UP',
                                 default=part.default, hidden=part.hidden))
    if not out:
        out.append(LikePartition(name='emu', nodes=tuple(names), default=True))
    return out


def node_line(node, addr):
    """slurm.conf's ``NodeName`` line of a described node at ``addr``."""
    line = (f'NodeName={node.name} NodeAddr={addr} CPUs={node.cpus} Sockets={node.sockets} '
            f'CoresPerSocket={node.cores} ThreadsPerCore={node.threads} RealMemory={node.mem}')
    if node.gres:
        line += f' Gres={",".join(node.gres)}'
    if node.features:
        line += f' Features={",".join(node.features)}'
    return line


def partition_line(part, hostlist):
    line = f'PartitionName={part.name} Nodes={hostlist} Default={"YES" if part.default else "NO"}'
    line += f' MaxTime={part.max_time or "INFINITE"} State={part.state}'
    if part.max_nodes is not None:
        line += f' MaxNodes={part.max_nodes}'
    if part.hidden:
        line += ' Hidden=YES'
    return line


def _gres_items(node):
    """``[(name, type or '', count)]`` of a node's GRES."""
    out = []
    for item in node.gres:
        name, *rest = item.split(':')
        out.append((name, ':'.join(rest[:-1]), int(rest[-1]) if rest else 1))
    return out


def gpu_files(like):
    """Device files standing for GPUs the nodes need: the most GPUs of a
    node (``gpu0``..., made by ``up``: character devices, see
    :func:`clusterproof.cluster.daemons.make_gpu_devices`). A GPU needs a
    ``File=``: slurmd 22.05 drops one declared by ``Count=`` alone ("Removing
    file-less GPU"), and the node is drained as INVALID_REG ("gres/gpu count
    reported lower than configured (0 < 1)")."""
    return max([sum(c for n, _, c in _gres_items(node) if n == 'gpu')
                for node in like.nodes] or [0])


def gres_conf_lines(like, gpu_dir):
    """gres.conf lines: nothing detected (``AutoDetect=off``); each GPU of a
    node a device file ``gpu_dir/gpu<i>`` (:func:`gpu_files`), any other
    GRES a count."""
    lines = ['AutoDetect=off']
    for node in like.nodes:
        first = 0
        for name, gtype, count in _gres_items(node):
            line = f'NodeName={node.name} Name={name}' + (f' Type={gtype}' if gtype else '')
            if name == 'gpu':
                files = f'gpu{first}' if count == 1 else f'gpu[{first}-{first + count - 1}]'
                line += f' File={gpu_dir}/{files}'
                first += count
            else:
                line += f' Count={count}'
            lines.append(line)
    return lines


def topology_conf_lines(like):
    """topology.conf lines of the described tree: a leaf's nodes, an upper
    switch's switches."""
    return [f'SwitchName={sw.name} '
            + (f'Switches={compress(sw.switches)}' if sw.switches
               else f'Nodes={compress(sw.nodes)}') for sw in like.switches]


def describe_like(like):
    """``6 nodes like FILE: 2 DRAIN, 1 DOWN; partitions gpu, preempt``."""
    states = {}
    for node in like.nodes:
        if node.state:
            states[node.state] = states.get(node.state, 0) + 1
    marks = ', '.join(f'{n} {s}' for s, n in states.items())
    text = (f'{len(like.nodes)} nodes like {like.source}' + (f' ({marks})' if marks else '')
            + f'; partitions {", ".join(p.name for p in like.partitions)}')
    if like.left_out:
        text += f'; left out (in no partition): {", ".join(like.left_out)}'
    if like.switches:
        leaves = sum(1 for sw in like.switches if sw.leaf)
        text += f'; {len(like.switches)} switches ({leaves} leaves)'
    return text
