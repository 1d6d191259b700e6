"""Attribution of real causes injected where the fingerprint sees them from
inside the job: one node of the local Slurm cluster put under a CPU quota
(its slurmd, and so every job step it starts, in a quota cgroup), the
directory of the stage directories remounted with other options on one
node, and an MPI binary loading another build of its MPI library
(LD_LIBRARY_PATH to a copy of Debian's libmpi with a section added)."""

import json
import re
import shutil
import subprocess
import types

import pytest

from conftest import EMU_INSTANCE, REPO, WAIT_S, need_netns, reframe_env, run_reframe
from results_helpers import SELFTEST_CHECKS, clusterproof
from servers import Receiver

#: n3's CPU quota: 1 ms of CPU in every 20 ms (5 % of a processor): far
#: below what a node gets on this shared machine when it is busy, with
#: periods short enough that slurmd still answers Slurm in time (2 %, 1 ms
#: in 50 ms, proved the same at two and a half times the wait for every
#: process the quota slowed: slurmstepd, the job script, dd)
QUOTA_US, PERIOD_US = 1000, 20000


def _points(results, figure):
    from clusterproof.store import sources
    hists = [h for h in sources.load([results / 'results.db']) if h.figure == figure]
    assert len(hists) == 1, [h.key for h in hists]
    return hists[0].points


