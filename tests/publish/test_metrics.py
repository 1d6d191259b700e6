"""Figures to VictoriaMetrics through ReFrame's own ``httpjson`` perflog
handler (``clusterproof.publish.metrics``), against a real VictoriaMetrics
(Debian's ``victoria-metrics``) started on a loopback port with its storage
in the test's directory: a real check runs on system ``local``, and its
figure is queried back through VictoriaMetrics' HTTP query API.

The metrics URL is a secret (:mod:`clusterproof.redact`): a known token as
its password (and path) is looked for in every error, in what ReFrame prints
loading the site configuration with it, and in the output and every file of
a real run sending to a port where nothing listens and to a real server
that refuses the figures echoing what it was sent.
"""

import re

import pytest

from clusterproof import ClusterproofError, redact
from clusterproof.reframe_io import runner
from clusterproof.publish import metrics
from conftest import REPO, reframe_env, run_reframe, wait_for
from servers import Echo, free_port, leaks, vm_query

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


TOKEN = 'Tok3nMetr1c5ecret'
USER = 'vmwriter'


def leaked(*texts):
    return leaks(TOKEN, USER, *texts)


def everything_written(proc, directory):
    """Both streams of ``proc`` and the text of every file under ``directory``."""
    files = [p.read_text(errors='replace') for p in directory.rglob('*') if p.is_file()]
    return [proc.stdout, proc.stderr, *files]


@pytest.mark.slow
def test_an_unreachable_server_loses_no_perflog_and_shows_no_secret(tmp_path):
    """A metrics URL where nothing listens: ReFrame warns, drops the handler
    and the run, its perflog and its result are as without it. Its password
    is nowhere in the output nor in any file the run wrote."""
    results = tmp_path / 'results'
    port = free_port()
    url = f'http://{USER}:{TOKEN}@127.0.0.1:{port}'
    proc = run_reframe(CHECK, results, extra_env={metrics.URL_VARIABLE: url})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert f'httpjson: could not connect to server 127.0.0.1:{port}' in proc.stdout + proc.stderr
    assert set(perflog_figures(results)) == {'copy_bw', 'copy_time'}
    assert not leaked(*everything_written(proc, tmp_path))


@pytest.mark.slow
def test_a_server_refusing_the_figures_gets_the_password_as_basic_and_nothing_shows_it(tmp_path):
    """A real server that answers 401 quoting the path and the Authorization
    header it was sent: the user and password went as HTTP Basic (not in
    the URL ReFrame holds), ReFrame warns with the status alone, and the
    password is nowhere in the output nor in any file the run wrote."""
    echo = Echo(status=401)
    try:
        url = f'http://{USER}:{TOKEN}@{echo.netloc}'
        proc = run_reframe(CHECK, tmp_path / 'results', extra_env={metrics.URL_VARIABLE: url})
    finally:
        echo.close()
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert echo.got == [('/api/v1/import', redact.basic_auth(USER, TOKEN))]
    assert 'HTTP response code 401' in proc.stdout + proc.stderr
    assert not leaked(*everything_written(proc, tmp_path))


#: (a metrics URL holding the token, what the refusal says)
BAD_URLS = [
    (f'vm.example.org:8428/{TOKEN}', 'no http(s) scheme'),
    (f'{USER}:{TOKEN}@vm.example.org:8428', 'no http(s) scheme'),
    (f'http://{USER}:{TOKEN}@vm example.org:8428/{TOKEN}', 'a space or a control character'),
    (f'http://{USER}:{TOKEN}@vm.example.org:port/{TOKEN}', 'its host or port cannot be read'),
    (f'file:///{TOKEN}', 'the scheme file:'),
    (f'ftp://{USER}:{TOKEN}@vm.example.org/{TOKEN}', 'the scheme ftp:'),
    (f'http:///{TOKEN}?key={TOKEN}', 'names no host'),
]


@pytest.mark.parametrize('url, words', BAD_URLS)
def test_a_bad_metrics_url_is_refused_naming_the_setting_never_the_value(url, words, monkeypatch):
    base = {'handlers': [], 'handlers_perflog': []}
    monkeypatch.setenv(metrics.URL_VARIABLE, url)
    with pytest.raises(ClusterproofError, match=re.escape(words)) as err:
        metrics.logging_entries(base, {})
    assert str(err.value).startswith(f'{metrics.URL_VARIABLE}: ') and not leaked(str(err.value))
    monkeypatch.delenv(metrics.URL_VARIABLE)
    with pytest.raises(ClusterproofError, match=re.escape(words)) as err:
        metrics.logging_entries(base, {'pixstor': url})
    assert str(err.value).startswith('metrics_url of system pixstor: ')
    assert not leaked(str(err.value))


def test_a_password_goes_as_basic_and_never_in_a_system_file(monkeypatch):
    base = {'handlers': [], 'handlers_perflog': []}
    monkeypatch.setenv(metrics.URL_VARIABLE, f'http://{USER}:{TOKEN}@127.0.0.1:8428')
    [entry] = metrics.logging_entries(base, {})
    [handler] = entry['handlers_perflog']
    assert handler['url'] == 'http://127.0.0.1:8428/api/v1/import'
    assert handler['authorization_header']() == redact.basic_auth(USER, TOKEN)
    monkeypatch.delenv(metrics.URL_VARIABLE)
    with pytest.raises(ClusterproofError, match='metrics_url of system pixstor holds a user and '
                                                'password: a secret is never in a system file; '
                                                'give the URL in '
                                                '\\$CLUSTERPROOF_METRICS_URL') as err:
        metrics.logging_entries(base, {'pixstor': f'http://{USER}:{TOKEN}@vm.example.org:8428'})
    assert not leaked(str(err.value))


@pytest.mark.slow
def test_reframe_loading_the_settings_shows_no_secret(tmp_path):
    """ReFrame loading the site configuration: a bad URL stops it with the
    refusal naming the variable; a good one with a password is shown
    without it."""
    bad = runner.invoke(['--system', 'local', '--show-config=logging'], timeout=300,
                        env=reframe_env(tmp_path, extra={metrics.URL_VARIABLE: BAD_URLS[2][0]}))
    assert bad.returncode != 0
    assert f'{metrics.URL_VARIABLE}: the URL holds a space' in bad.stdout + bad.stderr
    shown = show_logging(tmp_path, {metrics.URL_VARIABLE: f'http://{USER}:{TOKEN}@127.0.0.1:9'})
    assert '"url": "http://127.0.0.1:9/api/v1/import"' in shown
    assert not leaked(bad.stdout, bad.stderr, shown)


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


SYSTEMS_CONFIG = '''
from clusterproof.publish.metrics import logging_entries
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
