"""The error lines of the MPI libraries, UCX and Slurm, recognised in one
place (clusterproof.parsers.runtime_errors) and read by every check: on real
recorded output (tests/data/reliability/README.md names each source)."""

from pathlib import Path

import pytest

from clusterproof.methods import job_failure
from clusterproof.parsers import ior as ior_parser
from clusterproof.parsers import runtime_errors
from conftest import report_cases, run_reframe

DATA = Path(__file__).resolve().parents[1] / 'data'
FAULTS = Path(__file__).resolve().parents[1] / 'checks' / 'reliability' / 'faults.py'

#: recording -> (runtime, the first error line it holds)
RECORDED = {
    'reliability/ompi-4.1.4-mpi-abort-rank1.err': (
        'Open MPI', '[vm:25013] [[3403,0],0] ORTE_ERROR_LOG: Out of resource in file '
                    '../../../orte/util/show_help.c at line 507'),
    'reliability/ompi-4.1.4-rank1-exit1.err': (
        'Open MPI', 'Primary job  terminated normally, but 1 process returned'),
    'reliability/ompi-4.1.4-too-many-ranks.err': (
        'Open MPI', 'There are not enough slots available in the system to satisfy the 64'),
    'reliability/ompi-2.0.2-mpi-init-failed-issue-3144.txt': (
        'Open MPI', 'Primary job  terminated normally, but 1 process returned'),
    'reliability/ompi-4.1.0-pmix-unreachable-issue-9785.txt': (
        'Open MPI', '[cn007.24154] PMIX ERROR: UNREACHABLE in file server/pmix_server.c at '
                    'line 2147'),
    'reliability/ompi-pml-ucx-worker-failed-pr-6732.txt': (
        'Open MPI', 'Mon Jun  3 10:38:52 2019[1,0]<stderr>:[jazz07:169494] pml_ucx.c:268  '
                    'Error: Failed to create UCP worker'),
    'reliability/intel-mpi-2021.7-pmpi-init-thread-mpi4py-281.txt': (
        'MPICH or Intel MPI', 'Abort(1090959) on node 0 (rank 0 in comm 0): Fatal error in '
                              'PMPI_Init_thread: Other MPI error, error stack:'),
    'reliability/mpich-3-mpi-init-channel-starcluster-406.txt': (
        'MPICH or Intel MPI', 'Fatal error in MPI_Init: Other MPI error, error stack:'),
    'reliability/mpich-hydra-bad-termination-galois-37.txt': (
        'MPICH or Intel MPI', '=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES'),
    'reliability/ucx-fatal-endpoint-timeout-issue-3087.txt': (
        'UCX', 'Mon Dec 10 08:18:05 2018[1,8]<stderr>:[hpc-polar-01-vm001:13210:0:13210]    '
               'ud_iface.c:732  UCX Fatal: transport error: Endpoint timeout'),
    'reliability/slurm-24.11-pmix-send-failed-openpmix-3559.txt': (
        'Slurm', 'slurmstepd: error:  mpi/pmix_v5: pmixp_p2p_send: ccexe0094 [4]: '
                 'pmixp_utils.c:469: send failed, rc=1001, exceeded the retry limit'),
    'mpi-start/ior-4.0.0-64-ranks-tree-fence.err': None,     # first line read below
    'reliability/node-death-n2.err': None,
}


def first_error(name):
    return runtime_errors.first_error((DATA / name).read_text())


@pytest.mark.parametrize('name', sorted(n for n, want in RECORDED.items() if want))
def test_first_error_line_of_each_runtime(name):
    assert first_error(name) == RECORDED[name]


def test_slurm_lines_of_the_local_cluster():
    # srun under --kill-on-bad-exit, ranks crashed in MPI_Init (Slurm 22.05.8)
    runtime, line = first_error('mpi-start/ior-4.0.0-64-ranks-tree-fence.err')
    assert runtime == 'Slurm' and line.startswith('srun: error: ') and 'task' in line
    lines = runtime_errors.error_lines((DATA / 'reliability' / 'node-death-n2.err').read_text())
    assert lines[:2] == [('Slurm', 'srun: error: Node failure on n2'),
                         ('Slurm', 'slurmstepd-n1: error: *** JOB 2 ON n1 CANCELLED AT '
                                   '2026-11-24T11:02:46 DUE TO NODE FAILURE, SEE SLURMCTLD LOG '
                                   'FOR DETAILS ***')]


