"""``clusterproof acceptance --contract`` on the local cluster, end to end:
real ReFrame running STREAM (smoke mode, a 2,000,000-element array) on the
emulated nodes, the sessions in a results database of the test's own, the
items judged on the figure store, the record written.

One contract, four items on the same test case (so each repetition is one
short ReFrame session): a committed item met, a committed item missed (1
PB/s), an informative item missed (reported only), and a committed item
whose runs are all shorter than its minimum run time (not counted: not
measured validly). Then a run that failed (an array too large for the
node: refused at set-up) is added, and the contract judged again from the
store: the failed run is listed and not counted, the item is judged on the
valid ones; a contract whose items the store satisfies reuses its sessions
and runs nothing.
"""

import json
import subprocess

import pytest

from clusterproof.acceptance import contract as contract_mod
from clusterproof.acceptance import record
from clusterproof.acceptance.run import name_pattern
from clusterproof.paths import SETTINGS_FILE
from clusterproof.reframe_io import runner
from conftest import REPO, WAIT_S, run_reframe

ITEM = '''
  - id: {id}
    check: Stream
    parameters: {{placement: cores, membind: local}}
    set: {{StreamBuild.array_size: 2000000}}
    figure: {figure}
    committed: {committed}
    unit: MB/s
    kind: {kind}
    tolerance: -50%
'''
HEAD = '''name: {name}
system: emu
partition: srun
mode: smoke
allow: [smoke, emulated]
repetitions: 2
items:
'''


def contract_file(tmp_path, name, items):
    text = HEAD.format(name=name) + ''.join(ITEM.format(**i) + i.get('extra', '')
                                             for i in items)
    path = tmp_path / f'{name}.yaml'
    path.write_text(text)
    contract_mod.load(path)         # the test's own contract is valid
    return path


MET = dict(id='triad-met', figure='triad', committed=100, kind='committed')
MISSED = dict(id='triad-missed', figure='triad', committed=10**9, kind='committed')
INFO = dict(id='copy-info', figure='copy', committed=10**9, kind='informative')
TOO_SHORT = dict(id='add-too-short', figure='add', committed=100, kind='committed',
                 extra='    validity: {min_runtime_s: 3600}\n')


def acceptance(args, results, env_extra):
    env = dict(runner.reframe_env(config=SETTINGS_FILE), CLUSTERPROOF_RESULTS=str(results),
               **env_extra)
    env.pop('CLUSTERPROOF_STORE', None)
    return subprocess.run([str(REPO / '.venv' / 'bin' / 'clusterproof'), 'acceptance'] + args,
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=WAIT_S * 4)


def verdicts(path):
    rec = record.read(path)
    return rec, {i['id']: i for i in rec['items']}


@pytest.mark.slow
def test_contract_round_trip_on_the_local_cluster(emu_cluster, tmp_path):
    results = tmp_path / 'results'
    path = contract_file(tmp_path, 'trip', [MET, MISSED, INFO, TOO_SHORT])
    out = tmp_path / 'trip.json'
    proc = acceptance(['--contract', str(path), '--record', str(out)], results, emu_cluster)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 1, text[-4000:]
    assert text.count('repetition ') == 2, text[-4000:]      # one session per repetition
    last = proc.stdout.strip().splitlines()[-1]     # stderr: notification's word, if any
    assert last.startswith('REJECTED: 2 committed item(s) failed: ')
    assert 'triad-missed (' in last and 'add-too-short (not measured validly' in last
    assert 'triad-met' not in last and 'copy-info' not in last

    rec, items = verdicts(out)
    assert rec['verdict'] == 'rejected' and rec['emulated'] and rec['mode'] == 'emulated'
    assert len(rec['sessions']['run']) == 2 and rec['sessions']['reused'] == []
    assert items['triad-met']['verdict'] == 'pass'
    assert items['triad-met']['spread']['n'] == 2
    assert items['triad-missed']['verdict'] == 'fail'
    assert 'below the committed 1e+09 MB/s' in items['triad-missed']['why']
    assert items['copy-info']['verdict'] == 'reported'         # missed, reported only
    assert items['copy-info']['judgement'] == 'REGRESSION'
    short = items['add-too-short']
    assert short['verdict'] == 'invalid' and short['measured'] is None
    assert [r['valid'] for r in short['runs']] == [False, False]
    assert 'less than the minimum 3600 s' in short['runs'][0]['invalid_why']
    run = items['triad-met']['runs'][0]
    assert run['nodes'] and run['binary_sha256'] and run['fingerprint']
    for line in ('not counted: add-too-short', 'triad-met', 'copy-info'):
        assert line in proc.stdout

    # A run that failed (the array does not fit a node: refused at set-up)
    # is recorded in the store; judged again, it is listed and not counted.
    item = contract_mod.load(path).items[0]
    bad = run_reframe(['-c', str(REPO / 'reframe_checks'), '-r', '--system', 'emu:srun',
                       '-n', name_pattern(item), '-S', 'StreamBuild.array_size=100000000000'],
                      results, mode='smoke', extra_env=emu_cluster)
    assert bad.returncode != 0, bad.stdout[-3000:]
    again = tmp_path / 'again.json'
    proc = acceptance(['--contract', str(path), '--from-store', '--record', str(again)],
                      results, emu_cluster)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert 'repetition' not in proc.stdout                  # --from-store runs nothing
    _, items = verdicts(again)
    met = items['triad-met']
    assert met['verdict'] == 'pass' and len(met['runs']) == 3
    failed = [r for r in met['runs'] if not r['valid']]
    assert len(failed) == 1 and not failed[0]['counted']
    assert failed[0]['invalid_why'].startswith('failed in '), failed[0]
    assert sum(r['counted'] for r in met['runs']) == 2

    # A contract the stored sessions satisfy: reused, nothing run.
    fine = contract_file(tmp_path, 'fine', [MET, INFO])
    proc = acceptance(['--contract', str(fine), '--record', str(tmp_path / 'fine.json')],
                      results, emu_cluster)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert 'repetition' not in proc.stdout
    rec, _ = verdicts(tmp_path / 'fine.json')
    assert rec['verdict'] == 'accepted' and rec['sessions']['run'] == []
    assert len(rec['sessions']['reused']) == 2
    assert 'sessions reused from the store: ' + rec['sessions']['reused'][0][:8] in proc.stdout


@pytest.mark.slow
def test_the_shipped_local_contract(emu_cluster, tmp_path):
    """The contract of site_config/contracts/local-cluster.yaml, as a user
    runs it on the local cluster: accepted, and the record says emulated."""
    out = tmp_path / 'local.json'
    proc = acceptance(['--contract', 'local-cluster', '--record', str(out)],
                      tmp_path / 'results', emu_cluster)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    rec, items = verdicts(out)
    assert rec['verdict'] == 'accepted' and rec['emulated']
    assert items['stream-triad']['verdict'] == 'pass'
    assert items['stream-copy']['verdict'] == 'reported'
    used = items['stream-triad']['runs'][0]['modifications']['used']
    assert used['stream_array_size'] == 2000000
    assert 'function, not speed' in proc.stdout


def test_record_refuses_another_format(tmp_path):
    path = tmp_path / 'r.json'
    path.write_text(json.dumps({'format': 2}))
    with pytest.raises(Exception, match=r"r\.json: acceptance record of format 2; this "
                                        r"clusterproof reads format 1"):
        record.read(path)
    path.write_text('{')
    with pytest.raises(Exception, match='not an acceptance record'):
        record.read(path)
