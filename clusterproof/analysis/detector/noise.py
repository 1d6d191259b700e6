"""The noise model: a figure's noise from its own log values, robust to a
few outliers and to two clusters of values (:func:`robust_scale`, the
interquartile range / 1.349, about the median of each segment between
changes: :func:`pooled_scale`, :func:`_segments_scale`; of the
session-to-session differences where the level may have moved:
:func:`diff_scale`), a floor from the values' resolution and spread
(:func:`noise_floor`, :func:`resolution`), outliers (:func:`has_outliers`),
and how much a series that wanders widens the standard error of a shift
(:func:`inflation`)."""

import dataclasses
import math

import numpy as np

from clusterproof.analysis.detector.model import OUTLIER_Z

_IQR = 1.349
#: share of the spread of session-to-session differences a figure's noise
#: never goes below (:func:`noise_floor`)
FLOOR_SPREAD = 0.5
#: residuals are clipped at this many noise units for their autocorrelation
CLIP = 3.0
#: the most the autocorrelation of a figure's residuals widens the standard
#: error of a shift (:func:`inflation`)
INFLATION_MAX = 4.4


def _log(values):
    """The values a figure is judged on: their logarithms (a change is
    relative), or, for a figure with a value of 0 or less (:func:`linear`),
    the values in units of their typical magnitude (:func:`magnitude`): a
    change is then a share of that magnitude."""
    y = np.asarray(values, dtype=float)
    if np.any(~np.isfinite(y)):
        raise ValueError('change detection needs finite values')
    return y / magnitude(y) if linear(y) else np.log(y)


def linear(values):
    """True for a figure judged on its values, not their logarithms: one
    with a value of 0 or less (a difference, a count that can be 0), whose
    relative change is not defined."""
    return bool(np.any(np.asarray(values, dtype=float) <= 0))


def magnitude(y):
    """The typical magnitude of values ``y``: the median of their absolute
    values (else their largest, else 1)."""
    a = np.abs(np.asarray(y, dtype=float))
    return _median(a) or float(a.max()) or 1.0


def on_scale(changes, values):
    """``changes`` of a figure's ``values``, each marked ``linear`` when the
    figure is judged on its values (:func:`linear`; a change of noise is a
    ratio either way)."""
    if not linear(values):
        return changes
    return [c if c.kind == 'noise' else dataclasses.replace(c, linear=True) for c in changes]


def robust_scale(y):
    """The interquartile range of ``y`` (log values) / 1.349: the standard
    deviation for Gaussian noise, unmoved by a few outliers, and not fooled
    by two clusters of values (a median absolute deviation collapses when
    the median falls inside one of them)."""
    if len(y) < 4:
        return 0.0
    ys = np.sort(np.asarray(y, dtype=float))
    return (_quantile(ys, 0.75) - _quantile(ys, 0.25)) / _IQR


def _quantile(ys, q):
    """Linear-interpolated quantile of sorted ``ys`` (numpy's default; this
    runs every night for every figure, without numpy's per-call overhead)."""
    pos = (len(ys) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(ys) - 1)
    return float(ys[lo] + (ys[hi] - ys[lo]) * (pos - lo))


def _median(y):
    """The median as :func:`_quantile` of the sorted values gives it, from
    the two middle order statistics alone (a partition, not a sort)."""
    y = np.asarray(y, dtype=float).ravel()
    n = len(y)
    pos = (n - 1) * 0.5
    lo = int(pos)
    hi = min(lo + 1, n - 1)
    part = np.partition(y, (lo, hi))
    return float(part[lo] + (part[hi] - part[lo]) * (pos - lo))


def pooled_scale(y, start, end):
    """Robust scale of ``y[start:end]`` about the median of each segment:
    the history before ``start`` (the last change) counts too, so a
    segment of a few sessions still has a steady noise estimate."""
    parts = [y[start:end] - _median(y[start:end])]
    if start > 0:
        prev = y[:start]
        parts.insert(0, prev - _median(prev))
    return robust_scale(np.concatenate(parts))


def _floor(sigma, floor=1e-6):
    # A figure that never moved (a constant) still has the resolution of
    # its printed digits: do not divide by zero.
    return max(sigma, floor)


