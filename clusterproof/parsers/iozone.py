"""IOzone 3.4xx throughput-mode output (``-t N``, with or without ``-+m``).

One output may hold several IOzone runs (the job runs the write pass, then
the read pass); :func:`parse` returns one record per run, in order. A test
found in several runs (an output appended to: write, read, write, read) is
read by the rule of every parser (:mod:`clusterproof.parsers.runs`) in
:func:`find_test`: from the last of them when they ran the same threads,
file and record sizes, mode; refused, naming what differs, when they did not.

Per test (``initial writers``, ``rewriters``, ``readers``, ``re-readers``,
``random readers``, ``random writers``, ...):

- ``children``: "Children see throughput" (kB/s, IOzone's kB = 1024 bytes;
  or ops/s with ``-O``): the figure the published methodology reports;
- ``min``, ``max``, ``avg``: throughput per process;
- ``min_xfer``: the least any process moved (kB, or ops with ``-O``);
- ``stonewalled``: True when ``min_xfer`` is below the file size (in ops:
  file size / record size): IOzone's stonewalling (on unless ``-x``) stopped
  the slower processes when the first one finished, so the figure covers
  only part of the data. The published methodology keeps stonewalling on;
  such runs are flagged, not hidden.

"Parent sees throughput" is not printed in cluster mode and is ignored.

A throughput line is read whole or refused: a line that starts ``Children
see throughput``, ``Min xfer`` or ``Min throughput per process`` must hold
a finite number and its unit (a garbled one is named, never skipped).
"""

import re

from clusterproof.parsers import ParseError, finite, line_at
from clusterproof.parsers import runs as run_rule

KIB = 1024

_VERSION = re.compile(r'Version \$Revision: ([0-9.]+) \$')
_CMD = re.compile(r'^\s*Command line used: (.*)$', re.M)
_THREADS = re.compile(r'^\s*Throughput test with (\d+) (?:process(?:es)?|threads?)\b', re.M)
_FILESIZE = re.compile(r'^\s*File size set to (\d+) kB', re.M)
_RECORD = re.compile(r'^\s*Record Size (\d+) kB', re.M)
_EACH = re.compile(r'^\s*Each (?:process|thread) writes a (\d+) kByte file in (\d+) kByte records',
                   re.M)
_CHILDREN = re.compile(
    r'^\s*Children see throughput for\s+(\d+)\s+(.+?)\s*=\s*([0-9.]+)\s+(kB/sec|ops/sec)', re.M)
_PER_PROC = re.compile(
    r'^\s*(Min|Max|Avg) throughput per process\s*=\s*([0-9.]+)\s+(kB/sec|ops/sec)', re.M)
_MIN_XFER = re.compile(r'^\s*Min xfer\s*=\s*([0-9.]+)\s+(kB|ops)', re.M)
#: the starts of the lines read for figures, each matched whole by its pattern
_LIKE = re.compile(r'^\s*(?:Children see throughput|(?:Min|Max|Avg) throughput per process|'
                   r'Min xfer)\b.*$', re.M)
_COMPLETE = 'iozone test complete.'
_UNIT = {'kB/sec': 'kB/s', 'ops/sec': 'ops/s'}


def _split_runs(text):
    """``[(text, first line)]``, split at each banner; text before the first
    banner is dropped."""
    starts = [m.start() for m in re.finditer(r'Iozone: Performance Test of File I/O', text)]
    if not starts:
        return []
    return [(text[a:b], line_at(text, a)) for a, b in zip(starts, starts[1:] + [len(text)])]


def _check_lines(chunk, where, first):
    """Refuse a damaged throughput line of ``chunk`` (whose first line is
    line ``first`` of the output): :class:`ParseError` naming it."""
    for like in _LIKE.finditer(chunk):
        line, at = like.group(0), f'{where}, line {line_at(chunk, like.start(), first)}'
        m = next(filter(None, (rx.match(line) for rx in (_CHILDREN, _PER_PROC, _MIN_XFER))),
                 None)
        if m is None:
            raise ParseError(f'{at}: a damaged line (want its figure and unit): '
                             f'{line.strip()!r}')
        finite(m.group(m.lastindex - 1), line.split('=')[0].strip(), at)   # before the unit


