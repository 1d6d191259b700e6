"""The network of the local cluster: one network namespace per node, a veth
pair from each to a bridge, addresses in 198.18.0.0/15 (the benchmarking
range, RFC 2544), ports; and entering a node's namespaces to run a program
there as that node.

Instance K in 0..7 has its own bridges, subnets, ports and namespace names
``cp<K>n<i>``. Two address blocks per instance, chosen by the cluster's size
(:class:`Network`):

- up to 29 nodes: subnet ``198.18.0.<32K>/27`` on bridge ``cpbr<K>``;
- 30 to 1,024 nodes: subnet ``198.19.<8K>.0/21``, on bridges ``cpbr<K>`` (the
  controller's address, nodes 1-512) and ``cpbr<K>b<j>`` (nodes of the j-th
  512), each joined to ``cpbr<K>`` by a veth pair ``cp<K>t<j>``/``cp<K>t<j>p``:
  one Ethernet segment, one subnet. A Linux bridge takes at most 1,023 ports.

Every link of instance K is in link group ``16800 + K``, so that ``down``
deletes them all with one request (one at a time, 1,024 veth pairs take
about 18 s).
"""

import ctypes
import dataclasses
import fcntl
import ipaddress
import os
import shlex
import socket
import struct
import subprocess
import threading
from pathlib import Path

from ClusterShell.NodeSet import NodeSet

from clusterproof import ClusterproofError
from clusterproof.cluster.procs import run

#: every address the local cluster uses, in any instance
NETWORK = ipaddress.ip_network('198.18.0.0/15')
INSTANCES = range(8)
#: clusters of up to this many nodes: 198.18.0.<32K>/27 (.32K+1 is the bridge)
SMALL_MAX_NODES = 29
SMALL_PREFIX = 27
#: larger clusters: 198.19.<8K>.0/21, room for 2,045 nodes; 1,024 is what was tried
MAX_NODES = 1024
LARGE_PREFIX = 21
#: nodes on one bridge of a large cluster (a Linux bridge takes at most 1,023 ports)
NODES_PER_BRIDGE = 512
BASE_PORT = 16800
PORT_OFFSETS = {'slurmctld': 1, 'slurmd': 2, 'slurmdbd': 3, 'mariadb': 4}


@dataclasses.dataclass(frozen=True)
class Instance:
    """Names and ports of instance ``k``; nothing else (addresses depend
    on the cluster's size: :class:`Network`)."""
    k: int

    def __post_init__(self):
        if self.k not in INSTANCES:
            raise ClusterproofError(f'instance {self.k} is out of range: use 0..{INSTANCES[-1]}')

    @property
    def cluster(self):
        return f'cp{self.k}'

    @property
    def bridge(self):
        """The first bridge, which holds the controller's address."""
        return f'cpbr{self.k}'

    def netns(self, i):
        return f'cp{self.k}n{i}'

    def veth(self, i):
        """Name of the root-namespace end of node ``n<i>``'s link."""
        return f'cp{self.k}n{i}h'

    @property
    def link_group(self):
        """Link group of every bridge and veth of this instance."""
        return BASE_PORT + self.k

    def owns_link(self, name):
        """True for the names of this instance's bridges and veths (and
        nothing of another instance)."""
        k = self.k
        return (name == self.bridge or name.startswith((f'cpbr{k}b', f'cp{k}n', f'cp{k}t')))

    def owns_netns(self, name):
        return name.startswith(f'cp{self.k}n')

    def port(self, daemon):
        return BASE_PORT + 10 * self.k + PORT_OFFSETS[daemon]

    @property
    def ports(self):
        return {d: self.port(d) for d in PORT_OFFSETS}

    def default_run_dir(self):
        return Path(f'/tmp/clusterproof-cluster{self.k}')


