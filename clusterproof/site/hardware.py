"""Declared hardware: what a partition says its nodes have, and the checks
of those declarations (:func:`validate_hardware`, :func:`validate_pmem`).

A system file in ``site_config/systems/`` declares hardware in each
partition's ``extras``:

``extras['hardware']``  per node: sockets, cores_per_socket, threads_per_core,
                        numa_nodes, memory_gib, memory_channels_per_socket,
                        memory_mts, clock_ghz, dp_flops_per_cycle, cpu_model
                        (and optional numa_dram / numa_pmem node lists,
                        llc_mib, link_gbps; slurm_cpus, slurm_memory_mib:
                        what Slurm gives jobs on each node)
``extras['storage']``   scratch, client_nodes, client_ram_gib, server_ram_gib
``extras['pmem']``      provisioning, dimms, memory_resources, namespaces,
                        dax_mounts, devdax
``extras['network']``   link_gbps, fabric
``extras['mmap_targets']``  named files or ``memory`` for the mmap sweep

``extras['emulated']``  True when the nodes are emulated (the local cluster):
                        see :func:`is_emulated`

Checks read these through :func:`declared`; a missing key is an error that
names system, partition and key, never a silent default.
"""

from clusterproof import ClusterproofError
from clusterproof.paths import system_file

HARDWARE_INT_KEYS = ('sockets', 'cores_per_socket', 'threads_per_core', 'numa_nodes')
HARDWARE_NUM_KEYS = ('memory_gib',)


def declared(partition, section, key=None, default=KeyError):
    """Return ``partition.extras[section][key]`` (or the whole section).

    ``partition`` is a ReFrame partition (anything with ``fullname`` and
    ``extras``) or a plain dict ``{'fullname': .., 'extras': ..}``.
    """
    extras = partition['extras'] if isinstance(partition, dict) else partition.extras
    name = partition['fullname'] if isinstance(partition, dict) else partition.fullname
    sect = extras.get(section)
    if sect is None:
        if default is not KeyError:
            return default
        raise ClusterproofError(
            f'site configuration of {name}: partition extras have no {section!r} '
            f'section; declare it in {system_file(name.split(":")[0])}')
    if key is None:
        return sect
    if key not in sect:
        if default is not KeyError:
            return default
        raise ClusterproofError(
            f'site configuration of {name}: extras[{section!r}] has no key {key!r}; '
            f'declare it in {system_file(name.split(":")[0])}')
    return sect[key]


def _name(partition):
    return partition['fullname'] if isinstance(partition, dict) else partition.fullname


def _system_file(partition):
    return str(system_file(_name(partition).split(':')[0]))


def partition_node_count(partition):
    """The nodes a job of ``partition`` may use: the one rule for HPL, HPCC,
    OSU and the storage checks (their client nodes).

    Without a scheduler (``local``) it is this machine alone. Otherwise it is
    ``extras['max_nodes']``, or ``extras['storage']['client_nodes']`` when
    the partition declares no ``max_nodes``; a partition that declares
    neither, or a count that is not a whole number >= 1, is an error naming
    the system, partition and key (never a silent 1). ``clusterproof
    validate`` refuses a partition that declares both with different values.
    """
    scheduler = partition['scheduler'] if isinstance(partition, dict) \
        else partition.scheduler.registered_name
    if scheduler == 'local':
        return 1
    extras = partition['extras'] if isinstance(partition, dict) else partition.extras
    if 'max_nodes' in (extras or {}):
        key, count = "extras['max_nodes']", extras['max_nodes']
    else:
        sect = (extras or {}).get('storage') or {}
        if 'client_nodes' not in sect:
            raise ClusterproofError(
                f"site configuration of {_name(partition)}: extras['storage'] has no key "
                f"'client_nodes' and extras no 'max_nodes': no node count; declare one "
                f'in {_system_file(partition)}')
        key, count = "extras['storage']['client_nodes']", sect['client_nodes']
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ClusterproofError(
            f'site configuration of {_name(partition)}: {key}={count!r} must '
            f'be a whole number >= 1; fix {_system_file(partition)}')
    return count


def physical_cores(hardware, where='extras[\'hardware\']'):
    """Physical cores of one node (sockets x cores_per_socket) of a declared
    ``extras['hardware']``: the one count behind "one thread per core"
    (STREAM, the mmap sweep) and "one rank per core" (HPL, HPCC)."""
    try:
        sockets, per_socket = hardware['sockets'], hardware['cores_per_socket']
    except KeyError as err:
        raise ClusterproofError(f'{where} has no {err.args[0]!r} (declare sockets and '
                                'cores_per_socket)') from None
    for key, val in (('sockets', sockets), ('cores_per_socket', per_socket)):
        if isinstance(val, bool) or not isinstance(val, int) or val < 1:
            raise ClusterproofError(f'{where}: {key}={val!r} (want a whole number >= 1)')
    return sockets * per_socket


def node_cores(partition):
    """Physical cores of one node of ``partition``, from its declaration;
    an undeclared count is an error naming the system, partition and key."""
    return physical_cores(declared(partition, 'hardware'),
                          f"site configuration of {_name(partition)}: extras['hardware'] "
                          f'({_system_file(partition)})')


#: ReFrame ``processor`` keys and how each follows from ``extras['hardware']``:
#: the CPUs a job gets, and the node's layout where it holds exactly those
#: CPUs (None: not declared, see :func:`_layout`)
PROCESSOR_FROM_HARDWARE = {
    'num_sockets': lambda hw: _layout(hw, hw['sockets']),
    'num_cpus_per_core': lambda hw: _layout(hw, hw['threads_per_core']),
    'num_cpus_per_socket': lambda hw: _layout(hw, hw['cores_per_socket'] * hw['threads_per_core']),
    'num_cpus': lambda hw: _node_cpus(hw),
}


