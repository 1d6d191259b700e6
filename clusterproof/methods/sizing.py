"""File sizes that defeat caches, the way the published methodology does.

Cache rule: the data written in one run is at least twice the RAM of all
client nodes and servers together, so no page cache, GPFS pagepool or
server cache can hold it and every read comes from the disks. The published
test bed wrote 8 TiB against 16 x 128 GiB (clients) + 4 x 256 GiB (servers)
= 3 TiB of RAM.

The partition declares in ``extras['storage']``: ``client_nodes``,
``client_ram_gib`` (per client node), ``server_ram_gib`` (all servers
together), optionally ``total_data`` (e.g. ``'8T'``, must meet the rule)
and ``transfer_size`` (default ``16m``). The size per thread is the total
divided by the thread count, rounded up to a whole number of transfers.

Smoke mode uses small fixed sizes with direct I/O (IOR ``--posix.odirect``,
IOzone ``-I``) instead; such figures are marked smoke and never compared
with references.

Scale (``-S cp_scale=``, :data:`SCALES`) is the other axis: ``full`` (the
default) takes the sizes above; ``tiny`` keeps everything a mode decides
but the bytes (the thread counts, the client nodes, the round-robin
placement, the command lines with their stonewalling and IOR's ``-C``) and
writes :data:`TINY_PER_THREAD` per thread in :data:`TINY_TRANSFER`
transfers, buffered as the published runs are. It runs the acceptance plan
at its real shape on a machine that cannot hold its bytes (the local
cluster: ``clusterproof published-shape``). Its figures are flagged like smoke
ones (``cp_smoke``) and never compared with references.

Sizes that do not fit the free space of the scratch file system are refused
before anything is written.
"""

import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

from clusterproof import ClusterproofError

KIB, MIB, GIB, TIB = 1024, 1024 ** 2, 1024 ** 3, 1024 ** 4
_UNITS = {'': 1, 'b': 1, 'k': KIB, 'm': MIB, 'g': GIB, 't': TIB, 'p': 1024 ** 5}

DEFAULT_TRANSFER = '16m'
#: smoke sizes: small, direct I/O
SMOKE_PER_THREAD = '4m'
SMOKE_TRANSFER = '1m'
#: scales: full sizes, or the mode's shape with tiny files
SCALES = ('full', 'tiny')
TINY_PER_THREAD = '1m'
TINY_TRANSFER = '1m'
#: mdtest at tiny scale: files (and directories) per task
TINY_FILES_PER_TASK = 10


def parse_size(value, what='size'):
    """Bytes of ``value``: an int (bytes) or ``'16m'``, ``'16MiB'``, ``'8T'``,
    ``'4K'`` (binary units, as IOR and IOzone read them)."""
    if isinstance(value, bool):
        raise ClusterproofError(f'{what} {value!r}: not a size')
    if isinstance(value, (int, float)):
        num = value
    else:
        m = re.fullmatch(r'\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)(?:i?b)?\s*', str(value), re.I)
        if not m:
            raise ClusterproofError(
                f'{what} {value!r}: not a size; write a number with an optional unit '
                f'k, m, g, t (binary: 16m = 16 MiB)')
        num = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if num <= 0 or not math.isfinite(num):
        raise ClusterproofError(f'{what} {value!r}: must be greater than zero')
    return int(num)


def format_size(nbytes):
    """``nbytes`` in the largest binary unit up to GiB that divides it:
    ``16m``, ``8192g`` (IOzone's ``-s`` knows k, m and g only)."""
    for suffix, unit in (('g', GIB), ('m', MIB), ('k', KIB)):
        if nbytes % unit == 0:
            return f'{nbytes // unit}{suffix}'
    return str(nbytes)


def human(nbytes):
    for suffix, unit in (('TiB', TIB), ('GiB', GIB), ('MiB', MIB), ('KiB', KIB)):
        if nbytes >= unit:
            return f'{nbytes / unit:.1f} {suffix}'
    return f'{nbytes} B'


def cache_ram_bytes(storage):
    """RAM of all client nodes and servers declared in ``extras['storage']``."""
    try:
        nodes = storage['client_nodes']
        client = storage['client_ram_gib']
        server = storage.get('server_ram_gib', 0)
    except KeyError as err:
        raise ClusterproofError(
            f"extras['storage'] has no {err.args[0]!r}; declare client_nodes, client_ram_gib "
            f'(per client node) and server_ram_gib (all servers) in the system file') from None
    for key, val in (('client_nodes', nodes), ('client_ram_gib', client),
                     ('server_ram_gib', server)):
        if isinstance(val, bool) or not isinstance(val, (int, float)) or val < 0:
            raise ClusterproofError(f"extras['storage'][{key!r}] = {val!r}: want a number >= 0")
    if nodes < 1 or client <= 0:
        raise ClusterproofError("extras['storage']: client_nodes and client_ram_gib must be > 0")
    return int(nodes * client * GIB + server * GIB)


