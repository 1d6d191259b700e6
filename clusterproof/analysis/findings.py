"""The findings of the change detector: what it finds in each figure's history
(:func:`judge_figure`, :func:`detect`), and the findings kept in the figure
store.

A figure's findings (its changes, each with its summary and attribution
(:mod:`.attribution`), or that it is quiet, too noisy or not judged) depend
only on its history and the detector's settings
(:mod:`clusterproof.analysis.detector`). ``clusterproof store ingest``
derives them for every figure whose history changed since they were last
derived (:func:`derive`) and keeps them in ``<store>/findings.parquet``, one
row per figure: its identity (:data:`clusterproof.store.IDENTITY`), the
digest of its history (:func:`digests`: the number of points and a hash of
their sessions, times and values), the digest of the settings
(:func:`settings_digest`, with :data:`VERSION`), and the findings.

``clusterproof changes`` and the morning page read them (:func:`detect`)
when they are current for the figures shown: the figures whose findings are
missing or stale are judged there and then, and the command says so. The
file is written as the store writes its parts (a temporary name, synced,
renamed) under the store's lock: a crash never leaves a half-written file
under the name that is read, and two ingests derive one after the other.
"""

import dataclasses
import datetime
import hashlib
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path

import polars as pl

from clusterproof import store as st
from clusterproof.analysis import smallest
from clusterproof.analysis.detector import figure as detector_figure, model, noise, views
from clusterproof.analysis.attribution import attribution
from clusterproof.paths import replace_synced, results_db
from clusterproof.store import history, sessions

#: the detector's version: findings derived by another are stale. Raise it
#: when a change to :mod:`.detector`, :mod:`.attribution` or the functions
#: of a figure's findings below changes what they find, and write the new
#: :data:`GOLDEN` (tests/analysis/test_findings_version.py fails, saying so, while
#: the findings of its fixed history differ from :data:`GOLDEN`)
VERSION = 10
#: ``{version: digest}``: the digest of the findings of the recorded history
#: tests/data/history-real/local-smoke.csv under each :data:`VERSION`, as
#: tests/analysis/test_findings_version.py computes it; a new version adds its own
#: (3, changes of noise: none in that history, so its digest is 2's; 4,
#: periodic components taken out: none in that history either; 5, the
#: onset of a slow change: no single step of that history is a ramp; 6, the
#: run's own settings in the attribution: that CSV history records none; 7,
#: a figure too noisy to judge lists every change the detector keeps; 8, a
#: figure with a value of 0 or less judged on its values: memory_io_idle; 9,
#: a nightly alarm the whole history does not confirm needs z + POWER; 10, an
#: unconfirmed alarm widened about the confirmed changes, rows of kept alarms
#: made drifts, an abrupt step not made a ramp: none in that history)
GOLDEN = {1: '60137dccb58d0936', 2: 'ac27ab406b370fd9', 3: 'ac27ab406b370fd9',
          4: 'ac27ab406b370fd9', 5: 'ac27ab406b370fd9', 6: 'ac27ab406b370fd9',
          7: '8b2f10cce15ba903', 8: '7318751c9c94f924', 9: 'f88183f2a0874ebf',
          10: 'f88183f2a0874ebf'}
#: figures judged per task of a worker process
CHUNK = 64

SCHEMA = {
    **{c: st.SCHEMA[c] for c in st.IDENTITY},
    'unit': pl.Utf8,
    'digest': pl.Utf8,          # of the history (see digests)
    'settings': pl.Utf8,        # of the detector (see settings_digest)
    'status': pl.Utf8,          # changed, quiet, noisy, skipped
    'noise': pl.Float64,        # FigureNoise, null for one session or skipped
    'detectable': pl.Float64,
    'n': pl.Int64,
    'too_noisy': pl.Boolean,
    'heavy_tailed': pl.Boolean,
    'why': pl.Utf8,             # why it was not judged
    'found': pl.Utf8,           # its changes (JSON list of the dicts of changes.detect)
}