def _threads(hw):
    return hw['sockets'] * hw['cores_per_socket'] * hw['threads_per_core']


def _node_cpus(hw):
    """CPUs a job gets on a node: what Slurm gives (``slurm_cpus``) where
    declared, else every hardware thread."""
    return hw.get('slurm_cpus') or _threads(hw)


def _layout(hw, value):
    """``value``, a number of the node's layout (sockets x cores x threads),
    when the CPUs a job gets are all of them; None for a node Slurm gives
    other than that (``CPUs=1`` on a node of 4 cores): no layout of Slurm's
    count is the node's, and ReFrame would derive cores from a false one."""
    return value if _node_cpus(hw) == _threads(hw) else None


def processor_from_hardware(hardware):
    """ReFrame's ``processor`` entry of a partition, derived from its
    ``extras['hardware']`` (the site configuration fills it in where a system
    file declares none, so ReFrame never detects the machine it runs on).
    The one rule of what ``processor`` holds: ``num_cpus`` is what a job
    gets; the layout keys only where it is the whole node's."""
    out = {key: rule(hardware) for key, rule in PROCESSOR_FROM_HARDWARE.items()}
    return {key: value for key, value in out.items() if value is not None}


def processor_disagreements(processor, hardware, emulated=False):
    """``[(key, processor value, value from extras['hardware'])]`` for every
    key of a declared ReFrame ``processor`` that disagrees with the declared
    hardware. Emulated nodes are not compared: their ``processor`` is the
    share of this machine Slurm gives each (``clusterproof cluster up
    --cpus-per-node``), their ``hardware`` the machine they all share."""
    if emulated:
        return []
    out = []
    for key, rule in PROCESSOR_FROM_HARDWARE.items():
        if processor.get(key) is None:
            continue
        try:
            want = rule(hardware)
        except (KeyError, TypeError):
            continue            # validate_hardware names a missing key
        if want is not None and processor[key] != want:
            out.append((key, processor[key], want))
    return out


def is_emulated(where):
    """The one rule for "is this emulated".

    A partition is emulated when its extras say ``emulated: True`` (the
    local cluster, whose nodes share this machine); every result measured
    there carries ``cp_emulated`` (set by the check base from this rule, or
    by a check that emulates its hardware itself, like pmem on tmpfs).
    ``where`` is a ReFrame partition, a partition's ``extras`` or a result's
    test case (a dict with ``cp_emulated``).
    """
    fields = getattr(where, 'extras', where) or {}
    return bool(fields.get('emulated') or fields.get('cp_emulated'))


def validate_hardware(hw, where):
    """Check the types and ranges of a hardware declaration; ``where`` names
    the file and partition in the error."""
    problems = []
    for key in HARDWARE_INT_KEYS:
        val = hw.get(key)
        if not isinstance(val, int) or isinstance(val, bool) or val < 1:
            problems.append(f'{key}={val!r} (want a whole number >= 1)')
    for key in HARDWARE_NUM_KEYS:
        val = hw.get(key)
        if not isinstance(val, (int, float)) or isinstance(val, bool) or val <= 0:
            problems.append(f'{key}={val!r} (want a number > 0)')
    if problems:
        raise ClusterproofError(f'{where}: hardware: ' + '; '.join(problems))
    return hw


PMEM_PROVISIONING = ('app_direct', 'memory_mode', 'mixed')
PMEM_NAMESPACE_MODES = ('fsdax', 'devdax', 'sector', 'raw')


def validate_pmem(pmem, where):
    """Check a persistent memory declaration (``extras['pmem']``, compared
    by the PmemProvisioning check); ``where`` names the file and partition
    in the error."""
    problems = []
    prov = pmem.get('provisioning')
    if prov not in PMEM_PROVISIONING:
        problems.append(f'provisioning={prov!r} (want one of {", ".join(PMEM_PROVISIONING)})')
    for i, dimm in enumerate(pmem.get('dimms', [])):
        if not isinstance(dimm, dict) or not dimm.get('locator'):
            problems.append(f'dimms[{i}]={dimm!r} (want a dict with a locator, '
                            'as ipmctl show -topology prints it in DeviceLocator)')
    for key, val in (pmem.get('memory_resources') or {}).items():
        if not isinstance(val, (int, float)) or isinstance(val, bool) or val < 0:
            problems.append(f'memory_resources.{key}={val!r} (want GiB >= 0)')
    for i, ns in enumerate(pmem.get('namespaces', [])):
        if not isinstance(ns, dict) or not str(ns.get('dev', '')).startswith('namespace'):
            problems.append(f'namespaces[{i}]={ns!r} (want a dict with dev "namespaceX.Y")')
        elif ns.get('mode') not in PMEM_NAMESPACE_MODES:
            problems.append(f'namespaces[{i}].mode={ns.get("mode")!r} '
                            f'(want one of {", ".join(PMEM_NAMESPACE_MODES)})')
    for i, mnt in enumerate(pmem.get('dax_mounts', [])):
        if not isinstance(mnt, dict) or not str(mnt.get('path', '')).startswith('/'):
            problems.append(f'dax_mounts[{i}]={mnt!r} (want a dict with an absolute path)')
    for i, dev in enumerate(pmem.get('devdax', [])):
        if not isinstance(dev, dict) or not str(dev.get('chardev', '')).startswith('dax'):
            problems.append(f'devdax[{i}]={dev!r} (want a dict with chardev "daxX.Y")')
    if problems:
        raise ClusterproofError(f'{where}: pmem: ' + '; '.join(problems))
    return pmem
