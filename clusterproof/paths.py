"""Where things are: the repository, the results directory, the site config."""

import os
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SITE_CONFIG = REPO / 'site_config'
SETTINGS_FILE = SITE_CONFIG / 'settings.py'
#: reference values, one YAML file per system; ``CLUSTERPROOF_REFERENCES`` names
#: another directory (a site's own references, kept outside the repository)
REFERENCES_DIR = Path(os.environ.get('CLUSTERPROOF_REFERENCES', SITE_CONFIG / 'references'))
#: the system files shipped with clusterproof; a site keeps its own in the
#: directory ``CLUSTERPROOF_SYSTEMS`` names (:func:`system_files`)
SHIPPED_SYSTEMS = SITE_CONFIG / 'systems'
#: the shipped systems ReFrame tries first, in this order; ``local`` (any
#: host) is always last
SPECIFIC_SYSTEMS = ('pmserver', 'pixstor', 'minerva', 'emu')
CHECKS_DIR = REPO / 'reframe_checks'
CHECK_SOURCES = CHECKS_DIR / 'src'


def references_dir():
    """Where ``<system>.yaml`` reference files live: ``CLUSTERPROOF_REFERENCES``
    or ``site_config/references/`` of the repository."""
    return Path(os.environ.get('CLUSTERPROOF_REFERENCES', REFERENCES_DIR)).resolve()


def site_systems_dir():
    """Where ``clusterproof init`` writes a system file:
    ``CLUSTERPROOF_SYSTEMS`` (a site's own directory, outside the
    repository) or ``site_config/systems/`` of the repository."""
    return Path(os.environ.get('CLUSTERPROOF_SYSTEMS', SHIPPED_SYSTEMS)).resolve()


def system_files(shipped=None):
    """The system files ReFrame's configuration assembles, in the order it
    tries their hostnames: the specific shipped systems, then every other
    file of ``shipped`` (default ``site_config/systems/``; a settings file
    names the directory beside it) and of ``CLUSTERPROOF_SYSTEMS`` in name
    order, ``local`` (any host) last. A file whose name starts with ``_`` is
    not a system. One system name in both directories is an error naming
    the two files (which one ReFrame would use cannot be guessed)."""
    from clusterproof import ClusterproofError
    dirs = [Path(shipped or SHIPPED_SYSTEMS).resolve()]
    if os.environ.get('CLUSTERPROOF_SYSTEMS') and site_systems_dir() != dirs[0]:
        site = site_systems_dir()
        if not site.is_dir():
            raise ClusterproofError(f'CLUSTERPROOF_SYSTEMS={site}: no such directory')
        dirs.append(site)
    found = {}
    for d in dirs:
        for path in sorted(d.glob('*.py')):
            if path.stem.startswith('_'):
                continue
            if path.stem in found:
                raise ClusterproofError(f'system {path.stem} is defined twice: '
                                        f'{found[path.stem]} and {path}; keep one')
            found[path.stem] = path
    first = [found[n] for n in SPECIFIC_SYSTEMS if n in found]
    rest = [found[n] for n in sorted(found) if n not in SPECIFIC_SYSTEMS and n != 'local']
    return first + rest + ([found['local']] if 'local' in found else [])


def system_file(name):
    """The file that declares system ``name``: the one of that name that
    :func:`system_files` assembles, else the one named by the part of
    ``name`` before its first ``-`` (a file may declare several systems:
    ``pmserver.py`` declares ``pmserver-mm`` too), else where
    ``clusterproof init`` would write it."""
    files = {path.stem: path for path in system_files()}
    for stem in (name, name.split('-')[0]):
        if stem in files:
            return files[stem]
    return site_systems_dir() / f'{name}.py'


def results_dir(environ=None):
    """The one directory that holds perflogs, the results database, run
    reports, stage and output directories. ``CLUSTERPROOF_RESULTS`` sets it
    (in ``environ``, default this process's environment); the default is
    ``results/`` in the repository."""
    environ = os.environ if environ is None else environ
    return Path(environ.get('CLUSTERPROOF_RESULTS', REPO / 'results')).resolve()


def local_scratch():
    """The scratch directory of the systems on this machine (``local``,
    ``emu``): ``CLUSTERPROOF_SCRATCH``, default ``<results>/scratch``."""
    return os.environ.get('CLUSTERPROOF_SCRATCH', str(results_dir() / 'scratch'))


