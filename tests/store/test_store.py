"""The figure store, derived from real ReFrame results databases (the recorded
one, and sessions written through ReFrame's own storage code): incremental
and atomic ingest, two writers at once, rebuild, a damaged database, fleets."""

import json
import os
import subprocess
import sys
import uuid as uuidlib

import polars as pl
import pytest
from results_helpers import (REPO, clusterproof, recorded_report, recorded_results,
                             reframe_store)

from conftest import WAIT_S

from clusterproof import ClusterproofError, store
from clusterproof.reframe_io import database as rfdb
from clusterproof.store import sources
from clusterproof.store.sessions import load_sessions, records


def _rows(path):
    return store.scan([path]).collect()


def _new_report(n, shift_days, value_scale=1.0):
    """The ``n``-th recorded report as a new session ``shift_days`` later."""
    rep = recorded_report(n)
    new = str(uuidlib.uuid4())
    info = rep['session_info']
    info.update(uuid=new, time_start_unix=info['time_start_unix'] + shift_days * 86400,
                time_end_unix=info['time_end_unix'] + shift_days * 86400)
    for run in rep['runs']:
        for tc in run['testcases']:
            tc['session_uuid'] = new
            tc['uuid'] = f'{new}:{tc["uuid"].split(":", 1)[1]}'
            tc['job_completion_time_unix'] += shift_days * 86400
            for pv in tc['perfvalues'].values():
                pv[0] *= value_scale
    return rep


def test_schema_version_is_the_pinned_reframes():
    from reframe.frontend.reporting.storage import _SqliteStorage
    assert rfdb.SCHEMA_VERSION == _SqliteStorage.SCHEMA_VERSION


def test_ingest_is_incremental_and_reads_as_the_database(tmp_path):
    results = recorded_results(tmp_path)
    db, where = results / 'results.db', results / 'store'
    assert store.ingest(db, where) == 5
    df = _rows(where)
    assert df['session'].n_unique() == 5
    # one row per figure of every test case of every session, as ReFrame recorded them
    expected = sum(len(tc['perfvalues']) for n in range(5)
                   for run in recorded_report(n)['runs'] for tc in run['testcases'])
    assert df.height == expected
    assert set(df['figure']) == {'copy_bw', 'copy_time'}
    assert df.filter(pl.col('smoke'))['session'].n_unique() == 1
    assert (df['binary_path'] == '/usr/bin/dd').all()
    assert store.ingest(db, where) == 0     # nothing new: nothing written
    files = sorted(p.name for p in where.iterdir())

    reframe_store(results, [_new_report(0, 10, value_scale=0.5)])
    assert store.ingest(db, where) == 1
    assert len(sorted(p.name for p in where.iterdir())) == len(files) + 1
    sessions = load_sessions(db)
    assert len(sessions) == 6
    newest = [r for r in records(sessions[-1:]) if r.figure == 'copy_bw']
    oldest = {r.key: r for r in records(sessions[:1]) if r.figure == 'copy_bw'}
    assert newest and all(r.value == pytest.approx(oldest[r.key].value * 0.5)
                          for r in newest)


def test_what_a_crash_leaves_is_never_read_and_is_cleaned(tmp_path):
    results = recorded_results(tmp_path)
    db, where = results / 'results.db', results / 'store'
    store.ingest(db, where)
    before = _rows(where)
    # a crash after writing a part, before the manifest named it; and one
    # in the middle of writing a part
    before.head(3).write_parquet(where / 'figures-209901-deadbeef0000.parquet')
    (where / '.figures-209901-0.parquet.x.tmp').write_bytes(b'PAR1 half')
    assert _rows(where).equals(before)
    reframe_store(results, [_new_report(1, 20)])
    assert store.ingest(db, where) == 1
    assert not (where / 'figures-209901-deadbeef0000.parquet').exists()
    assert not (where / '.figures-209901-0.parquet.x.tmp').exists()
    assert _rows(where)['session'].n_unique() == 6


