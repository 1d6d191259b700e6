"""The published storage plan at its shape (clusterproof published-shape), reduced:
a 16-node local Slurm cluster onboarded with ``clusterproof init``, the
acceptance plan at 16 and 32 threads with tiny files, but IOzone's random
case (its clients are placed and started as the sequential case's, and each
of its runs cost some 35 s of starting them). Checked on what ran:
round-robin threadlists (32 threads = 2 per node), IOR's -C reads from
another node, the cache-rule sizes from the declared RAM (tiny says tiny),
stonewalled IOzone runs flagged, every figure emulated and tiny, the report
with a curve over every thread count that ran. The 1,024-thread placement is
checked without running it. Unit parts: tiny sizes and declared limits."""

import collections
import json
import os
import re
import runpy
import signal
import subprocess
from pathlib import Path

import pytest

from clusterproof import ClusterproofError
from clusterproof.methods import placement, sizing
from clusterproof.methods.sizing import GIB, MIB
from clusterproof.parsers import ior as ior_parser
from clusterproof.parsers import iozone as iozone_parser
from clusterproof.site import binaries
from conftest import CLUSTER_POLL_ENV, REPO, VENV_BIN, WAIT_S, have_netns, report_cases

NODES = [f'n{i}' for i in range(1, 17)]
#: one thread per node, then two: the threadlist wraps round the nodes. 32
#: and not 64: each IOzone client is a job step of its own, started twice
#: per IOzone case, and 64 threads cost as many steps as 16 and 32 together
THREADS = (16, 32)
#: the higher thread count, above the limit of the MPI benchmarks
HIGH = THREADS[-1]
MPI_LIMIT = 16
NAME = 'emu16-tiny'
#: the benchmarks of the reduced run (``--benchmark``) and their checks
BENCHMARKS = {'iozone-sequential': 'IOzoneSequential', 'ior': 'IorSharedFile',
              'mdtest': 'Mdtest'}
#: IOR and mdtest are held to 16 ranks in the reduced run (more ranks take
#: minutes to start on 2 cores): 32 shows the declared-limit skip
#: where an IOR built by hand is looked for besides the Spack view and PATH
IOR_DIR = Path('/opt/ior-4.0.0/bin')
HAVE_IOR = binaries.locate('ior') is not None or (IOR_DIR / 'ior').is_file()
need_ior = pytest.mark.skipif(
    not HAVE_IOR, reason=f'ior not found in the Spack view ({binaries.spack_view()}), on PATH '
                         f'or in {IOR_DIR}; build it with: {binaries.build_command("ior@4.0.0")}')


# ------------------------------------------------------------------ no cluster

def test_tiny_scale_shrinks_only_the_bytes():
    storage = {'client_nodes': 16, 'client_ram_gib': 128, 'server_ram_gib': 1024}
    full = sizing.compute(storage, 64)
    tiny = sizing.compute(storage, 64, scale='tiny')
    assert (tiny.threads, tiny.per_thread, tiny.transfer) == (64, MIB, MIB)
    assert tiny.tiny and tiny.smoke and not tiny.direct_io      # buffered, as published
    assert 'tiny' in tiny.basis and 'tiny               yes' in tiny.describe()
    assert not full.tiny and full.meets_cache_rule and full.transfer_arg == '16m'
    # tiny wins over smoke (no -I), in any mode
    assert not sizing.compute(storage, 4, smoke=True, scale='tiny').direct_io
    with pytest.raises(ClusterproofError, match="cp_scale='huge': not a scale; choose one of "
                                                'full, tiny'):
        sizing.compute(storage, 4, scale='huge')


def test_declared_thread_limit():
    assert placement.over_declared_limit({}, 'iozone', 4096) is None
    assert placement.over_declared_limit({'max_threads': 512}, 'ior', 512) is None
    why = placement.over_declared_limit({'max_threads': {'ior': 256}}, 'ior', 512)
    assert why == ("512 threads are more than the 256 this system declares it can hold for ior "
                   "(extras['storage']['max_threads']['ior'] = 256); not run")
    assert placement.over_declared_limit({'max_threads': {'ior': 256}}, 'iozone', 1024) is None
    with pytest.raises(ClusterproofError, match=r"\['max_threads'\] = 0: want a whole number"):
        placement.over_declared_limit({'max_threads': 0}, 'mdtest', 4)
    with pytest.raises(ClusterproofError, match="names 'fio': not a storage benchmark"):
        placement.over_declared_limit({'max_threads': {'fio': 4}}, 'ior', 4)
    emu = runpy.run_path(str(REPO / 'site_config' / 'systems' / 'emu.py'))
    assert emu['system']['partitions'][0]['extras']['storage']['max_threads'] == \
        emu['MAX_THREADS']


