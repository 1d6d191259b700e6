"""An acceptance contract: what a procurement commits to, item by item
(``site_config/contracts/<name>.yaml``; the schema is documented in
docs/acceptance.md, "The contract file").

:func:`load` reads and validates a contract file; every error names the
file, the key (a path such as ``items[3].tolerance``) and the value.
:func:`check_names` refuses an item naming a check, a parameter value or a
figure that the checks do not have, with the nearest real names; the
checks say what they have (:func:`clusterproof.acceptance.run.load`
reads it from ReFrame's loader). The
result is a :class:`Contract` of :class:`Item` objects; nothing else reads
the YAML. An item's committed value and tolerance are a
:class:`clusterproof.references.entries.Reference`, judged by that module.
"""

import difflib
import hashlib
import math
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from clusterproof import ClusterproofError
from clusterproof.paths import SITE_CONFIG
from clusterproof.references.direction import KNOWN_UNITS
from clusterproof.references.entries import Reference, parse_yaml, tolerance_text
from clusterproof.references.lookup import declared

#: where the contracts of a site live
CONTRACTS_DIR = SITE_CONFIG / 'contracts'

KINDS = ('committed', 'informative')
STATISTICS = ('median', 'best', 'mean')
MODES = ('smoke', 'nightly', 'acceptance')
#: results a contract may accept although they are not full-scale real ones
ALLOWED_FLAGS = ('smoke', 'emulated')
#: the validity rules an item may set, and the type of each value
VALIDITY = {
    'min_runtime_s': 'number',      # each run took at least this many seconds
    'min_data_ram_ratio': 'number',  # data moved >= k x the RAM of the nodes under test
    'data_variable': 'name',        # the recorded variable giving the data moved
    'no_stonewall': 'bool',         # no stonewalled test in the run
    'reordered_reads': 'bool',      # IOR read back by another node (-C)
    'residual_passed': 'bool',      # HPL: every residual check PASSED
}

_TOP = {'name', 'title', 'system', 'partition', 'buyer', 'vendor', 'mode', 'allow',
        'repetitions', 'statistic', 'reuse_within_days', 'checks', 'items'}
_ITEM = {'id', 'check', 'parameters', 'set', 'figure', 'committed', 'unit', 'kind',
         'statistic', 'repetitions', 'tolerance', 'validity', 'modifications', 'note'}
_ID_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.-]*$')
_TOL_RE = re.compile(r'^\s*([+-])\s*(\d+(?:\.\d+)?)\s*%\s*$')


@dataclass(frozen=True)
class Allowed:
    """An allowed modification of one recorded variable: ``any`` value, a
    closed range ``[low, high]`` or a list of ``values``."""
    name: str
    any: bool = False
    low: float = None
    high: float = None
    values: tuple = ()

    def permits(self, used):
        """'' when ``used`` (the recorded value) is allowed, else why not."""
        if self.any:
            return ''
        if used is None:
            return f'{self.name} not recorded with the run'
        if self.values:
            return '' if used in self.values or str(used) in map(str, self.values) else \
                f'{self.name}={used} not among the allowed {list(self.values)}'
        try:
            v = float(used)
        except (TypeError, ValueError):
            return f'{self.name}={used!r} is not a number (allowed {self.low}..{self.high})'
        if (self.low is not None and v < self.low) or (self.high is not None and v > self.high):
            return f'{self.name}={used} outside the allowed {_num(self.low)}..{_num(self.high)}'
        return ''

    def as_json(self):
        if self.any:
            return 'any'
        if self.values:
            return list(self.values)
        return [self.low, self.high]


@dataclass(frozen=True)
class Item:
    """One contract item: a figure of a check, committed or informative."""
    id: str
    check: str
    figure: str
    committed: float
    unit: str
    kind: str
    statistic: str
    repetitions: int
    lower: float
    upper: float
    parameters: dict = field(default_factory=dict)
    set: dict = field(default_factory=dict)
    validity: dict = field(default_factory=dict)
    modifications: tuple = ()
    note: str = ''
    #: the reason of a ``$xfail`` reference: the item is expected to miss it
    xfail: str = ''
    #: for an item made from a declared reference: its entry ``(check, keys)``
    #: (:attr:`clusterproof.references.lookup.Declared.where`), what a test
    #: case must resolve to (:func:`clusterproof.references.lookup.locate`)
    where: tuple = None

    def __hash__(self):
        return hash(self.id)

    @property
    def reference(self):
        """The committed value with its tolerance, as the judge takes it."""
        return Reference(self.committed, self.lower, self.upper, self.unit, self.xfail or None)

    @property
    def tolerance(self):
        return tolerance_text(self.lower, self.upper)

    @property
    def is_committed(self):
        return self.kind == 'committed'

    def label(self):
        """``Stream placement=cores triad``."""
        params = ' '.join(f'{k}={v}' for k, v in self.parameters.items())
        return ' '.join(x for x in (self.check, params, self.figure) if x)


