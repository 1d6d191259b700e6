"""A node against its own past: the rule "slower than its own earlier
screenings".

Among a thousand identical nodes each node keeps an offset of its own
from the peers' median (0.6 % between nodes on 1,532 real ones), while one
node repeats itself to 0.15 % run to run. In one screening a node 2 %
slow is lost in the offsets; against the node's own earlier screenings it
is about ten noise units out. Pure functions over remembered rows
(``store.screenings``, the ones of other screenings: ``memory.earlier``):

- a figure's **offset** is its distance from the peers' median on the log
  scale, in percent, signed so that negative is worse (:func:`offset`;
  ``100 x ln(value / median)``, as the rule's noise units are);
- its **drop** is the current offset minus the median of its earlier
  offsets (at least :data:`MIN_EARLIER`, the last :data:`LAST` of them);
- a **noise unit** of the drop (:func:`noise_unit`): the check's
  repeatability where the site gives it (``screen.rule``), else the
  robust spread of the node's own earlier offsets (floored at
  :data:`FLOOR_PCT` and widened for few screenings by the uncertainty of a
  MAD from so few), either way widened by the noise of the earlier
  screenings' median (:func:`median_noise`); never less than the spread of
  the same drop among the peers (:func:`pooled_unit`: what one screening to
  the next moves a healthy node of this population, so a component noisier
  than the node's figure or a repeatability set too low does not name
  healthy nodes) where at least :data:`MIN_POOLED` peers have history;
  with fewer and no repeatability, never less than the peers' own noise
  unit (two or three screenings do not tell a node's noise finely enough
  to judge it more finely than among its peers);
- the figure is past the line when the drop is more than k noise units
  **and** more than the smallest slowdown that matters (the one rule,
  ``screen.rule``, ``judge.past_line``). A figure run more than once is
  judged on the mean of its runs and named only when every run was near or
  past the line (the confirmation of the population rule).

A node with fewer than :data:`MIN_EARLIER` earlier screenings of a figure
is judged by the population rule only.
"""

import math
import statistics
from dataclasses import dataclass

from clusterproof.screen import stats as screen_stats

#: the fewest earlier screenings of a figure the rule judges it against
MIN_EARLIER = 2
#: the earlier screenings looked at (the most recent)
LAST = 5
#: the smallest noise unit of a node's own spread (percent): a run rarely
#: repeats better (the tight population's repeatability is 0.15 %), and
#: two or three earlier screenings may agree by chance
FLOOR_PCT = 0.1
#: the fewest peers with history whose spread of the drop is taken as a floor
MIN_POOLED = 20


def key_of(partition, node, check, figure, component):
    """The key of one figure of one node in the remembered rows."""
    return (partition, node, check, figure, component or '')


def offset(value, median, lower_is_better):
    """``100 x ln(value / median)``, negative = worse; None where either
    is not positive."""
    if value is None or median is None or value <= 0 or median <= 0:
        return None
    step = 100 * math.log(value / median)
    return -step if lower_is_better else step


def row_offset(row, lower_is_better):
    """The offset of a remembered row (its value is the best of its runs,
    its percent the mean's: the percent is what was judged)."""
    pct, median = row.get('percent'), row.get('median')
    if pct is None or median is None or median <= 0:
        return None
    ratio = 1 - pct / 100 if lower_is_better else 1 + pct / 100
    return offset(ratio * median, median, lower_is_better)


def earlier_offsets(rows, lower_is_better):
    """The offsets of the last :data:`LAST` measured rows, oldest first."""
    out = [row_offset(r, lower_is_better) for r in rows]
    return [o for o in out if o is not None][-LAST:]


def median_noise(n):
    """The variance of the median of ``n`` normal values over one value's:
    1, 0.5, 0.449 for 1, 2, 3 values, about pi / (2 n) beyond."""
    exact = {1: 1.0, 2: 0.5, 3: 0.449, 4: 0.361, 5: 0.287}
    return exact.get(n, math.pi / (2 * n))


def own_spread(offsets):
    """The scaled MAD of a node's own earlier offsets, widened by its
    uncertainty from so few, floored at :data:`FLOOR_PCT`."""
    return max(_scaled_mad(offsets), FLOOR_PCT) * screen_stats.widening(len(offsets))


