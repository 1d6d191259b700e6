"""Change points in the history of each figure, as the nightly run finds them.

A figure's history is its values in session order. Every night the detector
sees only the history up to that night, as a nightly run does, and asks:
did the figure move to a new level in the last few sessions?

1. Its noise is estimated from its own history: a robust scale (the
   interquartile range / 1.349) of the log values about the median of each
   segment between changes, so a relative change is a difference and a few
   outliers do not widen it.
2. Cheap screen: is the Hodges-Lehmann shift (the median of all differences
   between recent and earlier values) of the last ``min_after`` sessions
   against the rest large enough to look at? Most nights stop here.
3. Binary segmentation (ruptures' ``Binseg``, squared error cost on the
   values divided by the noise, penalty ``penalty x log(n)``; computed by
   :func:`binseg` over prefix sums) places the change points of the window;
   the newest one with at least ``min_after`` sessions after it is the
   candidate.
4. Confirmation: the Hodges-Lehmann shift between the sessions before and
   after the candidate, divided by its standard error, must reach ``z``
   (``EARLY`` x ``z`` while only ``min_after`` sessions follow), and the
   sessions after it must agree with each other (:func:`agree`: two bad
   nights among good ones are not a new level). A figure whose history has
   outliers (values more than ``outlier_z`` noise units from its median: a
   busy node, a cold cache) needs one more session after a change.

A reported change starts a new segment: later nights look for the next one.
The size of a change is re-estimated from every session up to the next
change (or the newest), with its standard error and a confidence (one minus
the two-sided p-value of the shift).

A second view, retrospective, segments the whole history at once
(:func:`segment`): a change the nightly screen did not raise in its first
nights, or years of imported history, is found there; a row of steps that a
trend fits better is one drift, and so is a single step that a ramp fits
better, from the night the ramp began (the onset of a slow degradation).
:func:`find` matches the two views, says which found each change, and
withdraws the nightly alarms that later sessions disprove. The noise has
a floor from the values' resolution and spread (:func:`noise_floor`), and
the levels of the node lists are taken out when they explain the spread
(:func:`group_levels`), and so is a periodic component
(:func:`periodic_levels`: a weekly cron job, a file system's scheduled
scrub), which must not raise changes.

Not every move is a change of level (:func:`classify`): a short excursion
after which the level comes back is one transient, a move to a level the
figure keeps going to and leaving is a flip (listed as nothing), a series
that wanders has its shifts' standard errors widened by the long-run
variance of its residuals (:func:`inflation`), and nothing smaller than
``Settings.min_change`` (the smallest change that matters) is listed.

A change of the noise alone (a node that became jittery, or was mended) is
a change too (:func:`noise_changes`, ``kind='noise'``): found on the
session-to-session differences, which a level or a drift does not move.

A figure's minimum detectable change follows from its noise: the shift whose
statistic reaches ``z`` with 95 % probability after ``min_after + 1``
sessions.
A figure whose minimum detectable change exceeds ``max_detectable`` is too
noisy: only its changes larger than that are listed.

The thresholds were tuned on seeds of ``scripts/bench_detection.py`` that
its reported figures do not use; ``docs/changes.md`` has the measured
recall, delay and false alarm rate per noise model.
"""

import dataclasses
import math
from dataclasses import dataclass

import numpy as np


#: standard errors of the shift a change must reach
DEFAULT_Z = 4.2
#: the screen's threshold (a fraction of ``z``)
SCREEN = 0.7
#: sessions after a change before it is reported
DEFAULT_MIN_AFTER = 2
#: with only ``min_after`` sessions, the shift must reach ``z`` x this
EARLY = 1.3
#: the sessions after a change must agree: their range (the most extreme
#: third left out) within this many noise units
AGREE = 5.0
#: sessions before the first judgement of a figure (or after a change)
DEFAULT_MIN_BEFORE = 8
#: sessions of history one night's segmentation sees
DEFAULT_WINDOW = 60
#: segmentation penalty, in units of log(n) (the values are in noise units)
DEFAULT_PENALTY = 3.0
#: a value this many noise units from the median is an outlier
OUTLIER_Z = 6.0
#: minimum detectable change above which a figure is too noisy to judge
DEFAULT_MAX_DETECTABLE = 0.25
#: share of the spread of session-to-session differences a figure's noise
#: never goes below (:func:`noise_floor`)
FLOOR_SPREAD = 0.5
#: a change kept by the retrospective view (or a nightly alarm re-judged on
#: every later session) must be at least the change detectable with 95 %
#: probability at its own session counts: its shift reaches ``z`` + this
#: many standard errors
POWER = 1.645
#: a nightly alarm and a retrospective change this many sessions apart (in
#: the same direction) are one change
MATCH = 3
#: segments of the retrospective view are at least this long
MIN_SEGMENT = 3
#: sessions of a group (a node list) before its level is its own
MIN_GROUP = 4
#: the groups explain the spread when it shrinks below this share
GROUP_GAIN = 0.7
#: the longest period of a periodic component taken out (a cron job or a
#: file system's scheduled work repeats weekly or monthly: up to a month of
#: nightly sessions); a period needs 4 cycles in the history
PERIOD_MAX = 31
PERIOD_CYCLES = 4
#: an excursion of at most this many sessions after which the level comes
#: back (the shift across it stays under ``z`` standard errors) is one
#: transient, not two changes of level
TRANSIENT = 5
#: a move to a level the figure went to and came back from this many times
#: elsewhere, staying ``FLIP_RUN`` sessions in a row or more each time, is a
#: flip between two levels (two node types, a cache that is warm or not),
#: not a change
FLIP_VISITS = 3
FLIP_RUN = 2
#: a session is at a level when within this many noise units of it (and
#: nearer to it than to the level before the move)
FLIP_NEAR = 3.0
#: the most the autocorrelation of a figure's residuals widens the standard
#: error of a shift (:func:`inflation`)
INFLATION_MAX = 4.4
#: residuals are clipped at this many noise units for their autocorrelation
CLIP = 3.0
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
#: variance factor of the Hodges-Lehmann shift against the mean (Gaussian)
_HL_VAR = math.pi / 3
_IQR = 1.349


