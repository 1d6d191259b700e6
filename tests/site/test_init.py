"""``clusterproof init``: Slurm's view parsed from output recorded on the
local cluster (Slurm 22.05.8, nodes n[1-2] with 2 CPUs and 2048 MiB, n[3-4]
with 1 CPU and 1024 MiB), and the whole path for real: init on a
heterogeneous local cluster, validate, SystemInventory passes, a node given
less in Slurm fails it."""

import os
import re
import shutil
import socket
import subprocess

import pytest

from clusterproof import ClusterproofError, command
from clusterproof import cluster as lc
from clusterproof.parsers import slurm, slurm_values
from clusterproof.site import declare, discover, hardware, slurm_view
from clusterproof.site.inventory import compare_hardware
from conftest import (DATA, EMU_INSTANCE, REPO, VENV_BIN, emu_cluster_exclusive, report_cases,
                      run_reframe)

SLURM = DATA / 'slurm'
EXPECTED = [('n1', 2, 2048), ('n2', 2, 2048), ('n3', 1, 1024), ('n4', 1, 1024)]


def _summary(nodes):
    return [(n.name, n.cpus, n.real_memory_mib) for n in nodes]


def test_scontrol_text_and_json_give_the_same_nodes():
    text = slurm.nodes_from_scontrol((SLURM / 'scontrol-show-node-22.05.8.txt').read_text())
    js = slurm.nodes_from_json((SLURM / 'sinfo-22.05.8.json').read_text())
    assert _summary(text) == EXPECTED
    assert text == js
    # Slurm's own view when slurm.conf gives only CPUs: one core per socket
    assert (text[0].sockets, text[0].cores_per_socket, text[0].threads_per_core) == (2, 1, 1)
    assert text[0].partitions == ('emu',)


def test_multiline_record_and_values_with_spaces():
    [node] = slurm.nodes_from_scontrol(
        (SLURM / 'scontrol-show-node-n3-multiline-22.05.8.txt').read_text())
    assert (node.name, node.cpus, node.real_memory_mib, node.state) == ('n3', 1, 1024, 'IDLE')
    rec = slurm.parse_scontrol_record(
        (SLURM / 'scontrol-show-node-22.05.8.txt').read_text().splitlines()[0])
    assert rec['OS'].startswith('Linux ') and ' SMP' in rec['OS']
    assert rec['CfgTRES'] == 'cpu=2,mem=2G,billing=2'


def test_partitions_and_node_groups():
    parts = slurm.partitions_from_scontrol(
        (SLURM / 'scontrol-show-partition-22.05.8.txt').read_text())
    assert list(parts) == ['emu'] and parts['emu'].nodes == ('n1', 'n2', 'n3', 'n4')
    assert (parts['emu'].state, parts['emu'].max_nodes, parts['emu'].max_time) == \
        ('UP', None, 'UNLIMITED')
    nodes = slurm.nodes_from_scontrol((SLURM / 'scontrol-show-node-22.05.8.txt').read_text())
    groups = slurm_view.group_nodes(nodes, slurm_partitions=parts)
    assert [(g.partition, g.nodelist) for g in groups] == [('emu', 'n[1-2]'), ('emu', 'n[3-4]')]
    assert declare.partition_names(groups) == ['emu-g1', 'emu-g2']
    assert declare.partition_names(groups[:1]) == ['emu']
    with pytest.raises(ClusterproofError,
                       match='Slurm has no partition gpu with nodes; it has: emu'):
        slurm_view.group_nodes(nodes, ['gpu'])


def test_unreadable_slurm_output_names_node_and_key():
    bad = (SLURM / 'scontrol-show-node-22.05.8.txt').read_text().replace('CPUTot=1', 'CPUTot=x', 1)
    with pytest.raises(ClusterproofError, match="node n3: CPUTot: 'x' is not a whole number"):
        slurm.nodes_from_scontrol(bad)
    with pytest.raises(slurm_values.SlurmFormatError,
                       match='sinfo --json: neither a "nodes" nor a "sinfo" list in the JSON '
                             r'\(keys: meta\)'):
        slurm.nodes_from_json('{"meta": {}}')