def test_placement_at_1024_threads_is_64_per_node():
    pl = placement.place('n[1-16]', 1024)
    assert pl.threads_per_node() == [64] * 16
    assert pl.order() == NODES * 64
    proc = subprocess.run([str(VENV_BIN / 'clusterproof'), 'placement', '--nodes', 'n[1-16]',
                           '--threads', '1024', '--format', 'hostfile'],
                          capture_output=True, text=True, cwd=REPO)
    lines = proc.stdout.split()
    assert proc.returncode == 0 and len(lines) == 1024
    assert collections.Counter(lines) == {n: 64 for n in NODES}
    assert lines[:17] == NODES + ['n1']
    # more threads than the 2 CPUs of an emulated node: srun overcommits
    assert '--overcommit' in pl.srun_args(cores_per_node=2)


# ------------------------------------------------------------------ for real

def _cp(*args, env):
    return subprocess.run([str(VENV_BIN / 'clusterproof'), *map(str, args)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)


def _run_to_its_cleanup(argv, timeout, **kw):
    """``subprocess.run`` of a script that brings its own cluster up and
    down: interrupted (Ctrl-C) or out of time, the script gets SIGINT and is
    waited for while it takes its cluster down (subprocess.run would kill
    it, and its cluster would outlive the test's mount namespace). In a
    session of its own, so that it gets that one SIGINT and no second one
    from the terminal to cut its cleanup short."""
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True, **kw) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except BaseException:
            proc.send_signal(signal.SIGINT)
            try:
                proc.communicate(timeout=CLEANUP_S)
            except subprocess.TimeoutExpired:
                proc.kill()
            raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


#: how long an interrupted published-shape run may take to bring its cluster down
CLEANUP_S = 300

#: the instance of the reduced run's own 16-node cluster, beside the session's
SHAPE_INSTANCE = int(os.environ.get('CLUSTERPROOF_TEST_SHAPE_INSTANCE', '5'))


@pytest.fixture(scope='module')
def shape(tmp_path_factory):
    """One reduced run of clusterproof published-shape on its own 16-node cluster
    (instance ``$CLUSTERPROOF_TEST_SHAPE_INSTANCE``, default 5), which the
    script brings up and down; the session's 4-node cluster is left alone."""
    if os.environ.get('CLUSTERPROOF_TEST_PUBLISHED_SHAPE') == '0':
        pytest.skip('CLUSTERPROOF_TEST_PUBLISHED_SHAPE=0: '
                    'the reduced published-shape run is left out')
    if not have_netns():
        pytest.skip('the local cluster needs root and network namespaces '
                    '(ip, nsenter, unshare --net)')
    results = tmp_path_factory.mktemp('shape')
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(('SLURM_', 'CLUSTERPROOF_EMU_', 'CLUSTERPROOF_CLUSTER_DIR'))}
    env.update(CLUSTER_POLL_ENV)
    if (IOR_DIR / 'ior').is_file():
        env['PATH'] = f'{IOR_DIR}:{env["PATH"]}'
    proc = _run_to_its_cleanup(
        [str(VENV_BIN / 'python'), '-m', 'clusterproof', 'published-shape',
         '--instance', str(SHAPE_INSTANCE), '--threads', ','.join(map(str, THREADS)),
         '--limit', f'ior={MPI_LIMIT}', '--limit', f'mdtest={MPI_LIMIT}',
         *[a for b in BENCHMARKS for a in ('--benchmark', b)],
         '--results', str(results), '--keep-work', '--', '--keep-stage-files'],
        cwd=REPO, env=env, timeout=WAIT_S)
    assert not (REPO / 'site_config' / 'systems' / f'{NAME}.py').exists()
    out = proc.stdout + proc.stderr
    cases = {(tc['name'].split()[0], tc['threads']): tc for tc in report_cases(results)}
    return proc, out, results, cases


def _job_out(case, name='rfm_job.out'):
    return (Path(case['outputdir']) / name).read_text()