@dataclass
class Settings:
    z: float = DEFAULT_Z
    min_after: int = DEFAULT_MIN_AFTER
    min_before: int = DEFAULT_MIN_BEFORE
    window: int = DEFAULT_WINDOW
    penalty: float = DEFAULT_PENALTY
    outlier_z: float = OUTLIER_Z
    max_detectable: float = DEFAULT_MAX_DETECTABLE
    #: the smallest relative change that matters (0.01: one percent): a
    #: change, transient or drift smaller than it is never listed
    min_change: float = 0.0
    #: take a periodic component out first (:func:`periodic_levels`)
    periodic: bool = True
    #: a single step that a ramp fits better is the onset of a slow change
    #: (:func:`_drifts`)
    onsets: bool = True


@dataclass
class Change:
    """A change point: ``at`` is the index of the first session after it.

    ``view`` says who found it: ``nightly`` (a nightly run would have raised
    it, on the night ``found``), ``retrospective`` (the segmentation of the
    whole history; ``found`` is None) or ``both``. A ``drift`` (``kind``) is
    a slow change from ``at`` to ``end`` (exclusive) at ``rate`` (log units
    per session); its ``shift`` is the whole change. A ``transient`` is an
    excursion from ``at`` to ``end`` (exclusive, at most ``TRANSIENT``
    sessions) after which the level came back: its ``shift`` is the
    excursion's size, and it is not a change of level. A ``noise`` change
    is one of the noise alone (retrospective): its ``shift`` is the log of
    the ratio of the noise after to before."""
    at: int
    found: int | None       # index of the session that revealed it (the night)
    shift: float            # in log units: the size is exp(shift) - 1
    stderr: float           # standard error of the shift (log units)
    n_before: int = 0
    n_after: int = 0
    view: str = 'nightly'
    kind: str = 'step'
    end: int | None = None
    rate: float = 0.0

    @property
    def change(self):
        """Signed relative size: -0.079 is 7.9 % lower."""
        return math.expm1(self.shift)

    @property
    def uncertainty(self):
        """Standard error of the relative size."""
        return abs(math.exp(self.shift)) * self.stderr

    @property
    def z(self):
        return abs(self.shift) / self.stderr if self.stderr > 0 else math.inf

    @property
    def confidence(self):
        """One minus the two-sided p-value of the shift (normal approximation)."""
        return 1.0 - math.erfc(self.z / math.sqrt(2))

    @property
    def delay(self):
        return None if self.found is None else self.found - self.at


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


def hl_shift(before, after):
    """Hodges-Lehmann shift: the median of every ``after - before`` difference."""
    return _median(np.subtract.outer(np.asarray(after), np.asarray(before)).ravel())


def shift_stderr(sigma, n_before, n_after):
    return sigma * math.sqrt(_HL_VAR * (1.0 / n_after + 1.0 / n_before))


def has_outliers(y, sigma, outlier_z=OUTLIER_Z):
    y = np.asarray(y, dtype=float)
    return bool(np.any(np.abs(y - _median(y)) > outlier_z * _floor(sigma)))


def minimum_detectable(rel_noise, settings=None, n_before=None):
    """The smallest relative change found with 95 % probability
    ``settings.min_after + 1`` sessions after it (within as many nights),
    for a figure with this noise."""
    s = settings or Settings()
    if not math.isfinite(rel_noise):
        return float('nan')
    n_after = s.min_after + 1
    n_before = n_before or (s.window - n_after)
    sigma = math.log1p(rel_noise)
    return math.expm1((s.z + 1.645) * shift_stderr(sigma, n_before, n_after))