def test_an_unreadable_node_is_left_out_with_a_warning_not_the_whole_cluster(tmp_path):
    rec = tmp_path / 'rec'
    rec.mkdir()
    (rec / 'scontrol-show-node.txt').write_text(
        (SLURM / 'scontrol-show-node-22.05.8.txt').read_text().replace('CPUTot=1', 'CPUTot=x', 1))
    warned = []
    nodes, _, how = slurm_view.read_slurm(slurm_view.recorded_runner(str(rec)), warned.append)
    assert [n.name for n in nodes] == ['n1', 'n2', 'n4'] and how == 'scontrol -o show node'
    assert "scontrol -o show node: node n3: CPUTot: 'x' is not a whole number: node left out" \
        in warned
    node = slurm.SlurmNode('f1', ('p',), 0, 0, 0, 0, 0, 'FUTURE')
    decl = declare.declare_group('p', slurm_view.group_nodes([node])[0], None, [node],
                                 unprobed='FUTURE')
    assert decl.processor == {} and 'sockets' not in decl.hardware
    assert decl.undiscovered['hardware.sockets'] == 'not probed: FUTURE; Slurm declares 0'


def test_slurm_fields_are_compared_when_declared():
    declared = {'sockets': 1, 'slurm_cpus': 2, 'slurm_memory_mib': 2048}
    assert compare_hardware('n1', declared, {'sockets': 1, 'slurm_cpus': 2,
                                             'slurm_memory_mib': 2048}) == []
    [miss] = compare_hardware('n2', declared, {'sockets': 1, 'slurm_cpus': 1,
                                               'slurm_memory_mib': 2048})
    assert str(miss) == 'n2: slurm_cpus: expected 2, found 1'


# ------------------------------------------------ other sites' Slurm output

#: (recording, Slurm release its meta names or None for text, nodes,
#:  {node: (partitions, CPUTot, sockets, cores per socket, threads, MiB,
#:          state, GPUs [(type, count)])})
RECORDINGS = [
    ('scontrol-show-node-17.11-twcc.txt', None, 1, {
        'gn0101.twcc.ai': (('SlurmDefault',), 36, 2, 18, 1, 772437, 'IDLE+DRAIN',
                           [(None, 8)])}),
    ('scontrol-show-node-20.11.8.txt', None, 1, {
        'binfservas07': (('pall',), 16, 2, 8, 1, 250000, 'ALLOCATED', [])}),
    ('sinfo-21.08.5.json', '21.08.5', 4, {
        'cs3.example.company.com': (('hw',), 64, 2, 16, 2, 500000, 'IDLE', []),
        'cs5.example.company.com': (('hw',), 64, 2, 16, 2, 500000, 'DOWN', [])}),
    ('sinfo-22.05.8.json', '22.05.8', 4, {
        'n3': (('emu',), 1, 1, 1, 1, 1024, 'IDLE', [])}),
    ('sinfo-23.02.5.json', '23.02.5', 1, {
        'localhost': (('debug',), 1, 1, 1, 1, 1, 'ALLOCATED', [])}),
    ('scontrol-show-node-23.11.1.json', '23.11.1', 12, {
        'dtn1': ((), 1, 1, 1, 1, 1, 'DOWN+NOT_RESPONDING', []),
        'n0161': (('interactivegpu', 'preempt'), 48, 2, 24, 1, 504433, 'ALLOCATED',
                  [('1g.10gb', 21)]),
        'n0164': (('gpu', 'gpulong', 'preempt'), 48, 2, 24, 1, 504433, 'IDLE+DRAIN',
                  [('nvidia_a100_80gb_pcie', 3)]),
        'n1000': (('kerngpu',), 112, 2, 56, 1, 2052811, 'MIXED',
                  [('nvidia_h100_80gb_hbm3', 8)])}),
    ('scontrol-show-node-24.11.5.json', '24.11.5', 6, {
        'cn4': (('standard',), 64, 2, 32, 1, 131072, 'IDLE+DRAIN', []),
        'ia1': (('ia',), 32, 2, 16, 1, 524288, 'IDLE+COMPLETING', [('h100', 2), ('h200', 4)])}),
    ('sinfo-24.11-constructed.json', '24.11.5', 6, {
        'cn3': (('standard',), 64, 2, 32, 1, 131072, 'DOWN', []),
        'ia2': (('ia',), 32, 2, 16, 1, 524288, 'IDLE', [('h100', 2), ('h200', 4)])}),
    ('scontrol-show-node-25.05.4.json', '25.05.4', 6, {
        'gpu1': (('gpu',), 32, 2, 16, 1, 524288, 'IDLE+COMPLETING', [('h100', 4)])}),
]


def _read_nodes(path):
    text = path.read_text()
    return slurm.nodes_from_json(text, path.name) if path.suffix == '.json' \
        else slurm.nodes_from_scontrol(text, path.name)


