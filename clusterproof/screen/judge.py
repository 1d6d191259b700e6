"""Node screening: each node judged against its peers.

Pure functions over plain data. A :class:`Sample` is one figure of one
node (STREAM Triad of n17, the memory of n17 from the inventory); the peers
of a node are the other nodes of its partition that report the same check
and figure. For each (partition, check, figure, component):

- the peers' median and MAD (median absolute deviation, scaled by
  :data:`MAD_TO_SIGMA` so that it estimates the standard deviation of
  normal noise): :func:`peer_stats`;
- each node's distance from the median in noise units (distance / scaled
  MAD widened for few peers, :func:`widening`, on the logarithmic scale
  for positive figures) and in percent of
  the median, signed so that negative is worse
  (the direction of a figure is the one its check declared,
  ``references.judge.lower_is_better``):
  :func:`distance`;
- the verdict (``references.judge.Verdict``, the one vocabulary): ``slow`` when the node is worse than the median by more
  than k noise units **and** by more than the smallest slowdown that
  matters for the figure (``screen.rule``: the site's
  ``site_config/screening.yaml``; a noise unit is the peers' spread or
  the check's repeatability, the larger; both conditions: a spread-out
  partition does not name half its nodes, a tight one does not name a node
  for a slowdown nobody would notice), or worse than its reference where
  the system has one;
  ``FAILED`` when the check failed on the node or its inventory differs
  from its peers; ``missing`` when the node gave no result; else ``pass``.

A figure of one component of a node (``Sample.component``: a NUMA domain,
a GPU) is judged among the same components of the peers. A figure run
more than once (an outlier or a suspect run again, :func:`to_repeat`) is
judged on the mean of its runs and named only when every run was near or
past the line (:func:`confirmation`). Where the store holds 2 or more
earlier screenings of a node's figure, a figure its peers pass is also
judged against its node's own past (``screen.ownpast``: its drop from its
earlier offsets, by the same k and smallest slowdown, confirmed alike).

:func:`screen` returns one :class:`NodeVerdict` per node, ranked worst
first (:func:`rank`).
"""

import math
import statistics
from collections import defaultdict
from dataclasses import dataclass, field, replace

from clusterproof.references import judge as refjudge
from clusterproof.references.judge import Verdict
from clusterproof.screen import ownpast
from clusterproof.screen import pairs as nodepairs
from clusterproof.screen.rule import Rule
from clusterproof.site import inventory as inv

#: the MAD of normally distributed noise times this is its standard deviation
MAD_TO_SIGMA = 1.4826

#: the relative standard error of a scaled MAD from n normal values is about
#: this over sqrt(n) (its asymptotic efficiency, 37 %, against the standard
#: deviation's: sqrt(1 / (2 x 0.37)) = 1.17)
MAD_ERROR = 1.17

#: below this many nodes a node's peers are the other nodes (the node left
#: out of the median and MAD: among 4 nodes, one slow and one very fast
#: would otherwise make the MAD as wide as the outliers); from it on the
#: node's own weight is negligible and the statistics are computed once
LEAVE_ONE_OUT_BELOW = 20

#: units of the inventory figures
INVENTORY_UNITS = {'memory_gib': 'GiB', 'slurm_memory_mib': 'MiB'}

#: the verdicts of a node or a figure, worst first (the order of the ranking)
VERDICTS = (Verdict.FAILED, Verdict.MISSING, Verdict.SLOW, Verdict.PASS)
#: verdicts that name a node (exit status 1, a drain line)
OUTLIER = (Verdict.FAILED, Verdict.MISSING, Verdict.SLOW)

#: inventory figures compared between peers (names as ``extras['hardware']``)
INVENTORY_FIGURES = inv.EXACT_FIELDS + ('memory_gib',) + inv.SLURM_FIELDS


