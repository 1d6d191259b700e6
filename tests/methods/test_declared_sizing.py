"""Checks size themselves from the declared partition, never from the
machine that runs ReFrame: thread counts and array sizes of the mmap sweep
and STREAM on systems whose declared hardware differs from this machine
(pixstor: 2 x 20 cores, 55 MiB of L3; minerva rome7702: 2 x 64 cores,
512 MiB), read from the job and build scripts of a real ``reframe
--dry-run``; ``-S`` overrides honoured; an undeclared fact is an error
naming system, partition and key; ``validate`` refuses a system whose two
declarations of one fact disagree."""

import copy
import re
from pathlib import Path

import pytest

from clusterproof import ClusterproofError
from clusterproof.methods import memory, mmap_sweep
from clusterproof.site import binaries
from clusterproof.site.hardware import node_cores, processor_from_hardware
from clusterproof.site.topology import detect_hardware
from clusterproof.site.validate import find_system, load_site_configuration, validate_system
from conftest import report_cases, run_reframe, site_config_overlay

CHECKS = ['-c', 'reframe_checks/mmap_sweep.py', '-c', 'reframe_checks/stream.py']

#: the site configuration, with every scratch directory and mmap target moved
#: under a directory of the test (the declared hardware untouched) and the
#: keys named in DROP removed from extras['hardware']
CONFIG = '''
for system in site_configuration['systems']:
    for part in system['partitions']:
        extras = dict(part.get('extras', {{}}))
        extras['hardware'] = {{k: v for k, v in extras.get('hardware', {{}}).items()
                              if k not in {drop!r}}}
        if 'storage' in extras:
            extras['storage'] = dict(extras['storage'], scratch={scratch!r})
        if 'mmap_targets' in extras:
            extras['mmap_targets'] = [dict(t, path=t['path'] and {scratch!r} + '/' + t['name'])
                                      for t in extras['mmap_targets']]
        part['extras'] = extras
'''


def dry_run(tmp_path, system, mode, *args, drop=()):
    scratch = tmp_path / 'scratch'
    scratch.mkdir(exist_ok=True)
    config = site_config_overlay(tmp_path, CONFIG.format(scratch=str(scratch), drop=list(drop)))
    results = tmp_path / 'results'
    proc = run_reframe(CHECKS + ['--system', system, '--dry-run', *args], results, mode,
                       config=config)
    return proc, results


def sweep_threads(results, system):
    """{test case name: set of --threads} of the mmap sweep job scripts."""
    found = {}
    for tc in report_cases(results):
        if tc['name'].startswith('MmapSweep') and tc['system'].startswith(system):
            script = Path(tc['stagedir']) / 'sweep_targets.sh'
            found[tc['name']] = {int(t) for t in re.findall(r'--threads (\d+)', script.read_text())}
    return found


def stream_case(results, placement):
    for tc in report_cases(results):
        if tc['name'].startswith(f'Stream %placement={placement} '):
            return Path(tc['stagedir']) / 'rfm_job.sh'
    raise AssertionError(f'no Stream case with placement {placement}')


def array_size(results):
    [build] = [Path(tc['stagedir']) / 'rfm_build.sh' for tc in report_cases(results)
               if tc['name'].startswith('StreamBuild')]
    return int(re.search(r'-DSTREAM_ARRAY_SIZE=(\d+)', build.read_text()).group(1))


need_stream_source = pytest.mark.skipif(
    binaries.locate('stream_c.exe') is not None,
    reason='stream_c.exe is in the Spack view or on PATH: STREAM is not built with an array size')

#: (system, declared cores per node, declared last-level cache in MiB)
DECLARED = [('pixstor', 40, 55.0), ('minerva:rome7702', 128, 512)]


@need_stream_source
@pytest.mark.parametrize('system,cores,llc', DECLARED)
@pytest.mark.slow
def test_threads_and_array_sizes_come_from_the_declaration(tmp_path, system, cores, llc):
    here = detect_hardware()
    assert here['sockets'] * here['cores_per_socket'] != cores or here['llc_mib'] != llc
    proc, results = dry_run(tmp_path, system, 'nightly')
    assert proc.returncode == 0, proc.stdout[-3000:]
    threads = sweep_threads(results, system.split(':')[0])
    assert threads, proc.stdout[-2000:]
    for name, counts in threads.items():
        want = cores if name.endswith('_tcores') else 1
        assert counts == {want}, (name, counts)
    # STREAM: one thread per declared core, arrays from the declared cache
    job = stream_case(results, 'cores').read_text()
    assert f'OMP_NUM_THREADS={cores}' in job and f'--cpus-per-task={cores}' in job
    assert array_size(results) == memory.stream_array_size(llc, memory.PUBLISHED_ARRAY_SIZE)


