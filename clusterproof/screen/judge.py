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
  ``references.direction.lower_is_better``):
  :func:`distance`;
- the verdict (``references.judge.Verdict``, the one vocabulary): ``slow``
  when the node is worse than the median by more
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
from collections import defaultdict
from dataclasses import replace

from clusterproof.references import judge as refjudge
from clusterproof.references.judge import Verdict
from clusterproof.screen import ownpast
from clusterproof.screen import pairs as nodepairs
from clusterproof.screen.rule import Rule
from clusterproof.screen.output import _fmt, confirmation_text
from clusterproof.screen.peerinventory import (INVENTORY_FIGURES, INVENTORY_UNITS,
                                               inventory_mismatches, mismatch_text,
                                               typical_inventory)
from clusterproof.screen.stats import (distance, mean_of_runs, near_own_line, noise_pct, past_line,
                                       peer_stats, widening)
from clusterproof.screen.verdicts import (OUTLIER, FigureVerdict, NodeVerdict, Sample, _figure_rank,
                                          rank)

#: below this many nodes a node's peers are the other nodes (the node left
#: out of the median and MAD: among 4 nodes, one slow and one very fast
#: would otherwise make the MAD as wide as the outliers); from it on the
#: node's own weight is negligible and the statistics are computed once
LEAVE_ONE_OUT_BELOW = 20


def better(a, b):
    """The better of two samples of one node, check and figure: the higher
    value, or the lower where the figure is lower-is-better
    (as its check declared, ``references.direction.lower_is_better``); a value beats none (a failed
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
    groups, inventory, inv_failed, inv_runs = _grouped(samples, kind)
    per_node = _judge_groups(groups, rule, past)
    for key, s in inv_failed.items():
        per_node[key].append(judge_figure(s, None, rule))
    wanted = dict(nodes or {})
    _add_missing(per_node, samples, wanted)
    mismatches = _inventory_verdicts(per_node, inventory, inv_runs, kind)
    keys = set(per_node) | set(mismatches) | {(p, n) for p, n in inventory}
    keys |= {(p, n) for n, p in wanted.items()}
    return rank([_node_verdict(part, node, per_node.get((part, node), []),
                               mismatches.get((part, node), []), (part, node) in inventory)
                 for part, node in keys])


def _grouped(samples, kind):
    """The samples by (partition, kind, check, figure, component), and the
    inventory: ``{(partition, node): {figure: value}}``, the failed
    inventory samples and the runs of each node's inventory."""
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
    return groups, inventory, inv_failed, inv_runs


def _judge_groups(groups, rule, past):
    """``{(partition, node): [FigureVerdict]}`` of the performance figures,
    each against its group; a figure between two nodes attributed to them
    (``screen.pairs``)."""
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
    return per_node


def _add_missing(per_node, samples, wanted):
    """A ``missing`` figure for each check a node of ``wanted`` gave no
    result of while others of its partition did."""
    reported = defaultdict(set)                     # (partition, check) -> nodes
    for s in samples:
        reported[(s.partition, s.check)].update(s.pair or (s.node,))
    for (part, check), have in reported.items():
        for node in sorted(n for n, p in wanted.items() if p == part and n not in have):
            per_node[(part, node)].append(FigureVerdict(
                Sample(node, part, check, 'result'), Verdict.MISSING,
                why=f'{check}: no result from this node'))


def _inventory_verdicts(per_node, inventory, inv_runs, kind):
    """Each node's inventory against its peers': a ``FAILED`` figure per
    mismatch added to ``per_node``; returns ``{(partition, node): [mismatches]}``."""
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
    return mismatches


def _node_verdict(part, node, figs, mm, has_inventory):
    """The :class:`NodeVerdict` of a node from its figures and mismatches."""
    worst = min(figs, key=_figure_rank) if figs else None
    note = ''
    if not figs and not has_inventory and not mm:
        verdict, note = Verdict.MISSING, 'no result from any check'
    elif mm or (worst is not None and worst.verdict == Verdict.FAILED):
        verdict = Verdict.FAILED
    else:
        verdict = worst.verdict if worst is not None else Verdict.PASS
    return NodeVerdict(node, part, verdict, worst, figs, mm, note)


def _past_key(s):
    return ownpast.key_of(s.partition, s.node, s.check, s.figure, s.component)


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


