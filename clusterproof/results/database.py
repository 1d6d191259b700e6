"""Measured results as sessions and :class:`Record` rows, read from the figure
store (:mod:`clusterproof.store`), which is derived from ReFrame's results
database (``<results>/results.db``, read through
:mod:`clusterproof.reframe_io.database`, never written): each read first
ingests the sessions the store lacks. One row per test case and figure, and
one row with figure ``''`` for a test case without figures: one that failed
before its figures, was skipped (``result`` ``skip``, ``reason`` the skip
message that the check recorded in ``cp_skip_reason``; ReFrame's report keeps
none), or passed without measuring any (a session of such checks is still a
session).
"""

import argparse
import json
import os
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from clusterproof import ClusterproofError
from clusterproof.paths import results_db
from clusterproof.references import judge
from clusterproof.reframe_io import database as rfdb
from clusterproof.site.hardware import is_emulated
from clusterproof.store import identity

#: test attributes that count threads (the x axis of scaling plots)
THREAD_ATTRS = ('num_threads', 'threads', 'num_tasks', 'nthreads', 'num_procs')

_PARAM_RE = re.compile(r'\s%(\w+)=(\S+)')
_SINCE_RE = re.compile(r'^(\d+(?:\.\d+)?)\s*([smhdw])$')
_SINCE_UNITS = {'s': 1, 'm': 60, 'h': 3600, 'd': 86400, 'w': 7 * 86400}


@dataclass(slots=True)
class Session:
    uuid: str
    start: float
    end: float
    info: dict
    report_file: str = ''
    cases: list = field(default_factory=list)
    recs: list = None           # its records, when read from the figure store

    @property
    def systems(self):
        return sorted({c.get('system') for c in self.cases if c.get('system')})

    @property
    def smoke(self):
        return any(c.get('cp_smoke') for c in self.cases)

    @property
    def emulated(self):
        return any(is_emulated(c) for c in self.cases)

    @property
    def modes(self):
        return sorted({c.get('cp_mode') for c in self.cases if c.get('cp_mode')})

    def label(self):
        return f'{self.uuid[:8]} {time.strftime("%Y-%m-%d %H:%M", time.localtime(self.start))}'


@dataclass(slots=True)
class Record:
    """One figure of one test case of one session."""
    session: str            # session uuid
    start: float            # session start (unix time)
    system: str
    partition: str
    environ: str
    check: str              # test class name (the key of the reference file)
    test: str               # test name with its parameters, e.g. "IOR %num_threads=16"
    figure: str
    value: float
    unit: str
    ref: float              # reference ReFrame judged against at run time
    lower: float            # relative thresholds (None: unbounded)
    upper: float
    perf_result: str        # ReFrame's verdict of this figure: pass/fail
    result: str             # the test case's result: pass/fail/skip/abort
    fail_phase: str
    mode: str
    smoke: bool
    emulated: bool
    binary_version: str
    time: float             # job completion (unix time)
    case: dict              # the whole test case of the report (shared)
    reason: str = ''        # why the test case failed or was skipped
    #: the direction its check declared (None: none, see judge.lower_is_better)
    declared_lower_is_better: bool = None

    @property
    def key(self):
        """What identifies the same figure across sessions
        (:func:`clusterproof.store.identity`)."""
        return identity(self.system, self.partition, self.environ, self.test, self.figure,
                        self.smoke, self.emulated)

    @property
    def params(self):
        return test_params(self.test)

    @property
    def flags(self):
        return [f for f, on in (('smoke', self.smoke), ('emulated', self.emulated)) if on]

    @property
    def sanity_ok(self):
        """The test case ran and measured: it passed, or only its
        performance check failed (also as an expected failure, xfail/xpass)."""
        return self.result in PASSED or self.fail_phase == 'performance'

    @property
    def skipped(self):
        return self.result == 'skip'

    @property
    def why(self):
        """Why the test case measured nothing (:func:`case_reason`); '' for
        one that ran."""
        if self.sanity_ok:
            return ''
        return case_reason(self.result, self.fail_phase, self.reason)

    @property
    def lower_is_better(self):
        return judge.record_lower_is_better(self)


