"""The declaration of one node group that ``clusterproof init`` writes.

Its partition's ``processor``, ``devices`` (the GPUs) and ``extras``, from
Slurm's view of the group (:mod:`clusterproof.site.slurm_view`) and the
probe report of one of its nodes (:mod:`clusterproof.site.discover`); a
group that could not be probed is declared from Slurm's view alone. Every
value it could not discover is listed in ``undiscovered`` with the reason,
and the ReFrame partition names are chosen here (:func:`partition_names`)."""

import re
from dataclasses import dataclass, field

from clusterproof import ClusterproofError
from clusterproof.hostlist import compress
from clusterproof.parsers import lscpu as lscpu_parser
from clusterproof.parsers import slurm_values
from clusterproof.site import topology
from clusterproof.site.hardware import processor_from_hardware
from clusterproof.site.slurm_view import NodeGroup


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
        return None, (f'{" ".join(out["argv"])} failed: '
                      f'{msg[-1] if msg else "exit " + str(out["rc"])}')
    return out.get('stdout', ''), None


def gpu_devices(node):
    """ReFrame ``devices`` entries of a node's GPUs (one per GPU type in its
    Gres): ``{'type': 'gpu', 'arch': <Gres type>, 'num_devices': N}``,
    without ``arch`` where the Gres names no type (``gpu:2``)."""
    out = []
    for gtype, count in slurm_values.gpus(node.gres):
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
    down = {n.name: n.state for n in group.nodes if not slurm_values.runnable(n.state)[0]}
    if down:
        out['unavailable'] = down
    return out


#: the keys of extras['hardware'] only a probe of a node gives
PROBED_KEYS = ('numa_nodes', 'memory_gib', 'cpu_model', 'llc_mib', 'memory_mts', 'dimms')


def _from_slurm(node_rec, unprobed):
    """``(hardware, undiscovered, notes)`` of a group no probe reached:
    Slurm's declared topology, every value only a probe gives undiscovered."""
    reason = f'not probed: {unprobed or "no probe"}'
    hw, und = {}, {}
    for key in ('sockets', 'cores_per_socket', 'threads_per_core'):
        if getattr(node_rec, key) >= 1:
            hw[key] = getattr(node_rec, key)
        else:
            und[f'hardware.{key}'] = f'{reason}; Slurm declares {getattr(node_rec, key)}'
    notes = [f'{reason}; sockets, cores_per_socket and threads_per_core are '
             "Slurm's declaration"]
    for key in PROBED_KEYS:
        und[f'hardware.{key}'] = reason
    return hw, und, notes


def _probed_memory(rep, hw, und, mem_total):
    """The DIMMs, their speed and the memory size into ``hw`` from the
    probe's dmidecode, else ``/proc/meminfo``'s total (the DIMMs and speed
    undiscovered, with the reason)."""
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


def _probe_notes(group, node_rec, hw, node):
    """Where Slurm's declaration and the probed node disagree."""
    notes = []
    if hw['cpus'] != node_rec.cpus:
        notes.append(f'Slurm gives {group.nodelist} {node_rec.cpus} CPUs; {node} has '
                     f'{hw["cpus"]}')
    declared = (node_rec.sockets, node_rec.cores_per_socket, node_rec.threads_per_core)
    if declared != (hw['sockets'], hw['cores_per_socket'], hw['threads_per_core']):
        notes.append('Slurm declares {} sockets x {} cores x {} threads; '.format(*declared)
                     + f'lscpu on {node} reports {hw["sockets"]} x '
                     f'{hw["cores_per_socket"]} x {hw["threads_per_core"]}')
    return notes


def _pmem_note(rep):
    """What the probe's ``ndctl list -N`` says of persistent memory."""
    ndctl, why = _tool_output(rep, 'ndctl')
    if ndctl is None:
        return f'persistent memory not probed: {why}'
    if ndctl.strip() in ('', '[]'):
        return 'no persistent memory namespaces (ndctl list -N lists none)'
    return ('persistent memory namespaces found (ndctl list -N): declare '
            "extras['pmem'] as in site_config/systems/pmserver.py")


