#!/usr/bin/env python3
"""Side-by-side measurements for the pmem area.

1. The same fio job (the emulated libpmem job, randwrite, on tmpfs with
   PMEM_IS_PMEM_FORCE=1) run directly and through the ``PmemFioEmulated``
   check, alternating, ROUNDS times each; prints the median of each figure
   both ways and their ratio (check / direct; target: within 5%, i.e.
   0.95..1.05). The job is sized to run for seconds (--fio-filesize-mib,
   --fio-loops): fio reports its run time in whole milliseconds, so the
   smoke job (some 40 ms) would measure rounding and process start-up,
   not the I/O.
2. The mmap sweep over anonymous memory and over a file on the scratch
   directory (same size, a, b), alternating; prints the median throughput
   and the memory/file ratio of wall times (the published table's
   Mem.Ms/Device.Ms).

Usage: .venv/bin/python scripts/measure_pmem_checks.py [--rounds N] [--size-mib M]
           [--fio-filesize-mib F] [--fio-loops L] [--fio-numjobs J]
Measures on this machine only; figures on tmpfs are emulation figures.
"""

import argparse
import glob
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

from clusterproof.methods import fiojob
from clusterproof.paths import SETTINGS_FILE
from clusterproof.reframe_io import runner
from clusterproof.parsers import fio as fioparser
from clusterproof.parsers import mmap_sweep as sweepparser

REPO = Path(__file__).resolve().parent.parent

FIGS = ('iops', 'bw', 'lat_mean', 'lat_p50', 'lat_p99')
SECTION = 'randwrite_8files'


def fio_direct(tmpfs_dir, sizes):
    job = fiojob.worst_case_job('libpmem', tmpfs_dir, mode='smoke', **sizes)
    os.makedirs(tmpfs_dir, exist_ok=True)
    try:
        for path, size in job.layout_files(SECTION):
            with open(path, 'wb') as f:
                f.write(b'\0' * size)
        jobfile = Path(tmpfs_dir) / 'job.fio'
        jobfile.write_text(job.render())
        out = subprocess.run(['fio', f'--section={SECTION}', '--output-format=json',
                              str(jobfile)], capture_output=True, text=True,
                             env=dict(os.environ, PMEM_IS_PMEM_FORCE='1'), timeout=300)
        return fioparser.section_figures(out.stdout, SECTION, 'direct fio',
                                         exit_status=out.returncode)
    finally:
        for path in glob.glob(f'{tmpfs_dir}/*'):
            os.unlink(path)
        os.rmdir(tmpfs_dir)


def fio_through_check(results, sizes):
    env = dict(runner.reframe_env(config=SETTINGS_FILE),
               CLUSTERPROOF_RESULTS=str(results), CLUSTERPROOF_MODE='smoke')
    res = runner.invoke(['-c', REPO / 'reframe_checks' / 'pmem.py', '-n',
                         f'PmemFioEmulated%section={SECTION}', '-r', '--system', 'local',
                         *[a for k, v in sizes.items() for a in ('-S', f'{k}={v}')]],
                        env=env, timeout=300)
    if res.returncode != 0:
        raise SystemExit(f'reframe failed:\n{res.stdout[-2000:]}')
    out = sorted(glob.glob(f'{results}/output/local/default/gnu/PmemFioEmulated_*/rfm_job.out'))
    text = Path(out[-1]).read_text()
    return fioparser.section_figures(text, SECTION, out[-1])


def sweep(binary, args):
    out = subprocess.run([binary] + args, capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise SystemExit(f'mmap_sweep {" ".join(args)}: {out.stderr}')
    return sweepparser.parse(out.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--size-mib', type=int, default=256, help='mmap sweep size (MiB)')
    ap.add_argument('--fio-filesize-mib', type=int, default=256,
                    help='fio file size per job (MiB; default %(default)s)')
    ap.add_argument('--fio-loops', type=int, default=8,
                    help='fio loops over each file (default %(default)s)')
    ap.add_argument('--fio-numjobs', type=int, default=2,
                    help='fio jobs (default %(default)s: the smoke job count)')
    opts = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix='bench-pmem-'))
    sizes = {'filesize': opts.fio_filesize_mib * 2**20, 'loops': opts.fio_loops,
             'numjobs': opts.fio_numjobs}

    direct, check = [], []
    for r in range(opts.rounds):
        direct.append(fio_direct(f'/dev/shm/clusterproof-bench-{os.getpid()}', sizes))
        check.append(fio_through_check(work / f'results-{r}', sizes))
    print(f'fio {SECTION}, emulated libpmem on tmpfs, {opts.fio_numjobs} job(s) x '
          f'{opts.fio_filesize_mib} MiB x {opts.fio_loops} loop(s), median of {opts.rounds} '
          'alternating runs')
    print(f'{"figure":10} {"direct":>12} {"check":>12} {"check/direct":>13}')
    for fig in FIGS:
        d = statistics.median(x[fig] for x in direct)
        c = statistics.median(x[fig] for x in check)
        print(f'{fig:10} {d:12.2f} {c:12.2f} {c / d:13.3f}')

    binary = str(work / 'mmap_sweep')
    subprocess.run(['gcc', '-O3', '-std=c11', '-o', binary,
                    str(REPO / 'reframe_checks' / 'src' / 'mmap_sweep' / 'mmap_sweep.c'),
                    '-pthread'], check=True)
    scratch = Path(os.environ.get('CLUSTERPROOF_SCRATCH', work))
    datafile = scratch / f'bench-mmap-{os.getpid()}.dat'
    size = f'{opts.size_mib}M'
    sweep(binary, ['--file', str(datafile), '--create', '--size', size, '-a', '4K', '-b', '4K'])
    print(f'\nmmap sweep, {size}, file on {scratch} (page cache dropped before each file run), '
          f'median of {opts.rounds}')
    print(f'{"a":>8} {"b":>8} {"mode":5} {"mem MiB/s":>10} {"file MiB/s":>11} '
          f'{"mem/file wall":>14}')
    try:
        for a, b, mode in (('4K', '4K', 'read'), ('4M', '4M', 'rw')):
            mem, fil = [], []
            for _ in range(opts.rounds):
                mem.append(sweep(binary, ['--memory', '--size', size, '-a', a, '-b', b,
                                          '--mode', mode]))
                fil.append(sweep(binary, ['--file', str(datafile), '--size', size, '-a', a,
                                          '-b', b, '--mode', mode]))
            mt = statistics.median(x['throughput_mib_s'] for x in mem)
            ft = statistics.median(x['throughput_mib_s'] for x in fil)
            mw = statistics.median(x['wall_s'] for x in mem)
            fw = statistics.median(x['wall_s'] for x in fil)
            print(f'{a:>8} {b:>8} {mode:5} {mt:10.1f} {ft:11.1f} {mw / fw:14.3f}')
    finally:
        datafile.unlink(missing_ok=True)
    print(f'\n(results of the check runs under {work})')


if __name__ == '__main__':
    main()
