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
import socket
import subprocess
from pathlib import Path

import pytest

from clusterproof import ClusterproofError
from clusterproof import cluster as lc
from conftest import (EMU_INSTANCE, VENV_BIN, WAIT_S, emu_cluster_exclusive, need_netns,
                      need_repo_open_to_others, run_reframe, wait_for)

CHECKS = Path(__file__).resolve().parent / 'checks'


# ------------------------------------------------------------------ pure parts

def test_addresses_stay_in_the_benchmarking_range_and_instances_do_not_overlap():
    net = ipaddress.ip_network('198.18.0.0/24')
    seen = set()
    for k in lc.INSTANCES:
        inst = lc.Instance(k)
        addrs = [inst.bridge_addr] + [inst.node_addr(i) for i in range(1, lc.MAX_NODES + 1)]
        for a in addrs:
            ip = ipaddress.ip_address(a)
            assert ip in net and ip in inst.subnet
            assert ip not in (inst.subnet.network_address, inst.subnet.broadcast_address)
        assert not seen & set(addrs)
        seen |= set(addrs)
    assert lc.Instance(0).bridge_addr == '198.18.0.1'
    assert lc.Instance(0).node_addr(1) == '198.18.0.2'
    assert lc.Instance(7).bridge_addr == '198.18.0.225'
    assert lc.Instance(7).node_addr(4) == '198.18.0.229'
    assert str(lc.Instance(3).subnet) == '198.18.0.96/27'


def test_ports_and_names_are_distinct_per_instance():
    ports = [lc.Instance(k).port(d) for k in lc.INSTANCES for d in lc.PORT_OFFSETS]
    assert len(ports) == len(set(ports))
    assert all(1024 < p < 32768 for p in ports)      # below Linux's ephemeral range
    names = {lc.Instance(k).bridge for k in lc.INSTANCES} | {lc.Instance(k).netns(1) for k in lc.INSTANCES}
    assert len(names) == 2 * len(lc.INSTANCES)
    assert lc.Instance(2).netns(3) == 'cp2n3' and lc.Instance(2).bridge == 'cpbr2'
    # Linux limits interface names to 15 characters
    assert all(len(lc.Instance(k).veth(lc.MAX_NODES)) <= 15 for k in lc.INSTANCES)


def test_out_of_range_values_are_refused_with_the_value():
    with pytest.raises(ClusterproofError, match='instance 8'):
        lc.Instance(8)
    with pytest.raises(ClusterproofError, match='n30'):
        lc.Instance(0).node_addr(30)
    with pytest.raises(ClusterproofError, match='--nodes 0'):
        lc.Spec(nodes=0)
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
    assert 'NodeName=n1 NodeAddr=198.18.0.98' in conf
    assert 'NodeName=n4 NodeAddr=198.18.0.101' in conf
    assert 'NodeName=n5' not in conf
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
    assert re.search(r'^NodeName=n8 NodeAddr=\S+$', conf, re.M)
    assert re.search(r'^NodeName=n9 NodeAddr=\S+ CPUs=1 RealMemory=1024$', conf, re.M)
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
    ('gpu[1-2]:cpus=2', "node 'gpu1': the local cluster's nodes are n1..n29"),
    ('n[1-30]:cpus=1', '30 nodes; an instance has at most 29'),
])
def test_a_bad_node_spec_names_the_part_at_fault(bad, words):
    with pytest.raises(ClusterproofError, match=words):
        lc.parse_node_spec(bad)


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


