"""The local Slurm cluster: real Slurm daemons on this machine, one compute
node per network namespace.

``up`` starts, in this order: munged, MariaDB (own data directory, socket and
port, on 127.0.0.1), slurmdbd (so ``sacct`` works), registers the cluster with
``sacctmgr``, slurmctld, and one slurmd per node. Node ``n<i>`` runs in its
own network, hostname (UTS) and mount namespace, with an address on a bridge
and a private hosts file bind-mounted over ``/etc/hosts``. ``down`` stops
only the processes ``up`` started (pid files, command line checked), then
removes the namespaces, links and bridge.

Several clusters coexist through *instances* K in 0..7: instance K has its
own bridge ``cpbr<K>``, subnet ``198.18.0.<32K>/27``, ports, namespace names
``cp<K>n<i>``, cluster name ``cp<K>`` and run directory. Everything the
cluster writes lives under the run directory; nothing goes to /etc.

The pure parts (addresses, ports, host lists, configuration rendering) are
plain functions over plain data; the rest runs programs.
"""

import contextlib
import dataclasses
import fcntl
import ipaddress
import json
import os
import secrets
import shutil
import signal
import socket
import string
import subprocess
import time
from pathlib import Path

from clusterproof import ClusterproofError
from clusterproof.site.hostlist import compress
from clusterproof.paths import REPO

TEMPLATES = REPO / 'slurm' / 'local-cluster'
NETWORK = ipaddress.ip_network('198.18.0.0/24')
INSTANCES = range(8)
SUBNET_PREFIX = 27                 # 32 addresses per instance
MAX_NODES = 29                     # .32K+2 .. .32K+30 (.32K+1 is the bridge)
BASE_PORT = 16800
PORT_OFFSETS = {'slurmctld': 1, 'slurmd': 2, 'slurmdbd': 3, 'mariadb': 4}
DEFAULT_NODES, DEFAULT_CPUS, DEFAULT_MEM_MIB = 4, 2, 2048
DB_NAME = 'slurm_acct_db'
DB_USER = 'slurm'

NEEDS_ROOT = 'needs root (network namespaces, bridge, daemons): run as root, e.g. sudo clusterproof cluster up'
#: daemons in the order ``up`` starts them; ``down`` stops them in reverse
DAEMONS = ['munged', 'mariadb', 'slurmdbd', 'slurmctld']
PROGRAMS = ['munged', 'mariadbd', 'mariadb-install-db', 'slurmdbd', 'slurmctld', 'slurmd',
            'sacctmgr', 'sinfo', 'ip', 'nsenter', 'unshare']


# ---------------------------------------------------------------- pure parts

@dataclasses.dataclass(frozen=True)
class Instance:
    """Names, addresses and ports of instance ``k``; nothing else."""
    k: int

    def __post_init__(self):
        if self.k not in INSTANCES:
            raise ClusterproofError(f'instance {self.k} is out of range: use 0..{INSTANCES[-1]}')

    @property
    def cluster(self):
        return f'cp{self.k}'

    @property
    def bridge(self):
        return f'cpbr{self.k}'

    @property
    def subnet(self):
        return ipaddress.ip_network(f'198.18.0.{32 * self.k}/{SUBNET_PREFIX}')

    @property
    def bridge_addr(self):
        return str(self.subnet.network_address + 1)

    def node_addr(self, i):
        """Address of node ``n<i>`` (i from 1)."""
        if not 1 <= i <= MAX_NODES:
            raise ClusterproofError(f'node n{i} is out of range: an instance has at most {MAX_NODES} nodes')
        return str(self.subnet.network_address + 1 + i)

    def netns(self, i):
        return f'cp{self.k}n{i}'

    def veth(self, i):
        """Name of the root-namespace end of node ``n<i>``'s link."""
        return f'cp{self.k}n{i}h'

    def port(self, daemon):
        return BASE_PORT + 10 * self.k + PORT_OFFSETS[daemon]

    @property
    def ports(self):
        return {d: self.port(d) for d in PORT_OFFSETS}

    def default_run_dir(self):
        return Path(f'/tmp/clusterproof-cluster{self.k}')


