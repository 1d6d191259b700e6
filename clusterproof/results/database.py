"""Measured results, read from ReFrame's results database.

ReFrame stores every session in ``<results>/results.db`` (sqlite, table
``sessions``: ``uuid``, ``session_start_unix``, ``session_end_unix``,
``json_blob`` = the whole run report, ``report_file``; table ``testcases``
indexes the test cases by name, system, partition and completion time).
Each test case of the report carries its performance values
(``perfvalues``: ``"<system>:<partition>:<figure>": [value, reference,
lower, upper, unit, result]``) and every loggable variable of the check:
the provenance of :class:`clusterproof.checks.base.ClusterproofCheck` (``cp_mode``,
``cp_smoke``, ``cp_emulated``, ``cp_git_rev``, ``cp_config_hash``,
``binary_path``, ``binary_version``, ``spack_spec``, ``spack_lock_hash``),
its parameters and ``job_nodelist``. So the database is the one record;
this module only reads it (read-only sqlite) and flattens it into
:class:`Record` rows, one per test case and figure, and one row with figure
``''`` for a test case that failed before its figures or was skipped
(``result`` ``skip``, ``reason`` the skip message that the check recorded
in ``cp_skip_reason``; ReFrame's report keeps none).
"""

import json
import re
import sqlite3
import statistics
import time
from dataclasses import dataclass, field

from clusterproof import ClusterproofError
from clusterproof.paths import results_db
from clusterproof.references.judge import lower_is_better
from clusterproof.site.hardware import is_emulated

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

    @property
    def key(self):
        """What identifies the same figure across sessions."""
        return (self.system, self.partition, self.environ, self.test, self.figure)

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
        return self.result in ('pass', 'xfail', 'xpass') or self.fail_phase == 'performance'

    @property
    def skipped(self):
        return self.result == 'skip'

    @property
    def why(self):
        """``skipped: <reason>`` or ``failed in <phase>: <reason>`` for a test
        case that measured nothing; '' for one that ran."""
        if self.skipped:
            return f'skipped: {self.reason or "(no reason recorded)"}'
        if self.sanity_ok:
            return ''
        what = 'aborted' if self.result == 'abort' else 'failed'
        return f'{what} in {self.fail_phase or "?"}' + (f': {self.reason}' if self.reason else '')

    @property
    def lower_is_better(self):
        return lower_is_better(self.unit, self.figure)


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


def _connect(db):
    if not db.is_file():
        raise ClusterproofError(
            f'no results database at {db}: run the checks first (reframe -c reframe_checks -r) '
            f'or set CLUSTERPROOF_RESULTS to the results directory')
    try:
        conn = sqlite3.connect(f'file:{db}?mode=ro', uri=True, timeout=30)
        conn.execute('SELECT 1 FROM sessions LIMIT 1')
    except sqlite3.Error as err:
        raise ClusterproofError(f'{db}: not a ReFrame results database ({err})') from None
    return conn


def load_sessions(db=None, ids=(), last=None, since=None, system=None, mode=None,
                  until=None):
    """Sessions of the results database, oldest first.

    ``ids`` selects by uuid (a unique prefix is enough); ``since`` (unix time)
    and ``until`` bound the start time; ``system`` and ``mode`` keep sessions
    that ran test cases there / in that mode; ``last`` keeps the newest N of
    what remains. An id that matches nothing or more than one session is an
    error naming it.
    """
    db = db or results_db()
    conn = _connect(db)
    try:
        query = ('SELECT uuid, session_start_unix, session_end_unix, json_blob, report_file '
                 'FROM sessions')
        where, args = [], []
        if ids:
            uuids = [_resolve_id(conn, db, i) for i in ids]
            where.append(f'uuid IN ({",".join("?" * len(uuids))})')
            args += uuids
        if since is not None:
            where.append('session_start_unix >= ?')
            args.append(since)
        if until is not None:
            where.append('session_start_unix < ?')
            args.append(until)
        if system:
            where.append('uuid IN (SELECT session_uuid FROM testcases WHERE system = ?)')
            args.append(system)
        if where:
            query += ' WHERE ' + ' AND '.join(where)
        if last is not None:
            # newest first, so that only the reports of the newest N sessions
            # that match are decoded (a year of history is tens of MB of JSON)
            query += ' ORDER BY session_start_unix DESC'
            if not mode:
                query += f' LIMIT {max(int(last), 0)}'
        else:
            query += ' ORDER BY session_start_unix'
        sessions = []
        for uuid, start, end, blob, report_file in conn.execute(query, args):
            if last is not None and len(sessions) >= last:
                break
            report = json.loads(blob)
            cases = [tc for run in report.get('runs', []) for tc in run.get('testcases', [])]
            if system:
                cases = [tc for tc in cases if tc.get('system') == system]
            if mode:
                cases = [tc for tc in cases if tc.get('cp_mode') == mode]
                if not cases:
                    continue
            sessions.append(Session(uuid, start, end, report.get('session_info', {}),
                                    report_file or '', cases))
    finally:
        conn.close()
    return sessions[::-1] if last is not None else sessions


