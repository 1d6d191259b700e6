"""The noise of a node's peers: median, scaled MAD, the distance of a
figure from them in noise units and percent, and the line a figure is
past when it is worse by more than k noise units and the smallest
slowdown that matters.

Pure functions over plain data, the arithmetic of ``screen.judge``.
"""

import math
import statistics
from dataclasses import dataclass

#: the MAD of normally distributed noise times this is its standard deviation
MAD_TO_SIGMA = 1.4826

#: the relative standard error of a scaled MAD from n normal values is about
#: this over sqrt(n) (its asymptotic efficiency, 37 %, against the standard
#: deviation's: sqrt(1 / (2 x 0.37)) = 1.17)
MAD_ERROR = 1.17


@dataclass(frozen=True)
class PeerStats:
    """The peers of one (partition, check, figure): median, scaled MAD, count,
    and where every value is positive the scaled MAD of the logarithms of
    value / median (``log_mad``: the noise of rates is multiplicative)."""
    median: float
    mad: float
    count: int
    log_mad: float = None


def peer_stats(values):
    """Median and MAD (scaled by :data:`MAD_TO_SIGMA`) of finite ``values``,
    and the MAD of their logarithms around the median's when all are
    positive; None when there are none."""
    vals = [v for v in values if v is not None and math.isfinite(v)]
    if not vals:
        return None
    med = statistics.median(vals)
    mad = statistics.median(abs(v - med) for v in vals) * MAD_TO_SIGMA
    log_mad = None
    if med > 0 and all(v > 0 for v in vals):
        log_mad = statistics.median(abs(math.log(v / med)) for v in vals) * MAD_TO_SIGMA
    return PeerStats(med, mad, len(vals), log_mad)


def distance(value, peers, lower_is_better, floor=0.0, widen=1.0):
    """``(noise_units, percent)`` of ``value`` from the peers' median, signed
    so that negative is worse. Noise units: the distance over the scaled
    MAD, on the logarithmic scale where the peers and the value are
    positive (a node at half the median is as far as one at twice it, and
    a few very fast peers do not hide a very slow node); infinite when the
    peers do not spread at all and the value differs. Percent is None when
    the median is 0. ``floor``: the check's repeatability (a fraction),
    the smallest a noise unit may be; ``widen``: the scaled MAD times it
    is the peers' spread (:func:`widening`)."""
    diff = value - peers.median
    if lower_is_better:
        diff = -diff
    if peers.log_mad is not None and value > 0:
        spread = max(peers.log_mad * widen, math.log1p(floor))
        step = math.log(value / peers.median)
        if lower_is_better:
            step = -step
    else:
        spread, step = max(peers.mad * widen, floor * abs(peers.median)), diff
    if spread > 0:
        units = step / spread
    else:
        units = 0.0 if step == 0 else math.copysign(math.inf, step)
    pct = diff / abs(peers.median) * 100 if peers.median else None
    return units, pct


def noise_pct(peers, floor=0.0, widen=1.0):
    """One noise unit of ``peers`` in percent of their median (the
    larger of their spread and ``floor``, a fraction), or None."""
    if peers is None:
        return None
    if peers.log_mad is not None:
        return math.expm1(max(peers.log_mad * widen, math.log1p(floor))) * 100
    if not peers.median:
        return None
    return max(peers.mad * widen / abs(peers.median), floor) * 100


def widening(count):
    """How much wider a noise unit is than the peers' scaled MAD: by the
    uncertainty of a MAD from ``count`` peers (its relative standard error
    is about :data:`MAD_ERROR` / sqrt(count) for normal noise), so that a
    small population whose MAD came out low does not name its tail: x1.12
    among 100 peers, x1.04 among 1,000."""
    return 1.0 + MAD_ERROR / math.sqrt(count) if count else 1.0


def past_line(units, pct, k, smallest_pct):
    """Whether a figure ``units`` noise units and ``pct`` percent from its
    peers (negative: worse) is beyond the line: more than ``k`` units and
    more than ``smallest_pct`` percent worse."""
    return pct is not None and units is not None and pct < -smallest_pct and units < -k


def mean_of_runs(values):
    """The mean of a figure's runs: geometric where all are positive (the
    noise of rates is multiplicative, as the noise units'), else arithmetic."""
    if all(v > 0 for v in values):
        return math.exp(sum(math.log(v) for v in values) / len(values))
    return sum(values) / len(values)


def near_own_line(units, pct, unit_pct, rule, smallest_pct):
    """Whether a drop against a node's own past (``units`` noise units of
    ``unit_pct`` percent, ``pct`` percent) is near or past the line: more
    than ``rule.suspect_units`` noise units, and short of the smallest
    slowdown that matters by no more than one noise unit (a drop is
    measured to a noise unit: a node exactly as slow as matters is as often
    just inside it as just past)."""
    return past_line(units, pct, rule.suspect_units, max(0.0, smallest_pct - unit_pct))
