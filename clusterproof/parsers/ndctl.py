"""``ndctl list``: persistent memory namespaces, whatever the shape of the
JSON (tested on recorded output, tests/data/ndctl/)."""

import json
import re

from clusterproof.parsers import ParseError, finite, whole
from clusterproof.parsers.ipmctl import UNITS_GIB

#: Older ndctl names of the namespace modes (renamed in ndctl v60).
MODE_ALIASES = {'memory': 'fsdax', 'dax': 'devdax'}


def _human_bytes(value, source):
    """``'2964.94 GiB (3183.58 GB)'`` (ndctl -u) -> bytes."""
    m = re.match(r'\s*([0-9.]+)\s*([KMGT]i?B)', value)
    if not m:
        raise ParseError(f'{source}: unreadable size {value!r}')
    return int(finite(m.group(1), 'size', source) * UNITS_GIB[m.group(2)] * 1024 ** 3)


def parse(text, source='ndctl list -N'):
    """Namespaces from ``ndctl list`` JSON, whatever its shape: nothing at
    all (no namespaces), one bare object, an array, or namespaces nested in
    regions and buses (``-R``, ``-B``). Old mode names are mapped
    (``memory`` -> ``fsdax``, ``dax`` -> ``devdax``); the printed mode stays
    in ``mode_reported``."""
    if not text.strip():
        return []
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ParseError(f'{source}: not JSON ({err})') from None
    found = []

    def walk(node):
        if isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            if str(node.get('dev', '')).startswith('namespace'):
                found.append(node)
                return
            for key in ('buses', 'regions', 'namespaces'):
                if key in node:
                    walk(node[key])
    walk(data)
    namespaces = []
    for ns in found:
        where = f'{source}: {ns["dev"]}'
        mode = ns.get('mode', 'unknown')
        size = ns.get('size', 0)
        size = (_human_bytes(size, where) if isinstance(size, str) and not size.isdigit()
                else whole(size, 'size', where))
        align = ns.get('align')
        namespaces.append({
            'dev': ns['dev'], 'mode': MODE_ALIASES.get(mode, mode), 'mode_reported': mode,
            'size': size, 'blockdev': ns.get('blockdev'), 'chardev': ns.get('chardev'),
            'enabled': ns.get('state') != 'disabled',
            'align': None if align is None else whole(align, 'align', where),
        })
    return namespaces
