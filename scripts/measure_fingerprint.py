#!/usr/bin/env python3
"""The node fingerprint's cost (clusterproof/site/fingerprint.py): its time
per node inside the job, and what it adds to a year of nightly history.

- **time**: the probe as the job runs it, ``sh cp_fingerprint.sh`` as a whole
  process, ``--runs`` times on this machine (wall and CPU, median), for
  ``--binary`` (its sha256 and that of the MPI library it loads are part of
  the work). With ``--srun N`` (``SLURM_CONF`` exported: ``eval "$(clusterproof
  cluster env)"``), it also runs inside one allocation of N nodes (``salloc``)
  the Slurm form of the probe, which starts its own step on every node, and an
  empty step (``srun true``) for comparison: what the job pays under Slurm.
- **storage**: one real ReFrame session (``DevZeroCopy`` on the system
  ``local``, 16 MiB copied) in a results directory of its own; the bytes the
  three variables (``cp_fingerprint``, ``cp_binary_sha256``,
  ``cp_mpi_library``) take in the results database, the run report and the
  perflog, per test case, and the size of the node record written once per
  distinct fingerprint. Projected to ``--figures`` figures x ``--nights``
  nights, each figure counted as a test case of its own (an upper bound: a
  test case of several figures carries the variables once), plus
  ``--records`` distinct records a year.

usage: .venv/bin/python scripts/measure_fingerprint.py [--runs 20] [--binary PATH]
           [--srun N] [--figures 2000] [--nights 365] [--records 100]
"""

import argparse
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from clusterproof.site import fingerprint
from clusterproof.hostlist import compress
from clusterproof.paths import SETTINGS_FILE
from clusterproof.reframe_io import runner
from clusterproof.site.slurm_view import _node_key

REPO = Path(__file__).resolve().parent.parent

FIELDS = ('cp_fingerprint', 'cp_binary_sha256', 'cp_mpi_library')


def _timed(cmd, runs, env=None):
    """Median wall and CPU seconds (of the children) of ``cmd`` run ``runs`` times."""
    walls, cpus = [], []
    for _ in range(runs):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        walls.append(time.perf_counter() - t0)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
        if proc.returncode != 0:
            sys.exit(f'{" ".join(cmd)} failed ({proc.returncode}): {proc.stderr[-500:]}')
    return statistics.median(walls), statistics.median(cpus), proc.stdout


def probe_time(binary, runs, tmp):
    script = Path(tmp) / fingerprint.SCRIPT
    script.write_text(fingerprint.script('local', binary, tmp))
    wall, cpu, out = _timed(['sh', str(script)], runs)
    nodes = fingerprint.parse(out)
    rec = next(iter(nodes.values()))
    lib = rec.get('mpi_library', '')
    size = os.path.getsize(binary) + (os.path.getsize(lib) if lib else 0)
    print(f'probe, whole process (sh {fingerprint.SCRIPT}, {runs} runs; {binary}'
          f'{" and " + lib if lib else ""}: {size / 1e6:.1f} MB hashed):')
    print(f'  wall {wall * 1e3:.1f} ms median, CPU {cpu * 1e3:.1f} ms median per node '
          f'(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)')
    return fingerprint.binary_identity(nodes)[1]


def probe_under_slurm(binary, nodes, runs, tmp):
    """Re-run this script inside ``salloc -N nodes`` (its ``--in-allocation``)."""
    if not os.environ.get('SLURM_CONF'):
        sys.exit('--srun needs SLURM_CONF: eval "$(.venv/bin/clusterproof cluster env)"')
    cmd = ['salloc', '-N', str(nodes), '--ntasks-per-node=1', sys.executable, __file__,
           '--in-allocation', '--runs', str(runs), '--binary', binary, '--tmp', tmp]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        sys.exit(f'salloc failed ({proc.returncode}): {proc.stderr[-1000:]}')
    print(proc.stdout, end='')


def in_allocation(binary, runs, tmp):
    n = int(os.environ['SLURM_NNODES'])
    script = Path(tmp) / fingerprint.SCRIPT
    script.write_text(fingerprint.script('slurm', binary, tmp))
    wall, _, out = _timed(['sh', str(script)], runs)
    empty, _, _ = _timed(['srun', '-N', str(n), '-n', str(n), '--ntasks-per-node=1', 'true'],
                         runs)
    got = fingerprint.parse(out)
    if len(got) != n:
        sys.exit(f'the probe reported {len(got)} node(s) of {n}: '
                 f'{compress(sorted(got, key=_node_key))}')
    print(f'probe under Slurm, inside one allocation of {n} nodes ({runs} runs; '
          f'{compress(sorted(got, key=_node_key))}):')
    print(f'  the job line (its own step on every node): {wall * 1e3:.0f} ms median wall; '
          f'an empty step (srun true): {empty * 1e3:.0f} ms; the probe adds '
          f'{(wall - empty) * 1e3:.0f} ms')


