"""Culprit attribution on the local Slurm cluster: the same check runs every
session on one node or another; then one node is made slow for real (its
slurmd, and so every job step it starts, in a cgroup with a 5 % CPU quota)
and the sessions that land on it are slow. `clusterproof changes` finds the
change and names that node."""

import json

import pytest

from conftest import EMU_INSTANCE, need_netns, run_reframe
from results_helpers import SELFTEST_CHECKS, clusterproof


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
    from clusterproof import ClusterproofError
    from clusterproof import cluster as lc
    from clusterproof.cluster import faults
    spec = lc.load_spec(EMU_INSTANCE, lc.Instance(EMU_INSTANCE).default_run_dir())
    try:
        slow = faults.node_cpu_quota(spec, 'n3', 5000, 100000)
    except ClusterproofError as err:
        pytest.skip(str(err))
    results, refs = tmp_path / 'results', tmp_path / 'refs'
    for i in range(9):
        _session(results, refs, emu_cluster, ('n1', 'n2', 'n4')[i % 3])
    with slow:
        for _ in range(4):
            _session(results, refs, emu_cluster, 'n3')
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