@dataclass(frozen=True)
class Contract:
    name: str
    title: str
    file: Path
    sha256: str
    system: str
    partition: str
    buyer: str
    vendor: str
    mode: str
    allow: tuple
    reuse_within_days: float
    checks: str
    items: tuple
    #: a contract made from a system's references (:func:`from_references`):
    #: the parsed references its items come from
    references: dict = None
    #: ... the ReFrame options that select what each repetition runs (every
    #: check of the system in the mode when empty), instead of one ``-n`` per item
    selection: tuple = None
    #: ... and how many sessions to run
    repetitions: int = 0

    def header(self):
        """The ``contract`` object of the acceptance record."""
        return {'name': self.name, 'title': self.title, 'file': _shown(self.file),
                'sha256': self.sha256, 'system': self.system, 'partition': self.partition,
                'buyer': self.buyer, 'vendor': self.vendor}


def _shown(path):
    try:
        return str(Path(path).resolve().relative_to(SITE_CONFIG.parent))
    except ValueError:
        return str(path)


def _num(x):
    return '' if x is None else f'{x:g}'


def resolve(name_or_path):
    """A contract file given as a path or as a name in :data:`CONTRACTS_DIR`."""
    p = Path(name_or_path)
    if p.is_file() or p.suffix in ('.yaml', '.yml') or '/' in str(name_or_path):
        return p
    return CONTRACTS_DIR / f'{name_or_path}.yaml'


def load(path):
    """The validated :class:`Contract` of the file ``path``."""
    path = resolve(path)
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise ClusterproofError(f'{path}: cannot read the contract: {err.strerror}') from None
    return parse(parse_yaml(raw, path), path, hashlib.sha256(raw).hexdigest())


class _Checker:
    def __init__(self, path):
        self.path = path

    def fail(self, key, value, why):
        raise ClusterproofError(f'{self.path}: {key}: {why} (found {value!r})')

    def mapping(self, key, value, known):
        if not isinstance(value, dict):
            self.fail(key, value, 'want a mapping')
        unknown = sorted(str(k) for k in value if k not in known)
        if unknown:
            self.fail(f'{key}.{unknown[0]}' if key else unknown[0], value[unknown[0]],
                      f'unknown key (known: {", ".join(sorted(known))})')
        return value

    def text(self, key, value, default=None, required=False, pattern=None):
        if value is None:
            if required:
                self.fail(key, value, 'required')
            return default
        if not isinstance(value, str) or not value.strip():
            self.fail(key, value, 'want a non-empty string')
        if pattern and not pattern.match(value):
            self.fail(key, value, 'want letters, digits, and . _ - (no spaces)')
        return value

    def number(self, key, value, default=None, required=False, minimum=None, integer=False):
        if value is None:
            if required:
                self.fail(key, value, 'required')
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value):
            self.fail(key, value, 'want a number')
        if integer and int(value) != value:
            self.fail(key, value, 'want a whole number')
        if minimum is not None and value < minimum:
            self.fail(key, value, f'want at least {minimum}')
        return int(value) if integer else float(value)

    def choice(self, key, value, choices, default):
        if value is None:
            return default
        if value not in choices:
            self.fail(key, value, f'want one of {", ".join(choices)}')
        return value

    def scalars(self, key, value):
        if value is None:
            return {}
        self.mapping(key, value, value.keys() if isinstance(value, dict) else ())
        for k, v in value.items():
            if not isinstance(k, str) or not (v is None or isinstance(v, (str, int, float, bool))):
                self.fail(f'{key}.{k}', v, 'want a name and a single value')
        return {k: v for k, v in value.items()}


