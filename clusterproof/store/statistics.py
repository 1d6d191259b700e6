"""The statistics of measured figures that every command computes alike: the
linear-interpolated percentile (``bless --percentile``)."""

from clusterproof import ClusterproofError


def percentile(values, p):
    """Linear-interpolated percentile ``p`` (0..100) of ``values``."""
    vals = sorted(values)
    if not vals:
        raise ValueError('percentile of no values')
    if not 0 <= p <= 100:
        raise ClusterproofError(f'--percentile {p}: give a number from 0 to 100')
    pos = (len(vals) - 1) * p / 100
    lo = int(pos)
    hi = min(lo + 1, len(vals) - 1)
    return vals[lo] + (vals[hi] - vals[lo]) * (pos - lo)
