"""A person's verdict on each finding (``clusterproof triage``), on figure
stores made from the real series of tests/data/history-real (53 recorded
sessions with injected slowdowns) and the recorded results database: the
round trip through the real command, the verdict kept through a store
rebuild, and a verdict following a change that more nights moved by a
session."""

import getpass
import json
import re
import shlex

import pytest

from results_helpers import REPO, clusterproof, recorded_results

from clusterproof import ClusterproofError, store
from clusterproof.analysis import findings, triage
from clusterproof.store import sources

CSV = REPO / 'tests' / 'data' / 'history-real' / 'local-smoke.csv'


def _changes(results, refs, *extra):
    proc = clusterproof(['changes', '--format', 'json', *extra], results, refs)
    assert proc.returncode == 0, proc.stderr
    return {f['id']: f for f in json.loads(proc.stdout)}


@pytest.mark.slow
def test_triage_round_trip_through_the_command(tmp_path):
    results, refs = recorded_results(tmp_path), tmp_path / 'refs'
    refs.mkdir()
    assert clusterproof(['store', 'import', str(CSV)], results, refs).returncode == 0
    found = _changes(results, refs)
    assert found and all(f['state'] == 'untriaged' and f['verdict'] is None
                         for f in found.values())
    # the fio random-write latency that the competing I/O load moved
    fid = next(i for i, f in found.items() if not f['withdrawn'] and f['direction'] ==
               'worse' and f['test'].startswith('StorageFioBaseline %section=randwrite'))

    proc = clusterproof(['triage', fid, 'investigating', '--note', 'stress-ng in scratch'],
                        results, refs)
    assert proc.returncode == 0, proc.stderr
    assert f'{fid}: investigating' in proc.stdout and 'bless' not in proc.stdout
    after = _changes(results, refs)
    assert after[fid]['state'] == 'investigating'
    assert after[fid]['verdict']['note'] == 'stress-ng in scratch'
    assert after[fid]['verdict']['who'] == getpass.getuser()
    assert set(_changes(results, refs, '--untriaged')) == set(found) - {fid}
    table = clusterproof(['changes'], results, refs).stdout.splitlines()
    rows = [line for line in table if line[:1] == 'c' and ' investigating ' in line]
    assert len(rows) == 1 and rows[0].startswith(fid)
    # untriaged first: the triaged change is the last row of the table
    change_rows = [line for line in table[2:] if line[:1] == 'c']
    assert change_rows[-1] == rows[0]

    proc = clusterproof(['triage', fid, 'expected', '--note', 'new scratch disk'],
                        results, refs)
    assert proc.returncode == 0, proc.stderr
    line = proc.stdout.splitlines()[-1].strip()
    assert line.startswith('clusterproof bless --system local --check '
                           "'^StorageFioBaseline %section=randwrite_8files$'")
    assert '--write --reason' in line and fid in line and '--allow-smoke' in line
    # the printed command runs as printed: the new level becomes the reference
    proc = clusterproof(shlex.split(line)[1:], results, refs)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'lat_p99_99' in (refs / 'local.yaml').read_text()
    assert f'expected change {fid}: new scratch disk' in (refs / 'local.history').read_text()

    # the newest change, on the morning page: shown there with its verdict, last
    other = max((f for f in found.values() if not f['withdrawn']), key=lambda f: f['at'])['id']
    assert clusterproof(['triage', other, 'invalid'], results, refs).returncode == 0
    page = tmp_path / 'page.html'
    proc = clusterproof(['report', '-o', str(page)], results, refs)
    assert proc.returncode == 0, proc.stderr
    rows = re.findall(r'<tr class="change \w+ t-(\w+)" data-rank="\d+" data-id="(\w+)">',
                      page.read_text())
    assert rows[-1] == ('invalid', other) and ('untriaged', other) not in rows
    assert all(s == 'untriaged' for s, _i in rows[:-1])
    proc = clusterproof(['triage', '--summary'], results, refs)
    assert proc.returncode == 0, proc.stderr
    assert (f'{len(found)} finding(s), 2 triaged, 1 invalid: false-alarm rate 50%'
            in proc.stdout)
    assert clusterproof(['triage', '--summary', '--since', '2030-01-01'], results,
                        refs).returncode == 2

    # a rebuild derives the store and its findings anew: the verdicts stay
    kept = triage.path_of(results / 'store').read_text()
    proc = clusterproof(['store', 'rebuild'], results, refs)
    assert proc.returncode == 0, proc.stderr
    assert triage.path_of(results / 'store').read_text() == kept
    assert _changes(results, refs)[fid]['state'] == 'expected'

    # an id that names nothing: the nearest ids, nothing written
    proc = clusterproof(['triage', fid[:-1] + 'z', 'fixed'], results, refs)
    assert proc.returncode == 2
    assert f"no finding has the id '{fid[:-1]}z'" in proc.stderr and fid in proc.stderr
    proc = clusterproof(['triage', fid, 'done'], results, refs)
    assert proc.returncode == 2 and "invalid choice: 'done'" in proc.stderr
    assert triage.path_of(results / 'store').read_text() == kept


