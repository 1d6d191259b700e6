"""``clusterproof acceptance`` end to end on this machine: repetitions in
mode acceptance, the median of each figure judged against the declared
references, a report, and the bless command to run after sign-off.

The check is the small real copy benchmark of the results tests
(tests/checks/results/devzero_copy.py); the references are written by the
test into a references directory of its own.
"""

from conftest import WAIT_S
from results_helpers import SELFTEST_CHECKS, clusterproof

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


def test_acceptance_fails_an_item_below_its_reference(tmp_path):
    refs = references(tmp_path, 10**9)          # 1 PB/s: no machine reaches it
    proc = clusterproof(ARGS, tmp_path / 'results', refs, timeout=WAIT_S)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert 'FAIL' in proc.stdout and 'copy_bw' in proc.stdout
