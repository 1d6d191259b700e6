"""Round-robin placement of threads over client nodes.

The published methodology spreads T threads evenly and round-robin over the
client nodes: thread ``i`` runs on client node ``i mod N``. So T=32 on 16
client nodes is 2 per node and T=1024 is 64 per node; T below the number of
client nodes uses the first T nodes only. One placement feeds every launcher:

- an MPI hostfile: one client node per rank, in rank order
  (:meth:`Placement.hostfile`), or ``node slots=k`` lines
  (:meth:`Placement.hostfile_slots`); with OpenMPI's ``mpirun`` pass
  ``--map-by node`` so ranks are dealt round-robin as listed
  (:meth:`Placement.mpirun_args`);
- the ``srun`` options (:meth:`Placement.srun_args`): ``--nodes``,
  ``--ntasks``, ``--nodelist``, ``--distribution=cyclic``, and
  ``--overcommit`` when T exceeds the cores of the client nodes used;
- IOzone's ``-+m`` file (:meth:`Placement.threadlist`): one line per thread
  ``client_node workdir /path/to/iozone``, in the same order (IOzone's ``-t T``
  takes the first T lines, so the order *is* the placement).

All three list the same client node for the same thread; the tests check it.

A system that cannot hold every thread count of a plan says so in
``extras['storage']['max_threads']``: one number for every storage
benchmark, or ``{'iozone': 256, 'ior': 512, ...}`` per benchmark
(:func:`over_declared_limit`). The local cluster declares what this machine
holds (docs/storage.md, "At the published shape").
Fast enough for 10,000 client nodes x 1,024 threads per node in well under a
second (list repetition, no per-thread Python loop).
"""

import shlex
from dataclasses import dataclass

from clusterproof import ClusterproofError, hostlist
from clusterproof.methods import declared

FORMATS = ('hostfile', 'slots', 'threadlist', 'srun', 'mpirun')
#: srun's option that ends a step when one of its tasks dies: an MPI rank that
#: crashes would otherwise leave its peers waiting until the job's time limit
SRUN_END_ON_CRASH = '--kill-on-bad-exit=1'


def client_nodes(nodes):
    """Client node names from a hostlist expression or an iterable of names."""
    if isinstance(nodes, str):
        names = hostlist.expand(nodes)
    else:
        names = [str(n) for n in nodes]
        if not names:
            raise ClusterproofError('placement: the list of client nodes is empty')
        for n in names:
            if not n or any(ch.isspace() for ch in n) or n.startswith('-'):
                raise ClusterproofError(f'placement: {n!r} is not a client node name')
    seen = set()
    for n in names:
        if n in seen:
            raise ClusterproofError(
                f'placement: client node {n!r} is listed twice; list each client node once '
                f'(the placement itself puts several threads on one node)')
        seen.add(n)
    return names


@dataclass(frozen=True)
class Placement:
    """T threads dealt round-robin over ``nodes`` (only the nodes used)."""
    nodes: tuple          # the client nodes used, in order (len = min(N, T))
    threads: int

    @property
    def num_nodes(self):
        return len(self.nodes)

    def threads_per_node(self):
        """Number of threads on each client node used, in node order."""
        q, r = divmod(self.threads, len(self.nodes))
        return [q + 1 if i < r else q for i in range(len(self.nodes))]

    def max_threads_per_node(self):
        q, r = divmod(self.threads, len(self.nodes))
        return q + (1 if r else 0)

    def order(self):
        """The client node of each thread, thread 0 first."""
        q, r = divmod(self.threads, len(self.nodes))
        nodes = list(self.nodes)
        return nodes * q + nodes[:r]

    def node_of(self, thread):
        if not 0 <= thread < self.threads:
            raise IndexError(thread)
        return self.nodes[thread % len(self.nodes)]

    # -- renderings ---------------------------------------------------------

    def _repeat_lines(self, lines):
        q, r = divmod(self.threads, len(lines))
        return ''.join(lines) * q + ''.join(lines[:r])

    def hostfile(self):
        """One client node per line, one line per rank, round-robin order."""
        return self._repeat_lines([f'{n}\n' for n in self.nodes])

    def hostfile_slots(self):
        """``node slots=k`` lines, one per client node used."""
        return ''.join(f'{n} slots={k}\n'
                       for n, k in zip(self.nodes, self.threads_per_node()))

    def threadlist(self, workdir, iozone):
        """IOzone ``-+m`` file: ``client_node workdir iozone`` per thread."""
        for what, val in (('workdir', workdir), ('iozone path', iozone)):
            val = str(val)
            if not val or any(ch.isspace() for ch in val):
                raise ClusterproofError(
                    f'placement: IOzone {what} {val!r} is empty or contains white space; '
                    f'IOzone\'s -+m file separates fields by white space')
        return self._repeat_lines([f'{n} {workdir} {iozone}\n' for n in self.nodes])

    def nodelist(self):
        """The client nodes used, as a Slurm hostlist expression."""
        return hostlist.compress(self.nodes)

    def oversubscribed(self, cores_per_node):
        """True when some client node gets more threads than it has cores."""
        return bool(cores_per_node) and self.max_threads_per_node() > cores_per_node

    def launcher_options(self, launcher, cores_per_node=None, hostfile_path=None):
        """Options that make ``launcher`` start the T tasks in this placement
        inside an allocation of its client nodes: ``srun`` deals them
        cyclically; OpenMPI's ``mpirun`` reads the hostfile written from
        :meth:`hostfile` and maps by node. Beyond the cores of a node:
        ``--overcommit`` / ``--oversubscribe``. ``srun --kill-on-bad-exit=1``:
        a task that dies (an MPI rank's crash) ends the step at once instead
        of leaving its peers waiting for it until the job's time limit
        (``mpirun`` aborts the job by itself)."""
        over = self.oversubscribed(cores_per_node)
        if launcher == 'srun':
            return (['--distribution=cyclic', SRUN_END_ON_CRASH]
                    + (['--overcommit'] if over else []))
        if launcher == 'mpirun':
            if not hostfile_path:
                raise ClusterproofError('placement: the mpirun form needs the hostfile path')
            return (['--hostfile', str(hostfile_path), '--map-by', 'node']
                    + (['--oversubscribe'] if over else []))
        raise ClusterproofError(f'placement: no options for launcher {launcher!r} '
                                f'(srun or mpirun)')

    def srun_args(self, cores_per_node=None):
        """``srun`` options that start the T tasks in this placement."""
        return ([f'--nodes={self.num_nodes}', f'--ntasks={self.threads}',
                 f'--nodelist={self.nodelist()}']
                + self.launcher_options('srun', cores_per_node))

    def mpirun_args(self, hostfile_path, cores_per_node=None):
        """OpenMPI ``mpirun`` options for the hostfile written from :meth:`hostfile`."""
        return (['-np', str(self.threads)]
                + self.launcher_options('mpirun', cores_per_node, hostfile_path))


