"""Hardware inventory: node report parsers, comparisons with the declared
hardware, and the SystemInventory check run for real through ReFrame on
``local`` and on the local Slurm cluster (``emu``)."""


import pytest

from clusterproof import cli
from clusterproof.parsers import gpu, lscpu
from clusterproof.site import inventory
from clusterproof.site import topology
from conftest import DATA, report_cases, run_reframe

INV = DATA / 'inventory'


# -- parsers, on output recorded from the real programs ---------------------

def test_lscpu_plain_and_json_agree_on_this_machine():
    plain = lscpu.parse((INV / 'lscpu-this-machine.txt').read_text())
    as_json = lscpu.parse((INV / 'lscpu-J-this-machine.json').read_text())
    assert plain == as_json
    assert plain['sockets'] == 1 and plain['cores_per_socket'] == 2
    assert plain['threads_per_core'] == 1 and plain['numa_nodes'] == 1
    assert plain['cpus'] == 2


def test_lscpu_two_socket_server():
    hw = lscpu.parse((INV / 'lscpu-2socket-xeon-6230.txt').read_text())
    assert (hw['sockets'], hw['cores_per_socket'], hw['threads_per_core']) == (2, 20, 2)
    assert hw['numa_nodes'] == 2 and hw['cpus'] == 80
    assert 'Gold 6230' in hw['cpu_model']


def test_lscpu_without_socket_field_is_an_error_naming_the_field():
    text = (INV / 'lscpu-this-machine.txt').read_text()
    broken = '\n'.join(ln for ln in text.splitlines() if not ln.startswith('Socket(s)'))
    with pytest.raises(ValueError, match=r"Socket\(s\)"):
        lscpu.parse(broken, source='n3: lscpu')


def test_meminfo():
    # MemTotal: 24684096 kB
    assert topology.parse_meminfo((INV / 'meminfo-this-machine.txt').read_text()) == 23.5
    with pytest.raises(ValueError, match='no MemTotal'):
        topology.parse_meminfo('MemFree: 1 kB\n', source='n2:/proc/meminfo')


def test_node_report_of_this_node_matches_sysfs():
    rep = inventory.node_report()
    hw = topology.detect_hardware()
    for key in inventory.EXACT_FIELDS + ('memory_gib',):
        assert rep['hardware'][key] == hw[key]
    assert rep['node']


def test_report_line_round_trip(capsys):
    cli.main(["inventory", "--report"])
    out = capsys.readouterr().out
    assert out.startswith(inventory.REPORT_TAG + ' ') and out.count('\n') == 1
    reports = inventory.parse_reports('some other line\n' + out)
    assert len(reports) == 1 and reports[0]['hardware']['sockets'] >= 1


def test_unreadable_report_names_the_line():
    text = f'ok\n{inventory.REPORT_TAG} {{"node": "n2", "hardware": \n'
    with pytest.raises(ValueError, match=r'rfm_job.out, line 2: unreadable inventory report'):
        inventory.parse_reports(text, source='rfm_job.out')


# -- comparisons ----------------------------------------------------------------

PMSERVER = {'sockets': 2, 'cores_per_socket': 24, 'threads_per_core': 2,
            'numa_nodes': 2, 'memory_gib': 384}


def found(**changes):
    # MemTotal of a 384 GiB node: about 1.6 % goes to the kernel's page structures
    hw = dict(PMSERVER, memory_gib=376.2)
    hw.update(changes)
    return hw


def test_matching_node_has_no_mismatch():
    assert inventory.compare_hardware('pmserver1', PMSERVER, found()) == []


def test_missing_32gib_dimm_shows():
    problems = inventory.compare_hardware('pmserver1', PMSERVER, found(memory_gib=344.6))
    assert len(problems) == 1
    msg = str(problems[0])
    assert msg.startswith('pmserver1: memory_gib: expected 384 GiB, found 344.6 GiB')
    assert 'missing or failed DIMM' in msg


@pytest.mark.parametrize('declared,memtotal,ok', [
    (256, 251.6, True),     # 16 x 16 GiB, kernel reservation only
    (256, 235.8, False),    # one 16 GiB DIMM missing
    (192, 188.5, True),
    (192, 172.9, False),    # one 16 GiB DIMM of 12 missing
    (16, 15.4, True),       # small node: at least 1 GiB of slack
    (384, 400.0, False),    # more memory than declared
])
def test_memory_tolerance(declared, memtotal, ok):
    problems = inventory.compare_hardware('n1', {'memory_gib': declared},
                                          {'memory_gib': memtotal})
    assert (problems == []) is ok


