"""Hardware inventory: what each node reports against what the site
configuration declares.

A node report is one line on standard output::

    CLUSTERPROOF-INVENTORY {"node": "n1", "hardware": {...}, ...}

printed by ``clusterproof inventory --report`` on every node of
the job (one task per node). :func:`node_report` gathers it from /sys and
/proc (with ``lscpu`` as the fallback where /sys has no CPU topology);
:func:`parse_reports` reads the lines back; :func:`compare_reports` returns
one :class:`Mismatch` per node and field that differs from the declaration.

Compared fields: ``sockets``, ``cores_per_socket``, ``threads_per_core`` and
``numa_nodes`` must be equal; ``memory_gib`` is compared with MemTotal
within a tolerance (see :func:`memory_bounds`). Where the declaration has
``slurm_cpus`` and ``slurm_memory_mib`` (``clusterproof init`` writes them),
the node's own Slurm record (CPUTot, RealMemory) must equal them too. Where
the partition declares GPUs (ReFrame ``devices`` of type ``gpu``,
:func:`declared_gpus`), the GPUs the node reports (:func:`gpu_report`:
``nvidia-smi -L``, else ``rocm-smi``, else ``/sys/class/drm``) and the GPUs
of its Slurm record must number as many; a node where no tool can tell is a
mismatch that says why.
"""

import json
import os
import re
import shutil
import socket
import subprocess
from dataclasses import dataclass

from clusterproof import ClusterproofError
from clusterproof.parsers import gpu as gpu_parser
from clusterproof.parsers import lscpu
from clusterproof.parsers import slurm, slurm_values
from clusterproof.site import topology

REPORT_TAG = 'CLUSTERPROOF-INVENTORY'
EXACT_FIELDS = ('sockets', 'cores_per_socket', 'threads_per_core', 'numa_nodes')
#: what Slurm gives jobs on the node, compared when declared
SLURM_FIELDS = ('slurm_cpus', 'slurm_memory_mib', 'slurm_gpus')

#: MemTotal may be this much below the declared size (percent) ...
MEMORY_TOLERANCE_PCT = 4.0
#: ... and never less than this (GiB), for small nodes
MEMORY_TOLERANCE_MIN_GIB = 1.0


@dataclass(frozen=True)
class Mismatch:
    """One difference between what a node has and what is declared."""
    node: str
    field: str
    expected: object
    found: object
    note: str = ''

    def __str__(self):
        text = f'{self.node}: {self.field}: expected {self.expected}, found {self.found}'
        return f'{text} ({self.note})' if self.note else text


def memory_bounds(declared_gib, tolerance_pct=MEMORY_TOLERANCE_PCT):
    """The range of MemTotal (GiB) that matches ``declared_gib`` of DIMMs.

    The kernel never reports all installed memory: the page structures take
    about 1.6 %, firmware and crash-kernel reservations a little more. A
    missing DIMM takes far more: one 16 GiB DIMM of 256 GiB is 6.25 %, one
    32 GiB DIMM of 384 GiB is 8.3 %. So MemTotal may be up to
    ``tolerance_pct`` (at least 1 GiB) below the declared size, and at most
    1 % above it (more memory than declared is also a wrong declaration).
    """
    low = declared_gib - max(declared_gib * tolerance_pct / 100, MEMORY_TOLERANCE_MIN_GIB)
    high = declared_gib * 1.01 + 0.1
    return round(low, 1), round(high, 1)


def compare_hardware(node, declared, found, tolerance_pct=MEMORY_TOLERANCE_PCT):
    """Mismatches between one node's reported ``found`` hardware and the
    ``declared`` hardware (both in the ``extras['hardware']`` shape)."""
    problems = []
    for key in EXACT_FIELDS + SLURM_FIELDS:
        if key not in declared:
            continue
        if key not in found:
            problems.append(Mismatch(node, key, declared[key], 'nothing (not reported)'))
        elif int(found[key]) != int(declared[key]):
            note = 'an NPS or sub-NUMA clustering change shows here' if key == 'numa_nodes' else ''
            problems.append(Mismatch(node, key, declared[key], found[key], note))
    if 'gpus' in declared:
        if 'gpus' not in found:
            why = found.get('gpus_undiscovered', 'not reported')
            problems.append(Mismatch(node, 'gpus', declared['gpus'], f'undiscovered ({why})'))
        elif int(found['gpus']) != int(declared['gpus']):
            problems.append(Mismatch(node, 'gpus', declared['gpus'], found['gpus'],
                                     f'counted by {found.get("gpu_source", "?")}'))
    if 'memory_gib' in declared:
        want = float(declared['memory_gib'])
        low, high = memory_bounds(want, tolerance_pct)
        got = found.get('memory_gib')
        if got is None:
            problems.append(Mismatch(node, 'memory_gib', f'{want:g} GiB', 'nothing (not reported)'))
        elif not low <= float(got) <= high:
            hint = ('a missing or failed DIMM shows here' if float(got) < low
                    else 'more memory than declared: correct the declaration')
            problems.append(Mismatch(
                node, 'memory_gib', f'{want:g} GiB', f'{float(got):g} GiB',
                f'MemTotal must be within {low:g}..{high:g} GiB; {hint}'))
    return problems


