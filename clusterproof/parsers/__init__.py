"""Parsers of program outputs (benchmarks, and the tools that describe a
node: lscpu, ipmctl, ndctl, /proc/mounts): plain functions from the text a
program printed to plain data, with errors that name the file and what was
missing. Each module has ``parse(text, source)``; each is tested on output
recorded from a real run (tests/data/<program>/).

A damaged output (cut short, a line lost or garbled) gives either finite
figures read from complete rows or :class:`ParseError`: every number a
parser reads goes through :func:`finite` or :func:`whole` (docs/reliability.md,
"Damaged input")."""

import math
import re

from clusterproof import ClusterproofError


class ParseError(ClusterproofError, ValueError):
    """A program's output lacks what its parser needs; the message names the
    file (or source) and the missing line. (A ValueError too: the text is
    not a value the parser can read.)"""


def line_at(text, pos, first=1):
    """The line number of offset ``pos`` of ``text`` (``first``: the number
    of the text's first line in its file)."""
    return first + text.count('\n', 0, pos)


def _where(source, line):
    return f'{source}, line {line}' if line else source


def finite(value, what, source, line=None):
    """``value`` (text or a JSON number) as a finite float; otherwise
    :class:`ParseError` naming ``source``, ``line``, ``what`` and the value
    (``1.2.3``, ``nan``, ``inf``, ``1e999`` are damage, not figures)."""
    try:
        number = float(value) if isinstance(value, (str, int, float)) \
            and not isinstance(value, bool) else None
    except (ValueError, OverflowError):
        number = None
    if number is None or not math.isfinite(number) or (
            isinstance(value, str) and not value.strip().isascii()):
        raise ParseError(f'{_where(source, line)}: {what}: want a finite number, '
                         f'found {value!r}')
    return number


_WHOLE = re.compile(r'\s*\+?[0-9]+\s*')


def whole(value, what, source, line=None):
    """``value`` (text of ASCII digits, or an integral JSON number) as an
    int; otherwise :class:`ParseError` naming ``source``, ``line``, ``what``
    and the value."""
    if isinstance(value, str) and _WHOLE.fullmatch(value):
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    raise ParseError(f'{_where(source, line)}: {what}: want a whole number, found {value!r}')
