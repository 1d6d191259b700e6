#!/usr/bin/env python3
"""Time the morning page at scale: 10 systems x 2,000 figures x 365 nights
(7.3 M values), generated in memory: the newest night's records and every
figure's history (a step change in 1 % of the figures during the last ten
nights, 0.5 % of the newest values below their reference band). Every value
carries the provenance a result records (the node fingerprint of 16 alike
nodes, with its record in a temporary results directory, and the binary's
and MPI library's sha256), and a figure's step comes with a kernel update
and another binary, which the attribution of its change names
(``--no-fingerprint``: values as recorded before the fingerprint).

Measured (targets): building the page, what it shows prepared
(``clusterproof.analysis.morning.prepare``) and formatted
(``clusterproof.publish.report.build``) (<= 5 s); compare, the newest night
judged against the references and the change points of every figure
(``compare.against_references`` and ``recent.recent_changes``, <= 5 s);
loading the page in headless Chromium at
1400x900 until its load event, the plots near the first screen drawn
(<= 3 s), and, not a target, until every plot is drawn as if a reader
scrolled through the page. Prints the figures and their ratios to the
targets, and the peak memory of this process.

Reading 7.3 M values from a ReFrame results database is not measured: its
test cases are JSON documents of about 2.5 kB each, some 18 GB for this
history; ``scripts/measure_results_commands.py`` times the database path at 365 x 100.

usage: .venv/bin/python scripts/measure_report_page.py [--systems 10] [--figures 2000]
                                                [--nights 365] [--keep FILE]
                                                [--no-fingerprint]
"""

import argparse
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from clusterproof.site import fingerprint
from clusterproof.analysis import compare, morning, recent
from clusterproof.publish import report
from clusterproof.store import history
from clusterproof.store.overview import frame_of, overview
from clusterproof.references.entries import Reference
from clusterproof.store.sessions import Outcome, Record, Session, Times

REPO = Path(__file__).resolve().parent.parent

FAMILIES = 20           # check names per system
THREADS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
PLOT_DIV = 'class="plotly-graph-div lazy-plot"'
TARGETS = {'report': 5.0, 'compare': 5.0, 'load': 3.0}


def _provenance(results, kernel, digit):
    """What a result of 16 alike nodes records (clusterproof.site.fingerprint):
    the node set and the hash of its record (written to ``results``), the
    binary's and the MPI library's sha256."""
    rec = {'kernel': kernel, 'os': 'Debian GNU/Linux 12 (bookworm)', 'cpu_model': 'AMD EPYC',
           'microcode': '0x1000065', 'governor': 'performance', 'thp': 'always [madvise] never',
           'mem_gib': '512', 'slurm': 'slurm-wlm 22.05.8', 'stage_fs': 'lustre',
           'stage_options': 'rw,flock,lazystatfs', 'cpu_quota': 'max',
           'env.OMP_NUM_THREADS': '64'}
    hashes = fingerprint.store({f'n{i}': rec for i in range(1, 17)}, results)
    return {'cp_fingerprint': fingerprint.by_nodes(hashes), 'cp_binary_sha256': digit * 64,
            'cp_mpi_library': f'/usr/lib/x86_64-linux-gnu/libmpi.so.40 {digit * 64}'}