def parse_tolerance(check, key, value, lower_is_better=None):
    """``(lower, upper)`` fractions of a tolerance: ``-5%`` (at most 5 %
    below), ``+10%`` (at most 10 % above), ``-5%/+10%``, or a mapping
    ``{lower: -0.05, upper: 0.10}`` (fractions, null for no bound)."""
    if isinstance(value, dict):
        check.mapping(key, value, {'lower', 'upper'})
        lower = check.number(f'{key}.lower', value.get('lower'))
        upper = check.number(f'{key}.upper', value.get('upper'))
    elif isinstance(value, str):
        lower = upper = None
        for part in value.split('/'):
            m = _TOL_RE.match(part)
            if not m:
                check.fail(key, value, "want '-5%', '+10%', '-5%/+10%' or "
                                       "{lower: -0.05, upper: 0.10}")
            frac = float(m.group(2)) / 100
            if m.group(1) == '-':
                lower = -frac
            else:
                upper = frac
    else:
        check.fail(key, value, "want '-5%', '+10%', '-5%/+10%' or {lower: -0.05, upper: 0.10}")
    if lower is not None and not -1 <= lower <= 0:
        check.fail(key, value, 'the lower tolerance must be between -100% and 0%')
    if upper is not None and upper < 0:
        check.fail(key, value, 'the upper tolerance must be 0% or more')
    if lower is None and upper is None:
        check.fail(key, value, 'give at least one bound')
    return lower, upper


def _modifications(check, key, value):
    if value is None:
        return ()
    check.mapping(key, value, value.keys() if isinstance(value, dict) else ())
    out = []
    for name, spec in value.items():
        where = f'{key}.{name}'
        if spec == 'any':
            out.append(Allowed(name, any=True))
        elif isinstance(spec, dict):
            check.mapping(where, spec, {'min', 'max', 'values'})
            if 'values' in spec:
                vals = spec['values']
                if not isinstance(vals, list) or not vals or len(spec) > 1:
                    check.fail(where, spec, 'want {values: [a, b, ...]} alone, non-empty')
                out.append(Allowed(name, values=tuple(vals)))
            else:
                low = check.number(f'{where}.min', spec.get('min'))
                high = check.number(f'{where}.max', spec.get('max'))
                if low is None and high is None:
                    check.fail(where, spec, 'give min, max or both')
                if low is not None and high is not None and low > high:
                    check.fail(where, spec, 'min is above max')
                out.append(Allowed(name, low=low, high=high))
        else:
            check.fail(where, spec, "want 'any', {min: A, max: B} or {values: [...]}")
    return tuple(out)


def _validity(check, key, value):
    if value is None:
        return {}
    check.mapping(key, value, VALIDITY)
    out = {}
    for name, kind in VALIDITY.items():
        v = value.get(name)
        if v is None:
            continue
        where = f'{key}.{name}'
        if kind == 'number':
            out[name] = check.number(where, v, minimum=0)
        elif kind == 'bool':
            if not isinstance(v, bool):
                check.fail(where, v, 'want true or false')
            if v:
                out[name] = True
        else:
            out[name] = check.text(where, v)
    if 'min_data_ram_ratio' in out and 'data_variable' not in out:
        check.fail(f'{key}.min_data_ram_ratio', value['min_data_ram_ratio'],
                   'needs data_variable: the recorded variable giving the data the run moved')
    return out


