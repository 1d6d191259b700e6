"""``clusterproof export`` on a figure store ingested from the recorded ReFrame
results database (tests/data/results), plus one session written through
ReFrame's own storage code with references: CSV read back by ``store import``,
Parquet read back by polars and DuckDB, BMF in Bencher's shape with the
reference bounds, OpenMetrics read by prometheus_client's parser and imported
into a real VictoriaMetrics; the errors name what was wrong."""

import csv
import io
import json
import shutil
import subprocess
import urllib.request
import uuid as uuidlib

import polars as pl
import pytest
import yaml
from results_helpers import clusterproof, recorded_report, recorded_results, reframe_store
from servers import free_port, get, serving, vm_query

from conftest import wait_for

from clusterproof import store
from clusterproof.references import entries
from clusterproof.store import export

#: the recorded database's sessions: three nightly, one slowed nightly, one smoke
RECORDED = 5


def _judged_report(tmp_ref=1000.0):
    """The first recorded session again, a day after the last, with the
    references a blessed run has: copy_bw 1000 MB/s -10%/+inf, copy_time
    0.5 s -inf/+20%."""
    rep = recorded_report(0)
    new = str(uuidlib.uuid4())
    info = rep['session_info']
    info.update(uuid=new, time_start_unix=info['time_start_unix'] + 10 * 86400,
                time_end_unix=info['time_end_unix'] + 10 * 86400)
    for run in rep['runs']:
        for tc in run['testcases']:
            tc['session_uuid'] = new
            tc['uuid'] = f'{new}:{tc["uuid"].split(":", 1)[1]}'
            tc['job_completion_time_unix'] += 10 * 86400
            for name, pv in tc['perfvalues'].items():
                pv[1:4] = [tmp_ref, -0.1, None] if name.endswith('copy_bw') else [0.5, None, 0.2]
    return rep, new


@pytest.fixture(scope='module')
def judged(tmp_path_factory):
    """(the recorded results directory with a sixth session judged against
    references, newest, and its store; that session's uuid): shared by the
    tests of this file, which only read it"""
    res = recorded_results(tmp_path_factory.mktemp('export'))
    rep, new = _judged_report()
    reframe_store(res, [rep])
    store.ingest(res / 'results.db', res / 'store')
    return res, new


def _export(results, tmp_path, *args):
    return clusterproof(['export', *args], results, tmp_path / 'refs')


def _store_rows(results):
    return store.scan([results / 'store']).collect()


@pytest.mark.slow
def test_csv_reads_back_through_store_import(judged, tmp_path):
    results, judged_uuid = judged
    out = tmp_path / 'figures.csv'
    proc = _export(results, tmp_path, '--format', 'csv', '--last', '10', '-o', str(out))
    assert proc.returncode == 0, proc.stderr
    assert '6 session(s)' in proc.stderr
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    figs = export.measured(_store_rows(results))
    assert len(rows) == figs.height
    smoke = [r for r in rows if r['flags'] == 'smoke']
    assert smoke and len({r['session'] for r in smoke}) == 1
    assert {(r['figure'], r['ref'], r['lower'], r['upper']) for r in rows
            if r['session'] == judged_uuid} == {('copy_bw', '1000.0', '-0.1', ''),
                                                ('copy_time', '0.5', '', '0.2')}

    again = tmp_path / 'again'
    proc = clusterproof(['store', 'import', str(out), '--store', str(again)], results,
                        tmp_path / 'refs')
    assert proc.returncode == 0, proc.stderr
    back = store.scan([again]).collect()
    cols = ['session', 'system', 'partition', 'environ', 'test', 'figure', 'unit', 'smoke',
            'emulated', 'binary_version', 'binary_path', 'cp_git_rev', 'job_nodelist']
    key = ['session', 'test', 'figure']
    mine = figs.select(*cols, 'value', 'start').sort(key)
    theirs = back.select(*cols, 'value', 'start').sort(key)
    assert mine.select(cols).equals(theirs.select(cols))
    assert mine['value'].to_list() == theirs['value'].to_list()    # exact: repr of floats
    assert (mine['start'] - theirs['start']).abs().max() < 1e-5     # microseconds in ISO 8601


