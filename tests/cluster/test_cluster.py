"""The local Slurm cluster: pure parts (addresses, ports, host lists,
configuration rendering) without a cluster; then, where root and network
namespaces exist, a real 4-node cluster (the session's ``emu_cluster``):
srun, sacct, MPI with ``srun --mpi=pmix`` and ``mpirun`` in ``sbatch`` and
``salloc``, ReFrame on both ``emu`` partitions, and the life cycle
(``up`` twice, a port in use, a failure half-way, ``down`` leaving nothing)."""

import ipaddress
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from clusterproof import ClusterproofError
from clusterproof import cli
from clusterproof import cluster as lc
from clusterproof.cluster import daemons, faults
from clusterproof.parsers.slurm import parse_scontrol_record
from conftest import (EMU_INSTANCE, VENV_BIN, WAIT_S, emu_cluster_exclusive, need_netns, need_root,
                      need_repo_open_to_others, run_reframe, wait_for)
from cluster_helpers import leftovers, session_cluster_replaced

CHECKS = Path(__file__).resolve().parents[1] / 'checks'


# ------------------------------------------------------------------ pure parts

def test_addresses_stay_in_the_benchmarking_range_and_instances_do_not_overlap():
    benchmarking = ipaddress.ip_network('198.18.0.0/15')
    assert lc.NETWORK == benchmarking
    seen = set()
    for k in lc.INSTANCES:
        inst = lc.Instance(k)
        for nodes in (lc.SMALL_MAX_NODES, lc.MAX_NODES):
            net = lc.Network(inst, nodes)
            addrs = [net.bridge_addr] + [net.node_addr(i) for i in range(1, nodes + 1)]
            assert len(set(addrs)) == nodes + 1
            for a in addrs:
                ip = ipaddress.ip_address(a)
                assert ip in benchmarking and ip in net.subnet
                assert ip not in (net.subnet.network_address, net.subnet.broadcast_address)
            assert not seen & set(addrs)
            seen |= set(addrs)
    # up to 29 nodes: where instances 0..7 always were (198.18.0.<32K>/27)
    small = lc.Network(lc.Instance(0), 4)
    assert (small.bridge_addr, small.node_addr(1), str(small.subnet)) == \
        ('198.18.0.1', '198.18.0.2', '198.18.0.0/27')
    small = lc.Network(lc.Instance(7), lc.SMALL_MAX_NODES)
    assert (small.bridge_addr, small.node_addr(4)) == ('198.18.0.225', '198.18.0.229')
    assert str(lc.Network(lc.Instance(3), 16).subnet) == '198.18.0.96/27'
    # more: a /21 of its own per instance, outside 198.18.0.0/24
    large = lc.Network(lc.Instance(0), 30)
    assert (str(large.subnet), large.bridge_addr, large.node_addr(30)) == \
        ('198.19.0.0/21', '198.19.0.1', '198.19.0.31')
    large = lc.Network(lc.Instance(7), lc.MAX_NODES)
    assert (str(large.subnet), large.node_addr(lc.MAX_NODES)) == ('198.19.56.0/21', '198.19.60.1')
    assert lc.MAX_NODES == 1024


def test_a_large_cluster_spreads_its_nodes_over_bridges_of_at_most_512():
    net = lc.Network(lc.Instance(2), 1024)
    assert net.bridges == ['cpbr2', 'cpbr2b2']
    assert [net.bridge_of(i) for i in (1, 512, 513, 1024)] == \
        ['cpbr2', 'cpbr2', 'cpbr2b2', 'cpbr2b2']
    assert net.trunk(2) == ('cp2t2', 'cp2t2p')
    assert lc.Network(lc.Instance(2), 512).bridges == ['cpbr2']
    assert lc.Network(lc.Instance(2), 513).bridges == ['cpbr2', 'cpbr2b2']
    # a Linux bridge takes at most 1,023 ports (BR_MAX_PORTS 1024, port 0 reserved): tried here
    assert lc.NODES_PER_BRIDGE + 1 <= 1023


def test_each_instance_owns_only_its_own_links_and_namespaces():
    inst = lc.Instance(0)
    for name in ('cpbr0', 'cpbr0b2', 'cp0n1h', 'cp0n1024h', 'cp0t2', 'cp0t2p'):
        assert inst.owns_link(name), name
    for name in ('cpbr1', 'cpbr1b2', 'cp1n1h', 'cp7t2', 'eth0', 'cpbr', 'lo'):
        assert not inst.owns_link(name), name
    assert inst.owns_netns('cp0n12') and not inst.owns_netns('cp1n12')
    assert len({lc.Instance(k).link_group for k in lc.INSTANCES}) == len(lc.INSTANCES)
    assert all(lc.Instance(k).link_group != 0 for k in lc.INSTANCES)     # 0: every link's default


def test_ports_and_names_are_distinct_per_instance():
    ports = [lc.Instance(k).port(d) for k in lc.INSTANCES for d in lc.PORT_OFFSETS]
    assert len(ports) == len(set(ports))
    assert all(1024 < p < 32768 for p in ports)      # below Linux's ephemeral range
    names = ({lc.Instance(k).bridge for k in lc.INSTANCES}
             | {lc.Instance(k).netns(1) for k in lc.INSTANCES})
    assert len(names) == 2 * len(lc.INSTANCES)
    assert lc.Instance(2).netns(3) == 'cp2n3' and lc.Instance(2).bridge == 'cpbr2'
    # Linux limits interface names to 15 characters
    for k in lc.INSTANCES:
        net = lc.Network(lc.Instance(k), lc.MAX_NODES)
        assert all(len(name) <= 15
                   for name in [net.inst.veth(lc.MAX_NODES), *net.bridges, *net.trunk(9)])


def test_out_of_range_values_are_refused_with_the_value():
    with pytest.raises(ClusterproofError, match='instance 8'):
        lc.Instance(8)
    with pytest.raises(ClusterproofError, match='n30'):
        lc.Network(lc.Instance(0), 29).node_addr(30)
    with pytest.raises(ClusterproofError, match='--nodes 0'):
        lc.Spec(nodes=0)
    with pytest.raises(ClusterproofError, match='--nodes 1025: use 1..1024'):
        lc.Spec(nodes=1025)
    with pytest.raises(ClusterproofError, match='--mem-per-node 100'):
        lc.Spec(cpus=2, mem=100)


def test_hostlist():
    assert lc.hostlist(1) == 'n1'
    assert lc.hostlist(4) == 'n[1-4]'
    assert lc.node_names(3) == ['n1', 'n2', 'n3']


def test_run_dir_choice(monkeypatch, tmp_path):
    monkeypatch.delenv('CLUSTERPROOF_CLUSTER_DIR', raising=False)
    assert lc.run_dir_for(5) == Path('/tmp/clusterproof-cluster5')
    monkeypatch.setenv('CLUSTERPROOF_CLUSTER_DIR', str(tmp_path / 'env'))
    assert lc.run_dir_for(5) == tmp_path / 'env'
    assert lc.run_dir_for(5, tmp_path / 'opt') == tmp_path / 'opt'