@dataclass(frozen=True)
class Sample:
    """One figure of one node. ``value`` None: the check failed on the node
    (``reason`` says why); ``reference``: a ``references.judge.Reference``
    of the system for this figure, or None; ``runs``: how many runs of the
    check on this node the value is the best of; ``pair``: the two nodes of
    a figure measured between them (``screen.pairs``), ``node`` then being
    the pair's label; ``component``: the part of the node the figure is of
    (``socket 1``, ``gpu 3``), judged among the same components of the
    peers; '' for the whole node."""
    node: str
    partition: str
    check: str
    figure: str
    value: float = None
    unit: str = ''
    reason: str = ''
    reference: object = None
    runs: int = 1               # runs this figure is the best of (:func:`best_of`)
    pair: tuple = ()            # a figure between two nodes: the two (``node`` is ``a+b``)
    #: the direction its check declared (``cp_lower_is_better``); None: none
    declared_lower_is_better: bool = None
    component: str = ''
    #: the value of every run, in order, where there are several (a suspect
    #: run again: :func:`best_of`); judged by :func:`judge_figure` on their mean
    run_values: tuple = ()

    @property
    def lower_is_better(self):
        return refjudge.record_lower_is_better(self)


@dataclass(frozen=True)
class PeerStats:
    """The peers of one (partition, check, figure): median, scaled MAD, count,
    and where every value is positive the scaled MAD of the logarithms of
    value / median (``log_mad``: the noise of rates is multiplicative)."""
    median: float
    mad: float
    count: int
    log_mad: float = None


@dataclass
class FigureVerdict:
    """One figure of one node against its peers."""
    sample: Sample
    verdict: Verdict
    peers: PeerStats = None
    noise_units: float = None       # signed, negative = worse than the peers
    percent: float = None           # signed, negative = worse than the peers
    why: str = ''
    group: PeerStats = None         # every node of the figure, the node included
    noise_pct: float = None         # one noise unit, in percent of the median
    smallest_pct: float = None      # the smallest slowdown that matters (percent)
    confirmed: tuple = None         # (runs near or past the line, runs) after a repeat
    history: str = ''               # slow in k of the last n screenings (``screen.memory``)
    own: object = None              # against its own earlier screenings (``screen.ownpast``)


@dataclass
class NodeVerdict:
    """A node: its verdict, the figure that decided it (the worst), every
    figure, and the inventory mismatches with its peers."""
    node: str
    partition: str
    verdict: Verdict
    worst: FigureVerdict = None
    figures: list = field(default_factory=list)
    mismatches: list = field(default_factory=list)
    note: str = ''

    @property
    def reason(self):
        """One line: why the node has its verdict."""
        parts = [self.note]
        if self.worst is not None and self.worst.verdict != Verdict.PASS and not (
                self.worst.sample.check == 'inventory'
                and self.worst.sample.figure in {m.field for m in self.mismatches}):
            parts.append(self.worst.why)
        parts += [mismatch_text(m) for m in self.mismatches]
        return '; '.join(p for p in parts if p)


def better(a, b):
    """The better of two samples of one node, check and figure: the higher
    value, or the lower where the figure is lower-is-better
    (as its check declared, ``references.judge.lower_is_better``); a value beats none (a failed
    run). Ties keep ``a``."""
    if b.value is None or not math.isfinite(b.value):
        return a
    if a.value is None or not math.isfinite(a.value):
        return b
    if b.lower_is_better:
        return b if b.value < a.value else a
    return b if b.value > a.value else a


