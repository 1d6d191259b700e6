"""HPCC: the summary parser on recorded hpccoutf.txt, and the check end to
end for real on ``local`` (mpirun, 2 ranks). Across the 4 nodes of the local
Slurm cluster over MPI (both partitions of ``emu``) it is asserted on the
whole-suite run (tests/suite/test_suite_emu.py, with the same
:func:`hpcc_helpers.check_passed`): a run of HPCC alone would repeat what that
run already does."""

import shutil

import pytest

from clusterproof.parsers import ParseError
from clusterproof.parsers import hpcc as hpcc_parser
from conftest import DATA, report_cases, run_reframe
from hpcc_helpers import check_passed

LOCAL = DATA / 'hpcc' / 'hpccoutf-local-np2.txt'
FAILED = DATA / 'hpcc' / 'hpccoutf-local-np2-failed-residual.txt'
EMU = DATA / 'hpcc' / 'hpccoutf-emu-4nodes.txt'

need_hpcc = pytest.mark.skipif(shutil.which('hpcc') is None,
                               reason='hpcc not on PATH (apt-get install hpcc, '
                                      'or spack -e . install hpcc)')


def test_summary_of_a_successful_run():
    out = hpcc_parser.parse(LOCAL.read_text(), str(LOCAL))
    s = out['summary']
    assert s['Success'] == 1 and s['CommWorldProcs'] == 2
    assert (s['VersionMajor'], s['VersionMinor'], s['VersionMicro']) == (1, 5, 0)
    assert s['HPL_Tflops'] == 0.0122319
    assert s['StarSTREAM_Triad'] == 51.3635 and s['SingleSTREAM_Triad'] == 73.5697
    assert s['StarDGEMM_Gflops'] == 21.7151
    assert s['MPIRandomAccess_GUPs'] == 0.00308223
    assert s['PTRANS_GBs'] == 0.146243
    assert s['HPL_N'] == 1000 and s['HPL_nprow'] == 1 and s['HPL_npcol'] == 2
    # only the HPL section's counts, not PTRANS's 20 residual checks
    assert (out['hpl']['passed'], out['hpl']['failed']) == (1, 0)
    assert hpcc_parser.verdict(out) is None


def test_every_figure_the_check_reports_is_in_the_summary():
    for path in (LOCAL, EMU):
        s = hpcc_parser.summary(path.read_text(), str(path))
        for name in hpcc_parser.FIGURES:
            assert isinstance(s[name], float), (path.name, name)


def test_run_across_four_nodes():
    s = hpcc_parser.summary(EMU.read_text(), str(EMU))
    assert s['CommWorldProcs'] == 4 and s['HPL_nprow'] * s['HPL_npcol'] == 4


def test_failed_residual_fails_the_run():
    out = hpcc_parser.parse(FAILED.read_text(), str(FAILED))
    assert out['summary']['Success'] == 0
    why = hpcc_parser.verdict(out)
    assert 'Success=0' in why and 'FAILED' in why


def test_unfinished_run_names_the_file():
    text = LOCAL.read_text()
    cut = text[:text.index('End of Summary section.')]
    with pytest.raises(ParseError, match=r'cut/hpccoutf\.txt: no complete summary section'):
        hpcc_parser.summary(cut, 'cut/hpccoutf.txt')
    no_hpl = text.replace('End of HPL section.', '')
    with pytest.raises(ParseError, match='no complete HPL section'):
        hpcc_parser.parse(no_hpl, 'x')


THREE = DATA / 'hpcc' / 'hpccoutf-3-runs.txt'
KILLED = DATA / 'hpcc' / 'hpccoutf-3-runs-then-killed.txt'


def test_appended_file_yields_the_newest_run():
    """Three runs of hpcc in one directory: the newest (HPL_Tflops
    0.000732487), never the oldest (0.00130533), and the count is said."""
    text = THREE.read_text()
    assert [started for started, _ in hpcc_parser.runs(text)] == [
        'Tue Nov 24 11:04:53 2026', 'Tue Nov 24 11:04:55 2026', 'Tue Nov 24 11:04:57 2026']
    out = hpcc_parser.parse(text, 'd/hpccoutf.txt')
    assert out['summary']['HPL_Tflops'] == 0.000732487
    assert hpcc_parser.summary(text, 'x')['HPL_Tflops'] == 0.000732487
    assert out['runs'] == 3
    assert out['note'] == ('d/hpccoutf.txt holds 3 HPCC runs; the last '
                           '(started Tue Nov 24 11:04:57 2026) is read')
    assert hpcc_parser.verdict(out) is None
    single = hpcc_parser.parse(LOCAL.read_text(), str(LOCAL))
    assert single['runs'] == 1 and single['note'] == ''


def test_appended_file_whose_newest_run_was_killed_is_refused():
    """A fourth run killed during RandomAccess: its summary is missing, and
    the complete older runs are not read in its place."""
    with pytest.raises(ParseError, match=r'^d/hpccoutf\.txt \(run 4 of 4, the last, '
                                         r'started Tue Nov 24 11:05:04 2026\): no '
                                         r'complete summary section .*the run did not '
                                         r'finish; it stops in its MPIRandomAccess section$'):
        hpcc_parser.parse(KILLED.read_text(), 'd/hpccoutf.txt')


@pytest.mark.slow
@need_hpcc
def test_hpcc_on_local_over_mpirun(tmp_path):
    res = run_reframe(['-c', 'reframe_checks/hpcc.py', '-r', '--system', 'local'], tmp_path)
    assert res.returncode == 0, res.stdout[-3000:]
    from clusterproof.site.topology import cpu_topology
    topo = cpu_topology()
    case, = report_cases(tmp_path)
    check_passed(case, topo['sockets'] * topo['cores_per_socket'])
    out = hpcc_parser.parse((tmp_path / 'output/local/default/gnu/Hpcc/hpccoutf.txt').read_text())
    assert out['summary']['CommWorldProcs'] == case['num_tasks']


@need_hpcc
def test_a_crashed_rank_ends_the_srun_step(tmp_path):
    """Under srun every MPI check asks for --kill-on-bad-exit=1 (a rank that
    crashes in MPI_Init would leave its peers spinning until the time limit);
    mpirun aborts by itself and gets no such option. The job scripts of a
    dry run show it; no cluster is needed."""
    results = tmp_path / 'results'
    proc = run_reframe(['-c', 'reframe_checks/hpcc.py', '--dry-run', '--system', 'emu'], results)
    assert proc.returncode == 0, proc.stdout[-3000:]
    srun = (results / 'stage' / 'emu' / 'srun' / 'gnu' / 'Hpcc' / 'rfm_job.sh').read_text()
    assert 'srun --kill-on-bad-exit=1 ' in srun, srun
    mpirun = (results / 'stage' / 'emu' / 'mpirun' / 'gnu' / 'Hpcc' / 'rfm_job.sh').read_text()
    assert 'mpirun' in mpirun and 'kill-on-bad-exit' not in mpirun, mpirun
