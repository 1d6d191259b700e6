"""Change detection: the detection measurement's smallest configuration on
its held-out seeds, the detector on plain series, and `clusterproof
changes` end to end on CSV and on a results database recorded from real
runs."""

import datetime
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from clusterproof.analysis.detector import figure, nightly

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parents[1] / 'data' / 'history'
sys.path.insert(0, str(REPO / 'scripts'))
import measure_detection as detection  # noqa: E402


@pytest.fixture(scope='module')
def small_detection():
    data = {m: detection.generate(m, 'small', detection.SEEDS['eval'])
            for m in detection.NOISE_MODELS}
    scores, _ = detection.evaluate('changes', data)
    return scores


@pytest.mark.slow
def test_detection_measured_in_its_smallest_configuration_meets_the_targets(small_detection):
    """The targets where they are met; the measured level where they are not
    (docs/changes-method.md says why)."""
    recall, delay, worst = detection.headline(small_detection)
    # >= 5 % steps where CV <= 2 %, found within 3 nights: target 95 %;
    # measured 94.4 % on these seeds (docs/changes-method.md: the 5 % steps at
    # CV 2 % are 2.5 noise units, at the edge of what 3 nights can show).
    assert recall >= 0.94
    assert delay <= detection.TARGET_DELAY
    for model in ('gauss 1%', 'gauss 2%', 'gauss 5%', 'bimodal', 'drift'):
        assert small_detection[model].fa_rate <= detection.TARGET_FA, model
    # Measured limits, above the 1 per 1000 target (docs/changes-method.md):
    # heavy tails (1.03) on these seeds (CV 10 %: 0.38 as the command lists
    # the alarms, 1.41 for the nightly view alone).
    assert small_detection['gauss 10%'].fa_rate <= 1.5
    assert small_detection['heavy tails'].fa_rate <= 1.5
    # every drift is found, and steps of 10 % and more where CV <= 2 % always
    assert small_detection['drift'].recall(within=detection.NIGHTS) == 1.0
    for model in detection.QUIET:
        assert small_detection[model].recall(minimum=0.10) == 1.0


@pytest.mark.slow
def test_last_line_is_for_scripts():
    out = subprocess.run([sys.executable, str(REPO / 'scripts' / 'measure_detection.py'),
                          '--methods', 'changes', '--models', 'gauss 1%,gauss 2%',
                          '--no-classes', '--real', 'none', '--speed', '0'],
                         capture_output=True, text=True, timeout=600, check=True).stdout
    last = out.strip().splitlines()[-1]
    assert last.startswith('detection: recall >=5% steps (CV<=2%) ')
    assert ' median delay ' in last and last.endswith(' per 1000 figure-nights')


def test_step_found_with_its_size_and_night():
    rng = np.random.default_rng(3)
    values = 45 * (1 + 0.01 * rng.standard_normal(60))
    values[40:] *= 0.92
    (c,) = nightly.scan(values)
    assert c.at == 40 and 40 <= c.found <= 43
    assert c.change == pytest.approx(-0.08, abs=0.01)
    assert c.uncertainty < 0.01 and c.confidence > 0.999


def test_no_change_in_quiet_noise_and_noise_estimate():
    rng = np.random.default_rng(4)
    values = 10 * (1 + 0.02 * rng.standard_normal(120))
    assert nightly.scan(values) == []
    fn = figure.figure_noise(values)
    assert fn.noise == pytest.approx(0.02, rel=0.25)
    assert 0.05 < fn.detectable < 0.12 and not fn.too_noisy


def _csv(path, rows):
    path.write_text('timestamp,system,partition,test,figure,value,unit,spack_lock_hash,'
                    'job_nodelist\n' + ''.join(rows))


def _night(i):
    t = datetime.datetime(2026, 10, 1, 1, 30, tzinfo=datetime.timezone.utc)
    return (t + datetime.timedelta(days=i)).isoformat()


