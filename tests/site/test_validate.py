"""``clusterproof validate`` and the site configuration checks."""

import subprocess

import pytest

from clusterproof import ClusterproofError
from clusterproof.methods import scratch
from clusterproof.site.validate import (find_partition, find_system, load_site_configuration,
                                   validate_system)
from conftest import REPO, VENV_BIN, WAIT_S


def test_shipped_configuration_validates():
    proc = subprocess.run([str(VENV_BIN / 'clusterproof'), 'validate'], cwd=REPO,
                          capture_output=True, text=True, timeout=WAIT_S)
    assert proc.returncode == 0, proc.stderr
    for part in ('pmserver:default', 'pixstor:clients', 'minerva:rome7452',
                 'emu:srun', 'emu:mpirun', 'local:default'):
        assert f'ok  {part}' in proc.stdout


def test_unknown_system_and_partition_named():
    config = load_site_configuration()
    with pytest.raises(ClusterproofError, match="unknown system 'nosuch'.*pixstor"):
        find_system(config, 'nosuch')
    with pytest.raises(ClusterproofError, match="system pixstor has no partition 'gpu'"):
        find_partition(find_system(config, 'pixstor'), 'gpu')


def system_with(**extras):
    hw = {'sockets': 2, 'cores_per_socket': 4, 'threads_per_core': 1,
          'numa_nodes': 2, 'memory_gib': 16}
    part = {'name': 'p', 'access': ['--partition=p'], 'scheduler': 'slurm',
            'extras': dict({'hardware': hw}, **extras)}
    return {'name': 'site', 'hostnames': ['.*'], 'partitions': [part]}


@pytest.mark.parametrize('change, message', [
    ({'hardware': {'sockets': 0}}, 'sockets=0'),
    ({'hardware': {'memory_gib': -4}}, 'memory_gib=-4'),
    ({'storage': {'scratch': 'relative/dir'}}, 'must be an absolute path'),
    ({'storage': {'scratch': '/scratch/$(rm -rf ~)'}}, 'characters that are not allowed'),
    ({'storage': {'scratch': '/home'}}, 'is a system directory'),
    ({'storage': {'scratch': '/scratch/x', 'client_nodes': -1}}, "client_nodes']=-1"),
    ({'storage': {'scratch': '/scratch/x'}}, "has no key 'client_nodes'"),
    ({'pmem': {'provisioning': 'both'}}, "provisioning='both'"),
])
def test_bad_declarations_refused_with_file_key_value(change, message):
    system = system_with()
    extras = system['partitions'][0]['extras']
    for key, val in change.items():
        if key == 'hardware':
            extras['hardware'].update(val)
        else:
            extras[key] = val
    with pytest.raises(ClusterproofError) as err:
        validate_system(system)
    assert 'site_config/systems/site.py: system site: partition p' in str(err.value)
    assert message in str(err.value)


def test_access_option_with_shell_metacharacters_refused():
    system = system_with()
    system['partitions'][0]['access'] = ['--partition=p;reboot']
    with pytest.raises(ClusterproofError, match='shell metacharacters'):
        validate_system(system)


def _refusal(fn, *args):
    try:
        fn(*args)
    except ClusterproofError as err:
        return str(err)
    return None


@pytest.mark.parametrize('path', ['/scratch/clusterproof', '/tmp/clusterproof-x',
                                  '/tmp', '/var/tmp', '/mnt', '/opt', '/srv',
                                  'HOME', 'LINK_TO_ETC', 'LINK_UNDER_TMP'])
def test_validate_and_the_checks_agree_on_a_scratch_path(path, tmp_path, monkeypatch):
    """validate refuses exactly the scratch directories the checks refuse
    before writing, with the same reason (a symbolic link is judged by where
    it points)."""
    home = tmp_path / 'home'
    home.mkdir()
    monkeypatch.setenv('HOME', str(home))
    (tmp_path / 'etc-link').symlink_to('/etc')
    (tmp_path / 'work').mkdir()
    (tmp_path / 'ok-link').symlink_to(tmp_path / 'work')
    path = {'HOME': str(home), 'LINK_TO_ETC': str(tmp_path / 'etc-link'),
            'LINK_UNDER_TMP': str(tmp_path / 'ok-link')}.get(path, path)
    by_checks = _refusal(scratch.check_scratch, path)
    by_validate = _refusal(validate_system,
                           system_with(storage={'scratch': path, 'client_nodes': 1}))
    assert (by_checks is None) == (by_validate is None), (by_checks, by_validate)
    if by_checks:
        assert by_checks in by_validate
        assert 'extras.storage.scratch' in by_validate
    expected_refused = path in ('/tmp', '/var/tmp', '/mnt', '/opt', '/srv', str(home),
                                str(tmp_path / 'etc-link'))
    assert (by_checks is not None) == expected_refused, by_checks
