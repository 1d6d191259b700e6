"""The morning page of sessions recorded from real runs
(tests/data/results/README.md), loaded in a real headless Chromium."""

import dataclasses
import datetime
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from clusterproof.analysis import compare
from clusterproof.analysis.morning import prepare
from clusterproof.store import history, sources
from clusterproof.references.judge import Verdict
from clusterproof.publish.report import build, bucket
from clusterproof.store.overview import frame_of, overview
from clusterproof.store.sessions import Outcome, load_sessions, records
from conftest import WAIT_S
from results_helpers import REPO, clusterproof, recorded_results, table_rows

def page_of(sessions, recs, refs, histories=None):
    """The page of ``sessions`` (oldest first; ``recs`` the records of the
    newest): what it shows prepared, then formatted."""
    if histories is None:
        histories = history.from_records(sessions, recs)
    return build(prepare(sessions[-1] if sessions else None, recs, histories,
                         overview(frame_of(sessions)), refs))


CHROMIUM = shutil.which('chromium') or '/usr/bin/chromium'
need_chromium = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason='needs chromium')
ARTEFACTS = REPO / 'build' / 'test-artifacts'


def chromium(tmp_path, page, *action, size='1200,2400'):
    """Run headless Chromium on ``page``; returns (stdout, stderr)."""
    cmd = [CHROMIUM, '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
           '--no-first-run', '--disable-background-networking', '--disable-component-update',
           '--disable-sync', f'--user-data-dir={tmp_path / "chromium-profile"}',
           '--enable-logging=stderr', '--v=0', '--virtual-time-budget=5000',
           '--hide-scrollbars', f'--window-size={size}', *action, page.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=WAIT_S)
    return proc.stdout, proc.stderr


def console_messages(stderr):
    return [line for line in stderr.splitlines() if 'CONSOLE' in line]


def plot_data(page):
    """{div id: (data, layout)} of every plot of the page, as plotly wrote it."""
    out = {}
    for m in re.finditer(r'<script type="application/json" id="([^"]+)-spec">(.*?)</script>',
                         page, re.S):
        spec = json.loads(m.group(2))
        out[m.group(1)] = (spec['data'], spec['layout'])
    return out


@pytest.fixture
def report_page(tmp_path):
    results = recorded_results(tmp_path)
    refs = tmp_path / 'refs'
    refs.mkdir()
    sessions = load_sessions(results / 'results.db')
    sel = [a for s in sessions[:3] for a in ('--session', s.uuid)]
    assert clusterproof(['bless', *sel, '--write', '--reason', 'test'], results,
                        refs).returncode == 0
    out = tmp_path / 'report.html'
    proc = clusterproof(['report', '-o', str(out)], results, refs)
    assert proc.returncode == 0, proc.stderr
    return out


def test_report_is_self_contained_and_labels_smoke(report_page):
    text = report_page.read_text()
    assert not re.search(r'<script[^>]+src=|<link[^>]+href=', text)   # nothing fetched
    assert text.count('* plotly.js v') == 1                              # inlined once
    assert 'SMOKE' in text and '[smoke]' in text
    assert 'id="counts"' in text and 'id="provenance-table"' in text
    assert 'id="family-DevZeroCopy"' in text
    plots = plot_data(text)
    assert len(plots) >= 2
    # The newest session ran at smoke sizes: every plot of it says so.
    scaling = [lay for _, lay in plots.values() if 'published' in lay.get('meta', {})]
    assert scaling and all('SMOKE' in lay['title']['text'] for lay in scaling)


def test_verdict_buckets():
    assert [bucket(v) for v in ('pass', 'REGRESSION', 'FAILED', 'skipped', 'not-judged',
                                'no-ref', 'xfail', 'OUT-OF-BOUNDS')] == \
        ['pass', 'regression', 'failed', 'skipped', 'not judged', 'not judged',
         'xfail', 'out of bounds']
    assert [v.bucket for v in Verdict] == [bucket(v) for v in Verdict]


