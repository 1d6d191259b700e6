"""The product at a thousand nodes: ``clusterproof init`` probing one node
per group in parallel and bounded; a heterogeneous 1,024-node cluster
scaled up from a recorded real one (``scripts/scale-like``), read as init
reads it; and, in the scale tier (``scripts/test-scale``), ``cluster up
--like`` of it, ``init`` on it and ``cluster status`` at 1,024 nodes."""

import os
import re
import subprocess
import threading
import time

import pytest

from clusterproof import ClusterproofError
from clusterproof import cluster as lc
from clusterproof.commands import init
from clusterproof.hostlist import expand
from clusterproof.parsers.slurm import parse_topology
from clusterproof.screen import page, verdicts as screen_verdicts
from clusterproof.site import slurm_view
from conftest import DATA, REPO, VENV_BIN, need_netns

SCALE_LIKE = REPO / 'scripts' / 'scale-like'


def scale_like(*args):
    """``scripts/scale-like ARGS`` run as docs/scale.md says, from a shell
    whose python3 is the system's (no virtual environment on PATH, none
    active): the script finds the checkout's .venv itself."""
    env = {k: v for k, v in os.environ.items() if k != 'VIRTUAL_ENV'}
    env['PATH'] = os.pathsep.join(d for d in env.get('PATH', '').split(os.pathsep)
                                  if d and not d.startswith(str(REPO / '.venv')))
    return subprocess.run([str(SCALE_LIKE), *map(str, args)], env=env, capture_output=True,
                          text=True, timeout=60)


def test_probes_run_in_parallel_at_most_the_bound_at_once():
    """12 distinct nodes, 4 at once: every probe waits at a barrier of 4, so
    a serial init never passes it (BrokenBarrierError) and a fifth probe at
    once is counted."""
    barrier = threading.Barrier(4, timeout=20)
    lock, running, most = threading.Lock(), [0], [0]

    def probe_one(group, node, scratch):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        try:
            barrier.wait()
            if node == 'n7':
                raise ClusterproofError('probe of n7 failed (exit 1): no python')
            return {'node': node, 'group': group}
        finally:
            with lock:
                running[0] -= 1

    todo = [(f'n{i}', f'g{i}') for i in range(1, 13)] + [('n1', 'g13')]
    out = init.probe_all(todo, None, workers=4, probe_one=probe_one)
    assert most[0] == 4
    assert sorted(out, key=slurm_view._node_key) == [f'n{i}' for i in range(1, 13)]
    assert out['n1'] == {'node': 'n1', 'group': 'g1'}      # probed once, for its first group
    assert isinstance(out['n7'], ClusterproofError) and 'no python' in str(out['n7'])
    assert init.probe_all([], None) == {}


def _scaled(tmp_path, nodes):
    path = tmp_path / 'scontrol-show-node.txt'
    proc = scale_like('--nodes', nodes, path)
    assert proc.returncode == 0, proc.stderr
    path.with_name('scontrol-show-node.txt.partitions').rename(
        path.with_name('scontrol-show-partition.txt'))
    return path


TOPOLOGY = DATA / 'slurm' / 'scontrol-show-topology-22.05.8.txt'


def test_a_recorded_tree_topology_is_read_and_its_leaves_lay_out_the_page():
    """``scontrol show topology`` of Slurm 22.05.8 (recorded on the local
    cluster of 64 nodes with a two-level tree): the spine names every node
    and its leaves; only the leaves group nodes on the screening page."""
    switches = parse_topology(TOPOLOGY.read_text(), str(TOPOLOGY))
    assert [(sw.name, sw.leaf, len(sw.nodes), sw.switches) for sw in switches] == [
        ('leaf1', True, 32, ()), ('leaf2', True, 32, ()), ('spine', False, 64, ('leaf1', 'leaf2'))]
    leaves = page.topology_switches(TOPOLOGY.read_text())
    assert {k: (v[0], v[-1]) for k, v in leaves.items()} == {'leaf1': ('n0001', 'n0032'),
                                                             'leaf2': ('n0033', 'n0064')}
    verdicts = [screen_verdicts.NodeVerdict(f'n{i:04d}', 'emu', 'pass') for i in range(1, 41)]
    verdicts.append(screen_verdicts.NodeVerdict('x1', 'emu', 'pass'))
    how, groups = page.layout(verdicts, TOPOLOGY.read_text())
    assert how == 'switch'
    assert [(g, len(vs)) for g, vs in groups] == \
        [('(in no switch)', 1), ('leaf1', 32), ('leaf2', 8)]
    # what Slurm may print instead of a topology: the page lays out by name
    assert page.topology_switches('No topology information is available') == {}