def best_of(samples, newer):
    """``samples`` with the nodes ``newer`` holds judged on the best of their
    runs: for each node, check and figure the better value of the two
    (:func:`better`; ``runs`` counts the runs), a check that gave figures in
    one run and failed in the other keeps its figures; the inventory
    (hardware, not speed) is the newer run's. The peers' noise on a shared
    or busy machine only ever makes a run slower, so a healthy node is fast
    in at least one of its runs and a slow node in none."""
    renewed = {(s.partition, s.node) for s in newer}
    old = defaultdict(list)
    out = []
    for s in samples:
        if (s.partition, s.node) in renewed:
            old[(s.partition, s.node, s.check)].append(s)
        else:
            out.append(s)
    new = defaultdict(list)
    for s in newer:
        new[(s.partition, s.node, s.check)].append(s)
    for key in sorted(set(old) | set(new)):
        before, after = old.get(key, []), new.get(key, [])
        if key[2] == 'inventory' and after:
            runs = 1 + max((s.runs for s in before), default=0)
            out += [replace(s, runs=runs) for s in after]
            continue
        measured = [s for s in before + after if s.value is not None]
        scopes = {_scope(s.figure) for s in measured}
        out += [s for s in (after or before) if s.value is None and _scope(s.figure) not in scopes]
        best = {}
        for s in measured:
            fig = (s.figure, s.component)
            if fig in best:
                runs = best[fig].runs + s.runs
                values = _values(best[fig]) + _values(s)
                best[fig] = replace(better(best[fig], s), runs=runs, run_values=values)
            else:
                best[fig] = s
        out += best.values()
    return out


def _values(sample):
    return sample.run_values or (sample.value,)


def _scope(figure):
    """What a failed run's figure (``result``, ``randread_8files result``)
    stands for: the figures with the same words before the last."""
    return figure.rsplit(' ', 1)[0] if ' ' in figure else ''


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


def confirmation(sample, peers, lib, floor, rule, smallest):
    """``(value, confirmed)`` of a figure run more than once: the mean of
    its runs (:func:`mean_of_runs`) and ``(m, n)``, the runs of ``n`` near
    or past the line (``rule.suspect_units`` noise units and ``smallest``
    percent). A figure of one run: its value and None."""
    values = [v for v in sample.run_values if v is not None and math.isfinite(v)]
    if len(values) < 2:
        return sample.value, None
    widen = widening(peers.count) if rule.widen else 1.0
    near = sum(past_line(*distance(v, peers, lib, floor, widen), rule.suspect_units, smallest)
               for v in values)
    return mean_of_runs(values), (near, len(values))


def confirmation_text(confirmed):
    """``confirmed in 2 of 2 runs`` / ``not confirmed (near the line in 1 of 2 runs)``."""
    near, n = confirmed
    if near == n:
        return f'confirmed in {near} of {n} runs'
    return f'not confirmed (near the line in {near} of {n} runs)'