def _import(store, csv_path, first=None):
    """Import the recorded sessions of ``csv_path`` (the ``first`` of them)
    into ``store`` and derive the findings; the changes found."""
    lines = CSV.read_text().splitlines()
    order = list(dict.fromkeys(line.split(',')[7] for line in lines[1:]))
    keep = set(order[:first] if first else order)
    csv_path.write_text('\n'.join([lines[0]] + [line for line in lines[1:]
                                                 if line.split(',')[7] in keep]) + '\n')
    sources.import_history([csv_path], store)
    findings.derive(store, processes=1)
    (found, _q, _n, _s), _total, _now = findings.detect_kept([store])
    return order, [f for f in found if not f['withdrawn']]


def _triage(store, f, state):
    kept = triage.change_finding(f, triage.near(triage.figure_sessions([store], f),
                                                f['session']))
    return triage.record(store, kept, state, 'recorded before the later nights')


def test_a_verdict_follows_a_change_the_later_nights_moved(tmp_path):
    """With 34 of the 53 recorded sessions the detector places the step of
    fio's randread bandwidth at session 30; the later nights may place such a
    step a session later (the detector did so for an mmap figure before its
    version 2): with all 53 sessions, the same step placed at session 31 (the
    detector's finding, moved by hand) takes the verdict, saying from which
    id. The step of fio's randwrite tail latency it places at session 24
    keeps its verdict; the later nights add one at session 38: a new
    finding, untriaged."""
    store = tmp_path / 'store'
    order, early = _import(store, tmp_path / 'early.csv', first=34)
    mem = next(f for f in early if f['figure'] == 'bw'
               and f['test'].startswith('StorageFioBaseline %section=randread')
               and order.index(f['session']) == 30)
    tail = next(f for f in early if f['figure'] == 'lat_p99_99'
                and f['test'].startswith('StorageFioBaseline %section=randwrite')
                and order.index(f['session']) == 24)
    v_mem, v_tail = _triage(store, mem, 'expected'), _triage(store, tail, 'invalid')

    _order, late = _import(store, tmp_path / 'all.csv')
    late = [{**f, 'session': order[31]} if (f['test'], f['figure'], f['session'])
            == (mem['test'], mem['figure'], mem['session']) else f for f in late]
    rows = {findings.change_id(f): (f, s, v, c)
            for f, s, v, c in triage.states(late, triage.read(store))}
    moved = [r for r in rows.values() if r[3] == v_mem['id']]
    assert len(moved) == 1
    f, state, _v, _c = moved[0]
    assert (f['test'], f['figure']) == (mem['test'], mem['figure'])
    assert order.index(f['session']) == 31 and state == 'expected'
    assert findings.change_id(f) != v_mem['id']
    # a verdict on the moved change replaces the carried one: counted once
    v_new = triage.record(store, triage.change_finding(f, (), triage.read(store)), 'fixed')
    assert v_new['replaces'] == v_mem['id']
    got = triage.attach(late, triage.read(store))
    assert got[v_new['id']] == (v_new, None)
    assert v_mem['id'] not in {c for _v, c in got.values()}
    assert triage.replaced(triage.read(store)) == {v_mem['id']}
    # the tail latency's step at 24 keeps its verdict; the one at 38 is new
    later = {order.index(r[0]['session']): r for r in rows.values()
             if r[0]['test'] == tail['test'] and r[0]['figure'] == 'lat_p99_99'
             and r[0]['direction'] == 'worse'}
    assert sorted(later) == [24, 38] and v_tail['id'] in rows
    assert later[24][1] == 'invalid' and later[38][1:] == ('untriaged', None, None)
    # untriaged first
    states = [s for _f, s, _v, _c in triage.states(late, triage.read(store))]
    assert states == sorted(states, key=lambda s: s != 'untriaged')