def _from_probe(group, rep, login_boot_id):
    """``(hardware, undiscovered, notes, emulated)`` of a group from the
    probe report ``rep`` of one of its nodes."""
    node_rec, node = group.slurm, rep.get('node', group.nodes[0].name)
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
    und = {}
    if rep.get('llc_mib'):
        hw['llc_mib'] = rep['llc_mib']
    else:
        und['hardware.llc_mib'] = rep.get('llc_error', 'no cache in sysfs')
    _probed_memory(rep, hw, und, mem_total)
    notes = _probe_notes(group, node_rec, hw, node)
    emulated = bool(login_boot_id) and rep.get('boot_id') == login_boot_id
    if emulated:
        notes.append(f'{node} shares this login node\'s kernel (same boot_id): the nodes '
                     'are namespaces or containers on one machine; figures are for '
                     'function, not speed')
    notes.append(_pmem_note(rep))
    return hw, und, notes, emulated


def _access(group, all_nodes):
    """sbatch options that put a job on the group's nodes alone."""
    others = [n.name for n in all_nodes
              if group.partition in n.partitions and n not in group.nodes]
    access = [f'--partition={group.partition}']
    if others:
        access.append(f'--exclude={compress(others)}')
    return access + ['--exclusive', '--no-requeue']


def _storage(group, hw, und, notes, probe):
    """``extras['storage']`` of the group; ``probe`` is ``(rep, node,
    scratch, unprobed)`` as :func:`declare_group` was given them."""
    rep, node, scratch, unprobed = probe
    # the nodes a job of this partition can have now (never one Slurm cannot run on)
    ready = [n for n in group.nodes if slurm_values.runnable(n.state)[0]]
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
    if not scratch:
        und['storage.scratch'] = 'not given: clusterproof init --scratch PATH'
        return storage
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
    return storage


def declare_group(name, group, rep, all_nodes, scratch=None, login_boot_id=None,
                  unprobed=None):
    """:class:`Declaration` of one node group from Slurm's view of it and
    the probe report ``rep`` of one of its nodes; ``rep`` None (with the
    reason in ``unprobed``) declares it from Slurm's view alone, every value
    only a probe gives listed as undiscovered with that reason."""
    node_rec = group.slurm
    if rep is None:
        node, emulated = '', False
        hw, und, notes = _from_slurm(node_rec, unprobed)
    else:
        node = rep.get('node', group.nodes[0].name)
        hw, und, notes, emulated = _from_probe(group, rep, login_boot_id)
    und['hardware.memory_channels_per_socket'] = (
        'no tool reports populated channels; count them from the board manual and '
        'dmidecode\'s locators')
    und['hardware.clock_ghz'] = 'lscpu gives the current, not the nominal clock'
    und['hardware.dp_flops_per_cycle'] = 'depends on the vector units: see the CPU vendor'
    # What Slurm gives jobs on each node: the inventory compares it too.
    hw['slurm_cpus'] = node_rec.cpus
    hw['slurm_memory_mib'] = node_rec.real_memory_mib
    access = _access(group, all_nodes)
    storage = _storage(group, hw, und, notes, (rep, node, scratch, unprobed))
    topology_known = all(k in hw for k in ('sockets', 'cores_per_socket', 'threads_per_core'))
    if topology_known and 'num_sockets' not in processor_from_hardware(hw):
        notes.append(f"processor: num_cpus {hw['slurm_cpus']} is what Slurm schedules, fewer "
                     f"or more than the node's {hw['sockets']} x {hw['cores_per_socket']} x "
                     f"{hw['threads_per_core']}: no socket and core layout is declared to "
                     f"ReFrame (extras['hardware'] has the node's)")
    return Declaration(name=name, group=group, access=access,
                       processor=processor_from_hardware(hw) if topology_known else {},
                       hardware=hw, storage=storage,
                       emulated=emulated, notes=notes, undiscovered=und,
                       devices=gpu_devices(node_rec), slurm=slurm_extras(group), probed=node)


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
