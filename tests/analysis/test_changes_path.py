"""One detection path: what scripts/measure_detection.py scores is what
`clusterproof changes FILE --format json` prints, run as a whole process
on a CSV history of a few series (a step, a short excursion, a change of
noise, a figure with a value of 0, judged on its values)."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / 'scripts'))
import measure_detection as detection  # noqa: E402


def _series():
    rng = np.random.default_rng(11)
    z = rng.standard_normal((3, 80))
    step = 100 * (1 + 0.01 * z[0])
    step[50:] *= 0.9
    excursion = 50 * (1 + 0.01 * z[1])
    excursion[30:33] *= 1.3
    noise = 20 * (1 + 0.005 * z[2])
    noise[45:] = 20 * (1 + 0.03 * z[2][45:])
    zero = [float(v) for v in step]
    zero[10] = 0.0
    raw = [[float(v) for v in s] for s in (step, excursion, noise)] + [zero]
    raw[0][5] = None                    # a missing value: left out, its day kept
    return [(name, r, {}) for name, r in zip(('step', 'excursion', 'noise', 'zero'), raw)]


@pytest.fixture(scope='module')
def csv_path(tmp_path_factory):
    path = tmp_path_factory.mktemp('path') / 'history.csv'
    detection.tcpd_csv(_series(), path)
    return path


@pytest.fixture(scope='module')
def command(csv_path):
    out = subprocess.run([str(REPO / '.venv' / 'bin' / 'clusterproof'), 'changes',
                          str(csv_path), '--format', 'json'],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout)


def test_the_benchmark_scores_what_the_command_prints(csv_path, command):
    found, skipped = detection.command_listing(csv_path)
    assert found == command
    assert {f['kind'] for f in found} >= {'step', 'transient', 'noise'}
    assert skipped == []
    points = detection.tcpd_points(found)
    assert 48 <= min(points['step']) <= 52 and 48 <= min(points['zero']) <= 52


def test_the_generated_models_are_listed_as_the_command_lists_them(command):
    """The listing the benchmark scores on its own models is the command's
    function on a history built in memory: the same findings (but where
    each point was read)."""
    series = {name: raw for name, raw, _ in _series()}

    def seen(f):
        return {k: v for k, v in f.items() if k not in ('id', 'where', 'system', 'test', 'summary')}
    for name in ('excursion', 'noise'):
        got = detection.listed_findings(np.asarray(series[name]), '', 'value')
        assert [seen(f) for f in got] == [seen(f) for f in command if f['test'] == name]
