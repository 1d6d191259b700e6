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
  for a Prometheus pushgateway (or VictoriaMetrics' Prometheus import).

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
from types import SimpleNamespace

import polars as pl

from clusterproof import ClusterproofError, store
from clusterproof.references import judge
from clusterproof.reframe_io import database as rfdb

FORMATS = ('csv', 'parquet', 'bmf', 'openmetrics')
#: formats that hold one session's figures (one value per name)
ONE_SESSION = ('bmf', 'openmetrics')

#: the CSV columns, the history format's first (``clusterproof store import``)
CSV_COLUMNS = ('timestamp', 'system', 'partition', 'test', 'figure', 'value', 'unit',
               'session', 'flags', 'environ', 'time', 'mode', 'ref', 'lower', 'upper',
               'perf_result', 'result', *rfdb.PROVENANCE)

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
        store._write_synced(path, lambda tmp: Path(tmp).write_bytes(raw))
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
    where unbounded or without a reference (:func:`judge.reference_of_record`)."""
    ref = judge.reference_of_record(SimpleNamespace(**row))
    return (None, None) if ref is None else ref.limits


def to_bmf(figs):
    out = {}
    for row in figs.iter_rows(named=True):
        bench, measure = benchmark_name(row), measure_name(row)
        if len(bench) > BMF_BENCHMARK_MAX:
            raise ClusterproofError(f'benchmark name {bench[:80]!r}...: {len(bench)} '
                                    f'characters, Bencher takes at most {BMF_BENCHMARK_MAX}')
        if len(measure) > BMF_MEASURE_MAX:
            raise ClusterproofError(f'measure name {measure!r} of {bench}: {len(measure)} '
                                    f'characters, Bencher takes at most {BMF_MEASURE_MAX}')
        metric = {'value': row['value']}
        low, high = reference_bounds(row)
        if low is not None:
            metric['lower_value'] = low
        if high is not None:
            metric['upper_value'] = high
        out.setdefault(bench, {})[measure] = metric
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
