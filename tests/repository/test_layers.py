"""The package's layers, written once in docs/architecture.md ("Layers"):
each folder and top-level module on one layer, importing only its own folder
and the layers below; an import that runs back up or sideways, even one
inside a function, fails here naming the file and the line."""

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / 'clusterproof'
ARCHITECTURE = PACKAGE.parent / 'docs' / 'architecture.md'
_LAYER = re.compile(r'^(\d+)\. (.*?): ')


def layers():
    """``{part: layer number}`` from the list between the markers of
    docs/architecture.md, a part being ``store`` for ``store/`` and ``cli``
    for ``cli.py``."""
    text = ARCHITECTURE.read_text()
    start, end = text.index('<!-- layers, bottom first'), text.index('<!-- end of the layers -->')
    out = {}
    for line in text[start:end].splitlines()[1:]:
        number, names = _LAYER.match(line).groups()
        for name in re.findall(r'`([^`]+)`', names):
            out[name.removesuffix('/').removesuffix('.py')] = int(number)
    return out


def _parts():
    """``{part: its files}`` of every folder and top-level module of the package."""
    parts = {p.stem: [p] for p in PACKAGE.glob('*.py') if p.name != '__init__.py'}
    parts.update({d.name: sorted(d.rglob('*.py')) for d in PACKAGE.iterdir()
                  if (d / '__init__.py').is_file()})
    return parts


def _imports(path):
    """``(line, module)`` of every clusterproof module ``path`` imports."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f'{node.module}.{a.name}' for a in node.names]
            yield from ((node.lineno, n) for n in names if n.startswith('clusterproof.'))
        elif isinstance(node, ast.Import):
            yield from ((node.lineno, a.name) for a in node.names
                        if a.name.startswith('clusterproof.'))


def test_every_part_of_the_package_lies_on_a_layer():
    placed, parts = layers(), _parts()
    assert not parts.keys() - placed.keys(), \
        f'{ARCHITECTURE}: no layer for {sorted(parts.keys() - placed.keys())}; add each to the list'
    assert not placed.keys() - parts.keys(), \
        (f'{ARCHITECTURE}: the layers name {sorted(placed.keys() - parts.keys())}, '
         'not in the package')


def test_no_import_runs_back_up_or_sideways():
    placed, wrong = layers(), set()
    for part, paths in _parts().items():
        for path in paths:
            for line, module in _imports(path):
                other = module.split('.')[1]
                if other != part and other in placed and placed[other] >= placed[part]:
                    where = 'above' if placed[other] > placed[part] else 'beside'
                    wrong.add(f'{path.relative_to(PACKAGE.parent)}:{line}: imports '
                              f'clusterproof.{other} (layer {placed[other]}), {where} '
                              f'{part} (layer {placed[part]})')
    assert not wrong, '\n'.join(sorted(wrong))

ROOT = PACKAGE.parent
#: the one module that starts ``reframe`` and decides its configuration, its
#: test, and this test
RUNNER = {'clusterproof/reframe_io/runner.py', 'tests/reframe_io/test_runner.py',
          'tests/repository/test_layers.py'}
#: files being rewritten onto the runner in other work; each must leave this
#: list as soon as it no longer starts reframe or sets RFM_CONFIG_FILES itself
PENDING = {'scripts/run-tests'}
_SHELL_LAUNCH = re.compile(r'bin/reframe\b|^\s*reframe\s')
_SHELL_CONFIG = re.compile(
    r'RFM_CONFIG_FILES\s*:?=(?!\\?\$\(.*clusterproof run --print-config\))')


def _sources():
    """``(relative path, text, is_python)`` of the code that could start
    reframe: the package, the scripts, the tests, the Makefile and CI."""
    paths = [*PACKAGE.rglob('*.py'),
             *(ROOT / 'tests').glob('*.py'), *(ROOT / 'tests').glob('*/test_*.py'),
             *(p for p in (ROOT / 'scripts').rglob('*') if p.is_file()),
             ROOT / 'Makefile', *(ROOT / '.ci').glob('*')]
    for path in sorted(paths):
        text = path.read_text()
        yield (str(path.relative_to(ROOT)), text,
               path.suffix == '.py' or text.startswith('#!/usr/bin/env python'))


def _docstrings(tree):
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                 ast.AsyncFunctionDef)) and node.body
            and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}


def _python_launches(name, text):
    """Where the Python source ``text`` starts reframe (a path ``... / 'reframe'``,
    a command list beginning ``'reframe'``, a call of ``runner.reframe_command``) or
    names RFM_CONFIG_FILES (outside docstrings)."""
    tree = ast.parse(text, name)
    docs = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and \
                isinstance(node.right, ast.Constant) and node.right.value == 'reframe':
            yield node.lineno, "builds the path of reframe (... / 'reframe')"
        elif isinstance(node, ast.List) and node.elts and isinstance(node.elts[0], ast.Constant) \
                and node.elts[0].value == 'reframe':
            yield node.lineno, "makes a command line ['reframe', ...]"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr == 'reframe_command' and \
                getattr(node.func.value, 'id', None) == 'runner':
            yield node.lineno, 'calls runner.reframe_command()'
        elif isinstance(node, ast.Constant) and node.value == 'RFM_CONFIG_FILES' and \
                id(node) not in docs:
            yield node.lineno, 'names RFM_CONFIG_FILES'


def _shell_launches(text):
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith('#'):
            continue
        if _SHELL_LAUNCH.search(line):
            yield n, 'starts reframe'
        if _SHELL_CONFIG.search(line):
            yield n, 'sets RFM_CONFIG_FILES'


@pytest.mark.slow   # it parses every module of the package, the checks and the tests
def test_reframe_is_started_and_configured_in_one_module():
    """Only clusterproof/reframe_io/runner.py starts ``reframe`` and decides
    RFM_CONFIG_FILES; everything else calls it (``runner.run``, ``start``,
    ``invoke``, ``reframe_env``; ``clusterproof run|nightly`` and ``clusterproof
    run --print-config`` from a shell)."""
    found, pending_seen = [], set()
    for name, text, is_python in _sources():
        if name in RUNNER:
            continue
        hits = list(_python_launches(name, text) if is_python else _shell_launches(text))
        if name in PENDING:
            pending_seen.update([name] if hits else [])
            continue
        found += [f'{name}:{line}: {what}; use clusterproof.reframe_io.runner'
                  for line, what in hits]
    assert not found, '\n'.join(found)
    assert pending_seen == PENDING, \
        f'{sorted(PENDING - pending_seen)} now use(s) the runner: remove from PENDING'


def test_a_check_imports_the_shared_names_from_one_module():
    """A check author's names (the base class, the mixins, performance_figure,
    by_mode, pinned_spec...: ``clusterproof.checklib.api.__all__``) come from
    that one module in every check of reframe_checks/, never from where
    they live."""
    api = ast.parse((PACKAGE / 'checklib' / 'api.py').read_text())
    [names] = [ast.literal_eval(n.value) for n in api.body if isinstance(n, ast.Assign)
               and getattr(n.targets[0], 'id', None) == '__all__']
    found = []
    for path in sorted((ROOT / 'reframe_checks').glob('*.py')):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.module or '').startswith('clusterproof') \
                    and node.module != 'clusterproof.checklib.api':
                found += [f'{path.relative_to(ROOT)}:{node.lineno}: {a.name} from {node.module}; '
                          'import it from clusterproof.checklib.api'
                          for a in node.names if a.name in names]
    assert not found, '\n'.join(found)