@need_stream_source
@pytest.mark.slow
def test_smoke_array_size_is_four_times_the_declared_cache(tmp_path):
    proc, results = dry_run(tmp_path, 'minerva:rome7702', 'smoke')
    assert proc.returncode == 0, proc.stdout[-3000:]
    # 4 x 512 MiB / 8 bytes: far above what this machine's cache would give
    assert array_size(results) == 269_000_000


@need_stream_source
@pytest.mark.slow
def test_command_line_values_are_never_overwritten(tmp_path):
    proc, results = dry_run(tmp_path, 'pixstor', 'nightly', '-S', 'MmapSweep.threads=3',
                            '-S', 'Stream.threads=5', '-S', 'StreamBuild.array_size=7000000')
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert set().union(*sweep_threads(results, 'pixstor').values()) == {3}
    assert 'OMP_NUM_THREADS=5' in stream_case(results, 'cores').read_text()
    assert array_size(results) == 7_000_000


@need_stream_source
def test_an_undeclared_cache_fails_naming_system_partition_and_key(tmp_path):
    proc, results = dry_run(tmp_path, 'pixstor', 'smoke', '-n', 'Stream', drop=['llc_mib'])
    assert proc.returncode != 0
    failed = [tc for tc in report_cases(results) if tc['result'] == 'fail']
    assert failed and all(tc['name'].startswith(('Stream', 'StreamBuild')) for tc in failed)
    reasons = ' '.join(tc['fail_reason'] or '' for tc in failed)
    assert 'pixstor:clients' in reasons and "'llc_mib'" in reasons, reasons
    assert 'site_config/systems/pixstor.py' in reasons, reasons


def test_undeclared_cores_are_an_error_naming_the_key():
    part = {'fullname': 'pixstor:clients', 'extras': {'hardware': {'sockets': 2}}}
    with pytest.raises(ClusterproofError) as err:
        node_cores(part)
    assert 'pixstor:clients' in str(err.value) and "'cores_per_socket'" in str(err.value)
    assert mmap_sweep.access_threads(mmap_sweep.PER_CORE, 128) == 128
    assert mmap_sweep.access_threads(2, 128) == 2


def test_no_sweep_case_is_sized_at_import():
    for mode in ('smoke', 'nightly', 'acceptance'):
        counts = {t for _, t in mmap_sweep.accesses(mode)}
        assert counts <= {1, 2, mmap_sweep.PER_CORE}, (mode, counts)


def _system(name):
    return copy.deepcopy(find_system(load_site_configuration(), name))


def test_validate_refuses_processor_and_hardware_that_disagree():
    system = _system('pixstor')
    part = system['partitions'][0]
    assert validate_system(system) == ['pixstor:clients']
    part['processor'] = dict(part['processor'], num_cpus_per_socket=24)
    with pytest.raises(ClusterproofError) as err:
        validate_system(system)
    msg = str(err.value)
    assert 'site_config/systems/pixstor.py' in msg and 'partition clients' in msg
    assert "processor['num_cpus_per_socket']=24" in msg and 'gives 20' in msg


def test_processor_is_derived_where_none_is_declared():
    system = _system('local')
    [part] = system['partitions']
    assert part['processor'] == processor_from_hardware(part['extras']['hardware'])
    assert validate_system(system) == ['local:default']


def test_validate_refuses_two_node_counts():
    system = _system('minerva')
    part = system['partitions'][0]
    part['extras'] = dict(part['extras'], storage=dict(part['extras']['storage'],
                                                       client_nodes=16))
    with pytest.raises(ClusterproofError, match=r"max_nodes'\]=64 disagrees with "
                                                r"extras\['storage'\]\['client_nodes'\]=16"):
        validate_system(system)
    del part['extras']['max_nodes']
    del part['extras']['storage']
    with pytest.raises(ClusterproofError, match=r"minerva:rome7702: .*no node count"):
        validate_system(system)


def test_slurm_cpus_and_emulated_nodes_in_the_agreement():
    from clusterproof.site.hardware import processor_disagreements
    hw = {'sockets': 2, 'cores_per_socket': 20, 'threads_per_core': 2}
    # Slurm gives jobs 76 of the 80 CPUs (two cores per socket kept for the system)
    slurm = {'num_cpus': 76, 'num_sockets': 2, 'num_cpus_per_socket': 38, 'num_cpus_per_core': 2}
    assert processor_disagreements(slurm, dict(hw, slurm_cpus=76)) == []
    assert processor_disagreements(slurm, hw) == [('num_cpus_per_socket', 38, 40),
                                                  ('num_cpus', 76, 80)]
    # an emulated node with one CPU of this machine
    assert processor_disagreements({'num_cpus': 1, 'num_cpus_per_socket': 1}, hw, True) == []
