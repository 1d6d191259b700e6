"""OSU micro-benchmarks: the parser on recorded outputs (same machine and
across two nodes of the local cluster), and the checks end to end on the
local cluster when the binaries are present."""


import pytest

from clusterproof.site import binaries
from clusterproof.parsers import ParseError
from clusterproof.parsers import osu
from conftest import DATA, need_netns, report_cases, run_reframe

OSU_DIRS = ('libexec/osu-micro-benchmarks/mpi/pt2pt/standard',
            'libexec/osu-micro-benchmarks/mpi/pt2pt', 'bin')


def _parse(name):
    path = DATA / 'osu' / name
    return osu.parse(path.read_text(), str(path))


def test_osu_bw():
    out = _parse('osu_bw-local-np2.txt')
    assert out['title'] == 'OSU MPI Bandwidth Test' and out['version'] == '7.4'
    assert out['columns'] == ['Bandwidth (MB/s)']
    assert len(out['rows']) == 23 and min(out['rows']) == 1
    assert osu.bandwidth_at_largest(out) == (4194304, 1784.22)
    # message rate from the bandwidth at 1 byte: 4.92 MB/s = 4.92 million 1-byte messages/s
    assert osu.message_rate_at_smallest(out) == (1, pytest.approx(4.92e6))


def test_osu_latency():
    out = _parse('osu_latency-local-np2.txt')
    assert out['title'] == 'OSU MPI Latency Test' and out['version'] == '7.4'
    assert out['columns'] == ['Avg Latency(us)']
    assert osu.latency_at_smallest(out) == (1, 0.37)
    with pytest.raises(ParseError, match='no .Latency. column'):
        osu.latency_at_smallest(_parse('osu_bw-local-np2.txt'))


def test_osu_bibw_across_two_nodes():
    out = _parse('osu_bibw-emu-2nodes-tcp.txt')
    assert out['title'] == 'OSU MPI Bi-Directional Bandwidth Test'
    size, mbs = osu.bandwidth_at_largest(out)
    assert size == 4194304 and mbs > 0


def test_osu_mbw_mr_message_rate_column():
    for name in ('osu_mbw_mr-local-np2.txt', 'osu_mbw_mr-emu-2nodes-tcp.txt'):
        out = _parse(name)
        assert out['columns'] == ['MB/s', 'Messages/s']
        assert all(len(v) == 2 for v in out['rows'].values())
    out = _parse('osu_mbw_mr-local-np2.txt')
    assert osu.message_rate_at_smallest(out) == (1, 1969655.00)
    assert osu.bandwidth_at_largest(out)[0] == 4194304


def test_malformed_output_names_the_file():
    text = (DATA / 'osu' / 'osu_bw-local-np2.txt').read_text()
    with pytest.raises(ParseError, match=r'bw\.txt: not OSU'):
        osu.parse('mpirun noticed that process rank 0 exited\n', 'bw.txt')
    head = text[:text.index('1 ')]
    with pytest.raises(ParseError, match='no result rows'):
        osu.parse(head, 'bw.txt')
    with pytest.raises(ParseError, match='no .Messages/s. column'):
        osu.column(osu.parse(text), 'Messages/s')


def test_osu_skipped_on_one_node(tmp_path):
    res = run_reframe(['-c', 'reframe_checks/osu.py', '-r', '--system', 'local'], tmp_path)
    assert res.returncode == 0, res.stdout[-3000:]
    assert res.stdout.count('SKIP') == 4
    assert 'measures the network between two nodes; local:default has 1' in res.stdout


@need_netns
@pytest.mark.skipif(any(binaries.locate(b, OSU_DIRS) is None
                        for b in ('osu_bw', 'osu_bibw', 'osu_mbw_mr')),
                    reason='OSU binaries not in the Spack view or on PATH '
                           '(spack -e . install osu-micro-benchmarks@7.5.1)')
def test_osu_between_two_nodes_of_the_local_cluster(tmp_path, emu_cluster):
    res = run_reframe(['-c', 'reframe_checks/osu.py', '-r', '--system', 'emu:srun'], tmp_path,
                      extra_env=emu_cluster)
    assert res.returncode == 0, res.stdout[-3000:]
    for case in report_cases(tmp_path):
        assert case['result'] == 'pass'
        assert len(set(case['job_nodelist'])) == 2
        perf = {k.split(':')[-1]: v[0] for k, v in case['perfvalues'].items()}
        assert perf['bandwidth'] > 0 and perf['message_rate'] > 0
        assert 'link_fraction' not in perf                 # emu declares no link rate


# ------------------------------------------------- several runs in one output

def test_several_runs_of_one_benchmark_yield_the_last():
    """osu_bw on one machine, then across two nodes (recordings
    concatenated, as a job script run twice appends them): the last run's
    rows, never a mix of both."""
    local = (DATA / 'osu' / 'osu_bw-local-np2.txt').read_text()
    emu = (DATA / 'osu' / 'osu_bw-emu-2nodes-tcp.txt').read_text()
    out = osu.parse(local + emu, 'job.out')
    assert out['rows'] == osu.parse(emu)['rows'] != osu.parse(local)['rows']
    assert (out['runs'], out['note']) == (2, 'job.out holds 2 OSU runs; the last is read')


def test_several_benchmarks_are_refused():
    bw = (DATA / 'osu' / 'osu_bw-local-np2.txt').read_text()
    lat = (DATA / 'osu' / 'osu_latency-local-np2.txt').read_text()
    with pytest.raises(ParseError, match=r'^job\.out holds 2 OSU runs that differ \(benchmark: '
                                         r'OSU MPI Bandwidth Test v7\.4 \(run 1\), OSU MPI '
                                         r'Latency Test v7\.4 \(run 2\)\)'):
        osu.parse(bw + lat, 'job.out')
