"""What only root may have made: the run directory and lock files of a local
cluster, whose daemons run as root and run the prolog in its ``etc/`` as root.

``up`` creates the run directory fresh (mode 0700; opened to 0755 once root
owns it: ordinary users read slurm.conf and reach the munge socket), or takes
one that exists only when it is root's own, writable by no one else, and
holds no symbolic link and nothing of another user's. Every directory above
it must be root's and writable by no one else, unless sticky (``/tmp``),
where another user could not rename it. Anything else is refused before
anything is written, naming the path, its owner and mode: another local user
may have planted it (a ``slurm.conf`` linked to a file of root's, a munge key
of their own).

The locks of instance K (one ``up``/``down`` at a time; a test session's
shared hold) live in :data:`LOCK_DIR`, a directory only root can create,
created and opened without following links, mode 0600: no other user can
create, replace or hold them. The run directory's path is written into
slurm.conf and into shell lines run as root: it may hold only the characters
of :data:`PATH_CHARS`.
"""

import contextlib
import fcntl
import os
import pwd
import re
import stat
from pathlib import Path

from clusterproof import ClusterproofError

#: where the lock files of every instance live: only root can create it (/run is root's)
LOCK_DIR = Path('/run/clusterproof')
#: what a run directory's path may hold: it goes into slurm.conf and into ``sh -c`` lines
PATH_CHARS = r'A-Za-z0-9._+/-'
#: what a run directory's name may hold, said in an error
PATH_CHARS_SAID = 'letters, digits and . _ + - /'
#: a directory the jobs of a node write (the node's /tmp): open to all, sticky; not looked into
OPEN_STICKY = stat.S_IWOTH | stat.S_ISVTX
#: under spool/<node>/: what Slurm makes for a job and gives to its user (the
#: batch script in job<id>/, the PMIx plugin's pmix.<job>.<step>/); left
#: behind when a job was killed at ``down``
JOB_DIR = re.compile(r'job[0-9]+|pmix\.[0-9]+\.[0-9]+')


def check_path_chars(path, where):
    """``path`` unchanged, or ClusterproofError naming ``where`` (the option
    or variable it came from) and the characters it may not hold."""
    bad = sorted(set(re.sub(f'[{PATH_CHARS}]', '', str(path))))
    if bad:
        raise ClusterproofError(
            f'{where} {str(path)!r} holds {" ".join(repr(c) for c in bad)}: '
            'a run directory is written into '
            f'slurm.conf and into shell lines run as root, and may hold only {PATH_CHARS_SAID}')
    return path


def owner(uid):
    """``alice (uid 1001)``, or ``uid 1001`` when no user has it."""
    try:
        return f'{pwd.getpwuid(uid).pw_name} (uid {uid})'
    except KeyError:
        return f'uid {uid}'


def _kind(st):
    if stat.S_ISLNK(st.st_mode):
        return 'a symbolic link'
    return 'a directory' if stat.S_ISDIR(st.st_mode) else 'a file'


def _said(path, st):
    """``/tmp/x is a directory of alice (uid 1001), mode 755``."""
    return f'{path} is {_kind(st)} of {owner(st.st_uid)}, mode {stat.S_IMODE(st.st_mode):o}'


def _writable_by_others(st):
    """Writable by a user not root: by all, or by a group not root's (MariaDB
    makes its files 0660, group root)."""
    return bool(st.st_mode & stat.S_IWOTH or (st.st_mode & stat.S_IWGRP and st.st_gid != 0))


def parent_problem(path):
    """Why a directory above ``path`` cannot hold root's run directory (the
    first one from ``/`` down), or None. A symbolic link is followed, and
    what it leads to is looked at too."""
    path = Path(os.path.abspath(path))
    for parent in [*reversed(path.parents), *reversed(path.parent.resolve().parents),
                   path.parent.resolve()]:
        try:
            st = os.lstat(parent)
        except FileNotFoundError:
            continue
        if st.st_uid != 0:
            return f'{_said(parent, st)}: not root\'s'
        if stat.S_ISDIR(st.st_mode) and _writable_by_others(st) and not st.st_mode & stat.S_ISVTX:
            return f'{_said(parent, st)}: others may write in it (and rename what is in it)'
    return None


def entry_problem(path, st, top):
    """Why ``path`` (its ``os.lstat`` ``st``) in a run directory whose top is
    ``top`` cannot be root's, or None."""
    if stat.S_ISLNK(st.st_mode):
        return f'{_said(path, st)}: a symbolic link'
    if st.st_uid != 0:
        return f'{_said(path, st)}: not root\'s'
    if stat.S_ISDIR(st.st_mode):
        if _writable_by_others(st) and (path == top or st.st_mode & OPEN_STICKY != OPEN_STICKY):
            return f'{_said(path, st)}: others may write in it'
    elif _writable_by_others(st) and stat.S_ISREG(st.st_mode):    # a socket is for all to reach
        return f'{_said(path, st)}: others may write it'
    return None


def _jobs(path, top):
    """True for what Slurm makes for a job in a node's spool (:data:`JOB_DIR`)."""
    rel = Path(path).relative_to(top).parts
    return len(rel) == 3 and rel[0] == 'spool' and JOB_DIR.fullmatch(rel[2]) is not None


