"""OSU micro-benchmarks output (osu_bw, osu_bibw, osu_mbw_mr, osu_latency...).

``# OSU MPI Bandwidth Test v7.4`` then a column header such as
``# Size      Bandwidth (MB/s)`` or ``# Size                  MB/s        Messages/s``
and one row per message size (bytes). MB/s is 10^6 bytes/s.

An output of several runs (each from its ``# OSU ...`` title) is read by
the rule of every parser (:mod:`clusterproof.parsers.runs`): the last run
when all are the same benchmark; refused, naming the benchmarks, when they
are not (osu_bw then osu_latency into one log).
"""

import re

from clusterproof.parsers import ParseError
from clusterproof.parsers import runs

_TITLE = re.compile(r'^# (OSU .*?) v(\d+\.\d+(?:\.\d+)?)\s*$', re.M)
_HEADER = re.compile(r'^#\s*Size\s+(.*)$', re.M)
_ROW = re.compile(r'^(\d+)[ \t]+([0-9.eE+-]+(?:[ \t]+[0-9.eE+-]+)*)[ \t]*$', re.M)


def _kind(text):
    """What the runs of one output must share: the benchmark."""
    m = _TITLE.search(text)
    return {'benchmark': f'{m.group(1)} v{m.group(2)}' if m else '?'}


def _columns(header):
    # 'Bandwidth (MB/s)' / 'MB/s        Messages/s' / 'Avg Latency(us)'
    cols = re.split(r'\s{2,}', header.strip())
    return [c.strip() for c in cols if c.strip()]


def parse(text, source='OSU output'):
    """``{'title', 'version', 'columns': [...], 'rows': {size: [values]},
    'runs', 'note'}`` (``runs``, ``note``: how many runs the output holds,
    which was read)."""
    run = runs.one_run(text, _TITLE, source, 'OSU', kind=_kind)
    text, source = run.text, run.source
    title = _TITLE.search(text)
    header = _HEADER.search(text)
    if not title or not header:
        raise ParseError(f'{source}: not OSU micro-benchmarks output '
                         f'(no "# OSU ... vX.Y" title or "# Size ..." header)')
    columns = _columns(header.group(1))
    rows = {}
    for m in _ROW.finditer(text, header.end()):
        values = [float(v) for v in m.group(2).split()]
        if len(values) != len(columns):
            raise ParseError(f'{source}: row for size {m.group(1)} has {len(values)} values, '
                             f'header has {len(columns)} columns ({", ".join(columns)})')
        rows[int(m.group(1))] = values
    if not rows:
        raise ParseError(f'{source}: header but no result rows (the run was cut short?)')
    return {'title': title.group(1), 'version': title.group(2), 'columns': columns, 'rows': rows,
            'runs': run.runs, 'note': run.note}


def column(parsed, name):
    """Index of the first column whose name contains ``name`` (e.g. 'MB/s')."""
    for i, col in enumerate(parsed['columns']):
        if name in col:
            return i
    raise ParseError(f'OSU output has no {name!r} column (columns: {", ".join(parsed["columns"])})')


def bandwidth_at_largest(parsed):
    """(size, MB/s) at the largest message size."""
    size = max(parsed['rows'])
    return size, parsed['rows'][size][column(parsed, 'MB/s')]


def message_rate_at_smallest(parsed):
    """(size, messages/s) at the smallest message size: the Messages/s column
    when printed (osu_mbw_mr), otherwise MB/s x 10^6 / size."""
    size = min(parsed['rows'])
    row = parsed['rows'][size]
    try:
        return size, row[column(parsed, 'Messages/s')]
    except ParseError:
        return size, row[column(parsed, 'MB/s')] * 1e6 / size


def latency_at_smallest(parsed):
    """(size, microseconds) at the smallest message size (osu_latency's
    ``Avg Latency(us)`` column)."""
    size = min(parsed['rows'])
    return size, parsed['rows'][size][column(parsed, 'Latency')]
