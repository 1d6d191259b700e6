"""HPCC 1.5.0 ``hpccoutf.txt``: the ``Name=value`` lines between
``Begin of Summary section.`` and ``End of Summary section.``, and the HPL
section's residual lines (same format as HPL, see :mod:`clusterproof.parsers.hpl`).

``Success=1`` means every test of the run passed its own checks.

HPCC appends to ``hpccoutf.txt``: a file from a directory where it ran
before holds several runs, each from its banner (``This is the DARPA/DOE HPC
Challenge Benchmark ...``). They are read by the rule of every parser
(:mod:`clusterproof.parsers.runs`): the last run is read, and the result
says how many runs the file holds and when the last started; when the last
run has no complete summary (it was killed) the file is refused, naming the
count, never read from an older run.

Every summary value is a finite number but those of :data:`TEXT_VALUES`:
a value garbled (``x1y``, ``nan``, ``1e999``) or a line of the summary
without ``=`` is refused naming its line, never read as a figure.
"""

import re

from clusterproof.parsers import ParseError, finite
from clusterproof.parsers import hpl as hpl_parser
from clusterproof.parsers import runs as run_parts

BEGIN, END = 'Begin of Summary section.', 'End of Summary section.'
BANNER = 'This is the DARPA/DOE HPC Challenge Benchmark'
_BANNER = re.compile(r'^' + re.escape(BANNER), re.M)
_STARTED = re.compile(r'^Current time \(\d+\) is (.*?)\s*$', re.M)

#: the figures the HPCC check reports, with their units
FIGURES = {
    'HPL_Tflops': 'Tflops',
    'StarDGEMM_Gflops': 'Gflops',
    'SingleDGEMM_Gflops': 'Gflops',
    'StarSTREAM_Triad': 'GB/s',
    'SingleSTREAM_Triad': 'GB/s',
    'PTRANS_GBs': 'GB/s',
    'MPIRandomAccess_GUPs': 'GUPs',
    'StarRandomAccess_GUPs': 'GUPs',
    'MPIFFT_Gflops': 'Gflops',
    'StarFFT_Gflops': 'Gflops',
}


#: the summary values HPCC 1.5.0 prints as text; every other one is a number
TEXT_VALUES = ('VersionRelease', 'LANG', 'HPL_cpfact', 'HPL_crfact', 'HPL_order')
_INT = re.compile(r'[+-]?[0-9]+')


def _value(name, text, where):
    if name in TEXT_VALUES:
        return text
    if _INT.fullmatch(text):
        return int(text)
    return finite(text, name, where)


def _started(text):
    m = _STARTED.search(text)
    return m.group(1) if m else ''


def runs(text):
    """The runs a ``hpccoutf.txt`` holds, oldest first: ``[(started, text)]``
    (``started`` is the run's first ``Current time`` date, '' if none)."""
    return [(_started(part), part) for part in run_parts.split(text, _BANNER)]


def newest_run(text, source='hpccoutf.txt'):
    """The last run (:func:`clusterproof.parsers.runs.one_run`): its
    ``text``, ``source`` (the file and, when it holds several runs, which
    run), ``runs`` and ``note``."""
    return run_parts.one_run(text, _BANNER, source, 'HPCC', started=_started)


def _stopped_in(text):
    """Where an unfinished run stops: ``; it stops in its <name> section``
    (the last section begun and not ended), or ''."""
    begun = re.findall(r'^Begin of (.+) section\.\s*$', text, re.M)
    if begun and f'End of {begun[-1]} section.' not in text:
        return f'; it stops in its {begun[-1]} section'
    return ''


def summary(text, source='hpccoutf.txt'):
    """The summary section of the newest run as a dict (numbers converted)."""
    run = newest_run(text, source)
    text, where = run.text, run.source
    start = text.find(BEGIN)
    end = text.find(END, start)
    if start < 0 or end < 0:
        raise ParseError(f'{where}: no complete summary section ("{BEGIN}" ... "{END}"); '
                         f'the run did not finish{_stopped_in(text)}')
    out = {}
    first = run.line_at(start)
    for number, line in enumerate(text[start:end].split('\n')[1:], first + 1):
        name, sep, val = line.partition('=')
        if not line.strip():
            continue
        if not sep or not name.strip():
            raise ParseError(f'{where}, line {number}: a summary line without Name=value '
                             f'(a damaged line): {line.strip()!r}')
        out[name.strip()] = _value(name.strip(), val.strip(), f'{where}, line {number}')
    return out


def parse(text, source='hpccoutf.txt'):
    """``{'summary': {...}, 'hpl': <HPL parse of the HPL section>, 'runs': N,
    'note': ...}`` of the newest run; ``note`` says which run was read when
    the file holds several ('' when it holds one)."""
    figures = summary(text, source)
    run = newest_run(text, source)
    m = re.search(r'Begin of HPL section\.(.*?)End of HPL section\.', run.text, re.S)
    if not m:
        raise ParseError(f'{run.source}: no complete HPL section ("Begin of HPL section." ... '
                         f'"End of HPL section.")')
    return {'summary': figures, 'runs': run.runs, 'note': run.note,
            'hpl': hpl_parser.parse(m.group(1), f'{source} (HPL section)')}


def verdict(parsed):
    """None when the run succeeded; otherwise why not."""
    s = parsed['summary']
    if s.get('Success') != 1:
        why = hpl_parser.verdict(parsed['hpl'])
        return f'HPCC summary says Success={s.get("Success")!r}' + (f'; {why}' if why else '')
    return hpl_parser.verdict(parsed['hpl'])
