"""Discover a Slurm cluster: what ``clusterproof init`` writes into a new
system file.

1. Slurm's view, from the login node (:func:`read_slurm`): every node's
   CPUs (CPUTot), declared sockets, cores, threads, memory, GPUs and other
   generic resources, features, state and partitions (``sinfo --json``,
   else ``scontrol -o show node``), and the partitions with their node
   lists, limits and state (``scontrol -o show partition``). The parsing
   of every Slurm version's output is :mod:`clusterproof.parsers.slurm`.
2. Node groups: nodes of a partition that Slurm describes alike, GPUs
   included (:func:`group_nodes`); a partition with two kinds of node
   gives two.
3. One node of each group that Slurm can run a job on (idle first, never a
   drained, down or powered-down one: :meth:`NodeGroup.probe_candidates`)
   is probed through ``srun`` (``python -m clusterproof.site.discover
   --probe``, :func:`probe_node`): ``lscpu`` (sockets, cores, threads, NUMA
   nodes, model), the last-level cache from sysfs, ``/proc/meminfo``,
   ``dmidecode -t memory`` (DIMMs, speed) where installed and readable,
   ``ndctl``/``ipmctl`` where present, and the scratch directory's file
   system, free space and mount options.
4. :func:`declare_group` turns Slurm's view and the probe into a partition's
   ``processor``, ``devices`` (the GPUs) and ``extras``; a group that could
   not be probed is declared from Slurm's view alone. Every value it could
   not discover is listed in ``undiscovered`` with the reason, and
   :func:`render_system` writes it as a commented-out line, never as a
   guessed value.
"""

import argparse
import json
import os
import re
import socket
import sys
from dataclasses import dataclass, field

from clusterproof import ClusterproofError
from clusterproof.parsers import lscpu as lscpu_parser
from clusterproof.parsers import slurm
from clusterproof.parsers.slurm import SlurmNode
from clusterproof.site import topology
from clusterproof.site.hardware import processor_from_hardware
from clusterproof.hostlist import compress
from clusterproof.site.inventory import run_tool, tool_failure

PROBE_TAG = 'CLUSTERPROOF-PROBE'


# ---------------------------------------------------------------- Slurm's view

#: what init asks Slurm, in this order (``--all``: hidden partitions too)
PARTITION_COMMAND = ['scontrol', '--all', '-o', 'show', 'partition']
SINFO_COMMAND = ['sinfo', '--all', '--json']
NODE_COMMAND = ['scontrol', '--all', '-o', 'show', 'node']

#: the files ``clusterproof init --slurm-output DIR`` reads instead of each command
RECORDED_FILES = {
    ' '.join(PARTITION_COMMAND): ('scontrol-show-partition.txt', 'scontrol-show-partition.json'),
    ' '.join(SINFO_COMMAND): ('sinfo.json',),
    ' '.join(NODE_COMMAND): ('scontrol-show-node.txt', 'scontrol-show-node.json'),
}


def recorded_runner(directory):
    """A stand-in for running Slurm's commands: the answer of each command
    of :data:`RECORDED_FILES` is the first of its files in ``directory``
    (``clusterproof init --slurm-output DIR``)."""
    def run(argv):
        names = RECORDED_FILES.get(' '.join(argv), ())
        for name in names:
            path = os.path.join(directory, name)
            if os.path.isfile(path):
                with open(path, encoding='utf-8', errors='replace') as fh:
                    return {'argv': argv, 'rc': 0, 'stdout': fh.read(), 'stderr': ''}
        return {'argv': argv, 'rc': None, 'stdout': '', 'stderr': '',
                'missing': f'no {" or ".join(names) or "file"} in {directory}'}
    return run


def _warn(text):
    print(f'init: {text}', file=sys.stderr, flush=True)


def _without_all_where_refused(run):
    """``run``, which asks again without ``--all`` where a command with it
    fails or prints nothing (a Slurm or wrapper that does not take it)."""
    def again(argv):
        out = run(argv)
        if '--all' in argv and (out['rc'] != 0 or not out['stdout'].strip()):
            retry = run([a for a in argv if a != '--all'])
            if retry['rc'] == 0 and retry['stdout'].strip():
                return retry
        return out
    return again


