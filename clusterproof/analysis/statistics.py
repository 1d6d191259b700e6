"""The statistics of measured figures that bless, acceptance and the morning
page show: the linear-interpolated percentile (``bless --percentile``), the statistic of an
acceptance item's repetitions (median, mean or best), and the ratio of two
figures of one test case (the mmap sweep's memory to device wall time).

Those readers show what these return; none computes a statistic of its own
(the change detector's and the screening's are their own, in
:mod:`clusterproof.analysis` and :mod:`clusterproof.screen`)."""

import math
import re
import statistics

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


def statistic(name, values, lower_is_better):
    """``median``, ``mean`` or (any other name) the best of ``values``."""
    if name == 'median':
        return statistics.median(values)
    if name == 'mean':
        return statistics.fmean(values)
    return min(values) if lower_is_better else max(values)


#: the figures of the mmap sweep's wall times: ``<target>_wall``
WALL_RE = re.compile(r'^(\w+)_wall$')


def mmap_ratios(recs):
    """Memory/device wall-time ratios of each mmap sweep test case of the
    records ``recs`` (the published table's Mem.Ms/Device.Ms; near 1: the
    device keeps up with memory for that access pattern): ``{test,
    partition, device, memory, dev, ratio, labels}`` per device, ratio None
    when the device's wall time is 0."""
    cases = {}
    for rec in recs:
        match = WALL_RE.match(rec.figure or '')
        if match and math.isfinite(rec.value):
            cases.setdefault((rec.system, rec.partition, rec.test), {})[match.group(1)] = rec
    rows = []
    for (system, part, test), walls in sorted(cases.items()):
        mem = walls.get('memory')
        if mem is None:
            continue
        for target, dev in sorted(walls.items()):
            if target != 'memory':
                rows.append({'test': test, 'partition': f'{system}:{part}', 'device': target,
                             'memory': mem.value, 'dev': dev.value,
                             'ratio': mem.value / dev.value if dev.value else None,
                             'labels': sorted(set(mem.flags) | set(dev.flags))})
    return rows
