"""Every check fails, naming the cause, when its program did not end well:
it exited non-zero or was killed by a signal (the job script records the
status, clusterproof.checklib.base.ClusterproofCheck), or Slurm ended the job
(a dead node: named from Slurm's own account of the job's nodes whatever
state the job got). The product check STREAM is run into a time limit and
onto a node that dies, on the local cluster; beside them, a benchmark that
hangs (ReliabilityHang) is ended by the time limit of the mode.
"""

import subprocess
from pathlib import Path

import pytest

from clusterproof.methods import job_failure
from clusterproof.cluster import faults
from conftest import (AT_LEAST_ONE, REPO, WAIT_S, assert_cases, need_netns, report_cases,
                      restore_emu_cluster, run_reframe, wait_for)

FAULTS = Path(__file__).resolve().parents[1] / 'checks' / 'reliability' / 'faults.py'
DATA = Path(__file__).resolve().parents[1] / 'data' / 'reliability'


# ------------------------------------------------- the causes, on recorded text

def test_node_failure_named_from_srun_and_slurm_output():
    # recorded: stderr of a job whose node n2 was killed (Slurm 22.05.8)
    text = (DATA / 'node-death-n2.err').read_text()
    cause = job_failure.failure_cause(text, 'NODE_FAIL', 2400)
    assert cause == ('node failure: n2 stopped answering during the run '
                     '(Slurm state NODE_FAIL)'), cause
    # the line printed on n1 (*** JOB 2 ON n1 ... DUE TO NODE FAILURE) alone: a node failed
    line = next(ln for ln in text.splitlines() if 'DUE TO NODE FAILURE' in ln)
    assert job_failure.failure_cause(line, 'CANCELLED') == (
        'node failure: a node of the job stopped answering during the run (Slurm state CANCELLED)')


def test_dead_node_named_from_slurm_whatever_the_job_state():
    # recorded: scontrol -o show node n2, 70 s after n2's processes were killed
    down = job_failure.parse_down_nodes((DATA / 'scontrol-node-n2-down.txt').read_text())
    assert down == [('n2', 'Not responding')], down
    cause = job_failure.failure_cause('', 'CANCELLED', None, None, down)
    assert cause == ('node failure: n2 stopped answering during the run (Slurm state '
                     'CANCELLED); Slurm says n2: Not responding'), cause
    # a responding node is not named
    assert job_failure.parse_down_nodes((DATA / 'scontrol-node-n2-down.txt').read_text()
                                        .replace('DOWN+NOT_RESPONDING', 'IDLE')
                                        .replace('State=DOWN*', 'State=IDLE')) == []


@pytest.mark.parametrize('status, words', [
    (137, 'signal: the program was killed by SIGKILL (exit status 137)'),
    (143, 'signal: the program was killed by SIGTERM (exit status 143)'),
    (2, 'the program exited with status 2'),
    (0, None),
])
def test_exit_status(status, words):
    assert job_failure.failure_cause('', 'COMPLETED', None, status) == words


def test_out_of_memory_and_its_state():
    assert job_failure.failure_cause('', 'OUT_OF_MEMORY').startswith('out of memory')
    line = ('slurmstepd: error: Detected 1 oom_kill event in StepId=7.0. '
            'Some of the step tasks have been OOM Killed.')
    assert job_failure.failure_cause(line, 'FAILED', None, 137) == \
        f'out of memory: the program ran out of memory: {line}'


# ----------------------------------------------- a real job, a real exit status

