"""``paths.write_atomic``, ``paths.replace_synced`` (every file the store
writes) and ``paths.append_synced``: whole files, synced, with the mode the
umask gives (nothing forced readable by others)."""

import os
import stat

import pytest

from clusterproof import ClusterproofError, paths


@pytest.fixture
def umask_077():
    old = os.umask(0o077)
    yield
    os.umask(old)


def test_write_atomic_keeps_the_umask_mode_and_leaves_no_temporary(tmp_path, umask_077):
    path = paths.write_atomic(tmp_path / 'record.json', '{"secret": 1}\n')
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == '{"secret": 1}\n'
    paths.write_atomic(path, 'two\n', mode=0o640)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640 and path.read_text() == 'two\n'
    assert [p.name for p in tmp_path.iterdir()] == ['record.json']


def test_replace_synced_keeps_the_umask_mode_and_the_old_file_on_failure(tmp_path, umask_077):
    path = paths.replace_synced(tmp_path / 'figures.parquet',
                                lambda tmp: open(tmp, 'wb').write(b'PAR1'))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.read_bytes() == b'PAR1'

    def fails(tmp):
        open(tmp, 'wb').write(b'half')
        raise OSError(28, 'No space left on device')
    with pytest.raises(OSError, match='No space left'):
        paths.replace_synced(path, fails)
    assert path.read_bytes() == b'PAR1'
    assert [p.name for p in tmp_path.iterdir()] == ['figures.parquet']


def test_the_store_writes_under_the_umask(tmp_path, umask_077):
    from clusterproof.store import export
    assert stat.S_IMODE(export.write('a,b\n', tmp_path / 'out.csv').stat().st_mode) == 0o600


def test_write_atomic_refuses_a_directory(tmp_path):
    with pytest.raises(ClusterproofError, match='is a directory; name the file'):
        paths.write_atomic(tmp_path, 'x')


def test_append_synced_appends_under_the_umask(tmp_path, umask_077):
    path = tmp_path / 'local.history'
    paths.append_synced(path, '---\na: 1\n')
    paths.append_synced(path, '---\nb: 2\n')
    assert path.read_text() == '---\na: 1\n---\nb: 2\n'
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_read_text_names_a_file_that_is_not_utf8(tmp_path):
    path = tmp_path / 'notify.yaml'
    path.write_bytes(b'url: caf\xe9\n')
    with pytest.raises(ClusterproofError, match=f'{path}: not UTF-8 text, as the settings must be'):
        paths.read_text(path, 'settings')
