"""What a local cluster that is up says of itself: its nodes' Slurm states
(folded for reading: :func:`summary`), the jobs in its queue, the processes
in its node namespaces that nothing accounts for (:meth:`ClusterStates.strays`),
what is wrong with it, and its status as plain data.

:class:`ClusterStates` is a part of :class:`clusterproof.cluster.daemons.Cluster`
(its spec, layout and ``_run``, ``_stop``, ``our_pid``... are the cluster's).
"""

import subprocess

from ClusterShell.NodeSet import NodeSet

from clusterproof.cluster.network import pids_by_netns
from clusterproof.cluster.procs import alive, pid_from, proc_text, slurm_job_of

#: bound of each wait of ``up`` for a daemon or the nodes, and of each question
#: to slurmctld, in seconds. A wait ends as soon as its daemon is ready (or
#: its process is gone); the bound only turns a hang into an error, generous
#: for a loaded machine.
START_WAIT_S = 300


def _index(node):
    return int(node[1:]) if node[1:].isdigit() else 0


def by_state(states):
    """``[(state, NodeSet)]`` of ``{node: state}``, in the order of each
    state's first node: ``[('idle', n[1-1020]), ('down*', n[1021-1024])]``."""
    groups = {}
    for node in sorted(states, key=_index):
        groups.setdefault(states[node], []).append(node)
    return [(state, NodeSet.fromlist(nodes)) for state, nodes in groups.items()]


def summary(states):
    """``n[1-1020] idle, n[1021-1024] down*``: node states folded."""
    return ', '.join(f'{nodes} {state}' for state, nodes in by_state(states))


class ClusterStates:
    """The questions a cluster that is up answers (a part of ``Cluster``)."""

    def node_states(self):
        """{node: Slurm state} from sinfo, or {} when slurmctld does not answer."""
        try:
            proc = self._run(['sinfo', '-N', '-h', '-o', '%N %T'], check=False,
                             timeout=START_WAIT_S)
        except subprocess.TimeoutExpired:
            return {}
        if proc.returncode != 0:
            return {}
        states = {}
        for line in proc.stdout.splitlines():
            parts = line.split()
            if len(parts) == 2:
                states[parts[0]] = parts[1]
        return states

    def queued_jobs(self):
        """Ids of the jobs in the queue (pending, running, completing), or
        None when slurmctld does not answer."""
        try:
            proc = self._run(['squeue', '-h', '-o', '%i'], check=False, timeout=START_WAIT_S)
        except subprocess.TimeoutExpired:
            return None
        return set(proc.stdout.split()) if proc.returncode == 0 else None

    def strays(self):
        """Processes in the node namespaces that nothing accounts for: neither
        the node's slurmd nor part of a job in the queue (ranks left spinning
        after a node failure, a step daemon of a job Slurm has forgotten, a
        program started in a node by hand). ``[{node, pid, command, job}]``,
        ``job`` being the Slurm job the process names (None: none). Empty
        when slurmctld does not answer: then nothing can be told apart."""
        jobs = self.queued_jobs()
        if jobs is None:
            return []
        found = []
        inside = pids_by_netns([self.inst.netns(i) for i in range(1, self.spec.nodes + 1)])
        for i, node in enumerate(self.spec.names, 1):
            slurmd = pid_from(self.lay.slurmd_pid_file(node))
            for pid in inside[self.inst.netns(i)]:
                if pid == slurmd or not alive(pid):
                    continue
                job = slurm_job_of(pid)
                if job in jobs:
                    continue
                command = (proc_text(pid, 'cmdline') or '').strip() or '?'
                found.append({'node': node, 'pid': pid, 'command': command[:120], 'job': job})
        return found

    def problems(self, states=None, strays=None):
        """What is wrong with a cluster that is up, one line each: nodes down,
        drained, failing or not responding (``down*``), and
        :meth:`strays`."""
        states = self.node_states() if states is None else states
        strays = self.strays() if strays is None else strays
        lines = [f'{nodes} {"is" if len(nodes) == 1 else "are"} {state}'
                 for state, nodes in by_state(states)
                 if state.endswith('*') or any(w in state for w in ('down', 'drain', 'fail'))]
        for s in strays:
            whose = (f'of job {s["job"]}, no longer in the queue' if s['job']
                     else 'in no Slurm job')
            lines.append(f'stray process on {s["node"]}: pid {s["pid"]} {whose}: {s["command"]}')
        return lines

    def stop_strays(self, strays, timeout=10):
        """Kill the processes :meth:`strays` found (SIGTERM, then SIGKILL)."""
        self._stop([(f'pid {s["pid"]} in a node namespace', s['pid']) for s in strays],
                   lambda text: None, check=False, timeout=timeout)

    def status(self):
        """Plain data: daemons (pid, alive), nodes and their Slurm states, network."""
        daemons = {}
        for name, pid in self.daemon_pids().items():
            daemons[name] = {'pid': pid, 'alive': self.our_pid(name, pid)}
        up = self.is_up()
        states = self.node_states() if up else {}
        strays = self.strays() if up else []
        return {'cluster': self.inst.cluster, 'instance': self.inst.k,
                'run_dir': str(self.spec.run_dir),
                'up': up, 'daemons': daemons, 'nodes': states, 'strays': strays,
                'problems': self.problems(states, strays) if up else [],
                'network': self.network_leftovers()}