def storage(figures, nights, records, mpi_library, tmp):
    results = Path(tmp) / 'results'
    env = dict(runner.reframe_env(config=SETTINGS_FILE),
               CLUSTERPROOF_RESULTS=str(results), CLUSTERPROOF_MODE='nightly',
               CLUSTERPROOF_REFERENCES=str(Path(tmp) / 'refs'),
               PATH=f'{REPO / ".venv" / "bin"}:{os.environ.get("PATH", "")}')
    proc = runner.invoke(['-c', REPO / 'tests' / 'checks' / 'results', '-r', '--system', 'local',
                          '-n', 'DevZeroCopy%num_threads=1', '-S', 'copy_mib=16',
                          '-S', 'repeats=1'], env=env, timeout=600)
    if proc.returncode != 0:
        sys.exit(f'reframe failed ({proc.returncode}): {proc.stdout[-2000:]}')
    with sqlite3.connect(results / 'results.db') as db:
        cases = []
        for (text,) in db.execute('SELECT json_blob FROM sessions'):
            cases += [tc for run in json.loads(text)['runs'] for tc in run['testcases']]
    if not cases:
        sys.exit(f'no test case in {results / "results.db"}')
    case = cases[0]
    vals = {k: str(case.get(k, '')) for k in FIELDS}
    if not vals['cp_fingerprint']:
        sys.exit(f'the session recorded no fingerprint: {vals}')
    # as JSON in the database and the run report: "key": "value", per test case
    if mpi_library and not vals['cp_mpi_library']:
        # dd loads no MPI library: count the one the probe found for --binary
        vals['cp_mpi_library'] = mpi_library
    in_json = sum(len(json.dumps({k: v})) for k, v in vals.items())
    perflog = sum(len(v) + 1 for v in vals.values())          # value| in the perflog line
    per_case = 2 * in_json + perflog
    recs = list((results / 'fingerprints').glob('*.json'))
    rec_size = statistics.mean(p.stat().st_size for p in recs)
    year = per_case * figures * nights
    print(f'storage, one real session (DevZeroCopy on local, {len(recs)} node record(s); '
          f'cp_mpi_library as the probe found it for the MPI binary above):')
    for k, v in vals.items():
        print(f'  {k} = {v[:90]}{"..." if len(v) > 90 else ""}  ({len(v)} bytes)')
    print(f'  per test case: {in_json} bytes in the results database, {in_json} in the run '
          f'report, {perflog} in the perflog line: {per_case} bytes')
    print(f'  a node record: {rec_size:.0f} bytes, once per distinct fingerprint')
    print(f'  a year: {figures} figures x {nights} nights x {per_case} bytes = '
          f'{year / 1e6:.0f} MB (each figure a test case of its own: an upper bound) '
          f'+ {records} records x {rec_size:.0f} bytes = {records * rec_size / 1e3:.0f} kB')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--runs', type=int, default=20)
    ap.add_argument('--binary', default=shutil.which('hpcc') or sys.executable,
                    help='the binary whose identity the probe records (default: hpcc, an '
                         'MPI binary, when installed)')
    ap.add_argument('--srun', type=int, metavar='N', help='also under Slurm, N nodes')
    ap.add_argument('--figures', type=int, default=2000)
    ap.add_argument('--nights', type=int, default=365)
    ap.add_argument('--records', type=int, default=100,
                    help='distinct node records a year (node configurations x updates)')
    ap.add_argument('--in-allocation', action='store_true', help=argparse.SUPPRESS)
    ap.add_argument('--tmp', help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.in_allocation:
        in_allocation(args.binary, args.runs, args.tmp)
        return 0
    with tempfile.TemporaryDirectory(prefix='bench-fingerprint-') as tmp:
        mpi_library = probe_time(args.binary, args.runs, tmp)
        if args.srun:
            shared = Path(tmp) / 'slurm'      # the nodes share this machine's file systems
            shared.mkdir()
            probe_under_slurm(args.binary, args.srun, args.runs, str(shared))
        storage(args.figures, args.nights, args.records, mpi_library, tmp)
    return 0


if __name__ == '__main__':
    sys.exit(main())