def users_lock_path(k):
    """Lock file of instance ``k`` held shared by whoever uses the cluster
    for a while (a test session); ``down`` refuses while it is held."""
    return Path(f'/tmp/clusterproof-cluster{k}.lock')


def in_use(k):
    """True if something holds the users lock of instance ``k``."""
    path = users_lock_path(k)
    if not path.exists():
        return False
    with open(path) as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(f, fcntl.LOCK_UN)
    return False


@contextlib.contextmanager
def operation_lock(k):
    """One ``up`` or ``down`` of instance ``k`` at a time."""
    with open(f'/tmp/clusterproof-cluster{k}.op.lock', 'a') as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def node_names(nodes):
    return [f'n{i}' for i in range(1, nodes + 1)]


def hostlist(nodes):
    """Slurm host list of nodes n1..n<nodes>: ``n1`` or ``n[1-4]``."""
    if nodes < 1:
        raise ClusterproofError(f'a cluster needs at least one node, not {nodes}')
    return compress(node_names(nodes))


def run_dir_for(k, run_dir=None):
    """--run-dir, else $CLUSTERPROOF_CLUSTER_DIR, else /tmp/clusterproof-cluster<K>."""
    if run_dir:
        return Path(run_dir).resolve()
    if os.environ.get('CLUSTERPROOF_CLUSTER_DIR'):
        return Path(os.environ['CLUSTERPROOF_CLUSTER_DIR']).resolve()
    return Instance(k).default_run_dir()


@dataclasses.dataclass(frozen=True)
class Spec:
    """What ``up`` builds."""
    instance: int = 0
    nodes: int = DEFAULT_NODES
    cpus: int = DEFAULT_CPUS
    mem: int = DEFAULT_MEM_MIB      # MiB per node
    run_dir: Path = None

    def __post_init__(self):
        inst = Instance(self.instance)
        if not 1 <= self.nodes <= MAX_NODES:
            raise ClusterproofError(f'--nodes {self.nodes}: use 1..{MAX_NODES}')
        if self.cpus < 1:
            raise ClusterproofError(f'--cpus-per-node {self.cpus}: use 1 or more')
        if self.mem < 64 * self.cpus:
            raise ClusterproofError(f'--mem-per-node {self.mem} MiB: use at least 64 MiB per CPU '
                                    f'({64 * self.cpus} MiB for {self.cpus} CPUs)')
        if self.run_dir is None:
            object.__setattr__(self, 'run_dir', inst.default_run_dir())
        object.__setattr__(self, 'run_dir', Path(self.run_dir))

    @property
    def inst(self):
        return Instance(self.instance)

    def to_dict(self):
        return {'instance': self.instance, 'nodes': self.nodes, 'cpus': self.cpus,
                'mem': self.mem, 'run_dir': str(self.run_dir)}


class Layout:
    """Where each file of a cluster lives under its run directory."""

    def __init__(self, run_dir):
        self.root = Path(run_dir)
        self.etc = self.root / 'etc'
        self.slurm_conf = self.etc / 'slurm.conf'
        self.slurmdbd_conf = self.etc / 'slurmdbd.conf'   # next to slurm.conf: slurmdbd looks there
        self.my_cnf = self.etc / 'my.cnf'
        self.db_init = self.etc / 'mariadb-init.sql'
        self.hosts = self.etc / 'hosts'
        self.munge_key = self.etc / 'munge.key'
        self.db_pass = self.etc / 'db.pass'
        self.munge_dir = self.root / 'munge'
        self.munge_socket = self.munge_dir / 'munge.socket.2'
        self.run = self.root / 'run'
        self.log = self.root / 'log'
        self.state = self.root / 'state'
        self.spool = self.root / 'spool'
        self.tmp = self.root / 'tmp'
        self.db = self.root / 'db'
        self.marker = self.root / 'cluster.json'

    def pid_file(self, daemon):
        return self.run / f'{daemon}.pid'

    def slurmd_pid_file(self, node):
        return self.run / f'slurmd-{node}.pid'


