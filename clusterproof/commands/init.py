"""``clusterproof init``: write a new system's files from what Slurm and
its nodes say (see :mod:`clusterproof.site.discover`). ``clusterproof init
--probe`` is what init runs through srun on one node of each group: it
prints that node's facts as one line."""

import concurrent.futures
import difflib
import os
import re
import socket
import subprocess
import sys
import time

from clusterproof import ClusterproofError
from clusterproof.hostlist import compress
from clusterproof.paths import REPO, references_dir, system_file, write_atomic
from clusterproof.parsers import slurm_values
from clusterproof.site import declare as site_declare, discover, slurm_view

NAME_RE = re.compile(r'^[a-z][a-z0-9_]*(-[a-z0-9_]+)*$')
#: a probe (srun waits at most discover.PROBE_IMMEDIATE_S for the node) ends in this
PROBE_TIMEOUT_S = 300
#: probes running at once: one srun each, a few MB on the login node; the
#: groups of a site are tens, so a few rounds at most
PROBE_WORKERS = 8


def register(sub):
    p = sub.add_parser(
        'init', help='discover a Slurm cluster and write its system file',
        description='Run on a login node of a live Slurm cluster. Reads the partitions and '
                    'nodes from Slurm (sinfo --json where this Slurm prints a form it reads, '
                    'else scontrol -o show node, saying why on stderr; scontrol -o show '
                    'partition), groups the nodes of each partition that Slurm describes '
                    'alike (CPUs, sockets, cores, threads, memory, GPUs), probes one node of '
                    'each group that Slurm can run on (never a drained, down or powered-down '
                    f'one; each node once, at most {PROBE_WORKERS} at once) through srun '
                    '(lscpu, /proc/meminfo, sysfs caches, dmidecode, ndctl, ipmctl, the scratch '
                    'file system), then writes '
                    'site_config/systems/NAME.py, or NAME.py in the directory '
                    '$CLUSTERPROOF_SYSTEMS names (one ReFrame partition per node group, its '
                    'GPUs as "devices"; a group that cannot be probed is written from '
                    'Slurm\'s view alone; values no tool reports are commented out and '
                    'marked "not discovered" with the reason) and an empty '
                    'site_config/references/NAME.yaml (or in $CLUSTERPROOF_REFERENCES). Next: '
                    'clusterproof validate --system NAME, then reframe -c '
                    'reframe_checks/inventory.py -r --system NAME.')
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument('--name', help='the system name (lower case, digits, - and _)')
    what.add_argument('--probe', action='store_true',
                      help="print this node's facts (the tools' raw output, with --scratch that "
                           f'directory\'s file system) as one line tagged {discover.PROBE_TAG} '
                           'and write nothing: what init runs through srun on one node of each '
                           'group; not typed by hand')
    p.add_argument('--partition', action='append', metavar='P',
                   help='only this Slurm partition (repeat for more; default: every one '
                        'with nodes)')
    p.add_argument('--scratch', metavar='PATH',
                   help='the scratch directory the storage checks write to (probed on the nodes: '
                        'file system type, free space, mount options)')
    p.add_argument('--slurm-output', metavar='DIR',
                   help='read Slurm\'s answers from files in DIR instead of running its commands, '
                        'and probe no node (every group from Slurm\'s view): '
                        'scontrol-show-partition.txt (or .json), sinfo.json, '
                        'scontrol-show-node.txt (or .json); a missing file is a command '
                        'that failed')
    p.add_argument('--force', action='store_true', help='overwrite an existing system file')
    p.add_argument('--dry-run', action='store_true',
                   help='probe, then print the diff against the existing file; write nothing')
    p.set_defaults(func=run)