def test_rendered_configuration(tmp_path):
    spec = lc.Spec(instance=3, nodes=4, cpus=2, mem=2048, run_dir=tmp_path)
    texts = lc.render_all(spec, 'ctl', 'secret')
    conf = texts['slurm.conf']
    assert '${' not in ''.join(texts.values())
    assert 'ClusterName=cp3' in conf
    assert 'SlurmctldHost=ctl(198.18.0.97)' in conf
    assert f'SlurmctldPort={lc.Instance(3).port("slurmctld")}' in conf
    assert re.findall(r'^NodeName=n.*', conf, re.M) == \
        ['NodeName=n[1-4] NodeAddr=198.18.0.[98-101]']
    # up to 29 nodes: a dead node is down within 20 s, and per-task usage is gathered
    assert (re.search(r'^SlurmdTimeout=20$', conf, re.M)
            and re.search(r'^MessageTimeout=10$', conf, re.M))
    assert ('ProctrackType=proctrack/linuxproc' in conf
            and 'JobAcctGatherType=jobacct_gather/linux' in conf)
    assert re.search(r'^PartitionName=emu Nodes=n\[1-4\] Default=YES', conf, re.M)
    assert f'TmpFS={tmp_path}/tmp/%n' in conf
    assert 'ReturnToService=2' in conf
    assert 'DefMemPerCPU=1024' in conf
    assert f'AccountingStoragePass={tmp_path}/munge/munge.socket.2' in conf
    assert f'AuthInfo=socket={tmp_path}/munge/munge.socket.2' in conf
    assert '/etc/slurm' not in conf
    dbd = texts['slurmdbd.conf']
    assert f'StoragePort={lc.Instance(3).port("mariadb")}' in dbd and 'StoragePass=secret' in dbd
    assert f'DbdPort={lc.Instance(3).port("slurmdbd")}' in dbd
    assert 'bind-address=127.0.0.1' in texts['my.cnf']
    assert f'datadir={tmp_path}/db' in texts['my.cnf']
    assert texts['hosts'].splitlines()[2:] == [f'198.18.0.{98 + i} n{i + 1}' for i in range(4)]
    # every PMIx fence a ring: Slurm 22.05's tree fence ends on each node alone in a step on
    # fewer nodes than TreeWidth, and ranks crashed in MPI_Init (slurm/local-cluster/mpi.conf.in)
    assert re.search(r'^PMIxCollFence=ring$', texts['mpi.conf'], re.M)


HETERO = 'n[1-8]:cpus=2,mem=2048;n[9-16]:cpus=1,mem=1024'


def test_a_node_spec_gives_each_node_its_cpus_and_memory(tmp_path):
    spec = lc.Spec(instance=3, node_spec=HETERO, run_dir=tmp_path)
    assert spec.nodes == 16
    assert spec.hardware == [(2, 2048)] * 8 + [(1, 1024)] * 8
    assert lc.describe(spec) == 'n[1-8] x 2 CPUs, 2048 MiB; n[9-16] x 1 CPU, 1024 MiB'
    conf = lc.render_all(spec, 'ctl', 'secret')['slurm.conf']
    assert 'NodeName=DEFAULT CPUs=2 RealMemory=2048' in conf
    assert re.findall(r'^NodeName=n.*', conf, re.M) == [
        'NodeName=n[1-8] NodeAddr=198.18.0.[98-105]',
        'NodeName=n[9-16] NodeAddr=198.18.0.[106-113] CPUs=1 RealMemory=1024']
    assert re.search(r'^PartitionName=emu Nodes=n\[1-16\] ', conf, re.M)
    assert 'DefMemPerCPU=1024' in conf                     # fits the smallest node
    assert lc.env_dict(spec)['CLUSTERPROOF_EMU_CPUS'] == '1'
    # a key left out takes the per-node default; the spec survives cluster.json
    spec = lc.Spec(instance=3, cpus=4, mem=4096, node_spec='n[1-2]:mem=1024; n3:cpus=1',
                   run_dir=tmp_path)
    assert spec.hardware == [(4, 1024), (4, 1024), (1, 4096)]
    lc.Layout(tmp_path).marker.write_text(json.dumps(spec.to_dict()))
    assert lc.load_spec(3, tmp_path) == spec


@pytest.mark.parametrize('bad, words', [
    ('', 'is empty'),
    ('n[1-4]', "part 'n\\[1-4\\]': write NODES:cpus=C,mem=MiB"),
    ('n[1-4:cpus=2', "part 'n\\[1-4:cpus=2': 'n\\[1-4' is not a node set"),
    ('n[1-4]:cpu=2', "'cpu=2' is not one of cpus=N, mem=N"),
    ('n[1-4]:cpus=two', "cpus='two' is not a whole number of CPUs"),
    ('n[1-4]:mem=0', "mem='0' is not a whole number of MiB"),
    ('n[1-4]:cpus=4,mem=128', 'mem=128 MiB is less than 64 MiB per CPU'),
    ('n[1-4]:cpus=2;n4:cpus=1', "part 'n4:cpus=1': node n4 is already in part 'n\\[1-4\\]:cpus=2'"),
    ('n[1-2]:cpus=2;n[4-5]:cpus=1', 'leaves out n3: name every node n1..n5 once'),
    ('gpu[1-2]:cpus=2', "node 'gpu1': the local cluster's nodes are n1..n1024"),
    ('n[1-1025]:cpus=1', '1025 nodes; an instance has at most 1024'),
])
def test_a_bad_node_spec_names_the_part_at_fault(bad, words):
    with pytest.raises(ClusterproofError, match=words):
        lc.parse_node_spec(bad)


def test_a_large_cluster_renders_node_ranges_its_munge_groups_and_patient_timeouts(tmp_path):
    spec = lc.Spec(instance=0, nodes=1024, run_dir=tmp_path)
    texts = lc.render_all(spec, 'ctl', 'secret')
    conf = texts['slurm.conf']
    # one NodeName line per /24: each Slurm command parses slurm.conf, and
    # 1,024 lines cost each of them 30 ms of CPU
    assert re.findall(r'^NodeName=n.*', conf, re.M) == [
        'NodeName=n[1-254] NodeAddr=198.19.0.[2-255]',
        'NodeName=n[255-510] NodeAddr=198.19.1.[0-255]',
        'NodeName=n[511-766] NodeAddr=198.19.2.[0-255]',
        'NodeName=n[767-1022] NodeAddr=198.19.3.[0-255]',
        'NodeName=n[1023-1024] NodeAddr=198.19.4.[0-1]']
    assert 'SlurmctldHost=ctl(198.19.0.1)' in conf and 'AccountingStorageHost=198.19.0.1' in conf
    assert re.search(r'^PartitionName=emu Nodes=n\[1-1024\] ', conf, re.M)
    assert (re.search(r'^SlurmdTimeout=300$', conf, re.M)
            and re.search(r'^MessageTimeout=60$', conf, re.M))
    assert ('ProctrackType=proctrack/pgid' in conf
            and 'JobAcctGatherType=jobacct_gather/none' in conf)
    hosts = texts['hosts'].splitlines()
    assert hosts[1] == '198.19.0.1 ctl' and hosts[-1] == '198.19.4.1 n1024' and len(hosts) == 1026
    # a munged per 128 nodes, its socket directory mounted where slurm.conf names the socket
    assert spec.munge_groups[0] == (1, 1, 128) and spec.munge_groups[-1] == (8, 897, 1024)
    assert [spec.munge_group_of(i) for i in (1, 128, 129, 1024)] == [1, 1, 2, 8]
    argv = lc.Cluster(spec, log=lambda text: None).slurmd_argv(200)
    assert argv[:2] == ['nsenter', '--net=/run/netns/cp0n200']
    assert argv[-1].startswith(f'mount --bind {tmp_path}/etc/hosts /etc/hosts && '
                               f'mount --bind {tmp_path}/munge-g2 {tmp_path}/munge && '
                               'hostname n200 && ')
    # a node spec with groups still gives ranges, broken where the hardware changes
    spec = lc.Spec(instance=0, node_spec='n[1-100]:cpus=2,mem=2048;n[101-300]:cpus=1,mem=1024',
                   run_dir=tmp_path)
    assert re.findall(r'^NodeName=n.*', lc.render_all(spec, 'ctl', 'x')['slurm.conf'], re.M) == [
        'NodeName=n[1-100] NodeAddr=198.19.0.[2-101]',
        'NodeName=n[101-254] NodeAddr=198.19.0.[102-255] CPUs=1 RealMemory=1024',
        'NodeName=n[255-300] NodeAddr=198.19.1.[0-45] CPUs=1 RealMemory=1024']
    # a small cluster: the controller's munged for all, nothing mounted over it
    small = lc.Spec(instance=0, nodes=29, run_dir=tmp_path)
    assert small.munge_groups == [] and 'munge' not in lc.Cluster(small).slurmd_argv(3)[-1]


