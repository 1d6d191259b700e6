"""STREAM: the parser on recorded output, sizing/threading/peak functions,
and the check end to end on ``local`` (built from the STREAM source)."""


import pytest

from clusterproof import ClusterproofError
from clusterproof.methods import memory
from clusterproof.parsers import ParseError
from clusterproof.parsers import stream as stream_parser
from clusterproof.site import binaries
from conftest import DATA, report_cases, run_reframe

RECORDED = DATA / 'stream' / 'stream-5.10-17M-2threads-local.txt'

PMSERVER = {'sockets': 2, 'cores_per_socket': 24, 'memory_channels_per_socket': 6,
            'memory_mts': 2933, 'llc_mib': 71.5, 'memory_gib': 384}
ROME_7452 = {'sockets': 2, 'cores_per_socket': 32, 'memory_channels_per_socket': 8,
             'memory_mts': 3200, 'llc_mib': 256, 'l3_domains': 16, 'memory_gib': 256}


def test_parser_reads_the_recorded_run():
    out = stream_parser.parse(RECORDED.read_text(), source=str(RECORDED))
    assert out['rates'] == {'Copy': 13422.1, 'Scale': 11820.4, 'Add': 12269.9, 'Triad': 13863.4}
    assert out['validates'] is True
    assert out['array_size'] == 17_000_000
    assert out['threads'] == 2
    assert out['ntimes'] == 10


def test_parser_refuses_a_truncated_run_naming_the_file():
    text = RECORDED.read_text()
    cut = text[:text.index('Add:')]
    with pytest.raises(ParseError, match=r'truncated\.txt: no STREAM result row for Add, Triad'):
        stream_parser.parse(cut, source='truncated.txt')


def test_parser_reports_a_run_that_did_not_validate():
    text = RECORDED.read_text().replace('Solution Validates', 'Failed Validation')
    assert stream_parser.parse(text)['validates'] is False


def test_array_size_is_at_least_four_times_the_last_level_cache():
    n = memory.stream_array_size(32)                  # this machine: 32 MiB L3
    assert n * 8 >= 4 * 32 * 2 ** 20
    assert n == 17_000_000
    # pmserver: 2 x 35.75 MiB -> 37.5 M elements, the published run used 120 M
    assert memory.stream_array_size(71.5) == 38_000_000
    assert memory.stream_array_size(71.5, memory.PUBLISHED_ARRAY_SIZE) == 120_000_000
    # Rome 7702: 2 x 256 MiB of L3 -> more than the published size
    assert memory.stream_array_size(512, memory.PUBLISHED_ARRAY_SIZE) == 269_000_000
    with pytest.raises(ClusterproofError, match='llc_mib'):
        memory.stream_array_size(0)


def test_large_arrays_get_a_larger_code_model():
    assert '-mcmodel=medium' not in memory.stream_cflags(17_000_000)
    flags = memory.stream_cflags(120_000_000, ntimes=100)
    assert '-DSTREAM_ARRAY_SIZE=120000000' in flags and '-DNTIMES=100' in flags
    assert '-mcmodel=medium' in flags                 # 2.7 GiB of static arrays


def test_array_that_does_not_fit_is_refused():
    assert memory.check_fits(120_000_000, 384) == 2_880_000_000
    with pytest.raises(ClusterproofError, match=r'needs 2\.7 GiB.*4 GiB'):
        memory.check_fits(120_000_000, 4, where='node of x:y')


def test_threads_per_placement():
    assert memory.stream_threads(PMSERVER, 'cores') == 48      # published: 48 threads
    assert memory.stream_threads(PMSERVER, 'l3') == 2          # one L3 per socket
    assert memory.stream_threads(ROME_7452, 'cores') == 64
    assert memory.stream_threads(ROME_7452, 'l3') == 16        # one thread per CCX
    env = memory.omp_env('l3', 16)
    assert env == {'OMP_NUM_THREADS': '16', 'OMP_PLACES': 'll_caches', 'OMP_PROC_BIND': 'spread'}
    assert memory.omp_env('cores', 48)['OMP_PLACES'] == 'cores'
    with pytest.raises(ClusterproofError, match='placement'):
        memory.stream_threads(PMSERVER, 'sockets')


