"""``clusterproof acceptance --system`` end to end on this machine:
repetitions in mode acceptance, the median of each figure judged against the
declared references (a contract made from them), the record and its report
page, and the bless command to run after sign-off.

The check is the small real copy benchmark of the results tests
(tests/checks/results/devzero_copy.py), or a real storage check that skips;
the references are written by the test into a references directory of its
own. The contract made from references is also judged on records of real
runs.
"""

import dataclasses
import statistics
import subprocess

import pytest

from clusterproof import ClusterproofError
from clusterproof.acceptance import contract, judge, record, run
from clusterproof.references.judge import Verdict
from clusterproof.store.sessions import Outcome, load_sessions, records
from conftest import WAIT_S
from results_helpers import (REPO, SELFTEST_CHECKS, clusterproof, cp_env, recorded_results,
                             without_binary)

ARGS = ['acceptance', '--system', 'local', '--repetitions', '2',
        '--checks', str(SELFTEST_CHECKS), '--', '-n', 'DevZeroCopy%num_threads=1',
        '-S', 'DevZeroCopy.copy_mib=64']


def references(tmp_path, copy_bw):
    refs = tmp_path / 'refs'
    refs.mkdir()
    (refs / 'local.yaml').write_text(
        'DevZeroCopy:\n'
        '  $index: [$partition, num_threads]\n'
        '  "local:default":\n'
        '    1:\n'
        f'      copy_bw: [{copy_bw}, -0.5, null, "MB/s"]\n')
    return refs


@pytest.mark.slow
def test_acceptance_passes_against_a_reachable_reference(tmp_path):
    refs = references(tmp_path, 1)              # 1 MB/s: any working machine
    out = tmp_path / 'acceptance.html'
    proc = clusterproof(ARGS[:1] + ['-o', str(out)] + ARGS[1:], tmp_path / 'results', refs,
                        timeout=WAIT_S)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert 'repetition 2/2' in proc.stdout
    assert 'acceptance of local:' in proc.stdout and '0 not passed' in proc.stdout
    assert 'pass' in proc.stdout and 'copy_bw' in proc.stdout
    assert 'clusterproof bless' in proc.stdout and '--write' in proc.stdout
    page = out.read_text()
    assert 'copy_bw' in page and '<html' in page.lower()
    # the record of the one acceptance, the page rendered from it
    rec = record.read(next((tmp_path / 'results' / 'acceptance').glob('local-references-*.json')))
    assert rec['verdict'] == 'accepted' and len(rec['sessions']['run']) == 2
    (item,) = rec['items']
    assert item['id'] == 'DevZeroCopy num_threads=1 @local:default copy_bw'
    assert item['verdict'] == 'pass' and item['spread']['n'] == 2
    assert rec['contract']['sha256'] and rec['contract']['file'].endswith('refs/local.yaml')
    # the figure without a reference: shown, not an item
    (other,) = rec['not_judged']
    assert (other['test'], other['figure'], other['n']) == \
        ('DevZeroCopy %num_threads=1', 'copy_time', 2)
    assert 'id="not-judged-table"' in page and 'copy_time' in page


@pytest.mark.slow
def test_acceptance_fails_an_item_below_its_reference(tmp_path):
    refs = references(tmp_path, 10**9)          # 1 PB/s: no machine reaches it
    proc = clusterproof(ARGS, tmp_path / 'results', refs, timeout=WAIT_S)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    line = next(x for x in proc.stdout.splitlines() if '@local:default copy_bw:' in x)
    assert line.split()[0] == 'REGRESSION' and 'below the lower bound' in line


@pytest.mark.slow
def test_acceptance_fails_a_referenced_check_that_was_skipped(tmp_path):
    """A storage check with a reference that SKIPS (no ior binary: a genuine
    skip, the Spack view of the test empty and no ior on PATH) is an item
    that fails, named with ReFrame's skip reason."""
    refs = tmp_path / 'refs'
    refs.mkdir()
    (refs / 'local.yaml').write_text(
        'IorSharedFile:\n'
        '  $index: [threads]\n'
        '  1:\n'
        '    write_max_gbs: [1.0, -0.5, null, GB/s]\n')
    env = without_binary(cp_env(tmp_path / 'results', refs), 'ior', tmp_path / 'view')
    proc = subprocess.run([str(REPO / '.venv' / 'bin' / 'clusterproof'), 'acceptance',
                           '--system', 'local', '--repetitions', '1', '--',
                           '-n', 'IorSharedFile%threads=1$'],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=WAIT_S)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert '1 skipped' in proc.stdout                # ReFrame skipped it (and exited 0)
    assert '1 item(s), 1 not passed' in proc.stdout
    line = next(x for x in proc.stdout.splitlines() if 'IorSharedFile threads=1' in x)
    # the one verdict of an item with runs, none valid (before the contract
    # path, acceptance --system said FAILED)
    assert line.split()[0] == 'invalid' and 'write_max_gbs' in line
    assert 'skipped: ior not found' in line and 'spack -e . install ior@4.0.0' in line


