"""Every command of ``clusterproof`` given bad input: each is refused with a
non-zero status and a message naming what was wrong; none shows a
traceback, none hangs, none exits 0.

The table below is the list of bad inputs. Each row runs in this process
(``cli.main(argv)``, output captured, a hang bounded by an alarm); three run
as whole processes too, as a user sees them. The top-level handler's one
line for an error nothing refused by name, and its traceback only under
``--debug``, are shown with a command made to fail so. ``{tmp}`` in an
argument is the test's directory (empty results directory, references and
store under it), ``{latin1}`` a file that is not UTF-8, ``{dir}`` an
existing directory.
"""

import contextlib
import io
import os
import shutil
import signal
import subprocess

import pytest

from clusterproof import cli
from clusterproof.store import sessions
from conftest import REPO, VENV_BIN
from results_helpers import RECORDED_DB

#: the bound of one in-process case: a refusal takes milliseconds; more is a hang
CASE_S = 10

#: (argv, words the error must contain)
BAD = [
    # no command, an unknown one
    ([], ['usage']),
    (['nosuch'], ['invalid choice']),
    # placement
    (['placement', '--nodes', 'n[1-4]', '--threads', '0'], ['--threads', 'from 1']),
    (['placement', '--nodes', 'n[1-4]', '--threads', '-1'], ['--threads']),
    (['placement', '--nodes', 'n[1-4]', '--threads', 'many'], ['--threads', "'many'"]),
    (['placement', '--nodes', 'n[1-4]', '--threads', '99999999999999999999'],
     ['--threads', '1,000,000']),
    (['placement', '--nodes', 'n[1-100000000]', '--threads', '4'], ['n[1-100000000]', 'more than']),
    (['placement', '--nodes', 'n[1-9999999999999999999999]', '--threads', '4'], ['more than']),
    (['placement', '--nodes', 'n[1-4],m[1-99999999]', '--threads', '4'], ['more than']),
    (['placement', '--nodes', 'n[1-', '--threads', '4'], ['unmatched']),
    (['placement', '--nodes', 'n[4-1]', '--threads', '4'], ['backwards']),
    (['placement', '--nodes', 'n1;rm', '--threads', '4'], ["';'"]),
    (['placement', '--nodes', ',', '--threads', '4'], ['no node names']),
    (['placement', '--nodes', 'n[1-4]', '--threads', '4', '--cores-per-node', '0'],
     ['--cores-per-node']),
    (['placement', '--nodes', 'n[1-4]', '--threads', '4', '--format', 'nosuch'], ['--format']),
    (['placement', '--nodes', '', '--threads', '4'], ['--nodes']),
    (['placement', '--nodes', 'n[1-4]', '--threads', '4.5'], ['--threads', "'4.5'"]),
    (['placement', '--nodes', 'n[1-4]', '--threads', '4', '--cores-per-node', '-2'],
     ['--cores-per-node']),
    (['placement', '--nodes', 'n[1-1000][1-1000][1-1000]', '--threads', '4'], ['more than']),
    (['placement', '--nodes', 'n[[1-2]]', '--threads', '4'], ['nested']),
    (['placement', '--nodes', 'n[a-b]', '--threads', '4'], ['not a number']),
    (['placement', '--nodes', 'n 1', '--threads', '4'], ['white space']),
    (['placement', '--threads', '4'], ['--nodes']),
    # sizing
    (['sizing', '--threads', '0', '--ram-gib', '1', '--total', '8G'], ['--threads']),
    (['sizing', '--threads', '4', '--ram-gib', '-3', '--total', '8G'], ['--ram-gib', '-3']),
    (['sizing', '--threads', '4', '--ram-gib', 'nan', '--total', '8G'], ['--ram-gib']),
    (['sizing', '--threads', '4', '--ram-gib', '1', '--total=-8G'], ['-8G']),
    (['sizing', '--threads', '4', '--ram-gib', '1', '--total', 'lots'], ['lots']),
    (['sizing', '--threads', '4', '--ram-gib', '1', '--total', '8G', '--transfer', '0'],
     ['transfer']),
    (['sizing', '--threads', '4', '--system', 'nosuch'], ['nosuch']),
    (['sizing', '--threads', '4'], ['--system']),
    (['sizing', '--threads', '4', '--ram-gib', 'inf', '--total', '8G'], ['--ram-gib']),
    (['sizing', '--threads', '4', '--ram-gib', '1', '--total', '8G', '--transfer', 'big'],
     ['big']),
    (['sizing', '--threads', '99999999999999999999', '--ram-gib', '1', '--total', '8G'],
     ['99999999999999999999']),
    (['sizing', '--threads', '4', '--system', 'local', '--partition', 'nosuch'], ['nosuch']),
    (['sizing', '--threads', '4', '--ram-gib', '1e300', '--total', '8G'], ['--ram-gib']),
    (['sizing', '--threads', '4', '--ram-gib', '1', '--total', '99999999999999999999999T'],
     ['--total', '8 EiB']),
    (['sizing', '--threads', '4', '--ram-gib', '1', '--total', '8G', '--transfer', '9000000T'],
     ['--transfer', '8 EiB']),
    # ior-args
    (['ior-args', '--phase', 'write', '--test-dir', '/x', '--transfer', 'big', '--block', '1g'],
     ['big']),
    (['ior-args', '--phase', 'nosuch', '--test-dir', '/x', '--transfer', '1m', '--block', '1g'],
     ['--phase']),
    (['ior-args', '--phase', 'write', '--test-dir', '/x', '--transfer', '0', '--block', '1g'],
     ['--transfer']),
    (['ior-args', '--phase', 'write', '--test-dir', '/x', '--transfer', '1m', '--block', '-1g'],
     ['--block']),
    # scratch
    (['scratch', 'create', '{tmp}', 'x', '--bytes', '-1'], ['--bytes']),
    (['scratch', 'create', '{tmp}', 'x', '--owner-pid', '-5'], ['--owner-pid']),
    (['scratch', 'remove', '{tmp}', '/etc'], ['/etc']),
    (['scratch', 'create', '{tmp}', 'x', '--bytes', 'lots'], ['--bytes']),
    (['scratch', 'create', '/', 'x'], ['/']),
    (['scratch', 'nosuch'], ['invalid choice']),
    (['scratch', 'create', '{tmp}', 'x', '--owner-pid', '99999999999999999999'], ['--owner-pid']),
    (['scratch', 'create', '{tmp}', 'x', '--bytes', '99999999999999999999'], ['--bytes']),
    # bless
    (['bless', '--max-tolerance', '-5'], ['--max-tolerance']),
    (['bless', '--min-tolerance', '-1'], ['--min-tolerance']),
    (['bless', '--nsigma', '-2'], ['--nsigma']),
    (['bless', '--percentile', '150'], ['--percentile']),
    (['bless', '--last', '0'], ['--last']),
    (['bless', '--last', '-3'], ['--last']),
    (['bless', '--since', 'yesterday'], ['--since', 'yesterday']),
    (['bless', '--write'], ['--reason']),
    (['bless', '--percentile', '-1'], ['--percentile']),
    (['bless', '--nsigma', 'nan'], ['--nsigma']),
    (['bless', '--check', '(', '--session', 'x'], ['--check']),
    (['bless', '--last', '99999999999999999999'], ['--last']),
    (['bless', '--max-tolerance', '1e308'], ['--max-tolerance', '1,000']),
    (['bless', '--min-tolerance', '5000'], ['--min-tolerance', '1,000']),
    (['bless', '--nsigma', '1e308'], ['--nsigma', '1,000']),
    # compare
    (['compare', '--tolerance', '-1'], ['--tolerance']),
    (['compare', '--history', '-1'], ['--history']),
    (['compare', '--drift-window', '0'], ['--drift-window']),
    (['compare', '--drift-percent', '-5'], ['--drift-percent']),
    (['compare', '--drift-sessions', '-1'], ['--drift-sessions']),
    (['compare', '--drift-nights', '-1'], ['--drift-nights']),
    (['compare', 'a', 'b', 'c'], ['at most two']),
    (['compare', '--store', '{tmp}/none'], ['{tmp}/none']),
    (['compare', '--tolerance', 'nan'], ['--tolerance']),
    (['compare', '--tolerance', 'inf'], ['--tolerance']),
    (['compare', '--history', 'all'], ['--history']),
    (['compare', '--mode', 'weekly'], ['--mode']),
    (['compare', '--history', '99999999999999999999'], ['--history']),
    (['compare', '--drift-window', '99999999999999999999'], ['--drift-window']),
    (['compare', '--tolerance', '1e308'], ['--tolerance', '1,000']),
    (['compare', '--drift-percent', '1001'], ['--drift-percent', '1,000']),
    # report
    (['report', '-o', '{dir}'], ['{dir}', 'directory']),
    (['report', '--last', '-1'], ['--last']),
    (['report', '--since', '3 days'], ['--since']),
    (['report', '-o', '{dir}', '--title', 'x'], ['{dir}']),
    (['report', '--mode', 'nosuch'], ['--mode']),
    # changes
    (['changes', '--max-detectable', '-1'], ['--max-detectable']),
    (['changes', '--max-detectable', '0'], ['--max-detectable']),
    (['changes', '--max-detectable', '1e308'], ['--max-detectable', '1,000,000']),
    (['changes', '--min-change', '1e308'], ['--min-change', '1,000']),
    (['changes', '--min-change', '-1'], ['--min-change']),
    (['changes', '{tmp}/none.csv'], ['{tmp}/none.csv']),
    (['changes', '{latin1}'], ['{latin1}']),
    (['changes', '--last', '0'], ['--last']),
    (['changes', '--min-change', 'nan'], ['--min-change']),
    (['changes', '--since', 'forever'], ['--since']),
    (['changes', '--format', 'xml'], ['--format']),
    (['changes', '--untriaged', '{tmp}/r.json'], ['--untriaged']),
    # triage
    (['triage', 'c3f2a1b2c4d', 'maybe'], ['invalid choice']),
    (['triage', '--summary', '--since', 'someday'], ['someday']),
    (['triage', '--summary', '--since', '2026-13-45'], ['2026-13-45']),
    (['changes', '--last', '99999999999999999999'], ['--last']),
    # acceptance
    (['acceptance', '--system', 'local', '--repetitions', '0'], ['--repetitions']),
    (['acceptance', '--system', 'local', '--repetitions', '-2'], ['--repetitions']),
    (['acceptance', '--contract', '{tmp}/none.yaml'], ['{tmp}/none.yaml']),
    (['acceptance', '--contract', '{latin1}'], ['{latin1}']),
    (['acceptance', '--system', 'nosuch'], ['nosuch']),
    (['acceptance', '--system', 'local', '-o', '{dir}'], ['{dir}', 'directory']),
    (['acceptance', '--system', 'local', '--repetitions', 'three'], ['--repetitions']),
    (['acceptance', '--contract', '{dir}'], ['{dir}']),
    (['acceptance', '--system', 'local', '--repetitions', '99999999999999999999'],
     ['--repetitions']),
    # acceptance-report
    (['acceptance-report', '{tmp}/none.json'], ['{tmp}/none.json']),
    (['acceptance-report', '{latin1}'], ['{latin1}']),
    (['acceptance-report', '{dir}'], ['{dir}']),
    (['acceptance-report', '{record}', '-o', '{dir}'], ['{dir}', 'directory']),
    (['acceptance-report', '{record}', '--pdf', '{dir}'], ['{dir}', 'directory']),
    (['acceptance-report', '{tmp}/r.json'], ['{tmp}/r.json']),
    # screen
    (['screen', '--system', 'nosuch', '--from-report', '{tmp}/r.json'], ['--system', 'nosuch']),
    (['screen', '--system', 'local', '--repeat', '-1'], ['--repeat']),
    (['screen', '--system', 'local', '--batch', '0'], ['--batch']),
    (['screen', '--system', 'local', '--progress-every', '0'], ['--progress-every']),
    (['screen', '--system', 'local', '--progress-every', 'inf'], ['--progress-every']),
    (['screen', '--system', 'local', '--progress-every', '1e308'], ['--progress-every', '86,400']),
    (['screen', '--system', 'local', '--checks', 'nosuch', '--from-report', '{tmp}/r.json'],
     ['nosuch']),
    (['screen', '--system', 'local', '--from-report', '{tmp}/none.json'], ['{tmp}/none.json']),
    (['screen', '--system', 'local', '--from-report', '{latin1}'], ['{latin1}']),
    (['screen', '--system', 'local', '--page', '{dir}'], ['--page', 'directory']),
    (['screen', '--system', 'local', '--apply'], ['--drain']),
    (['screen', '--system', 'local', '--resume'], ['--workdir']),
    (['screen', '--system', 'local', '--mode', 'weekly'], ['--mode']),
    (['screen', '--system', 'local', '--batch', '99999999999999999999'], ['--batch']),
    # validate
    (['validate', '--system', 'nosuch'], ['nosuch']),
    (['validate', '--contract', '{tmp}/none.yaml'], ['{tmp}/none.yaml']),
    (['validate', '--contract', '{latin1}'], ['{latin1}']),
    (['validate', '--contract', '{dir}'], ['{dir}']),
    # store, export
    (['store', 'nosuch'], ['invalid choice']),
    (['store', 'import', '{tmp}/none.csv', '--store', '{tmp}/store'], ['{tmp}/none.csv']),
    (['store', 'import', '{latin1}', '--store', '{tmp}/store'], ['{latin1}']),
    (['export', '--format', 'nosuch'], ['--format']),
    (['export', '--format', 'csv', '--store', '{tmp}/none'], ['{tmp}/none']),
    (['export', '--format', 'csv', '-o', '{dir}'], ['{dir}', 'directory']),
    (['store', 'import', '--store', '{tmp}/store'], ['import']),
    (['inventory'], ['--report']),
    (['fio-preflight', '{tmp}', '/usr/bin/fio'], ['ENGINE']),
    (['fio-preflight', '{tmp}', '/usr/bin/fio', 'psync', '--align', 'two'], ['--align', "'two'"]),
    (['init', '--probe', '--slurm-output', '{tmp}/none', '--dry-run'],
     ['--probe', 'leave out --slurm-output --dry-run']),
    # init (recorded Slurm output only: never a real sinfo)
    (['init', '--name', 'Bad Name!', '--slurm-output', '{tmp}/none', '--dry-run'], ['Bad Name!']),
    (['init', '--name', 'x', '--slurm-output', '{tmp}/none', '--dry-run'], ['{tmp}/none']),
    # cluster (every one refused before a daemon, a file or a namespace is made)
    (['cluster'], ['ACTION']),
    (['cluster', 'nosuch'], ['invalid choice']),
    (['cluster', 'up', '--nodes', '0'], ['--nodes', 'from 1 to 1,024']),
    (['cluster', 'up', '--nodes', '1025'], ['--nodes', '1,024']),
    (['cluster', 'up', '--nodes', '99999999999999999999'], ['--nodes']),
    (['cluster', 'up', '--nodes', 'four'], ['--nodes', "'four'"]),
    (['cluster', 'up', '--instance', '8'], ['--instance', 'from 0 to 7']),
    (['cluster', 'up', '--instance', '-1'], ['--instance']),
    (['cluster', 'status', '--instance', '99999999999999999999'], ['--instance']),
    (['cluster', 'down', '--instance', '9'], ['--instance']),
    (['cluster', 'env', '--instance', 'x'], ['--instance']),
    (['cluster', 'up', '--cpus-per-node', '0'], ['--cpus-per-node']),
    (['cluster', 'up', '--cpus-per-node', '65536'], ['--cpus-per-node', '65,535']),
    (['cluster', 'up', '--mem-per-node', '0'], ['--mem-per-node']),
    (['cluster', 'up', '--mem-per-node', '99999999999999999999'], ['--mem-per-node']),
    (['cluster', 'up', '--max-submit-jobs', '-1'], ['--max-submit-jobs']),
    (['cluster', 'up', '--max-submit-jobs', '99999999999999999999'], ['--max-submit-jobs']),
    (['cluster', 'up', '--max-array-size', '4000002'], ['--max-array-size', '4,000,001']),
    (['cluster', 'up', '--node-spec', 'n[1-100000000]:cpus=1'],
     ['--node-spec', '100000000 nodes', 'at most 1024']),
    (['cluster', 'up', '--node-spec', 'n[1-9999999999999999999999]:cpus=1'], ['at most 1024']),
    (['cluster', 'up', '--node-spec', 'n[1-4],m[1-99999999]:cpus=1'], ['at most 1024']),
    (['cluster', 'up', '--node-spec', 'n[1-1000][1-1000][1-1000]:cpus=1'], ['at most 1024']),
    (['cluster', 'up', '--node-spec', 'n$(id):cpus=1'], ['--node-spec', 'not a node name']),
    (['cluster', 'up', '--node-spec', 'n[1-:cpus=1'], ['--node-spec', 'unmatched']),
    (['cluster', 'up', '--node-spec', 'n[2-1]:cpus=1'], ['--node-spec', 'backwards']),
    (['cluster', 'up', '--run-dir', '{tmp}/a;b'], ['--run-dir']),
    # spack (no spack run: refused before)
    (['spack', 'status', '--system', 'nosuch'], ['nosuch']),
    (['spack', 'nosuch'], ['invalid choice']),
]

