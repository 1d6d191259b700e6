"""``clusterproof inventory --report``: what this node has, as one line for
the SystemInventory and PmemProvisioning checks (reframe_checks/inventory.py),
which run it on every node of the job."""

import json
import sys

from clusterproof.site.inventory import REPORT_TAG, node_report


def register(subparsers):
    p = subparsers.add_parser(
        'inventory', help="this node's hardware, as the inventory checks read it",
        description='Print what this node has (sockets, cores, threads per core, NUMA nodes, '
                    'memory, GPUs from nvidia-smi -L, rocm-smi or /sys/class/drm, or why none '
                    "was found, and the node's Slurm record) as one line tagged "
                    f'{REPORT_TAG}, for the SystemInventory check.')
    p.add_argument('--report', action='store_true', required=True,
                   help="print this node's hardware line, tagged for the check")
    p.add_argument('--pmem', action='store_true',
                   help='also run ipmctl show -memoryresources, ipmctl show -topology, '
                        'ndctl list -N and read /proc/mounts')
    p.set_defaults(func=run)


def run(args):
    line = f'{REPORT_TAG} {json.dumps(node_report(pmem=args.pmem), sort_keys=True)}\n'
    # One write per report, so reports of parallel tasks do not interleave.
    sys.stdout.write(line)
    sys.stdout.flush()
    return 0
