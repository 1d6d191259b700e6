"""The one judge of reference values: ``site_config/references/<system>.yaml``
in ReFrame's external-reference (``$ref``) format.

Everything that reads or applies a reference goes through this module:
loading and validating a file (:func:`load`, :func:`validate_file`), finding
the entry of a measured figure as ReFrame does (:func:`lookup`), its absolute
bounds (:func:`bounds`), the direction of a figure as its check declared it
(:func:`lower_is_better`, :func:`record_lower_is_better`),
the verdict (:class:`Verdict`, :func:`judge`) and the references a system declares
(:func:`declared`, what ``acceptance`` walks). ``compare``, ``report``,
``acceptance``, ``bless`` and the checks (``checklib.base``, at set-up) use it;
none of them reads the YAML, parses an entry or applies a bound on its own.

Each top-level key is a check's class name; under it an optional ``$index``
(test attributes such as ``threads``) and, per index value, figures as
``[value, lower, upper, unit]`` lists: ``lower`` and ``upper`` are fractions
of the value (``-0.1`` = 10 % below), ``null`` for no bound. Throughputs get
a lower bound only, latencies an upper bound only. An entry
``['$xfail', 'reason', [value, lower, upper, unit]]`` is an expected failure
(ReFrame's syntax): this module is the only one that knows it; everything
else gets a :class:`Reference` whose ``xfail`` holds the reason, and the
verdicts ``xfail`` (failed as expected, not a regression) and ``xpass``
(met the reference although a failure was expected: the mark is stale, a
failure as in ReFrame).
"""

import enum
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import yaml

from clusterproof import ClusterproofError
from clusterproof.paths import read_text, references_dir

#: units of figures where a smaller value is better (times and latencies):
#: the direction of history that declares none (see :func:`lower_is_better`)
LOWER_IS_BETTER_UNITS = {'s', 'sec', 'ms', 'msec', 'us', 'usec', 'µs', 'ns', 'nsec',
                         'min', 'h', 'cycles', 'ms/op', 'us/op'}
#: units a reference may carry
KNOWN_UNITS = LOWER_IS_BETTER_UNITS | {
    'MB/s', 'MiB/s', 'GB/s', 'GiB/s', 'kB/s', 'KiB/s', 'TB/s',
    'IOPS', 'ops/s', 'kIOPS', 'Gflop/s', 'Gflops', 'GFlop/s', 'Tflop/s', 'Tflops',
    'GUP/s', 'GUPs', 'msg/s', 'Mmsg/s', '%', 'ratio', 'GiB', 'MiB', 'count',
}


def declared_direction(declared, figure):
    """The direction ``declared`` (``{figure: lower_is_better}``, a test
    case's ``cp_lower_is_better``, see :mod:`clusterproof.reframe_io.figures`)
    gives ``figure``: True or False, None when it declares nothing (empty or
    absent); a figure missing from a declaration is an error."""
    if not declared:
        return None
    try:
        return bool(declared[figure])
    except KeyError:
        raise ClusterproofError(
            f'figure {figure!r} has no declared direction (its test case declares '
            f'{", ".join(sorted(declared)) or "none"})') from None


def lower_is_better(unit, figure='', declared=None):
    """The one direction rule: True for a figure where a smaller value is
    better.

    ``declared`` is what the figure's check declared where it defines the
    figure: the test case's ``{figure: lower_is_better}`` (see
    :func:`declared_direction`), or that figure's True/False as the figure
    store keeps it (its column ``declared_lower_is_better``). It decides. History
    that carries no declaration (None: sessions recorded before the checks
    declared directions, perflogs and CSV files imported from elsewhere) is
    read as such history has always been: time units (``s``, ``us``,
    ``ms/op`` ...) and figures whose name says latency (``lat_*``,
    ``*_latency``) are lower-is-better."""
    if isinstance(declared, dict):
        declared = declared_direction(declared, figure)
    if declared is not None:
        return bool(declared)
    if (unit or '').strip() in LOWER_IS_BETTER_UNITS:
        return True
    name = (figure or '').lower()
    return name.startswith('lat') or name.endswith('latency') or '_lat_' in name


def record_lower_is_better(rec):
    """:func:`lower_is_better` of a result record (or a history): the
    direction its test case declared (``declared_lower_is_better``, the
    figure store's column), if it declared any."""
    return lower_is_better(rec.unit, rec.figure, rec.declared_lower_is_better)


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