@pytest.mark.parametrize('name,release,count,expect', RECORDINGS,
                         ids=[r[0] for r in RECORDINGS])
def test_every_recorded_generation_reads(name, release, count, expect):
    path = SLURM / name
    nodes = {n.name: n for n in _read_nodes(path)}
    assert len(nodes) == count
    if release:
        import json
        meta = json.loads(path.read_text()).get('meta') or {}       # the recording's release
        assert (meta.get('Slurm') or meta.get('slurm') or {}).get('release') == release
    for node, (parts, cpus, sockets, cores, threads, mib, state, gpus) in expect.items():
        got = nodes[node]
        assert (got.partitions, got.cpus, got.sockets, got.cores_per_socket,
                got.threads_per_core, got.real_memory_mib, got.state) == \
            (parts, cpus, sockets, cores, threads, mib, state), node
        assert slurm_values.gpus(got.gres) == gpus, node


def test_features_reasons_and_other_gres():
    nodes = {n.name: n for n in _read_nodes(SLURM / 'scontrol-show-node-23.11.1.json')}
    assert nodes['n0164'].features[:3] == ('amd', 'milan', '7413')
    assert 'gpu-80gb' in nodes['n0164'].features
    [twcc] = _read_nodes(SLURM / 'scontrol-show-node-17.11-twcc.txt')
    assert twcc.reason.startswith('node-switch')
    assert slurm_values.parse_gres('gpu:nvidiah100pcie:6,mps:nvidiah100pcie:600') == [
        slurm_values.Gres('gpu', 'nvidiah100pcie', 6),
        slurm_values.Gres('mps', 'nvidiah100pcie', 600)]


@pytest.mark.parametrize('text,gpus', [
    ('gpu:ampere:2', [('ampere', 2)]), ('gpu:m60:8', [('m60', 8)]),
    ('gpu:nvidia:3(S:0-1)', [('nvidia', 3)]), ('gpu:v100:2,gpu:m40:1', [('v100', 2), ('m40', 1)]),
    ('gpu:2', [(None, 2)]), ('gpu_mem:16280,gpu:1', [(None, 1)]),
    ('gpu:tesla:2(S:0),gpu:k80:2(S:1)', [('tesla', 2), ('k80', 2)]),
    ('gpu:1g.10gb:21(S:1)', [('1g.10gb', 21)]), ('gpu', [(None, 1)]), ('(null)', []), ('', []),
    ('gpu:a100:4(S:0-1),gpu:a100:4(S:2-3)', [('a100', 8)]),
    ('gpu:a100:no_consume:2', [('a100', 2)]), ('shard:8,gpu:l4:1', [('l4', 1)])])
def test_gres_strings(text, gpus):
    assert slurm_values.gpus(slurm_values.parse_gres(text)) == gpus


@pytest.mark.parametrize('state,can', [
    ('IDLE', True), ('MIXED', True), ('ALLOCATED', True), ('IDLE+COMPLETING', True),
    ('IDLE+CLOUD', True), ('IDLE+DRAIN', False), ('ALLOCATED+DRAIN', False),
    ('DOWN*+DRAIN', False), ('DOWN', False), ('IDLE+NOT_RESPONDING', False), ('FAIL', False),
    ('MAINT', False), ('IDLE+CLOUD+POWERED_DOWN', False), ('IDLE~', False),
    ('IDLE+POWERED_DOWN', False), ('FUTURE', False), ('IDLE#', False)])
def test_which_states_a_probe_may_use(state, can):
    assert slurm_values.runnable(state)[0] is can
    assert slurm_values.parse_state('idle', ['DRAIN']) == ('IDLE', 'DRAIN')
    assert slurm_values.parse_state('DOWN*') == ('DOWN', 'NOT_RESPONDING')


def test_sinfo_record_that_mixes_nodes_is_refused_with_the_reason():
    import json
    data = json.loads((SLURM / 'sinfo-23.02.5.json').read_text())
    data['sinfo'][0]['cores'] = {'minimum': 8, 'maximum': 16}
    with pytest.raises(slurm_values.SlurmFormatError,
                       match=r'sinfo\[0\] \(localhost\): cores ranges from 8 to 16'):
        slurm.nodes_from_json(json.dumps(data))


