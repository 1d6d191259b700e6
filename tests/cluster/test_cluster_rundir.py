"""What only root may have made for the local cluster: a run directory
another local user planted is refused, naming path and owner, with nothing
in it or behind it changed; the lock files are root's and no other user can
hold them; a run directory's path holding what a shell would run is refused.
Real files, a real other user (useradd, runuser), the real command; no
cluster is brought up (the refusals come first)."""

import os
import pwd
import shlex
import signal
import socket
import stat
import subprocess
import uuid
from pathlib import Path

import pytest

from clusterproof import ClusterproofError
from clusterproof import cluster as lc
from clusterproof.cluster import rundir
from clusterproof.cluster.network import in_node
from conftest import VENV_BIN, WAIT_S, need_root

#: instance named by the commands below; its refusals come before its lock and network
INSTANCE = 0


def _as(user, *argv, **kw):
    return subprocess.run(['runuser', '-u', user, '--', *argv], capture_output=True, text=True,
                          timeout=WAIT_S, **kw)


def _cluster(*args):
    return subprocess.run([str(VENV_BIN / 'clusterproof'), 'cluster', *args], capture_output=True,
                          text=True, timeout=WAIT_S, cwd='/')


def _snapshot(top):
    """Every path under ``top`` (itself too): mode, owner, times, and what a
    file holds or a link names. Nothing followed."""
    seen = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for path in [dirpath] + [os.path.join(dirpath, n) for n in filenames + dirnames]:
            st = os.lstat(path)
            what = (os.readlink(path) if stat.S_ISLNK(st.st_mode)
                    else Path(path).read_bytes() if stat.S_ISREG(st.st_mode) else None)
            seen[path] = (st.st_mode, st.st_uid, st.st_mtime_ns, what)
    return seen


@pytest.fixture
def planted(ordinary_user, tmp_path):
    """A run directory an ordinary user made before root's first ``up``: its
    ``etc/slurm.conf`` a link to a file of root's, its own munge key and
    database password. Yields (user, run directory, root's file)."""
    name, _ = ordinary_user
    victim = tmp_path / 'roots-file'
    victim.write_text('root\'s own\n')
    run_dir = Path(f'/tmp/clusterproof-planted-{uuid.uuid4().hex[:8]}')
    plant = (f'mkdir -m 755 {run_dir} {run_dir}/etc && ln -s {victim} {run_dir}/etc/slurm.conf && '
             f'head -c 1024 /dev/urandom > {run_dir}/etc/munge.key && '
             f'chmod 600 {run_dir}/etc/munge.key && echo known > {run_dir}/etc/db.pass')
    made = _as(name, 'sh', '-c', plant, cwd='/')
    assert made.returncode == 0, made.stderr
    try:
        yield name, run_dir, victim
    finally:
        subprocess.run(['rm', '-rf', '--', str(run_dir)], check=True)


@need_root
def test_a_run_directory_another_user_planted_is_refused_naming_path_and_owner_and_left_untouched(
        planted):
    name, run_dir, victim = planted
    before, victim_before = _snapshot(run_dir), _snapshot(victim)
    uid = pwd.getpwnam(name).pw_uid
    for action in ('up', 'down'):
        proc = _cluster(action, '--instance', str(INSTANCE), '--run-dir', str(run_dir))
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert proc.stderr.strip() == (
            f'clusterproof cluster: error: run directory {run_dir}: {run_dir} is a directory of '
            f'{name} (uid {uid}), mode 755: not root\'s. Only root may have made what a cluster '
            f'run as root reads: another user may have planted it. Nothing was changed; '
            f'look at it, remove it (rm -rf -- {run_dir}) and run again, or choose '
            f'another --run-dir'), proc.stderr
        assert 'starting cluster' not in proc.stdout
        assert _snapshot(run_dir) == before and _snapshot(victim) == victim_before


