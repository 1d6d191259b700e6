"""What the history says about a figure's noise (:func:`figure_noise`): its
noise over the newest sessions, its minimum detectable change, whether it
is too noisy to judge or heavy-tailed."""

import math
from dataclasses import dataclass

import numpy as np

from clusterproof.analysis.detector.levels import _levels
from clusterproof.analysis.detector.model import Settings
from clusterproof.analysis.detector.noise import (
    _floor, _median, has_outliers, linear, noise_floor, robust_scale)
from clusterproof.analysis.detector.significance import minimum_detectable



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
    flat = linear(values)
    rel = sigma if flat else math.expm1(sigma)
    det = minimum_detectable(rel, s, linear=flat)
    return FigureNoise(rel, det, len(res), too_noisy=det > s.max_detectable,
                       heavy_tailed=has_outliers(res, _floor(sigma), s.outlier_z))
