"""The reference files and their entries.

Where ``site_config/references/<system>.yaml`` is, reading and validating
it, and one entry as a :class:`Reference` (its value, relative thresholds, absolute bounds, unit
and expected-failure mark). The format is described in
:mod:`clusterproof.references.judge`."""

import math
from pathlib import Path
from typing import NamedTuple

import yaml

from clusterproof import ClusterproofError
from clusterproof.paths import read_text, references_dir
from clusterproof.references.direction import KNOWN_UNITS

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
    return parse(read_text(path, 'references file'), path)


def parse_yaml(text, path):
    """The YAML ``text`` of a site file (``path`` names it, with the line,
    in the error when it is not valid YAML)."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, 'problem_mark', None)
        where = f'{path}:{mark.line + 1}' if mark else str(path)
        raise ClusterproofError(f'{where}: not valid YAML: '
                                f'{getattr(err, "problem", err)}') from None


def parse(text, path):
    """Parse the text of a references file (``path`` names it in errors)."""
    data = parse_yaml(text, path)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ClusterproofError(f'{path}: the top level must map check names to '
                                f'references, found {type(data).__name__}')
    return data


class Reference(NamedTuple):
    """One reference entry: ``value`` with relative thresholds ``lower`` and
    ``upper`` (fractions of the value, None: unbounded), its ``unit``, and
    for an expected failure (``$xfail``) the reason in ``xfail``."""
    value: float
    lower: float = None
    upper: float = None
    unit: str = None
    xfail: str = None

    @property
    def limits(self):
        """Absolute (low, high) limits, None where unbounded."""
        return bounds(self.value, self.lower, self.upper)

    @property
    def tolerance(self):
        """``-5.0%/+inf``: the thresholds as text."""
        return tolerance_text(self.lower, self.upper)

    def same_as(self, other):
        """True when ``other`` (a Reference or None) gives the same value,
        thresholds and expected-failure mark (units and reasons aside)."""
        if other is None:
            return False
        return (_close(self.value, other.value) and _close(self.lower, other.lower)
                and _close(self.upper, other.upper) and bool(self.xfail) == bool(other.xfail))

    def __str__(self):
        text = f'{self.value:g}' + (f' {self.unit}' if self.unit else '') + \
            f' [{self.tolerance}]'
        return f'xfail ({self.xfail}) {text}' if self.xfail else text


def _close(a, b):
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def tolerance_text(lower, upper):
    """``-5.0%/+inf`` for relative thresholds (None: unbounded); '' when both are."""
    if lower is None and upper is None:
        return ''
    lo = '-inf' if lower is None else f'{lower * 100:+.1f}%'
    hi = '+inf' if upper is None else f'{upper * 100:+.1f}%'
    return f'{lo}/{hi}'


def entry_reference(entry):
    """The :class:`Reference` of a raw entry (``[value, lower, upper, unit]``
    or ``['$xfail', 'reason', [...]]``) without validating it; None when it
    has not that shape (:func:`check_entry` says what is wrong)."""
    xfail = None
    if isinstance(entry, (list, tuple)) and entry and entry[0] == '$xfail':
        if len(entry) != 3:
            return None
        xfail, entry = str(entry[1]), entry[2]
    if not isinstance(entry, (list, tuple)) or len(entry) not in (3, 4) \
            or isinstance(entry[0], str):
        return None
    value, lower, upper = entry[:3]
    return Reference(value, lower, upper, entry[3] if len(entry) == 4 else None, xfail)


def ran_against(ref, lower, upper, unit, perf_result):
    """The reference ReFrame judged a figure against when the test ran, from
    the figure store's columns of the same names (its perfvalues), or None
    when it had none (ReFrame records ``0, None, None`` then). ``xfail`` is
    set when ReFrame's verdict ``perf_result`` says it was an expected
    failure."""
    if ref is None or (ref == 0 and lower is None and upper is None):
        return None
    return Reference(ref, lower, upper, unit or None,
                     'expected failure' if perf_result in ('xfail', 'xpass') else None)


def check_entry(where, entry, expected_unit=None):
    """Validate one entry (``[value, lower, upper, unit]`` or ReFrame's
    ``['$xfail', 'reason', [...]]``); return its :class:`Reference`."""
    if isinstance(entry, list) and entry and entry[0] == '$xfail':
        if len(entry) != 3 or not isinstance(entry[1], str):
            raise ClusterproofError(f'{where}: $xfail entries are '
                                    f"['$xfail', 'reason', [value, lower, upper, unit]]")
        return check_entry(where, entry[2], expected_unit)._replace(xfail=entry[1])
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
    return Reference(value, lower, upper, unit)


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
    return validate_data(load(path), path)


def validate_data(data, path):
    """Validate every entry of ``data``, the parsed references file ``path``;
    return the number of entries. The one rule of what a valid references
    file is: ``clusterproof validate`` reads a file with it, ``bless --write``
    checks what it is about to write with it."""
    count = 0
    for where, _check, _figure, entry in iter_entries(data, path):
        check_entry(where, entry)
        count += 1
    return count


def check_references(system, check, units):
    """The references file of ``system`` when it has an entry for the check
    class ``check`` (else None), every figure of that entry validated
    against ``units`` (``{figure: unit the check reports}``): what a check
    loads into ReFrame at set-up (``checklib.base``)."""
    path = reference_file(system)
    if not path.is_file():
        return None
    body = load(path).get(check)
    if not body:
        return None
    for where, _check, figure, entry in iter_entries({check: body}, path):
        check_entry(where, entry, units.get(figure))
    return path


def bounds(ref, lower, upper):
    """Absolute (low, high) limits of a reference with relative thresholds."""
    lo = None if lower is None else ref + abs(ref) * lower
    hi = None if upper is None else ref + abs(ref) * upper
    return lo, hi
