"""Sessions compared with the references or with each other, and slow drift.

Verdicts of one figure:

``pass``        inside the tolerance
``REGRESSION``  worse than the tolerance allows (lower throughput, higher time)
``OUT-OF-BOUNDS`` beyond a bound on the better side (a throughput above its
                upper bound): ReFrame fails such a figure, and so does compare;
                re-bless or widen the bound
``no-ref``      nothing to compare with
``not judged``  a smoke figure, or an emulated figure with no reference
                blessed from emulated runs: never judged against a real
                system's references
``xfail``       worse than the tolerance, and the reference says ``$xfail``
                (an expected failure): not a regression
``xpass``       the reference says ``$xfail`` but the figure met it: the
                mark is stale; a failure, as ReFrame counts it
``FAILED``      the test case failed before its figures were measured
``skipped``     the test case was skipped (the reason in its flags)

Every verdict and bound comes from :mod:`clusterproof.references.judge`:
a row holds its :class:`~clusterproof.references.judge.Judgement` (the
verdict, the reason and what the figure was compared with).
A row whose reference today differs from the one ReFrame judged the figure
against when it ran (a re-bless or an edit since) carries the flag
``ref-changed`` and the old reference in ``Row.ran_against``.

Drift is what no single session trips: the rolling median of the last
``window`` sessions worse than the reference by more than ``drop``, or a
figure that got worse in each of its last ``in_a_row`` sessions.

An emulated figure is judged only against ``<system>.emulated.yaml``
(``clusterproof bless --allow-emulated``); its row carries the flag
``emulated-ref`` so that no reader takes it for a hardware verdict.
"""

import math
import statistics
from dataclasses import dataclass

from tabulate import tabulate

from clusterproof.store.sessions import Record, case_reason
from clusterproof.references.judge import Judgement, Verdict, judge_against, judge_record
from clusterproof.references.lookup import lookup, references_for
from clusterproof.references.direction import record_lower_is_better
from clusterproof.references.entries import Reference, bounds, tolerance_text

DEFAULT_TOLERANCE = 0.05
DEFAULT_WINDOW = 7
DEFAULT_DROP = 0.05
DEFAULT_DRIFT_SESSIONS = 5


@dataclass
class Row:
    """A figure record judged: the store's
    :class:`~clusterproof.store.sessions.Record` (``rec``) and its
    :class:`~clusterproof.references.judge.Judgement` (the verdict, its
    reason, and the reference or the base session's value it was compared
    with, as a :class:`~clusterproof.references.entries.Reference`). Its
    names (system, test, figure, value, unit, direction) are the record's; a
    figure of the base session that the new one lacks is the base record
    with the verdict ``missing`` and no value."""
    rec: Record
    judgement: Judgement = Judgement(Verdict.NO_REF)
    #: the record's flags (smoke, emulated) and the judgement's
    #: (emulated-ref, ref-changed, why a test case measured nothing)
    flags: list = None

    def __post_init__(self):
        if self.flags is None:
            self.flags = list(self.rec.flags) + list(self.judgement.flags)

    system = property(lambda self: self.rec.system)
    partition = property(lambda self: self.rec.partition)
    test = property(lambda self: self.rec.test)
    unit = property(lambda self: self.rec.unit)
    verdict = property(lambda self: self.judgement.verdict)
    reason = property(lambda self: self.judgement.reason)
    #: the reference value or the base session's value (None: none)
    base = property(lambda self: self._against('value'))
    #: the relative thresholds used (None: unbounded)
    lower = property(lambda self: self._against('lower'))
    upper = property(lambda self: self._against('upper'))

    def _against(self, name):
        against = self.judgement.reference
        return None if against is None else getattr(against, name)

    @property
    def ran_against(self):
        """With the flag ``ref-changed``: the reference ReFrame judged
        against when the test ran (None: it had none)."""
        return self.rec.ran_against

    @property
    def figure(self):
        """The record's figure; ``(test)`` for a test case without figures."""
        return self.rec.figure or '(test)'

    @property
    def value(self):
        """The record's value; None for a test case without figures and a
        figure missing from the new session."""
        if not self.rec.figure or self.verdict == Verdict.MISSING:
            return None
        return self.rec.value

    @property
    def lower_is_better(self):
        return bool(self.rec.figure) and record_lower_is_better(self.rec)

    @property
    def ratio(self):
        if self.base in (None, 0) or self.value is None or not math.isfinite(self.value):
            return None
        return self.value / self.base

    @property
    def tolerance(self):
        return tolerance_text(self.lower, self.upper)

    @property
    def band(self):
        """``(low, high)`` of the tolerance band about ``base``, None where
        unbounded (both None without a base)."""
        if self.base is None:
            return None, None
        return bounds(self.base, self.lower, self.upper)

    @property
    def regression(self):
        """True for a verdict that fails the comparison (Verdict.failing)."""
        return self.verdict.failing


#: the reason of a test case that passed without figures (a build, a check that measures nothing)
NO_FIGURES = 'passed; it has no figures (a build, or a check that measures nothing)'


def _case_row(rec):
    """The row of a test case without figures: ``skipped`` with the skip
    reason, ``FAILED`` with the phase and the cause,
    or ``pass`` for one that passed without measuring (a build); the reason
    is :func:`clusterproof.store.sessions.case_reason`."""
    why = case_reason(rec.outcome.result, rec.outcome.fail_phase, rec.outcome.reason)
    if not why:
        return Row(rec, Judgement(Verdict.PASS, NO_FIGURES))
    verdict = Verdict.SKIPPED if rec.outcome.skipped else Verdict.FAILED
    return Row(rec, Judgement(verdict, why, flags=(why,)))


