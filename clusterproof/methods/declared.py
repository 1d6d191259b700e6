"""What the storage checks declare about themselves, read from their source
in ``reframe_checks/`` without importing ReFrame: the one source of the
list of storage benchmarks.

A storage check is a class that mixes in ``StorageScale``
(clusterproof/checklib/storage.py), directly or through a base class of its
own file, and sets ``benchmark``: the name ``extras['storage']['max_threads']``
keys its limit by. It launches MPI ranks when it mixes in ``RoundRobinRanks``.
``published_plan = N`` (1, 2, ...) puts it in the published storage plan
that ``clusterproof published-shape`` runs, at place N (docs/storage.md). Only the classes marked
``@rfm.simple_test`` are checks; a base class lends its attributes.

Adding a storage check adds its benchmark everywhere these lists are read
(placement's thread limits, the local cluster's limits, the published plan);
no list is edited by hand.
"""

import ast
import functools
from dataclasses import dataclass

from clusterproof import ClusterproofError
from clusterproof.paths import CHECKS_DIR


@dataclass(frozen=True)
class StorageCheck:
    file: str                # the check's file in reframe_checks/
    name: str                # its class name (the ReFrame test name)
    benchmark: str           # its key in extras['storage']['max_threads']
    mpi: bool                # launches MPI ranks (RoundRobinRanks)
    published_plan: int      # place in the plan clusterproof published-shape runs (0: none)


def _base_names(node):
    return [b.id if isinstance(b, ast.Name) else getattr(b, 'attr', '') for b in node.bases]


def _is_test(node):
    return any((isinstance(d, ast.Attribute) and d.attr == 'simple_test')
               or (isinstance(d, ast.Name) and d.id == 'simple_test') for d in node.decorator_list)


def _class_values(node):
    """Constant class attributes set in the class body."""
    values = {}
    for stmt in node.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    values[target.id] = stmt.value.value
    return values


def _file_checks(path):
    try:
        tree = ast.parse(path.read_text(), str(path))
    except (OSError, SyntaxError) as exc:
        raise ClusterproofError(f'{path}: cannot read the checks it declares ({exc})') from None
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}

    def lineage(node):              # the class, then its bases of this file
        yield node
        for base in _base_names(node):
            if base in classes:
                yield from lineage(classes[base])

    found = []
    for node in classes.values():
        if not _is_test(node):
            continue
        chain = list(lineage(node))
        bases = {b for n in chain for b in _base_names(n)}
        if 'StorageScale' not in bases:
            continue
        values = {}
        for n in reversed(chain):
            values.update(_class_values(n))
        benchmark = values.get('benchmark')
        if not isinstance(benchmark, str) or not benchmark:
            raise ClusterproofError(f'{path}: storage check {node.name} sets no benchmark '
                                    f"(a class attribute: benchmark = '<name>')")
        found.append(StorageCheck(path.name, node.name, benchmark, 'RoundRobinRanks' in bases,
                                  _place(values.get('published_plan', 0), path, node.name)))
    return found


def _place(value, path, name):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ClusterproofError(f'{path}: {name}.published_plan = {value!r}: want its place '
                                f'in the published plan (1, 2, ...) or 0')
    return value


def published_plan(checks_dir=CHECKS_DIR):
    """The storage checks of the published plan, in its order."""
    return tuple(sorted((c for c in storage_checks(checks_dir) if c.published_plan),
                        key=lambda c: c.published_plan))


@functools.cache
def storage_checks(checks_dir=CHECKS_DIR):
    """Every storage check of ``checks_dir``, file by file in name order."""
    return tuple(c for path in sorted(checks_dir.glob('*.py')) for c in _file_checks(path))


def storage_benchmarks(checks_dir=CHECKS_DIR):
    """The storage benchmarks, in the order of their checks."""
    return tuple(dict.fromkeys(c.benchmark for c in storage_checks(checks_dir)))


def plan_names(checks):
    """``{name: check class}`` of ``checks``: a benchmark's name when one
    check runs it, else the benchmark and the rest of the class name
    (``IOzoneSequential``: ``iozone-sequential``)."""
    counts = {}
    for c in checks:
        counts[c.benchmark] = counts.get(c.benchmark, 0) + 1
    names = {}
    for c in checks:
        rest = c.name[len(c.benchmark):] if c.name.lower().startswith(c.benchmark) else c.name
        names[c.benchmark if counts[c.benchmark] == 1 else f'{c.benchmark}-{rest.lower()}'] = \
            c.name
    return names
