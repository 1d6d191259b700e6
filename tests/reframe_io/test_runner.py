"""The ReFrame runner (clusterproof.reframe_io.runner): real ReFrame runs
whose session is read from the run report, and the report's format checked."""

import json

import pytest

from clusterproof import ClusterproofError
from clusterproof.reframe_io import database as rfdb
from clusterproof.reframe_io import runner
from clusterproof.store.sessions import load_sessions
from conftest import REPO, VENV_BIN, WAIT_S, reframe_env
from results_helpers import SELFTEST_CHECKS, recorded_report

ARGS = ['-c', str(SELFTEST_CHECKS), '-r', '--system', 'local', '-S', 'copy_mib=16']


def test_session_comes_from_the_run_report(tmp_path):
    results = tmp_path / 'results'
    done = runner.run(ARGS + ['-n', 'DevZeroCopy%num_threads=1'],
                      env=reframe_env(results), timeout=WAIT_S)
    assert done.returncode == 0, done.output
    # The report is written under the results directory of the run's environment.
    assert done.report_file.parent == results.resolve() / 'reports'
    assert runner.session_of(done.report_file) == done.uuid
    assert [tc['name'] for tc in done.testcases] == ['DevZeroCopy %num_threads=1']
    # The same session is the one ReFrame stored in its results database.
    assert [s.uuid for s in load_sessions(results / 'results.db')] == [done.uuid]


def test_a_selection_of_no_test_case_is_an_error_naming_it(tmp_path):
    """ReFrame itself says ``Ran 0/0 test case(s)``, exits 0 and writes no
    report; the runner refuses it, naming the selection."""
    with pytest.raises(runner.NoTestCase) as err:
        runner.run(ARGS + ['-n', 'NoSuchCheck'], env=reframe_env(tmp_path / 'results'),
                   report_file=tmp_path / 'r.json', timeout=WAIT_S)
    assert str(err.value) == (
        f'ReFrame selected no test case: nothing matches -c {SELFTEST_CHECKS} --system local '
        f'-n NoSuchCheck; list what it does match with: reframe -c {SELFTEST_CHECKS} '
        f'--system local -n NoSuchCheck -l')
    assert runner.session_of(tmp_path / 'r.json') is None


def test_a_run_that_fails_before_any_test_case_is_an_error_with_its_output(tmp_path):
    with pytest.raises(ClusterproofError, match=r'(?s)ReFrame wrote no run report .*exit status 1'
                                                r'.*nosuch') as err:
        runner.run(['-c', str(SELFTEST_CHECKS), '-r', '--system', 'nosuch'],
                   env=reframe_env(tmp_path / 'results'), report_file=tmp_path / 'r.json',
                   timeout=WAIT_S)
    assert not isinstance(err.value, runner.NoTestCase)


def test_the_selection_named_is_only_what_selects():
    assert runner.selection(['-c', 'x', '-r', '-n', 'A B', '--system=local', '-S', 'a=b',
                             '-R', '--report-file', 'r.json', '-P', 'threads=2']) == \
        "-c x -n 'A B' --system=local -R -P threads=2"


def test_scripts_apply_the_same_rule(tmp_path, monkeypatch, capsys):
    """``clusterproof run -- ARGS`` (scripts/run-local, and through the same
    function ``clusterproof nightly``): exit 2 and the line when nothing is
    selected."""
    from clusterproof.cli import main
    env = reframe_env(tmp_path / 'results')
    env['CLUSTERPROOF_CHECKS'] = str(SELFTEST_CHECKS)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert main(['run', '--system', 'local', '--mode', 'smoke', '--report-file',
                 str(tmp_path / 'r.json'), '--', '-n', 'NoSuchCheck']) == 2
    err = capsys.readouterr().err
    assert err.startswith('clusterproof: ReFrame selected no test case: nothing matches '
                          f'-c {SELFTEST_CHECKS} --mode smoke --system local -n NoSuchCheck;'), err


def test_one_place_decides_the_configuration(tmp_path):
    import subprocess
    import sys
    from clusterproof.paths import SETTINGS_FILE
    base = {'PATH': '/usr/bin'}
    assert runner.reframe_env(base) == {'PATH': '/usr/bin', 'RFM_CONFIG_FILES': str(SETTINGS_FILE)}
    mine = dict(base, RFM_CONFIG_FILES='/site/mine.py')
    assert runner.reframe_env(mine)['RFM_CONFIG_FILES'] == '/site/mine.py'
    assert runner.reframe_env(mine, config=tmp_path / 'c.py')['RFM_CONFIG_FILES'] == \
        str(tmp_path / 'c.py')
    assert base == {'PATH': '/usr/bin'}       # a copy: the caller's stays as it was
    # what .venv/bin/activate and the shell scripts export
    cmd = [sys.executable, '-m', 'clusterproof', 'run', '--print-config']
    shown = subprocess.run(cmd, env=base, capture_output=True, text=True)
    assert shown.stdout == f'{SETTINGS_FILE}\n', shown.stderr
    assert subprocess.run(cmd, env=mine, capture_output=True, text=True).stdout == \
        '/site/mine.py\n'
    for env in (base, mine):      # the checkout's own, even after another's
        activated = subprocess.run(['bash', '-c',
                                    '. .venv/bin/activate && echo "$RFM_CONFIG_FILES"'],
                                   cwd=REPO, env=env, capture_output=True, text=True)
        assert activated.stdout == f'{SETTINGS_FILE}\n', activated.stderr


