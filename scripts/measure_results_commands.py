#!/usr/bin/env python3
"""Time the results commands through the path a user has: ReFrame results
databases (written through ReFrame's own storage code, its current schema)
of SYSTEMS systems x FIGURES figures x SESSIONS sessions, made from a real
recorded session (tests/data/results/) by copying its test cases with new
names and values. Times, as whole processes, with their peak memory: the
first ingest into the figure store (one store per system, a fleet) and the
derivation of the change detector's findings that follows it (its own row),
the nightly ingest of one new session and its findings, then `report`,
`compare`, `changes` and `bless` reading the fleet. Targets: each command <= 5 s after ingest at 10
systems, peak memory <= 2 GiB; prints ratios to them.

Generated databases are cached under build/measure-results-commands/ (they take long to
write: the generation rate is printed); the newest night is added to a copy.

--engines compares the engines of the store on the store of one system, as
whole processes: polars on the Parquet files, DuckDB on the same files, and
DuckDB on its own database file.

usage: .venv/bin/python scripts/measure_results_commands.py [--systems 1] [--sessions 365]
           [--figures 2000] [--engines] [--no-changes] [--memory-limit 4]
"""

import argparse
import copy
import json
import os
import random
import resource
import shutil
import sqlite3
import subprocess
import sys
import time
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RECORDED = REPO / 'tests' / 'data' / 'results' / 'results.db'
CACHE = REPO / 'build' / 'measure-results-commands'
CP = str(REPO / '.venv' / 'bin' / 'clusterproof')
PY = str(REPO / '.venv' / 'bin' / 'python')
TARGET_S = 5.0
TARGET_RSS = 2 * 1024 ** 3
#: address-space limit of each timed process (set by --memory-limit)
LIMIT = [0]
DAY = 86400
START0 = 1735689600.0           # 2025-01-01T00:00Z: the first night


# -- generating databases through ReFrame's storage code (a child process) -------

def _template():
    src = sqlite3.connect(f'file:{RECORDED}?mode=ro', uri=True)
    blob, = src.execute('SELECT json_blob FROM sessions ORDER BY session_start_unix '
                        'LIMIT 1').fetchone()
    src.close()
    return json.loads(blob)


def _report(template, system, night, n_figures, rng):
    uuid = f'{night:08x}-{zlib.crc32(system.encode()) % 0xffff:04x}-4000-8000-000000000000'
    start = START0 + night * DAY
    tc0 = template['runs'][0]['testcases'][0]
    cases = []
    for c in range(n_figures // 2):
        tc = copy.copy(tc0)
        threads = 2 ** (c % 10)
        name = f'Bench{c // 10} %num_threads={threads}'
        tc.update(name=name, display_name=name, num_threads=threads, system=system,
                  uuid=f'{uuid}:0:{c}', session_uuid=uuid, cp_mode='nightly',
                  job_completion_time_unix=start + c)
        base = 1000 * (1 + c)
        tc['perfvalues'] = {
            f'{system}:default:copy_bw': [base * rng.gauss(1, 0.03), 0, None, None, 'MB/s',
                                          'pass'],
            f'{system}:default:copy_time': [1 / base * rng.gauss(1, 0.03), 0, None, None, 's',
                                            'pass']}
        cases.append(tc)
    rep = copy.copy(template)
    rep['session_info'] = dict(template['session_info'], uuid=uuid, time_start_unix=start,
                               time_end_unix=start + 600)
    rep['runs'] = [{'testcases': cases}]
    return rep


def store_sessions(results, system, nights, n_figures):
    """In a child process: ReFrame's storage backend stores the reports of
    ``nights`` of ``system`` in ``results``/results.db."""
    os.environ['CLUSTERPROOF_RESULTS'] = str(results)
    import reframe.core.config as config
    import reframe.core.runtime as runtime
    site = config.load_config(str(REPO / 'site_config' / 'settings.py'))
    site.select_subconfig('generic')
    runtime.init_runtime(site)
    from reframe.frontend.reporting.storage import StorageBackend
    backend = StorageBackend.default()
    template = _template()
    for night in nights:
        backend.store(_report(template, system, night, n_figures, random.Random(night)), '')


def _count(db):
    if not db.exists():
        return 0
    conn = sqlite3.connect(f'file:{db}?mode=ro', uri=True)
    try:
        return conn.execute('SELECT count(*) FROM sessions').fetchone()[0]
    finally:
        conn.close()


def generate(cache, systems, n_sessions, n_figures):
    """Cached databases with ``n_sessions - 1`` nights of each system."""
    for s in range(systems):
        results = cache / f'sys{s:02d}'
        results.mkdir(parents=True, exist_ok=True)
        have = _count(results / 'results.db')
        if have >= n_sessions - 1:
            continue
        t0 = time.perf_counter()
        subprocess.run([PY, __file__, '--store-sessions', str(results), f'sys{s:02d}',
                        str(have), str(n_sessions - 1), str(n_figures)], check=True)
        dt = time.perf_counter() - t0
        n = n_sessions - 1 - have
        print(f'generated sys{s:02d}: {n} sessions through ReFrame\'s storage in {dt:.0f} s '
              f'({n / dt:.2f} sessions/s, {(results / "results.db").stat().st_size / 1e9:.2f} GB)',
              flush=True)


# -- whole processes, timed ------------------------------------------------------------

def measure_child(argv, limit):
    """In a wrapper process: run ``argv`` (its address space limited to
    ``limit`` bytes, so that a command that would take the machine's memory
    fails instead), print its wall time, CPU time and peak memory (this
    wrapper's only child) as JSON on stderr's last line."""
    def cap():
        if limit:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    t0 = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          preexec_fn=cap)
    dt = time.perf_counter() - t0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    sys.stderr.write('\n' + json.dumps({'wall': dt, 'cpu': ru.ru_utime + ru.ru_stime,
                                        'rss': ru.ru_maxrss * 1024, 'rc': proc.returncode}))
    return 0


