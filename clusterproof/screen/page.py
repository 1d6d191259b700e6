"""The screening as one HTML page, read at a glance at a thousand nodes.

Every node is a small square, laid out in groups by where it sits: the
leaf switches of Slurm's topology (``scontrol show topology``, what
``topology.conf`` declares) where the site has one, else the racks or
chassis its node names spell (``r03n12``: rack ``r03``, the name without
its last number, when that gives more than one group), else its
partition. A square is coloured by the node's distance from its peers (its
worst figure, in noise units): green within the noise, yellow towards the
limit, then the verdict's own colour (slow orange, FAILED red, missing grey).
Under the grid, the outliers are listed, worst first, with their group,
figure, distance, reason and finding id. One file, no script, no network.
"""

import html
import math
import re
import subprocess
from collections import defaultdict

from clusterproof.parsers.slurm import parse_topology
from clusterproof.parsers.slurm_values import SlurmFormatError
from clusterproof.paths import write_atomic
from clusterproof.references.judge import Verdict
from clusterproof.screen.judge import outlier_rows
from clusterproof.screen.output import figure_name
from clusterproof.screen.verdicts import outliers
from clusterproof.screen.rule import DEFAULT_NOISE_UNITS, Rule
from clusterproof.site.slurm_view import _node_key

_TRAILING_NUMBER = re.compile(r'^(.*?)(\d+)$')


def topology_switches(text):
    """``{leaf switch: [nodes]}`` of ``scontrol show topology`` output
    (``parsers.slurm.parse_topology``); empty when Slurm has no topology
    or prints one this cannot read (the page then lays out by name)."""
    try:
        switches = parse_topology(text or '', 'scontrol show topology')
    except SlurmFormatError:
        return {}
    return {sw.name: list(sw.nodes) for sw in switches if sw.leaf}


