"""The read side is one path, each layer importing only the layers below it
(docs/architecture.md, "Layers of the read side"): an import that runs back
up, even one inside a function, fails here naming the file and the line."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / 'clusterproof'
#: bottom first: a module of a layer may import its own layer and those before it
LAYERS = ('references', 'reframe_io', 'store', 'analysis', 'results', 'commands')


def _imports(path):
    """``(line, module)`` of every clusterproof module ``path`` imports."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f'{node.module}.{a.name}' for a in node.names]
            yield from ((node.lineno, n) for n in names if n.startswith('clusterproof.'))
        elif isinstance(node, ast.Import):
            yield from ((node.lineno, a.name) for a in node.names
                        if a.name.startswith('clusterproof.'))


def test_no_import_runs_back_up():
    above = set()
    for i, layer in enumerate(LAYERS):
        higher = LAYERS[i + 1:]
        for path in sorted((PACKAGE / layer).rglob('*.py')):
            for line, module in _imports(path):
                if module.split('.')[1] in higher:
                    above.add(f'{path.relative_to(PACKAGE.parent)}:{line}: imports '
                              f'clusterproof.{module.split(".")[1]}, a layer above {layer}/')
    assert not above, '\n'.join(sorted(above))
