"""mdtest output: the ``SUMMARY rate`` table (operations per second).

mdtest prints up to two tables with identical row names: the rate table
(ops/s: ``SUMMARY: (of N iterations)`` in LLNL's mdtest 1.9.x,
``SUMMARY rate: (of N iterations)`` in the mdtest of IOR 3.2-4.0,
``SUMMARY rate (in ops/sec): (of N iterations)`` in 4.1) and, with ``-P``
or in newer versions, ``SUMMARY time`` (seconds or ms per operation). Only
the rate table is read here; the time table is never taken for rates.

Rows: ``Directory creation``, ``Directory stat``, ``Directory rename``,
``Directory removal``, ``File creation``, ``File stat``, ``File read``,
``File removal``, ``Tree creation``, ``Tree removal``, each with Max, Min,
Mean and Std Dev (1.9.x to 3.3 put a ``:`` after the name). ``-F`` leaves out the
directory rows.

``WARNING:`` and ``ERROR`` lines (1.9.x: ``Process N(): FAILED in ...``) are
collected (an mdtest run without ``-w``/``-e`` warns that the read test only
opens and closes).

An output of several runs (each from its ``-- started at ... --`` line: a
loop of mdtest runs into one log, IO500's easy and hard phases) is read by
the rule of every parser (:mod:`clusterproof.parsers.runs`): the last run
when all ran the same tasks, nodes, files and options (paths aside);
refused, naming what differs, when they did not.

A row of the rate table is read whole or refused: a line that starts with
an operation's name must hold four finite numbers, once (a garbled ``File
creation`` row is named, never dropped); a last line cut mid-number is not
read (:func:`clusterproof.parsers.runs.whole_lines`).
"""

import re
from dataclasses import dataclass, field

from clusterproof.parsers import ParseError, finite
from clusterproof.parsers import runs
from clusterproof.parsers.ior import problem_lines

#: the rows a metadata check reports, in mdtest's order
OPERATIONS = ('Directory creation', 'Directory stat', 'Directory rename', 'Directory removal',
              'File creation', 'File stat', 'File read', 'File removal',
              'Tree creation', 'Tree removal')

_NUM = r'(\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)'
#: the rate table's heading in every version (1.9.x has no word after SUMMARY)
_RATE_HEAD = re.compile(r'^SUMMARY(?: rate(?: \(in ops/sec\))?)?: \(of (\d+) iterations?\)\s*$',
                        re.M)
_ROW = re.compile(r'^\s+([A-Z][a-z]+(?: [a-z]+)*)\s*:?\s+' + r'\s+'.join([_NUM] * 4) + r'\s*$')
#: a line that starts as a row of one of :data:`OPERATIONS`
_ROW_LIKE = re.compile(r'^\s+(' + '|'.join(OPERATIONS) + r')\b')
_STATS = ('max', 'min', 'mean', 'stddev')
_VERSION = re.compile(r'^mdtest-(\S+) was launched with (\d+) total task\(s\) on (\d+) node\(s\)',
                      re.M)
_CMD = re.compile(r'^Command line used: (.*)$', re.M)
_ITEMS = re.compile(r'^(\d+) tasks, (\d+) files(/directories)?\s*$', re.M)
_FINISHED = re.compile(r'^-- finished at .* --\s*$', re.M)
_SHIFT = re.compile(r'Shifting ranks by (\d+) for each phase')
_BANNER = re.compile(r'^-- started at .* --\s*$', re.M)


def _kind(text):
    """What the runs of one output must share: tasks, nodes, files and the
    options of the command line without their paths."""
    m = _VERSION.search(text)
    cmd = _CMD.search(text)
    items = _ITEMS.search(text)
    options = [t.strip('\'"') for t in (cmd.group(1).split()[1:] if cmd else [])]
    return {'tasks': m.group(2) if m else '?', 'nodes': m.group(3) if m else '?',
            'files': items.group(2) if items else '?',
            'options': ' '.join(t for t in options if '/' not in t) or '?'}


