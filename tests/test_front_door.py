"""The one front door: ``python -m clusterproof`` is the ``clusterproof``
command."""

import subprocess
import sys

from clusterproof import __version__
from conftest import REPO


def test_python_m_clusterproof_is_the_command():
    proc = subprocess.run([sys.executable, '-m', 'clusterproof', '--version'], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f'clusterproof {__version__}'