@need_root
def test_inside_and_above_a_run_directory_what_another_user_could_have_made_is_refused(
        ordinary_user, tmp_path):
    name, _ = ordinary_user
    uid = pwd.getpwnam(name).pw_uid
    run_dir = tmp_path / 'rd'
    # made fresh: root's, mode 0700
    assert rundir.make_run_dir(run_dir) == run_dir
    st = os.lstat(run_dir)
    assert st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o700
    run_dir.chmod(0o755)
    etc = run_dir / 'etc'
    etc.mkdir()
    # what the jobs make is theirs: a node's /tmp (open to all, sticky) and a job's spool directory
    (run_dir / 'tmp' / 'n1').mkdir(parents=True)
    (run_dir / 'tmp' / 'n1').chmod(0o1777)
    os.symlink('/etc/shadow', run_dir / 'tmp' / 'n1' / 'a-jobs-link')
    job = run_dir / 'spool' / 'n1' / 'job00042'
    job.mkdir(parents=True)
    (job / 'slurm_script').write_text('#!/bin/sh\n')
    os.chown(job / 'slurm_script', uid, -1)
    (run_dir / 'spool' / 'n1' / 'pmix.42.0').mkdir(mode=0o700)
    os.chown(run_dir / 'spool' / 'n1' / 'pmix.42.0', uid, -1)
    assert rundir.check_run_dir(run_dir) is True
    os.symlink('/etc', run_dir / 'spool' / 'n1' / 'job00043')       # but not a link
    with pytest.raises(ClusterproofError, match=r'job00043 is a symbolic link of root'):
        rundir.check_run_dir(run_dir)
    (run_dir / 'spool' / 'n1' / 'job00043').unlink()
    # a link anywhere else, even root's
    (etc / 'slurm.conf').symlink_to('/etc/passwd')
    with pytest.raises(ClusterproofError,
                       match=rf'{etc}/slurm.conf is a symbolic link of root \(uid 0\), '
                             r'mode 777: a symbolic link\. Only root'):
        rundir.check_run_dir(run_dir)
    (etc / 'slurm.conf').unlink()
    # a file of another user's
    (etc / 'munge.key').write_bytes(b'k' * 1024)
    os.chown(etc / 'munge.key', uid, -1)
    with pytest.raises(ClusterproofError,
                       match=rf'{etc}/munge.key is a file of {name} \(uid {uid}\), '
                             r'mode 644: not root\'s'):
        rundir.check_run_dir(run_dir)
    os.chown(etc / 'munge.key', 0, -1)
    # a file or a directory others may write
    (etc / 'munge.key').chmod(0o666)
    with pytest.raises(ClusterproofError,
                       match=r'munge.key is a file of root \(uid 0\), mode 666: '
                             'others may write it'):
        rundir.check_run_dir(run_dir)
    (etc / 'munge.key').chmod(0o600)
    # what the daemons make is taken: MariaDB's files (0660, group root), munged's socket (0777)
    (run_dir / 'db').mkdir()
    (run_dir / 'db' / 'ibdata1').write_bytes(b'')
    (run_dir / 'db' / 'ibdata1').chmod(0o660)
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(run_dir / 'munge.socket.2'))
        (run_dir / 'munge.socket.2').chmod(0o777)
        assert rundir.check_run_dir(run_dir) is True
    os.chown(run_dir / 'db' / 'ibdata1', 0, pwd.getpwnam(name).pw_gid)
    with pytest.raises(ClusterproofError,
                       match=r'ibdata1 is a file of root \(uid 0\), mode 660: '
                             'others may write it'):
        rundir.check_run_dir(run_dir)
    (run_dir / 'db' / 'ibdata1').unlink()
    run_dir.chmod(0o777)
    with pytest.raises(ClusterproofError,
                       match=rf'{run_dir} is a directory of root \(uid 0\), mode 777: '
                             'others may write in it'):
        rundir.check_run_dir(run_dir)
    run_dir.chmod(0o1777)           # sticky does not make the run directory itself safe
    with pytest.raises(ClusterproofError, match='mode 1777: others may write in it'):
        rundir.check_run_dir(run_dir)
    run_dir.chmod(0o755)
    assert rundir.check_run_dir(run_dir) is True
    # the run directory itself a link, and a directory above it of another user's
    os.symlink(run_dir, tmp_path / 'link')
    with pytest.raises(ClusterproofError, match=rf'{tmp_path}/link is a symbolic link of root'):
        rundir.check_run_dir(tmp_path / 'link')
    theirs = tmp_path / 'theirs'
    theirs.mkdir()
    os.chown(theirs, uid, -1)
    with pytest.raises(ClusterproofError,
                       match=rf'{theirs} is a directory of {name} \(uid {uid}\), '
                             r'mode 755: not root\'s'):
        rundir.make_run_dir(theirs / 'rd')
    assert not (theirs / 'rd').exists()


@need_root
def test_a_file_a_running_daemon_renames_away_while_the_run_directory_is_looked_at(
        tmp_path, monkeypatch):
    """``down`` looks at the run directory while slurmctld still runs; saving its
    state, slurmctld renames job_state to job_state.old and back. A file listed
    and gone before it is looked at is no problem (it failed ``down`` once,
    in CI: "state/job_state.old: No such file or directory")."""
    run_dir = rundir.make_run_dir(tmp_path / 'rd')
    (run_dir / 'state').mkdir()
    for name in ('job_state', 'job_state.old'):
        (run_dir / 'state' / name).write_bytes(b'')
    real_walk = os.walk

    def walk_then_rename(top, *args, **kw):
        for dirpath, dirnames, filenames in real_walk(top, *args, **kw):
            if dirpath.endswith('/state'):      # listed: now slurmctld saves its state
                os.replace(os.path.join(dirpath, 'job_state.old'),
                           os.path.join(dirpath, 'job_state'))
            yield dirpath, dirnames, filenames

    monkeypatch.setattr(rundir.os, 'walk', walk_then_rename)
    assert rundir.check_run_dir(run_dir) is True
    monkeypatch.undo()
    # what is still there is still judged
    os.chown(run_dir / 'state' / 'job_state', 1, -1)
    with pytest.raises(ClusterproofError, match=r'state/job_state is a file of .*not root\'s'):
        rundir.check_run_dir(run_dir)