def reference_of_record(rec):
    """The reference ReFrame judged ``rec``'s figure against when the test
    ran (from its perfvalues), or None when it had none (ReFrame records
    ``0, None, None`` then). ``xfail`` is set when ReFrame's verdict says it
    was an expected failure."""
    if rec.ref is None or (rec.ref == 0 and rec.lower is None and rec.upper is None):
        return None
    xfail = 'expected failure' if rec.perf_result in ('xfail', 'xpass') else None
    return Reference(rec.ref, rec.lower, rec.upper, rec.unit or None, xfail)


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


def index_of(entry):
    """The ``$index`` of a check's entry (its list of test attributes), or
    None for an entry without one (or no entry)."""
    if not isinstance(entry, dict) or not entry.get('$index'):
        return None
    return list(entry['$index'])


def default_index(rec):
    """``[$partition, <parameters of the test>]``: what a check declares when
    its references depend on the partition and on its parameters."""
    return ['$partition'] + sorted(rec.params)


def _resolve(refs, rec):
    """``(keys, node)``: the keys taken through ``rec.check``'s entry and the
    mapping of figures reached for ``rec``'s test case, resolved as ReFrame
    does (index levels, an exact key first, then a key that is a regular
    expression; without ``$index``, keys ``system:partition``, ``system`` or
    ``*``); None when no entry applies."""
    entry = refs.get(rec.check)
    if not isinstance(entry, dict):
        return None
    index = index_of(entry)
    keys = []
    if index:
        node = entry
        for attr in index:
            if not isinstance(node, dict):
                return None
            key = _match_key(node, index_value(attr, rec))
            if key is None:
                return None
            keys.append(key)
            node = node[key]
    else:
        key = next((k for k in (f'{rec.system}:{rec.partition}', rec.system, '*')
                    if k in entry), None)
        if key is None:
            return None
        keys.append(key)
        node = entry[key]
    return (tuple(keys), node) if isinstance(node, dict) else None


def _match_key(node, val):
    if val in node:
        return val
    if isinstance(val, str):
        return next((k for k in node if isinstance(k, str) and not k.startswith('$')
                     and re.fullmatch(k, val)), None)
    return None


def lookup(refs, rec):
    """The :class:`Reference` of ``rec``'s figure in parsed reference data,
    resolved as ReFrame does (see :func:`locate`); None when absent."""
    found = _resolve(refs, rec)
    if found is None or rec.figure not in found[1]:
        return None
    return entry_reference(found[1][rec.figure])


def locate(refs, rec):
    """``(check, keys)``: which entry of ``refs`` the test case of ``rec``
    resolves to (the same identity :func:`declared` gives), or None."""
    found = _resolve(refs, rec)
    return None if found is None else (rec.check, found[0])


class Declared(NamedTuple):
    """A reference a system declares: check class, the index attributes
    and the keys taken at each level, the figure, its :class:`Reference`."""
    check: str
    index: tuple
    keys: tuple
    figure: str
    reference: Reference

    @property
    def where(self):
        """``(check, keys)``, as :func:`locate` names a test case's entry."""
        return (self.check, self.keys)

    def label(self):
        """``IorSharedFile threads=16 @pixstor:clients write_bw``."""
        parts, at = [], ''
        for attr, key in zip(self.index, self.keys):
            if attr in ('$partition', '$system', None):
                at = f' @{key}'
            else:
                parts.append(f'{attr.lstrip("$")}={key}')
        return ' '.join([self.check] + parts) + at + f' {self.figure}'


def declared(refs, system, partitions):
    """Every reference of parsed ``refs`` that applies to ``system`` with
    its ``partitions`` (names): what an acceptance must measure. A
    ``$partition`` level applies with keys ``system:partition`` (or a
    regular expression matching one), a ``$system`` level with ``system``;
    any other attribute with every key. Without ``$index``: the key ReFrame
    takes for each partition (``system:partition``, else ``system``, else
    ``*``)."""
    full = [f'{system}:{p}' for p in partitions]
    out = []
    for check, entry in refs.items():
        if not isinstance(entry, dict):
            continue
        index = index_of(entry)
        body = {k: v for k, v in entry.items() if k != '$index'}
        if index:
            levels = [(attr, _applying(body, attr, system, full)) for attr in index]
            out += _declared_walk(check, tuple(index), body, levels, ())
        else:
            used = []
            for name in full:
                key = next((k for k in (name, system, '*') if k in body), None)
                if key is not None and key not in used:
                    used.append(key)
            for key in used:
                out += _declared_walk(check, (None,), {key: body[key]},
                                      [(None, lambda node: [key])], ())
    return out


