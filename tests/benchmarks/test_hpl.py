"""HPL: the residual parser on recorded HPL 2.3 and HPCC outputs (both residual
formats, a FAILED residual), HPL.dat generation and Rpeak, and the check end
to end when ``xhpl`` is present."""

import math
import re

import pytest

from clusterproof import ClusterproofError
from clusterproof.site import binaries
from clusterproof.methods import hpl
from clusterproof.site.hardware import partition_node_count
from clusterproof.parsers import hpl as hpl_parser
from clusterproof.parsers import hpcc as hpcc_parser
from conftest import DATA, report_cases, run_reframe

PASSED = DATA / 'hpl' / 'hpl-2.3-passed.txt'
FAILED = DATA / 'hpl' / 'hpl-2.3-failed-residual.txt'
HPCC = DATA / 'hpcc' / 'hpccoutf-local-np2.txt'


def test_passed_run_in_hpl_23_format():
    out = hpl_parser.parse(PASSED.read_text(), str(PASSED))
    assert hpl_parser.verdict(out) is None
    assert out['results'] == [{'variant': 'WR11C2R4', 'n': 2304, 'nb': 192, 'p': 1, 'q': 2,
                               'time': 0.85, 'gflops': 9.6282}]
    assert out['residuals'] == [(3.87059020e-03, 'PASSED')]     # e-notation residual
    assert (out['passed'], out['failed'], out['skipped']) == (1, 0, 0)
    assert out['version'] == '2.3'


def test_residual_in_hpcc_fixed_point_format():
    section = hpcc_parser.parse(HPCC.read_text(), str(HPCC))['hpl']
    assert section['residuals'] == [(0.0044729, 'PASSED')]      # fixed-point residual
    assert hpl_parser.verdict(section) is None


def test_failed_residual_is_not_a_result():
    text = FAILED.read_text()
    out = hpl_parser.parse(text, str(FAILED))
    assert out['residuals'] == [(3.87059020e-03, 'FAILED')]
    assert (out['passed'], out['failed']) == (0, 1)
    assert 'FAILED' in hpl_parser.verdict(out)
    assert re.search(r'hpl-2\.3-failed-residual\.txt: 1 residual check\(s\) FAILED',
                     hpl_parser.verdict(out))


def test_run_cut_short_is_not_a_result():
    text = PASSED.read_text()
    cut = text[:text.index('Finished')]
    assert 'no closing count' in hpl_parser.verdict(hpl_parser.parse(cut, 'cut.txt'))
    no_residual = text[:text.rindex('||Ax-b||')]
    assert 'no residual line' in hpl_parser.verdict(hpl_parser.parse(no_residual, 'cut.txt'))
    # a passed count that does not match the result rows
    bad = text.replace('1 tests completed and passed', '2 tests completed and passed')
    assert '2 test(s) passed' in hpl_parser.verdict(hpl_parser.parse(bad, 'x'))


@pytest.mark.parametrize('ranks', list(range(1, 130)) + [256, 1024, 4096, 8192])
def test_process_grid(ranks):
    p, q = hpl.process_grid(ranks)
    assert p * q == ranks and p <= q
    # as square as possible: no divisor between p and sqrt(ranks)
    assert all(ranks % d for d in range(p + 1, math.isqrt(ranks) + 1))


def test_process_grid_examples_and_errors():
    assert hpl.process_grid(128) == (8, 16)
    assert hpl.process_grid(64 * 64) == (64, 64)
    assert hpl.process_grid(7) == (1, 7)
    with pytest.raises(ClusterproofError, match='ranks'):
        hpl.process_grid(0)


@pytest.mark.parametrize('gib,nodes,nb,fraction', [
    (256, 1, 192, 0.8), (256, 64, 224, 0.8), (384, 1, 256, 0.5), (24, 1, 192, 0.8),
    (0.01, 1, 80, 0.8)])
def test_problem_size_fits_the_memory_fraction(gib, nodes, nb, fraction):
    memory = nodes * gib * 2 ** 30
    n = hpl.problem_size(memory, nb, fraction)
    assert n % nb == 0
    assert n * n * 8 <= fraction * memory                  # fits
    assert (n + nb) ** 2 * 8 > fraction * memory           # the next multiple of NB would not


def test_problem_size_errors():
    with pytest.raises(ClusterproofError, match='holds no 192 x 192 block'):
        hpl.problem_size(1000, 192)
    with pytest.raises(ClusterproofError, match='fraction'):
        hpl.problem_size(2 ** 30, 192, 1.5)


def test_hpl_dat_lines():
    text = hpl.hpl_dat(2304, 192, 1, 2)
    lines = text.splitlines()
    assert len(lines) == 31
    assert lines[5].split()[0] == '2304' and lines[7].split()[0] == '192'
    assert lines[10].split()[0] == '1' and lines[11].split()[0] == '2'
    assert lines[12].split()[0] == '16.0'
    with pytest.raises(ClusterproofError, match='P <= Q'):
        hpl.hpl_dat(1000, 100, 4, 2)


def test_hpccinf_is_hpl_dat_plus_ptrans():
    lines = hpl.hpccinf(1000, 80, 1, 2).splitlines()
    assert len(lines) == 36
    assert lines[3].split()[0] == '8'                      # HPL results into hpccoutf.txt
    assert lines[31].startswith('#####')                  # line 32 is ignored
    assert lines[33].split()[0] == '500'                   # PTRANS at N/2


