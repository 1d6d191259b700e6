"""Faults during a run, on the local cluster (``emu_cluster``) and on
``local``: a node dies mid-benchmark, the run is interrupted (SIGINT,
SIGTERM), the scratch file system fills up. (A benchmark that hangs is in
tests/suite/test_reliability_exit.py, beside the STREAM faults.)

Each test asserts the outcome a user sees (the failure message names the
node, the time limit, the "no space" cause), and that nothing was lost:
the results database passes sqlite's integrity check and holds every
completed result, perflogs stay readable, no failed figure is recorded as a
pass, test files are removed, no Slurm job is left behind.

Each scenario records ``reliability=fault`` and ``results_lost=N`` for the
counts printed at the end of the test run (tests/conftest.py).
"""

import json
import signal
import subprocess
from pathlib import Path

import pytest

from clusterproof import cluster as lc
from clusterproof.cluster import faults
from clusterproof.reframe_io import runner
from conftest import (database_intact, EMU_INSTANCE, REPO, WAIT_S, assert_cases, need_netns,
                      reframe_env, report_cases, restore_emu_cluster, wait_for, with_report_file)

FAULTS = Path(__file__).resolve().parents[1] / 'checks' / 'reliability' / 'faults.py'
CHECKS = REPO / 'reframe_checks'

#: ReliabilityHold holds far longer than any wait for the fault (a killed
#: node, a signal) may take on a loaded machine; the fault ends it, so the
#: length costs nothing. Its time limit leaves room for Slurm to notice a dead
#: node (SlurmdTimeout) however slow the machine is.
_HOLD_UNTIL_THE_FAULT = ['-S', f'ReliabilityHold.hold={WAIT_S}',
                         '-S', f'ReliabilityHold.time_limit={2 * WAIT_S}s']


# ------------------------------------------------------------------ helpers

def _cases(results_dir):
    """Test cases of the newest run report in ``results_dir``, by check name."""
    return {tc['name'].split()[0]: tc for tc in report_cases(results_dir)}


def _db_cases(results_dir):
    """{session uuid: {test name: result}} from the results database."""
    import sqlite3
    db = Path(results_dir) / 'results.db'
    ok, msg = database_intact(db)
    assert ok, msg
    con = sqlite3.connect(f'file:{db}?mode=ro', uri=True)
    try:
        rows = con.execute('SELECT uuid, json_blob FROM sessions').fetchall()
    finally:
        con.close()
    out = {}
    for sess, blob in rows:
        data = json.loads(blob)
        out[sess] = {tc['name'].split()[0]: tc['result']
                     for run in data['runs'] for tc in run['testcases']}
    return out


def _perflog_results(results_dir):
    """[(check, result, line)] of every perflog line; every file must parse."""
    found = []
    for path in (Path(results_dir) / 'perflogs').rglob('*.log'):
        lines = path.read_text().splitlines()
        assert lines, f'{path} is empty'
        for line in lines[1:]:              # the first line is the header
            fields = line.split('|')
            assert len(fields) > 3, f'{path}: unreadable line {line!r}'
            found.append((path.stem, fields[1], line))
    return found


def _lost(completed, results_dir):
    """Completed results (names) missing from the database or perflogs."""
    in_db = set()
    for cases in _db_cases(results_dir).values():
        in_db |= {n for n, r in cases.items() if r == 'pass'}
    return sorted(set(completed) - in_db)


def _emu_env(emu_cluster, results_dir, scratch_dir, mode='smoke'):
    env = reframe_env(results_dir, mode, emu_cluster)
    env['CLUSTERPROOF_SCRATCH'] = str(scratch_dir)
    return env


def _sigint_default():
    # A run started in the background by a non-interactive shell (a CI
    # runner, `cmd &`) inherits SIGINT ignored, and Python then never raises
    # KeyboardInterrupt: ReFrame must see Ctrl-C as a user's terminal sends it.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start_reframe(args, env):
    args, report = with_report_file(args, env['CLUSTERPROOF_RESULTS'])
    proc = runner.start(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                        text=True, preexec_fn=_sigint_default)
    proc.selection = (args, report)     # for assert_cases
    return proc


def _text(path):
    try:
        return Path(path).read_text()
    except OSError:
        return ''


def _cleaned_up(log, check):
    """True when ReFrame's debug log shows that it removed the stage
    directory of ``check`` and then polled its jobs again: the loop iteration
    that cleaned the check up is over."""
    lines = _text(log).splitlines()
    at = next((n for n, ln in enumerate(lines)
               if f'{check} /' in ln and 'Removing stage directory' in ln), None)
    return at is not None and any("[CMD] 'sacct" in ln for ln in lines[at + 1:])


def _squeue(env, name=None):
    out = subprocess.run(['squeue', '-h', '-o', '%i %j %T %N'], env=env, capture_output=True,
                         text=True).stdout.split('\n')
    return [ln.split() for ln in out if ln.strip() and (name is None or name in ln)]


