"""Shared test fixtures.

``need_root`` / ``need_netns`` skip with the reason where the machine lacks
them. ``emu_cluster`` starts the local Slurm cluster once per test session
(4 nodes) and yields its environment (``SLURM_CONF`` and friends); it is
brought down at the end of the session. Every test that uses it is marked
``cluster`` (``pytest -m cluster`` runs them) and finds the cluster in a
known state, and leaves it so, whatever happened before: no job, every node
idle (``emu_known_state``). The fixtures of ``servers.py`` (a real
VictoriaMetrics) are registered here, so a test names them without
importing them.
"""

import contextlib
import fcntl
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = REPO / '.venv' / 'bin'
DATA = Path(__file__).resolve().parent / 'data'

pytest_plugins = ['servers']

#: Bound of every wait in the tests, in seconds: for a job state, a file, a
#: log line, a program's end. A wait ends at its event; the bound only turns
#: a hang into a failure, so it is generous enough for a loaded machine (the
#: suite must pass while other work shares the processors).
WAIT_S = 1200


def wait_for(what, ready, timeout=WAIT_S, proc=None, interval=0.2):
    """Return as soon as ``ready()`` is true. Fail naming ``what`` when
    ``timeout`` seconds pass first, or at once when ``proc`` (a Popen whose
    output is a pipe) ends before the event."""
    end = time.monotonic() + timeout
    while True:
        if ready():
            return
        if proc is not None and proc.poll() is not None:
            out = proc.stdout.read() if proc.stdout else ''
            pytest.fail(f'the program ended before {what}:\n{(out or "")[-3000:]}')
        if time.monotonic() > end:
            pytest.fail(f'{what}: not within {timeout} s')
        time.sleep(interval)


def have_root():
    return os.geteuid() == 0


def have_netns():
    if not have_root() or not shutil.which('ip') or not shutil.which('nsenter'):
        return False
    probe = subprocess.run(['unshare', '--net', 'true'], capture_output=True)
    return probe.returncode == 0


@pytest.fixture
def ordinary_user():
    """``(name, home)`` of a user made for the test with useradd (removed
    after it), its home a new directory of its own."""
    import pwd
    import tempfile
    import uuid
    name = f'cprel{uuid.uuid4().hex[:6]}'
    subprocess.run(['useradd', '--no-create-home', '--shell', '/bin/sh', name], check=True)
    home = Path(tempfile.mkdtemp(prefix=f'{name}-'))
    try:
        pw = pwd.getpwnam(name)
        os.chown(home, pw.pw_uid, pw.pw_gid)
        yield name, home
    finally:
        subprocess.run(['userdel', name], check=False)
        shutil.rmtree(home, ignore_errors=True)


def closed_ancestor(path=REPO):
    """The first directory above ``path`` that other users cannot enter
    (no o+x), or None: tests that run commands of this checkout as another
    user need every one of them open."""
    import stat
    for parent in [Path(path), *Path(path).parents]:
        if not os.stat(parent).st_mode & stat.S_IXOTH:
            return parent
    return None


def _root_tier(skip):
    """``skip``, and the marker ``root``: the test is left out of
    ``make test-fast`` (``-m "not root"``) wherever it runs."""
    def mark(test):
        return pytest.mark.root(skip(test))
    return mark


need_root = _root_tier(pytest.mark.skipif(not have_root(), reason='needs root'))
need_repo_open_to_others = pytest.mark.skipif(
    closed_ancestor() is not None,
    reason=f'other users cannot reach this checkout ({closed_ancestor()} is not searchable '
           f'by others); clone it where they can to run this test')
need_netns = _root_tier(pytest.mark.skipif(
    not have_netns(), reason='needs root and network namespaces (ip, nsenter, unshare --net)'))