def _log(values):
    y = np.asarray(values, dtype=float)
    if np.any(~np.isfinite(y)) or np.any(y <= 0):
        raise ValueError('change detection needs finite positive values')
    return np.log(y)


def _segment(seg, sigma, min_size, penalty):
    """Change points of ``seg``: indices of the first value of each new
    segment, by binary segmentation (:func:`binseg`) of the values in noise
    units with penalty ``penalty x log(n)``."""
    return binseg(seg / sigma, min_size, penalty * math.log(len(seg)))


def binseg(x, min_size, pen):
    """Binary segmentation of ``x`` with the squared-error cost, as
    ``ruptures.Binseg(model='l2', min_size=min_size, jump=1).fit(x)
    .predict(pen=pen)[:-1]`` places them (the same change points, in the same
    order of choice and ties), over prefix sums: each split of a segment is
    one vectorised pass instead of one cost per candidate. The gains of the
    candidates within rounding of the best are computed again as ruptures
    computes them, so a near tie falls as it falls there."""
    x = np.asarray(x, dtype=float)
    n = len(x)
    if min_size > n:
        raise ValueError(f'binary segmentation of {n} values with segments of '
                         f'{min_size} or more')
    col = x.reshape(-1, 1)
    c = x - x.mean()
    s1 = np.concatenate(([0.0], np.cumsum(c)))
    s2 = np.concatenate(([0.0], np.cumsum(c * c)))
    tol = 1e-10 * (float(s2[-1]) + 1.0)

    def cost(a, b):
        # ruptures' CostL2.error, operation for operation
        return col[a:b].var(axis=0).sum() * (b - a)

    cache = {}

    def best_split(a, b):
        """``[bkp, gain, exact]`` of the best split of ``x[a:b]``: the gain
        from the prefix sums (within ``tol`` of ruptures'), ``exact`` once
        it is computed as ruptures computes it."""
        if (a, b) in cache:
            return cache[a, b]
        lo, hi = a + min_size, b - min_size
        if hi < lo:
            cache[a, b] = [None, 0, True]
            return cache[a, b]
        k = np.arange(lo, hi + 1)
        left = s2[k] - s2[a] - (s1[k] - s1[a]) ** 2 / (k - a)
        right = s2[b] - s2[k] - (s1[b] - s1[k]) ** 2 / (b - k)
        loss = left + right
        best = loss.min()
        near = k[loss <= best + tol]
        if len(near) == 1:
            whole = s2[b] - s2[a] - (s1[b] - s1[a]) ** 2 / (b - a)
            cache[a, b] = [int(near[0]), float(whole - best), False]
        else:
            cache[a, b] = [*exact(a, b, near), True]
        return cache[a, b]

    def exact(a, b, near):
        whole = cost(a, b)
        gain, j = max((whole - cost(a, int(j)) - cost(int(j), b), int(j)) for j in near)
        return j, gain

    def settle(split, a, b):
        if not split[2]:
            split[1] = exact(a, b, [split[0]])[1]
            split[2] = True
        return split[1]

    bkps = [n]
    while True:
        pairs = list(zip([0] + bkps, bkps))
        splits = [best_split(a, b) for a, b in pairs]
        top = max(r[1] for r in splits)
        # near ties of the best gain, and a best gain near the penalty, are
        # decided on the gains as ruptures computes them
        close = [(a, b, r) for (a, b), r in zip(pairs, splits) if r[1] >= top - 2 * tol]
        if len(close) > 1 or abs(top - pen) <= 2 * tol:
            for a, b, r in close:
                settle(r, a, b)
        # the others are below these: the first best of these is ruptures' choice
        bkp, gain, _ = max((r for _, _, r in close), key=lambda r: r[1])
        if bkp is None or not gain > pen:
            break
        bkps.append(bkp)
        bkps.sort()
    return bkps[:-1]


def moved_enough(y, start, settings, floor=1e-6):
    """The cheap part of one night's decision: ``(seg, offset, sigma, need)``
    when the newest sessions of ``y[start:]`` (log values up to tonight)
    moved enough to look closer, else None. ``need`` is the number of
    sessions a change needs after it (one more for a figure with outliers)."""
    s = settings
    lo = max(0, len(y) - s.window)
    seg = y[max(start, lo):]
    n = len(seg)
    need = s.min_after
    if n < s.min_before + need:
        return None
    sigma = _floor(pooled_scale(y[lo:], max(start - lo, 0), len(y) - lo - need), floor)
    if has_outliers(seg[:-need], sigma, s.outlier_z):
        need += 1
        if n < s.min_before + need:
            return None
    before, after = seg[:-need], seg[-need:]
    if abs(hl_shift(before, after)) < SCREEN * s.z * shift_stderr(sigma, len(before), need):
        return None
    return seg, len(y) - n, sigma, need