def read_slurm(run=run_tool, warn=_warn):
    """Slurm's view of this cluster: ``(nodes, partitions, how)``, where
    ``partitions`` is ``{name: SlurmPartition}`` and ``how`` names the
    commands that answered. ``sinfo --json`` first; a Slurm without it
    (before 21.08) or JSON in a form not understood falls back to
    ``scontrol -o show node``, and ``warn`` says why."""
    how = []
    run = _without_all_where_refused(run)
    parts_out = run(PARTITION_COMMAND)
    partitions = {}
    if parts_out['rc'] == 0:
        text = parts_out['stdout']
        partitions = (slurm.partitions_from_json(text, 'scontrol show partition --json')
                      if text.lstrip().startswith('{') else slurm.partitions_from_scontrol(text))
        how.append('scontrol -o show partition')
    else:
        warn(f'scontrol -o show partition failed ({tool_failure(parts_out)}); the partitions '
             "are taken from sinfo --json's records where it has them, else from the nodes' "
             'records (no MaxNodes, MaxTime or state)')
    nodes = None
    js = run(SINFO_COMMAND)
    if js['rc'] == 0 and js['stdout'].lstrip().startswith('{'):
        try:
            nodes = slurm.nodes_from_json(js['stdout'], 'sinfo --json')
            how.insert(0, 'sinfo --json')
            if not partitions and '"sinfo"' in js['stdout']:
                # 23.02+ records carry their partition: its node list, limits and state
                partitions = slurm.partitions_from_json(js['stdout'], 'sinfo --json')
        except ClusterproofError as err:
            warn(f'{err}; reading scontrol -o show node instead')
        except (KeyError, TypeError, AttributeError, ValueError) as err:
            warn(f'sinfo --json: a form init does not read ({type(err).__name__}: {err}); '
                 'reading scontrol -o show node instead')
    elif js['rc'] == 0:
        warn('sinfo --json printed no JSON object; reading scontrol -o show node instead')
    else:
        warn(f'sinfo --json failed ({tool_failure(js)}; Slurm prints JSON from 21.08 on); '
             'reading scontrol -o show node instead')
    if nodes is None:
        text = run(NODE_COMMAND)
        if text['rc'] != 0:
            raise ClusterproofError(f'scontrol -o show node failed: {tool_failure(text)}; run '
                                    'clusterproof init on a login node of the cluster '
                                    '(SLURM_CONF set if Slurm needs it)')
        out, skipped = text['stdout'], []
        try:
            nodes = (slurm.nodes_from_json(out, 'scontrol show node --json')
                     if out.lstrip().startswith('{')
                     else slurm.nodes_from_scontrol(out, skipped=skipped))
        except (KeyError, TypeError, AttributeError, ValueError) as err:
            raise ClusterproofError(f'scontrol show node: a form init does not read '
                                    f'({type(err).__name__}: {err})') from None
        for msg in skipped:
            warn(f'{msg}: node left out')
        how.insert(0, 'scontrol -o show node')
    if not nodes:
        raise ClusterproofError('Slurm lists no nodes (' + ', '.join(how) + ')')
    return slurm.membership(nodes, partitions), partitions, ', '.join(how)


@dataclass
class NodeGroup:
    """Nodes of one partition that Slurm describes alike (CPUs, topology,
    memory, GPUs)."""
    partition: str
    nodes: list
    slurm: SlurmNode          # the first node: its shape is every node's
    partition_info: object = None   # the SlurmPartition, where Slurm listed it

    @property
    def nodelist(self):
        return compress([n.name for n in self.nodes])

    def probe_candidates(self):
        """``(nodes a job step can start on, best first; why none can)``."""
        info = self.partition_info
        if info is not None and info.state != 'UP':
            return [], (f'partition {self.partition} is {info.state}: Slurm starts no job '
                        'there')
        ok, why = [], []
        for node in self.nodes:
            can, reason = slurm.runnable(node.state)
            if can:
                ok.append(node)
            else:
                why.append(f'{node.name} {reason}' + (f' ({node.reason})' if node.reason else ''))
        ok.sort(key=lambda n: slurm.run_rank(n.state))
        if ok:
            return ok, ''
        shown = '; '.join(why[:4]) + (f'; and {len(why) - 4} more' if len(why) > 4 else '')
        return [], f'no node of {self.nodelist} can run a job: {shown}'