#: ReFrame polls its jobs at 10 Hz at first, slowing down to its minimum of
#: 0.1 Hz (every 10 s) by the time a job has run a few seconds: a test's job
#: that ended was seen up to 10 s late. The tests poll at least every second
#: (one squeue/sacct call a second per session; nothing a test asserts changes).
POLL_ENV = {'RFM_POLL_RATE_MIN': '1'}

#: ReFrame keeps the average rate of its polls since a job was last
#: submitted: starting at 10 Hz and decaying to that minimum, it then waits
#: to bring the average down, and the polls 6 to 23 s after a submission
#: came 1.5 to 3 s apart (29 such gaps in one whole-suite run). A job on the
#: local cluster runs 5 s at least (its prolog holds it until its accounting
#: record exists), so ReFrame runs on it poll once a second from the start
#: (merged into the environment ``emu_cluster`` yields, and the
#: published-shape run's): a job's end is seen within a second.
CLUSTER_POLL_ENV = {**POLL_ENV, 'RFM_POLL_RATE_MAX': '1'}


def reframe_env(results_dir, mode='smoke', extra=None, config=None):
    """Environment for running ``reframe`` in a test: the project's site
    configuration (or ``config``, a test's own: :func:`site_config_overlay`),
    a results directory of the test's own, the mode."""
    from clusterproof.paths import SETTINGS_FILE
    from clusterproof.reframe_io import runner
    env = runner.reframe_env(config=config or SETTINGS_FILE)
    env.update({
        'CLUSTERPROOF_RESULTS': str(results_dir),
        'CLUSTERPROOF_MODE': mode,
        'PATH': f'{VENV_BIN}:{env.get("PATH", "")}',
        **POLL_ENV,
    })
    env.update(extra or {})
    return env


def report_cases(results_dir):
    """Test cases of the newest ReFrame run report under ``results_dir``."""
    reports = sorted(Path(results_dir, 'reports').glob('run-report-*.json'),
                     key=lambda p: p.stat().st_mtime)
    assert reports, f'no run report in {Path(results_dir, "reports")}'
    from clusterproof.reframe_io import runner
    return runner.testcases(runner.read_report(reports[-1]))


def scratch_dirs_left(results_dir):
    """Directories left under ``<results_dir>/scratch`` (the default scratch)."""
    scratch = Path(results_dir) / 'scratch'
    return [p for p in scratch.iterdir() if p.is_dir()] if scratch.is_dir() else []


#: what :func:`run_reframe` expects of a run by default: at least one test case
AT_LEAST_ONE = 'at least 1'


def _is_run(args):
    """Whether ``reframe ARGS`` runs test cases (``-r``, ``--dry-run``), as
    opposed to listing or describing them."""
    return any(a in ('-r', '--run', '--dry-run') for a in map(str, args))


def with_report_file(args, results_dir):
    """``(args, report_file)``: the ``reframe`` arguments ``args`` with a
    ``--report-file`` under ``<results_dir>/reports`` (unless they name one),
    where :func:`report_cases` and :func:`assert_cases` read the run."""
    args = [str(a) for a in args]
    if '--report-file' in args:
        return args, Path(args[args.index('--report-file') + 1])
    from clusterproof.reframe_io import runner
    report_file = runner.default_report_file({'CLUSTERPROOF_RESULTS': str(results_dir)})
    return args + runner.report_option(report_file), report_file


def assert_cases(args, report_file, status, output, expect=AT_LEAST_ONE):
    """How many test cases the finished run ``reframe ARGS`` selected (its
    run report ``report_file``; :func:`clusterproof.reframe_io.runner.cases_selected`).
    Fails the test naming the selection when that is not ``expect``: at
    least one by default, else the exact count; a test that expects none
    says ``expect=0`` (a run that fails before selecting counts none)."""
    from clusterproof.reframe_io import runner
    got = runner.cases_selected(report_file, status) or 0
    if not (got >= 1 if expect == AT_LEAST_ONE else got == expect):
        pytest.fail(f'reframe ran {got} test case(s) where the test expects {expect}: '
                    f'the selection {runner.selection(args) or "(none)"}; its output ends:\n'
                    + output[-2000:])
    return got


