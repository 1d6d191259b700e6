"""Declared hardware: what a partition says its nodes have.

A system file in ``site_config/systems/`` declares hardware in each
partition's ``extras``:

``extras['hardware']``  per node: sockets, cores_per_socket, threads_per_core,
                        numa_nodes, memory_gib, memory_channels_per_socket,
                        memory_mts, clock_ghz, dp_flops_per_cycle, cpu_model
                        (and optional numa_dram / numa_pmem node lists,
                        llc_mib, link_gbps)
``extras['storage']``   scratch, client_nodes, client_ram_gib, server_ram_gib
``extras['pmem']``      provisioning, dimms, memory_resources, namespaces,
                        dax_mounts, devdax
``extras['network']``   link_gbps, fabric
``extras['mmap_targets']``  named files or ``memory`` for the mmap sweep

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
