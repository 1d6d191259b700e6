"""``scripts/run-tests``: the tests start from a new machine's ``/tmp``
(docs/testing.md, "A new machine's state"). A local cluster of the
session's instances that is up stays visible in the new ``/tmp``; the run
directory of one that is not up (left by an earlier run) does not."""

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import EMU_INSTANCE, REPO, WAIT_S

#: what the inner session sees, written by a test file of its own
SEEN = '''
import os
import re
def test_seen():
    print(sorted(p for p in os.listdir('/tmp') if p.startswith('clusterproof-cluster')))
'''


@pytest.mark.root
def test_a_cluster_up_is_seen_and_a_leftover_run_directory_is_not(emu_cluster):
    """Run ``scripts/run-tests`` inside this session, the session's cluster
    up at ``$CLUSTERPROOF_TEST_INSTANCE``, a run directory of another
    instance left as an earlier run would leave it (a ``cluster.json``, no
    daemon): the inner session sees the first, not the
    second."""
    if os.geteuid() != 0:
        pytest.skip('scripts/run-tests makes its private mount namespace as root only')
    other = next(k for k in range(8) if k != EMU_INSTANCE
                 and not os.path.exists(f'/tmp/clusterproof-cluster{k}'))
    left = f'/tmp/clusterproof-cluster{other}'
    up = sorted(p for p in os.listdir('/tmp')
                if p.startswith(f'clusterproof-cluster{EMU_INSTANCE}'))
    assert f'clusterproof-cluster{EMU_INSTANCE}' in up
    os.mkdir(left)
    # the inner session's /tmp is new: its test file lives where both see it
    tmp_path = Path(tempfile.mkdtemp(prefix='clusterproof-run-tests-', dir='/var/tmp'))
    try:
        with open(f'{left}/cluster.json', 'w') as f:
            f.write(f'{{"instance": {other}, "nodes": 4, "cpus": 1, "mem": 1024}}\n')
        (tmp_path / 'test_seen.py').write_text(SEEN)
        env = {k: v for k, v in os.environ.items() if k != 'CLUSTERPROOF_TEST_FRESH'}
        env.update(CLUSTERPROOF_TEST_INSTANCE=str(EMU_INSTANCE),
                   CLUSTERPROOF_TEST_SHAPE_INSTANCE=str(other))
        proc = subprocess.run(['bash', str(REPO / 'scripts' / 'run-tests'), '-c', os.devnull,
                               '--rootdir', str(tmp_path), '-p', 'no:cacheprovider', '-q', '-s',
                               str(tmp_path / 'test_seen.py')],
                              cwd=REPO, env=env, capture_output=True, text=True, timeout=WAIT_S)
    finally:
        if os.path.exists(f'{left}/cluster.json'):
            os.remove(f'{left}/cluster.json')
        os.rmdir(left)
        shutil.rmtree(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'private mount namespace' in proc.stdout, proc.stdout
    assert str(up) in proc.stdout, proc.stdout


#: two tests of a repository of its own: one of the fast tier, one slow;
#: each asserts the process it runs in, and fails when $CP_FAIL names it
PHASED = '''
import os
import re
import pytest
def test_fast():
    assert os.environ.get('CP_FAIL') != 'fast'
    assert os.environ.get('PYTEST_XDIST_WORKER'), 'the fast tier runs in worker processes'
@pytest.mark.slow
def test_slow():
    assert os.environ.get('CP_FAIL') != 'slow'
    assert 'PYTEST_XDIST_WORKER' not in os.environ, 'the rest runs in one process'
'''


def _phased_repo(root):
    """A repository with ``scripts/run-tests``, this checkout's ``.venv``
    and the two tests of :data:`PHASED`."""
    (root / 'scripts').mkdir(parents=True)
    shutil.copy(REPO / 'scripts' / 'run-tests', root / 'scripts' / 'run-tests')
    (root / '.venv').symlink_to(REPO / '.venv')
    (root / 'pytest.ini').write_text('[pytest]\nmarkers =\n    slow: slow\n')
    (root / 'tests').mkdir()
    (root / 'tests' / 'test_phased.py').write_text(PHASED)


def _run_phased(root, *args, fail=''):
    env = {k: v for k, v in os.environ.items() if not k.startswith('PYTEST_')}
    env.update(CLUSTERPROOF_TEST_FRESH='0', CP_FAIL=fail)
    return subprocess.run(['bash', str(root / 'scripts' / 'run-tests'), '--fast-first', 'not slow',
                           '-p', 'no:cacheprovider', *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=WAIT_S)


@pytest.mark.slow
def test_fast_first_runs_the_fast_tier_in_two_processes_then_the_rest(tmp_path):
    """``run-tests --fast-first EXPR`` (``make test``): the fast tier in
    worker processes, then the rest in one; both summaries at the end; a
    failure in either run fails the whole; tests named run alone, as given."""
    _phased_repo(tmp_path)
    for fail in ('fast', 'slow'):
        proc = _run_phased(tmp_path, fail=fail)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 1, out
        fast, rest = (('1 failed', '1 passed') if fail == 'fast' else ('1 passed', '1 failed'))
        assert re.search(rf'run-tests: the fast tier in 2 processes: =+ {fast}', out), out
        assert re.search(rf'run-tests: every other test: +=+ {rest}', out), out
    proc = _run_phased(tmp_path, 'tests/test_phased.py::test_slow')
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert '1 passed' in proc.stdout and '1 of 2' not in proc.stdout, proc.stdout