@pytest.mark.parametrize('end, words', [
    ('exit 3', 'the program exited with status 3: something broke'),
    ('kill -9 $$', 'signal: the program was killed by SIGKILL (exit status 137)'),
    ('kill -TERM $$', 'signal: the program was killed by SIGTERM (exit status 143)'),
])
def test_program_that_did_not_end_well_fails_naming_the_cause(tmp_path, end, words,
                                                              record_property):
    """The program printed what its sanity looks for, then exited non-zero
    or was killed; the job script ran on after it (its own exit status 0):
    the test fails with the program's status, and nothing is a pass."""
    record_property('reliability', 'fault')
    proc = run_reframe(['-c', str(FAULTS), '-n', 'ReliabilityExit',
                        '-S', f'ReliabilityExit.end={end}', '-r', '--system', 'local'], tmp_path)
    record_property('results_lost', 0)
    (case,) = report_cases(tmp_path)
    assert case['result'] == 'fail' and case['fail_phase'] == 'sanity', proc.stdout[-3000:]
    assert words in case['fail_reason'], case['fail_reason']


def test_program_that_ended_well_passes(tmp_path):
    proc = run_reframe(['-c', str(FAULTS), '-n', 'ReliabilityExit',
                        '-S', 'ReliabilityExit.end=true', '-r', '--system', 'local'], tmp_path)
    (case,) = report_cases(tmp_path)
    assert case['result'] == 'pass', proc.stdout[-3000:]


def test_dry_run_records_the_statuses_in_the_job_script(tmp_path):
    proc = run_reframe(['-c', str(FAULTS), '-n', 'ReliabilityExit', '--dry-run',
                        '--system', 'local'], tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:]
    (script,) = tmp_path.rglob('ReliabilityExit/rfm_job.sh')
    lines = script.read_text().splitlines()
    prog = next(i for i, ln in enumerate(lines) if 'echo all done' in ln)
    assert lines[prog + 1] == job_failure.SHELL_RECORD_PROGRAM_STATUS
    first = job_failure.shell_at_exit()
    assert [lines.index(ln) for ln in first] == list(range(lines.index(first[0]),
                                                           lines.index(first[0]) + 3))
    assert lines.index(first[-1]) < prog
    # nothing in these lines can be taken for a perflog field or figure
    assert not any(c in ln for ln in first + [lines[prog + 1]] for c in '=|')


# ------------------------------------ a product check: STREAM on the local cluster

#: STREAM repeats its kernels this often: far longer than any wait for the
#: fault (it is the fault that ends it); 100,000 times keeps its table of
#: times (on the stack) small enough
_STREAM_HOLDS = ['-S', 'StreamBuild.ntimes=100000']


def _stream_on(spec, node):
    for pid in faults.node_pids(spec, node):
        try:
            if Path(f'/proc/{pid}/comm').read_text().strip() == 'stream':
                return True
        except OSError:
            pass
    return False


def _start_stream(results, emu_cluster, *args):
    from test_reliability_faults import _emu_env, _start_reframe
    env = _emu_env(emu_cluster, results, results / 'scratch')
    return env, _start_reframe(['-c', str(REPO / 'reframe_checks' / 'stream.py'), '-r',
                                '--system', 'emu:srun', '-n', 'Stream%placement=cores',
                                *_STREAM_HOLDS, *args], env)


def _stream_case(results):
    return next(tc for tc in report_cases(results) if tc['name'].startswith('Stream '))


