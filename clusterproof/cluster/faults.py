"""Faults injected into the local cluster by the reliability tests: a node
dies (every process in its network namespace is killed: its slurmd, the job
steps and the tasks, which is what a node crash looks like to Slurm) and
comes back (its slurmd started again the way ``up`` does, the node resumed).
"""

import os
import re
import signal
import subprocess
import time

from clusterproof import ClusterproofError
from clusterproof.cluster.config import Layout
from clusterproof.cluster.daemons import Cluster
from clusterproof.cluster.network import netns_pids
from clusterproof.cluster.procs import pid_from


def _node_index(spec, node):
    m = re.fullmatch(r'n(\d+)', node)
    if not m or not 1 <= int(m.group(1)) <= spec.nodes:
        raise ClusterproofError(f'node {node!r}: the cluster has nodes n1..n{spec.nodes}')
    return int(m.group(1))


def node_pids(spec, node):
    """Pids of every process in the network namespace of ``node``."""
    return netns_pids(spec.inst.netns(_node_index(spec, node)))


def kill_node(spec, node, timeout=10):
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


def restart_node(spec, node, timeout=30):
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
