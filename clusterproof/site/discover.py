"""Discover a Slurm cluster: what ``clusterproof init`` writes into a new
system file.

1. Slurm's view, from the login node
   (:func:`~clusterproof.site.slurm_view.read_slurm`): every node's
   CPUs (CPUTot), declared sockets, cores, threads, memory, GPUs and other
   generic resources, features, state and partitions (``sinfo --json``,
   else ``scontrol -o show node``), and the partitions with their node
   lists, limits and state (``scontrol -o show partition``). The parsing
   of every Slurm version's output is :mod:`clusterproof.parsers.slurm`.
2. Node groups: nodes of a partition that Slurm describes alike, GPUs
   included (:func:`~clusterproof.site.slurm_view.group_nodes`); a
   partition with two kinds of node gives two.
3. One node of each group that Slurm can run a job on (idle first, never a
   drained, down or powered-down one:
   :meth:`~clusterproof.site.slurm_view.NodeGroup.probe_candidates`)
   is probed through ``srun`` (``clusterproof init --probe``, which prints
   :func:`probe_line`): ``lscpu`` (sockets, cores, threads, NUMA
   nodes, model), the last-level cache from sysfs, ``/proc/meminfo``,
   ``dmidecode -t memory`` (DIMMs, speed) where installed and readable,
   ``ndctl``/``ipmctl`` where present, and the scratch directory's file
   system, free space and mount options.
4. :func:`~clusterproof.site.declare.declare_group` turns Slurm's view and
   the probe into a partition's ``processor``, ``devices`` (the GPUs) and
   ``extras``; a group that could
   not be probed is declared from Slurm's view alone. Every value it could
   not discover is listed in ``undiscovered`` with the reason, and
   :func:`render_system` writes it as a commented-out line, never as a
   guessed value.
"""

import json
import os
import socket

from clusterproof import ClusterproofError, command
from clusterproof.site import topology
from clusterproof.site.inventory import run_tool

PROBE_TAG = 'CLUSTERPROOF-PROBE'


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
           'ndctl': run_tool(['ndctl', 'list', '-N']),
           'ipmctl': run_tool(['ipmctl', 'show', '-topology'])}
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


def probe_line(scratch=None):
    """This node's facts as the one line :func:`parse_probe` reads."""
    return f'{PROBE_TAG} {json.dumps(probe_node(scratch), sort_keys=True)}\n'


def parse_probe(text, source='probe output'):
    """The probe report in ``text`` (the line tagged ``CLUSTERPROOF-PROBE``)."""
    for line in text.splitlines():
        if line.startswith(PROBE_TAG + ' '):
            try:
                return json.loads(line[len(PROBE_TAG) + 1:])
            except ValueError as err:
                raise ClusterproofError(f'{source}: unreadable probe report ({err})') from None
    raise ClusterproofError(f'{source}: no {PROBE_TAG} line; the node printed: '
                            f'{text.strip()[-300:]!r}')


#: srun gives up when the node is not allocated within this many seconds
PROBE_IMMEDIATE_S = 120


def probe_command(group, node=None, scratch=None, time_limit='5'):
    """``srun`` command line that probes ``node`` (default: the first node
    of ``group`` Slurm can run a job on) with ``clusterproof init --probe``.
    ``--immediate``: a node that Slurm cannot give at once fails the probe
    rather than waiting."""
    if node is None:
        ready, why = group.probe_candidates()
        if not ready:
            raise ClusterproofError(why)
        node = ready[0].name
    cmd = ['srun', f'--partition={group.partition}', f'--nodelist={node}',
           '--nodes=1', '--ntasks=1', f'--time={time_limit}',
           f'--immediate={PROBE_IMMEDIATE_S}',
           *command('init', '--probe')]
    return cmd + (['--scratch', scratch] if scratch else [])


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
                  f"            'descr': "
                  f"{f'Slurm partition {d.group.partition}: {d.group.nodelist}'!r},",
                  "            'scheduler': 'slurm',",
                  "            'launcher': 'srun',",
                  '            # --no-requeue: after a node failure Slurm would otherwise run the',
                  '            # benchmark again later, unannounced, on the file system under '
                  'test.',
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
