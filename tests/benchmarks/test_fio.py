"""fio: the generated job file, the JSON parser on recorded fio 3.33 output,
the references, and the emulated-pmem and psync checks end to end through
ReFrame on ``local`` and on the local cluster ``emu``."""

import glob
import json
import os
import re
import shutil
import signal
import subprocess

import pytest
import yaml

from clusterproof import ClusterproofError
from clusterproof.methods.fiojob import FioJob, fio_size, worst_case_job
from clusterproof.parsers.fio import parse_engines
from clusterproof.parsers import ParseError
from clusterproof.parsers import fio
from clusterproof.reframe_io import runner

from conftest import (DATA, REPO, assert_cases, reframe_env, report_cases, run_reframe,
                      wait_for, with_report_file)

FIO = DATA / 'fio'


def read(name):
    return (FIO / name).read_text()


# -- job file ---------------------------------------------------------------

def test_acceptance_job_is_the_published_one():
    text = worst_case_job('libpmem', '/mnt/nvdimm', mode='acceptance').render()
    lines = text.splitlines()
    glob_opts = lines[1:lines.index('')]
    assert glob_opts == ['blocksize=4k', 'sync=1', 'direct=1', 'buffered=0', 'ioengine=libpmem',
                         'group_reporting=1', 'directory=/mnt/nvdimm', 'lat_percentiles=1',
                         'iodepth=1', 'loops=10']
    assert '[randread_8files]\nrw=randread\nfilesize=1G\nnumjobs=4\n' in text
    assert '[randwrite_8files]\nrw=randwrite\nfilesize=1G\nnumjobs=4\n' in text


def test_mode_sets_sizes_and_overrides_win():
    smoke = worst_case_job('psync', '/scratch/x', mode='smoke')
    assert (smoke.filesize, smoke.loops, smoke.numjobs) == (16 * 2 ** 20, 1, 2)
    assert 'ioengine=psync' in smoke.render()
    job = worst_case_job('psync', '/scratch/x', mode='nightly', filesize=2 ** 20, loops=3)
    assert (job.filesize, job.loops, job.numjobs) == (2 ** 20, 3, 4)


def test_devdax_aligns_block_size_and_turns_direct_off():
    job = worst_case_job('dev-dax', '/dev/dax0.0', mode='smoke', devdax_align=2 * 2 ** 20)
    text = job.render()
    assert 'blocksize=2M' in text and 'direct=0' in text and 'buffered' not in text
    assert 'filename=/dev/dax0.0' in text and 'offset_increment=16M' in text
    assert job.layout_files('randread_8files') == []


def test_layout_files_follow_fio_names():
    job = worst_case_job('libpmem', '/mnt/nvdimm/t', mode='smoke')
    assert job.layout_files('randwrite_8files') == [
        ('/mnt/nvdimm/t/randwrite_8files.0.0', 16 * 2 ** 20),
        ('/mnt/nvdimm/t/randwrite_8files.1.0', 16 * 2 ** 20)]


@pytest.mark.parametrize('target', ['relative/dir', '/a:b', '/a\nb', '/a b', '/a;rm', '/a/../b',
                                    '/x$HOME'])
def test_unsafe_paths_are_refused(target):
    with pytest.raises(ClusterproofError, match='fio job'):
        worst_case_job('libpmem', target, mode='smoke')


@pytest.mark.parametrize('field,value', [('filesize', 0), ('numjobs', -1), ('loops', 1.5)])
def test_bad_numbers_are_refused(field, value):
    kw = dict(engine='psync', target='/s', filesize=4096, numjobs=1, loops=1)
    kw[field] = value
    with pytest.raises(ClusterproofError, match=field):
        FioJob(**kw)


def test_fio_size_units():
    assert [fio_size(n) for n in (2 ** 30, 3 * 2 ** 20, 8192, 1000)] == ['1G', '3M', '8k', '1000']