def test_node_states_are_folded_for_reading():
    states = {f'n{i}': 'idle' for i in range(1, 1025)}
    states.update({'n7': 'down*', 'n9': 'down*', 'n1000': 'drained'})
    assert lc.summary(states) == 'n[1-6,8,10-999,1001-1024] idle, n[7,9] down*, n1000 drained'
    assert lc.summary({}) == ''
    spec = lc.Spec(instance=0, nodes=1024)
    problems = lc.Cluster(spec).problems(states, strays=[])
    assert problems == ['n[7,9] are down*', 'n1000 is drained']


def test_the_limits_a_large_cluster_needs_grow_with_it():
    from clusterproof.cluster import limits
    small, large = limits.required(4), limits.required(1024)
    # a fresh Linux allows 1,024 neighbour entries in all namespaces together
    assert small[limits.NEIGH / 'gc_thresh3'] <= 1024 < large[limits.NEIGH / 'gc_thresh3']
    thresh = [large[limits.NEIGH / f'gc_thresh{i}'] for i in (1, 2, 3)]
    assert thresh == sorted(thresh) and len(set(thresh)) == 3
    # a fresh Linux queues 1,000 packets per processor; a broadcast makes one per node
    assert small[limits.BACKLOG] <= 1000 < large[limits.BACKLOG]
    with pytest.raises(ClusterproofError, match=r'1000000 nodes need about \d+ MiB of memory'):
        limits.prepare_host(1_000_000)


def test_a_template_with_an_unknown_placeholder_names_file_and_placeholder(tmp_path):
    (tmp_path / 'x.conf.in').write_text('A=${nope}\n')
    with pytest.raises(ClusterproofError, match=r'x\.conf\.in: placeholder \$\{nope\}'):
        lc.render('x.conf.in', {}, templates=tmp_path)


def test_env_lines_and_a_run_dir_of_another_instance(tmp_path):
    spec = lc.Spec(instance=1, nodes=3, cpus=1, mem=512, run_dir=tmp_path)
    assert lc.env_dict(spec) == {'SLURM_CONF': f'{tmp_path}/etc/slurm.conf',
                                 'CLUSTERPROOF_EMU_NODES': '3', 'CLUSTERPROOF_EMU_CPUS': '1'}
    lc.Layout(tmp_path).marker.write_text(json.dumps(spec.to_dict()))
    assert lc.load_spec(1, tmp_path) == spec
    with pytest.raises(ClusterproofError, match='holds instance 1, not 2'):
        lc.load_spec(2, tmp_path)


def test_a_slurmd_starts_with_sigpipe_ignored_as_systemd_starts_it(tmp_path):
    """slurmd 22.05 writes to munged before it blocks SIGPIPE: a connection
    munged has closed (2 s without the request, on a loaded machine) must
    fail that write, not kill the start (exit -13, issue #29)."""
    script = lc.Cluster(lc.Spec(instance=0, nodes=4, run_dir=tmp_path)).slurmd_argv(2)[-1]
    assert f'hostname n2 && {daemons.IGNORE_SIGPIPE}exec taskset -c ' in script
    # what the snippet does to the program exec'd after it: a write to a
    # closed pipe fails (EPIPE) instead of killing it; without it, SIGPIPE kills

    def write_to_a_closed_pipe(prefix):
        proc = subprocess.Popen(['sh', '-c', f'{prefix}exec yes'], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        proc.stdout.readline()
        proc.stdout.close()
        err = proc.stderr.read().decode()
        return proc.wait(), err
    assert write_to_a_closed_pipe('') == (-13, '')
    status, err = write_to_a_closed_pipe(daemons.IGNORE_SIGPIPE)
    assert status == 1 and 'Broken pipe' in err


class _Starts(lc.Cluster):
    """A cluster whose slurmd starts run ``argv`` (a real program) outside
    any node namespace: the start path without a cluster."""

    def __init__(self, spec, argv, lines):
        super().__init__(spec, log=lines.append, progress=lines.append)
        self.argv = argv

    def slurmd_argv(self, i):
        return self.argv


@pytest.mark.skipif(not shutil.which('slurmd'), reason='needs slurmd (slurm-wlm)')
def test_a_slurmd_that_fails_to_start_is_started_once_more_then_named_with_its_status(tmp_path):
    spec = lc.Spec(instance=0, nodes=4, run_dir=tmp_path / 'rd')
    lay = lc.Layout(spec.run_dir)
    lay.log.mkdir(parents=True)
    # a real slurmd on an empty slurm.conf: exit status 1 at once, its log not written
    (tmp_path / 'empty.conf').write_text('')
    lines = []
    with pytest.raises(ClusterproofError) as err:
        _Starts(spec, ['slurmd', '-f', str(tmp_path / 'empty.conf')], lines).start_slurmd(3)
    assert str(err.value) == (
        'slurmd of n3 failed to start, twice: exit status 1, saying: slurmd: fatal: Unable to '
        f'process configuration file; {lay.log}/slurmd-n3.log is empty or missing')
    assert lines == ['  slurmd of n3 failed to start (exit status 1, saying: slurmd: fatal: '
                     'Unable to process configuration file); starting it once more']
    # a start killed by SIGPIPE after its log's last line, as under load: named as such
    log = lay.log / 'slurmd-n2.log'
    killed = ['sh', '-c', 'echo "[t] CPU frequency setting not configured for this node" '
                          f'>> {log}; kill -PIPE $$']
    lines = []
    with pytest.raises(ClusterproofError) as err:
        _Starts(spec, killed, lines).start_slurmd(2)
    assert str(err.value) == ('slurmd of n2 failed to start, twice: killed by SIGPIPE (exit -13); '
                              f'last line of {log}: [t] CPU frequency setting not configured '
                              'for this node')
    assert len(lines) == 1 and len(log.read_text().splitlines()) == 2
    # a start that fails once and then starts: said once, no error
    once = ['sh', '-c', f'test -e {tmp_path}/tried || {{ touch {tmp_path}/tried; kill -PIPE $$; }}']
    lines = []
    _Starts(spec, once, lines).start_slurmd(4)
    assert lines == ['  slurmd of n4 failed to start (killed by SIGPIPE (exit -13)); '
                     'starting it once more']
    assert (daemons.start_status(-9) == 'killed by SIGKILL (exit -9)'
            and daemons.start_status(2) == 'exit status 2')


@pytest.mark.skipif(not shutil.which('slurmctld'), reason='needs slurmctld (slurm-wlm)')
def test_slurmctld_and_slurmdbd_start_with_sigpipe_ignored_and_a_failure_says_how(tmp_path):
    c = lc.Cluster(lc.Spec(instance=0, nodes=4, run_dir=tmp_path / 'rd'))
    (tmp_path / 'empty.conf').write_text('')
    with pytest.raises(ClusterproofError) as err:
        c._start_service(['slurmctld', '-f', str(tmp_path / 'empty.conf')])
    assert str(err.value) == 'slurmctld failed to start (exit status 1): slurmctld: fatal: ' \
                             'Unable to process configuration file'
    # SIGPIPE is ignored in what it starts: a SIGPIPE does not end it
    with pytest.raises(ClusterproofError) as err:
        c._start_service(['sh', '-c', 'kill -PIPE $$; echo still here; exit 3'])
    assert str(err.value) == 'sh failed to start (exit status 3): still here'


@need_root
def test_gpus_are_character_devices_that_slurmd_takes_as_gpu_files(tmp_path):
    gpu_dir = tmp_path / 'gpu'
    gpu_dir.mkdir()
    (gpu_dir / 'gpu1').touch()          # an earlier run's empty file is replaced
    assert daemons.make_gpu_devices(gpu_dir, 3) == 'character devices'
    for j in range(3):
        st = os.stat(gpu_dir / f'gpu{j}')
        assert stat.S_ISCHR(st.st_mode) and os.major(st.st_rdev) == 1 and os.minor(st.st_rdev) == 3
        assert stat.S_IMODE(st.st_mode) == 0o660       # writable by no one but root
    os.chmod(gpu_dir / 'gpu2', 0o666)                   # an earlier run's, writable by others
    assert daemons.make_gpu_devices(gpu_dir, 3) == 'character devices'      # again: kept
    assert stat.S_IMODE(os.stat(gpu_dir / 'gpu2').st_mode) == 0o660
    assert sorted(p.name for p in gpu_dir.iterdir()) == ['gpu0', 'gpu1', 'gpu2']
    # without CAP_MKNOD (a container that drops it): empty files, and says so
    if shutil.which('setpriv'):
        code = ('import sys; from pathlib import Path; '
                'from clusterproof.cluster.daemons import make_gpu_devices; '
                'print(make_gpu_devices(Path(sys.argv[1]), 2))')
        proc = subprocess.run(['setpriv', '--bounding-set', '-mknod', str(VENV_BIN / 'python'),
                               '-c', code, str(tmp_path / 'nocap')], capture_output=True, text=True)
        assert proc.stdout.strip() == 'empty files: mknod not permitted', proc.stderr
        assert all(p.is_file() and not p.stat().st_size for p in (tmp_path / 'nocap').iterdir())
        assert len(list((tmp_path / 'nocap').iterdir())) == 2


@pytest.mark.root
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which('setpriv'),
                    reason='needs root and setpriv')
