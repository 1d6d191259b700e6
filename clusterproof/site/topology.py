"""What this node has, read from Linux (/proc, /sys): the facts the
inventory check compares with the declared hardware, and the declaration
of the ``local`` system, which is this machine as it is.

Readers of the live system take their root as an argument (tests point them
at copies); the ``parse_*`` functions turn the text that ``numactl -H`` and
``/proc/meminfo`` print into the same ``extras['hardware']`` keys (``lscpu``
is read by clusterproof/parsers/lscpu.py).
"""

import os
from pathlib import Path

SYS_CPU = Path('/sys/devices/system/cpu')
SYS_NODE = Path('/sys/devices/system/node')


def _read(path, default=None):
    try:
        return Path(path).read_text().strip()
    except OSError:
        return default


def online_cpus(root=SYS_CPU):
    """CPU ids from a list such as ``0-3,8-11``."""
    text = _read(Path(root) / 'online', '0')
    cpus = []
    for part in text.split(','):
        if '-' in part:
            lo, hi = part.split('-')
            cpus.extend(range(int(lo), int(hi) + 1))
        elif part:
            cpus.append(int(part))
    return cpus


def cpu_topology(root=SYS_CPU):
    """sockets, cores per socket, threads per core from sysfs."""
    packages, cores, threads = set(), set(), 0
    for cpu in online_cpus(root):
        topo = Path(root) / f'cpu{cpu}' / 'topology'
        pkg = _read(topo / 'physical_package_id', '0')
        core = _read(topo / 'core_id', str(cpu))
        packages.add(pkg)
        cores.add((pkg, core))
        threads += 1
    sockets = max(len(packages), 1)
    ncores = max(len(cores), 1)
    return {
        'sockets': sockets,
        'cores_per_socket': max(ncores // sockets, 1),
        'threads_per_core': max(threads // ncores, 1),
    }


def numa_node_count(root=SYS_NODE):
    nodes = [p for p in Path(root).glob('node[0-9]*')] if Path(root).exists() else []
    return max(len(nodes), 1)


def memory_gib(meminfo='/proc/meminfo'):
    return parse_meminfo(Path(meminfo).read_text(), source=str(meminfo))


def parse_meminfo(text, source='/proc/meminfo'):
    """MemTotal in GiB (one decimal) from the text of /proc/meminfo."""
    for line in text.splitlines():
        if line.startswith('MemTotal:'):
            fields = line.split()
            if len(fields) < 2 or not fields[1].isdigit():
                raise ValueError(f'{source}: unreadable MemTotal line {line!r}')
            return round(int(fields[1]) / 1024 ** 2, 1)
    raise ValueError(f'{source}: no MemTotal line')


def cpu_model(cpuinfo='/proc/cpuinfo'):
    for line in Path(cpuinfo).read_text().splitlines():
        if line.startswith('model name'):
            return line.split(':', 1)[1].strip()
    return 'unknown'


def llc_mib(root=SYS_CPU):
    """Total last-level cache of the node in MiB (each distinct cache once)."""
    seen, total, best_level = set(), 0, 0
    for cpu in online_cpus(root):
        cache_root = Path(root) / f'cpu{cpu}' / 'cache'
        for idx in sorted(cache_root.glob('index[0-9]*')):
            level = int(_read(idx / 'level', '0'))
            ctype = _read(idx / 'type', '')
            if ctype == 'Instruction':
                continue
            shared = _read(idx / 'shared_cpu_list', str(cpu))
            size = _read(idx / 'size', '0K')
            key = (level, shared)
            if level > best_level:
                best_level, seen, total = level, set(), 0
            if level == best_level and key not in seen:
                seen.add(key)
                mult = {'K': 1 / 1024, 'M': 1, 'G': 1024}.get(size[-1], 1 / 1024 ** 2)
                total += float(size.rstrip('KMG')) * mult
    return round(total, 3)


def detect_hardware():
    """This machine's hardware in the ``extras['hardware']`` shape."""
    hw = cpu_topology()
    hw.update({
        'numa_nodes': numa_node_count(),
        'memory_gib': memory_gib(),
        'cpu_model': cpu_model(),
        'llc_mib': llc_mib(),
        'cpus': os.cpu_count() or 1,
    })
    return hw