def test_nps_change_and_core_counts_show_with_expected_and_found():
    problems = inventory.compare_hardware(
        'minerva12', dict(PMSERVER, numa_nodes=8), found(numa_nodes=2, threads_per_core=1))
    text = inventory.format_mismatches(problems)
    assert 'minerva12: numa_nodes: expected 8, found 2' in text
    assert 'NPS' in text
    assert 'minerva12: threads_per_core: expected 2, found 1' in text
    assert len(problems) == 2


def test_reports_missing_node_duplicate_and_error():
    reports = [{'node': 'n1', 'hardware': found()},
               {'node': 'n1', 'hardware': found()},
               {'node': 'n3', 'error': 'no MemTotal line'}]
    problems = inventory.compare_reports(PMSERVER, reports, expected_nodes=4,
                                         expected_names=['n1', 'n2', 'n3', 'n4'])
    text = inventory.format_mismatches(problems)
    assert 'n1: reports: expected 1, found 2' in text
    assert 'n3: hardware: expected a hardware report, found no MemTotal line' in text
    assert 'job: nodes reporting: expected 4, found 2' in text
    assert 'missing: n2, n4' in text


# -- the check, for real --------------------------------------------------------

@pytest.mark.slow
def test_inventory_passes_on_local(tmp_path):
    proc = run_reframe(['-c', 'reframe_checks/inventory.py', '-r', '--system', 'local'],
                       tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cases = {tc['name']: tc for tc in report_cases(tmp_path)}
    assert cases['SystemInventory']['result'] == 'pass'
    assert cases['PmemProvisioning']['result'] == 'skip'
    out = (tmp_path / 'output' / 'local' / 'default' / 'gnu' / 'SystemInventory'
           / 'rfm_job.out').read_text()
    rep, = inventory.parse_reports(out)
    assert rep['hardware']['memory_gib'] == topology.detect_hardware()['memory_gib']


@pytest.mark.slow
def test_inventory_fails_on_other_figures_with_node_field_expected_found(tmp_path):
    proc = run_reframe(['-c', 'reframe_checks/inventory.py', '-r', '--system', 'local',
                        '-n', 'SystemInventory',
                        '-S', 'SystemInventory.expect_sockets=3',
                        '-S', 'SystemInventory.expect_memory_gib=1024'], tmp_path)
    assert proc.returncode != 0
    case, = report_cases(tmp_path)
    assert case['result'] == 'fail' and case['fail_phase'] == 'sanity'
    hw = topology.detect_hardware()
    node = inventory.node_report()['node']
    assert f'{node}: sockets: expected 3, found {hw["sockets"]}' in case['fail_reason']
    assert (f'{node}: memory_gib: expected 1024 GiB, found {hw["memory_gib"]:g} GiB'
            in case['fail_reason'])


def test_inventory_on_four_emulated_nodes(tmp_path, emu_cluster):
    proc = run_reframe(['-c', 'reframe_checks/inventory.py', '-r', '--system', 'emu',
                        '-n', 'SystemInventory'], tmp_path, extra_env=emu_cluster)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cases = report_cases(tmp_path)
    assert {tc['partition'] for tc in cases} == {'srun', 'mpirun'}
    assert all(tc['result'] == 'pass' for tc in cases)
    for part in ('srun', 'mpirun'):
        out = (tmp_path / 'output' / 'emu' / part / 'gnu' / 'SystemInventory'
               / 'rfm_job.out').read_text()
        names = sorted(rep['node'] for rep in inventory.parse_reports(out))
        assert names == ['n1', 'n2', 'n3', 'n4'], part


# ------------------------------------------------------------------ GPUs

def test_nvidia_smi_list_recordings():
    two = gpu.parse_nvidia_smi_list((INV / 'nvidia-smi-L-2xA100.txt').read_text())
    assert [(g['index'], g['model']) for g in two] == [(0, 'NVIDIA A100-PCIE-40GB'),
                                                      (1, 'NVIDIA A100-PCIE-40GB')]
    assert two[1]['uuid'] == 'GPU-c9bd25dc-c0c4-3ab6-8f7f-3ad16d6bde4a'
    [one] = gpu.parse_nvidia_smi_list((INV / 'nvidia-smi-L-1xRTX4070.txt').read_text())
    assert one['model'] == 'NVIDIA GeForce RTX 4070 Laptop GPU'
    with pytest.raises(ValueError, match="nvidia-smi -L, line 1: not a GPU line: 'GPU 0 lost'"):
        gpu.parse_nvidia_smi_list('GPU 0 lost\n')


def test_rocm_smi_recordings_concise_table_and_gpu_lines():
    assert gpu.parse_rocm_smi((INV / 'rocm-smi-4xMI300X.txt').read_text()) == [0, 1, 2, 3]
    assert gpu.parse_rocm_smi((INV / 'rocm-smi-a-4xMI300X-head.txt').read_text()) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match='rocm-smi: not rocm-smi output'):
        gpu.parse_rocm_smi('command not found\n')