def _applying(body, attr, system, full):
    """The keys of a level of ``attr`` that apply to the system (a function of
    the node, since each node has its own keys)."""
    if attr == '$partition':
        names = full
    elif attr == '$system':
        names = [system]
    else:
        return lambda node: [k for k in node if not (isinstance(k, str) and k.startswith('$'))]
    return lambda node: [k for k in node
                         if any(_match_key(node, n) == k for n in names)]


def _declared_walk(check, index, node, levels, keys):
    if not levels:
        out = []
        for figure, entry in node.items():
            ref = entry_reference(entry)
            if ref is not None:
                out.append(Declared(check, index, keys, figure, ref))
        return out
    out = []
    for key in levels[0][1](node):
        child = node.get(key)
        if isinstance(child, dict):
            out += _declared_walk(check, index, child, levels[1:], keys + (key,))
    return out


def bounds(ref, lower, upper):
    """Absolute (low, high) limits of a reference with relative thresholds."""
    lo = None if lower is None else ref + abs(ref) * lower
    hi = None if upper is None else ref + abs(ref) * upper
    return lo, hi


# -- judging ------------------------------------------------------------------

class Verdict(enum.StrEnum):
    """The one verdict vocabulary: of a figure, a test case, an acceptance
    item (of the declared references or of a contract), a screened node and
    a node probed for persistent memory. :func:`judge` and every judge
    (``analysis.compare``, ``acceptance``,
    ``screen.judge``, ``site.pmem``) give one, with its reason in a
    :class:`Judgement`. Its value is the one text every output and every
    record shows; :attr:`failing` and :attr:`bucket` say what it counts as
    (nothing parses the text back; :meth:`read` reads a recorded one)."""
    PASS = 'pass'                   # inside the bounds; a node like its peers; a fit node
    REGRESSION = 'REGRESSION'       # beyond the bound on the worse side
    OUT_OF_BOUNDS = 'OUT-OF-BOUNDS'  # beyond a bound on the better side (ReFrame fails it too)
    XFAIL = 'xfail'                 # beyond a bound of a $xfail reference: failed as expected
    XPASS = 'xpass'                 # met a $xfail reference: a stale mark, a failure
    FAILED = 'FAILED'               # nothing measured, the check failed, the node unfit (reason)
    SKIPPED = 'skipped'             # the test case was skipped
    NO_REF = 'no-ref'               # nothing to judge against
    NOT_JUDGED = 'not judged'       # a smoke or emulated figure shown beside a real reference
    MISSING = 'missing'             # in the base session, not in the new one; a node without result
    NOT_ACCEPTED = 'not accepted'   # acceptance: smoke or emulated figures are never accepted
    SLOW = 'slow'                   # screening: a node worse than its peers or its reference
    FAIL = 'fail'                   # a contract's committed item that missed its commitment
    NOT_MEASURED = 'not measured'   # a contract's item without any run
    INVALID = 'invalid'             # a contract's item with runs, too few of them valid
    REPORTED = 'reported'           # a contract's informative item: reported, never judged

    @property
    def failing(self):
        """True for a verdict that fails a comparison, an acceptance or a
        screening (``xpass`` as ReFrame counts it: an expected failure that
        did not happen)."""
        return self in _FAILING

    @property
    def bucket(self):
        """The :class:`Bucket` this verdict is counted in (the report's
        counts, ``results.report.BUCKETS``), else its own text."""
        return _BUCKETS.get(self, self.value)

    @classmethod
    def read(cls, text):
        """The verdict a record or an output spelled ``text``, old spellings
        included (a screening before the one vocabulary wrote ``ok`` and
        ``failed``, a comparison ``not-judged``); a ValueError naming the
        text when it is none."""
        if isinstance(text, cls):
            return text
        text = str(text)
        found = _OLD_SPELLINGS.get(text, text)
        try:
            return cls(found)
        except ValueError:
            raise ValueError(f'{text!r} is not a verdict (known: '
                             f'{", ".join(v.value for v in cls)})') from None


