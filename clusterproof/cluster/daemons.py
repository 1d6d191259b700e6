"""The daemons of the local cluster: munged, MariaDB, slurmdbd, slurmctld and
one slurmd per node, started by ``up`` in this order and stopped by ``down``
in reverse (:mod:`clusterproof.cluster.down`: only the processes ``up``
started, pid files and command lines checked). Node ``n<i>``'s slurmd runs in the node's namespaces
(:mod:`clusterproof.cluster.network`); everything the cluster writes lives
under its run directory (:class:`clusterproof.cluster.config.Layout`).
"""

import json
import os
import secrets
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from ClusterShell.NodeSet import NodeSet

from clusterproof import ClusterproofError
from clusterproof.cluster.config import Layout, describe, env_lines, render_all
from clusterproof.cluster.like import DOWN, gpu_files
from clusterproof.cluster.limits import prepare_host
from clusterproof.hostlist import compress
from clusterproof.cluster.network import (in_node, make_network, netns_list, network_leftovers,
                                          pids_by_netns, port_free, port_open)
from clusterproof.cluster.procs import (alive, is_ours, pid_from, run, write_file, write_private)
from clusterproof.cluster.down import ClusterDown
from clusterproof.cluster.rundir import check_run_dir, make_run_dir, operation_lock
from clusterproof.cluster.states import START_WAIT_S, ClusterStates, summary

NEEDS_ROOT = ('needs root (network namespaces, bridge, daemons): run as root, '
              'e.g. sudo clusterproof cluster up')
#: daemons in the order ``up`` starts them; ``down`` stops them in reverse
DAEMONS = ['munged', 'mariadb', 'slurmdbd', 'slurmctld']
#: slurmd started at once (each start is a few short processes and a registration)
START_PARALLEL = 32
#: the start of every Slurm daemon (shell): SIGPIPE ignored, inherited through exec, as
#: systemd starts a service (IgnoreSIGPIPE=yes, its default; Debian's slurmd.service
#: keeps it). slurmd 22.05 blocks SIGPIPE only after its auth/munge plugin has
#: checked munged (a credential encoded, then decoded, before it forks): when
#: munged has closed the connection first (no request within its 2 s, the
#: client held up on a loaded machine), that write killed the start (exit -13);
#: ignored, the write fails and libmunge tries again.
IGNORE_SIGPIPE = "trap '' PIPE; "
#: a progress line (stderr) at most this often during a long wait of ``up``
PROGRESS_EVERY_S = 2.0
PROGRAMS = ['munged', 'mariadbd', 'mariadb-install-db', 'slurmdbd', 'slurmctld', 'slurmd',
            'sacctmgr', 'sinfo', 'ip', 'nsenter', 'unshare', 'taskset']


def start_status(returncode):
    """How a start ended, from its return code (``subprocess``: -N is
    signal N): ``killed by SIGPIPE (exit -13)``, ``exit status 1``."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f'signal {-returncode}'
        return f'killed by {name} (exit {returncode})'
    return f'exit status {returncode}'


#: the GPU device files: root's, as slurmd is, and writable by no one else
#: (nothing in the cluster's directory is: tests/suite/test_reliability_users.py)
GPU_MODE = 0o660


def make_gpu_devices(gpu_dir, count):
    """``gpu_dir/gpu0``.. ``gpu<count-1>``, standing for GPU devices (gres.conf
    ``File=``): character devices with /dev/null's numbers (1, 3), as a GPU's
    /dev/nvidia<i> is a character device, so slurmd 22.05 takes them without
    a word and whatever opens one opens /dev/null. Where mknod is not permitted
    (no CAP_MKNOD): empty files, which slurmd takes too, logging "is not a
    valid character or block device" for each. Returns which of the two."""
    gpu_dir.mkdir(exist_ok=True)
    kind = 'character devices'
    for j in range(count):
        path = gpu_dir / f'gpu{j}'
        if path.is_char_device():
            path.chmod(GPU_MODE)
            continue
        if path.is_symlink() or path.exists():
            path.unlink()       # an empty file of an earlier run
        try:
            os.mknod(path, stat.S_IFCHR | GPU_MODE, os.makedev(1, 3))
            path.chmod(GPU_MODE)
        except PermissionError:
            path.touch()
            kind = 'empty files: mknod not permitted'
    return kind