@need_repo_open_to_others
def test_up_without_root_fails_with_one_line_and_starts_nothing():
    run_dir = Path(f'/tmp/clusterproof-test-not-root-{os.getpid()}')
    proc = subprocess.run(['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups',
                           str(VENV_BIN / 'clusterproof'), 'cluster', 'up', '--instance', '6',
                           '--run-dir', str(run_dir)], capture_output=True, text=True, cwd='/')
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        'clusterproof cluster: error: needs root (network namespaces, bridge, daemons): '
        'run as root, e.g. sudo clusterproof cluster up']
    assert not run_dir.exists()


# ------------------------------------------------------------- the real cluster

def _env(emu_cluster, **extra):
    env = dict(os.environ, **emu_cluster)
    env.update(extra)
    return env


def _run(cmd, env, timeout=WAIT_S, **kw):
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, **kw)


def _clusterproof(*args, env=None):
    return _run([str(VENV_BIN / 'clusterproof'), 'cluster', *args], env or dict(os.environ))


MPI_ENV = {
    'OMPI_MCA_oob_tcp_if_include': str(lc.NETWORK),
    'OMPI_MCA_btl_tcp_if_include': str(lc.NETWORK),
    'OMPI_ALLOW_RUN_AS_ROOT': '1',
    'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM': '1',
}

MPI_HELLO = r'''
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int rank, size, len, sum = 0;
    char name[MPI_MAX_PROCESSOR_NAME];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(name, &len);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d of %d on %s sum %d\n", rank, size, name, sum);
    MPI_Finalize();
    return 0;
}
'''


@pytest.fixture(scope='module')
def mpi_hello(tmp_path_factory):
    if not shutil.which('mpicc'):
        pytest.skip('needs mpicc (libopenmpi-dev)')
    d = tmp_path_factory.mktemp('mpi')
    (d / 'hello.c').write_text(MPI_HELLO)
    subprocess.run(['mpicc', '-o', str(d / 'hello'), str(d / 'hello.c')], check=True)
    d.chmod(0o755)
    return d / 'hello'


def _assert_hello_across_4_nodes(out):
    lines = re.findall(r'^rank (\d) of 4 on (\S+) sum 6$', out, re.M)
    assert sorted(r for r, _ in lines) == ['0', '1', '2', '3'], out
    assert sorted(n for _, n in lines) == ['n1', 'n2', 'n3', 'n4'], out


@need_netns
def test_srun_runs_on_every_node_and_sacct_lists_the_job(emu_cluster):
    env = _env(emu_cluster)
    proc = _run(['srun', '-N4', '--job-name=cp-hostname', 'sh', '-c',
                 'echo "$(hostname) $(grep SigIgn /proc/self/status)"'], env)
    assert proc.returncode == 0, proc.stderr
    lines = sorted(line.split() for line in proc.stdout.splitlines())
    assert [line[0] for line in lines] == ['n1', 'n2', 'n3', 'n4']
    # slurmd runs with SIGPIPE ignored (as under systemd); its jobs' tasks get the default back
    assert all(line[1] == 'SigIgn:' and not int(line[2], 16) & 1 << (signal.SIGPIPE - 1)
               for line in lines), lines
    # the accounting record arrives after the job ends (about 1 s when idle)
    rows = []

    def completed():
        acct = _run(['sacct', '-n', '-X', '-P', '--name=cp-hostname',
                     '-o', 'JobID,NodeList,State'], env)
        rows[:] = [r.split('|') for r in acct.stdout.split()]
        return rows and rows[-1][2] == 'COMPLETED'
    wait_for('the accounting record of the job', completed)
    assert rows[-1][1:] == ['n[1-4]', 'COMPLETED'], rows


