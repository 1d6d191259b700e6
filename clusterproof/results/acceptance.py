"""The acceptance verdict: one item per reference a system declares, judged
on the median of the repetitions (``clusterproof acceptance`` runs them and
prints this table; the report shows it).

The items are the references the system declares, not what happened to run:
every referenced (test, index values, figure) that was not measured in
every repetition FAILS with the reason (``skipped: <reason>``, ``failed in
<phase>: <reason>``, ``absent: not run``); what was measured is judged on
the median of the repetitions. A failed test case is always an item that
fails; a skipped one without a reference is listed, not counted. Every
verdict is a :class:`~clusterproof.references.judge.Judgement`.
"""

import math
import statistics
from dataclasses import dataclass

from clusterproof.references.judge import (Judgement, Verdict, declared, judge_reference,
                                           locate, record_lower_is_better)


@dataclass(frozen=True)
class Item:
    """One line of the acceptance verdict: what was judged (``item``), the
    median measured (text), the reference (text) and the judgement."""
    item: str
    measured: str
    reference: str
    judgement: Judgement

    @property
    def verdict(self):
        return self.judgement.verdict


def reframe_status(recs, uuids, statuses):
    """Lines for the repetitions where ReFrame exited non-zero with no test
    case of its session failing (so that no item shows why): each one fails
    the acceptance."""
    out = []
    for i, (uuid, status) in enumerate(zip(uuids, statuses), 1):
        if status and not any(r.session == uuid and r.result in ('fail', 'abort', 'xpass')
                              for r in recs):
            out.append(f'{Verdict.FAILED}: repetition {i}: ReFrame exited with status {status} and no '
                       f'test case of its session {uuid[:8]} failed; see its output above')
    return out


def verdict_table(recs, refs, system, partitions, uuids):
    """``[Item]`` and the count of items not passed, for ``recs`` of the
    sessions ``uuids`` (the repetitions) on ``system`` with ``partitions``,
    against parsed ``refs``.

    One item per declared reference (:func:`judge.declared`): the median of
    its values judged when it was measured in every repetition, else
    ``FAILED`` with the reason. Then figures without a reference
    (``no-ref``, not counted), failed test cases no item shows (``FAILED``,
    counted) and skipped ones without a reference (``skipped``, not
    counted)."""
    by_where = {}
    for r in recs:
        where = locate(refs, r)
        if where is not None:
            by_where.setdefault(where, []).append(r)
    rows, failed = [], 0
    items = sorted(declared(refs, system, partitions), key=lambda d: d.label())
    covered, shown = set(), set()
    for d in items:
        rs = by_where.get(d.where, [])
        covered |= {id(r) for r in rs if r.figure == d.figure}
        measured = [r for r in rs if r.figure == d.figure and r.sanity_ok
                    and math.isfinite(r.value)]
        missing = [u for u in uuids if not any(r.session == u for r in measured)]
        if missing:
            why, cases = _why_missing(d, rs, missing, uuids)
            shown |= cases
            rows.append(Item(d.label(), _value(measured), str(d.reference),
                             Judgement(Verdict.FAILED, why)))
            failed += 1
            continue
        judged = _judged(measured, d.reference)
        failed += judged.failing
        rows.append(Item(_flagged(d.label(), measured), _value(measured), str(d.reference),
                         judged))
    groups = {}
    for r in recs:
        if r.figure and r.sanity_ok and id(r) not in covered:
            groups.setdefault(('fig', r.test, r.partition, r.figure), []).append(r)
        elif not r.sanity_ok and _case(r) not in shown:
            groups.setdefault(('case', r.test, r.partition, r.why), []).append(r)
    for (kind, test, part, what), rs in sorted(groups.items()):
        label = f'{test} @{system}:{part}'
        if kind == 'fig':
            rows.append(Item(_flagged(f'{label} {what}', rs), _value(rs), 'none declared',
                             Judgement(Verdict.NO_REF)))
        elif rs[0].skipped:
            rows.append(Item(f'{label} ({what})', '-', 'none declared',
                             Judgement(Verdict.SKIPPED)))
        else:
            rows.append(Item(label, '-', '-', Judgement(Verdict.FAILED, what)))
            failed += 1
    return rows, failed


def _case(r):
    return (r.session, r.test, r.partition)


def _why_missing(d, rs, missing, uuids):
    """Why declared item ``d`` was not measured in the repetitions
    ``missing``: the failure of one of its test cases there, else a skip,
    else ``absent``; and the test cases that reason covers."""
    there = [r for r in rs if r.session in missing]
    problems = [r for r in there if not r.sanity_ok]
    first = next((r for r in problems if not r.skipped), None) or \
        (problems[0] if problems else None)
    if first is not None:
        why = first.why
    elif there:
        why = f'absent: the test ran but reported no {d.figure}'
    else:
        why = 'absent: not run'
    if len(missing) < len(uuids):
        reps = ', '.join(str(uuids.index(u) + 1) for u in missing)
        why += f' (repetition {reps} of {len(uuids)})'
    return why, {_case(r) for r in problems}


def _judged(measured, reference):
    """The judgement of the median of ``measured``: failing for a
    regression, a figure beyond its bound on the better side, an ``xpass``,
    or smoke or emulated figures (``not accepted``, never); ``xfail``
    (failed as expected) does not fail."""
    flags = sorted({f for r in measured for f in r.flags})
    med = statistics.median(r.value for r in measured)
    judged = judge_reference(med, reference, record_lower_is_better(measured[0]))
    if flags and not judged.failing:
        return Judgement(Verdict.NOT_ACCEPTED, ', '.join(flags), judged.bounds)
    return judged


def _flagged(label, rs):
    flags = sorted({f for r in rs for f in r.flags})
    return label + (f' [{", ".join(flags)}]' if flags else '')


def _value(rs):
    vals = [r.value for r in rs if math.isfinite(r.value)]
    if not vals:
        return '-'
    return f'{statistics.median(vals):.5g} {rs[0].unit} (n={len(vals)})'
