"""Test directories: refusals, markers, cleanup of own directories only."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from clusterproof import ClusterproofError
from clusterproof.methods import scratch


@pytest.fixture
def root(tmp_path):
    return tmp_path / 'scratch'


@pytest.mark.parametrize('bad', ['/', '/usr', '/etc', '/tmp', 'relative/dir', '', None])
def test_refuses_system_and_relative_scratch(bad):
    with pytest.raises(ClusterproofError):
        scratch.check_scratch(bad)


def test_refuses_home_as_scratch(tmp_path, monkeypatch):
    home = tmp_path / 'home' / 'alice'
    home.mkdir(parents=True)
    monkeypatch.setenv('HOME', str(home))
    with pytest.raises(ClusterproofError, match='home directory'):
        scratch.check_scratch(home)
    link = tmp_path / 'link-to-home'
    link.symlink_to(home)
    with pytest.raises(ClusterproofError, match='home directory'):
        scratch.check_scratch(link)                    # symlinks are resolved
    assert scratch.check_scratch(home / 'cp') == home / 'cp'


def test_refuses_symlink_to_root(tmp_path):
    link = tmp_path / 'evil'
    link.symlink_to('/')
    with pytest.raises(ClusterproofError, match='system directory'):
        scratch.check_scratch(link)


@pytest.mark.parametrize('name', ['a b', 'a;rm -rf', 'x$(id)', 'q"', "q'", 'new\nline',
                                  'star*', 'back`tick`', 'amp&'])
def test_refuses_metacharacters(root, name):
    with pytest.raises(ClusterproofError, match='not allowed'):
        scratch.check_target(root, f'{root}/{name}')


def test_target_must_be_under_scratch(root, tmp_path):
    root.mkdir()
    for bad in (root, tmp_path, f'{root}/../elsewhere', '/etc/x'):
        with pytest.raises(ClusterproofError, match='not under the scratch'):
            scratch.check_target(root, bad)
    (root / 'out').symlink_to(tmp_path)                 # escapes through a symlink
    with pytest.raises(ClusterproofError, match='not under the scratch'):
        scratch.check_target(root, root / 'out' / 'x')


def test_create_marks_registers_and_removes(root):
    path = scratch.plan_test_dir(root, 'iozone_seq')
    assert not path.exists()
    made = scratch.create_test_dir(root, path)
    rec = scratch.read_marker(made)
    assert rec['path'] == str(made) and rec['pid'] == os.getpid()
    assert str(made) in (root / scratch.REGISTRY).read_text()
    (made / 'sub').mkdir()
    (made / 'sub' / 'f').write_bytes(b'x' * 10)
    assert scratch.remove_test_dir(root, made) is True
    assert not made.exists() and root.is_dir()
    assert scratch.remove_test_dir(root, made) is False          # idempotent


def test_refuses_non_empty_foreign_dir_and_never_removes_it(root):
    foreign = root / 'users-data'
    foreign.mkdir(parents=True)
    (foreign / 'precious').write_text('keep')
    with pytest.raises(ClusterproofError, match='not empty and was not created'):
        scratch.create_test_dir(root, foreign)
    with pytest.raises(ClusterproofError, match='no .clusterproof-created marker'):
        scratch.remove_test_dir(root, foreign)
    assert (foreign / 'precious').read_text() == 'keep'


def test_adopted_empty_dir_is_emptied_not_removed(root):
    empty = root / 'given'
    empty.mkdir(parents=True)
    scratch.create_test_dir(root, empty)
    (empty / 'tst.file').write_text('data')
    scratch.remove_test_dir(root, empty)
    assert empty.is_dir() and list(empty.iterdir()) == []


def test_moved_marker_is_not_trusted(root):
    made = scratch.create_test_dir(root, scratch.plan_test_dir(root, 't'))
    other = root / 'copy'
    other.mkdir()
    (other / scratch.MARKER).write_text((made / scratch.MARKER).read_text())
    (other / 'keep').write_text('x')
    with pytest.raises(ClusterproofError, match='marker was written for'):
        scratch.remove_test_dir(root, other)
    assert (other / 'keep').exists()


def test_missing_mount_point_refused(tmp_path):
    root = tmp_path / 'mmfs1' / 'clusterproof'
    with pytest.raises(ClusterproofError, match='mounted'):
        scratch.create_test_dir(root, root / 'x')
    assert not (tmp_path / 'mmfs1').exists()


def test_shell_cleanup_removes_only_marked(root):
    made = scratch.create_test_dir(root, scratch.plan_test_dir(root, 'ior'))
    (made / 'tst.file').write_text('x')
    foreign = root / 'foreign'
    foreign.mkdir()
    subprocess.run(['sh', '-c', scratch.shell_cleanup(foreign)], check=True)
    assert foreign.exists()
    subprocess.run(['sh', '-c', scratch.shell_cleanup(made)], check=True)
    assert not made.exists()


def test_leftovers_of_dead_processes_are_removed(root):
    # A directory created by a process that was killed (no exit handlers ran).
    code = ('import os, sys; from clusterproof.methods import scratch; '
            'r = sys.argv[1]; print(scratch.create_test_dir(r, scratch.plan_test_dir(r, "dead")), '
            'flush=True); os._exit(0)')
    out = subprocess.run([os.sys.executable, '-c', code, str(root)], capture_output=True,
                         text=True, check=True, cwd=Path(__file__).resolve().parents[2])
    dead = root / os.path.basename(out.stdout.strip())
    assert dead.is_dir()
    alive = scratch.create_test_dir(root, scratch.plan_test_dir(root, 'alive'))
    foreign = root / 'foreign'
    foreign.mkdir()
    assert scratch.leftovers(root) == [dead]
    assert scratch.remove_leftovers(root) == [dead]
    assert not dead.exists() and alive.exists() and foreign.exists()
    lines = [json.loads(l)['path'] for l in (root / scratch.REGISTRY).read_text().splitlines()]
    assert lines == [str(alive)]


@pytest.mark.slow
def test_directory_created_for_a_job_script_is_owned_by_it(root):
    # `python -m clusterproof scratch create` exits at once; the shell that
    # called it owns the directory, so a concurrent sweep must leave it alone.
    repo = str(Path(__file__).resolve().parents[2])
    script = (f'd=$({os.sys.executable} -m clusterproof scratch create '
              f'--owner-pid $$ {root} job) || exit 2; '
              f'{os.sys.executable} -m clusterproof scratch leftovers {root}; '
              f'test -d "$d" || exit 3; echo "$d"; '
              f'{os.sys.executable} -m clusterproof scratch remove {root} "$d"; test ! -e "$d"')
    out = subprocess.run(['bash', '-c', script], capture_output=True, text=True, cwd=repo,
                         env=dict(os.environ, PYTHONPATH=repo))
    assert out.returncode == 0, out.stderr
    bad = subprocess.run([os.sys.executable, '-m', 'clusterproof', 'scratch', 'create', '/', 'x'],
                         capture_output=True, text=True, cwd=repo)
    assert bad.returncode == 2 and 'system directory' in bad.stderr
