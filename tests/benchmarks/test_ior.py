"""IOR: the parser on output recorded from real IOR 4.0.0 and 3.3.0 runs
(tests/data/ior/README.md says how each was made), and the IorSharedFile
check end to end through ReFrame on ``local`` and on the local Slurm cluster
whenever an ``ior`` binary is available (Spack view or PATH)."""

import json
from pathlib import Path

import pytest

from clusterproof.site import binaries
from clusterproof.parsers import ParseError
from clusterproof.parsers import ior
from conftest import DATA, REPO, need_netns, report_cases, run_reframe, scratch_dirs_left

IOR_DATA = DATA / 'ior'
CHECK = REPO / 'reframe_checks' / 'ior.py'


def text(name):
    return (IOR_DATA / name).read_text()


def parse_recording(stem):
    out = IOR_DATA / f'{stem}.out'
    err = IOR_DATA / f'{stem}.err'
    js = IOR_DATA / f'{stem}.json'
    return ior.parse(out.read_text(), str(out),
                     json_text=js.read_text() if js.exists() else None, json_source=str(js),
                     stderr=err.read_text() if err.exists() else '')


# -- text output ----------------------------------------------------------

def test_shared_file_write():
    run = parse_recording('ior-4.0.0-write')
    assert run.source_format == 'text'
    assert run.version == '4.0.0'
    assert run.access == ior.SHARED_FILE
    assert run.tasks == 4 and run.nodes == 1
    assert not run.reorder
    w = run.summary['write']
    assert w['max_mib'] == 219.93 and w['mean_mib'] == 219.93
    assert w['stonewall_s'] is None and w['stonewall_mib'] is None
    assert w['file_per_proc'] == 0 and w['block_bytes'] == 64 * 2 ** 20
    assert [r['bw_mib'] for r in run.iterations] == [219.93]
    assert run.problems() == []
    assert ior.check_access(run, ior.SHARED_FILE) is None
    assert 'file-per-process' in ior.check_access(run, ior.FILE_PER_PROCESS)


def test_values_of_3600_and_more_have_no_decimals():
    # Per-iteration rows print 8776, 7248, 6670 ...: a pattern demanding
    # decimals would lose every one of them.
    run = parse_recording('ior-4.0.0-read-C-cached-3iter')
    assert [r['bw_mib'] for r in run.iterations] == [7248.0, 6670.0, 7019.0]
    assert [r['iops'] for r in run.iterations] == [7269.0, 6677.0, 7025.0]
    assert [r['iter'] for r in run.iterations] == [0, 1, 2]
    assert run.summary['read']['max_mib'] == 7247.62
    assert run.summary['read']['mean_mib'] == 6978.77
    assert run.summary['read']['repetitions'] == 3
    single = parse_recording('ior-4.0.0-read-C')
    assert [r['bw_mib'] for r in single.iterations] == [8776.0]


def test_values_below_one_have_six_decimals():
    run = parse_recording('ior-4.0.0-write-tiny')
    assert run.iterations[0]['bw_mib'] == 0.001871
    assert run.summary['write']['max_mib'] == 0.0


def test_read_with_reordering_is_recorded():
    assert parse_recording('ior-4.0.0-read-C').reorder
    assert parse_recording('ior-4.0.0-read-C').summary['read']['reorder'] == 1
    assert not parse_recording('ior-4.0.0-read-noC').reorder


def test_file_per_process_is_recognised():
    run = parse_recording('ior-4.0.0-write-fpp')
    assert run.access == ior.FILE_PER_PROCESS
    assert run.summary['write']['file_per_proc'] == 1
    assert 'single-shared-file' in ior.check_access(run, ior.SHARED_FILE)
    # the "remove" row (no -k) holds "-" placeholders and is not a result
    assert [r['operation'] for r in run.iterations] == ['write']


def test_stonewalled_run_warns_with_na_columns():
    run = parse_recording('ior-4.0.0-write-stonewall')
    assert not run.stonewalled
    assert run.summary['write']['stonewall_s'] is None
    assert run.warnings[0] == 'WARNING: Expected aggregate file size       = 1073741824'
    assert any('deadlineForStonewalling' in w for w in run.warnings)
    assert len(run.warnings) == 4