def template_values(spec, controller_host, db_pass='@DB_PASS@'):
    inst, lay = spec.inst, Layout(spec.run_dir)
    node_lines = '\n'.join(f'NodeName=n{i} NodeAddr={inst.node_addr(i)}'
                           for i in range(1, spec.nodes + 1))
    return {
        'cluster': inst.cluster, 'nodes': spec.nodes, 'cpus': spec.cpus, 'mem': spec.mem,
        'def_mem_per_cpu': spec.mem // spec.cpus,
        'run_dir': str(spec.run_dir), 'controller_host': controller_host,
        'bridge_addr': inst.bridge_addr, 'munge_socket': str(lay.munge_socket),
        'slurmctld_port': inst.port('slurmctld'), 'slurmd_port': inst.port('slurmd'),
        'slurmdbd_port': inst.port('slurmdbd'), 'mariadb_port': inst.port('mariadb'),
        'db_user': DB_USER, 'db_pass': db_pass, 'db_name': DB_NAME,
        'node_lines': node_lines, 'hostlist': hostlist(spec.nodes),
        'slurm_conf': str(lay.slurm_conf),
    }


def render(template_name, values, templates=TEMPLATES):
    """Fill ``${name}`` placeholders of a template in slurm/local-cluster/."""
    path = Path(templates) / template_name
    try:
        return string.Template(path.read_text()).substitute(values)
    except KeyError as err:
        raise ClusterproofError(f'{path}: placeholder ${{{err.args[0]}}} has no value') from None
    except ValueError as err:
        raise ClusterproofError(f'{path}: bad placeholder ({err})') from None


def render_hosts(spec, controller_host):
    inst = spec.inst
    lines = ['127.0.0.1 localhost', f'{inst.bridge_addr} {controller_host}']
    lines += [f'{inst.node_addr(i)} n{i}' for i in range(1, spec.nodes + 1)]
    return '\n'.join(lines) + '\n'


def render_all(spec, controller_host, db_pass):
    """{file name: text} of every generated configuration file."""
    values = template_values(spec, controller_host, db_pass)
    return {
        'slurm.conf': render('slurm.conf.in', values),
        'slurmdbd.conf': render('slurmdbd.conf.in', values),
        'my.cnf': render('my.cnf.in', values),
        'mariadb-init.sql': render('mariadb-init.sql.in', values),
        'prolog-slurmctld.sh': render('prolog-slurmctld.sh.in', values),
        'hosts': render_hosts(spec, controller_host),
    }


def env_lines(spec_or_run_dir):
    """The ``export`` lines that point client commands (and ReFrame's emu
    system) at a cluster."""
    run_dir = spec_or_run_dir.run_dir if isinstance(spec_or_run_dir, Spec) else Path(spec_or_run_dir)
    lines = [f'export SLURM_CONF={Layout(run_dir).slurm_conf}']
    if isinstance(spec_or_run_dir, Spec):
        lines += [f'export CLUSTERPROOF_EMU_NODES={spec_or_run_dir.nodes}',
                  f'export CLUSTERPROOF_EMU_CPUS={spec_or_run_dir.cpus}']
    return lines


def env_dict(spec):
    return dict(line[len('export '):].split('=', 1) for line in env_lines(spec))


# ------------------------------------------------------------ process parts

