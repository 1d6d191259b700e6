"""``clusterproof sizing``: the file sizes the storage checks would use on a
system (cache rule: at least 2 x the RAM of client nodes and servers), and
whether they fit the scratch file system."""

import importlib.util
import sys

from clusterproof import ClusterproofError
from clusterproof.commands import argtypes
from clusterproof.methods import sizing
from clusterproof.paths import SETTINGS_FILE, system_file


def register(subparsers):
    p = subparsers.add_parser(
        'sizing', help='file sizes that defeat caches',
        description='Print the size per thread and total the storage checks use: at least '
                    "2 x the RAM of client nodes and servers declared in extras['storage'] "
                    '(or --total), divided by the thread count and rounded up to the '
                    'transfer size. Also says whether it fits the scratch file system.')
    p.add_argument('--system', help='system name in site_config/systems/ (or give --ram-gib)')
    p.add_argument('--partition', help='partition (default: the first one with '
                                       "extras['storage'])")
    p.add_argument('--threads', type=argtypes.threads, required=True, help='thread count T')
    p.add_argument('--total', type=argtypes.size,
                   help='total data instead of 2 x RAM, e.g. 8T (at most 8 EiB)')
    p.add_argument('--transfer', type=argtypes.size,
                   help='transfer size (default: the declared one, or 16m)')
    p.add_argument('--smoke', action='store_true', help='smoke sizes (small, direct I/O)')
    p.add_argument('--ram-gib', type=argtypes.number(0, 2 ** 30, 'a size in GiB'),
                   help='without --system: the RAM of all client nodes and servers, GiB '
                        '(0: not checked); the total must be at least twice that')
    p.add_argument('--scratch', help='without --system: refuse sizes that do not fit the free '
                                     'space of this directory')
    p.add_argument('--per-thread', action='store_true',
                   help='print only the size per thread (IOR -b, IOzone -s), for job scripts; '
                        'a refusal exits with status 2')
    p.set_defaults(func=run)


def storage_of(system, partition=None):
    """``extras['storage']`` of a system's partition from the site configuration."""
    spec = importlib.util.spec_from_file_location('clusterproof_settings', SETTINGS_FILE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    systems = {s['name']: s for s in mod.site_configuration['systems']}
    if system not in systems:
        raise ClusterproofError(f'no system {system!r} in {SETTINGS_FILE} '
                                f'(have: {", ".join(systems)})')
    for part in systems[system]['partitions']:
        if partition and part['name'] != partition:
            continue
        storage = part.get('extras', {}).get('storage')
        if storage:
            return f'{system}:{part["name"]}', storage
    where = f'{system}:{partition}' if partition else system
    raise ClusterproofError(f"{where}: no partition declares extras['storage'] in "
                            f'{system_file(system)}')


def run(args):
    if args.system:
        name, storage = storage_of(args.system, args.partition)
    elif args.ram_gib is None or not args.total:
        raise ClusterproofError('give --system, or --ram-gib and --total')
    else:
        name = 'none (--ram-gib)'
        storage = {'client_nodes': 1, 'client_ram_gib': max(args.ram_gib, 1e-9),
                   'server_ram_gib': 0, 'scratch': args.scratch}
    sz = sizing.compute(storage, args.threads, total=args.total, transfer=args.transfer,
                        smoke=args.smoke)
    if args.per_thread:
        if storage.get('scratch'):
            sizing.check_fits(storage['scratch'], sz.total,
                              f'{args.threads} files of {sz.per_thread_arg}')
        print(sz.per_thread_arg)
        return 0
    out = [f'partition          {name}', sz.describe().rstrip('\n')]
    scratch = storage.get('scratch')
    if scratch:
        try:
            free = sizing.free_bytes(scratch)
            fits = 'fits' if sz.total <= free else 'DOES NOT FIT'
            out.append(f'scratch            {scratch}: {sizing.human(free)} free, {fits}')
        except ClusterproofError as err:
            out.append(f'scratch            {scratch}: {err}')
    sys.stdout.write('\n'.join(out) + '\n')
    return 0