#: bad input that a results database must hold sessions to reach (the
#: recorded one, tests/data/results); where the words name ``refs/local.yaml``,
#: that references file is not UTF-8
BAD_RECORDED = [
    (['compare', 'nosuchsession'], ['nosuchsession']),
    (['compare'], ['{tmp}/refs/local.yaml', 'not UTF-8']),
    (['validate', '--system', 'local'], ['{tmp}/refs/local.yaml', 'not UTF-8']),
    (['triage', 'nosuchid', 'fixed'], ['nosuchid']),
    (['notify', '--config', '{tmp}/none.yaml', '--dry-run'], ['{tmp}/none.yaml']),
    (['notify', '--config', '{latin1}', '--dry-run'], ['{latin1}', 'not UTF-8']),
]

#: a references file not in UTF-8, in the references directory every command reads
LATIN1 = 'caf\xe9: {StreamTest: {Triad: [1.0, -0.05, null, MB/s]}}\n'.encode('latin-1')


class _Hang(BaseException):
    """Raised in a case that runs longer than :data:`CASE_S` (not an
    ``Exception``: the top-level handler must not catch it)."""


@pytest.fixture
def where(tmp_path, monkeypatch):
    """The placeholders of the table, and the environment every case runs in."""
    (tmp_path / 'refs').mkdir()
    (tmp_path / 'dir').mkdir()
    (tmp_path / 'latin1.yaml').write_bytes(LATIN1)
    (tmp_path / 'r.json').write_text('{"runs": []}')
    (tmp_path / 'record.json').write_text('{}')
    monkeypatch.setenv('CLUSTERPROOF_RESULTS', str(tmp_path / 'results'))
    monkeypatch.setenv('CLUSTERPROOF_REFERENCES', str(tmp_path / 'refs'))
    monkeypatch.delenv('CLUSTERPROOF_STORE', raising=False)
    monkeypatch.setattr(sessions, '_STORES', [])    # what --store adds, per process
    monkeypatch.delenv('SLURM_JOB_NODELIST', raising=False)
    return {'tmp': str(tmp_path), 'latin1': str(tmp_path / 'latin1.yaml'),
            'dir': str(tmp_path / 'dir'), 'record': str(tmp_path / 'record.json')}


