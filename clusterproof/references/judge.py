"""The one judge of reference values: ``site_config/references/<system>.yaml``
in ReFrame's external-reference (``$ref``) format.

Everything that reads or applies a reference goes through this module:
loading and validating a file (:func:`load`, :func:`validate_file`), finding
the entry of a measured figure as ReFrame does (:func:`lookup`), its absolute
bounds (:func:`bounds`), the direction of a figure (:func:`lower_is_better`)
and the verdict (:func:`judge`). ``compare``, ``report``, ``acceptance`` and
``bless`` use it; none of them reads the YAML on its own.

Each top-level key is a check's class name; under it an optional ``$index``
(test attributes such as ``threads``) and, per index value, figures as
``[value, lower, upper, unit]`` lists: ``lower`` and ``upper`` are fractions
of the value (``-0.1`` = 10 % below), ``null`` for no bound. Throughputs get
a lower bound only, latencies an upper bound only. An entry
``['$xfail', 'reason', [value, lower, upper, unit]]`` is an expected failure.
"""

import math
import re
from pathlib import Path

import yaml

from clusterproof import ClusterproofError
from clusterproof.paths import references_dir

#: units of figures where a smaller value is better (times and latencies);
#: every other unit is a throughput, a rate or a count, where larger is better
LOWER_IS_BETTER_UNITS = {'s', 'sec', 'ms', 'msec', 'us', 'usec', 'µs', 'ns', 'nsec',
                         'min', 'h', 'cycles', 'ms/op', 'us/op'}
#: units a reference may carry
KNOWN_UNITS = LOWER_IS_BETTER_UNITS | {
    'MB/s', 'MiB/s', 'GB/s', 'GiB/s', 'kB/s', 'KiB/s', 'TB/s',
    'IOPS', 'ops/s', 'kIOPS', 'Gflop/s', 'Gflops', 'GFlop/s', 'Tflop/s', 'Tflops',
    'GUP/s', 'GUPs', 'msg/s', 'Mmsg/s', '%', 'ratio', 'GiB', 'MiB', 'count',
}


def lower_is_better(unit, figure=''):
    """The one direction rule: True for figures where a smaller value is
    better: time units (``s``, ``us``, ``ms/op`` ...), and figures whose
    name says latency (``lat_*``, ``*_latency``)."""
    if (unit or '').strip() in LOWER_IS_BETTER_UNITS:
        return True
    name = (figure or '').lower()
    return name.startswith('lat') or name.endswith('latency') or '_lat_' in name


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


# -- lookup ------------------------------------------------------------------

def load_references(system, path=None, emulated=False):
    """The parsed reference file of ``system`` (``{}`` when there is none);
    with ``emulated``, the file blessed from emulated runs."""
    path = Path(path) if path else reference_file(system, emulated=emulated)
    if not path.is_file():
        return {}
    return load(path)


def references_for(refs_by_system, system, emulated=False):
    """The parsed references of ``system``, or with ``emulated`` those blessed
    from its emulated runs (the only ones an emulated result is judged
    against). ``refs_by_system`` caches them (keys ``system`` and
    ``system.emulated``)."""
    key = f'{system}.emulated' if emulated else system
    if key not in refs_by_system:
        refs_by_system[key] = load_references(system, emulated=emulated)
    return refs_by_system[key]


def index_value(attr, rec):
    """The value of index attribute ``attr`` for the test case of ``rec``."""
    if attr == '$system':
        return rec.system
    if attr == '$partition':
        return f'{rec.system}:{rec.partition}'
    if attr == '$environ':
        return rec.environ
    if attr.startswith('$'):
        raise ClusterproofError(
            f'reference index {attr!r} of {rec.check} is not recorded with the results; '
            f'index by $system, $partition, $environ or test attributes')
    if attr in rec.case:
        return rec.case[attr]
    params = rec.params
    if attr in params:
        return _scalar(params[attr])
    raise ClusterproofError(f'reference index {attr!r} of {rec.check}: the test case '
                            f'{rec.test!r} has no such attribute')


def _scalar(text):
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def default_index(rec):
    """``[$partition, <parameters of the test>]``: what a check declares when
    its references depend on the partition and on its parameters."""
    return ['$partition'] + sorted(rec.params)


def lookup(refs, rec):
    """``(ref, lower, upper, unit)`` of ``rec``'s figure in parsed reference
    data, resolved as ReFrame does (index levels; without ``$index``, keys
    ``system:partition``, ``system`` or ``*``); None when absent."""
    entry = refs.get(rec.check)
    if not isinstance(entry, dict):
        return None
    index = entry.get('$index')
    if index:
        node = entry
        for attr in index:
            if not isinstance(node, dict):
                return None
            val = index_value(attr, rec)
            if val in node:
                node = node[val]
            elif isinstance(val, str):
                node = next((v for k, v in node.items() if isinstance(k, str)
                             and not k.startswith('$') and re.fullmatch(k, val)), None)
                if node is None:
                    return None
            else:
                return None
    else:
        node = None
        for key in (f'{rec.system}:{rec.partition}', rec.system, '*'):
            if key in entry:
                node = entry[key]
                break
    if not isinstance(node, dict) or rec.figure not in node:
        return None
    val = node[rec.figure]
    if isinstance(val, list) and val and val[0] == '$xfail':
        val = val[-1]
    if not isinstance(val, (list, tuple)) or len(val) < 3:
        return None
    return tuple(list(val) + [None])[:4]


def bounds(ref, lower, upper):
    """Absolute (low, high) limits of a reference with relative thresholds."""
    lo = None if lower is None else ref + abs(ref) * lower
    hi = None if upper is None else ref + abs(ref) * upper
    return lo, hi


# -- judging ------------------------------------------------------------------

def judge(value, ref, lower, upper, lower_is_better):
    """Verdict of ``value`` against ``ref`` with relative thresholds:
    ``pass``, ``REGRESSION`` (worse than the tolerance allows), ``better``,
    ``no-ref`` (no reference) or ``FAILED`` (no finite value)."""
    if ref is None:
        return 'no-ref'
    if value is None or not math.isfinite(value):
        return 'FAILED'
    lo, hi = bounds(ref, lower, upper)
    below = lo is not None and value < lo
    above = hi is not None and value > hi
    if lower_is_better:
        return 'REGRESSION' if above else 'better' if below else 'pass'
    return 'REGRESSION' if below else 'better' if above else 'pass'