def _resolve_id(conn, db, ident):
    rows = conn.execute('SELECT uuid FROM sessions WHERE uuid LIKE ?',
                        (ident.replace('%', '') + '%',)).fetchall()
    if not rows:
        raise ClusterproofError(f'session {ident!r} is not in {db} '
                                f'(list them with: reframe --list-stored-sessions)')
    if len(rows) > 1:
        raise ClusterproofError(f'session id {ident!r} matches {len(rows)} sessions in {db}; '
                                f'give more of the uuid')
    return rows[0][0]


def records(sessions):
    """Flatten sessions into :class:`Record` rows (test cases without
    performance values still give one row with figure ``''`` when they
    failed or were skipped, so a failed sanity or a skip is never lost;
    readers of figures skip the rows without one)."""
    out = []
    for sess in sessions:
        for tc in sess.cases:
            system, part = tc.get('system', ''), tc.get('partition', '')
            name = tc.get('name', '')
            common = dict(
                session=sess.uuid, start=sess.start, system=system, partition=part,
                environ=tc.get('environ', ''), check=check_name(name), test=name,
                result=tc.get('result', ''), fail_phase=tc.get('fail_phase'),
                mode=tc.get('cp_mode', ''), smoke=bool(tc.get('cp_smoke')),
                emulated=is_emulated(tc),
                binary_version=tc.get('binary_version', '') or '',
                time=tc.get('job_completion_time_unix') or sess.start, case=tc,
                reason=_first_line(tc.get('cp_skip_reason') if tc.get('result') == 'skip'
                                   else tc.get('fail_reason')))
            perf = tc.get('perfvalues') or {}
            if not perf and tc.get('result') != 'pass':
                out.append(Record(figure='', value=float('nan'), unit='', ref=None,
                                  lower=None, upper=None, perf_result='', **common))
            for key, pv in perf.items():
                figure = key.rsplit(':', 1)[-1]
                value, ref, lower, upper, unit, res = (list(pv) + [None] * 6)[:6]
                out.append(Record(figure=figure,
                                  value=float(value) if value is not None else float('nan'),
                                  unit=unit or '', ref=ref, lower=lower, upper=upper,
                                  perf_result=res or '', **common))
    return out


def _first_line(text):
    return (text or '').strip().split('\n', 1)[0]


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
    ids = getattr(args, 'session', None) or []
    since = parse_since(args.since) if getattr(args, 'since', None) else None
    last = getattr(args, 'last', None)
    if not ids and since is None and last is None:
        last = 1
    sessions = load_sessions(ids=ids, last=last, since=since, system=system, mode=mode)
    if not sessions:
        what = []
        if ids:
            what.append('ids ' + ', '.join(ids))
        if since is not None:
            what.append(f'since {args.since}')
        if system:
            what.append(f'system {system}')
        if mode:
            what.append(f'mode {mode}')
        raise ClusterproofError(f'no sessions in {results_db()} match '
                                f'({"; ".join(what) or "any"})')
    return sessions


def add_selection_args(parser, default_help='the newest session'):
    g = parser.add_argument_group('session selection (ReFrame results database)')
    g.add_argument('--session', action='append', metavar='ID',
                   help='a session uuid or unique prefix (repeatable)')
    g.add_argument('--last', type=int, metavar='N', help='the newest N sessions')
    g.add_argument('--since', metavar='AGE', help='sessions started within AGE, e.g. 30d, 12h')
    g.add_argument('--system', help='only test cases that ran on this system')
    g.add_argument('--mode', choices=('smoke', 'nightly', 'acceptance'),
                   help='only test cases run in this mode')
    parser.epilog = ((parser.epilog or '') +
                     f' Without a selection: {default_help}. The database is '
                     f'$CLUSTERPROOF_RESULTS/results.db.')
