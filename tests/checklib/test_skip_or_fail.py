"""A check skips only for a missing binary or for hardware its system does
not declare; a configuration error (a scratch directory the rules refuse,
sizes the 2 x RAM rule cannot meet, a file system too full before the
start, a missing client node count) fails it, naming what is wrong. Real
ReFrame runs on ``local`` with the real IOzone and fio."""

import shutil

import pytest

from clusterproof import ClusterproofError
from clusterproof.site.hardware import partition_node_count
from conftest import REPO, report_cases, run_reframe

CHECKS = REPO / 'reframe_checks'

need_iozone_fio = pytest.mark.skipif(
    not shutil.which('iozone') or not shutil.which('fio'),
    reason='needs iozone and fio on PATH (Debian packages iozone3, fio)')


def _by_name(cases):
    return {tc['name']: tc for tc in cases}


@need_iozone_fio
def test_refused_scratch_fails_and_undeclared_hardware_skips(tmp_path):
    proc = run_reframe(['-c', str(CHECKS / 'iozone.py'), '-c', str(CHECKS / 'pmem.py'),
                        '-n', 'IOzoneSequential%threads=1',
                        '-n', 'StorageFioBaseline%section=randread_8files',
                        '-n', 'PmemFio%section=randread_8files',
                        '--system', 'local', '-r'], tmp_path, timeout=600,
                       extra_env={'CLUSTERPROOF_SCRATCH': '/var/tmp'})
    assert proc.returncode != 0, proc.stdout[-3000:]
    cases = _by_name(report_cases(tmp_path))
    assert len(cases) == 3, list(cases)
    for name in ('IOzoneSequential %threads=1', 'StorageFioBaseline %section=randread_8files'):
        tc = cases[name]
        assert tc['result'] == 'fail', (name, tc['result'], tc.get('fail_reason'))
        assert 'configuration error' in tc['fail_reason'], tc['fail_reason']
        assert '/var/tmp' in tc['fail_reason'] and 'system directory' in tc['fail_reason']
        assert not tc.get('fail_severe'), tc['fail_reason']
    skipped = cases['PmemFio %section=randread_8files']
    assert skipped['result'] == 'skip'
    # (the run report keeps no skip reason: ReFrame prints it)
    assert "local:default declares no DAX mount" in proc.stdout


@need_iozone_fio
@pytest.mark.slow
def test_unmet_size_rule_and_full_file_system_fail(tmp_path):
    proc = run_reframe(['-c', str(CHECKS / 'iozone.py'),
                        '-n', 'IOzoneSequential%threads=1', '-n', 'IOzoneRandom%threads=16',
                        '-S', 'IOzoneSequential.total=1m', '-S', 'IOzoneRandom.total=100000t',
                        '--system', 'local', '-r'], tmp_path, mode='nightly', timeout=600)
    assert proc.returncode != 0, proc.stdout[-3000:]
    cases = _by_name(report_cases(tmp_path))
    small = cases['IOzoneSequential %threads=1']
    assert small['result'] == 'fail' and small['fail_phase'] == 'setup', small
    assert 'less than twice the RAM' in small['fail_reason']
    full = cases['IOzoneRandom %threads=16']
    assert full['result'] == 'fail', full
    assert 'is free there' in full['fail_reason'] and 'local:default' in full['fail_reason']
    scratch = tmp_path / 'scratch'
    assert not scratch.exists() or [p for p in scratch.iterdir() if p.is_dir()] == []


def test_missing_client_node_count_names_system_and_key():
    part = {'fullname': 'pixstor:clients', 'scheduler': 'slurm',
            'extras': {'storage': {'scratch': '/scratch/x'}}}
    with pytest.raises(ClusterproofError) as err:
        partition_node_count(part)
    assert 'pixstor:clients' in str(err.value) and "'client_nodes'" in str(err.value)
    assert 'site_config/systems/pixstor.py' in str(err.value)
    part['extras']['storage']['client_nodes'] = 0
    with pytest.raises(ClusterproofError, match=r"client_nodes'\]=0"):
        partition_node_count(part)
    part['extras']['storage']['client_nodes'] = 16
    assert partition_node_count(part) == 16
    assert partition_node_count(dict(part, scheduler='local')) == 1
