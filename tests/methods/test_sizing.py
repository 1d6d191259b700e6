"""Sizes that defeat caches, and the free-space check."""

import subprocess

import pytest

from clusterproof import ClusterproofError
from clusterproof.methods import sizing
from clusterproof.methods.sizing import GIB, MIB, TIB

from conftest import REPO, VENV_BIN

PIXSTOR = {'client_nodes': 16, 'client_ram_gib': 128, 'server_ram_gib': 4 * 256,
           'transfer_size': '16m'}


@pytest.mark.parametrize('text, nbytes', [
    ('16m', 16 * MIB), ('16MiB', 16 * MIB), ('8T', 8 * TIB), ('4K', 4096), ('4kb', 4096),
    ('1.5g', 3 * GIB // 2), (512, 512),
])
def test_parse_size(text, nbytes):
    assert sizing.parse_size(text) == nbytes


@pytest.mark.parametrize('bad', ['0', '-1m', 'big', '', 0, -5, True, '16 x'])
def test_parse_size_refuses(bad):
    with pytest.raises(ClusterproofError):
        sizing.parse_size(bad, 'total')


def test_published_sizes():
    # The published runs: 8 TiB in all, FileSize = 8192 GiB / Threads.
    for threads in (1, 16, 64, 1024):
        sz = sizing.compute(PIXSTOR, threads, total='8T')
        assert sz.per_thread == 8192 * GIB // threads
        assert sz.total == 8 * TIB
        assert sz.meets_cache_rule
        assert sz.transfer_arg == '16m'
    assert sizing.compute(PIXSTOR, 1024, total='8T').per_thread_arg == '8g'


def test_default_is_twice_the_ram_rounded_up_to_transfers():
    sz = sizing.compute(PIXSTOR, 3)
    ram = (16 * 128 + 1024) * GIB
    assert sz.cache_ram == ram
    assert sz.total >= 2 * ram
    assert sz.per_thread % (16 * MIB) == 0
    assert sz.total - 2 * ram < 3 * 16 * MIB


def test_declared_total_used():
    sz = sizing.compute(dict(PIXSTOR, total_data='8T'), 64)
    assert sz.total == 8 * TIB and 'declared total_data 8T' in sz.basis


def test_below_cache_rule_refused_unless_smoke():
    with pytest.raises(ClusterproofError, match='less than twice the RAM'):
        sizing.compute(PIXSTOR, 16, total='1T')
    sz = sizing.compute(PIXSTOR, 4, smoke=True)
    assert sz.smoke and sz.direct_io and sz.per_thread_arg == '4m'


def test_tiny_total_is_at_least_one_transfer():
    sz = sizing.compute({'client_nodes': 1, 'client_ram_gib': 1e-6}, 8, total='1m')
    assert sz.per_thread == 16 * MIB


def test_missing_or_bad_declarations():
    with pytest.raises(ClusterproofError, match="no 'client_ram_gib'"):
        sizing.compute({'client_nodes': 2}, 4)
    with pytest.raises(ClusterproofError, match='server_ram_gib'):
        sizing.compute({'client_nodes': 2, 'client_ram_gib': 1, 'server_ram_gib': -1}, 4)
    with pytest.raises(ClusterproofError, match='thread count'):
        sizing.compute(PIXSTOR, 0)


def test_check_fits_refuses_before_writing(tmp_path):
    free = sizing.free_bytes(tmp_path)
    assert free > 0
    with pytest.raises(ClusterproofError) as err:
        sizing.check_fits(tmp_path / 'scratch', free * 2)
    msg = str(err.value)
    assert str(tmp_path / 'scratch') in msg and 'free' in msg
    assert list(tmp_path.iterdir()) == []                # nothing written
    assert sizing.check_fits(tmp_path, MIB) == free or sizing.check_fits(tmp_path, MIB) > 0
    with pytest.raises(ClusterproofError, match='greater than zero'):
        sizing.check_fits(tmp_path, 0)


def test_missing_mount_point_is_an_error(tmp_path):
    with pytest.raises(ClusterproofError, match='mounted'):
        sizing.free_bytes(tmp_path / 'not-mounted' / 'clusterproof')


def test_command_line():
    out = subprocess.run([str(VENV_BIN / 'clusterproof'), 'sizing', '--system', 'pixstor',
                          '--threads', '1024', '--total', '8T'],
                         capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert 'size per thread    8g' in out.stdout
    out = subprocess.run([str(VENV_BIN / 'clusterproof'), 'sizing', '--system', 'pixstor',
                          '--threads', '16', '--total', '1T'],
                         capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 2 and 'less than twice the RAM' in out.stderr