def probe(group, node, scratch):
    """Run the probe on ``node`` of ``group`` through srun."""
    cmd = discover.probe_command(group, node, scratch)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                              timeout=PROBE_TIMEOUT_S)
    except FileNotFoundError:
        raise ClusterproofError('srun not found on PATH') from None
    except subprocess.TimeoutExpired:
        raise ClusterproofError(f'probe of {node} did not finish in '
                                f'{PROBE_TIMEOUT_S} s: {" ".join(cmd)}') from None
    if proc.returncode != 0:
        msg = (proc.stderr or proc.stdout).strip().splitlines()
        raise ClusterproofError(f'probe of {node} failed (exit {proc.returncode}): '
                                f'{msg[-1] if msg else "no output"}; command: {" ".join(cmd)}')
    return discover.parse_probe(proc.stdout, source=f'probe of {node}')


def choose_probes(groups, recorded, slurm_output=None):
    """Which node probes each group: ``[(node or None, why none)]``, one
    per group. A node that can run a job is chosen, preferring one another
    group (the same node in another partition) already chose, so each node
    is probed once."""
    chosen, taken = [], set()
    for group in groups:
        ready, why = group.probe_candidates()
        if recorded:
            ready, why = [], f'read from recorded Slurm output ({slurm_output})'
        ready = sorted(ready, key=lambda n: n.name not in taken)
        node = ready[0].name if ready else None
        if node:
            taken.add(node)
        chosen.append((node, why))
    return chosen


def probe_all(nodes_groups, scratch, workers=PROBE_WORKERS, probe_one=None):
    """Probe every distinct node of ``nodes_groups`` (``[(node, group)]``,
    the first group naming a node probes it), at most ``workers`` at once.
    Returns ``{node: report or ClusterproofError}``: a failed probe is kept
    as its error, never probed again, and the other probes go on."""
    probe_one = probe_one or probe
    first = {}
    for node, group in nodes_groups:
        first.setdefault(node, group)
    out = {}
    if not first:
        return out
    with concurrent.futures.ThreadPoolExecutor(
            max_workers=max(1, min(workers, len(first)))) as pool:
        futures = {pool.submit(probe_one, group, node, scratch): node
                   for node, group in first.items()}
        for future in concurrent.futures.as_completed(futures):
            node = futures[future]
            try:
                out[node] = future.result()
            except ClusterproofError as err:
                out[node] = err
    return out


def declare(name, group, nodes, args, login_boot_id, node, why, probed):
    """One group's declaration: from the report of ``node`` where its
    probe succeeded, else (no node Slurm can run on, a failed probe,
    recorded output) from Slurm's view, saying why on stderr."""
    if node is not None:
        rep = probed[node]
        if not isinstance(rep, ClusterproofError):
            return site_declare.declare_group(name, group, rep, nodes, args.scratch, login_boot_id)
        why = str(rep)
    print(f'init: {group.partition} {group.nodelist}: declared from Slurm\'s view alone: {why}',
          file=sys.stderr, flush=True)
    return site_declare.declare_group(name, group, None, nodes, args.scratch, login_boot_id,
                                      unprobed=why)


def _head(group):
    gpus = slurm_values.gpu_count(group.slurm.gres)
    return (f'init: {group.partition}: {group.nodelist} ({group.slurm.cpus} CPUs, '
            f'{group.slurm.real_memory_mib} MiB in Slurm' + (f', {gpus} GPUs)' if gpus else ')'))


def hostname_patterns(nodes):
    """This login node and the node names (one pattern per name prefix)."""
    pats = [f'^{re.escape(socket.gethostname().split(".")[0])}$']
    for prefix in sorted({re.sub(r'\d+$', '', n.name.split('.')[0]) for n in nodes}):
        pat = f'^{re.escape(prefix)}\\d+$'
        if pat not in pats:
            pats.append(pat)
    return pats


