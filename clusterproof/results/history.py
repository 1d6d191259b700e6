"""The history of every figure, from wherever a site keeps it.

Three sources, all read-only (nothing is ever written to the results
database):

- the ReFrame results database (``results.db``), through the figure store
  (:mod:`clusterproof.results.database`);
- ReFrame perflogs: ``|``-separated fields with the header line ReFrame
  writes at the top of each file; a figure is the field under the header
  ``<name>_value`` (``<name>_var=<name>_value`` when the format logs the
  name too, as ``site_config/settings.py`` does), its unit under
  ``<name>_unit``; ``perflog_multiline`` files (``perf_var``,
  ``perf_value``, ``perf_unit``) too. System, partition, test and
  environment come from their fields, else from ``check_info`` (``Name
  /hash @system:partition+environ``), else from the path
  ``<system>/<partition>/<check>.log``;
- CSV with the header ``timestamp,system,partition,test,figure,value,unit``
  (ISO 8601 times; without an offset they are UTC); further columns are
  provenance, used to say what changed at a change point.

A bad row is refused with its file, line and reason; a file with bad rows is
not used at all.
"""

import collections.abc
import csv
import datetime
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from clusterproof import ClusterproofError, store
from clusterproof.references import judge
from clusterproof.reframe_io import database as rfdb
from clusterproof.results import database

#: provenance fields compared at a change point (the loggable variables of
#: every check, and the nodes the job ran on)
PROVENANCE = ('binary_version', 'spack_spec', 'spack_lock_hash', 'binary_path',
              'cp_config_hash', 'cp_git_rev', 'reframe_version', 'job_nodelist',
              'cp_binary_sha256', 'cp_mpi_library', 'cp_fingerprint')
CSV_COLUMNS = ('timestamp', 'system', 'partition', 'test', 'figure', 'value', 'unit')
#: what an optional ``flags`` column of a CSV history may hold (space-separated):
#: a smoke or emulated figure has its own history, apart from full-size ones
CSV_FLAGS = ('smoke', 'emulated')
#: bad rows listed in one error
MAX_ERRORS = 20


def key(system, partition, test, figure, flags=()):
    """What identifies a figure of a history or a change found in one
    (:func:`clusterproof.store.identity`): ``test`` is the test name, then
    `` +<environment>`` when it has one; ``flags`` may hold smoke, emulated."""
    name, _, environ = test.partition(' +')
    return store.identity(system, partition, environ, name, figure, 'smoke' in flags,
                          'emulated' in flags)


@dataclass(slots=True)
class Point:
    time: float             # unix time of the session (or of the job)
    value: float
    session: str = ''       # session uuid where known
    where: str = ''         # file:line or the database
    provenance: dict = field(default_factory=dict)
    #: the direction its check declared (None: none, as in imported history)
    declared_lower_is_better: bool = None


@dataclass
class History:
    """One figure's values, oldest first."""
    system: str
    partition: str
    test: str
    figure: str
    unit: str
    flags: tuple = ()       # 'smoke', 'emulated'
    points: list = field(default_factory=list)

    @property
    def key(self):
        return key(self.system, self.partition, self.test, self.figure, self.flags)

    @property
    def declared_lower_is_better(self):
        """The direction the newest point that declares one declared
        (None: none did)."""
        if isinstance(self.points, Series):
            return self.points.declared_lower_is_better
        return next((p.declared_lower_is_better for p in reversed(self.points)
                     if p.declared_lower_is_better is not None), None)

    @property
    def lower_is_better(self):
        return judge.record_lower_is_better(self)

    @property
    def values(self):
        if isinstance(self.points, Series):
            return self.points.values
        return [p.value for p in self.points]


