"""ReFrame's results database and run reports, read (never written).

ReFrame stores every session in ``<results>/results.db`` (sqlite, schema
:data:`SCHEMA_VERSION` in table ``metadata``; table ``sessions``: ``uuid``,
``session_start_unix``, ``session_end_unix``, ``json_blob`` = the whole run
report, ``report_file``; table ``testcases`` indexes the test cases). It
writes the same run report to ``<results>/reports/run-report-*.json``, which
is how a night is still read when the database is damaged.

Each test case of a report carries its performance values (``perfvalues``:
``"<system>:<partition>:<figure>": [value, reference, lower, upper, unit,
result]``) and every loggable variable of the check: the provenance of
:class:`clusterproof.checklib.base.ClusterproofCheck` (``cp_mode``,
``cp_smoke``, ``cp_emulated``, ``cp_git_rev``, ``cp_config_hash``,
``binary_path``, ``binary_version``, ``spack_spec``, ``spack_lock_hash``),
the direction of each figure (``cp_lower_is_better``), its parameters and
``job_nodelist``. :func:`case_rows` flattens one test
case into figure rows, one per figure, and one row with figure ``''`` for a
test case that failed before its figures or was skipped (``reason`` the skip
message the check recorded in ``cp_skip_reason``; ReFrame's report keeps
none).
"""

import json
import sqlite3
from pathlib import Path

from clusterproof import ClusterproofError
from clusterproof.references import direction
from clusterproof.reframe_io import runner
from clusterproof.site.hardware import is_emulated

#: the schema of the results database the pinned ReFrame writes
#: (``reframe.frontend.reporting.storage._SqliteStorage.SCHEMA_VERSION``)
SCHEMA_VERSION = '1.0'

#: the provenance of a figure kept in columns of their own (in the store too):
#: the loggable variables every check records, and the nodes its job ran on;
#: the rest of a record's provenance (``store.sessions.PROVENANCE``) is read
#: from its test case's attributes and its session
PROVENANCE_COLUMNS = ('binary_version', 'spack_spec', 'spack_lock_hash', 'binary_path',
              'cp_config_hash', 'cp_git_rev', 'job_nodelist')

#: test case fields that are not attributes of the test (run-time records,
#: paths, outputs); the rest are kept as the test's attributes
_NOT_ATTRS = {
    'perfvalues', 'uuid', 'session_uuid', 'run_index', 'hashcode', 'short_name',
    'unique_name', 'outputdir', 'stagedir', 'prefix', 'filename', 'sourcepath',
    'sourcesdir', 'descr', 'executable', 'executable_opts', 'jobid', 'fail_info',
    'fail_reason', 'fail_phase', 'fail_severe', 'result', 'system', 'partition', 'environ',
    'name', 'display_name', 'cp_skip_reason', 'cp_mode', 'cp_smoke', 'cp_emulated',
    'cp_lower_is_better',
    'scheduler', 'fixture', 'dependencies_actual', 'dependencies_conceptual',
    'maintainers', 'tags', 'valid_systems', 'valid_prog_environs', 'keep_files',
    'readonly_files', 'env_vars', 'variables', 'extra_resources', 'modules',
    'prebuild_cmds', 'postbuild_cmds', 'prerun_cmds', 'postrun_cmds',
} | set(PROVENANCE_COLUMNS)


class DamagedDatabase(ClusterproofError):
    """The results database exists but is not a readable ReFrame database
    (empty, truncated, another file): the session is read from its run report."""


def connect(db):
    """A read-only connection to ``db`` after checking it is ReFrame's
    results database of schema :data:`SCHEMA_VERSION`."""
    db = Path(db)
    if not db.is_file():
        raise ClusterproofError(
            f'no results database at {db}: run the checks first (reframe -c reframe_checks -r) '
            f'or set CLUSTERPROOF_RESULTS to the results directory')
    try:
        conn = sqlite3.connect(f'file:{db}?mode=ro', uri=True, timeout=30)
        conn.execute('SELECT 1 FROM sessions LIMIT 1')
        conn.execute('SELECT 1 FROM testcases LIMIT 1')
    except sqlite3.Error as err:
        size = db.stat().st_size
        raise DamagedDatabase(
            f'{db}: not a ReFrame results database ({err}; {size} bytes)'
            + (': an empty file, as a killed run or a full disk leaves. Move it aside '
               f'(mv {db} {db}.damaged); ReFrame creates a new one at its next run, and '
               'the sessions it lacks are read from their run reports '
               f'({db.parent}/reports/run-report-*.json)' if size == 0 else '')) from None
    try:
        row = conn.execute('SELECT schema_version FROM metadata').fetchone()
    except sqlite3.Error:
        row = None
    if row is not None and row[0] != SCHEMA_VERSION:
        conn.close()
        raise ClusterproofError(
            f'{db}: results database of schema {row[0]}; this clusterproof reads schema '
            f'{SCHEMA_VERSION} (the one of its pinned ReFrame)')
    return conn


def session_index(db):
    """``[(uuid, start)]`` of the sessions of ``db``, oldest first (no
    report decoded)."""
    conn = connect(db)
    try:
        return conn.execute('SELECT uuid, session_start_unix FROM sessions '
                            'ORDER BY session_start_unix').fetchall()
    finally:
        conn.close()


