"""STREAM 5.10 output: the Copy/Scale/Add/Triad best rates (MB/s, 10^6 B/s),
the array size and thread count, and whether the solution validates.

An output of several runs (``STREAM version $Revision: 5.10 $`` each) is
read by the rule of every parser (:mod:`clusterproof.parsers.runs`): the
last run when all have the same array size, thread count and repetitions;
refused, naming what differs, when they do not (a sweep over thread counts
into one log).

A kernel row is read whole or refused: a line that starts ``Triad:`` must
hold four finite numbers (a garbled one is named, never skipped); a last
line cut mid-number is not read (:func:`clusterproof.parsers.runs.whole_lines`).
"""

import re

from clusterproof.parsers import ParseError, finite
from clusterproof.parsers import runs

KERNELS = ('Copy', 'Scale', 'Add', 'Triad')

_ROW = re.compile(r'^(Copy|Scale|Add|Triad):(.*)$', re.M)
_ROW_COLUMNS = ('Best Rate MB/s', 'Avg time', 'Min time', 'Max time')
_ARRAY = re.compile(r'^Array size = (\d+) \(elements\)', re.M)
_THREADS = re.compile(r'^Number of Threads counted = (\d+)', re.M)
_NTIMES = re.compile(r'^Each kernel will be executed (\d+) times', re.M)
VALIDATES = 'Solution Validates'
_BANNER = re.compile(r'^STREAM version \$Revision', re.M)


def _kind(text):
    """What the runs of one output must share."""
    return {what: (m.group(1) if m else '?') for what, m in (
        ('array size', _ARRAY.search(text)), ('threads', _THREADS.search(text)),
        ('times', _NTIMES.search(text)))}


def parse(text, source='STREAM output'):
    """``{'rates': {kernel: MB/s}, 'array_size', 'threads', 'ntimes', 'validates'}``.

    Every kernel row must be present: a missing one is an error naming
    ``source`` (a truncated run is not a result). ``runs`` and ``note``
    say how many runs the output holds and which was read."""
    run = runs.one_run(text, _BANNER, source, 'STREAM', kind=_kind)
    text, source = run.text, run.source
    rates = {}
    for m in _ROW.finditer(text):
        where = f'{source}, line {run.line_at(m.start())}'
        values = m.group(2).split()
        if len(values) != len(_ROW_COLUMNS):
            raise ParseError(f'{where}: {m.group(1)} row has {len(values)} values, want '
                             f'{len(_ROW_COLUMNS)} ({", ".join(_ROW_COLUMNS)}): '
                             f'{m.group(0).strip()!r}')
        rates[m.group(1)] = [finite(v, f'{m.group(1)} {col}', where)
                             for v, col in zip(values, _ROW_COLUMNS)][0]
    missing = [k for k in KERNELS if k not in rates]
    if missing:
        raise ParseError(f'{source}: no STREAM result row for {", ".join(missing)} '
                         f'(want lines such as "Triad:  149501.8  0.020302 ...")')
    array = _ARRAY.search(text)
    threads = _THREADS.search(text)
    ntimes = _NTIMES.search(text)
    return {
        'rates': rates,
        'array_size': int(array.group(1)) if array else None,
        'threads': int(threads.group(1)) if threads else None,
        'ntimes': int(ntimes.group(1)) if ntimes else None,
        'validates': VALIDATES in text,
        'runs': run.runs,
        'note': run.note,
    }
