"""HPCC 1.5.0 ``hpccoutf.txt``: the ``Name=value`` lines between
``Begin of Summary section.`` and ``End of Summary section.``, and the HPL
section's residual lines (same format as HPL, see :mod:`clusterproof.parsers.hpl`).

``Success=1`` means every test of the run passed its own checks.

HPCC appends to ``hpccoutf.txt``: a file from a directory where it ran
before holds several runs, each from its banner (``This is the DARPA/DOE HPC
Challenge Benchmark ...``). The newest run is read, and the result says how
many runs the file holds and when the newest started; when the newest run
has no complete summary (it was killed) the file is refused, naming the
count, never read from an older run.
"""

import re

from clusterproof.parsers import ParseError
from clusterproof.parsers import hpl as hpl_parser

BEGIN, END = 'Begin of Summary section.', 'End of Summary section.'
BANNER = 'This is the DARPA/DOE HPC Challenge Benchmark'
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


def _value(text):
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def runs(text):
    """The runs a ``hpccoutf.txt`` holds, oldest first: ``[(started, text)]``
    (``started`` is the run's first ``Current time`` date, '' if none)."""
    starts = [m.start() for m in re.finditer(r'^' + re.escape(BANNER), text, re.M)]
    if not starts:
        return [('', text)]
    bounds = [0] + starts[1:] + [len(text)]
    found = []
    for begin, end in zip(bounds, bounds[1:]):
        part = text[begin:end]
        m = _STARTED.search(part)
        found.append((m.group(1) if m else '', part))
    return found


def newest_run(text, source='hpccoutf.txt'):
    """``(text of the newest run, where)``: ``where`` names the file and, when
    it holds several runs, their count and the newest's start."""
    found = runs(text)
    started, part = found[-1]
    if len(found) == 1:
        return part, source
    return part, (f'{source} holds {len(found)} runs (HPCC appends to it); the newest '
                  f'(started {started or "at an unknown time"})')


def _stopped_in(text):
    """Where an unfinished run stops: ``; it stops in its <name> section``
    (the last section begun and not ended), or ''."""
    begun = re.findall(r'^Begin of (.+) section\.\s*$', text, re.M)
    if begun and f'End of {begun[-1]} section.' not in text:
        return f'; it stops in its {begun[-1]} section'
    return ''


def summary(text, source='hpccoutf.txt'):
    """The summary section of the newest run as a dict (numbers converted)."""
    text, where = newest_run(text, source)
    start = text.find(BEGIN)
    end = text.find(END, start)
    if start < 0 or end < 0:
        raise ParseError(f'{where}: no complete summary section ("{BEGIN}" ... "{END}"); '
                         f'the run did not finish{_stopped_in(text)}')
    out = {}
    for line in text[start + len(BEGIN):end].splitlines():
        name, sep, val = line.partition('=')
        if sep:
            out[name.strip()] = _value(val.strip())
    return out


def parse(text, source='hpccoutf.txt'):
    """``{'summary': {...}, 'hpl': <HPL parse of the HPL section>, 'runs': N,
    'note': ...}`` of the newest run; ``note`` says which run was read when
    the file holds several ('' when it holds one)."""
    figures = summary(text, source)
    count = len(runs(text))
    text, where = newest_run(text, source)
    m = re.search(r'Begin of HPL section\.(.*?)End of HPL section\.', text, re.S)
    if not m:
        raise ParseError(f'{where}: no complete HPL section ("Begin of HPL section." ... '
                         f'"End of HPL section.")')
    return {'summary': figures, 'runs': count, 'note': f'{where} is read' if count > 1 else '',
            'hpl': hpl_parser.parse(m.group(1), f'{source} (HPL section)')}


def verdict(parsed):
    """None when the run succeeded; otherwise why not."""
    s = parsed['summary']
    if s.get('Success') != 1:
        why = hpl_parser.verdict(parsed['hpl'])
        return f'HPCC summary says Success={s.get("Success")!r}' + (f'; {why}' if why else '')
    return hpl_parser.verdict(parsed['hpl'])