def slurm_topology():
    """``scontrol show topology`` output; '' when Slurm has none or cannot
    be asked (the page then lays the nodes out by name or partition)."""
    try:
        proc = subprocess.run(['scontrol', 'show', 'topology'], capture_output=True, text=True,
                              timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ''
    return proc.stdout if proc.returncode == 0 else ''


def name_groups(nodes):
    """``{rack: [nodes]}`` from the node names: the name without its last
    number and the letters before it (``r03n12`` -> ``r03``, ``c1-2-7`` ->
    ``c1-2``); None when that gives one group only."""
    groups = defaultdict(list)
    for n in nodes:
        m = _TRAILING_NUMBER.match(n)
        prefix = m.group(1) if m else n
        groups[re.sub(r'[^0-9]+$', '', prefix) or prefix].append(n)
    return dict(groups) if len(groups) > 1 and len(groups) < len(nodes) else None


def layout(verdicts, topology_text=''):
    """``(how, [(group name, [verdicts])])``: the nodes by leaf switch, by
    name range, else by partition (``how`` says which)."""
    by_node = {v.node: v for v in verdicts}
    switches = topology_switches(topology_text or '')
    if switches:
        how, groups = 'switch', {s: [n for n in ns if n in by_node] for s, ns in switches.items()}
        placed = {n for ns in groups.values() for n in ns}
        rest = [n for n in by_node if n not in placed]
        if rest:
            groups['(in no switch)'] = rest
    else:
        groups = name_groups(list(by_node))
        how = 'rack (node names)'
        if groups is None:
            how, groups = 'partition', defaultdict(list)
            for v in verdicts:
                groups[v.partition].append(v.node)
    out = []
    for name in sorted(groups, key=_node_key):
        members = sorted(groups[name], key=_node_key)
        if members:
            out.append((name, [by_node[n] for n in members]))
    return how, out


def colour(v, k=DEFAULT_NOISE_UNITS):
    """The square's colour: the verdict's for an outlier, else a shade from
    green (at the peers' median or better) to yellow (near the line, ``k``
    noise units)."""
    if v.verdict == Verdict.FAILED:
        return '#c62828'
    if v.verdict == Verdict.MISSING:
        return '#9e9e9e'
    if v.verdict == Verdict.SLOW:
        return '#ef6c00'
    units = v.worst.noise_units if v.worst is not None else None
    if units is None or math.isnan(units) or units >= 0:
        return '#2e7d32'
    frac = min(1.0, -units / k) if math.isfinite(units) else 1.0
    hue = 120 - 65 * frac                  # 120 green .. 55 yellow
    return f'hsl({hue:.0f}, 60%, {38 + 14 * frac:.0f}%)'


def _distance(v):
    w = v.worst
    if w is None:
        return ''
    parts = []
    if w.percent is not None and math.isfinite(w.percent):
        parts.append(f'{w.percent:+.1f} %')
    if w.noise_units is not None:
        parts.append('-inf' if math.isinf(w.noise_units) and w.noise_units < 0 else
                     '+inf' if math.isinf(w.noise_units) else f'{w.noise_units:+.1f} noise units')
    return ', '.join(parts)


def _title(v):
    w = v.worst
    fig = figure_name(w) if w is not None else ''
    return ' | '.join(p for p in (v.node, str(v.verdict), fig, _distance(v),
                                  v.reason if v.verdict != Verdict.PASS else '') if p)


STYLE = '''
body { font: 14px system-ui, sans-serif; margin: 16px; color: #222; }
h1 { font-size: 20px; margin: 0 0 4px; }
.summary { margin: 0 0 12px; }
.legend span { display: inline-block; margin-right: 14px; }
.legend i { display: inline-block; width: 12px; height: 12px; vertical-align: middle;
            margin-right: 4px; }
.groups { display: flex; flex-wrap: wrap; gap: 10px; }
.group { border: 1px solid #ccc; padding: 4px; }
.group h2 { font-size: 11px; font-weight: normal; margin: 0 0 3px; color: #555; }
.cells { display: grid; grid-template-columns: repeat(var(--cols), 12px); gap: 2px; }
.n { width: 12px; height: 12px; }
.n.slow, .n.FAILED, .n.missing { outline: 2px solid #000; outline-offset: -1px; }
table { border-collapse: collapse; margin-top: 16px; }
td, th { border-bottom: 1px solid #ddd; padding: 3px 8px; text-align: left;
         vertical-align: top; }
th { background: #f3f3f3; }
code { font-size: 12px; }
'''


def render(verdicts, system='', screening_id='', note='', findings=None, topology_text='',
           rule=None):
    """The page (HTML text) of a screening's verdicts, judged by ``rule`` (a
    ``screen.rule.Rule``; its defaults when None)."""
    findings = findings or {}
    k = (rule or Rule()).noise_units
    how, groups = layout(verdicts, topology_text)
    bad = outliers(verdicts)
    counts = defaultdict(int)
    for v in verdicts:
        counts[str(v.verdict)] += 1
    e = html.escape
    out = ['<!DOCTYPE html><html><head><meta charset="utf-8">',
           f'<title>Screening of {e(system)}: {len(bad)} outlier(s) of {len(verdicts)} nodes'
           '</title>', f'<style>{STYLE}</style></head><body>',
           f'<h1>Screening of {e(system)}: {len(verdicts)} nodes, {len(bad)} outlier(s)</h1>',
           '<p class="summary">' + ', '.join(f'{counts[k]} {k}' for k in
                                             ('pass', 'slow', 'FAILED', 'missing') if counts[k])
           + f'. Nodes laid out by {e(how)}; screening <code>{e(screening_id or "")}</code>.'
           + (f' {e(note)}.' if note else '') + '</p>',
           '<p class="legend"><span><i style="background:#2e7d32"></i>at the peers\' median '
           'or better</span><span><i style="background:hsl(55,60%,52%)"></i>'
           f'{k:g} noise units below (the line)</span>'
           '<span><i style="background:#ef6c00"></i>slow</span>'
           '<span><i style="background:#c62828"></i>FAILED</span>'
           '<span><i style="background:#9e9e9e"></i>missing</span></p>',
           f'<div class="groups" data-layout="{e(how)}">']
    for name, members in groups:
        cols = max(4, min(32, math.ceil(math.sqrt(len(members) * 2))))
        out.append(f'<div class="group" data-group="{e(name)}"><h2>{e(name)} '
                   f'({len(members)})</h2><div class="cells" style="--cols:{cols}">')
        out += [f'<div class="n {e(str(v.verdict))}" data-node="{e(v.node)}" '
                f'data-verdict="{e(str(v.verdict))}" style="background:{colour(v, k)}" '
                f'title="{e(_title(v))}"></div>' for v in members]
        out.append('</div></div>')
    out.append('</div>')
    group_of = {v.node: name for name, members in groups for v in members}
    out.append(f'<h2>Outliers ({len(bad)})</h2>')
    if bad:
        out.append('<table id="outliers"><tr><th>node</th><th>group</th><th>verdict</th>'
                   '<th>figure</th><th>from peers</th><th>reason</th><th>finding</th></tr>')
        for nodes, row in outlier_rows(bad):
            v, w = row[0], row[0].worst
            fig = figure_name(w) if w is not None else ''
            groups_of_row = ', '.join(dict.fromkeys(group_of.get(x.node, '') for x in row))
            ids = [findings.get(x.node, '') for x in row]
            found = (f'<code>{e(ids[0])}</code>' if len(row) == 1 else
                     f'<span title="{e(" ".join(ids))}">{len(row)} findings</span>')
            out.append(f'<tr data-node="{e(nodes)}"><td>{e(nodes)}'
                       + (f' ({len(row)})' if len(row) > 1 else '') + '</td>'
                       f'<td>{e(groups_of_row)}</td><td>{e(str(v.verdict))}</td>'
                       f'<td>{e(fig)}</td><td>{e(_distance(v))}</td><td>{e(v.reason)}</td>'
                       f'<td>{found}</td></tr>')
        out.append('</table>')
    else:
        out.append('<p>None: every node is within its peers.</p>')
    out.append('</body></html>\n')
    return '\n'.join(out)


def write(path, verdicts, **kw):
    """Write the page (:func:`render`) to ``path``, whole or not at all."""
    return write_atomic(path, render(verdicts, **kw))
