"""The tests mirror the package (docs/testing.md, "Where a test lives"): each
folder of ``tests/`` is a package folder of ``clusterproof/`` or one of the
few folders that are not, and no test file lies deeper than one folder."""

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
