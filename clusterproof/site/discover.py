"""Discover a Slurm cluster: what ``clusterproof init`` writes into a new
system file.

1. Slurm's view, from the login node: every node's CPUs, sockets, cores,
   threads, memory and partitions (``sinfo --json`` where this Slurm
   version prints JSON, else ``scontrol -o show node``), and the partitions
   (``scontrol -o show partition``). :func:`parse_scontrol`,
   :func:`nodes_from_scontrol` and :func:`nodes_from_json` read them.
2. Node groups: nodes of a partition with identical Slurm hardware
   (:func:`group_nodes`); a partition with two kinds of node gives two.
3. One node of each group is probed through ``srun``
   (``python -m clusterproof.site.discover --probe``, :func:`probe_node`):
   ``lscpu`` (sockets, cores, threads, NUMA nodes, model), the last-level
   cache from sysfs, ``/proc/meminfo``, ``dmidecode -t memory`` (DIMMs, speed)
   where installed and readable, ``ndctl``/``ipmctl`` where present, and the
   scratch directory's file system, free space and mount options.
4. :func:`declare_group` turns Slurm's view and the probe into a partition's
   ``extras``; every value it could not discover is listed in
   ``undiscovered`` with the reason, and :func:`render_system` writes it as a
   commented-out line, never as a guessed value.
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
from clusterproof.site import topology
from clusterproof.site.hostlist import compress
from clusterproof.site.inventory import _run

PROBE_TAG = 'CLUSTERPROOF-PROBE'


# ---------------------------------------------------------------- Slurm's view

@dataclass(frozen=True)
class SlurmNode:
    """One node as Slurm has it configured."""
    name: str
    partitions: tuple
    cpus: int
    sockets: int
    cores_per_socket: int
    threads_per_core: int
    real_memory_mib: int
    state: str = ''

    def shape(self):
        """What makes two nodes the same kind of node for Slurm."""
        return (self.cpus, self.sockets, self.cores_per_socket, self.threads_per_core,
                self.real_memory_mib)


_KEY = re.compile(r'(?:^|\s)([A-Za-z][A-Za-z0-9_:]*)=')


def parse_scontrol_record(text):
    """``{key: value}`` of one ``scontrol show`` record (one line with ``-o``,
    or the indented multi-line form). Values may contain spaces
    (``OS=Linux 6.1 #1 SMP``): a value runs up to the next `` Key=``."""
    flat = ' '.join(text.split('\n'))
    keys = list(_KEY.finditer(flat))
    rec = {}
    for i, m in enumerate(keys):
        end = keys[i + 1].start() if i + 1 < len(keys) else len(flat)
        rec[m.group(1)] = flat[m.end():end].strip()
    return rec


def parse_scontrol(text, kind, source='scontrol'):
    """The records of ``scontrol show node|partition`` output; ``kind`` is
    ``NodeName`` or ``PartitionName``, the key that starts each record."""
    records, current = [], []
    for line in text.splitlines():
        if line.startswith(f'{kind}='):
            if current:
                records.append(parse_scontrol_record('\n'.join(current)))
            current = [line]
        elif line.strip() and current:
            current.append(line)
        elif line.strip():
            raise ClusterproofError(f'{source}: line before the first {kind}=: {line[:80]!r}')
    if current:
        records.append(parse_scontrol_record('\n'.join(current)))
    return records


def _int(rec, key, where):
    val = rec.get(key)
    if val is None or not str(val).isdigit():
        raise ClusterproofError(f'{where}: {key}={val!r} is not a whole number')
    return int(val)


def nodes_from_scontrol(text, source='scontrol -o show node'):
    """:class:`SlurmNode` list from ``scontrol show node`` text."""
    nodes = []
    for rec in parse_scontrol(text, 'NodeName', source):
        where = f'{source}: node {rec.get("NodeName")}'
        parts = rec.get('Partitions', '')
        nodes.append(SlurmNode(
            name=rec['NodeName'], partitions=tuple(p for p in parts.split(',') if p),
            cpus=_int(rec, 'CPUTot', where), sockets=_int(rec, 'Sockets', where),
            cores_per_socket=_int(rec, 'CoresPerSocket', where),
            threads_per_core=_int(rec, 'ThreadsPerCore', where),
            real_memory_mib=_int(rec, 'RealMemory', where), state=rec.get('State', '')))
    return nodes


def nodes_from_json(text, source='sinfo --json'):
    """:class:`SlurmNode` list from the ``nodes`` list of Slurm's JSON output."""
    try:
        data = json.loads(text)
        rows = data['nodes']
    except (ValueError, KeyError, TypeError) as err:
        raise ClusterproofError(f'{source}: no "nodes" list in the JSON ({err})') from None
    nodes = []
    for row in rows:
        where = f'{source}: node {row.get("name")}'
        state = row.get('state', '')
        nodes.append(SlurmNode(
            name=row['name'], partitions=tuple(row.get('partitions') or ()),
            cpus=_int(row, 'cpus', where), sockets=_int(row, 'sockets', where),
            cores_per_socket=_int(row, 'cores', where), threads_per_core=_int(row, 'threads', where),
            real_memory_mib=_int(row, 'real_memory', where),
            state=(' '.join(state) if isinstance(state, list) else str(state)).upper()))
    return nodes


def partitions_from_scontrol(text, source='scontrol -o show partition'):
    """``{partition: record}`` from ``scontrol show partition`` text."""
    return {rec['PartitionName']: rec for rec in parse_scontrol(text, 'PartitionName', source)}


def read_slurm(run=_run):
    """Slurm's view of this cluster: ``(nodes, partitions, how)``, where
    ``how`` names the commands that answered."""
    parts_out = run(['scontrol', '-o', 'show', 'partition'])
    if parts_out['rc'] != 0:
        raise ClusterproofError('scontrol -o show partition failed: '
                                f'{parts_out.get("missing") or parts_out["stderr"].strip()}; '
                                'run clusterproof init on a login node of the cluster '
                                '(SLURM_CONF set if Slurm needs it)')
    partitions = partitions_from_scontrol(parts_out['stdout'])
    js = run(['sinfo', '--json'])
    if js['rc'] == 0 and js['stdout'].lstrip().startswith('{'):
        return nodes_from_json(js['stdout']), partitions, 'sinfo --json'
    text = run(['scontrol', '-o', 'show', 'node'])
    if text['rc'] != 0:
        raise ClusterproofError(f'scontrol -o show node failed: '
                                f'{text.get("missing") or text["stderr"].strip()}')
    return nodes_from_scontrol(text['stdout']), partitions, 'scontrol -o show node'


def slurm_record(environ=None, run=_run):
    """Inside a job step: what Slurm has configured for this node
    (``slurm_cpus``, ``slurm_memory_mib``), from ``scontrol -o show node
    $SLURMD_NODENAME``; ``{}`` outside Slurm or where scontrol does not answer."""
    environ = os.environ if environ is None else environ
    node = environ.get('SLURMD_NODENAME')
    if not node:
        return {}
    out = run(['scontrol', '-o', 'show', 'node', node])
    if out['rc'] != 0:
        return {}
    try:
        recs = nodes_from_scontrol(out['stdout'], source=f'scontrol -o show node {node}')
    except ClusterproofError:
        return {}
    for rec in recs:
        if rec.name == node:
            return {'slurm_cpus': rec.cpus, 'slurm_memory_mib': rec.real_memory_mib}
    return {}


@dataclass
class NodeGroup:
    """Nodes of one partition that Slurm describes alike."""
    partition: str
    nodes: list
    slurm: SlurmNode          # the first node: its shape is every node's

    @property
    def nodelist(self):
        return compress([n.name for n in self.nodes])


def _node_key(name):
    return [int(t) if t.isdigit() else t for t in re.split(r'(\d+)', name)]


def group_nodes(nodes, partitions=None):
    """:class:`NodeGroup` per partition and node shape, in partition order,
    then by first node. ``partitions``: only these (an unknown one is an error)."""
    known = []
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
            groups.append(NodeGroup(part, members, members[0]))
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
           'lscpu': _run(['lscpu']), 'dmidecode': _run(['dmidecode', '-t', 'memory']),
           'ndctl': _run(['ndctl', 'list', '-N']), 'ipmctl': _run(['ipmctl', 'show', '-topology'])}
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


