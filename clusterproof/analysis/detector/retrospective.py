"""The retrospective view: the whole history segmented at once
(:func:`segment`): every boundary kept only while the shift across it
reaches ``z + POWER`` standard errors (the weakest dropped first, the
others judged again); a row of steps that a trend fits better is one drift
(:func:`_fit_drift`), and so is a single step that a ramp fits better, from
the night the ramp began (:func:`_fit_onset`: the onset of a slow
degradation)."""

import math

import numpy as np

from clusterproof.analysis.detector.classification import TRANSIENT
from clusterproof.analysis.detector.model import Change, Settings
from clusterproof.analysis.detector.noise import (
    CLIP, _median, _segments_scale, diff_scale, inflation)
from clusterproof.analysis.detector.segmentation import MIN_SEGMENT, _segment
from clusterproof.analysis.detector.significance import (
    POWER, agree, hl_shift, refine, shift_stderr)



def segment(y, settings=None, floor=1e-6):
    """The changes of the whole history ``y`` (log values), as a
    retrospective segmentation finds them: binary segmentation (:func:`binseg`)
    of all of ``y`` (values in noise units, penalty ``penalty x log(n)``),
    then every boundary kept only while the Hodges-Lehmann shift across its
    two neighbouring segments reaches ``z + POWER`` standard errors (the
    change is at least what the figure can detect at these session counts)
    and the sessions after it agree; the weakest boundary goes first and
    the others are judged again. A row of steps in one direction that a
    trend fits better (:func:`_drifts`) is one drift. Returns changes with
    ``view='retrospective'`` and ``found=None``."""
    s = settings or Settings()
    n = len(y)
    if n < 2 * MIN_SEGMENT:
        return []
    sigma0 = diff_scale(y, floor)
    bkps = list(_segment(y, sigma0, MIN_SEGMENT, s.penalty))
    while True:
        sigma = _segments_scale(y, bkps, floor) * inflation(y, bkps)
        judged = _judge_bounds(y, bkps, sigma, s)
        weak = [(z, b) for b, (z, ok) in zip(bkps, judged) if not ok]
        if not weak:
            break
        bkps.remove(min(weak)[1])
    sigma = _segments_scale(y, bkps, floor)
    cps = [Change(b, None, 0.0, 0.0, view='retrospective') for b in bkps]
    cps = refine(y, cps, s, sigma)
    return _drifts(y, cps, sigma, s, inflation(y, bkps))


def _judge_bounds(y, bkps, sigma, s):
    cuts = [0] + list(bkps) + [len(y)]
    out = []
    for i, b in enumerate(bkps):
        before = y[max(cuts[i], b - s.window):b]
        after = y[b:cuts[i + 2]][:s.window]
        shift = hl_shift(before, after)
        z = abs(shift) / shift_stderr(sigma, len(before), len(after))
        out.append((z, z >= s.z + POWER and agree(after, sigma)))
    return out


def _drifts(y, cps, sigma, s, wide=1.0):
    """Rows of two or more steps in one direction that a trend fits better
    become one drift: each row's span (from the segment before its first
    step to the segment after its last) is fitted by the steps (one level
    per segment) and by a continuous line bending at each step (flat before
    a start and after an end searched in the outer segments), both in noise
    units with ``penalty x log(n)`` per step, per bend and per end; the
    cheaper one is kept. A smooth rise, curved or not, is one drift.

    A single step (``s.onsets``) that a ramp fits better is one drift too,
    from its onset (:func:`_fit_onset`): a figure that held its level and
    then declined steadily (a storage target filling up, a fan failing) is
    a drift from the night the decline began, not a step in its middle;
    only on a figure that holds its level between changes (``wide``, the
    :func:`inflation` of its residuals, is 1): a level that wanders fits a
    line by chance."""
    out, i = [], 0
    while i < len(cps):
        j = i
        while j + 1 < len(cps) and (cps[j + 1].shift > 0) == (cps[i].shift > 0):
            j += 1
        if j > i or (s.onsets and wide <= 1.0):
            drift = _fit_drift(y, cps, i, j, sigma, s) if j > i else _fit_onset(y, cps, i, sigma, s)
            if drift is not None:
                out.append(drift)
                i = j + 1
                continue
        out.append(cps[i])
        i += 1
    return out