def run_reframe(args, results_dir, mode='smoke', extra_env=None, timeout=WAIT_S,
                expect_cases=AT_LEAST_ONE, config=None):
    """Run ``reframe ARGS`` for real (:func:`clusterproof.reframe_io.runner.invoke`,
    with :func:`reframe_env`); returns the CompletedProcess. A run
    (``-r``, ``--dry-run``) writes its run report under ``results_dir`` and
    must select ``expect_cases`` test cases (:func:`assert_cases`: at least
    one unless the test says how many); ``.cases`` is the count."""
    from clusterproof.reframe_io import runner
    running = _is_run(args)
    if running:
        args, report_file = with_report_file(args, results_dir)
    proc = runner.invoke(args, env=reframe_env(results_dir, mode, extra_env, config),
                         timeout=timeout)
    if running:
        proc.cases = assert_cases(args, report_file, proc.returncode,
                                  proc.stdout + proc.stderr, expect_cases)
    return proc


@pytest.fixture(scope='session')
def local_iozone_run(tmp_path_factory):
    """One real IOzone run on this machine, shared by the tests that read
    it (tests/benchmarks/test_iozone.py: the run and its scratch directory;
    tests/store/test_perflog.py: its perflog against its results database):
    ``reframe -c reframe_checks/iozone.py --system local -r -n
    IOzoneSequential%threads=2`` in smoke mode. Returns ``(proc, results)``;
    nothing is written under ``results`` after the run."""
    results = tmp_path_factory.mktemp('local-iozone') / 'results'
    proc = run_reframe(['-c', 'reframe_checks/iozone.py', '--system', 'local', '-r',
                        '-n', 'IOzoneSequential%threads=2'], results, mode='smoke')
    return proc, results


def database_intact(path):
    """``(ok, message)``: sqlite's own integrity check of a results database,
    opened read-only."""
    import sqlite3
    path = Path(path)
    if not path.is_file():
        return False, f'{path}: no such database'
    try:
        con = sqlite3.connect(f'file:{path}?mode=ro', uri=True, timeout=30)
        try:
            rows = con.execute('PRAGMA integrity_check').fetchall()
        finally:
            con.close()
    except sqlite3.Error as err:
        return False, f'{path}: {err}'
    return rows == [('ok',)], f'{path}: integrity_check: {", ".join(r[0] for r in rows)}'


#: instance of the local cluster the tests use (``clusterproof cluster up --instance K``)
EMU_INSTANCE = int(os.environ.get('CLUSTERPROOF_TEST_INSTANCE', '7'))

# Several test sessions may share the instance: each holds a shared lock on
# this file while it uses the cluster; bringing the cluster up or down takes
# the exclusive lock. The last session out brings down a cluster that a test
# session started (marked in its run directory); one started by hand stays up.
_emu_lock = None


def _emu_marker(run_dir):
    return Path(run_dir) / 'started-by-tests'


