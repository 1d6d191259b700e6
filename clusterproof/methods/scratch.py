"""The test directories of the checks on the file system under test: created,
marked and removed, only under the scratch directory
(:mod:`clusterproof.site.scratch` decides which directories those are).

Every I/O check (IOR, mdtest, IOzone, fio, the mmap sweep) writes only into a
directory that clusterproof created for that one test, under the configured
scratch directory (``extras['storage']['scratch']`` of the partition), and
removes only that directory afterwards:

- a directory that exists, is not empty and was not created by clusterproof
  is refused (an existing empty directory may be used; then only what the
  test put in it is removed, not the directory itself);
- a created directory holds a marker file, :data:`MARKER`, recording who
  created it (host, process, Slurm job, time). Cleanup removes a directory
  only when the marker is there and names that very directory.

Lifecycle (the checks get it from
:class:`clusterproof.checklib.testdirs.TestDirectories`): the check plans the
path; the job creates it on its node before the program starts
(:func:`shell_create`) and removes it when the job script exits, however it
exits (:func:`shell_cleanup` in the script's ``EXIT`` trap); the check removes
it again after the run (:func:`remove_test_dir`, idempotent), the ``reframe``
process that planned it removes it when it exits (an interrupted ``reframe``
cancels its jobs, then exits: :func:`remove_created_here`), and a later run
removes leftovers whose creating process is gone (:func:`remove_leftovers`).
A dry run (``--dry-run``) writes the job script and creates nothing. Every created
directory is also recorded in ``<scratch>/.clusterproof-registry`` so
leftovers can be found even when they are not direct children.
"""

import atexit
import json
import os
import shlex
import shutil
import socket
import time
import uuid
from pathlib import Path

from clusterproof import ClusterproofError, command
from clusterproof.methods.sizing import check_fits
from clusterproof.site.scratch import check_chars, check_scratch, check_target

#: name of the marker file inside every directory clusterproof created
MARKER = '.clusterproof-created'
#: registry of created directories, one JSON line each, in the scratch directory
REGISTRY = '.clusterproof-registry'