def _on_n3(results, refs, env, node='n3'):
    proc = run_reframe(['-c', str(SELFTEST_CHECKS), '-r', '--system', 'emu:srun',
                        '-n', 'DevZeroCopy%num_threads=1', '-S', 'copy_mib=1024',
                        '-S', 'repeats=1', '-J', f'nodelist={node}'],
                       results, mode='nightly',
                       extra_env={'CLUSTERPROOF_REFERENCES': str(refs), **env}, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert 'Ran 1/1 test case(s)' in proc.stdout, proc.stdout[-3000:]


@pytest.mark.slow
@need_netns
def test_changes_names_the_cpu_quota_put_on_a_node(emu_cluster, tmp_path):
    """Three sessions on n3, n1 and n3, then n3's slurmd in a cgroup with
    a 5 % CPU quota and four sessions on n3: ``clusterproof changes`` finds
    the drop at the fourth session and names the culprit twice over, the
    node (n3 in every session after, not in every one before) and the quota
    the job ran under on n3. (Each copy of 1 GiB takes some 25 periods of
    the quota: shorter copies are slowed by one period more or less, and
    sessions that disagree so are not a new level.)"""
    from clusterproof import ClusterproofError
    from clusterproof import cluster as lc
    from clusterproof.cluster import faults
    spec = lc.load_spec(EMU_INSTANCE, lc.Instance(EMU_INSTANCE).default_run_dir())
    results, refs = tmp_path / 'results', tmp_path / 'refs'
    for node in ('n3', 'n1', 'n3'):
        _on_n3(results, refs, emu_cluster, node)
    try:
        quota = faults.node_cpu_quota(spec, 'n3', QUOTA_US, PERIOD_US)
    except ClusterproofError as err:
        pytest.skip(str(err))
    with quota:
        for _ in range(4):
            _on_n3(results, refs, emu_cluster)
    out = clusterproof(['changes', '--format', 'json', '--system', 'emu',
                        '--max-detectable', '100000'], results, refs)
    assert out.returncode == 0, out.stdout + out.stderr
    points = _points(results, 'copy_bw')
    found = [c for c in json.loads(out.stdout) if c['figure'] == 'copy_bw'
             and c['session'] == points[3].session and not c['withdrawn']]
    assert len(found) == 1, out.stdout
    bw = found[0]
    assert bw['direction'] == 'worse' and bw['change'] < -0.5, bw
    assert bw['sessions_after'] == 4, bw
    line = f'cpu_quota max -> {QUOTA_US}/{PERIOD_US} on n3'
    assert line in bw['attribution'], bw
    assert line in bw['summary']
    assert 'nodes: n3 in every session after, not in every one before' in bw['attribution'], bw
    print('\n'.join(bw['attribution']))


@pytest.mark.slow
@need_netns
def test_attribution_names_the_mount_options_changed_on_a_node(emu_cluster, tmp_path,
                                                                monkeypatch):
    """A session on n3, then the results directory (which holds the stage
    directories) bind-mounted and remounted ``noatime,nosuid`` in n3's mount
    namespace, another session: the attribution names the stage directory's
    new mount point and options on n3, and nothing else."""
    from clusterproof import cluster as lc
    from clusterproof.cluster import faults
    spec = lc.load_spec(EMU_INSTANCE, lc.Instance(EMU_INSTANCE).default_run_dir())
    results, refs = tmp_path / 'results', tmp_path / 'refs'
    _on_n3(results, refs, emu_cluster)
    with faults.NodeMount(spec, 'n3', results, 'noatime,nosuid'):
        _on_n3(results, refs, emu_cluster)
    before, after = _points(results, 'copy_bw')
    old, new = ({}, {})
    for p, rec in ((before, old), (after, new)):
        node, _, h = p.provenance['cp_fingerprint'].partition('=')
        assert node == 'n3', p.provenance['cp_fingerprint']
        rec.update(json.loads((results / 'fingerprints' / f'{h}.json').read_text()))
    old_opts, new_opts = old['stage_options'], new['stage_options']
    assert 'noatime' not in old_opts.split(',') and 'nosuid' not in old_opts.split(','), old_opts
    assert {'noatime', 'nosuid'} <= set(new_opts.split(',')), new_opts
    assert new['stage_mount'] == str(results)

    from clusterproof.analysis.attribution import attribution
    monkeypatch.setenv('CLUSTERPROOF_RESULTS', str(results))
    lines = attribution([before, after], types.SimpleNamespace(at=1, n_before=1, n_after=1))
    assert lines == [f'stage_mount {old["stage_mount"]} -> {results} on n3',
                     f'stage_options {old_opts} -> {new_opts} on n3'], lines
    print('\n'.join(lines))


def _hpcc_session(results, env):
    proc = run_reframe(['-c', 'reframe_checks/hpcc.py', '-r', '--system', 'local'],
                       results, extra_env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert 'Ran 1/1 test case(s)' in proc.stdout, proc.stdout[-3000:]


def _libmpi(binary):
    """The path of the libmpi ``binary`` loads (ldd)."""
    out = subprocess.run(['ldd', binary], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        name, _, rest = line.strip().partition(' => ')
        if name.startswith('libmpi.so'):
            return name, rest.split(' (')[0]
    pytest.skip(f'{binary} loads no libmpi.so')


@pytest.mark.slow
@pytest.mark.skipif(shutil.which('hpcc') is None or shutil.which('objcopy') is None,
                    reason="needs Debian's hpcc (built against its OpenMPI) and objcopy")
def test_attribution_names_another_build_of_the_mpi_library(tmp_path, monkeypatch):
    """Two sessions of HPCC (Debian's, an MPI binary) on ``local``: the
    second loads, through LD_LIBRARY_PATH, a copy of the libmpi of the
    first with one section added (another build of the same library, code
    unchanged). The binary is the same; the attribution names the library's
    path and sha256 before and after."""
    name, lib = _libmpi(shutil.which('hpcc'))
    libdir = tmp_path / 'lib'
    libdir.mkdir()
    note = tmp_path / 'build-note'
    note.write_text('another build of the same library\n')
    subprocess.run(['objcopy', '--add-section', f'.note.clusterproof={note}', lib,
                    str(libdir / name)], check=True)
    results = tmp_path / 'results'
    _hpcc_session(results, {})
    _hpcc_session(results, {'LD_LIBRARY_PATH': str(libdir)})
    before, after = _points(results, 'HPL_Tflops')

    old, new = (p.provenance['cp_mpi_library'] for p in (before, after))
    assert old.split()[0] == lib and len(old.split()[1]) == 64, old
    assert new.split()[0] == str(libdir / name), new
    assert before.provenance['cp_binary_sha256'] == after.provenance['cp_binary_sha256']
    assert before.provenance['cp_fingerprint'] == after.provenance['cp_fingerprint']

    from clusterproof.analysis.attribution import attribution
    monkeypatch.setenv('CLUSTERPROOF_RESULTS', str(results))
    lines = attribution([before, after], types.SimpleNamespace(at=1, n_before=1, n_after=1))
    sha_old, sha_new = old.split()[1][:12], new.split()[1][:12]
    assert lines == [f'MPI library {old.split()[0]} sha256 {sha_old}... -> '
                     f'{libdir / name} sha256 {sha_new}...'], lines
    print('\n'.join(lines))


def test_the_mpi_library_changed_on_some_nodes_is_named_with_them():
    """Values as the checks record them (``binary_identity``): every node
    alike before, n3 loading another build after; then the same library
    loaded from another path on every node."""
    from clusterproof.site.fingerprint import binary_identity
    from clusterproof.analysis.attribution import attribution
    lib, a, b = '/usr/lib/x86_64-linux-gnu/libmpi.so.40', 'a1' * 32, 'b2' * 32

    def point(libs):
        nodes = {n: {'binary_sha256': 'c3' * 32, 'mpi_library': path, 'mpi_library_sha256': sha}
                 for n, (path, sha) in libs.items()}
        sha, mpi = binary_identity(nodes)
        return types.SimpleNamespace(provenance={'cp_binary_sha256': sha, 'cp_mpi_library': mpi})

    alike = point({f'n{i}': (lib, a) for i in range(1, 5)})
    n3 = point({**{f'n{i}': (lib, a) for i in (1, 2, 4)}, 'n3': (lib, b)})
    assert n3.provenance['cp_mpi_library'] == f'n[1-2,4]={lib} {a};n3={lib} {b}'
    c = types.SimpleNamespace(at=1, n_before=1, n_after=1)
    assert attribution([alike, n3], c) == [
        f'MPI library libmpi.so.40 sha256 {a[:12]}... -> {b[:12]}... (same path) on n3']
    moved = point({f'n{i}': ('/opt/ompi/lib/libmpi.so.40', a) for i in range(1, 5)})
    assert attribution([alike, moved], c) == [
        f'MPI library {lib} sha256 {a[:12]}... -> /opt/ompi/lib/libmpi.so.40 sha256 {a[:12]}...']


def _night(env, *rfm_args):
    """One real run of scripts/nightly on system local (DevZeroCopy with one
    process, one copy of 64 MiB, ``rfm_args`` after)."""
    proc = subprocess.run([str(REPO / 'scripts' / 'nightly'), '--system', 'local', '--',
                           '-n', 'DevZeroCopy%num_threads=1', '-S', 'copy_mib=64',
                           '-S', 'repeats=1', *rfm_args],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=WAIT_S)
    out = proc.stdout + proc.stderr
    assert 'Ran 1/1 test case(s)' in out, out[-3000:]
    return proc, out


@pytest.mark.slow
def test_a_night_run_with_a_setting_on_the_command_line_names_it_as_the_cause(tmp_path):
    """Two real nights of scripts/nightly on system local, references blessed
    from the first; the second run with ``-S block_size=512`` (ReFrame records
    the variable and the command line in its run report): the webhook
    message of the regression names the setting as the suspected cause."""
    results, refs, conf = tmp_path / 'results', tmp_path / 'refs', tmp_path / 'notify'
    conf.mkdir()
    (conf / 'local.yaml').write_text('channels: {webhook: {url_env: CP_TEST_HOOK}}\n')
    hook = Receiver()
    try:
        env = reframe_env(results, extra={
            'CLUSTERPROOF_CHECKS': str(REPO / 'tests' / 'checks' / 'results'),
            'CLUSTERPROOF_REFERENCES': str(refs), 'CLUSTERPROOF_NOTIFY_CONFIG': str(conf),
            'CP_TEST_HOOK': hook.url + '/hook'})
        _night(env)
        proc = clusterproof(['bless', '--write', '--reason', 'first night'], results, refs)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        proc, out = _night(env, '-S', 'block_size=512')
        assert proc.returncode == 1 and 'nightly: REGRESSION' in out, out[-3000:]
        texts = [body['text'] for _, body in hook.bodies]
    finally:
        hook.close()
    (line,) = [x for t in texts for x in t.splitlines() if 'copy_bw' in x]
    # 512-byte blocks instead of 1 MiB: a large drop, whose size depends on
    # the machine's load (-89 % to -9x % seen)
    drop = re.search(r' copy_bw (-\d+(?:\.\d+)?)% since ', line)
    assert 'REGRESSION' in line and drop and float(drop.group(1)) < -50, texts
    assert 'suspected cause: block_size: 1M -> 512 (set on the command line);' in line, texts