@need_netns
def test_status_reports_nodes_left_down_and_stray_processes(emu_cluster):
    """A node left down and a program running in a node that no job accounts
    for (ranks left spinning after a failure look like this) are listed
    under ``problems`` by ``clusterproof cluster status``; a running job's
    processes are not. Between tests the stray is stopped and named."""
    from clusterproof.cluster.procs import proc_text
    from conftest import restore_emu_cluster
    env = _env(emu_cluster)
    spec = lc.load_spec(EMU_INSTANCE, lc.Instance(EMU_INSTANCE).default_run_dir())
    job = subprocess.Popen(['srun', '-w', 'n4', '--job-name=cp-held', 'sleep', str(WAIT_S)],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    stray = subprocess.Popen(['nsenter', f'--net=/run/netns/{spec.inst.netns(3)}', 'sleep',
                              str(WAIT_S)])
    try:
        def comm_in(i, name):
            return any((proc_text(p, 'comm') or '').strip() == name
                       for p in lc.netns_pids(spec.inst.netns(i)))
        wait_for('the job sleeping on n4 and the stray one on n3',
                 lambda: comm_in(4, 'sleep') and comm_in(3, 'sleep'), proc=job)
        _run(['scontrol', 'update', 'nodename=n2', 'state=down', 'reason=cp-test'], env)
        status = json.loads(_clusterproof('status', '--json', '--instance',
                                          str(EMU_INSTANCE)).stdout)
        assert status['problems'][0] == 'n2 is down', status['problems']
        assert [(s['node'], s['pid'], s['job']) for s in status['strays']] == \
            [('n3', stray.pid, None)]
        assert status['problems'][1:] == [f'stray process on n3: pid {stray.pid} in no Slurm job: '
                                          f'sleep {WAIT_S}'], status['problems']
        text = _clusterproof('status', '--instance', str(EMU_INSTANCE)).stdout
        assert f'problems:\n  n2 is down\n  stray process on n3: pid {stray.pid}' in text, text
        done = restore_emu_cluster()
        assert (f'stopped stray process on n3: pid {stray.pid} in no Slurm job: '
                f'sleep {WAIT_S}') in done
        assert stray.wait(timeout=WAIT_S) != 0       # killed
        assert lc.Cluster(spec, log=lambda text: None).problems() == []
    finally:
        for proc in (stray, job):
            if proc.poll() is None:
                proc.kill()
                proc.wait()


@need_netns
def test_mpi_with_srun_pmix(emu_cluster, mpi_hello):
    # the daemons read mpi.conf beside slurm.conf: every PMIx fence is a ring
    proc = _run(['scontrol', 'show', 'config'], _env(emu_cluster))
    assert re.search(r'^PMIxCollFence\s*=\s*ring$', proc.stdout, re.M), proc.stdout[-2000:]
    # a rank that dies ends the step at once: the others would wait for it in MPI until the bound
    proc = _run(['srun', '--mpi=pmix', '--kill-on-bad-exit=1', '-N4', '-n4', str(mpi_hello)],
                _env(emu_cluster, **MPI_ENV))
    assert proc.returncode == 0, proc.stderr
    _assert_hello_across_4_nodes(proc.stdout)


MPI_LATE_RANK = r"""
#include <mpi.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
/* argv[1]: a directory every node sees; argv[2]: seconds the last rank gives the
 * others to return from MPI_Init before it enters it (after they all entered). */
static int count(const char *dir, const char *prefix) {
    int n = 0; struct dirent *e; DIR *d = opendir(dir);
    while (d && (e = readdir(d))) n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    if (d) closedir(d);
    return n;
}
static void mark(const char *dir, const char *what, int rank) {
    char path[4096]; FILE *f;
    snprintf(path, sizeof path, "%s/%s.%d", dir, what, rank);
    if ((f = fopen(path, "w"))) fclose(f);
}
int main(int argc, char **argv) {
    int rank = atoi(getenv("SLURM_PROCID")), size = atoi(getenv("SLURM_NTASKS"));
    int passed = -1, i, ok = 1, all;
    if (rank == size - 1) {
        while (count(argv[1], "entered.") < size - 1) usleep(20000);
        for (i = 0; i < 50 * atoi(argv[2]) && (passed = count(argv[1], "passed.")) == 0; i++)
            usleep(20000);
    } else {
        mark(argv[1], "entered", rank);
    }
    MPI_Init(&argc, &argv);
    mark(argv[1], "passed", rank);
    int *out = malloc(size * sizeof(int)), *in = malloc(size * sizeof(int));
    for (i = 0; i < size; i++) out[i] = rank * size + i;
    MPI_Alltoall(out, 1, MPI_INT, in, 1, MPI_INT, MPI_COMM_WORLD);
    for (i = 0; i < size; i++) ok &= in[i] == i * size + rank;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (rank == size - 1) printf("past MPI_Init before the last rank entered it: %d\n", passed);
    if (rank == 0) printf("alltoall over %d ranks: %s\n", size, all ? "ok" : "wrong");
    MPI_Finalize();
    return 0;
}
"""


@need_netns
def test_mpi_init_waits_for_every_node_at_two_ranks_per_node(emu_cluster, mpi_hello, tmp_path):
    # 8 ranks on 4 nodes; the last one enters MPI_Init 5 s after all others did. The PMIx
    # fences in MPI_Init span every node: no rank may return from it before the last one
    # entered it. With Slurm's tree fence on fewer nodes than TreeWidth, each node's fence
    # ended with its own ranks: the other nodes' ranks returned at once, and one that then
    # sent to a rank still in MPI_Init crashed it (slurm/local-cluster/mpi.conf.in).
    exe = mpi_hello.parent / 'late_rank'
    src = exe.with_suffix('.c')
    src.write_text(MPI_LATE_RANK)
    subprocess.run(['mpicc', '-o', str(exe), str(src)], check=True)
    marks = tmp_path / 'marks'
    marks.mkdir()
    proc = _run(['srun', '--mpi=pmix', '--kill-on-bad-exit=1', '-N4', '-n8', '--ntasks-per-node=2',
                 str(exe), str(marks), '5'], _env(emu_cluster, **MPI_ENV))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'past MPI_Init before the last rank entered it: 0\n' in proc.stdout, proc.stdout
    assert 'alltoall over 8 ranks: ok\n' in proc.stdout, proc.stdout
    assert len(list(marks.glob('passed.*'))) == 8


#: Slurm job states before the end of a job
JOB_NOT_ENDED = ('PENDING', 'CONFIGURING', 'RUNNING', 'COMPLETING', 'SUSPENDED')


@need_netns
def test_mpi_with_mpirun_in_sbatch(emu_cluster, mpi_hello, tmp_path):
    # The job's end is watched here: sbatch --wait looks after 2 s, then
    # after 8 s more, so a job of 3 s held the test 10 s.
    out = tmp_path / 'mpirun.out'
    env = _env(emu_cluster, **MPI_ENV)
    sub = _run(['sbatch', '--parsable', '-N4', '-n4', f'--output={out}', f'--chdir={tmp_path}',
                '--wrap', f'mpirun {mpi_hello}'], env)
    assert sub.returncode == 0, sub.stderr
    job = sub.stdout.strip().split(';')[0]
    record = {}

    def ended():
        shown = parse_scontrol_record(_run(['scontrol', '-o', 'show', 'job', job], env).stdout)
        record.update(shown)
        return 'JobState' in shown and shown['JobState'] not in JOB_NOT_ENDED
    wait_for(f'the end of job {job} (mpirun in sbatch)', ended)
    assert (record['JobState'], record['ExitCode']) == ('COMPLETED', '0:0'), \
        str(record) + (out.read_text() if out.exists() else '')
    _assert_hello_across_4_nodes(out.read_text())


@need_netns
def test_mpi_with_mpirun_in_salloc(emu_cluster, mpi_hello):
    proc = _run(['salloc', '-N4', '-n4', 'mpirun', str(mpi_hello)], _env(emu_cluster, **MPI_ENV))
    assert proc.returncode == 0, proc.stderr
    _assert_hello_across_4_nodes(proc.stdout)


@need_netns
def test_reframe_runs_on_both_emu_partitions(emu_cluster, tmp_path):
    proc = run_reframe(['-c', str(CHECKS / 'node_hostnames.py'), '-r', '--system', 'emu'],
                       tmp_path, extra_env=emu_cluster, expect_cases=2)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    reports = sorted((tmp_path / 'reports').glob('run-report-*.json'))
    assert reports, f'no run report in {tmp_path / "reports"}'
    cases = [tc for run in json.loads(reports[-1].read_text())['runs'] for tc in run['testcases']]
    assert sorted(tc['partition'] for tc in cases) == ['mpirun', 'srun']
    for tc in cases:
        assert tc['result'] == 'pass', tc.get('fail_reason')
        assert tc['scheduler'] == 'slurm'
        assert tc['system'] == 'emu'
        assert sorted(tc['job_nodelist']) == ['n1', 'n2', 'n3', 'n4']


@need_netns
def test_heterogeneous_nodes_register_their_own_cpus_and_memory(emu_cluster):
    """A cluster brought up with --node-spec: Slurm reports each node's CPUs
    and memory, and a 1-CPU node's jobs see one processor. The session's
    cluster is brought back as it was."""
    with session_cluster_replaced() as rd:
        proc = _clusterproof('up', *rd, '--node-spec',
                             'n[1-2]:cpus=2,mem=2048;n[3-5]:cpus=1,mem=1024')
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert 'n[1-2] x 2 CPUs, 2048 MiB; n[3-5] x 1 CPU, 1024 MiB' in proc.stdout
        assert 'export CLUSTERPROOF_EMU_NODES=5' in proc.stdout
        env = _env(emu_cluster)
        show = _run(['scontrol', '-o', 'show', 'node'], env)
        assert show.returncode == 0, show.stderr
        found = {}
        for line in show.stdout.splitlines():
            fields = dict(f.split('=', 1) for f in line.split() if '=' in f)
            found[fields['NodeName']] = (int(fields['CPUTot']), int(fields['RealMemory']))
        assert found == {'n1': (2, 2048), 'n2': (2, 2048),
                         'n3': (1, 1024), 'n4': (1, 1024), 'n5': (1, 1024)}
        nproc = _run(['srun', '-w', 'n3', 'nproc'], env)
        assert nproc.stdout.split() == ['1'], nproc.stdout + nproc.stderr


def _many_nodes(emu_cluster, nodes):
    """The session's cluster brought down, then up with ``nodes`` nodes: every
    node idle, ``status`` readable (nodes folded), a job on every node;
    down leaves nothing. The session's cluster is brought back as it was.
    Returns the wall times of up, srun and down (s)."""
    times = {}
    with session_cluster_replaced() as rd:
        t0 = time.monotonic()
        proc = _clusterproof('up', *rd, '--nodes', str(nodes), '--cpus-per-node', '1',
                             '--mem-per-node', '256')
        times['up'] = time.monotonic() - t0
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert f'nodes idle: n[1-{nodes}]' in proc.stdout
        status = json.loads(_clusterproof('status', '--json', *rd).stdout)
        assert status['nodes'] == {f'n{i}': 'idle' for i in range(1, nodes + 1)}, \
            lc.summary(status['nodes'])
        assert status['problems'] == [] and all(d['alive'] for d in status['daemons'].values())
        text = _clusterproof('status', *rd).stdout
        assert re.search(rf'^nodes:\n  n\[1-{nodes}\] +idle$', text, re.M), text
        assert re.search(rf'^  slurmd +n\[1-{nodes}\] +alive$', text, re.M), text
        assert len(text.splitlines()) < 30, text
        t0 = time.monotonic()
        srun = _run(['srun', f'-N{nodes}', '--ntasks-per-node=1', 'hostname'], _env(emu_cluster))
        times['srun'] = time.monotonic() - t0
        assert srun.returncode == 0, srun.stderr[-3000:]
        assert sorted(srun.stdout.split()) == sorted(f'n{i}' for i in range(1, nodes + 1)), \
            srun.stderr[-3000:]
        t0 = time.monotonic()
        proc = _clusterproof('down', '--force', *rd)
        times['down'] = time.monotonic() - t0
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert leftovers(EMU_INSTANCE) == []
    return times


@pytest.mark.slow
@need_netns
def test_64_nodes_up_idle_one_job_on_all_and_down_leaves_nothing(emu_cluster):
    """64 nodes: the large address block (198.19.<8K>.0/21), a munged for
    the nodes, the slurm.conf settings for many nodes. About 15 s on 2 cores."""
    times = _many_nodes(emu_cluster, 64)
    print('64 nodes: ' + ', '.join(f'{what} {t:.1f} s' for what, t in times.items()))


@pytest.mark.scale
@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get('CLUSTERPROOF_TEST_SCALE'),
                    reason='the scale tier (1,024 nodes, minutes, about 4 GiB): '
                           'run scripts/test-scale')
