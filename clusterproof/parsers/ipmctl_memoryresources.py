"""``ipmctl show -memoryresources``: capacities of the persistent memory
modules (GiB), in both formats ipmctl has printed."""

import re

from clusterproof.parsers import ParseError
from clusterproof.parsers.ipmctl import capacity_gib, no_pmem_reason, raise_on_tool_error, table

_KEYVALUE = {
    'Capacity': 'capacity', 'MemoryCapacity': 'memory_capacity',
    'AppDirectCapacity': 'app_direct_capacity', 'UnconfiguredCapacity': 'unconfigured_capacity',
    'InaccessibleCapacity': 'inaccessible_capacity', 'ReservedCapacity': 'reserved_capacity',
}


def parse(text, source='ipmctl show -memoryresources'):
    """Capacities (GiB) from ``ipmctl show -memoryresources``.

    Two formats exist: ``Key=value`` lines (ipmctl 01.x) and the table of
    ipmctl 02.x/03.x (rows Volatile, AppDirect, Cache, Inaccessible,
    Physical; columns DDR, PMemModule or DCPMM, Total). Returned keys follow
    the declaration: capacity, memory_capacity, app_direct_capacity,
    inaccessible_capacity (+ unconfigured/reserved from 01.x, and
    ddr_volatile_capacity, ddr_cache_capacity from the table).
    """
    reason = no_pmem_reason(text)
    if reason:
        raise ParseError(f'{source}: {reason}')
    raise_on_tool_error(text, source)
    pairs = dict(re.findall(r'^\s*(\w+)=(.*?)\s*$', text, re.M))
    if 'Capacity' in pairs:
        return {key: capacity_gib(pairs[name], source)
                for name, key in _KEYVALUE.items() if name in pairs}
    header, rows = table(text, source)
    pmem_col = next((h for h in header if h in ('PMemModule', 'DCPMM')), None)
    if header[0] != 'MemoryType' or pmem_col is None or 'DDR' not in header:
        raise ParseError(f'{source}: unexpected table header {" | ".join(header)!r} '
                         '(want MemoryType | DDR | PMemModule | Total)')
    by_type = {row['MemoryType']: row for row in rows}
    missing = [t for t in ('Volatile', 'AppDirect', 'Physical') if t not in by_type]
    if missing:
        raise ParseError(f'{source}: table has no row {", ".join(missing)}')

    def cell(row, col):
        return capacity_gib(by_type[row][col], source) if row in by_type else None
    found = {
        'capacity': cell('Physical', pmem_col),
        'memory_capacity': cell('Volatile', pmem_col),
        'app_direct_capacity': cell('AppDirect', pmem_col),
        'inaccessible_capacity': cell('Inaccessible', pmem_col) or 0.0,
        'ddr_volatile_capacity': cell('Volatile', 'DDR'),
        'ddr_cache_capacity': cell('Cache', 'DDR'),
    }
    return {k: v for k, v in found.items() if v is not None}
