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
CHECKS_DIR = REPO / 'reframe_checks'
CHECK_SOURCES = CHECKS_DIR / 'src'


def references_dir():
    """Where ``<system>.yaml`` reference files live: ``CLUSTERPROOF_REFERENCES``
    or ``site_config/references/`` of the repository."""
    return Path(os.environ.get('CLUSTERPROOF_REFERENCES', REFERENCES_DIR)).resolve()


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


def write_atomic(path, text, mode=0o644):
    """Write ``text`` to ``path`` through a temporary file in the same
    directory and a rename: readers see the old file or the new one, never
    half of it, and a failure leaves the old file as it was."""
    from clusterproof import ClusterproofError
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f'.{path.name}.', dir=path.parent)
    except OSError as err:
        raise ClusterproofError(f'cannot write {path}: {err.strerror}') from None
    try:
        with os.fdopen(fd, 'w') as fp:
            fp.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


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
