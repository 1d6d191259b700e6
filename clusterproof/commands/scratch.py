"""``clusterproof scratch``: test directories for job scripts (slurm/*.sbatch),
under the rules of clusterproof/site/scratch.py.

``create SCRATCH NAME`` prints the path of a new test directory, owned by
the calling process or ``--owner-pid`` (``--path``: the path the check
planned; ``--bytes``: refuse when the file system has not that much free);
``remove SCRATCH PATH`` removes one
clusterproof created; ``leftovers SCRATCH`` removes those of processes that
are gone. A refusal exits with status 2 and says why on stderr.
"""

import os

from clusterproof.commands import argtypes
from clusterproof.methods import scratch


def register(subparsers):
    p = subparsers.add_parser(
        'scratch', help='test directories under a scratch directory, for job scripts',
        description='Create, remove or clean up the test directories of job scripts, '
                    'under the same rules as the checks (no system or home directory, '
                    'no shell metacharacters, only what clusterproof created is removed).')
    sub = p.add_subparsers(dest='action', required=True)
    c = sub.add_parser('create', help='print the path of a new test directory')
    c.add_argument('scratch')
    c.add_argument('name')
    c.add_argument('--owner-pid', type=argtypes.pid, default=None,
                   help='process that uses the directory (a job script passes $$; '
                        'default: the parent process)')
    c.add_argument('--path', default=None,
                   help='create this path (under SCRATCH) instead of NAME-<unique>')
    c.add_argument('--bytes', type=argtypes.nbytes, default=None,
                   help='the test will write this many bytes: refuse when they do not fit')
    c.add_argument('--what', default='test files', help='what the bytes are, for the refusal')
    r = sub.add_parser('remove', help='remove a test directory clusterproof created')
    r.add_argument('scratch')
    r.add_argument('path')
    lo = sub.add_parser('leftovers', help='remove test directories of processes that are gone')
    lo.add_argument('scratch')
    p.set_defaults(func=run)


def run(args):
    if args.action == 'create':
        # The job script that called us owns the directory, not this process
        # (in "$(...)" the parent is a subshell: pass --owner-pid $$).
        print(scratch.prepare_test_dir(args.scratch, args.name, args.bytes, args.what,
                                       path=args.path, owner_pid=args.owner_pid or os.getppid()))
    elif args.action == 'remove':
        scratch.remove_test_dir(args.scratch, args.path)
    else:
        for path in scratch.remove_leftovers(args.scratch):
            print(f'removed leftover {path}')
    return 0
