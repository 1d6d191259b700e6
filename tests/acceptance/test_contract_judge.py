"""Judging contract items on the figure store's rows of real recorded runs
(tests/data/results/results.db: DevZeroCopy on system ``local``, mode
nightly, 5 sessions): statistics, validity rules, allowed modifications,
the record, and ``acceptance --contract --from-store`` (nothing run)."""

import statistics

import pytest

from clusterproof.acceptance import contract, judge, record
from clusterproof.references.judge import Verdict
from clusterproof.store.sessions import load_sessions, records
from results_helpers import SELFTEST_CHECKS, clusterproof, recorded_results

#: the recorded runs' check is a self-test check (acceptance --contract refuses
#: a contract naming a check the contract's checks do not have)
HEAD = (f'system: local\nmode: nightly\nchecks: {SELFTEST_CHECKS}\nrepetitions: 3\n'
        'reuse_within_days: 0\nitems:\n')


def item(ident='bw', figure='copy_bw', committed=1, tolerance='-50%', threads=1, extra=''):
    return (f'  - id: {ident}\n    check: DevZeroCopy\n    parameters: {{num_threads: {threads}}}\n'
            f'    figure: {figure}\n    committed: {committed}\n'
            f'    unit: {"s" if figure == "copy_time" else "MB/s"}\n'
            f'    tolerance: "{tolerance}"\n{extra}')


@pytest.fixture
def recorded(tmp_path):
    results = recorded_results(tmp_path)
    return results, load_sessions(results / 'results.db')


def judged(tmp_path, recorded, *items):
    results, sessions = recorded
    path = tmp_path / 'c.yaml'
    path.write_text(HEAD + ''.join(items))
    c = contract.load(path)
    return c, judge.judge_contract(c, records(sessions), results_dir=results)


def values(sessions, figure='copy_bw', n=3):
    """The values of the newest ``n`` nightly runs of DevZeroCopy %num_threads=1."""
    recs = sorted((r for s in sessions for r in s.recs if r.test.endswith('=1')
                   and r.figure == figure and r.mode == 'nightly'),
                  key=lambda r: r.times.completed)
    return [r.value for r in recs[-n:]]


def test_statistics_over_the_newest_valid_runs(tmp_path, recorded):
    newest = recorded[1]
    vals = values(newest)
    assert len(vals) == 3
    for stat, want in (('median', statistics.median(vals)), ('mean', statistics.fmean(vals)),
                       ('best', max(vals))):
        _, (res,) = judged(tmp_path, recorded, item(extra=f'    statistic: {stat}\n'))
        assert res.measured == pytest.approx(want) and res.judgement.verdict == Verdict.PASS
        assert len(res.counted) == 3 and res.spread == {'min': min(vals), 'max': max(vals),
                                                         'n': 3}
    # lower is better (a time): the best is the smallest
    _, (res,) = judged(tmp_path, recorded, item(figure='copy_time', committed=10,
                                                tolerance='+10%', extra='    statistic: best\n'))
    assert res.lower_is_better and res.measured == min(values(newest, figure='copy_time'))


def test_a_missed_committed_value_fails_naming_the_gap(tmp_path, recorded):
    _, (res,) = judged(tmp_path, recorded, item(committed=10**9, tolerance='-5%'))
    assert res.judgement.verdict == Verdict.REGRESSION and res.failing
    assert 'below the committed 1e+09 MB/s (tolerance -5.0%/+inf)' in res.judgement.reason
    assert record.item_verdict(res) == 'fail'


def test_runs_shorter_than_the_minimum_are_not_counted(tmp_path, recorded):
    _, (res,) = judged(tmp_path, recorded, item(extra='    validity: {min_runtime_s: 1000}\n'))
    assert res.judgement.verdict == Verdict.INVALID and res.measured is None
    assert res.judgement.reason.startswith('not measured validly: 0 valid run(s) of 3 required')
    assert all('less than the minimum 1000 s' in r.invalid_why for r in res.runs)
    assert record.item_verdict(res) == 'invalid'
    # the runs' own time_run decides: a minimum they all meet counts them all
    _, (res,) = judged(tmp_path, recorded, item(extra='    validity: {min_runtime_s: 0.01}\n'))
    assert res.judgement.verdict == Verdict.PASS


