"""``clusterproof spack``: concretize, install and inspect the Spack
environment of the repository (``spack.yaml``) for a system."""

import argparse

from clusterproof import ClusterproofError
from clusterproof.site import spackenv
from clusterproof.site.binaries import (HASH_DIGITS, file_sha256, read_lock, spack_lock_path,
                                   spack_view, spec_string)


def register(subparsers):
    parser = subparsers.add_parser(
        'spack', help='concretize and install the Spack environment (needs spack)',
        description='Build the pinned benchmark binaries with Spack: runs '
                    '"spack -e . concretize" and "spack -e . install" in the repository, '
                    'with the settings of spack/systems/<system>/. The binaries land in the '
                    'view .spack-env/view/bin, where the checks look first.',
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog='The system defaults to $CLUSTERPROOF_SYSTEM, else "local". '
               'See docs/spack.md.')
    sub = parser.add_subparsers(dest='action', metavar='ACTION', required=True)

    def add(name, help_text):
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument('--system', default=None,
                       help='settings from spack/systems/SYSTEM/ (default: '
                            '$CLUSTERPROOF_SYSTEM, else local)')
        return p

    p = add('concretize', 'concretize the environment into spack.lock')
    p.add_argument('--force', action='store_true',
                   help='concretize again even if spack.lock is for this system')
    p.set_defaults(func=concretize)
    p = add('install', 'concretize if needed, then build and install every pinned spec')
    p.add_argument('--only', metavar='SPEC', default=None,
                   help='install only this root (e.g. mmap-sweep)')
    p.set_defaults(func=install)
    p = add('status', 'what spack.lock pins and which roots are in the view '
                      '(needs no spack)')
    p.set_defaults(func=status)


def _system(args):
    return spackenv.check_system(args.system or spackenv.default_system())


def concretize(args):
    system = _system(args)
    spackenv.spack_command()
    return spackenv.concretize(system, force=args.force)


def install(args):
    system = _system(args)
    spackenv.spack_command()
    status = spackenv.concretize(system)
    if status != 0:
        return status
    return spackenv.run_spack(['install'] + ([args.only] if args.only else []), system)


def status(args):
    system = _system(args)
    lock_path = spack_lock_path()
    if not lock_path.is_file():
        raise ClusterproofError(f'{lock_path}: no spack.lock yet; run: '
                                f'clusterproof spack concretize --system {system}')
    lock = read_lock(lock_path)
    concretized_for = spackenv.concretized_system() or 'unknown'
    print(f'spack.lock   {lock_path} (sha256 {file_sha256(lock_path)[:HASH_DIGITS]}), '
          f'Spack {lock.get("spack", {}).get("version", "?")}, concretized for system '
          f'{concretized_for}')
    if concretized_for != system:
        print(f'             not for system {system}: run clusterproof spack concretize '
              f'--system {system}')
    view = spack_view()
    print(f'view         {view}{"" if view.is_dir() else " (not built yet)"}')
    view_meta = view / '.spack'
    for root in lock['roots']:
        node = lock['concrete_specs'][root['hash']]
        if node.get('external'):
            where = 'external, on the system PATH'
        elif (view_meta / node['name']).is_dir():
            where = 'installed, in the view'
        else:
            where = 'not installed'
        print(f'  {root["spec"]:<34} {where}')
        print(f'      {spec_string(lock, root["hash"])}')
    return 0
