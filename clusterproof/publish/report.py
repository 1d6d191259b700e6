"""The HTML report, "the morning page": one self-contained file (plotly.js
inlined once, no network), rendered from the Jinja2 templates of
``clusterproof/publish/templates`` with autoescaping on.

First screen (what a reader needs at 8 in the morning):

1. the verdict counts of the newest session (pass, regression, change,
   failed, skipped, not judged; any other verdict, e.g. ``xfail``, is
   counted under its own name: ``judge.Verdict.bucket``);
2. the changes the change-point detector found in the last
   :data:`RECENT_SESSIONS` sessions, ranked by size x confidence, with what
   changed in the provenance (:func:`clusterproof.analysis.findings.detect`,
   as ``clusterproof changes`` finds them);
3. the failures and regressions with their reason.

Below, one section per test family (the check name, so a new benchmark
needs no change here): the judged rows, small multiples (a compact history
per figure with the reference band of its row and its change points), the
scaling curves against the thread count (with the published curve of
system ``pixstor`` where it has one, never judged against), latency
percentiles; then the mmap memory/device ratios and the provenance.

The page only formats: what it shows is judged, counted and looked up
before it, by :func:`clusterproof.analysis.morning.prepare` (a
:class:`~clusterproof.analysis.morning.Morning`). One judge: every verdict,
and every reference or band drawn, comes from the rows of
:func:`clusterproof.analysis.compare.against_references` (an emulated
figure's band is the one of ``<system>.emulated.yaml`` it was judged
against). Smoke and emulated results are labelled on every row and figure.

The page stays bounded whatever the history: small multiples only for
figures that changed or did not pass plus :data:`MAX_MULTIPLES` others,
histories downsampled to :data:`MAX_POINTS` points, everything else a table.
"""

import datetime
import json
import math
import re
from pathlib import Path

import jinja2
import plotly.io
from markupsafe import Markup
from plotly.offline import get_plotlyjs

from clusterproof.analysis.morning import CHANGE, PUBLISHED_SYSTEM
from clusterproof.analysis.recent import RECENT_SESSIONS
from clusterproof.references.judge import Bucket, Verdict
from clusterproof.store.sessions import THREAD_ATTRS, check_name

TEMPLATES = Path(__file__).with_name('templates')
#: changes and failures listed on the first screen (the rest below)
FIRST_SCREEN_ROWS = 8
#: small multiples beyond the figures that changed or did not pass
MAX_MULTIPLES = 12
#: ... and in all (each plot costs the browser some 40 ms to draw)
MAX_MULTIPLES_TOTAL = 30
#: scaling plots (those with a published curve or a failed point first)
MAX_SCALING = 8
#: latency percentile plots
MAX_LATENCY = 4
#: bar charts of the newest values against their references (families
#: without a thread count axis: STREAM kernels, HPL efficiency...)
MAX_BARS = 4
#: figures of one bar chart
BAR_FIGURES = 40
#: points of one small multiple's history
MAX_POINTS = 120
PERCENTILE_RE = re.compile(r'^c?lat\w*?_p(\d+(?:[._]\d+)?)$', re.I)
_PLOT_CONFIG = {'displaylogo': False, 'responsive': True}
_SMALL_CONFIG = dict(_PLOT_CONFIG, displayModeBar=False)


def bucket(verdict):
    """The count a :class:`~clusterproof.references.judge.Verdict` goes to:
    one of :data:`clusterproof.analysis.morning.BUCKETS`, else its own name (``xfail``...)."""
    return Verdict.read(verdict).bucket


def build(morning, title='clusterproof report', now=None):
    """The report page as a string: the
    :class:`~clusterproof.analysis.morning.Morning` ``morning`` formatted."""
    plots = []
    families = _families(morning, plots)
    now = now or datetime.datetime.now().astimezone()
    view = morning.view
    return _env().get_template('report.html.j2').render(
        title=title, now=f'{now:%Y-%m-%d %H:%M %z}', latest=morning.latest,
        systems=view['systems'], smoke=view['smoke'], emulated=view['emulated'],
        counts=morning.counts, sections=_COUNT_SECTIONS, changes=morning.changes,
        first=FIRST_SCREEN_ROWS, failures=[_failure(f) for f in morning.failures],
        families=families, mmap=_mmap_rows(morning.mmap),
        provenance=view['sessions'], recent=RECENT_SESSIONS,
        plotlyjs=Markup(get_plotlyjs().replace('</script', '<\\/script')),
        plots=plots, num=_num)