def test_gpus_split_groups_and_a_drained_group_is_not_probed():
    nodes = _read_nodes(SLURM / 'scontrol-show-node-23.11.1.json')
    parts = slurm.partitions_from_json((SLURM / 'scontrol-show-partition-23.11.1.json').read_text())
    nodes = slurm.membership(nodes, parts)
    groups = [g for g in slurm_view.group_nodes(nodes, ['gpu'], parts)]
    # same CPUs and memory, told apart by their GPUs
    assert [(g.nodelist, slurm_values.gpus(g.slurm.gres)) for g in groups] == [
        ('n0160', [('nvidia_a100_80gb_pcie', 1)]), ('n[0162-0163]', [('1g.10gb', 21)]),
        ('n0164', [('nvidia_a100_80gb_pcie', 3)])]
    ready, why = groups[1].probe_candidates()
    assert [n.name for n in ready] == ['n0162', 'n0163']     # mixed before allocated
    ready, why = groups[2].probe_candidates()
    assert ready == [] and why == ('no node of n0164 can run a job: n0164 IDLE+DRAIN '
                                    '(Kill task failed)')
    with pytest.raises(ClusterproofError, match='n0164 IDLE\\+DRAIN'):
        discover.probe_command(groups[2])
    cmd = discover.probe_command(groups[1], scratch='/scratch')
    assert '--nodelist=n0162' in cmd and any(c.startswith('--immediate=') for c in cmd)
    # the node runs the clusterproof command: init's probe
    probe = command('init', '--probe', '--scratch', '/scratch')
    assert cmd[-len(probe):] == probe


