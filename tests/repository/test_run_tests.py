"""``scripts/run-tests``: the tests start from a new machine's ``/tmp``
(docs/testing.md, "A new machine's state"). A local cluster of the
session's instances that is up stays visible in the new ``/tmp``; the run
directory of one that is not up (left by an earlier run) does not."""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import EMU_INSTANCE, REPO, WAIT_S

#: what the inner session sees, written by a test file of its own
SEEN = '''
import os
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
    up = sorted(p for p in os.listdir('/tmp') if p.startswith(f'clusterproof-cluster{EMU_INSTANCE}'))
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