def against_references(recs, refs_by_system=None):
    """Rows for ``recs`` judged against the reference files (``{system:
    parsed file}``; read from ``site_config/references`` when absent) by
    :func:`~clusterproof.references.judge.judge_record`."""
    refs_by_system = dict(refs_by_system or {})
    rows = []
    for rec in recs:
        rows.append(_row(rec, refs_by_system))
    return rows


def _row(rec, refs_by_system):
    if not rec.figure:
        return _case_row(rec)
    return Row(rec, judge_record(rec, refs_by_system))


def against_session(base_recs, new_recs, refs_by_system=None, tolerance=DEFAULT_TOLERANCE):
    """Rows comparing ``new_recs`` with ``base_recs`` figure by figure
    (:func:`~clusterproof.references.judge.judge_against`: the reference's
    tolerance where there is one, else ``tolerance``), then the figures of
    the base session that the new one lacks."""
    refs_by_system = dict(refs_by_system or {})
    base = {rec.key: rec for rec in base_recs if rec.figure}
    rows = []
    for rec in new_recs:
        rows.append(_session_row(rec, base.get(rec.key), refs_by_system, tolerance))
    new = {rec.key for rec in new_recs}
    for key, rec in base.items():
        if key not in new:
            rows.append(Row(rec, Judgement(Verdict.MISSING, reference=Reference(rec.value))))
    return rows


def _session_row(rec, base, refs_by_system, tolerance):
    if not rec.figure:
        return _case_row(rec)
    if base is None:
        return Row(rec)
    return Row(rec, judge_against(rec, base.value, refs_by_system, tolerance),
               sorted(set(rec.flags) | set(base.flags)))


@dataclass
class Drift:
    system: str
    partition: str
    test: str
    figure: str
    unit: str
    kind: str           # 'median' or 'streak'
    detail: str


def drift(history, refs_by_system=None, window=DEFAULT_WINDOW, drop=DEFAULT_DROP,
          in_a_row=DEFAULT_DRIFT_SESSIONS, keys=None):
    """Slow drift in ``history`` (records of several sessions).

    For every figure (optionally only ``keys``): the median of its last
    ``window`` values worse than its reference by more than ``drop``
    (a fraction), or its value worse than the session before ``in_a_row``
    times in a row. Smoke results are left out (different sizes)."""
    series = {}
    for r in history:
        if r.figure and not r.smoke and math.isfinite(r.value):
            if keys is None or r.key in keys:
                series.setdefault(r.key, []).append(r)
    for rs in series.values():
        rs.sort(key=lambda r: r.times.session_start)
    return drift_of({k: (rs[-1], [r.value for r in rs]) for k, rs in series.items()},
                    refs_by_system, window, drop, in_a_row)


def drift_of(series, refs_by_system=None, window=DEFAULT_WINDOW, drop=DEFAULT_DROP,
             in_a_row=DEFAULT_DRIFT_SESSIONS):
    """:func:`drift` of ``series``: ``{key: (newest record, values oldest
    first)}`` (the values as a history read from the store has them)."""
    refs_by_system = dict(refs_by_system or {})
    out = []
    for key, (last, values) in series.items():
        lib = record_lower_is_better(last)
        values = list(values)
        found = lookup(references_for(refs_by_system, last.system, last.emulated), last)
        if found and found.value and not found.xfail and len(values) >= window:
            med = statistics.median(values[-window:])
            change = (med - found.value) / abs(found.value)
            if (change > drop) if lib else (change < -drop):
                out.append(Drift(last.system, last.partition, last.test, last.figure, last.unit,
                                 'median',
                                 f'median of the last {window} sessions {med:.4g} is '
                                 f'{change * 100:+.1f}% from the reference {found.value:.4g} '
                                 f'(limit {drop * 100:g}%)'))
        if in_a_row and len(values) > in_a_row:
            tail = values[-(in_a_row + 1):]
            worse = all((b > a) if lib else (b < a) for a, b in zip(tail, tail[1:]))
            if worse:
                out.append(Drift(last.system, last.partition, last.test, last.figure, last.unit,
                                 'streak',
                                 f'worse {in_a_row} sessions in a row: '
                                 + ' -> '.join(f'{value:.4g}' for value in tail)))
    out.sort(key=lambda d: (d.system, d.partition, d.test, d.figure, d.kind))
    return out


def format_rows(rows):
    """A text table grouped by test: both values, the ratio, the tolerance,
    the verdict and the smoke/emulated flags."""
    header = ('figure', 'unit', 'base', 'value', 'ratio', 'tolerance', 'verdict', 'flags')
    groups = {}
    for row in rows:
        groups.setdefault((row.system, row.partition, row.test), []).append(row)
    titles, cells = {}, []
    for (system, part, test), rs in groups.items():
        titles[len(cells)] = f'{test} @{system}:{part}'
        for row in rs:
            cells.append((row.figure, row.unit, _num(row.base), _num(row.value),
                          '' if row.ratio is None else f'{row.ratio:.3f}', row.tolerance,
                          str(row.verdict), ','.join(_flag_text(row, flag) for flag in row.flags)))
    head, *body = tabulate(cells, headers=header, tablefmt='plain',
                           disable_numparse=True).splitlines()
    lines = ['  ' + head.rstrip()]
    for i, line in enumerate(body):
        if i in titles:
            lines.append(titles[i])
        lines.append('  ' + line.rstrip())
    return '\n'.join(lines)


def _flag_text(row, flag):
    if flag == 'ref-changed':
        return f'ref-changed (ran against {row.ran_against or "no reference"})'
    return flag


def _num(value):
    if value is None:
        return '-'
    if isinstance(value, float) and not math.isfinite(value):
        return '-'
    return f'{value:.5g}'