def judge_figure(sample, peers, rule=None, past=None, pooled=None):
    """The :class:`FigureVerdict` of one sample against its peers under
    ``rule`` (a ``screen.rule.Rule``; its defaults when None). A figure run
    more than once (a suspect run again) is judged on the mean of its runs
    and is slow only when every run was near or past the line
    (:func:`confirmation`): one unlucky run neither names nor clears it.
    ``past``: the figure's rows of the node's earlier screenings, ``pooled``
    the peers' spread of their drop (``screen.ownpast``): a figure the
    peers pass is slow when it dropped past the line against its own past,
    confirmed in the same way."""
    if sample.value is None or not math.isfinite(sample.value):
        return FigureVerdict(sample, Verdict.FAILED, peers,
                             why=f'{sample.check}: {sample.reason or "no value"}')
    rule = rule or Rule()
    lib = sample.lower_is_better
    smallest = rule.smallest_pct(sample.check, sample.figure)
    floor = rule.repeatability_pct(sample.check, sample.figure) / 100
    value, confirmed = confirmation(sample, peers, lib, floor, rule, smallest)
    widen = widening(peers.count) if rule.widen else 1.0
    units, pct = distance(value, peers, lib, floor, widen)
    noise = noise_pct(peers, floor, widen)
    what = f'{sample.check} {sample.figure} {value:g} {sample.unit}'.rstrip()
    if confirmed:
        what += f' (mean of {confirmed[1]} runs)'
    if sample.component:
        what = f'{sample.component}: {what}'
    if sample.pair:
        what += f' between {nodepairs.pair_label(sample.pair)}'
    own = _own_past(sample, peers, past, (pooled, _log_pct(noise)), rule, smallest)
    judged = dict(peers=peers, noise_units=units, percent=pct, noise_pct=noise,
                  smallest_pct=smallest, confirmed=confirmed, own=own)
    line = past_line(units, pct, rule.noise_units, smallest)
    if line and (confirmed is None or confirmed[0] == confirmed[1]):
        return FigureVerdict(sample, Verdict.SLOW, why=(
            f'{what}: {pct:+.1f} %, {units:+.1f} noise units from the peers\' median '
            f'{peers.median:g} (line: {rule.noise_units:g} noise units of '
            f'{_fmt(noise, "{:.2g}")} % and {smallest:g} %)'
            + (f'; {confirmation_text(confirmed)}' if confirmed else '')), **judged)
    if own is not None and past_line(own.units, own.percent, rule.noise_units, smallest) and (
            own.confirmed is None or own.confirmed[0] == own.confirmed[1]):
        return FigureVerdict(sample, Verdict.SLOW, why=(
            f'{what}: {ownpast.text(own)}; {pct:+.1f} %, {units:+.1f} noise units from the '
            f'peers\' median' + (f'; {confirmation_text(own.confirmed)}' if own.confirmed
                                 else '')), **judged)
    if confirmed:
        what += f': {pct:+.1f} %, {units:+.1f} noise units; {confirmation_text(confirmed)}'

    ref = sample.reference
    if ref is not None and refjudge.judge_reference(sample.value, ref, lib).verdict \
            is Verdict.REGRESSION:
        return FigureVerdict(sample, Verdict.SLOW, why=(
            f'{what}: worse than the reference {ref} ({_fmt(pct, "{:+.1f} %")}, '
            f'{_fmt(units, "{:+.1f}")} noise units from the peers\' median)'), **judged)
    return FigureVerdict(sample, Verdict.PASS, why=what, **judged)


def _log_pct(pct):
    """A percent step as ``100 x ln(1 + pct / 100)`` (None stays None)."""
    return None if pct is None else 100 * math.log1p(pct / 100)


def _own_past(sample, peers, past, floors, rule, smallest):
    """The figure against its node's earlier screenings (``ownpast.OwnPast``), or None."""
    if not past or sample.pair or peers is None:
        return None
    values = [v for v in (sample.run_values or (sample.value,)) if math.isfinite(v)]
    return ownpast.against_past(
        values, peers.median, sample.lower_is_better, past,
        rule.repeatability_pct(sample.check, sample.figure), floors,
        lambda units, pct, unit: near_own_line(units, pct, unit, rule, smallest))


def near_own_line(units, pct, unit_pct, rule, smallest_pct):
    """Whether a drop against a node's own past (``units`` noise units of
    ``unit_pct`` percent, ``pct`` percent) is near or past the line: more
    than ``rule.suspect_units`` noise units, and short of the smallest
    slowdown that matters by no more than one noise unit (a drop is
    measured to a noise unit: a node exactly as slow as matters is as often
    just inside it as just past)."""
    return past_line(units, pct, rule.suspect_units, max(0.0, smallest_pct - unit_pct))


def inventory_mismatches(node, found, typical):
    """Mismatches (``site.inventory.Mismatch``) of a node's inventory
    figures ``found`` with its peers' ``typical`` ones, compared as the
    inventory check compares a node with the declaration (memory within
    ``inventory.memory_bounds``, the rest equal); each says "peers"."""
    problems = inv.compare_hardware(node, typical, found)
    out = []
    for p in problems:
        note = p.note
        if p.field in ('memory_gib', 'slurm_memory_mib') and _number(found.get(p.field)) \
                and found[p.field] < typical.get(p.field, 0):
            note = 'less memory than its peers: a missing or failed DIMM shows here'
        out.append(inv.Mismatch(p.node, p.field, f'{_num(p.expected)} (peers)', _num(p.found),
                                note))
    return out