def results_db():
    return results_dir() / 'results.db'


def read_text(path, what='file'):
    """The text of ``path``, UTF-8. A file that cannot be read or is not
    UTF-8 text is an error naming it (``what`` says what it is for)."""
    from clusterproof import ClusterproofError
    try:
        return Path(path).read_text(encoding='utf-8')
    except OSError as err:
        raise ClusterproofError(f'{path}: cannot read the {what}: {err.strerror}') from None
    except UnicodeDecodeError as err:
        raise ClusterproofError(f'{path}: not UTF-8 text, as the {what} must be '
                                f'({err.reason} at byte '
                                f'{err.start}); save it as UTF-8') from None


def write_atomic(path, text, mode=None):
    """Write ``text`` to ``path`` through a temporary file in the same
    directory and a rename (:func:`replace_synced`): readers see the old
    file or the new one, never half of it, and the new one survives a power
    cut (an acceptance record a signature rests on). The file's mode is
    ``mode``, default what the umask gives a new file."""
    from clusterproof import ClusterproofError
    path = Path(path)
    if path.is_dir():
        raise ClusterproofError(f'cannot write {path}: it is a directory; name the file to '
                                f'write')
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ClusterproofError(f'cannot write {path}: {err.strerror}') from None

    def write(tmp):
        with open(tmp, 'w', encoding='utf-8') as fp:
            fp.write(text)
    return replace_synced(path, write, mode)


def replace_synced(path, write, mode=None):
    """The one way a file is replaced whole: ``write(tmp)`` fills a
    temporary file beside ``path`` (by its name: a text, a Parquet file),
    which gets ``mode`` (default what the umask gives a new file, never
    more), is synced and renamed to ``path``, and the directory is synced:
    all or nothing, and on disk when this returns. A failure removes the
    temporary file and leaves ``path`` as it was."""
    from clusterproof import ClusterproofError
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f'.{path.name}.', suffix='.tmp', dir=path.parent)
    except OSError as err:
        raise ClusterproofError(f'cannot write {path}: {err.strerror}') from None
    os.close(fd)
    try:
        write(tmp)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fchmod(fd, new_file_mode() if mode is None else mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    sync_directory(path.parent)
    return path


def append_synced(path, text):
    """Append ``text`` to ``path`` (created with the umask's mode) and sync
    it, and the directory when the file is new: an appended history entry
    survives a power cut."""
    path = Path(path)
    new = not path.exists()
    with open(path, 'a', encoding='utf-8') as fp:
        fp.write(text)
        fp.flush()
        os.fsync(fp.fileno())
    if new:
        sync_directory(path.parent)
    return path


def sync_directory(path):
    """fsync the directory ``path``: the names created or renamed in it are
    on disk."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def new_file_mode():
    """The mode a new file gets from this process's umask (``0o666 & ~umask``),
    read from ``/proc/self/status`` where Linux gives it: setting the umask
    to read it would change it for a moment in every thread."""
    try:
        with open('/proc/self/status') as fp:
            umask = next(int(line.split()[1], 8) for line in fp if line.startswith('Umask:'))
    except (OSError, StopIteration, ValueError, IndexError):
        umask = os.umask(0o77)
        os.umask(umask)
    return 0o666 & ~umask


def user_path(base):
    """``<base>-<uid>``: a path of the user running clusterproof, for what
    lives outside their results directory on a machine several users share
    (tmpfs directories): each user their own, no one meets another's."""
    return f'{base}-{os.getuid()}'


def private_dir(path):
    """Create ``path`` as a directory only its owner can enter (mode 0700),
    or accept it when it exists and is this user's own directory. Another
    user's directory (or a symbolic link, or one others may write) is an
    error naming the path, its owner and mode."""
    import stat

    from clusterproof import ClusterproofError
    path = Path(path)
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError as err:
        raise ClusterproofError(f'cannot create {path}: {err.strerror}') from None
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() \
            or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise ClusterproofError(
            f'{path} is not a private directory of this user (uid {os.getuid()}): it is '
            f'{"a directory" if stat.S_ISDIR(st.st_mode) else "not a directory"} of uid '
            f'{st.st_uid}, mode {stat.S_IMODE(st.st_mode):o}; remove it or choose another path')
    return path
