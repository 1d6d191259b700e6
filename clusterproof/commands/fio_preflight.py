"""``clusterproof fio-preflight DIR FIO ENGINE``: the fio checks' line before
fio in their job (reframe_checks/pmem.py): whether this node has what the
check needs, judged from what the job's probe recorded in DIR
(:func:`clusterproof.site.pmem.node_verdict`). Prints the verdict, exit
status 3 when the node is unfit; the job then ends before fio and the check
skips with the same reason."""

import sys

from clusterproof.site import pmem

#: the exit status of a node that lacks what the check needs
UNFIT = 3


def register(subparsers):
    p = subparsers.add_parser(
        'fio-preflight', help='whether this node has what a fio check needs, for its job',
        description='Run by the fio checks\' job on the node under test, before fio (normally '
                    'not typed by hand): judges the files the job\'s probe wrote in DIR (fio '
                    '--enghelp, /proc/mounts, ndctl list -N, the device-DAX device) and prints '
                    'the verdict, on stdout when the node has what the check needs, else on '
                    f'stderr with the reason and exit status {UNFIT}.')
    p.add_argument('directory', metavar='DIR', help="where the job's probe wrote its files")
    p.add_argument('fio', metavar='FIO', help='the fio the check runs')
    p.add_argument('engine', metavar='ENGINE', help='the fio engine it must have (libpmem, '
                                                    'dev-dax, psync)')
    p.add_argument('--dax', metavar='PATH',
                   help='PATH must be on a DAX mount of an fsdax namespace')
    p.add_argument('--devdax', metavar='DEVICE', help='DEVICE (/dev/daxX.Y) must exist')
    p.add_argument('--align', type=int, metavar='BYTES',
                   help="the device's alignment the job was written for: unfit when its "
                        'sysfs entry gives another')
    p.add_argument('--tmpfs', metavar='PATH', help='PATH must be on tmpfs')
    p.set_defaults(func=run)


def run(args):
    verdict = pmem.node_verdict(args.directory, args.fio, args.engine, args.dax, args.devdax,
                                args.align, args.tmpfs)
    print(f'clusterproof node probe: {verdict.reason}', file=sys.stdout if verdict else sys.stderr)
    return 0 if verdict else UNFIT