def timed(label, argv, env, target=TARGET_S, quiet=False, strict=False):
    proc = subprocess.run([PY, __file__, '--measure', str(LIMIT[0]), '--'] + argv, env=env,
                          capture_output=True, text=True, cwd=REPO)
    m = json.loads(proc.stderr.strip().rsplit('\n', 1)[-1])
    if m['rc'] not in ((0,) if strict else (0, 1)):
        if 'MemoryError' in proc.stderr or 'memory allocation' in proc.stderr:
            print(f'{label:34s} FAILED: over the --memory-limit of {LIMIT[0] / 2 ** 30:g} GiB '
                  f'after {m["wall"]:.1f} s wall, {m["cpu"]:.1f} s CPU', flush=True)
            m.update(wall=float('inf'), rss=LIMIT[0])
            m['out'] = ''
            return m
        sys.exit(f'{label}: {" ".join(argv)}: exit {m["rc"]}\n{proc.stderr[-3000:]}')
    if not quiet:
        ratio = f'  ratio to {target:g} s: {m["wall"] / target:5.2f}' if target else ''
        print(f'{label:34s} {m["wall"]:7.2f} s wall {m["cpu"]:7.2f} s CPU '
              f'{m["rss"] / 2 ** 20:7.0f} MiB peak (ratio to 2 GiB: '
              f'{m["rss"] / TARGET_RSS:4.2f}){ratio}', flush=True)
        TABLE.append((label, f'{m["wall"]:.2f}', f'{m["cpu"]:.2f}',
                      f'{m["rss"] / 2 ** 20:.0f}',
                      f'{m["wall"] / target:.2f}' if target else '-',
                      f'{m["rss"] / TARGET_RSS:.2f}'))
    m['out'] = proc.stdout
    return m


#: the rows of the closing table: one per timed process
TABLE = []


def print_table():
    from tabulate import tabulate
    print()
    print(tabulate(TABLE, headers=('whole process', 'wall s', 'CPU s', 'peak MiB',
                                   f'wall / {TARGET_S:g} s', 'peak / 2 GiB'),
                   tablefmt='github', disable_numparse=True))


