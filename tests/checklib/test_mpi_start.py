"""An MPI start that failed is named as such: ``failure_cause`` on the
standard error of IOR and mdtest whose ranks crashed in ``MPI_Init`` on the
local cluster (tests/data/mpi-start/README.md)."""

from pathlib import Path

import pytest

from clusterproof.methods.job_failure import failure_cause

DATA = Path(__file__).resolve().parents[1] / 'data' / 'mpi-start'
TCP_CONNECT = 'MPI start failed: WARNING: Open MPI failed to TCP connect to a peer MPI process.'


@pytest.mark.parametrize('name', ['ior-4.0.0-64-ranks-tree-fence.err',
                                  'mdtest-4.0.0-8-ranks-tree-fence.err'])
@pytest.mark.parametrize('state', ['FAILED', 'CANCELLED', None])
def test_ranks_that_crashed_in_mpi_init_are_an_mpi_start_failure(name, state):
    # srun --kill-on-bad-exit cancels the step: the cause is the start, not a cancellation
    cause = failure_cause((DATA / name).read_text(), state)
    assert cause.startswith(TCP_CONNECT), cause


@pytest.mark.parametrize('line', [
    '*** An error occurred in MPI_Init',
    'It looks like MPI_INIT failed for some reason; your parallel process is',
    '[n3:01234] PMIX ERROR: UNREACHABLE in file server/pmix_server.c at line 2198',
    '  ompi_mpi_init: ompi_rte_init failed',
])
def test_open_mpi_start_errors_are_named(line):
    assert failure_cause(f'srun: error: n3: task 2: Exited with exit code 1\n{line}\n') \
        == f'MPI start failed: {line.strip()}'


def test_a_finished_run_and_a_time_limit_are_not_an_mpi_start_failure():
    out = (DATA.parent / 'ior' / 'ior-4.0.0-write.out').read_text()
    assert failure_cause(out) is None
    text = (DATA / 'ior-4.0.0-64-ranks-tree-fence.err').read_text()
    assert failure_cause(text, 'TIMEOUT', 600).startswith('timeout:')