def cp(*args):
    return subprocess.run([str(REPO / '.venv' / 'bin' / 'clusterproof'), 'changes', *args],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_command_json_and_table_on_csv(tmp_path):
    rng = np.random.default_rng(5)
    rows = []
    for i in range(50):
        triad = 45 * (1 + 0.01 * rng.standard_normal()) * (0.92 if i >= 35 else 1)
        lat = 2.0 * (1 + 0.01 * rng.standard_normal())
        noisy = 100 * (1 + 0.3 * rng.standard_normal()) + 100
        lock = 'a1b2' if i < 35 else 'c3d4'
        rows.append(f'{_night(i)},pm,batch,Stream,triad,{triad:.3f},GB/s,{lock},"n1,n2"\n')
        rows.append(f'{_night(i)},pm,batch,OSU,lat_p50,{lat:.4f},us,{lock},"n1,n2"\n')
        rows.append(f'{_night(i)},pm,batch,IOzone,read,{noisy:.1f},MB/s,{lock},"n1,n2"\n')
    f = tmp_path / 'h.csv'
    _csv(f, rows)
    res = cp(str(f), '--format', 'json')
    assert res.returncode == 0, res.stderr
    found = json.loads(res.stdout)
    assert len(found) == 1
    (c,) = found
    assert (c['system'], c['partition'], c['test'], c['figure']) == ('pm', 'batch', 'Stream',
                                                                    'triad')
    assert c['at'].startswith(_night(35)[:16])
    assert c['change'] == pytest.approx(-0.08, abs=0.02)
    assert c['direction'] == 'worse' and c['confidence'] > 0.99
    assert c['attribution'] == ['spack_lock_hash: a1b2 -> c3d4']
    assert c['summary'] == (f"Stream triad {c['change'] * 100:+.1f}% since {_night(35)[:10]}: "
                            f"spack_lock_hash: a1b2 -> c3d4; nothing else changed")
    res = cp(str(f))
    assert res.returncode == 0, res.stderr
    assert '1 change(s) in 3 figure(s); 1 too noisy to judge' in res.stdout
    assert 'spack_lock_hash: a1b2 -> c3d4' in res.stdout
    assert 'IOzone @pm:batch read: noise' in res.stdout


def test_command_names_the_bad_row(tmp_path):
    f = tmp_path / 'h.csv'
    _csv(f, [f'{_night(0)},pm,batch,Stream,triad,45,GB/s,a,n1\n',
             f'{_night(1)},pm,batch,Stream,triad,lots,GB/s,a,n1\n'])
    res = cp(str(f))
    assert res.returncode == 2
    assert f"{f}:3: value 'lots' is not a number" in res.stderr


def test_command_on_recorded_database(tmp_path):
    results = tmp_path / 'results'
    results.mkdir()
    shutil.copy(DATA / 'results.db', results / 'results.db')
    before = (results / 'results.db').read_bytes()
    env = {'CLUSTERPROOF_RESULTS': str(results), 'PATH': '/usr/bin:/bin'}
    res = subprocess.run([str(REPO / '.venv' / 'bin' / 'clusterproof'), 'changes', '--all'],
                         capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 0, res.stderr
    # three sessions are too few to find a change: every figure listed with its noise
    assert res.stdout.startswith('0 change(s) in 8 figure(s)')
    assert 'Stream %placement=cores %membind=local +gnu @local:default triad' in res.stdout
    assert (results / 'results.db').read_bytes() == before


def test_attribution_names_the_node_common_to_the_slow_sessions(tmp_path):
    rng = np.random.default_rng(8)
    pools = [('n1,n2', 'n3,n4', 'n2,n3', 'n1,n4')[i % 4] for i in range(40)]
    rows = []
    for i in range(46):
        nodes = (pools[i] if i < 40
                 else ('n3,n1', 'n2,n3', 'n3,n4', 'n1,n3', 'n3,n2', 'n4,n3')[i - 40])
        slow = 0.85 if i >= 40 else 1.0
        v = 900 * (1 + 0.01 * rng.standard_normal()) * slow
        rows.append(f'{_night(i)},emu,batch,IOR,write,{v:.1f},MiB/s,a1b2,"{nodes}"\n')
    f = tmp_path / 'h.csv'
    _csv(f, rows)
    res = cp(str(f), '--format', 'json')
    assert res.returncode == 0, res.stderr
    (c,) = json.loads(res.stdout)
    assert c['at'].startswith(_night(40)[:16])
    assert c['attribution'] == ['nodes: n3 in every session after, not in every one before']


def test_noise_of_a_figure_that_just_changed_is_its_noise_not_the_step():
    rng = np.random.default_rng(9)
    values = 30000 * (1 + 0.03 * rng.standard_normal(13))
    values[9:] /= 20        # a node twenty times slower, four sessions ago
    cps = nightly.scan(values)
    assert [c.at for c in cps] == [9]
    fn = figure.figure_noise(values, cps)
    assert fn.noise < 0.06 and not fn.too_noisy