def _pid_from(path):
    try:
        return int(Path(path).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _proc_text(pid, what):
    try:
        return Path(f'/proc/{pid}/{what}').read_bytes().replace(b'\0', b' ').decode(errors='replace')
    except OSError:
        return None


def _alive(pid):
    if not pid:
        return False
    stat = _proc_text(pid, 'stat')
    if stat is None:
        return False
    # a zombie is not running
    return stat.rsplit(')', 1)[-1].split()[0] != 'Z'


def _is_ours(pid, program, marker):
    """True if ``pid`` runs ``program`` and its command line or environment
    names ``marker`` (a path under this cluster's run directory)."""
    cmdline = _proc_text(pid, 'cmdline')
    if not cmdline:
        return False
    argv0 = Path(cmdline.split()[0]).name
    if argv0 != program and not argv0.startswith(program):
        return False
    return marker in cmdline or marker in (_proc_text(pid, 'environ') or '')


class Cluster:
    """A local cluster at a run directory."""

    def __init__(self, spec, log=print):
        self.spec = spec
        self.inst = spec.inst
        self.lay = Layout(spec.run_dir)
        self.log = log
        self.env = dict(os.environ, SLURM_CONF=str(self.lay.slurm_conf))
        self._children = []     # processes started here, not daemonized
        self._t0 = None         # start of `up`, for the progress lines

    # ---- helpers
    def _run(self, cmd, check=True, **kw):
        proc = subprocess.run(cmd, capture_output=True, text=True, env=kw.pop('env', self.env), **kw)
        if check and proc.returncode != 0:
            msg = (proc.stderr or proc.stdout).strip().splitlines()
            raise ClusterproofError(f'{Path(str(cmd[0])).name} {cmd[1] if len(cmd) > 1 else ""} '
                                    f'failed (exit {proc.returncode}): '
                                    f'{msg[-1] if msg else "no output"}')
        return proc

    def _step(self, text):
        if self._t0 is None:
            self.log(f'  {text}')
        else:
            self.log(f'  [{time.monotonic() - self._t0:4.1f} s] {text}')

    def _wait(self, what, ready, timeout, logfile=None, pid_file=None):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if ready():
                return
            if pid_file is not None and Path(pid_file).exists() and not _alive(_pid_from(pid_file)):
                break
            time.sleep(0.05)
        hint = f'; see {logfile}' if logfile else ''
        last = ''
        if logfile and Path(logfile).exists():
            tail = [ln for ln in Path(logfile).read_text(errors='replace').splitlines() if ln.strip()]
            last = f' (last log line: {tail[-1].strip()})' if tail else ''
        raise ClusterproofError(f'{what} did not come up within {timeout:g} s{hint}{last}')

    def _port_open(self, port, host='127.0.0.1'):
        with socket.socket() as s:
            s.settimeout(0.2)
            return s.connect_ex((host, port)) == 0

    # ---- state
    def daemon_pids(self):
        """{name: pid or None} of every daemon of this cluster, from pid files."""
        pids = {d: _pid_from(self.lay.pid_file(d)) for d in DAEMONS}
        for node in node_names(self.spec.nodes):
            pids[f'slurmd {node}'] = _pid_from(self.lay.slurmd_pid_file(node))
        return pids

    def _program_of(self, name):
        return {'mariadb': 'mariadbd', 'munged': 'munged'}.get(name, name.split()[0])

    def _marker_of(self, name):
        if name == 'munged':
            return str(self.lay.munge_socket)
        if name == 'mariadb':
            return str(self.lay.my_cnf)
        return str(self.lay.slurm_conf)     # slurmctld/slurmd: -f <conf>; slurmdbd: SLURM_CONF

    def our_pid(self, name, pid):
        return bool(pid) and _alive(pid) and _is_ours(pid, self._program_of(name), self._marker_of(name))

    def is_up(self):
        return self.lay.marker.exists() and self.our_pid('slurmctld', _pid_from(self.lay.pid_file('slurmctld')))

    # ---- preflight
    def preflight(self):
        if os.geteuid() != 0:
            raise ClusterproofError(NEEDS_ROOT)
        missing = [p for p in PROGRAMS if not shutil.which(p)]
        if missing:
            raise ClusterproofError(f'missing programs: {", ".join(missing)}; install slurm-wlm slurmdbd munge '
                                    'mariadb-server iproute2 util-linux (make setup does)')
        probe = subprocess.run(['unshare', '--net', '--uts', '--mount', 'true'], capture_output=True, text=True)
        if probe.returncode != 0:
            raise ClusterproofError('no network namespace support here (unshare --net --uts --mount failed: '
                                    f'{probe.stderr.strip() or probe.returncode}); run on a host or a privileged container')
        if not Path('/sys/fs/cgroup').is_dir():
            raise ClusterproofError('/sys/fs/cgroup is not mounted: slurmd needs it')
        for daemon, port in self.inst.ports.items():
            if daemon == 'slurmd':
                continue    # slurmd listens inside the node namespaces
            if not _port_free(port):
                raise ClusterproofError(f'port {port} ({daemon} of instance {self.inst.k}) is in use; '
                                        f'stop what holds it (ss -ltnp sport = :{port}) or use another --instance')
        for parent in self.spec.run_dir.resolve().parents:
            if parent.exists() and not parent.stat().st_mode & 0o001:
                raise ClusterproofError(f'{parent} (above the run directory) is not searchable by others '
                                        f'(mode {parent.stat().st_mode & 0o777:o}): munged and ordinary users need '
                                        f'it; chmod o+x {parent} or choose another --run-dir')
        leftovers = self.network_leftovers()
        if leftovers:
            raise ClusterproofError(f'instance {self.inst.k} has leftovers ({", ".join(leftovers)}); '
                                    f'run: clusterproof cluster down --instance {self.inst.k}')
        running = [n for n, pid in self.daemon_pids().items() if self.our_pid(n, pid)]
        if running:
            raise ClusterproofError(f'instance {self.inst.k} is partly up ({", ".join(running)} running); '
                                    f'run: clusterproof cluster down --instance {self.inst.k}')

    def network_leftovers(self):
        found = []
        links = _links()
        if self.inst.bridge in links:
            found.append(f'bridge {self.inst.bridge}')
        found += [f'link {v}' for v in links if v.startswith(f'cp{self.inst.k}n')]
        found += [f'namespace {ns}' for ns in _netns_list() if ns.startswith(f'cp{self.inst.k}n')]
        return found

    # ---- up
    def up(self):
        with operation_lock(self.inst.k):
            return self._up()

    def _up(self):
        t0 = self._t0 = time.monotonic()
        if os.geteuid() != 0:
            raise ClusterproofError(NEEDS_ROOT)
        if self.is_up():
            self.log(f'cluster {self.inst.cluster} is already up (run directory {self.spec.run_dir})')
            return False
        self.preflight()
        self.log(f'starting cluster {self.inst.cluster}: {self.spec.nodes} nodes x {self.spec.cpus} CPUs, '
                 f'{self.spec.mem} MiB each, bridge {self.inst.bridge} {self.inst.subnet}, '
                 f'run directory {self.spec.run_dir}')
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
        self.lay.marker.write_text(json.dumps(self.spec.to_dict()) + '\n')
        self.log(f'cluster {self.inst.cluster} is up in {time.monotonic() - t0:.1f} s; for client commands:')
        for line in env_lines(self.spec):
            self.log(line)
        return True

    def _prepare_files(self):
        lay = self.lay
        lay.root.mkdir(parents=True, exist_ok=True)
        lay.root.chmod(0o755)           # ordinary users read slurm.conf and reach the munge socket
        for d, mode in [(lay.etc, 0o755), (lay.run, 0o755), (lay.log, 0o755), (lay.state, 0o700),
                        (lay.spool, 0o755), (lay.tmp, 0o755), (lay.munge_dir, 0o711)]:
            d.mkdir(exist_ok=True)
            d.chmod(mode)
        for node in node_names(self.spec.nodes):
            (lay.spool / node).mkdir(exist_ok=True)
            tmp = lay.tmp / node
            tmp.mkdir(exist_ok=True)
            tmp.chmod(0o1777)
        # stale pid files of an earlier run would confuse the waits below
        for f in lay.run.glob('*.pid'):
            f.unlink()
        if not lay.munge_key.exists():
            _write_private(lay.munge_key, secrets.token_bytes(1024))
        lay.munge_key.chmod(0o600)
        if not lay.db_pass.exists():
            _write_private(lay.db_pass, secrets.token_hex(16).encode())
        texts = render_all(self.spec, socket.gethostname(), lay.db_pass.read_text().strip())
        for name, text in texts.items():
            path = lay.etc / name
            private = name in ('slurmdbd.conf', 'mariadb-init.sql')
            if private:
                _write_private(path, text.encode())
            else:
                path.write_text(text)
                path.chmod(0o755 if name.endswith('.sh') else 0o644)
        self._step(f'configuration written to {lay.etc}')

    def _start_munged(self):
        lay = self.lay
        self._run(['munged', f'--socket={lay.munge_socket}', f'--key-file={lay.munge_key}',
                   f'--pid-file={lay.pid_file("munged")}', f'--log-file={lay.log / "munged.log"}',
                   f'--seed-file={lay.munge_dir / "munged.seed"}', '--num-threads=4'])
        self._wait('munged', lambda: lay.munge_socket.exists() and lay.pid_file('munged').exists(), 10,
                   lay.log / 'munged.log')
        self._step(f'munged running (socket {lay.munge_socket})')

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
        proc = subprocess.Popen(['mariadbd', f'--defaults-file={lay.my_cnf}', f'--init-file={lay.db_init}'],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                start_new_session=True, env=self.env)
        log.close()
        self._children.append(proc)
        return proc

    def _wait_mariadb(self, proc):
        port = self.inst.port('mariadb')

        def ready():
            if proc.poll() is not None:
                raise ClusterproofError(f'MariaDB exited (status {proc.returncode}); see {self.lay.log / "mariadb.log"}')
            return self.lay.pid_file('mariadb').exists() and self._port_open(port)
        self._wait('MariaDB', ready, 30, self.lay.log / 'mariadb.log')
        self._step(f'MariaDB running (127.0.0.1:{port}, pid {proc.pid})')

    def _make_network(self):
        inst = self.inst
        cmds = [f'link add {inst.bridge} type bridge',
                f'addr add {inst.bridge_addr}/{SUBNET_PREFIX} dev {inst.bridge}',
                f'link set {inst.bridge} up']
        for i in range(1, self.spec.nodes + 1):
            ns = inst.netns(i)
            self._run(['ip', 'netns', 'add', ns])
            cmds += [f'link add {inst.veth(i)} type veth peer name eth0 netns {ns}',
                     f'link set {inst.veth(i)} master {inst.bridge}',
                     f'link set {inst.veth(i)} up']
        # `ip -batch`: one process per namespace instead of one per command
        self._run(['ip', '-batch', '-'], input='\n'.join(cmds) + '\n')
        for i in range(1, self.spec.nodes + 1):
            inside = [f'addr add {inst.node_addr(i)}/{SUBNET_PREFIX} dev eth0',
                      'link set eth0 up', 'link set lo up']
            self._run(['ip', '-n', inst.netns(i), '-batch', '-'], input='\n'.join(inside) + '\n')
        self._step(f'network: bridge {inst.bridge} {inst.bridge_addr}/{SUBNET_PREFIX}, '
                   f'namespaces {inst.netns(1)}..{inst.netns(self.spec.nodes)}')

    def _start_slurmdbd(self):
        lay = self.lay
        self._run(['slurmdbd'])   # reads slurmdbd.conf from the directory of $SLURM_CONF
        port = self.inst.port('slurmdbd')
        self._wait('slurmdbd', lambda: lay.pid_file('slurmdbd').exists() and self._port_open(port), 30,
                   lay.log / 'slurmdbd.log', pid_file=lay.pid_file('slurmdbd'))
        self._step(f'slurmdbd running (port {port}, pid {_pid_from(lay.pid_file("slurmdbd"))})')

    def _register_cluster(self):
        proc = self._run(['sacctmgr', '-i', 'add', 'cluster', self.inst.cluster], check=False)
        out = (proc.stdout + proc.stderr).strip()
        if proc.returncode != 0 and 'already exist' not in out.lower():
            raise ClusterproofError(f'sacctmgr add cluster {self.inst.cluster} failed: {out.splitlines()[-1] if out else proc.returncode}')
        self._step(f'cluster {self.inst.cluster} registered in the accounting database')

    def _start_slurmctld(self):
        lay = self.lay
        self._run(['slurmctld', '-i', '-f', str(lay.slurm_conf)])
        port = self.inst.port('slurmctld')
        self._wait('slurmctld', lambda: lay.pid_file('slurmctld').exists() and self._port_open(port), 30,
                   lay.log / 'slurmctld.log', pid_file=lay.pid_file('slurmctld'))
        self._step(f'slurmctld running (port {port}, pid {_pid_from(lay.pid_file("slurmctld"))})')

    def _start_slurmds(self):
        lay, inst = self.lay, self.inst
        procs = []
        for i in range(1, self.spec.nodes + 1):
            node = f'n{i}'
            script = (f'mount --bind {lay.hosts} /etc/hosts && hostname {node} && '
                      f'exec slurmd -f {lay.slurm_conf}')
            procs.append(subprocess.Popen(
                ['nsenter', f'--net=/run/netns/{inst.netns(i)}', 'unshare', '--uts', '--mount',
                 'sh', '-c', script], env=self.env, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        for i, proc in enumerate(procs, 1):
            out, _ = proc.communicate(timeout=30)
            if proc.returncode != 0:
                raise ClusterproofError(f'slurmd of n{i} failed to start (exit {proc.returncode}): '
                                        f'{out.strip().splitlines()[-1] if out.strip() else "see " + str(lay.log / f"slurmd-n{i}.log")}')
        for node in node_names(self.spec.nodes):
            pf = lay.slurmd_pid_file(node)
            self._wait(f'slurmd of {node}', pf.exists, 15, lay.log / f'slurmd-{node}.log')
        self._step(f'{self.spec.nodes} slurmd running ({hostlist(self.spec.nodes)})')

    def node_states(self):
        """{node: Slurm state} from sinfo, or {} when slurmctld does not answer."""
        proc = self._run(['sinfo', '-N', '-h', '-o', '%N %T'], check=False, timeout=20)
        if proc.returncode != 0:
            return {}
        states = {}
        for line in proc.stdout.splitlines():
            parts = line.split()
            if len(parts) == 2:
                states[parts[0]] = parts[1]
        return states

    def _wait_nodes_idle(self):
        want = set(node_names(self.spec.nodes))
        last = {}

        def ready():
            nonlocal last
            last = self.node_states()
            return want <= {n for n, s in last.items() if s.rstrip('*') in ('idle', 'mixed', 'allocated')}
        try:
            self._wait('nodes', ready, 30, self.lay.log / 'slurmctld.log')
        except ClusterproofError:
            states = ', '.join(f'{n}={s}' for n, s in sorted(last.items())) or 'sinfo gave nothing'
            raise ClusterproofError(f'nodes not idle within 30 s ({states}); see {self.lay.log}') from None
        self._step(f'nodes idle: {hostlist(self.spec.nodes)}')

    # ---- down
    def down(self, quiet=False):
        """Stop this cluster's daemons and every process in its node
        namespaces; remove namespaces, links and bridge. Safe to repeat."""
        with operation_lock(self.inst.k):
            self._down(quiet)

    def _down(self, quiet):
        say = (lambda text: None) if quiet else self._step
        t0 = time.monotonic()
        nodes = self._known_nodes()
        # 1. slurmd and slurmctld, plus whatever runs in the node namespaces (job steps)
        first = [f'slurmd {n}' for n in nodes] + ['slurmctld']
        self._stop([(name, self._pid_of(name)) for name in first], say)
        ns_pids = []
        for ns in _netns_list():
            if ns.startswith(f'cp{self.inst.k}n'):
                ns_pids += _netns_pids(ns)
        if ns_pids:
            self._stop([(f'pid {p} in a node namespace', p) for p in ns_pids], say, check=False)
        # 2. accounting, then database and munge
        self._stop([('slurmdbd', self._pid_of('slurmdbd'))], say)
        self._stop([('mariadb', self._pid_of('mariadb')), ('munged', self._pid_of('munged'))], say)
        # 3. network
        removed = self._remove_network()
        if removed:
            say(f'removed {", ".join(removed)}')
        for f in list(self.lay.run.glob('*.pid')) if self.lay.run.exists() else []:
            f.unlink()
        if self.lay.munge_socket.exists():
            self.lay.munge_socket.unlink()
        if self.lay.marker.exists():
            self.lay.marker.unlink()
        if not quiet:
            self.log(f'cluster {self.inst.cluster} is down ({time.monotonic() - t0:.1f} s); '
                     f'state kept in {self.spec.run_dir}')

    def _known_nodes(self):
        nodes = set(node_names(self.spec.nodes))
        if self.lay.run.exists():
            nodes |= {p.stem[len('slurmd-'):] for p in self.lay.run.glob('slurmd-*.pid')}
        return sorted(nodes, key=lambda n: int(n[1:]) if n[1:].isdigit() else 0)

    def _pid_of(self, name):
        if name.startswith('slurmd '):
            return _pid_from(self.lay.slurmd_pid_file(name.split()[1]))
        return _pid_from(self.lay.pid_file(name))

    def _stop(self, named_pids, say, check=True, timeout=10):
        targets = []
        for name, pid in named_pids:
            if not pid or not _alive(pid):
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
            targets = [(n, p) for n, p in targets if _alive(p)]
            if targets:
                time.sleep(0.05)
        for name, pid in targets:
            try:
                os.kill(pid, signal.SIGKILL)
                say(f'{name} (pid {pid}) killed after {timeout} s')
            except ProcessLookupError:
                pass
        stopped = [n for n, p in named_pids if p and not n.startswith('pid ')]
        if stopped:
            say(f'stopped {", ".join(stopped)}')

    def _remove_network(self):
        removed = []
        prefix = f'cp{self.inst.k}n'
        for ns in _netns_list():
            if ns.startswith(prefix):
                subprocess.run(['ip', 'netns', 'del', ns], capture_output=True)
                removed.append(f'namespace {ns}')
        links = _links()
        for link in links:
            if link.startswith(prefix):
                subprocess.run(['ip', 'link', 'del', link], capture_output=True)
                removed.append(f'link {link}')
        if self.inst.bridge in links:
            subprocess.run(['ip', 'link', 'del', self.inst.bridge], capture_output=True)
            removed.append(f'bridge {self.inst.bridge}')
        return removed

    # ---- status
    def status(self):
        """Plain data: daemons (pid, alive), nodes and their Slurm states, network."""
        daemons = {}
        for name, pid in self.daemon_pids().items():
            daemons[name] = {'pid': pid, 'alive': self.our_pid(name, pid)}
        up = self.is_up()
        states = self.node_states() if up else {}
        return {'cluster': self.inst.cluster, 'instance': self.inst.k, 'run_dir': str(self.spec.run_dir),
                'up': up, 'daemons': daemons, 'nodes': states,
                'network': self.network_leftovers()}


def _write_private(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, 'wb') as f:
        f.write(data)
    os.chmod(path, 0o600)


def _port_free(port):
    for host in ('0.0.0.0', '127.0.0.1'):
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((host, port))
            except OSError:
                return False
    return True


def _links():
    proc = subprocess.run(['ip', '-o', 'link', 'show'], capture_output=True, text=True)
    names = []
    for line in proc.stdout.splitlines():
        parts = line.split(':', 2)
        if len(parts) >= 2:
            names.append(parts[1].strip().split('@')[0])
    return names


def _netns_list():
    netns = Path('/run/netns')
    return sorted(p.name for p in netns.iterdir()) if netns.is_dir() else []


def _netns_pids(ns):
    proc = subprocess.run(['ip', 'netns', 'pids', ns], capture_output=True, text=True)
    return [int(p) for p in proc.stdout.split() if p.isdigit()]


def load_spec(instance, run_dir=None):
    """The spec of the cluster at the run directory of ``instance``: from its
    cluster.json when it is up, else the defaults."""
    rd = run_dir_for(instance, run_dir)
    marker = Layout(rd).marker
    if marker.exists():
        try:
            data = json.loads(marker.read_text())
            if data['instance'] != instance:
                raise ClusterproofError(f'{rd} holds instance {data["instance"]}, not {instance}: '
                                        f'use --instance {data["instance"]} or another --run-dir')
            return Spec(instance=instance, nodes=data['nodes'], cpus=data['cpus'], mem=data['mem'], run_dir=rd)
        except (ValueError, KeyError) as err:
            raise ClusterproofError(f'{marker}: unreadable ({err}); run clusterproof cluster down --instance {instance}') from None
    return Spec(instance=instance, run_dir=rd)
