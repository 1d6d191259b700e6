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
3. Segmentation by the library: ``ruptures`` (binary segmentation, squared
   error cost on the values divided by the noise, penalty ``penalty x
   log(n)``) places the change points of the window; the newest one with at
   least ``min_after`` sessions after it is the candidate.
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

A figure's minimum detectable change follows from its noise: the shift whose
statistic reaches ``z`` with 95 % probability after ``min_after + 1``
sessions.
A figure whose minimum detectable change exceeds ``max_detectable`` is
listed as too noisy and raises no alarms.

The thresholds were tuned on seeds of ``scripts/bench_detection.py`` that
its reported figures do not use; ``docs/changes.md`` has the measured
recall, delay and false alarm rate per noise model.
"""

import datetime
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
#: ruptures penalty, in units of log(n) (the values are in noise units)
DEFAULT_PENALTY = 3.0
#: a value this many noise units from the median is an outlier
OUTLIER_Z = 6.0
#: minimum detectable change above which a figure is too noisy to judge
DEFAULT_MAX_DETECTABLE = 0.25
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


@dataclass
class Change:
    """A change point: ``at`` is the index of the first session after it."""
    at: int
    found: int              # index of the session that revealed it (the night)
    shift: float            # in log units: the size is exp(shift) - 1
    stderr: float           # standard error of the shift (log units)
    n_before: int = 0
    n_after: int = 0

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
        return self.found - self.at


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
    return _quantile(np.sort(y), 0.5)


def pooled_scale(y, start, end):
    """Robust scale of ``y[start:end]`` about the median of each segment:
    the history before ``start`` (the last change) counts too, so a
    segment of a few sessions still has a steady noise estimate."""
    parts = [y[start:end] - _median(y[start:end])]
    if start > 0:
        prev = y[:start]
        parts.insert(0, prev - _median(prev))
    return robust_scale(np.concatenate(parts))


def _floor(sigma):
    # A figure that never moved (a constant) still has the resolution of
    # its printed digits: do not divide by zero.
    return max(sigma, 1e-6)


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
    """Change points of ``seg`` by ruptures: indices of the first value of
    each new segment."""
    import ruptures
    algo = ruptures.Binseg(model='l2', min_size=min_size, jump=1).fit(seg / sigma)
    return algo.predict(pen=penalty * math.log(len(seg)))[:-1]


def screen(y, start, settings):
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
    sigma = _floor(pooled_scale(y[lo:], max(start - lo, 0), len(y) - lo - need))
    if has_outliers(seg[:-need], sigma, s.outlier_z):
        need += 1
        if n < s.min_before + need:
            return None
    before, after = seg[:-need], seg[-need:]
    if abs(hl_shift(before, after)) < SCREEN * s.z * shift_stderr(sigma, len(before), need):
        return None
    return seg, len(y) - n, sigma, need


def judge_night(y, start, settings):
    """The decision of one night: a :class:`Change` (index relative to
    ``y``) if the newest sessions of ``y[start:]`` moved, else None.
    ``y`` holds log values up to and including tonight."""
    s = settings
    screened = screen(y, start, s)
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
    """Every change of ``values`` (oldest first) as the nightly runs would
    have found them: each night sees the history up to that night only.
    Sizes are then re-estimated from all sessions up to the next change."""
    s = settings or Settings()
    y = _log(values)
    found = []
    start = 0
    for t in range(len(y)):
        c = judge_night(y[:t + 1], start, s)
        if c is not None:
            found.append(c)
            start = c.at
    return refine(y, found, s)


def refine(y, found, settings):
    """Sizes from every session between neighbouring changes (the robust
    noise of the segment before each change)."""
    out = []
    bounds = [0] + [c.at for c in found] + [len(y)]
    for i, c in enumerate(found):
        before = y[max(bounds[i], c.at - settings.window):c.at]
        after = y[c.at:bounds[i + 2]][:settings.window]
        sigma = _floor(robust_scale(before))
        shift = hl_shift(before, after)
        out.append(Change(c.at, c.found, shift,
                          shift_stderr(sigma, len(before), len(after)),
                          len(before), len(after)))
    return out


@dataclass
class FigureNoise:
    """What the history says about a figure's noise."""
    noise: float                # relative, robust, over the newest sessions
    detectable: float           # minimum detectable relative change
    n: int                      # sessions it was estimated from
    too_noisy: bool = False
    heavy_tailed: bool = False