def _parse_run(chunk, source, number, first=1):
    where = f'{source} (IOzone run {number})'
    _check_lines(chunk, where, first)
    cmd = _CMD.search(chunk)
    threads = _THREADS.search(chunk)
    each = _EACH.search(chunk)
    fsize = _FILESIZE.search(chunk)
    rec = _RECORD.search(chunk)
    if not threads:
        raise ParseError(f'{where}: no "Throughput test with N processes" line; '
                         f'clusterproof reads IOzone throughput mode (-t N) only')
    file_kb = int(each.group(1)) if each else (int(fsize.group(1)) if fsize else None)
    record_kb = int(each.group(2)) if each else (int(rec.group(1)) if rec else None)
    tests = {}
    # Each "Children see" line opens a block that ends at the next one.
    marks = list(_CHILDREN.finditer(chunk))
    for i, m in enumerate(marks):
        block = chunk[m.end(): marks[i + 1].start() if i + 1 < len(marks) else len(chunk)]
        name = re.sub(r'\s+', ' ', m.group(2)).strip()
        unit = _UNIT[m.group(4)]
        entry = {'threads': int(m.group(1)), 'children': finite(m.group(3), name, where),
                 'unit': unit}
        for pm in _PER_PROC.finditer(block):
            entry[pm.group(1).lower()] = finite(pm.group(2), name, where)
        mx = _MIN_XFER.search(block)
        if not mx:
            raise ParseError(f'{where}: test {name!r} has no "Min xfer" line (truncated output?)')
        entry['min_xfer'] = finite(mx.group(1), f'{name} Min xfer', where)
        entry['min_xfer_unit'] = mx.group(2)
        expected = None
        if file_kb is not None:
            expected = file_kb if mx.group(2) == 'kB' else (
                file_kb // record_kb if record_kb else None)
        entry['expected_xfer'] = expected
        entry['xfer_fraction'] = (entry['min_xfer'] / expected) if expected else None
        entry['stonewalled'] = bool(expected) and entry['min_xfer'] < expected
        tests[name] = entry
    return {
        'command': cmd.group(1).strip() if cmd else '',
        'threads': int(threads.group(1)),
        'file_kb': file_kb,
        'record_kb': record_kb,
        'cluster_mode': 'Network distribution mode enabled.' in chunk,
        'direct_io': 'O_DIRECT feature enabled' in chunk,
        'stonewall_off': 'Stonewall disabled' in chunk,
        'complete': _COMPLETE in chunk,
        'tests': tests,
    }


def parse(text, source='IOzone output'):
    """All IOzone runs of ``text``: ``{'version', 'runs': [run, ...]}``.

    A run without any "Children see throughput" line, or cut short before
    "iozone test complete.", is an error naming ``source``."""
    chunks = _split_runs(text)
    if not chunks:
        raise ParseError(f'{source}: no IOzone banner ("Iozone: Performance Test of File I/O"); '
                         f'is this IOzone output?')
    version = _VERSION.search(text)
    runs = []
    for n, (chunk, first) in enumerate(chunks, 1):
        run = _parse_run(chunk, source, n, first)
        if not run['tests']:
            raise ParseError(f'{source} (IOzone run {n}): no "Children see throughput" line; '
                             f'the run failed or was cut short')
        if not run['complete']:
            raise ParseError(f'{source} (IOzone run {n}): no "{_COMPLETE}" line; the run was '
                             f'cut short')
        runs.append(run)
    return {'version': version.group(1) if version else '', 'runs': runs, 'source': source}


def _kind(run):
    return {'threads': run['threads'], 'file kB': run['file_kb'], 'record kB': run['record_kb'],
            'cluster mode': run['cluster_mode'], 'O_DIRECT': run['direct_io']}


def find_test(parsed, name):
    """The entry for test ``name`` (e.g. ``'initial writers'``): of the
    only run that has it, or the last of several of one kind
    (:func:`clusterproof.parsers.runs.last_of`: runs that differ are refused)."""
    having = [run for run in parsed['runs'] if name in run['tests']]
    if not having:
        have = sorted({t for r in parsed['runs'] for t in r['tests']})
        raise ParseError(f'{parsed.get("source", "IOzone output")} has no {name!r} result '
                         f'(have: {", ".join(have)})')
    run_rule.last_of(len(having), f'{parsed.get("source", "IOzone output")} ({name!r})',
                     'IOzone', [_kind(run) for run in having])
    return having[-1]['tests'][name]


def to_gbps(kb_per_s):
    """IOzone kB/s (1024 bytes) as GB/s (10^9 bytes/s), the published unit."""
    return kb_per_s * KIB / 1e9


def to_mbps(kb_per_s):
    """IOzone kB/s as MB/s (10^6 bytes/s)."""
    return kb_per_s * KIB / 1e6


def stonewalled_tests(parsed):
    """Names of the tests that stonewalling cut short, with the fraction moved."""
    return {name: t['xfer_fraction'] for run in parsed['runs']
            for name, t in run['tests'].items() if t['stonewalled']}