def _node_key(name):
    return [int(t) if t.isdigit() else t for t in re.split(r'(\d+)', name)]


def group_nodes(nodes, partitions=None, slurm_partitions=None):
    """:class:`NodeGroup` per partition and node shape, in partition order,
    then by first node. ``partitions``: only these (an unknown one is an
    error); ``slurm_partitions``: ``{name: SlurmPartition}`` from Slurm."""
    slurm_partitions = slurm_partitions or {}
    known = [p for p in slurm_partitions if any(p in n.partitions for n in nodes)]
    for node in nodes:
        for part in node.partitions:
            if part not in known:
                known.append(part)
    wanted = list(partitions) if partitions else known
    unknown = [p for p in wanted if p not in known]
    if unknown:
        raise ClusterproofError(f'Slurm has no partition {", ".join(unknown)} with nodes; '
                                f'it has: {", ".join(known) or "none"}')
    groups = []
    for part in wanted:
        shapes = {}
        for node in sorted((n for n in nodes if part in n.partitions), key=lambda n: _node_key(n.name)):
            shapes.setdefault(node.shape(), []).append(node)
        for members in shapes.values():
            groups.append(NodeGroup(part, members, members[0], slurm_partitions.get(part)))
    return groups


# --------------------------------------------------------------- the probe

def _scratch_facts(path):
    """File system type, mount point, mount options and free space of the
    directory ``path`` (or its nearest existing parent)."""
    probe = os.path.abspath(path)
    while not os.path.exists(probe) and probe != '/':
        probe = os.path.dirname(probe)
    facts = {'path': path, 'exists': os.path.isdir(path), 'probed': probe}
    st = os.statvfs(probe)
    facts['free_gib'] = round(st.f_bavail * st.f_frsize / 1024 ** 3, 1)
    facts['size_gib'] = round(st.f_blocks * st.f_frsize / 1024 ** 3, 1)
    best = None
    with open('/proc/mounts') as fh:
        for line in fh:
            dev, mnt, fstype, opts = line.split()[:4]
            mnt = mnt.replace('\\040', ' ')
            inside = probe == mnt or probe.startswith(mnt.rstrip('/') + '/')
            if inside and (best is None or len(mnt) >= len(best[1])):
                best = (dev, mnt, fstype, opts)
    if best:
        facts.update(device=best[0], mount=best[1], fstype=best[2], options=best[3])
    return facts


def _boot_id():
    try:
        with open('/proc/sys/kernel/random/boot_id') as fh:
            return fh.read().strip()
    except OSError:
        return None


def probe_node(scratch=None):
    """This node's facts: the raw output of the tools (parsed on the login
    node) and what sysfs and statvfs say."""
    rep = {'node': socket.gethostname().split('.')[0], 'boot_id': _boot_id(),
           'lscpu': run_tool(['lscpu']), 'dmidecode': run_tool(['dmidecode', '-t', 'memory']),
           'ndctl': run_tool(['ndctl', 'list', '-N']), 'ipmctl': run_tool(['ipmctl', 'show', '-topology'])}
    try:
        rep['meminfo'] = open('/proc/meminfo').read()
    except OSError as err:
        rep['meminfo_error'] = str(err)
    try:
        rep['llc_mib'] = topology.llc_mib()
    except (OSError, ValueError) as err:
        rep['llc_error'] = str(err)
    if scratch:
        try:
            rep['scratch'] = _scratch_facts(scratch)
        except OSError as err:
            rep['scratch'] = {'path': scratch, 'error': str(err)}
    return rep


def parse_probe(text, source='probe output'):
    """The probe report in ``text`` (the line tagged ``CLUSTERPROOF-PROBE``)."""
    for line in text.splitlines():
        if line.startswith(PROBE_TAG + ' '):
            try:
                return json.loads(line[len(PROBE_TAG) + 1:])
            except ValueError as err:
                raise ClusterproofError(f'{source}: unreadable probe report ({err})') from None
    raise ClusterproofError(f'{source}: no {PROBE_TAG} line; the node printed: {text.strip()[-300:]!r}')


#: srun gives up when the node is not allocated within this many seconds
PROBE_IMMEDIATE_S = 120


