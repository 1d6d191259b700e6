"""The ReFrame runner (clusterproof.reframe_io.runner): real ReFrame runs
whose session is read from the run report, and the report's format checked."""

import json

import pytest

from clusterproof import ClusterproofError
from clusterproof.reframe_io import database as rfdb
from clusterproof.reframe_io import runner
from clusterproof.store.sessions import load_sessions
from conftest import WAIT_S, reframe_env
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


def test_a_run_of_no_test_case_is_an_error_with_its_output(tmp_path):
    with pytest.raises(ClusterproofError, match=r'ReFrame wrote no run report .*exit status'):
        runner.run(ARGS + ['-n', 'NoSuchCheck'], env=reframe_env(tmp_path / 'results'),
                   report_file=tmp_path / 'r.json', timeout=WAIT_S)
    assert runner.session_of(tmp_path / 'r.json') is None


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
