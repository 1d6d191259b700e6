"""The change detector's findings kept in the figure store, on a store
ingested from a real ReFrame results database (the recorded one, and
sessions written through ReFrame's own storage code): the same output as
judging the history live, re-derived only for the figures a new session
touched, and never read half-written."""

import json
import subprocess
import sys

import polars as pl
import pytest

from results_helpers import REPO, clusterproof, recorded_results, reframe_store
from test_store import _new_report

from conftest import WAIT_S

from clusterproof import store
from clusterproof.analysis import findings
from clusterproof.store import history


def _stepped(tmp_path):
    """The recorded sessions, then 14 more of the first recorded session's
    test cases, the last six at half the value: a change to find."""
    results = recorded_results(tmp_path)
    reframe_store(results, [_new_report(0, 1 + d, value_scale=0.5 if d >= 8 else
                                        1 + 0.01 * ((d * 7) % 5 - 2)) for d in range(14)])
    refs = tmp_path / 'refs'
    refs.mkdir()
    return results, refs


@pytest.mark.slow
def test_kept_findings_list_what_the_live_detector_lists(tmp_path):
    results, refs = _stepped(tmp_path)
    proc = clusterproof(['store', 'ingest'], results, refs)
    assert proc.returncode == 0, proc.stderr
    n = len(findings.read(results / 'store'))
    assert n > 0 and f'findings derived for {n} figures in ' in proc.stdout
    kept = clusterproof(['changes', '--format', 'json'], results, refs)
    assert kept.returncode == 0, kept.stderr
    assert 'derived now' not in kept.stderr
    # --last 1000 selects every session too, but a selection: judged live
    live = clusterproof(['changes', '--format', 'json', '--last', '1000'], results, refs)
    assert live.returncode == 0, live.stderr
    found = json.loads(kept.stdout)
    assert any(round(f['change'], 1) == -0.5 for f in found), found
    assert kept.stdout == live.stdout
    for extra in (['--all'], ['--all', '--figure', found[0]['figure']]):
        a = clusterproof(['changes', *extra], results, refs)
        b = clusterproof(['changes', *extra, '--last', '1000'], results, refs)
        assert a.returncode == b.returncode == 0 and a.stdout == b.stdout, extra


@pytest.mark.slow
def test_without_kept_findings_changes_says_it_derived_them(tmp_path):
    results, refs = _stepped(tmp_path)
    assert clusterproof(['store', 'ingest', '--no-findings'], results,
                        refs).returncode == 0
    assert not findings.path_of(results / 'store').exists()
    proc = clusterproof(['changes', '--format', 'json'], results, refs)
    assert proc.returncode == 0, proc.stderr
    assert 'derived now; `clusterproof store ingest` keeps them' in proc.stderr
    live = clusterproof(['changes', '--format', 'json', '--last', '1000'], results, refs)
    assert proc.stdout == live.stdout


@pytest.mark.slow
def test_a_new_session_restales_only_the_figures_it_touched(tmp_path):
    results, _ = _stepped(tmp_path)
    db, where = results / 'results.db', results / 'store'
    store.ingest(db, where)
    total, _ = findings.derive(where, processes=2)
    before = findings.read(where)
    assert total == len(before) and findings.derive(where)[0] == 0
    reframe_store(results, [_new_report(2, 30)])
    assert store.ingest(db, where) == 1
    newest = store.scan([where]).sort('start').collect()['session'][-1]
    touched = {store.identity(*r) for r in store.scan([where])
               .filter((pl.col('session') == newest) & history.measured())
               .select(*store.IDENTITY).unique().collect().iter_rows()}
    assert 0 < len(touched) < len(before)
    n, _ = findings.derive(where)
    assert n == len(touched)
    after = findings.read(where)
    assert {k for k in after if after[k]['digest'] != before.get(k, {}).get('digest')} \
        == touched
    assert all(after[k] == before[k] for k in before if k not in touched)


#: derive the findings, but die (SIGKILL) halfway through writing the file
_KILLED = '''
import os, sys
import polars as pl
from clusterproof.analysis import findings
real = pl.DataFrame.write_parquet
def half(self, path, **kw):
    real(self, path, **kw)
    size = os.path.getsize(path)
    with open(path, 'r+b') as fh:
        fh.truncate(size // 2)
    os.kill(os.getpid(), 9)
pl.DataFrame.write_parquet = half
findings.derive(sys.argv[1], processes=1)
'''