def test_report_of_failed_test(tmp_path):
    sessions = load_sessions(recorded_results(tmp_path) / 'results.db')
    recs = records(sessions[:1])
    failed = dataclasses.replace(recs[0].outcome, result='fail', fail_phase='sanity')
    recs.append(dataclasses.replace(recs[0], figure='', value=float('nan'), outcome=failed))
    page = page_of(sessions[:1], recs, {'local': _ref(100000.0)})
    rows = table_rows(page, 'failures-table')[1:]
    # The failed test first, then the regressions, the largest miss first.
    assert 'data-verdict="FAILED"' in rows[0] and 'failed in sanity' in rows[0]
    misses = [float(m) for m in re.findall(r'\((-[\d.]+)%; tolerance', ''.join(rows[1:]))]
    assert len(misses) == 2 and misses == sorted(misses)
    assert re.search(r'data-bucket="failed"><span class="n">1<', page)
    assert re.search(r'data-bucket="regression"><span class="n">2<', page)


def test_build_without_figures_is_not_a_failure(tmp_path):
    """The recorded STREAM sessions (tests/data/history) hold the StreamBuild
    test case, which passed and has no figures: the morning page listed it
    as FAILED with the reason 'pass in None', and compare failed on it."""
    shutil.copy(REPO / 'tests' / 'data' / 'history' / 'results.db', tmp_path / 'results.db')
    sessions = load_sessions(tmp_path / 'results.db')
    recs = records(sessions[:1])
    build_recs = [r for r in recs if r.test.startswith('StreamBuild')]
    assert [(r.outcome.result, r.figure, r.outcome.fail_phase) for r in build_recs] == \
        [('pass', '', None)]
    page = page_of(sessions[:1], recs, {})
    assert 'in None' not in page and 'StreamBuild' in page
    assert 'id="failures-table"' not in page            # nothing failed
    assert re.search(r'data-bucket="failed"><span class="n">0<', page)
    rows = [row for row in compare.against_references(recs, {}) if row.figure == '(test)']
    assert [(row.test, row.verdict, row.reason) for row in rows] == \
        [(build_recs[0].test, Verdict.PASS, compare.NO_FIGURES)]


def test_failure_reason_names_phase_and_cause_or_says_unknown(tmp_path):
    """One reason for a test case that measured nothing, on the page and in
    compare: the phase and the cause, each said unknown when the run report
    records none (a recorded build case turned failed, phase and reason unset)."""
    shutil.copy(REPO / 'tests' / 'data' / 'history' / 'results.db', tmp_path / 'results.db')
    sessions = load_sessions(tmp_path / 'results.db')
    recs = records(sessions[:1])
    built = next(r for r in recs if r.test.startswith('StreamBuild'))
    outcomes = {
        'failed in an unknown phase: cause unknown (the run report records none)':
            Outcome('fail', None, ''),
        'failed in compile: make: *** [Makefile:4: stream] Error 1':
            Outcome('fail', 'compile', 'make: *** [Makefile:4: stream] Error 1'),
        'aborted in run: KeyboardInterrupt': Outcome('abort', 'run', 'KeyboardInterrupt'),
        'skipped: no reason recorded': Outcome('skip'),
        'failed in its dependencies: a test or fixture it depends on failed':
            Outcome('fail_deps', None, ''),
    }
    cases = {want: dataclasses.replace(built, outcome=ended) for want, ended in outcomes.items()}
    for want, rec in cases.items():
        assert rec.outcome.why == want
        row, = compare.against_references([rec], {})
        assert row.reason == want and row.verdict in (Verdict.FAILED, Verdict.SKIPPED)
        page = page_of(sessions[:1], [rec], {})
        if not rec.outcome.skipped:
            failure, = table_rows(page, 'failures-table')[1:]
            assert 'None' not in failure and want.replace("'", '&#39;') in failure


def _ref(value, lower=-0.1):
    return {'DevZeroCopy': {'local:default': {'copy_bw': [value, lower, None, 'MB/s']}}}


