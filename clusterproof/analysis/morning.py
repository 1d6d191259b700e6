"""What the morning page shows, computed before the page: the newest
session's records judged against the references
(:func:`clusterproof.analysis.compare.against_references`, the one judge),
the verdict counts, the changes of the last
:data:`~clusterproof.analysis.recent.RECENT_SESSIONS` sessions
with their triage, the failures with their findings, the mmap sweep's ratios,
and per test family what is drawn: the series of every plot, chosen and
bounded here. The page only formats a :class:`Morning`.

The page stays bounded whatever the history: small multiples only for
figures that changed or did not pass plus :data:`MAX_MULTIPLES` others,
histories downsampled to :data:`MAX_POINTS` points, scaling, latency and
bar plots capped (:data:`MAX_SCALING`, :data:`MAX_LATENCY`,
:data:`MAX_BARS`), everything else a table.
"""

import dataclasses
import math
import re
from dataclasses import dataclass

from clusterproof import ClusterproofError
from clusterproof.analysis import findings, triage
from clusterproof.analysis.compare import against_references
from clusterproof.analysis.recent import change_key, recent_changes
from clusterproof.analysis.statistics import mmap_ratios
from clusterproof.references.judge import Bucket, Verdict
from clusterproof.references.lookup import lookup, references_for
from clusterproof.store.sessions import THREAD_ATTRS, check_name

#: the system whose references are the published figures (scaling curves)
PUBLISHED_SYSTEM = 'pixstor'
#: the count of the changes found (not a verdict: see :func:`recent_changes`)
CHANGE = 'change'
#: the counts of the first screen, in order: the verdicts' buckets
#: (``references.judge.Bucket``, where their names are decided) and the changes
BUCKETS = (Bucket.PASS, Bucket.REGRESSION, CHANGE, Bucket.FAILED, Bucket.SKIPPED,
           Bucket.NOT_JUDGED)
#: the buckets that need no attention
QUIET = (Bucket.PASS, Bucket.NOT_JUDGED)
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


@dataclass(frozen=True)
class Morning:
    """The morning page's content, judged, counted and chosen."""
    latest: object      # the newest session (store.sessions.Session); None without one
    view: dict          # store.overview.overview: systems, smoke, emulated, sessions
    counts: dict        # {bucket or CHANGE: n}, in the order of BUCKETS
    changes: list       # the changes found, each with id, state, carried_from, note
    failures: list      # [{row, id, state, note}], the untriaged first
    families: list      # Family of the newest session's rows, by name
    mmap: list          # statistics.mmap_ratios of the newest session's records


@dataclass(frozen=True)
class Family:
    """One test family (its check name): its judged rows and what is drawn."""
    name: str
    rows: list          # compare.Row of the family, in the order judged
    multiples: list     # Multiple of the figures chosen
    scaling: list       # Plot of figures against the thread count
    latency: list       # Plot of latency percentiles
    bars: list          # Plot of the newest values against their references


@dataclass(frozen=True)
class Multiple:
    """A small multiple: the history of one row's figure, downsampled."""
    row: object         # compare.Row
    times: list         # unix time of each point drawn (MAX_POINTS at most)
    values: list        # the value of each point drawn
    shaded: tuple       # (low, high) of the reference band drawn; None: no reference
    changes: list       # ISO time of each change point of the figure


@dataclass(frozen=True)
class Line:
    """One line of a plot: the rows measured at ``x``, the reference of
    those judged and, on a scaling plot, the published curve."""
    name: str           # the figure (scaling), the test (bars), the test and figure
    points: list        # [(x, compare.Row)], in the order drawn
    judged: list        # the points whose reference (row.base) is drawn
    published: list = ()    # [(x, the published figure)]


@dataclass(frozen=True)
class Plot:
    """A plot of a family: its lines on one system, partition and unit."""
    check: str
    system: str
    partition: str
    unit: str
    lines: list         # Line
    axis: str = ''      # the thread count parameter (scaling)
    variant: tuple = ()     # the other parameters ((name, value), ...) (scaling)

    @property
    def rows(self):
        """Every row drawn."""
        return [row for line in self.lines for _, row in line.points]


def prepare(latest, recs, histories, view, refs_by_system=None, kept=None, triaged=None,
            store_rows=None):
    """The :class:`Morning` of the newest session ``latest`` (None: none)
    and ``recs``, its records (those of other sessions are ignored).
    ``histories``: the figures' histories
    (:class:`clusterproof.store.history.History`); ``view``: the provenance
    of every session (:func:`clusterproof.store.overview.overview`);
    ``kept``: see :func:`recent_changes`; ``triaged``: the verdicts people
    gave (:func:`clusterproof.analysis.triage.read_all`); ``store_rows`` (a
    lazy frame of the figure store) says since when each failure fails
    (:func:`clusterproof.analysis.triage.failure_findings`; without it,
    since the newest session)."""
    refs = dict(refs_by_system or {})
    latest_recs = [rec for rec in recs if latest and rec.session == latest.uuid]
    mmap = mmap_ratios(latest_recs)
    rows = against_references(latest_recs, refs)
    changes = _changes(histories, kept, triaged or [])
    change_at = {}
    for f in changes:
        change_at.setdefault(change_key(f), []).append(f['at'])
    return Morning(latest=latest, view=view, counts=counts(rows, len(changes)),
                   changes=changes, failures=_failures(rows, store_rows, triaged or []),
                   families=families(rows, {h.key: h for h in histories}, change_at,
                                     _published_of(rows, refs)),
                   mmap=mmap)