def mismatch_text(m):
    """``slurm_memory_mib 1024, peers 2048 (less memory ...)``: a mismatch
    with the peers, without the node name (the row has it)."""
    text = f'{m.field} {m.found}, peers {str(m.expected).replace(" (peers)", "")}'
    return f'{text} ({m.note})' if m.note else text


def _number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def typical_inventory(values):
    """The peers' value of each inventory figure: the median of what the
    nodes report (``{figure: [values]}``)."""
    out = {}
    for fig, vals in values.items():
        stats = peer_stats(vals)
        if stats is not None:
            out[fig] = stats.median
    return out


def screen(samples, nodes=None, rule=None, peers_of=None, past=None):
    """Judge every node: returns :class:`NodeVerdict` s ranked worst first.

    ``samples``: :class:`Sample` s; check ``inventory`` carries the inventory
    figures (:data:`INVENTORY_FIGURES`), every other check performance
    figures. ``nodes``: ``{node: partition}`` of the nodes that were to be
    screened; one without any sample is ``missing``. ``rule``: the
    ``screen.rule.Rule`` (its defaults when None). ``peers_of``: ``{node:
    kind}`` (``screen.run.peer_kinds``): a node's peers are the nodes of its
    partition of the same kind; every node of a partition when None. A
    figure between two nodes is judged among every pair of the partition; a
    figure of a component (``Sample.component``) among the same component
    of the peers. ``past``: ``{ownpast.key_of(...): rows}`` of the nodes'
    earlier screenings (``memory.earlier``): a figure is judged against its
    node's own past too (``screen.ownpast``)."""
    kind = (peers_of or {}).get
    past = past or {}
    groups = defaultdict(list)
    inventory = defaultdict(dict)         # (partition, node) -> {figure: value}
    inv_failed = {}
    inv_runs = {}                         # (partition, node) -> runs of its inventory
    for s in samples:
        if s.check == 'inventory':
            if s.value is None:
                inv_failed[(s.partition, s.node)] = s
            else:
                inventory[(s.partition, s.node)][s.figure] = s.value
                inv_runs[(s.partition, s.node)] = s.runs
            if s.figure not in INVENTORY_FIGURES:
                continue
        groups[(s.partition, None if s.pair else kind(s.node), s.check, s.figure,
                s.component)].append(s)

    per_node = defaultdict(list)
    pair_figures = []
    for (part, _kind, check, _fig, _comp), group in groups.items():
        if check == 'inventory':
            continue
        stats = peer_stats(s.value for s in group)
        small = len(group) < LEAVE_ONE_OUT_BELOW
        pooled = ownpast.pooled_of(group, stats, past) if past else None
        for s in group:
            peers = peer_stats(o.value for o in group if o is not s) if small else stats
            fv = judge_figure(s, peers or stats, rule, past.get(_past_key(s)), pooled)
            fv.group = stats
            if s.pair:
                pair_figures.append(fv)
            else:
                per_node[(part, s.node)].append(fv)
    for key, figs in nodepairs.attribute(pair_figures).items():
        per_node[key] += figs
    for key, s in inv_failed.items():
        per_node[key].append(judge_figure(s, None, rule))

    wanted = dict(nodes or {})
    reported = defaultdict(set)                     # (partition, check) -> nodes
    for s in samples:
        reported[(s.partition, s.check)].update(s.pair or (s.node,))
    for (part, check), have in reported.items():
        for node in sorted(n for n, p in wanted.items() if p == part and n not in have):
            per_node[(part, node)].append(FigureVerdict(
                Sample(node, part, check, 'result'), Verdict.MISSING,
                why=f'{check}: no result from this node'))

    by_part = defaultdict(dict)
    for (part, node), figs in inventory.items():
        by_part[(part, kind(node))][node] = figs
    mismatches = {}
    for (part, _kind), found in by_part.items():
        values = defaultdict(list)
        for figs in found.values():
            for fig, val in figs.items():
                values[fig].append(val)
        typical = typical_inventory(values)
        stats = {fig: peer_stats(vals) for fig, vals in values.items()}
        for node, figs in found.items():
            mm = inventory_mismatches(node, figs, typical)
            if mm:
                mismatches[(part, node)] = mm
            for m in mm:
                sample = Sample(node, part, 'inventory', m.field, figs.get(m.field),
                                INVENTORY_UNITS.get(m.field, ''), runs=inv_runs[(part, node)])
                units = pct = None
                if sample.value is not None:
                    units, pct = distance(sample.value, stats[m.field], False)
                per_node[(part, node)].append(FigureVerdict(
                    sample, Verdict.FAILED, stats[m.field], units, pct, mismatch_text(m)))

    keys = set(per_node) | set(mismatches) | {(p, n) for p, n in inventory}
    keys |= {(p, n) for n, p in wanted.items()}
    verdicts = []
    for part, node in keys:
        figs = per_node.get((part, node), [])
        mm = mismatches.get((part, node), [])
        worst = min(figs, key=_figure_rank) if figs else None
        note = ''
        if not figs and (part, node) not in inventory and not mm:
            verdict, note = Verdict.MISSING, 'no result from any check'
        elif mm or (worst is not None and worst.verdict == Verdict.FAILED):
            verdict = Verdict.FAILED
        else:
            verdict = worst.verdict if worst is not None else Verdict.PASS
        verdicts.append(NodeVerdict(node, part, verdict, worst, figs, mm, note))
    return rank(verdicts)


