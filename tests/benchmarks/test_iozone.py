"""IOzone: parser on recorded real output, command lines and limits, the
generated pixstor job scripts (ReFrame dry run), and end to end on this
machine. End to end on the local Slurm cluster is asserted on the run of the
whole suite there (tests/suite/test_suite_emu.py), which runs every IOzone case."""

import os
import re
import subprocess
from pathlib import Path

import pytest

from clusterproof import ClusterproofError
from clusterproof import hostlist
from clusterproof.methods import iozone
from clusterproof.methods import sizing
from clusterproof.parsers import ParseError
from clusterproof.parsers import iozone as parser

from conftest import DATA, REPO, WAIT_S, run_reframe

REC = DATA / 'iozone'


def parse(name):
    return parser.parse((REC / name).read_text(), name)


# -- parser -------------------------------------------------------------------

def test_sequential_cluster_mode_on_four_nodes():
    write = parse('emu-cluster-seq-write.txt')
    assert write['version'] == '3.489'
    run, = write['runs']
    assert run['threads'] == 8 and run['cluster_mode'] and run['direct_io']
    assert run['file_kb'] == 4096 and run['record_kb'] == 1024
    t = run['tests']['initial writers']
    assert t['children'] == 955558.45 and t['unit'] == 'kB/s'
    assert t['min'] <= t['avg'] <= t['max']
    assert not t['stonewalled'] and t['xfer_fraction'] == 1.0
    read = parse('emu-cluster-seq-read.txt')['runs'][0]['tests']['readers']
    assert read['children'] == 1865996.97
    assert read['stonewalled'] and read['xfer_fraction'] == 0.75      # 3072 of 4096 kB


def test_random_ops_and_stonewalling():
    run, = parse('emu-cluster-random.txt')['runs']
    rr, rw = run['tests']['random readers'], run['tests']['random writers']
    assert rr['unit'] == rw['unit'] == 'ops/s'
    assert rr['children'] == 36345.68 and rw['children'] == 50007.27
    assert rr['expected_xfer'] == 1024                               # 4096 kB / 4 kB
    assert rr['stonewalled'] and rr['min_xfer'] == 917
    assert set(parser.stonewalled_tests(parse('emu-cluster-random.txt'))) == {
        'random readers', 'random writers'}


def test_without_cluster_mode_and_stonewall_off():
    walled = parse('local-seq-write-stonewalled.txt')['runs'][0]
    assert not walled['cluster_mode'] and walled['tests']['initial writers']['stonewalled']
    x = parse('local-seq-write-x.txt')['runs'][0]
    assert x['stonewall_off'] and not x['tests']['initial writers']['stonewalled']


def test_two_runs_in_one_job_output_and_single_process():
    parsed = parse('emu-check-random-t1.txt')
    assert [r['threads'] for r in parsed['runs']] == [1, 1]
    assert parser.find_test(parsed, 'initial writers')['children'] == 164339.64
    assert parser.find_test(parsed, 'random writers')['children'] == 2820.81
    with pytest.raises(ParseError, match="no 'readers' result"):
        parser.find_test(parsed, 'readers')


def test_failed_client_is_an_error():
    with pytest.raises(ParseError, match='no "Children see throughput"'):
        parse('local-cluster-client-failed.txt')


def test_truncated_and_foreign_output():
    text = (REC / 'local-cluster-seq-write.txt').read_text()
    with pytest.raises(ParseError, match='cut short'):
        parser.parse(text.replace('iozone test complete.', ''), 'cut.txt')
    with pytest.raises(ParseError, match='Min xfer'):
        parser.parse(re.sub(r'.*Min xfer.*\n', '', text), 'nominxfer.txt')
    with pytest.raises(ParseError, match='no IOzone banner'):
        parser.parse('hello\n', 'other.txt')


def test_units():
    assert parser.to_gbps(1e6) == pytest.approx(1.024)
    assert parser.to_mbps(1000) == pytest.approx(1.024)


# -- command lines and limits -------------------------------------------------

def test_thread_limit():
    assert iozone.check_threads(1024, '3.489') == 1024
    with pytest.raises(ClusterproofError, match='at most 1024 threads.*1025 were asked'):
        iozone.check_threads(1025, '3.489')
    with pytest.raises(ClusterproofError, match='at most 256'):
        iozone.check_threads(512, '3.430')
    with pytest.raises(ClusterproofError, match='whole number'):
        iozone.check_threads(0)


