"""Pre-flight validation of the site configuration and the references.

Everything is checked before anything runs or is written, and every
problem names the file, key and value.
"""

import re
from pathlib import Path

from clusterproof import ClusterproofError
from clusterproof.site.scratch import check_scratch
from clusterproof.site.hardware import (is_emulated, partition_node_count, processor_disagreements,
                                        validate_hardware, validate_pmem)
from clusterproof.paths import SETTINGS_FILE, references_dir, system_file

#: characters that would make a value a shell command
SHELL_META = re.compile(r'[;&|`$<>(){}\\\n\r\t*?!#~"\']')


def load_site_configuration(path=SETTINGS_FILE):
    import importlib.util
    spec = importlib.util.spec_from_file_location('clusterproof_settings', path)
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except Exception as err:
        raise ClusterproofError(f'{path}: cannot load: {err}') from None
    return mod.site_configuration


def system_names(config):
    return [s['name'] for s in config['systems']]


def find_system(config, name):
    for system in config['systems']:
        if system['name'] == name:
            return system
    raise ClusterproofError(f'unknown system {name!r}; the site configuration has: '
                            f'{", ".join(system_names(config))}')


def find_partition(system, name):
    for part in system['partitions']:
        if part['name'] == name:
            return part
    raise ClusterproofError(
        f'system {system["name"]} has no partition {name!r}; it has: '
        f'{", ".join(p["name"] for p in system["partitions"])}')


def safe_word(where, value):
    """A value that ends up on a command line: refuse shell metacharacters."""
    if not isinstance(value, str) or SHELL_META.search(value) or not value.strip():
        raise ClusterproofError(f'{where}: {value!r} contains shell metacharacters, '
                                f'white space or is empty; refusing it')
    return value


def validate_system(system):
    """Validate one system entry; return a list of what was checked."""
    name = system['name']
    where = f'{system_file(name)}: system {name}'
    checked = []
    for pattern in system.get('hostnames', []):
        try:
            re.compile(pattern)
        except re.error as err:
            raise ClusterproofError(f'{where}: hostnames: {pattern!r} is not a '
                                    f'regular expression: {err}') from None
    for part in system['partitions']:
        pwhere = f'{where}: partition {part["name"]}'
        for opt in part.get('access', []):
            safe_word(f'{pwhere}: access', opt.replace('=', '', 1).replace('--', '', 1))
        extras = part.get('extras', {})
        if 'hardware' not in extras:
            raise ClusterproofError(f'{pwhere}: extras has no "hardware" section '
                                    f'(sockets, cores_per_socket, ...)')
        validate_hardware(extras['hardware'], f'{pwhere}: extras')
        # One fact, two declarations: ReFrame's processor must say what the hardware says.
        for key, proc, hw in processor_disagreements(part.get('processor') or {},
                                                     extras['hardware'], is_emulated(extras)):
            raise ClusterproofError(
                f"{pwhere}: processor[{key!r}]={proc!r} disagrees with extras['hardware'], "
                f'which gives {hw!r}; declare one (the other is derived) or make them agree')
        storage_nodes = (extras.get('storage') or {}).get('client_nodes')
        if 'max_nodes' in extras and storage_nodes is not None \
                and extras['max_nodes'] != storage_nodes:
            raise ClusterproofError(
                f"{pwhere}: extras['max_nodes']={extras['max_nodes']!r} disagrees with "
                f"extras['storage']['client_nodes']={storage_nodes!r}: a job has one node count")
        if extras.get('pmem') is not None:
            validate_pmem(extras['pmem'], f'{pwhere}: extras')
        storage = extras.get('storage')
        if storage is not None:
            # The rule the checks apply before they write (clusterproof.site.scratch).
            try:
                check_scratch(storage.get('scratch'))
            except ClusterproofError as err:
                raise ClusterproofError(f'{pwhere}: extras.storage.scratch: {err}') from None
        try:
            partition_node_count({'fullname': f'{name}:{part["name"]}',
                                  'scheduler': part.get('scheduler', 'local'), 'extras': extras})
        except ClusterproofError as err:
            raise ClusterproofError(f'{pwhere}: {err}') from None
        checked.append(f'{name}:{part["name"]}')
    return checked


def validate_references(directory=None):
    """``{file name: entries}`` of every references file of ``directory``
    (default: :func:`clusterproof.paths.references_dir`, as the checks read it)."""
    from clusterproof.references.entries import validate_file
    counts = {}
    for path in sorted(Path(directory or references_dir()).glob('*.yaml')):
        counts[path.name] = validate_file(path)
    return counts