class Bucket(enum.StrEnum):
    """What a verdict is counted as on the report's first screen: the name
    of the verdict it counts with, in lower case and words (``REGRESSION``
    is counted as ``regression``, ``OUT-OF-BOUNDS`` as ``out of bounds``,
    ``no-ref`` with ``not judged``)."""
    PASS = Verdict.PASS.value
    REGRESSION = Verdict.REGRESSION.lower()
    FAILED = Verdict.FAILED.lower()
    SKIPPED = Verdict.SKIPPED.value
    NOT_JUDGED = Verdict.NOT_JUDGED.value
    OUT_OF_BOUNDS = Verdict.OUT_OF_BOUNDS.lower().replace('-', ' ')


_FAILING = frozenset({Verdict.REGRESSION, Verdict.OUT_OF_BOUNDS, Verdict.XPASS,
                      Verdict.FAILED, Verdict.NOT_ACCEPTED, Verdict.SLOW, Verdict.FAIL, Verdict.NOT_MEASURED, Verdict.INVALID})
_BUCKETS = {Verdict.PASS: Bucket.PASS, Verdict.REGRESSION: Bucket.REGRESSION,
            Verdict.FAILED: Bucket.FAILED, Verdict.SKIPPED: Bucket.SKIPPED,
            Verdict.NO_REF: Bucket.NOT_JUDGED, Verdict.NOT_JUDGED: Bucket.NOT_JUDGED,
            Verdict.OUT_OF_BOUNDS: Bucket.OUT_OF_BOUNDS}
#: spellings written before the one vocabulary, read as the verdict they meant
_OLD_SPELLINGS = {'ok': 'pass', 'failed': 'FAILED', 'not-judged': 'not judged'}
#: verdicts that fail a comparison, an acceptance or a screening
FAILING = tuple(v for v in Verdict if v.failing)


@dataclass(frozen=True)
class Judgement:
    """A :class:`Verdict` with its ``reason`` (why an item failed, which
    bound a figure crossed; '' when nothing needs saying) and the absolute
    ``bounds`` (low, high) it was judged against."""
    verdict: Verdict
    reason: str = ''
    bounds: tuple = (None, None)

    @property
    def failing(self):
        return self.verdict.failing

    def __str__(self):
        return f'{self.verdict} ({self.reason})' if self.reason else str(self.verdict)


def judge(value, ref, lower, upper, lower_is_better, xfail=None):
    """The :class:`Judgement` of ``value`` against ``ref`` with relative
    thresholds, as ReFrame judges a performance figure: ``pass`` inside the
    bounds; outside, ``REGRESSION`` on the worse side and ``OUT-OF-BOUNDS``
    on the better side (a throughput above its upper bound: ReFrame fails
    it, and so does this judge; the reason says so: re-bless or widen the
    bound); ``no-ref`` without a reference; ``FAILED`` without a finite
    value. For an expected failure (``xfail``, the reason of a ``$xfail``
    entry), as ReFrame: ``xfail`` where it would fail, ``xpass`` where it
    would pass."""
    if ref is None:
        return Judgement(Verdict.NO_REF)
    lo, hi = bounds(ref, lower, upper)
    if value is None or not math.isfinite(value):
        return Judgement(Verdict.FAILED, 'no finite value', (lo, hi))
    below = lo is not None and value < lo
    above = hi is not None and value > hi
    if not (below or above):
        verdict, why = Verdict.PASS, ''
    else:
        side = f'below the lower bound {lo:.5g}' if below else f'above the upper bound {hi:.5g}'
        worse = above if lower_is_better else below
        verdict = Verdict.REGRESSION if worse else Verdict.OUT_OF_BOUNDS
        why = side if worse else f'{side}, on the better side; ReFrame fails it too'
    if xfail:
        if verdict == Verdict.PASS:
            return Judgement(Verdict.XPASS, f'met a reference marked $xfail ({xfail})', (lo, hi))
        return Judgement(Verdict.XFAIL, f'{why}; expected: {xfail}', (lo, hi))
    return Judgement(verdict, why, (lo, hi))


def judge_reference(value, reference, lower_is_better):
    """:func:`judge` of ``value`` against a :class:`Reference` (None: ``no-ref``)."""
    if reference is None:
        return Judgement(Verdict.NO_REF)
    return judge(value, reference.value, reference.lower, reference.upper,
                 lower_is_better, reference.xfail)
