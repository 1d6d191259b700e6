"""Shared by the results tests: the recorded database, the clusterproof
command with a results and references directory of the test's own."""

import os
import shutil
import subprocess
from pathlib import Path

from conftest import WAIT_S

REPO = Path(__file__).resolve().parent.parent
RECORDED_DB = REPO / 'tests' / 'data' / 'results' / 'results.db'
SELFTEST_CHECKS = REPO / 'tests' / 'checks' / 'results'


def recorded_results(tmp_path):
    """A copy of the recorded results directory (never the committed file)."""
    results = tmp_path / 'results'
    results.mkdir()
    shutil.copy(RECORDED_DB, results / 'results.db')
    return results


def cp_env(results, refs):
    env = dict(os.environ)
    env.update({'CLUSTERPROOF_RESULTS': str(results), 'CLUSTERPROOF_REFERENCES': str(refs),
                'RFM_CONFIG_FILES': str(REPO / 'site_config' / 'settings.py')})
    return env


def clusterproof(args, results, refs, timeout=WAIT_S):
    return subprocess.run([str(REPO / '.venv' / 'bin' / 'clusterproof')] + list(args),
                          cwd=REPO, env=cp_env(results, refs), capture_output=True,
                          text=True, timeout=timeout)


def without_binary(env, name, empty_view):
    """``env`` where the checks cannot find ``name``: an empty Spack view
    (``CLUSTERPROOF_SPACK_VIEW``) and no PATH directory that holds it, so a
    check using it skips for real."""
    Path(empty_view).mkdir(parents=True, exist_ok=True)
    env = dict(env, CLUSTERPROOF_SPACK_VIEW=str(empty_view))
    env['PATH'] = os.pathsep.join(d for d in env.get('PATH', '').split(os.pathsep)
                                  if not os.access(os.path.join(d, name), os.X_OK))
    return env