def test_published_command_lines():
    storage = {'client_nodes': 16, 'client_ram_gib': 128, 'server_ram_gib': 1024,
               'total_data': '8T'}
    sz = sizing.compute(storage, 64)
    write, read = iozone.sequential_passes('/opt/iozone', sz, 64, 'threadlist')
    assert write == ['/opt/iozone', '-i0', '-c', '-e', '-w', '-r', '16M', '-s', '128g', '-t',
                     '64', '-+n', '-+m', 'threadlist']
    assert read[1] == '-i1' and read[2:] == write[2:]
    create, rand = iozone.random_passes('/opt/iozone', sz, 64, 'threadlist')
    assert create == write
    assert rand == ['/opt/iozone', '-i2', '-O', '-w', '-r', '4K', '-s', '128g', '-t', '64',
                    '-+n', '-+m', 'threadlist']
    smoke = sizing.compute(storage, 2, smoke=True)
    w, _ = iozone.sequential_passes('iozone', smoke, 2, 'tl', stonewall=False)
    assert w[-2:] == ['-I', '-x']
    assert iozone.command_line(['iozone', '-i0'], '$(hostname)') == 'iozone -i0 -+h "$(hostname)"'
    assert iozone.command_line(['iozone'], '198.18.0.2') == 'iozone -+h 198.18.0.2'
    for bad in ('a b', '$(touch /tmp/x)', 'n1;reboot', '`id`'):
        with pytest.raises(ClusterproofError, match='master address'):
            iozone.command_line(['iozone'], bad)


def test_thread_lists_per_mode():
    assert iozone.thread_list('sequential', 'acceptance') == [2 ** i for i in range(11)]
    assert iozone.thread_list('random', 'acceptance') == [16, 32, 64, 128, 256, 512]
    assert max(iozone.thread_list('sequential', 'smoke')) <= 8


# -- generated job scripts for pixstor (ReFrame dry run) ----------------------

@pytest.fixture(scope='module')
def pixstor_scripts(tmp_path_factory):
    results = tmp_path_factory.mktemp('pixstor-dry')
    out = run_reframe(['-c', 'reframe_checks/iozone.py', '--system', 'pixstor', '--dry-run'],
                      results, mode='acceptance')
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    scripts = {}
    for script in (results / 'stage').rglob('rfm_job.sh'):
        text = script.read_text()
        kind = 'random' if 'IOzoneRandom' in text else 'sequential'
        threads = int(re.search(r'--threads (\d+)', text).group(1))
        scripts[(kind, threads)] = text
    return scripts


@pytest.mark.slow
def test_pixstor_dry_run_scripts(pixstor_scripts, tmp_path):
    assert sorted(t for k, t in pixstor_scripts if k == 'sequential') == \
        [2 ** i for i in range(11)]
    assert sorted(t for k, t in pixstor_scripts if k == 'random') == [16, 32, 64, 128, 256, 512]
    nodes = 'pixstor-client[01-16]'
    for (kind, threads), text in pixstor_scripts.items():
        assert f'#SBATCH --ntasks={min(threads, 16)}\n' in text
        assert '#SBATCH --ntasks-per-node=1\n' in text
        assert text.count('--exclusive') == 1
        size = f'{8192 // threads}g'                       # 8 TiB / T, as published
        lines = [l for l in text.splitlines() if 'iozone -i' in l]
        assert len(lines) == 2
        first, second = lines
        assert f'-i0 -c -e -w -r 16M -s {size} -t {threads} -+n -+m threadlist' in first
        assert ' -I' not in first and ' -x' not in first        # as published
        if kind == 'sequential':
            assert f'-i1 -c -e -w -r 16M -s {size} -t {threads} -+n -+m threadlist' in second
        else:
            assert f'-i2 -O -w -r 4K -s {size} -t {threads} -+n -+m threadlist' in second
        assert 'export RSH="$PWD/iozone-rsh"' in text
        # the scratch directory is the declared one and is removed by the script
        workdir = re.search(r'--workdir (\S+)', text).group(1)
        assert workdir.startswith('/mmfs1/clusterproof/')
        assert f'rm -rf -- {workdir}' in text
    # Run the placement command of the 1024-thread script as the job would.
    text = pixstor_scripts[('sequential', 1024)]
    cmd = next(l for l in text.splitlines() if ' placement ' in l)
    env = dict(os.environ, SLURM_JOB_NODELIST=nodes)
    subprocess.run(['bash', '-c', cmd], cwd=tmp_path, env=env, check=True)
    rows = [l.split() for l in (tmp_path / 'threadlist').read_text().splitlines()]
    names = hostlist.expand(nodes)
    assert [r[0] for r in rows] == [names[i % 16] for i in range(1024)]
    assert {(r[1], r[2]) for r in rows} == {(re.search(r'--workdir (\S+)', text).group(1),
                                             re.search(r'--iozone (\S+)', text).group(1))}


