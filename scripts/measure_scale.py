#!/usr/bin/env python3
"""Each phase of clusterproof at N nodes, as whole processes: wall time and
peak memory, with ratios to the targets of a 1,000-node site.

For each size N (default 64,256,1024), on local-cluster instance K:

  up        ``clusterproof cluster up --like FILE`` of a heterogeneous cluster
            of N nodes scaled up from a recorded real one (``scripts/scale-like``,
            with a partition ``emu`` of every node beside the recorded ones, so
            the ``emu`` system's checks run on all of them, and its generated
            tree topology: a leaf switch per 32 nodes)
  status    ``clusterproof cluster status``
  init      ``clusterproof init --dry-run`` (probes one node per group; writes nothing)
  screen    ``clusterproof screen --system emu --partition srun --mode smoke
            --checks inventory`` (the cheapest check: the control plane, not
            the benchmarks, is what is measured here),
            from submission to verdict; the jobs it submitted counted from
            ``sacct`` (every job of the cluster that started after it began),
            and the time inside them (the union of their start..end intervals):
            clusterproof's own overhead is the wall time outside that union
  judge     the same screening judged again from its nodes' run reports
            (``screen --from-report``) and its page written (``--page``): the
            cost of reading and judging the results and of the page. That
            page (page-from-reports.html) has the nodes of the reports only;
            the screening's own page (page.html, written by the screen phase)
            also has the nodes it named missing, with Slurm's reason
  contract  ``clusterproof acceptance --contract`` of a contract with one
            item whose job spans K nodes (``--contract-nodes``, 256: HPCC on
            every node, ``-S Hpcc.num_nodes=K``, smoke sizes); skipped at a
            size with fewer nodes Slurm can run a job on
  fingerprint  ``scripts/measure_fingerprint.py --srun N --runs 1``: the node
            fingerprint of every node of one job over every node Slurm can
            run it on (N less the description's down and drained nodes) (the probe's own step
            against an empty one: time per node), and its bytes per night

Peak memory: the summed resident set (VmRSS, shared pages counted in each
process) of the command's process tree, sampled every 0.1 s by walking
/proc's parent links from the command's pid; daemons that detach (slurmd
started by ``up``) leave the tree and are not counted; jobs run by slurmd
are not in the tree either.

Prints one table per size, then how each cost grows from 256 to 1,024
(the ratio, and the exponent b of cost ~ N^b), and what 10,000 nodes would
take, extrapolated with that exponent (labelled so: nothing here ran
10,000 nodes). Brings the cluster down at the end of each size, also on
failure. Needs root (the local cluster).

    .venv/bin/python scripts/measure_scale.py [--sizes 64,256,1024] [--instance 2]
        [--phases up,status,init,screen,judge,contract] [--screen-timeout S]
        [--contract-nodes 256] [--keep DIR]
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from clusterproof import cluster as lc
from clusterproof.cluster.like import read_like

REPO = Path(__file__).resolve().parent.parent

CP = str(REPO / '.venv' / 'bin' / 'clusterproof')
SCALE_LIKE = REPO / 'scripts' / 'scale-like'
GIB = 1024 ** 3
#: the targets (issue 29): own overhead of a 1,024-node screening, jobs per
#: node (1.1 with the suspects run again to confirm them, issue 38), the
#: screen process's memory, init, the page
TARGETS = {'overhead_s': 60.0, 'jobs_per_node': 1.1, 'screen_bytes': GIB, 'init_s': 60.0,
           'page_s': 5.0}
PHASES = ('up', 'status', 'init', 'screen', 'judge', 'contract', 'fingerprint')


# ------------------------------------------------------------- measuring

def _children():
    """``{pid: [child pids]}`` of every process now."""
    kids = {}
    for entry in os.scandir('/proc'):
        if not entry.name.isdigit():
            continue
        try:
            with open(f'/proc/{entry.name}/stat') as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(')') + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(entry.name))
    return kids


def _rss(pid):
    try:
        with open(f'/proc/{pid}/status') as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def tree_rss(root):
    kids, total, todo = _children(), 0, [root]
    while todo:
        pid = todo.pop()
        total += _rss(pid)
        todo += kids.get(pid, [])
    return total


def measure(cmd, env, timeout=None):
    """Run ``cmd``; ``{'wall_s', 'peak_bytes', 'rc', 'out', 'err', 'start'}``."""
    start = time.time()
    t0 = time.monotonic()
    out_f, err_f = tempfile.TemporaryFile('w+'), tempfile.TemporaryFile('w+')
    proc = subprocess.Popen(cmd, env=env, stdout=out_f, stderr=err_f, text=True, cwd=REPO)
    peak, done = [0], threading.Event()

    def sample():
        while not done.wait(0.1):
            peak[0] = max(peak[0], tree_rss(proc.pid))
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = 'timeout'
        proc.wait()
    wall = time.monotonic() - t0
    done.set()
    sampler.join()
    out_f.seek(0)
    err_f.seek(0)
    return {'wall_s': wall, 'peak_bytes': peak[0], 'rc': rc, 'out': out_f.read(),
            'err': err_f.read(), 'start': start}


# ------------------------------------------------------------- the phases

def describe(n, directory):
    path = Path(directory) / f'scale-{n}.txt'
    subprocess.run([sys.executable, str(SCALE_LIKE), '--nodes', str(n), '--emu-partition',
                    str(path)], check=True, capture_output=True, text=True)
    return path


def screen_command(workdir):
    """Today's screening of every node of the emu system's srun partition,
    as one process (the one place the screen command line is written)."""
    return [CP, 'screen', '--system', 'emu', '--partition', 'srun', '--mode', 'smoke',
            '--checks', 'inventory', '--format', 'json', '--workdir', str(workdir),
            '--page', str(workdir / 'page.html')]


def jobs_since(env, start):
    """The jobs of the cluster that started after ``start`` (epoch s):
    ``[(jobid, start epoch, end epoch)]``, from sacct."""
    since = time.strftime('%Y-%m-%dT%H:%M:%S', time.localtime(start - 1))
    proc = subprocess.run(['sacct', '-X', '-n', '-P', '-a', '-S', since, '-o', 'JobID,Start,End'],
                          env=env, capture_output=True, text=True, timeout=120)
    jobs = []
    for line in proc.stdout.splitlines():
        jobid, st, en = line.split('|')
        try:
            t_st = time.mktime(time.strptime(st, '%Y-%m-%dT%H:%M:%S'))
            t_en = time.mktime(time.strptime(en, '%Y-%m-%dT%H:%M:%S'))
        except ValueError:
            continue            # never started (Unknown / None)
        if t_st >= int(start):  # sacct -S also lists jobs that ended in that second (init's probes)
            jobs.append((jobid, t_st, t_en))
    return jobs


def inside_jobs_s(jobs, lo, hi):
    """Seconds of [lo, hi] covered by at least one job."""
    spans = sorted((max(s, lo), min(e, hi)) for _, s, e in jobs if e > lo and s < hi)
    total, cur_s, cur_e = 0.0, None, None
    for s, e in spans:
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


CONTRACT = """\
name: scale-{nodes}
title: Local cluster (emulated) - HPCC over {nodes} nodes
system: emu
partition: srun
buyer: clusterproof scale bench
vendor: this machine (emulated nodes)
mode: smoke
allow: [smoke, emulated]
repetitions: 1
statistic: median
items:
  - id: hpcc-{nodes}-nodes
    check: Hpcc
    set: {{Hpcc.num_nodes: {nodes}}}
    figure: HPL_Tflops
    committed: 0.000000001
    unit: Tflop/s
    kind: committed
    tolerance: -50%
    validity:
      min_runtime_s: 0