@need_netns
def test_1024_nodes_up_idle_one_job_on_all_and_down_leaves_nothing(emu_cluster):
    times = _many_nodes(emu_cluster, lc.MAX_NODES)
    print(f'{lc.MAX_NODES} nodes: ' + ', '.join(f'{what} {t:.1f} s' for what, t in times.items()))


class _FailsAfterSlurmdbd(lc.Cluster):
    """A start that fails half-way, after munged, MariaDB, slurmdbd and the
    network are really up (stands for any later failure, e.g. slurmctld)."""

    def _start_slurmctld(self):
        raise ClusterproofError('slurmctld failed (provoked)')


@need_netns
def test_life_cycle_down_up_twice_port_in_use_and_half_way_failure(emu_cluster):
    """Runs last in this file: takes the session cluster down and brings it
    back up with the same run directory, so its environment stays valid."""
    with emu_cluster_exclusive():
        _life_cycle(emu_cluster)


def _life_cycle(emu_cluster):
    k = EMU_INSTANCE
    spec = lc.load_spec(k, lc.Instance(k).default_run_dir())
    rd = ['--instance', str(k), '--run-dir', str(spec.run_dir)]

    # up twice: says so, exit 0, prints the environment
    proc = _clusterproof('up', *rd)
    assert proc.returncode == 0 and 'already up' in proc.stdout
    assert f'export SLURM_CONF={spec.run_dir}/etc/slurm.conf' in proc.stdout

    # a run directory that did not start this cluster (what a session with a /tmp of
    # its own sees): down refuses, naming a slurmd it would have stopped, and stops nothing
    other = Path(tempfile.mkdtemp(prefix='clusterproof-other-run-dir-', dir='/var/tmp'))
    try:
        with pytest.raises(ClusterproofError, match=r'slurmd in its node namespaces \(pid \d+ in '
                                                    rf'cp{k}n\d+.*were not started from {other}'):
            lc.Cluster(lc.Spec(instance=k, run_dir=other), log=lambda text: None).down()
    finally:
        shutil.rmtree(other)
    assert lc.Cluster(spec).is_up() and leftovers(k) != []

    # an allocation left open (a person's salloc, a step-less job) when the cluster goes
    # down is not there when it comes up again: each up starts from no job
    held = _run(['salloc', '--no-shell', '-N1', '-t', '60'], _env(emu_cluster))
    assert held.returncode == 0 and 'Granted job allocation' in held.stderr, held.stderr

    # down leaves no process, namespace, link or bridge
    # this session holds the users lock: down refuses without --force
    proc = _clusterproof('down', *rd)
    assert proc.returncode == 2 and 'is in use' in proc.stderr, proc.stderr
    proc = _clusterproof('down', '--force', *rd)
    assert proc.returncode == 0, proc.stderr
    assert leftovers(k) == []
    assert _clusterproof('status', *rd).returncode == 1

    # a port in use: one line naming the port, nothing started
    port = lc.Instance(k).port('slurmdbd')
    with socket.socket() as holder:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        holder.bind(('127.0.0.1', port))
        holder.listen()
        proc = _clusterproof('up', *rd)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert f'port {port} (slurmdbd of instance {k}) is in use' in proc.stderr
    assert leftovers(k) == []

    # leftovers of a run whose processes were killed (namespaces outlive them):
    # refused while a process is still inside, removed by up once none is
    from clusterproof.cluster.network import make_network
    make_network(lc.Network(lc.Instance(k), 2))
    holder = subprocess.Popen(['ip', 'netns', 'exec', f'cp{k}n1', 'sleep', '600'])
    try:
        wait_for('sleep running in the leftover namespace',
                 lambda: lc.netns_pids(f'cp{k}n1'), proc=holder)
        proc = _clusterproof('up', *rd)
        assert proc.returncode == 2
        assert (f'pid {holder.pid} in cp{k}n1' in proc.stderr
                and 'cluster down' in proc.stderr), proc.stderr
    finally:
        holder.kill()
        holder.wait()
    half = _FailsAfterSlurmdbd(spec, log=lambda text: None)
    said = []
    half.log = said.append
    with pytest.raises(ClusterproofError, match='provoked'):
        half.up()
    assert any(f'removed leftovers of an earlier run of instance {k}' in line
               and f'namespaces cp{k}n[1-2]' in line for line in said), said
    assert leftovers(k) == []

    # a failure half-way stops what was started
    half = _FailsAfterSlurmdbd(spec, log=lambda text: None)
    with pytest.raises(ClusterproofError, match='provoked'):
        half.up()
    assert leftovers(k) == []

    # up again: progress, time taken, nodes idle
    proc = _clusterproof('up', *rd, '--nodes', str(spec.nodes), '--cpus-per-node', str(spec.cpus),
                         '--mem-per-node', str(spec.mem))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(rf'cluster cp{k} is up in [\d.]+ s', proc.stdout)
    assert 'nodes idle: n[1-4]' in proc.stdout
    status = json.loads(_clusterproof('status', '--json', *rd).stdout)
    assert status['up'] and all(d['alive'] for d in status['daemons'].values())
    assert status['nodes'] == {f'n{i}': 'idle' for i in range(1, 5)}
    srun = _run(['srun', '-N4', 'hostname'], _env(emu_cluster))
    assert sorted(srun.stdout.split()) == ['n1', 'n2', 'n3', 'n4'], srun.stderr
    # srun returns when its tasks have; the job may still be completing (CG)
    # for a moment after: the queue empties, or the test fails naming it
    wait_for('an empty queue after srun',
             lambda: _run(['squeue', '-h'], _env(emu_cluster)).stdout == '')


