"""``clusterproof validate``: check the site configuration and the references."""

from clusterproof.site.validate import (find_system, load_site_configuration,
                                   validate_references, validate_system)


def register(sub):
    p = sub.add_parser(
        'validate', help='check the site configuration and the reference files',
        description='Load site_config/settings.py and every system file, check the '
                    'declared hardware (ReFrame\'s processor entry must agree with '
                    'extras[\'hardware\'], and a partition has one node count), '
                    'scratch areas and access options, and every '
                    'entry of site_config/references/*.yaml (values, tolerances, '
                    'units). Exit status 2 on the first problem, naming file, key and value.')
    p.add_argument('--system', help='only this system (default: all)')
    p.set_defaults(func=run)


def run(args):
    config = load_site_configuration()
    systems = [find_system(config, args.system)] if args.system else config['systems']
    for system in systems:
        for part in validate_system(system):
            print(f'ok  {part}')
    for name, count in validate_references().items():
        print(f'ok  references/{name}: {count} reference values')
    return 0
