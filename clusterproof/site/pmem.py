"""Persistent memory provisioning: DAX detection, and comparisons of what
``ipmctl`` and ``ndctl`` report (parsed by clusterproof/parsers/ipmctl_*.py
and ndctl.py) with the declared ``extras['pmem']``.

Declared provisioning (see ``site_config/systems/pmserver.py``)::

    'pmem': {
        'provisioning': 'app_direct',          # or 'memory_mode', 'mixed'
        'dimms': [{'locator': 'CPU1_DIMM_A2', 'capacity_gib': 252.4,
                   'memory_type': 'Logical Non-Volatile Device'}, ...],
        'memory_resources': {'capacity': 3029.4, 'memory_capacity': 0.0,
                             'app_direct_capacity': 3024.0, ...},   # GiB
        'namespaces': [{'dev': 'namespace1.0', 'mode': 'fsdax',
                        'size': 1598128390144, 'blockdev': 'pmem1'}, ...],
        'dax_mounts': [{'path': '/mnt/nvdimm', 'blockdev': 'pmem1'}],
        'devdax': [{'chardev': 'dax0.0'}],
    }

Every comparison returns :class:`clusterproof.site.inventory.Mismatch` objects
naming the field, what was expected and what was found.
"""

import os
import re
from dataclasses import dataclass

from clusterproof import command
from clusterproof.parsers import ipmctl_memoryresources, ipmctl_topology, ndctl
from clusterproof.parsers import mounts as mounts_parser
from clusterproof.parsers.mounts import Mount
from clusterproof.references.judge import Judgement, Verdict
from clusterproof.site.inventory import Mismatch

PMEM_MEMORY_TYPE = 'Logical Non-Volatile Device'

# Tolerances of the comparisons
CAPACITY_TOLERANCE_GIB = 1.0      # ipmctl rounds to 3 decimals, declarations to 1
NAMESPACE_SIZE_TOLERANCE = 0.001  # relative


def is_dax_mount(mount):
    """Mounted with ``dax`` or ``dax=always`` (``dax=inode`` leaves it to
    each file, ``dax=never`` turns it off: neither guarantees DAX)."""
    return 'dax' in mount.options or 'dax=always' in mount.options


_PMEM_DEV = re.compile(r'^/dev/(pmem\d+(?:\.\d+)?)(?:p\d+)?$')


def pmem_blockdev(device):
    """``/dev/pmem1`` -> ``pmem1``; ``/dev/pmem0p1`` -> ``pmem0``;
    ``/dev/pmem1.1`` -> ``pmem1.1``; anything else -> None."""
    m = _PMEM_DEV.match(device)
    return m.group(1) if m else None


def mount_of(path, mounts):
    """The mount that holds ``path`` (longest mount point that is a prefix;
    the last one mounted wins on equal paths, as in the kernel)."""
    path = os.path.normpath(path)
    best = None
    for mnt in mounts:
        mp = os.path.normpath(mnt.path)
        if path == mp or path.startswith(mp.rstrip('/') + '/'):
            if best is None or len(mp) >= len(os.path.normpath(best.path)):
                best = mnt
    return best


@dataclass(frozen=True)
class DaxVerdict(Judgement):
    """A :class:`~clusterproof.references.judge.Judgement` of a path or a
    node: ``pass`` (true) or ``FAILED`` (false) with the precise reason,
    and the ``mount`` and ``namespace`` found on the way."""
    mount: Mount = None
    namespace: dict = None

    @property
    def ok(self):
        return self.verdict == Verdict.PASS

    def __bool__(self):
        return self.ok


def _fit(reason, mount=None, namespace=None):
    return DaxVerdict(Verdict.PASS, reason, mount=mount, namespace=namespace)


def _unfit(reason, mount=None, namespace=None):
    return DaxVerdict(Verdict.FAILED, reason, mount=mount, namespace=namespace)


