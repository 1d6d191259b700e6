"""The morning page: one self-contained file (plotly.js
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

The page only formats: what it shows is judged, counted, looked up and
chosen before it, by :func:`clusterproof.analysis.morning.prepare` (a
:class:`~clusterproof.analysis.morning.Morning`, which holds the series of
every plot, bounded whatever the history); here numbers become text and
series plotly's JSON. One judge: every verdict, and every reference or band
drawn, comes from the rows of
:func:`clusterproof.analysis.compare.against_references` (an emulated
figure's band is the one of ``<system>.emulated.yaml`` it was judged
against). Smoke and emulated results are labelled on every row and figure.
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

TEMPLATES = Path(__file__).with_name('templates')
#: changes and failures listed on the first screen (the rest below)
FIRST_SCREEN_ROWS = 8
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
    now = now or datetime.datetime.now().astimezone()
    view = morning.view
    return _env().get_template('report.html.j2').render(
        title=title, now=f'{now:%Y-%m-%d %H:%M %z}', latest=morning.latest,
        systems=view['systems'], smoke=view['smoke'], emulated=view['emulated'],
        counts=morning.counts, sections=_COUNT_SECTIONS, changes=morning.changes,
        first=FIRST_SCREEN_ROWS, failures=[_failure(f) for f in morning.failures],
        families=[_family(fam, plots) for fam in morning.families], mmap=morning.mmap,
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


#: the section a count links to (else the families)
_COUNT_SECTIONS = {CHANGE: 'changes', Bucket.FAILED: 'failures', Bucket.REGRESSION: 'failures'}


# -- first screen: failures --------------------------------------------------------------

_LABELS = ('smoke', 'emulated', 'emulated-ref', 'ref-changed')


def _reason(row):
    if row.verdict in (Verdict.REGRESSION, Verdict.OUT_OF_BOUNDS, Verdict.XPASS):
        what = ('met a reference marked $xfail (a stale mark)' if row.verdict == Verdict.XPASS
                else f'tolerance {row.tolerance}: {row.reason}')
        ratio = f'{row.ratio - 1:+.1%}; ' if row.ratio else ''
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

def _family(fam, plots):
    """A :class:`~clusterproof.analysis.morning.Family` as the template shows
    it: its anchor, table rows and plots."""
    return {'name': fam.name, 'anchor': 'family-' + re.sub(r'\W+', '-', fam.name),
            'rows': [{'row': row, 'labels': _labels(row.flags), 'key': _row_key(row.rec),
                      'bucket': row.verdict.bucket} for row in fam.rows],
            'multiples': [_multiple(m, plots) for m in fam.multiples],
            'scaling': [_scaling_plot(p, plots) for p in fam.scaling],
            'latency': [_latency_plot(p, plots) for p in fam.latency],
            'bars': [_bar_plot(p, plots) for p in fam.bars]}


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


def _ref_name(row):
    if 'emulated-ref' in row.flags:
        return 'reference (emulated)'
    if row.verdict.bucket == Bucket.NOT_JUDGED:
        return 'reference (not judged)'
    return 'reference'


def _iso(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime(
        '%Y-%m-%d %H:%M:%S')


def _multiple(m, plots):
    """A :class:`~clusterproof.analysis.morning.Multiple` as a small plot."""
    row = m.row
    xs = [_iso(t) for t in m.times]
    labels = _labels(row.flags)
    tag = _tag(labels=labels)
    traces = [{'type': 'scatter', 'mode': 'lines+markers', 'name': row.rec.figure + tag,
               'x': xs, 'y': m.values, 'marker': {'size': 3}, 'line': {'width': 1}}]
    shapes = []
    if m.shaded:
        shapes.append({'type': 'rect', 'xref': 'paper', 'x0': 0, 'x1': 1, 'y0': m.shaded[0],
                       'y1': m.shaded[1], 'fillcolor': 'rgba(26,127,55,0.12)',
                       'line': {'width': 0}, 'layer': 'below'})
        traces.append({'type': 'scatter', 'mode': 'lines', 'name': _ref_name(row),
                       'x': [xs[0], xs[-1]], 'y': [row.base, row.base],
                       'line': {'dash': 'dash', 'color': '#1a7f37', 'width': 1}})
    for at in m.changes:
        x = _iso(datetime.datetime.fromisoformat(at).timestamp())
        shapes.append({'type': 'line', 'x0': x, 'x1': x, 'yref': 'paper', 'y0': 0, 'y1': 1,
                       'line': {'color': '#cf222e', 'width': 2, 'dash': 'dot'}})
    fig = {'data': traces, 'layout': {
        'title': {'text': f'{row.test} {row.rec.figure}{tag}', 'font': {'size': 11}},
        'showlegend': False, 'shapes': shapes, 'font': {'size': 9},
        'yaxis': {'title': {'text': row.unit}}, 'margin': {'l': 45, 'r': 5, 't': 25, 'b': 25}}}
    return _plot(plots, fig, 'multiple', key=_row_key(row.rec), ref=row.base, lo=row.band[0],
                 hi=row.band[1], verdict=row.verdict, labels=labels, changes=m.changes)


def _xs(points):
    return [x for x, _ in points]


def _scaling_plot(plot, plots):
    """Measured figures against the thread count, with the reference of each
    judged row and the published curve (never judged against)."""
    traces = []
    for line in plot.lines:
        traces.append({'type': 'scatter', 'mode': 'lines+markers',
                       'name': f'{line.name} measured @{plot.system}{_tag(_rows(line))}',
                       'x': _xs(line.points), 'y': [row.value for row in _rows(line)]})
        if line.judged:
            traces.append({'type': 'scatter', 'mode': 'lines+markers',
                           'name': f'{line.name} {_ref_name(line.judged[0][1])}',
                           'x': _xs(line.judged), 'y': [row.base for _, row in line.judged],
                           'line': {'dash': 'dash'}, 'marker': {'symbol': 'x'}})
        if line.published:
            traces.append({'type': 'scatter', 'mode': 'lines+markers',
                           'name': f'{line.name} published ({PUBLISHED_SYSTEM}; not judged '
                                   'against)',
                           'x': _xs(line.published), 'y': [v for _, v in line.published],
                           'line': {'dash': 'dot'}, 'marker': {'symbol': 'diamond'}})
    labels = _all_labels(plot.rows)
    variant = ' '.join(f'{k}={v}' for k, v in plot.variant)
    title = (' '.join(t for t in (plot.check, variant, f'@{plot.system}:{plot.partition}') if t)
             + _tag(labels=labels, upper=True))
    fig = {'data': traces, 'layout': {
        'title': {'text': title, 'font': {'size': 13}}, 'legend': {'orientation': 'h'},
        'xaxis': {'title': {'text': plot.axis}, 'type': 'log'},
        'yaxis': {'title': {'text': plot.unit}}}}
    return _plot(plots, fig, 'plot', labels=labels,
                 published=any(line.published for line in plot.lines))


def _rows(line):
    return [row for _, row in line.points]


def _all_labels(rows):
    return sorted({f for row in rows for f in _labels(row.flags)})


def _tag(rows=(), labels=None, upper=False):
    """`` [smoke, emulated]`` of ``rows`` (or ``labels``), '' when none."""
    labels = _all_labels(rows) if labels is None else labels
    text = ', '.join(labels)
    return f' [{text.upper() if upper else text}]' if labels else ''


def _bar_plot(plot, plots):
    """Measured bars per test, the reference of each judged row a marker."""
    traces = []
    for line in plot.lines:
        traces.append({'type': 'bar', 'name': line.name + _tag(_rows(line)),
                       'x': _xs(line.points), 'y': [row.value for row in _rows(line)]})
        if line.judged:
            traces.append({'type': 'scatter', 'mode': 'markers',
                           'name': f'{line.name} {_ref_name(line.judged[0][1])}',
                           'x': _xs(line.judged), 'y': [row.base for _, row in line.judged],
                           'marker': {'symbol': 'line-ew-open', 'size': 30,
                                      'line': {'width': 3}}})
    labels = _all_labels(plot.rows)
    fig = {'data': traces, 'layout': {
        'title': {'text': f'{plot.check} @{plot.system}:{plot.partition}'
                          + _tag(labels=labels, upper=True), 'font': {'size': 13}},
        'barmode': 'group', 'legend': {'orientation': 'h'},
        'yaxis': {'title': {'text': plot.unit}}}}
    return _plot(plots, fig, 'plot', labels=labels)


def _latency_plot(plot, plots):
    """Latency percentiles of each test and figure, the percentiles a category axis."""
    traces = [{'type': 'scatter', 'mode': 'lines+markers',
               'name': line.name + _tag(_rows(line)),
               'x': [f'p{p:g}' for p in _xs(line.points)],
               'y': [row.value for row in _rows(line)]} for line in plot.lines]
    labels = _all_labels(plot.rows)
    fig = {'data': traces, 'layout': {
        'title': {'text': f'latency percentiles @{plot.system}:{plot.partition}'
                          + _tag(labels=labels, upper=True), 'font': {'size': 13}},
        'legend': {'orientation': 'h'},
        'xaxis': {'title': {'text': 'percentile'}, 'type': 'category'},
        'yaxis': {'title': {'text': plot.unit}, 'type': 'log'}}}
    return _plot(plots, fig, 'plot', labels=labels)