def test_memory_binding_nodes():
    hw = dict(PMSERVER, numa_dram=[0, 1], numa_pmem=[2, 3])
    assert memory.membind_nodes(hw, 'dram') == '0,1'
    assert memory.membind_nodes(hw, 'pmem') == '2,3'
    assert memory.membind_nodes(PMSERVER, 'pmem') is None
    with pytest.raises(ClusterproofError, match='numa_pmem'):
        memory.membind_nodes(dict(PMSERVER, numa_pmem=['two']), 'pmem')


def test_peak_and_triad_efficiency():
    assert memory.memory_peak_mbs(2, 6, 2933) == 281_568.0
    assert memory.declared_memory_peak_mbs(ROME_7452) == 409_600.0
    # published pmserver DRAM Triad and Rome's 270-300 GB/s against their peaks
    assert round(memory.efficiency_percent(149501.8, 281_568.0), 1) == 53.1
    assert round(memory.efficiency_percent(285_000, 409_600), 1) == 69.6
    # nothing declared: no efficiency rather than a made-up one
    assert memory.declared_memory_peak_mbs({'sockets': 1, 'cores_per_socket': 2}) is None
    with pytest.raises(ClusterproofError, match='memory_mts'):
        memory.memory_peak_mbs(2, 8, 0)


@pytest.mark.skipif(not binaries.STREAM_SOURCE.is_file(),
                    reason='no STREAM source: run scripts/setup (make setup) to fetch it')
@pytest.mark.slow
def test_stream_on_local_built_from_source(tmp_path):
    res = run_reframe(['-c', 'reframe_checks/stream.py', '-r', '--system', 'local'],
                      tmp_path)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    cases = {c['display_name']: c for c in report_cases(tmp_path)}
    build = next(c for n, c in cases.items() if n.startswith('StreamBuild'))
    assert build['result'] == 'pass'
    for placement in ('cores', 'l3'):
        case = cases[f'Stream %placement={placement} %membind=local']
        assert case['result'] == 'pass'
        perf = {k.split(':')[-1]: v[0] for k, v in case['perfvalues'].items()}
        assert set(perf) == {'copy', 'scale', 'add', 'triad'}   # no peak declared on local
        assert all(v > 0 for v in perf.values())
        assert case['cp_smoke'] is True
        llc = memory.stream_array_size(case_llc_mib())
        assert case['stream_array_size'] == llc             # 4 x this node's LLC
        assert case['stream_threads'] == case['threads']
        assert case['binary_path'].endswith('/stream') and '/stage/' in case['binary_path']


def case_llc_mib():
    from clusterproof.site.topology import llc_mib
    return llc_mib()


# ------------------------------------------------- several runs in one output

def test_two_runs_of_one_kind_yield_the_last():
    """STREAM run twice at 2 threads into one file (recorded): the last
    run's rates (Triad 41806.8), never the first's (19608.8)."""
    out = stream_parser.parse((DATA / 'stream' / 'stream-5.10-17M-2threads-twice-local.txt')
                              .read_text(), 'twice.txt')
    assert out['rates']['Triad'] == 41806.8 and out['threads'] == 2
    assert (out['runs'], out['note']) == (2, 'twice.txt holds 2 STREAM runs; the last is read')


def test_sweep_over_threads_is_refused():
    """1 then 2 threads into one log (recorded): no run of it is the result."""
    with pytest.raises(ParseError, match=r'^sweep\.txt holds 2 STREAM runs that differ '
                                         r'\(threads: 1 \(run 1\), 2 \(run 2\)\)'):
        stream_parser.parse((DATA / 'stream' / 'stream-5.10-17M-1-then-2threads-local.txt')
                            .read_text(), 'sweep.txt')
