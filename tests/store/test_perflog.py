"""The perflog format and its reader, on perflogs of one real IOzone run
logged in the format before (every loggable variable: the job script's
``|| exit 2`` split a field) and after (the fields read first, shell text
left out): tests/data/perflogs-shell-bar."""

import shutil

import pytest

from clusterproof import ClusterproofError
from clusterproof.reframe_io import perflog_fields
from clusterproof.store import perflog, sources

from results_helpers import REPO

DATA = REPO / 'tests' / 'data' / 'perflogs-shell-bar'
LOG = 'local/default/IOzoneSequential.log'


def _lines(path):
    header, *rows = path.read_text().splitlines()
    return header.split('|'), [r.split('|') for r in rows]


def _points(rows):
    return [(*r[:6], r[6].time, r[6].value, r[6].where.rsplit(':', 1)[1],
             {k: v for k, v in r[6].provenance.items() if k != 'reframe_version'})
            for r in rows]


def test_the_recorded_defect_a_shell_bar_shifts_the_fields():
    header, rows = _lines(DATA / 'before' / LOG)
    assert rows and all(len(r) > len(header) for r in rows)
    assert all('|| exit 2' in line for line in (DATA / 'before' / LOG).read_text()
               .splitlines()[1:])


def test_the_format_before_reads_as_the_format_after():
    before = perflog.read_perflog(DATA / 'before' / LOG)
    after = perflog.read_perflog(DATA / 'after' / LOG)
    assert len(after) == 2 * 6          # two test cases of six figures
    assert _points(before) == _points(after)
    assert {r[2] for r in after} == {'IOzoneSequential %threads=1 +gnu',
                                     'IOzoneSequential %threads=2 +gnu'}
    assert all(r[5] == ('smoke',) for r in after)
    prov = after[0][6].provenance
    assert prov['binary_version'] == '3.489' and prov['reframe_version'] == '4.10.4'
    assert prov['job_nodelist'] and prov['cp_binary_sha256']


def test_the_format_after_has_no_shell_text_and_the_read_fields_first():
    header, rows = _lines(DATA / 'after' / LOG)
    assert all(len(r) == len(header) for r in rows)
    n = len(perflog_fields.PERFLOG_FIELDS)
    assert header[:n] == list(perflog_fields.PERFLOG_FIELDS)
    assert header[n] == 'reframe version' and header[n + 1].endswith('_var=write_gbs_value')
    assert not set(perflog_fields.SHELL_FIELDS) & set(header)
    assert 'iozone_stonewalled' in header       # the check's own variables stay, at the end
    assert '|| exit 2' not in (DATA / 'after' / LOG).read_text()


def test_the_site_configuration_logs_in_this_format(tmp_path, monkeypatch):
    import importlib.util
    monkeypatch.setenv('CLUSTERPROOF_RESULTS', str(tmp_path / 'results'))
    spec = importlib.util.spec_from_file_location('cp_settings',
                                                  REPO / 'site_config' / 'settings.py')
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for entry in mod.site_configuration['logging']:
        [filelog] = [h for h in entry['handlers_perflog'] if h['type'] == 'filelog']
        assert filelog['format'] == perflog_fields.perflog_format()['format']
        assert 'check_prerun_cmds' in filelog['ignore_keys']


def test_a_bar_outside_the_shell_fields_is_still_refused(tmp_path):
    lines = (DATA / 'before' / LOG).read_text().splitlines()
    header = lines[0].split('|')
    bad = lines[1].split('|')
    bad[header.index('descr')] += '|a bar in the description'
    path = tmp_path / 'IOzoneSequential.log'
    path.write_text('\n'.join([lines[0], '|'.join(bad)]) + '\n')
    with pytest.raises(ClusterproofError, match=r'IOzoneSequential.log:2: 115 fields, '
                                                r'the header has 107'):
        perflog.read_perflog(path)


def test_a_perflog_moved_aside_by_a_new_header_is_read_too(tmp_path):
    """ReFrame moves a perflog whose header changed to ``<check>.log.h0``:
    after the change of format, the history before it is there."""
    where = tmp_path / 'perflogs' / 'local' / 'default'
    where.mkdir(parents=True)
    shutil.copy(DATA / 'before' / LOG, where / 'IOzoneSequential.log.h0')
    shutil.copy(DATA / 'after' / LOG, where / 'IOzoneSequential.log')
    (where / 'IOzoneSequential.log.hx').write_text('not a perflog')
    files = perflog.perflog_files(tmp_path / 'perflogs')
    assert [f.name for f in files] == ['IOzoneSequential.log', 'IOzoneSequential.log.h0']
    [hist] = [h for h in sources.load([tmp_path / 'perflogs'])
              if h.figure == 'write_gbs' and '%threads=1' in h.test]
    assert len(hist.points) == 2


@pytest.mark.slow
def test_a_real_iozone_run_logs_lines_that_read_as_its_database(local_iozone_run):
    """The check whose job script holds ``|| exit 2``, run by ReFrame with the
    site configuration (the run tests/benchmarks/test_iozone.py checks end to end,
    ``local_iozone_run`` of conftest): every perflog line has the header's
    fields, and the figures read from it are those of the results database."""
    from clusterproof.store.sessions import load_sessions, records
    out, results = local_iozone_run
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    [log] = (results / 'perflogs').rglob('IOzoneSequential.log')
    header, rows = _lines(log)
    assert rows and all(len(r) == len(header) for r in rows)
    from_log = {(r[2], r[3]): r[6].value for r in perflog.read_perflog(log)}
    from_db = {(f'{r.test} +{r.environ}', r.figure): r.value
               for r in records(load_sessions(results / 'results.db')) if r.figure}
    assert from_log and from_log == pytest.approx(from_db)
