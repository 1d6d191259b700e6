"""The changes of the newest sessions: which figures may have moved in their
newest sessions (:func:`moved`, a scan of a few vector operations that
spares the change detector the figures that cannot have changed), and the
changes the detector finds in them, ranked (:func:`recent_changes`): what
the morning page's first screen lists, as ``clusterproof changes`` finds
them."""

import dataclasses
import datetime
import math

import numpy as np

from clusterproof.analysis import findings
from clusterproof.analysis.detector import model, noise
from clusterproof.store import history

#: changes found in this many newest sessions are on the first screen
RECENT_SESSIONS = 14
#: sessions of each figure's history the change detector sees
SCAN_SESSIONS = 90
#: a figure is scanned when the mean of its newest sessions after some split
#: in the last RECENT_SESSIONS is this many standard errors from the mean
#: before it (:func:`moved`)
SCAN_Z = 3.0
#: variance of a median against a mean (Gaussian)
_HL = math.pi / 2


def recent_changes(histories, sessions=RECENT_SESSIONS, kept=None):
    """The changes found in the newest ``sessions`` sessions of each history,
    ranked by size x confidence: what ``clusterproof changes`` lists for
    them (the same :func:`detect`; nightly alarms since withdrawn left out).
    ``kept`` (``{key: changes}``, :func:`clusterproof.analysis.findings.current`)
    gives the changes of the whole history of some figures, as ``clusterproof
    changes`` lists them: those are taken, not judged again.
    Only the figures that :func:`moved` in those sessions are scanned (the
    others cost a few vector operations), each on its last
    :data:`SCAN_SESSIONS` values."""
    kept = kept or {}
    suspects = []
    for h in histories:
        if (h.key in kept
                or len(h.points) < model.DEFAULT_MIN_BEFORE + model.DEFAULT_MIN_AFTER):
            continue
        vals = np.asarray(h.values[-SCAN_SESSIONS:], float)
        if (vals > 0).all() and moved(np.log(vals)):
            suspects.append(dataclasses.replace(h, points=h.points[-SCAN_SESSIONS:]))
    found, _quiet, _noisy, _skipped = findings.detect(suspects)
    cut = {h.key: h.points[-min(sessions, len(h.points))].time
           for h in suspects + [h for h in histories if h.key in kept and len(h.points)]}
    keep = []
    for f, h in [*_with_history(found, suspects),
                 *((f, h) for h in histories if h.key in cut and h.key in kept
                   for f in kept[h.key])]:
        if not f['withdrawn'] and _time(f['at']) >= cut[h.key]:
            f['rank'] = abs(f['change']) * f['confidence']
            keep.append(f)
    keep.sort(key=lambda f: (-f['rank'], f['system'], f['test'], f['figure']))
    return keep


def moved(y, sessions=RECENT_SESSIONS):
    """True when a level shift may start in the newest ``sessions`` log values
    of ``y`` (at least ``detector.DEFAULT_MIN_AFTER`` sessions after it): for
    some split, the median of the sessions after it (of two middle values,
    the one nearer the level before) is :data:`SCAN_Z` standard errors or
    more from the mean of the sessions before it, those values clipped to 3
    noise units about the median (the noise from session-to-session
    differences, which a step does not widen). A step eight sessions old is
    seen as well as one of last night; one bad night alone is not. The
    detector itself decides; this only spares it the figures that cannot
    have changed."""
    n = len(y)
    need = model.DEFAULT_MIN_AFTER
    if n < need + 2:
        return False
    sigma = noise.diff_scale(y)
    mid = float(np.median(y))
    cs = np.cumsum(np.clip(y, mid - 3 * sigma, mid + 3 * sigma))
    for k in range(need, min(sessions, n - 2) + 1):
        base = cs[n - k - 1] / (n - k)
        last = np.sort(y[n - k:])
        lo, hi = last[(k - 1) // 2], last[k // 2]
        med = lo if abs(lo - base) <= abs(hi - base) else hi
        if abs(med - base) >= SCAN_Z * sigma * math.sqrt(_HL / k + 1.0 / (n - k)):
            return True
    return False


def _with_history(found, hists):
    by = {h.key: h for h in hists}
    for f in found:
        h = by.get(change_key(f))
        if h is not None:
            yield f, h


def change_key(f):
    """The key of the figure of a change found (that of its history)."""
    return history.key(f['system'], f['partition'], f['test'], f['figure'], f['flags'])


def _time(iso):
    return datetime.datetime.fromisoformat(iso).timestamp()