@dataclasses.dataclass(frozen=True)
class Network:
    """Subnet, addresses and bridges of a cluster of ``nodes`` nodes of
    instance ``inst`` (see the module's description)."""
    inst: Instance
    nodes: int

    def __post_init__(self):
        if not 1 <= self.nodes <= MAX_NODES:
            raise ClusterproofError(f'{self.nodes} nodes: an instance has 1..{MAX_NODES}')

    @property
    def large(self):
        return self.nodes > SMALL_MAX_NODES

    @property
    def subnet(self):
        k = self.inst.k
        if self.large:
            return ipaddress.ip_network(f'198.19.{8 * k}.0/{LARGE_PREFIX}')
        return ipaddress.ip_network(f'198.18.0.{32 * k}/{SMALL_PREFIX}')

    @property
    def prefix(self):
        return self.subnet.prefixlen

    @property
    def bridge_addr(self):
        return str(self.subnet.network_address + 1)

    def node_addr(self, i):
        """Address of node ``n<i>`` (i from 1)."""
        if not 1 <= i <= self.nodes:
            raise ClusterproofError(f'node n{i} is out of range: this cluster has '
                                    f'n1..n{self.nodes}')
        return str(self.subnet.network_address + 1 + i)

    @property
    def bridges(self):
        """Bridge names, the first holding the controller's address."""
        count = -(-self.nodes // NODES_PER_BRIDGE)
        return [self.inst.bridge] + [f'cpbr{self.inst.k}b{j}' for j in range(2, count + 1)]

    def bridge_of(self, i):
        return self.bridges[(i - 1) // NODES_PER_BRIDGE]

    def trunk(self, j):
        """The veth pair joining bridge ``j`` (from 2) to the first:
        (end on the first bridge, end on bridge j)."""
        return f'cp{self.inst.k}t{j}', f'cp{self.inst.k}t{j}p'


def port_free(port):
    for host in ('0.0.0.0', '127.0.0.1'):
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((host, port))
            except OSError:
                return False
    return True


def port_open(port, host='127.0.0.1'):
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex((host, port)) == 0


def links():
    proc = subprocess.run(['ip', '-o', 'link', 'show'], capture_output=True, text=True)
    names = []
    for line in proc.stdout.splitlines():
        parts = line.split(':', 2)
        if len(parts) >= 2:
            names.append(parts[1].strip().split('@')[0])
    return names


def netns_list():
    netns = Path('/run/netns')
    return sorted(p.name for p in netns.iterdir()) if netns.is_dir() else []


def pids_by_netns(names):
    """{namespace: [pids]} of the named namespaces under /run/netns: every
    process whose network namespace is one of them (what ``ip netns pids``
    finds, for many namespaces in one pass over /proc)."""
    wanted = {}
    for ns in names:
        try:
            st = os.stat(f'/run/netns/{ns}')
        except OSError:
            continue
        wanted[(st.st_dev, st.st_ino)] = ns
    found = {ns: [] for ns in names}
    if not wanted:
        return found
    for entry in os.scandir('/proc'):
        if not entry.name.isdigit():
            continue
        try:
            st = os.stat(f'/proc/{entry.name}/ns/net')
        except OSError:
            continue            # ended meanwhile, or a kernel thread
        ns = wanted.get((st.st_dev, st.st_ino))
        if ns is not None:
            found[ns].append(int(entry.name))
    return found


def netns_pids(ns):
    return pids_by_netns([ns])[ns]


def make_network(net, env=None):
    """Bridges, namespaces ``cp<K>n1..n<nodes>``, veth pairs and addresses
    of ``net`` (a :class:`Network`)."""
    inst, group = net.inst, net.inst.link_group
    cmds = []
    for br in net.bridges:
        cmds += [f'link add {br} group {group} type bridge mcast_snooping 0']
    cmds.append(f'addr add {net.bridge_addr}/{net.prefix} dev {inst.bridge}')
    for j, br in enumerate(net.bridges[1:], 2):
        a, b = net.trunk(j)
        cmds += [f'link add {a} group {group} type veth peer name {b} group {group}',
                 f'link set {a} master {inst.bridge}', f'link set {b} master {br}',
                 f'link set {a} up', f'link set {b} up']
    for br in net.bridges:
        cmds.append(f'link set {br} up')
    for i in range(1, net.nodes + 1):
        ns = inst.netns(i)
        cmds += [f'netns add {ns}',
                 f'link add {inst.veth(i)} group {group} type veth peer name eth0 netns {ns}',
                 f'link set {inst.veth(i)} master {net.bridge_of(i)}',
                 f'link set {inst.veth(i)} up']
    # `ip -batch`: one process for all of them
    run(['ip', '-batch', '-'], env=env, input='\n'.join(cmds) + '\n')
    configure_inside([(inst.netns(i), net.node_addr(i), net.prefix)
                      for i in range(1, net.nodes + 1)])


_CLONE_NEWNET = 0x40000000
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _SIOCSIFADDR, _SIOCSIFNETMASK = 0x8913, 0x8914, 0x8916, 0x891c
_IFF_UP = 0x1


def _setns(fd):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, _CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def _ifreq(dev, data=b''):
    return struct.pack('16s16s', dev.encode(), data)


def _sockaddr_in(addr):
    return struct.pack('HH4s8x', socket.AF_INET, 0, socket.inet_aton(addr))


def configure_inside(nodes):
    """In each namespace of ``nodes`` (``[(namespace, address, prefix)]``):
    ``eth0`` gets the address and comes up, and so does ``lo``. What ``ip -n
    NS addr add`` and ``link set up`` do, without a process per namespace
    (``ip -batch`` cannot enter namespaces; 1,024 ``ip`` processes took 5 s
    here, 20 s on a loaded machine): a thread of this process enters each
    namespace (setns) and sets them with the interface ioctls."""
    failed = []

    def work():
        own = os.open('/proc/thread-self/ns/net', os.O_RDONLY)
        try:
            for ns, addr, prefix in nodes:
                fd = os.open(f'/run/netns/{ns}', os.O_RDONLY)
                try:
                    _setns(fd)
                finally:
                    os.close(fd)
                mask = str(ipaddress.ip_network(f'0.0.0.0/{prefix}').netmask)
                with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                    fcntl.ioctl(s, _SIOCSIFADDR, _ifreq('eth0', _sockaddr_in(addr)))
                    fcntl.ioctl(s, _SIOCSIFNETMASK, _ifreq('eth0', _sockaddr_in(mask)))
                    for dev in ('eth0', 'lo'):
                        flags = struct.unpack_from('16sH', fcntl.ioctl(s, _SIOCGIFFLAGS,
                                                                       _ifreq(dev)))[1]
                        fcntl.ioctl(s, _SIOCSIFFLAGS, struct.pack('16sH14x', dev.encode(),
                                                                  flags | _IFF_UP))
        except OSError as err:
            failed.append(f'namespace {ns}: {err}')
        finally:
            _setns(own)
            os.close(own)
    # a thread of its own: the caller's thread never leaves its namespace
    worker = threading.Thread(target=work, name='configure-namespaces')
    worker.start()
    worker.join()
    if failed:
        raise ClusterproofError(f'could not configure {failed[0]}')


def _kinds(links_, namespaces):
    """Names folded by kind, one phrase each: ``bridge cpbr0``,
    ``links cp0n[1-1024]h``, ``namespaces cp0n[1-1024]``."""
    out = []
    for kind, names in (('bridge', [n for n in links_ if n.startswith('cpbr')]),
                        ('link', [n for n in links_ if not n.startswith('cpbr')]),
                        ('namespace', list(namespaces))):
        if names:
            out.append(f'{kind}{"s" if len(names) > 1 else ""} {NodeSet.fromlist(names)}')
    return out


def remove_network(inst):
    """Remove the namespaces, links and bridges of ``inst``; what was
    removed (:func:`_kinds`)."""
    ours = [name for name in links() if inst.owns_link(name)]
    if ours:
        group = subprocess.run(['ip', '-o', 'link', 'show', 'group', str(inst.link_group)],
                               capture_output=True, text=True).stdout
        in_group = [line.split(':', 2)[1].strip().split('@')[0] for line in group.splitlines()
                    if line.count(':') >= 2]
        if in_group and all(inst.owns_link(name) for name in in_group):
            # one request for all (the kernel then waits for the network once, not per link)
            subprocess.run(['ip', 'link', 'del', 'group', str(inst.link_group)],
                           capture_output=True)
        left = [name for name in links() if inst.owns_link(name)]
        if left:
            # links made outside the group (by an older version): one by one, bridges last
            left.sort(key=lambda name: name.startswith('cpbr'))
            subprocess.run(['ip', '-force', '-batch', '-'], capture_output=True, text=True,
                           input=''.join(f'link del {name}\n' for name in left))
    namespaces = [ns for ns in netns_list() if inst.owns_netns(ns)]
    if namespaces:
        subprocess.run(['ip', '-force', '-batch', '-'], capture_output=True, text=True,
                       input=''.join(f'netns del {ns}\n' for ns in namespaces))
    return _kinds(ours, namespaces)


def network_leftovers(inst):
    """Bridges, links and namespaces of ``inst`` that exist now
    (:func:`_kinds`)."""
    return _kinds([v for v in links() if inst.owns_link(v)],
                  [ns for ns in netns_list() if inst.owns_netns(ns)])


def in_node(inst, i, hosts, script, mounts=(), name=None):
    """argv running the shell ``script`` as node ``i``: in its network
    namespace, with its own hostname (UTS; ``name``, by default ``n<i>``:
    slurmd takes its Slurm node name from it) and mount namespace, the
    cluster's hosts file bind-mounted over /etc/hosts, and each ``(source,
    target)`` of ``mounts`` too. Paths and the name are quoted for the shell."""
    q = shlex.quote
    binds = ''.join(f'mount --bind {q(str(src))} {q(str(dst))} && '
                    for src, dst in [(hosts, '/etc/hosts'), *mounts])
    return ['nsenter', f'--net=/run/netns/{inst.netns(i)}', 'unshare', '--uts', '--mount',
            'sh', '-c', f'{binds}hostname {q(name or f"n{i}")} && {script}']
