"""Faults injected into the local cluster by the reliability tests: a node
dies (every process in its network namespace is killed: its slurmd, the job
steps and the tasks, which is what a node crash looks like to Slurm) and
comes back (its slurmd started again the way ``up`` does, the node resumed);
a node slowed (its slurmd, and so every job step it starts, put in a cgroup
with a CPU quota: :class:`CpuQuota`, :func:`node_cpu_quota`), or one
program of one node slowed alike (:func:`node_program_cpu_quota`); a directory
remounted with other options on one node (:class:`NodeMount`); and the way
back to a known state after any of that (:func:`recover`: no
job, every node idle but those a real cluster's description records drained
or down), which the tests use between scenarios.
"""

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from clusterproof import ClusterproofError
from clusterproof.cluster.config import Layout
from clusterproof.cluster.daemons import Cluster
from clusterproof.cluster.states import START_WAIT_S
from clusterproof.cluster.network import netns_pids
from clusterproof.cluster.procs import pid_from, run


def _node_index(spec, node):
    if node not in spec.names:
        raise ClusterproofError(f'node {node!r}: the cluster has nodes {spec.hostlist}')
    return spec.names.index(node) + 1


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
    c = Cluster(spec, log=lambda text: None, progress=lambda text: print(text, file=sys.stderr))
    if c.our_pid(f'slurmd {node}', pid_from(lay.slurmd_pid_file(node))):
        raise ClusterproofError(f'slurmd of {node} is still running')
    pid_file = lay.slurmd_pid_file(node)
    if pid_file.exists():
        pid_file.unlink()
    c.start_slurmd(i)       # as `up` starts it: one retry, a failure named with its log
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


def recorded_states(spec):
    """{node: ``DRAIN`` or ``DOWN``}: the states ``up --like`` gave nodes as
    the real cluster's description records them; not a fault's doing."""
    return {n.name: n.state for n in spec.like.nodes if n.state} if spec.like is not None else {}


def recover(spec, timeout=START_WAIT_S):
    """Bring the cluster back to a known state after whatever happened to it:
    start the slurmd of every node whose slurmd is gone, cancel every job,
    resume nodes that are down, drained or failing, and wait until every node
    is idle and the queue empty. A node ``up --like`` made DRAIN or DOWN as
    recorded (:func:`recorded_states`) is left as it is. Returns what was
    done, one line each; raises naming the nodes and their states when that
    takes over ``timeout`` s."""
    lay = Layout(spec.run_dir)
    c = Cluster(spec, log=lambda text: None)
    recorded = recorded_states(spec)
    ours = [n for n in spec.names if n not in recorded]
    done = []
    for node in ours:
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
        bad = sorted(n for n, s in states.items() if n not in recorded
                     and any(w in s for w in ('down', 'drain', 'fail')))
        for node in bad:
            run(['scontrol', 'update', f'nodename={node}', 'state=resume'], env=c.env, check=False,
                timeout=timeout)
            resumed.add(node)
        jobs = _queue(c)
        idle = {n for n, s in states.items() if s == 'idle'}
        if not jobs and idle >= set(ours):
            break
        if time.monotonic() > end:
            listed = (', '.join(f'{n}={s}' for n, s in sorted(states.items()))
                      or 'sinfo gave nothing')
            raise ClusterproofError(f'cluster {spec.inst.cluster} not back to idle within '
                                    f'{timeout} s ({listed}; '
                                    f'jobs left: {",".join(jobs) or "none"}); '
                                    f'see {lay.log}')
        time.sleep(0.2)
    if resumed:
        done.append(f'{", ".join(sorted(resumed))} resumed')
    return done


def _queue(cluster):
    """Ids of the jobs in the queue."""
    return sorted(cluster.queued_jobs() or ())


#: where the cgroup file systems are mounted
CGROUP_ROOT = Path('/sys/fs/cgroup')


