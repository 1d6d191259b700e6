"""History from wherever a site keeps it: CSV files (:mod:`.csvhistory`),
perflogs (:mod:`.perflog`) and results databases, read as histories
(:func:`load`) or imported into the figure store once
(:func:`import_history`).

All are read-only: nothing is ever written to the results database.
"""

from pathlib import Path

from clusterproof import store as st
from clusterproof.reframe_io import database as rfdb
from clusterproof.store import csvhistory, history, perflog


def load(sources):
    """Histories of ``sources``: paths of CSV files (``*.csv``), perflogs
    (``*.log`` or directories of them) and results databases (``*.db``);
    the same figure in several sources is one history."""
    rows = []
    for src in sources:
        p = Path(src)
        if p.suffix == '.csv':
            rows += csvhistory.read_csv(p)
        elif p.suffix == '.db':
            rows += history.database_rows(db=p)
        else:
            for f in perflog.perflog_files(p):
                rows += perflog.read_perflog(f)
    return history.collect(rows)


def import_history(paths, store):
    """Add the history of CSV files and perflogs at ``paths`` (see
    :func:`load`) to ``store``, once: a point is a
    session ``<its session or file>@<time>``; what the store holds already
    is skipped. Returns (sessions added, rows added)."""
    rows = []
    for p in paths:
        p = Path(p)
        if p.suffix == '.csv':
            rows += csvhistory.read_csv(p)
        else:
            for f in perflog.perflog_files(p):
                rows += perflog.read_perflog(f)
    out = []
    for system, part, test, figure, unit, flags, pt in rows:
        name, _, environ = test.partition(' +')
        where = pt.where.rsplit(':', 1)[0]
        prov = {k: pt.provenance.get(k, '') for k in rfdb.PROVENANCE_COLUMNS}
        out.append(dict(
            session=pt.session or f'{where}@{pt.time:.0f}', start=pt.time, end=pt.time,
            time=pt.time, system=system, partition=part, environ=environ, test=name,
            figure=figure, value=pt.value, unit=unit, ref=None, lower=None, upper=None,
            perf_result='', declared_lower_is_better=None, result='pass', fail_phase='',
            reason='', mode='',
            smoke='smoke' in flags, emulated='emulated' in flags, attrs='{}',
            reframe_version=pt.provenance.get('reframe_version', ''), cmdline='',
            time_start='', source=pt.where, **prov))
    with st.locked(store):
        held = st.held(store)
        new = [r for r in out if r['session'] not in held]
        sessions = sorted({r['session'] for r in new})
        if new:
            st.add(store, st.frame(new), sessions)
    return len(sessions), len(new)
