"""Why a job failed, in one line; whether a results database is intact.

:func:`failure_cause` reads the output of a job (the program's, srun's and
slurmstepd's messages) and names the cause a user needs first: a node that
failed (by name), the job's time limit, a full file system, an MPI start
that failed, a cancellation.
Checks call it in their sanity function so the failure message says what
happened instead of "pattern not found".

The faults the reliability tests inject into the local cluster (a node
dying, a node coming back) are in :mod:`clusterproof.cluster.faults`.
"""

import re
import sqlite3
from pathlib import Path

_NODE_FAIL = [
    re.compile(r'srun: error: Node failure on (\S+)'),
    re.compile(r'\*\*\* JOB \d+ ON (\S+) CANCELLED AT \S+ DUE TO NODE FAILURE'),
    re.compile(r'Task launch for StepId=\S+ failed on node (\S+)'),
]
_TIME_LIMIT = re.compile(r'(CANCELLED AT \S+ DUE TO TIME LIMIT|time limit exceeded|'
                         r'Job step aborted.*TIME LIMIT|exceeded (?:its|the) time limit)', re.I)
_NO_SPACE = re.compile(r'(No space left on device|ENOSPC|error=28\b|Disk quota exceeded)', re.I)
_CANCELLED = re.compile(r'\*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED AT \S+(?! DUE TO)')
#: Open MPI's ranks did not all start: a peer it could not connect to (often
#: one that died in MPI_Init), MPI_Init's own error, PMIx/ORTE start errors
_MPI_START = re.compile(r'Open MPI failed to TCP connect|An error occurred in MPI_Init\b|'
                        r'MPI_INIT has failed|It looks like MPI_INIT failed|'
                        r'ompi_rte_init failed|orte_ess_init failed|PMIx_Init failed|'
                        r'PMIX ERROR|ORTE_ERROR_LOG', re.I)


def failed_nodes(text):
    """Nodes that srun or slurmstepd report as failed, in order of appearance."""
    found = []
    for line in text.splitlines():
        for pattern in _NODE_FAIL:
            m = pattern.search(line)
            if m:
                node = m.group(1).rstrip(':,')
                if node not in found:
                    found.append(node)
    return found


def failure_cause(text, job_state=None, time_limit=None):
    """One line naming why a job's output shows a failure, or ``None``.

    ``text`` is the job's output (stdout and stderr together); ``job_state``
    is Slurm's state of the job when known (``TIMEOUT``, ``NODE_FAIL``,
    ``CANCELLED``...); ``time_limit`` is the limit that was in force, to quote.
    """
    state = (job_state or '').upper()
    if state == 'TIMEOUT' or _TIME_LIMIT.search(text):
        if isinstance(time_limit, (int, float)) and not isinstance(time_limit, bool):
            limit = f' of {time_limit:g} s'
        else:
            limit = f' of {time_limit}' if time_limit else ''
        return f'timeout: the job reached its time limit{limit} and was ended'
    nodes = failed_nodes(text)
    if nodes or state == 'NODE_FAIL':
        named = ', '.join(nodes) if nodes else 'a node of the job'
        return f'node failure: {named} stopped answering during the run (Slurm state {state or "?"})'
    m = _NO_SPACE.search(text)
    if m:
        line = next(ln.strip() for ln in text.splitlines() if _NO_SPACE.search(ln))
        return f'no space left on the file system under test: {line[:200]}'
    line = next((ln.strip()[:200] for ln in text.splitlines() if _MPI_START.search(ln)), None)
    if line:
        return f'MPI start failed: {line}'
    if state.startswith('CANCELLED') or _CANCELLED.search(text):
        return 'cancelled: the job was cancelled before it finished'
    return None


# ---------------------------------------------------------------- results

def database_intact(path):
    """``(ok, message)``: sqlite's own integrity check of a results database,
    opened read-only."""
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
    ok = rows == [('ok',)]
    return ok, f'{path}: integrity_check: {", ".join(r[0] for r in rows)}'
