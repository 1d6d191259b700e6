"""What every ``ipmctl`` output shares: the messages that say there are no
persistent memory modules, capacities with units, errors, and tables
(``a | b | c`` under a ``====`` rule). The outputs themselves are parsed by
:mod:`clusterproof.parsers.ipmctl_memoryresources` and
:mod:`clusterproof.parsers.ipmctl_topology` (tested on recorded output,
tests/data/ipmctl/)."""

import re

from clusterproof.parsers import ParseError

#: Messages with which ipmctl says there is nothing to manage (not a parse error).
NO_PMEM_MESSAGES = (
    'No PMem modules in the system',
    'No DIMMs in the system',
    'No functional DIMMs in the system',
    'No functional PMem modules in the system',
)

#: GiB per unit, binary and decimal
UNITS_GIB = {'B': 1 / 1024 ** 3, 'KiB': 1 / 1024 ** 2, 'MiB': 1 / 1024, 'GiB': 1.0,
             'TiB': 1024.0, 'KB': 1e3 / 1024 ** 3, 'MB': 1e6 / 1024 ** 3,
             'GB': 1e9 / 1024 ** 3, 'TB': 1e12 / 1024 ** 3}


def no_pmem_reason(text):
    """The ipmctl message saying there are no modules, or None."""
    for msg in NO_PMEM_MESSAGES:
        if msg.lower() in (text or '').lower():
            return text.strip().splitlines()[0] if text.strip() else msg
    return None


def capacity_gib(value, source='ipmctl'):
    """``'3024.000 GiB'``, ``'0 B'``, ``'504.0 GiB'`` -> GiB; ``'-'``/``'N/A'`` -> None."""
    value = value.strip()
    if value in ('-', 'N/A', ''):
        return None
    m = re.fullmatch(r'([0-9]+(?:\.[0-9]+)?)\s*([KMGT]i?B|B)', value)
    if not m or m.group(2) not in UNITS_GIB:
        raise ParseError(f'{source}: unreadable capacity {value!r}')
    return round(float(m.group(1)) * UNITS_GIB[m.group(2)], 3)


def raise_on_tool_error(text, source):
    first = text.strip().splitlines()[0] if text.strip() else ''
    if not first:
        raise ParseError(f'{source}: no output')
    if first.startswith('Error') or 'Failed' in first:
        raise ParseError(f'{source}: ipmctl reported an error: {first}')


def table(text, source):
    """Rows of an ipmctl table (``a | b | c`` under a ``====`` rule) as dicts."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    for i, line in enumerate(lines):
        if re.fullmatch(r'\s*=+\s*', line) and i > 0:
            header = [h.strip() for h in lines[i - 1].split('|')]
            rows = []
            for row in lines[i + 1:]:
                cells = [c.strip() for c in row.split('|')]
                if len(cells) != len(header):
                    raise ParseError(f'{source}: row has {len(cells)} columns, header '
                                     f'{len(header)}: {row.strip()!r}')
                rows.append(dict(zip(header, cells)))
            return header, rows
    raise ParseError(f'{source}: no table (header line followed by a ==== rule) in '
                     f'{text.strip()[:200]!r}')
