"""Modes: ReFrame's own ``--mode`` selects sizes and thread counts, the same
as ``CLUSTERPROOF_MODE``; the two can never disagree. Runs the real
``reframe`` (listing and describing, nothing is submitted)."""

import json

import pytest

from clusterproof import ClusterproofError
from clusterproof.modes import MODES, current_mode, reframe_modes
from clusterproof.reframe_io import runner
from clusterproof.reframe_io.runner import reframe_mode
from conftest import reframe_env


def _reframe(args, tmp_path, env_mode=None):
    env = reframe_env(tmp_path / 'results')
    env.pop('CLUSTERPROOF_MODE')
    if env_mode:
        env['CLUSTERPROOF_MODE'] = env_mode
    return runner.invoke(args, env=env, timeout=300)


def _listed(out):
    return sorted(line.split('/')[0].strip('- ').strip()
                  for line in out.splitlines() if line.startswith('- '))


@pytest.mark.parametrize('mode, threads', [('smoke', [1, 2, 4]), ('nightly', [1, 4, 16, 64])])
def test_reframe_mode_selects_thread_counts(tmp_path, mode, threads):
    proc = _reframe(['-c', 'reframe_checks/ior.py', '--mode', mode, '-l'], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _listed(proc.stdout) == sorted(f'IorSharedFile %threads={t}' for t in threads)


@pytest.mark.slow
def test_reframe_mode_same_as_environment(tmp_path):
    by_option = _reframe(['-c', 'reframe_checks/mdtest.py', '--mode=acceptance', '-l'], tmp_path)
    by_env = _reframe(['-c', 'reframe_checks/mdtest.py', '-l'], tmp_path, env_mode='acceptance')
    assert by_option.returncode == by_env.returncode == 0, by_option.stdout + by_env.stdout
    assert _listed(by_option.stdout) == _listed(by_env.stdout)
    assert 'Mdtest %threads=512' in _listed(by_option.stdout)


def test_reframe_mode_reaches_variables_and_tags(tmp_path):
    out = tmp_path / 'describe.json'
    proc = _reframe(['-c', 'reframe_checks/mdtest.py', '--mode', 'nightly', '--describe'],
                    tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out.write_text(proc.stdout[proc.stdout.index('['):])
    tests = json.loads(out.read_text())
    assert tests
    for test in tests:
        assert test['cp_mode'] == 'nightly' and test['cp_smoke'] is False, test['name']
        assert test['repetitions'] == 3 and test['files_per_task'] == 1000
        assert 'nightly' in test['tags']


def test_unknown_mode_is_refused_by_reframe(tmp_path):
    proc = _reframe(['-c', 'reframe_checks/ior.py', '--mode', 'weekly', '-l'], tmp_path)
    assert proc.returncode != 0
    assert "invalid mode: 'weekly'" in proc.stdout + proc.stderr


def test_disagreeing_mode_and_environment_fail(tmp_path):
    proc = _reframe(['-c', 'reframe_checks/ior.py', '--mode', 'nightly', '-l'], tmp_path,
                    env_mode='smoke')
    assert proc.returncode != 0
    assert ('reframe --mode nightly and CLUSTERPROOF_MODE=smoke disagree'
            in proc.stdout + proc.stderr)


def test_current_mode_sources():
    rfm = ['/x/.venv/bin/reframe', '-c', 'checks', '--mode', 'nightly', '-r']
    assert reframe_mode(rfm) == 'nightly'
    assert reframe_mode(['/x/reframe/__main__.py', '--mode=acceptance']) == 'acceptance'
    # another program's --mode is not ReFrame's
    assert reframe_mode(['/usr/bin/pytest', '--mode', 'nightly']) is None
    assert current_mode({}, ['pytest']) == 'smoke'
    assert current_mode({'CLUSTERPROOF_MODE': 'acceptance'}, ['pytest']) == 'acceptance'
    assert current_mode({'CLUSTERPROOF_MODE': 'nightly'}, rfm) == 'nightly'
    with pytest.raises(ClusterproofError, match='disagree'):
        current_mode({'CLUSTERPROOF_MODE': 'smoke'}, rfm)
    with pytest.raises(ClusterproofError, match="CLUSTERPROOF_MODE=weekly: 'weekly' is not a mode"):
        current_mode({'CLUSTERPROOF_MODE': 'weekly'}, ['pytest'])


def test_settings_declare_every_mode_once():
    names = [m['name'] for m in reframe_modes()]
    assert names == list(MODES)