#: the most threads a placement deals (every form prints a line or a name
#: per thread; a typo such as 99999999999999999999 must not exhaust memory)
MAX_THREADS = 1_000_000


def place(nodes, threads):
    """Deal ``threads`` round-robin over ``nodes`` (hostlist expression or list)."""
    if isinstance(threads, bool) or not isinstance(threads, int):
        raise ClusterproofError(f'placement: thread count {threads!r} is not a whole number')
    if not 1 <= threads <= MAX_THREADS:
        raise ClusterproofError(f'placement: thread count {threads} must be between 1 and '
                                f'{MAX_THREADS:,}')
    names = client_nodes(nodes)
    return Placement(tuple(names[:threads]), threads)


def declared_limit(storage, benchmark):
    """``(limit, key)`` of the most threads the system declares it holds for
    ``benchmark`` (``key`` names where it is declared), or ``(None, None)``.
    The benchmarks are those the storage checks declare
    (:func:`clusterproof.methods.declared.storage_benchmarks`)."""
    benchmarks = declared.storage_benchmarks()
    if benchmark not in benchmarks:
        raise ClusterproofError(f'placement: no thread limit for benchmark {benchmark!r} '
                                f'(one of {", ".join(benchmarks)})')
    key = "extras['storage']['max_threads']"
    value = (storage or {}).get('max_threads')
    if isinstance(value, dict):
        unknown = sorted(set(value) - set(benchmarks))
        if unknown:
            raise ClusterproofError(f'{key} names {", ".join(map(repr, unknown))}: not a '
                                    f'storage benchmark (one of {", ".join(benchmarks)})')
        key, value = f'{key}[{benchmark!r}]', value.get(benchmark)
    if value is None:
        return None, None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ClusterproofError(f'{key} = {value!r}: want a whole number >= 1, or a dict of '
                                f'them per benchmark ({", ".join(benchmarks)})')
    return value, key


def over_declared_limit(storage, benchmark, threads):
    """Why ``threads`` threads of ``benchmark`` are more than the system
    declares it can hold, or None when they are not (or nothing is declared)."""
    limit, key = declared_limit(storage, benchmark)
    if limit is None or threads <= limit:
        return None
    return (f'{threads} threads are more than the {limit} this system declares it can hold for '
            f'{benchmark} ({key} = {limit}); not run')


def layout(num_client_nodes, threads):
    """The shape of the placement of ``threads`` over ``num_client_nodes``
    whose names are not known yet (a check sizes its job before Slurm
    allocates the nodes): node names ``client0``, ``client1``, ..."""
    if isinstance(num_client_nodes, bool) or not isinstance(num_client_nodes, int) \
            or num_client_nodes < 1:
        raise ClusterproofError(f'placement: client node count {num_client_nodes!r} must be '
                                f'a whole number >= 1')
    return place([f'client{i}' for i in range(min(num_client_nodes, max(threads, 1)))], threads)


def render(pl, fmt, workdir=None, iozone=None, cores_per_node=None, hostfile_path=None):
    """Text of one form of the placement (see FORMATS)."""
    if fmt == 'hostfile':
        return pl.hostfile()
    if fmt == 'slots':
        return pl.hostfile_slots()
    if fmt == 'threadlist':
        if not workdir or not iozone:
            raise ClusterproofError('placement: the threadlist form needs a workdir and '
                                    'the path of iozone on the client nodes')
        return pl.threadlist(workdir, iozone)
    if fmt == 'srun':
        return shlex.join(['srun'] + pl.srun_args(cores_per_node)) + '\n'
    if fmt == 'mpirun':
        if not hostfile_path:
            raise ClusterproofError('placement: the mpirun form needs the hostfile path')
        return shlex.join(['mpirun'] + pl.mpirun_args(hostfile_path, cores_per_node)) + '\n'
    raise ClusterproofError(f'placement: unknown format {fmt!r}; '
                            f'choose one of {", ".join(FORMATS)}')
