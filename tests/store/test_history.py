"""Readers of figure histories: the results database and perflogs recorded
from real runs of the STREAM check, and CSV files (good and bad rows)."""

import shutil
from pathlib import Path

import pytest

from clusterproof import ClusterproofError
from clusterproof.store import sources

DATA = Path(__file__).resolve().parents[1] / 'data' / 'history'
HEADER = 'timestamp,system,partition,test,figure,value,unit'


def _by_key(hists):
    return {(h.test, h.figure): h for h in hists}


def test_database_and_perflogs_give_the_same_history(tmp_path):
    db = tmp_path / 'results.db'
    shutil.copy(DATA / 'results.db', db)
    from_db = _by_key(sources.load([db]))
    from_log = _by_key(sources.load([DATA / 'perflogs']))
    assert set(from_db) == set(from_log)
    assert len(from_db) == 8        # 2 placements x 4 kernels
    triad = from_db[('Stream %placement=cores %membind=local +gnu', 'triad')]
    assert triad.unit == 'MB/s' and triad.system == 'local' and triad.partition == 'default'
    assert triad.flags == ('smoke',)
    assert len(triad.points) == 3
    assert triad.values == from_log[triad.test, 'triad'].values
    assert triad.points[0].session and triad.points[0].provenance['binary_version'] == '5.10'
    assert triad.points[0].provenance['reframe_version'] == '4.10.4'
    log_point = from_log[triad.test, 'triad'].points[0]
    assert log_point.where.endswith('Stream.log:2')
    assert log_point.provenance['job_nodelist'] == triad.points[0].provenance['job_nodelist']
    # the third session ran pinned to one core: slower than the first two
    assert triad.values[2] < min(triad.values[:2])


def test_perflog_without_header_is_refused(tmp_path):
    lines = (DATA / 'perflogs/local/default/Stream.log').read_text().splitlines()
    bad = tmp_path / 'Stream.log'
    bad.write_text('\n'.join(lines[1:]) + '\n')
    with pytest.raises(ClusterproofError, match=r'Stream.log:1: no perflog header'):
        sources.load([bad])


def test_perflog_bad_row_names_file_and_line(tmp_path):
    lines = (DATA / 'perflogs/local/default/Stream.log').read_text().splitlines()
    d = tmp_path / 'local' / 'default'
    d.mkdir(parents=True)
    lines[3] = lines[3].replace('triad=', 'triad=x', 1)
    lines[4] = lines[4].rsplit('|', 2)[0]
    (d / 'Stream.log').write_text('\n'.join(lines) + '\n')
    with pytest.raises(ClusterproofError) as err:
        sources.load([tmp_path])
    msg = str(err.value)
    assert 'Stream.log:4: figure triad: value' in msg
    assert 'Stream.log:5: ' in msg and 'fields, the header has' in msg


def test_csv_good_rows_and_provenance(tmp_path):
    f = tmp_path / 'h.csv'
    f.write_text(HEADER + ',spack_lock_hash\n'
                 '2026-11-20T01:30:00+00:00,pm,batch,Stream,triad,45.1,GB/s,a1b2\n'
                 '2026-11-19T01:30:00,pm,batch,Stream,triad,45.3,GB/s,a1b2\n'
                 '2026-11-21T01:30:00Z,pm,batch,Stream,triad,41.0,GB/s,c3d4\n')
    (h,) = sources.load([f])
    assert h.values == [45.3, 45.1, 41.0]          # sorted by time
    assert h.points[2].provenance == {'spack_lock_hash': 'c3d4'}
    assert h.points[0].where == f'{f}:3'
    assert not h.lower_is_better