def _fill(args, where):
    return [a.format(**where) for a in args]


def _in_process(argv):
    """``(status, stdout + stderr)`` of ``cli.main(argv)``, bounded in time."""
    out = io.StringIO()

    def hang(*_):
        raise _Hang(f'clusterproof {" ".join(argv)}: no answer within {CASE_S} s')
    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(CASE_S)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            try:
                status = cli.main(argv)
            except SystemExit as done:
                status = done.code
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return status, out.getvalue()


def _refused(argv, words, where):
    status, text = _in_process(_fill(argv, where))
    assert status not in (0, None), text
    assert 'Traceback' not in text, text
    for word in _fill(words, where):
        assert word in text, text


@pytest.mark.parametrize('argv,words', BAD, ids=[' '.join(a) or '(none)' for a, _ in BAD])
def test_bad_input_is_refused_in_one_line(where, argv, words):
    _refused(argv, words, where)


@pytest.mark.parametrize('argv,words', BAD_RECORDED, ids=[' '.join(a) for a, _ in BAD_RECORDED])
def test_bad_input_beside_recorded_sessions(where, argv, words, tmp_path):
    (tmp_path / 'results').mkdir()
    shutil.copy(RECORDED_DB, tmp_path / 'results' / 'results.db')
    if any('refs/local.yaml' in w for w in words):
        (tmp_path / 'refs' / 'local.yaml').write_bytes(LATIN1)
    _refused(argv, words, where)


