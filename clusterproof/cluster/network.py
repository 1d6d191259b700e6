"""The network of the local cluster: one network namespace per node, a veth
pair from each to a bridge, addresses in 198.18.0.0/24 (the benchmarking
range, RFC 2544), ports; and entering a node's namespaces to run a program
there as that node.

Instance K in 0..7 has its own bridge ``cpbr<K>``, subnet
``198.18.0.<32K>/27``, ports and namespace names ``cp<K>n<i>``.
"""

import dataclasses
import ipaddress
import socket
import subprocess
from pathlib import Path

from clusterproof import ClusterproofError
from clusterproof.cluster.procs import run

NETWORK = ipaddress.ip_network('198.18.0.0/24')
INSTANCES = range(8)
SUBNET_PREFIX = 27                 # 32 addresses per instance
MAX_NODES = 29                     # .32K+2 .. .32K+30 (.32K+1 is the bridge)
BASE_PORT = 16800
PORT_OFFSETS = {'slurmctld': 1, 'slurmd': 2, 'slurmdbd': 3, 'mariadb': 4}


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


def netns_pids(ns):
    proc = subprocess.run(['ip', 'netns', 'pids', ns], capture_output=True, text=True)
    return [int(p) for p in proc.stdout.split() if p.isdigit()]


def make_network(inst, nodes, env=None):
    """Bridge, namespaces ``cp<K>n1..n<nodes>``, veth pairs and addresses."""
    cmds = [f'link add {inst.bridge} type bridge',
            f'addr add {inst.bridge_addr}/{SUBNET_PREFIX} dev {inst.bridge}',
            f'link set {inst.bridge} up']
    for i in range(1, nodes + 1):
        ns = inst.netns(i)
        run(['ip', 'netns', 'add', ns], env=env)
        cmds += [f'link add {inst.veth(i)} type veth peer name eth0 netns {ns}',
                 f'link set {inst.veth(i)} master {inst.bridge}',
                 f'link set {inst.veth(i)} up']
    # `ip -batch`: one process per namespace instead of one per command
    run(['ip', '-batch', '-'], env=env, input='\n'.join(cmds) + '\n')
    for i in range(1, nodes + 1):
        inside = [f'addr add {inst.node_addr(i)}/{SUBNET_PREFIX} dev eth0',
                  'link set eth0 up', 'link set lo up']
        run(['ip', '-n', inst.netns(i), '-batch', '-'], env=env, input='\n'.join(inside) + '\n')


def remove_network(inst):
    """Remove the namespaces, links and bridge of ``inst``; what was removed."""
    removed = []
    prefix = f'cp{inst.k}n'
    for ns in netns_list():
        if ns.startswith(prefix):
            subprocess.run(['ip', 'netns', 'del', ns], capture_output=True)
            removed.append(f'namespace {ns}')
    found = links()
    for link in found:
        if link.startswith(prefix):
            subprocess.run(['ip', 'link', 'del', link], capture_output=True)
            removed.append(f'link {link}')
    if inst.bridge in found:
        subprocess.run(['ip', 'link', 'del', inst.bridge], capture_output=True)
        removed.append(f'bridge {inst.bridge}')
    return removed


def network_leftovers(inst):
    """Bridge, links and namespaces of ``inst`` that exist now."""
    found = []
    present = links()
    if inst.bridge in present:
        found.append(f'bridge {inst.bridge}')
    found += [f'link {v}' for v in present if v.startswith(f'cp{inst.k}n')]
    found += [f'namespace {ns}' for ns in netns_list() if ns.startswith(f'cp{inst.k}n')]
    return found


def in_node(inst, i, hosts, script):
    """argv running the shell ``script`` as node ``n<i>``: in its network
    namespace, with its own hostname (UTS) and mount namespace, the cluster's
    hosts file bind-mounted over /etc/hosts."""
    return ['nsenter', f'--net=/run/netns/{inst.netns(i)}', 'unshare', '--uts', '--mount',
            'sh', '-c', f'mount --bind {hosts} /etc/hosts && hostname n{i} && {script}']