def probe_command(group, node=None, scratch=None, python=sys.executable, time_limit='5'):
    """``srun`` command line that probes ``node`` (default: the first node
    of ``group`` Slurm can run a job on). ``--immediate``: a node that Slurm
    cannot give at once fails the probe rather than waiting."""
    if node is None:
        ready, why = group.probe_candidates()
        if not ready:
            raise ClusterproofError(why)
        node = ready[0].name
    cmd = ['srun', f'--partition={group.partition}', f'--nodelist={node}',
           '--nodes=1', '--ntasks=1', f'--time={time_limit}',
           f'--immediate={PROBE_IMMEDIATE_S}',
           python, '-m', 'clusterproof.site.discover', '--probe']
    return cmd + (['--scratch', scratch] if scratch else [])


def parse_dmidecode_memory(text):
    """Installed DIMMs from ``dmidecode -t memory``: ``{'dimms': n,
    'memory_gib': total, 'memory_mts': configured speed or None}``;
    None when the output lists no memory device."""
    dimms, speeds = [], set()
    for block in text.split('\n\n'):
        if 'Memory Device' not in block:
            continue
        fields = dict(line.strip().split(':', 1) for line in block.splitlines()
                      if ':' in line and line.startswith('\t'))
        size = fields.get('Size', '').strip()
        m = re.match(r'(\d+)\s*(MB|GB|TB)', size)
        if not m:
            continue        # "No Module Installed"
        dimms.append(int(m.group(1)) * {'MB': 1 / 1024, 'GB': 1, 'TB': 1024}[m.group(2)])
        speed = (fields.get('Configured Memory Speed') or fields.get('Speed') or '').strip()
        sm = re.match(r'(\d+)\s*MT/s', speed)
        if sm:
            speeds.add(int(sm.group(1)))
    if not dimms:
        return None
    return {'dimms': len(dimms), 'memory_gib': round(sum(dimms), 1),
            'memory_mts': min(speeds) if speeds else None}


# ------------------------------------------------------------ declaration

@dataclass
class Declaration:
    """A partition's ``extras``, ``processor`` and ``devices`` as
    discovered, with the values that could not be discovered and why."""
    name: str
    group: NodeGroup
    access: list
    processor: dict
    hardware: dict
    storage: dict
    emulated: bool = False
    notes: list = field(default_factory=list)
    undiscovered: dict = field(default_factory=dict)    # 'section.key' -> reason
    devices: list = field(default_factory=list)
    slurm: dict = field(default_factory=dict)           # extras['slurm']
    probed: str = ''                                    # the node probed, or ''


def _tool_output(rep, key):
    """stdout of a probed tool, or (None, reason it gave nothing)."""
    out = rep.get(key) or {}
    if out.get('missing'):
        return None, out['missing']
    if out.get('rc') not in (0, None):
        msg = (out.get('stderr') or out.get('stdout') or '').strip().splitlines()
        return None, f'{" ".join(out["argv"])} failed: {msg[-1] if msg else "exit " + str(out["rc"])}'
    return out.get('stdout', ''), None


def gpu_devices(node):
    """ReFrame ``devices`` entries of a node's GPUs (one per GPU type in its
    Gres): ``{'type': 'gpu', 'arch': <Gres type>, 'num_devices': N}``,
    without ``arch`` where the Gres names no type (``gpu:2``)."""
    out = []
    for gtype, count in slurm.gpus(node.gres):
        dev = {'type': 'gpu'}
        if gtype:
            dev['arch'] = gtype
        dev['num_devices'] = count
        out.append(dev)
    return out


def slurm_extras(group):
    """``extras['slurm']``: what Slurm says of the group that is no hardware
    a node reports: its partition's limits and state, the node features, the
    generic resources that are no GPU, and the nodes Slurm cannot run on."""
    info = group.partition_info
    out = {'partition': group.partition}
    if info is not None:
        out.update(partition_state=info.state, max_nodes=info.max_nodes,
                   max_time=info.max_time)
        if info.hidden:
            out['hidden'] = True
    features = sorted(set.intersection(*(set(n.features) for n in group.nodes)))
    if features:
        out['features'] = features
    other = [str(g) for g in group.slurm.gres if g.name != 'gpu']
    if other:
        out['gres'] = other
    down = {n.name: n.state for n in group.nodes if not slurm.runnable(n.state)[0]}
    if down:
        out['unavailable'] = down
    return out


