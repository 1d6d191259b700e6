"""md-workbench output (IOR 4's ``md-workbench``, IO500's metadata workload).

Rank 0 prints its arguments (``Args: <binary> "-I" "10" ...``), a banner
(``MD-Workbench total objects: N workingset size: X MiB (version: V) time:
...``), then one line per phase: ``precreate process ...``, one
``benchmark process ...`` per iteration (``-R``) and ``cleanup process ...``,
each with ``rate:<N> iops/s``, the objects it touched, ``op-max:<s>s`` (the
slowest single operation) and ``(<N> errs)``; last ``Total runtime: ...``.
The precreate and cleanup lines give ``dsets:`` (data sets of all ranks:
tasks x ``-D``), so the task count is read from there.

``WARNING:`` and ``ERROR`` lines, and the error lines of the MPI library,
UCX and Slurm, are collected (an unwritable output directory:
``ERROR: 0: Error while creating the dset``, then MPI_ABORT).

An output of several runs (from each ``Args:`` line) is read by the rule of
every parser (:mod:`clusterproof.parsers.runs`): the last run when all ran
the same options (the output directory aside) and tasks; refused, naming
what differs, when they did not.

A phase line is read whole or refused: a line that starts ``benchmark
process`` must hold its time, rate, slowest operation and error count as
finite numbers (a garbled one is named, never skipped); a last line cut
mid-number is not read (:func:`clusterproof.parsers.runs.whole_lines`).
"""

import re
import shlex
from dataclasses import dataclass, field

from clusterproof.parsers import ParseError, finite, whole
from clusterproof.parsers import runs
from clusterproof.parsers.ior import problem_lines

#: the phases md-workbench reports, in its order
PHASES = ('precreate', 'benchmark', 'cleanup')
#: ``-D`` when the command line does not set it (md-workbench 4.0)
DEFAULT_DATA_SETS = 10

_NUM = r'(\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)'
_BANNER = re.compile(r'^Args: ', re.M)
_HEAD = re.compile(r'^MD-Workbench total objects: (\d+) workingset size: \S+ MiB '
                   r'\(version: ([^)]*)\)', re.M)
_PHASE = re.compile(r'^(precreate|benchmark|cleanup) process max:' + _NUM + r's .*?\brate:'
                    + _NUM + r' iops/s .*?\bop-max:' + _NUM + r's \((\d+) errs\)', re.M)
_PHASE_LIKE = re.compile(r'^(?:precreate|benchmark|cleanup) process\b')
_DSETS = re.compile(r'\bdsets: (\d+)')
_OBJECTS = re.compile(r'\bobjects:(\d+)')
_TOTAL = re.compile(r'^Total runtime: (\d+)s', re.M)


@dataclass
class Phase:
    name: str
    rate: float          # operations per second (iops/s)
    op_max: float        # the slowest single operation, seconds
    errors: int          # md-workbench's own error count for the phase
    objects: int
    seconds: float       # the slowest process's time


@dataclass
class MdWorkbenchRun:
    source: str
    version: str = ''
    argv: list = field(default_factory=list)    # the options, without the binary
    objects: int = 0                            # total objects (the banner)
    tasks: int = 0
    phases: list = field(default_factory=list)
    finished: bool = False                      # printed its ``Total runtime`` line
    warnings: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    runs: int = 1
    note: str = ''

    def problems(self):
        return self.errors + self.warnings

    def of(self, name):
        """The lines of phase ``name`` (``benchmark``: one per iteration)."""
        return [p for p in self.phases if p.name == name]

    def rate(self, name):
        """Mean rate of phase ``name`` over its lines, iops/s."""
        lines = self.of(name)
        if not lines:
            raise ParseError(f'{self.source}: no md-workbench {name} phase (phases found: '
                             f'{", ".join(dict.fromkeys(p.name for p in self.phases)) or "none"})')
        return sum(p.rate for p in lines) / len(lines)

    def option(self, flag, default=None):
        """The value of ``flag`` (``-R``) on the command line, or ``default``."""
        for i, arg in enumerate(self.argv[:-1]):
            if arg == flag:
                return self.argv[i + 1]
        return default


def _argv(text):
    line = _BANNER.search(text)
    if not line:
        return []
    rest = text[line.end():].split('\n', 1)[0]
    try:
        return shlex.split(rest)[1:]
    except ValueError:
        return rest.split()[1:]


def _kind(text):
    """What the runs of one output must share: the options (without paths)
    and the data sets of all ranks."""
    dsets = _DSETS.search(text)
    return {'options': ' '.join(a for a in _argv(text) if '/' not in a) or '?',
            'data sets': dsets.group(1) if dsets else '?'}


def _read_phase(run, line, where):
    """Add the phase of ``line`` to ``run`` (and the task count, from the
    first line giving ``dsets:``); a damaged phase line raises
    :class:`ParseError` naming ``where``."""
    m = _PHASE.match(line)
    if not m:
        raise ParseError(f'{where}: a damaged {line.split()[0]} line (want max:<s>s ... '
                         f'rate:<N> iops/s ... op-max:<s>s (<N> errs)): {line.strip()[:120]!r}')
    objects = _OBJECTS.search(line)
    run.phases.append(Phase(m.group(1), finite(m.group(3), 'rate', where),
                            finite(m.group(4), 'op-max', where), whole(m.group(5), 'errs', where),
                            int(objects.group(1)) if objects else 0,
                            finite(m.group(2), 'max', where)))
    dsets = _DSETS.search(line)
    if dsets and not run.tasks:
        data_sets = run.option('-D', run.option('--data-sets', DEFAULT_DATA_SETS))
        data_sets = whole(data_sets, 'the data sets of -D', f'{run.source}: Args')
        if data_sets < 1:
            raise ParseError(f'{run.source}: Args: -D {data_sets}: want one data set or more')
        run.tasks = int(dsets.group(1)) // data_sets


def parse(text, source='md-workbench output', stderr=''):
    """:class:`MdWorkbenchRun` from md-workbench's stdout (``stderr`` adds
    its ERROR and WARNING lines). No banner or no phase line is an error
    naming ``source``."""
    chosen = runs.one_run(text, _BANNER, source, 'md-workbench', kind=_kind)
    text, source = chosen.text, chosen.source
    errors, warnings = problem_lines(text, stderr)
    run = MdWorkbenchRun(source, argv=_argv(text), errors=errors, warnings=warnings,
                         runs=chosen.runs, note=chosen.note)
    head = _HEAD.search(text)
    if not head:
        raise ParseError(f'{source}: no "MD-Workbench total objects" line: not md-workbench '
                         f'output, or it stopped before starting'
                         + (f'; first error: {errors[0]!r}' if errors else ''))
    run.objects, run.version = int(head.group(1)), head.group(2)
    for number, line in enumerate(text.split('\n'), chosen.line):
        if _PHASE_LIKE.match(line):
            _read_phase(run, line, f'{source}, line {number}')
    run.finished = bool(_TOTAL.search(text))
    if not run.phases:
        raise ParseError(f'{source}: md-workbench reported no phase ('
                         + (f'first error: {errors[0]!r}' if errors else
                            'the output ends before its first phase line') + ')')
    return run
