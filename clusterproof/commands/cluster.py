"""``clusterproof cluster up|down|status|env``: the local Slurm cluster."""

import json
import sys

from clusterproof import ClusterproofError
from clusterproof import cluster as lc
from clusterproof.commands import argtypes


def _add_common(p):
    p.add_argument('--instance', type=argtypes.instance, default=0, metavar='K',
                   help='instance 0..7: bridges cpbrK..., subnet 198.18.0.(32K)/27 up to '
                        f'{lc.SMALL_MAX_NODES} nodes, 198.19.(8K).0/21 up to {lc.MAX_NODES}, '
                        'own ports (several clusters can run side by side; default 0)')
    p.add_argument('--run-dir', metavar='DIR',
                   help='where all state lives (default $CLUSTERPROOF_CLUSTER_DIR, '
                        'else /tmp/clusterproof-clusterK): root\'s alone, letters, digits and '
                        '. _ + - / only; up refuses one another user could have made or changed')


def register(subparsers):
    p = subparsers.add_parser(
        'cluster', help='the local Slurm cluster (nodes in network namespaces)',
        description='A real Slurm cluster on this machine: munged, MariaDB + slurmdbd, slurmctld '
                    'and one slurmd per node, each node (n1..nN, or named as in --like FILE) in '
                    'its own network, hostname and mount namespace, on bridges in 198.18.0.0/15 '
                    '(the benchmarking range). Needs root. '
                    f'Up to {lc.MAX_NODES} nodes; a long start reports its progress on stderr.')
    sub = p.add_subparsers(dest='action', metavar='ACTION')
    sub.required = True

    up = sub.add_parser('up', help='start the cluster (says so if it is already up)')
    up.add_argument('--nodes', type=argtypes.cluster_nodes, default=lc.DEFAULT_NODES, metavar='N',
                    help=f'number of nodes n1..nN, 1..{lc.MAX_NODES} (default {lc.DEFAULT_NODES}; '
                         '1,024 nodes take about 4 GiB of memory and a minute or two to start)')
    up.add_argument('--cpus-per-node', type=argtypes.node_cpus, default=lc.DEFAULT_CPUS,
                    metavar='C',
                    help=f'CPUs Slurm gives each node, 1..{argtypes.MAX_NODE_CPUS:,} '
                         f'(default {lc.DEFAULT_CPUS})')
    up.add_argument('--mem-per-node', type=argtypes.node_mib, default=lc.DEFAULT_MEM_MIB,
                    metavar='MiB',
                    help=f'memory Slurm gives each node, MiB, at least 64 per CPU and at most 2^40 '
                         f'(default {lc.DEFAULT_MEM_MIB})')
    up.add_argument('--node-spec', metavar='SPEC', default='',
                    help="nodes that differ: 'n[1-8]:cpus=2,mem=2048;n[9-16]:cpus=1,mem=1024' "
                         'gives each group of nodes its CPUs and memory (MiB); it names every '
                         'node n1..nN once and sets the node count (a key left out takes '
                         "--cpus-per-node/--mem-per-node). A node's slurmd and jobs are bound to "
                         "that many of this machine's processors. Each node set is counted "
                         f'before it is expanded: more than {lc.MAX_NODES} is refused')
    up.add_argument('--like', metavar='FILE',
                    help="a real cluster's description to build the nodes and partitions "
                         "from: slurm.conf (its NodeName/PartitionName lines), 'scontrol -o "
                         "show node' output of any version, or Slurm's JSON ('sinfo --json', "
                         "'scontrol show node --json', slurmrestd's nodes). Node names, "
                         'sockets/cores/threads, RealMemory, GRES (counts, no devices), '
                         'features and partitions as declared; nodes recorded DOWN or DRAIN '
                         'made so after up, with the recorded reason. '
                         f'At most {lc.MAX_NODES} nodes; replaces --nodes, '
                         '--cpus-per-node, --mem-per-node and --node-spec')
    up.add_argument('--like-partitions', metavar='FILE',
                    help="the partitions of --like's cluster ('scontrol -o show partition' "
                         'output or JSON, or slurm.conf PartitionName lines): MaxNodes, '
                         'MaxTime, State, Default; node records name only their partitions')
    up.add_argument('--like-topology', metavar='FILE',
                    help="the tree topology of --like's cluster (its topology.conf, or "
                         "'scontrol show topology' output): leaf switches and the switches "
                         'above them, cut to the described nodes; Slurm then runs with '
                         'topology/tree, and the screening page lays nodes out by leaf switch')
    up.add_argument('--max-submit-jobs', type=argtypes.submit_jobs, default=0, metavar='N',
                    help="the site's MaxSubmitJobs: jobs pending or running at once, set with "
                         "sacctmgr on the cluster's root account and enforced "
                         '(AccountingStorageEnforce=associations,limits: only users with an '
                         'association, root, may then submit); at most '
                         f'{argtypes.MAX_COUNT:,}')
    up.add_argument('--max-array-size', type=argtypes.array_size, default=0, metavar='N',
                    help="the site's MaxArraySize (slurm.conf; array indices 0..N-1; Slurm's "
                         f"default 1001; at most {argtypes.MAX_ARRAY_SIZE:,}, Slurm's largest)")
    _add_common(up)
    up.set_defaults(func=cmd_up)

    down = sub.add_parser('down', help='stop the daemons, remove namespaces, links and bridge')
    _add_common(down)
    down.add_argument('--force', action='store_true',
                      help='bring it down even while a test session holds '
                           '/run/clusterproof/clusterK.lock, or when its node namespaces run a '
                           'slurmd this run directory did not start (a cluster of the instance '
                           'brought up from another mount namespace)')
    down.set_defaults(func=cmd_down)

    status = sub.add_parser('status', help='daemons (pid, alive), nodes and their Slurm states')
    _add_common(status)
    status.add_argument('--json', action='store_true', help='print the status as JSON')
    status.set_defaults(func=cmd_status)

    env = sub.add_parser('env', help='print the export lines for client commands (SLURM_CONF ...)')
    _add_common(env)
    env.set_defaults(func=cmd_env)


