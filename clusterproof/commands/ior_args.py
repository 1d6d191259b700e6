"""``clusterproof ior-args``: the IOR options of one phase of the N-to-1 run,
one per line, for job scripts (slurm/ior-n-to-1.sbatch) that must run exactly
what the ReFrame check runs (clusterproof/methods/ior.py)."""

from clusterproof.commands import argtypes
from clusterproof.methods import ior


def register(subparsers):
    p = subparsers.add_parser(
        'ior-args', help='IOR options of the N-to-1 run, one per line',
        description='Print the IOR options of one phase of the published N-to-1 run '
                    '(the ReFrame check IorSharedFile runs the same), one per line.')
    p.add_argument('--phase', choices=list(ior.PHASES), required=True)
    p.add_argument('--test-dir', required=True, help='the test directory (holds tst.file)')
    p.add_argument('--transfer', required=True, type=argtypes.size,
                   help='transfer size (-t), e.g. 16m')
    p.add_argument('--block', required=True, type=argtypes.size,
                   help='size per thread (-b), e.g. 512g')
    p.add_argument('--read-reorder', default='-C', choices=ior.READ_REORDERS,
                   help='read reordering: -C (another node\'s data, default), -Z (random) '
                        'or "" (none)')
    p.add_argument('--direct', action='store_true', help='add --posix.odirect')
    p.set_defaults(func=run)


def run(args):
    for word in ior.argv(args.phase, args.test_dir, args.transfer, args.block,
                         read_reorder=args.read_reorder, direct_io=args.direct):
        print(word)
    return 0
