"""One front door: what a script, a job, a check or a page tells to run is
``python -m clusterproof COMMAND`` (or ``clusterproof COMMAND``), never
``python -m clusterproof.<module>``, a module of the package run as a
program of its own (a second argument parser beside the command's)."""

import re

from conftest import REPO

#: where a command line is written for a person, a job or a script to run
PLACES = ('clusterproof', 'reframe_checks', 'scripts', 'slurm', 'docs', 'README.md')
#: ``-m clusterproof.x`` on a command line, or ``'-m', 'clusterproof.x'`` in an argv
SIDE_DOOR = re.compile(r'''-m['",\s]*clusterproof\.\w''')


def side_doors(text):
    """Line numbers of ``text`` that run a module of the package by its name."""
    return [text.count('\n', 0, m.start()) + 1 for m in SIDE_DOOR.finditer(text)]


def _files():
    for place in PLACES:
        root = REPO / place
        for path in sorted(root.rglob('*')) if root.is_dir() else [root]:
            if path.is_file() and '__pycache__' not in path.parts:
                yield path


def test_the_rule_finds_a_module_run_by_name():
    text = ('"$py" -m clusterproof scratch create\n'
            'python -m clusterproof.site.pmem . fio libpmem\n'
            "argv = [sys.executable, '-m', 'clusterproof.cli', 'placement']\n"
            'run `python -m clusterproof`. Then\n')
    assert side_doors(text) == [2, 3]


def test_every_command_line_goes_through_the_front_door():
    found = []
    for path in _files():
        try:
            text = path.read_text()
        except UnicodeDecodeError:      # an image or other binary file: no command line
            continue
        rel = path.relative_to(REPO).as_posix()
        found += [f'{rel}:{n}: a module run by its name' for n in side_doors(text)]
    assert not found, ('\n'.join(found) + '\nrun it as a clusterproof subcommand '
                       '(clusterproof.command(...) in Python, "$py" -m clusterproof COMMAND in '
                       'a script), its argument table in clusterproof/commands/')


#: the scripts that use the package as a library, not through its command:
#: the measurements of clusterproof itself, and the recorders of test data
LIBRARY_USERS = re.compile(r'^(measure_\w+\.py|record-series|scale-like)$')
#: an import of the package, or a change of Python's search path
IMPORTS_PACKAGE = re.compile(r'^\s*(from clusterproof[\s.]|import clusterproof\b)', re.M)
SEARCH_PATH = re.compile(r'\bsys\.path\b')


def test_a_script_runs_the_command_unless_it_measures_or_records():
    found = []
    for path in sorted((REPO / 'scripts').rglob('*')):
        if not path.is_file() or '__pycache__' in path.parts:
            continue
        text = path.read_text()
        if SEARCH_PATH.search(text):
            found.append(f'scripts/{path.name}: changes sys.path')
        if IMPORTS_PACKAGE.search(text) and not LIBRARY_USERS.match(path.name):
            found.append(f'scripts/{path.name}: imports the package')
    assert not found, ('\n'.join(found) + '\na script runs `python -m clusterproof COMMAND`; '
                       'only the measure_*.py scripts and the test-data recorders use the '
                       'package as a library (docs/architecture.md, "Where things are")')
