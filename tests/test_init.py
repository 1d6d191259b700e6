"""``clusterproof init``: Slurm's view parsed from output recorded on the
local cluster (Slurm 22.05.8, nodes n[1-2] with 2 CPUs and 2048 MiB, n[3-4]
with 1 CPU and 1024 MiB), and the whole path for real: init on a
heterogeneous local cluster, validate, SystemInventory passes, a node given
less in Slurm fails it."""

import os
import subprocess
from pathlib import Path

import pytest

from clusterproof import ClusterproofError
from clusterproof import cluster as lc
from clusterproof.site import discover
from clusterproof.site.inventory import compare_hardware
from conftest import (DATA, EMU_INSTANCE, REPO, VENV_BIN, emu_cluster_exclusive, report_cases,
                      run_reframe)

SLURM = DATA / 'slurm'
EXPECTED = [('n1', 2, 2048), ('n2', 2, 2048), ('n3', 1, 1024), ('n4', 1, 1024)]


def _summary(nodes):
    return [(n.name, n.cpus, n.real_memory_mib) for n in nodes]


def test_scontrol_text_and_json_give_the_same_nodes():
    text = discover.nodes_from_scontrol((SLURM / 'scontrol-show-node-22.05.8.txt').read_text())
    js = discover.nodes_from_json((SLURM / 'sinfo-22.05.8.json').read_text())
    assert _summary(text) == EXPECTED
    assert text == js
    # Slurm's own view when slurm.conf gives only CPUs: one core per socket
    assert (text[0].sockets, text[0].cores_per_socket, text[0].threads_per_core) == (2, 1, 1)
    assert text[0].partitions == ('emu',)


def test_multiline_record_and_values_with_spaces():
    [node] = discover.nodes_from_scontrol(
        (SLURM / 'scontrol-show-node-n3-multiline-22.05.8.txt').read_text())
    assert (node.name, node.cpus, node.real_memory_mib, node.state) == ('n3', 1, 1024, 'IDLE')
    rec = discover.parse_scontrol_record(
        (SLURM / 'scontrol-show-node-22.05.8.txt').read_text().splitlines()[0])
    assert rec['OS'].startswith('Linux ') and ' SMP' in rec['OS']
    assert rec['CfgTRES'] == 'cpu=2,mem=2G,billing=2'


def test_partitions_and_node_groups():
    parts = discover.partitions_from_scontrol(
        (SLURM / 'scontrol-show-partition-22.05.8.txt').read_text())
    assert list(parts) == ['emu'] and parts['emu']['Nodes'] == 'n[1-4]'
    nodes = discover.nodes_from_scontrol((SLURM / 'scontrol-show-node-22.05.8.txt').read_text())
    groups = discover.group_nodes(nodes)
    assert [(g.partition, g.nodelist) for g in groups] == [('emu', 'n[1-2]'), ('emu', 'n[3-4]')]
    assert discover.partition_names(groups) == ['emu-g1', 'emu-g2']
    assert discover.partition_names(groups[:1]) == ['emu']
    with pytest.raises(ClusterproofError, match='Slurm has no partition gpu with nodes; it has: emu'):
        discover.group_nodes(nodes, ['gpu'])


def test_unreadable_slurm_output_names_node_and_key():
    bad = (SLURM / 'scontrol-show-node-22.05.8.txt').read_text().replace('CPUTot=1', 'CPUTot=x', 1)
    with pytest.raises(ClusterproofError, match="node n3: CPUTot='x' is not a whole number"):
        discover.nodes_from_scontrol(bad)
    with pytest.raises(ClusterproofError, match='sinfo --json: no "nodes" list'):
        discover.nodes_from_json('{"meta": {}}')


def test_slurm_fields_are_compared_when_declared():
    declared = {'sockets': 1, 'slurm_cpus': 2, 'slurm_memory_mib': 2048}
    assert compare_hardware('n1', declared, {'sockets': 1, 'slurm_cpus': 2,
                                             'slurm_memory_mib': 2048}) == []
    [miss] = compare_hardware('n2', declared, {'sockets': 1, 'slurm_cpus': 1,
                                               'slurm_memory_mib': 2048})
    assert str(miss) == 'n2: slurm_cpus: expected 2, found 1'