def test_the_plan_ran_emulated_and_tiny_with_progress(shape):
    proc, out, results, cases = shape
    assert proc.returncode == 0, out[-4000:]
    expected = {(check, t) for check in BENCHMARKS.values() for t in THREADS}
    assert set(cases) == expected
    for key, case in cases.items():
        mpi = key[0] in ('IorSharedFile', 'Mdtest')
        want = 'skip' if mpi and (not HAVE_IOR or key[1] > MPI_LIMIT) else 'pass'
        assert case['result'] == want, (key, case.get('fail_reason'))
        assert case['system'] == NAME and case['cp_mode'] == 'acceptance'
        assert case['cp_scale'] == 'tiny' and case['cp_smoke'] is True
        assert case['cp_emulated'] is True, key
        if want == 'pass':
            assert sorted(case['job_nodelist'], key=lambda n: int(n[1:])) == NODES
    # progress: which benchmark, which thread count, n of m, elapsed
    n = len(expected)
    assert re.search(rf'\[1/{n} 0:00:\d\d\] IOzoneSequential threads=16: running', out), out
    assert re.search(rf'\[{n}/{n} \d+:\d\d:\d\d\] Mdtest threads={HIGH}: (OK|SKIP) in \d+ s',
                     out), out
    assert re.search(r'cluster cp\d down', out)
    assert list(results.glob('published-shape-*/repo/site_config/systems/emu.py'))  # --keep-work


@need_ior
def test_thread_counts_above_the_declared_limit_are_refused(shape):
    _proc, _out, _results, cases = shape
    for check, benchmark in (('IorSharedFile', 'ior'), ('Mdtest', 'mdtest')):
        reason = (f"{HIGH} threads are more than the {MPI_LIMIT} this system declares it can "
                  f"hold for {benchmark} (extras['storage']['max_threads'][{benchmark!r}] = "
                  f"{MPI_LIMIT}); not run")
        assert cases[(check, HIGH)]['result'] == 'skip'
        assert reason in cases[(check, HIGH)]['cp_skip_reason']


