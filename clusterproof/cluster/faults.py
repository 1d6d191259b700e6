"""Faults injected into the local cluster by the reliability tests: a node
dies (every process in its network namespace is killed: its slurmd, the job
steps and the tasks, which is what a node crash looks like to Slurm) and
comes back (its slurmd started again the way ``up`` does, the node resumed);
and the way back to a known state after any of that (:func:`recover`: no
job, every node idle), which the tests use between scenarios.
"""

import os
import re
import signal
import subprocess
import time

from clusterproof import ClusterproofError
from clusterproof.cluster.config import Layout, node_names
from clusterproof.cluster.daemons import START_WAIT_S, Cluster
from clusterproof.cluster.network import netns_pids
from clusterproof.cluster.procs import pid_from, run


def _node_index(spec, node):
    m = re.fullmatch(r'n(\d+)', node)
    if not m or not 1 <= int(m.group(1)) <= spec.nodes:
        raise ClusterproofError(f'node {node!r}: the cluster has nodes n1..n{spec.nodes}')
    return int(m.group(1))


def node_pids(spec, node):
    """Pids of every process in the network namespace of ``node``."""
    return netns_pids(spec.inst.netns(_node_index(spec, node)))


def kill_node(spec, node, timeout=60):
    """Kill (SIGKILL) every process of ``node``: slurmd, step daemons, tasks.
    Returns the pids killed. Only processes inside the node's own namespace
    are touched."""
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


def restart_node(spec, node, timeout=START_WAIT_S):
    """Start ``node``'s slurmd again (as ``clusterproof cluster up`` does) and
    resume it in Slurm; wait until it is idle. Returns its Slurm state."""
    i = _node_index(spec, node)
    lay = Layout(spec.run_dir)
    c = Cluster(spec, log=lambda text: None)
    if c.our_pid(f'slurmd {node}', pid_from(lay.slurmd_pid_file(node))):
        raise ClusterproofError(f'slurmd of {node} is still running')
    pid_file = lay.slurmd_pid_file(node)
    if pid_file.exists():
        pid_file.unlink()
    proc = subprocess.run(c.slurmd_argv(i), env=c.env, stdin=subprocess.DEVNULL,
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


def recover(spec, timeout=START_WAIT_S):
    """Bring the cluster back to a known state after whatever happened to it:
    start the slurmd of every node whose slurmd is gone, cancel every job,
    resume nodes that are down, drained or failing, and wait until every node
    is idle and the queue empty. Returns what was done, one line each; raises
    naming the nodes and their states when that takes over ``timeout`` s."""
    lay = Layout(spec.run_dir)
    c = Cluster(spec, log=lambda text: None)
    done = []
    for node in node_names(spec.nodes):
        if not c.our_pid(f'slurmd {node}', pid_from(lay.slurmd_pid_file(node))):
            kill_node(spec, node)           # what is left in its namespace
            restart_node(spec, node, timeout)
            done.append(f'slurmd of {node} started again')
    jobs = _queue(c)
    if jobs:
        run(['scancel', *jobs], env=c.env, check=False, timeout=timeout)
        done.append(f'jobs {",".join(jobs)} cancelled')
    end = time.monotonic() + timeout
    resumed = set()
    while True:
        states = c.node_states()
        bad = sorted(n for n, s in states.items() if any(w in s for w in ('down', 'drain', 'fail')))
        for node in bad:
            run(['scontrol', 'update', f'nodename={node}', 'state=resume'], env=c.env, check=False,
                timeout=timeout)
            resumed.add(node)
        jobs = _queue(c)
        idle = {n for n, s in states.items() if s == 'idle'}
        if not jobs and idle >= set(node_names(spec.nodes)):
            break
        if time.monotonic() > end:
            listed = ', '.join(f'{n}={s}' for n, s in sorted(states.items())) or 'sinfo gave nothing'
            raise ClusterproofError(f'cluster {spec.inst.cluster} not back to idle within {timeout} s '
                                    f'({listed}; jobs left: {",".join(jobs) or "none"}); '
                                    f'see {lay.log}')
        time.sleep(0.2)
    if resumed:
        done.append(f'{", ".join(sorted(resumed))} resumed')
    return done


def _queue(cluster):
    """Ids of the jobs in the queue."""
    return sorted(cluster.queued_jobs() or ())
