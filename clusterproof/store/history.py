"""The history of every figure: its values, oldest first, each with the
session and provenance it was measured with.

Read from the figure store's rows (:func:`from_frame`, :func:`from_database`)
or from records already read (:func:`from_records`); the readers of history
kept elsewhere (:mod:`.perflog`, :mod:`.csvhistory`, :mod:`.sources`) make
its rows too (:func:`collect`). A bad row is refused with its file, line and
reason; a file with bad rows is not used at all (:func:`refuse`).
"""

import collections.abc
import datetime
import json
import math
import shlex
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from clusterproof import ClusterproofError, store
from clusterproof.references import direction
from clusterproof.reframe_io import database as rfdb
from clusterproof.store import sessions

#: what else a point's provenance carries of its session: the test case's
#: variables and parameters (``settings``, JSON text), those the session's
#: command line set (``setvars``, JSON text, :func:`setvars`) and its mode
#: (:mod:`clusterproof.analysis.runsettings`)
RUN = ('settings', 'setvars', 'mode')
#: bad rows listed in one error
MAX_ERRORS = 20


def key(system, partition, test, figure, flags=()):
    """What identifies a figure of a history or a change found in one: the
    key :func:`clusterproof.store.identity` decides, of a history's names
    (``test`` is the test name, then `` +<environment>`` when it has one;
    ``flags`` may hold smoke, emulated)."""
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
        return direction.record_lower_is_better(self)

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


def collect(rows):
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
    :func:`clusterproof.store.sessions.load_sessions`; ``keys``: only these figures, see
    :func:`from_frame`)."""
    return from_frame(sessions.select(db, **selection), keys)


#: the test cases whose figures are history: they ran and measured (see
#: :attr:`clusterproof.store.sessions.Outcome.sanity_ok`)
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
    prov_cols = [*rfdb.PROVENANCE_COLUMNS, 'attrs', 'reframe_version', 'cmdline', 'mode']
    lf = lf.filter(measured())
    if keys is not None:
        wanted = pl.DataFrame([list(k) for k in keys] or None, schema={
            c: store.SCHEMA[c] for c in ident}, orient='row')
        lf = lf.join(wanted.lazy(), on=ident, how='semi')
    df = (lf.select(*ident, 'unit', 'start', 'value', 'session',
                    pl.col('declared_lower_is_better').cast(pl.Int8).fill_null(-1)
                    .alias('declared'), *prov_cols)
          .sort(['start', 'session']).collect())
    if not df.height:
        return []
    # a night's command line differs from night to night (its report file):
    # what it set is the same, and so are the provenances of the points
    lines = df['cmdline'].unique().to_list()
    df = df.with_columns(pl.col('cmdline').replace_strict(
        {c: setvars(c) for c in lines}, return_dtype=pl.Utf8))
    df = df.with_columns(pl.struct(prov_cols).hash().alias('_prov'))
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
    provs, pid, texts = [], {}, {}
    for row in df.unique('_prov').iter_rows(named=True):
        attrs = json.loads(row['attrs'] or '{}')
        prov = {k: rfdb.provenance_text(row[k] if k in rfdb.PROVENANCE_COLUMNS else attrs.get(k))
                for k in sessions.PROVENANCE if k in rfdb.PROVENANCE_COLUMNS or k in attrs}
        prov['reframe_version'] = row['reframe_version'] or ''
        prov.update(_run(row['attrs'], row['cmdline'], row['mode'], texts))
        pid[row['_prov']] = len(provs)
        provs.append(prov)
    return provs, pid


def _run(attrs, setvars_text, mode, texts):
    """The :data:`RUN` part of a provenance (those known), each text kept
    once in ``texts`` (many points share them)."""
    got = zip(RUN, (attrs if attrs and attrs != '{}' else '', setvars_text, mode or ''))
    return {k: texts.setdefault(v, v) for k, v in got if v}


def setvars(cmdline):
    """The variables a ReFrame command line sets with ``-S``/``--setvar``
    (``Check.name=value`` gives ``name``), as JSON text (sorted; '' for
    none)."""
    try:
        words = shlex.split(cmdline or '')
    except ValueError:
        words = (cmdline or '').split()
    out = {}
    for i, w in enumerate(words):
        if w in ('-S', '--setvar') and i + 1 < len(words):
            spec = words[i + 1]
        elif w.startswith('--setvar='):
            spec = w[len('--setvar='):]
        elif w.startswith('-S') and len(w) > 2:
            spec = w[2:]
        else:
            continue
        name, eq, value = spec.partition('=')
        if eq:
            out[name.rsplit('.', 1)[-1]] = value
    return json.dumps(out, sort_keys=True) if out else ''


def database_rows(db=None, **selection):
    """Rows (see :func:`collect`) of the results database ``db``."""
    sess = sessions.load_sessions(db=db, **selection)
    return _record_rows(sess, sessions.records(sess))


def from_records(sessions, recs):
    """Histories of records already read (``recs`` of ``sessions``), as
    :func:`from_database` makes them."""
    return collect(_record_rows(sessions, recs))


def _record_rows(sess, recs):
    version = {s.uuid: (s.info.get('version') or '') for s in sess}
    cmdline = {s.uuid: setvars(s.info.get('cmdline')) for s in sess}
    rows = []
    shared = {}     # the same test case's provenance in one session: one dict (read-only)
    texts = {}
    for r in recs:
        if not r.figure or not r.outcome.sanity_ok or not math.isfinite(r.value):
            continue
        pk = (id(r.case), r.session)
        prov = shared.get(pk)
        if prov is None:
            prov = r.provenance
            prov['reframe_version'] = version.get(r.session, '')
            prov.update(_run(rfdb.test_attrs(r.case), cmdline.get(r.session, ''), r.mode, texts))
            shared[pk] = prov
        test = r.test if not r.environ else f'{r.test} +{r.environ}'
        rows.append((r.system, r.partition, test, r.figure, r.unit, tuple(r.flags),
                     Point(r.times.session_start, r.value, r.session,
                           f'session {r.session[:8]}', prov, r.declared_lower_is_better)))
    return rows


# -- what the readers share ----------------------------------------------------------

def parse_time(text):
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


def refuse(path, errors):
    """Refuse the file ``path`` of a history when ``errors`` (its bad rows) are
    not empty: one error naming each, the first :data:`MAX_ERRORS` of them."""
    if errors:
        more = len(errors) - MAX_ERRORS
        raise ClusterproofError(
            f'{path}: {len(errors)} bad row(s), file not used:\n  '
            + '\n  '.join(errors[:MAX_ERRORS]) + (f'\n  ... and {more} more' if more > 0 else ''))
