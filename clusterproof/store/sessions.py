"""Sessions and their :class:`Record` rows, read from the figure store
(:mod:`clusterproof.store`), which is derived from ReFrame's results
database (``<results>/results.db``, read through
:mod:`clusterproof.reframe_io.database`, never written): each read first
ingests the sessions the store lacks. One row per test case and figure, and
one row with figure ``''`` for a test case without figures: one that failed
before its figures, was skipped (``result`` ``skip``, ``reason`` the skip
message that the check recorded in ``cp_skip_reason``; ReFrame's report keeps
none), or passed without measuring any (a session of such checks is still a
session).
"""

import json
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from clusterproof import store
from clusterproof.paths import results_db
from clusterproof.references import direction
from clusterproof.references.entries import ran_against
from clusterproof.reframe_io import database as rfdb
from clusterproof.store import identity

#: test attributes that count threads (the x axis of scaling plots)
THREAD_ATTRS = ('num_threads', 'threads', 'num_tasks', 'nthreads', 'num_procs')
#: a record's provenance (:attr:`Record.provenance`), what is compared at a
#: change point: the loggable variables of every check, and the nodes the job
#: ran on; those kept in columns of their own are
#: ``reframe_io.database.PROVENANCE_COLUMNS``, the rest come from the test
#: case's attributes and its session
PROVENANCE = ('binary_version', 'spack_spec', 'spack_lock_hash', 'binary_path',
              'cp_config_hash', 'cp_git_rev', 'reframe_version', 'job_nodelist',
              'cp_binary_sha256', 'cp_mpi_library', 'cp_fingerprint')

_PARAM_RE = re.compile(r'\s%(\w+)=(\S+)')


@dataclass(slots=True)
class Session:
    uuid: str
    start: float
    end: float
    info: dict
    report_file: str = ''
    recs: list = field(default_factory=list)    # its records, test cases without figures too

    @property
    def systems(self):
        return sorted({r.system for r in self.recs if r.system})

    @property
    def smoke(self):
        return any(r.smoke for r in self.recs)

    @property
    def emulated(self):
        return any(r.emulated for r in self.recs)

    @property
    def modes(self):
        return sorted({r.mode for r in self.recs if r.mode})

    def label(self):
        return f'{self.uuid[:8]} {time.strftime("%Y-%m-%d %H:%M", time.localtime(self.start))}'


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a record's test case ended, and ReFrame's verdict of its figure:
    one part of the record (:attr:`Record.outcome`), made from the store's
    columns of the same names."""
    result: str             # the test case's result: pass/fail/skip/abort/fail_deps (xfail/xpass)
    fail_phase: str = None  # the pipeline stage it failed in; None: it did not fail
    reason: str = ''        # why the test case failed or was skipped
    perf_result: str = ''   # ReFrame's verdict of this figure: pass/fail (xfail/xpass)

    @classmethod
    def of_columns(cls, result, fail_phase, reason, perf_result):
        """The outcome of the store's columns (a ``fail_phase`` of ``''``:
        it did not fail)."""
        return cls(result, fail_phase or None, reason, perf_result)

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


@dataclass(frozen=True, slots=True)
class Times:
    """When a record was measured and for how long: one part of the record
    (:attr:`Record.times`), made from the store's columns ``start``,
    ``time`` and ``time_run``."""
    session_start: float    # its session's start (unix time, s): where a history places it
    completed: float        # its job's completion (unix time, s; the session's start if unknown)
    run_s: float = None     # the test case's run time (s, ReFrame's time_run); None: not recorded


@dataclass(slots=True)
class Record:
    """One figure of one test case of one session."""
    session: str            # session uuid
    system: str
    partition: str
    environ: str
    check: str              # test class name (the key of the reference file)
    test: str               # test name with its parameters, e.g. "IOR %num_threads=16"
    figure: str
    value: float
    unit: str
    #: the reference ReFrame judged the figure against when it ran (a
    #: :class:`~clusterproof.references.entries.Reference`; None: none)
    ran_against: object
    outcome: Outcome        # how its test case ended, ReFrame's verdict of the figure
    times: Times            # its session's start, its job's completion, its run time
    mode: str
    smoke: bool
    emulated: bool
    binary_version: str
    case: dict              # the whole test case of the report (shared)
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
    def lower_is_better(self):
        return direction.record_lower_is_better(self)

    @property
    def provenance(self):
        """``{field: text}`` of the :data:`PROVENANCE` its test case recorded
        (a node list joined by commas)."""
        case = self.case or {}
        return {k: rfdb.provenance_text(case[k]) for k in PROVENANCE if k in case}


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
    if result == 'fail_deps':       # ReFrame ran it not: a fixture or test it needs failed
        return f'failed in its dependencies: {reason or "a test or fixture it depends on failed"}'
    why = _ENDED.get(result) or (f'ended with result {result!r}' if result
                                 else 'ended with no result recorded')
    where = f' in {fail_phase}' if fail_phase else ' in an unknown phase'
    return f'{why}{where}: {reason or "cause unknown (the run report records none)"}'


def test_params(name):
    """``{'num_threads': '16'}`` from ``'IOR %num_threads=16 %op=write'``."""
    return dict(_PARAM_RE.findall(name))


def check_name(name):
    return name.split(' ', 1)[0]


#: the columns of the store a :class:`Record` takes as they are (its fields of the same names)
_OWN_COLS = ('session', 'system', 'partition', 'environ', 'test', 'figure', 'value', 'unit',
             'mode', 'smoke', 'emulated', 'binary_version', 'declared_lower_is_better')
#: the parts of a :class:`Record` made of several columns of the store:
#: ``{field: (what makes it, the columns it is made of, in that order)}``
_PARTS = {
    'outcome': (Outcome.of_columns, ('result', 'fail_phase', 'reason', 'perf_result')),
    'times': (Times, ('start', 'time', 'time_run')),
    'ran_against': (ran_against, ('ref', 'lower', 'upper', 'unit', 'perf_result')),
}
#: every column of the store a :class:`Record` is made of, each once
_REC_COLS = tuple(dict.fromkeys(_OWN_COLS + sum((cols for _, cols in _PARTS.values()), ())))
#: the columns of its test case (:func:`_case`)
_CASE_COLS = ('attrs',) + rfdb.PROVENANCE_COLUMNS
_SESSION_COLS = ('end', 'reframe_version', 'cmdline', 'time_start', 'source')


def _record(row, case):
    """The :class:`Record` of the store row ``row`` (a dict of :data:`_REC_COLS`):
    the columns of each of its :data:`_PARTS` made one part."""
    parts = {name: make(*(row[c] for c in cols)) for name, (make, cols) in _PARTS.items()}
    return Record(**{c: row[c] for c in _OWN_COLS}, **parts, check=check_name(row['test']),
                  case=case)


#: stores given with --store on the command line (:func:`read_store`)
_STORES = []


def read_store(path):
    """Read the store ``path`` (or every store in it, a fleet) instead of
    the results database's, as ``--store`` asks; returns the stores read."""
    _STORES.append(Path(path))
    return list(_STORES)


