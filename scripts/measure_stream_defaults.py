#!/usr/bin/env python3
"""Do the STREAM check's defaults get close to the best this machine can do?

Builds STREAM once (the check's array size for this node: 4 x its last-level
cache, or --array-size), then runs it directly, round-robin over a grid of
thread counts x OpenMP bindings (every entry once per round, --rounds rounds,
so slow periods of a shared machine hit all entries alike), and prints each
entry's best Triad and the check's default (one thread per core, OMP_PLACES=cores,
OMP_PROC_BIND=spread) as a fraction of the best of the grid (target: >= 0.95;
exit status 1 below it), then the same for the better of the check's two
placements (cores, and one thread per L3 domain).

    .venv/bin/python scripts/measure_stream_defaults.py [--rounds 5] [--array-size N]
"""

import argparse
import itertools
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from clusterproof.site import binaries, topology
from clusterproof.methods import memory
from clusterproof.parsers import stream as stream_parser


SOURCE = binaries.STREAM_SOURCE
TARGET = 0.95

#: (OMP_PLACES, OMP_PROC_BIND); None = unset
BINDINGS = [('cores', 'spread'), ('cores', 'close'), ('threads', 'spread'),
            ('ll_caches', 'spread'), (None, None)]


def build(array_size, workdir):
    exe = Path(workdir) / 'stream'
    cmd = ['gcc', *memory.stream_cflags(array_size), str(SOURCE), '-o', str(exe)]
    subprocess.run(cmd, check=True)
    return exe


def run(exe, threads, places, bind):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    for key, val in (('OMP_PLACES', places), ('OMP_PROC_BIND', bind)):
        if val is None:
            env.pop(key, None)
        else:
            env[key] = val
    out = subprocess.run([str(exe)], env=env, capture_output=True, text=True, check=True).stdout
    parsed = stream_parser.parse(out, source=f'stream {threads} threads {places}/{bind}')
    if not parsed['validates']:
        raise SystemExit(f'STREAM did not validate with {threads} threads {places}/{bind}')
    return parsed['rates']['Triad']


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--rounds', type=int, default=5)
    ap.add_argument('--array-size', type=int, default=0)
    args = ap.parse_args()
    if not SOURCE.is_file():
        raise SystemExit(f'no STREAM source at {SOURCE}: run scripts/setup first')
    hw = topology.detect_hardware()
    cores = memory.stream_threads(hw, 'cores')
    cpus = hw.get('cpus', cores)
    array_size = args.array_size or memory.stream_array_size(hw['llc_mib'])
    threads = sorted({1, max(1, cores // 2), cores, cpus})
    grid = list(itertools.product(threads, BINDINGS))
    default = (cores, ('cores', 'spread'))
    l3 = (memory.stream_threads(hw, 'l3'), ('ll_caches', 'spread'))
    threads = sorted(set(threads) | {l3[0]})
    grid = list(itertools.product(threads, BINDINGS))
    print(f'STREAM Triad, array {array_size} elements ({hw["llc_mib"]} MiB LLC), '
          f'{cores} cores / {cpus} CPUs, {args.rounds} rounds over {len(grid)} grid entries')
    best = {g: 0.0 for g in grid}
    with tempfile.TemporaryDirectory() as tmp:
        exe = build(array_size, tmp)
        for _ in range(args.rounds):
            for g in grid:
                best[g] = max(best[g], run(exe, g[0], *g[1]))
    for (t, (places, bind)), triad in sorted(best.items(), key=lambda kv: -kv[1]):
        mark = {default: '  <- check default (placement=cores)',
                l3: '  <- check placement=l3'}.get((t, (places, bind)), '')
        print(f'  threads={t:<4} OMP_PLACES={places or "-":<10} OMP_PROC_BIND={bind or "-":<7} '
              f'Triad {triad:10.1f} MB/s{mark}')
    top = max(best.values())
    ratio = best[default] / top
    print(f'check default / best of grid = {best[default]:.1f} / {top:.1f} = {ratio:.3f} '
          f'(target >= {TARGET}): {"OK" if ratio >= TARGET else "BELOW TARGET"}')
    both = max(best[default], best[l3]) / top
    print(f'best of the check\'s two placements (cores, l3) / best of grid = {both:.3f}')
    return 0 if ratio >= TARGET else 1


if __name__ == '__main__':
    sys.exit(main())