def _env():
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)),
                             autoescape=True, trim_blocks=True, lstrip_blocks=True,
                             undefined=jinja2.StrictUndefined)
    env.filters['bucket'] = bucket
    return env


def _num(x):
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return '-'
    return f'{x:.5g}'


#: the buckets that need no attention
_QUIET = (Bucket.PASS, Bucket.NOT_JUDGED)
#: the section a count links to (else the families)
_COUNT_SECTIONS = {CHANGE: 'changes', Bucket.FAILED: 'failures', Bucket.REGRESSION: 'failures'}


# -- changes --------------------------------------------------------------------------

def _time(iso):
    return datetime.datetime.fromisoformat(iso).timestamp()


# -- first screen: failures --------------------------------------------------------------

_LABELS = ('smoke', 'emulated', 'emulated-ref', 'ref-changed')


def _reason(row):
    if row.verdict in (Verdict.REGRESSION, Verdict.OUT_OF_BOUNDS, Verdict.XPASS):
        what = ('met a reference marked $xfail (a stale mark)' if row.verdict == Verdict.XPASS
                else f'tolerance {row.tolerance}: {row.reason}')
        ratio = f'{(row.ratio - 1) * 100:+.1f}%; ' if row.ratio else ''
        text = f'{_num(row.value)} {row.unit} against {_num(row.base)} ({ratio}{what})'
        if 'ref-changed' in row.flags:
            text += f'; the run was judged against {row.ran_against or "no reference"}'
        return text
    return row.reason or str(row.verdict)


def _failure(f):
    """A failure of the first screen: its row, finding and state (see
    :func:`clusterproof.analysis.morning.prepare`) with the reason and labels
    shown."""
    return dict(f, reason=_reason(f['row']), labels=_labels(f['row'].flags))


def _labels(flags):
    return [f for f in flags if f in _LABELS]


# -- families ---------------------------------------------------------------------------

def family_of(rec):
    """The test family of a record: its check (test class) name."""
    return rec.check or check_name(rec.test)


def _families(morning, plots):
    hist_by_key, change_at, published = morning.histories, morning.change_at, morning.published
    fams = {}
    for row in morning.rows:
        fams.setdefault(family_of(row.rec), []).append(row)
    changed = set(change_at)
    wanted = sorted((row for row in morning.rows if row.rec.figure),
                    key=lambda r: (r.rec.key not in changed, r.verdict.bucket in _QUIET))
    chosen = set()
    extra = 0
    for row in wanted:
        rec = row.rec
        if len(chosen) >= MAX_MULTIPLES_TOTAL:
            break
        notable = rec.key in changed or row.verdict.bucket not in _QUIET
        if not notable:
            if extra >= MAX_MULTIPLES:
                break
            extra += 1
        if rec.key in hist_by_key and len(hist_by_key[rec.key].points) > 1:
            chosen.add(id(row))
    scaling = _chosen(((name, g) for name in fams
                       for g in _scaling_groups(fams[name], published)), MAX_SCALING)
    latency = _chosen(((name, g) for name in fams for g in _latency_groups(fams[name])),
                      MAX_LATENCY)
    bars = _chosen(((name, g) for name in fams if name not in scaling
                    for g in _bar_groups(fams[name])), MAX_BARS)
    out = []
    for name in sorted(fams):
        items = fams[name]
        multiples = [_multiple(row, hist_by_key[row.rec.key], change_at.get(row.rec.key, []),
                               plots)
                     for row in items if id(row) in chosen]
        out.append({'name': name, 'anchor': 'family-' + re.sub(r'\W+', '-', name),
                    'rows': [{'row': row, 'labels': _labels(row.flags),
                              'key': _row_key(row.rec), 'bucket': row.verdict.bucket}
                             for row in items],
                    'multiples': multiples,
                    'scaling': [_scaling_plot(g, published, plots)
                                for g in scaling.get(name, [])],
                    'latency': [_latency_plot(g, plots) for g in latency.get(name, [])],
                    'bars': [_bar_plot(g, plots) for g in bars.get(name, [])]})
    return out