def time_commands(args, cache, work):
    fleet = work / 'fleet'
    night0 = work / 'sys00'
    night0.mkdir(parents=True)
    shutil.copy(cache / 'sys00' / 'results.db', night0 / 'results.db')
    env = dict(os.environ)
    print(f'history: {args.systems} system(s) x {args.figures} figures x {args.sessions} '
          f'sessions, ReFrame results databases of schema 1.0 written by ReFrame '
          f'{_reframe_version()}; {os.cpu_count()} CPUs, load average '
          f'{os.getloadavg()[0]:.1f} at the start')
    total = 0.0
    for s in range(args.systems):
        results = night0 if s == 0 else cache / f'sys{s:02d}'
        m = timed(f'first ingest sys{s:02d}', [CP, 'store', 'ingest', '--no-findings',
                                                '--store', str(fleet / f'sys{s:02d}')],
                  dict(env, CLUSTERPROOF_RESULTS=str(results)), target=None)
        total += m['wall']
    print(f'first ingest, all systems:         {total:7.2f} s wall')
    if args.systems > 1:
        TABLE.append(('first ingest, all systems', f'{total:.2f}', '', '', '-', ''))
    # the change detector's findings, derived by `store ingest` once the
    # sessions are in (nothing new to ingest here: the findings alone)
    derived = 0.0
    for s in range(args.systems):
        results = night0 if s == 0 else cache / f'sys{s:02d}'
        m = timed(f'findings derived, first, sys{s:02d}',
                  [CP, 'store', 'ingest', '--store', str(fleet / f'sys{s:02d}')],
                  dict(env, CLUSTERPROOF_RESULTS=str(results)), target=None)
        derived += m['wall']
    print(f'findings derived, all systems:     {derived:7.2f} s wall')
    if args.systems > 1:
        TABLE.append(('findings derived, first, all systems', f'{derived:.2f}', '', '', '-',
                      ''))
    subprocess.run([PY, __file__, '--store-sessions', str(night0), 'sys00',
                    str(args.sessions - 1), str(args.sessions), str(args.figures)], check=True)
    timed('nightly ingest (1 new session)', [CP, 'store', 'ingest', '--no-findings',
                                             '--store', str(fleet / 'sys00')],
          dict(env, CLUSTERPROOF_RESULTS=str(night0)))
    timed('findings derived, nightly, sys00', [CP, 'store', 'ingest', '--store',
                                               str(fleet / 'sys00')],
          dict(env, CLUSTERPROOF_RESULTS=str(night0)), target=None)
    size = sum(f.stat().st_size for f in fleet.rglob('*.parquet'))
    dbs = sum((cache / f'sys{s:02d}' / 'results.db').stat().st_size
              for s in range(args.systems))
    print(f'store: {size / 1e6:.0f} MB of Parquet for {dbs / 1e9:.2f} GB of databases')
    fenv = dict(env, CLUSTERPROOF_STORE=str(fleet), CLUSTERPROOF_RESULTS=str(work),
                CLUSTERPROOF_REFERENCES=str(work / 'refs'))
    results = {}
    results['report'] = timed(f'report --last {args.sessions}',
                              [CP, 'report', '--last', str(args.sessions), '-o',
                               str(work / 'report.html')], fenv)
    results['compare'] = timed(f'compare --history {args.sessions}',
                               [CP, 'compare', '--history', str(args.sessions)], fenv)
    results['bless'] = timed('bless --last 30 --system sys00',
                             [CP, 'bless', '--last', '30', '--system', 'sys00'], fenv)
    if not args.no_changes:     # the kept findings of every figure, read
        results['changes'] = timed('changes', [CP, 'changes'], fenv)
    worst = max(m['wall'] for m in results.values())
    rss = max(m['rss'] for m in results.values())
    print_table()
    print(f'worst command: {worst:.2f} s (ratio to {TARGET_S:g} s: {worst / TARGET_S:.2f}); '
          f'peak memory {rss / 2 ** 20:.0f} MiB (ratio to 2 GiB: {rss / TARGET_RSS:.2f})')
    return 0 if worst <= TARGET_S and rss <= TARGET_RSS else 1


def _reframe_version():
    import reframe
    return reframe.VERSION


# -- engines -------------------------------------------------------------------------