#: the keys of extras['hardware'] only a probe of a node gives
PROBED_KEYS = ('numa_nodes', 'memory_gib', 'cpu_model', 'llc_mib', 'memory_mts', 'dimms')


def declare_group(name, group, rep, all_nodes, scratch=None, login_boot_id=None,
                  unprobed=None):
    """:class:`Declaration` of one node group from Slurm's view of it and
    the probe report ``rep`` of one of its nodes; ``rep`` None (with the
    reason in ``unprobed``) declares it from Slurm's view alone, every value
    only a probe gives listed as undiscovered with that reason."""
    node_rec = group.slurm
    und, notes = {}, []
    if rep is None:
        reason = f'not probed: {unprobed or "no probe"}'
        node = ''
        # Slurm's declared topology, and CPUTot as what Slurm may schedule
        hw = {}
        for key in ('sockets', 'cores_per_socket', 'threads_per_core'):
            if getattr(node_rec, key) >= 1:
                hw[key] = getattr(node_rec, key)
            else:
                und[f'hardware.{key}'] = f'{reason}; Slurm declares {getattr(node_rec, key)}'
        notes.append(f'{reason}; sockets, cores_per_socket and threads_per_core are '
                     "Slurm's declaration")
        for key in PROBED_KEYS:
            und[f'hardware.{key}'] = reason
        emulated = False
    else:
        node = rep.get('node', group.nodes[0].name)
        where = f'node {node} (probed for {group.partition} {group.nodelist})'
        lscpu, why = _tool_output(rep, 'lscpu')
        if lscpu is None:
            raise ClusterproofError(f'{where}: lscpu gave nothing ({why}); cannot declare '
                                    'its CPUs')
        try:
            hw = lscpu_parser.parse(lscpu, source=f'lscpu on {node}')
            mem_total = topology.parse_meminfo(rep.get('meminfo', ''),
                                               source=f'/proc/meminfo on {node}')
        except ValueError as err:
            raise ClusterproofError(str(err)) from None
        if rep.get('llc_mib'):
            hw['llc_mib'] = rep['llc_mib']
        else:
            und['hardware.llc_mib'] = rep.get('llc_error', 'no cache in sysfs')
        dmi, why = _tool_output(rep, 'dmidecode')
        dimms = parse_dmidecode_memory(dmi) if dmi is not None else None
        if dimms:
            hw['memory_gib'] = dimms['memory_gib']
            hw['dimms'] = dimms['dimms']
            if dimms['memory_mts']:
                hw['memory_mts'] = dimms['memory_mts']
            else:
                und['hardware.memory_mts'] = 'dmidecode gives no memory speed'
        else:
            hw['memory_gib'] = mem_total
            reason = why or 'dmidecode lists no memory device'
            und['hardware.memory_mts'] = reason
            und['hardware.dimms'] = reason
        if hw['cpus'] != node_rec.cpus:
            notes.append(f'Slurm gives {group.nodelist} {node_rec.cpus} CPUs; {node} has '
                         f'{hw["cpus"]}')
        declared = (node_rec.sockets, node_rec.cores_per_socket, node_rec.threads_per_core)
        if declared != (hw['sockets'], hw['cores_per_socket'], hw['threads_per_core']):
            notes.append('Slurm declares {} sockets x {} cores x {} threads; '.format(*declared)
                         + f'lscpu on {node} reports {hw["sockets"]} x '
                         f'{hw["cores_per_socket"]} x {hw["threads_per_core"]}')
        emulated = bool(login_boot_id) and rep.get('boot_id') == login_boot_id
        if emulated:
            notes.append(f'{node} shares this login node\'s kernel (same boot_id): the nodes '
                         'are namespaces or containers on one machine; figures are for '
                         'function, not speed')
        ndctl, nwhy = _tool_output(rep, 'ndctl')
        if ndctl is None:
            notes.append(f'persistent memory not probed: {nwhy}')
        elif ndctl.strip() in ('', '[]'):
            notes.append('no persistent memory namespaces (ndctl list -N lists none)')
        else:
            notes.append('persistent memory namespaces found (ndctl list -N): declare '
                         "extras['pmem'] as in site_config/systems/pmserver.py")
    und['hardware.memory_channels_per_socket'] = (
        'no tool reports populated channels; count them from the board manual and '
        'dmidecode\'s locators')
    und['hardware.clock_ghz'] = 'lscpu gives the current, not the nominal clock'
    und['hardware.dp_flops_per_cycle'] = 'depends on the vector units: see the CPU vendor'
    # What Slurm gives jobs on each node: the inventory compares it too.
    hw['slurm_cpus'] = node_rec.cpus
    hw['slurm_memory_mib'] = node_rec.real_memory_mib
    devices = gpu_devices(node_rec)
    others = [n.name for n in all_nodes
              if group.partition in n.partitions and n not in group.nodes]
    access = [f'--partition={group.partition}']
    if others:
        access.append(f'--exclude={compress(others)}')
    access += ['--exclusive', '--no-requeue']
    # the nodes a job of this partition can have now (never one Slurm cannot run on)
    ready = [n for n in group.nodes if slurm.runnable(n.state)[0]]
    storage = {'client_nodes': len(ready) or len(group.nodes)}
    if ready and len(ready) < len(group.nodes):
        notes.append(f'client_nodes counts the {len(ready)} of {len(group.nodes)} nodes Slurm '
                     "can run on now (extras['slurm']['unavailable'] lists the others): "
                     'raise it when they return')
    if 'memory_gib' in hw:
        storage['client_ram_gib'] = hw['memory_gib']
    else:
        und['storage.client_ram_gib'] = und['hardware.memory_gib']
    und['storage.server_ram_gib'] = ('the file servers are not Slurm nodes: add their RAM '
                                     '(the cache rule counts it)')
    if scratch:
        storage['scratch'] = scratch
        facts = (rep or {}).get('scratch') or {}
        if facts.get('error'):
            raise ClusterproofError(f'node {node} (probed for {group.partition} '
                                    f'{group.nodelist}): scratch {scratch}: {facts["error"]}')
        if facts.get('fstype'):
            storage['filesystem'] = facts['fstype']
            notes.append(f'scratch {scratch} on {node}: {facts["fstype"]} mounted at '
                         f'{facts["mount"]} ({facts["options"]}), {facts["free_gib"]:g} GiB free '
                         f'of {facts["size_gib"]:g} GiB' +
                         ('' if facts.get('exists') else '; the directory does not exist yet'))
        elif rep is None:
            und['storage.filesystem'] = f'not probed: {unprobed or "no probe"}'
    else:
        und['storage.scratch'] = 'not given: clusterproof init --scratch PATH'
    topology_known = all(k in hw for k in ('sockets', 'cores_per_socket', 'threads_per_core'))
    if topology_known and 'num_sockets' not in processor_from_hardware(hw):
        notes.append(f"processor: num_cpus {hw['slurm_cpus']} is what Slurm schedules, fewer "
                     f"or more than the node's {hw['sockets']} x {hw['cores_per_socket']} x "
                     f"{hw['threads_per_core']}: no socket and core layout is declared to "
                     f"ReFrame (extras['hardware'] has the node's)")
    return Declaration(name=name, group=group, access=access,
                       processor=processor_from_hardware(hw) if topology_known else {},
                       hardware=hw, storage=storage,
                       emulated=emulated, notes=notes, undiscovered=und, devices=devices,
                       slurm=slurm_extras(group), probed=node)