@pytest.mark.slow
def test_acceptance_fails_a_referenced_check_that_never_ran(tmp_path):
    """References for a thread count the run never reached (the filter
    leaves it out): that item fails as absent; the measured one passes."""
    refs = references(tmp_path, 1)
    with open(refs / 'local.yaml', 'a') as f:
        f.write('    2:\n      copy_bw: [1, -0.5, null, "MB/s"]\n')
    args = ARGS[:3] + ['--repetitions', '1'] + ARGS[5:]
    proc = clusterproof(args, tmp_path / 'results', refs, timeout=WAIT_S)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    # the items are the references (before the contract path, acceptance
    # --system also listed copy_time, without one, as a third item; and said
    # FAILED, absent: not run, where the one verdict is not measured)
    assert '2 item(s), 1 not passed' in proc.stdout
    assert '  no-ref       DevZeroCopy %num_threads=1 @local:default copy_time: ' in proc.stdout
    lines = [x.split() for x in proc.stdout.splitlines()
             if x.startswith('  ') and '@local:default copy_bw' in x]
    verdicts = {words[3 if words[0] == 'not' else 2]: words[0] for words in lines}
    assert verdicts == {'num_threads=1': 'pass', 'num_threads=2': 'not'}
    assert ('DevZeroCopy num_threads=2 @local:default copy_bw: not measured: '
            'no run of this item (reference') in proc.stdout


def test_options_of_the_other_path_are_refused_before_anything_runs(tmp_path):
    for args, words in (
            (['--system', 'local', '--session', 'abc'], '--from-store and --session go with '
                                                        '--contract'),
            (['--system', 'local', '--repetitions', '0'], 'argument --repetitions: 0: want a whole '
                                                          'number from 1')):
        proc = clusterproof(['acceptance'] + args, tmp_path / 'results', tmp_path / 'refs')
        assert proc.returncode == 2 and words in proc.stderr, proc.stderr
    assert not (tmp_path / 'results').exists()


# -- the contract of the references, judged on records of real runs ---------------
# (these replaced the tests of the former verdict table of acceptance --system,
# results/acceptance.py: same cases, through the one judge of every contract)

REFS = {'DevZeroCopy': {'$index': ['$partition', 'num_threads'],
                        'local:default': {1: {'copy_bw': [1, -0.5, None, 'MB/s']},
                                          2: {'copy_bw': [1, -0.5, None, 'MB/s']}}}}


def _recorded(tmp_path, n=2):
    sessions = load_sessions(recorded_results(tmp_path) / 'results.db')[:n]
    return [s.uuid for s in sessions], records(sessions)


def _judged(recs, uuids, refs=REFS):
    # the recorded sessions ran in mode nightly
    c = dataclasses.replace(contract.from_references('local', ['default'], refs, 'local.yaml',
                                                     repetitions=len(uuids)), mode='nightly')
    return [judge.judge_item(item, c, recs) for item in c.items]


def _table(recs, uuids, refs=REFS):
    results = _judged(recs, uuids, refs)
    return {r.item.id: r.judgement for r in results}, sum(r.failing for r in results)


def test_every_declared_reference_is_an_item(tmp_path):
    c = contract.from_references('local', ['default', 'other'], REFS, tmp_path / 'none.yaml',
                                 repetitions=3, selection=['-n', 'DevZeroCopy'])
    assert [(i.id, i.committed, i.tolerance, i.repetitions, i.statistic) for i in c.items] == [
        (f'DevZeroCopy num_threads={n} @local:default copy_bw', 1, '-50.0%/+inf', 3, 'median')
        for n in (1, 2)]
    assert c.mode == 'acceptance' and c.reuse_within_days == 0 and c.repetitions == 3
    assert c.selection == ('-n', 'DevZeroCopy')