def verify_dax_target(path, mounts_text, ndctl_json):
    """Is ``path`` really on persistent memory? It must be on a file system
    mounted with the ``dax`` option, on a pmem block device (/dev/pmemN),
    whose namespace in ``ndctl list -N`` is in fsdax mode.

    Returns a :class:`DaxVerdict`: true when all holds, else false with the
    precise reason.
    """
    mnt = mount_of(path, mounts_parser.parse(mounts_text))
    if mnt is None:
        return _unfit(f'{path}: no mount in /proc/mounts holds this path')
    where = f'{path} is on {mnt.path} ({mnt.device}, {mnt.fstype})'
    if not is_dax_mount(mnt):
        return _unfit(f'{where}, not a DAX mount: options {",".join(mnt.options)} '
                      'have no dax or dax=always (mount -o dax /dev/pmemN ...)', mnt)
    blockdev = pmem_blockdev(mnt.device)
    if blockdev is None:
        return _unfit(f'{where}: mounted with dax but not on a pmem block device '
                      '(want /dev/pmemN)', mnt)
    namespaces = ndctl.parse(ndctl_json or '')
    ns = next((n for n in namespaces if n['blockdev'] == blockdev), None)
    if ns is None:
        listed = ', '.join(f'{n["dev"]}->{n["blockdev"]}' for n in namespaces) or 'none'
        return _unfit(f'{where}: no namespace in ndctl list -N has blockdev '
                      f'{blockdev} (namespaces: {listed})', mnt)
    if ns['mode'] != 'fsdax':
        return _unfit(f'{where}: namespace {ns["dev"]} (blockdev {blockdev}) is in '
                      f'mode {ns["mode_reported"]}, not fsdax', mnt, ns)
    return _fit(f'{where}: DAX mount on namespace {ns["dev"]} (fsdax)', mnt, ns)


def provisioning_of(resources):
    """'memory_mode', 'app_direct', 'mixed' or 'unconfigured' from parsed
    memory resources."""
    mem = resources.get('memory_capacity') or 0.0
    ad = resources.get('app_direct_capacity') or 0.0
    if mem > 0 and ad > 0:
        return 'mixed'
    if mem > 0:
        return 'memory_mode'
    if ad > 0:
        return 'app_direct'
    return 'unconfigured'


def compare_memory_resources(node, declared, found, provisioning=None):
    """Declared capacities (GiB) against parsed ``ipmctl show
    -memoryresources``; only keys both sides have are compared (the table
    format has no unconfigured/reserved figures)."""
    problems = []
    if provisioning is not None:
        actual = provisioning_of(found)
        if actual != provisioning:
            problems.append(Mismatch(
                node, 'pmem.provisioning', provisioning, actual,
                f'MemoryCapacity {found.get("memory_capacity", 0):g} GiB, '
                f'AppDirectCapacity {found.get("app_direct_capacity", 0):g} GiB; '
                'a new goal (ipmctl create -goal) applies at the next reboot'))
    for key, want in sorted((declared or {}).items()):
        if key not in found:
            continue
        if abs(float(want) - found[key]) > CAPACITY_TOLERANCE_GIB:
            problems.append(Mismatch(node, f'pmem.memory_resources.{key}', f'{want:g} GiB',
                                     f'{found[key]:g} GiB'))
    return problems


def compare_dimms(node, declared, found):
    """Declared DIMM population (locator, capacity, memory type) against
    ``ipmctl show -topology``. Only rows of the memory types the declaration
    names are compared (declare DDR4 rows too to check them)."""
    problems = []
    types = {d.get('memory_type', PMEM_MEMORY_TYPE) for d in declared}
    rows = [r for r in found if r['memory_type'] in types]
    if len(rows) != len(declared):
        problems.append(Mismatch(node, 'pmem.dimms (count)', len(declared), len(rows),
                                 'memory types ' + ', '.join(sorted(types))))
    by_loc = {r['locator']: r for r in rows}
    for dimm in declared:
        loc = dimm['locator']
        row = by_loc.get(loc)
        if row is None:
            problems.append(Mismatch(node, f'pmem.dimms[{loc}]', 'a module', 'no module',
                                     'empty slot, failed module or other locator names'))
            continue
        want_type = dimm.get('memory_type', PMEM_MEMORY_TYPE)
        if row['memory_type'] != want_type:
            problems.append(Mismatch(node, f'pmem.dimms[{loc}].memory_type', want_type,
                                     row['memory_type']))
        if 'capacity_gib' in dimm and row['capacity_gib'] is not None and \
                abs(float(dimm['capacity_gib']) - row['capacity_gib']) > CAPACITY_TOLERANCE_GIB:
            problems.append(Mismatch(node, f'pmem.dimms[{loc}].capacity_gib',
                                     f'{dimm["capacity_gib"]:g} GiB',
                                     f'{row["capacity_gib"]:g} GiB'))
    declared_locs = {d['locator'] for d in declared}
    for loc in sorted(set(by_loc) - declared_locs):
        problems.append(Mismatch(node, f'pmem.dimms[{loc}]', 'no module (not declared)',
                                 f'{by_loc[loc]["memory_type"]} '
                                 f'{by_loc[loc]["capacity_gib"]:g} GiB'))
    return problems


def _gib(size):
    return f'{size / 1024 ** 3:.2f} GiB ({size} B)'


