"""The scratch directory a site declares (``extras['storage']['scratch']`` of
a partition), checked, and the test directories that may lie under it.

Rules (each refusal is a :class:`ClusterproofError` naming the path and rule):

- the scratch directory must not be ``/``, a system directory (``/usr``,
  ``/etc``, ...) or a home directory, after resolving symbolic links;
- a test directory must lie strictly under the scratch directory after
  resolving symbolic links;
- paths must not contain white space, newlines or shell metacharacters
  (they end up in job scripts and in IOzone's ``-+m`` file).

``clusterproof validate`` applies them to the site configuration; the test
directories' lifecycle (:mod:`clusterproof.methods.scratch`) applies them
before anything is written.
"""

import os
import pwd
import re
from pathlib import Path

from clusterproof import ClusterproofError

#: characters allowed in scratch and test paths (no white space, quotes,
#: ``$ ; & | < > * ? [ ] ( ) { } ! ~ # `` or backquotes)
_SAFE = re.compile(r'^[A-Za-z0-9._/+=@%,:-]+$')

#: directories that may never be a scratch directory (nor hold one directly
#: as themselves); subdirectories like /tmp/x or /var/tmp/x are allowed
SYSTEM_DIRS = frozenset(['/', '/bin', '/boot', '/dev', '/etc', '/home', '/lib', '/lib32',
                         '/lib64', '/opt', '/proc', '/root', '/run', '/sbin', '/srv',
                         '/sys', '/usr', '/var', '/tmp', '/var/tmp', '/mnt', '/media'])


def check_chars(path, what):
    text = str(path)
    if not text or not _SAFE.match(text):
        bad = sorted({ch for ch in text if not _SAFE.match(ch)}) if text else []
        shown = ', '.join(repr(ch) for ch in bad) or 'empty path'
        raise ClusterproofError(
            f'{what} {text!r}: contains characters that are not allowed ({shown}); '
            f'use letters, digits and . _ / + = @ % , : - only')


def home_dirs():
    """Home directories of this machine's users and of $HOME, resolved."""
    homes = set()
    try:
        for entry in pwd.getpwall():
            if entry.pw_dir and entry.pw_dir != '/':
                homes.add(os.path.realpath(entry.pw_dir))
    except OSError:
        pass
    if os.environ.get('HOME') and os.environ['HOME'] != '/':
        homes.add(os.path.realpath(os.environ['HOME']))
    return homes


def check_scratch(scratch):
    """The resolved scratch directory, or a refusal naming the rule."""
    if scratch is None or str(scratch).strip() == '':
        raise ClusterproofError(
            "no scratch directory: declare extras['storage']['scratch'] in the system's "
            'file (site_config/systems/<system>.py, or in $CLUSTERPROOF_SYSTEMS: a '
            'directory on the file system under test)')
    check_chars(scratch, 'scratch directory')
    if not os.path.isabs(str(scratch)):
        raise ClusterproofError(f'scratch directory {str(scratch)!r}: must be an absolute path')
    real = os.path.realpath(str(scratch))
    check_chars(real, f'scratch directory {str(scratch)!r} resolves to')
    if real in SYSTEM_DIRS:
        raise ClusterproofError(
            f'scratch directory {str(scratch)!r} (resolved: {real}) is a system directory; '
            f'point extras[\'storage\'][\'scratch\'] at a directory of its own on the file '
            f'system under test, e.g. {real.rstrip("/")}/clusterproof')
    if real in home_dirs():
        raise ClusterproofError(
            f'scratch directory {str(scratch)!r} (resolved: {real}) is a home directory; '
            f'use a subdirectory of its own, e.g. {real}/clusterproof-scratch')
    if os.path.exists(real) and not os.path.isdir(real):
        raise ClusterproofError(f'scratch directory {real}: exists and is not a directory')
    return Path(real)


def check_target(scratch, target):
    """The resolved ``target``, which must lie strictly under ``scratch``."""
    root = check_scratch(scratch)
    check_chars(target, 'test directory')
    if not os.path.isabs(str(target)):
        raise ClusterproofError(f'test directory {str(target)!r}: must be an absolute path')
    real = Path(os.path.realpath(str(target)))
    check_chars(real, f'test directory {str(target)!r} resolves to')
    if real == root or root not in real.parents:
        raise ClusterproofError(
            f'test directory {str(target)!r} (resolved: {real}) is not under the scratch '
            f'directory {root}; test files may only be written below it')
    if str(real) in SYSTEM_DIRS or str(real) in home_dirs():
        raise ClusterproofError(f'test directory {real} is a system or home directory')
    return real
