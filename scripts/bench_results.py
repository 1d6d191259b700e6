#!/usr/bin/env python3
"""Time `clusterproof report` and `clusterproof compare` on a year of nightly
history: 365 sessions x 100 figures in a ReFrame results database (schema
1.0), generated from a real recorded session (tests/data/results/) by copying
its test cases with new parameters and values. Targets: report < 10 s,
compare < 2 s. Prints both.

usage: .venv/bin/python scripts/bench_results.py [--sessions 365] [--figures 100]
"""

import argparse
import copy
import json
import os
import random
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RECORDED = REPO / 'tests' / 'data' / 'results' / 'results.db'


def generate(db, n_sessions, n_figures):
    src = sqlite3.connect(f'file:{RECORDED}?mode=ro', uri=True)
    blob, = src.execute('SELECT json_blob FROM sessions ORDER BY session_start_unix LIMIT 1').fetchone()
    report = json.loads(blob)
    tc0 = report['runs'][0]['testcases'][0]
    conn = sqlite3.connect(db)
    conn.execute('CREATE TABLE sessions(uuid TEXT PRIMARY KEY, session_start_unix REAL, '
                 'session_end_unix REAL, json_blob TEXT, report_file TEXT)')
    conn.execute('CREATE TABLE testcases(name TEXT, system TEXT, partition TEXT, environ TEXT, '
                 'job_completion_time_unix REAL, session_uuid TEXT, uuid TEXT, '
                 'FOREIGN KEY(session_uuid) REFERENCES sessions(uuid) ON DELETE CASCADE)')
    conn.execute('CREATE TABLE metadata(schema_version TEXT)')
    conn.execute("INSERT INTO metadata VALUES('1.0')")
    rng = random.Random(1)
    start0 = time.time() - n_sessions * 86400
    n_cases = n_figures // 2
    for s in range(n_sessions):
        uuid = f'{s:08x}-0000-4000-8000-000000000000'
        start = start0 + s * 86400
        cases = []
        for c in range(n_cases):
            tc = copy.deepcopy(tc0)
            threads = 2 ** (c % 10)
            name = f'Bench{c // 10} %num_threads={threads}'
            tc.update(name=name, display_name=name, num_threads=threads,
                      uuid=f'{uuid}:0:{c}', session_uuid=uuid, cp_mode='nightly',
                      job_completion_time_unix=start + c)
            base = 1000 * (1 + c)
            tc['perfvalues'] = {
                'local:default:copy_bw': [base * rng.gauss(1, 0.03), 0, None, None, 'MB/s', 'pass'],
                'local:default:copy_time': [1 / base * rng.gauss(1, 0.03), 0, None, None, 's', 'pass']}
            cases.append(tc)
        rep = copy.deepcopy(report)
        rep['session_info'].update(uuid=uuid, time_start_unix=start, time_end_unix=start + 600)
        rep['runs'] = [{'testcases': cases}]
        conn.execute('INSERT INTO sessions VALUES(?,?,?,?,?)',
                     (uuid, start, start + 600, json.dumps(rep), ''))
        conn.executemany('INSERT INTO testcases VALUES(?,?,?,?,?,?,?)',
                         [(tc['name'], 'local', 'default', 'gnu', tc['job_completion_time_unix'],
                           uuid, tc['uuid']) for tc in cases])
    conn.commit()
    return n_cases * 2


def timed(argv, env):
    """Wall time and CPU time (user + system) of running ``argv``: on a
    shared machine the CPU time shows what the command itself costs."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=REPO)
    dt = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc.cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    if proc.returncode not in (0, 1):
        sys.exit(f'{argv}: exit {proc.returncode}\n{proc.stderr}')
    return dt, proc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--sessions', type=int, default=365)
    ap.add_argument('--figures', type=int, default=100)
    args = ap.parse_args()
    cp = str(REPO / '.venv' / 'bin' / 'clusterproof')
    with tempfile.TemporaryDirectory(prefix='bench-results-') as tmp:
        results, refs = Path(tmp) / 'results', Path(tmp) / 'refs'
        results.mkdir()
        t0 = time.perf_counter()
        figs = generate(results / 'results.db', args.sessions, args.figures)
        gen = time.perf_counter() - t0
        env = dict(os.environ, CLUSTERPROOF_RESULTS=str(results), CLUSTERPROOF_REFERENCES=str(refs))
        dt_bless, pb = timed([cp, 'bless', '--last', '30', '--write', '--reason', 'bench'], env)
        dt_report, proc = timed([cp, 'report', '--last', str(args.sessions), '-o',
                                 str(Path(tmp) / 'report.html')], env)
        size = (Path(tmp) / 'report.html').stat().st_size
        dt_compare, pc = timed([cp, 'compare', '--history', str(args.sessions)], env)
    print(f'history: {args.sessions} sessions x {figs} figures (generated in {gen:.1f} s)')
    print(f'bless   (30 sessions):             {dt_bless:6.2f} s wall, {pb.cpu:6.2f} s CPU')
    print(f'report  ({args.sessions} sessions):          {dt_report:6.2f} s wall, {proc.cpu:6.2f} s CPU'
          f'  (target < 10 s; {size / 1e6:.1f} MB)')
    print(f'compare (+ drift over {args.sessions}): {dt_compare:6.2f} s wall, {pc.cpu:6.2f} s CPU'
          f'  (target < 2 s)')
    print(f'ratios to target: report {dt_report / 10:.2f}, compare {dt_compare / 2:.2f}')
    return 0 if dt_report < 10 and dt_compare < 2 else 1


if __name__ == '__main__':
    sys.exit(main())
