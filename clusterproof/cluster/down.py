"""Bringing a local cluster down: its daemons stopped in the reverse order of
``up`` (only the processes this run directory started: pid files, command
line checked), every process in its node namespaces, then its namespaces,
links and bridge removed; refused while a slurmd of the same instance runs
that another mount namespace started.

:class:`ClusterDown` is a part of :class:`clusterproof.cluster.daemons.Cluster`
(its spec, layout, ``our_pid`` and ``_step`` are the cluster's).
"""

import os
import signal
import time

from ClusterShell.NodeSet import NodeSet

from clusterproof import ClusterproofError
from clusterproof.cluster.network import netns_list, pids_by_netns, remove_network
from clusterproof.cluster.procs import alive, pid_from, proc_text
from clusterproof.cluster.rundir import check_run_dir, operation_lock


def _fold(names):
    """Daemon names for one line: ``slurmd n1``, ``slurmd n2``... as
    ``slurmd n[1-2]``, ``pid 7 in a node namespace``... as a count of
    processes; more than 20 other names as the first 20 and a count."""
    slurmds = [n.split()[1] for n in names if n.startswith('slurmd ') and len(n.split()) == 2]
    pids = [n.split()[1] for n in names if n.startswith('pid ')]
    rest = [n for n in names
            if not (n.startswith('slurmd ') and len(n.split()) == 2) and not n.startswith('pid ')]
    if slurmds:
        rest.append(f'slurmd {NodeSet.fromlist(slurmds)}')
    if len(pids) == 1:
        rest.append(f'pid {pids[0]} in a node namespace')
    elif pids:
        rest.append(f'{len(pids)} processes in the node namespaces')
    more = f' and {len(rest) - 20} more' if len(rest) > 20 else ''
    return ', '.join(rest[:20]) + more


class ClusterDown:
    """``down`` and the stopping of processes (a part of ``Cluster``)."""

    def down(self, quiet=False, force=False):
        """Stop this cluster's daemons and every process in its node
        namespaces; remove namespaces, links and bridge. Safe to repeat.
        Refuses (unless ``force``) when a slurmd in the instance's node
        namespaces is not one this run directory started: a cluster of the
        same instance brought up from another mount namespace (a test session
        under ``scripts/run-tests`` has a /tmp of its own), whose run
        directory and lock files are not visible from here."""
        check_run_dir(self.spec.run_dir)
        with operation_lock(self.inst.k):
            check_run_dir(self.spec.run_dir)
            self._t0 = time.monotonic()
            foreign = self.foreign_slurmd()
            if foreign and not force:
                more = f' and {len(foreign) - 5} more' if len(foreign) > 5 else ''
                raise ClusterproofError(
                    f'instance {self.inst.k}: {len(foreign)} slurmd in its node namespaces '
                    f'({", ".join(f"pid {p} in {ns}" for ns, p in foreign[:5])}{more}) '
                    'were not started '
                    f'from {self.spec.run_dir} (no pid file there names them): a cluster of this '
                    f'instance brought up in another mount namespace, such as a test session under '
                    'scripts/run-tests. Bring it down from there, or use --force to stop it anyway')
            self._down(quiet)

    def foreign_slurmd(self):
        """``[(namespace, pid)]`` of the slurmd running in this instance's node
        namespaces whose pid no slurmd pid file of this run directory holds."""
        ours = ({pid_from(p) for p in self.lay.run.glob('slurmd-*.pid')} if self.lay.run.exists()
                else set())
        return [(ns, pid) for ns, pids in
                pids_by_netns([ns for ns in netns_list() if self.inst.owns_netns(ns)]).items()
                for pid in pids
                if pid not in ours and (proc_text(pid, 'comm') or '').strip() == 'slurmd']

    def _down(self, quiet):
        say = (lambda text: None) if quiet else self._step
        t0 = time.monotonic()
        nodes = self._known_nodes()
        # 1. slurmd and slurmctld, plus whatever runs in the node namespaces (job steps)
        first = [f'slurmd {n}' for n in nodes] + ['slurmctld']
        self._stop([(name, self._pid_of(name)) for name in first], say)
        ns_pids = [pid for pids in pids_by_netns([ns for ns in netns_list()
                                                  if self.inst.owns_netns(ns)]).values()
                   for pid in pids]
        if ns_pids:
            left = [f'{p} ({(proc_text(p, "comm") or "?").strip()})' for p in ns_pids if alive(p)]
            self._stop([(f'pid {p} in a node namespace', p) for p in ns_pids], say, check=False)
            if left:
                more = f' and {len(left) - 20} more' if len(left) > 20 else ''
                say(f'stopped {len(left)} process(es) still running in the node namespaces: '
                    f'{", ".join(left[:20])}{more}')
        # 2. accounting, then database and munge
        self._stop([('slurmdbd', self._pid_of('slurmdbd'))], say)
        self._stop([('mariadb', self._pid_of('mariadb')),
                    *[(name, self._pid_of(name))
                      for name in ['munged', *self._known_munged()]]], say)
        # 3. network
        removed = self._remove_network()
        if removed:
            say(f'removed {", ".join(removed)}')
        for f in list(self.lay.run.glob('*.pid')) if self.lay.run.exists() else []:
            f.unlink()
        # every process of the cluster is gone: a socket left is stale (a job step's in
        # spool/n<i>/ when the step was killed; slurmd would try it at its next start)
        if self.lay.root.is_dir():
            for path in self.lay.root.rglob('*'):
                if path.is_socket():
                    path.unlink()
        if self.lay.marker.exists():
            self.lay.marker.unlink()
        if not quiet:
            self.log(f'cluster {self.inst.cluster} is down ({time.monotonic() - t0:.1f} s); '
                     f'state kept in {self.spec.run_dir}')

    def _known_munged(self):
        """The node groups' munged of this spec and of any pid file left."""
        names = set(self._node_munged())
        if self.lay.run.exists():
            names |= {f'munged {p.stem[len("munged-"):]}'
                      for p in self.lay.run.glob('munged-g*.pid')}
        return sorted(names, key=lambda n: int(n.split()[1][1:]))

    def _known_nodes(self):
        nodes = set(self.spec.names)
        if self.lay.run.exists():
            nodes |= {p.stem[len('slurmd-'):] for p in self.lay.run.glob('slurmd-*.pid')}
        return sorted(nodes, key=lambda n: int(n[1:]) if n[1:].isdigit() else 0)

    def _pid_of(self, name):
        if name.startswith('slurmd '):
            return pid_from(self.lay.slurmd_pid_file(name.split()[1]))
        return pid_from(self.lay.pid_file(name))

    def _stop(self, named_pids, say, check=True, timeout=10):
        targets = []
        for name, pid in named_pids:
            if not pid or not alive(pid):
                continue
            if check and not self.our_pid(name, pid):
                say(f'{name}: pid {pid} is not ours (command line does not match); left alone')
                continue
            try:
                os.kill(pid, signal.SIGTERM)
                targets.append((name, pid))
            except ProcessLookupError:
                pass
        end = time.monotonic() + timeout
        while targets and time.monotonic() < end:
            targets = [(n, p) for n, p in targets if alive(p)]
            if targets:
                time.sleep(0.05)
        killed = []
        for name, pid in targets:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(name if name.startswith('pid ') else f'{name} (pid {pid})')
            except ProcessLookupError:
                pass
        if killed:
            say(f'killed after {timeout} s: {_fold(killed)}')
        stopped = [n for n, p in named_pids if p and not n.startswith('pid ')]
        if stopped:
            say(f'stopped {_fold(stopped)}')

    def _remove_network(self):
        return remove_network(self.inst)
