"""Figures to VictoriaMetrics through ReFrame's own ``httpjson`` perflog
handler (``clusterproof.results.metrics``), against a real VictoriaMetrics
(Debian's ``victoria-metrics``) started on a loopback port with its storage
in the test's directory: a real check runs on system ``local``, and its
figure is queried back through VictoriaMetrics' HTTP query API.
"""

import re

import pytest

from clusterproof import ClusterproofError
from clusterproof.reframe_io import runner
from clusterproof.results import metrics
from conftest import REPO, reframe_env, run_reframe, wait_for
from servers import free_port, victoria_metrics, vm_query  # noqa: F401 (a fixture)

CHECK = ['-c', str(REPO / 'tests' / 'checks' / 'results' / 'devzero_copy.py'),
         '-n', 'DevZeroCopy%num_threads=1', '-S', 'copy_mib=64', '--system', 'local', '-r']


def perflog_figures(results):
    """{figure: (value, completion time)} of the perflog lines of DevZeroCopy."""
    [log] = (results / 'perflogs' / 'local' / 'default').glob('DevZeroCopy*.log')
    header, *rows = log.read_text().splitlines()
    assert rows, f'{log}: no figure logged'
    fields = header.split('|')
    when = float(rows[-1].split('|')[fields.index('job_completion_time_unix')])
    return {name: (float(value), when)
            for name, value in re.findall(r'\|(\w+)=([-+.\deE]+)\|', rows[-1])}


@pytest.mark.slow
def test_figures_reach_victoria_metrics_and_query_back(tmp_path, victoria_metrics):
    results = tmp_path / 'results'
    proc = run_reframe(CHECK, results, extra_env={metrics.URL_VARIABLE: victoria_metrics})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert 'httpjson' not in proc.stdout + proc.stderr, proc.stdout[-3000:]   # no warning
    figures = perflog_figures(results)
    assert set(figures) == {'copy_bw', 'copy_time'}

    for figure, (value, when) in figures.items():
        query = (f'{metrics.METRIC}{{system="local",partition="default",'
                 f'test="DevZeroCopy %num_threads=1",figure="{figure}"}}')
        found = []

        def answered():
            found[:] = vm_query(victoria_metrics, query, time=f'{when:.3f}')
            return bool(found)

        wait_for(f'VictoriaMetrics returns {query}', answered)
        [series] = found
        assert series['metric']['unit'] == {'copy_bw': 'MB/s', 'copy_time': 's'}[figure]
        assert series['metric']['mode'] == 'smoke' and series['metric']['smoke'] == 'true'
        stamp, stored = series['value']
        assert abs(stamp - when) < 0.002                  # the job's completion time, in ms
        # VictoriaMetrics keeps 12 significant digits
        assert float(stored) == pytest.approx(value, rel=1e-11), (figure, stored, value)


@pytest.mark.slow
def test_an_unreachable_server_loses_no_perflog(tmp_path):
    """A metrics URL where nothing listens: ReFrame warns, drops the handler
    and the run, its perflog and its result are as without it."""
    results = tmp_path / 'results'
    url = f'http://127.0.0.1:{free_port()}'
    proc = run_reframe(CHECK, results, extra_env={metrics.URL_VARIABLE: url})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert f'httpjson: could not connect to server 127.0.0.1:{url.rsplit(":", 1)[1]}' in proc.stdout + proc.stderr
    assert set(perflog_figures(results)) == {'copy_bw', 'copy_time'}


def show_logging(tmp_path, env):
    proc = runner.invoke(['--system', 'local', '--show-config=logging'],
                         env=reframe_env(tmp_path, extra=env), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.mark.slow
def test_off_by_default_on_with_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv(metrics.URL_VARIABLE, raising=False)
    assert 'httpjson' not in show_logging(tmp_path, {})
    shown = show_logging(tmp_path, {metrics.URL_VARIABLE: 'http://127.0.0.1:9'})
    assert '"url": "http://127.0.0.1:9/api/v1/import"' in shown
    assert 'victoria_metrics_lines' in shown


def test_per_system_urls_and_the_variable(monkeypatch):
    base = {'handlers': [], 'handlers_perflog': [{'type': 'filelog'}]}
    monkeypatch.delenv(metrics.URL_VARIABLE, raising=False)
    entries = metrics.logging_entries(base, {'pixstor': 'http://vm.example:8428', 'local': None})
    assert [e.get('target_systems') for e in entries] == [['pixstor'], None]
    assert entries[0]['handlers_perflog'][1]['url'] == 'http://vm.example:8428/api/v1/import'
    assert entries[1] == base                         # every other system: perflogs only
    monkeypatch.setenv(metrics.URL_VARIABLE, '')      # set and empty: off everywhere
    assert metrics.logging_entries(base, {'pixstor': 'http://vm.example:8428'}) == [base]
    monkeypatch.setenv(metrics.URL_VARIABLE, 'http://127.0.0.1:8428/insert/0/prometheus/api/v1/import')
    [entry] = metrics.logging_entries(base, {'pixstor': 'http://vm.example:8428'})
    assert entry['handlers_perflog'][1]['url'].endswith('/insert/0/prometheus/api/v1/import')
    monkeypatch.setenv(metrics.URL_VARIABLE, 'vm:8428')
    with pytest.raises(ClusterproofError, match="CLUSTERPROOF_METRICS_URL: 'vm:8428' is no http"):
        metrics.logging_entries(base, {})
    monkeypatch.delenv(metrics.URL_VARIABLE)
    with pytest.raises(ClusterproofError, match="metrics_url of system pixstor: 'vm:8428' is no http"):
        metrics.logging_entries(base, {'pixstor': 'vm:8428'})


SYSTEMS_CONFIG = '''
from clusterproof.results.metrics import logging_entries
perflog = {'type': 'filelog', 'prefix': '%(check_system)s', 'basedir': PERFLOGS, 'level': 'info'}
site_configuration = {
    'systems': [{'name': name, 'hostnames': ['.*'], 'partitions': [
                    {'name': 'p', 'scheduler': 'local', 'launcher': 'local', 'environs': ['e']}]}
                for name in ('sending', 'quiet')],
    'environments': [{'name': 'e'}],
    'logging': logging_entries({'handlers': [{'type': 'stream', 'name': 'stdout', 'level': 'info'}],
                                'handlers_perflog': [perflog]},
                               {'sending': 'http://127.0.0.1:9', 'quiet': None}),
}
'''


def test_reframe_gives_the_handler_to_the_system_with_a_url_only(tmp_path, monkeypatch):
    """The per-system entries as ReFrame itself selects them (``target_systems``)."""
    monkeypatch.delenv(metrics.URL_VARIABLE, raising=False)
    config = tmp_path / 'config.py'
    config.write_text(f'PERFLOGS = {str(tmp_path / "perflogs")!r}\n' + SYSTEMS_CONFIG)
    shown = {}
    for system in ('sending', 'quiet'):
        proc = runner.invoke(['-C', config, '--system', system,
                              '--show-config=logging/0/handlers_perflog'],
                             env=reframe_env(tmp_path), timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        shown[system] = proc.stdout
    assert '"url": "http://127.0.0.1:9/api/v1/import"' in shown['sending']
    assert 'httpjson' not in shown['quiet'] and 'filelog' in shown['quiet']