def compare_namespaces(node, declared, found):
    """Declared namespaces (dev, mode, size in bytes, blockdev/chardev)
    against ``ndctl list -N``. Disabled namespaces of size 0 (the idle seed
    namespace of a region) are ignored."""
    problems = []
    live = [n for n in found if n['enabled'] or n['size']]
    by_dev = {n['dev']: n for n in live}
    for want in declared:
        dev = want['dev']
        ns = by_dev.get(dev)
        if ns is None:
            problems.append(Mismatch(node, f'pmem.namespaces[{dev}]', 'present', 'absent',
                                     'listed: ' + (', '.join(sorted(by_dev)) or 'none')))
            continue
        if 'mode' in want and ns['mode'] != want['mode']:
            problems.append(Mismatch(node, f'pmem.namespaces[{dev}].mode', want['mode'],
                                     ns['mode_reported']))
        if 'size' in want and abs(ns['size'] - int(want['size'])) > \
                NAMESPACE_SIZE_TOLERANCE * int(want['size']):
            problems.append(Mismatch(node, f'pmem.namespaces[{dev}].size', _gib(int(want['size'])),
                                     _gib(ns['size'])))
        for key in ('blockdev', 'chardev'):
            if key in want and ns.get(key) != want[key]:
                problems.append(Mismatch(node, f'pmem.namespaces[{dev}].{key}', want[key],
                                         ns.get(key)))
    for dev in sorted(set(by_dev) - {w['dev'] for w in declared}):
        ns = by_dev[dev]
        problems.append(Mismatch(node, f'pmem.namespaces[{dev}]', 'absent (not declared)',
                                 f'{ns["mode_reported"]} {_gib(ns["size"])}'))
    return problems


def compare_dax_mounts(node, declared, mounts_text, ndctl_json):
    """Each declared DAX mount ({'path', 'blockdev'}) must pass
    :func:`verify_dax_target` on the declared block device."""
    problems = []
    for want in declared:
        verdict = verify_dax_target(want['path'], mounts_text, ndctl_json)
        if not verdict:
            problems.append(Mismatch(node, f'pmem.dax_mounts[{want["path"]}]',
                                     f'DAX mount on {want.get("blockdev", "a pmem device")}',
                                     verdict.reason))
        elif 'blockdev' in want and verdict.namespace['blockdev'] != want['blockdev']:
            problems.append(Mismatch(node, f'pmem.dax_mounts[{want["path"]}].blockdev',
                                     want['blockdev'], verdict.namespace['blockdev']))
    return problems


def compare_devdax(node, declared, found):
    """Each declared device-DAX ({'chardev': 'dax0.0'}) must be a devdax
    namespace in ``ndctl list -N``."""
    problems = []
    by_char = {n['chardev']: n for n in found if n.get('chardev')}
    for want in declared:
        ns = by_char.get(want['chardev'])
        if ns is None:
            problems.append(Mismatch(node, f'pmem.devdax[{want["chardev"]}]', 'present',
                                     'absent', 'devdax namespaces: ' +
                                     (', '.join(sorted(by_char)) or 'none')))
        elif ns['mode'] != 'devdax':
            problems.append(Mismatch(node, f'pmem.devdax[{want["chardev"]}].mode', 'devdax',
                                     ns['mode_reported']))
    return problems


def compare_pmem(node, declared, memoryresources_text, topology_text, ndctl_json, mounts_text):
    """All provisioning facts of one node against ``extras['pmem']``.
    Unreadable tool output becomes a mismatch naming the tool, so a node is
    never passed on output that was not understood."""
    problems = []
    try:
        found = ipmctl_memoryresources.parse(memoryresources_text)
        problems += compare_memory_resources(node, declared.get('memory_resources', {}), found,
                                             declared.get('provisioning'))
    except ValueError as err:
        problems.append(Mismatch(node, 'pmem.memory_resources', 'ipmctl capacities', str(err)))
    if declared.get('dimms'):
        try:
            problems += compare_dimms(node, declared['dimms'], ipmctl_topology.parse(topology_text))
        except ValueError as err:
            problems.append(Mismatch(node, 'pmem.dimms', f'{len(declared["dimms"])} modules',
                                     str(err)))
    try:
        namespaces = ndctl.parse(ndctl_json)
    except ValueError as err:
        problems.append(Mismatch(node, 'pmem.namespaces', 'ndctl namespaces', str(err)))
        return problems
    problems += compare_namespaces(node, declared.get('namespaces', []), namespaces)
    problems += compare_dax_mounts(node, declared.get('dax_mounts', []), mounts_text, ndctl_json)
    problems += compare_devdax(node, declared.get('devdax', []), namespaces)
    return problems


# What the fio checks learn on the node under test. The job records it in
# its stage directory before fio starts (probe_commands), stops before fio
# when node_verdict finds the node unfit (``clusterproof fio-preflight``),
# and the check then skips with the same reason: nothing is read from the
# machine that runs ReFrame.

