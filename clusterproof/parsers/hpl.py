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
"""

import re

from clusterproof.parsers import runs

_RESULT = re.compile(
    r'^(W[RC]\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([0-9.eE+-]+)\s+([0-9.eE+-]+)\s*$', re.M)
_RESIDUAL = re.compile(r'^\|\|Ax-b\|\|[^=\n]*=\s*([0-9.eE+-]+|nan|inf|-nan)\s*\.+\s*(PASSED|FAILED)\s*$',
                       re.M | re.I)
_PASSED = re.compile(r'^\s*(\d+) tests completed and passed residual checks', re.M)
_FAILED = re.compile(r'^\s*(\d+) tests completed and failed residual checks', re.M)
_SKIPPED = re.compile(r'^\s*(\d+) tests skipped because of illegal input values', re.M)
_VERSION = re.compile(r'HPLinpack (\d+\.\d+\S*)')
_BANNER = re.compile(r'^HPLinpack \d+\.\d+\S*\s+--', re.M)


def parse(text, source='HPL output'):
    """``{'results': [...], 'residuals': [(value, status)], 'passed', 'failed',
    'skipped', 'version', 'runs', 'note'}``; counts are None when the closing
    lines are missing; ``runs`` and ``note`` say how many runs the output
    holds and which was read."""
    run = runs.one_run(text, _BANNER, source, 'HPL')
    text, source = run.text, run.source
    results = [{'variant': m.group(1), 'n': int(m.group(2)), 'nb': int(m.group(3)),
                'p': int(m.group(4)), 'q': int(m.group(5)), 'time': float(m.group(6)),
                'gflops': float(m.group(7))} for m in _RESULT.finditer(text)]
    residuals = [(float(m.group(1)), m.group(2).upper()) for m in _RESIDUAL.finditer(text)]

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
        return f'{src}: {len(bad)} residual check(s) FAILED (residual {bad[0]:g})'
    if parsed['passed'] is None or parsed['failed'] is None:
        return f'{src}: no closing count of passed/failed residual checks (run cut short?)'
    if parsed['failed']:
        return f'{src}: {parsed["failed"]} test(s) failed residual checks'
    if parsed['passed'] != len(parsed['results']):
        return (f'{src}: {parsed["passed"]} test(s) passed residual checks but '
                f'{len(parsed["results"])} result row(s) were printed')
    return None
