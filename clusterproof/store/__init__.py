"""The figure store: every measured figure in one columnar table.

Derived from ReFrame's results database (which stays the record and is
never written) and from history imported once (CSV, perflogs). One row per
(session, test case, figure), the columns of :data:`SCHEMA`; a test case
that measured nothing (failed, skipped) has one row with figure ``''``.
Every command reads figures from here (:func:`read`), after
:func:`ingest` has added the sessions the store lacks.

On disk, a store is a directory of Parquet files and ``manifest.json``, the
list of the files and of the sessions they hold. A file is written under a
temporary name, synced and renamed; then the manifest is replaced the same
way. Readers read only the files the manifest lists, so a crash at any
moment leaves the store as it was before or after, never half-written.
Writers take ``<store>/.lock`` (flock): two nightly runs ingest one after
the other. The files of a month are merged into one when they grow many.

Parquet is read by DuckDB, Spark and Trino too: a fleet is a directory of
stores (one per system, or per system and month), and :func:`read` given
that directory reads them all (see docs/results.md).
"""

import contextlib
import fcntl
import json
import os
import time
import uuid as uuidlib
from pathlib import Path

import polars as pl

from clusterproof import ClusterproofError
from clusterproof.paths import replace_synced
from clusterproof.reframe_io import database as rfdb

#: the columns of the store, in order
SCHEMA = {
    'session': pl.Utf8,         # session uuid (imported history: its source and time)
    'start': pl.Float64,        # session start (unix time)
    'end': pl.Float64,          # session end
    'time': pl.Float64,         # job completion (unix time)
    'time_run': pl.Float64,     # the test case's run time (s, ReFrame's time_run)
    'system': pl.Utf8,
    'partition': pl.Utf8,
    'environ': pl.Utf8,
    'test': pl.Utf8,            # test name with its parameters, "IOR %num_threads=16"
    'figure': pl.Utf8,          # '' for a test case that measured nothing
    'value': pl.Float64,
    'unit': pl.Utf8,
    'ref': pl.Float64,          # the reference ReFrame judged with at run time
    'lower': pl.Float64,        # its relative thresholds (null: unbounded)
    'upper': pl.Float64,
    'perf_result': pl.Utf8,     # ReFrame's verdict of this figure: pass/fail
    # the direction its check declared (cp_lower_is_better); null: none declared
    # (imported history, older sessions), judge.lower_is_better falls back to the unit
    'declared_lower_is_better': pl.Boolean,
    'result': pl.Utf8,          # the test case's result: pass/fail/skip/abort
    'fail_phase': pl.Utf8,
    'reason': pl.Utf8,          # why the test case failed or was skipped
    'mode': pl.Utf8,
    'smoke': pl.Boolean,
    'emulated': pl.Boolean,
    'attrs': pl.Utf8,           # the test's attributes (JSON), for reference indices
    **{k: pl.Utf8 for k in rfdb.PROVENANCE_COLUMNS},
    'reframe_version': pl.Utf8,
    'cmdline': pl.Utf8,
    'time_start': pl.Utf8,      # session start as ReFrame wrote it
    'source': pl.Utf8,          # where the row came from: database, run report, file
}

#: what identifies "the same figure" across sessions, in every command (a
#: record's, a history's and a change's ``key``, made by :func:`identity`): a
#: smoke-size or emulated figure is not the same figure as a full-size one on
#: hardware, it has a history of its own
IDENTITY = ('system', 'partition', 'environ', 'test', 'figure', 'smoke', 'emulated')


def identity(system, partition, environ, test, figure, smoke=False, emulated=False):
    """The key of a figure: the values of :data:`IDENTITY`, in order."""
    return (system, partition, environ or '', test, figure, bool(smoke), bool(emulated))


MANIFEST = 'manifest.json'
#: the findings of the change detector kept beside the parts
#: (:mod:`clusterproof.analysis.findings`): derived from the store's rows
FINDINGS = 'findings.parquet'
#: the store's format: 2 added ``declared_lower_is_better``, 3 ``time_run``
FORMAT = 3
#: formats read: an older store reads with the columns it lacks null (the
#: unit decides the direction, as it did; no run time), and :func:`ingest`
#: rebuilds it
READS = (1, 2, 3)
#: a month's files are merged into one when it has more than this many
MERGE_AT = 8


def default_path(db):
    """The store derived from the results database ``db``."""
    return Path(db).parent / 'store'


