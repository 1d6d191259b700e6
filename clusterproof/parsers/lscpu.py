"""``lscpu`` (plain or ``-J``): sockets, cores per socket, threads per
core, NUMA nodes, CPUs and the CPU model (tested on recorded output,
tests/data/inventory/)."""

import json

from clusterproof.parsers import ParseError


def _fields(text, source):
    """``{field: value}`` from plain ``lscpu`` or from ``lscpu -J``."""
    stripped = text.lstrip()
    if stripped.startswith('{'):
        try:
            rows = json.loads(stripped).get('lscpu', [])
        except json.JSONDecodeError as err:
            raise ParseError(f'{source}: not the JSON of lscpu -J ({err})') from None
        fields = {}

        def walk(entries):
            for row in entries:
                fields[row['field'].rstrip(':').strip()] = (row.get('data') or '').strip()
                walk(row.get('children', []))
        walk(rows)
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
        val = fields.get(field)
        if val is None or not val.isdigit():
            raise ParseError(f'{source}: no whole number in field {field!r} (found {val!r})')
        hw[key] = int(val)
    numa = fields.get('NUMA node(s)')
    hw['numa_nodes'] = int(numa) if numa and numa.isdigit() else 1
    hw['cpu_model'] = fields.get('Model name', 'unknown')
    return hw
