"""Shared by the results tests: the recorded database, the clusterproof
command with a results and references directory of the test's own."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from clusterproof.paths import SETTINGS_FILE
from clusterproof.reframe_io import runner
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
    return dict(runner.reframe_env(config=SETTINGS_FILE), CLUSTERPROOF_RESULTS=str(results),
                CLUSTERPROOF_REFERENCES=str(refs))


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


#: writes the run reports of a JSON file (a list) into the results database
#: of CLUSTERPROOF_RESULTS through ReFrame's own storage code
_STORE_REPORTS = '''
import json, sys
import reframe.core.config as config
import reframe.core.runtime as runtime
site = config.load_config(sys.argv[1])
site.select_subconfig('generic')
runtime.init_runtime(site)
from reframe.frontend.reporting.storage import StorageBackend
backend = StorageBackend.default()
for report in json.load(open(sys.argv[2])):
    backend.store(report, sys.argv[3])
'''


def reframe_store(results, reports, report_file=''):
    """Store the run reports ``reports`` in ``results``/results.db as ReFrame
    does at the end of a run (its storage backend, its schema)."""
    data = Path(results) / '.reports-to-store.json'
    data.write_text(json.dumps(reports))
    env = dict(os.environ, CLUSTERPROOF_RESULTS=str(results))
    subprocess.run([str(REPO / '.venv' / 'bin' / 'python'), '-c', _STORE_REPORTS,
                    str(REPO / 'site_config' / 'settings.py'), str(data), report_file],
                   env=env, check=True, timeout=WAIT_S, capture_output=True)
    data.unlink()


def recorded_report(n=0):
    """The run report of the ``n``-th recorded session (oldest first)."""
    import sqlite3
    conn = sqlite3.connect(f'file:{RECORDED_DB}?mode=ro', uri=True)
    try:
        rows = conn.execute('SELECT json_blob FROM sessions ORDER BY session_start_unix')
        return json.loads(rows.fetchall()[n][0])
    finally:
        conn.close()


def table_rows(page, table_id):
    """The <tr> elements (text) of the table with ``table_id``."""
    table = page.split(f'id="{table_id}"', 1)[1].split('</table>', 1)[0]
    return re.findall(r'<tr[ >].*?</tr>', table, re.S)