def judge_night(y, start, settings, floor=1e-6):
    """The decision of one night: a :class:`Change` (index relative to
    ``y``) if the newest sessions of ``y[start:]`` moved, else None.
    ``y`` holds log values up to and including tonight."""
    s = settings
    screened = moved_enough(y, start, s, floor)
    if screened is None:
        return None
    seg, offset, sigma, need = screened
    n = len(seg)
    for b in reversed(_segment(seg, sigma, s.min_after, s.penalty)):
        if n - b < need:
            continue
        if b < s.min_before:
            break
        before, after = seg[:b], seg[b:]
        shift = hl_shift(before, after)
        err = shift_stderr(sigma, len(before), len(after))
        z = s.z * (EARLY if len(after) == s.min_after else 1.0)
        if abs(shift) >= z * err and agree(after, sigma):
            return Change(offset + b, len(y) - 1, shift, err, len(before), len(after))
        break
    return None


def agree(after, sigma):
    """True when the sessions after a change agree with each other: a new
    level, not two bad nights (a busy node) among good ones. The most
    extreme third (from the median) is left out."""
    after = np.asarray(after)
    drop = (len(after) - 1) // 3
    if drop:
        order = np.argsort(np.abs(after - _median(after)))
        after = after[order[:len(after) - drop]]
    return float(after.max() - after.min()) <= AGREE * sigma


def scan(values, settings=None):
    """Every alarm of ``values`` (oldest first) as the nightly runs would
    have raised them: each night sees the history up to that night only.
    Sizes are then re-estimated from all sessions up to the next change.
    (:func:`find` adds the retrospective view and withdraws the alarms
    that later sessions disprove.)"""
    s = settings or Settings()
    y = _log(values)
    floor = resolution(y)
    return refine(y, _nightly(y, s, floor), s, floor)


def _nightly(y, s, floor):
    """Every night's :func:`judge_night`, oldest first, each reported change
    starting a new segment; a night is judged only when
    :func:`_may_move_enough` says its screen can pass."""
    found = []
    start = 0
    may = _may_move_enough(y, s, floor, 0)
    for t in range(s.min_before + s.min_after - 1, len(y)):
        if not may[t]:
            continue
        c = judge_night(y[:t + 1], start, s, floor)
        if c is not None:
            found.append(c)
            start = c.at
            # the nights whose window reaches back before the new segment
            if t + 1 < start + s.window:
                span = slice(t + 1, start + s.window)
                may[span] = _may_move_enough(y, s, floor, start)[span]
    return found


#: relative slack of :func:`_may_move_enough`'s threshold: far more than the
#: rounding of its sums, far less than any difference a screen could notice
_SLACK = 1e-6


def _rows(y, first, end, width):
    """``y[first[r]:end[r]]`` of every row ``r``, sorted, padded with NaN
    (which sorts last) to ``width``."""
    j = np.arange(width)
    idx = first[:, None] + j
    ok = idx < end[:, None]
    return np.sort(np.where(ok, y[np.minimum(idx, len(y) - 1)], np.nan), axis=1)


def _order(rows, k):
    return np.take_along_axis(rows, k[:, None], axis=1)[:, 0]


def _row_quantile(rows, m, q):
    """:func:`_quantile` of each sorted row of ``m`` values."""
    pos = (m - 1) * q
    k = pos.astype(int)
    a, b = _order(rows, k), _order(rows, np.minimum(k + 1, m - 1))
    return a + (b - a) * (pos - k)