def probe_command(group, scratch=None, python=sys.executable, time_limit='5'):
    """``srun`` command line that probes the first node of ``group``."""
    cmd = ['srun', f'--partition={group.partition}', f'--nodelist={group.nodes[0].name}',
           '--nodes=1', '--ntasks=1', f'--time={time_limit}',
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
    """A partition's ``extras`` and ``processor`` as discovered, with the
    values that could not be discovered and why."""
    name: str
    group: NodeGroup
    access: list
    processor: dict
    hardware: dict
    storage: dict
    emulated: bool = False
    notes: list = field(default_factory=list)
    undiscovered: dict = field(default_factory=dict)    # 'section.key' -> reason


def _tool_output(rep, key):
    """stdout of a probed tool, or (None, reason it gave nothing)."""
    out = rep.get(key) or {}
    if out.get('missing'):
        return None, out['missing']
    if out.get('rc') not in (0, None):
        msg = (out.get('stderr') or out.get('stdout') or '').strip().splitlines()
        return None, f'{" ".join(out["argv"])} failed: {msg[-1] if msg else "exit " + str(out["rc"])}'
    return out.get('stdout', ''), None


def declare_group(name, group, rep, all_nodes, scratch=None, login_boot_id=None):
    """:class:`Declaration` of one node group from Slurm's view of it and
    the probe report ``rep`` of one of its nodes."""
    node, slurm = rep.get('node', group.nodes[0].name), group.slurm
    where = f'node {node} (probed for {group.partition} {group.nodelist})'
    und = {}
    lscpu, why = _tool_output(rep, 'lscpu')
    if lscpu is None:
        raise ClusterproofError(f'{where}: lscpu gave nothing ({why}); cannot declare its CPUs')
    try:
        hw = lscpu_parser.parse(lscpu, source=f'lscpu on {node}')
        mem_total = topology.parse_meminfo(rep.get('meminfo', ''), source=f'/proc/meminfo on {node}')
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
    und['hardware.memory_channels_per_socket'] = (
        'no tool reports populated channels; count them from the board manual and '
        'dmidecode\'s locators')
    und['hardware.clock_ghz'] = 'lscpu gives the current, not the nominal clock'
    und['hardware.dp_flops_per_cycle'] = 'depends on the vector units: see the CPU vendor'
    # What Slurm gives jobs on each node: the inventory compares it too.
    hw['slurm_cpus'] = slurm.cpus
    hw['slurm_memory_mib'] = slurm.real_memory_mib
    notes = []
    if hw['cpus'] != slurm.cpus:
        notes.append(f'Slurm gives {group.nodelist} {slurm.cpus} CPUs; {node} has {hw["cpus"]}')
    emulated = bool(login_boot_id) and rep.get('boot_id') == login_boot_id
    if emulated:
        notes.append(f'{node} shares this login node\'s kernel (same boot_id): the nodes are '
                     'namespaces or containers on one machine; figures are for function, '
                     'not speed')
    ndctl, nwhy = _tool_output(rep, 'ndctl')
    if ndctl is None:
        notes.append(f'persistent memory not probed: {nwhy}')
    elif ndctl.strip() in ('', '[]'):
        notes.append('no persistent memory namespaces (ndctl list -N lists none)')
    else:
        notes.append('persistent memory namespaces found (ndctl list -N): declare '
                     "extras['pmem'] as in site_config/systems/pmserver.py")
    others = [n.name for n in all_nodes
              if group.partition in n.partitions and n not in group.nodes]
    access = [f'--partition={group.partition}']
    if others:
        access.append(f'--exclude={compress(others)}')
    access += ['--exclusive', '--no-requeue']
    processor = {'num_cpus': slurm.cpus, 'num_cpus_per_core': slurm.threads_per_core,
                 'num_sockets': slurm.sockets,
                 'num_cpus_per_socket': slurm.cpus // slurm.sockets}
    storage = {'client_nodes': len(group.nodes), 'client_ram_gib': hw['memory_gib']}
    und['storage.server_ram_gib'] = ('the file servers are not Slurm nodes: add their RAM '
                                     '(the cache rule counts it)')
    if scratch:
        facts = rep.get('scratch') or {}
        storage['scratch'] = scratch
        if facts.get('error'):
            raise ClusterproofError(f'{where}: scratch {scratch}: {facts["error"]}')
        if facts.get('fstype'):
            storage['filesystem'] = facts['fstype']
            notes.append(f'scratch {scratch} on {node}: {facts["fstype"]} mounted at '
                         f'{facts["mount"]} ({facts["options"]}), {facts["free_gib"]:g} GiB free '
                         f'of {facts["size_gib"]:g} GiB' +
                         ('' if facts.get('exists') else '; the directory does not exist yet'))
    else:
        und['storage.scratch'] = 'not given: clusterproof init --scratch PATH'
    return Declaration(name=name, group=group, access=access, processor=processor,
                       hardware=hw, storage=storage, emulated=emulated, notes=notes,
                       undiscovered=und)


def partition_names(groups):
    """ReFrame partition names: the Slurm partition, with ``-g<i>`` when it
    has more than one node group."""
    counts = {}
    for g in groups:
        counts[g.partition] = counts.get(g.partition, 0) + 1
    seen, names = {}, []
    for g in groups:
        seen[g.partition] = seen.get(g.partition, 0) + 1
        names.append(g.partition if counts[g.partition] == 1 else f'{g.partition}-g{seen[g.partition]}')
    return names


# ------------------------------------------------------------ rendering

def _py(value):
    return repr(value)


def _section(lines, indent, key, values, undiscovered, prefix):
    pad = ' ' * indent
    lines.append(f"{pad}'{key}': {{")
    for k, v in values.items():
        lines.append(f"{pad}    '{k}': {_py(v)},")
    for k, reason in undiscovered.items():
        if k.startswith(prefix + '.'):
            lines.append(f"{pad}    # '{k.split('.', 1)[1]}': ...,   # not discovered: {reason}")
    lines.append(f'{pad}}},')


def render_system(name, decls, hostnames, how, when, host):
    """The text of ``site_config/systems/<name>.py``."""
    lines = [
        f'"""``{name}``: discovered by ``clusterproof init`` on {host} at {when}',
        f'from Slurm ({how}, scontrol -o show partition) and one node of each node group',
        'probed through srun (lscpu, /proc/meminfo, sysfs caches, dmidecode, ndctl, ipmctl,',
        'the scratch file system).',
        '',
        'Lines commented out with "not discovered" are values no tool here reports:',
        'fill them in from the vendor\'s documentation before a check needs them',
        '(a check that needs a missing one fails naming it). The hardware keys',
        'slurm_cpus and slurm_memory_mib are what Slurm gives jobs on each node;',
        'SystemInventory compares them with every node\'s Slurm record.',
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
                  f"            'processor': {d.processor!r},",
                  "            'extras': {"]
        for note in d.notes:
            lines.append(f'                # {note}')
        _section(lines, 16, 'hardware', d.hardware, d.undiscovered, 'hardware')
        _section(lines, 16, 'storage', d.storage, d.undiscovered, 'storage')
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