def compare_reports(declared, reports, expected_nodes=None,
                    tolerance_pct=MEMORY_TOLERANCE_PCT, expected_names=None):
    """Mismatches over all node reports.

    ``expected_nodes``: how many distinct nodes must have reported;
    ``expected_names``: the node names that must be among them (optional).
    A node that reported twice or a report that lacks its hardware is a
    mismatch too, so nothing is silently ignored.
    """
    problems = []
    seen = {}
    for rep in reports:
        name = rep.get('node', '?')
        if name in seen:
            problems.append(Mismatch(name, 'reports', 1, seen[name] + 1,
                                     'two tasks ran on this node; want one task per node'))
            seen[name] += 1
            continue
        seen[name] = 1
        hw = rep.get('hardware')
        if not isinstance(hw, dict):
            problems.append(Mismatch(name, 'hardware', 'a hardware report',
                                     rep.get('error', 'nothing')))
            continue
        problems.extend(compare_hardware(name, declared, hw, tolerance_pct))
    if expected_nodes is not None and len(seen) != expected_nodes:
        problems.append(Mismatch('job', 'nodes reporting', expected_nodes, len(seen),
                                 'reported: ' + (', '.join(sorted(seen)) or 'none')))
    if expected_names:
        missing = sorted(set(expected_names) - set(seen))
        if missing:
            problems.append(Mismatch('job', 'node names', ', '.join(sorted(expected_names)),
                                     ', '.join(sorted(seen)) or 'none',
                                     'missing: ' + ', '.join(missing)))
    return problems


def format_mismatches(problems):
    """One line per mismatch, for a sanity failure."""
    return '; '.join(str(p) for p in problems)


def parse_reports(text, source='job output'):
    """The node reports in ``text`` (lines tagged ``CLUSTERPROOF-INVENTORY``).

    A tagged line that is not valid JSON is an error naming the line: a
    report that cannot be read must fail, not vanish.
    """
    reports = []
    for num, line in enumerate(text.splitlines(), 1):
        m = re.match(rf'^\s*{REPORT_TAG}\s+(.*)$', line)
        if not m:
            continue
        try:
            rep = json.loads(m.group(1))
        except json.JSONDecodeError as err:
            raise ValueError(f'{source}, line {num}: unreadable inventory report ({err}): '
                             f'{line[:120]!r}') from None
        if not isinstance(rep, dict):
            raise ValueError(f'{source}, line {num}: inventory report is not a JSON object')
        reports.append(rep)
    return reports


def run_tool(argv, timeout=60, env=None):
    """Run a tool (a reporting tool, a Slurm command); returns {argv, rc,
    stdout, stderr}, with ``missing`` the reason when it could not run or
    did not finish (``rc`` None)."""
    exe = shutil.which(argv[0], path=(env or os.environ).get('PATH'))
    if exe is None:
        return {'argv': argv, 'rc': None, 'stdout': '', 'stderr': '',
                'missing': f'{argv[0]} not found on PATH'}
    try:
        proc = subprocess.run([exe] + argv[1:], capture_output=True, text=True, timeout=timeout,
                              env=env)
    except subprocess.TimeoutExpired:
        return {'argv': argv, 'rc': None, 'stdout': '', 'stderr': '',
                'missing': f'{" ".join(argv)} did not finish in {timeout} s'}
    return {'argv': argv, 'rc': proc.returncode, 'stdout': proc.stdout, 'stderr': proc.stderr}


def declared_gpus(devices):
    """GPUs per node a partition declares: the ``num_devices`` of its
    ReFrame ``devices`` of type ``gpu`` (dicts or ReFrame's DeviceInfo);
    None when it declares none."""
    counts = []
    for dev in devices or ():
        kind = dev.get('type') if isinstance(dev, dict) else dev.device_type
        if kind == 'gpu':
            counts.append(dev.get('num_devices', 1) if isinstance(dev, dict) else dev.num_devices)
    return sum(counts) if counts else None


def tool_failure(out):
    """Why a command run by :func:`run_tool` gave nothing: why it did not
    run or finish, else the last line it printed on stderr (else stdout),
    else its exit status."""
    if out.get('missing'):
        return out['missing']
    text = (out.get('stderr') or out.get('stdout') or '').strip().splitlines()
    return text[-1] if text else f'exit {out.get("rc")}'


