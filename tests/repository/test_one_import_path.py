"""One import path per name: a name is imported from the module that
defines it. A module split in parts does not keep the parts' names
importable from it (an import kept only for its readers, ``# noqa: F401``,
or a name list ``__all__``), except the public faces made to be one import:
``checklib/api.py`` (everything a check author needs) and
``cluster/__init__.py`` (the local cluster's interface)."""

import ast
import io
import re
import tokenize
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: the modules that gather names from others by design, and why
PUBLIC_FACES = {
    'clusterproof/checklib/api.py': "a check author's one import",
    'clusterproof/cluster/__init__.py': "the local cluster's interface, one import for its users",
}
FOLDERS = ('clusterproof', 'reframe_checks', 'scripts', 'site_config', 'tests')
UNUSED_IMPORT_KEPT = re.compile(r'#\s*noqa:[^#\n]*\bF401\b')


def _python_files():
    for folder in FOLDERS:
        for path in sorted((REPO / folder).rglob('*')):
            if path.is_file() and (path.suffix == '.py' or _is_python_script(path)):
                yield path


def _is_python_script(path):
    if path.suffix or path.parent.name != 'scripts':
        return False
    with open(path, 'rb') as f:
        return f.readline().startswith(b'#!/usr/bin/env python')


def kept_unused_imports(text):
    """Line numbers of the imports kept though unused (a comment
    ``# noqa: F401``; the words in a string are not one)."""
    return [tok.start[0] for tok in tokenize.generate_tokens(io.StringIO(text).readline)
            if tok.type == tokenize.COMMENT and UNUSED_IMPORT_KEPT.search(tok.string)]


def name_lists(text):
    """Line numbers of module-level assignments to ``__all__``."""
    return [node.lineno for node in ast.parse(text).body
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign))
            and any(isinstance(t, ast.Name) and t.id == '__all__'
                    for t in getattr(node, 'targets', [getattr(node, 'target', None)]))]


def test_the_rule_finds_a_kept_import_and_a_name_list():
    text = ('"""doc"""\nfrom a.b import c  # noqa: F401\nimport d  # noqa: E402,F401\n'
            "__all__ = ['c']\n")
    assert kept_unused_imports(text) == [2, 3]
    assert name_lists(text) == [4]
    assert kept_unused_imports('import a  # noqa: E402\nx = "# noqa: F401"\n') == []


def test_no_name_is_importable_from_a_module_that_only_passes_it_on():
    found = []
    for path in _python_files():
        rel = path.relative_to(REPO).as_posix()
        if rel in PUBLIC_FACES:
            continue
        text = path.read_text()
        if 'F401' in text:      # the quick look first: most files have neither
            found += [f'{rel}:{n}: an import kept unused (noqa: F401)'
                      for n in kept_unused_imports(text)]
        if '__all__' in text:
            found += [f'{rel}:{n}: __all__ outside a public face' for n in name_lists(text)]
    assert not found, ('\n'.join(found) + '\nimport each name from the module that defines it '
                       '(and a fixture by registering its module in tests/conftest.py); a public '
                       'face by design goes in PUBLIC_FACES with its reason')


def test_each_public_face_exists():
    missing = [rel for rel in PUBLIC_FACES if not (REPO / rel).is_file()]
    assert not missing, f'{missing[0]}: named in PUBLIC_FACES but not in the repository'