def _may_move_enough(y, s, floor, start):
    """For each night ``t`` (with the last change at ``start``), False when
    :func:`moved_enough` of ``y[:t + 1]`` certainly does not pass; computed for
    every night at once (with ``start`` > 0, for the nights whose window
    reaches back before ``start`` only: the others are as for 0).

    Each night's noise is computed as the screen computes it, over rows of
    the window's values sorted at once; the Hodges-Lehmann shift is known
    to be below the threshold when more than half of its differences are
    below it and more than half above its negative (counts); the threshold
    is lowered by a relative ``_SLACK`` for the rounding of the sums. With
    one more session after the change (a figure with outliers in the
    window) the older sessions lose their newest, which the counts leave
    out. A night that may pass is judged in full."""
    n_all = len(y)
    need = s.min_after
    may = np.zeros(n_all, dtype=bool)
    last = n_all if start == 0 else min(n_all, start + s.window)
    L = np.arange(max(start + s.min_before + need, need + 1), last + 1)   # sessions tonight
    if need < 1 or s.window < s.min_before + need or len(L) == 0:
        may[:] = True
        return may
    lo = np.maximum(0, L - s.window)
    first = np.maximum(lo, start)
    m = L - need - first                          # sessions before the newest ``need``
    if start == 0:      # the windows slide: rows of one view of the history
        w = s.window - need
        pad = np.concatenate((np.full(w, np.nan), y))
        rows = np.sort(np.lib.stride_tricks.sliding_window_view(pad, w)[L - need], axis=1)
    else:
        rows = _rows(y, first, L - need, s.window)
    med = _row_quantile(rows, m, 0.5)
    res = rows - med[:, None]
    cnt = m
    if start > 0:                                 # the sessions before ``start`` count too
        prev = _rows(y, lo, np.full_like(lo, start), s.window)
        m0 = np.maximum(start - lo, 0)
        has = m0 > 0
        med0 = np.where(has, _row_quantile(prev, np.maximum(m0, 1), 0.5), 0.0)
        res = np.sort(np.concatenate((res, prev - med0[:, None]), axis=1), axis=1)
        cnt = m + m0
    scale = np.where(cnt >= 4, (_row_quantile(res, cnt, 0.75) - _row_quantile(res, cnt, 0.25))
                     / _IQR, 0.0)
    sigma = np.maximum(scale, max(floor, 1e-6))
    newest = np.stack([y[L - 1 - i] for i in range(need + 1)])
    # the shift is the median of every difference of a newest session with
    # an older one: certainly below the threshold ``t`` when more than half
    # of them are below ``t`` and more than half above ``-t`` (the padding
    # compares false)
    t = (SCREEN * s.z * sigma * np.sqrt(_HL_VAR * (1.0 / need + 1.0 / m)) * (1 - _SLACK))[:, None]
    below = sum(np.count_nonzero(rows > a[:, None] - t, axis=1) for a in newest[:need])
    above = sum(np.count_nonzero(rows < a[:, None] + t, axis=1) for a in newest[:need])
    half = (need * m) // 2
    small = (below > half) & (above > half)
    # a figure with outliers in the window needs one more session after a change
    spread = np.maximum(_order(rows, m - 1) - med, med - rows[:, 0])
    limit = s.outlier_z * sigma
    may_t = (spread <= limit * (1 + _SLACK)) & ~small
    # with one more session after the change, the older sessions lose their
    # newest (``gone``): counted as above without it
    dirty = np.flatnonzero((spread > limit * (1 - _SLACK)) & (m - 1 >= s.min_before))
    if len(dirty):
        rows, m1, newest = rows[dirty], m[dirty] - 1, newest[:, dirty]
        gone = y[L[dirty] - need - 1][:, None]
        t = (SCREEN * s.z * sigma[dirty] * np.sqrt(_HL_VAR * (1.0 / (need + 1) + 1.0 / m1))
             * (1 - _SLACK))[:, None]
        below = sum(np.count_nonzero(rows > a[:, None] - t, axis=1)
                    - (gone > a[:, None] - t)[:, 0] for a in newest)
        above = sum(np.count_nonzero(rows < a[:, None] + t, axis=1)
                    - (gone < a[:, None] + t)[:, 0] for a in newest)
        half = ((need + 1) * m1) // 2
        may_t[dirty] |= ~((below > half) & (above > half))
    may[L - 1] = may_t
    return may


def refine(y, found, settings, floor=1e-6):
    """Sizes from every session between neighbouring changes (the robust
    noise of the segment before each change)."""
    out = []
    bounds = [0] + [c.at for c in found] + [len(y)]
    for i, c in enumerate(found):
        before = y[max(bounds[i], c.at - settings.window):c.at]
        after = y[c.at:bounds[i + 2]][:settings.window]
        sigma = _floor(robust_scale(before), floor)
        shift = hl_shift(before, after)
        out.append(dataclasses.replace(
            c, shift=shift, stderr=shift_stderr(sigma, len(before), len(after)),
            n_before=len(before), n_after=len(after)))
    return out


# -- the retrospective view: the whole history at once ----------------------------------

