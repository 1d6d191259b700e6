"""mdtest: the parser on output recorded from real mdtest 4.0.0 and 3.3.0
runs (tests/data/mdtest/README.md), the -N stride from a placement, and the
Mdtest check end to end through ReFrame on ``local`` and on the local Slurm
cluster whenever an ``mdtest`` binary is available (Spack view or PATH)."""

from pathlib import Path

import pytest

from clusterproof.site import binaries
from clusterproof.methods import placement
from clusterproof.parsers import ParseError
from clusterproof.parsers import mdtest
from conftest import DATA, REPO, need_netns, report_cases, run_reframe, scratch_dirs_left

MD_DATA = DATA / 'mdtest'
CHECK = REPO / 'reframe_checks' / 'mdtest.py'


def parse_recording(stem):
    out = MD_DATA / f'{stem}.out'
    err = MD_DATA / f'{stem}.err'
    return mdtest.parse(out.read_text(), str(out), stderr=err.read_text() if err.exists() else '')


def test_rate_table_of_two_iterations():
    run = parse_recording('mdtest-4.0.0-u-N1-w-e')
    assert run.version == '4.0.0' and run.tasks == 4 and run.nodes == 1
    assert run.iterations == 2 and run.items == 400 and run.shift == 1
    assert list(run.rates) == list(mdtest.OPERATIONS)
    assert run.rates['File creation'] == {'max': 844.622, 'min': 519.561, 'mean': 682.091,
                                          'stddev': 229.852}
    assert run.rate('File stat', 'max') == 333278.029
    assert run.rate('Tree removal') == 363.113
    assert run.problems() == []


def test_rates_are_never_taken_from_the_time_table():
    # -P prints "SUMMARY time" after "SUMMARY rate" with the same row names.
    run = parse_recording('mdtest-4.0.0-u-N1-w-e-P-F')
    assert run.rate('File creation') == 926.494          # rate table; time table: 0.432
    assert run.rate('File removal') == 568.991           # time table: 0.703
    assert run.rate('Tree removal') == 104.625           # time table: 0.010
    # -F: files only, no directory rows
    assert list(run.rates) == ['File creation', 'File stat', 'File read', 'File removal',
                               'Tree creation', 'Tree removal']
    with pytest.raises(ParseError, match="no 'Directory creation' row"):
        run.rate('Directory creation')


def test_mdtest_3_3_0_rows_with_colons():
    run = parse_recording('mdtest-3.3.0-u-N1-w-e')
    assert run.version == '3.3.0' and run.iterations == 2
    assert run.rate('File creation') == 1002.853
    assert run.rate('Directory stat', 'max') == 1773411.245
    assert 'Directory rename' not in run.rates           # 3.3.0 has no rename phase


def test_read_without_bytes_warns():
    run = parse_recording('mdtest-4.0.0-u-N1')
    assert run.rate('File read') == 197923.005
    assert len(run.warnings) == 4
    assert run.warnings[0] == ('WARNING: Read bytes is 0, thus, a read test will actually '
                               'just open/close')
    big = parse_recording('mdtest-4.0.0-u-N1-n1000')
    assert big.items == 4000


@pytest.mark.parametrize('stem, line', [
    ('mdtest-4.0.0-error-unwritable', 'ERROR: open64("/proc/mdtest-unwritable/'),
    # LLNL 1.9.3 prints no ERROR: 'Process 0(): FAILED in main, ...'
    ('mdtest-1.9.3-error-unwritable', 'FAILED in main, Unable to create test directory path'),
])
def test_error_run_names_the_file_and_quotes_the_error(stem, line):
    with pytest.raises(ParseError) as err:
        parse_recording(stem)
    msg = str(err.value)
    assert f'{stem}.out: no "SUMMARY rate" table (mdtest failed; first error: ' in msg
    assert line in msg


def test_llnl_mdtest_1_9_3_summary_is_the_rate_table():
    """LLNL's mdtest 1.9.3 heads its rate table ``SUMMARY: (of N iterations)``."""
    run = parse_recording('mdtest-1.9.3-u-N1-w-e')
    assert (run.version, run.tasks, run.iterations, run.items) == ('1.9.3', 2, 2, 200)
    assert run.rate('File creation') == 349.069
    assert run.rate('Tree removal', 'max') == 62.705
    assert len(run.rates) == 9 and run.problems() == []
    files_only = parse_recording('mdtest-1.9.3-F-np4')
    assert files_only.tasks == 4 and 'Directory creation' not in files_only.rates
    assert files_only.rate('File read') == 10371.903


def test_mdtest_4_1_rate_table_in_ops_per_sec():
    run = parse_recording('mdtest-4.1.0+dev-u-N1-w-e')
    assert (run.version, run.tasks, run.iterations, run.shift) == ('4.1.0+dev', 2, 2, 1)
    assert len(run.rates) == 10 and run.rate('Directory rename') == 11085.729
    assert run.rate('File read', 'max') == 12531.346 and run.problems() == []


def test_mdtest_of_ior_3_2_1_calls_itself_1_9_3_and_heads_summary_rate():
    run = parse_recording('mdtest-3.2.1-u-N1-w-e')
    assert run.version == '1.9.3' and run.rate('File stat') == 1108399.747