def _past_key(s):
    return ownpast.key_of(s.partition, s.node, s.check, s.figure, s.component)


def _figure_rank(fv):
    units = fv.noise_units if fv.noise_units is not None else 0.0
    pct = fv.percent if fv.percent is not None else 0.0
    return (VERDICTS.index(fv.verdict), pct, units)


def rank(verdicts):
    """Worst first: by verdict (:data:`VERDICTS`), then by the
    percent distance of the worst figure (most negative first), then name."""
    def key(nv):
        pct = nv.worst.percent if nv.worst is not None and nv.worst.percent is not None else 0.0
        return (VERDICTS.index(nv.verdict), pct, nv.partition, nv.node)
    return sorted(verdicts, key=key)


def outliers(verdicts):
    """The node verdicts that name a node (:data:`OUTLIER`)."""
    return [v for v in verdicts if v.verdict in OUTLIER]


def outlier_rows(bad):
    """The outliers as a person reads them: ``[(hostlist, [verdicts])]`` in
    their order, the nodes named missing for one same reason (a block the
    site drained, a rack down) folded into one row at the place of the
    first; every other outlier a row of its own (its figure is its own)."""
    from clusterproof.hostlist import compress
    rows, missing = [], {}
    for v in bad:
        if v.verdict == Verdict.MISSING:
            if v.reason in missing:
                missing[v.reason].append(v)
                continue
            missing[v.reason] = [v]
            rows.append(missing[v.reason])
        else:
            rows.append([v])
    return [(compress([v.node for v in row]), row) for row in rows]


def measured_outliers(nv, rule=None):
    """The figures of a node verdict that another run could change: every
    figure not PASS but the inventory mismatches, which are the hardware
    as the node reports it (its memory, its processors), read the same
    again; for a suspect (:func:`suspect`), its figures near the line.
    Empty for a node named for its inventory alone."""
    facts = {m.field for m in nv.mismatches}
    if suspect(nv, rule):
        return [f for f in nv.figures if _near(f, rule or Rule())]
    return [f for f in nv.figures if f.verdict != Verdict.PASS
            and not (f.sample.check == 'inventory' and f.sample.figure in facts)]