def diff_scale(y, floor=1e-6):
    """Noise of log values ``y`` whose level may have moved: the robust
    scale of the session-to-session differences / sqrt(2) (a level shift
    moves one difference only)."""
    return _floor(robust_scale(np.diff(y)) / math.sqrt(2), floor)


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
    slope = float(np.dot(x - x.mean(), seg)) / float(np.dot(x - x.mean(), x - x.mean()))
    total = slope * (b0 - a0) * sigma
    err = sigma * math.sqrt(12.0 / max(b0 - a0, 2))     # of the whole change
    return Change(lo + a0, None, total, err, a0, m - b0, view='retrospective', kind='drift',
                  end=lo + b0, rate=total / (b0 - a0))


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
    every session up to the next change, still reaches ``z``. Every step is
    judged so once all are placed: one that does not reach ``z`` is dropped,
    the weakest first (the sizes of the others are then estimated again);
    a dropped nightly alarm is returned as withdrawn, unless the level came
    back (:func:`_episode_end`: then the return is a change too). ``groups`` (e.g. the node list of each session)
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
        wide = inflation(y, [c.at for c in steps])
        weak = [c for c in steps if c.z < s.z * wide]
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
    kept = classify(y, steps, s, floor) + [c for c in retro if c.kind == 'drift'
                                            and abs(c.change) >= s.min_change]
    kept += noise_changes(y, kept, s)
    withdrawn = [c for c in withdrawn if abs(c.change) >= s.min_change]
    kept.sort(key=lambda c: c.at)
    return kept, withdrawn


def classify(y, steps, settings=None, floor=1e-6):
    """What is listed of the ``steps`` of log values ``y`` (oldest first):
    each short excursion that came back as one transient
    (:func:`_transients`), none of the moves to a level the figure keeps
    returning to (:func:`_flips`), and nothing smaller than
    ``settings.min_change``."""
    s = settings or Settings()
    out = _transients(y, steps, s, floor)
    out = [c for c in out if not _flips(y, steps, c, floor)]
    return [c for c in out if abs(c.change) >= s.min_change]


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


def _var_binseg(u, min_size, pen):
    """Binary segmentation of ``u`` with the Gaussian cost of a segment's
    mean and variance (m values cost m log of their variance about their
    mean), ``pen`` per boundary."""
    n = len(u)
    s1 = np.concatenate(([0.0], np.cumsum(u)))
    s2 = np.concatenate(([0.0], np.cumsum(u * u)))
    tiny = 1e-12

    def costs(a, k):
        m = k - a
        return m * np.log(np.maximum((s2[k] - s2[a] - (s1[k] - s1[a]) ** 2 / m) / m, tiny))

    def best(a, b):
        k = np.arange(a + min_size, b - min_size + 1)
        if len(k) == 0:
            return None, 0.0
        right = (b - k) * np.log(np.maximum(
            (s2[b] - s2[k] - (s1[b] - s1[k]) ** 2 / (b - k)) / (b - k), tiny))
        loss = costs(a, k) + right
        j = int(np.argmin(loss))
        return int(k[j]), float(costs(a, np.asarray([b]))[0]) - float(loss[j])

    bkps = [n]
    while True:
        cands = [best(a, b) for a, b in zip([0] + bkps, bkps)]
        bkp, gain = max(cands, key=lambda c: c[1])
        if bkp is None or not gain > pen:
            break
        bkps.append(bkp)
        bkps.sort()
    return bkps[:-1]


def _transients(y, steps, s, floor):
    """``steps`` with each excursion that came back made one transient: two
    neighbouring steps of opposite directions at most ``TRANSIENT``
    sessions apart, where the shift from the sessions before the first to
    those after the second stays under ``z`` standard errors (the level
    came back). A short spike (three sessions up, then back) is one
    transient of its size, not two changes of level."""
    out, i = [], 0
    while i < len(steps):
        c = steps[i]
        if i + 1 < len(steps):
            d = steps[i + 1]
            if d.at - c.at <= TRANSIENT and (c.shift > 0) != (d.shift > 0):
                prev = steps[i - 1].at if i > 0 else 0
                nxt = steps[i + 2].at if i + 2 < len(steps) else len(y)
                before = y[max(prev, c.at - s.window):c.at]
                after = y[d.at:nxt][:s.window]
                sigma = _floor(robust_scale(before), floor)
                net = hl_shift(before, after)
                if abs(net) < s.z * shift_stderr(sigma, len(before), len(after)):
                    out.append(dataclasses.replace(
                        c, kind='transient', end=d.at, n_after=d.at - c.at,
                        found=c.found if c.found is not None else d.found,
                        view=c.view if c.view == d.view else 'both'))
                    i += 2
                    continue
        out.append(c)
        i += 1
    return out