"""


def run_size(n, args, directory, rows):
    env = dict(os.environ)
    rd = ['--instance', str(args.instance)]
    desc = describe(n, directory)
    row = {'nodes': n}
    rows.append(row)

    def phase(name, cmd, penv, timeout=None):
        if name not in args.phases:
            return None
        m = measure(cmd, penv, timeout)
        row[name] = m
        ok = 'ok' if m['rc'] == 0 else f'exit {m["rc"]}'
        print(f'  {n:>5} {name:<9} {m["wall_s"]:8.1f} s  {m["peak_bytes"] / 2**20:8.0f} MiB  {ok}',
              flush=True)
        if m['rc'] not in (0, 1):
            print('    ' + (m['err'] or m['out']).strip()[-1500:].replace('\n', '\n    '),
                  flush=True)
        return m

    try:
        up = phase('up', [CP, 'cluster', 'up', *rd, '--like', str(desc), '--like-partitions',
                          f'{desc}.partitions', '--like-topology', f'{desc}.topology'], env)
        if up is not None and up['rc'] != 0:
            return
        envs = subprocess.run([CP, 'cluster', 'env', *rd], capture_output=True, text=True,
                              check=True)
        cenv = dict(env)
        for line in envs.stdout.splitlines():
            key, _, value = line.removeprefix('export ').partition('=')
            cenv[key] = value.strip("'\"")
        cenv['CLUSTERPROOF_EMU_NODES'] = str(n)
        phase('status', [CP, 'cluster', 'status', *rd], cenv)
        phase('init', [CP, 'init', '--name', f'benchscale{n}', '--dry-run'], cenv)
        work = Path(directory) / f'screen-{n}'
        sc = phase('screen', screen_command(work), cenv, args.screen_timeout)
        if sc is not None:
            jobs = jobs_since(cenv, sc['start'])
            inside = inside_jobs_s(jobs, sc['start'], sc['start'] + sc['wall_s'])
            row['screen_jobs'] = len(jobs)
            row['screen_overhead_s'] = sc['wall_s'] - inside
            print(f'        screen: {len(jobs)} jobs, {inside:.1f} s inside jobs, '
                  f'{sc["wall_s"] - inside:.1f} s outside', flush=True)
            reports = sorted(str(p) for p in (work / 'nodes').glob('*.json'))
            if reports:
                phase('judge', [CP, 'screen', '--system', 'emu', '--partition', 'srun', '--format',
                                'json', '--page', str(work / 'page-from-reports.html')]
                      + [a for r in reports for a in ('--from-report', r)], cenv)
        # the contract's job can only have nodes Slurm can run it on: the
        # description's down and drained nodes are not
        runnable = sum(1 for node in read_like(desc).nodes if not node.state)
        if 'contract' in args.phases and runnable < args.contract_nodes:
            print(f'  {n:>5} contract  skipped: {runnable} nodes Slurm can run a job on, fewer '
                  f'than the item\'s {args.contract_nodes}', flush=True)
        else:
            contract = Path(directory) / f'scale-{args.contract_nodes}.yaml'
            contract.write_text(CONTRACT.format(nodes=args.contract_nodes))
            phase('contract', [CP, 'acceptance', '--contract', str(contract), '--repetitions', '1',
                               '-o', str(Path(directory) / f'contract-{n}.json')], cenv,
                  args.screen_timeout)
        fp = phase('fingerprint', [sys.executable, str(REPO / 'scripts' / 'measure_fingerprint.py'),
                                   '--srun', str(runnable), '--runs', '1'], cenv,
                                   args.screen_timeout)
        if fp is not None:
            print('    ' + fp['out'].strip().replace('\n', '\n    '), flush=True)
    finally:
        down = measure([CP, 'cluster', 'down', '--force', *rd], env)
        print(f'  {n:>5} down      {down["wall_s"]:8.1f} s  (exit {down["rc"]})', flush=True)


# ------------------------------------------------------------- the table

def fit(a_n, a, b_n, b):
    """Exponent b of cost ~ N^b through two points."""
    if not a or not b or a <= 0 or b <= 0:
        return None
    return math.log(b / a) / math.log(b_n / a_n)


def table(rows):
    print('\nwall time (s) / peak memory of the process tree (MiB), emulated nodes on this machine')
    head = f'{"phase":<10}' + ''.join(f'{r["nodes"]:>20}' for r in rows)
    print(head)
    for name in PHASES:
        cells = []
        for r in rows:
            m = r.get(name)
            cells.append(f'{m["wall_s"]:8.1f} / {m["peak_bytes"] / 2**20:6.0f}'
                         + ('' if m['rc'] == 0 else '!') if m else '-')
        print(f'{name:<10}' + ''.join(f'{c:>20}' for c in cells))
    print('(! the command did not exit 0)')
    print('\nagainst the targets (ratio = measured / target; <= 1 meets it)')
    for r in rows:
        n, parts = r['nodes'], []
        if 'screen_overhead_s' in r:
            parts.append(f'screen overhead {r["screen_overhead_s"]:.1f} s '
                         f'({r["screen_overhead_s"] / TARGETS["overhead_s"]:.2f})')
            per = r['screen_jobs'] / n
            parts.append(f'jobs {r["screen_jobs"]} ({per:.2f} per node: '
                         f'{per / TARGETS["jobs_per_node"]:.2f})')
        if r.get('screen'):
            parts.append(f'screen memory {r["screen"]["peak_bytes"] / 2**20:.0f} MiB '
                         f'({r["screen"]["peak_bytes"] / TARGETS["screen_bytes"]:.2f})')
        if r.get('init'):
            parts.append(f'init {r["init"]["wall_s"]:.1f} s '
                         f'({r["init"]["wall_s"] / TARGETS["init_s"]:.2f})')
        if r.get('judge'):
            parts.append(f'judge/page {r["judge"]["wall_s"]:.1f} s '
                         f'({r["judge"]["wall_s"] / TARGETS["page_s"]:.2f})')
        print(f'  {n:>5} nodes: ' + '; '.join(parts))
    by_n = {r['nodes']: r for r in rows}
    sizes = sorted(by_n)
    if len(sizes) >= 2:
        a_n, b_n = sizes[-2], sizes[-1]
        print(f'\ngrowth {a_n} -> {b_n} nodes (ratio; exponent b of cost ~ N^b) and 10,000 nodes '
              f'EXTRAPOLATED with that exponent (nothing ran 10,000 nodes)')
        for name in PHASES:
            a, b = by_n[a_n].get(name), by_n[b_n].get(name)
            if not a or not b:
                continue
            for what, key, unit, scale in (('wall', 'wall_s', 's', 1),
                                           ('memory', 'peak_bytes', 'MiB', 2**20)):
                e = fit(a_n, a[key], b_n, b[key])
                if e is None:
                    continue
                at10k = b[key] * (10000 / b_n) ** e / scale
                print(f'  {name:<9} {what:<7} x{b[key] / a[key]:6.2f}  b={e:5.2f}  '
                      f'10,000 nodes ~ {at10k:10.1f} {unit} (extrapolated)')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--sizes', default='64,256,1024')
    ap.add_argument('--instance', type=int, default=2)
    ap.add_argument('--phases', default=','.join(PHASES))
    ap.add_argument('--screen-timeout', type=float, default=1800,
                    help='seconds before the screen and contract phases are killed')
    ap.add_argument('--contract-nodes', type=int, default=256, metavar='K',
                    help="nodes of the contract's item (default 256); skipped at a size with "
                         'fewer nodes Slurm can run a job on')
    ap.add_argument('--json', metavar='FILE', help='also write the measurements as JSON')
    ap.add_argument('--keep', metavar='DIR',
                    help='write the descriptions, screenings (with their page.html) and contracts '
                         'into DIR and keep them (default: a temporary directory, removed)')
    args = ap.parse_args()
    args.phases = args.phases.split(',')
    sizes = [int(s) for s in args.sizes.split(',')]
    if max(sizes) > lc.MAX_NODES:
        raise SystemExit(f'--sizes: at most {lc.MAX_NODES} nodes')
    rows = []
    with tempfile.TemporaryDirectory(prefix='bench-scale-') as scratch:
        directory = args.keep or scratch
        if args.keep:
            Path(directory).mkdir(parents=True, exist_ok=True)
            print(f'kept in {directory}: the descriptions, the screenings (their node reports '
                  'and page.html), the contracts', flush=True)
        for n in sizes:
            print(f'{n} nodes:', flush=True)
            run_size(n, args, directory, rows)
    table(rows)
    if args.json:
        Path(args.json).write_text(json.dumps(
            [{k: ({kk: vv for kk, vv in v.items() if kk not in ('out', 'err')}
                  if isinstance(v, dict) else v)
              for k, v in r.items()} for r in rows], indent=1))


if __name__ == '__main__':
    main()
