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

One judge: every verdict, and every reference or band drawn, comes from the
rows of :func:`clusterproof.analysis.compare.against_references` (an emulated
figure's band is the one of ``<system>.emulated.yaml`` it was judged
against). Smoke and emulated results are labelled on every row and figure.

The page stays bounded whatever the history: small multiples only for
figures that changed or did not pass plus :data:`MAX_MULTIPLES` others,
histories downsampled to :data:`MAX_POINTS` points, everything else a table.
"""

import dataclasses
import datetime
import json
import math
import re
from pathlib import Path

import jinja2
import plotly.io
from markupsafe import Markup
from plotly.offline import get_plotlyjs

from clusterproof import ClusterproofError
from clusterproof.analysis import findings, triage
from clusterproof.analysis.recent import RECENT_SESSIONS, change_key, recent_changes
from clusterproof.analysis.compare import against_references
from clusterproof.analysis.statistics import mmap_ratios
from clusterproof.references.judge import Bucket, Verdict
from clusterproof.references.entries import bounds
from clusterproof.references.lookup import lookup, references_for
from clusterproof.store import history
from clusterproof.store.overview import frame_of, overview
from clusterproof.store.sessions import THREAD_ATTRS, check_name

TEMPLATES = Path(__file__).with_name('templates')
#: the system whose references are the published figures (scaling curves)
PUBLISHED_SYSTEM = 'pixstor'
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
#: the count of the changes found (not a verdict: see :func:`recent_changes`)
CHANGE = 'change'
#: the counts of the first screen, in order: the verdicts' buckets
#: (``references.judge.Bucket``, where their names are decided) and the changes
BUCKETS = (Bucket.PASS, Bucket.REGRESSION, CHANGE, Bucket.FAILED, Bucket.SKIPPED,
           Bucket.NOT_JUDGED)
PERCENTILE_RE = re.compile(r'^c?lat\w*?_p(\d+(?:[._]\d+)?)$', re.I)
_PLOT_CONFIG = {'displaylogo': False, 'responsive': True}
_SMALL_CONFIG = dict(_PLOT_CONFIG, displayModeBar=False)


def bucket(verdict):
    """The count a :class:`~clusterproof.references.judge.Verdict` goes to:
    one of :data:`BUCKETS`, else its own name (``xfail``...)."""
    return Verdict.read(verdict).bucket


def build(sessions, recs, refs_by_system=None, title='clusterproof report',
          now=None, histories=None, view=None, kept=None, triaged=None, store_rows=None):
    """The report page as a string. ``sessions`` oldest first, ``recs`` the
    records of the newest (more are ignored); ``view`` (optional,
    :func:`overview`) the provenance of every session, when ``sessions``
    holds only the newest; ``histories`` (optional,
    :class:`clusterproof.store.history.History`) replaces the histories
    made from ``recs``; ``kept``: see :func:`recent_changes`; ``triaged``:
    the verdicts people gave (:func:`clusterproof.analysis.triage.read_all`),
    shown beside each change and failure, the untriaged first; ``store_rows``
    (a lazy frame of the figure store) says since when each failure fails
    (:func:`clusterproof.analysis.triage.failure_findings`; without it, since
    the newest session)."""
    refs = dict(refs_by_system or {})
    if view is None:
        view = overview(frame_of(sessions))
    latest = sessions[-1] if sessions else None
    latest_recs = [r for r in recs if latest and r.session == latest.uuid]
    rows = against_references(latest_recs, refs)
    if histories is None:
        histories = history.from_records(sessions, recs)
    hist_by_key = {h.key: h for h in histories}
    found = [{**f, 'id': findings.change_id(f), 'state': state,
              'carried_from': carried, 'note': v['note'] if v else ''}
             for f, state, v, carried in triage.states(
                 findings.listed(recent_changes(histories, kept=kept)),
                 triaged or [])]
    changed = {change_key(f) for f in found}
    counts = _counts(rows, len(found))
    plots = []
    families = _families(rows, hist_by_key, found, changed, refs, plots)
    now = now or datetime.datetime.now().astimezone()
    page = _env().get_template('report.html.j2').render(
        title=title, now=f'{now:%Y-%m-%d %H:%M %z}', latest=latest,
        systems=view['systems'], smoke=view['smoke'], emulated=view['emulated'],
        counts=counts, sections=_COUNT_SECTIONS, changes=found, first=FIRST_SCREEN_ROWS,
        failures=_failures(rows, store_rows, triaged or []),
        families=families, mmap=_mmap_rows(latest_recs),
        provenance=view['sessions'], recent=RECENT_SESSIONS,
        plotlyjs=Markup(get_plotlyjs().replace('</script', '<\\/script')),
        plots=plots, num=_num)
    return page


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


def _counts(rows, n_changes):
    counts = dict.fromkeys(BUCKETS, 0)
    for r in rows:
        b = bucket(r.verdict)
        counts[b] = counts.get(b, 0) + 1
    counts[CHANGE] = n_changes
    return counts


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


def _failures(rows, store_rows=None, triaged=()):
    """The rows that fail (``judge.FAILING``: failed test cases first, then
    regressions and stale ``$xfail`` marks, the largest miss first; the
    untriaged before those with a verdict), each with its finding's id and
    state (see :func:`build`)."""
    bad = [row for row in rows if row.regression]
    bad.sort(key=lambda r: (r.verdict != Verdict.FAILED, -abs((r.ratio or 1) - 1), r.system,
                            r.test, r.figure))
    newest = triage.latest(triaged)
    out = []
    for row, f in zip(bad, triage.failure_findings(store_rows, bad)):
        v = newest.get(f['id'])
        out.append({'row': row, 'reason': _reason(row), 'labels': _labels(row.flags),
                    'id': f['id'], 'state': v['state'] if v else triage.UNTRIAGED,
                    'note': v['note'] if v else ''})
    return sorted(out, key=lambda f: f['state'] != triage.UNTRIAGED)


def _labels(flags):
    return [f for f in flags if f in _LABELS]


# -- families ---------------------------------------------------------------------------

def family_of(rec):
    """The test family of a record: its check (test class) name."""
    return rec.check or check_name(rec.test)


def _families(rows, hist_by_key, found, changed, refs, plots):
    fams = {}
    for row in rows:
        fams.setdefault(family_of(row.rec), []).append(row)
    change_at = {}
    for f in found:
        change_at.setdefault(change_key(f), []).append(f['at'])
    wanted = sorted((row for row in rows if row.rec.figure),
                    key=lambda r: (r.rec.key not in changed, bucket(r.verdict) in _QUIET))
    chosen = set()
    extra = 0
    for row in wanted:
        rec = row.rec
        if len(chosen) >= MAX_MULTIPLES_TOTAL:
            break
        notable = rec.key in changed or bucket(row.verdict) not in _QUIET
        if not notable:
            if extra >= MAX_MULTIPLES:
                break
            extra += 1
        if rec.key in hist_by_key and len(hist_by_key[rec.key].points) > 1:
            chosen.add(id(row))
    scaling = _chosen(((name, g) for name in fams for g in _scaling_groups(fams[name], refs)),
                      MAX_SCALING)
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
                              'key': _row_key(row.rec), 'bucket': bucket(row.verdict)}
                             for row in items],
                    'multiples': multiples,
                    'scaling': [_scaling_plot(g, refs, plots) for g in scaling.get(name, [])],
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
    return 0 if any(bucket(r.verdict) not in _QUIET for r in rows) else 1


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


def _band(row):
    """(low, high) of the row's tolerance band, None where unbounded."""
    if row.base is None:
        return None, None
    return bounds(row.base, row.lower, row.upper)