def test_stonewalled_run_with_wear_out_has_numeric_columns():
    run = parse_recording('ior-4.0.0-write-stonewall-wearout')
    assert run.stonewalled
    assert run.summary['write']['stonewall_s'] == 0.79
    assert run.summary['write']['stonewall_mib'] == 322.58
    # every task finished its 256 pairs within the deadline: nothing to warn about
    assert run.warnings == [] and run.errors == []


@pytest.mark.parametrize('stem', ['ior-4.0.0-error-unwritable', 'ior-4.0.0-read-missing'])
def test_errors_are_reported_with_the_line(stem):
    with pytest.raises(ParseError) as err:
        parse_recording(stem)
    assert 'ERROR: open64(' in str(err.value)
    assert stem in str(err.value)
    errors, _ = ior.problem_lines(text(f'{stem}.out'), text(f'{stem}.err'))
    assert errors[0].startswith('ERROR: open64(')
    assert any('MPI_ABORT' in e for e in errors)


def test_ior_3_3_0_text():
    run = parse_recording('ior-3.3.0-write')
    assert run.version == '3.3.0' and run.access == ior.SHARED_FILE
    assert run.summary['write']['max_mib'] == 252.27
    cached = parse_recording('ior-3.3.0-read-C-cached-3iter')
    assert [r['bw_mib'] for r in cached.iterations] == [14502.0, 11648.0, 7557.0]
    assert cached.reorder


def test_truncated_output_is_an_error_naming_the_source():
    body = text('ior-4.0.0-write.out')
    cut = body[:body.index('Summary of all tests:')]
    with pytest.raises(ParseError, match='cut.out: no "Summary of all tests:"'):
        ior.parse_text(cut, 'cut.out')


def test_gb_per_s():
    run = parse_recording('ior-4.0.0-read-C')
    assert run.bandwidth('read', 'max', 'GB/s') == pytest.approx(8776.49 * 2 ** 20 / 1e9)
    with pytest.raises(ParseError, match='no write max bandwidth'):
        run.bandwidth('write')


# -- JSON summary ---------------------------------------------------------

def test_json_summary_is_used_when_valid():
    run = parse_recording('ior-4.0.0-read-C-json')
    assert run.source_format == 'json'
    assert run.version == '4.0.0' and run.access == ior.SHARED_FILE and run.reorder
    assert run.summary['read']['max_mib'] == 11046.9539
    assert run.summary['read']['mean_mib'] == 7831.3416
    assert [r['bw_mib'] for r in run.iterations] == [6446.2671, 11046.9539, 6000.8038]
    assert [r['iter'] for r in run.iterations] == [0, 1, 2]


def test_json_run_keeps_the_warnings_of_stdout():
    run = parse_recording('ior-4.0.0-write-json')
    assert run.source_format == 'json'
    assert run.warnings == ['WARNING: The file "/scratch/ior-rec/tst.file" exists already and '
                            'will be overwritten']


def test_json_stonewall_fields():
    run = parse_recording('ior-4.0.0-write-stonewall-json')
    assert run.stonewalled
    assert run.summary['write']['stonewall_s'] == 0.7828
    assert run.summary['write']['stonewall_mib'] == 327.017


def test_ior_3_3_0_json_with_verbose_is_valid():
    run = parse_recording('ior-3.3.0-read-C-json-verbose')
    assert run.source_format == 'json' and run.version == '3.3.0'
    assert run.summary['read']['max_mib'] == 10926.5459


def test_invalid_json_of_ior_4_0_0_with_verbose():
    js = IOR_DATA / 'ior-4.0.0-write-json-verbose.json'
    with pytest.raises(ValueError):
        json.loads(js.read_text())
    with pytest.raises(ParseError, match=r'write-json-verbose.json: not valid JSON .*line 90.*'
                                         r'Results array is closed twice.*with -v'):
        ior.parse_json(js.read_text(), str(js))
    # stdout has no table either when a summary file is written: both are named
    with pytest.raises(ParseError, match='not valid JSON.*and .*no "Summary of all tests:"'):
        parse_recording('ior-4.0.0-write-json-verbose')