def test_a_topology_file_is_cut_to_the_described_nodes_and_checked(tmp_path):
    """``cluster up --like-topology``: a topology.conf (spine first, as sites
    write it) cut to the described nodes, a switch left empty dropped,
    written back as topology.conf lines; clear errors for a switch named
    but never declared, one declared twice, none reaching a node."""
    path = _scaled(tmp_path, 64)
    parts = path.with_name('scontrol-show-partition.txt')
    topo = tmp_path / 'topology.conf'
    topo.write_text('# the site tree\nSwitchName=top Switches=l[1-3]\n'
                    'SwitchName=l1 Nodes=n[0001-0032]\nSwitchName=l2 Nodes=n[0033-0064],gone[1-4]\n'
                    'SwitchName=l3 Nodes=gone[5-8]\n')
    like = lc.read_like(path, parts, topo)
    assert lc.like.topology_conf_lines(like) == [
        'SwitchName=top Switches=l[1-2]', 'SwitchName=l1 Nodes=n[0001-0032]',
        'SwitchName=l2 Nodes=n[0033-0064]']
    assert lc.Like.from_dict(like.to_dict()) == like
    assert '3 switches (2 leaves)' in lc.like.describe_like(like)
    for text, words in [('SwitchName=top Switches=l[1-2]\nSwitchName=l1 Nodes=n0001\n',
                         'switch top: Switches= names l2, never declared'),
                        ('SwitchName=l1 Nodes=n0001\nSwitchName=l1 Nodes=n0002\n',
                         'switch l1 declared twice'),
                        ('SwitchName=l1 Nodes=x[1-9]\n', 'no switch connects a node'),
                        ('Nodes=n0001\n', 'line 1: no SwitchName='),
                        ('', 'no SwitchName= line')]:
        topo.write_text(text)
        with pytest.raises(ClusterproofError, match=re.escape(words)) as err:
            lc.read_like(path, parts, topo)
        assert str(topo) in str(err.value)


def test_a_1024_node_cluster_scaled_from_a_recorded_one_is_grouped_for_init(tmp_path):
    """The 1,024 nodes read as init reads Slurm's answers: the recorded
    shapes, partitions and states kept; one probe node per group, every one
    runnable, each chosen once; the group drained whole is not probed and
    says why; reading and grouping take about 0.3 s (10 s allowed under load)."""
    path = _scaled(tmp_path, 1024)
    like = lc.read_like(path, path.with_name('scontrol-show-partition.txt'))
    assert len(like.nodes) == 1024 and like.left_out == ()
    shapes = {(n.sockets, n.cores, n.threads, n.mem, n.gres) for n in like.nodes}
    assert len(shapes) == 7      # the ten recorded nodes: two broadwell, three MIG alike
    states = {}
    for n in like.nodes:
        states.setdefault((n.state, n.reason), []).append(n.name)
    assert {k: len(v) for k, v in states.items()} == {
        ('', ''): 1024 - 2 - 3 - 102, ('DOWN', 'Not responding'): 2,
        ('DRAIN', 'Kill task failed'): 3, ('DRAIN', 'gpu_board'): 102}
    assert {p.name for p in like.partitions} >= {'gpu', 'preempt', 'kerngpu', 'interactive'}

    t0 = time.monotonic()
    nodes, parts, how = slurm_view.read_slurm(slurm_view.recorded_runner(str(tmp_path)))
    groups = slurm_view.group_nodes(nodes, slurm_partitions=parts)
    chosen = init.choose_probes(groups, recorded=False)
    took = time.monotonic() - t0
    assert how.startswith('scontrol -o show node') and len(nodes) == 1024
    assert took < 10, f'reading and grouping 1,024 nodes took {took:.1f} s'
    by_name = {n.name: n for n in nodes}
    probes = [node for node, _ in chosen if node]
    # a node per shape and partition set
    assert len(set(probes)) == 7 and len(groups) == 17, chosen
    for group, (node, why) in zip(groups, chosen):
        if node:
            assert node in {n.name for n in group.nodes}
            assert by_name[node].state == 'IDLE', (node, by_name[node].state)
        else:
            assert 'gpu_board' in why and 'can run a job' in why, why
    assert sum(node is None for node, _ in chosen) == 2     # the H100 block, in two partitions


def test_scale_like_refuses_too_few_nodes(tmp_path):
    proc = scale_like('--nodes', 12, tmp_path / 'x')
    assert proc.returncode != 0 and '--nodes 12: at least 40' in proc.stderr


