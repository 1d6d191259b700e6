"""Figures of the figure store in the formats other tools read.

- ``csv``: one row per figure, in the CSV history format that ``clusterproof
  store import`` reads back (:func:`clusterproof.store.csvhistory.read_csv`):
  ``timestamp`` (the session's start), ``system``, ``partition``, ``test``
  (name, parameters and `` +environ``), ``figure``, ``value``, ``unit``,
  ``session``, ``flags``, then the columns the import keeps as provenance and
  the judgement ReFrame made;
- ``parquet``: the selected rows of the store, every column, one file;
- ``bmf``: Bencher Metric Format, ``{benchmark: {measure: {value,
  lower_value, upper_value}}}``, of one session;
- ``openmetrics``: the OpenMetrics text exposition format of one session,
  for a Prometheus pushgateway (or VictoriaMetrics' Prometheus import);
- ``rules``: Prometheus alerting rules (:func:`to_rules`), one per figure of
  the selection that has a reference today, firing when the figure as
  ``openmetrics`` exports it leaves its reference band; or, with no figure
  to select, from the reference files alone (:func:`rules_of_references`).

Only rows with a figure and a finite value are figures (a test case that
measured nothing has none to export; Parquet keeps its row). Within one
session a figure measured twice (a retried test case) is exported once, as
measured last, in BMF and OpenMetrics, where one name holds one value.
"""

import csv
import datetime
import io
import json
import re
from pathlib import Path

import polars as pl
import yaml

from clusterproof import ClusterproofError, paths, store
from clusterproof.references import entries, lookup
from clusterproof.reframe_io import database as rfdb

FORMATS = ('csv', 'parquet', 'bmf', 'openmetrics', 'rules')
#: formats that hold one session's figures (one value per name)
ONE_SESSION = ('bmf', 'openmetrics')

#: the CSV columns, the history format's first (``clusterproof store import``)
CSV_COLUMNS = ('timestamp', 'system', 'partition', 'test', 'figure', 'value', 'unit',
               'session', 'flags', 'environ', 'time', 'mode', 'ref', 'lower', 'upper',
               'perf_result', 'result', *rfdb.PROVENANCE_COLUMNS)

#: Bencher's longest names: a benchmark's, a measure's
BMF_BENCHMARK_MAX = 1024
BMF_MEASURE_MAX = 64

#: the OpenMetrics family of every figure: ``clusterproof_figure_<unit>``
OM_PREFIX = 'clusterproof_figure'
OM_LABELS = ('system', 'partition', 'environ', 'test', 'figure', 'unit', 'mode')


def measured(rows):
    """The rows of ``rows`` (store rows) that hold a figure with a finite value."""
    return rows.filter((pl.col('figure') != '') & pl.col('value').is_not_null()
                       & pl.col('value').is_finite())


def export(rows, fmt):
    """``rows`` (store rows of the selection, a DataFrame) in format ``fmt``:
    text, or bytes for Parquet. An unknown format, no figures, or several
    sessions for a one-session format is an error saying so."""
    if fmt not in FORMATS:
        raise ClusterproofError(f'export format {fmt!r} unknown; the formats are '
                                f'{", ".join(FORMATS)}')
    figs = measured(rows)
    if not figs.height:
        sessions = sorted(rows['session'].unique())
        raise ClusterproofError(
            f'no figures to export: the {len(sessions)} selected session(s) '
            f'({", ".join(s[:8] for s in sessions) or "none"}) hold '
            f'{rows.height} test case row(s), none with a measured figure')
    if fmt == 'parquet':
        buf = io.BytesIO()
        rows.write_parquet(buf, compression='zstd', statistics=True)
        return buf.getvalue()
    if fmt == 'csv':
        return to_csv(figs)
    if fmt == 'rules':
        raise ClusterproofError('--format rules is made from records and their references: '
                                'call to_rules')
    sessions = figs['session'].unique()
    if len(sessions) != 1:
        raise ClusterproofError(
            f'--format {fmt} holds the figures of one session (one value per name); '
            f'the selection has {len(sessions)}: choose one with --session ID '
            f'(the default is the newest)')
    figs = _last_measured(figs)
    return to_bmf(figs) if fmt == 'bmf' else to_openmetrics(figs)