#: the three questions the commands ask of the store: the newest session's
#: figures (compare), every figure's history (report, changes), the median
#: of the last 30 sessions per figure (bless)
_POLARS = '''
import sys, polars as pl
files = sys.argv[1:]
lf = pl.scan_parquet(files)
key = ["system", "partition", "environ", "test", "figure"]
newest = lf.select(pl.col("start").max()).collect().item()
a = lf.filter(pl.col("start") == newest).collect()
b = lf.sort("start").group_by(key).agg(pl.col("value"), pl.col("start")).collect()
last30 = lf.select("start").unique().sort("start").tail(30).collect()["start"].min()
c = lf.filter(pl.col("start") >= last30).group_by(key).agg(pl.col("value").median()).collect()
print(a.height, b.height, c.height)
'''
_DUCKDB = '''
import sys, duckdb
src = sys.argv[1]
con = duckdb.connect(src if src.endswith(".duckdb") else ":memory:",
                     read_only=src.endswith(".duckdb"))
t = "figures" if src.endswith(".duckdb") else "read_parquet(%r)" % (sys.argv[1:],)
key = "system, partition, environ, test, figure"
a = con.sql(f"SELECT * FROM {t} WHERE start = (SELECT max(start) FROM {t})").fetchnumpy()
b = con.sql(f"SELECT {key}, list(value ORDER BY start), list(start ORDER BY start) "
            f"FROM {t} GROUP BY ALL").fetchnumpy()
c = con.sql(f"SELECT {key}, median(value) FROM {t} WHERE start >= "
            f"(SELECT min(start) FROM (SELECT DISTINCT start FROM {t} "
            f"ORDER BY start DESC LIMIT 30)) GROUP BY ALL").fetchnumpy()
print(len(a["value"]), len(b["figure"]), len(c["figure"]))
'''
_DUCKDB_LOAD = '''
import sys, duckdb
con = duckdb.connect(sys.argv[1])
con.sql("CREATE TABLE figures AS SELECT * FROM read_parquet(%r)" % (sys.argv[2:],))
con.close()
'''


def time_engines(store):
    files = sorted(str(p) for p in Path(store).glob('*.parquet'))
    rows = subprocess.run([PY, '-c', 'import sys, polars as pl; print(pl.scan_parquet('
                           'sys.argv[1:]).select(pl.len()).collect().item())'] + files,
                          capture_output=True, text=True, check=True).stdout.strip()
    print(f'engines on the store of one system: {rows} rows in {len(files)} Parquet '
          f'file(s), {sum(Path(f).stat().st_size for f in files) / 1e6:.0f} MB')
    duck = Path(store).parent / 'figures.duckdb'
    duck.unlink(missing_ok=True)
    timed('duckdb: load into its own file', [PY, '-c', _DUCKDB_LOAD, str(duck)] + files,
          os.environ, target=None, strict=True)
    print(f'  ({duck.stat().st_size / 1e6:.0f} MB)')
    out = {}
    for label, argv in (('polars + Parquet', [PY, '-c', _POLARS] + files),
                        ('duckdb + Parquet', [PY, '-c', _DUCKDB] + files),
                        ('duckdb + its own file', [PY, '-c', _DUCKDB, str(duck)])):
        out[label] = timed(f'{label}: 3 queries', argv, os.environ, strict=True)
        print(f'  answers (rows): {out[label]["out"].strip()}')
    return out


def main():
    if len(sys.argv) > 1 and sys.argv[1] == '--measure':
        return measure_child(sys.argv[4:], int(sys.argv[2]))
    if len(sys.argv) > 1 and sys.argv[1] == '--store-sessions':
        results, system, first, end, figures = sys.argv[2:7]
        store_sessions(Path(results), system, range(int(first), int(end)), int(figures))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--systems', type=int, default=1)
    ap.add_argument('--sessions', type=int, default=365)
    ap.add_argument('--figures', type=int, default=2000)
    ap.add_argument('--engines', action='store_true',
                    help='also compare the engines of the store (polars, DuckDB)')
    ap.add_argument('--no-changes', action='store_true',
                    help='do not time `changes`')
    ap.add_argument('--cache', type=Path, default=CACHE,
                    help='where generated databases are kept (default %(default)s)')
    ap.add_argument('--memory-limit', type=float, default=4, metavar='GIB',
                    help='address-space limit of each timed process, so that a command '
                         'that outgrows it fails instead of taking the machine\'s memory '
                         '(default %(default)g; 0: none)')
    args = ap.parse_args()
    LIMIT[0] = int(args.memory_limit * 2 ** 30)
    cache = args.cache / f'{args.figures}fig-{args.sessions}sess'
    generate(cache, args.systems, args.sessions, args.figures)
    work = args.cache / 'work'
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        status = time_commands(args, cache, work)
        if args.engines:
            time_engines(work / 'fleet' / 'sys00')
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return status


if __name__ == '__main__':
    sys.exit(main())