def noise_unit(offsets, repeatability_pct, pooled=None, peers_unit=None):
    """One noise unit of a drop from ``offsets`` (percent, log scale): the
    repeatability where known (> 0), else the node's own spread, widened
    by the noise of their median; at least ``pooled``. Where neither the
    repeatability nor ``pooled`` is known, at least ``peers_unit`` (the
    peers' noise unit): two or three screenings of one node do not say
    its noise finely enough to judge it more finely than among its peers.
    The mean of several runs is judged in these units too: the runs share
    the earlier screenings' median, so their mean is not as much less
    noisy as independent runs would be, and a suspect was chosen for a
    low first run (measured: a unit narrowed as for independent runs
    named 1.5 healthy nodes in 1,000)."""
    if repeatability_pct:
        one = 100 * math.log1p(repeatability_pct / 100)
    else:
        one = own_spread(offsets)
    unit = one * math.sqrt(1 + median_noise(len(offsets)))
    if pooled is None and not repeatability_pct:
        return max(unit, peers_unit or 0.0)
    return max(unit, pooled or 0.0)


def drop(current, offsets):
    """The current offset less the median of the earlier ones."""
    return current - statistics.median(offsets)


def pooled_unit(drops):
    """The scaled MAD of the drops of a group of peers, widened by its
    uncertainty; None below :data:`MIN_POOLED` peers with history."""
    vals = [d for d in drops if d is not None]
    if len(vals) < MIN_POOLED:
        return None
    return _scaled_mad(vals) * screen_stats.widening(len(vals))


def _scaled_mad(values):
    med = statistics.median(values)
    return statistics.median(abs(v - med) for v in values) * screen_stats.MAD_TO_SIGMA


@dataclass(frozen=True)
class OwnPast:
    """A figure against its node's earlier screenings: the drop in percent
    (negative = slower than before), in noise units, one noise unit in
    percent, how many earlier screenings, and ``(near, runs)`` after a
    repeat (None: one run)."""
    percent: float
    units: float
    noise_pct: float
    earlier: int
    confirmed: tuple = None


def against_past(values, median, lower_is_better, rows, repeatability_pct, floors, near):
    """The :class:`OwnPast` of a figure whose runs gave ``values`` against
    its peers' ``median`` and its earlier ``rows``, or None (too few
    earlier screenings, no positive value). ``floors``: ``(pooled, peers'
    unit)`` (:func:`noise_unit`); ``near(units, percent, unit percent)``:
    whether one run is near or past the line (confirmation). Several runs
    are judged on their mean."""
    offsets = earlier_offsets(rows, lower_is_better)
    runs = [offset(v, median, lower_is_better) for v in values]
    if len(offsets) < MIN_EARLIER or not runs or None in runs:
        return None
    unit = noise_unit(offsets, repeatability_pct, *floors)
    d = drop(sum(runs) / len(runs), offsets)
    confirmed = None
    if len(runs) > 1:
        confirmed = (sum(near(*_units_pct(drop(r, offsets), unit), _pct(unit)) for r in runs),
                     len(runs))
    units, pct = _units_pct(d, unit)
    return OwnPast(pct, units, _pct(unit), len(offsets), confirmed)


def _pct(unit):
    """A noise unit on the log scale, in percent."""
    return math.expm1(unit / 100) * 100


def _units_pct(d, unit):
    return d / unit, math.expm1(d / 100) * 100


def text(own):
    """``-2.1 % against its last 3 screenings (9.8 noise units)``."""
    return (f'{own.percent:+.1f} % against its last {own.earlier} screenings '
            f'({abs(own.units):.1f} noise units of {own.noise_pct:.2g} %)')


def pooled_of(group, stats, past):
    """:func:`pooled_unit` of the samples ``group`` of one figure, their
    peers' statistics ``stats`` and ``past`` (``{key_of(...): rows}``)."""
    if stats is None:
        return None
    drops = []
    for s in group:
        rows = past.get(key_of(s.partition, s.node, s.check, s.figure, s.component))
        if not rows or s.pair or s.value is None:
            continue
        offsets = earlier_offsets(rows, s.lower_is_better)
        now = offset(s.value, stats.median, s.lower_is_better)
        if len(offsets) >= MIN_EARLIER and now is not None:
            drops.append(drop(now, offsets))
    return pooled_unit(drops)