def test_ucx_warnings_are_not_errors():
    text = (DATA / 'reliability' / 'ucx-warn-benign-issues-2654-6376.txt').read_text()
    assert text.count('UCX  WARN') == 3 and runtime_errors.error_lines(text) == []
    # the UCX warnings at exit of a step that Slurm cancelled: only the cancellation
    text = (DATA / 'reliability' / 'slurm-ucx-warn-step-cancelled-ucx-1098.txt').read_text()
    (found,) = runtime_errors.error_lines(text)
    assert found[0] == 'Slurm' and 'CANCELLED AT 2016-11-03T14:36:35' in found[1]
    assert runtime_errors.first_error(text, cancellations=False) is None
    # srun finding no terminal is no error of the job
    assert runtime_errors.error_lines(
        'srun: error: ioctl(TIOCGWINSZ): Inappropriate ioctl for device') == []


def test_failure_cause_names_the_runtime_error_not_the_exit_status():
    """Open MPI's ORTE_ERROR_LOG was missed: ``\\berror\\b`` does not match
    inside ``ORTE_ERROR_LOG`` (``_`` is a word character)."""
    text = (DATA / 'reliability' / 'ompi-4.1.4-mpi-abort-rank1.err').read_text()
    assert job_failure.failure_cause(text, 'FAILED', None, 3) == (
        'runtime error: Open MPI: ' + RECORDED['reliability/ompi-4.1.4-mpi-abort-rank1.err'][1])
    assert 'ORTE_ERROR_LOG: Out of resource' in job_failure.first_error_line(
        'rank 0 done\n' + text + 'rank 1 exiting\n')
    # a generic word boundary that '_' does not break either
    assert job_failure.first_error_line('x\n[n1:7] OPAL_ERROR in foo\nlast') == \
        '[n1:7] OPAL_ERROR in foo'
    # MPI_Init's failure keeps its own cause; a cancellation after a rank's error is not the cause
    text = (DATA / 'reliability' / 'ompi-2.0.2-mpi-init-failed-issue-3144.txt').read_text()
    assert job_failure.failure_cause(text, 'FAILED').startswith(
        'MPI start failed: *** An error occurred in MPI_Init')
    text = ('srun: error: n2: task 1: Killed\n'
            'slurmstepd: error: *** STEP 9.0 ON n1 CANCELLED AT 2026-11-26T13:00:00 ***\n')
    assert job_failure.failure_cause(text, 'FAILED') == (
        'runtime error: Slurm: srun: error: n2: task 1: Killed')
    # a job Slurm says was cancelled (scancel): the ended tasks' lines are its consequence
    assert job_failure.failure_cause(text, 'CANCELLED') == (
        'cancelled: the job was cancelled before it finished')
    assert job_failure.failure_cause(text.splitlines()[1], 'FAILED') == (
        'cancelled: the job was cancelled before it finished')


def test_ior_and_mdtest_quote_runtime_errors():
    text = (DATA / 'reliability' / 'ompi-4.1.4-mpi-abort-rank1.err').read_text()
    errors, warnings = ior_parser.problem_lines('', text)
    assert errors == [RECORDED['reliability/ompi-4.1.4-mpi-abort-rank1.err'][1]] and not warnings


@pytest.mark.slow
def test_job_that_ended_well_with_an_mpi_error_fails(tmp_path):
    """A real job whose program prints the recorded Open MPI error and exits
    0: every check fails it, quoting the line, instead of passing it."""
    err = DATA / 'reliability' / 'ompi-4.1.4-mpi-abort-rank1.err'
    proc = run_reframe(['-c', str(FAULTS), '-n', 'ReliabilityExit', '-S',
                        f'ReliabilityExit.end=cat {err} >&2', '-r', '--system', 'local'],
                       tmp_path)
    (case,) = report_cases(tmp_path)
    assert case['result'] == 'fail' and case['fail_phase'] == 'sanity', proc.stdout[-3000:]
    assert ('Open MPI reported an error, although the job ended well: [vm:25013] [[3403,0],0] '
            'ORTE_ERROR_LOG: Out of resource') in case['fail_reason'], case['fail_reason']