# ------------------------------------------------------------------ for real

def _cp(*args, env=None):
    return subprocess.run([str(VENV_BIN / 'clusterproof'), *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)


def _restart(rd, env, node_spec):
    assert _cp('cluster', 'down', '--force', *rd, env=env).returncode == 0
    proc = _cp('cluster', 'up', *rd, '--node-spec', node_spec, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _inventory(name, tmp_path, env):
    proc = run_reframe(['-c', 'reframe_checks/inventory.py', '-n', 'SystemInventory', '-r',
                        '--system', name], tmp_path / 'results', extra_env=env)
    cases = {tc['partition']: tc for tc in report_cases(tmp_path / 'results')}
    return proc, cases


def test_init_on_a_heterogeneous_cluster(emu_cluster, tmp_path):
    name = f'inittest{os.getpid()}'
    system_file = REPO / 'site_config' / 'systems' / f'{name}.py'
    refs = REPO / 'site_config' / 'references' / f'{name}.yaml'
    scratch = tmp_path / 'scratch'
    scratch.mkdir()
    with emu_cluster_exclusive():
        spec = lc.load_spec(EMU_INSTANCE, lc.Instance(EMU_INSTANCE).default_run_dir())
        rd = ['--instance', str(EMU_INSTANCE), '--run-dir', str(spec.run_dir)]
        env = dict(os.environ, **emu_cluster)
        try:
            _restart(rd, env, 'n[1-2]:cpus=2,mem=2048;n[3-4]:cpus=1,mem=1024')
            dry = _cp('init', '--name', name, '--scratch', str(scratch), '--dry-run', env=env)
            assert dry.returncode == 0, dry.stdout + dry.stderr
            assert f'+++ {system_file}' in dry.stdout and not system_file.exists()
            proc = _cp('init', '--name', name, '--scratch', str(scratch), env=env)
            assert proc.returncode == 0, proc.stdout + proc.stderr
            text = system_file.read_text()
            assert "'name': 'emu-g1'" in text and "'name': 'emu-g2'" in text
            assert "'slurm_cpus': 2," in text and "'slurm_memory_mib': 1024," in text
            assert "# 'memory_mts': ...,   # not discovered:" in text
            assert "'emulated': True" in text
            again = _cp('init', '--name', name, env=env)
            assert again.returncode == 2 and 'exists; --force overwrites it' in again.stderr
            val = _cp('validate', '--system', name, env=env)
            assert val.returncode == 0, val.stdout + val.stderr
            assert f'ok  {name}:emu-g1' in val.stdout and f'ok  references/{name}.yaml' in val.stdout

            run, cases = _inventory(name, tmp_path / 'pass', env)
            assert run.returncode == 0, run.stdout[-3000:]
            assert {p: tc['result'] for p, tc in cases.items()} == {'emu-g1': 'pass',
                                                                     'emu-g2': 'pass'}
            # n2 now gets one CPU and 1536 MiB from Slurm
            _restart(rd, env, 'n1:cpus=2,mem=2048;n2:cpus=1,mem=1536;n[3-4]:cpus=1,mem=1024')
            run, cases = _inventory(name, tmp_path / 'fail', env)
            assert run.returncode != 0
            assert cases['emu-g2']['result'] == 'pass'
            reason = cases['emu-g1']['fail_reason']
            assert 'n2: slurm_cpus: expected 2, found 1' in reason, reason
            assert 'n2: slurm_memory_mib: expected 2048, found 1536' in reason, reason
            assert 'n1:' not in reason
        finally:
            for path in (system_file, refs):
                if path.exists():
                    path.unlink()
            _cp('cluster', 'down', '--force', *rd, env=env)
            back = _cp('cluster', 'up', *rd, '--nodes', str(spec.nodes), '--cpus-per-node',
                       str(spec.cpus), '--mem-per-node', str(spec.mem), env=env)
            assert back.returncode == 0, back.stdout + back.stderr