def test_references_that_judge_nothing_are_refused(tmp_path):
    """No references file, or none of its references for the system's
    partitions: refused, naming the file and the command that makes one,
    never an acceptance of no item."""
    with pytest.raises(ClusterproofError) as err:
        contract.from_references('local', ['default'], {}, tmp_path / 'local.yaml',
                                 repetitions=3)
    assert str(err.value).startswith(
        f'acceptance --system local: no references for local: {tmp_path / "local.yaml"} does '
        f'not exist, so there is nothing to judge the runs against; nothing was run: make '
        f'them from sessions you trust')
    assert 'clusterproof bless --system local --last 3 --write' in str(err.value)
    (tmp_path / 'local.yaml').write_text('# the partition other only\n')
    with pytest.raises(ClusterproofError, match=(
            f'acceptance --system local: {tmp_path / "local.yaml"} has no reference for the '
            f'partitions of local \\(other\\), so there is nothing to judge')):
        contract.from_references('local', ['other'], REFS, tmp_path / 'local.yaml',
                                 repetitions=3)


def test_no_references_refused_before_anything_runs(tmp_path):
    """The command: exit 2, nothing run or written, without a references file."""
    results, refs = tmp_path / 'results', tmp_path / 'refs'
    proc = clusterproof(ARGS, results, refs)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert (f'no references for local: {refs / "local.yaml"} does not exist'
            in proc.stderr), proc.stderr
    # nothing written but ReFrame's log of its --describe
    assert [p.name for p in results.rglob('*')] in ([], ['reframe.log'])
    assert 'repetition' not in proc.stdout


@pytest.mark.slow
def test_a_selection_without_references_refused_before_anything_runs(tmp_path):
    """A selection of checks none of whose references are declared (what
    the selection selects asked of ReFrame's loader, --describe), or of no
    check: exit 2, nothing run or written."""
    results, refs = tmp_path / 'results', tmp_path / 'refs'
    refs.mkdir()
    (refs / 'local.yaml').write_text('IorSharedFile:\n  $index: [threads]\n  1:\n'
                                     '    write_max_gbs: [1.0, -0.5, null, GB/s]\n')
    proc = clusterproof(ARGS + ['-x', 'DevZeroCopy'], results, refs)
    assert proc.returncode == 2 and 'ReFrame selected no test case' in proc.stderr, proc.stderr
    proc = clusterproof(ARGS, results, refs)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert (f'none of the 1 reference(s) of {refs / "local.yaml"} is for a check that -n '
            f"DevZeroCopy%num_threads=1 -S DevZeroCopy.copy_mib=64 selects (DevZeroCopy), "
            f'so there is nothing to judge the runs against; nothing was run: select checks '
            f'that have references (IorSharedFile), or make them') in proc.stderr, proc.stderr
    # nothing written but ReFrame's log of its --describe
    assert [p.name for p in results.rglob('*')] in ([], ['reframe.log'])
    assert 'repetition' not in proc.stdout


def test_verdicts_of_measured_items(tmp_path):
    uuids, recs = _recorded(tmp_path)
    table, failed = _table(recs, uuids)
    assert failed == 0
    bw1 = table['DevZeroCopy num_threads=1 @local:default copy_bw']
    assert bw1.verdict == Verdict.PASS and bw1.reason.startswith('median ')
    assert 'DevZeroCopy num_threads=1 @local:default copy_time' not in table


def test_figures_no_item_judges_are_listed(tmp_path):
    uuids, recs = _recorded(tmp_path)
    judged = _judged(recs, uuids)
    listed = judge.not_judged(judged, recs)
    assert [(x['test'], x['partition'], x['figure'], x['n']) for x in listed] == [
        (f'DevZeroCopy %num_threads={n}', 'local:default', 'copy_time', 2) for n in (1, 2)]
    times = [r.value for r in recs if r.test.endswith('=1') and r.figure == 'copy_time']
    assert listed[0]['median'] == statistics.median(times) and listed[0]['unit'] == 's'


def test_an_item_missing_from_one_repetition_fails(tmp_path):
    uuids, recs = _recorded(tmp_path)
    gone = [r for r in recs if not (r.session == uuids[1] and r.test.endswith('=2'))]
    table, failed = _table(gone, uuids)
    assert failed == 1
    missing = table['DevZeroCopy num_threads=2 @local:default copy_bw']
    assert missing.verdict == Verdict.INVALID
    assert missing.reason == 'not measured validly: 1 valid run(s) of 2 required'