#: ReFrame's results of a test case that passed (an expected failure too)
PASSED = ('pass', 'xfail', 'xpass')
#: what a ReFrame result says of a test case that measured nothing
_ENDED = {'fail': 'failed', 'abort': 'aborted', 'skip': 'skipped'}


def case_reason(result, fail_phase, reason):
    """The one text of why a test case measured nothing, everywhere it is
    shown (compare, the report, acceptance, bless): ``skipped: <reason>``,
    or ``failed in <phase>: <cause>`` (``aborted`` for an abort), each part
    that the run report does not record said to be unknown, never a bare
    ``None``. '' for a test case that passed (``pass``, ``xfail``, ``xpass``)."""
    if result == 'skip':
        return f'skipped: {reason or "no reason recorded"}'
    if result in PASSED:
        return ''
    what = _ENDED.get(result) or (f'ended with result {result!r}' if result
                                  else 'ended with no result recorded')
    where = f' in {fail_phase}' if fail_phase else ' in an unknown phase'
    return f'{what}{where}: {reason or "cause unknown (the run report records none)"}'


def test_params(name):
    """``{'num_threads': '16'}`` from ``'IOR %num_threads=16 %op=write'``."""
    return dict(_PARAM_RE.findall(name))


def check_name(name):
    return name.split(' ', 1)[0]


def parse_since(text, now=None):
    """``30d``, ``12h``, ``2w`` -> unix time that long before ``now``."""
    m = _SINCE_RE.match(text.strip())
    if not m:
        raise ClusterproofError(
            f'--since {text!r}: give a number and a unit s, m, h, d or w (e.g. 30d)')
    return (now or time.time()) - float(m.group(1)) * _SINCE_UNITS[m.group(2)]


#: the columns of the store a :class:`Record` is made of
_REC_COLS = ('session', 'start', 'system', 'partition', 'environ', 'test', 'figure', 'value',
             'unit', 'ref', 'lower', 'upper', 'perf_result', 'result', 'fail_phase', 'mode',
             'smoke', 'emulated', 'binary_version', 'time', 'reason', 'declared_lower_is_better')
_CASE_COLS = ('attrs',) + rfdb.PROVENANCE
_SESSION_COLS = ('end', 'reframe_version', 'cmdline', 'time_start', 'source')


def _record(row, case):
    (session, start, system, part, environ, test, figure, value, unit, ref, lower, upper,
     perf_result, result, fail_phase, mode, smoke, emulated, binary_version, t, reason,
     declared) = row
    return Record(session, start, system, part, environ, check_name(test), test, figure,
                  value, unit, ref, lower, upper, perf_result, result, fail_phase or None,
                  mode, smoke, emulated, binary_version, t, case, reason, declared)


#: stores given with --store on the command line
_STORES = []


def store_paths():
    """Stores read instead of the results database: ``--store`` options,
    else ``CLUSTERPROOF_STORE`` (paths separated by ``:``); a directory of
    stores is a fleet. [] for the results database's own store."""
    return list(_STORES) or [Path(p) for p in os.environ.get('CLUSTERPROOF_STORE', '')
                             .split(':') if p]