@pytest.fixture(scope='module')
def stream_faults(emu_cluster, tmp_path_factory):
    """The two STREAM faults and a hang at once, each in a ReFrame session of
    its own: STREAM on n2, whose processes are all killed while it runs,
    STREAM on n3 with a 20 s time limit, and ReliabilityHang (``sleep``
    with the smoke mode's 10 s time limit) on n1 or n4. What ends each is a
    Slurm timer (the dead-node detection, SlurmdTimeout; a time limit, which
    Slurm keeps in whole minutes and checks every 30 s: 60-90 s for both
    limits), so running them side by side costs the longest wait, not their
    sum. Starts from a known state and restores it (n2 included) at the
    end."""
    from test_reliability_faults import _emu_env, _spec, _start_reframe
    restore_emu_cluster()
    spec = _spec()
    dies, late = tmp_path_factory.mktemp('stream-dies'), tmp_path_factory.mktemp('stream-late')
    hang = tmp_path_factory.mktemp('hang')
    hang_env = _emu_env(emu_cluster, hang, hang / 'scratch')
    runs = {}
    try:
        runs['late'] = _start_stream(late, emu_cluster, '-J', 'nodelist=n3',
                                     '-S', 'Stream.time_limit=20s')[1]
        runs['dies'] = _start_stream(dies, emu_cluster, '-J', 'nodelist=n2')[1]
        # neither on the node that dies nor on the one the late STREAM holds
        runs['hang'] = _start_reframe(['-c', str(FAULTS), '-r', '--system', 'emu:srun',
                                       '-n', 'ReliabilityHang',
                                       '-S', 'ReliabilityHang.avoid_nodes=n2,n3'], hang_env)
        wait_for('STREAM running on n2', lambda: _stream_on(spec, 'n2'), proc=runs['dies'])
        killed = faults.kill_node(spec, 'n2')
        out = {name: proc.communicate(timeout=WAIT_S)[0] for name, proc in runs.items()}
        for name, proc in runs.items():
            assert_cases(*proc.selection, proc.returncode, out[name],
                         1 if name == 'hang' else AT_LEAST_ONE)
    finally:
        for proc in runs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    yield {'dies': (dies, out['dies']), 'late': (late, out['late']), 'killed': killed,
           'hang': (hang, out['hang'], hang_env)}
    restore_emu_cluster()


@need_netns
@pytest.mark.emu_shared_state
def test_stream_on_a_node_that_dies_fails_naming_it(stream_faults, record_property):
    """STREAM runs on n2 (``-J nodelist=n2``); every process of n2 is killed
    while it runs. Slurm ends the job when it declares n2 down, and the check
    fails naming n2, from Slurm's account of the node, whatever state the job
    got."""
    from test_reliability_faults import _lost
    record_property('reliability', 'fault')
    results, out = stream_faults['dies']
    assert stream_faults['killed']
    case = _stream_case(results)
    record_property('results_lost', len(_lost([], results)))
    assert case['result'] == 'fail' and case['fail_phase'] == 'sanity', out[-3000:]
    assert case['fail_reason'].startswith('sanity error: node failure: n2 stopped answering'), \
        case['fail_reason']
    assert 'Slurm says n2: Not responding' in case['fail_reason'], case['fail_reason']


@need_netns
@pytest.mark.emu_shared_state
def test_stream_past_its_time_limit_fails_naming_it(stream_faults, record_property):
    """STREAM with a 20 s time limit and kernels repeated for hours: Slurm
    ends it (TIMEOUT) and the check fails naming the limit."""
    record_property('reliability', 'fault')
    results, out = stream_faults['late']
    case = _stream_case(results)
    record_property('results_lost', 0)
    assert case['result'] == 'fail', out[-3000:]
    assert 'timeout: the job reached its time limit of 20 s' in case['fail_reason'], \
        case['fail_reason']


@need_netns
@pytest.mark.emu_shared_state
def test_hang_is_ended_by_the_time_limit_of_the_mode(stream_faults, record_property):
    """ReliabilityHang runs ``sleep`` far past the smoke mode's 10 s time
    limit: Slurm ends the job (TIMEOUT), the check fails naming the limit,
    and nothing of it is recorded as a pass."""
    from test_reliability_faults import _cases, _perflog_results
    record_property('reliability', 'fault')
    results, out, env = stream_faults['hang']
    hang = _cases(results)['ReliabilityHang']
    record_property('results_lost', 0)
    assert hang['result'] == 'fail', out[-3000:]
    assert 'timeout' in hang['fail_reason'] and 'time limit of 10 s' in hang['fail_reason'], \
        hang['fail_reason']
    assert hang['jobid'], hang
    acct = subprocess.run(['sacct', '-X', '-n', '-P', '-o', 'jobname,state', '-j',
                           str(hang['jobid'])], env=env, capture_output=True, text=True).stdout
    assert 'rfm_ReliabilityHang|TIMEOUT' in acct, acct
    assert all(r != 'pass' for c, r, _ in _perflog_results(results) if c == 'ReliabilityHang')
