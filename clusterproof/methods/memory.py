"""STREAM sizing, threading and the memory-bandwidth peak.

Pure functions over plain data (declared hardware dictionaries, numbers),
used by the STREAM check and unit-tested without a cluster.

- :func:`stream_array_size`: elements per array, at least 4 x the node's total
  last-level cache (the STREAM rule), and at least a given minimum (the
  published runs use 120,000,000).
- :func:`stream_threads` and :func:`omp_env`: one thread per physical core
  (``cores``) or one per L3 domain (``l3``, a CCX on AMD Rome), pinned with
  ``OMP_PLACES``/``OMP_PROC_BIND=spread``.
- :func:`memory_peak_mbs`: sockets x channels x MT/s x 8 bytes, in MB/s
  (10^6 bytes/s, STREAM's unit); :func:`efficiency_percent`.
"""

import math

from clusterproof import ClusterproofError
from clusterproof.site.hardware import physical_cores

#: STREAM's rule: each array at least this many times the total last-level cache
LLC_FACTOR = 4

#: bytes per array element (STREAM_TYPE double)
ELEMENT_BYTES = 8

#: elements per array of the published runs (pmserver, seed 000/004)
PUBLISHED_ARRAY_SIZE = 120_000_000

#: STREAM's three arrays are static: beyond this many bytes in all the code
#: needs a larger code model
STATIC_DATA_LIMIT = 2 ** 31

#: thread placements of the STREAM check
PLACEMENTS = ('cores', 'l3')

MIB = 2 ** 20


def stream_array_size(llc_mib, minimum=0, round_to=1_000_000):
    """Elements per array: at least ``LLC_FACTOR`` x the node's total last-level
    cache (``llc_mib`` MiB) and at least ``minimum``, rounded up to a multiple of
    ``round_to``."""
    if not isinstance(llc_mib, (int, float)) or isinstance(llc_mib, bool) or llc_mib <= 0:
        raise ClusterproofError(
            f'STREAM array size: last-level cache {llc_mib!r} MiB is not a size; declare '
            f"extras['hardware']['llc_mib'] (total L3 of the node in MiB) for the partition")
    rule = math.ceil(LLC_FACTOR * llc_mib * MIB / ELEMENT_BYTES)
    want = max(rule, int(minimum or 0))
    return math.ceil(want / round_to) * round_to


def stream_memory_bytes(array_size):
    """Memory STREAM allocates: three arrays of ``array_size`` doubles."""
    return 3 * array_size * ELEMENT_BYTES


def check_fits(array_size, memory_gib, fraction=0.5, where='node'):
    """Refuse an array size whose three arrays exceed ``fraction`` of memory."""
    need = stream_memory_bytes(array_size)
    have = memory_gib * 2 ** 30
    if need > fraction * have:
        raise ClusterproofError(
            f'STREAM array size {array_size} needs {need / 2 ** 30:.1f} GiB, more than '
            f'{fraction:.0%} of the {memory_gib} GiB of the {where}; choose a smaller array_size')
    return need


def stream_cflags(array_size, ntimes=10, omp_flag='-fopenmp'):
    """Compiler flags of a STREAM build with ``array_size`` elements per array."""
    flags = ['-O3', omp_flag, f'-DSTREAM_ARRAY_SIZE={int(array_size)}', f'-DNTIMES={int(ntimes)}']
    if stream_memory_bytes(array_size) >= STATIC_DATA_LIMIT:
        flags.append('-mcmodel=medium')
    return flags


def stream_threads(hardware, placement):
    """Threads of a STREAM run: one per physical core (``cores``) or one per
    L3 domain (``l3``) of the node described by ``hardware``."""
    cores = physical_cores(hardware, "STREAM threads: extras['hardware']")
    if placement == 'cores':
        return cores
    if placement == 'l3':
        domains = hardware.get('l3_domains')
        if domains is None:
            per = hardware.get('cores_per_l3_domain')
            domains = cores // per if per else int(hardware['sockets'])
        return max(1, min(int(domains), cores))
    raise ClusterproofError(f'STREAM placement {placement!r} is not one of {", ".join(PLACEMENTS)}')


def omp_env(placement, threads):
    """OpenMP environment of a placement: ``cores`` pins one thread per core;
    ``l3`` spreads one thread over each last-level cache (``ll_caches`` places,
    OpenMP 5.1), whatever the core numbering."""
    places = {'cores': 'cores', 'l3': 'll_caches'}.get(placement)
    if places is None:
        raise ClusterproofError(f'STREAM placement {placement!r} is not one of '
                                f'{", ".join(PLACEMENTS)}')
    return {'OMP_NUM_THREADS': str(int(threads)), 'OMP_PLACES': places, 'OMP_PROC_BIND': 'spread'}


def membind_nodes(hardware, membind):
    """NUMA nodes of a memory binding: ``dram`` -> ``numa_dram``, ``pmem`` ->
    ``numa_pmem`` of the declared hardware; None when not declared."""
    key = {'dram': 'numa_dram', 'pmem': 'numa_pmem'}.get(membind)
    if key is None:
        raise ClusterproofError(f'memory binding {membind!r} is not one of dram, pmem')
    nodes = hardware.get(key)
    if not nodes:
        return None
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in nodes):
        raise ClusterproofError(f"extras['hardware'][{key!r}] = {nodes!r}: "
                                'want a list of NUMA node numbers')
    return ','.join(str(n) for n in nodes)


def memory_peak_mbs(sockets, channels_per_socket, mts):
    """Theoretical memory bandwidth in MB/s (10^6 bytes/s): every channel moves
    8 bytes per transfer at ``mts`` million transfers per second."""
    for name, val in (('sockets', sockets), ('memory_channels_per_socket', channels_per_socket),
                      ('memory_mts', mts)):
        if not isinstance(val, (int, float)) or isinstance(val, bool) or val <= 0:
            raise ClusterproofError(f'memory peak: {name}={val!r} is not a positive number')
    return sockets * channels_per_socket * mts * 8.0


def declared_memory_peak_mbs(hardware):
    """Peak from declared hardware, or None when channels or MT/s are not
    declared (then no efficiency is reported rather than a made-up one)."""
    if hardware.get('memory_channels_per_socket') is None or hardware.get('memory_mts') is None:
        return None
    return memory_peak_mbs(hardware['sockets'], hardware['memory_channels_per_socket'],
                           hardware['memory_mts'])


def efficiency_percent(measured, peak):
    """``measured`` as a percentage of ``peak``."""
    if not peak or peak <= 0:
        raise ClusterproofError(f'efficiency: peak {peak!r} is not a positive number')
    return 100.0 * measured / peak