def test_a_figure_going_back_is_a_new_finding(tmp_path):
    """A change in the other direction at the same place (the figure going
    back), or one beyond the window, never takes the verdict."""
    store = tmp_path / 'store'
    order, found = _import(store, tmp_path / 'all.csv')
    f = found[0]
    v = _triage(store, f, 'fixed')
    sessions = triage.figure_sessions([store], f)
    i = sessions.index(f['session'])
    step = 1 if i + 1 < len(sessions) else -1
    near = dict(f, session=sessions[i + step])
    back = dict(near, direction='better' if f['direction'] == 'worse' else 'worse')
    far_i = i + (triage.WINDOW + 1) * (1 if i + triage.WINDOW + 1 < len(sessions) else -1)
    far = dict(f, session=sessions[far_i])
    assert triage.attach([near], [v]) == {findings.change_id(near): (v, v['id'])}
    assert triage.attach([back], [v]) == {}
    assert triage.attach([far], [v]) == {}
    # its own id first: two candidates, the exact one keeps its verdict
    assert triage.attach([near, f], [v]) == {findings.change_id(f): (v, None)}
    # a verdict taken back is no longer carried
    back_to = triage.record(store, triage.change_finding(f, v['near']), 'untriaged')
    assert triage.attach([near], triage.read(store)) == {}
    assert triage.latest(triage.read(store))[v['id']] == back_to


def test_an_unreadable_triage_file_is_an_error_naming_it(tmp_path):
    store = tmp_path / 'store'
    store.mkdir()
    triage.path_of(store).write_text('{"format": 1, "verdicts": [')
    with pytest.raises(ClusterproofError, match=r'triage.json: unreadable triage file'):
        triage.read(store)
    triage.path_of(store).write_text('[]')
    with pytest.raises(ClusterproofError, match=r'not a triage file of format 1'):
        triage.read(store)
    with pytest.raises(ClusterproofError, match=r"unknown state 'done'"):
        triage.record(store, {'id': 'c0'}, 'done')
    assert triage.path_of(store).read_text() == '[]'


def _record_many(store, tag, n):
    for i in range(n):
        triage.record(store, {'id': f'c{tag}{i:09d}', 'kind': 'change'}, 'investigating')


def test_two_people_triaging_at_once_both_count(tmp_path):
    """Two processes recording verdicts at the same time: the store's lock
    puts each read-and-rewrite after the other, so none is lost."""
    import multiprocessing
    store = tmp_path / 'store'
    ctx = multiprocessing.get_context('fork')
    procs = [ctx.Process(target=_record_many, args=(store, tag, 15)) for tag in 'ab']
    for p in procs:
        p.start()
    for p in procs:
        p.join()
        assert p.exitcode == 0
    ids = [v['id'] for v in triage.read(store)]
    assert sorted(ids) == sorted(f'c{t}{i:09d}' for t in 'ab' for i in range(15))
    assert not [p for p in store.iterdir() if p.name.endswith('.tmp')]


def _first_sessions(tmp_path, name, n):
    """A results directory with the ``n`` oldest sessions of the recorded
    database (not smoke: the newest recorded one is)."""
    import sqlite3
    results = recorded_results(tmp_path / name)
    conn = sqlite3.connect(results / 'results.db')
    with conn:
        newer = [u for (u,) in conn.execute('SELECT uuid FROM sessions ORDER BY '
                                            'session_start_unix')][n:]
        for u in newer:
            conn.execute('DELETE FROM testcases WHERE session_uuid = ?', (u,))
            conn.execute('DELETE FROM sessions WHERE uuid = ?', (u,))
    conn.close()
    return results


def test_state_of_an_outlier_for_screen(tmp_path):
    """What `clusterproof screen` calls to show a screening outlier's state:
    the newest verdict on its id, untriaged without one."""
    store = tmp_path / 'store'
    oid = findings.finding_id('outlier', 'local', 'default', 'Stream', 'n3', 'session-1')
    assert oid.startswith('o') and triage.state_of(oid, [store]) == 'untriaged'
    triage.record(store, {'id': oid, 'kind': 'outlier', 'system': 'local'}, 'investigating')
    triage.record(store, {'id': oid, 'kind': 'outlier', 'system': 'local'}, 'fixed',
                  note='DIMM replaced')
    assert triage.state_of(oid, [store]) == 'fixed'
    assert triage.latest(triage.read(store))[oid]['note'] == 'DIMM replaced'