def write(data, path):
    """Write ``data`` (text or bytes) to ``path`` atomically: a temporary file
    beside it, synced and renamed; nothing is left half-written."""
    path = Path(path)
    raw = data.encode() if isinstance(data, str) else data
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        paths.replace_synced(path, lambda tmp: Path(tmp).write_bytes(raw))
    except OSError as err:
        raise ClusterproofError(f'cannot write {path}: {err.strerror or err}') from None
    return path


def _last_measured(figs):
    """One row per figure of the store's identity, the one measured last."""
    return figs.sort('time').unique(list(store.IDENTITY), keep='last',
                                    maintain_order=True).sort(list(store.IDENTITY))


def _flags(row):
    return ' '.join(f for f in ('smoke', 'emulated') if row[f])


def _iso(t):
    return '' if t is None else datetime.datetime.fromtimestamp(
        t, datetime.timezone.utc).isoformat()


# -- CSV ------------------------------------------------------------------------------

def to_csv(figs):
    """One line per figure; ``test`` carries the environment as `` +environ``,
    as the CSV history format does (``environ`` is there too, for reading)."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator='\n')
    w.writerow(CSV_COLUMNS)
    for row in figs.sort(['start', 'session', 'system', 'partition', 'test',
                          'figure']).iter_rows(named=True):
        cells = dict(row, timestamp=_iso(row['start']), time=_iso(row['time']),
                     flags=_flags(row),
                     test=f'{row["test"]} +{row["environ"]}' if row['environ'] else row['test'])
        w.writerow(['' if cells[c] is None else cells[c] for c in CSV_COLUMNS])
    return out.getvalue()


# -- Bencher Metric Format ------------------------------------------------------------

def benchmark_name(row):
    """``system:partition:environ/test``, `` [smoke]`` / `` [emulated]`` added
    so that such figures have their own history in Bencher too."""
    name = f'{row["system"]}:{row["partition"]}:{row["environ"]}/{row["test"]}'
    return name + ''.join(f' [{f}]' for f in ('smoke', 'emulated') if row[f])


def measure_name(row):
    """``figure (unit)``: a Bencher measure holds one unit, named by the
    site in Bencher; the unit in the name keeps apart figures of one name
    in different units."""
    return f'{row["figure"]} ({row["unit"]})' if row['unit'] else row['figure']


def reference_bounds(row):
    """(low, high) of the reference ReFrame judged the figure with, None
    where unbounded or without a reference (:func:`entries.ran_against`)."""
    ref = entries.ran_against(row['ref'], row['lower'], row['upper'], row['unit'],
                              row['perf_result'])
    return (None, None) if ref is None else ref.limits


def to_bmf(figs):
    out = {}
    for row in figs.iter_rows(named=True):
        benchmark, measure = benchmark_name(row), measure_name(row)
        if len(benchmark) > BMF_BENCHMARK_MAX:
            raise ClusterproofError(f'benchmark name {benchmark[:80]!r}...: {len(benchmark)} '
                                    f'characters, Bencher takes at most {BMF_BENCHMARK_MAX}')
        if len(measure) > BMF_MEASURE_MAX:
            raise ClusterproofError(f'measure name {measure!r} of {benchmark}: {len(measure)} '
                                    f'characters, Bencher takes at most {BMF_MEASURE_MAX}')
        metric = {'value': row['value']}
        low, high = reference_bounds(row)
        if low is not None:
            metric['lower_value'] = low
        if high is not None:
            metric['upper_value'] = high
        out.setdefault(benchmark, {})[measure] = metric
    return json.dumps(out, indent=2, sort_keys=True) + '\n'


# -- OpenMetrics ----------------------------------------------------------------------

_OM_BAD = re.compile(r'[^a-zA-Z0-9_:]')


def om_unit(unit):
    """A unit as OpenMetrics names it: ``MB/s`` -> ``MB_per_s``, ``%`` ->
    ``percent``; other characters outside [a-zA-Z0-9_:] become ``_``."""
    text = _OM_BAD.sub('_', unit.replace('/', '_per_').replace('%', 'percent'))
    return re.sub('_+', '_', text).strip('_')


def om_family(unit):
    """``clusterproof_figure_<unit>`` (OpenMetrics: a unit ends the name)."""
    u = om_unit(unit or '')
    return f'{OM_PREFIX}_{u}' if u else OM_PREFIX


def _om_escape(text):
    return str(text).replace('\\', '\\\\').replace('\n', '\\n').replace('"', '\\"')


def to_openmetrics(figs):
    """One gauge family per unit, one sample per figure, labelled with the
    figure's identity, unit, mode and whether it is smoke or emulated; no
    timestamps (a pushgateway refuses them; the receiver stamps the push)."""
    families = {}
    for row in figs.iter_rows(named=True):
        families.setdefault(om_family(row['unit']), []).append(row)
    lines = []
    for name in sorted(families):
        rows = families[name]
        units = sorted({r['unit'] for r in rows})
        lines.append(f'# TYPE {name} gauge')
        unit = om_unit(units[0] or '')
        if unit:
            lines.append(f'# UNIT {name} {unit}')
        what = f'in {", ".join(units)}' if unit else 'without a unit'
        lines.append(f'# HELP {name} {_om_escape(f"clusterproof figures {what}")} '
                     f'(the figure label names each)')
        for r in rows:
            labels = [f'{k}="{_om_escape(r[k])}"' for k in OM_LABELS]
            labels += [f'{f}="{str(bool(r[f])).lower()}"' for f in ('smoke', 'emulated')]
            lines.append(f'{name}{{{",".join(labels)}}} {float(r["value"])!r}')
    lines.append('# EOF')
    return '\n'.join(lines) + '\n'


# -- Prometheus alerting rules --------------------------------------------------------

#: the alert of a figure out of its reference band, and the rule group's name
RULE_ALERT = 'ClusterproofFigureOutOfBand'
RULE_GROUP = 'clusterproof-references'


def _om_selector(rec):
    """The series ``openmetrics`` exports ``rec``'s figure as: its family and
    every label but ``mode`` (a figure keeps its band whatever mode ran it)."""
    labels = [f'{k}="{_om_escape(getattr(rec, k) or "")}"' for k in OM_LABELS if k != 'mode']
    labels += [f'{f}="{str(bool(getattr(rec, f))).lower()}"' for f in ('smoke', 'emulated')]
    return f'{om_family(rec.unit)}{{{",".join(labels)}}}'


def banded(recs, refs_by_system=None):
    """``[(record, Reference)]``: the newest record of each figure of
    ``recs`` (never a smoke figure: never judged) and its reference in the
    reference files today; figures without one, or with an expected failure
    (``$xfail``), or unbounded on both sides are left out."""
    refs_by_system = {} if refs_by_system is None else refs_by_system
    newest = {}
    for r in recs:
        if r.figure and not r.smoke and r.value is not None:
            if r.key not in newest or r.times.completed >= newest[r.key].times.completed:
                newest[r.key] = r
    out = []
    for key in sorted(newest):
        r = newest[key]
        ref = lookup.lookup(lookup.references_for(refs_by_system, r.system, r.emulated), r)
        if ref is None or ref.xfail or ref.limits == (None, None):
            continue
        out.append((r, ref))
    return out


def _num(x):
    return repr(float(x))


def _rule(system, selector, ref, unit, what):
    """``(system, rule)``: the alert firing while the series ``selector``
    (of ``what``, a text of its test, figure and place) leaves the band of
    ``ref``."""
    low, high = ref.limits
    parts = ([f'{selector} < {_num(low)}'] if low is not None else []) + \
            ([f'{selector} > {_num(high)}'] if high is not None else [])
    expr = parts[0] if len(parts) == 1 else f'({parts[0]}) or ({parts[1]})'
    band = (f'[{"-inf" if low is None else f"{low:.6g}"}, '
            f'{"+inf" if high is None else f"{high:.6g}"}]')
    unit = f' {unit}' if unit else ''
    return system, {
        'alert': RULE_ALERT, 'expr': expr,
        'labels': {'severity': 'critical', 'kind': 'regression', 'reference': f'{ref.value:g}'},
        'annotations': {
            'summary': f'{what} is {{{{ $value }}}}{unit}, outside its reference band '
                       f'{band}{unit} (reference {ref.value:g}{unit}, {ref.tolerance})'}}


def to_rules(pairs):
    """Prometheus alerting rules (YAML, the format ``promtool check rules``
    and vmalert read) of ``pairs`` (:func:`banded`): per system one group,
    per figure one rule whose expression selects the figure's series and
    keeps it when below the band's low limit or above its high limit."""
    return _rules_yaml(_rule(r.system, _om_selector(r), ref, r.unit,
                             f'{r.test} {r.figure} on {r.system}:{r.partition}')
                       for r, ref in pairs)


