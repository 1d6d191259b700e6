"""md-workbench: the parser on output recorded from real md-workbench 4.0.0
runs (tests/data/md-workbench/README.md), and the MdWorkbench check end to
end through ReFrame on ``local`` whenever an ``md-workbench`` binary is
available (Spack view or PATH)."""

from pathlib import Path

import pytest

from clusterproof.methods import declared
from clusterproof.parsers import ParseError
from clusterproof.parsers import md_workbench
from clusterproof.site import binaries
from conftest import DATA, REPO, report_cases, run_reframe, scratch_dirs_left

MDWB_DATA = DATA / 'md-workbench'
CHECK = REPO / 'reframe_checks' / 'md_workbench.py'


def parse_recording(stem):
    out = MDWB_DATA / f'{stem}.out'
    err = MDWB_DATA / f'{stem}.err'
    return md_workbench.parse(out.read_text(), str(out),
                              stderr=err.read_text() if err.exists() else '')


def test_phases_of_two_iterations():
    run = parse_recording('md-workbench-4.0.0-np4-I10-P100-D2-R2')
    assert run.version == '4.0.0' and run.tasks == 4 and run.objects == 960
    assert [p.name for p in run.phases] == ['precreate', 'benchmark', 'benchmark', 'cleanup']
    assert run.option('-R') == '2' and run.finished and run.problems() == []
    assert run.rate('precreate') == 5064.0 and run.rate('cleanup') == 74711.7
    assert run.rate('benchmark') == pytest.approx((123259.9 + 29836.8) / 2)
    assert max(p.op_max for p in run.of('benchmark')) == 8.1811e-03
    assert [p.objects for p in run.phases] == [800, 80, 80, 800]
    assert all(p.errors == 0 for p in run.phases)


def test_tasks_come_from_the_data_sets():
    run = parse_recording('md-workbench-4.0.0-np2-I20-P200-D3-R3')
    assert run.tasks == 2 and len(run.of('benchmark')) == 3
    assert run.rate('benchmark') == pytest.approx((7268.1 + 9518.1 + 7113.6) / 3)


def test_an_unwritable_directory_is_an_error_naming_it():
    with pytest.raises(ParseError, match=r"error-unwritable\.out: md-workbench reported no "
                                         r"phase \(first error: 'ERROR: 0: Error while "
                                         r"creating the dset: /proc/mdwb-unwritable/0_0"):
        parse_recording('md-workbench-4.0.0-error-unwritable')


def test_other_output_is_refused_naming_the_source():
    text = (DATA / 'mdtest' / 'mdtest-4.0.0-u-N1.out').read_text()
    with pytest.raises(ParseError, match=r'^mdtest\.out: no "MD-Workbench total objects" '):
        md_workbench.parse(text, 'mdtest.out')
    run = parse_recording('md-workbench-4.0.0-np4-I10-P100-D2-R2')
    with pytest.raises(ParseError, match=r'no md-workbench warmup phase \(phases found: '
                                         r'precreate, benchmark, cleanup\)'):
        run.rate('warmup')


def test_several_runs_of_one_kind_yield_the_last():
    """Two recordings of the same options (output directory aside),
    concatenated as an appended output holds them: the last is read."""
    first = (MDWB_DATA / 'md-workbench-4.0.0-np4-I10-P100-D2-R2.out').read_text()
    again = (MDWB_DATA / 'md-workbench-4.0.0-np4-I10-P100-D2-R2-again.out').read_text()
    run = md_workbench.parse(first + again, 'job.out')
    assert run.runs == 2 and run.note == 'job.out holds 2 md-workbench runs; the last is read'
    assert run.rate('benchmark') == md_workbench.parse(again).rate('benchmark') != \
        md_workbench.parse(first).rate('benchmark')


def test_several_runs_that_differ_are_refused():
    small = (MDWB_DATA / 'md-workbench-4.0.0-np4-I10-P100-D2-R2.out').read_text()
    other = (MDWB_DATA / 'md-workbench-4.0.0-np2-I20-P200-D3-R3.out').read_text()
    with pytest.raises(ParseError, match=r'^job\.out holds 2 md-workbench runs that differ '
                                         r'\(options: -I 10 -P 100 -D 2 -R 2 -o \(run 1\), '
                                         r'-I 20 -P 200 -D 3 -R 3 -S 3901 -o \(run 2\); data '
                                         r'sets: 8 \(run 1\), 6 \(run 2\)\)'):
        md_workbench.parse(small + other, 'job.out')


def test_the_check_joins_the_storage_benchmarks():
    [check] = [c for c in declared.storage_checks() if c.benchmark == 'md-workbench']
    assert (check.file, check.name, check.mpi) == ('md_workbench.py', 'MdWorkbench', True)
    assert not check.published_plan


# -- end to end -------------------------------------------------------------

need_md_workbench = pytest.mark.skipif(
    binaries.locate('md-workbench') is None,
    reason=f'md-workbench not found in the Spack view ({binaries.spack_view()}) or on PATH; '
           f'build it with: {binaries.build_command("ior@4.0.0")}')


@pytest.mark.slow
@need_md_workbench
def test_md_workbench_on_local(tmp_path):
    proc = run_reframe(['-c', str(CHECK), '-n', 'MdWorkbench', '-P', 'threads=2',
                        '--system', 'local', '-r'], tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    [case] = report_cases(tmp_path)
    assert case['result'] == 'pass', case.get('fail_reason')
    figures = {key.split(':')[-1]: entry[0] for key, entry in case['perfvalues'].items()}
    assert sorted(figures) == ['benchmark_op_max', 'benchmark_rate', 'cleanup_rate',
                               'precreate_rate']
    assert all(v > 0 for v in figures.values()), figures
    assert case['mdwb_offset'] == 1
    out = (Path(case['outputdir']) / 'rfm_job.out').read_text()
    assert '"-O" "1"' in out and 'MD-Workbench total objects' in out
    assert scratch_dirs_left(tmp_path) == []