def _fit_drift(y, cps, i, j, sigma, s):
    lo = cps[i - 1].at if i > 0 else 0
    hi = cps[j + 1].at if j + 1 < len(cps) else len(y)
    seg = y[lo:hi] / sigma
    m = len(seg)
    pen = s.penalty * math.log(len(y))
    cuts = [c.at - lo for c in cps[i:j + 1]]
    steps = sum(float(((p - p.mean()) ** 2).sum())
                for p in np.split(seg, cuts)) + pen * len(cuts)
    t = np.arange(m, dtype=float)
    grid = max(1, m // 40)
    inner = cuts[1:-1]
    combos = [(a, b) for a in range(0, cuts[0], grid) for b in range(m, cuts[-1], -grid)
              if not any(k2 - k1 < 2 for k1, k2 in zip([a] + inner + [b], inner + [b]))]

    def design(a, b):
        # a continuous line: flat to a, bending at each inner step, flat after b
        knots = [a] + inner + [b]
        return (np.column_stack([np.ones(m)] + [np.clip(t - k, 0, None) for k in knots[:-1]]
                                + [np.clip(t - b, 0, None)]),
                pen * (len(knots) - 1 + (a > 0) + (b < m)))

    def fitted(a, b):
        X, charge = design(a, b)
        coef, *_ = np.linalg.lstsq(X, seg, rcond=None)
        fit = X @ coef
        return float(((seg - fit) ** 2).sum()) + charge, fit

    # every line at once (least squares by QR over the stack), then the
    # lines within rounding of the cheapest fitted one by one as before:
    # the first cheapest of the grid is the line kept
    costs = _line_costs(seg, t, inner, combos, m, pen)
    best = None
    if combos:
        near = costs <= costs.min() + 1e-6 * (1.0 + abs(costs.min()))
        for (a, b), close in zip(combos, near):
            if close:
                cost, fit = fitted(a, b)
                if best is None or cost < best[0]:
                    best = (cost, a, b, fit)
    if best is None or best[0] >= steps:
        return None
    _, a, b, fit = best
    total = (fit[min(b, m - 1)] - fit[a]) * sigma
    rate = total / max(b - a, 1)
    err = sigma * math.sqrt(12.0 / max(b - a, 2))     # of the whole change
    return Change(lo + a, None, total, err, a, m - b, view='retrospective', kind='drift',
                  end=lo + b, rate=rate)


def _fit_onset(y, cps, i, sigma, s):
    """The step ``cps[i]`` as a ramp, when one fits better: over the span
    from the change before it to the change after it (values in noise units,
    clipped at ``CLIP`` about the step's two levels, so a few outliers
    neither make nor unmake a ramp), the line flat before an onset ``a``,
    rising or falling steadily to an end ``b`` and flat after it, searched
    at every onset before the step and every end after it, longer than a
    transient (``TRANSIENT`` sessions: a shorter ramp is a step). The ramp's
    onset and end are charged ``penalty x log(n)`` each, the step's place
    once: a ramp pays one more than the step it replaces, as a row's line
    pays one more than its steps (:func:`_fit_drift`). Least squares of
    every line at once from prefix sums: the line is a level plus a slope
    times ``clip(t - a, 0, b - a)``. Returns a drift from ``a`` to ``b``,
    or None."""
    lo = cps[i - 1].at if i > 0 else 0
    hi = cps[i + 1].at if i + 1 < len(cps) else len(y)
    seg = y[lo:hi] / sigma
    m = len(seg)
    cut = cps[i].at - lo
    pen = s.penalty * math.log(len(y))
    before, after = seg[:cut], seg[cut:]
    level = np.where(np.arange(m) < cut, _median(before), _median(after))
    seg = level + np.clip(seg - level, -CLIP, CLIP)
    step = sum(float(((p - p.mean()) ** 2).sum()) for p in (seg[:cut], seg[cut:])) + pen
    a = np.arange(0, cut, dtype=float)[:, None]
    b = np.arange(cut + 1, m + 1, dtype=float)[None, :]
    L = b - a
    ok = L > TRANSIENT
    if not ok.any():
        return None
    t = np.arange(m, dtype=float)
    p0 = np.concatenate(([0.0], np.cumsum(seg)))
    p1 = np.concatenate(([0.0], np.cumsum(t * seg)))
    ai, bi = a.astype(int), b.astype(int)
    # x(t) = clip(t - a, 0, L): 1 .. L - 1 inside the ramp, L from b on
    sx = (L - 1) * L / 2 + (m - b) * L
    sxx = (L - 1) * L * (2 * L - 1) / 6 + (m - b) * L * L
    sxy = (p1[bi] - p1[ai + 1]) - a * (p0[bi] - p0[ai + 1]) + L * (p0[m] - p0[bi])
    cxx = sxx - sx * sx / m
    cxy = sxy - sx * p0[m] / m
    syy = float(((seg - seg.mean()) ** 2).sum())
    ss = np.where(ok & (cxx > 0), syy - cxy * cxy / np.where(cxx > 0, cxx, 1.0), np.inf)
    k = np.unravel_index(int(np.argmin(ss)), ss.shape)
    if not float(ss[k]) + 2 * pen < step:
        return None
    a0, b0 = int(a[k[0], 0]), int(b[0, k[1]])
    x = np.clip(t - a0, 0, b0 - a0)
    if s.abrupt_steps and _abrupt(y[lo:hi] / sigma, x, cut, pen):
        return None
    slope = float(np.dot(x - x.mean(), seg)) / float(np.dot(x - x.mean(), x - x.mean()))
    total = slope * (b0 - a0) * sigma
    err = sigma * math.sqrt(12.0 / max(b0 - a0, 2))     # of the whole change
    return Change(lo + a0, None, total, err, a0, m - b0, view='retrospective', kind='drift',
                  end=lo + b0, rate=total / (b0 - a0))


def _abrupt(seg, x, cut, pen):
    """True when the step at ``cut`` is abrupt inside the ramp ``x`` of
    ``seg`` (values in noise units, not clipped: clipped about the step's
    two levels, a ramp looks like a step): the ramp with a jump at ``cut``
    added costs less than the ramp alone by more than ``pen``, one more
    change's penalty. A slow degradation has no jump; a step on a slope
    keeps its place, not the slope's onset."""
    ones = np.ones(len(seg))
    jump = (np.arange(len(seg)) >= cut).astype(float)
    ramp, jumped = (_squares(seg, np.column_stack(cols)) for cols in
                    ((ones, x), (ones, x, jump)))
    return ramp - jumped > pen


def _squares(seg, design):
    """The squared error of the least-squares fit of ``seg`` by ``design``."""
    coef, *_ = np.linalg.lstsq(design, seg, rcond=None)
    return float(((seg - design @ coef) ** 2).sum())


def _line_costs(seg, t, inner, combos, m, pen, chunk=256):
    """The cost of each line of :func:`_fit_drift`'s grid (``combos`` of
    start and end), as its loop computes it but for every line at once
    (least squares by QR of the stacked designs); to within rounding, which
    the loop settles. A line that ends at the end of the span has no
    bend there (its column would be zeros)."""
    out = np.empty(len(combos))
    x = seg - seg.mean()            # the lines have a level: their residuals do not move
    ramps = np.clip(t[None, :] - np.asarray(inner, dtype=float)[:, None], 0, None).T
    ends = np.asarray([b for _, b in combos])
    for open_end in (False, True):
        idx = np.flatnonzero((ends < m) == open_end)
        for lo in range(0, len(idx), chunk):
            sel = idx[lo:lo + chunk]
            a = np.asarray([combos[i][0] for i in sel], dtype=float)[:, None]
            b = ends[sel].astype(float)[:, None]
            cols = [np.ones((len(sel), m)), np.clip(t[None, :] - a, 0, None)]
            cols += [np.broadcast_to(r, (len(sel), m)) for r in ramps.T]
            if open_end:
                cols.append(np.clip(t[None, :] - b, 0, None))
            q, _ = np.linalg.qr(np.stack(cols, axis=2))
            res = x[None, :] - np.einsum('cmp,cp->cm', q, np.einsum('cmp,m->cp', q, x))
            charge = pen * (len(inner) + 1 + (a[:, 0] > 0) + open_end)
            out[sel] = (res ** 2).sum(axis=1) + charge
    return out