@dataclass(frozen=True)
class Sizing:
    threads: int
    per_thread: int          # bytes per thread (a whole number of transfers)
    transfer: int            # bytes per I/O call of the sequential passes
    cache_ram: int           # RAM of clients and servers (bytes), 0 in smoke
    basis: str               # how the total was chosen, for people
    smoke: bool = False
    direct_io: bool = False
    tiny: bool = False

    @property
    def total(self):
        return self.per_thread * self.threads

    @property
    def meets_cache_rule(self):
        return self.total >= 2 * self.cache_ram

    @property
    def per_thread_arg(self):
        """Size per thread for IOzone ``-s`` / IOR ``-b`` (``512m``)."""
        return format_size(self.per_thread)

    @property
    def transfer_arg(self):
        return format_size(self.transfer)

    def describe(self):
        lines = [f'threads            {self.threads}',
                 f'size per thread    {self.per_thread_arg} ({human(self.per_thread)})',
                 f'transfer size      {self.transfer_arg}',
                 f'total written      {human(self.total)}',
                 f'basis              {self.basis}']
        if self.tiny:
            lines.append("tiny               yes: the plan's thread counts and placement with "
                         'tiny files; figures are for function only (flagged smoke)')
        elif self.smoke:
            lines.append('smoke              yes: small sizes with direct I/O; figures are '
                         'for function only')
        return '\n'.join(lines) + '\n'


def check_scale(scale):
    """``scale`` if it is one of :data:`SCALES`; an error naming them otherwise."""
    if scale not in SCALES:
        raise ClusterproofError(f'cp_scale={scale!r}: not a scale; choose one of '
                                f'{", ".join(SCALES)} (-S cp_scale=tiny)')
    return scale


def _small(threads, total, transfer, default_per_thread, default_transfer):
    """(bytes per thread, transfer) of a small fixed size: ``total`` shared by
    the threads when given, else ``default_per_thread``; whole transfers."""
    xfer = parse_size(transfer or default_transfer, 'transfer size')
    per = parse_size(total, 'total') // threads if total else parse_size(default_per_thread)
    return max(xfer, math.ceil(per / xfer) * xfer), xfer


def compute(storage, threads, total=None, transfer=None, smoke=False, scale='full'):
    """Sizes for ``threads`` threads from the declared ``extras['storage']``.

    ``total`` (bytes or a size string) overrides the default of 2 x RAM;
    a total below 2 x RAM is refused unless ``smoke`` (direct I/O) or
    ``scale='tiny'`` (buffered tiny files, in any mode; flagged smoke).
    """
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ClusterproofError(f'thread count {threads!r}: must be a whole number >= 1')
    if check_scale(scale) == 'tiny':
        per, xfer = _small(threads, total, transfer, TINY_PER_THREAD, TINY_TRANSFER)
        return Sizing(threads, per, xfer, 0,
                      f'tiny: {format_size(per)} per thread at the plan\'s thread count and '
                      f'placement (not the cache rule): for function only',
                      smoke=True, tiny=True)
    if smoke:
        per, xfer = _small(threads, total, transfer, SMOKE_PER_THREAD, SMOKE_TRANSFER)
        return Sizing(threads, per, xfer, 0, 'smoke: fixed small size per thread, direct I/O',
                      smoke=True, direct_io=True)
    xfer = parse_size(transfer or storage.get('transfer_size', DEFAULT_TRANSFER),
                      'transfer size')
    ram = cache_ram_bytes(storage)
    declared = storage.get('total_data')
    if total is not None:
        want, basis = parse_size(total, 'total'), f'explicit total {total}'
    elif declared is not None:
        want = parse_size(declared, "extras['storage']['total_data']")
        basis = f"declared total_data {declared}"
    else:
        want, basis = 2 * ram, '2 x RAM'
    if want < 2 * ram:
        raise ClusterproofError(
            f'total {human(want)} is less than twice the RAM of clients and servers '
            f'(2 x {human(ram)}): reads could come from caches. Write at least '
            f'{format_size(2 * ram)}, or use smoke mode (direct I/O) for a functional run')
    per = max(xfer, math.ceil(want / threads / xfer) * xfer)
    basis += (f' (cache rule: >= 2 x {human(ram)} RAM of '
              f'{storage["client_nodes"]} client nodes x {storage["client_ram_gib"]} GiB '
              f'+ servers {storage.get("server_ram_gib", 0)} GiB)')
    return Sizing(threads, per, xfer, ram, basis)


def free_bytes(path):
    """Free space (for unprivileged users) of the file system holding
    ``path``; when ``path`` does not exist yet, of its parent directory,
    which must exist (a missing mount point is an error, not the free space
    of the root file system)."""
    p = Path(path)
    if not p.exists():
        if not p.parent.is_dir():
            raise ClusterproofError(
                f'{path}: neither it nor its parent directory {p.parent} exists; is the '
                f'file system under test mounted? Create {p} or fix '
                f"extras['storage']['scratch'] in the system file")
        p = p.parent
    try:
        st = os.statvfs(p)
    except OSError as err:
        raise ClusterproofError(f'cannot read the free space of {p}: {err}') from None
    return st.f_bavail * st.f_frsize


def check_fits(path, nbytes, what='test files'):
    """Refuse ``nbytes`` that do not fit the free space under ``path``."""
    if nbytes <= 0:
        raise ClusterproofError(f'{what}: size {nbytes} must be greater than zero')
    free = free_bytes(path)
    if nbytes > free:
        raise ClusterproofError(
            f'{what} need {human(nbytes)} under {path}, but only {human(free)} is free there; '
            f'free space, use fewer threads or a smaller total, or point '
            f"extras['storage']['scratch'] at a larger file system")
    return free