def suspect(nv, rule=None):
    """Whether a node that passed has a figure near the line: worse than
    its peers by more than ``rule.suspect_units`` noise units and the
    smallest slowdown that matters, on one run (a figure already
    confirmed or cleared by a repeat is not a suspect again), or as near
    the line against its own earlier screenings (``screen.ownpast``)."""
    rule = rule or Rule()
    return nv.verdict == Verdict.PASS and any(
        (f.confirmed is None and (f.own is None or f.own.confirmed is None)) and _near(f, rule)
        for f in nv.figures)


def _near(f, rule):
    """Whether a figure is near or past the line, against its peers or its own past."""
    smallest = f.smallest_pct or 0.0
    own = f.own is not None and near_own_line(f.own.units, f.own.percent, f.own.noise_pct,
                                              rule, smallest)
    return own or past_line(f.noise_units, f.percent, rule.suspect_units, smallest)


#: the suspects a repeat runs again are at most this share of the nodes
#: (the worst first), so that a screening submits at most about 1.1 jobs
#: per node whatever the population; the outliers are all run again
SUSPECTS_SHARE = 0.1


def to_repeat(verdicts, rule=None):
    """The nodes a repeat runs again: the outliers with a measured figure
    against them (:func:`measured_outliers`) or no result at all, and the
    suspects, near the line (:func:`suspect`), the worst first, at most
    :data:`SUSPECTS_SHARE` of the nodes; a node named only for its
    inventory is not run again."""
    out = [v for v in verdicts
           if v.verdict in OUTLIER and (measured_outliers(v) or not v.figures)]
    near = sorted((v for v in verdicts if suspect(v, rule)), key=_suspect_rank)
    return out + near[:int(SUSPECTS_SHARE * len(verdicts))]


def _suspect_rank(nv):
    units = [f.noise_units for f in nv.figures if f.noise_units is not None]
    units += [f.own.units for f in nv.figures if f.own is not None]
    return min(units, default=0.0)


def drain_command(nv):
    """``scontrol update NodeName=n3 State=DRAIN Reason="..."`` for an outlier."""
    reason = f'clusterproof screen: {nv.verdict}: {nv.reason or nv.verdict}'
    reason = reason.replace('"', "'")[:200]
    return ['scontrol', 'update', f'NodeName={nv.node}', 'State=DRAIN', f'Reason={reason}']


def figure_name(fv):
    """``stream triad``, ``socket 1: stream triad``: what a figure verdict is of."""
    s = fv.sample
    name = f'{s.check} {s.figure}'
    return f'{s.component}: {name}' if s.component else name


def as_row(nv):
    """The table row of a node: node, partition, figure, value, noise units,
    percent, verdict, inventory mismatch."""
    w = nv.worst
    fig = figure_name(w) if w else ''
    value = f'{w.sample.value:g} {w.sample.unit}'.strip() if w and w.sample.value is not None else ''
    units = _fmt(w.noise_units, '{:+.1f}') if w else ''
    pct = _fmt(w.percent, '{:+.1f} %') if w else ''
    mismatched = {m.field for m in nv.mismatches}
    perf = [f for f in nv.figures if f.verdict != Verdict.PASS and not
            (f.sample.check == 'inventory' and f.sample.figure in mismatched)]
    why = min(perf, key=_figure_rank).why if perf else nv.note
    return [nv.node, nv.partition, fig, value, units, pct, nv.verdict,
            '; '.join(mismatch_text(m) for m in nv.mismatches), why]


ROW_HEADERS = ['node', 'partition', 'figure', 'value', 'noise units', 'from peers',
               'verdict', 'inventory mismatch', 'reason']


def _fmt(x, form):
    if x is None:
        return ''
    if math.isinf(x):
        return '-inf' if x < 0 else '+inf'
    return form.format(x)