def _rules_yaml(rules):
    """The rules file of ``(system, rule)`` pairs: one group per system."""
    groups = {}
    for system, rule in rules:
        groups.setdefault(system, []).append(rule)
    doc = {'groups': [{'name': f'{RULE_GROUP}-{system}', 'rules': rules}
                      for system, rules in sorted(groups.items())]}
    return yaml.safe_dump(doc, sort_keys=False, width=1000)


# -- alerting rules from the reference files alone ----------------------------------

def reference_files(directory, system=None):
    """``[(system, emulated, path)]`` of the reference files in ``directory``
    (``<system>.yaml``, ``<system>.emulated.yaml``), of ``system`` only when given."""
    out = []
    for path in sorted(Path(directory).glob('*.yaml')):
        name, emulated = path.name.removesuffix('.yaml'), path.name.endswith('.emulated.yaml')
        name = name.removesuffix('.emulated')
        if system in (None, name):
            out.append((name, emulated, path))
    return out


def _regex(key):
    """A reference key (a value, or a regular expression ReFrame matches
    whole) as a PromQL regular expression (RE2, matched whole), escaped."""
    return str(key).replace('\\', '\\\\').replace('"', '\\"')


def _place_matchers(attr, key):
    """The label matchers one index level (``attr`` at ``key``) of an entry
    selects: a partition, an environment or a parameter of the test name."""
    if attr == '$system':
        return []
    if attr == '$partition':
        part = str(key).split(':', 1)[1] if ':' in str(key) else str(key)
        return [f'partition=~"{_regex(part)}"']
    if attr == '$environ':
        return [f'environ=~"{_regex(key)}"']
    return [f'test=~".* %{re.escape(attr)}=(?:{_regex(key)})( .*)?"']