def _flips(y, steps, c, floor):
    """True when ``c`` (a step or transient) goes to a level the figure
    keeps returning to: the figure went from the level before ``c`` to the
    new one ``FLIP_VISITS`` times or more (outside the sessions ``c`` holds
    it, and ``c`` itself when the figure left that level again). A session is at a level when nearer to it than to the
    other and within ``FLIP_NEAR`` noise units of it; a stay at a level
    counts when it lasts ``FLIP_RUN`` sessions or more (one odd session
    neither ends nor makes one). Levels less than 2 x ``FLIP_NEAR`` noise
    units apart cannot be told apart session by session: never a flip. A figure flipping between two levels (two
    node types without node lists, a cache that is warm or not) keeps
    returning; a new level, or the return from an episode, is reached
    once."""
    cuts = [0] + [d.at for d in steps] + [len(y)]
    i = cuts.index(c.at)
    hi = c.end if c.kind == 'transient' else cuts[i + 1]
    old = _median(y[cuts[i - 1]:c.at])
    new = _median(y[c.at:hi])
    sigma = _segments_scale(y, cuts[1:-1], floor)
    if abs(new - old) < 2 * FLIP_NEAR * sigma:
        return False        # levels within the noise of each other: no visits to tell
    dn, do = np.abs(y - new), np.abs(y - old)
    at = np.where((dn < do) & (dn <= FLIP_NEAR * sigma), 1,
                  np.where((do <= dn) & (do <= FLIP_NEAR * sigma), -1, 0))
    at[c.at:hi] = 0
    # the stays: runs of one level, FLIP_RUN sessions or more, in order
    edges = np.flatnonzero(np.diff(at)) + 1
    starts = np.concatenate(([0], edges))
    ends = np.concatenate((edges, [len(at)]))
    stays = [int(at[a]) for a, b in zip(starts, ends) if at[a] != 0 and b - a >= FLIP_RUN]
    visits = sum(1 for k, v in enumerate(stays) if v == 1 and (k == 0 or stays[k - 1] == -1))
    # its own stay counts when the figure left the new level again
    return visits + (hi < len(y)) >= FLIP_VISITS


def _episode_end(y, steps, c, s, floor):
    """The end of an episode that a nightly alarm ``c`` raised and the
    later sessions seem to disprove because the level came back (a CPU
    quota for six sessions): the session ``e`` where the level returned,
    when the episode has ``MIN_SEGMENT`` sessions or more (two bad nights
    are not one), and both the sessions ``[c.at, e)`` against those before
    and the sessions from ``e`` against the episode reach ``z + POWER``
    standard errors (as the retrospective view keeps a boundary), judged as
    :func:`refine` would; else None."""
    cuts = [0] + [d.at for d in steps] + [len(y)]
    i = cuts.index(c.at)
    prev, nxt = cuts[i - 1], cuts[i + 1]
    before = y[max(prev, c.at - s.window):c.at]
    sig_b = _floor(robust_scale(before), floor)
    best = None
    need = s.z + POWER
    for e in (_may_reach(y[c.at:nxt - MIN_SEGMENT], before, sig_b, need) + c.at).tolist():
        ep = y[c.at:e]
        # z = min(z1, z2) must reach ``need``: z2 only where z1 does
        z1 = abs(hl_shift(before, ep)) / shift_stderr(sig_b, len(before), len(ep))
        if not z1 >= need or not agree(ep, sig_b):
            continue
        rest = y[e:nxt][:s.window]
        sig_e = _floor(robust_scale(ep), floor)
        z2 = abs(hl_shift(ep, rest)) / shift_stderr(sig_e, len(ep), len(rest))
        z = min(z1, z2)
        if z >= need and (best is None or z > best[0]):
            best = (z, e)
    return None if best is None else best[1]


def _may_reach(ep, before, sigma, need):
    """The lengths ``k`` (``MIN_SEGMENT`` up to all of ``ep``) for which the
    Hodges-Lehmann shift of ``ep[:k]`` against ``before`` may reach
    ``need`` standard errors; all at once. The shift is the median of the
    differences: it is certainly below a bound ``t`` when more than half of
    the differences are below ``t`` and more than half above ``-t``, which
    counts of the sorted ``before`` give for every length at once (``t``
    lowered by a relative ``_SLACK`` for rounding)."""
    ks = np.arange(MIN_SEGMENT, len(ep) + 1)
    if len(ks) == 0:
        return ks
    b = np.sort(before)
    nb = len(b)
    t = need * sigma * np.sqrt(_HL_VAR * (1.0 / ks + 1.0 / nb)) * (1 - _SLACK)
    inside = np.arange(len(ep))[None, :] < ks[:, None]
    below = np.where(inside, nb - np.searchsorted(b, ep[None, :] - t[:, None], 'right'), 0)
    above = np.where(inside, np.searchsorted(b, ep[None, :] + t[:, None], 'left'), 0)
    half = (nb * ks) // 2
    quiet = (below.sum(axis=1) > half) & (above.sum(axis=1) > half)
    return ks[~quiet]