class _StoreAction(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        _STORES.append(Path(values))
        setattr(namespace, self.dest, list(_STORES))


def add_store_arg(parser):
    """``--store DIR`` (repeatable): read these figure stores (a directory of
    stores is a fleet) instead of the results database."""
    parser.add_argument('--store', action=_StoreAction, metavar='DIR',
                        help='read this figure store, or every store in this directory (a '
                             'fleet), instead of the results database (repeatable; default: '
                             '$CLUSTERPROOF_STORE, else <results>/store, ingested first)')


def figures(db=None):
    """A lazy frame of the figure store of ``db`` (default: the results
    database), after ingesting the sessions it lacks; with
    ``CLUSTERPROOF_STORE`` set, those stores instead (nothing ingested).
    With no results database yet, the store beside where it will be, when
    history was imported into it (``clusterproof store import``).
    A damaged database does not lose a night: the sessions of the run
    reports the store lacks are ingested, and a warning names the file."""
    from clusterproof import store
    paths = store_paths() if db is None else []
    if paths:
        return store.scan(paths), ', '.join(map(str, paths))
    db = Path(db or results_db())
    where = store.default_path(db)
    if not db.exists() and (where / store.MANIFEST).is_file():
        # history imported before ReFrame's first run here: the store is all there is
        return store.scan([where]), str(where)
    try:
        store.ingest(db, where)
    except rfdb.DamagedDatabase as err:
        if not rfdb.run_reports(db.parent):
            raise
        added = store.ingest_reports(db.parent, where)
        print(f'WARNING: {err}', file=sys.stderr)
        print(f'WARNING: read {len(added)} session(s) from run reports in '
              f'{db.parent / "reports"}: {", ".join(a[:8] for a in added) or "none new"}',
              file=sys.stderr)
    return store.scan([where]), str(db)


def load_sessions(db=None, ids=(), last=None, since=None, system=None, mode=None,
                  until=None):
    """Sessions of the figure store, oldest first, each with its records.

    ``ids`` selects by uuid (a unique prefix is enough); ``since`` (unix time)
    and ``until`` bound the start time; ``system`` and ``mode`` keep sessions
    that ran test cases there / in that mode; ``last`` keeps the newest N of
    what remains. An id that matches nothing or more than one session is an
    error naming it.
    """
    return _sessions_of(select(db, ids, last, since, system, mode, until)
                        .sort(['start', 'session']).collect())


def select(db=None, ids=(), last=None, since=None, system=None, mode=None, until=None):
    """The rows of the figure store that :func:`load_sessions` selects
    (the same arguments), as a lazy frame: filters the engine pushes down to
    the files, nothing read yet."""
    import polars as pl
    lf, where = figures(db)
    if ids:
        from clusterproof import store
        known = [u for u, _ in store.sessions(lf)]
        lf = lf.filter(pl.col('session').is_in([rfdb.resolve_id(where, i, known)
                                                 for i in ids]))
    if since is not None:
        lf = lf.filter(pl.col('start') >= since)
    if until is not None:
        lf = lf.filter(pl.col('start') < until)
    if system:
        lf = lf.filter(pl.col('system') == system)
    if mode:
        lf = lf.filter(pl.col('mode') == mode)
    if last is not None:
        # the newest sessions' ids first (two columns read), then a filter the
        # engine pushes down to the files: a join would read every column of
        # every row before keeping these
        newest = (lf.select('session', 'start').unique().sort('start', descending=True)
                  .head(max(int(last), 0)).collect()['session'])
        lf = lf.filter(pl.col('session').is_in(newest.implode()))
    return lf


def _sessions_of(df):
    """:class:`Session` objects, with their records and test cases, of the
    store rows ``df`` (sorted by session start). A test case that looks the
    same night after night (attributes, provenance, result) is one dict,
    and the columns that say so are read once per distinct look."""
    import polars as pl
    looks_cols = ['system', 'partition', 'environ', 'test', 'result', 'fail_phase', 'mode',
                  'smoke', 'emulated', *_CASE_COLS]
    df = df.with_columns(pl.struct(looks_cols).hash().alias('_looks'),
                         pl.struct('session').hash().alias('_sess'))
    shared = {}
    for row in df.unique('_looks').rows(named=True):
        shared[row['_looks']] = _case(tuple(row[c] for c in _REC_COLS),
                                      tuple(row[c] for c in _CASE_COLS))
    out = {}
    for row in df.unique('_sess').select('session', 'start', *_SESSION_COLS).rows():
        uuid, start, end, version, cmdline, tstart, source = row
        out[uuid] = Session(uuid, start, end, {
            'uuid': uuid, 'version': version, 'cmdline': cmdline, 'time_start': tstart,
            'time_start_unix': start, 'time_end_unix': end}, source, [], [])
    seen = set()
    for looks, row in zip(df['_looks'].to_list(), df.select(_REC_COLS).rows()):
        sess, case = out[row[0]], shared[looks]
        ck = (row[0], looks)
        if ck not in seen:
            seen.add(ck)
            sess.cases.append(case)
        sess.recs.append(_record(row, case))
    return sorted(out.values(), key=lambda s: (s.start, s.uuid))


def _case(row, ex):
    """The test case of a store row, as far as the store keeps it."""
    case = json.loads(ex[0] or '{}')
    for k, v in zip(rfdb.PROVENANCE, ex[1:len(_CASE_COLS)]):
        case[k] = v.split(',') if k == 'job_nodelist' and v else v
    case.update(name=row[5], system=row[2], partition=row[3], environ=row[4],
                result=row[13], fail_phase=row[14] or None, cp_mode=row[15],
                cp_smoke=row[16], cp_emulated=row[17])
    return case


def records(sessions):
    """The :class:`Record` rows of ``sessions`` (test cases without
    performance values still give one row with figure ``''``, so a failed
    sanity, a skip or a session of checks without figures is never lost;
    readers of figures skip the rows without one)."""
    out = []
    for sess in sessions:
        if sess.recs is not None:
            out += sess.recs
            continue
        for tc in sess.cases:       # a session built in memory
            for row in rfdb.testcase_rows(tc, sess.uuid, sess.start, sess.end, sess.info,
                                          sess.report_file):
                out.append(_record(tuple(row[c] for c in _REC_COLS), tc))
    return out


def by_key(recs):
    """``{record.key: [records oldest first]}``."""
    out = {}
    for r in recs:
        out.setdefault(r.key, []).append(r)
    for v in out.values():
        v.sort(key=lambda r: r.start)
    return out


def median(values):
    return statistics.median(values)


def percentile(values, p):
    """Linear-interpolated percentile ``p`` (0..100) of ``values``."""
    vals = sorted(values)
    if not vals:
        raise ValueError('percentile of no values')
    if not 0 <= p <= 100:
        raise ClusterproofError(f'--percentile {p}: give a number from 0 to 100')
    pos = (len(vals) - 1) * p / 100
    lo = int(pos)
    hi = min(lo + 1, len(vals) - 1)
    return vals[lo] + (vals[hi] - vals[lo]) * (pos - lo)


def select_sessions(args, system=None, mode=None):
    """Sessions chosen on a command line: ``--session ID`` (repeatable),
    ``--last N``, ``--since 30d``; the newest session when none is given."""
    sessions = load_sessions(**selection(args, system, mode))
    if not sessions:
        none_selected(args, system, mode)
    return sessions


def selection(args, system=None, mode=None):
    """The arguments of :func:`load_sessions` (and :func:`select`) that a
    command line chooses (see :func:`select_sessions`)."""
    ids = getattr(args, 'session', None) or []
    since = parse_since(args.since) if getattr(args, 'since', None) else None
    last = getattr(args, 'last', None)
    if not ids and since is None and last is None:
        last = 1
    return dict(ids=ids, last=last, since=since, system=system, mode=mode)


def none_selected(args, system=None, mode=None):
    """Raise the error of a selection (see :func:`select_sessions`) that
    matched no session."""
    what = []
    if getattr(args, 'session', None):
        what.append('ids ' + ', '.join(args.session))
    if getattr(args, 'since', None):
        what.append(f'since {args.since}')
    if system:
        what.append(f'system {system}')
    if mode:
        what.append(f'mode {mode}')
    raise ClusterproofError(f'no sessions in {results_db()} match '
                            f'({"; ".join(what) or "any"})')


def add_selection_args(parser, default_help='the newest session'):
    g = parser.add_argument_group('session selection (ReFrame results database)')
    g.add_argument('--session', action='append', metavar='ID',
                   help='a session uuid or unique prefix (repeatable)')
    g.add_argument('--last', type=int, metavar='N', help='the newest N sessions')
    g.add_argument('--since', metavar='AGE', help='sessions started within AGE, e.g. 30d, 12h')
    g.add_argument('--system', help='only test cases that ran on this system')
    g.add_argument('--mode', choices=('smoke', 'nightly', 'acceptance'),
                   help='only test cases run in this mode')
    add_store_arg(g)
    parser.epilog = ((parser.epilog or '') +
                     f' Without a selection: {default_help}. The database is '
                     f'$CLUSTERPROOF_RESULTS/results.db.')