class Series(collections.abc.Sequence):
    """The points of a history read from the figure store, as columns (numpy
    arrays, oldest first): a :class:`Point` is made only when one is read,
    so a command that looks at a history's values or its last points never
    builds the others. A slice is a :class:`Series` too."""

    __slots__ = ('times', 'values', 'sids', 'pids', 'declared', 'sessions', 'provs')

    def __init__(self, times, values, sids, pids, declared, sessions, provs):
        self.times, self.values, self.sids, self.pids = times, values, sids, pids
        self.declared = declared            # int8: 1 lower is better, 0 higher, -1 none
        self.sessions, self.provs = sessions, provs     # what sids and pids index

    def __len__(self):
        return len(self.values)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return Series(self.times[i], self.values[i], self.sids[i], self.pids[i],
                          self.declared[i], self.sessions, self.provs)
        d = int(self.declared[i])
        uuid = self.sessions[self.sids[i]]
        return Point(float(self.times[i]), float(self.values[i]), uuid, f'session {uuid[:8]}',
                     self.provs[self.pids[i]], None if d < 0 else bool(d))

    def __iter__(self):
        sessions, provs = self.sessions, self.provs
        for t, v, s, p, d in zip(self.times.tolist(), self.values.tolist(), self.sids.tolist(),
                                 self.pids.tolist(), self.declared.tolist()):
            uuid = sessions[s]
            yield Point(t, v, uuid, f'session {uuid[:8]}', provs[p], None if d < 0 else bool(d))

    def __eq__(self, other):
        return list(self) == list(other)

    def __add__(self, other):
        return list(self) + list(other)

    def __radd__(self, other):
        return list(other) + list(self)

    @property
    def declared_lower_is_better(self):
        known = self.declared[self.declared >= 0]
        return bool(known[-1]) if len(known) else None


def _collect(rows):
    """``[(system, partition, test, figure, unit, flags, Point)]`` ->
    histories sorted by key, points by time."""
    out = {}
    for system, part, test, figure, unit, flags, point in rows:
        h = out.get((system, part, test, figure, flags))
        if h is None:
            h = out[(system, part, test, figure, flags)] = History(
                system, part, test, figure, unit, flags)
        h.points.append(point)
    for h in out.values():
        h.points.sort(key=lambda p: p.time)
    return [out[k] for k in sorted(out)]


# -- the results database --------------------------------------------------------

def from_database(db=None, keys=None, **selection):
    """Histories of the results database (``selection``: the arguments of
    :func:`database.load_sessions`; ``keys``: only these figures, see
    :func:`from_frame`)."""
    return from_frame(database.select(db, **selection), keys)


#: the test cases whose figures are history: they ran and measured (see
#: :attr:`clusterproof.results.database.Record.sanity_ok`)
def measured():
    return ((pl.col('figure') != '') & pl.col('value').is_finite()
            & (pl.col('result').is_in(['pass', 'xfail', 'xpass'])
               | (pl.col('fail_phase') == 'performance')))


def from_frame(lf, keys=None):
    """Histories of the store rows ``lf`` (a lazy frame), sorted by key, each
    a :class:`Series`: selected, sorted and grouped by the engine, a Python
    object made only for a point that is read. ``keys`` (a set of
    :func:`clusterproof.store.identity`) keeps only those figures. Failed
    test cases and figures without a finite value are left out; smoke and
    emulated figures are kept apart from the others (their own key)."""
    ident = list(store.IDENTITY)
    prov_cols = [*rfdb.PROVENANCE, 'attrs', 'reframe_version']
    lf = lf.filter(measured())
    if keys is not None:
        wanted = pl.DataFrame([list(k) for k in keys] or None, schema={
            c: store.SCHEMA[c] for c in ident}, orient='row')
        lf = lf.join(wanted.lazy(), on=ident, how='semi')
    df = (lf.select(*ident, 'unit', 'start', 'value', 'session',
                    pl.col('declared_lower_is_better').cast(pl.Int8).fill_null(-1)
                    .alias('declared'),
                    pl.struct(prov_cols).hash().alias('_prov'), *prov_cols)
          .sort(['start', 'session']).collect())
    if not df.height:
        return []
    provs, pid = _provenances(df.select('_prov', *prov_cols))
    sess = df['session'].unique(maintain_order=True)
    sids = {u: i for i, u in enumerate(sess.to_list())}
    df = df.select(*ident, 'unit', 'start', 'value', 'declared',
                   pl.col('session').replace_strict(sids, return_dtype=pl.Int32).alias('sid'),
                   pl.col('_prov').replace_strict(pid, return_dtype=pl.Int32).alias('pid'))
    groups = (df.with_row_index('_i').group_by(ident, maintain_order=True)
              .agg(pl.col('unit').first(), pl.col('_i')))
    times, values = df['start'].to_numpy(), df['value'].to_numpy()
    sid_a, pid_a = df['sid'].to_numpy(), df['pid'].to_numpy()
    dec = df['declared'].to_numpy()
    sessions = sess.to_list()
    out = []
    for (system, part, environ, test, figure, smoke, emulated, unit, idx) in groups.iter_rows():
        idx = np.asarray(idx)
        flags = tuple(f for f, on in (('smoke', smoke), ('emulated', emulated)) if on)
        out.append(History(system, part, f'{test} +{environ}' if environ else test, figure,
                           unit, flags, Series(times[idx], values[idx], sid_a[idx],
                                               pid_a[idx], dec[idx], sessions, provs)))
    out.sort(key=lambda h: (h.system, h.partition, h.test, h.figure, h.flags))
    return out