def _cp(*args, env):
    return subprocess.run([str(VENV_BIN / 'clusterproof'), *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=900)


SCALE_TIER = [pytest.mark.scale, pytest.mark.slow,
              pytest.mark.skipif(not os.environ.get('CLUSTERPROOF_TEST_SCALE'),
                                 reason='the scale tier (1,024 nodes, minutes, about 4 GiB): '
                                        'run scripts/test-scale')]


@need_netns
@pytest.mark.parametrize('nodes', [64, pytest.param(lc.MAX_NODES, marks=SCALE_TIER)])
def test_init_and_status_on_nodes_shaped_like_a_real_cluster(emu_cluster, tmp_path, nodes):
    """``cluster up --like`` of the scaled description with its tree
    topology, then ``init``: one probe per node shape, in parallel, within a
    minute; the system file has one partition per group, probed ones with
    the probed node, the drained block from Slurm's view with the reason;
    ``cluster status`` answers in bounded time with folded node lists;
    Slurm runs with the declared switches and the screening page lays the
    nodes out by them. Prints the wall times. 64 nodes in ``make test``,
    1,024 in the scale tier."""
    from cluster_helpers import leftovers, session_cluster_replaced
    path = _scaled(tmp_path, nodes)
    name = f'scaletest{os.getpid()}'
    system_file = REPO / 'site_config' / 'systems' / f'{name}.py'
    refs = REPO / 'site_config' / 'references' / f'{name}.yaml'
    env = dict(os.environ, **emu_cluster)
    times = {}
    with session_cluster_replaced() as rd:
        try:
            t0 = time.monotonic()
            up = _cp('cluster', 'up', *rd, '--like', str(path), '--like-partitions',
                     str(path.with_name('scontrol-show-partition.txt')), '--like-topology',
                     f'{path}.topology', env=env)
            times['up'] = time.monotonic() - t0
            assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
            leaves = nodes // 32
            assert f'{leaves + 1} switches ({leaves} leaves)' in up.stdout, up.stdout
            topo = subprocess.run(['scontrol', 'show', 'topology'], env=env, capture_output=True,
                                  text=True, timeout=60)
            switches = page.topology_switches(topo.stdout)
            assert len(switches) == leaves and switches['leaf01' if leaves > 9 else 'leaf1'][0] == \
                'n0001', topo.stdout + topo.stderr
            how, groups = page.layout([screen_verdicts.NodeVerdict(f'n{i:04d}', 'emu', 'pass')
                                       for i in range(1, nodes + 1)], topo.stdout)
            assert how == 'switch' and [len(vs) for _, vs in groups] == [32] * leaves
            t0 = time.monotonic()
            status = _cp('cluster', 'status', *rd, env=env)
            times['status'] = time.monotonic() - t0
            assert status.returncode == 0, status.stdout + status.stderr
            assert len(status.stdout.splitlines()) < 40, status.stdout
            # the first two nodes recorded DOWN: their slurmd stopped
            assert re.search(rf'^  slurmd +n\[0003-{nodes:04d}\] +alive$', status.stdout, re.M), \
                status.stdout
            assert re.search(r'^  n\[0001-0002\] +down$', status.stdout, re.M), status.stdout
            assert times['status'] < 30, times
            t0 = time.monotonic()
            proc = _cp('init', '--name', name, env=env)
            times['init'] = time.monotonic() - t0
            assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
            probed = re.search(r'^init: probed (\S+) \((\d+) nodes, at most (\d+) at once\)',
                               proc.stdout, re.M)
            assert probed and probed.group(2) == '7', proc.stdout
            assert times['init'] < 60, times
            assert 'gpu_board' in proc.stderr and "declared from Slurm's view alone" in proc.stderr
            text = system_file.read_text()
            scope = {}
            exec(compile(text, str(system_file), 'exec'), scope)
            parts = scope['system']['partitions']
            heads = re.findall(r'^init: (\S+): (\S+) \(', proc.stdout, re.M)
            assert [p['descr'] for p in parts] == [f'Slurm partition {p}: {nl}' for p, nl in heads]
            assert len(re.findall(r'# probed: ', text)) == len(parts) - 2     # the H100 block twice
            assert len(set(re.findall(r'# probed: (\S+)', text))) == 7
            declared = {n.name: n for n in
                        lc.read_like(path, path.with_name('scontrol-show-partition.txt')).nodes}
            for part in parts:      # Slurm's view of every group as the description declares it
                hw, first = (part['extras']['hardware'],
                             declared[expand(part['descr'].split(': ')[1])[0]])
                assert (hw['slurm_cpus'], hw['slurm_memory_mib']) == (first.cpus, first.mem), \
                    part['descr']
            kern = [p for p in parts if p['descr'].startswith('Slurm partition kerngpu:')]
            assert len(kern) == 1 and kern[0]['extras']['hardware']['slurm_cpus'] == 112
            assert kern[0]['devices'] == [{'type': 'gpu', 'arch': 'nvidia_h100_80gb_hbm3',
                                           'num_devices': 8}]
        finally:
            for p in (system_file, refs):
                if p.exists():
                    p.unlink()
            t0 = time.monotonic()
            _cp('cluster', 'down', '--force', *rd, env=env)
            times['down'] = time.monotonic() - t0
            left = leftovers(int(rd[1]))
    assert left == []
    print(f'{nodes} nodes like a real cluster: '
          + ', '.join(f'{what} {t:.1f} s' for what, t in times.items()))


def test_a_node_failure_of_a_1024_node_job_names_its_nodes_folded():
    """300 nodes of a 1,024-node job down for two reasons: the cause is one
    short line, the nodes folded per reason, none lost."""
    from clusterproof.methods import job_failure
    down = ([(f'n{i:04d}', 'Not responding') for i in range(1, 300)]
            + [('n0700', 'Kill task failed')])
    cause = job_failure.failure_cause('', 'NODE_FAIL', None, None, down)
    assert cause == ('node failure: n[0001-0299,0700] stopped answering during the run '
                     '(Slurm state NODE_FAIL); Slurm says n[0001-0299]: Not responding; '
                     'n0700: Kill task failed'), cause
