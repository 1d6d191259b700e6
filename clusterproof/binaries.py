"""Find the benchmark binaries and say where they came from.

A check looks for its executable in the Spack environment's view first
(``.spack-env/view/bin`` of the repository, or ``$CLUSTERPROOF_SPACK_VIEW``),
then on ``PATH`` (the Debian packages on ``local`` and ``emu``). When it is
missing the check is skipped with the exact command that builds it.
"""

import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from clusterproof.paths import REPO


def spack_view():
    return Path(os.environ.get('CLUSTERPROOF_SPACK_VIEW', REPO / '.spack-env' / 'view'))


@dataclass
class Binary:
    name: str
    path: str
    source: str                  # 'spack' or 'path'
    version: str = ''
    spack_spec: str = ''
    extra: dict = field(default_factory=dict)


def build_command(spec):
    """What a user types to build the binary that provides ``spec``."""
    return f'spack -e . install {spec}'


def locate(executable, view_subdirs=('bin',)):
    """Path of ``executable``: the Spack view first, then PATH; None if absent."""
    view = spack_view()
    for sub in view_subdirs:
        cand = view / sub / executable
        if cand.is_file() and os.access(cand, os.X_OK):
            return Binary(executable, str(cand), 'spack')
    found = shutil.which(executable)
    if found:
        return Binary(executable, found, 'path')
    return None


def program_version(argv, pattern=r'(\d+(?:\.\d+)+\S*)', timeout=20):
    """Run ``argv`` (e.g. ``['fio', '--version']``) and return the first
    version-looking string of its output, or '' if there is none."""
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return ''
    m = re.search(pattern, out.stdout + out.stderr)
    return m.group(1) if m else ''