def test_emulated_band_is_the_band_of_its_row(tmp_path):
    """An emulated figure judged against local.emulated.yaml: the small
    multiple draws that reference and band, the one the table shows, not the
    real hardware's."""
    sessions = load_sessions(recorded_results(tmp_path) / 'results.db')[:4]
    recs = [dataclasses.replace(r, emulated=True) for r in records(sessions)]
    refs = {'local': _ref(99999.0), 'local.emulated': _ref(700.0, -0.2)}
    page = page_of(sessions, recs, refs)
    rows = {m.group(1): m.group(2) for m in
            re.finditer(r'<tr class="b-[^"]*" data-key="([^"]*copy_bw)" data-ref="([^"]*)"', page)}
    assert rows and set(rows.values()) == {'700.0'}
    multiples = [lay['meta'] for _, lay in plot_data(page).values()
                 if lay['meta'].get('key') in rows]
    assert len(multiples) == len(rows)
    for meta in multiples:
        assert meta['ref'] == float(rows[meta['key']]) == 700.0
        assert meta['lo'] == pytest.approx(560.0) and meta['hi'] is None
        assert 'emulated' in meta['labels'] and 'emulated-ref' in meta['labels']
    assert 'reference (emulated)' in page
    drawn = [y for data, _ in plot_data(page).values() for t in data for y in t.get('y', [])]
    assert drawn and 99999.0 not in drawn        # the real hardware's reference is not drawn


def stepped_history(tmp_path, sessions, recs, nights=40, step_at=30, drop=0.3):
    """A CSV history of one recorded figure (the nights before the newest
    session, with a step down of ``drop`` at ``step_at``), read back with the
    history readers; the recorded histories of the other figures."""
    rec = next(r for r in recs if r.session == sessions[-1].uuid and r.figure == 'copy_bw')
    base = rec.value
    path = tmp_path / 'history.csv'
    lines = ['timestamp,system,partition,test,figure,value,unit,binary_version']
    t0 = sessions[-1].info['time_start_unix'] - nights * 86400
    for i in range(nights):
        t = datetime.datetime.fromtimestamp(t0 + i * 86400, datetime.timezone.utc)
        wobble = 1 + 0.01 * ((i * 7) % 5 - 2)
        value = base * wobble * (1 - drop if i >= step_at else 1)
        lines.append(f'{t.isoformat()},{rec.system},{rec.partition},{rec.test} +{rec.environ},'
                     f'{rec.figure},{value},{rec.unit},{"2.0" if i >= step_at else "1.9"}')
    path.write_text('\n'.join(lines) + '\n')
    stepped = sources.load([path])
    keys = {h.key for h in stepped}
    return stepped + [h for h in history.from_records(sessions, recs) if h.key not in keys]


@pytest.fixture
def morning_page(tmp_path):
    sessions = load_sessions(recorded_results(tmp_path) / 'results.db')[:4]   # no smoke
    recs = records(sessions)
    hists = stepped_history(tmp_path, sessions, recs)
    page = page_of(sessions, recs, {'local': _ref(650.0)}, histories=hists)
    out = tmp_path / 'morning.html'
    out.write_text(page)
    return out


def test_changes_are_ranked_with_attribution(morning_page):
    page = morning_page.read_text()
    rows = table_rows(page, 'changes-table')[1:]
    assert len(rows) == 1
    assert 'copy_bw' in rows[0] and 'worse' in rows[0]
    assert 'binary_version: 1.9 -&gt; 2.0' in rows[0]
    assert re.search(r'data-bucket="change"><span class="n">1<', page)
    # The figure's small multiple marks the change point.
    marked = [lay['meta'] for _, lay in plot_data(page).values() if lay['meta'].get('changes')]
    assert len(marked) == 1 and marked[0]['key'].endswith('copy_bw')


def test_page_and_changes_command_agree_on_an_older_step(tmp_path):
    """Sixteen sessions with a 50 % drop at session 9: `clusterproof changes`
    lists it, and the page built from the same histories has it on the first
    screen and counts it (the pre-screen once looked only at the newest two
    values against the median, which a step 8 sessions old has moved)."""
    from clusterproof.analysis.findings import detect
    sessions = load_sessions(recorded_results(tmp_path) / 'results.db')[:4]   # no smoke
    recs = records(sessions)
    hists = stepped_history(tmp_path, sessions, recs, nights=16, step_at=8, drop=0.5)
    listed = [f for f in detect(hists)[0] if not f['withdrawn']]
    assert [(f['figure'], round(f['change'], 1)) for f in listed] == [('copy_bw', -0.5)]
    page = page_of(sessions, recs, {'local': _ref(650.0)}, histories=hists)
    rows = table_rows(page, 'changes-table')[1:]
    assert len(rows) == 1 and 'copy_bw' in rows[0] and '-50.' in rows[0]
    assert re.search(r'data-bucket="change"><span class="n">1<', page)
    assert 'No change point' not in page