def _ref_name(row):
    if 'emulated-ref' in row.flags:
        return 'reference (emulated)'
    if bucket(row.verdict) == Bucket.NOT_JUDGED:
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
    lo, hi = _band(row)
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


def _published(rec, refs):
    """The published figure of ``rec``'s test at its thread count (the
    references of :data:`PUBLISHED_SYSTEM`, resolved as ReFrame resolves
    them); None when there is none. Never a verdict of ``rec``."""
    if rec.system == PUBLISHED_SYSTEM:
        return None
    published = references_for(refs, PUBLISHED_SYSTEM)
    if rec.check not in published:
        return None
    try:
        found = lookup(published, dataclasses.replace(rec, system=PUBLISHED_SYSTEM, smoke=False,
                                                       emulated=False))
    except ClusterproofError:
        return None
    return found.value if found else None


def _scaling_groups(items, refs):
    """``(priority, key, points)`` of every scaling curve of a family: one per
    system, partition, other parameters and unit, with two thread counts or
    more."""
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
    pub = references_for(refs, PUBLISHED_SYSTEM)
    for key, pts in sorted(groups.items(), key=lambda kv: str(kv[0])):
        if len({x for x, _ in pts}) >= 2:
            pts.sort(key=lambda t: t[0])
            out.append(((pts[0][1].rec.check not in pub, _attention(r for _, r in pts)),
                        key, pts))
    return out


def _scaling_plot(group, refs, plots):
    """Measured figures against the thread count, with the reference of each
    judged row and the published curve (never judged against)."""
    _prio, (system, part, rest, unit, attr), pts = group
    by_fig = {}
    for x, row in pts:
        by_fig.setdefault(row.figure, []).append((x, row))
    traces = []
    published = False
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
        pub = [(x, _published(row.rec, refs)) for x, row in fpts]
        pub = [(x, v) for x, v in pub if v is not None]
        if pub:
            published = True
            traces.append({'type': 'scatter', 'mode': 'lines+markers',
                           'name': f'{fig} published ({PUBLISHED_SYSTEM}; not judged against)',
                           'x': [x for x, _ in pub], 'y': [v for _, v in pub],
                           'line': {'dash': 'dot'}, 'marker': {'symbol': 'diamond'}})
    labels = _all_labels(row for _, row in pts)
    variant = ' '.join(f'{k}={v}' for k, v in rest)
    title = ' '.join(t for t in (pts[0][1].rec.check, variant, f'@{system}:{part}') if t) \
        + _tag(labels=labels, upper=True)
    fig = {'data': traces, 'layout': {
        'title': {'text': title, 'font': {'size': 13}}, 'legend': {'orientation': 'h'},
        'xaxis': {'title': {'text': attr}, 'type': 'log'}, 'yaxis': {'title': {'text': unit}}}}
    return _plot(plots, fig, 'plot', labels=labels, published=published)


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

def _mmap_rows(recs):
    """The memory/device wall-time ratios of each mmap sweep test case
    (:func:`clusterproof.analysis.statistics.mmap_ratios`), the ratio as text."""
    return [dict(r, ratio='-' if r['ratio'] is None else f"{r['ratio']:.3f}")
            for r in mmap_ratios(recs)]
