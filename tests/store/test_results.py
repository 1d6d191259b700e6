"""Reading ReFrame's results database: a database recorded from real runs
(tests/data/results/README.md)."""

import dataclasses
import sqlite3
import time

import pytest

from clusterproof import ClusterproofError
from clusterproof.references.direction import lower_is_better
from clusterproof.commands.selection import parse_since
from clusterproof.reframe_io import database as rfdb
from clusterproof.store.sessions import PROVENANCE, Outcome, load_sessions, records
from clusterproof.store.sessions import test_params as params_of
from clusterproof.analysis.statistics import mmap_ratios, percentile
from conftest import REPO, reframe_env, run_reframe
from results_helpers import RECORDED_DB, recorded_results, without_binary


@pytest.fixture
def db(tmp_path):
    return recorded_results(tmp_path) / 'results.db'


def test_sessions_in_order_with_provenance(db):
    sessions = load_sessions(db)
    assert len(sessions) == 5
    assert [s.start for s in sessions] == sorted(s.start for s in sessions)
    assert [s.smoke for s in sessions] == [False] * 4 + [True]
    recs = records(sessions)
    assert len(recs) == 5 * 2 * 2          # sessions x thread counts x figures
    r = recs[0]
    assert r.check == 'DevZeroCopy' and r.system == 'local' and r.partition == 'default'
    assert r.figure in ('copy_bw', 'copy_time') and r.value > 0
    assert r.mode == 'nightly' and not r.smoke and not r.emulated
    assert r.binary_version and r.case['binary_path'].endswith('/dd')
    assert r.case['cp_git_rev'] and r.case['cp_config_hash'] and r.case['job_nodelist']
    # its provenance, as text: the node list joined, what the case lacks left out
    prov = r.provenance
    assert prov['job_nodelist'] == ','.join(r.case['job_nodelist'])
    assert prov['cp_git_rev'] == r.case['cp_git_rev']
    assert set(prov) == {k for k in PROVENANCE if k in r.case}
    # the provenance kept in columns of its own is part of a record's, in its order
    assert [k for k in PROVENANCE if k in rfdb.PROVENANCE_COLUMNS] == \
        list(rfdb.PROVENANCE_COLUMNS)
    assert {x.unit for x in recs} == {'MB/s', 's'}
    assert records(sessions[-1:])[0].flags == ['smoke']
    # its parts: how its test case ended, and when it ran and for how long
    assert r.outcome == Outcome('pass', None, '', 'pass') and r.outcome.sanity_ok
    first = sessions[0]
    assert r.times.session_start == first.start <= r.times.completed <= first.end
    assert 0 < r.times.run_s <= first.end - first.start


def test_an_outcome_says_whether_its_test_case_measured_and_why_not():
    assert Outcome.of_columns('fail', '', 'no bytes', 'fail').fail_phase is None  # '': none
    late = Outcome('fail', 'performance', 'below the bound', 'fail')
    assert late.sanity_ok and late.why == '' and not late.skipped      # it measured
    early = Outcome('fail', 'sanity', 'no bytes copied')
    assert not early.sanity_ok and early.why == 'failed in sanity: no bytes copied'
    skip = Outcome('skip', None, 'dd not found')
    assert skip.skipped and skip.why == 'skipped: dd not found'
    assert Outcome('xfail').sanity_ok and Outcome('abort', 'run').why == \
        'aborted in run: cause unknown (the run report records none)'


def test_selection_by_id_last_since_mode(db):
    everything = load_sessions(db)
    uuid = everything[2].uuid
    assert [s.uuid for s in load_sessions(db, ids=[uuid[:8]])] == [uuid]
    assert [s.uuid for s in load_sessions(db, last=2)] == [s.uuid for s in everything[-2:]]
    assert len(load_sessions(db, mode='nightly')) == 4
    assert load_sessions(db, since=time.time() + 10) == []
    assert len(load_sessions(db, system='local')) == 5
    assert load_sessions(db, system='pixstor') == []


def test_bad_ids_and_files_are_named(db, tmp_path):
    with pytest.raises(ClusterproofError, match="session 'ffffffff' is not in"):
        load_sessions(db, ids=['ffffffff'])
    with pytest.raises(ClusterproofError, match='no results database at'):
        load_sessions(tmp_path / 'nothing.db')
    bad = tmp_path / 'bad.db'
    sqlite3.connect(bad).execute('CREATE TABLE x(a)').connection.commit()
    with pytest.raises(ClusterproofError, match='not a ReFrame results database'):
        load_sessions(bad)


def test_database_is_opened_read_only(db):
    before = db.read_bytes()
    load_sessions(db)
    assert db.read_bytes() == before
    assert RECORDED_DB.read_bytes() == before


def test_helpers():
    assert params_of('IOR %num_threads=16 %op=write') == {'num_threads': '16', 'op': 'write'}
    assert lower_is_better('us') and lower_is_better('ns') and lower_is_better('', 'lat_p99')
    assert not lower_is_better('MB/s', 'write_bw') and not lower_is_better('IOPS', 'iops')
    assert percentile([1, 2, 3, 4, 5], 50) == 3 and percentile([10, 20], 5) == pytest.approx(10.5)
    now = 1_000_000.0
    assert parse_since('30d', now) == now - 30 * 86400
    with pytest.raises(ClusterproofError, match='--since'):
        parse_since('thirty days')


@pytest.mark.slow
def test_a_skipped_test_case_is_a_record_with_its_reason(tmp_path):
    """A real skip (IOR without an ior binary): one record without a figure,
    the reason the check gave; compare shows it ``skipped`` (not a
    regression), bless blesses nothing for it and refuses nothing, the
    histories leave it out."""
    from clusterproof.analysis import bless, compare
    from clusterproof.store import history
    results = tmp_path / 'results'
    env = without_binary(reframe_env(results, 'acceptance'), 'ior', tmp_path / 'view')
    proc = run_reframe(['-c', str(REPO / 'reframe_checks'), '-r', '--system', 'local',
                        '-n', 'IorSharedFile%threads=1$'], results, mode='acceptance',
                       extra_env=env)
    assert proc.returncode == 0 and '1 skipped' in proc.stdout, proc.stdout + proc.stderr
    sessions = load_sessions(results / 'results.db')
    [rec] = records(sessions)
    ended = rec.outcome
    assert ended.skipped and rec.figure == '' and not ended.sanity_ok
    assert ended.reason.startswith('ior not found') and 'install ior@4.0.0' in ended.reason
    assert ended.why == f'skipped: {ended.reason}'
    [row] = compare.against_references([rec], {'local': {}, 'local.emulated': {}})
    assert row.verdict == 'skipped' and not row.regression and ended.why in row.flags
    assert bless.refusals([rec]) == [] and bless.skipped([rec]) == {rec.test: ended.why}
    assert history.from_records(sessions, [rec]) == []


def test_mmap_ratios_are_memory_over_device_wall_time(db):
    """The morning page's mmap table: memory wall time over each device's,
    per test case; a device that took no time has no ratio."""
    rec = records(load_sessions(db))[0]
    walls = [dataclasses.replace(rec, figure=f'{target}_wall', value=value, unit='s')
             for target, value in (('memory', 2.0), ('pmem0', 4.0), ('nvme', 0.0))]
    rows = mmap_ratios(walls + [rec])
    assert [(r['device'], r['ratio']) for r in rows] == [('nvme', None), ('pmem0', 0.5)]
    assert rows[1]['memory'] == 2.0 and rows[1]['dev'] == 4.0