def _reframe_name(partition):
    """A ReFrame partition name for a Slurm partition: ReFrame takes letters,
    digits, ``_`` and ``-``, not starting with a digit or ``-``."""
    name = re.sub(r'[^A-Za-z0-9_-]', '_', partition)
    return name if re.match(r'[A-Za-z_]', name) else f'p{name}'


def partition_names(groups):
    """ReFrame partition names: the Slurm partition (see
    :func:`_reframe_name`), with ``-g<i>`` when it has more than one node
    group."""
    counts = {}
    for g in groups:
        counts[g.partition] = counts.get(g.partition, 0) + 1
    seen, names = {}, []
    for g in groups:
        seen[g.partition] = seen.get(g.partition, 0) + 1
        base = _reframe_name(g.partition)
        name = base if counts[g.partition] == 1 else f'{base}-g{seen[g.partition]}'
        while name in names:
            name += '_'
        names.append(name)
    return names


# ------------------------------------------------------------ rendering

def _py(value):
    return repr(value)


def _comment(text):
    return ' '.join(str(text).split())


def _section(lines, indent, key, values, undiscovered, prefix):
    pad = ' ' * indent
    lines.append(f"{pad}'{key}': {{")
    for k, v in values.items():
        lines.append(f"{pad}    '{k}': {_py(v)},")
    for k, reason in undiscovered.items():
        if k.startswith(prefix + '.'):
            lines.append(f"{pad}    # '{k.split('.', 1)[1]}': ...,   # not discovered: "
                         f'{_comment(reason)}')
    lines.append(f'{pad}}},')