def noise_floor(y):
    """The smallest noise a figure's log values ``y`` can honestly claim:
    the resolution of its values (the smallest gap between two distinct
    values, as uniform rounding noise: gap / sqrt(12)) and a share of the
    spread of its session-to-session differences (the central 90 %, so
    neither a step nor a few outliers count; all of it when most
    differences are zero). A figure whose values are
    mostly one number (499, 515, 530, mostly 515) has an interquartile
    range of zero; its noise is not."""
    y = np.asarray(y, dtype=float)
    if len(y) < 4:
        return 1e-6
    d = np.sort(np.diff(y))
    k = max(1, len(d) // 20)
    core = d[k:len(d) - k] if len(d) - 2 * k >= 3 else d
    # When most differences are zero (the values repeat), their interquartile
    # range says nothing and their spread counts in full.
    share = 1.0 if d[len(d) // 4] == d[(3 * len(d)) // 4] else FLOOR_SPREAD
    spread = share * float(np.std(core)) / math.sqrt(2)
    return max(resolution(y), spread, 1e-6)


def resolution(y):
    """The resolution of log values ``y`` as noise: the smallest gap between
    two distinct values / sqrt(12) (uniform rounding). A property of how the
    figure is printed, so the nightly view uses it from the start."""
    gaps = np.diff(np.unique(np.asarray(y, dtype=float)))
    gaps = gaps[gaps > 1e-12]
    return max(float(gaps.min()) / math.sqrt(12) if len(gaps) else 0.0, 1e-6)


def diff_scale(y, floor=1e-6):
    """Noise of log values ``y`` whose level may have moved: the robust
    scale of the session-to-session differences / sqrt(2) (a level shift
    moves one difference only)."""
    return _floor(robust_scale(np.diff(y)) / math.sqrt(2), floor)


def has_outliers(y, sigma, outlier_z=OUTLIER_Z):
    y = np.asarray(y, dtype=float)
    return bool(np.any(np.abs(y - _median(y)) > outlier_z * _floor(sigma)))


def _segments_scale(y, bkps, floor):
    cuts = [0] + list(bkps) + [len(y)]
    res = np.concatenate([y[a:b] - _median(y[a:b]) for a, b in zip(cuts, cuts[1:]) if b > a])
    return _floor(robust_scale(res), floor)


def inflation(y, bkps):
    """How much wider the standard error of a shift is than for independent
    noise, from the residuals of ``y`` about a line fitted to each segment
    between ``bkps`` (a trend inside a segment does not count): the square
    root of their long-run variance factor 1 + 2 sum_k (1 - k / (L + 1))
    r_k, with r_k their autocorrelation at lag k (within segments) and
    Newey and West's bandwidth L = floor(4 (n / 100) ^ (2/9)) (Bartlett
    weights: the factor is never negative, and a seasonal cycle's positive
    and negative lags offset each other, where a wandering level's add up).
    The residuals are clipped at ``CLIP`` robust noise units (a few outliers
    do not decide it); the factor is lowered by two of its standard errors
    under independence (2 x 2 sqrt(sum_k w_k^2 / n)), so that independent
    noise is not widened by chance, and is at least 1 and at most
    ``INFLATION_MAX`` squared. A series that wanders (a balance, an
    exchange rate: a level not held between changes) has its shifts'
    standard errors widened, so its wanderings are not changes."""
    cuts = [0] + list(bkps) + [len(y)]
    parts = []
    for a, b in zip(cuts, cuts[1:]):
        if b - a >= 4:
            t = np.arange(b - a, dtype=float)
            parts.append(y[a:b] - np.polyval(np.polyfit(t, y[a:b], 1), t))
    n = sum(len(p) for p in parts)
    if n < 8:
        return 1.0
    lim = CLIP * robust_scale(np.concatenate(parts))
    if lim <= 0:
        return 1.0
    parts = [np.clip(p, -lim, lim) for p in parts]
    den = sum(float(np.dot(p, p)) for p in parts)
    lags = int(4 * (n / 100) ** (2 / 9))
    w = 1 - np.arange(1, lags + 1) / (lags + 1)
    r = [sum(float(np.dot(p[k:], p[:-k])) for p in parts if len(p) > k) / den
         for k in range(1, lags + 1)]
    factor = 1 + 2 * float(np.dot(w, r)) - 4 * math.sqrt(float(np.dot(w, w)) / n)
    return math.sqrt(min(max(factor, 1.0), INFLATION_MAX ** 2))