def _entry_matchers(index, keys):
    """The matchers of an entry reached through ``keys``: by ``index`` (its
    ``$index``), else a key ``system:partition``, ``system`` or ``*``."""
    if index:
        return [m for attr, key in zip(index, keys) for m in _place_matchers(attr, key)]
    key = str(keys[0])
    return [f'partition="{_om_escape(key.split(":", 1)[1])}"'] if ':' in key else []


def _entries(data):
    """``(check, index, keys, figure, entry)`` of every entry of the parsed
    reference file ``data``: ``keys`` the keys of its index levels."""
    for check, body in data.items():
        index = lookup.index_of(body)
        rest = {k: v for k, v in body.items() if k != '$index'}
        yield from ((check, index, keys, figure, entry)
                    for keys, figure, entry in _walk(rest, len(index) if index else 1))


def _walk(node, depth, keys=()):
    for key, val in node.items():
        if depth == 0:
            yield keys, key, val
        elif isinstance(val, dict):
            yield from _walk(val, depth - 1, (*keys, key))


def reference_rules(files):
    """``(system, rule)`` of every bounded reference (no ``$xfail``) of the
    reference ``files`` (:func:`reference_files`): the rule of each series
    ``openmetrics`` would export of that figure, found by its labels
    (system, the test's check and its index parameters as ``%name=value`` of
    the test name, partition, environment, figure, unit, not smoke,
    emulated for ``<system>.emulated.yaml``), labelled ``entry`` with the
    file and keys of its reference: no results database needed."""
    for system, emulated, path in files:
        entries.validate_file(path)
        for check, index, keys, figure, entry in _entries(entries.load(path)):
            ref = entries.entry_reference(entry)
            if ref is None or ref.xfail or ref.limits == (None, None):
                continue
            labels = [f'system="{_om_escape(system)}"', f'test=~"{re.escape(check)}( .*)?"',
                      *_entry_matchers(index, keys), f'figure="{_om_escape(figure)}"',
                      f'unit="{_om_escape(ref.unit or "")}"', 'smoke="false"',
                      f'emulated="{str(emulated).lower()}"']
            system, rule = _rule(system, f'{om_family(ref.unit)}{{{",".join(labels)}}}', ref,
                                 ref.unit, f'{{{{ $labels.test }}}} {figure} on {system}:'
                                           f'{{{{ $labels.partition }}}}')
            # the entry it comes from, which also tells two rules of one band apart
            entry = '.'.join(map(str, (check, *keys, figure)))
            rule['labels']['entry'] = f'{path.name}: {entry}'
            yield system, rule


def rules_of_references(directory, system=None):
    """The alerting rules of the reference files of ``directory`` (of
    ``system`` only when given), and how many figures they cover."""
    rules = list(reference_rules(reference_files(directory, system)))
    return _rules_yaml(rules), len(rules)
