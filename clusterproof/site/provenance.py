"""Provenance of a run: the project's git revision and the site configuration's hash."""

import hashlib
import subprocess
from functools import lru_cache

from clusterproof.paths import REPO, SITE_CONFIG


@lru_cache(maxsize=None)
def git_revision():
    """``<sha>`` or ``<sha>-dirty`` of this checkout; ``unknown`` outside git."""
    try:
        sha = subprocess.run(['git', '-C', str(REPO), 'rev-parse', 'HEAD'],
                             capture_output=True, text=True, timeout=10,
                             check=True).stdout.strip()
        dirty = subprocess.run(['git', '-C', str(REPO), 'status', '--porcelain',
                                '--untracked-files=no'],
                               capture_output=True, text=True, timeout=10,
                               check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return 'unknown'
    return f'{sha}-dirty' if dirty else sha


@lru_cache(maxsize=None)
def site_config_hash():
    """sha256 (first 16 hex digits) over every file of ``site_config/``
    except references, in path order: two runs with the same hash ran with
    the same systems, partitions and declared hardware."""
    h = hashlib.sha256()
    for path in sorted(SITE_CONFIG.rglob('*')):
        if not path.is_file() or path.suffix == '.pyc' or 'references' in path.parts:
            continue
        h.update(str(path.relative_to(SITE_CONFIG)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]
