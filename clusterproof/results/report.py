"""The HTML report: one self-contained page (plotly.js inlined, no network).

Built from figure names, units and test parameters, so it covers whatever
checks ran:

- pass/fail of the newest session against the references
- scaling: every figure of a test with a thread count parameter
  (``num_threads``...) against that count, references drawn in
  (IOR and IOzone bandwidth, random-I/O IOPS)
- STREAM kernels (figures copy/scale/add/triad) per variant against the
  references (DRAM and pmem side by side where both ran)
- HPL efficiency (figures named ``*efficiency*``)
- fio latency percentiles (figures ``lat*_pNN``)
- mmap sweep: memory/device ratios of wall time per point and access, as in
  the published table (figures ``memory_wall`` and ``<device>_wall`` of one
  test case)
- history of every figure over the sessions, with the reference band
- provenance of every session

Every smoke or emulated result is labelled so, in tables and plot legends.
"""

import datetime
import html
import json
import math
import re

from clusterproof.references.judge import bounds, load_references, lookup
from clusterproof.results.compare import against_references
from clusterproof.results.database import THREAD_ATTRS

STREAM_RE = re.compile(r'^(copy|scale|add|triad)(?:_bw|_rate)?$', re.I)


def _is_stream(rec):
    return bool(STREAM_RE.match(rec.figure)) and 'stream' in rec.check.lower()
PERCENTILE_RE = re.compile(r'^c?lat\w*?_p(\d+(?:[._]\d+)?)$', re.I)
EFFICIENCY_RE = re.compile(r'efficiency', re.I)

_CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}
td,th{border:1px solid #ddd;padding:2px 6px;text-align:left}
th{background:#f3f3f3}.num{text-align:right;font-variant-numeric:tabular-nums}
.pass{color:#1a7f37}.REGRESSION,.FAILED{color:#fff;background:#cf222e}
.better{color:#0550ae}.no-ref,.not-judged,.missing{color:#777}
.flag{display:inline-block;padding:0 4px;margin-left:3px;border-radius:3px;
background:#fff3cd;color:#7a5a00;border:1px solid #e0c060;font-size:.8em}
.banner{padding:.6em;background:#fff3cd;border:1px solid #e0c060;margin:.5em 0}
.plot{width:100%;max-width:1000px;height:380px}
.verdict-pass{color:#1a7f37;font-weight:bold}.verdict-fail{color:#cf222e;font-weight:bold}
"""


def _plotlyjs():
    from plotly.offline import get_plotlyjs
    return get_plotlyjs()


def _flags_html(flags):
    return ''.join(f'<span class="flag">{html.escape(f.upper())}</span>' for f in flags)


def _num(x):
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return '-'
    return f'{x:.5g}'


def _flag_suffix(flags):
    return f' [{", ".join(sorted(flags))}]' if flags else ''


class _Page:
    def __init__(self):
        self.parts = []
        self.plots = []

    def add(self, text):
        self.parts.append(text)

    def plot(self, traces, layout):
        div = f'plot{len(self.plots)}'
        layout = dict({'margin': {'l': 60, 'r': 20, 't': 40, 'b': 50},
                       'legend': {'orientation': 'h'}}, **layout)
        self.plots.append((div, traces, layout))
        self.add(f'<div class="plot" id="{div}" data-plot="{len(self.plots) - 1}"></div>')


def _ref_of(refs, rec):
    found = lookup(refs.get(rec.system, {}), rec)
    return found


def build(sessions, recs, refs_by_system=None, title='clusterproof report', verdicts=None,
          now=None):
    """The report page as a string. ``recs`` are the records of
    ``sessions``; ``verdicts`` (optional) is an acceptance verdict table
    ``[(item, value, reference, verdict)]`` shown first."""
    refs = dict(refs_by_system or {})
    for system in {r.system for r in recs}:
        refs.setdefault(system, load_references(system))
    latest = sessions[-1] if sessions else None
    latest_recs = [r for r in recs if latest and r.session == latest.uuid]
    page = _Page()
    now = now or datetime.datetime.now().astimezone()
    page.add(f'<h1>{html.escape(title)}</h1>')
    page.add(f'<p>{len(sessions)} session(s); systems '
             f'{html.escape(", ".join(sorted({r.system for r in recs})) or "-")}; '
             f'written {now:%Y-%m-%d %H:%M %z}.</p>')
    smoke = sorted({r.test for r in recs if r.smoke})
    emulated = sorted({r.test for r in recs if r.emulated})
    if smoke:
        page.add(f'<div class="banner">SMOKE: {len(smoke)} test(s) ran at smoke sizes; their '
                 f'figures are for function only and are labelled SMOKE below.</div>')
    if emulated:
        page.add(f'<div class="banner">EMULATED: {len(emulated)} test(s) ran on emulated '
                 f'hardware; their figures are not the speed of real hardware and are '
                 f'labelled EMULATED below.</div>')

    if verdicts:
        _acceptance_section(page, verdicts)
    if latest:
        _table_section(page, latest, latest_recs, refs)
        _scaling_section(page, latest_recs, refs)
        _stream_section(page, latest_recs, refs)
        _hpl_section(page, latest_recs, refs)
        _latency_section(page, latest_recs)
        _mmap_section(page, latest_recs)
    if len(sessions) > 1:
        _history_section(page, recs, refs)
    _provenance_section(page, sessions)
    return _render(page, title)


def _acceptance_section(page, verdicts):
    page.add('<h2 id="acceptance">Acceptance verdict</h2><table><tr><th>item</th>'
             '<th>measured (median)</th><th>reference</th><th>verdict</th></tr>')
    for item, value, ref, verdict in verdicts:
        cls = 'verdict-pass' if verdict == 'pass' else 'verdict-fail'
        page.add(f'<tr><td>{html.escape(item)}</td><td class="num">{html.escape(value)}</td>'
                 f'<td>{html.escape(ref)}</td><td class="{cls}">{html.escape(verdict)}</td></tr>')
    page.add('</table>')


def _table_section(page, latest, latest_recs, refs):
    rows = against_references(latest_recs, refs)
    counts = {}
    for r in rows:
        counts[r.verdict] = counts.get(r.verdict, 0) + 1
    page.add(f'<h2 id="verdicts">Session {html.escape(latest.label())} against the '
             f'references</h2><p>' + ', '.join(f'{html.escape(k)}: {v}'
                                                for k, v in sorted(counts.items())) + '</p>')
    page.add('<table id="verdict-table"><tr><th>test</th><th>partition</th><th>figure</th>'
             '<th>value</th><th>reference</th><th>ratio</th><th>tolerance</th>'
             '<th>verdict</th></tr>')
    for r in rows:
        page.add(f'<tr><td>{html.escape(r.test)}{_flags_html(r.flags)}</td>'
                 f'<td>{html.escape(r.system)}:{html.escape(r.partition)}</td>'
                 f'<td>{html.escape(r.figure)}</td>'
                 f'<td class="num">{_num(r.value)} {html.escape(r.unit)}</td>'
                 f'<td class="num">{_num(r.base)}</td>'
                 f'<td class="num">{"" if r.ratio is None else f"{r.ratio:.3f}"}</td>'
                 f'<td>{html.escape(r.tolerance)}</td>'
                 f'<td class="{html.escape(r.verdict)}">{html.escape(r.verdict)}</td></tr>')
    page.add('</table>')


def _thread_attr(rec):
    params = rec.params
    for a in THREAD_ATTRS:
        if a in params:
            return a
    return None


def _scaling_section(page, recs, refs):
    groups = {}
    for r in recs:
        attr = _thread_attr(r)
        if not r.figure or not attr or _is_stream(r) or PERCENTILE_RE.match(r.figure):
            continue
        try:
            x = float(r.params[attr])
        except ValueError:
            continue
        rest = tuple(sorted((k, v) for k, v in r.params.items() if k != attr))
        groups.setdefault((r.system, r.partition, r.check, rest, r.unit, attr), []).append((x, r))
    if not groups:
        return
    page.add('<h2 id="scaling">Scaling with the thread count</h2>')
    for (system, part, check, rest, unit, attr), items in sorted(groups.items(),
                                                                  key=lambda kv: str(kv[0])):
        if len({x for x, _ in items}) < 2:
            continue
        traces = []
        by_fig = {}
        for x, r in sorted(items, key=lambda t: t[0]):
            by_fig.setdefault(r.figure, []).append((x, r))
        for fig, pts in by_fig.items():
            flags = sorted({f for _, r in pts for f in r.flags})
            traces.append({'type': 'scatter', 'mode': 'lines+markers',
                           'name': fig + _flag_suffix(flags),
                           'x': [x for x, _ in pts], 'y': [r.value for _, r in pts]})
            rx, ry = [], []
            for x, r in pts:
                found = _ref_of(refs, r)
                if found:
                    rx.append(x)
                    ry.append(found[0])
            if rx:
                traces.append({'type': 'scatter', 'mode': 'lines+markers',
                               'name': f'{fig} reference', 'x': rx, 'y': ry,
                               'line': {'dash': 'dash'}, 'marker': {'symbol': 'x'}})
        variant = ' '.join(f'{k}={v}' for k, v in rest)
        page.plot(traces, {'title': {'text': f'{check} {variant} @{system}:{part}'},
                           'xaxis': {'title': {'text': attr}, 'type': 'log'},
                           'yaxis': {'title': {'text': unit}}})


def _stream_section(page, recs, refs):
    pts = [r for r in recs if r.figure and _is_stream(r)]
    if not pts:
        return
    page.add('<h2 id="stream">STREAM kernels against the references</h2>')
    groups = {}
    for r in pts:
        groups.setdefault((r.system, r.partition, r.check, r.unit), []).append(r)
    for (system, part, check, unit), rs in sorted(groups.items()):
        traces = []
        by_test = {}
        for r in rs:
            by_test.setdefault(r.test, []).append(r)
        for test, trs in sorted(by_test.items()):
            flags = sorted({f for r in trs for f in r.flags})
            label = ' '.join(f'{k}={v}' for k, v in sorted(trs[0].params.items())) or test
            traces.append({'type': 'bar', 'name': label + _flag_suffix(flags),
                           'x': [STREAM_RE.match(r.figure).group(1).capitalize() for r in trs],
                           'y': [r.value for r in trs]})
            refd = [(STREAM_RE.match(r.figure).group(1).capitalize(), _ref_of(refs, r))
                    for r in trs]
            refd = [(k, f[0]) for k, f in refd if f]
            if refd:
                traces.append({'type': 'scatter', 'mode': 'markers',
                               'name': f'{label} reference',
                               'x': [k for k, _ in refd], 'y': [v for _, v in refd],
                               'marker': {'symbol': 'line-ew-open', 'size': 30,
                                          'line': {'width': 3}}})
        page.plot(traces, {'title': {'text': f'{check} @{system}:{part}'}, 'barmode': 'group',
                           'yaxis': {'title': {'text': unit}}})


def _hpl_section(page, recs, refs):
    pts = [r for r in recs if r.figure and EFFICIENCY_RE.search(r.figure)]
    if not pts:
        return
    page.add('<h2 id="hpl">HPL efficiency</h2>')
    traces = [{'type': 'bar', 'name': 'measured',
               'x': [r.test + _flag_suffix(r.flags) for r in pts], 'y': [r.value for r in pts]}]
    refd = [(r.test + _flag_suffix(r.flags), _ref_of(refs, r)) for r in pts]
    refd = [(t, f[0]) for t, f in refd if f]
    if refd:
        traces.append({'type': 'scatter', 'mode': 'markers', 'name': 'reference',
                       'x': [t for t, _ in refd], 'y': [v for _, v in refd],
                       'marker': {'symbol': 'line-ew-open', 'size': 30, 'line': {'width': 3}}})
    page.plot(traces, {'title': {'text': 'HPL efficiency'},
                       'yaxis': {'title': {'text': pts[0].unit}}})


def _latency_section(page, recs):
    groups = {}
    for r in recs:
        m = PERCENTILE_RE.match(r.figure or '')
        if m:
            pct = float(m.group(1).replace('_', '.'))
            prefix = r.figure[:m.start(1)]
            groups.setdefault((r.system, r.partition, r.test, prefix, r.unit), []).append((pct, r))
    if not groups:
        return
    page.add('<h2 id="latency">Latency percentiles</h2>')
    by_plot = {}
    for (system, part, test, prefix, unit), pts in groups.items():
        by_plot.setdefault((system, part, unit), []).append((test, prefix, sorted(pts, key=lambda t: t[0])))
    for (system, part, unit), series in sorted(by_plot.items()):
        traces = []
        for test, prefix, pts in series:
            flags = sorted({f for _, r in pts for f in r.flags})
            traces.append({'type': 'scatter', 'mode': 'lines+markers',
                           'name': f'{test} {prefix.rstrip("_p")}' + _flag_suffix(flags),
                           'x': [f'p{p:g}' for p, _ in pts], 'y': [r.value for _, r in pts]})
        page.plot(traces, {'title': {'text': f'latency percentiles @{system}:{part}'},
                           'xaxis': {'title': {'text': 'percentile'}, 'type': 'category'},
                           'yaxis': {'title': {'text': unit}, 'type': 'log'}})


WALL_RE = re.compile(r'^(\w+)_wall$')


def _mmap_section(page, recs):
    """Memory/device wall-time ratios of each mmap sweep test case: the
    published table's Mem.Ms/Device.Ms (near 1: the device keeps up with
    memory for that access pattern)."""
    cases = {}
    for r in recs:
        m = WALL_RE.match(r.figure or '')
        if m and math.isfinite(r.value):
            cases.setdefault((r.system, r.partition, r.test), {})[m.group(1)] = r
    rows = []
    for (system, part, test), walls in sorted(cases.items()):
        mem = walls.get('memory')
        if mem is None:
            continue
        for target, dev in sorted(walls.items()):
            if target != 'memory':
                ratio = mem.value / dev.value if dev.value else None
                rows.append((test, f'{system}:{part}', target, mem, dev, ratio,
                             sorted(set(mem.flags) | set(dev.flags))))
    if not rows:
        return
    page.add('<h2 id="mmap-ratios">mmap sweep: memory / device wall time</h2>'
             '<p>Wall time of the sweep over memory divided by the same sweep over a file on '
             'the device (the published Mem/Device ratio): near 1, the device keeps up with '
             'memory for that access; small, the sweep waited for the device. Smoke files fit '
             'in the page cache, so smoke ratios are cache figures.</p>'
             '<table id="mmap-ratio-table"><tr><th>test</th><th>partition</th><th>device</th>'
             '<th>memory wall (s)</th><th>device wall (s)</th><th>memory/device</th></tr>')
    for test, part, target, mem, dev, ratio, flags in rows:
        page.add(f'<tr><td>{html.escape(test)}{_flags_html(flags)}</td>'
                 f'<td>{html.escape(part)}</td><td>{html.escape(target)}</td>'
                 f'<td class="num">{_num(mem.value)}</td><td class="num">{_num(dev.value)}</td>'
                 f'<td class="num">{"-" if ratio is None else f"{ratio:.3f}"}</td></tr>')
    page.add('</table>')


def _history_section(page, recs, refs):
    series = {}
    for r in recs:
        if r.figure and math.isfinite(r.value):
            series.setdefault(r.key, []).append(r)
    series = {k: v for k, v in series.items() if len({r.session for r in v}) > 1}
    if not series:
        return
    page.add('<h2 id="history">History with the reference band</h2>')
    for key, rs in sorted(series.items()):
        rs.sort(key=lambda r: r.start)
        system, part, _env, test, figure = key
        xs = [datetime.datetime.fromtimestamp(r.start).strftime('%Y-%m-%d %H:%M:%S') for r in rs]
        traces = []
        normal = [(x, r) for x, r in zip(xs, rs) if not r.flags]
        flagged = [(x, r) for x, r in zip(xs, rs) if r.flags]
        for pts, name in ((normal, figure), (flagged, f'{figure} [smoke/emulated]')):
            if pts:
                traces.append({'type': 'scattergl' if len(pts) > 200 else 'scatter',
                               'mode': 'lines+markers', 'name': name,
                               'x': [x for x, _ in pts], 'y': [r.value for _, r in pts],
                               'marker': {'size': 4}})
        shapes = []
        found = _ref_of(refs, rs[-1])
        if found:
            ref, lower, upper = found[0], found[1], found[2]
            lo, hi = bounds(ref, lower, upper)
            values = [r.value for r in rs]
            span = (max(values) - min(values)) or abs(ref) * 0.1 or 1
            y0 = lo if lo is not None else min(min(values), ref) - span
            if lo is None and min(values) >= 0:
                y0 = max(y0, 0)
            y1 = hi if hi is not None else max(max(values), ref) + span
            shapes.append({'type': 'rect', 'xref': 'paper', 'x0': 0, 'x1': 1, 'y0': y0,
                           'y1': y1, 'fillcolor': 'rgba(26,127,55,0.12)', 'line': {'width': 0},
                           'layer': 'below'})
            traces.append({'type': 'scatter', 'mode': 'lines', 'name': 'reference',
                           'x': [xs[0], xs[-1]], 'y': [ref, ref],
                           'line': {'dash': 'dash', 'color': '#1a7f37'}})
        page.plot(traces, {'title': {'text': f'{test} {figure} @{system}:{part}'},
                           'yaxis': {'title': {'text': rs[0].unit}}, 'shapes': shapes,
                           'height': 300})


def _provenance_section(page, sessions):
    page.add('<h2 id="provenance">Provenance</h2><table id="provenance-table"><tr>'
             '<th>session</th><th>started</th><th>systems</th><th>mode</th><th>flags</th>'
             '<th>project revision</th><th>site configuration</th><th>node lists</th>'
             '<th>binaries</th><th>command</th></tr>')
    for s in sessions:
        cases = s.cases
        revs = sorted({str(c.get('cp_git_rev', '')) for c in cases} - {''})
        confs = sorted({str(c.get('cp_config_hash', '')) for c in cases} - {''})
        nodes = sorted({','.join(c.get('job_nodelist') or []) for c in cases} - {''})
        bins = sorted({' '.join(x for x in (c.get('binary_path', ''), c.get('binary_version', ''),
                                            c.get('spack_spec', ''),
                                            c.get('spack_lock_hash', '')) if x)
                       for c in cases} - {''})
        flags = (['smoke'] if s.smoke else []) + (['emulated'] if s.emulated else [])
        page.add(f'<tr><td>{html.escape(s.uuid)}</td>'
                 f'<td>{html.escape(s.info.get("time_start", ""))}</td>'
                 f'<td>{html.escape(", ".join(s.systems))}</td>'
                 f'<td>{html.escape(", ".join(s.modes))}</td><td>{_flags_html(flags)}</td>'
                 f'<td>{html.escape(" ".join(revs))}</td><td>{html.escape(" ".join(confs))}</td>'
                 f'<td>{html.escape("; ".join(nodes))}</td>'
                 f'<td>{"<br>".join(html.escape(b) for b in bins)}</td>'
                 f'<td>{html.escape(s.info.get("cmdline", ""))}</td></tr>')
    page.add('</table>')


def _finite(obj):
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, list):
        return [_finite(v) for v in obj]
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    return obj


def _render(page, title):
    data = json.dumps(_finite([{'data': t, 'layout': l} for _, t, l in page.plots]),
                      allow_nan=False, default=str, separators=(',', ':'))
    data = data.replace('</', '<\\/')
    return ''.join([
        '<!DOCTYPE html><html><head><meta charset="utf-8">',
        f'<title>{html.escape(title)}</title><style>{_CSS}</style>',
        '<script>', _plotlyjs().replace('</script', '<\\/script'), '</script>',
        '</head><body>', *page.parts,
        f'<script id="plot-data" type="application/json">{data}</script>',
        '<script>(function(){var plots=JSON.parse('
        'document.getElementById("plot-data").textContent);'
        'document.querySelectorAll("[data-plot]").forEach(function(div){'
        'var p=plots[+div.dataset.plot];'
        'Plotly.newPlot(div,p.data,p.layout,{responsive:true,displaylogo:false});});'
        '})();</script></body></html>'])
