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
            f'section; declare it in site_config/systems/{name.split(":")[0]}.py')
    if key is None:
        return sect
    if key not in sect:
        if default is not KeyError:
            return default
        raise ClusterproofError(
            f'site configuration of {name}: extras[{section!r}] has no key {key!r}; '
            f'declare it in site_config/systems/{name.split(":")[0]}.py')
    return sect[key]


def client_node_count(partition):
    """How many client nodes a job of ``partition`` may spread threads over:
    ``extras['storage']['client_nodes']`` under a scheduler, this machine
    alone without one. A partition with a scheduler that does not declare
    the count is an error naming the system and the key (never a silent 1).
    """
    scheduler = partition['scheduler'] if isinstance(partition, dict) \
        else partition.scheduler.registered_name
    if scheduler == 'local':
        return 1
    count = declared(partition, 'storage', 'client_nodes')
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        name = partition['fullname'] if isinstance(partition, dict) else partition.fullname
        raise ClusterproofError(
            f"site configuration of {name}: extras['storage']['client_nodes']={count!r} must "
            f'be a whole number >= 1; fix site_config/systems/{name.split(":")[0]}.py')
    return count


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