def _provenances(df):
    """The distinct provenances of the rows ``df`` (as :func:`_record_rows`
    makes them, one dict each) and ``{hash: index}``."""
    provs, pid = [], {}
    for row in df.unique('_prov').iter_rows(named=True):
        attrs = json.loads(row['attrs'] or '{}')
        prov = {k: rfdb.provenance_text(row[k] if k in rfdb.PROVENANCE else attrs.get(k))
                for k in PROVENANCE if k in rfdb.PROVENANCE or k in attrs}
        prov['reframe_version'] = row['reframe_version'] or ''
        pid[row['_prov']] = len(provs)
        provs.append(prov)
    return provs, pid


def _database_rows(db=None, **selection):
    sessions = database.load_sessions(db=db, **selection)
    return _record_rows(sessions, database.records(sessions))


def from_records(sessions, recs):
    """Histories of records already read (``recs`` of ``sessions``), as
    :func:`from_database` makes them."""
    return _collect(_record_rows(sessions, recs))


def _record_rows(sessions, recs):
    version = {s.uuid: (s.info.get('version') or '') for s in sessions}
    rows = []
    shared = {}     # the same test case's provenance night after night: one dict (read-only)
    for r in recs:
        if not r.figure or not r.sanity_ok or not math.isfinite(r.value):
            continue
        pk = (id(r.case), version.get(r.session, ''))
        prov = shared.get(pk)
        if prov is None:
            prov = {k: rfdb.provenance_text(r.case.get(k)) for k in PROVENANCE if k in r.case}
            prov['reframe_version'] = pk[1]
            shared[pk] = prov
        test = r.test if not r.environ else f'{r.test} +{r.environ}'
        rows.append((r.system, r.partition, test, r.figure, r.unit, tuple(r.flags),
                     Point(r.start, r.value, r.session, f'session {r.session[:8]}', prov,
                           r.declared_lower_is_better)))
    return rows


# -- perflogs --------------------------------------------------------------------------

#: the fields of the perflog (``site_config/settings.py``) that clusterproof
#: reads, first: none can hold ``|`` (names, flags, hashes, versions, paths)
PERFLOG_FIELDS = ('job_completion_time', 'result', 'system', 'partition', 'environ',
                  'display_name', 'jobid', 'job_nodelist', 'cp_mode', 'cp_smoke',
                  'cp_emulated', 'binary_path', 'binary_version', 'cp_binary_sha256',
                  'spack_spec', 'spack_lock_hash', 'cp_mpi_library', 'cp_fingerprint',
                  'cp_config_hash', 'cp_git_rev')
#: loggable variables that hold the job script's shell text (``|| exit 2``,
#: pipes): not in the perflog (the job script and the results database keep
#: them); in a perflog written before, a ``|`` in one of them shifted the
#: fields after it, and :func:`read_perflog` reads such lines around them
SHELL_FIELDS = ('prebuild_cmds', 'postbuild_cmds', 'prerun_cmds', 'postrun_cmds',
                'executable', 'executable_opts')


