"""The nightly view: each night sees only the history up to that night, as
a nightly run does (:func:`scan`). A cheap screen first
(:func:`moved_enough`: the Hodges-Lehmann shift of the newest
``min_after`` sessions against the rest; most nights stop there, and
:func:`_may_move_enough` computes for every night at once which cannot
pass), then binary segmentation of the window places the candidate and
the shift across it must reach ``z`` standard errors (``EARLY`` x ``z``
with only ``min_after`` sessions after it) with the sessions after it in
agreement (:func:`judge_session`). A reported change starts a new segment."""

import numpy as np

from clusterproof.analysis.detector.model import Change, Settings
from clusterproof.analysis.detector.noise import (
    _IQR, _floor, _log, has_outliers, on_scale, pooled_scale, resolution)
from clusterproof.analysis.detector.segmentation import _segment
from clusterproof.analysis.detector.significance import (
    EARLY, SCREEN, _HL_VAR, _SLACK, agree, hl_shift, refine, shift_stderr)



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


def judge_session(y, start, settings, floor=1e-6):
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


def scan(values, settings=None):
    """Every alarm of ``values`` (oldest first) as the nightly runs would
    have raised them: each night sees the history up to that night only.
    Sizes are then re-estimated from all sessions up to the next change.
    (:func:`find` adds the retrospective view and withdraws the alarms
    that later sessions disprove.)"""
    s = settings or Settings()
    y = _log(values)
    floor = resolution(y)
    return on_scale(refine(y, _nightly(y, s, floor), s, floor), values)


def _nightly(y, s, floor):
    """Every night's :func:`judge_session`, oldest first, each reported change
    starting a new segment; a night is judged only when
    :func:`_may_move_enough` says its screen can pass."""
    found = []
    start = 0
    may = _may_move_enough(y, s, floor, 0)
    for t in range(s.min_before + s.min_after - 1, len(y)):
        if not may[t]:
            continue
        c = judge_session(y[:t + 1], start, s, floor)
        if c is not None:
            found.append(c)
            start = c.at
            # the nights whose window reaches back before the new segment
            if t + 1 < start + s.window:
                span = slice(t + 1, start + s.window)
                may[span] = _may_move_enough(y, s, floor, start)[span]
    return found


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
