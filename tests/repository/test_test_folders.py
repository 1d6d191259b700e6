"""The tests mirror the package (docs/testing.md, "Where a test lives"): each
folder of ``tests/`` is a package folder of ``clusterproof/`` or one of the
few folders that are not, and no test file lies deeper than one folder."""

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
PACKAGE = TESTS.parent / 'clusterproof'
#: folders of tests/ that mirror no package folder: what they hold
OTHER = {'benchmarks': 'one file per benchmark family', 'suite': 'the product end to end',
         'repository': 'rules over the whole repository', 'data': 'recorded outputs',
         'checks': "the tests' own ReFrame checks"}


def _folders(root):
    return {p.name for p in root.iterdir() if p.is_dir() and p.name != '__pycache__'}


def test_each_folder_of_the_tests_is_a_package_folder_or_says_what_it_holds():
    packages = _folders(PACKAGE) - {'templates'}
    assert packages, f'no package folder found under {PACKAGE}'
    strays = sorted(_folders(TESTS) - packages - OTHER.keys())
    assert not strays, (f'tests/{strays[0]}: not a folder of {PACKAGE.name}/; put its tests in '
                        f'the folder of the package they test, or name it in OTHER')


def test_no_test_file_lies_deeper_than_one_folder():
    deep = sorted(str(p.relative_to(TESTS)) for p in TESTS.rglob('test_*.py')
                  if len(p.relative_to(TESTS).parts) > 2
                  and p.relative_to(TESTS).parts[0] not in ('data', 'checks'))
    assert not deep, f'tests/{deep[0]}: move it up to tests/<package folder>/'


def _imported_test_files(path):
    """The ``test_*`` modules a test file imports (``from test_x import``,
    ``import test_x``), at any indentation."""
    return re.findall(r'^\s*(?:from|import)\s+(test_\w+)', path.read_text(), re.M)


def test_a_test_file_imports_test_files_of_its_own_folder_only():
    """A test file of another folder is found only when pytest happened to
    collect that folder first: run alone, the importing file fails. What
    several folders share lives in a helper module at the top of tests/."""
    crossing = sorted(f'{p.relative_to(TESTS)} imports {name}'
                      for p in TESTS.glob('*/test_*.py')
                      for name in _imported_test_files(p)
                      if not (p.parent / f'{name}.py').is_file())
    assert not crossing, (f'tests/{crossing[0]}, a test file of another folder: move what both '
                          'use into a helper module at the top of tests/ (results_helpers.py, '
                          'cluster_helpers.py)')
