"""Error lines of the runtimes a job runs under: the MPI libraries (Open MPI
with ORTE, PRRTE and PMIx; MPICH and Intel MPI with Hydra), UCX, and
Slurm's srun and slurmstepd. The one table of them (:data:`MARKERS`), read by
every check (:mod:`clusterproof.methods.job_failure`, the sanity of
:class:`clusterproof.checklib.base.ClusterproofCheck`) and by the IOR and
mdtest parsers (tests/data/reliability/ has real recordings of each).

What counts as an error line, by runtime:

- Open MPI: ``ORTE_ERROR_LOG``, ``PRTE_ERROR_LOG``, ``OPAL_ERROR_LOG``
  (``_`` is a word character: a ``\\berror\\b`` search misses them),
  ``PMIX ERROR:``, ``PMIx ... error``/``failed``, ``MPI_ABORT was invoked``,
  ``An error occurred in MPI_...``, ``MPI_INIT has failed``, ``mpirun
  noticed that process rank N ...``, ``Primary job terminated normally, but
  N process returned``, ``mpirun detected that one or more processes
  exited with non-zero status``, ``There are not enough slots available``,
  ``ORTE was unable to reliably start one or more daemons``,
  ``pml_ucx.c:N  Error:``;
- MPICH and Intel MPI: ``Fatal error in MPI_...`` or ``PMPI_...``,
  ``Abort(N) on node N``, ``BAD TERMINATION OF ONE OF YOUR APPLICATION
  PROCESSES``, Hydra's ``one of the processes terminated badly``;
- UCX: ``UCX  ERROR`` and ``UCX Fatal:``/``UCX  FATAL``; ``UCX  WARN``
  lines are not errors (a device not available, an object not returned to
  a memory pool at exit: the run went on);
- Slurm: ``srun: error:`` and ``slurmstepd: error:`` (``slurmstepd-<node>:``
  from Slurm 21.08 on; except ``srun:
  error: ioctl(TIOCGWINSZ)``, srun finding no terminal), ``*** JOB|STEP
  ... CANCELLED AT ...`` (:data:`CANCELLED`, kept apart: a cancellation
  has its own cause), ``srun: error: n1: task N: Killed``.
"""

import re
from collections import namedtuple

#: one kind of error line: the runtime that prints it and its pattern
Marker = namedtuple('Marker', 'runtime pattern')

#: Slurm's line for a cancelled job or step (by scancel, the time limit, a
#: node failure, or srun ending a step whose task failed)
CANCELLED = re.compile(r'\*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED AT \S+')

#: the error lines, by runtime (see the module's documentation)
MARKERS = [
    Marker('Open MPI', re.compile(
        r'\b(?:ORTE|PRTE|OPAL|OMPI)_ERROR_LOG\b|\bPMIX[ _]ERROR\b|'
        r'\bPMIx\S*\b.*\b(?:error|failed)\b|MPI_ABORT was invoked|'
        r'An error occurred in MPI_\w+|MPI_INIT has failed|It looks like MPI_INIT failed|'
        r'\b(?:mpirun|mpiexec|prterun) noticed that process rank \d+|'
        r'Primary job\s+terminated normally, but \d+ process(?:es)? returned|'
        r'\b(?:mpirun|mpiexec|prterun) detected that one or more processes exited|'
        r'There are not enough slots available in the system|'
        r'(?:ORTE|PRTE) was unable to reliably start one or more daemons|'
        r'(?:ORTE|PRTE) has lost communication with (?:a|its) (?:remote )?daemon|'
        r'\bpml_ucx\.c:\d+\s+Error:')),
    Marker('MPICH or Intel MPI', re.compile(
        r'Fatal error in P?MPI_\w+|\bAbort\(\d+\) on node \d+|'
        r'BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES|'
        r'one of the processes terminated badly')),
    Marker('UCX', re.compile(r'\bUCX\s+(?:ERROR|FATAL)\b|\bUCX Fatal:')),
    Marker('Slurm', re.compile(
        r'\bsrun: error: (?!ioctl\(TIOCGWINSZ\))|\bslurmstepd(?:-\S+)?: error: |'
        + CANCELLED.pattern)),
]


def error_lines(text):
    """``[(runtime, line)]``: every error line of the runtimes in ``text``
    (each line once, stripped, at most 300 characters), in order."""
    found = []
    for line in (text or '').splitlines():
        for marker in MARKERS:
            if marker.pattern.search(line):
                found.append((marker.runtime, line.strip()[:300]))
                break
    return found


def first_error(text, cancellations=True):
    """``(runtime, line)`` of the first error line of ``text``, or None;
    with ``cancellations=False`` Slurm's cancellation lines are passed over
    (they follow the error that made srun end the step)."""
    return next(((runtime, line) for runtime, line in error_lines(text)
                 if cancellations or not CANCELLED.search(line)), None)