def _chosen(groups, limit):
    """``{family: [group]}`` of the ``limit`` groups of highest priority
    (``group[0]``, lower first) of ``(family, group)``."""
    out = {}
    for name, g in sorted(groups, key=lambda ng: ng[1][0])[:limit]:
        out.setdefault(name, []).append(g)
    return out


def _attention(rows):
    """0 when one of ``rows`` did not pass (or has no verdict), else 1."""
    return 0 if any(r.verdict.bucket not in _QUIET for r in rows) else 1


def _row_key(rec):
    return '|'.join(rec.key[:5])


def _plot(plots, fig, cls='plot', **meta):
    """A plotly figure (a dict), serialized by plotly (``meta`` goes to its
    layout, for readers of the page); returns what the template shows: an
    empty div and the figure's JSON, drawn by ``report.js`` when the div
    comes near the screen (a plot nobody scrolls to costs no drawing)."""
    div = f'plot{len(plots)}'
    layout = fig['layout']
    if 'legend' in layout:          # below the axis title, not over it
        layout['legend'].update(yanchor='top', y=-0.2)
    layout.setdefault('margin', {'l': 50, 'r': 10, 't': 30,
                                 'b': 90 if 'legend' in layout else 30})
    layout['meta'] = meta
    spec = plotly.io.to_json(fig, validate=False).replace('<', '\\u003c')
    config = _SMALL_CONFIG if cls == 'multiple' else _PLOT_CONFIG
    plots.append(div)
    return {'id': div, 'spec': Markup(spec), 'config': json.dumps(config), 'cls': cls}


def _downsample(points, n=MAX_POINTS):
    if len(points) <= n:
        return points
    keep = n // 2
    old = points[:-keep]
    step = len(old) / (n - keep)
    return [old[int(i * step)] for i in range(n - keep)] + points[-keep:]


def _ref_name(row):
    if 'emulated-ref' in row.flags:
        return 'reference (emulated)'
    if row.verdict.bucket == Bucket.NOT_JUDGED:
        return 'reference (not judged)'
    return 'reference'