def settings_digest(settings=None):
    """What findings were derived with: the detector's settings and :data:`VERSION`."""
    s = dataclasses.asdict(settings or model.Settings())
    text = json.dumps({'version': VERSION, **s}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def digests(lf):
    """``{figure key: digest of its history}`` of the store rows ``lf``: the
    rows :func:`clusterproof.store.history.from_frame` makes its history
    of, counted and hashed (sessions, times, values), in the engine."""
    df = (lf.filter(history.measured())
          .group_by(list(st.IDENTITY))
          .agg(pl.len().alias('n'),
               pl.struct('session', 'start', 'value').hash().sum().alias('h'))
          .collect())
    return {st.identity(*r[:7]): f'{r[7]}:{r[8]}' for r in df.iter_rows()}


def path_of(store):
    return Path(store) / st.FINDINGS


def read(store):
    """``{figure key: row}`` of the findings kept in ``store`` ({} when it
    has none, or they cannot be read: they are derived again)."""
    path = path_of(store)
    try:
        df = pl.read_parquet(path)
    except FileNotFoundError:
        return {}
    except Exception as err:    # noqa: BLE001 - unreadable: derived again, not trusted
        print(f'WARNING: {path}: unreadable kept findings ({err}); derived again',
              file=sys.stderr)
        return {}
    return {st.identity(*(r[c] for c in st.IDENTITY)): r for r in df.iter_rows(named=True)}


def _row(h, digest, sd, status, what, found):
    k = h.key
    fn = what if isinstance(what, detector_figure.FigureNoise) else None
    return {**dict(zip(st.IDENTITY, k)), 'unit': h.unit, 'digest': digest, 'settings': sd,
            'status': status, 'noise': fn and fn.noise, 'detectable': fn and fn.detectable,
            'n': fn and fn.n, 'too_noisy': fn and fn.too_noisy,
            'heavy_tailed': fn and fn.heavy_tailed,
            'why': what if isinstance(what, str) else None, 'found': json.dumps(found)}


_WORK = {}      # what forked workers read: the histories and the settings


def _judge(idx):
    hists, settings = _WORK['hists'], _WORK['settings']
    return [judge_figure(hists[i], settings) for i in idx]


def _judge_all(hists, settings, processes=None):
    """:func:`judge_figure` of each of
    ``hists``, in worker processes (forked: they read the histories this
    process holds; they run the detector's numpy code only) when there are
    enough of them."""
    processes = processes or os.cpu_count() or 1
    _WORK.update(hists=hists, settings=settings)
    chunks = [range(i, min(i + CHUNK, len(hists))) for i in range(0, len(hists), CHUNK)]
    try:
        if processes > 1 and len(chunks) > 1:
            with multiprocessing.get_context('fork').Pool(processes) as pool:
                parts = pool.map(_judge, chunks, chunksize=1)
        else:
            parts = [_judge(c) for c in chunks]
    finally:
        _WORK.clear()
    return [r for p in parts for r in p]


def derive(store, settings=None, processes=None):
    """Judge every figure of ``store`` whose history changed since its
    findings were derived (or whose findings were derived with other
    settings), and keep the findings of all (those of figures gone from the
    store dropped). Under the store's lock; returns (figures judged, seconds)."""
    t0 = time.perf_counter()
    store = Path(store)
    settings = settings or model.Settings()
    sd = settings_digest(settings)
    with st.locked(store):
        lf = st.scan([store])
        digs = digests(lf)
        kept = read(store)
        stale = {k for k, d in digs.items()
                 if k not in kept or kept[k]['digest'] != d or kept[k]['settings'] != sd}
        if not stale and set(kept) == set(digs) and path_of(store).exists():
            return 0, time.perf_counter() - t0
        hists = history.from_frame(lf, keys=stale) if stale else []
        rows = [_row(h, digs[h.key], sd, *j)
                for h, j in zip(hists, _judge_all(hists, settings, processes))]
        rows += [r for k, r in kept.items() if k in digs and k not in stale]
        df = pl.DataFrame(rows, schema=SCHEMA).sort(list(st.IDENTITY))
        replace_synced(path_of(store),
                       lambda tmp: df.write_parquet(tmp, compression='zstd'))
    return len(hists), time.perf_counter() - t0


# -- reading: the findings of the figures shown -----------------------------------------

def _history_of(key, unit):
    """A :class:`~clusterproof.store.history.History` without points: what
    the listing of a figure needs."""
    system, part, environ, test, figure, smoke, emulated = key
    flags = tuple(f for f, on in (('smoke', smoke), ('emulated', emulated)) if on)
    return history.History(system, part, f'{test} +{environ}' if environ else test, figure,
                           unit, flags, [])


def _sort_key(h):
    return (h.system, h.partition, h.test, h.figure, h.flags)


def _what(row):
    if row['status'] == 'skipped':
        return row['why']
    if row['noise'] is None:
        return None
    return detector_figure.FigureNoise(row['noise'], row['detectable'], row['n'],
                                       row['too_noisy'], row['heavy_tailed'])


def judged(stores, settings=None, system=None, want=None):
    """``[(history, status, what, found)]`` of every figure of ``stores``
    (paths of single stores; ``system``: only its figures; ``want(history)``:
    only the figures it keeps), in the order of
    :func:`~clusterproof.store.history.from_frame`; and how many were
    judged now (their findings missing or stale). The histories of the kept
    ones have no points. A figure in more than one store (a store per
    month) is judged over all of them, now."""
    settings = settings or model.Settings()
    sd = settings_digest(settings)
    per_store = []
    seen = {}
    for s in stores:
        lf = st.scan([s])
        if system:
            lf = lf.filter(pl.col('system') == system)
        digs = digests(lf)
        per_store.append((s, lf, digs))
        for k in digs:
            seen[k] = seen.get(k, 0) + 1
    out, live_frames, live_keys = [], [], set()
    for s, lf, digs in per_store:
        kept = read(s)
        stale = set()
        for k, d in digs.items():
            row = kept.get(k)
            if seen[k] > 1 or row is None or row['digest'] != d or row['settings'] != sd:
                stale.add(k)
                continue
            h = _history_of(k, row['unit'])
            if want is None or want(h):
                out.append((h, row['status'], _what(row), json.loads(row['found'])))
        if stale:
            live_frames.append(lf)
            live_keys |= stale
    now = 0
    if live_keys:
        lf = pl.concat(live_frames, how='vertical') if len(live_frames) > 1 else live_frames[0]
        hists = [h for h in history.from_frame(lf, keys=live_keys) if want is None or want(h)]
        out += [(h, *j) for h, j in zip(hists, _judge_all(hists, settings))]
        now = len(hists)
    out.sort(key=lambda r: _sort_key(r[0]))
    return out, now


def detect_kept(stores, settings=None, system=None, want=None):
    """What :func:`detect` returns for the
    histories of ``stores`` (see :func:`judged`), from the kept findings
    where they are current; and the number of figures judged now."""
    rows, now = judged(stores, settings, system, want)
    found, quiet, noisy, skipped = [], [], [], []
    for h, status, what, figure_found in rows:
        {'quiet': quiet, 'noisy': noisy, 'skipped': skipped}.get(status, []).append((h, what))
        found += figure_found
    return (rank(found), quiet, noisy, skipped), len(rows), now


def current(stores, keys):
    """``{key: found}`` of the figures ``keys`` whose kept findings in
    ``stores`` are current for the default settings (the others are not
    in it)."""
    sd = settings_digest()
    out = {}
    counted = {}
    for s in stores:
        lf = st.scan([s])
        digs = digests(lf)
        kept = read(s)
        for k, d in digs.items():
            counted[k] = counted.get(k, 0) + 1
            row = kept.get(k)
            if k in keys and row is not None and row['digest'] == d and row['settings'] == sd:
                out[k] = json.loads(row['found'])
    return {k: v for k, v in out.items() if counted[k] == 1}


def stores_read():
    """The single stores the commands read (``--store``,
    ``CLUSTERPROOF_STORE``, else the results database's, ingested first)."""
    sessions.figures()
    paths = sessions.store_paths() or [st.default_path(results_db())]
    return [s for p in paths for s in st.stores_in(p)]


def note(now, what='findings of {} figure(s) derived now'):
    """Say on stderr that ``now`` figures were judged by the command, their
    findings not kept."""
    if now:
        print(f'{what.format(now)}; `clusterproof store ingest` keeps them', file=sys.stderr)


# -- a figure's findings: what `clusterproof changes` and the morning page list ----------

def detect(hists, settings=None):
    """``(found, quiet, noisy, skipped)`` of ``hists``: the changes (dicts
    with their summary, largest first; a nightly alarm that later sessions
    disproved has ``withdrawn`` true), the figures without a change, those
    too noisy to judge and those not judged (with the reason). A figure too
    noisy to judge still lists the changes the detector keeps (each reached
    its own significance; ``settings.noisy_changes`` off: only those larger
    than its minimum detectable change), not its withdrawn alarms."""
    settings = settings or model.Settings()
    found, quiet, noisy, skipped = [], [], [], []
    for h in hists:
        status, what, figure_found = judge_figure(h, settings)
        {'quiet': quiet, 'noisy': noisy, 'skipped': skipped}.get(status, []).append((h, what))
        found += figure_found
    return rank(found), quiet, noisy, skipped


def listed(found, min_change=None):
    """The findings of ``found`` (see :func:`detect`) that are listed: those
    at least as large as their figure's smallest change that matters
    (``min_change``, a fraction, for every figure; None: per figure from
    site_config/changes.yaml, else its reference's tolerance,
    :mod:`.smallest`). `clusterproof changes`, the morning page, the night's
    notification and scripts/measure_detection.py list what this returns."""
    table = {} if min_change is not None else smallest.load()
    return smallest.keep(found, table, references=min_change is None)


def listing(hists, settings=None, min_change=None):
    """What `clusterproof changes PATH` lists of the histories ``hists``
    (``settings``: the detector's, default its defaults; ``min_change``: see
    :func:`listed`): ``(found, quiet, noisy, skipped)`` as :func:`detect`
    returns them, ``found`` only the listed findings."""
    found, quiet, noisy, skipped = detect(hists, settings)
    return listed(found, min_change), quiet, noisy, skipped


def judge_figure(h, settings):
    """``(status, what, found)`` of one history: ``status`` is ``changed``,
    ``quiet``, ``noisy`` or ``skipped``; ``what`` its
    :class:`~clusterproof.analysis.detector.figure.FigureNoise`
    (None for a history of one session) or, skipped, the reason; ``found``
    its changes (see :func:`detect`), each with its summary. A figure's
    findings depend on its history and ``settings`` alone
    (:func:`derive` keeps them)."""
    if not settings.linear and noise.linear(h.values):
        return 'skipped', 'values <= 0', []
    if len(h.points) < 2:
        return 'quiet', None, []
    groups = node_groups(h.points)
    cps, withdrawn = views.find(h.values, settings, groups)
    fn = detector_figure.figure_noise(h.values, cps, settings, groups)
    status = 'changed'
    if fn.too_noisy:
        if not settings.noisy_changes:
            cps = [c for c in cps if abs(c.change) >= fn.detectable]
        withdrawn = []
        if not cps:
            status = 'noisy'
    elif not cps:
        status = 'quiet'
    found = ([_finding(h, c, fn) for c in cps]
             + [_finding(h, c, fn, withdrawn=True) for c in withdrawn])
    for f in found:
        f['summary'] = summary(f)
    return status, fn, found


def rank(found):
    """``found`` (changes of figures in key order) as :func:`detect` lists
    them: standing changes first, largest first."""
    return sorted(found, key=lambda f: (f['withdrawn'], -abs(f['change']), f['system'],
                                        f['test'], f['figure']))


def node_groups(points):
    """The node list of each session, or None when the record has none."""
    groups = [p.provenance.get('job_nodelist', '') for p in points]
    return groups if any(groups) else None


def _finding(h, c, fn, withdrawn=False):
    first = h.points[c.at]
    return {
        'system': h.system, 'partition': h.partition, 'test': h.test, 'figure': h.figure,
        'unit': h.unit, 'flags': list(h.flags),
        'at': _iso(first.time), 'session': first.session, 'where': first.where,
        'change': round(c.change, 4), 'uncertainty': round(c.uncertainty, 4),
        'confidence': round(c.confidence, 4),
        'direction': _direction(h, c),
        'found': None if c.found is None else _iso(h.points[c.found].time),
        'view': c.view, 'kind': c.kind, 'withdrawn': withdrawn,
        'end': (None if c.end is None or c.end >= len(h.points)
                else _iso(h.points[c.end].time)),
        'rate': round(c.relative_rate, 5) if c.kind == 'drift' else None,
        'sessions_before': c.n_before, 'sessions_after': c.n_after,
        'noise': None if fn is None else round(fn.noise, 4),
        'detectable': None if fn is None else round(fn.detectable, 4),
        'attribution': attribution(h.points, c),
    }


#: the kinds of finding a person may be told of and give a verdict on, with
#: the letter that starts their ids
KINDS = {'change': 'c', 'regression': 'r', 'failure': 'x', 'outlier': 'o'}


def finding_id(kind, system, partition, test, figure, since):
    """A finding's stable id, the same each time it is derived again: its kind
    (:data:`KINDS`), where it is (system, partition, test, figure; a
    screening outlier's node stands in the figure's place) and since when (the
    session, or the time, where it begins). A figure that moves again later is
    a new finding with a new id. Eleven characters, e.g. ``c3f2a1b2c4d``."""
    if kind not in KINDS:
        raise ValueError(f'finding_id: unknown kind {kind!r}; known: {", ".join(KINDS)}')
    key = '\x1f'.join(str(x) for x in (kind, system, partition, test, figure, since))
    return KINDS[kind] + hashlib.sha256(key.encode()).hexdigest()[:10]


def change_id(f):
    """The id of a change found by the detector (a dict of :func:`_finding`)."""
    return finding_id('change', f['system'], f['partition'], f['test'], f['figure'],
                      f['session'] or f['at'])


def summary(f):
    """One sentence: 'Stream triad -7.9 % since 2026-11-20 (session 3f2a1b2c):
    spack_lock_hash: a1b2 -> c3d4; nothing else changed'."""
    since = f['at'][:10] + (f' (session {f["session"][:8]})' if f['session'] else '')
    what = '; '.join(f['attribution'])
    what = (what + '; nothing else changed') if what else 'no recorded provenance changed'
    if f.get('withdrawn'):
        return (f'{f["test"]} {f["figure"]}: the alarm of {f["found"][:10]} '
                f'({f["change"] * 100:+.1f}% since {since}) was withdrawn: later sessions '
                f'do not confirm it')
    if f.get('kind') == 'drift':
        return (f'{f["test"]} {f["figure"]} drifted {f["change"] * 100:+.1f}% '
                f'({f["rate"] * 100:+.2f}% per session) since {since}: {what}')
    if f.get('kind') == 'noise':
        return (f'{f["test"]} {f["figure"]} noise {f["change"] + 1:.1f} times '
                f'{"larger" if f["change"] > 0 else "as large"} since {since} '
                f'(a change of noise, not of level): {what}')
    if f.get('kind') == 'transient':
        return (f'{f["test"]} {f["figure"]} transient {f["change"] * 100:+.1f}% for '
                f'{f["sessions_after"]} session(s) since {since}, then the level came back '
                f'(not a change of level): {what}')
    return (f'{f["test"]} {f["figure"]} {f["change"] * 100:+.1f}% since {since}: {what}')


def _direction(h, c):
    if c.kind == 'noise':           # noisier is worse, whichever way the figure goes
        return 'worse' if c.shift > 0 else 'better'
    up = c.shift > 0
    return 'better' if up != h.lower_is_better else 'worse'


def _iso(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).isoformat()