def generate(n_systems, n_figures, n_nights, seed=1, fingerprints=None):
    """(sessions, newest-night records, histories, references); with
    ``fingerprints`` (a results directory), every value carries the
    provenance of the node fingerprint, which changes (a kernel update) where
    a figure steps."""
    rng = random.Random(seed)
    per_case = max(1, n_figures // (FAMILIES * len(THREADS)))
    t0 = time.time() - n_nights * 86400
    times = [t0 + i * 86400 for i in range(n_nights)]
    uuids = [f'{i:08x}-0000-4000-8000-000000000000' for i in range(n_nights)]
    old = {'binary_version': '1.0'}
    new = {'binary_version': '1.1'}
    if fingerprints:
        old.update(_provenance(fingerprints, '6.1.0-25-amd64', 'a'))
        new.update(_provenance(fingerprints, '6.1.0-28-amd64', 'b'))
    sessions = [Session(u, t, t + 3600, {'time_start': time.strftime(
        '%Y%m%dT%H%M%S+0000', time.gmtime(t)), 'cmdline': 'reframe --mode nightly -r'})
        for u, t in zip(uuids, times)]
    recs, hists, refs = [], [], {}
    gauss = rng.gauss
    for s in range(n_systems):
        system = f'sys{s}'
        sysrefs = refs[system] = {}
        for fam in range(FAMILIES):
            check = f'Bench{fam}'
            for threads in THREADS:
                test = f'{check} %num_threads={threads}'
                for k in range(per_case):
                    figure = f'fig{k}_bw'
                    base = 100.0 * (1 + fam) * (1 + k) * threads ** 0.5
                    step = rng.random() < 0.01
                    at = n_nights - rng.randint(3, 10) if step else n_nights
                    drop = rng.choice((0.8, 0.85, 1.15)) if step else 1.0
                    points = [history.Point(times[i], base * (drop if i >= at else 1.0)
                                            * gauss(1, 0.02), uuids[i], 'generated',
                                            new if i >= at else old)
                              for i in range(n_nights)]
                    value = points[-1].value
                    if rng.random() < 0.005:
                        value = points[-1].value = base * 0.7
                    hists.append(history.History(system, 'default', test + ' +gnu', figure,
                                                 'MB/s', (), points))
                    sysrefs.setdefault(check, {'$index': ['$partition', 'num_threads']}) \
                        .setdefault(f'{system}:default', {}).setdefault(threads, {})[
                            figure] = [base, -0.1, None, 'MB/s']
                    recs.append(Record(uuids[-1], system, 'default', 'gnu', check, test,
                                       figure, value, 'MB/s', Reference(base, -0.1, None, 'MB/s'),
                                       Outcome('pass', perf_result='pass'),
                                       Times(times[-1], times[-1]), 'nightly', False, False,
                                       '1.1', {}))
    for sess in sessions[:-1]:      # the older nights: one test case without figures a system
        sess.recs = [Record(sess.uuid, f'sys{s}', 'default', 'gnu', 'Bench0', 'Bench0', '',
                            float('nan'), '', None, Outcome('pass'),
                            Times(sess.start, sess.start), 'nightly', False, False, '1.0', {})
                     for s in range(n_systems)]
    sessions[-1].recs = recs
    return sessions, recs, hists, refs


PROBE = """<script>window.addEventListener('load', function(){
  var out = {load: performance.now(),
             first: document.querySelectorAll('.js-plotly-plot').length};
  window.clusterproofDrawAll();          // as if a reader scrolled through it all
  out.all = performance.now();
  out.plots = document.querySelectorAll('.js-plotly-plot').length;
  var p = document.createElement('pre'); p.id = 'load-probe';
  p.textContent = JSON.stringify(out); document.body.appendChild(p); });</script>"""


def chromium_load(page, tmp):
    """(wall seconds of headless Chromium until the DOM is dumped, the page's
    own load time in seconds, plots drawn by then (those within a screen of
    the first), seconds until every other plot is drawn too, plots in all)."""
    exe = shutil.which('chromium') or '/usr/bin/chromium'
    probed = Path(tmp) / 'probed.html'
    probed.write_text(page.replace('</body>', PROBE + '</body>'))
    cmd = [exe, '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync',
           f'--user-data-dir={Path(tmp) / "profile"}', '--window-size=1400,900', '--dump-dom',
           probed.as_uri()]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - t0
    m = re.search(r'<pre id="load-probe">(.*?)</pre>', proc.stdout)
    if not m:
        sys.exit(f'chromium did not load the page:\n{proc.stderr[-2000:]}')
    probe = json.loads(m.group(1))
    return (wall, probe['load'] / 1000, probe['first'], probe['all'] / 1000, probe['plots'])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--systems', type=int, default=10)
    ap.add_argument('--figures', type=int, default=2000)
    ap.add_argument('--nights', type=int, default=365)
    ap.add_argument('--keep', metavar='FILE', help='also write the page to FILE')
    ap.add_argument('--no-fingerprint', action='store_true',
                    help='values without the node fingerprint and binary identity (as '
                         'results recorded before them)')
    args = ap.parse_args()
    prints = None
    if not args.no_fingerprint:
        prints = tempfile.mkdtemp(prefix='bench-report-results-')
        os.environ['CLUSTERPROOF_RESULTS'] = prints     # where attribution reads the records
    t0 = time.perf_counter()
    sessions, recs, hists, refs = generate(args.systems, args.figures, args.nights,
                                           fingerprints=prints)
    gen = time.perf_counter() - t0
    n_values = sum(len(h.points) for h in hists)

    t0, c0 = time.perf_counter(), time.process_time()
    rows = compare.against_references(recs, refs)
    found = recent.recent_changes(hists)
    dt_compare, cpu_compare = time.perf_counter() - t0, time.process_time() - c0
    regressions = sum(r.verdict == 'REGRESSION' for r in rows)

    t0, c0 = time.perf_counter(), time.process_time()
    view = overview(frame_of(sessions))
    page = report.build(morning.prepare(sessions[-1], recs, hists, view, refs), title='bench')
    dt_report, cpu_report = time.perf_counter() - t0, time.process_time() - c0
    if args.keep:
        Path(args.keep).write_text(page)
    with tempfile.TemporaryDirectory(prefix='bench-report-') as tmp:
        wall, load, first, drawn_all, plots = chromium_load(page, tmp)
    if prints:
        shutil.rmtree(prints)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20
    print(f'history: {args.systems} systems x {len(hists) // args.systems} figures x '
          f'{args.nights} nights = {n_values / 1e6:.2f} M values (generated in {gen:.1f} s; '
          f'peak memory {rss:.2f} GiB; node fingerprints '
          f'{"left out" if args.no_fingerprint else "recorded"}; load average '
          f'{os.getloadavg()[0]:.1f})')
    print(f'compare (night judged + change points): {dt_compare:6.2f} s  '
          f'({len(rows)} rows, {regressions} regressions, {len(found)} changes; '
          f'{cpu_compare:.2f} s CPU; target <= {TARGETS["compare"]:g} s)')
    print(f'report  (build the page):               {dt_report:6.2f} s  '
          f'({len(page) / 1e6:.1f} MB, {page.count(PLOT_DIV)} plots; '
          f'{cpu_report:.2f} s CPU; target <= {TARGETS["report"]:g} s)')
    print(f'load in Chromium (1400x900):            {load:6.2f} s  (page load event, '
          f'{first} plots near the first screen drawn; process wall {wall:.2f} s; '
          f'target <= {TARGETS["load"]:g} s)')
    print(f'  every plot drawn (scrolled through):  {drawn_all:6.2f} s  ({plots} plots)')
    ratios = {'report': dt_report, 'compare': dt_compare, 'load': load}
    print('ratios to target: ' + ', '.join(f'{k} {v / TARGETS[k]:.2f}' for k, v in ratios.items()))
    return 0 if all(v <= TARGETS[k] for k, v in ratios.items()) else 1


if __name__ == '__main__':
    sys.exit(main())
