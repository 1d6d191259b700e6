"""A node's screenings remembered (``store.screenings``): each figure says
how often it was slow in the last screenings of its node ("slow in 3 of the
last 4 screenings"), and a node **persistently at the tail** is named even
when each single screening leaves it just inside the line.

Persistently at the tail: in at least :data:`AT_TAIL_IN` of its last
:data:`LAST` screenings (this one included) the figure was near or past
the line (``rule.suspect_units`` noise units and the smallest slowdown
that matters), and the mean of those screenings' distances is past the
line itself (k noise units and the smallest slowdown). The mean of several
screenings averages their run-to-run noise away and keeps what is the
node's own; a healthy node's mean is no further out than its single
screenings are, so the rule names no more healthy nodes than k does.
Pure functions over node verdicts and remembered rows.
"""

from dataclasses import replace

from clusterproof.references.judge import Verdict
from clusterproof.screen import stats, verdicts as screen_verdicts
from clusterproof.screen.ownpast import key_of
from clusterproof.screen.rule import Rule

#: the screenings looked at, this one included
LAST = 4
#: near or past the line in this many of them: persistently at the tail
AT_TAIL_IN = 3


def earlier(past, screening_id):
    """``{figure key: [rows, oldest first]}`` of the remembered rows of
    other screenings than ``screening_id``."""
    out = {}
    for r in past:
        if r['screening'] == screening_id:
            continue
        k = key_of(r['partition'], r['node'], r['check'], r['figure'], r['component'])
        out.setdefault(k, []).append(r)
    return out


def history_of(fv, rows, rule):
    """``(slow, near, n, mean units, mean percent)`` of a figure verdict
    with its earlier rows (the last ``LAST - 1``)."""
    smallest = fv.smallest_pct or 0.0
    seen = [(r['verdict'], r['noise_units'], r['percent']) for r in rows[-(LAST - 1):]]
    seen.append((str(fv.verdict), fv.noise_units, fv.percent))
    measured = [(u, p) for _v, u, p in seen if u is not None and p is not None]
    slow = sum(v == str(Verdict.SLOW) for v, _u, _p in seen)
    near = sum(stats.past_line(u, p, rule.suspect_units, smallest) for u, p in measured)
    if not measured:
        return slow, near, len(seen), None, None
    return (slow, near, len(seen), sum(u for u, _ in measured) / len(measured),
            sum(p for _, p in measured) / len(measured))


def judge_remembered(fv, rows, rule):
    """The figure verdict ``fv`` with its history: ``history`` says how
    often it was slow; a figure that passed but is persistently at the tail
    becomes slow."""
    slow, near, n, units, pct = history_of(fv, rows, rule)
    if n < 2:
        return fv
    text = f'slow in {slow} of the last {n} screenings'
    if (fv.verdict == Verdict.PASS and near >= AT_TAIL_IN and units is not None
            and stats.past_line(units, pct, rule.noise_units, fv.smallest_pct or 0.0)):
        why = (f'{fv.why}: persistently at the tail, near or past the line in {near} of the '
               f'last {n} screenings, on average {pct:+.1f} %, {units:+.1f} noise units')
        return replace(fv, verdict=Verdict.SLOW, why=why, history=text)
    if slow:
        return replace(fv, why=f'{fv.why}; {text}', history=text)
    return replace(fv, history=text)


def remember(verdicts, past, rule=None, screening_id=None):
    """The node verdicts with their figures' histories (:func:`judge_remembered`)
    from ``past`` (rows of ``store.screenings.read``), ranked again."""
    rule = rule or Rule()
    before = earlier(past, screening_id)
    out = []
    for nv in verdicts:
        figs = []
        for fv in nv.figures:
            s = fv.sample
            rows = before.get(key_of(nv.partition, nv.node, s.check, s.figure, s.component))
            keep = s.check == 'inventory' or s.pair or not rows or fv.verdict not in (
                Verdict.PASS, Verdict.SLOW)
            figs.append(fv if keep else judge_remembered(fv, rows, rule))
        out.append(_renamed(nv, figs))
    return screen_verdicts.rank(out)


def _renamed(nv, figs):
    """``nv`` with its figures ``figs``: a node that passed with a figure
    now slow is slow, that figure its worst."""
    if nv.verdict == Verdict.PASS and any(f.verdict == Verdict.SLOW for f in figs):
        worst = min(figs, key=screen_verdicts._figure_rank)
        return replace(nv, verdict=Verdict.SLOW, worst=worst, figures=figs)
    at = [i for i, f in enumerate(nv.figures) if f is nv.worst]
    return replace(nv, worst=figs[at[0]] if at else nv.worst, figures=figs)