def test_report_of_another_format_is_refused(tmp_path):
    path = tmp_path / 'old.json'
    path.write_text(json.dumps({'session_info': {'uuid': 'x', 'data_version': '3.1'},
                                'runs': []}))
    with pytest.raises(ClusterproofError, match=r'old.json: run report format 3.1; '
                                                r'clusterproof reads format 4.2'):
        runner.read_report(path)
    path.write_text('{"runs": [')
    with pytest.raises(ClusterproofError, match=r'old.json: not a ReFrame run report'):
        runner.read_report(path)


def test_the_results_reader_checks_the_format_too(tmp_path):
    """The run reports read when the results database is damaged go through
    the same format check: a report recorded from a real run is read; an
    absent or half-written one is no session (None); one of another format
    version is an error naming the file and the version."""
    report = recorded_report(0)
    path = tmp_path / 'run-report-0.json'
    text = json.dumps(report)
    path.write_text(text)
    uuid, start, _, data, source = rfdb.read_run_report(path)
    assert uuid == report['session_info']['uuid'] and data == report and source == str(path)
    assert rfdb.read_run_report(tmp_path / 'absent.json') is None
    path.write_text(text[:len(text) // 2])
    assert rfdb.read_run_report(path) is None
    report['session_info']['data_version'] = '5.0'
    path.write_text(json.dumps(report))
    with pytest.raises(ClusterproofError, match=r'run-report-0.json: run report format 5.0; '
                                                r'clusterproof reads format 4.2'):
        rfdb.read_run_report(path)


def test_mode_option_of_the_reframe_command_line():
    assert runner.reframe_mode(['/v/bin/reframe', '-r', '--mode', 'nightly']) == 'nightly'
    assert runner.reframe_mode(['/v/bin/pytest', '--mode', 'nightly']) is None


@pytest.mark.slow
@pytest.mark.parametrize('command', ['acceptance', 'nightly'])
def test_the_commands_refuse_a_selection_of_no_test_case(tmp_path, command):
    """``clusterproof acceptance --system`` and ``scripts/nightly`` (``clusterproof
    nightly``) on a selection that matches nothing: exit 2, one line naming the
    selection, never a green night (ReFrame itself exits 0)."""
    import subprocess
    env = reframe_env(tmp_path / 'results')
    del env['CLUSTERPROOF_MODE']
    (tmp_path / 'refs').mkdir()     # a reference: acceptance refuses a system without one
    (tmp_path / 'refs' / 'local.yaml').write_text(
        'Stream:\n  local:default:\n    Triad: [1, -0.5, null, MB/s]\n')
    env['CLUSTERPROOF_REFERENCES'] = str(tmp_path / 'refs')
    cmd = {'acceptance': [str(VENV_BIN / 'clusterproof'), 'acceptance', '--system', 'local',
                          '--repetitions', '1', '--', '-n', 'NoSuchCheck'],
           'nightly': [str(REPO / 'scripts' / 'nightly'), '--system', 'local', '--',
                       '-n', 'NoSuchCheck']}[command]
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=WAIT_S)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert 'ReFrame selected no test case: nothing matches -c ' in line, proc.stderr
    assert '--system local -n NoSuchCheck; list what it does match with: reframe ' in line
    assert not (tmp_path / 'results' / 'reports' / 'nightly-latest.html').exists()


def test_screening_refuses_a_selection_of_no_test_case(tmp_path):
    """``clusterproof screen`` starts ReFrame through the runner (its output
    to a log file) and applies the same rule to each invocation."""
    from clusterproof.screen.run import Screening
    screening = Screening('local', 'default', ['stream'], workdir=tmp_path / 'screen',
                          env=reframe_env(tmp_path / 'results'))
    with pytest.raises(runner.NoTestCase, match=r'^ReFrame selected no test case: nothing '
                                                r'matches -c \S+ -n NoSuchCheck --system local;'):
        screening._invoke(lambda report: ['-c', str(SELFTEST_CHECKS),
                                           '-n', 'NoSuchCheck', '--system', 'local',
                                           *runner.report_option(report), '-r'])