@pytest.mark.parametrize('stem', ['ior-3.3.0-write-read-json', 'ior-4.0.0-write-read-json',
                                  'ior-4.1.0+dev-write-read-json'])
def test_json_of_write_and_read_keeps_every_iteration(stem):
    """3.3 nests one [write, read] list per iteration, 4.0 lists them flat:
    both give write and read rows for iterations 0 and 1."""
    run = parse_recording(stem)
    assert run.source_format == 'json'
    assert [(r['operation'], r['iter']) for r in run.iterations] == [
        ('write', 0), ('read', 0), ('write', 1), ('read', 1)]
    results = json.loads(text(f'{stem}.json'))['tests'][0]['Results']
    flat = [e for r in results for e in (r if isinstance(r, list) else [r])]
    assert [r['bw_mib'] for r in run.iterations] == [e['bwMiB'] for e in flat]
    for op in ior.OPERATIONS:
        bws = [r['bw_mib'] for r in run.iterations if r['operation'] == op]
        assert run.summary[op]['max_mib'] == max(bws)


def test_ior_3_2_1_json_of_one_rank_after_its_banner():
    """IOR 3.2.1 writes its text banner before the JSON, no "Version" key, and
    entries without iops and latency."""
    run = parse_recording('ior-3.2.1-write-read-json-np1')
    assert run.source_format == 'json' and run.version == '3.2.1'
    assert [(r['operation'], r['iter']) for r in run.iterations] == [
        ('write', 0), ('read', 0), ('write', 1), ('read', 1)]
    assert all(r['iops'] is None and r['latency_s'] is None for r in run.iterations)
    assert run.summary['write']['max_mib'] == max(
        r['bw_mib'] for r in run.iterations if r['operation'] == 'write')


def test_ior_3_2_1_json_of_two_ranks_overwritten_is_named():
    js = IOR_DATA / 'ior-3.2.1-write-read-json.json'
    assert js.read_text().startswith('[ ]')
    with pytest.raises(ParseError, match=r'ior-3.2.1-write-read-json.json: not valid JSON .*'
                                         r'several ranks wrote the file over each other'):
        ior.parse_json(js.read_text(), str(js))


@pytest.mark.parametrize('stem, version', [('ior-3.0.1-write-read', '3.0.1'),
                                           ('ior-3.2.1-write-read', '3.2.1')])
def test_eight_column_rows_of_ior_3_0_and_3_2(stem, version):
    """No IOPS and latency columns before 3.3; 3.0 writes 'key = value' options."""
    run = parse_recording(stem)
    assert run.version == version and run.access == ior.SHARED_FILE and run.tasks == 2
    assert run.command.startswith(f'/opt/ior-{version}/bin/ior -a POSIX -i 2')
    assert [(r['operation'], r['iter']) for r in run.iterations] == [
        ('write', 0), ('read', 0), ('write', 1), ('read', 1)]
    assert all(r['iops'] is None and r['latency_s'] is None for r in run.iterations)
    assert all(r['block_kib'] == 4096 and r['xfer_kib'] == 1024 for r in run.iterations)
    for op in ior.OPERATIONS:
        bws = [r['bw_mib'] for r in run.iterations if r['operation'] == op]
        assert run.summary[op]['max_mib'] == pytest.approx(max(bws), abs=0.5)
    assert run.summary['read']['reorder'] == 1 and run.reorder
    assert ior.check_access(run, ior.SHARED_FILE) is None


def test_ior_3_0_1_first_read_row_without_decimals():
    run = parse_recording('ior-3.0.1-write-read')
    assert [r['bw_mib'] for r in run.iterations] == [576.80, 3918.0, 13.04, 130.68]
    assert [r['total_s'] for r in run.iterations][:2] == [0.013870, 0.002042]