def test_a_table_heading_not_known_is_named_not_called_unfinished():
    body = (MD_DATA / 'mdtest-1.9.3-u-N1-w-e.out').read_text()
    changed = body.replace('SUMMARY: (of 2 iterations)', 'SUMMARY speed: (of 2 iterations)')
    with pytest.raises(ParseError, match='headings found: SUMMARY speed: .*none is a rate table'):
        mdtest.parse(changed, 'x.out')
    cut = body[:body.index('SUMMARY')]
    with pytest.raises(ParseError, match='the output ends before the table: mdtest did not finish'):
        mdtest.parse(cut, 'x.out')


def test_truncated_table_is_an_error():
    body = (MD_DATA / 'mdtest-4.0.0-u-N1-w-e.out').read_text()
    cut = body[:body.index('   Directory creation')]
    with pytest.raises(ParseError, match='no operation rows'):
        mdtest.parse(cut, 'cut.out')


@pytest.mark.parametrize('nodes,threads,expected', [
    (4, 8, 1),      # round-robin: the next rank is on the next client node
    (16, 32, 1),
    (4, 2, 1),
    (1, 4, 1),      # one node: no shift leaves it; 1 still shifts ranks
])
def test_stride_from_round_robin_placement(nodes, threads, expected):
    order = placement.place([f'n{i}' for i in range(nodes)], threads).order()
    s = mdtest.stride(order)
    assert s == expected
    if nodes > 1:
        assert all(order[r] != order[(r + s) % threads] for r in range(threads))


def test_stride_for_block_placement_is_tasks_per_node():
    order = ['a'] * 4 + ['b'] * 4 + ['c'] * 4
    assert mdtest.stride(order) == 4


# -- end to end -------------------------------------------------------------

#: skip (before any cluster is started) when no mdtest binary is available
need_mdtest = pytest.mark.skipif(
    binaries.locate('mdtest') is None,
    reason=f'mdtest not found in the Spack view ({binaries.spack_view()}) or on PATH; '
           f'build it with: {binaries.build_command("ior@4.0.0")}')


def _figures(case):
    return {key.split(':')[-1]: entry[0] for key, entry in case['perfvalues'].items()}


@need_mdtest
def test_mdtest_on_local(tmp_path):
    proc = run_reframe(['-c', str(CHECK), '-n', 'Mdtest', '-P', 'threads=2',
                        '--system', 'local', '-r'], tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    [case] = report_cases(tmp_path)
    assert case['result'] == 'pass', case.get('fail_reason')
    figures = _figures(case)
    assert sorted(figures) == ['file_creation', 'file_read', 'file_removal', 'file_stat',
                               'tree_creation', 'tree_removal']
    assert all(v > 0 for v in figures.values()), figures
    assert case['mdtest_stride'] == 1
    out = (Path(case['outputdir']) / 'rfm_job.out').read_text()
    assert 'launched with 2 total task(s)' in out
    assert scratch_dirs_left(tmp_path) == []


@need_mdtest
@need_netns
def test_mdtest_on_the_local_cluster(emu_cluster, tmp_path):
    proc = run_reframe(['-c', str(CHECK), '-n', 'Mdtest', '-P', 'threads=8',
                        '--system', 'emu', '-r'], tmp_path, extra_env=emu_cluster)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    cases = report_cases(tmp_path)
    assert sorted(tc['partition'] for tc in cases) == ['mpirun', 'srun']
    for case in cases:
        assert case['result'] == 'pass', case.get('fail_reason')
        out = (Path(case['outputdir']) / 'rfm_job.out').read_text()
        assert 'launched with 8 total task(s) on 4 node(s)' in out
        # round-robin: ranks 0..7 on nodes 1,2,3,4,1,2,3,4 -> the shift of 1 changes node
        assert 'Shifting ranks by 1 for each phase' in out
    assert scratch_dirs_left(tmp_path) == []


# ------------------------------------------------- several runs in one output

def test_several_runs_of_one_kind_yield_the_last():
    """Two recordings with the same tasks, files and options (mdtest of IOR
    3.2.1, then of 4.1.0+dev) concatenated, as an appended output holds
    them: the last is read, never the first's table."""
    old = (DATA / 'mdtest' / 'mdtest-3.2.1-u-N1-w-e.out').read_text()
    new = (DATA / 'mdtest' / 'mdtest-4.1.0+dev-u-N1-w-e.out').read_text()
    run = mdtest.parse(old + new, 'job.out')
    assert run.version == '4.1.0+dev' and run.runs == 2
    assert run.rates == mdtest.parse(new).rates != mdtest.parse(old).rates
    assert run.note == 'job.out holds 2 mdtest runs; the last is read'


def test_several_runs_that_differ_are_refused():
    """A real admin's log holds one mdtest run between IOR runs: it is read.
    Two runs of other sizes (recordings concatenated) are refused."""
    log = mdtest.parse((DATA / 'ior' / 'ior-3.3.0-admin-loop-gpfs01.txt').read_text(), 'log')
    assert log.runs == 1 and log.items == 6300 and log.rate('File creation') == 3309.966
    small = (DATA / 'mdtest' / 'mdtest-4.0.0-u-N1.out').read_text()
    large = (DATA / 'mdtest' / 'mdtest-4.0.0-u-N1-n1000.out').read_text()
    with pytest.raises(ParseError, match=r"^job\.out holds 2 mdtest runs that differ \(files: "
                                         r"800 \(run 1\), 4000 \(run 2\); options: -n 200 -u -N "
                                         r"1 -i 2 -d \(run 1\), -n 1000 -u -N 1 -i 1 -d "
                                         r"\(run 2\)\)"):
        mdtest.parse(small + large, 'job.out')
