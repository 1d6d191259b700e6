"""``clusterproof validate``: check the site configuration, the references
and, with ``--contract``, acceptance contracts against the checks."""

from clusterproof.acceptance import run as contract_run
from clusterproof.site.validate import (find_system, load_site_configuration,
                                        validate_references, validate_system)


def register(sub):
    p = sub.add_parser(
        'validate', help='check the site configuration, the reference files and contracts',
        description='Load site_config/settings.py and every system file, check the '
                    'declared hardware (ReFrame\'s processor entry must agree with '
                    'extras[\'hardware\'], and a partition has one node count), '
                    'scratch areas and access options, and every '
                    'entry of site_config/references/*.yaml (values, tolerances, '
                    'units). With --contract, also the contract: its schema, its system '
                    'and partition, and that every item names a check, parameter values '
                    'and a figure that the checks have on that system in the contract\'s '
                    'mode (as ReFrame loads them; the nearest real names are suggested). '
                    'Exit status 2 on the first problem, naming file, key and value.')
    p.add_argument('--system', help='only this system (default: all)')
    p.add_argument('--contract', action='append', default=[], metavar='FILE',
                   help='also check this contract (a file, or a name in site_config/contracts/; '
                        'repeatable)')
    p.set_defaults(func=run)


def run(args):
    config = load_site_configuration()
    systems = [find_system(config, args.system)] if args.system else config['systems']
    for system in systems:
        for part in validate_system(system):
            print(f'ok  {part}')
    for name, count in validate_references().items():
        print(f'ok  references/{name}: {count} reference values')
    for path in args.contract:
        c = contract_run.load(path)
        print(f'ok  contract {c.name} ({c.file}): {len(c.items)} item(s) the checks have '
              f'on {c.system}{":" + c.partition if c.partition else ""} in mode {c.mode}')
    return 0