def counts(rows, n_changes):
    """``{bucket: n}`` of the verdicts of ``rows`` (every bucket of
    :data:`BUCKETS`, any other verdict under its own name) and the changes."""
    out = dict.fromkeys(BUCKETS, 0)
    for row in rows:
        out[row.verdict.bucket] = out.get(row.verdict.bucket, 0) + 1
    out[CHANGE] = n_changes
    return out


def _changes(histories, kept, triaged):
    """The changes of the last sessions, listed as ``clusterproof changes``
    lists them, each with its finding's id and triage state."""
    return [{**change, 'id': findings.change_id(change), 'state': state,
             'carried_from': carried, 'note': newest_triage['note'] if newest_triage else ''}
            for change, state, newest_triage, carried in triage.states(
                findings.listed(recent_changes(histories, kept=kept)), triaged)]


def _failures(rows, store_rows, triaged):
    """The rows that fail (``Verdict.failing``: failed test cases first, then
    regressions and stale ``$xfail`` marks, the largest miss first; the
    untriaged before those with a verdict), each with its finding's id and
    state."""
    bad = [row for row in rows if row.regression]
    bad.sort(key=lambda row: (row.verdict != Verdict.FAILED, -abs((row.ratio or 1) - 1),
                              row.system, row.test, row.figure))
    newest = triage.latest(triaged)
    out = []
    for row, finding in zip(bad, triage.failure_findings(store_rows, bad)):
        newest_triage = newest.get(finding['id'])
        out.append({'row': row, 'id': finding['id'],
                    'state': newest_triage['state'] if newest_triage else triage.UNTRIAGED,
                    'note': newest_triage['note'] if newest_triage else ''})
    return sorted(out, key=lambda finding: finding['state'] != triage.UNTRIAGED)


def _published_of(rows, refs):
    """``{record key: value}`` of the published figure of each row's test
    (the references of :data:`PUBLISHED_SYSTEM`, resolved as ReFrame
    resolves them). Never a verdict of the row."""
    published = references_for(refs, PUBLISHED_SYSTEM)
    out = {}
    for row in rows:
        rec = row.rec
        if not rec.figure or rec.system == PUBLISHED_SYSTEM or rec.check not in published:
            continue
        try:
            found = lookup(published, dataclasses.replace(rec, system=PUBLISHED_SYSTEM,
                                                           smoke=False, emulated=False))
        except ClusterproofError:
            continue
        if found:
            out[rec.key] = found.value
    return out


# -- what is drawn ------------------------------------------------------------------------

def family_of(rec):
    """The test family of a record: its check (test class) name."""
    return rec.check or check_name(rec.test)


def families(rows, histories, change_at, published):
    """The :class:`Family` of each check name of ``rows`` (compare.Row), by
    name, with what the page draws of them: the small multiples of the
    figures chosen (:func:`chosen_multiples`; ``histories``: ``{record key:
    store.history.History}``, ``change_at``: ``{record key: [ISO time of
    each change]}``) and the scaling, latency and bar plots of highest
    priority (those with a published curve first, ``published``: ``{record
    key: value}``, then those with a row that needs attention), capped."""
    fams = {}
    for row in rows:
        fams.setdefault(family_of(row.rec), []).append(row)
    chosen = chosen_multiples(rows, histories, change_at)
    scaling = _chosen(((name, p) for name in fams
                       for p in _scaling_plots(fams[name], published)), MAX_SCALING)
    latency = _chosen(((name, p) for name in fams for p in _latency_plots(fams[name])),
                      MAX_LATENCY)
    bars = _chosen(((name, p) for name in fams if name not in scaling
                    for p in _bar_plots(fams[name])), MAX_BARS)
    return [Family(name, fams[name],
                   [multiple(row, histories[row.rec.key], change_at.get(row.rec.key, []))
                    for row in fams[name] if id(row) in chosen],
                   scaling.get(name, []), latency.get(name, []), bars.get(name, []))
            for name in sorted(fams)]


def chosen_multiples(rows, histories, change_at):
    """``{id(row)}`` of the rows whose history is drawn: those that changed
    first, then those that did not pass, then :data:`MAX_MULTIPLES` others,
    :data:`MAX_MULTIPLES_TOTAL` in all; a history of one point is not drawn."""
    wanted = sorted((row for row in rows if row.rec.figure),
                    key=lambda row: (row.rec.key not in change_at, row.verdict.bucket in QUIET))
    chosen = set()
    extra = 0
    for row in wanted:
        if len(chosen) >= MAX_MULTIPLES_TOTAL:
            break
        if row.rec.key not in change_at and row.verdict.bucket in QUIET:
            if extra >= MAX_MULTIPLES:
                break
            extra += 1
        if row.rec.key in histories and len(histories[row.rec.key].points) > 1:
            chosen.add(id(row))
    return chosen