def test_a_modification_outside_what_is_allowed_is_not_counted(tmp_path, recorded):
    allowed = '    modifications: {copy_mib: {values: [64]}, num_threads: {min: 1, max: 4}}\n'
    _, (res,) = judged(tmp_path, recorded, item(extra=allowed))
    assert res.measured is None
    assert res.runs[0].invalid_why == \
        'modification not allowed: copy_mib=512 not among the allowed [64]'
    assert res.runs[0].used == {'copy_mib': 512, 'num_threads': 1}
    _, (res,) = judged(tmp_path, recorded, item(extra=allowed.replace('[64]', '[512]')))
    assert res.judgement.verdict == Verdict.PASS


def test_data_rule_needs_the_ram_of_the_nodes_under_test(tmp_path, recorded):
    """These runs recorded no node fingerprint: their RAM is unknown, and is
    never taken from the machine judging them."""
    rule = '    validity: {min_data_ram_ratio: 2, data_variable: copy_mib}\n'
    _, (res,) = judged(tmp_path, recorded, item(extra=rule))
    assert res.measured is None
    assert 'RAM of the nodes under test not recorded' in res.runs[0].invalid_why


def test_an_item_never_run_is_not_measured(tmp_path, recorded):
    c, (met, absent) = judged(tmp_path, recorded, item(), item(ident='t8', threads=8))
    assert absent.judgement.reason == 'not measured: no run of this item'
    assert record.item_verdict(absent) == 'not measured'
    rec = record.build(c, [met, absent])
    assert rec['verdict'] == 'rejected' and rec['why'] == '1 committed item(s) failed: t8'
    assert rec['mode'] == 'full' and rec['items'][0]['verdict'] == 'pass'


def test_size_bytes():
    assert judge.size_bytes('8TiB') == 8 * 2**40
    assert judge.size_bytes('512g') == 512 * 2**30
    assert judge.size_bytes(4096) == 4096.0
    assert judge.size_bytes('lots') is None and judge.size_bytes(None) is None


def from_store(tmp_path, contract_text, screening_json):
    """``acceptance --contract --from-store --screening`` on the recorded
    results: the finished process and the record file it was told to write."""
    results = recorded_results(tmp_path)
    path = tmp_path / 'c.yaml'
    path.write_text(contract_text)
    out = tmp_path / 'rec.json'
    screening = tmp_path / 'screen.json'
    screening.write_text(screening_json)
    proc = clusterproof(['acceptance', '--contract', str(path), '--from-store',
                         '--screening', str(screening), '--record', str(out)],
                        results, tmp_path / 'refs')
    return proc, out


@pytest.mark.slow     # the whole command, its page too: 1.6 s of processor time
def test_from_store_judges_and_names_the_failed_item(tmp_path):
    proc, out = from_store(
        tmp_path, HEAD.replace('reuse_within_days: 0', 'reuse_within_days: 100000') +
        item() + item(ident='too-fast', committed=10**9, tolerance='-5%') +
        item(ident='info', committed=10**9).replace('tolerance',
                                                    'kind: informative\n    tolerance'),
        '{"nodes": [], "outliers": []}')
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert 'repetition' not in proc.stdout
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith('REJECTED: 1 committed item(s) failed: too-fast (median ')
    rec = record.read(out)
    assert [i['verdict'] for i in rec['items']] == ['pass', 'fail', 'reported']
    assert len(rec['sessions']['reused']) == 3 and rec['sessions']['run'] == []
    assert rec['screening'] == {'nodes': [], 'outliers': []}
    assert out.with_suffix('.html').is_file()           # its report page beside it


def test_a_screening_the_report_cannot_show_is_refused_before_judging(tmp_path):
    proc, out = from_store(tmp_path, HEAD + item(), '{"nodes": 4, "outliers": []}')
    assert proc.returncode == 2 and 'screen.json: screening.nodes is 4, not a list' in \
        proc.stderr, proc.stdout + proc.stderr
    assert not out.exists() and not out.with_suffix('.html').exists()


def test_a_stored_run_with_another_set_value_is_not_counted(tmp_path, recorded):
    sets = '    set: {DevZeroCopy.copy_mib: 64}\n'
    _, (res,) = judged(tmp_path, recorded, item(extra=sets))
    assert res.measured is None
    assert res.runs[0].invalid_why == 'ran with copy_mib=512, the contract sets 64'
    _, (res,) = judged(tmp_path, recorded, item(extra=sets.replace('64', '512')))
    assert res.judgement.verdict == Verdict.PASS