class CpuQuota:
    """A child cgroup ``name`` with a CPU quota of ``quota_us`` in every
    ``period_us``, holding process ``pid`` (and what it forks from then on),
    or, with ``pid`` None, empty for processes to join (``echo $$ >``
    :attr:`procs`); cgroup v2 (``cpu.max``) or v1 (the ``cpu`` controller,
    ``cpu.cfs_quota_us``). A context manager: undone on exit (the processes
    go back to the cgroup ``pid`` came from, or to the root, and the child
    cgroup is removed). Raises ClusterproofError when this machine has no
    cgroup CPU controller to write to."""

    def __init__(self, pid, name, quota_us, period_us):
        self.pid, self.name, self.quota_us, self.period_us = pid, name, quota_us, period_us
        v2 = CGROUP_ROOT / 'cgroup.controllers'
        if v2.is_file() and 'cpu' in v2.read_text().split():
            self.root, self.v2 = CGROUP_ROOT, True
        elif (CGROUP_ROOT / 'cpu' / 'cpu.cfs_quota_us').is_file():
            self.root, self.v2 = CGROUP_ROOT / 'cpu', False
        else:
            raise ClusterproofError(f'no cgroup CPU controller under {CGROUP_ROOT} (neither '
                                    f'cgroup v2 with "cpu" in cgroup.controllers nor v1 cpu/)')
        self.dir = self.root / name
        self.procs = self.dir / 'cgroup.procs'

    def _origin(self):
        if self.pid is None:
            return self.root
        for line in Path(f'/proc/{self.pid}/cgroup').read_text().splitlines():
            num, ctrl, path = line.split(':', 2)
            if (self.v2 and num == '0') or (not self.v2 and 'cpu' in ctrl.split(',')):
                return self.root / path.lstrip('/')
        return self.root

    def __enter__(self):
        self.origin = self._origin()
        self.dir.mkdir()
        try:
            if self.v2:
                (self.dir / 'cpu.max').write_text(f'{self.quota_us} {self.period_us}')
            else:
                (self.dir / 'cpu.cfs_period_us').write_text(str(self.period_us))
                (self.dir / 'cpu.cfs_quota_us').write_text(str(self.quota_us))
            if self.pid is not None:
                self.procs.write_text(str(self.pid))
        except OSError:
            self.dir.rmdir()
            raise
        return self

    def __exit__(self, *exc, timeout=60):
        # a job step may fork while its processes are moved: move until none is left
        end = time.monotonic() + timeout
        while pids := self.procs.read_text().split():
            if time.monotonic() > end:
                raise ClusterproofError(f'processes {", ".join(pids)} still in {self.dir} '
                                        f'{timeout} s after they were moved out')
            for pid in pids:
                try:
                    (self.origin / 'cgroup.procs').write_text(pid)
                except OSError:
                    pass            # it ended meanwhile
        self.dir.rmdir()


def _slurmd_pid(spec, node):
    _node_index(spec, node)
    pid = pid_from(Layout(spec.run_dir).slurmd_pid_file(node))
    if not pid or not Cluster(spec, log=lambda text: None).our_pid(f'slurmd {node}', pid):
        raise ClusterproofError(f'slurmd of {node} is not running '
                                f'(pid file {Layout(spec.run_dir).slurmd_pid_file(node)})')
    return pid


def node_cpu_quota(spec, node, quota_us, period_us):
    """:class:`CpuQuota` for ``node``'s slurmd (every job step it starts
    from then on runs under the quota: ``proctrack/linuxproc`` leaves steps
    in slurmd's cgroup). Use as ``with node_cpu_quota(spec, 'n3', 1000,
    50000):``."""
    return CpuQuota(_slurmd_pid(spec, node),
                    f'clusterproof-{spec.inst.cluster}-{node}-quota-{os.getpid()}',
                    quota_us, period_us)


#: the wrapper of :func:`node_program_cpu_quota`
PROGRAM_WRAPPER = """#!/bin/sh
# {program}, and on {node} inside the CPU-quota cgroup {group}
if [ "$SLURMD_NODENAME" = {node} ]; then echo $$ > {procs} || exit 97; fi
exec {program} "$@"
"""


@contextlib.contextmanager
def node_program_cpu_quota(spec, node, program, wrapper, quota_us, period_us):
    """Write ``wrapper``, an executable that runs ``program`` with its
    arguments: on ``node`` (a job step's ``$SLURMD_NODENAME``) inside an
    empty :class:`CpuQuota` group of ``quota_us`` in every ``period_us``,
    on the other nodes as it is. One program of one node slowed (its STREAM
    at a twentieth of a processor: a node whose memory lost bandwidth)
    while the node's slurmd, its job steps and every other program run at
    full speed. A context manager: the group is removed on exit; the
    wrapper stays (it is the caller's file)."""
    _node_index(spec, node)
    name = f'clusterproof-{spec.inst.cluster}-{node}-program-{os.getpid()}'
    with CpuQuota(None, name, quota_us, period_us) as group:
        Path(wrapper).write_text(PROGRAM_WRAPPER.format(
            program=shlex.quote(str(program)), node=shlex.quote(node),
            group=group.dir, procs=shlex.quote(str(group.procs))))
        Path(wrapper).chmod(0o755)
        yield group


class NodeMount:
    """Directory ``path`` bind-mounted onto itself in ``node``'s mount
    namespace (that of its slurmd, which its job steps share) and remounted
    with ``options`` (``noatime,nosuid``): what a node whose scratch file
    system was mounted with other options looks like from inside its jobs.
    The other nodes and this machine do not see it (the node namespaces do
    not propagate mounts). A context manager: unmounted on exit."""

    def __init__(self, spec, node, path, options):
        self.node, self.path, self.options = node, str(path), options
        self.ns = f'/proc/{_slurmd_pid(spec, node)}/ns/mnt'

    def _mount(self, *argv):
        run(['nsenter', f'--mount={self.ns}', *argv])

    def __enter__(self):
        self._mount('mount', '--bind', self.path, self.path)
        try:
            self._mount('mount', '-o', f'remount,bind,{self.options}', self.path)
        except ClusterproofError:
            self._mount('umount', self.path)
            raise
        return self

    def __exit__(self, *exc):
        self._mount('umount', self.path)