def test_gpu_report_takes_the_first_tool_that_answers():
    recorded = {'nvidia-smi': (INV / 'nvidia-smi-L-2xA100.txt').read_text(),
                'rocm-smi': (INV / 'rocm-smi-4xMI300X.txt').read_text()}

    def replay(only):
        def run(argv):
            if argv[0] != only:
                return {'argv': argv, 'rc': None, 'stdout': '', 'stderr': '',
                        'missing': f'{argv[0]} not found on PATH'}
            return {'argv': argv, 'rc': 0, 'stdout': recorded[only], 'stderr': ''}
        return run
    assert inventory.gpu_report(replay('nvidia-smi')) == {
        'gpus': 2, 'gpu_source': 'nvidia-smi -L', 'gpu_models': ['NVIDIA A100-PCIE-40GB']}
    assert inventory.gpu_report(replay('rocm-smi')) == {'gpus': 4, 'gpu_source': 'rocm-smi'}


def test_gpus_from_sys_class_drm(tmp_path):
    for card, vendor in (('card0', '0x1af4'), ('card1', '0x10de'), ('card2', '0x10de')):
        (tmp_path / card / 'device').mkdir(parents=True)
        (tmp_path / card / 'device' / 'vendor').write_text(vendor + '\n')
    (tmp_path / 'card1-DP-1').mkdir()
    assert gpu.drm_gpus(str(tmp_path)) == [('card1', 'NVIDIA'), ('card2', 'NVIDIA')]
    assert gpu.drm_gpus(str(tmp_path / 'none')) is None


def test_this_node_has_no_gpu_tool_and_says_why():
    """This machine has no GPU, no nvidia-smi or rocm-smi, no /sys/class/drm."""
    rep = inventory.gpu_report()
    assert 'gpus' not in rep
    assert 'nvidia-smi not found on PATH' in rep['gpus_undiscovered']
    assert 'rocm-smi not found on PATH' in rep['gpus_undiscovered']
    assert '/sys/class/drm does not exist' in rep['gpus_undiscovered']
    hw = inventory.node_report()['hardware']
    assert hw['gpus_undiscovered'] == rep['gpus_undiscovered']
    [miss] = inventory.compare_hardware('n1', {'gpus': 4}, hw)
    assert str(miss).startswith('n1: gpus: expected 4, found undiscovered (nvidia-smi not found')


def test_declared_gpus_are_compared():
    devices = [{'type': 'gpu', 'arch': 'h100', 'num_devices': 2},
               {'type': 'gpu', 'arch': 'h200', 'num_devices': 4}, {'type': 'fpga'}]
    assert inventory.declared_gpus(devices) == 6
    assert inventory.declared_gpus([]) is None
    declared = {'gpus': 6, 'slurm_gpus': 6}
    assert inventory.compare_hardware('ia1', declared, {'gpus': 6, 'slurm_gpus': 6,
                                                        'gpu_source': 'nvidia-smi -L'}) == []
    found = inventory.compare_hardware('ia2', declared, {'gpus': 5, 'slurm_gpus': 4,
                                                         'gpu_source': 'nvidia-smi -L'})
    assert [str(m) for m in found] == [
        'ia2: slurm_gpus: expected 6, found 4',
        'ia2: gpus: expected 6, found 5 (counted by nvidia-smi -L)']