def probe_this_node(args):
    """``--probe``: this node's facts, one line (the probe of :func:`probe`)."""
    extra = [opt for opt, given in (('--partition', args.partition),
                                    ('--slurm-output', args.slurm_output),
                                    ('--force', args.force), ('--dry-run', args.dry_run)) if given]
    if extra:
        raise ClusterproofError(f'--probe prints this node\'s facts for init\'s probe and takes '
                                f'only --scratch; leave out {" ".join(extra)}')
    # One write, so that srun passes the line whole.
    sys.stdout.write(discover.probe_line(args.scratch))
    sys.stdout.flush()
    return 0


def run(args):
    if args.probe:
        return probe_this_node(args)
    if not NAME_RE.match(args.name):
        raise ClusterproofError(f'--name {args.name!r}: use lower case letters, digits, - and _, '
                                'starting with a letter')
    target = system_file(args.name)
    if target.exists() and not (args.force or args.dry_run):
        raise ClusterproofError(f'{target} exists; --force overwrites it, --dry-run shows '
                                'the difference')
    if args.scratch and not os.path.isabs(args.scratch):
        raise ClusterproofError(f'--scratch {args.scratch}: give an absolute path')
    recorded = bool(args.slurm_output)
    if recorded and not os.path.isdir(args.slurm_output):
        raise ClusterproofError(f'--slurm-output {args.slurm_output}: no such directory')
    run_cmd = slurm_view.recorded_runner(args.slurm_output) if recorded else discover.run_tool
    nodes, partitions, how = slurm_view.read_slurm(run_cmd)
    groups = slurm_view.group_nodes(nodes, args.partition, partitions)
    login_boot_id = None if recorded else discover.probe_node()['boot_id']
    chosen = choose_probes(groups, recorded, args.slurm_output)
    seen = set()
    for group, (node, _why) in zip(groups, chosen):
        what = ('not probed' if node is None else f'{node} probed already' if node in seen
                else f'probing {node}')
        seen.add(node)
        print(f'{_head(group)}: {what}', flush=True)
    todo = [(node, group) for group, (node, _why) in zip(groups, chosen) if node is not None]
    t0 = time.monotonic()
    probed = probe_all(todo, args.scratch)
    if probed:
        failed = [n for n, rep in probed.items() if isinstance(rep, ClusterproofError)]
        print(f'init: probed {compress(sorted(probed, key=slurm_view._node_key))} '
              f'({len(probed)} nodes, at most {PROBE_WORKERS} at once) in '
              f'{time.monotonic() - t0:.1f} s'
              + (f'; failed: {compress(failed)}' if failed else ''),
              flush=True)
    decls = [declare(name, group, nodes, args, login_boot_id, node, why, probed)
             for name, group, (node, why)
             in zip(site_declare.partition_names(groups), groups, chosen)]
    text = discover.render_system(args.name, decls, hostname_patterns(nodes), how,
                                  time.strftime('%Y-%m-%d %H:%M %Z'),
                                  socket.gethostname().split('.')[0])
    try:
        compile(text, str(target), 'exec')
    except SyntaxError as err:
        raise ClusterproofError(f'internal error: the system file would not compile: '
                                f'{err}') from None
    refs = references_dir() / f'{args.name}.yaml'
    if args.dry_run:
        old = target.read_text().splitlines(keepends=True) if target.exists() else []
        sys.stdout.writelines(difflib.unified_diff(
            old, text.splitlines(keepends=True),
            fromfile=str(target) if old else '/dev/null', tofile=str(target)))
        if not refs.exists():
            print(f'(would also write {refs}, empty)')
        return 0
    write_atomic(target, text)
    print(f'init: wrote {target}')
    if refs.exists():
        print(f'init: kept {refs} (it exists; references are only written by clusterproof bless)')
    else:
        write_atomic(refs, discover.render_references(args.name, any(d.emulated for d in decls)))
        print(f'init: wrote {refs}')
    missing = sorted({k for d in decls for k in d.undiscovered})
    if missing:
        print('init: not discovered (commented out in the file): ' + ', '.join(missing))
    print(f'next: clusterproof validate --system {args.name}; '
          f'reframe -c reframe_checks/inventory.py -r --system {args.name}')
    return 0