def test_an_unexpected_error_is_one_line_and_its_traceback_is_under_debug(where, monkeypatch):
    def broken(args):
        raise KeyError('cores')
    monkeypatch.setattr(cli, 'build_parser', _with_func(cli.build_parser, broken))
    status, text = _in_process(['sizing', '--threads', '4'])
    assert status == 2 and 'Traceback' not in text, text
    assert text.count('\n') == 1, text
    assert text.startswith("clusterproof sizing: unexpected error: KeyError: 'cores' "
                           "(input: sizing --threads 4)") and '--debug' in text, text
    with pytest.raises(KeyError):
        _in_process(['--debug', 'sizing', '--threads', '4'])


def _with_func(build, func):
    """``build`` whose parsed arguments run ``func``."""
    def wrapped(*argv):
        parser = build(*argv)
        parse = parser.parse_args
        parser.parse_args = lambda argv=None: setattr_ns(parse(argv), func)
        return parser
    return wrapped


def setattr_ns(ns, func):
    ns.func = func
    return ns


def _whole(*args, env=None):
    return subprocess.run([str(VENV_BIN / 'clusterproof'), *args], cwd=REPO, capture_output=True,
                          text=True, timeout=60, env=dict(os.environ, **(env or {})))


@pytest.mark.slow
def test_whole_processes_refuse_in_one_line_without_a_traceback(where):
    """As a user sees them: status 2, no traceback, quickly (a node list of
    10^8 names is refused before anything is expanded)."""
    env = {'CLUSTERPROOF_REFERENCES': where['tmp'] + '/refs',
           'CLUSTERPROOF_RESULTS': where['tmp'] + '/results'}
    for args, word in [(['acceptance-report', where['record'], '-o', where['dir']], 'directory'),
                       (['placement', '--nodes', 'n[1-100000000]', '--threads', '4'], 'more than'),
                       (['changes', where['latin1']], 'latin1.yaml')]:
        proc = _whole(*args, env=env)
        assert proc.returncode == 2 and 'Traceback' not in proc.stderr, proc.stderr
        assert word in proc.stderr.strip().splitlines()[-1], proc.stderr


def test_screen_workdir_is_one_word_in_the_node_job(tmp_path):
    """``screen --workdir`` with shell syntax in it: the node job script
    keeps it a literal path (nothing in it runs)."""
    from clusterproof.screen import jobs
    wd = jobs.Workdir(tmp_path / "it's $(touch planted) `touch planted2`")
    wd.path.mkdir()
    script = jobs.write_node_job(wd).read_text()
    line = next(ln for ln in script.splitlines() if ln.startswith('env '))
    show = subprocess.run(['bash', '-c', 'node=n1 label=first part=p; cd "$0" && '
                           + "printf '%s\\n' " + line[len('env '):], str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert show.returncode == 0, show.stderr
    assert f'{wd.path}/stage/n1.first/stage' in show.stdout.splitlines(), show.stdout
    assert not list(tmp_path.glob('planted*'))
