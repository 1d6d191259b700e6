#!/usr/bin/env python3
"""Storage area benchmarks, measured side by side in one run.

1. Placement: time to deal 10,000 client nodes x 1,024 threads per node
   (10,240,000 threads) round-robin and render the hostfile and the IOzone
   threadlist (target: under 1 s for the placement: expanding the Slurm node
   list and folding it for srun with ClusterShell's NodeSet, and dealing).
2. Overhead of the check: the IOzone sequential figures (write and read,
   "Children see throughput") reported by ``reframe_checks/iozone.py`` on
   the local Slurm cluster, against the same command lines run directly in
   a plain ``sbatch`` job on the same nodes, alternating, median of
   ``--repeat`` runs each (target: within 5 %).

    .venv/bin/python scripts/measure_storage_checks.py [--instance K] [--threads 4] [--total 256m]
                                              [--repeat 3]

The second part needs the local cluster (``clusterproof cluster up
--instance K``); without it only the first part runs.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from clusterproof.methods import placement
from clusterproof import hostlist
from clusterproof.paths import SETTINGS_FILE
from clusterproof.reframe_io import runner
from clusterproof.parsers import iozone as parser

REPO = Path(__file__).resolve().parent.parent


def time_placement(nodes=10_000, per_node=1024):
    names = [f'c{i:05d}' for i in range(1, nodes + 1)]
    expr = hostlist.compress(names)
    t0 = time.perf_counter()
    expanded = hostlist.expand(expr)
    t1 = time.perf_counter()
    pl = placement.place(expanded, nodes * per_node)
    order = pl.order()
    t2 = time.perf_counter()
    hostfile = pl.hostfile()
    t3 = time.perf_counter()
    threadlist = pl.threadlist('/scratch/clusterproof/t', '/usr/bin/iozone')
    t4 = time.perf_counter()
    srun = pl.srun_args(cores_per_node=40)
    t5 = time.perf_counter()
    assert len(order) == nodes * per_node and hostfile.count('\n') == len(order)
    assert threadlist.count('\n') == len(order) and '--overcommit' in srun
    print(f'placement: {nodes} client nodes x {per_node} threads = {len(order)} threads')
    print(f'  expand hostlist {expr!r:.40}: {t1 - t0:.3f} s')
    print(f'  place (round-robin order + counts): {t2 - t1:.3f} s   (target < 1 s: '
          f'{"met" if t2 - t1 < 1 else "MISSED"})')
    print(f'  hostfile ({len(hostfile) / 1e6:.0f} MB): {t3 - t2:.3f} s, '
          f'threadlist ({len(threadlist) / 1e6:.0f} MB): {t4 - t3:.3f} s, '
          f'srun options with the folded node list: {t5 - t4:.3f} s')
    total = (t2 - t0) + (t5 - t4)
    print(f'  placement with ClusterShell NodeSet (expand + place + srun node list): '
          f'{total:.3f} s   (target <= 1 s: {"met" if total <= 1 else "MISSED"})')
    return t2 - t1


def cluster_env(instance):
    out = subprocess.run([str(REPO / '.venv' / 'bin' / 'clusterproof'), 'cluster', 'env',
                          '--instance', str(instance)], capture_output=True, text=True)
    if out.returncode != 0:
        return None
    env = {}
    for line in out.stdout.splitlines():
        m = re.match(r'export (\w+)=(.*)$', line)
        if m:
            env[m.group(1)] = m.group(2).strip("'\"")
    if not env.get('SLURM_CONF'):
        return None
    probe = subprocess.run(['sinfo', '-h', '-o', '%T'], env=dict(os.environ, **env),
                           capture_output=True, text=True)
    return env if probe.returncode == 0 and 'idle' in probe.stdout else None


def figures(text, source):
    parsed = parser.parse(text, source)
    return (parser.to_gbps(parser.find_test(parsed, 'initial writers')['children']),
            parser.to_gbps(parser.find_test(parsed, 'readers')['children']))


def run_check(env, work, threads, total):
    results = work / f'check-{time.monotonic_ns()}'
    args = ['-c', 'reframe_checks/iozone.py',
            '--system', 'emu:srun', '-r', '-n', f'IOzoneSequential%threads={threads}',
            '-S', f'total={total}', '--keep-stage-files']
    e = dict(runner.reframe_env(config=SETTINGS_FILE), **env, CLUSTERPROOF_RESULTS=str(results),
             CLUSTERPROOF_MODE='smoke')
    out = runner.invoke(args, env=e)
    if out.returncode != 0:
        raise SystemExit(f'the check failed:\n{out.stdout[-3000:]}')
    stage = next((results / 'stage').rglob('rfm_job.sh')).parent
    return figures((stage / 'rfm_job.out').read_text(), str(stage)), stage, results


def run_direct(env, work, stage, results):
    """The check's own job script lines, run in a plain sbatch job on the
    same client nodes, with a fresh test directory."""
    script = (stage / 'rfm_job.sh').read_text()
    nodes = sorted({line.split()[0] for line in (stage / 'threadlist').read_text().splitlines()})
    workdir = re.search(r'--workdir (\S+)', script).group(1)
    lines = [l for l in script.splitlines() if l and not l.startswith('#')]
    direct_dir = work / f'direct-{time.monotonic_ns()}'
    direct_dir.mkdir()
    new_dir = results / 'scratch' / f'direct-{direct_dir.name}'
    body = '\n'.join(l.replace(workdir, str(new_dir)) for l in lines)
    job = direct_dir / 'job.sh'
    job.write_text(f'#!/bin/bash\nmkdir -p {new_dir}\n'
                   f'printf \'{{"created_by": "clusterproof", "path": "{new_dir}"}}\' '
                   f'> {new_dir}/.clusterproof-created\n'
                   f'cp {stage}/iozone-rsh .\n{body}\n')
    e = dict(os.environ, **env)
    out = subprocess.run(['sbatch', '--wait', '--partition=emu', '--exclusive',
                          f'--nodes={len(nodes)}', '--ntasks-per-node=1',
                          f'--nodelist={hostlist.compress(nodes)}', '-o', 'out.txt', str(job)],
                         cwd=direct_dir, env=e, capture_output=True, text=True)
    text = (direct_dir / 'out.txt').read_text() if (direct_dir / 'out.txt').exists() else ''
    if out.returncode != 0:
        raise SystemExit(f'the direct run failed: {out.stderr}\n{text[-2000:]}')
    return figures(text, str(direct_dir / 'out.txt'))


def measure_overhead(env, threads, total, repeat):
    with tempfile.TemporaryDirectory(prefix='bench-storage-', dir=REPO / 'results'
                                     if (REPO / 'results').is_dir() else None) as tmp:
        work = Path(tmp)
        check, direct = [], []
        for i in range(repeat):
            fig, stage, results = run_check(env, work, threads, total)
            check.append(fig)
            direct.append(run_direct(env, work, stage, results))
            print(f'  round {i + 1}: check write {fig[0]:.3f} read {fig[1]:.3f} GB/s; '
                  f'direct write {direct[-1][0]:.3f} read {direct[-1][1]:.3f} GB/s')
    for k, name in enumerate(('write', 'read')):
        c = statistics.median(f[k] for f in check)
        d = statistics.median(f[k] for f in direct)
        ratio = c / d
        print(f'  {name}: check {c:.3f} GB/s vs direct {d:.3f} GB/s: ratio {ratio:.3f} '
              f'({"within" if abs(ratio - 1) <= 0.05 else "OUTSIDE"} 5 %)')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--instance', type=int, default=2)
    ap.add_argument('--threads', type=int, default=4)
    ap.add_argument('--total', default='256m')
    ap.add_argument('--repeat', type=int, default=3)
    args = ap.parse_args()
    time_placement()
    env = cluster_env(args.instance)
    if env is None:
        print(f'overhead: skipped, the local cluster instance {args.instance} is not up '
              f'(clusterproof cluster up --instance {args.instance})')
        return 0
    print(f'overhead: IOzoneSequential %threads={args.threads}, total {args.total}, '
          f'O_DIRECT (smoke), emu:srun, {args.repeat} alternating rounds')
    measure_overhead(env, args.threads, args.total, args.repeat)
    return 0


if __name__ == '__main__':
    sys.exit(main())