def as_dict(nv):
    """A node verdict as plain data (``--format json``); the peers' figures
    are given once per group (:func:`peers_dict`), not per node."""
    def fig(fv):
        s = fv.sample
        return {'check': s.check, 'figure': s.figure, 'value': s.value, 'unit': s.unit,
                'pair': list(s.pair) or None, 'runs': s.runs, 'verdict': fv.verdict,
                'component': s.component or None,
                'confirmed': confirmation_text(fv.confirmed) if fv.confirmed else None,
                'history': fv.history or None,
                'own_past': _own_dict(fv.own),
                'noise_units': _json_num(fv.noise_units),
                'percent': _json_num(fv.percent),
                'noise_pct': _json_num(fv.noise_pct), 'smallest_pct': fv.smallest_pct,
                'reference': str(s.reference) if s.reference is not None else None}
    return {'node': nv.node, 'partition': nv.partition, 'verdict': nv.verdict,
            'reason': nv.reason, 'worst': fig(nv.worst) if nv.worst else None,
            'figures': [fig(f) for f in nv.figures],
            'inventory_mismatch': [{'field': m.field, 'expected': str(m.expected),
                                    'found': str(m.found), 'note': m.note}
                                   for m in nv.mismatches]}


def _own_dict(own):
    """The figure against its own earlier screenings, as plain data (null: none)."""
    if own is None:
        return None
    return {'percent': own.percent, 'noise_units': _json_num(own.units),
            'noise_pct': own.noise_pct, 'earlier_screenings': own.earlier,
            'confirmed': confirmation_text(own.confirmed) if own.confirmed else None}


def named_by(nv):
    """The check that named an outlier: its worst figure's; ``result`` when
    it gave none (it failed, or is missing)."""
    return nv.worst.sample.check if nv.worst is not None else 'result'


def finding_of(nv, system, screening_id):
    """The finding id of an outlier (``analysis.findings.finding_id``, kind
    ``outlier``): its system, partition, the check that named it
    (:func:`named_by`), node and screening: the id ``screen`` prints, the
    notification sends and ``clusterproof triage`` takes."""
    from clusterproof.analysis.findings import finding_id
    return finding_id('outlier', system, nv.partition, named_by(nv), nv.node, screening_id)


def as_json(verdicts, note='', findings=None, screening_id=None, rule=None):
    """The whole screening as plain data, the output of ``--format json``
    (its shape is documented in docs/screening.md, "JSON output", and read
    by the acceptance report: keep it). ``findings``: ``{node: finding
    id}`` of the outliers (:func:`finding_of`); ``rule``: the
    ``screen.rule.Rule`` the verdicts were judged by (its defaults when None)."""
    findings = findings or {}
    rule = rule or Rule()
    nodes = [dict(as_dict(v), finding=findings.get(v.node)) for v in verdicts]
    return {'nodes': nodes, 'screening_id': screening_id,
            'outliers': [v.node for v in outliers(verdicts)],
            'peers': peers_dict(verdicts), 'note': note,
            'thresholds_pct': dict(rule.smallest), 'min_noise_units': rule.noise_units,
            'rule': rule.as_dict()}


def peers_dict(verdicts):
    """The peers' median, scaled MAD and count of every (partition, check,
    figure), as plain data."""
    seen = {}
    for nv in verdicts:
        for fv in nv.figures:
            s = fv.sample
            key = (s.partition, s.check, s.figure)
            stats = fv.group or fv.peers
            if stats is not None and key not in seen:
                seen[key] = {'partition': s.partition, 'check': s.check, 'figure': s.figure,
                             'unit': s.unit, 'median': stats.median, 'mad': stats.mad,
                             'count': stats.count}
    return list(seen.values())


def _num(x):
    """``2048`` for 2048.0; other values as they are."""
    if isinstance(x, float) and x.is_integer():
        return int(x)
    return x


def _json_num(x):
    if x is None or math.isfinite(x):
        return x
    return '-inf' if x < 0 else '+inf'