def test_two_ingests_at_once_store_each_session_once(tmp_path):
    results = recorded_results(tmp_path)
    db, where = results / 'results.db', results / 'store'
    code = ('import sys; from clusterproof import store; '
            'print(store.ingest(sys.argv[1], sys.argv[2], batch=1))')
    procs = [subprocess.Popen([sys.executable, '-c', code, str(db), str(where)],
                              stdout=subprocess.PIPE, text=True) for _ in range(2)]
    added = [int(p.communicate(timeout=WAIT_S)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sorted(added) == [0, 5]
    df = _rows(where)
    assert df.height == df.unique(['session', 'test', 'figure']).height
    assert df['session'].n_unique() == 5


def test_rebuild_and_merge_give_the_same_rows(tmp_path):
    results = recorded_results(tmp_path)
    db, where = results / 'results.db', results / 'store'
    reframe_store(results, [_new_report(n % 5, 1 + n) for n in range(store.MERGE_AT + 2)])
    store.ingest(db, where, batch=1)        # one file per session, then merged by month
    manifest = json.loads((where / store.MANIFEST).read_text())
    assert len(manifest['files']) <= store.MERGE_AT + 1
    assert len(manifest['sessions']) == 5 + store.MERGE_AT + 2
    keys = ['session', 'test', 'figure']
    first = _rows(where).sort(keys)
    assert store.rebuild(db, where) == len(manifest['sessions'])
    assert _rows(where).sort(keys).equals(first)
    assert {p.name for p in where.glob('*.parquet')} == set(
        json.loads((where / store.MANIFEST).read_text())['files'])


def test_a_damaged_database_loses_no_night(tmp_path):
    """An empty results.db, as a kill or a full disk leaves: ReFrame then
    stores nothing, but writes the run report; the session is read from it."""
    results = tmp_path / 'results'
    (results / 'reports').mkdir(parents=True)
    (results / 'results.db').write_bytes(b'')
    report = _new_report(0, 0)
    (results / 'reports' / 'run-report-0.json').write_text(json.dumps(report))
    (results / 'reports' / 'run-report-1.json').write_text('{"session_info": ')   # cut off
    with pytest.raises(rfdb.DamagedDatabase, match='an empty file'):
        rfdb.session_index(results / 'results.db')
    refs = tmp_path / 'refs'
    refs.mkdir()
    proc = clusterproof(['compare', '--history', '0'], results, refs)
    assert report['session_info']['uuid'][:8] in proc.stdout, proc.stderr
    assert f'{results / "results.db"}: not a ReFrame results database' in proc.stderr
    assert f'mv {results / "results.db"} {results / "results.db"}.damaged' in proc.stderr
    assert 'read 1 session(s) from run reports' in proc.stderr
    # the next command does not read the same run reports again
    proc = clusterproof(['compare', '--history', '0'], results, refs)
    assert report['session_info']['uuid'][:8] in proc.stdout, proc.stderr
    assert 'read 0 session(s) from run reports' in proc.stderr
    manifest = json.loads((results / 'store' / store.MANIFEST).read_text())
    assert list(manifest['reports']) == ['run-report-0.json']


@pytest.mark.slow
def test_a_fleet_is_a_directory_of_stores(tmp_path):
    fleet = tmp_path / 'fleet'
    store.ingest(recorded_results(tmp_path) / 'results.db', fleet / 'sys-a')
    other = tmp_path / 'other'
    other.mkdir()
    reframe_store(other, [_new_report(0, 30), _new_report(1, 31)])
    store.ingest(other / 'results.db', fleet / 'sys-b')
    assert len(store.stores_in(fleet)) == 2
    df = store.scan([fleet]).collect()
    assert df['session'].n_unique() == 7
    assert df.height == _rows(fleet / 'sys-a').height + _rows(fleet / 'sys-b').height
    env = dict(os.environ, CLUSTERPROOF_STORE=str(fleet))
    proc = subprocess.run([str(REPO / '.venv' / 'bin' / 'clusterproof'), 'compare',
                           '--history', '0'], env=env, capture_output=True, text=True,
                          timeout=WAIT_S, cwd=REPO)
    assert 'against the references' in proc.stdout, proc.stderr
    refs = tmp_path / 'refs'
    refs.mkdir()
    proc = clusterproof(['report', '--store', str(fleet), '--last', '7', '-o',
                         str(tmp_path / 'r.html')], tmp_path / 'nothing', refs)
    assert 'report of 7 session(s)' in proc.stdout, proc.stderr
    # the example of docs/results.md: the fleet in DuckDB's SQL
    import duckdb
    sql = (f"SELECT system, test, figure, count(*) AS n, median(value) AS median "
           f"FROM read_parquet('{fleet}/*/figures-*.parquet') WHERE figure <> '' "
           f"GROUP BY ALL ORDER BY ALL")
    got = duckdb.sql(sql).fetchall()
    want = (df.filter(pl.col('figure') != '')
            .group_by('system', 'test', 'figure')
            .agg(pl.len().alias('n'), pl.col('value').median().alias('median'))
            .sort('system', 'test', 'figure').rows())
    assert len(got) == len(want) > 0
    assert all(g[:4] == w[:4] and g[4] == pytest.approx(w[4]) for g, w in zip(got, want))
    with pytest.raises(ClusterproofError, match='no figure store here'):
        store.stores_in(tmp_path / 'other')


@pytest.mark.slow
def test_a_night_with_an_empty_database_is_judged(tmp_path):
    """scripts/nightly with an empty results.db: ReFrame runs, cannot store
    the session, writes its run report; the night is still reported and
    compared, and the damaged file is named."""
    from conftest import reframe_env
    results = tmp_path / 'results'
    results.mkdir()
    (results / 'results.db').write_bytes(b'')
    env = reframe_env(results, extra={'CLUSTERPROOF_CHECKS': str(REPO / 'tests' / 'checks'
                                                                   / 'results'),
                                      'CLUSTERPROOF_REFERENCES': str(tmp_path / 'refs')})
    proc = subprocess.run([str(REPO / 'scripts' / 'nightly'), '--system', 'local'], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=WAIT_S)
    out = proc.stdout + proc.stderr
    assert 'failed to store results in the database' in out
    assert 'reading it from its run report' in out, out[-3000:]
    assert proc.returncode in (0, 1), out[-3000:]      # 1: no references to compare with
    session = out.split('nightly: ReFrame did not store session ')[1].split()[0]
    assert f'session {session[:8]}' in out      # compare judged it
    assert f'mv {results / "results.db"} {results / "results.db"}.damaged' in out
    assert (results / 'results.db').stat().st_size == 0     # never written by us
    assert list((results / 'reports').glob('nightly-*.html'))


@pytest.mark.slow
def test_history_from_elsewhere_is_imported_once(tmp_path):
    """Perflogs recorded from real STREAM runs, imported into a store: the
    commands' histories are those of the perflogs; a second import adds
    nothing."""
    from clusterproof.store import history
    data = REPO / 'tests' / 'data' / 'history'
    results = tmp_path / 'results'
    results.mkdir()
    reframe_store(results, [_new_report(0, 0)])
    refs = tmp_path / 'refs'
    refs.mkdir()
    proc = clusterproof(['store', 'import', str(data / 'perflogs')], results, refs)
    assert proc.returncode == 0 and 'imported ' in proc.stdout, proc.stderr
    again = clusterproof(['store', 'import', str(data / 'perflogs')], results, refs)
    assert 'imported 0 figure(s) of 0 session(s)' in again.stdout, again.stderr
    direct = {(h.test, h.figure): h.values for h in sources.load([data / 'perflogs'])}
    stored = {(h.test, h.figure): list(h.values)
              for h in history.from_database(results / 'results.db')
              if h.system == 'local' and h.test.startswith('Stream')}
    assert stored == direct and len(direct) == 8
    # rebuilding from the database keeps the imported history
    proc = clusterproof(['store', 'rebuild'], results, refs)
    assert 'rebuilt ' in proc.stdout, proc.stderr
    rebuilt = {(h.test, h.figure): list(h.values)
               for h in history.from_database(results / 'results.db')
               if h.system == 'local' and h.test.startswith('Stream')}
    assert rebuilt == direct


@pytest.mark.slow
def test_history_imported_before_the_first_run_is_read_by_every_command(tmp_path):
    """A site imports its history on day one, before ReFrame ever ran here
    (no results.db yet): the commands read the store, not refuse."""
    results, refs = tmp_path / 'results', tmp_path / 'refs'
    results.mkdir()
    refs.mkdir()
    csv = REPO / 'tests' / 'data' / 'history-real' / 'local-smoke.csv'
    proc = clusterproof(['store', 'import', str(csv)], results, refs)
    assert proc.returncode == 0 and 'imported ' in proc.stdout, proc.stderr
    assert not (results / 'results.db').exists()
    for args in (['changes'], ['compare'], ['report']):
        proc = clusterproof(args, results, refs)
        assert 'no results database' not in proc.stderr, (args, proc.stderr)
        assert proc.returncode in (0, 1), (args, proc.stderr)
    assert 'drift over' in clusterproof(['compare'], results, refs).stdout


def _declaring(tmp_path, declared):
    """The recorded results and a newer session whose test cases declare the
    directions ``declared``: (database, store path, its report)."""
    results = recorded_results(tmp_path)
    rep = _new_report(0, 10)
    for run in rep['runs']:
        for tc in run['testcases']:
            tc['cp_lower_is_better'] = declared
    reframe_store(results, [rep])
    return results / 'results.db', results / 'store', rep


def test_the_declared_direction_is_stored_and_decides(tmp_path):
    """The direction a check declares with each test case (cp_lower_is_better)
    is a column of the store, and records and histories read from the store
    take it from there; sessions that declare none (the recorded ones, imported
    history) are null and the unit decides, as judge.lower_is_better says. Here
    the newest session declares copy_time higher-is-better, against its unit
    (s): the declaration wins."""
    from clusterproof.store import history
    db, where, rep = _declaring(tmp_path, {'copy_bw': False, 'copy_time': False})
    assert store.ingest(db, where) == 6
    df = _rows(where)
    new = df.filter(pl.col('session') == rep['session_info']['uuid'])
    assert new.height and new['declared_lower_is_better'].to_list() == [False] * new.height
    old = df.filter(pl.col('session') != rep['session_info']['uuid'])
    assert old['declared_lower_is_better'].null_count() == old.height
    sessions = load_sessions(db)
    times = [r for r in records(sessions) if r.figure == 'copy_time']
    assert {r.lower_is_better for r in times if r.session != rep['session_info']['uuid']} \
        == {True}                                   # no declaration: the unit (s) decides
    assert {r.lower_is_better for r in times if r.session == rep['session_info']['uuid']} \
        == {False}
    hists = [h for h in history.from_records(sessions, records(sessions))
             if h.figure == 'copy_time' and not h.flags]
    assert hists and all(not h.lower_is_better for h in hists)
    # imported history declares nothing: the unit decides
    assert history.History('local', 'default', 'T', 'copy_time', 's', ()).lower_is_better


def test_a_store_of_format_1_is_read_and_rebuilt_by_ingest(tmp_path):
    """A store written before the direction was a column (format 1, files
    without declared_lower_is_better and time_run) reads with the columns
    null; the next ingest derives them anew from the database, keeping
    imported history."""
    db, where, rep = _declaring(tmp_path, {'copy_bw': False, 'copy_time': True})
    store.ingest(db, where)
    before = _rows(where).height
    m = json.loads((where / store.MANIFEST).read_text())
    for f in m['files']:
        pl.read_parquet(where / f).drop('declared_lower_is_better', 'time_run') \
            .write_parquet(where / f)
    m['format'] = 1
    (where / store.MANIFEST).write_text(json.dumps(m))
    old = _rows(where)
    assert old.height == before and old['declared_lower_is_better'].null_count() == before
    assert old['time_run'].null_count() == before
    sources.import_history([REPO / 'tests' / 'data' / 'history' / 'perflogs'], where)
    imported = _rows(where).height - before
    assert imported > 0
    assert store.ingest(db, where) == 0                     # no new session, but rebuilt
    assert json.loads((where / store.MANIFEST).read_text())['format'] == store.FORMAT
    df = _rows(where)
    assert df.height == before + imported
    new = df.filter(pl.col('session') == rep['session_info']['uuid'])
    assert sorted(new['declared_lower_is_better'].unique().to_list()) == [False, True]
    assert new['time_run'].null_count() == 0 and (new['time_run'] > 0).all()
    (where / store.MANIFEST).write_text(json.dumps(dict(m, format=0)))
    with pytest.raises(ClusterproofError, match=r'manifest.json: figure store of format 0, '
                                                r'this clusterproof reads formats 1, 2'):
        _rows(where)


def test_a_figure_is_one_figure_in_every_command(tmp_path):
    """One identity (store.IDENTITY): the figures of the recorded sessions
    have the same key as records (compare, bless), as histories (changes,
    the report's multiples) and as changes found (the report's first
    screen); smoke-size figures have a history of their own."""
    from clusterproof.references.judge import Verdict
    from clusterproof.analysis import compare, recent
    from clusterproof.store import history
    db = recorded_results(tmp_path) / 'results.db'
    sessions = load_sessions(db)
    recs = [r for r in records(sessions) if r.figure and r.outcome.sanity_ok]
    hists = history.from_database(db)
    assert {r.key for r in recs} == {h.key for h in hists}
    assert all(len(k) == len(store.IDENTITY) for k in {r.key for r in recs})
    # the report finds a change's figure by the key of its finding
    assert all(recent.change_key({'system': h.system, 'partition': h.partition, 'test': h.test,
                                  'figure': h.figure, 'flags': list(h.flags)}) == h.key
               for h in hists)
    # a session compared with itself: every figure found in the base
    newest = [r for r in records(sessions[-1:])]
    rows = compare.against_session(newest, newest)
    assert rows and not [r for r in rows if r.verdict == Verdict.MISSING]
    smoke = [r for r in recs if r.smoke]
    full = {r.key for r in recs if not r.smoke}
    assert smoke and not any(r.key in full for r in smoke)
