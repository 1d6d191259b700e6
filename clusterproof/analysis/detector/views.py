"""Both views of a figure's history matched (:func:`find`): the nightly
alarms (:mod:`.nightly`) and the retrospective changes
(:mod:`.retrospective`) within ``MATCH`` sessions are one change; the
steps are judged again once all are placed and the alarms later sessions
disprove are withdrawn; then what each move is (:mod:`.classification`) and the
changes of noise (:mod:`.noisechange`)."""

import dataclasses

from clusterproof.analysis.detector.classification import _episode_end, classify
from clusterproof.analysis.detector.levels import _levels
from clusterproof.analysis.detector.model import Change, Settings
from clusterproof.analysis.detector.nightly import _nightly
from clusterproof.analysis.detector.noise import (
    _segments_scale, inflation, noise_floor, on_scale, resolution)
from clusterproof.analysis.detector.noisechange import noise_changes
from clusterproof.analysis.detector.retrospective import _drifts, segment
from clusterproof.analysis.detector.significance import POWER, refine

#: a nightly alarm and a retrospective change this many sessions apart (in
#: the same direction) are one change
MATCH = 3


def _needed(c, s):
    """The standard errors step ``c`` must keep once every step is placed:
    ``z``; ``z + POWER`` for a nightly alarm the whole history does not
    confirm (``view='nightly'``), as the retrospective view keeps a change
    (``s.confirm_alarms``; off: ``z``, as before)."""
    return s.z + (POWER if s.confirm_alarms and c.view == 'nightly' else 0.0)


def _widenings(y, steps, s):
    """The widening of each step's standard error (:func:`inflation`): of
    the residuals about every step; for a nightly alarm the whole history
    does not confirm (``s.own_widening``), about the confirmed steps and its
    own place only, so that alarms under judgement do not cut a wandering or
    seasonal series into pieces too short to show it wanders."""
    ats = [c.at for c in steps]
    wide = inflation(y, ats)
    if not s.own_widening:
        return [wide] * len(steps)
    held = {c.at for c in steps if c.view != 'nightly'}
    return [inflation(y, sorted(held | {c.at})) if c.view == 'nightly' else wide
            for c in steps]


def _rows_of(y, steps, s, floor):
    """``(steps, drifts)``: the rows of two or more ``steps`` in one
    direction that a trend fits better (:func:`_drifts`, single steps left
    as they are) taken out of ``steps`` as drifts, each found on the night
    of its first alarm."""
    sigma = _segments_scale(y, [c.at for c in steps], floor)
    out = _drifts(y, steps, sigma, dataclasses.replace(s, onsets=False))
    drifts = []
    for d in (c for c in out if c.kind == 'drift'):
        inside = [c for c in steps if d.at - MATCH <= c.at <= d.end + MATCH]
        alarmed = [c.found for c in inside if c.found is not None]
        drifts.append(dataclasses.replace(d, found=min(alarmed) if alarmed else None,
                                          view='both' if alarmed else 'retrospective'))
    return [c for c in out if c.kind != 'drift'], drifts


def find(values, settings=None, groups=None):
    """``(changes, withdrawn)`` of a figure's ``values`` (oldest first):
    both views of its history.

    The nightly view (:func:`scan`'s alarms, each with the night it would
    have been raised) and the retrospective view (:func:`segment` of the
    whole history) are matched: an alarm and a change within ``MATCH``
    sessions in the same direction are one change (``view='both'``, placed
    where the whole history puts it, ``found`` the night of the alarm). An
    alarm inside a drift dates the drift. An alarm the retrospective view
    does not confirm is kept (``view='nightly'``) while its shift, over
    every session up to the next change, still reaches ``z + POWER``
    (:func:`_needed`). Every step is
    judged so once all are placed: one that does not reach ``z`` is dropped,
    the weakest first (the sizes of the others are then estimated again);
    a dropped nightly alarm is returned as withdrawn, unless the level came
    back (:func:`_episode_end`: then the return is a change too).
    ``groups`` (e.g. the node list of each session)
    first removes the levels of groups that explain the spread
    (:func:`group_levels`); a periodic component is taken out too
    (:func:`periodic_levels`)."""
    s = settings or Settings()
    y = _levels(values, groups, s)
    floor = noise_floor(y)
    alarms = _nightly(y, s, resolution(y))
    retro = segment(y, s, floor)
    used = set()
    for k, c in enumerate(retro):
        near = [(abs(a.at - c.at), n) for n, a in enumerate(alarms)
                if n not in used and (a.shift > 0) == (c.shift > 0)
                and (c.at - MATCH <= a.at <= (c.end or c.at) + MATCH)]
        if near:
            hits = sorted(near)
            if c.kind == 'drift':
                inside = [n for _, n in hits]
                used.update(inside)
                retro[k] = dataclasses.replace(c, view='both',
                                               found=min(alarms[n].found for n in inside))
            else:
                n = hits[0][1]
                used.add(n)
                retro[k] = dataclasses.replace(c, view='both', found=alarms[n].found)
    # an alarm the whole history does not match, at the session of one of its
    # steps (the other direction: a figure that flips) is that step's session,
    # not a second change there
    placed = {c.at for c in retro if c.kind == 'step'}
    rest = [a for n, a in enumerate(alarms) if n not in used and a.at not in placed]
    steps = sorted([c for c in retro if c.kind == 'step'] + rest, key=lambda c: c.at)
    withdrawn, tried = [], set()
    while True:
        steps = refine(y, steps, s, floor)
        wide = _widenings(y, steps, s)
        weak = [c for c, w in zip(steps, wide) if c.z < _needed(c, s) * w]
        if not weak:
            break
        worst = min(weak, key=lambda c: c.z)     # the weakest first, then judge again
        if worst.found is not None and worst.at not in tried:
            tried.add(worst.at)
            end = _episode_end(y, steps, worst, s, floor)
            if end is not None:
                steps.append(Change(end, None, 0.0, 0.0, view='retrospective'))
                steps.sort(key=lambda c: c.at)
                continue
        if worst.found is not None:
            withdrawn.append(worst)
        steps.remove(worst)
    if s.drift_rows:
        steps, rows = _rows_of(y, steps, s, floor)
        retro = retro + [c for c in rows if c.kind == 'drift']
    kept = classify(y, steps, s, floor) + [c for c in retro if c.kind == 'drift'
                                            and abs(c.change) >= s.min_change]
    kept += noise_changes(y, kept, s)
    withdrawn = on_scale([c for c in withdrawn if abs(c.change) >= s.min_change], values)
    kept.sort(key=lambda c: c.at)
    return on_scale(kept, values), withdrawn