def store_paths():
    """Stores read instead of the results database: ``--store`` options
    (:func:`read_store`), else ``CLUSTERPROOF_STORE`` (paths separated by
    ``:``); a directory of stores is a fleet. [] for the results database's
    own store."""
    return list(_STORES) or [Path(p) for p in os.environ.get('CLUSTERPROOF_STORE', '')
                             .split(':') if p]


def figures(db=None):
    """A lazy frame of the figure store of ``db`` (default: the results
    database), after ingesting the sessions it lacks; with
    ``CLUSTERPROOF_STORE`` set, those stores instead (nothing ingested).
    With no results database yet, the store beside where it will be, when
    history was imported into it (``clusterproof store import``).
    A damaged database does not lose a night: the sessions of the run
    reports the store lacks are ingested, and a warning names the file."""
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
        known = [u for u, _ in store.session_starts(lf)]
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
    """:class:`Session` objects, with their records, of the store rows
    ``df`` (sorted by session start). A test case that looks the
    same night after night (attributes, provenance, result) is one dict,
    and the columns that say so are read once per distinct look."""
    looks_cols = ['system', 'partition', 'environ', 'test', 'result', 'fail_phase', 'mode',
                  'smoke', 'emulated', *_CASE_COLS]
    df = df.with_columns(pl.struct(looks_cols).hash().alias('_looks'),
                         pl.struct('session').hash().alias('_sess'))
    shared = {}
    for row in df.unique('_looks').select('_looks', *_CASE_COLS).rows(named=True):
        shared[row['_looks']] = _case(row)
    out = {}
    for row in df.unique('_sess').select('session', 'start', *_SESSION_COLS).rows():
        uuid, start, end, version, cmdline, tstart, source = row
        out[uuid] = Session(uuid, start, end, {
            'uuid': uuid, 'version': version, 'cmdline': cmdline, 'time_start': tstart,
            'time_start_unix': start, 'time_end_unix': end}, source, [])
    for looks, row in zip(df['_looks'].to_list(), df.select(_REC_COLS).rows(named=True)):
        out[row['session']].recs.append(_record(row, shared[looks]))
    return sorted(out.values(), key=lambda s: (s.start, s.uuid))


def _case(row):
    """The test case of a store row (a dict of :data:`_CASE_COLS`) beyond the
    columns of its :class:`Record`: the test's attributes and its provenance."""
    case = json.loads(row['attrs'] or '{}')
    for k in rfdb.PROVENANCE_COLUMNS:
        case[k] = row[k].split(',') if k == 'job_nodelist' and row[k] else row[k]
    return case


def records(sessions):
    """The :class:`Record` rows of ``sessions`` (test cases without
    performance values still give one row with figure ``''``, so a failed
    sanity, a skip or a session of checks without figures is never lost;
    readers of figures skip the rows without one)."""
    return [rec for sess in sessions for rec in sess.recs]