def test_csv_flags_column_keeps_smoke_and_emulated_apart(tmp_path):
    """A ``flags`` column marks smoke/emulated rows: their own history, and
    no provenance key of that name; a flag it does not know is refused."""
    f = tmp_path / 'h.csv'
    f.write_text(HEADER + ',flags,session\n'
                 '2026-11-19T01:30:00,pm,batch,Stream,triad,45.3,GB/s,,s1\n'
                 '2026-11-20T01:30:00,pm,batch,Stream,triad,1.1,GB/s,smoke,s2\n'
                 '2026-11-21T01:30:00,pm,batch,Stream,triad,0.9,GB/s,emulated smoke,s3\n')
    hists = {h.flags: h for h in sources.load([f])}
    assert set(hists) == {(), ('smoke',), ('smoke', 'emulated')}
    assert hists[('smoke',)].values == [1.1]
    assert hists[('smoke',)].points[0].provenance == {}
    assert hists[('smoke',)].points[0].session == 's2'
    f.write_text(HEADER + ',flags\n2026-11-19T01:30:00,pm,batch,Stream,triad,45.3,GB/s,tiny\n')
    with pytest.raises(ClusterproofError, match=r"h.csv:2: flags 'tiny' unknown"):
        sources.load([f])


@pytest.mark.parametrize('row, reason', [
    ('yesterday,pm,batch,Stream,triad,45.1,GB/s', "timestamp 'yesterday' is not ISO 8601"),
    ('2026-11-20T01:30:00,pm,batch,Stream,triad,fast,GB/s', "value 'fast' is not a number"),
    ('2026-11-20T01:30:00,pm,batch,Stream,triad,nan,GB/s', "value 'nan' is not finite"),
    ('2026-11-20T01:30:00,pm,,Stream,triad,45,GB/s', 'empty partition'),
    ('2026-11-20T01:30:00,pm,batch,Stream,triad,45', '6 fields, the header has 7'),
])
def test_csv_bad_row_refused_with_file_line_reason(tmp_path, row, reason):
    f = tmp_path / 'h.csv'
    f.write_text(HEADER + '\n2026-11-19T01:30:00,pm,batch,Stream,triad,45.3,GB/s\n' + row + '\n')
    with pytest.raises(ClusterproofError) as err:
        sources.load([f])
    assert f'{f}:3: {reason}' in str(err.value)
    assert 'file not used' in str(err.value)


def test_csv_header_must_name_the_columns(tmp_path):
    f = tmp_path / 'h.csv'
    f.write_text('time,system,partition,test,figure,value,unit\n')
    with pytest.raises(ClusterproofError, match=r'h.csv:1: header lacks timestamp'):
        sources.load([f])


def test_perflog_in_reframes_default_layout():
    """ReFrame's documented handler: check_info, jobid, then value|unit|ref|
    lower|upper per figure, no names in the value fields, no UTC offset."""
    hists = _by_key(sources.load([DATA / 'perflogs-default']))
    assert set(hists) == {(f'DevZeroCopy %num_threads={n} +gnu', fig)
                          for n in (1, 2) for fig in ('copy_bw', 'copy_time')}
    bw = hists['DevZeroCopy %num_threads=2 +gnu', 'copy_bw']
    assert (bw.system, bw.partition, bw.unit) == ('local', 'default', 'MB/s')
    assert bw.values == [46759.24191750278]
    assert bw.points[0].provenance == {'reframe_version': '4.10.4'}
    assert hists['DevZeroCopy %num_threads=1 +gnu', 'copy_time'].lower_is_better


def test_csv_and_database_read_together_smoke_kept_apart(tmp_path):
    """Older history kept in a CSV file beside the results database: the
    same figure is one history per flags (the recorded sessions are smoke
    runs, never mixed with full-size figures)."""
    db = tmp_path / 'results.db'
    shutil.copy(DATA / 'results.db', db)
    f = tmp_path / 'old.csv'
    test = 'Stream %placement=cores %membind=local +gnu'
    f.write_text(HEADER + f'\n2025-01-01T01:30:00,local,default,"{test}",triad,21000,MB/s\n'
                 f'2025-01-02T01:30:00,local,default,"{test}",triad,21500,MB/s\n'
                 f'2025-01-03T01:30:00,local,default,"{test}",triad,21400,MB/s\n')
    hists = [h for h in sources.load([f, db]) if h.test == test and h.figure == 'triad']
    # the database's figures are smoke figures: kept apart from the CSV's
    assert sorted((h.flags, len(h.points)) for h in hists) == [((), 3), (('smoke',), 3)]
    (f_old,) = [h for h in hists if not h.flags]
    assert f_old.values == [21000.0, 21500.0, 21400.0]
