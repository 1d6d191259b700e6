"""``clusterproof init``: write a new system's files from what Slurm and
its nodes say (see :mod:`clusterproof.site.discover`)."""

import difflib
import os
import re
import socket
import subprocess
import sys
import time

from clusterproof import ClusterproofError
from clusterproof.paths import REPO, SITE_CONFIG, references_dir, write_atomic
from clusterproof.parsers import slurm
from clusterproof.site import discover

NAME_RE = re.compile(r'^[a-z][a-z0-9_]*(-[a-z0-9_]+)*$')
#: a probe (srun waits at most discover.PROBE_IMMEDIATE_S for the node) ends in this
PROBE_TIMEOUT_S = 300


def register(sub):
    p = sub.add_parser(
        'init', help='discover a Slurm cluster and write its system file',
        description='Run on a login node of a live Slurm cluster. Reads the partitions and '
                    'nodes from Slurm (sinfo --json where this Slurm prints a form it reads, '
                    'else scontrol -o show node, saying why on stderr; scontrol -o show '
                    'partition), groups the nodes of each partition that Slurm describes '
                    'alike (CPUs, sockets, cores, threads, memory, GPUs), probes one node of '
                    'each group that Slurm can run on (never a drained, down or powered-down '
                    'one) through srun (lscpu, /proc/meminfo, sysfs caches, dmidecode, '
                    'ndctl, ipmctl, the scratch file system), then writes '
                    'site_config/systems/NAME.py (one ReFrame partition per node group, its '
                    'GPUs as "devices"; a group that cannot be probed is written from '
                    'Slurm\'s view alone; values no tool reports are commented out and '
                    'marked "not discovered" with the reason) and an empty '
                    'site_config/references/NAME.yaml. Next: clusterproof validate --system '
                    'NAME, then reframe -c reframe_checks/inventory.py -r --system NAME.')
    p.add_argument('--name', required=True, help='the system name (lower case, digits, - and _)')
    p.add_argument('--partition', action='append', metavar='P',
                   help='only this Slurm partition (repeat for more; default: every one with nodes)')
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


def system_file(name):
    return SITE_CONFIG / 'systems' / f'{name}.py'


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


def declare(name, group, nodes, args, login_boot_id, recorded, probed):
    """One group's declaration: probed on a node Slurm can run on (one
    already probed for another partition is not probed again: ``probed``
    keeps the reports), else (no such node, a failed probe, recorded
    output) from Slurm's view."""
    ready, why = group.probe_candidates()
    ready = sorted(ready, key=lambda n: not isinstance(probed.get(n.name), dict))
    if recorded:
        ready, why = [], f'read from recorded Slurm output ({args.slurm_output})'
    head = (f'init: {group.partition}: {group.nodelist} ({group.slurm.cpus} CPUs, '
            f'{group.slurm.real_memory_mib} MiB in Slurm')
    gpus = slurm.gpu_count(group.slurm.gres)
    head += f', {gpus} GPUs)' if gpus else ')'
    if ready:
        node = ready[0].name
        try:
            if node in probed:
                print(f'{head}: {node} probed already', flush=True)
            else:
                print(f'{head}: probing {node}', flush=True)
                try:
                    probed[node] = probe(group, node, args.scratch)
                except ClusterproofError as err:
                    probed[node] = err          # not probed again for another partition
            if isinstance(probed[node], ClusterproofError):
                raise probed[node]
            return discover.declare_group(name, group, probed[node], nodes, args.scratch,
                                          login_boot_id)
        except ClusterproofError as err:
            why = str(err)
    else:
        print(f'{head}: not probed', flush=True)
    print(f'init: {group.partition} {group.nodelist}: declared from Slurm\'s view alone: {why}',
          file=sys.stderr, flush=True)
    return discover.declare_group(name, group, None, nodes, args.scratch, login_boot_id,
                                  unprobed=why)


def hostname_patterns(nodes):
    """This login node and the node names (one pattern per name prefix)."""
    pats = [f'^{re.escape(socket.gethostname().split(".")[0])}$']
    for prefix in sorted({re.sub(r'\d+$', '', n.name.split('.')[0]) for n in nodes}):
        pat = f'^{re.escape(prefix)}\\d+$'
        if pat not in pats:
            pats.append(pat)
    return pats


def run(args):
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
    run_cmd = discover.recorded_runner(args.slurm_output) if recorded else discover._run
    nodes, partitions, how = discover.read_slurm(run_cmd)
    groups = discover.group_nodes(nodes, args.partition, partitions)
    login_boot_id = None if recorded else discover.probe_node()['boot_id']
    probed = {}
    decls = [declare(name, group, nodes, args, login_boot_id, recorded, probed)
             for name, group in zip(discover.partition_names(groups), groups)]
    text = discover.render_system(args.name, decls, hostname_patterns(nodes), how,
                                  time.strftime('%Y-%m-%d %H:%M %Z'),
                                  socket.gethostname().split('.')[0])
    try:
        compile(text, str(target), 'exec')
    except SyntaxError as err:
        raise ClusterproofError(f'internal error: the system file would not compile: {err}') from None
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