#: files the probe writes in the stage directory
PROBE_ENGINES = 'node-fio-engines.txt'
PROBE_MOUNTS = 'node-mounts.txt'
PROBE_NDCTL = 'node-ndctl-namespaces.json'
PROBE_DEVDAX = 'node-devdax.txt'
#: written instead of PROBE_NDCTL when the node has no ndctl
NO_NDCTL = 'ndctl: not installed'


def probe_commands(fio, dax=False, devdax=None):
    """Shell commands recording what the node under test has: fio's engines,
    its mounts, with ``dax`` its ndctl namespaces, with ``devdax``
    (``/dev/daxX.Y``) whether the device is there and its alignment."""
    import shlex
    cmds = [f'{shlex.quote(fio)} --enghelp > {PROBE_ENGINES} 2>&1',
            f'cat /proc/mounts > {PROBE_MOUNTS}']
    if dax:
        cmds.append(f'if command -v ndctl >/dev/null; then ndctl list -N > {PROBE_NDCTL}; '
                    f'else echo "{NO_NDCTL}" > {PROBE_NDCTL}; fi')
    if devdax:
        dev = shlex.quote(devdax)
        align = shlex.quote(f'/sys/bus/dax/devices/{os.path.basename(devdax)}/align')
        cmds.append(f'{{ test -c {dev} && echo present; cat {align} 2>/dev/null; }} '
                    f'> {PROBE_DEVDAX}')
    return cmds


def _probe_text(directory, name):
    try:
        with open(os.path.join(directory, name)) as f:
            return f.read()
    except OSError as err:
        return _unfit(f'the probe on the node wrote no {name}: {err.strerror}')


def node_verdict(directory, fio, engine, dax=None, devdax=None, align=None, tmpfs=None):
    """Can the fio check run on the node whose probe files are in
    ``directory``? ``engine`` must be one of fio's; ``dax``: that path must be
    on a DAX mount of an fsdax namespace; ``devdax``: that device must exist,
    with the alignment ``align`` (bytes) when its sysfs entry gives one;
    ``tmpfs``: that path must be on tmpfs. A :class:`DaxVerdict`, false with
    the reason."""
    from clusterproof.parsers.fio import parse_engines
    texts = {}
    for name in [PROBE_ENGINES, PROBE_MOUNTS] + ([PROBE_NDCTL] if dax else []) + \
            ([PROBE_DEVDAX] if devdax else []):
        texts[name] = _probe_text(directory, name)
        if isinstance(texts[name], DaxVerdict):
            return texts[name]
    try:
        engines = parse_engines(texts[PROBE_ENGINES])
    except ValueError as err:
        return _unfit(f'{fio}: {err}')
    if engine not in engines:
        return _unfit(f'{fio} has no {engine} engine on this node (fio --enghelp)')
    if dax:
        if texts[PROBE_NDCTL].strip() == NO_NDCTL:
            return _unfit(f'ndctl not installed on the node: cannot verify that '
                          f'{dax} is on an fsdax namespace')
        verdict = verify_dax_target(dax, texts[PROBE_MOUNTS], texts[PROBE_NDCTL])
        if not verdict:
            return _unfit(f'not persistent memory: {verdict.reason}')
    if devdax:
        lines = texts[PROBE_DEVDAX].split()
        if 'present' not in lines:
            return _unfit(f'{devdax} does not exist on the node (ndctl list -N)')
        found = next((int(w) for w in lines if w.isdigit()), None)
        if align and found and found != align:
            return _unfit(f'{devdax} has alignment {found} bytes on the node, the '
                          f"job was written for {align}: declare 'align': {found} "
                          "in extras['pmem']['devdax']")
    if tmpfs:
        mnt = mount_of(tmpfs, mounts_parser.parse(texts[PROBE_MOUNTS]))
        if mnt is None or mnt.fstype != 'tmpfs':
            return _unfit(f'{tmpfs} is not on tmpfs on the node (it is on '
                          f'{mnt.fstype if mnt else "no mount"}); '
                          'set -S tmpfs_dir=<dir on tmpfs>')
    return _fit('the node has what the check needs')


def guard_command(fio, engine, dax=None, devdax=None, align=None, tmpfs=None):
    """The job's line after :func:`probe_commands`: ends the job before fio
    when :func:`node_verdict` finds the node unfit (the check then skips):
    ``clusterproof fio-preflight``."""
    import shlex
    argv = command('fio-preflight', '.', fio, engine)
    for opt, val in (('--dax', dax), ('--devdax', devdax), ('--align', align),
                     ('--tmpfs', tmpfs)):
        if val:
            argv += [opt, str(val)]
    return f'{shlex.join(argv)} || exit 0'
