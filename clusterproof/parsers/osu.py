"""OSU micro-benchmarks output (osu_bw, osu_bibw, osu_mbw_mr, osu_latency...).

``# OSU MPI Bandwidth Test v7.4`` then a column header such as
``# Size      Bandwidth (MB/s)`` or ``# Size                  MB/s        Messages/s``
and one row per message size (bytes). MB/s is 10^6 bytes/s.

An output of several runs (each from its ``# OSU ...`` title) is read by
the rule of every parser (:mod:`clusterproof.parsers.runs`): the last run
when all are the same benchmark; refused, naming the benchmarks, when they
are not (osu_bw then osu_latency into one log).

A row is read whole or the output is refused: after the header, a line of
as many fields as a row, or one that starts with a digit, must be a row of
a whole size and finite values, each size larger than the one before (a
garbled or repeated row is named, never skipped: skipping the largest
size's row would report the next size as the largest). A last line cut
mid-number is not read (:func:`clusterproof.parsers.runs.whole_lines`).
"""

import re

from clusterproof.parsers import ParseError, finite
from clusterproof.parsers import runs

_TITLE = re.compile(r'^# (OSU .*?) v(\d+\.\d+(?:\.\d+)?)\s*$', re.M)
_HEADER = re.compile(r'^#\s*Size\s+(.*)$', re.M)
_SIZE = re.compile(r'[0-9]+')


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
    'runs', 'note', 'source'}`` (``runs``, ``note``: how many runs the output holds,
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
    first = run.line_at(header.end()) + 1
    for number, line in enumerate(text[header.end():].split('\n')[1:], first):
        row = _row(line, columns, f'{source}, line {number}')
        if row is None:
            continue
        size, values = row
        if rows and size <= max(rows):
            raise ParseError(f'{source}, line {number}: size {size} after size {max(rows)}: '
                             f'want each row larger than the one before (a line repeated?)')
        rows[size] = values
    if not rows:
        raise ParseError(f'{source}: header but no result rows (the run was cut short?)')
    return {'title': title.group(1), 'version': title.group(2), 'columns': columns, 'rows': rows,
            'runs': run.runs, 'note': run.note, 'source': source}


def _row(line, columns, where):
    """``(size, [values])`` of a result row; None for a line that is no row
    (a comment, a launcher's message of other length); a damaged row
    raises :class:`ParseError` naming ``where``."""
    fields = line.split()
    if not fields or line.startswith('#') or (
            len(fields) != len(columns) + 1 and not line[:1].isdigit()):
        return None
    if len(fields) != len(columns) + 1:
        raise ParseError(f'{where}: row has {len(fields) - 1} values, header has '
                         f'{len(columns)} columns ({", ".join(columns)}): {line.strip()!r}')
    if not _SIZE.fullmatch(fields[0]):
        raise ParseError(f'{where}: want a message size in bytes, found {fields[0]!r} '
                         f'(a damaged row): {line.strip()!r}')
    return int(fields[0]), [finite(v, f'size {fields[0]}, {col}', where)
                            for v, col in zip(fields[1:], columns)]


def column(parsed, name):
    """Index of the first column whose name contains ``name`` (e.g. 'MB/s')."""
    for i, col in enumerate(parsed['columns']):
        if name in col:
            return i
    raise ParseError(f'{parsed.get("source", "OSU output")} has no {name!r} column '
                     f'(columns: {", ".join(parsed["columns"])})')


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
        if size == 0:
            raise ParseError(f'{parsed.get("source", "OSU output")}: no message rate at size 0 '
                             f'(no Messages/s column, and MB/s per message of 0 bytes is none)'
                             ) from None
        return size, row[column(parsed, 'MB/s')] * 1e6 / size


def latency_at_smallest(parsed):
    """(size, microseconds) at the smallest message size (osu_latency's
    ``Avg Latency(us)`` column)."""
    size = min(parsed['rows'])
    return size, parsed['rows'][size][column(parsed, 'Latency')]