def test_failed_and_skipped_cases_give_the_reason(tmp_path):
    uuids, recs = _recorded(tmp_path)
    one = [r for r in recs if r.test.endswith('=1')]
    case = next(r for r in recs if r.test.endswith('=2') and r.session == uuids[0])
    failed_case = dataclasses.replace(case, figure='', value=float('nan'),
                                      outcome=Outcome('fail', 'sanity', 'no bytes copied'))
    skipped = dataclasses.replace(case, session=uuids[1], figure='', value=float('nan'),
                                  outcome=Outcome('skip', None, 'dd not found'))
    results = _judged(one + [failed_case, skipped], uuids)
    assert sum(r.failing for r in results) == 1
    two = next(r for r in results if 'num_threads=2' in r.item.id)
    assert two.judgement.verdict == Verdict.INVALID
    assert {x.invalid_why for x in two.runs} == {'failed in sanity: no bytes copied',
                                                 'skipped: dd not found'}
    # Skipped with no reference: no item, and it fails nothing.
    only_one = {'DevZeroCopy': {'$index': ['$partition', 'num_threads'],
                                'local:default': {1: REFS['DevZeroCopy']['local:default'][1]}}}
    results = _judged(one + [skipped], uuids, only_one)
    assert [r.item.id for r in results] == ['DevZeroCopy num_threads=1 @local:default copy_bw']
    assert run.unexplained(results, one + [skipped], []) == []
    # Failed with no reference: no item, and it fails the acceptance.
    lines = run.unexplained(results, one + [failed_case], [])
    assert len(lines) == 1 and lines[0].startswith('FAILED: DevZeroCopy %num_threads=2 @local')
    assert lines[0].endswith('no item of the acceptance: failed in sanity: no bytes copied')
    # ... and the record says so
    c = contract.from_references('local', ['default'], only_one, 'local.yaml', repetitions=2)
    rec = record.build(c, results, unexplained=lines)
    assert rec['verdict'] == 'rejected' and rec['why'].endswith(lines[0])


def test_a_record_with_nothing_counted_still_says_emulated(tmp_path):
    """An emulated smoke run that timed out is counted nowhere; the record
    still says what was run (never 'full' for want of a counted run)."""
    uuids, recs = _recorded(tmp_path)
    results = _judged(recs, uuids)
    results = [dataclasses.replace(r, counted=[], runs=[
        dataclasses.replace(x, valid=False, invalid_why='failed in sanity: timeout',
                            rec=dataclasses.replace(x.rec, emulated=True, smoke=True))
        for x in r.runs]) for r in results]
    c = contract.from_references('local', ['default'], REFS, 'local.yaml', repetitions=2)
    rec = record.build(c, results)
    assert (rec['mode'], rec['emulated'], rec['smoke']) == ('emulated', True, True)


def test_xfail_is_not_counted_and_xpass_is(tmp_path):
    uuids, recs = _recorded(tmp_path)
    slow = {'DevZeroCopy': {'$index': ['$partition', 'num_threads'], 'local:default': {
        1: {'copy_bw': ['$xfail', 'known', [1e12, -0.1, None, 'MB/s']]},
        2: {'copy_bw': ['$xfail', 'known', [1, -0.5, None, 'MB/s']]}}}}
    table, failed = _table(recs, uuids, slow)
    one = table['DevZeroCopy num_threads=1 @local:default copy_bw']
    assert one.verdict == Verdict.XFAIL
    assert one.reason.endswith('below the lower bound 9e+11; expected: known')
    two = table['DevZeroCopy num_threads=2 @local:default copy_bw']
    assert two.verdict == Verdict.XPASS
    assert two.reason.endswith('met a reference marked $xfail (known)')
    assert failed == 1


def test_reframe_failing_with_nothing_to_show_fails_the_acceptance(tmp_path):
    uuids, recs = _recorded(tmp_path)
    results = _judged(recs, uuids)
    assert run.unexplained(results, recs, [(uuids[0], 0), (uuids[1], 0)]) == []
    lines = run.unexplained(results, recs, [(uuids[0], 0), (uuids[1], 1)])
    assert len(lines) == 1 and 'repetition 2: ReFrame exited with status 1' in lines[0]
    failing = recs + [dataclasses.replace(recs[-1], outcome=dataclasses.replace(
        recs[-1].outcome, result='fail', fail_phase='run'))]
    assert run.unexplained(_judged(failing, uuids), failing,
                           [(uuids[0], 0), (uuids[1], 1)]) == []