def figure_noise(values, changes=(), settings=None):
    """Noise of the newest ``settings.window`` sessions of ``values``: the
    robust scale about the median of each segment between ``changes``."""
    s = settings or Settings()
    y = _log(values)
    lo = max(0, len(y) - s.window)
    cuts = [lo] + [c.at for c in changes if c.at > lo] + [len(y)]
    parts = [y[a:b] - _median(y[a:b]) for a, b in zip(cuts, cuts[1:]) if b > a]
    res = np.concatenate(parts)
    sigma = robust_scale(res)
    rel = math.expm1(sigma)
    det = minimum_detectable(rel, s)
    return FigureNoise(rel, det, len(res), too_noisy=det > s.max_detectable,
                       heavy_tailed=has_outliers(res, _floor(sigma), s.outlier_z))


# -- findings: what `clusterproof changes` and the morning page list -----------------

def detect(hists, settings=None):
    """``(found, quiet, noisy, skipped)`` of ``hists``: the changes (dicts
    with their summary, largest first), the figures without a change, those
    too noisy to judge and those not judged (with the reason)."""
    settings = settings or Settings()
    found, quiet, noisy, skipped = [], [], [], []
    for h in hists:
        if any(v <= 0 for v in h.values):
            skipped.append((h, 'values <= 0'))
            continue
        cps = scan(h.values, settings) if len(h.points) > 1 else []
        fn = figure_noise(h.values, cps, settings) if len(h.points) > 1 else None
        if fn is not None and fn.too_noisy:
            noisy.append((h, fn))
            continue
        if not cps:
            quiet.append((h, fn))
        for c in cps:
            found.append(_finding(h, c, fn))
    for f in found:
        f['summary'] = summary(f)
    found.sort(key=lambda f: (-abs(f['change']), f['system'], f['test'], f['figure']))
    return found, quiet, noisy, skipped


def _finding(h, c, fn):
    first = h.points[c.at]
    return {
        'system': h.system, 'partition': h.partition, 'test': h.test, 'figure': h.figure,
        'unit': h.unit, 'flags': list(h.flags),
        'at': _iso(first.time), 'session': first.session, 'where': first.where,
        'change': round(c.change, 4), 'uncertainty': round(c.uncertainty, 4),
        'confidence': round(c.confidence, 4),
        'direction': _direction(h, c),
        'found': _iso(h.points[c.found].time),
        'sessions_before': c.n_before, 'sessions_after': c.n_after,
        'noise': None if fn is None else round(fn.noise, 4),
        'detectable': None if fn is None else round(fn.detectable, 4),
        'attribution': attribution(h.points, c),
    }


def summary(f):
    """One sentence: 'Stream triad -7.9 % since 2026-11-20 (session 3f2a1b2c):
    spack_lock_hash: a1b2 -> c3d4; nothing else changed'."""
    since = f['at'][:10] + (f' (session {f["session"][:8]})' if f['session'] else '')
    what = '; '.join(f['attribution'])
    what = (what + '; nothing else changed') if what else 'no recorded provenance changed'
    return (f'{f["test"]} {f["figure"]} {f["change"] * 100:+.1f}% since {since}: {what}')


def _direction(h, c):
    up = c.shift > 0
    return 'better' if up != h.lower_is_better else 'worse'


def _iso(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).isoformat()


def attribution(points, c):
    """What changed at the change point: provenance fields whose value in
    the sessions after it differs from every session before it (within the
    same segment), and for node lists the nodes common to the sessions after
    the change that no session before it used."""
    before = points[max(0, c.at - c.n_before):c.at]
    after = points[c.at:c.at + c.n_after]
    out = []
    keys = sorted({k for p in before + after for k in p.provenance})
    for k in keys:
        old = {p.provenance.get(k, '') for p in before}
        new = {p.provenance.get(k, '') for p in after}
        if k == 'job_nodelist':
            common = _common_nodes(after) - _common_nodes(before)
            if common and old != new:
                out.append(f'nodes: {", ".join(sorted(common))} in every session after, '
                           f'not in every one before')
            continue
        if new and not (new & old):
            out.append(f'{k}: {_short(old)} -> {_short(new)}')
    return out


def _common_nodes(points):
    sets = [set(filter(None, (p.provenance.get('job_nodelist') or '').split(',')))
            for p in points]
    return set.intersection(*sets) if sets else set()


def _short(values):
    vals = sorted(values)
    text = ', '.join((v[:12] + '...' if len(v) > 15 else v) or '(none)' for v in vals[:3])
    return text + (f' (+{len(vals) - 3})' if len(vals) > 3 else '')