def multiple(row, hist, changes):
    """The :class:`Multiple` of ``row`` and its history ``hist``: the points
    downsampled, the row's band shaded (an open end a span of the values
    beyond them and the reference) and the change points ``changes``."""
    points = downsample(hist.points)
    values = [point.value for point in points]
    shaded = None
    if row.base is not None:
        lo, hi = row.band
        finite = [value for value in values if math.isfinite(value)] or [row.base]
        span = (max(finite) - min(finite)) or abs(row.base) * 0.1 or 1
        shaded = (lo if lo is not None else min(min(finite), row.base) - span,
                  hi if hi is not None else max(max(finite), row.base) + span)
    return Multiple(row, [point.time for point in points], values, shaded, list(changes))


def downsample(points, n=MAX_POINTS):
    """``n`` of ``points`` at most: the newest half of them all, the older
    ones evenly spaced."""
    if len(points) <= n:
        return points
    keep = n // 2
    old = points[:-keep]
    step = len(old) / (n - keep)
    return [old[int(i * step)] for i in range(n - keep)] + points[-keep:]


def _chosen(plots, limit):
    """``{family: [plot]}`` of the ``limit`` plots of highest priority
    (lower first) of ``(family, (priority, plot))``."""
    out = {}
    for name, (_prio, plot) in sorted(plots, key=lambda np: np[1][0])[:limit]:
        out.setdefault(name, []).append(plot)
    return out


def _attention(rows):
    """0 when one of ``rows`` did not pass (or has no verdict), else 1."""
    return 0 if any(row.verdict.bucket not in QUIET for row in rows) else 1


def _thread_attr(rec):
    params = rec.params
    return next((a for a in THREAD_ATTRS if a in params), None)


def _scaling_plots(rows, published):
    """``(priority, Plot)`` of every scaling curve of a family: one per
    system, partition, other parameters and unit, with two thread counts or
    more, a line per figure with the reference of each judged row and the
    published figures (never judged against); those with a published curve
    first."""
    groups = {}
    for row in rows:
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
    for (system, part, rest, unit, attr), points in sorted(groups.items(),
                                                           key=lambda kv: str(kv[0])):
        if len({x for x, _ in points}) < 2:
            continue
        points.sort(key=lambda t: t[0])
        by_figure = {}
        for x, row in points:
            by_figure.setdefault(row.figure, []).append((x, row))
        lines = [Line(figure, fpoints, [(x, row) for x, row in fpoints if row.base is not None],
                      [(x, published[row.rec.key]) for x, row in fpoints
                       if row.rec.key in published])
                 for figure, fpoints in by_figure.items()]
        drawn = any(row.rec.key in published for _, row in points)
        out.append(((not drawn, _attention(row for _, row in points)),
                    Plot(points[0][1].rec.check, system, part, unit, lines, attr, rest)))
    return out


def _bar_plots(rows):
    """``(priority, Plot)``: the newest figures of a family per system,
    partition and unit, a line per test with the reference of each judged
    row, when some have a reference and they are few."""
    groups = {}
    for row in rows:
        if row.rec.figure and not PERCENTILE_RE.match(row.figure):
            groups.setdefault((row.system, row.partition, row.unit), []).append(row)
    out = []
    for (system, part, unit), group in sorted(groups.items()):
        if len(group) > BAR_FIGURES or all(row.base is None for row in group):
            continue
        by_test = {}
        for row in group:
            by_test.setdefault(row.test, []).append((row.figure, row))
        lines = [Line(test, points, [(x, row) for x, row in points if row.base is not None])
                 for test, points in by_test.items()]
        out.append((_attention(group), Plot(group[0].rec.check, system, part, unit, lines)))
    return out


def _latency_plots(rows):
    """``(priority, Plot)`` of every latency percentile plot of a family:
    one per system, partition and unit, a line per test and figure."""
    groups = {}
    for row in rows:
        match = PERCENTILE_RE.match(row.rec.figure or '')
        if match:
            pct = float(match.group(1).replace('_', '.'))
            groups.setdefault((row.system, row.partition, row.unit),
                              {}).setdefault((row.test, row.figure[:match.start(1)]),
                                             []).append((pct, row))
    out = []
    for (system, part, unit), series in sorted(groups.items()):
        lines = [Line(f'{test} {prefix.rstrip("_p")}', sorted(points, key=lambda t: t[0]), [])
                 for (test, prefix), points in sorted(series.items())]
        plot = Plot(lines[0].points[0][1].rec.check, system, part, unit, lines)
        out.append((_attention(plot.rows), plot))
    return out