@contextlib.contextmanager
def emu_cluster_exclusive():
    """Exclusive use of the session's cluster (to take it down and up again);
    skips the test when another test session is using it."""
    try:
        fcntl.flock(_emu_lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fcntl.flock(_emu_lock, fcntl.LOCK_SH)     # a failed conversion drops the shared lock
        pytest.skip(f'local cluster instance {EMU_INSTANCE} is in use by another test session')
    try:
        yield
    finally:
        fcntl.flock(_emu_lock, fcntl.LOCK_SH)


@pytest.fixture(scope='session')
def emu_cluster():
    """The local Slurm cluster (instance ``$CLUSTERPROOF_TEST_INSTANCE``,
    default 7; 4 nodes), up for the whole session. Yields the environment to
    merge into a subprocess environment (``SLURM_CONF``,
    ``CLUSTERPROOF_EMU_NODES``, ``CLUSTERPROOF_EMU_CPUS``; ReFrame's
    :data:`CLUSTER_POLL_ENV`). A cluster already
    up at that instance is reused; one started by a test session is brought
    down by the last session using it."""
    global _emu_lock
    if not have_netns():
        pytest.skip('the local cluster needs root and network namespaces '
                    '(ip, nsenter, unshare --net)')
    missing = [p for p in ('slurmctld', 'slurmd', 'slurmdbd', 'munged', 'mariadbd')
               if not shutil.which(p)]
    if missing:
        pytest.skip(f'the local cluster needs {", ".join(missing)} '
                    '(make setup installs them as root)')
    from clusterproof import cluster as lc
    run_dir = lc.Instance(EMU_INSTANCE).default_run_dir()
    spec = lc.Spec(instance=EMU_INSTANCE, nodes=4, run_dir=run_dir)
    cluster = lc.Cluster(spec, log=lambda text: None)
    _emu_lock = lc.open_users_lock(EMU_INSTANCE)
    fcntl.flock(_emu_lock, fcntl.LOCK_EX)
    try:
        if cluster.is_up():
            spec = lc.load_spec(EMU_INSTANCE, run_dir)
        else:
            cluster.up()
            _emu_marker(run_dir).write_text('brought up by a test session; '
                                            'the last one out brings it down\n')
    except BaseException:
        _emu_lock.close()
        raise
    fcntl.flock(_emu_lock, fcntl.LOCK_SH)
    try:
        yield {**lc.env_dict(spec), **CLUSTER_POLL_ENV}
    finally:
        try:
            fcntl.flock(_emu_lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            _warn_left_behind(spec)
            if _emu_marker(run_dir).exists():
                lc.Cluster(lc.load_spec(EMU_INSTANCE, run_dir),
                           log=lambda text: None).down(quiet=True)
                _emu_marker(run_dir).unlink()
        except BlockingIOError:
            pass    # another session still uses it; it brings it down
        finally:
            _emu_lock.close()


def _warn_left_behind(spec):
    """At the end of the session: a warning naming the nodes left down and the
    processes left running in the node namespaces (``clusterproof cluster
    status`` lists the same under ``problems``)."""
    from clusterproof import cluster as lc
    cluster = lc.Cluster(spec, log=lambda text: None)
    if cluster.is_up() and (problems := cluster.problems()):
        import warnings
        warnings.warn(f'local cluster instance {EMU_INSTANCE} at the end of the test session: '
                      + '; '.join(problems))


def pytest_configure(config):
    config.addinivalue_line(
        'markers', 'emu_shared_state: shares the state of the local cluster (a dead node) with '
                   'the other tests of its module; their module fixture restores it')


#: fixtures that bring up a local Slurm cluster (``shape``: the 16-node one of
#: tests/suite/test_published_shape.py): a test using one is marked ``cluster``
CLUSTER_FIXTURES = {'emu_cluster', 'shape'}


def pytest_collection_modifyitems(items):
    """The tiers (docs/testing.md): a test on a local cluster is marked
    ``cluster`` and ``root`` (the cluster needs root and network namespaces)."""
    for item in items:
        if CLUSTER_FIXTURES & set(getattr(item, 'fixturenames', ())):
            item.add_marker(pytest.mark.cluster)
            item.add_marker(pytest.mark.root)


def restore_emu_cluster():
    """Bring the session's local cluster back to no job and every node idle
    (:func:`clusterproof.cluster.faults.recover`); fails naming the nodes
    that do not get there. Left alone while another test session uses the
    same instance: its jobs are not ours to cancel."""
    from clusterproof import cluster as lc
    from clusterproof.cluster import faults
    try:
        fcntl.flock(_emu_lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fcntl.flock(_emu_lock, fcntl.LOCK_SH)
        return ['left alone: another test session uses this instance']
    try:
        spec = lc.load_spec(EMU_INSTANCE, lc.Instance(EMU_INSTANCE).default_run_dir())
        done = faults.recover(spec, timeout=WAIT_S)
        cluster = lc.Cluster(spec, log=lambda text: None)
        strays = cluster.strays()
        if strays:
            # ranks left spinning would slow every later test: stop them, say so
            cluster.stop_strays(strays)
            done += [f'stopped {line}' for line in cluster.problems({}, strays)]
        return done
    except Exception as err:
        pytest.fail(f'the local cluster could not be brought back to a known state: {err}')
    finally:
        fcntl.flock(_emu_lock, fcntl.LOCK_SH)


@pytest.fixture(autouse=True)
def emu_known_state(request):
    """Around every test that uses the local cluster: no job left, drained or
    down nodes resumed, dead slurmds started again, every node idle, before
    the test and after it (even when it failed). Tests marked
    ``emu_shared_state`` share such a state on purpose and are left alone."""
    if ('emu_cluster' not in request.fixturenames
            or request.node.get_closest_marker('emu_shared_state')):
        yield
        return
    request.getfixturevalue('emu_cluster')
    _warn_strays('before', request.node.nodeid, restore_emu_cluster())
    yield
    _warn_strays('after', request.node.nodeid, restore_emu_cluster())


def _warn_strays(when, test, done):
    """A warning (pytest's summary) naming the test around which processes
    were left running in the node namespaces (restore_emu_cluster stopped them)."""
    strays = [line for line in done if line.startswith('stopped stray process')]
    if strays:
        import warnings
        warnings.warn(f'local cluster instance {EMU_INSTANCE} {when} {test}: ' + '; '.join(strays))


def pytest_terminal_summary(terminalreporter):
    """Reliability counts of tests/suite/test_reliability_*.py (docs/reliability.md):
    each scenario records ``reliability`` (fault or bad_input) and, for faults,
    ``results_lost``."""
    tally = {'fault': [0, 0], 'bad_input': [0, 0]}
    lost, skipped = 0, 0
    for key in ('passed', 'failed', 'error', 'xfailed', 'xpassed', 'skipped'):
        for rep in terminalreporter.stats.get(key, []):
            props = dict(getattr(rep, 'user_properties', []) or [])
            kind = props.get('reliability')
            if kind not in tally or getattr(rep, 'when', 'call') not in ('call', 'setup'):
                continue
            if key == 'skipped':
                skipped += 1
                continue
            if rep.when == 'setup' and key == 'passed':
                continue
            tally[kind][1] += 1
            tally[kind][0] += key == 'passed'
            lost += int(props.get('results_lost', 0) or 0)
    if tally['fault'][1] or tally['bad_input'][1]:
        terminalreporter.write_line(
            f'reliability: faults survived {tally["fault"][0]}/{tally["fault"][1]}, '
            f'bad inputs refused {tally["bad_input"][0]}/{tally["bad_input"][1]}, '
            f'results lost {lost}' + (f' ({skipped} scenarios skipped)' if skipped else ''))


def site_config_overlay(directory, code):
    """A ReFrame configuration file in ``directory``: the project's site
    configuration, then ``code`` run on its ``site_configuration`` (a test
    declares other hardware, a DAX mount, a scratch directory of its own).
    Pass it as ``config`` to :func:`run_reframe` or :func:`reframe_env`."""
    import textwrap
    path = Path(directory) / 'site_config_overlay.py'
    path.write_text(
        'import importlib.util\n'
        f'spec = importlib.util.spec_from_file_location("cp_settings", '
        f'{str(REPO / "site_config" / "settings.py")!r})\n'
        'mod = importlib.util.module_from_spec(spec)\n'
        'spec.loader.exec_module(mod)\n'
        'site_configuration = mod.site_configuration\n' + textwrap.dedent(code))
    return path