# ------------------------------------------- up --like: a real cluster's description

SLURM_DATA = Path(__file__).resolve().parents[1] / 'data' / 'slurm'
CUT6 = SLURM_DATA / 'scontrol-show-node-23.11.1-cut6.json'
TALAPAS_PARTITIONS = SLURM_DATA / 'scontrol-show-partition-23.11.1.json'


def test_like_a_slurm_conf_keeps_names_topology_and_partitions(tmp_path):
    like = lc.read_like(SLURM_DATA / 'slurm.conf-22.05.8-local')
    assert like.names == ['n1', 'n2', 'n3', 'n4'] and like.left_out == ()
    assert {(n.cpus, n.sockets, n.cores, n.threads, n.mem, n.state) for n in like.nodes} == \
        {(2, 2, 1, 1, 2048, '')}
    assert [(p.name, p.nodes, p.default, p.max_time) for p in like.partitions] == \
        [('emu', ('n1', 'n2', 'n3', 'n4'), True, 'INFINITE')]
    conf = tmp_path / 'slurm.conf'
    conf.write_text('NodeName=gpu[001-002] Sockets=2 CoresPerSocket=8 ThreadsPerCore=2 '
                    'RealMemory=96000 Gres=gpu:a100:4 Feature=a100,ib State=UNKNOWN\n'
                    'NodeName=cn-a12 CPUs=4 RealMemory=8000 State=DRAIN\n'
                    'PartitionName=gpu Nodes=gpu[001-002] MaxNodes=2 MaxTime=2-00:00:00 '
                    'Default=YES\n'
                    'PartitionName=all Nodes=ALL State=DOWN\n')
    like = lc.read_like(conf)
    gpu1, _, cn = like.nodes
    assert (gpu1.name, gpu1.cpus, gpu1.sockets, gpu1.cores, gpu1.threads, gpu1.gres,
            gpu1.features) == ('gpu001', 32, 2, 8, 2, ('gpu:a100:4',), ('a100', 'ib'))
    assert (cn.name, cn.state, cn.reason) == ('cn-a12', 'DRAIN', 'recorded DRAIN in slurm.conf')
    assert [(p.name, p.nodes, p.max_nodes, p.max_time, p.state, p.default)
            for p in like.partitions] == [
        ('gpu', ('gpu001', 'gpu002'), 2, '2-00:00:00', 'UP', True),
        ('all', ('gpu001', 'gpu002', 'cn-a12'), None, 'UNLIMITED', 'DOWN', False)]
    spec = lc.Spec(instance=2, like=like, max_submit_jobs=5, max_array_size=100,
                   run_dir=tmp_path / 'rd')
    assert spec.nodes == 3 and spec.names == ['gpu001', 'gpu002', 'cn-a12']
    texts = lc.render_all(spec, 'ctl', 'pw')
    slurm_conf = texts['slurm.conf']
    assert ('NodeName=gpu001 NodeAddr=198.18.0.66 CPUs=32 Sockets=2 CoresPerSocket=8 '
            'ThreadsPerCore=2 RealMemory=96000 Gres=gpu:a100:4 Features=a100,ib') in slurm_conf
    assert ('PartitionName=gpu Nodes=gpu[001-002] Default=YES MaxTime=2-00:00:00 State=UP '
            'MaxNodes=2') in slurm_conf
    assert ('PartitionName=all Nodes=gpu[001-002],cn-a12 Default=NO MaxTime=UNLIMITED '
            'State=DOWN') in slurm_conf
    assert 'PartitionName=emu' not in slurm_conf
    for line in ('GresTypes=gpu', 'MaxArraySize=100',
                 'AccountingStorageEnforce=associations,limits'):
        assert re.search(rf'^{re.escape(line)}$', slurm_conf, re.M), line
    assert (f'NodeName=gpu001 Name=gpu Type=a100 File={tmp_path}/rd/gpu/gpu[0-3]'
            in texts['gres.conf'])
    assert texts['hosts'].splitlines()[2:] == ['198.18.0.66 gpu001', '198.18.0.67 gpu002',
                                               '198.18.0.68 cn-a12']
    argv = lc.Cluster(spec).slurmd_argv(3)
    assert 'hostname cn-a12 &&' in argv[-1]
    assert re.search(r'^DefMemPerCPU=2000$', slurm_conf, re.M)
    # a node declared without RealMemory (Slurm's 1 MiB) must not make DefMemPerCPU 0
    # (the whole node)
    conf.write_text('NodeName=c1 CPUs=4\nPartitionName=p Nodes=ALL\n')
    small = lc.Spec(instance=2, like=lc.read_like(conf), run_dir=tmp_path / 'rd')
    assert re.search(r'^DefMemPerCPU=1$', lc.render_all(small, 'ctl', 'pw')['slurm.conf'], re.M)
    # what up stores in cluster.json reads back the same
    lay = lc.Layout(spec.run_dir)
    lay.root.mkdir()
    lay.marker.write_text(json.dumps(spec.to_dict()))
    assert lc.load_spec(2, spec.run_dir) == spec


def test_like_scontrol_text_of_slurm_17_11_keeps_the_drained_gpu_node():
    like = lc.read_like(SLURM_DATA / 'scontrol-show-node-17.11-twcc.txt')
    (node,) = like.nodes
    assert (node.name, node.cpus, node.sockets, node.cores, node.threads, node.mem, node.gres) == \
        ('gn0101.twcc.ai', 36, 2, 18, 1, 772437, ('gpu:8',))
    # the recorded reason, without the [user@time] scontrol appends
    assert (node.state, node.reason) == ('DRAIN', 'node-switch')


