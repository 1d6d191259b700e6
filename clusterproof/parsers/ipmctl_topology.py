"""``ipmctl show -topology``: the memory modules (persistent and DDR) with
their locators and capacities."""

from clusterproof.parsers import ParseError
from clusterproof.parsers.ipmctl import capacity_gib, no_pmem_reason, raise_on_tool_error, table


def parse(text, source='ipmctl show -topology'):
    """DIMMs from ``ipmctl show -topology``: dicts with dimm_id (None for
    DDR rows, printed ``N/A``), memory_type, capacity_gib, physical_id,
    locator. No modules at all -> ParseError naming ipmctl's message."""
    reason = no_pmem_reason(text)
    if reason:
        raise ParseError(f'{source}: {reason}')
    raise_on_tool_error(text, source)
    header, rows = table(text, source)
    need = ('DimmID', 'MemoryType', 'Capacity', 'DeviceLocator')
    missing = [h for h in need if h not in header]
    if missing:
        raise ParseError(f'{source}: table has no column {", ".join(missing)}')
    dimms = []
    for row in rows:
        dimms.append({
            'dimm_id': None if row['DimmID'] == 'N/A' else row['DimmID'],
            'memory_type': row['MemoryType'],
            'capacity_gib': capacity_gib(row['Capacity'], source),
            'physical_id': row.get('PhysicalID'),
            'locator': row['DeviceLocator'],
        })
    return dimms