def _last_line(path):
    """The last line of text of a log file, or None (empty, missing)."""
    try:
        lines = [ln.strip() for ln in Path(path).read_text(errors='replace').splitlines()
                 if ln.strip()]
    except OSError:
        return None
    return lines[-1] if lines else None


class Cluster(ClusterStates, ClusterDown):
    """A local cluster at a run directory: ``up`` here, ``down``
    (:class:`~clusterproof.cluster.down.ClusterDown`) and what it says of itself
    (:class:`~clusterproof.cluster.states.ClusterStates`) in their modules."""

    def __init__(self, spec, log=print, progress=None):
        self.spec = spec
        self.inst = spec.inst
        self.lay = Layout(spec.run_dir)
        self.log = log
        self.progress = progress        # where k/N lines of long waits go (stderr), or None
        self._last_progress = 0.0
        self.env = dict(os.environ, SLURM_CONF=str(self.lay.slurm_conf))
        self._children = []     # processes started here, not daemonized
        self._t0 = None         # start of `up`, for the progress lines

    # ---- helpers
    def _run(self, cmd, check=True, **kw):
        return run(cmd, env=kw.pop('env', self.env), check=check, **kw)

    def _step(self, text):
        if self._t0 is None:
            self.log(f'  {text}')
        else:
            self.log(f'  [{time.monotonic() - self._t0:4.1f} s] {text}')

    def _say(self, text):
        """A line that must be seen during ``up`` but is not its result: on
        stderr with the command's progress lines (else with the others)."""
        (self.progress or self.log)(text)

    def _progress(self, text):
        """A progress line (k/N, what ``up`` waits for) every PROGRESS_EVERY_S
        of a long start: a short one prints none."""
        if self.progress is None or self._t0 is None:
            return
        t = time.monotonic()
        if t - max(self._last_progress, self._t0) >= PROGRESS_EVERY_S:
            self._last_progress = t
            self.progress(f'  [{t - self._t0:4.1f} s] {text}')

    def _wait(self, what, ready, timeout, logfile=None, pid_file=None, interval=0.05):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if ready():
                return
            # the daemon died; a pid file just created may not hold its pid yet
            pid = pid_from(pid_file) if pid_file is not None else None
            if pid is not None and not alive(pid):
                gone = f'{what} (pid {pid}) ended before it was ready'
                break
            time.sleep(interval)
        else:
            gone = f'{what} did not come up within {timeout:g} s'
        hint = f'; see {logfile}' if logfile else ''
        last = _last_line(logfile) if logfile else None
        raise ClusterproofError(f'{gone}{hint}' + (f' (last log line: {last})' if last else ''))

    # ---- state
    def daemon_pids(self):
        """{name: pid or None} of every daemon of this cluster, from pid files."""
        pids = {d: pid_from(self.lay.pid_file(d)) for d in DAEMONS}
        for name in self._node_munged():
            pids[name] = pid_from(self.lay.pid_file(name))
        for node in self.spec.names:
            pids[f'slurmd {node}'] = pid_from(self.lay.slurmd_pid_file(node))
        return pids

    def _program_of(self, name):
        return {'mariadb': 'mariadbd', 'munged': 'munged'}.get(name, name.split()[0])

    def _node_munged(self):
        """Names of the munged of the node groups (``munged g1`` ...)."""
        return [f'munged g{j}' for j, _, _ in self.spec.munge_groups]

    def _munge_socket_of(self, name):
        if name == 'munged':
            return self.lay.munge_socket
        return self.lay.munge_group_dir(int(name.split()[1][1:])) / self.lay.munge_socket.name

    def _marker_of(self, name):
        if name.startswith('munged'):
            return str(self._munge_socket_of(name))
        if name == 'mariadb':
            return str(self.lay.my_cnf)
        return str(self.lay.slurm_conf)     # slurmctld/slurmd: -f <conf>; slurmdbd: SLURM_CONF

    def our_pid(self, name, pid):
        return bool(pid) and alive(pid) and is_ours(pid, self._program_of(name),
                                                    self._marker_of(name))

    def is_up(self):
        return self.lay.marker.exists() and self.our_pid('slurmctld',
                                                         pid_from(self.lay.pid_file('slurmctld')))

    # ---- preflight
    def preflight(self):
        if os.geteuid() != 0:
            raise ClusterproofError(NEEDS_ROOT)
        missing = [p for p in PROGRAMS if not shutil.which(p)]
        if missing:
            raise ClusterproofError(f'missing programs: {", ".join(missing)}; install slurm-wlm '
                                    'slurmdbd munge '
                                    'mariadb-server iproute2 util-linux (make setup does)')
        probe = subprocess.run(['unshare', '--net', '--uts', '--mount', 'true'],
                               capture_output=True, text=True)
        if probe.returncode != 0:
            raise ClusterproofError('no network namespace support here '
                                    '(unshare --net --uts --mount failed: '
                                    f'{probe.stderr.strip() or probe.returncode}); '
                                    'run on a host or a privileged container')
        if not Path('/sys/fs/cgroup').is_dir():
            raise ClusterproofError('/sys/fs/cgroup is not mounted: slurmd needs it')
        for daemon, port in self.inst.ports.items():
            if daemon == 'slurmd':
                continue    # slurmd listens inside the node namespaces
            if not port_free(port):
                raise ClusterproofError(f'port {port} ({daemon} of instance {self.inst.k}) is in '
                                        f'use; stop what holds it (ss -ltnp sport = :{port}) '
                                        'or use another --instance')
        for parent in self.spec.run_dir.resolve().parents:
            if parent.exists() and not parent.stat().st_mode & 0o001:
                raise ClusterproofError(f'{parent} (above the run directory) is not searchable '
                                        f'by others (mode {parent.stat().st_mode & 0o777:o}): '
                                        'munged and ordinary users need '
                                        f'it; chmod o+x {parent} or choose another --run-dir')
        self._reclaim_stale_network()

    def _reclaim_stale_network(self):
        """Namespaces, links and bridge of this instance outlive its processes
        when these are killed (a session ended, an OOM kill, a reboot of the
        daemons but not of the host). With every port of the instance free
        (checked before) and no process left in its node namespaces, they are
        stale: remove them and say so. With a process still inside, refuse."""
        leftovers = self.network_leftovers()
        if not leftovers:
            return
        inside = [f'pid {pid} in {ns}' for ns, pids in
                  pids_by_netns([ns for ns in netns_list() if self.inst.owns_netns(ns)]).items()
                  for pid in pids]
        if inside:
            raise ClusterproofError(f'instance {self.inst.k} has leftovers '
                                    f'({", ".join(leftovers)}) with '
                                    f'processes still running ({", ".join(inside)}); '
                                    f'run: clusterproof cluster down --instance {self.inst.k}')
        removed = self._remove_network()
        self.log(f'removed leftovers of an earlier run of instance {self.inst.k} '
                 'whose processes are gone: '
                 f'{", ".join(removed)}')
        still = self.network_leftovers()
        if still:
            raise ClusterproofError(f'instance {self.inst.k}: could not remove leftovers '
                                    f'({", ".join(still)}); '
                                    f'remove them with ip netns del / ip link del')
        running = [n for n, pid in self.daemon_pids().items() if self.our_pid(n, pid)]
        if running:
            raise ClusterproofError(f'instance {self.inst.k} is partly up '
                                    f'({", ".join(running)} running); '
                                    f'run: clusterproof cluster down --instance {self.inst.k}')

    def network_leftovers(self):
        return network_leftovers(self.inst)

    # ---- up
    def up(self):
        if os.geteuid() != 0:
            raise ClusterproofError(NEEDS_ROOT)     # before the lock file, which is root's
        # at once, not after another up; again under the lock
        check_run_dir(self.spec.run_dir)
        with operation_lock(self.inst.k):
            return self._up()

    def _up(self):
        t0 = self._t0 = time.monotonic()
        if os.geteuid() != 0:
            raise ClusterproofError(NEEDS_ROOT)
        check_run_dir(self.spec.run_dir)    # before anything in it is read or written
        if self.is_up():
            self.log(f'cluster {self.inst.cluster} is already up '
                     f'(run directory {self.spec.run_dir})')
            return False
        self.preflight()
        net = self.spec.net
        self.log(f'starting cluster {self.inst.cluster}: {describe(self.spec)}, '
                 f'bridge{"s" if len(net.bridges) > 1 else ""} {",".join(net.bridges)} '
                 f'{net.subnet}, '
                 f'run directory {self.spec.run_dir}')
        for line in prepare_host(self.spec.nodes):
            self._step(line)
        try:
            self._prepare_files()
            self._start_munged()
            mariadb = self._start_mariadb()
            self._make_network()
            self._wait_mariadb(mariadb)
            self._start_slurmdbd()
            self._register_cluster()
            self._start_slurmctld()
            self._start_slurmds()
            self._wait_nodes_idle()
            self._recorded_states()
        except BaseException:
            self.log('  start failed: stopping what was started')
            self._down(quiet=True)
            # MariaDB may not have written its pid file yet: stop it by its process
            for proc in self._children:
                if proc.poll() is None:
                    proc.terminate()
                    try:
                        proc.wait(timeout=15)
                    except subprocess.TimeoutExpired:
                        proc.kill()
            raise
        write_file(self.lay.marker, (json.dumps(self.spec.to_dict()) + '\n').encode(), 0o644)
        self.log(f'cluster {self.inst.cluster} is up in {time.monotonic() - t0:.1f} s; '
                 'for client commands:')
        for line in env_lines(self.spec):
            self.log(line)
        return True

    def _prepare_files(self):
        lay = self.lay
        make_run_dir(lay.root)
        lay.root.chmod(0o755)           # ordinary users read slurm.conf and reach the munge socket
        for d, mode in [(lay.etc, 0o755), (lay.run, 0o755), (lay.log, 0o755), (lay.state, 0o700),
                        (lay.spool, 0o755), (lay.tmp, 0o755), (lay.munge_dir, 0o711),
                        *[(lay.munge_group_dir(j), 0o711) for j, _, _ in self.spec.munge_groups]]:
            d.mkdir(exist_ok=True)
            d.chmod(mode)
        for node in self.spec.names:
            (lay.spool / node).mkdir(exist_ok=True)
            tmp = lay.tmp / node
            tmp.mkdir(exist_ok=True)
            tmp.chmod(0o1777)
        gpus = gpu_files(self.spec.like) if self.spec.like is not None else 0
        if gpus:
            kind = make_gpu_devices(lay.gpu_dir, gpus)
            self._step(f'{gpus} GPU devices ({kind}) in {lay.gpu_dir}')
        # stale pid files of an earlier run would confuse the waits below
        for f in lay.run.glob('*.pid'):
            f.unlink()
        if not lay.munge_key.exists():
            write_private(lay.munge_key, secrets.token_bytes(1024))
        lay.munge_key.chmod(0o600)
        if not lay.db_pass.exists():
            write_private(lay.db_pass, secrets.token_hex(16).encode())
        texts = render_all(self.spec, socket.gethostname(), lay.db_pass.read_text().strip())
        for name, text in texts.items():
            path = lay.etc / name
            private = name in ('slurmdbd.conf', 'mariadb-init.sql')
            if private:
                write_private(path, text.encode())
            else:
                write_file(path, text.encode(), 0o755 if name.endswith('.sh') else 0o644)
        self._step(f'configuration written to {lay.etc}')

    def _start_munged(self):
        """The controller's munged, then one per node group of a large
        cluster (same key: a credential made by one is read by all)."""
        lay = self.lay
        names = ['munged', *self._node_munged()]
        for name in names:
            socket_path = self._munge_socket_of(name)
            threads = max(4, self.spec.nodes // 64) if name == 'munged' else 4
            self._run(['munged', f'--socket={socket_path}', f'--key-file={lay.munge_key}',
                       f'--pid-file={lay.pid_file(name)}',
                       f'--log-file={lay.log / (name.replace(" ", "-") + ".log")}',
                       f'--seed-file={socket_path.parent / "munged.seed"}',
                       f'--num-threads={threads}'])
        for name in names:
            socket_path = self._munge_socket_of(name)
            self._wait(name, lambda: socket_path.exists() and lay.pid_file(name).exists(),
                       START_WAIT_S, lay.log / (name.replace(' ', '-') + '.log'))
        groups = f' and {len(names) - 1} for the node groups' if len(names) > 1 else ''
        self._step(f'munged running (socket {lay.munge_socket}){groups}')

    def _start_mariadb(self):
        lay = self.lay
        if not (lay.db / 'mysql').is_dir():
            if lay.db.exists():
                shutil.rmtree(lay.db)
            self._run(['mariadb-install-db', f'--defaults-file={lay.my_cnf}', '--user=root',
                       '--auth-root-authentication-method=socket', '--skip-test-db'])
            lay.db.chmod(0o700)
            self._step(f'MariaDB data directory created in {lay.db}')
        lay.db.chmod(0o700)
        log = open(lay.log / 'mariadb.out', 'ab')
        proc = subprocess.Popen(['mariadbd', f'--defaults-file={lay.my_cnf}',
                                 f'--init-file={lay.db_init}'],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                start_new_session=True, env=self.env)
        log.close()
        self._children.append(proc)
        return proc

    def _wait_mariadb(self, proc):
        port = self.inst.port('mariadb')

        def ready():
            if proc.poll() is not None:
                raise ClusterproofError(f'MariaDB exited (status {proc.returncode}); '
                                        f'see {self.lay.log / "mariadb.log"}')
            return self.lay.pid_file('mariadb').exists() and port_open(port)
        self._wait('MariaDB', ready, START_WAIT_S, self.lay.log / 'mariadb.log')
        self._step(f'MariaDB running (127.0.0.1:{port}, pid {proc.pid})')

    def _make_network(self):
        inst, net = self.inst, self.spec.net
        make_network(net, env=self.env)
        self._step(f'network: bridge{"s" if len(net.bridges) > 1 else ""} {",".join(net.bridges)} '
                   f'{net.bridge_addr}/{net.prefix}, '
                   f'namespaces {inst.netns(1)}..{inst.netns(self.spec.nodes)}')

    def _start_service(self, argv):
        """Run ``argv``, a Slurm daemon that forks and returns, with SIGPIPE
        ignored as slurmd (:data:`IGNORE_SIGPIPE`): slurmdbd too checks munged
        before it blocks SIGPIPE (after it forked: the daemon would die)."""
        proc = self._run(['sh', '-c', f'{IGNORE_SIGPIPE}exec "$0" "$@"', *argv], check=False)
        if proc.returncode != 0:
            out = (proc.stdout + proc.stderr).strip()
            raise ClusterproofError(f'{argv[0]} failed to start ({start_status(proc.returncode)})'
                                    + (f': {out.splitlines()[-1]}' if out else ''))

    def _start_slurmdbd(self):
        lay = self.lay
        self._start_service(['slurmdbd'])   # reads slurmdbd.conf from the directory of $SLURM_CONF
        port = self.inst.port('slurmdbd')
        self._wait('slurmdbd', lambda: lay.pid_file('slurmdbd').exists() and port_open(port),
                   START_WAIT_S, lay.log / 'slurmdbd.log', pid_file=lay.pid_file('slurmdbd'))
        self._step(f'slurmdbd running (port {port}, pid {pid_from(lay.pid_file("slurmdbd"))})')

    def _register_cluster(self):
        proc = self._run(['sacctmgr', '-i', 'add', 'cluster', self.inst.cluster], check=False)
        out = (proc.stdout + proc.stderr).strip()
        if proc.returncode != 0 and 'already exist' not in out.lower():
            raise ClusterproofError(f'sacctmgr add cluster {self.inst.cluster} failed: '
                                    f'{out.splitlines()[-1] if out else proc.returncode}')
        self._step(f'cluster {self.inst.cluster} registered in the accounting database')
        # on the cluster's root account: the limit counts the jobs of every
        # association below it (slurm.conf enforces it: AccountingStorageEnforce).
        # Without --max-submit-jobs, -1 clears the one an earlier `up` set: the
        # accounting database outlives `down`.
        limit = f'MaxSubmitJobs={self.spec.max_submit_jobs or -1}'
        proc = self._run(['sacctmgr', '-i', 'modify', 'account', 'where', 'name=root',
                          f'cluster={self.inst.cluster}', 'set', limit], check=False)
        out = (proc.stdout + proc.stderr).strip()
        if proc.returncode != 0 and 'nothing modified' not in out.lower():
            raise ClusterproofError(f'sacctmgr could not set {limit} on account root of cluster '
                                    f'{self.inst.cluster}: '
                                    f'{out.splitlines()[-1] if out else proc.returncode}')
        if self.spec.max_submit_jobs:
            self._step(f'{limit} on account root of cluster {self.inst.cluster}')

    def _start_slurmctld(self):
        lay = self.lay
        # -c: nothing of an earlier life of this run directory is recovered. Every node
        # starts in the state slurm.conf gives it (a node drained in an earlier run, a job
        # whose tasks outlived `down`: "Kill task failed", would stay drained, and the wait
        # for idle nodes would end in an error), and no job is (an allocation left open
        # at `down` would hold its nodes, running, in the next life)
        self._start_service(['slurmctld', '-c', '-i', '-f', str(lay.slurm_conf)])
        port = self.inst.port('slurmctld')
        self._wait('slurmctld', lambda: lay.pid_file('slurmctld').exists() and port_open(port),
                   START_WAIT_S, lay.log / 'slurmctld.log', pid_file=lay.pid_file('slurmctld'))
        self._step(f'slurmctld running (port {port}, pid {pid_from(lay.pid_file("slurmctld"))})')

    def node_cpus(self, i):
        """Processors of this machine node ``n<i>`` runs on: as many as it
        has CPUs in Slurm, the nodes taking the machine's processors in turn;
        all of them when it has as many CPUs as the machine or more."""
        host = sorted(os.sched_getaffinity(0))
        hardware = self.spec.hardware
        cpus = hardware[i - 1][0]
        if cpus >= len(host):
            return host
        first = sum(c for c, _ in hardware[:i - 1])
        return sorted({host[(first + j) % len(host)] for j in range(cpus)})

    def slurmd_argv(self, i):
        """argv starting node ``n<i>``'s slurmd in the node's namespaces, bound
        (CPU affinity, inherited by its job steps) to the node's processors,
        with SIGPIPE ignored (:data:`IGNORE_SIGPIPE`)."""
        cpus = ','.join(map(str, self.node_cpus(i)))
        group = self.spec.munge_group_of(i)
        mounts = [(self.lay.munge_group_dir(group), self.lay.munge_dir)] if group else []
        return in_node(self.inst, i, self.lay.hosts,
                       f'{IGNORE_SIGPIPE}exec taskset -c {cpus} slurmd '
                       f'-f {shlex.quote(str(self.lay.slurm_conf))}', mounts,
                       name=self.spec.name_of(i))

    def _try_slurmd(self, i):
        """One start of node ``n<i>``'s slurmd (its first process returns once
        the daemon has forked): None when it started, else what went wrong."""
        try:
            proc = subprocess.run(self.slurmd_argv(i), env=self.env, stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=START_WAIT_S)
        except subprocess.TimeoutExpired:
            return f'no exit within {START_WAIT_S} s'
        if proc.returncode == 0:
            return None
        out = (proc.stdout + proc.stderr).strip()
        return start_status(proc.returncode) + (f', saying: {out.splitlines()[-1]}' if out else '')

    def start_slurmd(self, i):
        """Start node ``n<i>``'s slurmd; a start that fails is tried once more
        (a loaded machine: said on stderr). A second failure raises, naming the
        node, how its start ended and the last line of its log."""
        node = self.spec.name_of(i)
        why = self._try_slurmd(i)
        if why is None:
            return
        self._say(f'  slurmd of {node} failed to start ({why}); starting it once more')
        why = self._try_slurmd(i)
        if why is None:
            return
        log = self.lay.log / f'slurmd-{node}.log'
        last = _last_line(log)
        raise ClusterproofError(f'slurmd of {node} failed to start, twice: {why}; '
                                + (f'last line of {log}: {last}' if last
                                   else f'{log} is empty or missing'))

    def _start_slurmds(self):
        """Start every slurmd, START_PARALLEL at a time; then wait for their
        pid files. Stops at the first that fails twice."""
        lay, n = self.lay, self.spec.nodes
        pool = ThreadPoolExecutor(min(START_PARALLEL, n))
        try:
            futures = [pool.submit(self.start_slurmd, i) for i in range(1, n + 1)]
            for done, fut in enumerate(as_completed(futures), 1):
                fut.result()
                self._progress(f'slurmd started {done}/{n}')
        finally:
            pool.shutdown(cancel_futures=True)
        for node in self.spec.names:
            pf = lay.slurmd_pid_file(node)
            self._wait(f'slurmd of {node}', pf.exists, START_WAIT_S, lay.log / f'slurmd-{node}.log')
        self._step(f'{n} slurmd running ({self.spec.hostlist})')

    def _recorded_states(self):
        """Nodes the description records DOWN or DRAIN made so, with the
        recorded reason. A DOWN node's slurmd is stopped first: with
        ReturnToService=2 a DOWN node that answers a ping is back in service
        within seconds; it stays DOWN* (not responding), as a dead node is."""
        like = self.spec.like
        marked = [n for n in like.nodes if n.state] if like is not None else []
        down = [f'slurmd {n.name}' for n in marked if n.state == DOWN]
        if down:
            self._stop([(name, self._pid_of(name)) for name in down], lambda text: None)
        for node in marked:
            proc = self._run(['scontrol', 'update', f'nodename={node.name}', f'state={node.state}',
                              f'reason={node.reason}'], check=False, timeout=START_WAIT_S)
            if proc.returncode != 0:
                out = (proc.stdout + proc.stderr).strip()
                raise ClusterproofError(f'scontrol could not make node {node.name} {node.state} '
                                        f'as {like.source} records: {out or proc.returncode}')
        for state in sorted({n.state for n in marked}):
            names = [n.name for n in marked if n.state == state]
            self._step(f'{state} as recorded: {compress(names)}')

    def _wait_nodes_idle(self):
        want = set(self.spec.names)
        last = {}

        def ready():
            nonlocal last
            last = self.node_states()
            waiting = {}
            for node in want:
                state = last.get(node, 'unknown to sinfo')
                if state.rstrip('*') not in ('idle', 'mixed', 'allocated'):
                    waiting.setdefault(state, []).append(node)
            if waiting:
                self._progress(f'nodes idle {len(want) - sum(map(len, waiting.values()))}'
                               f'/{len(want)}; waiting for '
                               + ', '.join(f'{NodeSet.fromlist(nodes)} ({state})'
                                           for state, nodes in sorted(waiting.items())))
            return not waiting
        try:
            # sinfo over many nodes is work for slurmctld too: ask less often
            self._wait('nodes', ready, START_WAIT_S, self.lay.log / 'slurmctld.log',
                       interval=0.05 if len(want) <= 32 else 0.5)
        except ClusterproofError:
            raise ClusterproofError(f'nodes not idle within {START_WAIT_S} s '
                                    f'({summary(last) or "sinfo gave nothing"}); '
                                    f'see {self.lay.log}') from None
        self._step(f'nodes idle: {self.spec.hostlist}')
