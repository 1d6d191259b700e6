"""A screening's verdicts as people and programs read them: the table
row of a node, the drain command of an outlier, its finding id, and the
whole screening as plain data (``--format json``, documented in
docs/screening.md).
"""

import math

from clusterproof.references.judge import Verdict
from clusterproof.screen.peerinventory import mismatch_text
from clusterproof.screen.rule import Rule
from clusterproof.screen.verdicts import _figure_rank, outliers


def confirmation_text(confirmed):
    """``confirmed in 2 of 2 runs`` / ``not confirmed (near the line in 1 of 2 runs)``."""
    near, n = confirmed
    if near == n:
        return f'confirmed in {near} of {n} runs'
    return f'not confirmed (near the line in {near} of {n} runs)'


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
    value = (f'{w.sample.value:g} {w.sample.unit}'.strip()
             if w and w.sample.value is not None else '')
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


def _json_num(x):
    if x is None or math.isfinite(x):
        return x
    return '-inf' if x < 0 else '+inf'
