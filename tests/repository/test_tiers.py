"""tests/tiers.py: a test without slow, cluster or root that takes more
processor time than the bound, its own or a program's it ran, is named at the
end of the run; only ``--tier-check`` (scripts/check-tiers) fails on it. A
module fixture's cost is divided among the tests that share it."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import WAIT_S

TESTS = Path(__file__).resolve().parents[1]

SAMPLE = '''
import subprocess, sys, time
import pytest

BURN = "import time\\nend = time.process_time() + 0.4\\nwhile time.process_time() < end: pass"

def test_burns_in_a_program():
    subprocess.run([sys.executable, '-c', BURN], check=True)

@pytest.mark.slow
def test_marked_slow():
    subprocess.run([sys.executable, '-c', BURN], check=True)

def test_waits_without_working():
    time.sleep(0.5)

@pytest.fixture(scope='module')
def shared():
    subprocess.run([sys.executable, '-c', BURN], check=True)

def test_shares_a_costly_fixture(shared):
    pass

def test_shares_it_too(shared):
    pass
'''


def _pytest(tmp_path, *args):
    (tmp_path / 'test_sample.py').write_text(SAMPLE)
    (tmp_path / 'pytest.ini').write_text('[pytest]\nmarkers =\n    slow: slow\n')
    env = dict(os.environ, PYTHONPATH=str(TESTS))
    return subprocess.run([sys.executable, '-m', 'pytest', '-p', 'tiers', '-p', 'no:cacheprovider',
                           '--tier-bound', '0.3', *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=WAIT_S)


@pytest.mark.slow      # two pytest runs, 2 s of burnt processor time
def test_the_check_names_the_unmarked_test_over_the_bound(tmp_path):
    proc = _pytest(tmp_path, '--tier-check')
    assert proc.returncode == 1, proc.stdout
    assert '5 passed' in proc.stdout
    named = [ln for ln in proc.stdout.splitlines() if ln.endswith('needs slow')]
    assert len(named) == 1 and 'test_sample.py::test_burns_in_a_program' in named[0], proc.stdout
    assert 0.3 < float(named[0].split()[0]) < 5, named
    # a normal run lists it too, and passes
    proc = _pytest(tmp_path)
    assert proc.returncode == 0, proc.stdout
    assert 'test_burns_in_a_program  needs slow' in proc.stdout