def _pid_start(pid):
    """Start time of process ``pid`` (clock ticks since boot), or None."""
    try:
        with open(f'/proc/{pid}/stat') as f:
            stat = f.read()
        return int(stat.rsplit(')', 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _marker_record(path, adopted, owner_pid):
    return {
        'created_by': 'clusterproof',
        'path': str(path),
        'host': socket.gethostname(),
        'pid': owner_pid,
        'pid_start': _pid_start(owner_pid),
        'slurm_job_id': os.environ.get('SLURM_JOB_ID', ''),
        'time': time.time(),
        'adopted': adopted,
    }


def plan_test_dir(scratch, name):
    """A fresh path ``<scratch>/<name>-<unique>`` (nothing is created)."""
    check_chars(name, 'test name')
    if '/' in name:
        raise ClusterproofError(f'test name {name!r}: must not contain "/"')
    root = check_scratch(scratch)
    return root / f'{name}-{uuid.uuid4().hex[:12]}'


def _register(root, record):
    try:
        with open(root / REGISTRY, 'a') as f:
            f.write(json.dumps(record) + '\n')
    except OSError as err:
        raise ClusterproofError(f'cannot record the test directory in {root / REGISTRY}: {err}')


def create_test_dir(scratch, path, owner_pid=None):
    """Create ``path`` (under ``scratch``) for one test, with its marker.

    ``owner_pid`` is the process that uses the directory (default: this
    one); while it runs, :func:`remove_leftovers` leaves the directory alone.

    ``path`` must not exist yet, or be an empty directory (then it is
    adopted: cleanup empties it but leaves it), or be a directory this
    program created earlier (marker present). Returns the resolved path.
    """
    root = check_scratch(scratch)
    real = check_target(root, path)
    adopted = False
    if real.exists():
        if not real.is_dir():
            raise ClusterproofError(f'test directory {real}: exists and is not a directory')
        if (real / MARKER).is_file():
            return real
        if any(real.iterdir()):
            raise ClusterproofError(
                f'test directory {real}: exists, is not empty and was not created by '
                f'clusterproof (no {MARKER} file); choose a new or empty directory, '
                f'nothing in it will be touched')
        adopted = True
    if not root.parent.is_dir():
        raise ClusterproofError(
            f'scratch directory {root}: its parent {root.parent} does not exist; is the file '
            f'system under test mounted? Create {root} or fix '
            f"extras['storage']['scratch'] in the system file")
    root.mkdir(exist_ok=True)
    if not adopted:
        try:
            real.mkdir(parents=True)
        except FileExistsError:
            raise ClusterproofError(f'test directory {real}: appeared while creating it; '
                                    f'another run uses the same name') from None
        except OSError as err:
            raise ClusterproofError(f'cannot create test directory {real}: {err}') from None
    record = _marker_record(real, adopted, owner_pid or os.getpid())
    with open(real / MARKER, 'x') as f:
        json.dump(record, f)
    _register(root, record)
    if owner_pid in (None, os.getpid()):
        # Used by this process: removed at its exit at the latest. A directory
        # made for another process (a job script) lives as long as that one.
        if not _created_here:
            atexit.register(remove_created_here)
        _created_here.append((root, real))
    return real


#: (scratch, test directory) created by this process, removed at its exit
_created_here = []


def remove_created_here():
    """Remove the test directories this process created that are still
    there (idempotent; only directories with their marker). Runs at exit, so
    an interrupted run leaves no test files behind."""
    while _created_here:
        root, path = _created_here.pop()
        try:
            remove_test_dir(root, path)
        except (ClusterproofError, OSError):
            pass


def read_marker(path):
    """The marker record of ``path``, or None when there is none (or it is not ours)."""
    try:
        with open(Path(path) / MARKER) as f:
            rec = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(rec, dict) or rec.get('created_by') != 'clusterproof':
        return None
    return rec


def remove_test_dir(scratch, path):
    """Remove a test directory clusterproof created (idempotent).

    Returns True if something was removed, False if ``path`` is already gone.
    Refuses (and removes nothing) when the marker is missing or names another
    path, or when ``path`` is not under ``scratch``.
    """
    real = check_target(scratch, path)
    if not real.exists():
        return False
    rec = read_marker(real)
    if rec is None:
        raise ClusterproofError(
            f'refusing to remove {real}: it has no {MARKER} marker, so clusterproof did not '
            f'create it; remove it by hand if it is yours')
    if os.path.realpath(rec.get('path', '')) != str(real):
        raise ClusterproofError(
            f'refusing to remove {real}: its marker was written for {rec.get("path")!r} '
            f'(the directory was moved or copied)')
    if rec.get('adopted'):
        for child in real.iterdir():
            if child.name == MARKER:
                continue
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
        (real / MARKER).unlink()
    else:
        shutil.rmtree(real)
    return True


def shell_cleanup(path):
    """A shell command that removes exactly ``path``, only if its marker is
    there: for a job script's ``postrun_cmds``, so the files go even when
    the program failed."""
    q = shlex.quote(str(path))
    return f'if [ -f {q}/{MARKER} ]; then rm -rf -- {q}; fi'


def _creator_gone(rec, max_age_s):
    """True when the process that created a directory is no longer running."""
    if rec.get('host') == socket.gethostname():
        start = _pid_start(rec.get('pid'))
        if start is None or (rec.get('pid_start') is not None and start != rec['pid_start']):
            return True
        return False
    # Created on another host: its process cannot be checked from here.
    return max_age_s is not None and time.time() - float(rec.get('time', 0)) > max_age_s


def leftovers(scratch, max_age_s=None):
    """Directories created by clusterproof under ``scratch`` whose creating
    process is gone (same host), or older than ``max_age_s`` (other hosts)."""
    root = check_scratch(scratch)
    if not root.is_dir():
        return []
    candidates = {}
    try:
        with open(root / REGISTRY) as f:
            for line in f:
                try:
                    rec = json.loads(line)
                    candidates[rec['path']] = None
                except (ValueError, KeyError, TypeError):
                    continue
    except OSError:
        pass
    for child in root.iterdir():
        if child.is_dir() and not child.is_symlink() and (child / MARKER).is_file():
            candidates[str(child)] = None
    found = []
    for path in candidates:
        try:
            real = check_target(root, path)
        except ClusterproofError:
            continue
        rec = read_marker(real)
        if rec and os.path.realpath(rec.get('path', '')) == str(real) \
                and _creator_gone(rec, max_age_s):
            found.append(real)
    return sorted(found)


def remove_leftovers(scratch, max_age_s=None):
    """Remove :func:`leftovers` and compact the registry; returns the removed paths."""
    root = check_scratch(scratch)
    removed = []
    for path in leftovers(root, max_age_s):
        if remove_test_dir(root, path):
            removed.append(path)
    _compact_registry(root)
    return removed


def _compact_registry(root):
    reg = root / REGISTRY
    if not reg.is_file():
        return
    keep = []
    with open(reg) as f:
        for line in f:
            try:
                rec = json.loads(line)
                if read_marker(rec['path']) is not None:
                    keep.append(line if line.endswith('\n') else line + '\n')
            except (ValueError, KeyError, TypeError):
                continue
    tmp = reg.with_name(REGISTRY + f'.{os.getpid()}.tmp')
    with open(tmp, 'w') as f:
        f.writelines(keep)
    os.replace(tmp, reg)


def prepare_test_dir(scratch, name=None, nbytes=None, what='test files', path=None,
                     owner_pid=None):
    """The test directory of one test, created: the scratch directory
    checked, leftovers of killed runs removed, ``nbytes`` checked against the
    free space (when given) and a fresh directory created, ``path`` when
    given (planned by :func:`plan_test_dir`), else ``<scratch>/<name>-<unique>``.
    Runs in the job (``clusterproof scratch create``, :func:`shell_create`)
    so the directory is made on the node that uses it. Every refusal is a
    :class:`ClusterproofError`: the job stops and the check fails with it."""
    root = check_scratch(scratch)
    planned = path or plan_test_dir(root, name)
    remove_leftovers(root)
    if nbytes is not None:
        check_fits(root if root.is_dir() else root.parent, nbytes, what)
    return create_test_dir(root, planned, owner_pid=owner_pid)


def shell_create(scratch, path, nbytes=None, what=None):
    """The shell command a job script runs to create the planned test
    directory ``path`` (:func:`prepare_test_dir` through ``clusterproof
    scratch create``), owned by the job script; the script stops with
    status 2 when it is refused (the refusal is on stderr)."""
    argv = command('scratch', 'create', '--path', path)
    if nbytes is not None:
        argv += ['--bytes', str(int(nbytes))]
    if what:
        argv += ['--what', what]
    argv += [str(scratch), Path(path).name]
    # no '|': the command is logged in the perflog, whose fields '|' separates
    return f'if ! {shlex.join(argv)} --owner-pid $$ > /dev/null; then exit 2; fi'


def remove_at_exit(scratch, path):
    """Remove ``path`` (if it exists, with its marker) when this process
    exits: a directory a job creates is removed by the ``reframe`` that
    planned it, if it is interrupted before the job could."""
    if not _created_here:
        atexit.register(remove_created_here)
    _created_here.append((Path(scratch), Path(path)))