def test_the_probe_prints_one_line_of_this_nodes_facts(tmp_path):
    """``clusterproof init --probe``, what srun runs on the probed node,
    run here as a whole process: the one line init reads, with the scratch
    directory's file system; given an option of init's own, a refusal."""
    proc = subprocess.run(command('init', '--probe', '--scratch', str(tmp_path)), cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.splitlines()) == 1, proc.stdout
    rep = discover.parse_probe(proc.stdout)
    assert rep['node'] == socket.gethostname().split('.')[0]
    assert rep['lscpu']['argv'] == ['lscpu'] and 'MemTotal:' in rep['meminfo']
    assert rep['scratch']['path'] == str(tmp_path) and rep['scratch']['exists']
    bad = subprocess.run(command('init', '--probe', '--force'), cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert (bad.returncode, bad.stdout) == (2, '')
    assert 'takes only --scratch; leave out --force' in bad.stderr


def test_hidden_partition_and_limits_reach_the_extras():
    text = (SLURM / 'scontrol-show-partition-22.05.8.txt').read_text()
    text = text.replace('Hidden=NO', 'Hidden=YES').replace('MaxNodes=UNLIMITED', 'MaxNodes=2')
    parts = slurm.partitions_from_scontrol(text)
    nodes = slurm.membership([slurm.SlurmNode(n.name, (), n.cpus, n.sockets, n.cores_per_socket,
                                              n.threads_per_core, n.real_memory_mib, n.state)
                              for n in _read_nodes(SLURM / 'sinfo-22.05.8.json')], parts)
    assert {n.partitions for n in nodes} == {('emu',)}    # from the partition's node list
    group = slurm_view.group_nodes(nodes, slurm_partitions=parts)[0]
    assert declare.slurm_extras(group) == {
        'partition': 'emu', 'partition_state': 'UP', 'max_nodes': 2, 'max_time': 'UNLIMITED',
        'hidden': True}


def test_a_partition_that_is_not_up_is_not_probed():
    nodes = _read_nodes(SLURM / 'sinfo-22.05.8.json')
    parts = slurm.partitions_from_scontrol(
        (SLURM / 'scontrol-show-partition-22.05.8.txt').read_text().replace('State=UP',
                                                                            'State=DRAIN'))
    [group, _] = slurm_view.group_nodes(nodes, slurm_partitions=parts)
    assert group.probe_candidates() == ([], 'partition emu is DRAIN: Slurm starts no job there')


def test_cores_per_socket_are_slurms_and_cputot_is_separate():
    """A node Slurm declares with 1 socket of 4 cores but lets jobs use one
    CPU (CPUTot=1): 4 cores are declared, 1 CPU is what Slurm schedules."""
    node = slurm.SlurmNode('pi1', ('general',), cpus=1, sockets=1, cores_per_socket=4,
                           threads_per_core=1, real_memory_mib=4096, state='IDLE')
    [group] = slurm_view.group_nodes([node])
    decl = declare.declare_group('general', group, None, [node], unprobed='drained')
    assert (decl.hardware['sockets'], decl.hardware['cores_per_socket'],
            decl.hardware['threads_per_core'], decl.hardware['slurm_cpus']) == (1, 4, 1, 1)
    # processor: what a job gets (1 CPU), and no layout of 1 CPU that the node has not
    assert decl.processor == {'num_cpus': 1}
    assert any('no socket and core layout' in n for n in decl.notes), decl.notes
    assert hardware.processor_disagreements(decl.processor, decl.hardware) == []
    whole = dict(decl.hardware, slurm_cpus=4)
    assert hardware.processor_from_hardware(whole) == {
        'num_sockets': 1, 'num_cpus_per_core': 1, 'num_cpus_per_socket': 4, 'num_cpus': 4}


#: the NodeName/PartitionName lines of the EXAMPLE in Slurm's slurm.conf(5)
MANPAGE_EXAMPLE = """\
NodeName=DEFAULT CPUs=4 TmpDisk=16384 State=IDLE
NodeName=lx[0001-0002] State=DRAINED
NodeName=lx[0003-8000] RealMemory=2048 Weight=2
NodeName=lx[8001-9999] RealMemory=4096 Weight=6 Feature=video
PartitionName=DEFAULT MaxTime=30 MaxNodes=2
PartitionName=login Nodes=lx[0001-0002] State=DOWN
PartitionName=debug Nodes=lx[0003-0030] State=UP Default=YES
PartitionName=class Nodes=lx[0031-0040] AllowGroups=students
PartitionName=DEFAULT MaxTime=UNLIMITED MaxNodes=4096
PartitionName=batch Nodes=lx[0041-9999]
"""


def test_slurm_conf_node_and_partition_lines():
    nodes, parts = slurm.parse_slurm_conf((SLURM / 'slurm.conf-22.05.8-local').read_text())
    assert [(n['NodeName'], n['CPUs'], n['RealMemory'], n['NodeAddr']) for n in nodes][:2] == [
        ('n1', '2', '2048', '198.18.0.34'), ('n2', '2', '2048', '198.18.0.35')]
    assert len(nodes) == 4 and parts['emu']['Nodes'] == 'n[1-4]'
    nodes, parts = slurm.parse_slurm_conf(MANPAGE_EXAMPLE)
    by_name = {n['NodeName']: n for n in nodes}
    assert len(nodes) == 9999
    assert by_name['lx0001']['State'] == 'DRAINED' and by_name['lx0001']['CPUs'] == '4'
    assert by_name['lx9999']['Feature'] == 'video' and by_name['lx9999']['RealMemory'] == '4096'
    assert (parts['login']['State'], parts['login']['MaxTime']) == ('DOWN', '30')
    assert (parts['batch']['MaxTime'], parts['batch']['MaxNodes']) == ('UNLIMITED', '4096')
    assert 'AllowGroups' in parts['class']


def test_slurm_conf_gives_the_nodes_slurm_reports():
    """The local cluster's slurm.conf read with Slurm's defaults gives the
    nodes its scontrol reported (CPUs=2 alone: 2 sockets of 1 core)."""
    nodes, parts = slurm.nodes_from_slurm_conf(
        (SLURM / 'slurm.conf-22.05.8-local').read_text())
    assert [(n.name, n.partitions, n.cpus, n.sockets, n.cores_per_socket, n.threads_per_core,
             n.real_memory_mib) for n in nodes][:1] == [('n1', ('emu',), 2, 2, 1, 1, 2048)]
    text = slurm.nodes_from_scontrol((SLURM / 'scontrol-show-node-22.05.8.txt').read_text())[0]
    assert (nodes[0].cpus, nodes[0].sockets, nodes[0].cores_per_socket) == \
        (text.cpus, text.sockets, text.cores_per_socket)
    assert parts['emu'].max_time == 'INFINITE' and parts['emu'].default
    nodes, parts = slurm.nodes_from_slurm_conf(MANPAGE_EXAMPLE)
    by_name = {n.name: n for n in nodes}
    assert by_name['lx0001'].state == 'DRAIN' and by_name['lx0001'].partitions == ('login',)
    assert (by_name['lx0003'].cpus, by_name['lx0003'].sockets, by_name['lx0003'].partitions) == \
        (4, 4, ('debug',))
    assert by_name['lx9999'].features == ('video',) and by_name['lx9999'].partitions == ('batch',)
    assert parts['batch'].max_nodes == 4096 and parts['login'].state == 'DOWN'


# ------------------------------------- init as a black box on recorded output

#: cluster -> {file init reads: recording}
CLUSTERS = {
    '17.11': {'scontrol-show-node.txt': 'scontrol-show-node-17.11-twcc.txt'},
    '20.11': {'scontrol-show-node.txt': 'scontrol-show-node-20.11.8.txt'},
    '21.08': {'sinfo.json': 'sinfo-21.08.5.json'},
    '22.05': {'sinfo.json': 'sinfo-22.05.8.json',
              'scontrol-show-partition.txt': 'scontrol-show-partition-22.05.8.txt'},
    '23.02': {'sinfo.json': 'sinfo-23.02.5.json'},
    '23.11': {'scontrol-show-node.json': 'scontrol-show-node-23.11.1.json',
              'scontrol-show-partition.json': 'scontrol-show-partition-23.11.1.json'},
    '24.11': {'sinfo.json': 'sinfo-24.11-constructed.json',
              'scontrol-show-partition.json': 'scontrol-show-partition-24.11.5.json'},
    '25.05': {'scontrol-show-node.json': 'scontrol-show-node-25.05.4.json',
              'scontrol-show-partition.json': 'scontrol-show-partition-25.05.4.json'},
}

#: cluster -> {ReFrame partition: (nodes, devices or None, slurm extras subset)}
WRITTEN = {
    '17.11': {'SlurmDefault': ('gn0101.twcc.ai', [{'type': 'gpu', 'num_devices': 8}],
                               {'unavailable': {'gn0101.twcc.ai': 'IDLE+DRAIN'}})},
    '20.11': {'pall': ('binfservas07', None, {})},
    '21.08': {'hw': ('cs[2-5].example.company.com', None,
                     {'unavailable': {'cs5.example.company.com': 'DOWN'}})},
    '22.05': {'emu-g1': ('n[1-2]', None, {'partition_state': 'UP', 'max_time': 'UNLIMITED'}),
              'emu-g2': ('n[3-4]', None, {'max_nodes': None})},
    '23.02': {'debug': ('localhost', None, {'partition_state': 'UP', 'max_nodes': None,
                                            'max_time': 'UNLIMITED'})},
    '23.11': {'gpu-g3': ('n0164', [{'type': 'gpu', 'arch': 'nvidia_a100_80gb_pcie',
                                    'num_devices': 3}],
                         {'unavailable': {'n0164': 'IDLE+DRAIN'}, 'max_time': '1-00:00:00'}),
              'preempt-g1': ('n0160', [{'type': 'gpu', 'arch': 'nvidia_a100_80gb_pcie',
                                        'num_devices': 1}],
                             {'max_nodes': 48, 'features': ['7413', 'a100', 'amd', 'gpu-80gb',
                                                            'milan', 'no-mig']})},
    '24.11': {'standard': ('cn[1-4]', None,
                           {'max_time': '02:00:00',
                            'unavailable': {'cn3': 'DOWN', 'cn4': 'IDLE+DRAIN'}}),
              'ia': ('ia[1-2]', [{'type': 'gpu', 'arch': 'h100', 'num_devices': 2},
                                 {'type': 'gpu', 'arch': 'h200', 'num_devices': 4}], {})},
    '25.05': {'normal': ('cn[1-4]', None, {}),
              'gpu': ('gpu[1-2]', [{'type': 'gpu', 'arch': 'h100', 'num_devices': 4}], {})},
}


def _load_system(text, where):
    scope = {}
    exec(compile(text, where, 'exec'), scope)
    return scope['system']


def _recorded_dir(tmp_path, cluster):
    rec = tmp_path / cluster.replace('.', '')
    rec.mkdir()
    for dst, src in CLUSTERS[cluster].items():
        shutil.copy(SLURM / src, rec / dst)
    return rec


@pytest.mark.parametrize('cluster', list(CLUSTERS))
def test_recorded_cluster_groups_and_written_file(cluster, tmp_path):
    """Slurm's view of each recorded cluster read as init reads it
    (``--slurm-output``), grouped, declared without a probe, rendered: the
    file loads, with the GPUs, Slurm's topology and the partition limits."""
    rec = _recorded_dir(tmp_path, cluster)
    warned = []
    nodes, parts, how = slurm_view.read_slurm(slurm_view.recorded_runner(str(rec)), warned.append)
    if 'sinfo.json' not in CLUSTERS[cluster]:
        assert how.startswith('scontrol -o show node')
        assert any('reading scontrol -o show node instead' in w for w in warned)
    groups = slurm_view.group_nodes(nodes, slurm_partitions=parts)
    decls = [declare.declare_group(n, g, None, nodes, unprobed='recorded output')
             for n, g in zip(declare.partition_names(groups), groups)]
    text = discover.render_system(f'rec{cluster.replace(".", "")}', decls, ['^x$'], how,
                                  'now', 'login')
    system = _load_system(text, cluster)
    written = {p['name']: p for p in system['partitions']}
    assert len(written) == len(groups)
    for pname, (nodelist, devices, extra) in WRITTEN[cluster].items():
        part = written[pname]
        assert part['descr'].endswith(f': {nodelist}'), part['descr']
        assert part.get('devices') == devices
        assert extra.items() <= part['extras']['slurm'].items(), part['extras']['slurm']
    for part, group in zip(written.values(), groups):
        down = part['extras']['slurm'].get('unavailable', {})
        assert part['extras']['storage']['client_nodes'] == \
            (len(group.nodes) - len(down) or len(group.nodes))
        hw = part['extras']['hardware']
        assert (hw['sockets'], hw['cores_per_socket'], hw['threads_per_core'],
                hw['slurm_cpus']) == (group.slurm.sockets, group.slurm.cores_per_socket,
                                      group.slurm.threads_per_core, group.slurm.cpus)
        assert 'memory_gib' not in hw       # only a probe says it
    assert "# 'memory_gib': ...,   # not discovered: not probed: recorded output" in text


def test_a_slurm_that_refuses_all_is_asked_without_it(tmp_path):
    recorded = slurm_view.recorded_runner(str(_recorded_dir(tmp_path, '22.05')))
    asked = []

    def no_all(argv):
        asked.append(' '.join(argv))
        if '--all' in argv:
            return {'argv': argv, 'rc': 1, 'stdout': '',
                    'stderr': f"{argv[0]}: unrecognized option '--all'"}
        full = {' '.join(c).replace(' --all', ''): c for c in (
            slurm_view.PARTITION_COMMAND, slurm_view.SINFO_COMMAND, slurm_view.NODE_COMMAND)}
        return recorded(full[' '.join(argv)])
    nodes, parts, how = slurm_view.read_slurm(no_all, warn=pytest.fail)
    assert _summary(nodes) == EXPECTED and list(parts) == ['emu']
    assert how == 'sinfo --json, scontrol -o show partition'
    assert asked == ['scontrol --all -o show partition', 'scontrol -o show partition',
                     'sinfo --all --json', 'sinfo --json']


@pytest.mark.slow
def test_init_as_a_black_box_on_recorded_output(tmp_path):
    """``clusterproof init --slurm-output DIR`` on the 17.11 recording (no
    JSON: it says so and reads scontrol; its only node is drained)."""
    rec = _recorded_dir(tmp_path, '17.11')
    name = 'rec1711'
    env, systems, references = _site_dirs(tmp_path)
    target, refs = systems / f'{name}.py', references / f'{name}.yaml'
    proc = _cp('init', '--name', name, '--slurm-output', str(rec), env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f'init: wrote {target}' in proc.stdout and refs.is_file()
    assert 'sinfo --json failed (no sinfo.json in' in proc.stderr
    assert "SlurmDefault gn0101.twcc.ai: declared from Slurm's view alone" in proc.stderr
    [part] = _load_system(target.read_text(), str(target))['partitions']
    assert part['devices'] == [{'type': 'gpu', 'num_devices': 8}]
    assert part['processor'] == {'num_sockets': 2, 'num_cpus_per_core': 1,
                                 'num_cpus_per_socket': 18, 'num_cpus': 36}
    missing = _cp('init', '--name', name, '--slurm-output', str(tmp_path / 'none'),
                  '--force', env=env)
    assert missing.returncode == 2 and 'no such directory' in missing.stderr
    assert not (REPO / 'site_config' / 'systems' / f'{name}.py').exists()


def _site_dirs(tmp_path):
    """An environment whose system files and references go to directories
    of the test's own (``CLUSTERPROOF_SYSTEMS``, ``CLUSTERPROOF_REFERENCES``),
    never into the repository."""
    systems, references = tmp_path / 'site-systems', tmp_path / 'site-references'
    systems.mkdir()
    references.mkdir()
    return (dict(os.environ, CLUSTERPROOF_SYSTEMS=str(systems),
                 CLUSTERPROOF_REFERENCES=str(references)), systems, references)


def test_a_sites_own_system_files_are_assembled_in_order(tmp_path):
    """``CLUSTERPROOF_SYSTEMS``: the site's files beside the shipped ones,
    in the order ReFrame tries them (specific shipped systems, the others by
    name, ``local`` last); one name twice, or no such directory, refused
    naming what is wrong."""
    env, systems, _references = _site_dirs(tmp_path)
    (systems / 'zeta.py').write_text('system = None\n')
    (systems / 'alpha.py').write_text('system = None\n')
    (systems / '_helper.py').write_text('')
    code = ('from clusterproof import paths; '
            'print(" ".join(p.stem for p in paths.system_files())); '
            'print(paths.system_file("alpha")); print(paths.system_file("pmserver-mm"))')
    proc = subprocess.run([str(VENV_BIN / 'python'), '-c', code], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    order, alpha, pmserver = proc.stdout.splitlines()
    assert order == 'pmserver pixstor minerva emu alpha zeta local'
    assert alpha == str((systems / 'alpha.py').resolve())
    assert pmserver == str(REPO / 'site_config' / 'systems' / 'pmserver.py')
    (systems / 'emu.py').write_text('system = None\n')
    twice = _cp('validate', env=env)
    assert twice.returncode == 2
    assert (f"system emu is defined twice: {REPO / 'site_config' / 'systems' / 'emu.py'} "
            f"and {(systems / 'emu.py').resolve()}; keep one") in twice.stderr
    none = _cp('validate', env=dict(env, CLUSTERPROOF_SYSTEMS=str(tmp_path / 'nowhere')))
    assert none.returncode == 2
    assert f"CLUSTERPROOF_SYSTEMS={tmp_path / 'nowhere'}: no such directory" in none.stderr


# ------------------------------------------------------------------ for real

def _cp(*args, env=None):
    return subprocess.run([str(VENV_BIN / 'clusterproof'), *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)


def _scontrol(env, *args):
    proc = subprocess.run(['scontrol', *args], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


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
    name = 'inittest'
    site_env, systems, references = _site_dirs(tmp_path)
    system_file, refs = systems / f'{name}.py', references / f'{name}.yaml'
    scratch = tmp_path / 'scratch'
    scratch.mkdir()
    with emu_cluster_exclusive():
        spec = lc.load_spec(EMU_INSTANCE, lc.Instance(EMU_INSTANCE).default_run_dir())
        rd = ['--instance', str(EMU_INSTANCE), '--run-dir', str(spec.run_dir)]
        env = dict(site_env, **emu_cluster)
        try:
            _restart(rd, env, 'n[1-2]:cpus=2,mem=2048;n[3-4]:cpus=1,mem=1024')
            # n1 drained: init probes n2 for n[1-2], never waits on n1
            _scontrol(env, 'update', 'nodename=n1', 'state=drain', 'reason=init test')
            try:
                dry = _cp('init', '--name', name, '--scratch', str(scratch), '--dry-run',
                          env=env)
            finally:
                _scontrol(env, 'update', 'nodename=n1', 'state=resume')
            assert dry.returncode == 0, dry.stdout + dry.stderr
            assert f'+++ {system_file}' in dry.stdout and not system_file.exists()
            assert 'emu: n[1-2] (2 CPUs, 2048 MiB in Slurm): probing n2' in dry.stdout
            assert "+                # probed: n2" in dry.stdout
            # both groups' nodes probed in one parallel round, bounded
            assert re.search(r'^init: probed n\[2-3\] \(2 nodes, at most 8 at once\) in [0-9.]+ s$',
                             dry.stdout, re.M), dry.stdout
            assert "'unavailable': {'n1': 'IDLE+DRAIN'}" in dry.stdout
            assert "+                    'client_nodes': 1," in dry.stdout
            proc = _cp('init', '--name', name, '--scratch', str(scratch), env=env)
            assert proc.returncode == 0, proc.stdout + proc.stderr
            text = system_file.read_text()
            assert 'from Slurm (sinfo --json, scontrol -o show partition)' in text
            assert "'name': 'emu-g1'" in text and "'name': 'emu-g2'" in text
            assert "'slurm_cpus': 2," in text and "'slurm_memory_mib': 1024," in text
            assert "# 'memory_mts': ...,   # not discovered:" in text
            assert "'emulated': True" in text
            again = _cp('init', '--name', name, env=env)
            assert again.returncode == 2 and 'exists; --force overwrites it' in again.stderr
            val = _cp('validate', '--system', name, env=env)
            assert val.returncode == 0, val.stdout + val.stderr
            assert (f'ok  {name}:emu-g1' in val.stdout
                    and f'ok  references/{name}.yaml' in val.stdout)

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
            _cp('cluster', 'down', '--force', *rd, env=env)
            back = _cp('cluster', 'up', *rd, '--nodes', str(spec.nodes), '--cpus-per-node',
                       str(spec.cpus), '--mem-per-node', str(spec.mem), env=env)
            assert back.returncode == 0, back.stdout + back.stderr