def test_generated_job_parses_with_real_fio(tmp_path):
    if not shutil.which('fio'):
        pytest.skip('fio not installed')
    job = worst_case_job('psync', str(tmp_path), mode='smoke')
    (tmp_path / 'j.fio').write_text(job.render())
    out = subprocess.run(['fio', '--parse-only', str(tmp_path / 'j.fio')],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    engines = parse_engines(subprocess.run(['fio', '--enghelp'], capture_output=True,
                                           text=True).stdout)
    assert 'psync' in engines and 'libpmem' in engines


# -- parser on recorded output ----------------------------------------------

def test_group_reporting_gives_one_entry_per_section():
    doc = fio.load(read('libpmem-emulated-randwrite.json'))
    assert [j['jobname'] for j in doc['jobs']] == ['randwrite_8files']
    assert doc['global options']['ioengine'] == 'libpmem'


def test_randwrite_figures_from_lat_ns():
    figs = fio.section_figures(read('libpmem-emulated-randwrite.json'), 'randwrite_8files')
    raw = json.loads(read('libpmem-emulated-randwrite.json'))['jobs'][0]['write']
    assert figs['iops'] == pytest.approx(raw['iops'])
    assert figs['bw'] == pytest.approx(raw['bw_bytes'] / 2 ** 20)
    assert figs['lat_mean'] == pytest.approx(raw['lat_ns']['mean'] / 1000)
    assert figs['lat_p99_99'] == pytest.approx(raw['lat_ns']['percentile']['99.990000'] / 1000)
    assert figs['lat_p50'] <= figs['lat_p99'] <= figs['lat_p99_9'] <= figs['lat_p99_99']
    assert figs['total_ios'] == 2 * 16 * 2 ** 20 // 4096     # 2 jobs x 16 MiB in 4 KiB


@pytest.mark.parametrize('name,section,ddir', [
    ('libpmem-emulated-randread.json', 'randread_8files', 'read'),
    ('psync-randread.json', 'randread_8files', 'read'),
    ('psync-randwrite.jsonplus', 'randwrite_8files', 'write')])
def test_every_recording_parses(name, section, ddir):
    jobs = fio.parse(read(name), name)
    assert list(jobs[section]) == [ddir]
    assert jobs[section][ddir]['iops'] > 0


def test_text_before_json_is_skipped_and_error_named():
    text = read('libpmem-not-pmem.txt')
    assert not text.startswith('{')
    with pytest.raises(ParseError, match=r'job randwrite_8files: error=95 .*persistent memory'):
        fio.parse(text, 'libpmem-not-pmem.txt')


def test_killed_run_with_error_0_and_no_io_is_refused():
    doc = fio.load(read('libpmem-killed.txt'))
    assert doc['jobs'][0]['error'] == 0
    msgs = fio.problems(doc, 'libpmem-killed.txt')
    assert len(msgs) == 2
    assert 'interrupted by signal 2' in msgs[0] and 'terminating on signal 2' in msgs[0]
    assert 'randwrite_8files' in msgs[1] and 'total_ios=0' in msgs[1]


@pytest.mark.parametrize('name, signal', [('fio-3.33-killed-sigINT.txt', 2),
                                          ('fio-3.33-killed-sigTERM.txt', 15)])
def test_interrupted_run_with_complete_json_is_refused(name, signal):
    """fio stopped by SIGINT/SIGTERM still prints complete JSON, percentiles
    and I/O included: the signal line makes it not a result."""
    doc = fio.load(read(name))
    job = doc['jobs'][0]
    assert job['error'] == 0 and job['write']['total_ios'] > 0
    assert '99.990000' in job['write']['lat_ns']['percentile']
    assert fio.interruption(doc) == [f'fio: terminating on signal {signal}']
    with pytest.raises(ParseError, match=rf'{name}: fio was interrupted by signal {signal}'):
        fio.section_figures(read(name), 'randwrite', name)


def test_time_based_job_cut_short_is_refused_without_the_signal_line():
    """The JSON alone shows the interruption: job_runtime 2.6 s of runtime=60."""
    text = read('fio-3.33-killed-sigINT.txt').replace('fio: terminating on signal 2', '')
    msgs = fio.problems(fio.load(text), 'x')
    assert len(msgs) == 1 and re.search(r'job randwrite: time_based job ran 2\.\d s of its '
                                        r'runtime=60: fio stopped it early', msgs[0])


def test_exit_status_is_a_sign_when_given():
    text = read('psync-randread.json')
    assert fio.problems(fio.load(text), 'x', exit_status=0) == []
    with pytest.raises(ParseError, match='fio reported a failure: fio exited with status 128'):
        fio.parse(text, 'x', exit_status=128)


def test_killed_run_without_output_says_so():
    with pytest.raises(ParseError, match='fio printed nothing: it was killed'):
        fio.parse(read('fio-3.33-killed-sigKILL.txt'), 'fio-3.33-killed-sigKILL.txt')


@pytest.mark.parametrize('name', ['fio-2.1.10-psync-randread.json',
                                  'fio-2.1.10-psync-randwrite.json',
                                  'fio-2.2.10-psync-randread.json'])
def test_fio_2_json_is_refused_naming_the_version_not_as_no_io(name):
    """fio 2.1.10 has no total_ios; 2.x has no total-latency percentiles."""
    doc = fio.load(read(name))
    assert fio.problems(doc, name) == []
    ver = fio.version(doc)[0]
    with pytest.raises(ParseError, match=rf'{name}: written by {ver}; the figures need fio 3.1'):
        fio.parse(read(name), name)


def test_fio_2_without_total_ios_still_fails_a_job_that_did_no_io():
    doc = fio.load(read('fio-2.1.10-psync-randread.json'))
    assert 'total_ios' not in doc['jobs'][0]['read']
    doc['jobs'][0]['read']['io_bytes'] = 0
    assert 'io_bytes=0: no I/O was done' in fio.problems(doc, 'x')[0]


def test_fio_2_refuses_lat_percentiles_in_the_job():
    with pytest.raises(ParseError, match='Bad option <lat_percentiles=1>'):
        fio.parse(read('fio-2.2.10-lat-percentiles-option.txt'), 'x')


def test_output_without_json_names_what_fio_said():
    with pytest.raises(ParseError, match='is not a directory'):
        fio.parse(read('psync-no-directory.txt'), 'psync-no-directory.txt')


def test_cut_json_is_an_error():
    text = read('psync-randread.json')
    with pytest.raises(ParseError, match='cut or invalid'):
        fio.parse(text[:len(text) // 2], 'cut.json')


def test_missing_section_is_named():
    with pytest.raises(ParseError, match="no job named 'randread_8files'"):
        fio.section_figures(read('libpmem-emulated-randwrite.json'), 'randread_8files')


# -- references ---------------------------------------------------------------

def test_pmserver_references_are_the_published_figures():
    refs = yaml.safe_load((REPO / 'site_config' / 'references' / 'pmserver.yaml').read_text())
    pm = refs['PmemFio']
    assert pm['$index'] == ['$partition', 'section']
    rw = pm['pmserver:default']['randwrite_8files']
    assert rw['iops'][0] == 422000 and rw['bw'][0] == 1647 and rw['lat_mean'][0] == 6.05
    assert rw['lat_p99'][0] == 14.0 and rw['lat_p99_99'][0] == 24.4
    for fig in ('iops', 'bw'):
        assert rw[fig][1] < 0 and rw[fig][2] is None       # lower bound only
    for fig in ('lat_mean', 'lat_p99', 'lat_p99_99'):
        assert rw[fig][1] is None and rw[fig][2] > 0       # upper bound only
    assert 'PmemFioEmulated' not in refs


# -- end to end through ReFrame ----------------------------------------------

def _perflog_rows(results, check):
    """Rows of a check's perflog: the header's plain columns, plus
    ``perf[name] = (value, unit, ref)`` for each ``name=value|unit|ref|lo|hi`` group."""
    rows = []
    for path in glob.glob(str(results / 'perflogs' / '*' / '*' / f'{check}.log')):
        with open(path) as f:
            lines = f.read().splitlines()
        header = lines[0].split('|')
        for line in lines[1:]:
            fields = line.split('|')
            row = dict(zip(header, fields))
            row['perf'] = {}
            for i, h in enumerate(header):
                if '_var=' in h:        # a figure: name=value|unit|ref|lower|upper
                    name, value = fields[i].split('=', 1)
                    row['perf'][name] = (float(value), fields[i + 1], fields[i + 2])
            rows.append(row)
    return rows


def _assert_fio_results(res, results, tmpfs_dir, emulated_partition=False):
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    emu = _perflog_rows(results, 'PmemFioEmulated')
    base = _perflog_rows(results, 'StorageFioBaseline')
    assert len(emu) == 2 and len(base) == 2
    for row in emu:
        assert row['cp_emulated'].lower() == 'true' and 'emulated' in row['descr'].lower()
        assert row['perf']['iops'][2] in ('0', '0.0')     # never a pmem reference
        assert row['perf']['iops'][0] > 0 and row['perf']['lat_p99'][0] > 0
        assert row['perf']['lat_p99'][1] == 'us'
    for row in base:
        # the baseline is a real storage figure, but every result on the local
        # cluster's partitions is marked emulated
        want = 'true' if emulated_partition else 'false'
        assert row['cp_emulated'].lower() == want and row['perf']['bw'][0] > 0
    assert 'PmemFio %section' in res.stdout and 'declares no DAX mount' in res.stdout
    # nothing left behind on tmpfs or scratch
    assert not glob.glob(f'{tmpfs_dir}/fio-*')
    assert not [p for p in glob.glob(str(results / 'scratch' / 'fio-*'))]


FIO_ARGS = ['-c', 'reframe_checks/pmem.py', '-r', '-S', 'StorageFioBaseline.filesize=1048576']


@pytest.fixture
def tmpfs_dir(tmp_path):
    """A directory of this test's own on /dev/shm for the emulated check."""
    path = f'/dev/shm/cp-test-{os.getpid()}-{tmp_path.name}'
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _args(tmpfs_dir):
    return FIO_ARGS + ['-S', f'PmemFioEmulated.tmpfs_dir={tmpfs_dir}']


@pytest.mark.slow
def test_emulated_and_psync_on_local(tmp_path, tmpfs_dir):
    res = run_reframe(_args(tmpfs_dir) + ['--system', 'local'], tmp_path)
    _assert_fio_results(res, tmp_path, tmpfs_dir)


def test_emulated_and_psync_on_emu(tmp_path, tmpfs_dir, emu_cluster):
    res = run_reframe(_args(tmpfs_dir) + ['--system', 'emu:srun'], tmp_path,
                      extra_env=emu_cluster)
    _assert_fio_results(res, tmp_path, tmpfs_dir, emulated_partition=True)


def test_emulated_job_larger_than_tmpfs_fails_with_the_sizes(tmp_path, tmpfs_dir):
    # -S filesize sets the job's size; the free-space check counts it (64 jobs
    # x 1 TiB cannot fit on any /dev/shm here): a file system too full before
    # the start fails the check (never a skip), and nothing is written.
    res = run_reframe(['-c', 'reframe_checks/pmem.py', '-r', '--system', 'local',
                       '-n', 'PmemFioEmulated', '-S', f'PmemFioEmulated.tmpfs_dir={tmpfs_dir}',
                       '-S', 'PmemFioEmulated.filesize=1099511627776',
                       '-S', 'PmemFioEmulated.numjobs=64'], tmp_path)
    assert res.returncode != 0, res.stdout[-3000:]
    assert re.search(r'bytes free on tmpfs, the test needs \d+', res.stdout), res.stdout[-3000:]
    assert all(tc['result'] == 'fail' for tc in report_cases(tmp_path))
    assert not os.path.exists(tmpfs_dir)


def _fio_under(directory):
    """Pids of fio processes whose working directory is under ``directory``
    (the stage directories of a ReFrame run this test started)."""
    pids = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            if (os.path.basename(os.readlink(f'/proc/{entry}/exe')) == 'fio'
                    and os.readlink(f'/proc/{entry}/cwd').startswith(str(directory))):
                pids.append(int(entry))
        except OSError:
            continue
    return pids


def _bytes_written(pids):
    total = 0
    for pid in pids:
        try:
            with open(f'/proc/{pid}/io') as f:
                total += int(dict(line.split(': ') for line in f.read().splitlines())['wchar'])
        except OSError:
            continue
    return total


@pytest.mark.slow
def test_fio_interrupted_inside_the_check_fails_its_sanity(tmp_path):
    """fio gets SIGINT mid-run: it still prints complete JSON, and the
    StorageFioBaseline case fails naming the signal; no figure is logged."""
    args, report = with_report_file(
        ['-c', 'reframe_checks/pmem.py', '-r', '--system', 'local',
         '-n', 'StorageFioBaseline%section=randwrite_8files',
         '-S', 'StorageFioBaseline.filesize=1048576', '-S', 'StorageFioBaseline.numjobs=1',
         '-S', 'StorageFioBaseline.loops=1000000'], tmp_path)
    proc = runner.start(args, env=reframe_env(tmp_path), stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT, text=True)
    try:
        # the 1 MiB file is laid out, then written over and over: 8 MiB
        # written by fio's processes means its job is doing I/O
        wait_for('fio doing I/O for the check',
                 lambda: _bytes_written(_fio_under(tmp_path)) > 8 * 2 ** 20, proc=proc)
        for pid in _fio_under(tmp_path):      # as Ctrl-C does: every fio process
            try:
                os.kill(pid, signal.SIGINT)
            except ProcessLookupError:        # a short-lived helper fio already gone
                pass
        out, _ = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode != 0, out[-3000:]
    assert_cases(args, report, proc.returncode, out, 1)
    [case] = report_cases(tmp_path)
    assert case['result'] == 'fail'
    assert re.search(r'fio was interrupted by signal 2 \(fio: terminating on signal 2\)',
                     case['fail_reason']), case['fail_reason']
    # the perflog has the failure only (ReFrame logs failed cases, without figures)
    for path in glob.glob(str(tmp_path / 'perflogs' / '*' / '*' / 'StorageFioBaseline.log')):
        rows = [line.split('|') for line in open(path).read().splitlines()[1:]]
        assert rows and all(row[1] == 'fail' for row in rows)
    assert not glob.glob(str(tmp_path / 'scratch' / 'fio-*'))


def test_fio_3_1_lat_percentiles_are_read_under_clat_ns():
    """fio 3.1 to 3.12 print the lat_percentiles=1 figures under clat_ns (and
    no bw_bytes: bw is KiB/s)."""
    raw = json.loads(read('fio-3.1-psync-randwrite.json'))['jobs'][0]['write']
    assert 'percentile' not in raw['lat_ns'] and 'bw_bytes' not in raw
    figs = fio.section_figures(read('fio-3.1-psync-randwrite.json'), 'randwrite_8files')
    assert figs['lat_p99'] == raw['clat_ns']['percentile']['99.000000'] / 1000 == 11993.088
    assert figs['lat_mean'] == raw['lat_ns']['mean'] / 1000
    assert figs['bw'] == 4520 / 1024 and figs['total_ios'] == 8192
    read_figs = fio.section_figures(read('fio-3.1-psync-randread.json'), 'randread_8files')
    assert read_figs['lat_p99'] == 148.48


def test_fio_3_1_without_lat_percentiles_is_refused():
    """Its clat_ns percentiles are completion latencies: not the figure."""
    with pytest.raises(ParseError, match=r'randread_8files, read: lat_ns has no percentile\(s\) '
                                         r'.*set lat_percentiles=1'):
        fio.parse(read('fio-3.1-psync-randread-clat.json'), 'x')


# ------------------------------------------------- several runs in one output

def test_appended_runs_of_one_job_yield_the_last():
    """fio run twice into one file (two JSON documents, recorded): the last
    document is read, and the count said; the first is never read alone."""
    text = (FIO / 'psync-randwrite-twice.txt').read_text()
    first_end = text.index('\n}\n') + 3
    doc = fio.load(text, 'twice.txt')
    assert doc['_runs'] == 2 and doc['_note'] == 'twice.txt holds 2 fio runs; the last is read'
    last = fio.parse(text, 'twice.txt')['randwrite_8files']['write']
    assert last == fio.parse(text[first_end:], 'x')['randwrite_8files']['write']
    assert last != fio.parse(text[:first_end], 'x')['randwrite_8files']['write']


def test_appended_runs_of_other_jobs_are_refused():
    text = (FIO / 'psync-randwrite-then-randread.txt').read_text()
    with pytest.raises(ParseError, match=r'^two\.txt holds 2 fio runs that differ \(jobs: '
                                         r'randwrite_8files \(run 1\), randread_8files \(run 2\); '
                                         r'rw: randwrite \(run 1\), randread \(run 2\)\)'):
        fio.parse(text, 'two.txt')