def test_like_23_11_json_keeps_gpus_features_drained_nodes_and_partition_limits():
    like = lc.read_like(SLURM_DATA / 'scontrol-show-node-23.11.1.json', TALAPAS_PARTITIONS)
    # dtn1 and dtn2 (DOWN) are in no partition: sinfo shows them nowhere, no job runs there
    assert like.left_out == ('dtn1', 'dtn2')
    nodes = {n.name: n for n in like.nodes}
    assert len(nodes) == 10
    assert {n for n, v in nodes.items() if v.state} == {'n0164', 'n0999'}
    assert (nodes['n0164'].state, nodes['n0164'].reason) == ('DRAIN', 'Kill task failed')
    n1000 = nodes['n1000']
    assert (n1000.cpus, n1000.sockets, n1000.cores, n1000.threads, n1000.mem) == \
        (112, 2, 56, 1, 2052811)
    assert n1000.gres == ('gpu:nvidia_h100_80gb_hbm3:8',) and 'sapphirerapids' in n1000.features
    assert nodes['n0162'].gres == ('gpu:1g.10gb:21',)
    parts = {p.name: p for p in like.partitions}
    assert (parts['preempt'].max_nodes, parts['preempt'].max_time) == (48, '7-00:00:00')
    assert parts['gpu'].nodes == ('n0160', 'n0162', 'n0163', 'n0164')
    assert parts['kerngpu'].nodes == ('n1000',) and parts['kerngpu'].max_time is None
    assert lc.Spec(instance=2, like=like).min_cpus == 28


def test_like_25_05_json_keeps_a_down_node_and_two_partitions():
    like = lc.read_like(SLURM_DATA / 'scontrol-show-node-25.05.4.json',
                        SLURM_DATA / 'scontrol-show-partition-25.05.4.json')
    states = {n.name: (n.state, n.reason) for n in like.nodes if n.state}
    assert states == {'cn3': ('DRAIN', 'ECC memory error'), 'cn4': ('DOWN', 'CPU dead')}
    assert [(p.name, len(p.nodes), p.max_time) for p in like.partitions] == \
        [('normal', 4, '02:00:00'), ('gpu', 2, '02:00:00')]


@pytest.mark.parametrize('args, words', [
    (['--like', str(CUT6), '--nodes', '3'], 'leave out --nodes'),
    (['--like', '/nonexistent/site.json'], '--like /nonexistent/site.json: cannot be read'),
    (['--like-partitions', str(TALAPAS_PARTITIONS)], '--like-partitions needs --like'),
])
def test_up_like_refuses_options_that_declare_nodes_and_a_missing_file(capsys, args, words):
    assert cli.main(['cluster', 'up', '--instance', '2', *args]) == 2
    assert words in capsys.readouterr().err


@pytest.mark.parametrize('text, words', [
    ('NodeName=c[1-1025] CPUs=1\nPartitionName=p Nodes=ALL\n',
     ['1025 nodes', 'at most 1024', 'node c1025']),
    ('NodeName=c1 CPUs=1\nNodeName=c1 CPUs=2\nPartitionName=p Nodes=ALL\n',
     ['node c1', 'declared twice']),
    ('NodeName=c1 CPUs=70000\nPartitionName=p Nodes=ALL\n', ['node c1', 'CPUs=70000', '65535']),
    ('NodeName=c1 CPUs=x\n', ['NodeName=c1', 'CPUs']),
    ('hello\n', ['neither Slurm JSON']),
    ('{"nodes": []}', ['describes no node']),
])
def test_a_description_the_local_cluster_cannot_hold_is_refused_naming_file_and_node(
        tmp_path, text, words):
    path = tmp_path / 'site.conf'
    path.write_text(text)
    with pytest.raises(ClusterproofError) as err:
        lc.read_like(path)
    for word in [str(path)] + words:
        assert word in str(err.value)


@need_netns
def test_up_like_a_real_cluster_cut_to_six_nodes(emu_cluster):
    """Up from six nodes of a recorded 23.11 description: Slurm has the
    declared names, partitions, topology, memory, GPUs, features and drained
    nodes; a job runs on a named node; MaxSubmitJobs and MaxArraySize are
    enforced; down leaves nothing. The session's cluster is brought back."""
    with session_cluster_replaced() as rd:
        proc = _clusterproof('up', *rd, '--like', str(CUT6),
                             '--like-partitions', str(TALAPAS_PARTITIONS),
                             '--max-submit-jobs', '2', '--max-array-size', '10')
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert 'DRAIN as recorded: n[0164,0999]' in proc.stdout
        # what the tests do between scenarios leaves the recorded states alone
        assert faults.recover(lc.load_spec(EMU_INSTANCE, Path(rd[-1])), timeout=WAIT_S) == []
        env = _env(emu_cluster)
        show = _run(['scontrol', '-o', 'show', 'node'], env)
        found = {}
        for line in show.stdout.splitlines():
            f = parse_scontrol_record(line)
            found[f['NodeName']] = (f['CPUTot'], f['Sockets'], f['CoresPerSocket'],
                                    f['ThreadsPerCore'], f['RealMemory'], f['Gres'],
                                    f['AvailableFeatures'], f['State'],
                                    f.get('Reason', '').split(' [')[0], f['NodeHostName'])
        want = {}
        for node in lc.read_like(CUT6).nodes:
            want[node.name] = (str(node.cpus), str(node.sockets), str(node.cores),
                               str(node.threads), str(node.mem), ','.join(node.gres) or '(null)',
                               ','.join(node.features), 'IDLE+DRAIN' if node.state else 'IDLE',
                               node.reason, node.name)
        assert found == want
        sinfo = _run(['sinfo', '-h', '-o', '%R %N %l %s'], env).stdout.split('\n')
        assert 'preempt n[0160,0162,0164,0397-0398,0999] 7-00:00:00 1-48' in sinfo
        assert 'gpu n[0160,0162,0164] 1-00:00:00 1-infinite' in sinfo
        srun = _run(['srun', '-p', 'gpu', '-w', 'n0162', '--gres=gpu:1g.10gb:2', 'hostname'], env)
        assert srun.stdout.split() == ['n0162'], srun.stdout + srun.stderr
        array = _run(['sbatch', '-p', 'preempt', '--array=0-10', '--wrap', 'true'], env)
        assert array.returncode != 0 and 'Invalid job array' in array.stderr
        held = [_run(['sbatch', '-p', 'amt', '-H', '--wrap', 'true'], env) for _ in range(2)]
        assert all(p.returncode == 0 for p in held), [p.stderr for p in held]
        third = _run(['sbatch', '-p', 'amt', '-H', '--wrap', 'true'], env)
        assert third.returncode != 0 and 'AssocMaxSubmitJobLimit' in third.stderr, third.stderr
        _run(['scancel', '-u', 'root'], env)
        assert _clusterproof('down', '--force', *rd).returncode == 0
        assert leftovers(EMU_INSTANCE) == []
    # the session's cluster, up again without --max-submit-jobs: no limit left
    # in the accounting database, which outlived `down`
    limits = _run(['sacctmgr', '-n', '-P', 'show', 'assoc', 'where', 'account=root',
                   f'cluster={lc.Instance(EMU_INSTANCE).cluster}', 'format=user,maxsubmit'],
                  _env(emu_cluster))
    assert limits.returncode == 0 and limits.stdout.split() and \
        all(line.endswith('|') for line in limits.stdout.split()), limits.stdout + limits.stderr