PROBE = """<script>window.addEventListener('load', function(){
  var out = {};
  ['counts', 'changes-table', 'failures'].forEach(function(id){
    var e = document.getElementById(id);
    out[id] = e ? e.getBoundingClientRect().bottom + window.scrollY : null; });
  out.plots = document.querySelectorAll('div.lazy-plot').length;
  function drawn() { return document.querySelectorAll('.js-plotly-plot').length; }
  function done() {
    out.scrolled = drawn();
    var p = document.createElement('pre'); p.id = 'layout-probe';
    p.textContent = JSON.stringify(out); document.body.appendChild(p); }
  var y = 0;
  function step() {   // scroll down a screen at a time, as a reader would
    window.scrollTo(0, y);
    // headless Chromium runs no frame after load, so delivers no scroll event
    window.dispatchEvent(new Event('scroll'));
    if (y > document.documentElement.scrollHeight) { setTimeout(done, 300); return; }
    y += 800; setTimeout(step, 60); }
  setTimeout(function(){ out.first = drawn(); step(); }, 300); });</script>"""


@pytest.mark.slow
@need_chromium
def test_morning_page_in_headless_chromium(morning_page, tmp_path):
    """At 1400x900 the first screen holds the counts and the ranked changes;
    plotly draws every plot; nothing logs to the console."""
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTEFACTS / 'morning-page.png'
    _, err = chromium(tmp_path, morning_page, f'--screenshot={shot}', size='1400,900')
    assert shot.is_file() and shot.stat().st_size > 20_000
    assert console_messages(err) == []
    print(f'screenshot: {shot}')
    probed = tmp_path / 'probed.html'
    # A tall block pushes the plots after the small multiples 6,000 px down.
    text = morning_page.read_text().replace('</body>', PROBE + '</body>')
    text = text.replace('<div class="plot ',
                        '<div style="height:6000px"></div><div class="plot ', 1)
    probed.write_text(text)
    dom, err = chromium(tmp_path, probed, '--dump-dom', size='1400,900')
    assert console_messages(err) == []
    layout = json.loads(re.search(r'<pre id="layout-probe">(.*?)</pre>', dom).group(1))
    assert 0 < layout['counts'] < 900 and 0 < layout['changes-table'] < 900, layout
    n_plots = len(plot_data(morning_page.read_text()))
    # Plots near the first screen are drawn at once, the others when scrolled to.
    assert n_plots >= 3 and layout['plots'] == n_plots
    assert 0 < layout['first'] < n_plots and layout['scrolled'] == n_plots, json.dumps(layout)


@pytest.mark.slow
@need_chromium
def test_report_in_headless_chromium(report_page, tmp_path):
    _, err = chromium(tmp_path, report_page, '--dump-dom')
    assert console_messages(err) == []


@need_chromium
def test_console_errors_are_caught(tmp_path):
    """The console check itself: a page that logs an error is noticed."""
    page = tmp_path / 'bad.html'
    page.write_text('<html><body><script>console.error("broken plot")</script></body></html>')
    _, err = chromium(tmp_path, page, '--dump-dom')
    assert any('broken plot' in m for m in console_messages(err))