@dataclass
class MdtestRun:
    source: str
    version: str = ''
    command: str = ''
    tasks: int = 0
    nodes: int = 0
    items: int = 0               # files (and directories) in all
    iterations: int = 0
    shift: int = 0               # -N stride mdtest reported (0: none)
    #: ``{operation: {'max', 'min', 'mean', 'stddev'}}`` in ops/s
    rates: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    runs: int = 1                # runs the output holds (the last is read)
    note: str = ''               # which run was read, when there are several

    def problems(self):
        return self.errors + self.warnings

    def rate(self, operation, stat='mean'):
        try:
            return self.rates[operation][stat]
        except KeyError:
            raise ParseError(f'{self.source}: no {operation!r} row in the mdtest SUMMARY rate '
                             f'table (rows found: {", ".join(self.rates) or "none"})') from None


def parse(text, source='mdtest output', stderr=''):
    """:class:`MdtestRun` from mdtest's stdout (``stderr`` adds its ERROR and
    WARNING lines). No rate table is an error naming ``source``."""
    chosen = runs.one_run(text, _BANNER, source, 'mdtest', kind=_kind)
    text, source = chosen.text, chosen.source
    errors, warnings = problem_lines(text, stderr)
    run = MdtestRun(source, errors=errors, warnings=warnings, runs=chosen.runs,
                    note=chosen.note)
    m = _VERSION.search(text)
    if m:
        run.version, run.tasks, run.nodes = m.group(1), int(m.group(2)), int(m.group(3))
    m = _CMD.search(text)
    run.command = m.group(1).strip() if m else ''
    m = _ITEMS.search(text)
    run.items = int(m.group(2)) if m else 0
    m = _SHIFT.search(text)
    run.shift = int(m.group(1)) if m else 0
    head = _RATE_HEAD.search(text)
    if not head:
        raise ParseError(f'{source}: no "SUMMARY rate" table ({_why_no_table(text, errors)})')
    run.iterations = int(head.group(1))
    first = chosen.line_at(head.end()) + 1
    for number, line in enumerate(text[head.end():].split('\n')[1:], first):
        if line.startswith('SUMMARY') or _FINISHED.match(line):
            break
        _read_row(run, line, f'{source}, line {number}')
    if not run.rates:
        raise ParseError(f'{source}: the mdtest SUMMARY rate table has no operation rows')
    return run


def _read_row(run, line, where):
    """Add the rate row ``line`` to ``run.rates``; a line that starts as a
    row but is not a whole one, or a row given twice, raises
    :class:`ParseError` naming ``where``."""
    like = _ROW_LIKE.match(line)
    if not like:
        return
    row = _ROW.match(line)
    if not row or row.group(1) != like.group(1):
        raise ParseError(f'{where}: a damaged {like.group(1)!r} row (want the name and four '
                         f'numbers: Max, Min, Mean, Std Dev): {line.strip()!r}')
    if row.group(1) in run.rates:
        raise ParseError(f'{where}: a second {row.group(1)!r} row in the rate table')
    run.rates[row.group(1)] = {stat: finite(value, f'{row.group(1)} {stat}', where)
                               for stat, value in zip(_STATS, row.groups()[1:])}


def _why_no_table(text, errors):
    """What the output shows when it has no rate table: an error, a table
    heading this parser does not know, or an end before any table."""
    if errors:
        return f'mdtest failed; first error: {errors[0]!r}'
    headings = re.findall(r'^SUMMARY.*$', text, re.M)
    if headings:
        return f'headings found: {"; ".join(h.strip() for h in headings)}; none is a rate table'
    if _FINISHED.search(text):
        return 'mdtest printed its finish line but no table'
    return 'the output ends before the table: mdtest did not finish'


def stride(order):
    """The ``-N`` stride for a placement, given the client node of each rank
    (rank 0 first): the smallest shift ``s`` so that rank ``r`` stats and reads
    the files of rank ``r + s`` on another client node, for every rank.

    Round-robin placement over several nodes gives 1; block placement gives
    the tasks per node; one node gives 1 (no shift can leave the node)."""
    n = len(order)
    for s in range(1, n):
        if all(order[r] != order[(r + s) % n] for r in range(n)):
            return s
    return 1