def _failed(out):
    """Why a tool run by :func:`run_tool` gave nothing, naming the tool."""
    return out['missing'] if out.get('missing') else \
        f'{" ".join(out["argv"])} failed: {tool_failure(out)}'


def gpu_report(run=None, drm_root='/sys/class/drm'):
    """This node's GPUs: ``{'gpus': N, 'gpu_source': tool, 'gpu_models':
    [...]}`` from the first of ``nvidia-smi -L``, ``rocm-smi`` and
    ``/sys/class/drm`` that answers, else ``{'gpus_undiscovered': why}``
    naming what each gave."""
    run = run or run_tool
    why = []
    out = run(['nvidia-smi', '-L'])
    if out['rc'] == 0:
        try:
            found = gpu_parser.parse_nvidia_smi_list(out['stdout'])
            return {'gpus': len(found), 'gpu_source': 'nvidia-smi -L',
                    'gpu_models': sorted({g['model'] for g in found})}
        except ValueError as err:
            why.append(str(err))
    else:
        why.append(_failed(out))
    out = run(['rocm-smi'])
    if out['rc'] == 0:
        try:
            found = gpu_parser.parse_rocm_smi(out['stdout'])
            return {'gpus': len(found), 'gpu_source': 'rocm-smi'}
        except ValueError as err:
            why.append(str(err))
    else:
        why.append(_failed(out))
    cards = gpu_parser.drm_gpus(drm_root)
    if cards:
        return {'gpus': len(cards), 'gpu_source': drm_root,
                'gpu_models': sorted({vendor for _, vendor in cards})}
    why.append(f'{drm_root} does not exist' if cards is None
               else f'{drm_root} has no NVIDIA or AMD card')
    return {'gpus_undiscovered': '; '.join(why)}


PMEM_COMMANDS = {
    'memoryresources': ['ipmctl', 'show', '-memoryresources'],
    'topology': ['ipmctl', 'show', '-topology'],
    'namespaces': ['ndctl', 'list', '-N'],
}


def node_report(sys_cpu=topology.SYS_CPU, sys_node=topology.SYS_NODE,
                meminfo='/proc/meminfo', pmem=False):
    """This node's report: name, hardware and (with ``pmem``) the raw output
    of ipmctl/ndctl and /proc/mounts, parsed later where the declaration is."""
    rep = {'node': socket.gethostname().split('.')[0]}
    try:
        hw = {}
        if os.path.exists(os.path.join(str(sys_cpu), 'online')):
            hw.update(topology.cpu_topology(sys_cpu))
            hw['numa_nodes'] = topology.numa_node_count(sys_node)
            hw['source'] = 'sysfs'
        else:
            out = run_tool(['lscpu'])
            if out['rc'] != 0:
                raise ValueError(f'no {sys_cpu}/online and lscpu failed: '
                                 f'{out.get("missing") or out["stderr"].strip()}')
            hw.update(lscpu.parse(out['stdout']))
            hw['source'] = 'lscpu'
        hw['memory_gib'] = topology.memory_gib(meminfo)
        hw['cpu_model'] = topology.cpu_model()
        hw.update(slurm_record())
        hw.update(gpu_report())
        rep['hardware'] = hw
    except (OSError, ValueError) as err:
        rep['error'] = str(err)
    if pmem:
        rep['pmem'] = {name: run_tool(argv) for name, argv in PMEM_COMMANDS.items()}
        try:
            with open('/proc/mounts') as fh:
                rep['pmem']['mounts'] = fh.read()
        except OSError as err:
            rep['pmem']['mounts_error'] = str(err)
    return rep


def slurm_record(environ=None, run=None):
    """Inside a job step: what Slurm has configured for this node
    (``slurm_cpus``, ``slurm_memory_mib``, ``slurm_gpus``), from ``scontrol
    -o show node $SLURMD_NODENAME``; ``{}`` outside Slurm or where scontrol
    does not answer."""
    environ = os.environ if environ is None else environ
    node = environ.get('SLURMD_NODENAME')
    if not node:
        return {}
    out = (run or run_tool)(['scontrol', '-o', 'show', 'node', node])
    if out['rc'] != 0:
        return {}
    try:
        recs = slurm.nodes_from_scontrol(out['stdout'], source=f'scontrol -o show node {node}')
    except ClusterproofError:
        return {}
    for rec in recs:
        if rec.name == node:
            return {'slurm_cpus': rec.cpus, 'slurm_memory_mib': rec.real_memory_mib,
                    'slurm_gpus': slurm_values.gpu_count(rec.gres)}
    return {}