@need_root
def test_the_locks_are_roots_and_another_user_can_neither_hold_nor_make_them(ordinary_user):
    name, _ = ordinary_user
    # the old fixed names in /tmp, made and held by an ordinary user: nothing waits for them
    old = [f'/tmp/clusterproof-cluster{INSTANCE}.lock',
           f'/tmp/clusterproof-cluster{INSTANCE}.op.lock', '/tmp/clusterproof-iozone.lock']
    holder = subprocess.Popen(['runuser', '-u', name, '--', 'sh', '-c',
                               ' '.join(f'exec {9 - j}>>{p} && flock {9 - j} &&'
                                        for j, p in enumerate(old))
                               + ' echo held && exec sleep 600'],
                              stdout=subprocess.PIPE, text=True, cwd='/', start_new_session=True)
    try:
        assert holder.stdout.readline() == 'held\n'
        with lc.operation_lock(INSTANCE):
            pass
        lc.open_users_lock(INSTANCE).close()
        assert lc.in_use(INSTANCE) is False
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait()
        for path in old:
            if os.path.lexists(path):
                os.unlink(path)
    for path in (lc.operation_lock_path(INSTANCE), lc.users_lock_path(INSTANCE)):
        st = os.lstat(path)
        assert st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o600 and stat.S_ISREG(st.st_mode)
        held = _as(name, 'flock', '-n', str(path), 'true', cwd='/')
        assert held.returncode != 0 and 'Permission denied' in held.stderr, held.stderr
    st = os.lstat(lc.LOCK_DIR)
    assert st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o755
    made = _as(name, 'touch', str(lc.LOCK_DIR / 'cluster9.op.lock'), cwd='/')
    assert made.returncode != 0 and not (lc.LOCK_DIR / 'cluster9.op.lock').exists()


@pytest.mark.parametrize('bad', ['/tmp/x$(touch /tmp/pwned)', '/tmp/a b', "/tmp/it's",
                                 '/tmp/x;id', '/tmp/n%n'])
def test_a_run_directory_holding_what_a_shell_or_slurm_conf_would_read_is_refused(bad, monkeypatch):
    with pytest.raises(ClusterproofError,
                       match=r"--run-dir .* holds .*: a run directory is written into "
                             'slurm.conf and into shell lines run as root'):
        lc.run_dir_for(INSTANCE, bad)
    monkeypatch.setenv('CLUSTERPROOF_CLUSTER_DIR', bad)
    with pytest.raises(ClusterproofError, match=r'\$CLUSTERPROOF_CLUSTER_DIR .* holds '):
        lc.run_dir_for(INSTANCE)
    with pytest.raises(ClusterproofError, match='run directory .* holds '):
        lc.Spec(instance=INSTANCE, run_dir=bad)


def test_up_with_a_run_directory_that_would_run_a_command_refuses_and_runs_nothing(tmp_path):
    mark = tmp_path / 'ran'
    proc = _cluster('up', '--instance', str(INSTANCE), '--run-dir', f'{tmp_path}/rd$(touch {mark})')
    assert proc.returncode == 2
    assert (proc.stderr.startswith("clusterproof cluster: error: --run-dir '")
            and ' holds ' in proc.stderr)
    assert not mark.exists() and not list(tmp_path.iterdir())


def test_the_paths_in_a_nodes_shell_line_and_in_the_export_lines_are_quoted():
    """Belt and braces: a node's ``sh -c`` line and the ``export`` lines of
    ``cluster env`` (read by ``eval``) quote what they put in, even a path
    the run directory's check would have refused."""
    assert shlex.split(lc.env_lines("/tmp/it's $(id)")[0]) == [
        "export", "SLURM_CONF=/tmp/it's $(id)/etc/slurm.conf"]
    argv = in_node(lc.Instance(INSTANCE), 1, Path("/tmp/it's $(id)/etc/hosts"), 'true',
                   [(Path('/tmp/g 1'), Path('/tmp/m'))], name='n;1')
    words = shlex.split(argv[-1])
    assert words[:4] == ['mount', '--bind', "/tmp/it's $(id)/etc/hosts", '/etc/hosts']
    assert (words[5:9] == ['mount', '--bind', '/tmp/g 1', '/tmp/m']
            and words[10:12] == ['hostname', 'n;1'])