@pytest.mark.root
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which('setpriv'), reason='needs root and setpriv')
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
    'OMPI_MCA_oob_tcp_if_include': '198.18.0.0/24',
    'OMPI_MCA_btl_tcp_if_include': '198.18.0.0/24',
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
    proc = _run(['srun', '-N4', '--job-name=cp-hostname', 'hostname'], env)
    assert proc.returncode == 0, proc.stderr
    assert sorted(proc.stdout.split()) == ['n1', 'n2', 'n3', 'n4']
    # the accounting record arrives after the job ends (about 1 s when idle)
    rows = []

    def completed():
        acct = _run(['sacct', '-n', '-X', '-P', '--name=cp-hostname', '-o', 'JobID,NodeList,State'], env)
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
    job = subprocess.Popen(['srun', '-w', 'n4', '--job-name=cp-held', 'sleep', str(WAIT_S)], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    stray = subprocess.Popen(['nsenter', f'--net=/run/netns/{spec.inst.netns(3)}', 'sleep',
                              str(WAIT_S)])
    try:
        def comm_in(i, name):
            return any((proc_text(p, 'comm') or '').strip() == name
                       for p in lc.netns_pids(spec.inst.netns(i)))
        wait_for('the job sleeping on n4 and the stray one on n3',
                 lambda: comm_in(4, 'sleep') and comm_in(3, 'sleep'), proc=job)
        _run(['scontrol', 'update', 'nodename=n2', 'state=down', 'reason=cp-test'], env)
        status = json.loads(_clusterproof('status', '--json', '--instance', str(EMU_INSTANCE)).stdout)
        assert status['problems'][0] == 'n2 is down', status['problems']
        assert [(s['node'], s['pid'], s['job']) for s in status['strays']] == [('n3', stray.pid, None)]
        assert status['problems'][1:] == [f'stray process on n3: pid {stray.pid} in no Slurm job: '
                                          f'sleep {WAIT_S}'], status['problems']
        text = _clusterproof('status', '--instance', str(EMU_INSTANCE)).stdout
        assert f'problems:\n  n2 is down\n  stray process on n3: pid {stray.pid}' in text, text
        done = restore_emu_cluster()
        assert f'stopped stray process on n3: pid {stray.pid} in no Slurm job: sleep {WAIT_S}' in done
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


@need_netns
def test_mpi_with_mpirun_in_sbatch(emu_cluster, mpi_hello, tmp_path):
    out = tmp_path / 'mpirun.out'
    proc = _run(['sbatch', '--wait', '-N4', '-n4', f'--output={out}', f'--chdir={tmp_path}',
                 '--wrap', f'mpirun {mpi_hello}'], _env(emu_cluster, **MPI_ENV))
    assert proc.returncode == 0, proc.stderr + (out.read_text() if out.exists() else '')
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


def _leftovers(k):
    """Processes, namespaces and links of instance k (none when down)."""
    inst = lc.Instance(k)
    links = lc.links()
    found = [ln for ln in links if ln == inst.bridge or ln.startswith(f'cp{k}n')]
    found += [ns for ns in lc.netns_list() if ns.startswith(f'cp{k}n')]
    run_dir = str(inst.default_run_dir())
    for proc in Path('/proc').iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / 'cmdline').read_bytes().replace(b'\0', b' ').decode(errors='replace')
            env = (proc / 'environ').read_bytes().decode(errors='replace')
        except OSError:
            continue
        if cmd and (run_dir + '/') in cmd + env and lc.alive(int(proc.name)):
            found.append(f'pid {proc.name}: {cmd.strip()}')
    return found


@need_netns
def test_heterogeneous_nodes_register_their_own_cpus_and_memory(emu_cluster):
    """A cluster brought up with --node-spec: Slurm reports each node's CPUs
    and memory, and a 1-CPU node's jobs see one processor. The session's
    cluster is brought back as it was."""
    with emu_cluster_exclusive():
        k = EMU_INSTANCE
        spec = lc.load_spec(k, lc.Instance(k).default_run_dir())
        rd = ['--instance', str(k), '--run-dir', str(spec.run_dir)]
        assert _clusterproof('down', '--force', *rd).returncode == 0
        try:
            proc = _clusterproof('up', *rd, '--node-spec', 'n[1-2]:cpus=2,mem=2048;n[3-5]:cpus=1,mem=1024')
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
        finally:
            _clusterproof('down', '--force', *rd)
            proc = _clusterproof('up', *rd, '--nodes', str(spec.nodes), '--cpus-per-node', str(spec.cpus),
                                 '--mem-per-node', str(spec.mem))
            assert proc.returncode == 0, proc.stdout + proc.stderr


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

    # down leaves no process, namespace, link or bridge
    # this session holds the users lock: down refuses without --force
    proc = _clusterproof('down', *rd)
    assert proc.returncode == 2 and 'is in use' in proc.stderr, proc.stderr
    proc = _clusterproof('down', '--force', *rd)
    assert proc.returncode == 0, proc.stderr
    assert _leftovers(k) == []
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
    assert _leftovers(k) == []

    # leftovers of a run whose processes were killed (namespaces outlive them):
    # refused while a process is still inside, removed by up once none is
    from clusterproof.cluster.network import make_network
    make_network(lc.Instance(k), 2)
    holder = subprocess.Popen(['ip', 'netns', 'exec', f'cp{k}n1', 'sleep', '600'])
    try:
        wait_for('sleep running in the leftover namespace', lambda: lc.netns_pids(f'cp{k}n1'), proc=holder)
        proc = _clusterproof('up', *rd)
        assert proc.returncode == 2
        assert f'pid {holder.pid} in cp{k}n1' in proc.stderr and 'cluster down' in proc.stderr, proc.stderr
    finally:
        holder.kill()
        holder.wait()
    half = _FailsAfterSlurmdbd(spec, log=lambda text: None)
    said = []
    half.log = said.append
    with pytest.raises(ClusterproofError, match='provoked'):
        half.up()
    assert any(f'removed leftovers of an earlier run of instance {k}' in line and f'namespace cp{k}n2' in line
               for line in said), said
    assert _leftovers(k) == []

    # a failure half-way stops what was started
    half = _FailsAfterSlurmdbd(spec, log=lambda text: None)
    with pytest.raises(ClusterproofError, match='provoked'):
        half.up()
    assert _leftovers(k) == []

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