def test_parquet_holds_the_selected_rows(judged, tmp_path):
    results, judged_uuid = judged
    out = tmp_path / 'x' / 'figures.parquet'
    proc = _export(results, tmp_path, '--format', 'parquet', '--last', '2', '-o', str(out))
    assert proc.returncode == 0, proc.stderr
    rows = _store_rows(results)
    newest = sorted(rows['start'].unique())[-2:]
    want = rows.filter(pl.col('start').is_in(newest)).sort(['session', 'test', 'figure'])
    got = pl.read_parquet(out).sort(['session', 'test', 'figure'])
    assert got.columns == list(store.SCHEMA) and got.equals(want)
    duckdb = pytest.importorskip('duckdb')
    n, sessions, total = duckdb.sql(
        f"SELECT count(*), count(DISTINCT session), sum(value) FROM read_parquet('{out}') "
        f"WHERE figure <> ''").fetchall()[0]
    figs = export.measured(want)
    assert (n, sessions) == (figs.height, 2)
    assert total == pytest.approx(figs['value'].sum())


def test_bmf_is_benchers_shape_with_the_reference_bounds(judged, tmp_path):
    results, judged_uuid = judged
    proc = _export(results, tmp_path, '--format', 'bmf')        # the newest: the judged one
    assert proc.returncode == 0, proc.stderr
    bmf = json.loads(proc.stdout)
    rows = export.measured(_store_rows(results)).filter(pl.col('session') == judged_uuid)
    assert set(bmf) == {f'local:default:gnu/{t}' for t in rows['test']}
    for benchmark, measures in bmf.items():
        assert set(measures) == {'copy_bw (MB/s)', 'copy_time (s)'}
        for m in measures.values():
            assert set(m) <= {'value', 'lower_value', 'upper_value'}
            assert all(isinstance(v, float) for v in m.values())
        # the bounds of 1000 MB/s -10%/+inf and 0.5 s -inf/+20%
        assert measures['copy_bw (MB/s)']['lower_value'] == pytest.approx(900.0)
        assert 'upper_value' not in measures['copy_bw (MB/s)']
        assert measures['copy_time (s)']['upper_value'] == pytest.approx(0.6)
        assert 'lower_value' not in measures['copy_time (s)']
        test = benchmark.split('/', 1)[1]
        assert measures['copy_bw (MB/s)']['value'] == rows.filter(
            (pl.col('test') == test) & (pl.col('figure') == 'copy_bw'))['value'][0]
    assert entries.bounds(1000.0, -0.1, None) == (900.0, None)


def test_bmf_of_a_smoke_session_says_so_and_has_no_bounds(judged, tmp_path):
    results, judged_uuid = judged
    rows = _store_rows(results)
    smoke = rows.filter(pl.col('smoke'))['session'][0]
    proc = _export(results, tmp_path, '--format', 'bmf', '--session', smoke[:8])
    assert proc.returncode == 0, proc.stderr
    bmf = json.loads(proc.stdout)
    assert bmf and all(b.endswith(' [smoke]') for b in bmf)
    assert all(set(m) == {'value'} for ms in bmf.values() for m in ms.values())


def test_one_session_formats_refuse_several(judged, tmp_path):
    results, judged_uuid = judged
    for fmt in ('bmf', 'openmetrics'):
        proc = _export(results, tmp_path, '--format', fmt, '--last', '3')
        assert proc.returncode == 2
        assert f'--format {fmt} holds the figures of one session' in proc.stderr
        assert 'has 3' in proc.stderr and not proc.stdout


def _openmetrics(results, tmp_path):
    proc = _export(results, tmp_path, '--format', 'openmetrics')
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_openmetrics_parses_with_prometheus_client(judged, tmp_path):
    results, judged_uuid = judged
    from prometheus_client.openmetrics.parser import text_string_to_metric_families
    text = _openmetrics(results, tmp_path)
    assert text.endswith('# EOF\n')
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert set(families) == {'clusterproof_figure_MB_per_s', 'clusterproof_figure_s'}
    bw = families['clusterproof_figure_MB_per_s']
    assert bw.type == 'gauge' and bw.unit == 'MB_per_s'
    rows = export.measured(_store_rows(results)).filter(pl.col('session') == judged_uuid)
    want = {(r['test'], r['figure']): r['value'] for r in rows.iter_rows(named=True)}
    got = {(s.labels['test'], s.labels['figure']): s.value
           for f in families.values() for s in f.samples}
    assert got == want
    sample = bw.samples[0]
    assert sample.labels['unit'] == 'MB/s' and sample.labels['smoke'] == 'false'
    assert {'system', 'partition', 'environ', 'mode', 'emulated'} <= set(sample.labels)
    assert sample.timestamp is None