def test_iozone_threadlists_are_round_robin(shape):
    _proc, _out, _results, cases = shape
    for kind in [c for c in BENCHMARKS.values() if c.startswith('IOzone')]:
        for threads in THREADS:
            case = cases[(kind, threads)]
            rows = (Path(case['stagedir']) / 'threadlist').read_text().splitlines()
            nodes = [r.split()[0] for r in rows]
            assert nodes == NODES * (threads // 16), (kind, threads)
            assert set(collections.Counter(nodes).values()) == {threads // 16}
            assert case['client_nodes'] == 16


def test_stonewalled_iozone_runs_are_flagged(shape):
    """Each IOzone case's ``iozone_stonewalled`` says what its output shows
    (every stonewalled phase with the fraction its slowest process moved, or
    nothing). Whether a run is stonewalled at all depends on this machine's
    timing that day, so no count is asserted here; a stonewalled run's flag
    is tested on recorded output in tests/benchmarks/test_iozone.py."""
    _proc, _out, _results, cases = shape
    seen = 0
    for (kind, threads), case in cases.items():
        if not kind.startswith('IOzone'):
            continue
        parsed = iozone_parser.parse(_job_out(case), 'rfm_job.out')
        walled = iozone_parser.stonewalled_tests(parsed)
        assert case['iozone_stonewalled'] == ','.join(
            f'{n}={f:.3f}' for n, f in sorted(walled.items())), (kind, threads)
        assert case['iozone_file_size'] == '1m' and case['iozone_direct_io'] is False
        # the published command: stonewalling on (no -x), no O_DIRECT
        assert re.search(r'Command line used: \S*iozone -i0 -c -e -w -r 1M -s 1m -t '
                         rf'{threads} -\+n -\+m threadlist -\+h n1$', _job_out(case), re.M)
        seen += 1
    assert seen == len(THREADS)


def test_cache_rule_sizes_from_the_declared_ram(shape):
    _proc, _out, results, _cases = shape
    [system_file] = results.glob(f'published-shape-*/repo/site_config/systems/{NAME}.py')
    assert 'discovered by ``clusterproof init``' in system_file.read_text()
    system = runpy.run_path(str(system_file))['system']
    storage = system['partitions'][0]['extras']['storage']
    assert storage['client_nodes'] == 16 and storage['max_threads']
    ram = int(16 * storage['client_ram_gib'] * GIB)
    full = sizing.compute(storage, 64)
    assert full.cache_ram == ram and full.total >= 2 * ram
    assert full.per_thread == -(-2 * ram // 64 // (16 * MIB)) * 16 * MIB
    assert 'cache rule' in full.basis and f"16 client nodes x {storage['client_ram_gib']} GiB" \
        in full.basis
    tiny = sizing.compute(storage, 64, scale='tiny')
    assert tiny.per_thread_arg == '1m' and tiny.basis.startswith('tiny: 1m per thread')


@need_ior
def test_ior_reads_what_another_node_wrote(shape):
    _proc, _out, _results, cases = shape
    for threads in [t for t in THREADS if cases[('IorSharedFile', t)]['result'] == 'pass']:
        out = _job_out(cases[('IorSharedFile', threads)])
        runs = [ior_parser.parse_text(part, f'IOR {threads}')
                for part in re.split(r'(?=^IOR-\S+: MPI Coordinated)', out, flags=re.M)
                if 'MPI Coordinated' in part]
        write, read = runs
        assert not write.reorder and read.reorder
        assert re.search(r'^clients per node\s*: ' + str(threads // 16) + r'$', out, re.M)
        assert re.search(r'^nodes\s*: 16$', out, re.M)
        # The same placement as mdtest's, whose node map shows where each rank
        # ran: rank 1 is on another node than rank 0, so IOR's -C reads with a
        # shift of one rank: the data rank r+1 wrote on the next node.
        nodemap = re.search(r'^Nodemap: (\d+)$', _job_out(cases[('Mdtest', threads)]),
                            re.M).group(1)
        assert nodemap == ('1' + '0' * 15) * (threads // 16)
        order = placement.place(NODES, threads).order()
        assert all(order[(r + 1) % threads] != order[r] for r in range(threads))


def test_report_has_a_curve_over_every_thread_count(shape):
    _proc, out, _results, cases = shape
    report = Path(re.search(r'report: (\S+\.html)', out).group(1))
    text = report.read_text()
    assert 'EMULATED' in text and 'SMOKE' in text
    ran = sorted({t for (_k, t), c in cases.items() if c['result'] == 'pass'})
    curves = re.findall(r'"x":\[([0-9., ]+)\]', text)
    assert [float(t) for t in ran] in [[float(v) for v in c.split(',')] for c in curves], \
        curves[:10]
    assert json.dumps(NAME)[1:-1] in text


def _sigint_ignored():
    # what an interactive shell does for a job started with `cmd &`
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_sigint_stops_the_script_started_in_the_background(emu_cluster, tmp_path):
    """Started with SIGINT ignored (a background job of an interactive
    shell), the script still stops on SIGINT while ReFrame runs a job:
    ReFrame cancels it, the scratch copy goes, the log stays, exit 130. The
    session's cluster is reused (same node count) and so left up."""
    import signal
    from conftest import EMU_INSTANCE, wait_for
    nodes = emu_cluster['CLUSTERPROOF_EMU_NODES']
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(('SLURM_', 'CLUSTERPROOF_EMU_', 'CLUSTERPROOF_CLUSTER_DIR'))}
    results = tmp_path / 'results'
    log = tmp_path / 'out.txt'
    with open(log, 'w') as out:
        proc = subprocess.Popen(
            [str(VENV_BIN / 'python'), '-m', 'clusterproof', 'published-shape',
             '--instance', str(EMU_INSTANCE), '--nodes', nodes, '--threads', '1',
             '--benchmark', 'iozone-sequential', '--results', str(results)],
            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, text=True,
            preexec_fn=_sigint_ignored)
    try:
        def running():
            if proc.poll() is not None:
                pytest.fail(f'the script ended before its job ran:\n{log.read_text()[-3000:]}')
            squeue = subprocess.run(['squeue', '-h', '-o', '%j'], env={**os.environ, **emu_cluster},
                                    capture_output=True, text=True).stdout
            return 'threads=1: running' in log.read_text() and 'IOzone' in squeue
        wait_for('the IOzone job of the plan in the queue', running)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = log.read_text()
    assert proc.returncode == 130, text[-3000:]
    assert 'published-shape: interrupted' in text, text[-3000:]
    assert 'using the cluster up at instance' in text and 'cluster down' not in text, text[-3000:]
    assert not list(results.glob('published-shape-*/repo')), 'the scratch copy was left'
    assert list((results / 'reports').glob('published-shape-*.log'))
    squeue = subprocess.run(['squeue', '-h', '-o', '%i %j'], env={**os.environ, **emu_cluster},
                            capture_output=True, text=True).stdout
    assert 'IOzone' not in squeue, squeue
