"""Outputs that hold several runs of one program, and the one rule for
reading them.

A program's output holds several runs when it is appended to (HPCC's
``hpccoutf.txt``, a job script run twice into one file, ``tee -a``) or when
a loop ran the program several times into one log (IOR's own test scripts,
an administrator's sweep over APIs or thread counts, IO500). Every parser
that can be given such an output splits it at its program's banner
(:func:`split`) and reads it by one rule (:func:`one_run`):

- one run: it is read;
- several runs of one kind (the same program doing the same measurement,
  as a check's appended outputs are): the **last** is read, since a check
  writes one run per job and appends nothing after it; the result says how
  many runs the output holds and which was read (``runs``, ``note``);
- several runs that differ in kind (IOR with POSIX then MPIIO, STREAM at 1
  then 8 threads, osu_bw then osu_latency): the output is **refused**,
  naming the count and what differs, run by run, since no run of them is
  "the" result.

What makes a kind is the parser's: each passes a function from a run's
text to the few values that must agree (the API and access of IOR, the
threads and array size of STREAM ...). A last run cut short is refused by
the parser naming the count; an older run is never read instead.

An output whose last line has no newline was cut while that line was being
written (a killed program, a full disk): :func:`one_run` leaves that line
out, so that no figure is read from a row cut mid-number.
"""

import re
from dataclasses import dataclass

from clusterproof.parsers import ParseError, line_at


@dataclass
class Run:
    """The run :func:`one_run` chose: its ``text``, the ``source`` to name
    in messages (the file, and which run of how many), the ``runs`` the
    output holds and a ``note`` ('' for one run)."""
    text: str
    source: str
    runs: int = 1
    note: str = ''
    #: the line number, in the whole output, of the run's first line
    line: int = 1

    def line_at(self, pos):
        """The line number in the whole output of offset ``pos`` of ``text``."""
        return line_at(self.text, pos, self.line)


def split(text, banner):
    """The runs of ``text``, oldest first: one part per match of ``banner``
    (a compiled pattern or a regular expression, matched at line starts),
    from it to the next; text before the first banner (a launcher's
    warnings, a script's echo) goes with the first. No banner: ``[text]``."""
    pattern = banner if isinstance(banner, re.Pattern) else re.compile(banner, re.M)
    starts = [m.start() for m in pattern.finditer(text)]
    if len(starts) < 2:
        return [text]
    bounds = [0] + starts[1:] + [len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:])]


def differences(kinds):
    """``'API: POSIX (runs 1-2), MPIIO (run 3); tasks: ...'``: the aspects
    whose values differ between runs (``kinds``: one dict per run)."""
    parts = []
    for aspect in dict.fromkeys(k for kind in kinds for k in kind):
        values = {}
        for number, kind in enumerate(kinds, 1):
            values.setdefault(kind.get(aspect, '?'), []).append(number)
        if len(values) > 1:
            parts.append(f'{aspect}: ' + ', '.join(
                f'{value} ({_numbers(numbers)})' for value, numbers in values.items()))
    return '; '.join(parts)


def _numbers(numbers):
    """``run 3``, ``runs 1-2, 4``."""
    spans, start = [], numbers[0]
    for prev, cur in zip(numbers, numbers[1:] + [None]):
        if cur != prev + 1:
            spans.append(str(start) if start == prev else f'{start}-{prev}')
            start = cur
    return ('runs ' if len(numbers) > 1 else 'run ') + ', '.join(spans)


def last_of(count, source, program, kinds=None, when=''):
    """The rule itself, for ``count`` runs of ``program`` in ``source``
    (``kinds``: one dict per run of the values that must agree, or None):
    ``(where, note)`` of the last run, or :class:`ParseError` naming the
    count and what differs. ``when`` dates the last run in the note."""
    if count == 1:
        return source, ''
    differ = differences(kinds) if kinds else ''
    if differ:
        raise ParseError(f'{source} holds {count} {program} runs that differ ({differ}); '
                         f'no one of them is the result: give the parser one run (one '
                         f'output file per run)')
    where = f'{source} (run {count} of {count}, the last' + (f', started {when})' if when else ')')
    note = (f'{source} holds {count} {program} runs; the last'
            + (f' (started {when})' if when else '') + ' is read')
    return where, note


def whole_lines(text):
    """``text`` without a last line that has no newline (a line being
    written when the program was stopped); a text of one line is kept."""
    cut = text.rfind('\n')
    return text if cut < 0 or text.endswith('\n') else text[:cut + 1]


def one_run(text, banner, source, program, kind=None, started=None):
    """The :class:`Run` to read in ``text`` under the rule of this module
    (:func:`last_of`): the only run, or the last of several of one kind
    (``kind``: a function from a run's text to a dict of the values that
    must agree; None: every run is of one kind); several runs that differ in
    kind raise :class:`ParseError` naming the count and the differences.
    ``started`` (a function from a run's text to when it started, or '')
    dates the run read in the note. A last line without its newline is
    left out (:func:`whole_lines`)."""
    parts = split(whole_lines(text), banner)
    if len(parts) == 1:
        return Run(parts[0], source)
    where, note = last_of(len(parts), source, program,
                          [kind(part) for part in parts] if kind else None,
                          started(parts[-1]) if started else '')
    return Run(parts[-1], where, len(parts), note,
               line=1 + sum(part.count('\n') for part in parts[:-1]))