def test_openmetrics_names_and_labels_are_sanitised_and_escaped():
    from prometheus_client.openmetrics.parser import text_string_to_metric_families
    assert export.om_family('MB/s') == 'clusterproof_figure_MB_per_s'
    assert export.om_family('%') == 'clusterproof_figure_percent'
    assert export.om_family('') == 'clusterproof_figure'
    row = dict(session='s', start=1.0, time=1.0, system='sys', partition='p', environ='e',
               test='T %path="/a\\b"', figure='lat.p99', value=1.5, unit='us/op (99%)',
               mode='nightly', smoke=False, emulated=True)
    text = export.to_openmetrics(pl.DataFrame([row]))
    [fam] = text_string_to_metric_families(text)
    assert fam.name == 'clusterproof_figure_us_per_op_99percent'
    [s] = fam.samples
    assert s.labels['test'] == 'T %path="/a\\b"' and s.labels['figure'] == 'lat.p99'
    assert s.labels['emulated'] == 'true' and s.value == 1.5


@pytest.mark.slow
def test_openmetrics_imports_into_victoria_metrics(judged, tmp_path, victoria_metrics):
    results, judged_uuid = judged
    text = _openmetrics(results, tmp_path)
    req = urllib.request.Request(f'{victoria_metrics}/api/v1/import/prometheus',
                                 data=text.encode(), method='POST')
    with urllib.request.urlopen(req, timeout=30) as resp:
        assert resp.status == 204
    rows = export.measured(_store_rows(results)).filter(
        (pl.col('session') == judged_uuid) & (pl.col('figure') == 'copy_bw'))
    want = {r['test']: r['value'] for r in rows.iter_rows(named=True)}
    query = 'clusterproof_figure_MB_per_s{figure="copy_bw",system="local"}'

    def answer():
        res = vm_query(victoria_metrics, query)
        return res if len(res) == len(want) else None
    wait_for('VictoriaMetrics answers the query with every imported figure', answer)
    got = {r['metric']['test']: float(r['value'][1]) for r in answer()}
    assert got.keys() == want.keys()
    assert all(got[t] == pytest.approx(want[t], rel=1e-11) for t in want)


@pytest.fixture
def pushgateway(tmp_path):
    """A Prometheus pushgateway on 127.0.0.1 (Debian's), metrics kept in a
    file of ``tmp_path``; yields its base URL and stops it at the end."""
    binary = shutil.which('prometheus-pushgateway')
    if not binary:
        pytest.skip('needs prometheus-pushgateway (Debian package; make setup installs it as root)')
    url = f'http://127.0.0.1:{free_port()}'
    with serving([binary, f'--web.listen-address={url.removeprefix("http://")}',
                  f'--persistence.file={tmp_path / "pushgateway.data"}', '--log.level=warn'],
                 'the pushgateway answers /-/ready', lambda: get(f'{url}/-/ready') is not None):
        yield url


@pytest.mark.slow
def test_openmetrics_is_taken_by_a_pushgateway(judged, tmp_path, pushgateway):
    results, judged_uuid = judged
    text = _openmetrics(results, tmp_path)
    req = urllib.request.Request(f'{pushgateway}/metrics/job/clusterproof', method='PUT',
                                 data=text.encode(),
                                 headers={'Content-Type': 'text/plain; version=0.0.4'})
    with urllib.request.urlopen(req, timeout=30) as resp:
        assert resp.status == 200
    from prometheus_client.parser import text_string_to_metric_families
    scraped = {f.name: f for f in text_string_to_metric_families(get(f'{pushgateway}/metrics'))}
    rows = export.measured(_store_rows(results)).filter(pl.col('session') == judged_uuid)
    want = {(r['test'], r['figure']): r['value'] for r in rows.iter_rows(named=True)}
    got = {(s.labels['test'], s.labels['figure']): s.value
           for name in ('clusterproof_figure_MB_per_s', 'clusterproof_figure_s')
           for s in scraped[name].samples if s.labels.get('job') == 'clusterproof'}
    assert got == want
    assert scraped['clusterproof_figure_s'].type == 'gauge'


@pytest.mark.slow
def test_errors_name_the_format_and_the_selection(judged, tmp_path):
    results, judged_uuid = judged
    proc = _export(results, tmp_path, '--format', 'xml')
    assert proc.returncode == 2 and "invalid choice: 'xml'" in proc.stderr
    proc = _export(results, tmp_path, '--format', 'csv', '--system', 'nowhere')
    assert proc.returncode == 2 and 'system nowhere' in proc.stderr
    proc = _export(results, tmp_path, '--format', 'parquet')
    assert proc.returncode == 2 and '-o FILE' in proc.stderr
    with pytest.raises(Exception, match="export format 'xml' unknown"):
        export.export(_store_rows(results), 'xml')


def test_errors_name_the_output_and_leave_it_whole(judged, tmp_path):
    results, judged_uuid = judged
    # an output under a regular file: refused, naming it; an existing output stays
    blocker = tmp_path / 'file'
    blocker.write_text('not a directory')
    proc = _export(results, tmp_path, '--format', 'csv', '-o', str(blocker / 'out.csv'))
    assert proc.returncode == 2 and f'cannot write {blocker / "out.csv"}' in proc.stderr
    kept = tmp_path / 'kept.bmf'
    kept.write_text('before')
    proc = _export(results, tmp_path, '--format', 'bmf', '--last', '2', '-o', str(kept))
    assert proc.returncode == 2 and kept.read_text() == 'before'
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith('.kept')] == []


