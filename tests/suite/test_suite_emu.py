"""The whole suite, as a user types it, on the local Slurm cluster:
``reframe -c reframe_checks -r --system emu`` (mode smoke, both partitions:
srun and mpirun), asserting on the results it stores.

Every check either passes on both partitions or is skipped for one of the
two allowed reasons (its binary is missing: the message gives the build
command; or the system does not declare the hardware). No list of checks is
kept here: a new check in reframe_checks/ is covered as it is. Every result
is marked emulated and none is compared with a reference.

HPCC and IOzone on the local cluster are asserted here too, on this run
(its stage files kept): HPCC over MPI on both partitions, one rank on each
of the 4 nodes, every figure; both IOzone checks on ``emu:srun`` at 1, 2
and 8 threads, round-robin threadlists over the nodes of the job (one
node, two, and all four wrapped twice), clients started through Slurm,
nothing left in the scratch directory. A run of either alone would repeat
what this run already does.

IOzone runs on ``emu:srun`` only (``-S IOzone*.valid_systems=emu:srun``):
it uses no launcher (the master runs in the job script, its clients are
``srun --mpi=none`` steps), so its job script on ``emu:mpirun`` is the same
but for ``SLURM_MPI_TYPE``, which those steps override. Its 16 jobs hold
whole nodes (``--exclusive``: IOzone's fixed ports) and each waits about
4 s per pass in IOzone itself, so they run one after another: the 8 on
``emu:mpirun`` cost some two minutes and proved nothing more. The 4-thread
cases are left out (``-x``): one client per node is the first row of the
8-thread threadlist, and each took a turn of its own on all four nodes
(some 20 s, 25 under load).

HPCC runs at N=480 (``-S Hpcc.problem_size=480``, NB 80) instead of the
smoke mode's 960: HPCC sizes its RandomAccess table from N, and its two
MPIRandomAccess sections took some 18 s of each run at 960 (ranks waiting
on each other over 4 nodes on 2 shared cores), 4 s at 480, and the fio
checks that share those cores with them end with them (56 s at 960, 40 at
480). Every figure, the residual and the 4 ranks are asserted as before.
"""

import glob
import json
import re
import shutil
from pathlib import Path

from conftest import REPO, need_netns, run_reframe
from hpcc_helpers import check_passed

IOZONE_CHECKS = ('IOzoneSequential', 'IOzoneRandom')
IOZONE_ON_SRUN_ONLY = [a for check in IOZONE_CHECKS
                       for a in ('-S', f'{check}.valid_systems=emu:srun')]
#: the thread counts of the smoke mode's IOzone cases this run keeps
IOZONE_THREADS = (1, 2, 8)
IOZONE_WITHOUT_4 = ['-x', f'^({"|".join(IOZONE_CHECKS)})%threads=4$']
#: HPCC's N here (6 blocks of 80), half the smoke mode's (see above)
HPCC_N = 480
HPCC_SMALLER = ['-S', f'Hpcc.problem_size={HPCC_N}', '-S', 'Hpcc.block_size=80']