def _spec():
    return lc.load_spec(EMU_INSTANCE, lc.Instance(EMU_INSTANCE).default_run_dir())


# ---------------------------------------------------- a node dies; a hang

@pytest.fixture(scope='module')
def node_death_session(emu_cluster, tmp_path_factory):
    """One ReFrame session on emu with the checks of FAULTS but
    ReliabilityHang: ReliabilityQuick (completes), ReliabilityHold on all
    four nodes (node n2 is killed while it runs), ReliabilityExit. (Slurm
    ends a hang at a whole minute of time limit, checked every 30 s:
    ReliabilityHang runs beside the STREAM faults of
    tests/suite/test_reliability_exit.py, whose time limit takes as long, instead
    of making this session wait for it.) Starts from a known state (no job,
    every node idle) and restores it at the end, n2 included, whatever the
    tests did."""
    restore_emu_cluster()
    results = tmp_path_factory.mktemp('node-death')
    scratch_dir = results / 'scratch'
    env = _emu_env(emu_cluster, results, scratch_dir)
    spec = _spec()
    proc = _start_reframe(['-c', str(FAULTS), '-r', '--system', 'emu:srun',
                           *_HOLD_UNTIL_THE_FAULT,
                           '-S', 'ReliabilityQuick.avoid_nodes=n2',
                           '-x', 'ReliabilityHang'], env)
    try:
        # The Hold job's step is fully launched: its task on every node wrote
        # its file. (Waiting for any process of the step on n2 could kill n2
        # while its slurmstepd was still starting the task, a different fault:
        # the step's launch fails.) From here only Slurm's handling of the
        # dead node ends the job, so Slurm has declared n2 down by the time
        # the check's sanity asks it.
        wait_for('ReliabilityHold started on n1..n4',
                 lambda: any(j[2] == 'RUNNING' for j in _squeue(env, 'Hold'))
                 and len(list(scratch_dir.glob('hold-*/file.n*'))) == 4, proc=proc)
        killed = faults.kill_node(spec, 'n2')
        out, _ = proc.communicate(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # faults.py's four checks on emu, less ReliabilityHang
    assert_cases(*proc.selection, proc.returncode, out, 3)
    yield {'results': results, 'scratch': scratch_dir, 'out': out, 'rc': proc.returncode,
           'killed': killed, 'env': env, 'spec': spec, 'cases': _cases(results)}
    restore_emu_cluster()


@need_netns
@pytest.mark.emu_shared_state
def test_node_death_fails_naming_the_node_and_the_session_goes_on(node_death_session,
                                                                  record_property):
    record_property('reliability', 'fault')
    s = node_death_session
    assert s['killed'], 'nothing was killed on n2'
    cases = s['cases']
    lost = _lost([n for n, tc in cases.items() if tc['result'] == 'pass'], s['results'])
    record_property('results_lost', len(lost))
    hold = cases['ReliabilityHold']
    assert hold['result'] == 'fail', s['out'][-3000:]
    assert 'node failure: n2 stopped answering' in hold['fail_reason'], hold['fail_reason']
    assert 'Slurm says n2: Not responding' in hold['fail_reason'], hold['fail_reason']
    # the other tests of the session went on
    assert cases['ReliabilityQuick']['result'] == 'pass', s['out'][-3000:]
    assert 'ReliabilityHang' not in cases      # it runs beside the STREAM faults
    # every completed result is in the database and the perflog; nothing failed is a pass
    assert lost == []
    perf = _perflog_results(s['results'])
    assert ('ReliabilityQuick', 'pass') in {(c, r) for c, r, _ in perf}
    assert all(r != 'pass' for c, r, _ in perf if c == 'ReliabilityHold')
    # Slurm does not run the failed job again later (--no-requeue)
    wait_for('the failed job to leave the queue', lambda: not _squeue(s['env'], 'Hold'))
    # the test directory of the failed check is gone
    assert [p.name for p in s['scratch'].iterdir() if not p.name.startswith('.')] == []


@need_netns
@pytest.mark.emu_shared_state
def test_resumed_node_passes_a_rerun(node_death_session, record_property):
    record_property('reliability', 'fault')
    s = node_death_session
    state = faults.restart_node(s['spec'], 'n2')
    assert state.startswith('idle')
    args, report = with_report_file(['-c', str(FAULTS), '-r', '--system', 'emu:srun',
                                     '-n', 'ReliabilityHold', '-S', 'ReliabilityHold.hold=1'],
                                    s['results'])
    proc = runner.invoke(args, env=s['env'], timeout=WAIT_S)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert_cases(args, report, proc.returncode, proc.stdout, 1)
    assert _cases(s['results'])['ReliabilityHold']['result'] == 'pass'
    out = s['results'] / 'output' / 'emu' / 'srun' / 'gnu' / 'ReliabilityHold' / 'rfm_job.out'
    assert sorted(ln.split()[1] for ln in out.read_text().splitlines()
                  if ln.startswith('done ')) == ['n1', 'n2', 'n3', 'n4']
    sessions = _db_cases(s['results'])
    record_property('results_lost', 0 if len(sessions) == 2 else 1)
    assert len(sessions) == 2          # the first session is still there
    assert any(c.get('ReliabilityQuick') == 'pass' for c in sessions.values())


@need_netns
def test_job_cancelled_before_it_ran_fails_naming_state_and_cause(emu_cluster, tmp_path,
                                                                  record_property):
    """An administrator cancels a queued job (scancel): it never wrote its
    output, and the failure says so with Slurm's state, not a missing file."""
    record_property('reliability', 'fault')
    env = _emu_env(emu_cluster, tmp_path, tmp_path / 'scratch')
    proc = _start_reframe(['-c', str(FAULTS), '-r', '--system', 'emu:srun',
                           '-n', 'ReliabilityQuick', '-S', 'ReliabilityQuick.begin=now+1hour'],
                          env)
    try:
        wait_for('ReliabilityQuick queued', lambda: any(j[2] == 'PENDING'
                                                     for j in _squeue(env, 'Quick')), proc=proc)
        subprocess.run(['scancel', '--name', 'rfm_ReliabilityQuick'], env=env, check=True)
        out, _ = proc.communicate(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode != 0, out[-3000:]
    assert_cases(*proc.selection, proc.returncode, out, 1)
    quick = _cases(tmp_path)['ReliabilityQuick']
    record_property('results_lost', 0)
    assert quick['result'] == 'fail' and quick['fail_phase'] == 'sanity', quick
    assert 'the job wrote no output (rfm_job.out)' in quick['fail_reason'], quick['fail_reason']
    assert 'state CANCELLED' in quick['fail_reason'], quick['fail_reason']
    assert 'cancelled: the job was cancelled before it finished' in quick['fail_reason']
    # and nothing of it is recorded as a pass
    assert all(r != 'pass' for c, r, _ in _perflog_results(tmp_path) if c == 'ReliabilityQuick')


# ---------------------------------------------------------- interruption

@need_netns
@pytest.mark.parametrize('sig', ['SIGINT', 'SIGTERM'])
def test_interrupted_run_cancels_jobs_removes_files_keeps_results(emu_cluster, tmp_path, sig,
                                                                  record_property):
    record_property('reliability', 'fault')
    scratch_dir = tmp_path / 'scratch'
    env = _emu_env(emu_cluster, tmp_path, scratch_dir)
    proc = _start_reframe(['-c', str(FAULTS), '-r', '--system', 'emu:srun',
                           '-n', 'ReliabilityQuick|ReliabilityHold',
                           *_HOLD_UNTIL_THE_FAULT], env)
    job_ids = []
    try:
        wait_for('ReliabilityQuick finished and ReliabilityHold running',
                 lambda: not _squeue(env, 'Quick')
                 and any(j[2] == 'RUNNING' for j in _squeue(env, 'Hold'))
                 and '(1/2) ReliabilityQuick' in _text(tmp_path / 'reframe.log')
                 # finished means cleaned up too: ReFrame marks a test that is
                 # still cleaning up when interrupted as aborted
                 and (tmp_path / 'output' / 'emu' / 'srun' / 'gnu' / 'ReliabilityQuick').is_dir()
                 and not (tmp_path / 'stage' / 'emu' / 'srun' / 'gnu' / 'ReliabilityQuick').exists()
                 and len(list(scratch_dir.glob('hold-*/file.n*'))) == 4
                 # and past the end of that cleanup stage
                 and _cleaned_up(tmp_path / 'reframe.log', 'ReliabilityQuick'), proc=proc)
        job_ids = [j[0] for j in _squeue(env, 'Hold')]
        proc.send_signal(getattr(signal, sig))
        out, _ = proc.communicate(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
            if job_ids:
                subprocess.run(['scancel'] + job_ids, env=env)
    assert proc.returncode != 0, out[-3000:]
    assert_cases(*proc.selection, proc.returncode, out, 2)
    # no Slurm job left; accounting says cancelled
    wait_for('the cancelled job to leave the queue', lambda: not _squeue(env, 'Hold'))
    acct = subprocess.run(['sacct', '-X', '-n', '-P', '-j', ','.join(job_ids), '-o', 'jobid,state'],
                          env=env, capture_output=True, text=True).stdout
    assert all('CANCELLED' in ln for ln in acct.split('\n') if ln.strip()), acct
    # the completed result is kept
    lost = _lost(['ReliabilityQuick'], tmp_path)
    record_property('results_lost', len(lost))
    assert lost == [], out[-3000:]
    assert ('ReliabilityQuick', 'pass') in {(c, r) for c, r, _ in _perflog_results(tmp_path)}
    # test files removed
    left = [p.name for p in scratch_dir.iterdir() if not p.name.startswith('.')]
    assert left == [], f'{left} left in {scratch_dir}; reframe said:\n{out[-2000:]}'