@pytest.mark.slow
def test_notify_names_the_ids_triage_accepts_and_sends_no_triaged_one(tmp_path, monkeypatch):
    """The regressions notify names for the recorded nights are exactly the
    findings triage knows, by id. DevZeroCopy's copy_bw against a reference
    of 45000 MB/s (-10 %): with two threads it passes the first recorded
    session and fails the next ones; its regression begins at the second
    session and keeps its id in both when a third failing night arrives.
    `triage ID expected` offers the bless of the sessions since it began,
    and notify no longer sends it. A screening outlier that notify sent is
    triaged by the id it was sent with."""
    from clusterproof.notify import config, send
    from clusterproof.screen.verdicts import FigureVerdict, NodeVerdict, Sample
    from clusterproof.screen.output import finding_of
    from clusterproof.references.judge import Verdict
    from clusterproof.store.sessions import load_sessions
    for name in ('a', 'b'):
        (tmp_path / name).mkdir()
    refs = tmp_path / 'refs'
    refs.mkdir()
    (refs / 'local.yaml').write_text('DevZeroCopy:\n  local:default:\n'
                                     '    copy_bw: [45000, -0.1, null, MB/s]\n')
    monkeypatch.setenv('CLUSTERPROOF_REFERENCES', str(refs))
    monkeypatch.delenv('CLUSTERPROOF_STORE', raising=False)
    monkeypatch.setenv('CP_TEST_WEBHOOK', 'http://127.0.0.1:9/x')     # nothing listens
    (tmp_path / 'local.yaml').write_text('channels: {webhook: {url_env: CP_TEST_WEBHOOK}}\n')
    cfg = config.load(tmp_path / 'local.yaml', 'local')
    named = []
    for name, n in (('a', 3), ('b', 4)):
        results = _first_sessions(tmp_path, name, n)
        monkeypatch.setenv('CLUSTERPROOF_RESULTS', str(results))
        [session] = load_sessions(last=1, system='local')
        got, triaged = send.items_of_session(cfg, session)
        sent = {i.id: i for i in got if i.kind in ('regression', 'failure')}
        known = {f['id']: f for f in triage.failures(findings.stores_read())}
        assert sent and set(sent) == set(known) and not triaged
        assert all(sent[i].test == known[i]['test'] and sent[i].since == known[i]['since']
                   for i in sent)
        [two] = [f for f in known.values() if f['test'] == 'DevZeroCopy %num_threads=2 +gnu'
                 and f['figure'] == 'copy_bw']
        sessions = [s for s, _ in store.session_starts(store.scan(findings.stores_read()))]
        assert two['kind'] == 'regression' and two['since'] == sessions[1]
        named.append(two['id'])
    assert named[0] == named[1] and named[0].startswith('r')

    proc = clusterproof(['triage', named[1], 'expected'], results, refs)
    assert proc.returncode == 0, proc.stderr
    line = proc.stdout.splitlines()[-1]
    assert "--check '^DevZeroCopy %num_threads=2$'" in line
    assert [w for w in shlex.split(line) if w in sessions] == sessions[1:]
    assert f'expected regression {named[1]}' in line and '--allow-smoke' not in line
    got, triaged = send.items_of_session(cfg, session)
    assert named[1] in {i.id for i in got} and triaged == {named[1]}
    assert named[1] not in {i.id for i in items_to_send(got, triaged)}
    assert len(items_to_send(got, triaged)) == len(got) - 1

    # a screening outlier, sent (the channel is down: it stays pending in the ledger)
    sample = Sample('n3', 'default', 'stream', 'Triad', 61000.0, 'MB/s')
    slow = NodeVerdict('n3', 'default', Verdict.SLOW, worst=FigureVerdict(
        sample, Verdict.SLOW, percent=-21.0, why='Triad 21 % below its peers'))
    (tmp_path / 'notify').mkdir()
    (tmp_path / 'notify' / 'local.yaml').write_text(
        'retries: 1\nchannels: {webhook: {url_env: CP_TEST_WEBHOOK}}\n')
    monkeypatch.setenv('CLUSTERPROOF_NOTIFY_CONFIG', str(tmp_path / 'notify'))
    assert send.after_screening('local', [slow], 'a1b2c3d4', when=1795400000.0) == send.NOT_SENT
    oid = finding_of(slow, 'local', 'a1b2c3d4')     # the id screen prints
    proc = clusterproof(['triage', oid, 'fixed', '--note', 'DIMM replaced'], results, refs)
    assert proc.returncode == 0, proc.stderr
    assert triage.state_of(oid, findings.stores_read()) == 'fixed'
    # triaged: the pending outlier is not sent
    assert send.after_screening('local', [slow], 'a1b2c3d4', when=1795400000.0) == 0


def items_to_send(got, triaged):
    from clusterproof.notify import items
    return items.to_send(got, triaged)
