"""The significance of a shift: the Hodges-Lehmann shift (the median of
every difference between the sessions after and before) and its standard
error (:func:`hl_shift`, :func:`shift_stderr`), whether the sessions after
a change agree with each other (:func:`agree`), the minimum detectable
change of a noise (:func:`minimum_detectable`), and the sizes of changes
estimated again from every session between neighbouring changes
(:func:`refine`). The thresholds in standard errors are here."""

import dataclasses
import math

import numpy as np

from clusterproof.analysis.detector.model import Settings
from clusterproof.analysis.detector.noise import _floor, _median, robust_scale

#: the screen's threshold (a fraction of ``z``)
SCREEN = 0.7
#: with only ``min_after`` sessions, the shift must reach ``z`` x this
EARLY = 1.3
#: the sessions after a change must agree: their range (the most extreme
#: third left out) within this many noise units
AGREE = 5.0
#: a change kept by the retrospective view (or a nightly alarm re-judged on
#: every later session) must be at least the change detectable with 95 %
#: probability at its own session counts: its shift reaches ``z`` + this
#: many standard errors
POWER = 1.645
#: variance factor of the Hodges-Lehmann shift against the mean (Gaussian)
_HL_VAR = math.pi / 3
#: relative slack of :func:`_may_move_enough`'s threshold: far more than the
#: rounding of its sums, far less than any difference a screen could notice
_SLACK = 1e-6


def hl_shift(before, after):
    """Hodges-Lehmann shift: the median of every ``after - before`` difference."""
    return _median(np.subtract.outer(np.asarray(after), np.asarray(before)).ravel())


def shift_stderr(sigma, n_before, n_after):
    return sigma * math.sqrt(_HL_VAR * (1.0 / n_after + 1.0 / n_before))


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


def minimum_detectable(rel_noise, settings=None, n_before=None, linear=False):
    """The smallest relative change found with 95 % probability
    ``settings.min_after + 1`` sessions after it (within as many nights),
    for a figure with this noise."""
    s = settings or Settings()
    if not math.isfinite(rel_noise):
        return float('nan')
    n_after = s.min_after + 1
    n_before = n_before or (s.window - n_after)
    if linear:          # a noise and a change in shares of the figure's magnitude
        return (s.z + 1.645) * shift_stderr(rel_noise, n_before, n_after)
    sigma = math.log1p(rel_noise)
    return math.expm1((s.z + 1.645) * shift_stderr(sigma, n_before, n_after))


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
