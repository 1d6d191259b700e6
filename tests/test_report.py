"""The HTML report of sessions recorded from real runs
(tests/data/results/README.md), loaded in a real headless Chromium."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from clusterproof.results.report import build
from clusterproof.results.database import load_sessions, records
from conftest import WAIT_S
from results_helpers import clusterproof, recorded_results

CHROMIUM = shutil.which('chromium') or '/usr/bin/chromium'
need_chromium = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason='needs chromium')


def chromium(tmp_path, page, *action):
    """Run headless Chromium on ``page``; returns (stdout, stderr)."""
    cmd = [CHROMIUM, '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
           '--no-first-run', '--disable-background-networking', '--disable-component-update',
           '--disable-sync', f'--user-data-dir={tmp_path / "chromium-profile"}',
           '--enable-logging=stderr', '--v=0', '--virtual-time-budget=5000',
           '--window-size=1200,2400', *action, page.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=WAIT_S)
    return proc.stdout, proc.stderr


def console_messages(stderr):
    return [line for line in stderr.splitlines() if 'CONSOLE' in line]


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
    assert 'SMOKE' in text and '[smoke]' in text
    assert 'id="verdict-table"' in text and 'id="provenance-table"' in text
    assert 'id="scaling"' in text and 'id="history"' in text
    assert text.count('class="plot"') >= 4


@need_chromium
def test_report_in_headless_chromium(report_page, tmp_path):
    shot = tmp_path / 'report.png'
    _, err = chromium(tmp_path, report_page, f'--screenshot={shot}')
    assert shot.is_file() and shot.stat().st_size > 20_000
    assert console_messages(err) == []
    dom, err = chromium(tmp_path, report_page, '--dump-dom')
    plots = re.findall(r'<div class="plot[^"]*js-plotly-plot', dom)
    assert len(plots) >= 4                       # plotly drew every plot
    assert dom.count('class="main-svg"') >= 2 * len(plots)
    assert console_messages(err) == []
    keep = Path('/tmp/clusterproof-report-test.png')
    shutil.copy(shot, keep)                      # for a human look


@need_chromium
def test_console_errors_are_caught(tmp_path):
    """The console check itself: a page that logs an error is noticed."""
    page = tmp_path / 'bad.html'
    page.write_text('<html><body><script>console.error("broken plot")</script></body></html>')
    _, err = chromium(tmp_path, page, '--dump-dom')
    assert any('broken plot' in m for m in console_messages(err))


def test_report_of_failed_test(tmp_path):
    sessions = load_sessions(recorded_results(tmp_path) / 'results.db')
    recs = records(sessions[:1])
    import dataclasses
    recs.append(dataclasses.replace(recs[0], figure='', value=float('nan'), result='fail',
                                    fail_phase='sanity'))
    page = build(sessions[:1], recs, {'local': {}})
    assert 'FAILED' in page