@pytest.mark.slow
def test_a_findings_file_written_half_is_never_read(tmp_path):
    results, refs = _stepped(tmp_path)
    db, where = results / 'results.db', results / 'store'
    store.ingest(db, where)
    proc = subprocess.run([sys.executable, '-c', _KILLED, str(where)], cwd=REPO,
                          capture_output=True, timeout=WAIT_S)
    assert proc.returncode == -9, proc.stderr
    assert [p.name for p in where.iterdir() if '.findings' in p.name]   # the half file
    assert not findings.path_of(where).exists()
    assert findings.read(where) == {}
    proc = clusterproof(['changes', '--format', 'json'], results, refs)
    assert proc.returncode == 0 and 'derived now' in proc.stderr
    # kept findings, then a crash while deriving again: the old ones stay read
    findings.derive(where)
    good = findings.read(where)
    reframe_store(results, [_new_report(2, 30)])
    store.ingest(db, where)
    proc = subprocess.run([sys.executable, '-c', _KILLED, str(where)], cwd=REPO,
                          capture_output=True, timeout=WAIT_S)
    assert proc.returncode == -9
    assert findings.read(where) == good
    kept = clusterproof(['changes', '--format', 'json'], results, refs)
    live = clusterproof(['changes', '--format', 'json', '--last', '1000'], results, refs)
    assert kept.stdout == live.stdout and 'derived now' in kept.stderr


@pytest.mark.slow
def test_the_morning_page_takes_the_kept_findings(tmp_path):
    """The page's ranked changes are the same with kept findings as judged
    live, and it lists the step `clusterproof changes` lists."""
    from results_helpers import table_rows
    results, refs = _stepped(tmp_path)
    pages = []
    for opt in (['--no-findings'], []):
        assert clusterproof(['store', 'ingest', *opt], results, refs).returncode == 0
        out = tmp_path / f'page{len(pages)}.html'
        proc = clusterproof(['report', '-o', str(out)], results, refs)
        assert proc.returncode == 0, proc.stderr
        assert ('looked for now' in proc.stderr) == (not pages)
        pages.append(table_rows(out.read_text(), 'changes-table')[1:])
    assert pages[0] == pages[1] and any('-50.' in r for r in pages[1])


@pytest.mark.slow
def test_two_derivations_at_once_judge_each_figure_once(tmp_path):
    """Two ingests deriving at once: the store's lock puts one after the
    other, and the second finds the findings current."""
    results, _ = _stepped(tmp_path)
    db, where = results / 'results.db', results / 'store'
    store.ingest(db, where)
    code = ('import sys; from clusterproof.analysis import findings; '
            'print(findings.derive(sys.argv[1])[0])')
    procs = [subprocess.Popen([sys.executable, '-c', code, str(where)], cwd=REPO,
                              stdout=subprocess.PIPE, text=True) for _ in range(2)]
    counts = sorted(int(p.communicate(timeout=WAIT_S)[0]) for p in procs)
    total = len(findings.digests(store.scan([where])))
    assert counts == [0, total] and len(findings.read(where)) == total


def test_finding_ids_are_stable_and_distinct():
    from clusterproof.analysis.findings import change_id, finding_id
    a = finding_id('change', 'emu', 'compute', 'Stream', 'triad', 's1')
    assert a == finding_id('change', 'emu', 'compute', 'Stream', 'triad', 's1')
    assert a.startswith('c') and len(a) == 11
    # the same figure moving again later is another finding; another kind too
    assert a != finding_id('change', 'emu', 'compute', 'Stream', 'triad', 's2')
    assert finding_id('regression', 'emu', 'compute', 'Stream', 'triad', 's1')[0] == 'r'
    f = {'system': 'emu', 'partition': 'compute', 'test': 'Stream', 'figure': 'triad',
         'session': 's1', 'at': '2026-11-20T00:00:00+00:00'}
    assert change_id(f) == a
    with pytest.raises(ValueError, match='unknown kind'):
        finding_id('alarm', 'emu', 'compute', 'Stream', 'triad', 's1')