def group_levels(y, groups):
    """``y`` with the level of each group of sessions (``groups[i]``, e.g.
    the node list of session ``i``) taken out, when the groups explain the
    spread: runs that land on one of two node types are two levels, not
    noise. Groups with fewer than ``MIN_GROUP`` / 2 sessions in either half
    of the history keep their values (a node used only after a change may be
    the cause of that change);
    nothing changes unless the spread within the groups is below
    ``GROUP_GAIN`` of the spread of all."""
    y = np.asarray(y, dtype=float)
    labels = np.asarray([g or '' for g in groups], dtype=object)
    half = len(y) // 2
    # a group whose sessions all fall in one half is not a node type: it may
    # be the slow node itself, whose level is the change
    names = [g for g in set(labels) if g and (labels[:half] == g).sum() >= MIN_GROUP // 2
             and (labels[half:] == g).sum() >= MIN_GROUP // 2]
    if len(names) < 2:
        return y
    adj = y.copy()
    big = max(names, key=lambda g: (labels == g).sum())
    ref = _median(y[labels == big])
    for g in names:
        sel = labels == g
        med = _median(y[sel])
        adj[sel] = y[sel] - med + ref
    if diff_scale(adj) >= GROUP_GAIN * diff_scale(y):
        return y
    return adj


def periodic_levels(y):
    """``y`` with a periodic component taken out, when one explains the
    spread: a cron job or a file system's scheduled work (a weekly backup
    on the night of the run, a monthly scrub) moves the same sessions of
    every cycle, which are neither noise nor changes. For each period of 2
    to ``PERIOD_MAX`` sessions with ``PERIOD_CYCLES`` cycles or more in the
    history, the level of each phase is the median, over the whole cycles,
    of its value less its cycle's median (a step or a drift moves a cycle,
    not a phase); a period is taken when the standard deviation of the
    session-to-session differences with its phase levels out is below
    ``GROUP_GAIN`` of the best so far (of the values as they are, at
    first): the shortest period that explains the cycle, as for the levels
    of node lists (:func:`group_levels`). Only the periods at which the
    differences are correlated, by half of what that shrinking needs (its
    share of their variance, 1 - ``GROUP_GAIN`` squared), are tried: a
    component that repeats every p sessions repeats its differences."""
    y = np.asarray(y, dtype=float)
    n = len(y)
    top = min(PERIOD_MAX, n // PERIOD_CYCLES)
    if top < 2:
        return y
    d = np.diff(y)
    d = d - d.mean()
    best = float(np.std(d))
    den = float(np.dot(d, d))
    if den <= 0:
        return y
    need = 0.5 * (1 - GROUP_GAIN ** 2)
    out = y
    for p in range(2, top + 1):
        if float(np.dot(d[p:], d[:-p])) < need * den:
            continue
        cycles = y[:n // p * p].reshape(-1, p)
        phase = np.median(cycles - np.median(cycles, axis=1, keepdims=True), axis=0)
        adj = y - (phase - _median(phase))[np.arange(n) % p]
        spread = float(np.std(np.diff(adj)))
        if spread < GROUP_GAIN * best:
            best, out = spread, adj
    return out


def _levels(values, groups, s):
    """The log values of a figure as the detector judges them: the levels of
    node lists (:func:`group_levels`) and a periodic component
    (:func:`periodic_levels`, unless ``s.periodic`` is off) taken out."""
    y = _log(values)
    if groups is not None:
        y = group_levels(y, groups)
    return periodic_levels(y) if s.periodic else y


@dataclass
class FigureNoise:
    """What the history says about a figure's noise."""
    noise: float                # relative, robust, over the newest sessions
    detectable: float           # minimum detectable relative change
    n: int                      # sessions it was estimated from
    too_noisy: bool = False
    heavy_tailed: bool = False


def figure_noise(values, changes=(), settings=None, groups=None):
    """Noise of the newest ``settings.window`` sessions of ``values``: the
    robust scale about the median of each segment between ``changes`` (about
    the fitted trend inside a drift), with the floor of :func:`noise_floor`;
    ``groups`` as for :func:`find`."""
    s = settings or Settings()
    y = _levels(values, groups, s)
    lo = max(0, len(y) - s.window)
    marks = sorted({m for c in changes for m in (c.at, c.end) if m is not None and m > lo})
    cuts = [lo] + [m for m in marks if m < len(y)] + [len(y)]
    drifts = [(c.at, c.end) for c in changes if c.kind == 'drift']
    parts = []
    for a, b in zip(cuts, cuts[1:]):
        part = y[a:b]
        if b - a >= 3 and any(d0 <= a and b <= d1 for d0, d1 in drifts):
            t = np.arange(b - a)
            part = part - np.polyval(np.polyfit(t, part, 1), t)
        if b > a:
            parts.append(part - _median(part))
    res = np.concatenate(parts)
    sigma = max(robust_scale(res), noise_floor(y[lo:]))
    rel = math.expm1(sigma)
    det = minimum_detectable(rel, s)
    return FigureNoise(rel, det, len(res), too_noisy=det > s.max_detectable,
                       heavy_tailed=has_outliers(res, _floor(sigma), s.outlier_z))