def render_system(name, decls, hostnames, how, when, host):
    """The text of ``site_config/systems/<name>.py``."""
    lines = [
        f'"""``{name}``: discovered by ``clusterproof init`` on {host} at {when}',
        f'from Slurm ({how}) and one node of each node group Slurm can run on,',
        'probed through srun (lscpu, /proc/meminfo, sysfs caches, dmidecode, ndctl, ipmctl,',
        'the scratch file system). A group with no such node, or whose probe failed,',
        'is declared from Slurm\'s view alone; its comments say why.',
        '',
        'Lines commented out with "not discovered" are values no tool here reports:',
        'fill them in from the vendor\'s documentation before a check needs them',
        '(a check that needs a missing one fails naming it). The hardware keys',
        'slurm_cpus and slurm_memory_mib are what Slurm gives jobs on each node,',
        '"devices" the GPUs of its Gres; SystemInventory compares them with every',
        'node\'s Slurm record and the GPUs the node reports. extras[\'slurm\'] keeps',
        'the partition\'s limits and state, node features and other generic resources.',
        '"""',
        '',
        'system = {',
        f"    'name': {name!r},",
        f"    'descr': {('Discovered by clusterproof init on ' + host)!r},",
        f"    'hostnames': {hostnames!r},",
        "    'modules_system': 'nomod',",
        "    'partitions': [",
    ]
    for d in decls:
        lines += ['        {',
                  f"            'name': {d.name!r},",
                  f"            'descr': {f'Slurm partition {d.group.partition}: {d.group.nodelist}'!r},",
                  "            'scheduler': 'slurm',",
                  "            'launcher': 'srun',",
                  '            # --no-requeue: after a node failure Slurm would otherwise run the',
                  '            # benchmark again later, unannounced, on the file system under test.',
                  f"            'access': {d.access!r},",
                  "            'environs': ['gnu'],",
                  "            'max_jobs': 1,",
                  f"            'processor': {d.processor!r},"]
        if d.devices:
            lines.append(f"            'devices': {d.devices!r},")
        lines.append("            'extras': {")
        if d.probed:
            lines.append(f'                # probed: {d.probed}')
        for note in d.notes:
            lines.append(f'                # {_comment(note)}')
        _section(lines, 16, 'hardware', d.hardware, d.undiscovered, 'hardware')
        _section(lines, 16, 'storage', d.storage, d.undiscovered, 'storage')
        lines.append(f"                'slurm': {d.slurm!r},")
        if d.emulated:
            lines.append("                'emulated': True,")
        lines += ['            },', '        },']
    lines += ['    ],', '}', '']
    return '\n'.join(lines)


def render_references(name, emulated):
    text = (f'# References of the {name} system (site_config/systems/{name}.py), in\n'
            "# ReFrame 4.10's external reference format: one top-level key per check\n"
            '# class, its $index levels, then {figure: [value, lower, upper, unit]}.\n'
            '# Empty until accepted figures are frozen here with\n'
            f'#   clusterproof bless --system {name} --session UUID --write --reason TEXT\n')
    if emulated:
        text += (f'# {name} is emulated: its figures are blessed into {name}.emulated.yaml\n'
                 '# (bless --allow-emulated) and never into this file.\n')
    return text + '{}\n'


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='python3 -m clusterproof.site.discover',
        description=f'Print this node\'s facts as one line tagged {PROBE_TAG}, for '
                    'clusterproof init.')
    parser.add_argument('--probe', action='store_true', required=True)
    parser.add_argument('--scratch', help='also report the file system of this directory')
    args = parser.parse_args(argv)
    sys.stdout.write(f'{PROBE_TAG} {json.dumps(probe_node(args.scratch), sort_keys=True)}\n')
    sys.stdout.flush()
    return 0


if __name__ == '__main__':
    sys.exit(main())