# -- end to end ---------------------------------------------------------------

def _check_run(out, results, scratch_dir, expected):
    report = out.stdout[-4000:] + out.stderr[-2000:]
    assert out.returncode == 0, report
    assert f'Ran {expected}/{expected} test case(s)' in out.stdout, report
    assert 'FAIL' not in out.stdout, report
    # nothing left in the scratch directory but the registry
    left = [p.name for p in Path(scratch_dir).iterdir()] if Path(scratch_dir).exists() else []
    assert set(left) <= {'.clusterproof-registry'}, left


@pytest.mark.slow
def test_end_to_end_on_this_machine(local_iozone_run):
    out, results = local_iozone_run
    _check_run(out, results, results / 'scratch', 1)
    assert 'P: read_gbs' in out.stdout


# -- standalone job scripts ---------------------------------------------------

@pytest.mark.parametrize('script, args, ram, words', [
    ('iozone-n-to-n.sbatch', ['/', '8', '32m'], '0', 'system directory'),
    ('iozone-n-to-n.sbatch', ['LINK', '8', '32m'], '0', 'system directory'),
    ('iozone-n-to-n.sbatch', ['SCRATCH', '1025', '32m'], '0', '1 to 1024 threads'),
    ('iozone-n-to-n.sbatch', ['SCRATCH', '4', '32m', 'backwards'], '0', 'unknown test'),
    ('ior-n-to-1.sbatch', ['SCRATCH', '8', '1m'], '1', 'less than twice the RAM'),
    ('ior-n-to-1.sbatch', ['SCRATCH', 'x', '32m'], '0', 'not a whole number'),
    ('ior-n-to-1.sbatch', ['SCRATCH', '8', '100000t'], '0', 'only .* is free'),
])
def test_sbatch_templates_refuse_before_writing(tmp_path, script, args, ram, words):
    scratch_dir = tmp_path / 'scratch'
    (tmp_path / 'link').symlink_to('/etc')                 # resolves to a system directory
    args = [a.replace('SCRATCH', str(scratch_dir)).replace('LINK', str(tmp_path / 'link'))
            for a in args]
    env = dict(os.environ, SLURM_JOB_NODELIST='n[1-4]', SLURM_JOB_ID='1', RAM_GIB=ram,
               CLUSTERPROOF_REPO=str(REPO), IOR='/bin/true', IOZONE='/bin/true')
    out = subprocess.run(['bash', str(REPO / 'slurm' / script)] + args, env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=WAIT_S)
    assert out.returncode == 2, out.stdout + out.stderr
    assert re.search(words, out.stderr), out.stderr
    assert not scratch_dir.exists() or list(scratch_dir.iterdir()) == []


# ------------------------------------------------- several runs in one output

def test_test_in_several_runs_of_one_kind_is_read_from_the_last():
    """Two runs of the same write pass appended into one file (recorded):
    every run is returned; the test is read from the last."""
    parsed = parser.parse((DATA / 'iozone' / 'local-seq-write-twice.txt').read_text(), 'twice')
    first, last = parsed['runs']
    assert first['tests']['initial writers']['children'] == 1172292.59
    assert last['tests']['initial writers']['children'] == 1558774.81
    assert parser.find_test(parsed, 'initial writers')['children'] == 1558774.81


def test_test_in_several_runs_that_differ_is_refused():
    """1 then 2 threads appended into one file (recorded): no run of them
    is the result for 'initial writers'."""
    parsed = parser.parse((DATA / 'iozone' / 'local-seq-write-t1-then-t2.txt').read_text(), 'log')
    with pytest.raises(ParseError, match=r"^log \('initial writers'\) holds 2 IOzone runs that "
                                         r"differ \(threads: 1 \(run 1\), 2 \(run 2\)\)"):
        parser.find_test(parsed, 'initial writers')