def perflog_format():
    """``format`` and ``ignore_keys`` of the perflog handler: the fields of
    :data:`PERFLOG_FIELDS` and ReFrame's version, then the figures
    (``name=value|unit|ref|lower|upper``), then every other loggable
    variable (``%(check_#ALL)s``) less :data:`SHELL_FIELDS`. A ``|`` in a
    variable of that tail can shift only the tail, never a field read."""
    return {
        'format': '|'.join(f'%(check_{f})s' for f in PERFLOG_FIELDS)
                  + '|reframe %(version)s|%(check_perfvalues)s|%(check_#ALL)s',
        'ignore_keys': [f'check_{f}' for f in (*PERFLOG_FIELDS, 'perfvalues', *SHELL_FIELDS)],
    }


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


def _parse_time(text):
    """ISO 8601, as ReFrame writes it (``+0000``) or with ``+00:00``; a time
    without an offset is UTC."""
    text = text.strip()
    try:
        t = datetime.datetime.fromisoformat(text)
    except ValueError:
        t = datetime.datetime.strptime(text, '%Y-%m-%dT%H:%M:%S%z')
    if t.tzinfo is None:
        t = t.replace(tzinfo=datetime.timezone.utc)
    return t.timestamp()


def _flag(v):
    return str(v).strip().lower() in ('true', '1', 'yes')


def read_perflog(path):
    """Rows of one perflog file (see :func:`_collect`)."""
    path = Path(path)
    try:
        lines = path.read_text(errors='replace').splitlines()
    except OSError as err:
        raise ClusterproofError(f'{path}: cannot read ({err.strerror})') from None
    if not lines:
        return []
    header = lines[0].split('|')
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
    known = _known_values(header, col, figures, path)
    parts = path.parts
    default_system = parts[-3] if len(parts) >= 3 else ''
    default_part = parts[-2] if len(parts) >= 2 else ''
    rows, errors = [], []
    for lineno, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        where = f'{path}:{lineno}'
        f = line.split('|')
        if len(f) > len(header):
            f = _realign(header, f, known)
        if len(f) != len(header):
            errors.append(f'{where}: {len(f)} fields, the header has {len(header)}')
            continue
        lost = [header[i] for i in read if f[i] is None]
        if lost:
            errors.append(f'{where}: {len(line.split("|"))} fields, the header has '
                          f'{len(header)}: fields of the job script hold "|", and '
                          f'{", ".join(lost)} cannot be told apart from them')
            continue
        try:
            t = _parse_time(f[col['job_completion_time']])
        except ValueError:
            errors.append(f'{where}: job_completion_time {f[col["job_completion_time"]]!r} '
                          f'is not an ISO 8601 time')
            continue
        if 'result' in col and f[col['result']] not in ('pass', ''):
            continue        # a failed test case's figures are not history
        system, part, test = _identity(f, col, default_system, default_part, path)
        flags = tuple(x for x in ('smoke', 'emulated')
                      if f'cp_{x}' in col and _flag(f[col[f'cp_{x}']]))
        prov = {k: f[col[k]] for k in PROVENANCE if k in col}
        version = f[col['reframe version']] if 'reframe version' in col else ''
        if version:
            prov['reframe_version'] = version.replace('reframe', '').strip()
        for fig, i, unit_col in figures:
            cell = f[i]
            if fig is None:         # perflog_multiline: the figure is in perf_var
                fig = f[col['perf_var']]
            if not cell or not fig:
                continue
            name, eq, raw = cell.partition('=')
            if not eq:
                name, raw = fig, cell
            if raw in ('None', 'null', ''):
                continue        # a figure ReFrame could not measure
            try:
                value = float(raw)
            except ValueError:
                errors.append(f'{where}: figure {name or fig}: value {raw!r} is not a number')
                continue
            if not math.isfinite(value):
                continue        # ReFrame logs nan for a figure it could not measure
            unit = f[unit_col] if unit_col is not None else ''
            rows.append((system, part, test, name or fig, unit, flags,
                         Point(t, value, '', where, prov)))
    _refuse(path, errors)
    return rows


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


