"""``clusterproof placement``: print the round-robin placement of T threads
over client nodes as an MPI hostfile, IOzone's ``-+m`` threadlist, or the
``srun``/``mpirun`` options (see clusterproof/methods/placement.py and docs/storage.md).
"""

import os
import sys

from clusterproof import ClusterproofError
from clusterproof.commands import argtypes
from clusterproof.methods import placement


def register(subparsers):
    p = subparsers.add_parser(
        'placement',
        help='round-robin placement of threads over client nodes',
        description='Deal THREADS round-robin over the client nodes (thread i on client node '
                    'i mod N; fewer threads than client nodes use the first THREADS nodes) '
                    'and print one form of the placement.')
    p.add_argument('--nodes', default=None,
                   help='client nodes as a Slurm hostlist expression, e.g. "n[1-16]" '
                        '(default: $SLURM_JOB_NODELIST inside an allocation)')
    p.add_argument('--threads', type=argtypes.threads, required=True,
                   help=f'number of threads (1 to {placement.MAX_THREADS:,})')
    p.add_argument('--format', choices=placement.FORMATS, default='hostfile',
                   help='hostfile: one client node per rank; slots: "node slots=k"; '
                        'threadlist: IOzone -+m lines "node workdir iozone"; '
                        'srun / mpirun: launcher options (default: hostfile)')
    p.add_argument('--workdir', help='test directory on the client nodes (threadlist form)')
    p.add_argument('--iozone', help='path of iozone on the client nodes (threadlist form; '
                                    'default: iozone found on PATH)')
    p.add_argument('--hostfile', help='hostfile path to name in the mpirun form')
    p.add_argument('--cores-per-node', type=argtypes.positive, default=None,
                   help='cores per client node: adds --overcommit (srun) or --oversubscribe '
                        '(mpirun) when a node gets more threads than cores')
    p.set_defaults(func=run)


def run(args):
    nodes = args.nodes or os.environ.get('SLURM_JOB_NODELIST')
    if not nodes:
        raise ClusterproofError('no client nodes: pass --nodes "n[1-16]" or run inside a '
                                'Slurm allocation (SLURM_JOB_NODELIST)')
    iozone = args.iozone
    if args.format == 'threadlist' and not iozone:
        import shutil
        iozone = shutil.which('iozone')
        if not iozone:
            raise ClusterproofError('threadlist form: iozone is not on PATH; '
                                    'pass --iozone /path/to/iozone')
    pl = placement.place(nodes, args.threads)
    sys.stdout.write(placement.render(pl, args.format, workdir=args.workdir, iozone=iozone,
                                      cores_per_node=args.cores_per_node,
                                      hostfile_path=args.hostfile))
    return 0