def test_rpeak_and_scaling():
    rome_7452 = {'sockets': 2, 'cores_per_socket': 32, 'clock_ghz': 2.35, 'dp_flops_per_cycle': 16}
    assert hpl.declared_rpeak_gflops(rome_7452, 1) == pytest.approx(2406.4)
    assert hpl.declared_rpeak_gflops(rome_7452, 64) == pytest.approx(64 * 2406.4)
    assert hpl.declared_rpeak_gflops({'sockets': 1, 'cores_per_socket': 2}, 1) is None
    assert hpl.scaling_nodes(64) == [1, 2, 4, 8, 16, 32, 64]
    assert hpl.scaling_nodes(100) == [1, 2, 4, 8, 16, 32, 64]
    assert hpl.scaling_nodes(4) == [1, 2, 4]
    with pytest.raises(ClusterproofError, match='clock_ghz'):
        hpl.rpeak_gflops(1, 64, 0, 16)


def test_node_counts_and_ranks():
    def part(extras, scheduler='slurm'):
        return {'fullname': 'minerva:rome7702', 'scheduler': scheduler, 'extras': extras}

    assert partition_node_count(part({'max_nodes': 64})) == 64
    assert partition_node_count(part({'storage': {'client_nodes': 4}})) == 4
    assert partition_node_count(part({'max_nodes': 64}, 'local')) == 1
    # HPL, HPCC and OSU take the storage checks' rule: no silent single node
    with pytest.raises(ClusterproofError) as err:
        partition_node_count(part({}))
    assert 'minerva:rome7702' in str(err.value) and "'max_nodes'" in str(err.value)
    assert 'site_config/systems/minerva.py' in str(err.value)
    assert hpl.ranks_per_node({'sockets': 2, 'cores_per_socket': 32}) == 64
    assert hpl.ranks_per_node({'sockets': 2, 'cores_per_socket': 32}, emulated=True) == 1


def test_hpl_skipped_with_the_build_command_when_xhpl_is_missing(tmp_path):
    if binaries.locate('xhpl'):
        pytest.skip('xhpl is present here (see test_hpl_on_local)')
    res = run_reframe(['-c', 'reframe_checks/hpl.py', '-r', '--system', 'local'], tmp_path,
                      extra_env={'CLUSTERPROOF_SPACK_VIEW': str(tmp_path / 'no-view')})
    assert res.returncode == 0, res.stdout[-3000:]
    assert 'SKIP' in res.stdout and 'spack -e . install hpl@2.3' in res.stdout


@pytest.mark.skipif(binaries.locate('xhpl') is None,
                    reason='xhpl not in the Spack view or on PATH (spack -e . install hpl@2.3)')
def test_hpl_on_local(tmp_path):
    res = run_reframe(['-c', 'reframe_checks/hpl.py', '-r', '--system', 'local'], tmp_path)
    assert res.returncode == 0, res.stdout[-3000:]
    case = next(c for c in report_cases(tmp_path) if c['display_name'] == 'Hpl %num_nodes=1')
    assert case['result'] == 'pass'
    perf = {k.split(':')[-1]: v[0] for k, v in case['perfvalues'].items()}
    assert perf['gflops'] > 0 and 'efficiency' not in perf   # no clock declared on local
    assert case['binary_version'] == '2.3'


def test_input_size_from_memory_with_smoke_caps():
    hw = {'memory_gib': 4, 'hpl_nb': 192}
    n, nb = hpl.input_size(hw, 2, 0.5)
    assert nb == 192 and n == hpl.problem_size(2 * 4 * 2 ** 30, 192, 0.5)
    assert hpl.input_size(hw, 2, 0.5, smoke_n=2000) == (1920, 192)
    assert hpl.input_size(hw, 2, 0.5, smoke_n=1000, smoke_max_nb=80) == (960, 80)
    assert hpl.input_size(hw, 2, 0.5, block_size=100, n=5000, smoke_n=1000) == (5000, 100)
    assert hpl.input_size({'memory_gib': 4}, 1, 0.8)[1] == hpl.DEFAULT_NB


# ------------------------------------------------- several runs in one output

def test_appended_runs_yield_the_last_never_a_sum():
    """Two recorded runs in one output (a job script run twice into one
    file): the last is judged; its counts are not added to the first's."""
    passed = (DATA / 'hpl' / 'hpl-2.3-passed.txt').read_text()
    failed = (DATA / 'hpl' / 'hpl-2.3-failed-residual.txt').read_text()
    last_failed = hpl_parser.parse(passed + failed, 'job.out')
    assert last_failed['runs'] == 2 and last_failed['note'] == \
        'job.out holds 2 HPL runs; the last is read'
    assert hpl_parser.verdict(last_failed).startswith('job.out (run 2 of 2, the last): ')
    assert last_failed['results'] == hpl_parser.parse(failed)['results']
    last_passed = hpl_parser.parse(failed + passed, 'job.out')
    assert hpl_parser.verdict(last_passed) is None
    assert (last_passed['passed'], len(last_passed['results'])) == \
        (hpl_parser.parse(passed)['passed'], len(hpl_parser.parse(passed)['results']))