def resolve_id(db, ident, known=None):
    """The one uuid of ``db`` (or of ``known`` uuids) that starts with
    ``ident``; an error naming it when none or several do."""
    if known is None:
        known = [u for u, _ in session_index(db)]
    rows = [u for u in known if u.startswith(ident)]
    if not rows:
        raise ClusterproofError(f'session {ident!r} is not in {db} '
                                f'(list them with: reframe --list-stored-sessions)')
    if len(rows) > 1:
        raise ClusterproofError(f'session id {ident!r} matches {len(rows)} sessions in {db}; '
                                f'give more of the uuid')
    return rows[0]


def read_sessions(db, uuids):
    """``(uuid, start, end, report, report_file)`` of each session of
    ``uuids`` in ``db``, in that order (each report decoded once; looked up
    by uuid, the table's key: a scan in time order would read every
    session's report from disk)."""
    conn = connect(db)
    try:
        for uuid in uuids:
            row = conn.execute('SELECT uuid, session_start_unix, session_end_unix, json_blob, '
                               'report_file FROM sessions WHERE uuid = ?', (uuid,)).fetchone()
            if row is not None:
                yield row[0], row[1], row[2], json.loads(row[3]), row[4] or ''
    finally:
        conn.close()


def run_reports(results):
    """Run report files of the results directory ``results``, oldest first."""
    return sorted((Path(results) / 'reports').glob('run-report-*.json'),
                  key=lambda p: p.stat().st_mtime)


def read_run_report(path):
    """``(uuid, start, end, report, report_file)`` of a run report file, as
    :func:`read_sessions` gives them; None when it is no session's report
    (a run that was interrupted before writing it leaves none or half). A
    report of another format version is an error naming the file and the
    version (:func:`clusterproof.reframe_io.runner.read_report` checks it).
    """
    path = Path(path)
    try:
        run_report = runner.read_report(path)
        info = run_report['session_info']
        return (info['uuid'], float(info['time_start_unix']), float(info['time_end_unix']),
                run_report, str(path))
    except (runner.NotARunReport, ValueError, KeyError, TypeError):
        return None


def _first_line(text):
    return (text or '').strip().split('\n', 1)[0]


def provenance_text(v):
    """A provenance value as text (a node list joined by commas)."""
    if v is None:
        return ''
    if isinstance(v, (list, tuple)):
        return ','.join(str(x) for x in v)
    return str(v)


def _float(v):
    try:
        return float(v) if v is not None else None
    except (TypeError, ValueError):
        return None


def test_attrs(tc):
    """The test's own attributes of a test case (parameters and variables:
    scalars, as JSON text), what a reference may be indexed by."""
    return json.dumps({k: v for k, v in sorted(tc.items())
                       if k not in _NOT_ATTRS and not k.startswith(('time_', 'job_', 'build_'))
                       and (v is None or isinstance(v, (int, float, str, bool)))},
                      separators=(',', ':'))


def case_rows(uuid, start, end, run_report, source):
    """Figure rows (dicts, the columns of :data:`clusterproof.store.SCHEMA`)
    of every test case of one session's run report."""
    info = run_report.get('session_info', {})
    return [row for run in run_report.get('runs', []) for tc in run.get('testcases', [])
            for row in _testcase_rows(tc, uuid, start, end, info, source)]


def _testcase_rows(tc, uuid, start, end, info, source):
    """Figure rows of one test case ``tc`` of session ``uuid``."""
    name = tc.get('name', '')
    result = tc.get('result', '') or ''
    common = dict(
        session=uuid, start=float(start), end=float(end or start),
        time=float(tc.get('job_completion_time_unix') or start),
        time_run=_float(tc.get('time_run')),
        system=tc.get('system', '') or '', partition=tc.get('partition', '') or '',
        environ=tc.get('environ', '') or '', test=name,
        result=result, fail_phase=tc.get('fail_phase') or '',
        reason=_first_line(tc.get('cp_skip_reason') if result == 'skip'
                           else tc.get('fail_reason')),
        mode=tc.get('cp_mode', '') or '', smoke=bool(tc.get('cp_smoke')),
        emulated=is_emulated(tc), attrs=test_attrs(tc),
        reframe_version=info.get('version') or '', cmdline=info.get('cmdline') or '',
        time_start=info.get('time_start') or '',
        source=source, **{k: provenance_text(tc.get(k)) for k in PROVENANCE_COLUMNS})
    perf = tc.get('perfvalues') or {}
    out = []
    if not perf:        # failed, skipped, or a check without figures: the case is kept
        out.append(dict(common, figure='', value=float('nan'), unit='', ref=None,
                        lower=None, upper=None, perf_result='', declared_lower_is_better=None))
    for key, pv in perf.items():
        value, ref, lower, upper, unit, res = (list(pv) + [None] * 6)[:6]
        value = _float(value)
        figure = key.rsplit(':', 1)[-1]
        try:
            declared = direction.declared_direction(tc.get('cp_lower_is_better'), figure)
        except ClusterproofError as err:
            raise ClusterproofError(f'{source or "session " + uuid}: test case {name}: '
                                    f'{err}') from None
        out.append(dict(common, figure=figure,
                        value=float('nan') if value is None else value,
                        unit=unit or '', ref=_float(ref), lower=_float(lower),
                        upper=_float(upper), perf_result=res or '',
                        declared_lower_is_better=declared))
    return out