def test_library_run_without_summary_is_named_not_called_unfinished():
    """IOR run as a library (as IO500 runs it) prints every iteration row but
    no summary table and no Finished line."""
    name = 'ior-4.0.0-library-io500-easy-write.txt'
    with pytest.raises(ParseError) as err:
        ior.parse(text(name), name)
    msg = str(err.value)
    assert 'every iteration row is there (write 1 of 1) but no "Finished" line' in msg
    assert 'as a library' in msg and 'did not finish' not in msg
    # the same output cut before its last row is a run that did not finish
    cut = text('ior-3.2.1-write-read.out')
    cut = cut[:cut.index('read      396.20')]
    with pytest.raises(ParseError, match=r'iteration rows: write 2 of 2, read 1 of 2: IOR did '
                                         r'not finish'):
        ior.parse(cut, 'cut.out')


def test_csv_output_is_named():
    with pytest.raises(ParseError, match=r'csv.out: no "Summary of all tests:" table .*\(the run '
                                         r'printed CSV \(summaryFormat=CSV\): iteration rows only'):
        parse_recording('ior-4.0.0-write-read-csv')


def test_ior_stopped_by_sigterm_did_not_finish():
    with pytest.raises(ParseError, match=r'killed-sigterm.out: no "Summary of all tests:" table '
                                         r'.*\(iteration rows: write 1 of 3, read 1 of 3: IOR did '
                                         r'not finish\)'):
        parse_recording('ior-4.0.0-killed-sigterm')


def test_hints_printed_into_json_on_stdout_are_named():
    name = 'ior-4.0.0-mpiio-hints-json-stdout.out'
    with pytest.raises(ValueError):
        json.loads(text(name))
    with pytest.raises(ParseError) as err:
        ior.parse(text(name), name)
    msg = str(err.value)
    assert f'{name} (JSON on stdout): not valid JSON' in msg
    assert 'MPI-IO hint text (--mpiio.showHints, -H)' in msg
    assert '-v' not in msg and 'did not finish' not in msg


def test_json_run_stdout_names_its_summary_file():
    with pytest.raises(ParseError, match=r'results to the JSON summary file /scratch/ior-rec/'
                                         r'ior-3.3.0-write-read-json.json'):
        ior.parse_text(text('ior-3.3.0-write-read-json.out'), 'x.out')


def test_invalid_json_falls_back_to_the_text():
    js = (IOR_DATA / 'ior-4.0.0-write-json-verbose.json').read_text()
    run = ior.parse(text('ior-4.0.0-write.out'), 'w.out', json_text=js)
    assert run.source_format == 'text' and run.summary['write']['max_mib'] == 219.93


# -- end to end -------------------------------------------------------------

#: skip (before any cluster is started) when no ior binary is available
need_ior = pytest.mark.skipif(
    binaries.locate('ior') is None,
    reason=f'ior not found in the Spack view ({binaries.spack_view()}) or on PATH; '
           f'build it with: {binaries.build_command("ior@4.0.0")}')


