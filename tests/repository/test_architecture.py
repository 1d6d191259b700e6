"""docs/architecture.md's module table is the one ``scripts/architecture``
generates from the package tree: a module added, moved or renamed without
``python scripts/architecture --write`` fails here, naming the row."""

import shutil
import subprocess
import sys

from conftest import REPO

SCRIPT = REPO / 'scripts' / 'architecture'


def architecture(*args, root=REPO):
    return subprocess.run([sys.executable, str(SCRIPT), '--root', str(root), *args],
                          capture_output=True, text=True, timeout=120)


def test_the_module_table_is_the_tree():
    proc = architecture('--check')
    assert proc.returncode == 0, proc.stdout + proc.stderr


def copy_of_the_tree(tmp_path):
    root = tmp_path / 'repo'
    shutil.copytree(REPO / 'clusterproof', root / 'clusterproof',
                    ignore=shutil.ignore_patterns('__pycache__', '*.egg-info'))
    (root / 'docs').mkdir()
    shutil.copy(REPO / 'docs' / 'architecture.md', root / 'docs')
    return root


def test_a_moved_module_is_named_until_the_table_is_written(tmp_path):
    root = copy_of_the_tree(tmp_path)
    pkg = root / 'clusterproof'
    (pkg / 'analysis' / 'compare.py').rename(pkg / 'references' / 'compare.py')
    proc = architecture('--check', root=root)
    assert proc.returncode == 1
    assert 'row of no module (moved, renamed or removed?): | `analysis/compare.py` |' in proc.stdout
    assert 'row missing or out of date: | `references/compare.py` |' in proc.stdout
    assert 'python scripts/architecture --write' in proc.stdout

    assert architecture('--write', root=root).returncode == 0
    assert architecture('--check', root=root).returncode == 0
    page = (root / 'docs' / 'architecture.md').read_text()
    assert '| `references/compare.py` | Sessions compared with the references' in page
    assert '\n| `analysis/compare.py` |' not in page                # its row is gone
    assert page.startswith('# Architecture\n')                       # the rest kept as it was
    assert '## Modes' in page


def test_a_module_without_a_docstring_is_named(tmp_path):
    root = copy_of_the_tree(tmp_path)
    (root / 'clusterproof' / 'publish' / 'store.py').write_text('import os\n')
    proc = architecture('--check', root=root)
    assert proc.returncode == 2
    assert f'{root}/clusterproof/publish/store.py: no docstring' in proc.stderr
