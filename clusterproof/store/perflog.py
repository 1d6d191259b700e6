"""ReFrame's perflogs: the reader of perflogs (kept by this project or
written elsewhere); the format of the perflog handler is
:mod:`clusterproof.reframe_io.perflog_fields`'s.

``|``-separated fields with the header line ReFrame writes at the top of each
file; a figure is the field under the header ``<name>_value``
(``<name>_var=<name>_value`` when the format logs the name too, as
``site_config/settings.py`` does), its unit under ``<name>_unit``;
``perflog_multiline`` files (``perf_var``, ``perf_value``, ``perf_unit``)
too. System, partition, test and environment come from their fields, else
from ``check_info`` (``Name /hash @system:partition+environ``), else from the
path ``<system>/<partition>/<check>.log``.
"""

import math
import re
from dataclasses import dataclass
from pathlib import Path

from clusterproof import ClusterproofError
from clusterproof.store import history
from clusterproof.store.sessions import PROVENANCE
from clusterproof.reframe_io.perflog_fields import SHELL_FIELDS

#: a perflog: ``<check>.log``, or ``<check>.log.h<N>``, where ReFrame moves a
#: perflog whose header changed (a new perflog format, a check's new variable)
_PERFLOG_NAME = re.compile(r'\.log(\.h\d+)?$')


def perflog_files(path):
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.rglob('*.log*') if _PERFLOG_NAME.search(p.name)
                       and p.is_file())
        if not files:
            raise ClusterproofError(f'{path}: no perflogs (*.log, *.log.h<N>) in this '
                                    f'directory')
        return files
    if not path.is_file():
        raise ClusterproofError(f'{path}: no such file or directory')
    return [path]


def _flag(v):
    return str(v).strip().lower() in ('true', '1', 'yes')


def read_perflog(path):
    """Rows of one perflog file (see :func:`clusterproof.store.history.collect`)."""
    path = Path(path)
    try:
        lines = path.read_text(errors='replace').splitlines()
    except OSError as err:
        raise ClusterproofError(f'{path}: cannot read ({err.strerror})') from None
    if not lines:
        return []
    layout = _layout(path, lines[0].split('|'))
    rows, errors = [], []
    for lineno, line in enumerate(lines[1:], start=2):
        if line.strip():
            rows += _line_rows(layout, f'{path}:{lineno}', line, errors)
    history.refuse(path, errors)
    return rows


@dataclass(frozen=True)
class _Layout:
    """What the header of one perflog says: its fields, the column of each,
    the figures' columns, the columns read, the values known to fill each
    column, and the system and partition its path names."""
    path: Path
    header: list
    col: dict
    figures: list
    read: list
    known: dict
    system: str
    partition: str


def _layout(path, header):
    if 'job_completion_time' not in header:
        raise ClusterproofError(
            f'{path}:1: no perflog header (the first line names the fields, '
            f'job_completion_time among them); ReFrame writes one at the top of every perflog')
    col = {name: i for i, name in enumerate(header)}
    figures = _figure_columns(header, col)
    if not figures:
        raise ClusterproofError(
            f'{path}:1: no performance figures in the header (fields <name>_value, or '
            f'perf_var and perf_value with perflog_multiline)')
    # the columns read: none may be lost to a "|" in a shell field (_realign)
    read = [col[k] for k in ('job_completion_time', 'result', 'info', 'system', 'partition',
                             'name', 'display_name', 'environ', 'cp_smoke', 'cp_emulated',
                             'reframe version', 'perf_var', *PROVENANCE) if k in col]
    read += [i for _, v, u in figures for i in (v, u) if i is not None]
    parts = path.parts
    return _Layout(path, header, col, figures, read, _known_values(header, col, figures, path),
                   parts[-3] if len(parts) >= 3 else '', parts[-2] if len(parts) >= 2 else '')


def _fields(layout, where, line, errors):
    """The fields of one line, realigned where a shell field holds "|";
    None (with the error in ``errors``) when they cannot be told apart."""
    header = layout.header
    f = line.split('|')
    if len(f) > len(header):
        f = _realign(header, f, layout.known)
    if len(f) != len(header):
        errors.append(f'{where}: {len(f)} fields, the header has {len(header)}')
        return None
    lost = [header[i] for i in layout.read if f[i] is None]
    if lost:
        errors.append(f'{where}: {len(line.split("|"))} fields, the header has '
                      f'{len(header)}: fields of the job script hold "|", and '
                      f'{", ".join(lost)} cannot be told apart from them')
        return None
    return f


def _line_rows(layout, where, line, errors):
    """The rows of one line of a perflog (none for a failed test case)."""
    col = layout.col
    f = _fields(layout, where, line, errors)
    if f is None:
        return []
    try:
        t = history.parse_time(f[col['job_completion_time']])
    except ValueError:
        errors.append(f'{where}: job_completion_time {f[col["job_completion_time"]]!r} '
                      f'is not an ISO 8601 time')
        return []
    if 'result' in col and f[col['result']] not in ('pass', ''):
        return []           # a failed test case's figures are not history
    system, part, test = _identity(f, col, layout.system, layout.partition, layout.path)
    flags = tuple(x for x in ('smoke', 'emulated')
                  if f'cp_{x}' in col and _flag(f[col[f'cp_{x}']]))
    prov = {k: f[col[k]] for k in PROVENANCE if k in col}
    version = f[col['reframe version']] if 'reframe version' in col else ''
    if version:
        prov['reframe_version'] = version.replace('reframe', '').strip()
    return [(system, part, test, name, unit, flags, history.Point(t, value, '', where, prov))
            for name, value, unit in _figures(layout, f, where, errors)]


