"""Changes of the noise alone (a node that became jittery, or was mended):
found on the session-to-session differences, which a level or a drift
does not move (:func:`noise_changes`, ``kind='noise'``); a side whose
differences follow each other is a smooth curve, not a noise
(:func:`_lag1`)."""

import math

import numpy as np

from clusterproof.analysis.detector.model import Change, Settings
from clusterproof.analysis.detector.noise import CLIP, _median, resolution, robust_scale
from clusterproof.analysis.detector.segmentation import _var_binseg
from clusterproof.analysis.detector.significance import POWER

#: a change of noise (a node becoming jittery, a shared file system busy
#: from one day on): segments of session-to-session differences at least
#: this long (a noise needs more sessions than a level to be known)
NOISE_SEGMENT = 8
#: the smallest change of noise listed: the noise this many times larger (or
#: smaller); less is within what a noise estimate of a few sessions varies by
NOISE_RATIO = 1.5
#: session-to-session differences whose lag-1 autocorrelation is above this
#: follow each other: they measure a slope that bends (a smooth curve), not a
#: noise (-0.5 for noise about a level, 0 for a random walk, near 1 for a
#: smooth curve; this is halfway from a walk to a curve)
SMOOTH = 0.5
#: a change of noise must reach ``z`` + this many standard errors of its log
#: ratio
NOISE_POWER = POWER
#: variance of the log of the root mean square of n session-to-session
#: differences, times n: 0.5 for independent Gaussian values, x 1.5 for the
#: dependence of neighbouring differences (their squares correlate by 0.25)
_NOISE_VAR = 0.5 * 1.5


def noise_changes(y, changes, settings=None):
    """The changes of noise of log values ``y`` whose changes of level are
    ``changes`` (steps, transients, drifts): a node that became jittery is
    a change an admin wants to see although the level held. Found on the
    session-to-session differences (a level, a drift or a slow wander does
    not move their spread; the differences across a change of level or a
    transient's ends are left out) about their median, in robust noise
    units of the whole series, clipped at 2 x ``CLIP`` for placing the
    boundaries and at ``CLIP`` for judging them (a few outliers or flips
    neither place a boundary nor make a noise): binary segmentation with
    the Gaussian cost of a mean and a variance (:func:`_var_binseg`,
    ``penalty x log(n)`` per boundary, segments of ``NOISE_SEGMENT`` or
    more); then each boundary is kept only while the spreads of the
    differences on its two sides (their standard deviations, and their
    robust scales) differ by ``NOISE_RATIO`` or more in one direction, by
    ``z + NOISE_POWER`` standard errors of the log ratio of the standard
    deviations (the weakest goes first). A spread below the values'
    resolution (:func:`resolution`, for a difference of two values) counts
    as that resolution: a figure printed with few digits does not become
    quiet. A side whose differences follow each other (lag-1
    autocorrelation above ``SMOOTH``: a smooth curve, whose differences
    are its slope) has no noise to change: no change of noise there.
    Returns changes of ``kind='noise'``: ``shift`` is the log of the
    ratio of the noise after to before."""
    s = settings or Settings()
    cut = set()
    for c in changes:
        if c.kind in ('step', 'transient'):
            cut.add(c.at)
            if c.kind == 'transient' and c.end is not None:
                cut.add(c.end)
    keep = np.asarray([t not in cut for t in range(1, len(y))], dtype=bool)
    d = np.diff(y)[keep]
    where = np.arange(1, len(y))[keep]      # the session each difference ends at
    n = len(d)
    if n < 2 * NOISE_SEGMENT:
        return []
    scale = robust_scale(d)
    if scale <= 0:
        return []
    u = (d - _median(d)) / scale
    # the spread of a difference of two values printed with few digits
    res = math.sqrt(2) * resolution(y) / scale
    bkps = _var_binseg(np.clip(u, -2 * CLIP, 2 * CLIP), NOISE_SEGMENT, s.penalty * math.log(n))
    u = np.clip(u, -CLIP, CLIP)
    while bkps:
        judged = []
        cuts = [0] + bkps + [n]
        for i, b in enumerate(bkps):
            before, after = u[cuts[i]:b], u[b:cuts[i + 2]]
            ratio = math.log(max(float(np.std(after)), res) / max(float(np.std(before)), res))
            robust = math.log(max(robust_scale(after), res) / max(robust_scale(before), res))
            err = math.sqrt(_NOISE_VAR * (1.0 / len(before) + 1.0 / len(after)))
            z = abs(ratio) / err
            ok = (z >= s.z + NOISE_POWER and min(abs(ratio), abs(robust)) >= math.log(NOISE_RATIO)
                  and (ratio > 0) == (robust > 0)
                  and max(_lag1(d[cuts[i]:b]), _lag1(d[b:cuts[i + 2]])) <= SMOOTH)
            judged.append((z, b, ratio, err, len(before), len(after), ok))
        weak = [j for j in judged if not j[-1]]
        if not weak:
            return [Change(int(where[b]), None, ratio, err, nb, na, view='retrospective',
                           kind='noise') for _, b, ratio, err, nb, na, _ in judged]
        bkps.remove(min(weak)[1])
    return []


def _lag1(d):
    """The lag-1 autocorrelation of ``d`` (0 for fewer than 3 values)."""
    d = np.asarray(d, dtype=float) - float(np.mean(d))
    den = float(np.dot(d, d))
    return float(np.dot(d[1:], d[:-1])) / den if len(d) > 2 and den > 0 else 0.0
