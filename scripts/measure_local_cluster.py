#!/usr/bin/env python3
"""Measure the local Slurm cluster and ReFrame's overhead on it, side by side.

  - ``clusterproof cluster up`` for 4 nodes (packages installed): cold (new
    run directory: MariaDB's data directory and the accounting tables are
    created; twice) and warm (run directory kept from an earlier ``up``;
    median of 3), and ``down``;
  - a bare Slurm job on the cluster (``srun -N4 hostname``; ``sbatch`` of the
    same, polled until it leaves the queue);
  - ReFrame's time per test for the trivial check tests/checks/node_hostnames.py
    on ``local`` and on ``emu`` (partition ``srun``): ReFrame runs it once and
    N times (``--repeat N``); per test = (t_N - t_1) / (N - 1), which leaves
    out ReFrame's start-up. Serial execution, so the figure is the latency of
    one test, not throughput.

With ``--sizes 64,256,1024`` it measures instead the cluster at those node
counts, side by side: the wall time of the whole ``clusterproof cluster up``
and ``down`` processes (warm: run directory of an earlier ``up`` of the same
size), of one job on every node (``srun -N<n> hostname``), the peak of the
summed resident memory of the cluster's processes during ``up`` and the job
(sampled every 0.5 s; shared pages counted in every process), and the memory
in use on the machine (``free``: MemTotal - MemAvailable) before ``up``, with
the cluster up, and after ``down``.

Needs root and network namespaces. Uses instance K (default 0) and a
temporary run directory for the cold start; brings its cluster down at the
end. Target: cluster up in under 10 s.

    .venv/bin/python scripts/measure_local_cluster.py [--instance K] [--repeat N]
    .venv/bin/python scripts/measure_local_cluster.py --sizes 64,256,1024 [--instance K]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from clusterproof import cluster as lc
from clusterproof.cluster.network import pids_by_netns
from clusterproof.paths import SETTINGS_FILE
from clusterproof.reframe_io import runner

REPO = Path(__file__).resolve().parent.parent

CLUSTERPROOF = REPO / '.venv' / 'bin' / 'clusterproof'
CHECK = REPO / 'tests' / 'checks' / 'node_hostnames.py'
TARGET_UP_S = 10.0


def timed(cmd, env=None, check=True, run=None):
    t0 = time.monotonic()
    proc = (run or (lambda c: subprocess.run(c, env=env, capture_output=True, text=True)))(cmd)
    dt = time.monotonic() - t0
    if check and proc.returncode != 0:
        sys.exit(f'measure_local_cluster: {" ".join(map(str, cmd))} failed '
                 f'(exit {proc.returncode}):\n'
                 f'{proc.stdout[-2000:]}{proc.stderr[-2000:]}')
    return dt


def bare_sbatch(env, work):
    """Submit a 4-node job and poll squeue every 0.05 s until it has left
    the queue (``sbatch --wait`` polls with long back-off, so it says more
    about its own polling than about the cluster)."""
    t0 = time.monotonic()
    jobid = subprocess.run(['sbatch', '--parsable', '-N4', f'--output={work}/sbatch.out',
                            '--wrap', 'srun hostname'], env=env, capture_output=True, text=True,
                           check=True).stdout.strip().split(';')[0]
    while subprocess.run(['squeue', '-h', '-j', jobid], env=env, capture_output=True,
                         text=True).stdout.strip():
        time.sleep(0.05)
    return time.monotonic() - t0


def reframe_time(system, repeat, env, results):
    args = ['-c', str(CHECK), '-r', '--system', system, '--exec-policy=serial']
    if repeat > 1:
        args.append(f'--repeat={repeat}')
    renv = dict(runner.reframe_env(env, config=SETTINGS_FILE), CLUSTERPROOF_RESULTS=str(results))
    return timed(runner.command(args), run=lambda _: runner.invoke(args, env=renv))


def per_test(system, n, env, results):
    t1 = reframe_time(system, 1, env, results / f'{system}-1')
    tn = reframe_time(system, n, env, results / f'{system}-{n}')
    return t1, tn, (tn - t1) / (n - 1)


def mem_used_mib():
    """MemTotal - MemAvailable, MiB (what ``free`` shows as used, near enough)."""
    info = {line.split(':')[0]: int(line.split()[1])
            for line in Path('/proc/meminfo').read_text().splitlines()}
    return (info['MemTotal'] - info['MemAvailable']) // 1024


def cluster_rss_mib(run_dir, inst):
    """Summed resident memory (MiB) of the processes of the cluster at
    ``run_dir``: those naming it on their command line or in their
    environment, and every process in its node namespaces."""
    inside = {p for pids in pids_by_netns([ns for ns in lc.netns_list()
                                           if inst.owns_netns(ns)]).values()
              for p in pids}
    marker = str(run_dir).encode()
    total = 0
    for entry in Path('/proc').iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if int(entry.name) not in inside:
                if marker not in ((entry / 'cmdline').read_bytes()
                                  + (entry / 'environ').read_bytes()):
                    continue
            total += int((entry / 'statm').read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total * os.sysconf('SC_PAGE_SIZE') // 2**20


class PeakRss:
    """The highest :func:`cluster_rss_mib` seen while the block runs."""

    def __init__(self, run_dir, inst):
        self.run_dir, self.inst, self.peak = run_dir, inst, 0
        self._stop = threading.Event()

    def _sample(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, cluster_rss_mib(self.run_dir, self.inst))
            self._stop.wait(0.5)

    def __enter__(self):
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def at_scale(k, sizes, work):
    """{nodes: {figure: value}} for each node count (see the module's description)."""
    inst = lc.Instance(int(k))
    rows = {}
    for nodes in sizes:
        run_dir = work / f'n{nodes}'
        rd = ['--instance', k, '--run-dir', str(run_dir)]
        env = dict(os.environ, SLURM_CONF=str(run_dir / 'etc' / 'slurm.conf'))
        row = rows[nodes] = {}
        # a first up and down makes the run directory (MariaDB's tables, hwloc's topology)
        timed([CLUSTERPROOF, 'cluster', 'up', *rd, '--nodes', str(nodes)])
        timed([CLUSTERPROOF, 'cluster', 'down', *rd])
        row['used before (MiB)'] = mem_used_mib()
        try:
            with PeakRss(run_dir, inst) as peak:
                row['up (s)'] = timed([CLUSTERPROOF, 'cluster', 'up', *rd, '--nodes', str(nodes)])
                row['used, up (MiB)'] = mem_used_mib()
                row['srun -N<n> hostname (s)'] = timed(['srun', f'-N{nodes}', 'hostname'], env=env)
            row['peak RSS sum (MiB)'] = peak.peak
        finally:
            row['down (s)'] = timed([CLUSTERPROOF, 'cluster', 'down', *rd], check=False)
        row['used after down (MiB)'] = mem_used_mib()
        print(f'measure_local_cluster: {nodes} nodes done '
              f'({", ".join(f"{key} {v:.1f}" for key, v in row.items())})',
              file=sys.stderr, flush=True)
    return rows


def print_side_by_side(k, rows):
    sizes = list(rows)
    print(f'local cluster at scale, instance {k} ({os.cpu_count()} real CPUs, '
          f'load {os.getloadavg()[0]:.1f}); '
          'whole-process wall times, warm run directory')
    print(f'  {"nodes":<28}' + ''.join(f'{n:>10}' for n in sizes))
    for key in rows[sizes[0]]:
        fmt = '{:>10.1f}' if key.endswith('(s)') else '{:>10.0f}'
        print(f'  {key:<28}' + ''.join(fmt.format(rows[n][key]) for n in sizes))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--instance', type=int, default=0, help='cluster instance to use (default 0)')
    ap.add_argument('--repeat', type=int, default=6, help='N for the per-test overhead (default 6)')
    ap.add_argument('--warm-runs', type=int, default=3,
                    help='warm `up` runs (median reported; default 3)')
    ap.add_argument('--sizes', metavar='N,N,...',
                    help='measure up, a job on every node and down at these node counts instead')
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit('measure_local_cluster: needs root (the local cluster does)')
    k = str(args.instance)
    if lc.Cluster(lc.load_spec(args.instance)).is_up():
        sys.exit(f'measure_local_cluster: instance {k} is up; bring it down first or use '
                 '--instance')
    if args.sizes:
        try:
            sizes = [int(n) for n in args.sizes.split(',')]
        except ValueError:
            sys.exit(f'measure_local_cluster: --sizes {args.sizes!r}: give node counts '
                     'separated by commas, e.g. 64,256,1024')
        work = Path(tempfile.mkdtemp(prefix='cp-bench-cluster-'))
        work.chmod(0o755)
        try:
            print_side_by_side(k, at_scale(k, sizes, work))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return 0
    work = Path(tempfile.mkdtemp(prefix='cp-bench-cluster-'))
    work.chmod(0o755)       # munged wants every directory above its socket searchable by all
    run_dir = work / 'cluster'
    rd = ['--instance', k, '--run-dir', str(run_dir)]
    figures = {}
    try:
        cold = []
        for i in range(2):
            cold_rd = ['--instance', k, '--run-dir', str(work / f'cold{i}')]
            cold.append(timed([CLUSTERPROOF, 'cluster', 'up', *cold_rd]))
            timed([CLUSTERPROOF, 'cluster', 'down', *cold_rd])
        for i, value in enumerate(cold, 1):
            figures[f'up, cold (new run directory) #{i}'] = value
        timed([CLUSTERPROOF, 'cluster', 'up', *rd])
        figures['down'] = timed([CLUSTERPROOF, 'cluster', 'down', *rd])
        warm = []
        for _ in range(args.warm_runs):
            warm.append(timed([CLUSTERPROOF, 'cluster', 'up', *rd]))
            timed([CLUSTERPROOF, 'cluster', 'down', *rd])
        figures[f'up, warm (median of {len(warm)})'] = statistics.median(warm)
        timed([CLUSTERPROOF, 'cluster', 'up', *rd])
        env = dict(os.environ, SLURM_CONF=str(run_dir / 'etc' / 'slurm.conf'),
                   CLUSTERPROOF_EMU_NODES='4', CLUSTERPROOF_EMU_CPUS='2')
        figures['srun -N4 hostname'] = timed(['srun', '-N4', 'hostname'], env=env)
        figures['sbatch -N4 (srun hostname), to end'] = bare_sbatch(env, work)
        n = args.repeat
        local = per_test('local', n, env, work / 'results')
        emu = per_test('emu:srun', n, env, work / 'results')
    finally:
        timed([CLUSTERPROOF, 'cluster', 'down', *rd], check=False)
        shutil.rmtree(work, ignore_errors=True)

    print(f'local cluster, 4 nodes x 2 CPUs, instance {k} ({os.cpu_count()} real CPUs, '
          f'load {os.getloadavg()[0]:.1f})')
    for name, value in figures.items():
        print(f'  {name:<36} {value:6.2f} s')
    print(f'ReFrame, trivial test tests/checks/node_hostnames.py, serial, N={n}:')
    for name, (t1, tn, each) in (('local', local), ('emu:srun', emu)):
        print(f'  {name:<9} 1 test {t1:6.2f} s   {n} tests {tn:6.2f} s   per test {each:5.2f} s')
    up_cold = max(v for key, v in figures.items() if key.startswith('up, cold'))
    up_warm = [v for key, v in figures.items() if key.startswith('up, warm')][0]
    print('ratios:')
    ratios = [
        ('ReFrame per test, emu / local', emu[2] / local[2], ''),
        ('ReFrame per test on emu / bare sbatch job',
         emu[2] / figures['sbatch -N4 (srun hostname), to end'], ''),
        (f'cluster up cold (slower run) / target {TARGET_UP_S:g} s', up_cold / TARGET_UP_S,
         'met' if up_cold < TARGET_UP_S else 'NOT met'),
        (f'cluster up warm / target {TARGET_UP_S:g} s', up_warm / TARGET_UP_S,
         'met' if up_warm < TARGET_UP_S else 'NOT met'),
    ]
    for name, value, verdict in ratios:
        print(f'  {name:<46} {value:6.2f}  {verdict}'.rstrip())
    return 0


if __name__ == '__main__':
    sys.exit(main())
