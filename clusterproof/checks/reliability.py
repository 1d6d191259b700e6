"""Why a job failed, in one line; and the few operations the reliability
tests perform on the local cluster (a node dying, a node coming back).

:func:`failure_cause` reads the output of a job (the program's, srun's and
slurmstepd's messages) and names the cause a user needs first: a node that
failed (by name), the job's time limit, a full file system, a cancellation.
Checks call it in their sanity function so the failure message says what
happened instead of "pattern not found".

:func:`kill_node` and :func:`restart_node` act on one node of a cluster
started by ``clusterproof cluster up``: the first kills every process in the
node's network namespace (its slurmd, the job steps and the tasks), which is
what a node crash looks like to Slurm; the second starts the node's slurmd
again the way ``up`` does and resumes the node.
"""

import re
import sqlite3
import subprocess
import time
from pathlib import Path

from clusterproof import ClusterproofError

_NODE_FAIL = [
    re.compile(r'srun: error: Node failure on (\S+)'),
    re.compile(r'\*\*\* JOB \d+ ON (\S+) CANCELLED AT \S+ DUE TO NODE FAILURE'),
    re.compile(r'Task launch for StepId=\S+ failed on node (\S+)'),
]
_TIME_LIMIT = re.compile(r'(CANCELLED AT \S+ DUE TO TIME LIMIT|time limit exceeded|'
                         r'Job step aborted.*TIME LIMIT|exceeded (?:its|the) time limit)', re.I)
_NO_SPACE = re.compile(r'(No space left on device|ENOSPC|error=28\b|Disk quota exceeded)', re.I)
_CANCELLED = re.compile(r'\*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED AT \S+(?! DUE TO)')


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
    if state.startswith('CANCELLED') or _CANCELLED.search(text):
        return 'cancelled: the job was cancelled before it finished'
    return None


# ------------------------------------------------------------ local cluster

def _node_index(spec, node):
    m = re.fullmatch(r'n(\d+)', node)
    if not m or not 1 <= int(m.group(1)) <= spec.nodes:
        raise ClusterproofError(f'node {node!r}: the cluster has nodes n1..n{spec.nodes}')
    return int(m.group(1))


def node_pids(spec, node):
    """Pids of every process in the network namespace of ``node``."""
    from clusterproof import cluster as lc
    return lc._netns_pids(spec.inst.netns(_node_index(spec, node)))


def kill_node(spec, node, timeout=10):
    """Kill (SIGKILL) every process of ``node``: slurmd, step daemons, tasks.
    Returns the pids killed. Only processes inside the node's own namespace
    are touched."""
    import os
    import signal
    killed = []
    for pid in node_pids(spec, node):
        try:
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        except ProcessLookupError:
            pass
    end = time.monotonic() + timeout
    while node_pids(spec, node) and time.monotonic() < end:
        for pid in node_pids(spec, node):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)
    return killed


def restart_node(spec, node, timeout=30):
    """Start ``node``'s slurmd again (as ``clusterproof cluster up`` does) and
    resume it in Slurm; wait until it is idle. Returns its Slurm state."""
    from clusterproof import cluster as lc
    i = _node_index(spec, node)
    lay = lc.Layout(spec.run_dir)
    c = lc.Cluster(spec, log=lambda text: None)
    if c.our_pid(f'slurmd {node}', lc._pid_from(lay.slurmd_pid_file(node))):
        raise ClusterproofError(f'slurmd of {node} is still running')
    pid_file = lay.slurmd_pid_file(node)
    if pid_file.exists():
        pid_file.unlink()
    script = f'mount --bind {lay.hosts} /etc/hosts && hostname {node} && exec slurmd -f {lay.slurm_conf}'
    proc = subprocess.run(['nsenter', f'--net=/run/netns/{spec.inst.netns(i)}', 'unshare', '--uts',
                           '--mount', 'sh', '-c', script], env=c.env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise ClusterproofError(f'slurmd of {node} did not start (exit {proc.returncode}): '
                                f'{(proc.stderr or proc.stdout).strip()[-300:]}')
    end = time.monotonic() + timeout
    state = ''
    while time.monotonic() < end:
        state = c.node_states().get(node, '')
        if state.rstrip('*~#') == 'idle':
            return state
        if any(s in state for s in ('down', 'drain', 'fail')):
            subprocess.run(['scontrol', 'update', f'nodename={node}', 'state=resume'],
                           env=c.env, capture_output=True, text=True)
        time.sleep(0.2)
    raise ClusterproofError(f'{node} is {state or "unknown"} {timeout} s after its slurmd '
                            f'started; see {lay.log / f"slurmd-{node}.log"}')


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