def test_a_session_without_figures_is_no_export(tmp_path):
    rows = store.frame([dict(session='s1', start=1.0, end=2.0, time=2.0, system='a',
                             partition='b', environ='c', test='T', figure='', value=None,
                             unit='', result='fail')])
    with pytest.raises(Exception, match=r'no figures to export: .*\(s1\).* 1 test case row'):
        export.export(rows, 'csv')


#: references of one system: one figure indexed by partition and parameter,
#: one by partition only, one expected failure (no rule)
RULES_REFS = '''\
IOzoneSequential:
  $index: [$partition, threads]
  tiny:compute:
    8:
      write_gbs: [28.5, -0.10, null, GB/s]
Stream:
  tiny:compute:
    triad: [1000, -0.05, 0.05, MB/s]
    copy: ['$xfail', 'known slow', [900, -0.05, null, MB/s]]
'''

#: the labels ``openmetrics`` gives a figure of system tiny
TINY = {'system': 'tiny', 'partition': 'compute', 'environ': 'gnu', 'mode': 'nightly',
        'smoke': 'false', 'emulated': 'false'}


def _series(family, value, **labels):
    text = ','.join(f'{k}="{v}"' for k, v in {**TINY, **labels}.items())
    return {'series': f'{family}{{{text}}}', 'values': str(value)}


def _rules_test(rules):
    """promtool's unit test of the rules file ``rules``: three series as
    ``openmetrics`` exports them, one of them out of its band."""
    out_of_band = dict(TINY, test='IOzoneSequential %threads=8', figure='write_gbs', unit='GB/s')
    return {'rule_files': [rules], 'evaluation_interval': '1m', 'tests': [{
        'interval': '1m',
        'input_series': [
            _series('clusterproof_figure_GB_per_s', 20, **{k: out_of_band[k] for k in
                                                           ('test', 'figure', 'unit')}),
            _series('clusterproof_figure_GB_per_s', 20, test='IOzoneSequential %threads=16',
                    figure='write_gbs', unit='GB/s'),
            _series('clusterproof_figure_MB_per_s', 1000, test='Stream', figure='triad',
                    unit='MB/s')],
        'alert_rule_test': [{
            'eval_time': '0m', 'alertname': 'ClusterproofFigureOutOfBand',
            'exp_alerts': [{
                'exp_labels': dict(out_of_band, severity='critical', kind='regression',
                                   reference='28.5',
                                   entry='tiny.yaml: IOzoneSequential.tiny:compute.8.write_gbs'),
                'exp_annotations': {'summary': (
                    'IOzoneSequential %threads=8 write_gbs on tiny:compute is 20 GB/s, outside '
                    'its reference band [25.65, +inf] GB/s (reference 28.5 GB/s, '
                    '-10.0%/+inf)')}}]}]}]}


def test_rules_come_from_the_references_alone_without_a_results_database(tmp_path, monkeypatch,
                                                                         capsys):
    """No results database: one rule per bounded reference, selecting its
    series by labels; promtool fires the one out of its band only (the
    other thread count and the figure in its band stay quiet)."""
    from clusterproof.cli import main
    refs = tmp_path / 'refs'
    refs.mkdir()
    (refs / 'tiny.yaml').write_text(RULES_REFS)
    monkeypatch.setenv('CLUSTERPROOF_RESULTS', str(tmp_path / 'results'))
    monkeypatch.setenv('CLUSTERPROOF_REFERENCES', str(refs))
    monkeypatch.delenv('CLUSTERPROOF_STORE', raising=False)
    rules = tmp_path / 'rules.yml'
    assert main(['export', '--format', 'rules', '-o', str(rules)]) == 0
    assert f'rules: 2 reference(s) of {refs} to {rules}' in capsys.readouterr().err
    assert main(['export', '--format', 'rules', '--system', 'other']) == 2
    err = capsys.readouterr().err
    assert 'no bounded reference in' in err and 'for system other' in err, err
    promtool = shutil.which('promtool')
    if not promtool:
        pytest.skip('needs promtool (Debian package prometheus)')
    (tmp_path / 'test.yml').write_text(yaml.safe_dump(_rules_test(rules.name)))
    for cmd in (['check', 'rules', str(rules)], ['test', 'rules', 'test.yml']):
        done = subprocess.run([promtool, *cmd], cwd=tmp_path, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
