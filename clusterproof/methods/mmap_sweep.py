"""The mmap sweep's parameter space and sizes, per mode (pure functions).

Points are ``(a, b)``: read ``a`` bytes every ``b`` bytes. The published
sweep uses a in {4 KiB, 128 KiB, 1 MiB, 4 MiB} and b in powers of two from
a up. Accesses are ``(mode, threads)``: read or rw, one thread or one per
physical core of the node under test (``'cores'``: the partition's declared
cores, known only once the test has its partition; :func:`access_threads`).

Files larger than the page cache can hold are the point of the benchmark:
outside smoke mode a file target is twice (acceptance) or 1.25 times
(nightly) the node's memory, so most pages come from the device. Memory
targets cannot exceed the memory: they use a quarter of it (nightly) or half
(acceptance). Smoke mode maps 32 MiB and says so (``cp_smoke``): its
figures are page-cache figures, never device figures.
"""

from clusterproof import ClusterproofError
from clusterproof.modes import by_mode

KiB, MiB, GiB = 1024, 1024 ** 2, 1024 ** 3
PUBLISHED_A = (4 * KiB, 128 * KiB, 1 * MiB, 4 * MiB)

SMOKE_SIZE = 32 * MiB


def points(mode=None):
    """``[(a, b), ...]`` of the mode."""
    return by_mode({
        'smoke': [(4 * KiB, 16 * KiB), (1 * MiB, 1 * MiB)],
        'nightly': [(a, a * f) for a in (4 * KiB, 1 * MiB) for f in (1, 16)],
        'acceptance': [(a, a << k) for a in PUBLISHED_A for k in range(0, 11)],
    }, mode)


#: threads of an access: a number, or one per physical core of the node
PER_CORE = 'cores'


def accesses(mode=None):
    """``[(mode, threads), ...]``; threads is a number or :data:`PER_CORE`.
    Smoke keeps two of them, with at most two threads."""
    return by_mode({
        'smoke': [('read', 1), ('rw', 2)],
        'nightly': [(m, t) for m in ('read', 'rw') for t in (1, PER_CORE)],
        'acceptance': [(m, t) for m in ('read', 'rw') for t in (1, PER_CORE)],
    }, mode)


def access_threads(threads, node_cores):
    """Threads of an access on a node with ``node_cores`` physical cores."""
    if threads == PER_CORE:
        return max(1, int(node_cores))
    return int(threads)


def sizes(memory_gib, mode=None):
    """``{'file': bytes, 'memory': bytes}`` for a node with ``memory_gib``."""
    if not isinstance(memory_gib, (int, float)) or memory_gib <= 0:
        raise ClusterproofError(f'mmap sweep: memory_gib={memory_gib!r}: want the node memory '
                                "in GiB (extras['hardware']['memory_gib'])")
    mem = int(memory_gib * GiB)
    factor = by_mode({'smoke': None, 'nightly': (1.25, 0.25), 'acceptance': (2.0, 0.5)}, mode)
    if factor is None:
        return {'file': SMOKE_SIZE, 'memory': SMOKE_SIZE}
    # whole MiB
    return {'file': int(mem * factor[0]) // MiB * MiB, 'memory': int(mem * factor[1]) // MiB * MiB}


def fits(a, b, size, threads):
    """True when the point makes at least one step in every slice."""
    return a <= b and size // threads >= a


def targets(declared, scratch):
    """Targets ``[{'name', 'path'}]``: the declared ones, or memory plus a
    file on the scratch directory when none is declared. ``path`` None is
    anonymous memory; otherwise a directory where the test file goes."""
    found = declared if declared else [{'name': 'memory', 'path': None},
                                       {'name': 'scratch', 'path': scratch}]
    names = set()
    for t in found:
        if not isinstance(t, dict) or 'name' not in t or 'path' not in t:
            raise ClusterproofError(f"extras['mmap_targets']: entry {t!r}: want "
                                    "{'name': ..., 'path': <directory> or None}")
        if t['name'] in names:
            raise ClusterproofError(f"extras['mmap_targets']: name {t['name']!r} twice")
        names.add(t['name'])
    return [dict(t) for t in found]
