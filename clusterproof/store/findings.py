"""The findings of the change detector, kept in the figure store.

A figure's findings (its changes, or that it is quiet, too noisy or not
judged: :func:`clusterproof.results.changes.judge_figure`) depend only on
its history and the detector's settings. ``clusterproof store ingest``
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
import hashlib
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path

import polars as pl

from clusterproof import store as st
from clusterproof.results import changes, history

FILE = 'findings.parquet'
#: the detector's version: findings derived by another are stale (raise it
#: when a change to :mod:`clusterproof.results.changes` changes findings)
VERSION = 1
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
    s = dataclasses.asdict(settings or changes.Settings())
    text = json.dumps({'version': VERSION, **s}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def digests(lf):
    """``{figure key: digest of its history}`` of the store rows ``lf``: the
    rows :func:`clusterproof.results.history.from_frame` makes its history
    of, counted and hashed (sessions, times, values), in the engine."""
    df = (lf.filter(history.measured())
          .group_by(list(st.IDENTITY))
          .agg(pl.len().alias('n'),
               pl.struct('session', 'start', 'value').hash().sum().alias('h'))
          .collect())
    return {st.identity(*r[:7]): f'{r[7]}:{r[8]}' for r in df.iter_rows()}


def path_of(store):
    return Path(store) / FILE


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
    fn = what if isinstance(what, changes.FigureNoise) else None
    return {**dict(zip(st.IDENTITY, k)), 'unit': h.unit, 'digest': digest, 'settings': sd,
            'status': status, 'noise': fn and fn.noise, 'detectable': fn and fn.detectable,
            'n': fn and fn.n, 'too_noisy': fn and fn.too_noisy,
            'heavy_tailed': fn and fn.heavy_tailed,
            'why': what if isinstance(what, str) else None, 'found': json.dumps(found)}


_WORK = {}      # what forked workers read: the histories and the settings


def _judge(idx):
    hists, settings = _WORK['hists'], _WORK['settings']
    return [changes.judge_figure(hists[i], settings) for i in idx]


def _judge_all(hists, settings, processes=None):
    """:func:`~clusterproof.results.changes.judge_figure` of each of
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
    settings = settings or changes.Settings()
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
        st._write_synced(path_of(store),
                         lambda tmp: df.write_parquet(tmp, compression='zstd'))
    return len(hists), time.perf_counter() - t0


def forget(store):
    """Remove the findings of ``store`` (a rebuild derives them anew)."""
    try:
        os.unlink(path_of(store))
    except FileNotFoundError:
        pass


# -- reading: the findings of the figures shown -----------------------------------------

def _history_of(key, unit):
    """A :class:`~clusterproof.results.history.History` without points: what
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
    return changes.FigureNoise(row['noise'], row['detectable'], row['n'],
                               row['too_noisy'], row['heavy_tailed'])


def judged(stores, settings=None, system=None, want=None):
    """``[(history, status, what, found)]`` of every figure of ``stores``
    (paths of single stores; ``system``: only its figures; ``want(history)``:
    only the figures it keeps), in the order of
    :func:`~clusterproof.results.history.from_frame`; and how many were
    judged now (their findings missing or stale). The histories of the kept
    ones have no points. A figure in more than one store (a store per
    month) is judged over all of them, now."""
    settings = settings or changes.Settings()
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


def detect(stores, settings=None, system=None, want=None):
    """What :func:`clusterproof.results.changes.detect` returns for the
    histories of ``stores`` (see :func:`judged`), from the kept findings
    where they are current; and the number of figures judged now."""
    rows, now = judged(stores, settings, system, want)
    found, quiet, noisy, skipped = [], [], [], []
    for h, status, what, figure_found in rows:
        {'quiet': quiet, 'noisy': noisy, 'skipped': skipped}.get(status, []).append((h, what))
        found += figure_found
    return (changes.rank(found), quiet, noisy, skipped), len(rows), now


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
    from clusterproof.paths import results_db
    from clusterproof.results import database
    database.figures()
    paths = database.store_paths() or [st.default_path(results_db())]
    return [s for p in paths for s in st.stores_in(p)]


def note(now, what='findings of {} figure(s) derived now'):
    """Say on stderr that ``now`` figures were judged by the command, their
    findings not kept."""
    if now:
        print(f'{what.format(now)}; `clusterproof store ingest` keeps them', file=sys.stderr)
