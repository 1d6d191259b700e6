"""Culprit attribution on the local Slurm cluster: the same check runs every
session on one node or another; then one node is made slow for real (its
slurmd, and so every job step it starts, in a cgroup with a 5 % CPU quota)
and the sessions that land on it are slow. `clusterproof changes` finds the
change and names that node."""

import json
import os
from pathlib import Path

import pytest

from conftest import EMU_INSTANCE, need_netns, run_reframe
from results_helpers import SELFTEST_CHECKS, clusterproof

CGROUP_CPU = Path('/sys/fs/cgroup/cpu')


def _session(results, refs, env, node):
    proc = run_reframe(['-c', str(SELFTEST_CHECKS), '-r', '--system', 'emu:srun',
                        '-n', 'DevZeroCopy%num_threads=1', '-S', 'copy_mib=2048',
                        '-J', f'nodelist={node}'],
                       results, mode='nightly',
                       extra_env={'CLUSTERPROOF_REFERENCES': str(refs), **env}, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert 'Ran 1/1 test case(s)' in proc.stdout, proc.stdout[-3000:]


@pytest.mark.cluster
@pytest.mark.slow
@need_netns
def test_changes_names_the_slow_node(emu_cluster, tmp_path):
    if not (CGROUP_CPU / 'cpu.cfs_quota_us').is_file():
        pytest.skip('needs the cgroup v1 cpu controller at /sys/fs/cgroup/cpu')
    from clusterproof import cluster as lc
    spec = lc.load_spec(EMU_INSTANCE, lc.Instance(EMU_INSTANCE).default_run_dir())
    slurmd = int(lc.Layout(spec.run_dir).slurmd_pid_file('n3').read_text().split()[0])
    results, refs = tmp_path / 'results', tmp_path / 'refs'
    for i in range(9):
        _session(results, refs, emu_cluster, ('n1', 'n2', 'n4')[i % 3])
    group = CGROUP_CPU / f'clusterproof-test-slow-n3-{os.getpid()}'
    group.mkdir()
    try:
        (group / 'cpu.cfs_period_us').write_text('100000')
        (group / 'cpu.cfs_quota_us').write_text('5000')
        (group / 'cgroup.procs').write_text(str(slurmd))
        for _ in range(4):
            _session(results, refs, emu_cluster, 'n3')
    finally:
        (CGROUP_CPU / 'cgroup.procs').write_text(str(slurmd))
        group.rmdir()
    # dd on this shared machine varies several-fold between sessions: the
    # figure is far noisier than the default limit of a useful figure.
    out = clusterproof(['changes', '--format', 'json', '--system', 'emu',
                        '--max-detectable', '100000'], results, refs)
    assert out.returncode == 0, out.stdout + out.stderr
    # the figure may hold more than one finding (a smaller step earlier in
    # this noisy history, a withdrawn nightly alarm): the slow node's is the
    # standing change with the most sessions after it on n3
    bw = [c for c in json.loads(out.stdout) if c['figure'] == 'copy_bw' and not c['withdrawn']]
    assert bw, out.stdout
    bw = min(bw, key=lambda c: c['change'])
    assert bw['change'] < -0.5 and bw['direction'] == 'worse'
    assert bw['sessions_after'] == 4
    assert 'nodes: n3 in every session after, not in every one before' in bw['attribution']
