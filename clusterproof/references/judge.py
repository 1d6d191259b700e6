"""Reference values: ``site_config/references/<system>.yaml`` in ReFrame's
external-reference (``$ref``) format.

Each top-level key is a check's class name; under it an optional ``$index``
(test attributes such as ``num_threads``) and, per index value, figures as
``[value, lower, upper, unit]`` lists: ``lower`` and ``upper`` are fractions
of the value (``-0.1`` = 10 % below), ``null`` for no bound. Throughputs get
a lower bound only, latencies an upper bound only.

:func:`validate_file` checks a file before anything runs and names file,
check, key and value in every error.
"""

import math
from pathlib import Path

import yaml

from clusterproof import ClusterproofError
from clusterproof.paths import references_dir

#: units a reference may carry; the direction says which bound makes sense
LOWER_IS_BETTER_UNITS = {'s', 'ms', 'us', 'ns', 'ms/op', 'us/op'}
KNOWN_UNITS = LOWER_IS_BETTER_UNITS | {
    'MB/s', 'MiB/s', 'GB/s', 'GiB/s', 'kB/s', 'KiB/s', 'TB/s',
    'IOPS', 'ops/s', 'kIOPS', 'Gflop/s', 'Gflops', 'GFlop/s', 'Tflop/s', 'Tflops',
    'GUP/s', 'GUPs', 'msg/s', 'Mmsg/s', '%', 'ratio', 'GiB', 'MiB', 'count',
}


def lower_is_better(unit):
    return unit in LOWER_IS_BETTER_UNITS


def reference_file(system, directory=None, emulated=False):
    """``<references dir>/<system>.yaml`` (see ``paths.references_dir``).

    With ``emulated``: ``<system>.emulated.yaml``, the references blessed
    from emulated runs (``clusterproof bless --allow-emulated``). Only
    emulated results are ever judged against that file, and emulated results
    are judged against nothing else; no check loads it into ReFrame."""
    name = f'{system}.emulated.yaml' if emulated else f'{system}.yaml'
    return Path(directory or references_dir()) / name


def load(path):
    """Parse a references file; a YAML error names the file and the line."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        mark = getattr(err, 'problem_mark', None)
        where = f'{path}:{mark.line + 1}' if mark else str(path)
        raise ClusterproofError(f'{where}: not valid YAML: '
                                f'{getattr(err, "problem", err)}') from None
    except OSError as err:
        raise ClusterproofError(f'{path}: cannot read: {err.strerror}') from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ClusterproofError(f'{path}: the top level must map check names to '
                                f'references, found {type(data).__name__}')
    return data


def check_entry(where, entry, expected_unit=None):
    """Validate one ``[value, lower, upper, unit]`` entry; return it as a tuple."""
    if isinstance(entry, list) and entry and entry[0] == '$xfail':
        if len(entry) != 3:
            raise ClusterproofError(f'{where}: $xfail entries are '
                                    f"['$xfail', 'reason', [value, lower, upper, unit]]")
        return check_entry(where, entry[2], expected_unit)
    if not isinstance(entry, list) or len(entry) not in (3, 4):
        raise ClusterproofError(f'{where}: want [value, lower, upper, unit], found {entry!r}')
    value, lower, upper = entry[:3]
    unit = entry[3] if len(entry) == 4 else None
    if not _is_number(value):
        raise ClusterproofError(f'{where}: value {value!r} is not a number')
    for name, bound in (('lower', lower), ('upper', upper)):
        if bound is not None and not _is_number(bound):
            raise ClusterproofError(f'{where}: {name} tolerance {bound!r} is not a number or null')
    if lower is not None and not (-1 <= lower <= 0):
        raise ClusterproofError(f'{where}: lower tolerance {lower!r} is impossible '
                                f'(want a fraction between -1 and 0, e.g. -0.05)')
    if upper is not None and upper < 0:
        raise ClusterproofError(f'{where}: upper tolerance {upper!r} is impossible '
                                f'(want a fraction >= 0, e.g. 0.10)')
    if unit is not None and unit not in KNOWN_UNITS:
        raise ClusterproofError(f'{where}: unknown unit {unit!r} '
                                f'(known: {", ".join(sorted(KNOWN_UNITS))})')
    if expected_unit is not None and unit is not None and unit != expected_unit:
        raise ClusterproofError(f'{where}: unit {unit!r} does not match the '
                                f'check, which reports {expected_unit!r}')
    return tuple(entry)


def _is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def iter_entries(data, path):
    """Yield ``(where, check, figure, entry)`` for every reference of a file."""
    for check, body in data.items():
        if not isinstance(body, dict):
            raise ClusterproofError(f'{path}: {check}: want a mapping, found {body!r}')
        index = body.get('$index')
        depth = len(index) if index else 1
        if index is not None and not isinstance(index, list):
            raise ClusterproofError(f'{path}: {check}: $index must be a list of '
                                    f'test attributes, found {index!r}')
        yield from _walk(path, check, {k: v for k, v in body.items() if k != '$index'},
                         depth, [check])


def _walk(path, check, node, depth, keys):
    for key, val in node.items():
        if depth == 0:
            yield (f'{path}: {".".join(map(str, keys + [key]))}', check, key, val)
        elif isinstance(val, dict):
            yield from _walk(path, check, val, depth - 1, keys + [key])
        else:
            raise ClusterproofError(f'{path}: {".".join(map(str, keys + [key]))}: '
                                    f'want a mapping at this level of $index, found {val!r}')


def validate_file(path):
    """Validate every entry of a references file; return the number of entries."""
    data = load(path)
    count = 0
    for where, _check, _figure, entry in iter_entries(data, path):
        check_entry(where, entry)
        count += 1
    return count