def _open_sticky(st):
    """A node's /tmp: open to all and sticky, its files the jobs'."""
    return stat.S_ISDIR(st.st_mode) and st.st_mode & OPEN_STICKY == OPEN_STICKY


def tree_problem(top):
    """Why the existing run directory ``top`` cannot be root's (the first
    thing found), or None. Nothing is followed through a link. The daemons
    may be running (``down``, ``up`` when already up): what is gone by the
    time it is looked at is not judged."""
    top = str(top)
    st = os.lstat(top)
    why = entry_problem(top, st, top)
    if why or not stat.S_ISDIR(st.st_mode):
        return why or f'{_said(top, st)}: not a directory'
    for dirpath, dirnames, filenames in os.walk(top):
        for name in sorted(dirnames + filenames):
            path = os.path.join(dirpath, name)
            try:
                st = os.lstat(path)
            except FileNotFoundError:   # gone since the listing: slurmctld, saving its
                continue                # state, renames job_state to job_state.old
            jobs = _jobs(path, top)
            if jobs and stat.S_ISLNK(st.st_mode):
                return f'{_said(path, st)}: a symbolic link'
            why = None if jobs else entry_problem(path, st, top)
            if why:
                return why
            if name in dirnames and (jobs or _open_sticky(st)):
                dirnames.remove(name)       # the jobs': not looked into
    return None


def _refuse(run_dir, why):
    raise ClusterproofError(
        f'run directory {run_dir}: {why}. Only root may have made what a cluster run as '
        'root reads: another user may have planted it. Nothing was changed; look at it, '
        f'remove it (rm -rf -- {run_dir}) and run again, or choose another --run-dir')


def check_run_dir(run_dir):
    """Refuse (ClusterproofError naming path, owner and mode) a run directory
    root cannot trust, or one above it; True when it exists, False when not."""
    why = parent_problem(run_dir)
    if why:
        _refuse(run_dir, why)
    if not os.path.lexists(run_dir):
        return False
    why = tree_problem(run_dir)
    if why:
        _refuse(run_dir, why)
    return True


def make_run_dir(run_dir):
    """Create the run directory fresh, mode 0700 (its missing parents as
    root's), or take it when :func:`check_run_dir` finds it root's. A
    directory another user makes between the look and the creation is
    refused all the same: ``mkdir`` does not take an existing one."""
    run_dir = Path(run_dir)
    if check_run_dir(run_dir):
        return run_dir
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(run_dir, 0o700)
    except FileExistsError:
        check_run_dir(run_dir)
        return run_dir
    why = parent_problem(run_dir)       # a parent made just now by another user
    if why:
        os.rmdir(run_dir)
        _refuse(run_dir, why)
    return run_dir


def lock_dir():
    """:data:`LOCK_DIR`, created root's (mode 0755) when missing; refused
    when it is not root's, writable by others, or a link."""
    try:
        os.mkdir(LOCK_DIR, 0o755)
    except FileExistsError:
        pass
    except PermissionError:
        raise ClusterproofError(f'cannot create {LOCK_DIR}: the local cluster\'s '
                                'locks are root\'s; '
                                'run as root, e.g. sudo clusterproof cluster ...') from None
    st = os.lstat(LOCK_DIR)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0 or _writable_by_others(st):
        raise ClusterproofError(f'{_said(LOCK_DIR, st)}: the local cluster\'s locks need a '
                                'directory of root\'s that no one else may write; '
                                'remove it and run again')
    return LOCK_DIR


def open_lock(path):
    """The lock file ``path`` in :func:`lock_dir`, opened for flock: created
    mode 0600 when missing, never through a link."""
    lock_dir()
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except PermissionError:
        raise ClusterproofError(f'cannot open the lock file {path}: it is root\'s; run as root, '
                                'e.g. sudo clusterproof cluster ...') from None
    except OSError as err:
        raise ClusterproofError(f'cannot open the lock file {path}: {err.strerror}') from None
    return os.fdopen(fd, 'r+')


def users_lock_path(k):
    """Lock file of instance ``k`` held shared by whoever uses the cluster
    for a while (a test session); ``down`` refuses while it is held. Root's,
    in :data:`~clusterproof.cluster.rundir.LOCK_DIR`."""
    return LOCK_DIR / f'cluster{k}.lock'


def open_users_lock(k):
    """The users lock of instance ``k``, opened for flock (created root's)."""
    return open_lock(users_lock_path(k))


def in_use(k):
    """True if something holds the users lock of instance ``k``."""
    path = users_lock_path(k)
    if not path.exists():
        return False
    with open_lock(path) as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(f, fcntl.LOCK_UN)
    return False


def operation_lock_path(k):
    """Lock file of instance ``k`` that one ``up`` or ``down`` holds at a time."""
    return LOCK_DIR / f'cluster{k}.op.lock'


@contextlib.contextmanager
def operation_lock(k):
    """One ``up`` or ``down`` of instance ``k`` at a time."""
    with open_lock(operation_lock_path(k)) as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield
