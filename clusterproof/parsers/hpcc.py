"""HPCC 1.5.0 ``hpccoutf.txt``: the ``Name=value`` lines between
``Begin of Summary section.`` and ``End of Summary section.``, and the HPL
section's residual lines (same format as HPL, see :mod:`clusterproof.parsers.hpl`).

``Success=1`` means every test of the run passed its own checks.
"""

import re

from clusterproof.parsers import ParseError
from clusterproof.parsers import hpl as hpl_parser

BEGIN, END = 'Begin of Summary section.', 'End of Summary section.'

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


def summary(text, source='hpccoutf.txt'):
    """The summary section as a dict (numbers converted)."""
    start = text.find(BEGIN)
    end = text.find(END, start)
    if start < 0 or end < 0:
        raise ParseError(f'{source}: no complete summary section ("{BEGIN}" ... "{END}"); '
                         f'the run did not finish')
    out = {}
    for line in text[start + len(BEGIN):end].splitlines():
        name, sep, val = line.partition('=')
        if sep:
            out[name.strip()] = _value(val.strip())
    return out


def parse(text, source='hpccoutf.txt'):
    """``{'summary': {...}, 'hpl': <HPL parse of the HPL section>}``."""
    m = re.search(r'Begin of HPL section\.(.*?)End of HPL section\.', text, re.S)
    if not m:
        raise ParseError(f'{source}: no complete HPL section ("Begin of HPL section." ... '
                         f'"End of HPL section.")')
    return {'summary': summary(text, source),
            'hpl': hpl_parser.parse(m.group(1), f'{source} (HPL section)')}


def verdict(parsed):
    """None when the run succeeded; otherwise why not."""
    s = parsed['summary']
    if s.get('Success') != 1:
        why = hpl_parser.verdict(parsed['hpl'])
        return f'HPCC summary says Success={s.get("Success")!r}' + (f'; {why}' if why else '')
    return hpl_parser.verdict(parsed['hpl'])