@need_ior
def test_ior_on_local(tmp_path):
    proc = run_reframe(['-c', str(CHECK), '-n', 'IorSharedFile', '-P', 'threads=2',
                        '--system', 'local', '-r'], tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    [case] = report_cases(tmp_path)
    assert case['result'] == 'pass', case.get('fail_reason')
    figures = {key.split(':')[-1]: entry[0] for key, entry in case['perfvalues'].items()}
    for name in ('write_max', 'write_mean', 'read_max', 'read_mean',
                 'write_max_gbs', 'read_max_gbs'):
        assert figures[name] > 0, (name, case['perfvalues'])
    assert case['ior_read_reorder'] == '-C'
    assert case['ior_direct_io'] is True      # smoke: O_DIRECT
    assert case['cp_smoke'] is True
    assert case['binary_version'] not in ('', 'unknown')      # from IOR's banner
    assert 'read[0]=' in case['ior_iterations']
    assert scratch_dirs_left(tmp_path) == []


@need_ior
def test_ior_failure_fails_sanity_and_removes_the_test_dir(tmp_path):
    # O_DIRECT (smoke) with 1000-byte transfers: the writes fail, IOR stops with ERROR.
    proc = run_reframe(['-c', str(CHECK), '-n', 'IorSharedFile', '-P', 'threads=1',
                        '-S', 'IorSharedFile.transfer_size=1000', '--system', 'local', '-r'],
                       tmp_path)
    assert proc.returncode != 0
    [case] = report_cases(tmp_path)
    assert case['result'] == 'fail'
    assert 'sanity' in case['fail_phase']
    # IOR reports the failed writes as WARNING lines, whichever IOR and MPI
    # library ran; sanity quotes the first problem line of the job's output:
    # an error line of the MPI library (MPI_ABORT...) before IOR's warnings
    stage = Path(case['stagedir'])
    errors, warnings = ior.problem_lines((stage / 'rfm_job.out').read_text(),
                                         (stage / 'rfm_job.err').read_text())
    assert any('WARNING: write(' in w and 'Invalid argument' in w for w in warnings), warnings
    assert f'IOR reported: {(errors + warnings)[0]!r}' in case['fail_reason'], case['fail_reason']
    assert scratch_dirs_left(tmp_path) == []


@need_ior
@need_netns
def test_ior_on_the_local_cluster(emu_cluster, tmp_path):
    proc = run_reframe(['-c', str(CHECK), '-n', 'IorSharedFile', '-P', 'threads=8',
                        '--system', 'emu', '-r'], tmp_path, extra_env=emu_cluster)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    cases = report_cases(tmp_path)
    assert sorted(tc['partition'] for tc in cases) == ['mpirun', 'srun']
    for case in cases:
        assert case['result'] == 'pass', case.get('fail_reason')
        assert sorted(case['job_nodelist']) == ['n1', 'n2', 'n3', 'n4']
        out = (Path(case['outputdir']) / 'rfm_job.out').read_text()
        # 8 threads round-robin over 4 client nodes: 2 per node, in both runs
        assert out.count('nodes               : 4') == 2, out[:2000]
        assert out.count('clients per node    : 2') == 2
    assert scratch_dirs_left(tmp_path) == []


# -- one command line for the check and the job script -------------------------

def _ior_lines(text):
    """IOR's options on each line of ``text`` that runs ior, by phase."""
    import shlex
    found = {}
    for line in text.replace('then ', '\n').splitlines():
        words = shlex.split(line)
        at = [i for i, w in enumerate(words) if w == 'ior' or w.endswith('/ior')]
        if not at:
            continue
        opts = []
        for w in words[at[-1] + 1:]:
            opts.append(w.rstrip(';'))
            if w.endswith(';'):
                break
        found['read' if '-r' in opts else 'write'] = opts
    return found


def _without_dir(opts):
    return [('<dir>/tst.file' if w.endswith('/tst.file') else w) for w in opts]


@pytest.mark.slow
def test_check_and_job_script_run_the_same_ior_options(tmp_path):
    """IorSharedFile and slurm/ior-n-to-1.sbatch take IOR's options from one
    place; the job scripts of both are compared word for word. Nothing runs
    (``--dry-run`` and ``CLUSTERPROOF_DRY_RUN=1`` only write the command
    lines), so where IOR is not installed an empty executable stands in
    for it to be found."""
    import os
    import subprocess
    path = os.environ['PATH']
    if binaries.locate('ior') is None:
        (tmp_path / 'bin').mkdir()
        (tmp_path / 'bin' / 'ior').write_text('#!/bin/sh\n')
        (tmp_path / 'bin' / 'ior').chmod(0o755)
        path = f'{tmp_path / "bin"}:{path}'
    proc = run_reframe(['-c', str(CHECK), '-n', 'IorSharedFile', '-P', 'threads=2',
                        '--system', 'local', '--dry-run'], tmp_path, timeout=300,
                       extra_env={'PATH': path})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    [script] = list((tmp_path / 'stage').rglob('rfm_job.sh'))
    text = script.read_text()
    check = _ior_lines(text)
    assert set(check) == {'write', 'read'}, text
    size = check['write'][check['write'].index('-b') + 1]
    transfer = check['write'][check['write'].index('-t') + 1]
    env = dict(os.environ, SLURM_JOB_NODELIST='n[1-2]', SLURM_JOB_ID='1', RAM_GIB='0',
               CLUSTERPROOF_REPO=str(REPO), IOR='ior', CLUSTERPROOF_DRY_RUN='1',
               TRANSFER=transfer, DIRECT='1')
    total = f'{2 * int(size[:-1])}{size[-1]}'
    job = subprocess.run(['bash', str(REPO / 'slurm' / 'ior-n-to-1.sbatch'),
                          str(tmp_path / 'scratch'), '2', total],
                         env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert job.returncode == 0, job.stdout + job.stderr
    sbatch = _ior_lines(job.stdout)
    for phase in ('write', 'read'):
        assert _without_dir(sbatch[phase]) == _without_dir(check[phase]), phase
    assert scratch_dirs_left(tmp_path) == []


# ------------------------------------------------- several runs in one output

def test_admin_loop_of_runs_that_differ_is_refused_naming_them():
    """A real log of an administrator's loop (IOR 3.3.0: POSIX file per
    process at 32 tasks, an mdtest run, then MPIIO one shared file at 4
    tasks): no run of it is the result, and the parser says what differs
    instead of reading the first run."""
    text = (DATA / 'ior' / 'ior-3.3.0-admin-loop-gpfs01.txt').read_text()
    assert len(ior.split_runs(text)) == 2
    with pytest.raises(ParseError) as err:
        ior.parse_text(text, 'nohup.out')
    assert str(err.value) == (
        'nohup.out holds 2 IOR runs that differ (API: POSIX (run 1), MPIIO (run 2); access: '
        'file-per-process (run 1), single-shared-file (run 2); tasks: 32 (run 1), 4 (run 2)); '
        'no one of them is the result: give the parser one run (one output file per run)')
    # each run read on its own: what the loop measured
    first, second = (ior.parse_text(part, f'run {i}')
                     for i, part in enumerate(ior.split_runs(text), 1))
    assert (first.access, first.tasks, first.bandwidth('write')) == \
        (ior.FILE_PER_PROCESS, 32, 72.59)
    assert (second.access, second.tasks, second.summary['read']['api']) == \
        (ior.SHARED_FILE, 4, 'MPIIO')


def test_appended_runs_of_one_kind_yield_the_last():
    """The same write run appended twice (recordings concatenated), then a
    write of another size: the last run of one kind is read and said to be."""
    write = (DATA / 'ior' / 'ior-4.0.0-write.out').read_text()
    again = (DATA / 'ior' / 'ior-4.0.0-write-odirect.out').read_text()
    run = ior.parse_text(write + write, 'job.out')
    assert run.runs == 2 and run.note == 'job.out holds 2 IOR runs; the last is read'
    assert run.source == 'job.out (run 2 of 2, the last)'
    assert run.bandwidth('write') == ior.parse_text(write).bandwidth('write')
    with pytest.raises(ParseError, match=r'holds 2 IOR runs that differ \(transfer: 16 MiB '
                                         r'\(run 1\), 1 MiB \(run 2\); block: 64 MiB \(run 1\), '
                                         r'8 MiB \(run 2\)\)'):
        ior.parse_text(write + again, 'job.out')
    # write then read (what the IOR check's job prints) differ in operations
    read = (DATA / 'ior' / 'ior-4.0.0-read-C.out').read_text()
    with pytest.raises(ParseError, match=r'operations: write \(run 1\), read \(run 2\)'):
        ior.parse_text(write + read, 'job.out')
    assert [r.summary.keys() for r in map(ior.parse_text, ior.split_runs(write + read))] == \
        [{'write': 0}.keys(), {'read': 0}.keys()]
    single = ior.parse_text(write, 'w.out')
    assert single.runs == 1 and single.note == '' and single.source == 'w.out'
