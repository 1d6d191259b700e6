"""``lscpu`` (plain or ``-J``): sockets, cores per socket, threads per
core, NUMA nodes, CPUs and the CPU model (tested on recorded output,
tests/data/inventory/)."""

import json

from clusterproof.parsers import ParseError, whole


def _fields(text, source):
    """``{field: value}`` from plain ``lscpu`` or from ``lscpu -J``."""
    stripped = text.lstrip()
    if stripped.startswith('{'):
        try:
            doc = json.loads(stripped)
        except json.JSONDecodeError as err:
            raise ParseError(f'{source}: not the JSON of lscpu -J ({err})') from None
        fields = {}

        def walk(entries, where):
            if not isinstance(entries, list):
                raise ParseError(f'{source}: {where} is not a list of fields')
            for i, row in enumerate(entries):
                if not isinstance(row, dict) or not isinstance(row.get('field'), str) \
                        or not isinstance(row.get('data') or '', str):
                    raise ParseError(f'{source}: {where}[{i}] is not a {{"field", "data"}} '
                                     f'record: {str(row)[:80]!r}')
                fields[row['field'].rstrip(':').strip()] = (row.get('data') or '').strip()
                walk(row.get('children', []), f'{where}[{i}].children')
        walk(doc.get('lscpu', []) if isinstance(doc, dict) else doc, '"lscpu"')
        return fields
    fields = {}
    for line in text.splitlines():
        if ':' in line:
            key, val = line.split(':', 1)
            fields[key.strip()] = val.strip()
    return fields


def parse(text, source='lscpu'):
    """sockets, cores_per_socket, threads_per_core, numa_nodes, cpus and
    cpu_model from the output of ``lscpu`` or ``lscpu -J``."""
    fields = _fields(text, source)
    keys = {'sockets': 'Socket(s)', 'cores_per_socket': 'Core(s) per socket',
            'threads_per_core': 'Thread(s) per core', 'cpus': 'CPU(s)'}
    hw = {}
    for key, field in keys.items():
        hw[key] = whole(fields.get(field), f'field {field!r}', source)
    numa = fields.get('NUMA node(s)')
    hw['numa_nodes'] = whole(numa, "field 'NUMA node(s)'", source) if numa else 1
    hw['cpu_model'] = fields.get('Model name', 'unknown')
    return hw