def _figures(layout, f, where, errors):
    """``(figure, value, unit)`` of each figure the line measured."""
    for fig, i, unit_col in layout.figures:
        cell = f[i]
        if fig is None:             # perflog_multiline: the figure is in perf_var
            fig = f[layout.col['perf_var']]
        if not cell or not fig:
            continue
        name, eq, raw = cell.partition('=')
        if not eq:
            name, raw = fig, cell
        if raw in ('None', 'null', ''):
            continue                # a figure ReFrame could not measure
        try:
            value = float(raw)
        except ValueError:
            errors.append(f'{where}: figure {name or fig}: value {raw!r} is not a number')
            continue
        if math.isfinite(value):    # ReFrame logs nan for a figure it could not measure
            yield name or fig, value, f[unit_col] if unit_col is not None else ''


def _realign(header, f, known):
    """The fields of a line that has more of them than ``header``: a ``|``
    in a field of :data:`SHELL_FIELDS` (perflogs written before they were
    left out) split it. Each column's shift is known from an anchor where
    no such field lies between: the line's start (shift 0), its end (all
    the extra fields), a column whose value ``known`` recognises (``{column:
    test}``: a figure's ``<name>=``, the check's name, the system and
    partition of the path) at exactly one shift; between two anchors of one
    shift every column has it. A column that cannot be placed is ``None``;
    the line is returned as it was when the shell fields cannot explain the
    anchors (a ``|`` elsewhere: the line is refused)."""
    extra = len(f) - len(header)
    shell = [h in SHELL_FIELDS for h in header]
    anchors = {0: 0, len(header): extra}
    for i, test in known.items():
        hits = [d for d in range(extra + 1) if test(f[i + d])]
        if len(hits) == 1:
            anchors[i] = hits[0]
    points = sorted(anchors.items())
    for (a, da), (b, db) in zip(points, points[1:]):
        if db < da or (db > da and not any(shell[a:b])):
            return f
    out = []
    for c in range(len(header)):
        a, da = max(p for p in points if p[0] <= c)
        b, db = min(p for p in points if p[0] >= c)
        if da == db or not any(shell[a:c]):
            shift = da
        elif not any(shell[c:b]):
            shift = db
        else:
            shift = None
        out.append(None if shift is None or shell[c] else f[c + shift])
    return out


def _known_values(header, col, figures, path):
    """``{column: test}`` of the values :func:`_realign` can recognise in a
    perflog line of ``path``."""
    known = {i: (lambda v, fig=fig: v.startswith(f'{fig}='))
             for fig, i, _ in figures if fig is not None and '=' in header[i]}
    check = path.name.split('.log')[0]
    for name in ('name', 'display_name'):
        if name in col:
            known[col[name]] = lambda v: v.split(' ', 1)[0] == check
    parts = path.parts
    for name, value in (('system', parts[-3:-2]), ('partition', parts[-2:-1])):
        if name in col and value:
            known[col[name]] = lambda v, value=value[0]: v == value
    return known


#: ``check_info``: "Name %param=v /hash @system:partition+environ"
_INFO_RE = re.compile(r'^(?P<name>.*?)(?: /[0-9a-f]{8})? @(?P<system>[^:\s]+):'
                      r'(?P<partition>[^+\s]+)\+(?P<environ>\S+)$')


def _figure_columns(header, col):
    """``[(figure or None, value column, unit column or None)]``: per-figure
    fields ``<name>_value`` (``<name>_var=<name>_value`` when the format
    writes the name too), or ``perf_value`` of ``perflog_multiline``."""
    out = []
    if 'perf_value' in col and 'perf_var' in col:
        out.append((None, col['perf_value'], col.get('perf_unit')))
    for i, name in enumerate(header):
        name = name.rsplit('=', 1)[-1]
        if name.endswith('_value') and name != 'perf_value':
            fig = name[:-len('_value')]
            out.append((fig, i, col.get(f'{fig}_unit')))
    return out


def _identity(f, col, default_system, default_part, path):
    """(system, partition, test name with its environment) of a perflog line."""
    info = _INFO_RE.match(f[col['info']]) if 'info' in col else None
    system = (f[col['system']] if 'system' in col else info['system'] if info
              else default_system)
    part = (f[col['partition']] if 'partition' in col else info['partition'] if info
            else default_part)
    test = (f[col['name']] if 'name' in col else info['name'] if info
            else f[col['display_name']] if 'display_name' in col else path.stem)
    environ = (f[col['environ']] if 'environ' in col else info['environ'] if info else '')
    return system, part, f'{test} +{environ}' if environ else test