def parse(data, path, sha256=''):
    """The :class:`Contract` of parsed YAML ``data`` (``path`` names it)."""
    path = Path(path)
    check = _Checker(path)
    if data is None:
        check.fail('(top level)', data, 'empty contract')
    check.mapping('', data, _TOP)
    name = check.text('name', data.get('name'), default=path.stem, pattern=_ID_RE)
    system = check.text('system', data.get('system'), required=True)
    mode = check.choice('mode', data.get('mode'), MODES, 'acceptance')
    allow = data.get('allow') or []
    if not isinstance(allow, list) or any(a not in ALLOWED_FLAGS for a in allow):
        check.fail('allow', allow, f'want a list of {", ".join(ALLOWED_FLAGS)}')
    reps = check.number('repetitions', data.get('repetitions'), 3, minimum=1, integer=True)
    stat = check.choice('statistic', data.get('statistic'), STATISTICS, 'median')
    reuse = check.number('reuse_within_days', data.get('reuse_within_days'), 30.0, minimum=0)
    items_raw = data.get('items')
    if not isinstance(items_raw, list) or not items_raw:
        check.fail('items', items_raw, 'want a non-empty list of items')
    items, seen = [], {}
    for i, raw in enumerate(items_raw):
        at = f'items[{i}]'
        check.mapping(at, raw, _ITEM)
        ident = check.text(f'{at}.id', raw.get('id'), required=True, pattern=_ID_RE)
        if ident in seen:
            check.fail(f'{at}.id', ident, f'the same id as items[{seen[ident]}]')
        seen[ident] = i
        unit = check.text(f'{at}.unit', raw.get('unit'), required=True)
        if unit not in KNOWN_UNITS:
            check.fail(f'{at}.unit', unit,
                       f'unknown unit (known: {", ".join(sorted(KNOWN_UNITS))})')
        if raw.get('tolerance') is None:
            check.fail(f'{at}.tolerance', None, 'required')
        lower, upper = parse_tolerance(check, f'{at}.tolerance', raw['tolerance'])
        items.append(Item(
            id=ident,
            check=check.text(f'{at}.check', raw.get('check'), required=True, pattern=_ID_RE),
            figure=check.text(f'{at}.figure', raw.get('figure'), required=True),
            committed=check.number(f'{at}.committed', raw.get('committed'), required=True),
            unit=unit,
            kind=check.choice(f'{at}.kind', raw.get('kind'), KINDS, 'committed'),
            statistic=check.choice(f'{at}.statistic', raw.get('statistic'), STATISTICS, stat),
            repetitions=check.number(f'{at}.repetitions', raw.get('repetitions'), reps,
                                     minimum=1, integer=True),
            lower=lower, upper=upper,
            parameters={k: str(v) for k, v in
                        check.scalars(f'{at}.parameters', raw.get('parameters')).items()},
            set=check.scalars(f'{at}.set', raw.get('set')),
            validity=_validity(check, f'{at}.validity', raw.get('validity')),
            modifications=_modifications(check, f'{at}.modifications',
                                         raw.get('modifications')),
            note=check.text(f'{at}.note', raw.get('note'), default='')))
    return Contract(
        name=name, title=check.text('title', data.get('title'), default=name),
        file=path, sha256=sha256, system=system,
        partition=check.text('partition', data.get('partition'), default=''),
        buyer=check.text('buyer', data.get('buyer'), default=''),
        vendor=check.text('vendor', data.get('vendor'), default=''),
        mode=mode, allow=tuple(allow), reuse_within_days=reuse,
        checks=check.text('checks', data.get('checks'), default=''),
        items=tuple(items))


def check_site(c, config=None):
    """Refuse a contract whose system or partition the site configuration
    does not declare (naming the contract file and the key)."""
    from clusterproof.site.validate import find_partition, find_system, \
        load_site_configuration
    try:
        system = find_system(config or load_site_configuration(), c.system)
    except ClusterproofError as err:
        raise ClusterproofError(f'{c.file}: system: {err}') from None
    if c.partition:
        try:
            find_partition(system, c.partition)
        except ClusterproofError as err:
            raise ClusterproofError(f'{c.file}: partition: {err}') from None
    return c


def _nearest(name, known):
    """`` (nearest: 'Stream'; known: Hpl, Stream)``: the names of ``known``
    nearest to ``name`` (difflib), then all of them."""
    known = sorted(set(known))
    near = difflib.get_close_matches(str(name), known, n=3, cutoff=0.5)
    return (f' (nearest: {", ".join(repr(n) for n in near)}; ' if near else ' (') + \
        f'known: {", ".join(known) or "none"})'