@need_netns
def test_whole_suite_on_the_local_cluster(emu_cluster, tmp_path):
    results = tmp_path / 'results'
    proc = run_reframe(['-c', str(REPO / 'reframe_checks'), '-r', '--system', 'emu',
                        '--keep-stage-files', *IOZONE_ON_SRUN_ONLY, *IOZONE_WITHOUT_4,
                        *HPCC_SMALLER],
                       results, mode='smoke', extra_env=emu_cluster)
    assert proc.returncode == 0, proc.stdout[-4000:]
    report = sorted(glob.glob(str(results / 'reports' / 'run-report-*.json')))[-1]
    cases = json.load(open(report))['runs'][0]['testcases']

    by_check = {}
    for tc in cases:
        by_check.setdefault(tc['name'].split()[0], []).append(tc)
    for tc in cases:
        assert tc['result'] in ('pass', 'skip'), f'{tc["name"]} on {tc["partition"]}: ' \
                                                 f'{tc["result"]}: {tc.get("fail_reason")}'
    ran = {check for check, runs in by_check.items()
           if any(tc['result'] == 'pass' for tc in runs)}
    for check in ran:
        assert {tc['partition'] for tc in by_check[check] if tc['result'] == 'pass'} == \
            ({'srun'} if check in IOZONE_CHECKS else {'srun', 'mpirun'}), check
    # what set-up installs (Debian packages, sources built by the checks) runs
    assert {'SystemInventory', 'Stream', 'IOzoneSequential', 'MmapSweep'} <= ran, ran

    # every skip says why, on the line ReFrame prints
    skips = re.findall(r'SKIP.*?\] \(\s*\d+/\d+\) (\S+).*@emu:\S+ \[(.+)\]', proc.stdout)
    assert len(skips) == sum(tc['result'] == 'skip' for tc in cases)
    for name, reason in skips:
        assert ('spack -e . install' in reason or 'declares no' in reason
                or 'between two nodes' in reason), f'{name}: {reason}'

    # one inventory task per emulated node, on both partitions
    for tc in by_check['SystemInventory']:
        assert tc['job_nodelist'] == ['n1', 'n2', 'n3', 'n4']

    # figures are there, marked emulated, never judged against references
    measured = [tc for tc in cases if tc['result'] == 'pass' and tc.get('perfvalues')]
    assert measured
    for tc in measured:
        assert tc['cp_emulated'] is True and tc['cp_smoke'] is True, tc['name']
        for key, (value, ref, *_rest) in tc['perfvalues'].items():
            assert ref == 0, f'{tc["name"]} {key}: reference {ref} on emulated hardware'
    triad = [tc['perfvalues']['emu:srun:triad'][0] for tc in by_check['Stream']
             if tc['partition'] == 'srun' and 'emu:srun:triad' in tc['perfvalues']]
    assert triad and min(triad) > 0

    _iozone_on_the_local_cluster(proc, results, cases)
    _hpcc_across_the_four_nodes(by_check)


def _hpcc_across_the_four_nodes(by_check):
    """HPCC of the whole-suite run over MPI on both partitions: one rank on
    each of the 4 nodes, every figure (where ``hpcc`` is installed; without
    it the check skips with the build command, asserted above)."""
    if shutil.which('hpcc') is None:
        return
    cases = by_check['Hpcc']
    assert sorted(c['partition'] for c in cases) == ['mpirun', 'srun']
    for case in cases:
        check_passed(case, 4)
        assert case['problem_size'] == HPCC_N, case['problem_size']
        assert len(set(case['job_nodelist'])) == 4


def _iozone_on_the_local_cluster(proc, results, cases):
    """IOzone of the whole-suite run on ``emu:srun``: the 6 cases ran (1, 2
    and 8 threads, sequential and random), each threadlist round-robin
    over the job's nodes, clients started through Slurm (``-+h``), and
    the scratch directory holds nothing but the registry."""
    iozone = sorted(tc['name'] for tc in cases
                    if tc['name'].startswith('IOzone') and tc['partition'] == 'srun'
                    and tc['result'] == 'pass')
    assert len(iozone) == 2 * len(IOZONE_THREADS), iozone
    for t in IOZONE_THREADS:
        assert f'IOzoneSequential %threads={t}' in proc.stdout
        assert f'IOzoneRandom %threads={t}' in proc.stdout
    tl = [p for p in (results / 'stage' / 'emu' / 'srun').rglob('threadlist')
          if p.parent.name.startswith('IOzone')]
    assert len(tl) == 2 * len(IOZONE_THREADS), tl
    for path in tl:
        rows = [line.split()[0] for line in path.read_text().splitlines()]
        n = len(rows)
        used = list(dict.fromkeys(rows))                 # client nodes of the job, in order
        assert len(used) == min(n, 4) and set(used) <= {'n1', 'n2', 'n3', 'n4'}
        assert rows == [used[i % len(used)] for i in range(n)]
        job_out = (path.parent / 'rfm_job.out').read_text()
        assert re.search(r'Command line used: .* -\+h n[1-4]$', job_out, re.M)
    assert 'P: write_gbs' in proc.stdout and 'P: random_read' in proc.stdout
    scratch_dir = results / 'scratch'
    left = [p.name for p in Path(scratch_dir).iterdir()] if Path(scratch_dir).exists() else []
    assert set(left) <= {'.clusterproof-registry'}, left
