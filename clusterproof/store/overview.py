"""The sessions at a glance, from the figure store's rows: per session its
start, command line, systems, modes, smoke and emulated flags, git
revisions, configuration hashes, nodes and binaries (:func:`overview`),
aggregated by the engine, nothing per figure in Python; the header and the
table of sessions of the morning page."""

import polars as pl

from clusterproof import store
from clusterproof.reframe_io import database as rfdb
from clusterproof.store.sessions import records

#: provenance columns of the table of sessions
_PROV_COLS = ('cp_git_rev', 'cp_config_hash', 'job_nodelist', 'binary_path', 'binary_version',
              'spack_spec', 'spack_lock_hash')
_OVERVIEW_COLS = ('session', 'start', 'time_start', 'cmdline', 'system', 'mode', 'smoke',
                  'emulated', 'test', *_PROV_COLS)


def overview(lf):
    """The page's header and its table of sessions, from the store rows
    ``lf`` (a lazy frame; aggregated by the engine, nothing per figure in
    Python): ``{'sessions': [row per session, oldest first], 'systems',
    'smoke', 'emulated': [test names]}``."""
    def given(c):
        return pl.when(pl.col(c) != '').then(pl.col(c))

    def listed(c, sep):
        return given(c).drop_nulls().unique().sort().str.join(sep)

    bins = pl.concat_str([given(c) for c in ('binary_path', 'binary_version', 'spack_spec',
                                               'spack_lock_hash')],
                         separator=' ', ignore_nulls=True)
    lf = lf.select(_OVERVIEW_COLS)
    per_session = lf.group_by('session').agg(
        pl.col('start').first(), pl.col('time_start').first(), pl.col('cmdline').first(),
        listed('system', ', ').alias('systems'), listed('mode', ', ').alias('modes'),
        pl.col('smoke').any(), pl.col('emulated').any(),
        listed('cp_git_rev', ' ').alias('revs'), listed('cp_config_hash', ' ').alias('confs'),
        listed('job_nodelist', '; ').alias('nodes'),
        bins.filter(bins != '').unique().sort().alias('bins')).sort('start', 'session')
    names = [lf.filter(pl.col(c)).select(pl.col('test').unique().sort()) for c in
             ('smoke', 'emulated')]
    systems = lf.select(given('system').drop_nulls().unique().sort())
    sess, smoke, emulated, systems = pl.collect_all([per_session, *names, systems])
    return {'sessions': [
        {'uuid': r['session'], 'start': r['time_start'] or '', 'systems': r['systems'],
         'modes': r['modes'], 'labels': (['smoke'] if r['smoke'] else [])
         + (['emulated'] if r['emulated'] else []), 'revs': r['revs'], 'confs': r['confs'],
         'nodes': r['nodes'], 'bins': r['bins'], 'cmd': r['cmdline'] or ''}
        for r in sess.iter_rows(named=True)],
        'systems': systems.to_series().to_list(), 'smoke': smoke.to_series().to_list(),
        'emulated': emulated.to_series().to_list()}


def frame_of(sessions):
    """The rows :func:`overview` reads, of sessions in memory."""
    info = {s.uuid: s.info for s in sessions}
    cases = {(r.session, id(r.case)): r for r in records(sessions)}   # one row a test case
    rows = [(r.session, r.times.session_start, info[r.session].get('time_start') or '',
             info[r.session].get('cmdline') or '', r.system, r.mode, r.smoke, r.emulated,
             r.test, *(rfdb.provenance_text(r.case.get(k)) for k in _PROV_COLS))
            for r in cases.values()]
    return pl.DataFrame(rows, schema=[(c, store.SCHEMA[c]) for c in _OVERVIEW_COLS],
                        orient='row').lazy()