def _iso(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime(
        '%Y-%m-%d %H:%M:%S')


def _multiple(row, hist, change_at, plots):
    rec = row.rec
    pts = _downsample(hist.points)
    xs = [_iso(p.time) for p in pts]
    ys = [p.value for p in pts]
    labels = _labels(row.flags)
    tag = _tag(labels=labels)
    traces = [{'type': 'scatter', 'mode': 'lines+markers', 'name': rec.figure + tag,
               'x': xs, 'y': ys, 'marker': {'size': 3}, 'line': {'width': 1}}]
    shapes = []
    lo, hi = row.band
    if row.base is not None:
        finite = [v for v in ys if math.isfinite(v)] or [row.base]
        span = (max(finite) - min(finite)) or abs(row.base) * 0.1 or 1
        y0 = lo if lo is not None else min(min(finite), row.base) - span
        y1 = hi if hi is not None else max(max(finite), row.base) + span
        shapes.append({'type': 'rect', 'xref': 'paper', 'x0': 0, 'x1': 1, 'y0': y0, 'y1': y1,
                       'fillcolor': 'rgba(26,127,55,0.12)', 'line': {'width': 0},
                       'layer': 'below'})
        traces.append({'type': 'scatter', 'mode': 'lines', 'name': _ref_name(row),
                       'x': [xs[0], xs[-1]], 'y': [row.base, row.base],
                       'line': {'dash': 'dash', 'color': '#1a7f37', 'width': 1}})
    for at in change_at:
        x = _iso(_time(at))
        shapes.append({'type': 'line', 'x0': x, 'x1': x, 'yref': 'paper', 'y0': 0, 'y1': 1,
                       'line': {'color': '#cf222e', 'width': 2, 'dash': 'dot'}})
    fig = {'data': traces, 'layout': {
        'title': {'text': f'{rec.test} {rec.figure}{tag}', 'font': {'size': 11}},
        'showlegend': False, 'shapes': shapes, 'font': {'size': 9},
        'yaxis': {'title': {'text': rec.unit}}, 'margin': {'l': 45, 'r': 5, 't': 25, 'b': 25}}}
    return _plot(plots, fig, 'multiple', key=_row_key(rec), ref=row.base, lo=lo, hi=hi,
                 verdict=row.verdict, labels=labels, changes=list(change_at))


def _thread_attr(rec):
    params = rec.params
    return next((a for a in THREAD_ATTRS if a in params), None)


def _scaling_groups(items, published):
    """``(priority, key, points)`` of every scaling curve of a family: one per
    system, partition, other parameters and unit, with two thread counts or
    more; those with a published curve (``published``: see
    :func:`clusterproof.analysis.morning.prepare`) first."""
    groups = {}
    for row in items:
        rec = row.rec
        attr = _thread_attr(rec)
        if not rec.figure or not attr or PERCENTILE_RE.match(rec.figure):
            continue
        try:
            x = float(rec.params[attr])
        except ValueError:
            continue
        rest = tuple(sorted((k, v) for k, v in rec.params.items() if k != attr))
        groups.setdefault((rec.system, rec.partition, rest, rec.unit, attr),
                          []).append((x, row))
    out = []
    for key, pts in sorted(groups.items(), key=lambda kv: str(kv[0])):
        if len({x for x, _ in pts}) >= 2:
            pts.sort(key=lambda t: t[0])
            drawn = any(r.rec.key in published for _, r in pts)
            out.append(((not drawn, _attention(r for _, r in pts)), key, pts))
    return out


def _scaling_plot(group, published, plots):
    """Measured figures against the thread count, with the reference of each
    judged row and the published curve (never judged against)."""
    _prio, (system, part, rest, unit, attr), pts = group
    by_fig = {}
    for x, row in pts:
        by_fig.setdefault(row.figure, []).append((x, row))
    traces = []
    drawn = False
    for fig, fpts in by_fig.items():
        tag = _tag(row for _, row in fpts)
        traces.append({'type': 'scatter', 'mode': 'lines+markers',
                       'name': f'{fig} measured @{system}{tag}',
                       'x': [x for x, _ in fpts], 'y': [r.value for _, r in fpts]})
        ref = [(x, row) for x, row in fpts if row.base is not None]
        if ref:
            traces.append({'type': 'scatter', 'mode': 'lines+markers',
                           'name': f'{fig} {_ref_name(ref[0][1])}',
                           'x': [x for x, _ in ref], 'y': [r.base for _, r in ref],
                           'line': {'dash': 'dash'}, 'marker': {'symbol': 'x'}})
        pub = [(x, published[row.rec.key]) for x, row in fpts if row.rec.key in published]
        if pub:
            drawn = True
            traces.append({'type': 'scatter', 'mode': 'lines+markers',
                           'name': f'{fig} published ({PUBLISHED_SYSTEM}; not judged against)',
                           'x': [x for x, _ in pub], 'y': [v for _, v in pub],
                           'line': {'dash': 'dot'}, 'marker': {'symbol': 'diamond'}})
    labels = _all_labels(row for _, row in pts)
    variant = ' '.join(f'{k}={v}' for k, v in rest)
    title = (' '.join(t for t in (pts[0][1].rec.check, variant, f'@{system}:{part}') if t)
             + _tag(labels=labels, upper=True))
    fig = {'data': traces, 'layout': {
        'title': {'text': title, 'font': {'size': 13}}, 'legend': {'orientation': 'h'},
        'xaxis': {'title': {'text': attr}, 'type': 'log'}, 'yaxis': {'title': {'text': unit}}}}
    return _plot(plots, fig, 'plot', labels=labels, published=drawn)


def _all_labels(rows):
    return sorted({f for row in rows for f in _labels(row.flags)})


def _tag(rows=(), labels=None, upper=False):
    """`` [smoke, emulated]`` of ``rows`` (or ``labels``), '' when none."""
    labels = _all_labels(rows) if labels is None else labels
    text = ', '.join(labels)
    return f' [{text.upper() if upper else text}]' if labels else ''


def _bar_groups(items):
    """``(priority, key, rows)``: the newest figures of a family per system,
    partition and unit, when some have a reference and they are few."""
    groups = {}
    for row in items:
        if row.rec.figure and not PERCENTILE_RE.match(row.figure):
            groups.setdefault((row.system, row.partition, row.unit), []).append(row)
    return [(_attention(rr), key, rr) for key, rr in sorted(groups.items())
            if len(rr) <= BAR_FIGURES and any(r.base is not None for r in rr)]


def _bar_plot(group, plots):
    """Measured bars per test, the reference of each judged row a marker."""
    _prio, (system, part, unit), items = group
    by_test = {}
    for row in items:
        by_test.setdefault(row.test, []).append(row)
    traces = []
    for test, rows in by_test.items():
        traces.append({'type': 'bar', 'name': test + _tag(rows),
                       'x': [r.figure for r in rows], 'y': [r.value for r in rows]})
        ref = [r for r in rows if r.base is not None]
        if ref:
            traces.append({'type': 'scatter', 'mode': 'markers',
                           'name': f'{test} {_ref_name(ref[0])}',
                           'x': [r.figure for r in ref], 'y': [r.base for r in ref],
                           'marker': {'symbol': 'line-ew-open', 'size': 30,
                                      'line': {'width': 3}}})
    labels = _all_labels(items)
    fig = {'data': traces, 'layout': {
        'title': {'text': f'{items[0].rec.check} @{system}:{part}'
                          + _tag(labels=labels, upper=True), 'font': {'size': 13}},
        'barmode': 'group', 'legend': {'orientation': 'h'},
        'yaxis': {'title': {'text': unit}}}}
    return _plot(plots, fig, 'plot', labels=labels)


def _latency_groups(items):
    """``(priority, key, series)`` of every latency percentile plot of a
    family: one per system, partition and unit."""
    groups = {}
    for row in items:
        m = PERCENTILE_RE.match(row.rec.figure or '')
        if m:
            pct = float(m.group(1).replace('_', '.'))
            groups.setdefault((row.system, row.partition, row.unit),
                              {}).setdefault((row.test, row.figure[:m.start(1)]),
                                             []).append((pct, row))
    return [(_attention(r for pts in series.values() for _, r in pts), key, series)
            for key, series in sorted(groups.items())]


def _latency_plot(group, plots):
    _prio, (system, part, unit), series = group
    traces = []
    for (test, prefix), pts in sorted(series.items()):
        pts.sort(key=lambda t: t[0])
        traces.append({'type': 'scatter', 'mode': 'lines+markers',
                       'name': f'{test} {prefix.rstrip("_p")}' + _tag(r for _, r in pts),
                       'x': [f'p{p:g}' for p, _ in pts], 'y': [r.value for _, r in pts]})
    labels = _all_labels(r for pts in series.values() for _, r in pts)
    fig = {'data': traces, 'layout': {
        'title': {'text': f'latency percentiles @{system}:{part}'
                          + _tag(labels=labels, upper=True), 'font': {'size': 13}},
        'legend': {'orientation': 'h'},
        'xaxis': {'title': {'text': 'percentile'}, 'type': 'category'},
        'yaxis': {'title': {'text': unit}, 'type': 'log'}}}
    return _plot(plots, fig, 'plot', labels=labels)


# -- mmap ratios --------------------------------------------------------------

def _mmap_rows(ratios):
    """The memory/device wall-time ratios of each mmap sweep test case
    (:func:`clusterproof.analysis.statistics.mmap_ratios`), the ratio as text."""
    return [dict(r, ratio='-' if r['ratio'] is None else f"{r['ratio']:.3f}") for r in ratios]