def from_perflogs(paths):
    rows = []
    for p in paths:
        for f in perflog_files(p):
            rows += read_perflog(f)
    return _collect(rows)


# -- CSV ---------------------------------------------------------------------------------

def read_csv(path):
    """Rows of one CSV file with the header ``timestamp,system,partition,test,
    figure,value,unit`` (any order). An optional ``flags`` column marks smoke
    or emulated figures, an optional ``session`` column the session id; other
    columns are provenance."""
    path = Path(path)
    try:
        fh = open(path, newline='')
    except OSError as err:
        raise ClusterproofError(f'{path}: cannot read ({err.strerror})') from None
    rows, errors = [], []
    with fh:
        reader = csv.reader(fh)
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            raise ClusterproofError(f'{path}: empty; the first line must be the header '
                                    f'{",".join(CSV_COLUMNS)}') from None
        missing = [c for c in CSV_COLUMNS if c not in header]
        if missing:
            raise ClusterproofError(f'{path}:1: header lacks {", ".join(missing)} (it must '
                                    f'name {",".join(CSV_COLUMNS)}; further columns are '
                                    f'provenance)')
        col = {name: i for i, name in enumerate(header)}
        extra = [h for h in header if h not in CSV_COLUMNS]
        for cells in reader:
            where = f'{path}:{reader.line_num}'
            if not cells or not any(c.strip() for c in cells):
                continue
            if len(cells) != len(header):
                errors.append(f'{where}: {len(cells)} fields, the header has {len(header)}')
                continue
            get = {c: cells[col[c]].strip() for c in CSV_COLUMNS}
            empty = [c for c in CSV_COLUMNS if c != 'unit' and not get[c]]
            if empty:
                errors.append(f'{where}: empty {", ".join(empty)}')
                continue
            try:
                t = _parse_time(get['timestamp'])
            except ValueError:
                errors.append(f'{where}: timestamp {get["timestamp"]!r} is not ISO 8601 '
                              f'(e.g. 2026-11-20T01:30:00+00:00)')
                continue
            try:
                value = float(get['value'])
            except ValueError:
                errors.append(f'{where}: value {get["value"]!r} is not a number')
                continue
            if not math.isfinite(value):
                errors.append(f'{where}: value {get["value"]!r} is not finite')
                continue
            prov = {k: cells[col[k]].strip() for k in extra}
            marked = prov.pop('flags', '').replace(';', ' ').replace(',', ' ').split()
            unknown = [x for x in marked if x not in CSV_FLAGS]
            if unknown:
                errors.append(f'{where}: flags {" ".join(unknown)!r} unknown (known: '
                              f'{", ".join(CSV_FLAGS)}, separated by spaces)')
                continue
            flags = tuple(x for x in CSV_FLAGS if x in marked)
            rows.append((get['system'], get['partition'], get['test'], get['figure'],
                         get['unit'], flags, Point(t, value, prov.pop('session', ''), where,
                                                   prov)))
    _refuse(path, errors)
    return rows


def from_csv(paths):
    rows = []
    for p in paths:
        rows += read_csv(p)
    return _collect(rows)


def _refuse(path, errors):
    if errors:
        more = len(errors) - MAX_ERRORS
        raise ClusterproofError(
            f'{path}: {len(errors)} bad row(s), file not used:\n  '
            + '\n  '.join(errors[:MAX_ERRORS]) + (f'\n  ... and {more} more' if more > 0 else ''))


def load(sources):
    """Histories of ``sources``: paths of CSV files (``*.csv``), perflogs
    (``*.log`` or directories of them) and results databases (``*.db``);
    the same figure in several sources is one history."""
    rows = []
    for src in sources:
        p = Path(src)
        if p.suffix == '.csv':
            rows += read_csv(p)
        elif p.suffix == '.db':
            rows += _database_rows(db=p)
        else:
            for f in perflog_files(p):
                rows += read_perflog(f)
    return _collect(rows)
