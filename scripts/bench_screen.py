#!/usr/bin/env python3
"""Time the analysis of `clusterproof screen` on generated results for 5,000
nodes: a ReFrame run report of a screening run (STREAM, single-node HPL and
the inventory, one test case per node and check) generated from the real
recorded report in tests/data/screen/ by copying its test cases with new
nodes and values, and one inventory job output per node. Some nodes are made
slow and some get less memory; the script checks that exactly those are
named. Prints the whole-process time of

    clusterproof screen --system benchsys --from-report REPORT --format json

and its ratio to the 5 s target.

usage: .venv/bin/python scripts/bench_screen.py [--nodes 5000] [--target 5]
"""

import argparse
import copy
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RECORDED = REPO / 'tests' / 'data' / 'screen'
TAG = 'CLUSTERPROOF-INVENTORY'


def generate(directory, n_nodes, slow, small):
    report = json.loads((RECORDED / 'report-emu-stream-inventory.json').read_text())
    cases = [tc for run in report['runs'] for tc in run['testcases']]
    stream = next(tc for tc in cases if tc['name'].startswith('Stream '))
    inventory = next(tc for tc in cases if tc['name'] == 'SystemInventory')
    node_report = json.loads((RECORDED / inventory['outputdir'] / 'rfm_job.out')
                             .read_text().split(' ', 1)[1])
    rng = random.Random(1)
    out = []
    for i in range(1, n_nodes + 1):
        node = f'c{i:05d}'
        factor = 0.7 if node in slow else 1.0
        tc = copy.deepcopy(stream)
        tc.update(display_name=f'{stream["name"]} %.part=benchsys:batch %.nid={node}',
                  job_nodelist=[node], system='benchsys', partition='batch')
        tc['perfvalues'] = {f'benchsys:batch:{k}': [v * factor * rng.gauss(1, 0.02), 0, None,
                                                     None, 'MB/s', 'pass']
                            for k, v in (('copy', 180e3), ('scale', 180e3), ('add', 200e3),
                                         ('triad', 200e3))}
        hpl = copy.deepcopy(tc)
        hpl.update(name='Hpl %num_nodes=1', display_name=f'Hpl %num_nodes=1 %.nid={node}')
        hpl['perfvalues'] = {'benchsys:batch:gflops': [3000 * factor * rng.gauss(1, 0.02), 0,
                                                       None, None, 'Gflop/s', 'pass']}
        inv = copy.deepcopy(inventory)
        outdir = directory / 'output' / node
        outdir.mkdir(parents=True)
        rep = copy.deepcopy(node_report)
        rep['node'] = node
        rep['hardware']['slurm_memory_mib'] = 245760 if node in small else 491520
        rep['hardware']['memory_gib'] = 235.0 if node in small else 470.0
        (outdir / 'rfm_job.out').write_text(f'{TAG} {json.dumps(rep)}\n')
        inv.update(display_name=f'SystemInventory %.nid={node}', job_nodelist=[node],
                   system='benchsys', partition='batch', outputdir=str(outdir))
        out += [tc, hpl, inv]
    report['runs'] = [{'run_index': 0, 'testcases': out}]
    path = directory / 'report.json'
    path.write_text(json.dumps(report))
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--nodes', type=int, default=5000)
    ap.add_argument('--target', type=float, default=5.0, help='seconds (default %(default)s)')
    args = ap.parse_args()
    rng = random.Random(7)
    names = [f'c{i:05d}' for i in range(1, args.nodes + 1)]
    slow = set(rng.sample(names, 5))
    small = set(rng.sample(sorted(set(names) - slow), 3))
    with tempfile.TemporaryDirectory(prefix='bench-screen-') as tmp:
        report = generate(Path(tmp), args.nodes, slow, small)
        cmd = [str(Path(sys.executable).parent / 'clusterproof'), 'screen', '--system',
               'benchsys', '--from-report', str(report), '--format', 'json']
        start = time.monotonic()
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
        elapsed = time.monotonic() - start
    if proc.returncode != 1:
        sys.exit(f'clusterproof screen exited {proc.returncode}, want 1: {proc.stderr[-2000:]}')
    data = json.loads(proc.stdout)
    named = set(data['outliers'])
    if named != slow | small:
        sys.exit(f'named {sorted(named)}, want {sorted(slow | small)}')
    print(f'clusterproof screen --from-report, {args.nodes} nodes x 3 checks '
          f'({len(data["nodes"])} rows, {len(named)} outliers named as generated): '
          f'{elapsed:.2f} s whole process; target {args.target:g} s; '
          f'ratio {elapsed / args.target:.2f}')


if __name__ == '__main__':
    main()