def frame(rows):
    """A DataFrame of the store's schema from row dicts."""
    return pl.DataFrame(rows, schema=SCHEMA, orient='row' if rows and isinstance(
        rows[0], (list, tuple)) else None)


# -- the manifest and the lock ---------------------------------------------------

def _manifest(store):
    path = Path(store) / MANIFEST
    try:
        m = json.loads(path.read_text())
    except FileNotFoundError:
        return {'format': FORMAT, 'sessions': {}, 'files': []}
    except (OSError, ValueError) as err:
        raise ClusterproofError(f'{path}: unreadable figure store manifest ({err}); '
                                f'rebuild the store: clusterproof store rebuild') from None
    if m.get('format') not in READS:
        raise ClusterproofError(f'{path}: figure store of format {m.get("format")}, this '
                                f'clusterproof reads formats '
                                f'{", ".join(map(str, READS))}; rebuild it: '
                                f'clusterproof store rebuild')
    return m


def _save_manifest(store, m):
    text = json.dumps(m, indent=0, sort_keys=True)
    replace_synced(Path(store) / MANIFEST, lambda tmp: Path(tmp).write_text(text))


@contextlib.contextmanager
def locked(store):
    """The store's writer lock (waits for another writer to finish)."""
    store = Path(store)
    try:
        store.mkdir(parents=True, exist_ok=True)
        fh = open(store / '.lock', 'a')
    except OSError as err:
        raise ClusterproofError(f'cannot write the figure store {store}: {err.strerror}') \
            from None
    with fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


# -- writing -------------------------------------------------------------------------

def _write_part(store, df, tag):
    name = f'figures-{tag}-{uuidlib.uuid4().hex[:12]}.parquet'
    replace_synced(Path(store) / name,
                  lambda tmp: df.write_parquet(tmp, compression='zstd', statistics=True))
    return name


def _month(start):
    return time.strftime('%Y%m', time.gmtime(start))


def add(store, df, sessions):
    """Add rows ``df`` holding ``sessions`` (ids) to ``store``, under its
    lock held by the caller; the manifest is replaced last."""
    store = Path(store)
    m = _manifest(store)
    if df.height:
        df = df.sort(['start', 'system', 'test', 'figure'])
        tag = _month(df['start'][0])
        name = _write_part(store, df, tag)
        m['files'].append(name)
    else:
        name = ''
    for s in sessions:
        m['sessions'][s] = name
    _save_manifest(store, m)
    _merge_months(store, m)


def _merge_months(store, m):
    by_month = {}
    for f in m['files']:
        by_month.setdefault(f.split('-')[1], []).append(f)
    for month, files in by_month.items():
        if len(files) <= MERGE_AT:
            continue
        df = pl.concat([pl.read_parquet(Path(store) / f) for f in files])
        name = _write_part(store, df.sort(['start', 'system', 'test', 'figure']), month)
        old = set(files)
        m['files'] = [f for f in m['files'] if f not in old] + [name]
        m['sessions'] = {s: (name if f in old else f) for s, f in m['sessions'].items()}
        _save_manifest(store, m)
        for f in old:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(Path(store) / f)


def _clean(store, m):
    """Remove files a crash left: temporaries and parts no manifest lists
    (the other files are not parts: the kept findings, :data:`FINDINGS`)."""
    listed = set(m['files'])
    for p in Path(store).iterdir():
        if ((p.name.startswith('.') and p.name.endswith('.tmp'))
                or (p.name.startswith('figures-') and p.suffix == '.parquet'
                    and p.name not in listed)):
            with contextlib.suppress(FileNotFoundError):
                p.unlink()


def _rows_of(sessions):
    rows = []
    for uuid, start, end, run_report, source in sessions:
        rows += rfdb.case_rows(uuid, start, end, run_report, source)
    return frame(rows)


def ingest(db, store=None, batch=64):
    """Add the sessions of the results database ``db`` that ``store`` lacks
    (default: :func:`default_path`). Returns how many were added. A damaged
    database raises :class:`clusterproof.reframe_io.database.DamagedDatabase`
    (see :func:`ingest_reports`)."""
    store = Path(store or default_path(db))
    index = rfdb.session_index(db)
    m = _manifest(store)
    if m['format'] != FORMAT and (store / MANIFEST).exists():
        new = [u for u, _ in index if u not in m['sessions']]
        rebuild(db, store)          # an older format: derived anew, history kept
        return len(new)
    if not [u for u, _ in index if u not in m['sessions']] and (store / MANIFEST).exists():
        return 0                    # nothing new: no lock, no write
    with locked(store):
        m = _manifest(store)
        _clean(store, m)
        new = [u for u, _ in index if u not in m['sessions']]
        for i in range(0, len(new), batch):
            chunk = new[i:i + batch]
            add(store, _rows_of(rfdb.read_sessions(db, chunk)), chunk)
        if not (store / MANIFEST).exists():
            _save_manifest(store, m)
    return len(new)