def test_published_curve_beside_an_emulated_run(tmp_path):
    """IOzone on another system is drawn against the published figures (the
    references of pixstor, indexed on threads), labelled, never judged
    against them."""
    from clusterproof.references.entries import load
    sessions = load_sessions(recorded_results(tmp_path) / 'results.db')[:1]
    rec = next(r for r in records(sessions) if r.figure == 'copy_bw')
    recs = [dataclasses.replace(rec, check='IOzoneSequential', test=f'IOzoneSequential '
                                f'%threads={n}', figure='write_gbs', unit='GB/s', value=v,
                                emulated=True)
            for n, v in ((8, 1.5), (16, 1.6))]
    refs = {'local': {}, 'pixstor': load(REPO / 'site_config' / 'references' / 'pixstor.yaml')}
    page = page_of(sessions, recs, refs)
    lay_data = [(d, lay) for d, lay in plot_data(page).values() if lay['meta'].get('published')]
    assert len(lay_data) == 1
    data, layout = lay_data[0]
    assert 'EMULATED' in layout['title']['text']
    pub = next(t for t in data if 'published (pixstor' in t['name'])
    assert (pub['x'], pub['y']) == ([8.0, 16.0], [28.5, 27.0])
    measured = next(t for t in data if 'measured' in t['name'])
    assert '[emulated]' in measured['name']
    verdicts = re.findall(r'class="verdict v-([\w-]+)">([^<]*)<', page)
    assert verdicts == [('not-judged', 'no-ref')] * 2   # no verdict from the publication


def test_bars_of_a_family_without_thread_axis(tmp_path):
    """STREAM-like figures (no thread count): bars with the reference of each
    judged row."""
    sessions = load_sessions(recorded_results(tmp_path) / 'results.db')[:1]
    recs = [dataclasses.replace(r, check='Stream', test='Stream %placement=cores')
            for r in records(sessions) if '%num_threads=1' in r.test]
    refs = {'local': {'Stream': {'local:default': {'copy_bw': [321.0, -0.1, None, 'MB/s']}}}}
    page = page_of(sessions, recs, refs)
    bars = [data for data, lay in plot_data(page).values() if 'Stream @local' in
            lay['title']['text']]
    assert len(bars) == 1                        # MB/s (the times have no reference)
    ref = next(t for data in bars for t in data if 'reference' in t['name'])
    assert (ref['x'], ref['y']) == (['copy_bw'], [321.0])
    assert 'data-ref="321.0"' in page


def test_names_are_escaped(tmp_path):
    """A test name with markup stays text, in tables and in plot data."""
    sessions = load_sessions(recorded_results(tmp_path) / 'results.db')[:4]
    evil = '</script><img src=x onerror=alert(1)>'
    recs = [dataclasses.replace(r, test=r.test + evil) for r in records(sessions)]
    page = page_of(sessions, recs, {'local': _ref(650.0)})
    assert evil not in page and '<img' not in page
    assert '&lt;/script&gt;&lt;img' in page     # the table shows it as text
    assert any(evil in lay['title']['text'] for _, lay in plot_data(page).values())


def test_stale_xfail_is_a_failure_with_its_reason(tmp_path):
    """A reference marked $xfail that the figure met (xpass, a failure as
    ReFrame counts it) is listed with the failures, saying why."""
    sessions = load_sessions(recorded_results(tmp_path) / 'results.db')[3:4]
    refs = {'local': {'DevZeroCopy': {'local:default': {
        'copy_bw': ['$xfail', 'known slow disk', [600.0, -0.1, None, 'MB/s']]}}}}
    page = page_of(sessions, records(sessions), refs)
    rows = table_rows(page, 'failures-table')[1:]
    assert len(rows) == 2 and all('data-verdict="xpass"' in r for r in rows)
    assert all('met a reference marked $xfail' in r for r in rows)
    # ReFrame judged these figures against another reference when they ran.
    assert all('the run was judged against' in r for r in rows)


def test_which_figures_are_scanned_for_changes():
    """Only a figure whose newest nights moved is scanned: a new level (also
    one 8 sessions old), or a new level followed by a bad night the other
    way; not one bad night."""
    import numpy as np
    from clusterproof.analysis.recent import moved
    noise = np.log([100 + (i * 7) % 5 - 2 for i in range(40)])   # about 1.4 %
    step = noise.copy()
    step[-3:] -= 0.2
    assert moved(step)
    step[-1] += 0.4                       # then one night far above the old level
    assert moved(step)
    one_bad = noise.copy()
    one_bad[-1] -= 0.3
    assert not moved(one_bad) and not moved(noise)
    older = noise.copy()                  # a step 8 sessions old is still seen
    older[-8:] -= 0.2
    assert moved(older)
