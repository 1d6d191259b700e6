"""HPL 2.x output (also the HPL section of HPCC's hpccoutf.txt).

- Result rows: ``WR11C2R4   N   NB   P   Q   Time   Gflops``.
- Residual lines: ``||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)= 0.0038237 ...... PASSED``;
  the residual prints as ``0.0038237`` or ``4.41990053e-03`` depending on the
  version, and ends with PASSED or FAILED.
- Closing counts: ``N tests completed and passed residual checks,`` and
  ``N tests completed and failed residual checks,``.

A run is a result only if every residual line says PASSED, at least one
passed, none failed, and the passed count equals the number of result rows:
:func:`verdict` says why not.

An output of several runs (each from its ``HPLinpack 2.x`` banner: a job
script run twice into one file) is read by the rule of every parser
(:mod:`clusterproof.parsers.runs`): the last run, of whatever sizes (HPL.dat
may change between runs; the check writes one run per job); the counts and
rows of older runs are never added to it.

A damaged row is refused, never skipped: a line that starts as a result
row (``WR11C2R4``) or ends as a residual line (``PASSED``/``FAILED``) must
be one whole, with finite numbers (a residual HPL itself printed as ``nan``
fails its check and is kept as that text); a last line cut mid-number is
not read (:func:`clusterproof.parsers.runs.whole_lines`).
"""

import re

from clusterproof.parsers import ParseError, finite, whole
from clusterproof.parsers import runs

_RESULT = re.compile(
    r'^(W[RC]\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([0-9.eE+-]+)\s+([0-9.eE+-]+)\s*$', re.M)
_RESIDUAL = re.compile(r'^\|\|Ax-b\|\|[^=\n]*=\s*([0-9.eE+-]+|nan|inf|-nan)'
                       r'\s*\.+\s*(PASSED|FAILED)\s*$',
                       re.M | re.I)
_PASSED = re.compile(r'^\s*(\d+) tests completed and passed residual checks', re.M)
_FAILED = re.compile(r'^\s*(\d+) tests completed and failed residual checks', re.M)
_SKIPPED = re.compile(r'^\s*(\d+) tests skipped because of illegal input values', re.M)
_VERSION = re.compile(r'HPLinpack (\d+\.\d+\S*)')
_BANNER = re.compile(r'^HPLinpack \d+\.\d+\S*\s+--', re.M)
#: lines that begin as a result row or end as a residual line
_RESULT_LIKE = re.compile(r'^W[RC]\d.*$', re.M)
_RESIDUAL_LIKE = re.compile(r'^\|\|Ax-b\|\|.*(?:PASSED|FAILED)\s*$', re.M | re.I)
_RESULT_FIELDS = ('variant', 'n', 'nb', 'p', 'q', 'time', 'gflops')


def _matches(run, like, full, want):
    """``(where, match)`` of each line of ``run`` that ``like`` finds, matched
    whole by ``full``; a line ``full`` does not match is damaged: a
    :class:`ParseError` naming its line and ``want``."""
    for found in like.finditer(run.text):
        where = f'{run.source}, line {run.line_at(found.start())}'
        m = full.match(found.group(0))
        if not m:
            raise ParseError(f'{where}: a damaged line (want {want}): '
                             f'{found.group(0).strip()!r}')
        yield where, m


def _results(run):
    """The result rows of a run: dicts of :data:`_RESULT_FIELDS`."""
    rows = []
    for where, m in _matches(run, _RESULT_LIKE, _RESULT, '"T/V N NB P Q Time Gflops"'):
        row = {'variant': m.group(1)}
        for name, value in zip(_RESULT_FIELDS[1:5], m.groups()[1:5]):
            row[name] = whole(value, name, where)
        row['time'] = finite(m.group(6), 'Time', where)
        row['gflops'] = finite(m.group(7), 'Gflops', where)
        rows.append(row)
    return rows


def _residual_value(text, status, where):
    """A residual as a float; one HPL printed as nan or inf (a check that
    failed) as that text."""
    if text.lower().lstrip('+-') in ('nan', 'inf'):
        if status != 'FAILED':
            raise ParseError(f'{where}: residual {text} marked {status}')
        return text
    return finite(text, 'residual', where)


def _residuals(run):
    return [(_residual_value(m.group(1), m.group(2).upper(), where), m.group(2).upper())
            for where, m in _matches(run, _RESIDUAL_LIKE, _RESIDUAL,
                                     '"||Ax-b||...= value ...... PASSED"')]


def parse(text, source='HPL output'):
    """``{'results': [...], 'residuals': [(value, status)], 'passed', 'failed',
    'skipped', 'version', 'runs', 'note'}``; counts are None when the closing
    lines are missing; ``runs`` and ``note`` say how many runs the output
    holds and which was read."""
    run = runs.one_run(text, _BANNER, source, 'HPL')
    text, source = run.text, run.source
    results = _results(run)
    residuals = _residuals(run)

    def count(rx):
        m = rx.findall(text)
        return sum(int(v) for v in m) if m else None

    version = _VERSION.search(text)
    return {'results': results, 'residuals': residuals, 'passed': count(_PASSED),
            'failed': count(_FAILED), 'skipped': count(_SKIPPED),
            'version': version.group(1) if version else None, 'source': source,
            'runs': run.runs, 'note': run.note}


def verdict(parsed):
    """None when the run is a valid result, otherwise why it is not."""
    src = parsed.get('source', 'HPL output')
    if not parsed['results']:
        return f'{src}: no HPL result row (T/V N NB P Q Time Gflops)'
    if not parsed['residuals']:
        return f'{src}: no residual line (||Ax-b||... PASSED/FAILED)'
    bad = [v for v, s in parsed['residuals'] if s != 'PASSED']
    if bad:
        shown = bad[0] if isinstance(bad[0], str) else f'{bad[0]:g}'
        return f'{src}: {len(bad)} residual check(s) FAILED (residual {shown})'
    if parsed['passed'] is None or parsed['failed'] is None:
        return f'{src}: no closing count of passed/failed residual checks (run cut short?)'
    if parsed['failed']:
        return f'{src}: {parsed["failed"]} test(s) failed residual checks'
    if parsed['passed'] != len(parsed['results']):
        return (f'{src}: {parsed["passed"]} test(s) passed residual checks but '
                f'{len(parsed["results"])} result row(s) were printed')
    return None