def ingest_reports(results, store=None):
    """Add the sessions of the run reports of ``results``
    (``reports/run-report-*.json``) that ``store`` lacks: the sessions a
    damaged results database did not record. Returns their uuids."""
    store = Path(store or default_path(Path(results) / 'results.db'))
    added = []
    with locked(store):
        m = _manifest(store)
        seen = m.get('reports', {})     # report files read already: name -> mtime
        done = {}
        for path in rfdb.run_reports(results):
            mtime = path.stat().st_mtime
            if seen.get(path.name) == mtime:
                continue
            sess = rfdb.read_run_report(path)
            if sess is not None:
                done[path.name] = mtime
            if sess is None or sess[0] in m['sessions'] or sess[0] in added:
                continue
            add(store, _rows_of([sess]), [sess[0]])
            added.append(sess[0])
            m = _manifest(store)
        if done:
            m = _manifest(store)
            m['reports'] = {**m.get('reports', {}), **done}
            _save_manifest(store, m)
    return added


def rebuild(db, store=None):
    """Derive ``store`` anew from ``db``; the sessions the database lacks
    (imported history, sessions read from run reports) are kept as they are.
    Readers see the old store until the new manifest replaces it."""
    store = Path(store or default_path(db))
    with locked(store):
        old = _manifest(store)
        fresh = {'format': FORMAT, 'sessions': {}, 'files': []}
        index = rfdb.session_index(db)
        names = []
        in_db = [u for u, _ in index]
        if old['files']:
            keep = (scan([store]).filter(~pl.col('session').is_in(in_db)).collect()
                    .sort(['start', 'system', 'test', 'figure']))
            if keep.height:
                names.append(_write_part(store, keep, _month(keep['start'][0])))
                fresh['sessions'].update({s: names[-1] for s in keep['session'].unique()})
        for i in range(0, len(index), 64):
            chunk = [u for u, _ in index[i:i + 64]]
            df = _rows_of(rfdb.read_sessions(db, chunk))
            name = _write_part(store, df.sort(['start', 'system', 'test', 'figure']),
                               _month(df['start'][0])) if df.height else ''
            if name:
                names.append(name)
            fresh['sessions'].update({u: name for u in chunk})
        fresh['files'] = names
        _save_manifest(store, fresh)
        forget_findings(store)      # derived anew from the rebuilt store
        for f in old['files']:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(store / f)
        _merge_months(store, fresh)
    return len(index)


def forget_findings(store):
    """Remove the kept findings of ``store`` (:data:`FINDINGS`; a rebuild
    derives them anew)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(Path(store) / FINDINGS)


# -- reading ---------------------------------------------------------------------------

def stores_in(path):
    """The stores at ``path``: itself, or the stores in its subdirectories
    (a fleet)."""
    path = Path(path)
    if (path / MANIFEST).is_file():
        return [path]
    found = sorted(p.parent for p in path.glob(f'*/{MANIFEST}'))
    if not found:
        raise ClusterproofError(f'{path}: no figure store here ({MANIFEST}) nor in its '
                                f'subdirectories')
    return found


def scan(paths):
    """A lazy frame of every row of the stores at ``paths`` (see
    :func:`stores_in`)."""
    for attempt in range(3):
        files = []
        for p in paths:
            for s in stores_in(p):
                files += [s / f for f in _manifest(s)['files']]
        if all(f.exists() for f in files):
            break               # else a merge replaced some since: read the manifest again
    if not files:
        return frame([]).lazy()
    # files of an older format lack declared_lower_is_better, time_run: read as null
    return pl.scan_parquet(files, schema=SCHEMA, missing_columns='insert')


def held(store):
    """The ids of the sessions ``store`` holds."""
    return set(_manifest(store)['sessions'])


def session_starts(lf):
    """``(session, start)`` of the rows of ``lf``, oldest first."""
    return (lf.select('session', 'start').unique().sort('start').collect().rows())