def check_names(c, cases, where=''):
    """Refuse ``c`` when an item names a check, a parameter, a parameter
    value or a figure that none of ``cases`` has (the test cases ReFrame
    loads for the contract's system and mode:
    :class:`clusterproof.reframe_io.runner.Case`). The error names the file,
    the item, the key and the nearest real names; ``where`` (``emu:srun in
    mode smoke``) says where the checks were loaded. A check that makes its
    figures at run time (none declared) takes any figure name."""
    at_where = f' on {where}' if where else ''
    for i, item in enumerate(c.items):
        at = f'{c.file}: items[{i}] ({item.id})'
        mine = [x for x in cases if x.check == item.check]
        if not mine:
            raise ClusterproofError(f'{at}: check: no check {item.check!r}{at_where}'
                                    + _nearest(item.check, (x.check for x in cases)))
        for name, value in item.parameters.items():
            values = {x.parameters[name] for x in mine if name in x.parameters}
            if not values:
                raise ClusterproofError(
                    f'{at}: parameters.{name}: check {item.check} has no parameter {name!r}'
                    + _nearest(name, (k for x in mine for k in x.parameters)))
            mine = [x for x in mine if x.parameters.get(name) == value]
            if not mine:
                raise ClusterproofError(
                    f'{at}: parameters.{name}: check {item.check} has no test case with '
                    f'{name}={value}{at_where}' + _nearest(value, values))
        figures = {f for x in mine for f in x.figures}
        if figures and item.figure not in figures:
            params = ' '.join(f'{k}={v}' for k, v in item.parameters.items())
            raise ClusterproofError(f'{at}: figure: check {item.check}'
                                    + (f' ({params})' if params else '')
                                    + f' has no figure {item.figure!r}'
                                    + _nearest(item.figure, figures))
    return c


def _make_references(system):
    """What to do when ``system`` has no references to accept it against."""
    return (f'make them from sessions you trust (docs/results.md, "References and '
            f'clusterproof bless"): clusterproof bless --system {system} --last 3 --write '
            f'--reason "baseline"; or judge the vendor\'s committed figures: clusterproof '
            f'acceptance --contract FILE (docs/acceptance.md)')


def selected(c, cases, selection):
    """Refuse the contract made from references ``c`` when none of its
    items is for a check of ``cases`` (the test cases that the ReFrame
    options ``selection`` select: :class:`clusterproof.reframe_io.runner.Case`):
    the acceptance would judge nothing. Returns ``c``."""
    checks = {x.check for x in cases}
    if not any(item.check in checks for item in c.items):
        raise ClusterproofError(
            f'acceptance --system {c.system}: none of the {len(c.items)} reference(s) of '
            f'{c.file} is for a check that {shlex.join(selection)} selects '
            f'({", ".join(sorted(checks)) or "none"}), so there is nothing to judge the '
            f'runs against; nothing was run: select checks that have references '
            f'({", ".join(sorted({i.check for i in c.items}))}), or '
            f'{_make_references(c.system)}')
    return c


def shipped():
    """The contract files shipped in :data:`CONTRACTS_DIR`."""
    return sorted(CONTRACTS_DIR.glob('*.yaml'))


def from_references(system, partitions, refs, file, *, repetitions, selection=(),
                    checks=''):
    """The contract of an acceptance of ``system`` (its ``partitions``, names)
    against its declared references ``refs`` (parsed from ``file``):
    every reference that applies (:func:`clusterproof.references.lookup.declared`)
    is a committed item, judged on the median of ``repetitions`` sessions of
    mode acceptance, each running the ReFrame options ``selection`` (``-n``,
    ``-S``... ; empty: every check of the system). Refused when it would
    have no item (no file, or none of its references applies): an
    acceptance that judges nothing accepts nothing."""
    file = Path(file)
    try:
        sha = hashlib.sha256(file.read_bytes()).hexdigest()
    except OSError:
        sha = ''    # no references file: nothing declared, nothing to hash
    items = []
    for d in sorted(declared(refs, system, partitions), key=lambda d: d.label()):
        params = {attr: key for attr, key in zip(d.index, d.keys)
                  if attr is not None and not attr.startswith('$')}
        items.append(Item(id=d.label(), check=d.check, figure=d.figure,
                          committed=d.reference.value, unit=d.reference.unit or '',
                          kind='committed', statistic='median', repetitions=repetitions,
                          lower=d.reference.lower, upper=d.reference.upper,
                          parameters=params, xfail=d.reference.xfail or '', where=d.where))
    if not items:
        what = (f'{file} has no reference for the partitions of {system} '
                f'({", ".join(partitions)})' if file.is_file() else
                f'no references for {system}: {file} does not exist')
        raise ClusterproofError(
            f'acceptance --system {system}: {what}, so there is nothing to judge the runs '
            f'against; nothing was run: {_make_references(system)}')
    name = f'{system}-references'
    return Contract(name=name, title=f'{system} against its declared references',
                    file=file, sha256=sha, system=system, partition='', buyer='', vendor='',
                    mode='acceptance', allow=(), reuse_within_days=0.0, checks=checks,
                    items=tuple(items), references=refs, selection=tuple(selection),
                    repetitions=repetitions)