def cmd_up(args):
    if args.node_spec and args.nodes != lc.DEFAULT_NODES:
        raise ClusterproofError('--nodes and --node-spec disagree: --node-spec names the nodes, '
                                'leave --nodes out')
    like = None
    for opt, value in (('--like-partitions', args.like_partitions),
                       ('--like-topology', args.like_topology)):
        if value and not args.like:
            raise ClusterproofError(f'{opt} needs --like FILE: the nodes it holds')
    if args.like:
        given = [opt for opt, value, default in (
            ('--nodes', args.nodes, lc.DEFAULT_NODES),
            ('--cpus-per-node', args.cpus_per_node, lc.DEFAULT_CPUS),
            ('--mem-per-node', args.mem_per_node, lc.DEFAULT_MEM_MIB),
            ('--node-spec', args.node_spec, ''))
            if value != default]
        if given:
            raise ClusterproofError(f'--like {args.like} declares the nodes: leave out '
                                    f'{", ".join(given)}')
        like = lc.read_like(args.like, args.like_partitions, args.like_topology)
    spec = lc.Spec(instance=args.instance, nodes=args.nodes, cpus=args.cpus_per_node,
                   mem=args.mem_per_node, run_dir=lc.run_dir_for(args.instance, args.run_dir),
                   node_spec=args.node_spec, like=like, max_submit_jobs=args.max_submit_jobs,
                   max_array_size=args.max_array_size)
    cluster = lc.Cluster(spec, log=lambda text: print(text, flush=True),
                         progress=lambda text: print(text, file=sys.stderr, flush=True))
    if not cluster.up():
        for line in lc.env_lines(lc.load_spec(args.instance, args.run_dir)):
            print(line)
    return 0


def cmd_down(args):
    spec = lc.load_spec(args.instance, args.run_dir)
    if not args.force and lc.in_use(args.instance):
        raise ClusterproofError(f'instance {args.instance} is in use (a test session holds '
                                f'{lc.users_lock_path(args.instance)}); '
                                'wait for it to end, or use --force')
    lc.Cluster(spec, log=lambda text: print(text, flush=True)).down(force=args.force)
    return 0


def cmd_status(args):
    spec = lc.load_spec(args.instance, args.run_dir)
    st = lc.Cluster(spec).status()
    if args.json:
        print(json.dumps(st, indent=2))
        return 0 if st['up'] else 1
    print(f'cluster {st["cluster"]} (instance {st["instance"]}, run directory {st["run_dir"]}): '
          f'{"up" if st["up"] else "down"}')
    print('daemons:')
    slurmd = {}
    for name, d in st['daemons'].items():
        if name.startswith('slurmd '):
            slurmd[name.split()[1]] = 'alive' if d['alive'] else 'not running'
            continue
        pid = d['pid'] if d['pid'] else '-'
        print(f'  {name:<12} pid {pid:<8} {"alive" if d["alive"] else "not running"}')
    for state, nodes in lc.by_state(slurmd):
        print(f'  {"slurmd":<12} {str(nodes):<12} {state}')
    if st['nodes']:
        print('nodes:')
        for state, nodes in lc.by_state(st['nodes']):
            print(f'  {str(nodes):<12} {state}')
    if st['problems']:
        print('problems:')
        for line in st['problems']:
            print(f'  {line}')
    if st['network']:
        print('network: ' + ', '.join(st['network']))
    return 0 if st['up'] else 1


def cmd_env(args):
    spec = lc.load_spec(args.instance, args.run_dir)
    for line in lc.env_lines(spec):
        print(line)
    return 0
