"""Slurm's view of a cluster, as ``clusterproof init`` asks for it.

The commands it runs on the login node (or the files of their recorded answers,
``--slurm-output DIR``), the nodes and partitions they describe
(:func:`read_slurm`; the parsing of every Slurm version's output is
:mod:`clusterproof.parsers.slurm`), and the node groups of a partition:
nodes that Slurm describes alike, GPUs included (:func:`group_nodes`), each
with the nodes a probe may run on (:meth:`NodeGroup.probe_candidates`)."""

import os
import re
import sys
from dataclasses import dataclass

from clusterproof import ClusterproofError
from clusterproof.hostlist import compress
from clusterproof.parsers import slurm, slurm_values
from clusterproof.parsers.slurm import SlurmNode
from clusterproof.site.inventory import run_tool, tool_failure

#: what init asks Slurm, in this order (``--all``: hidden partitions too)
PARTITION_COMMAND = ['scontrol', '--all', '-o', 'show', 'partition']
SINFO_COMMAND = ['sinfo', '--all', '--json']
NODE_COMMAND = ['scontrol', '--all', '-o', 'show', 'node']

#: the files ``clusterproof init --slurm-output DIR`` reads instead of each command
RECORDED_FILES = {
    ' '.join(PARTITION_COMMAND): ('scontrol-show-partition.txt', 'scontrol-show-partition.json'),
    ' '.join(SINFO_COMMAND): ('sinfo.json',),
    ' '.join(NODE_COMMAND): ('scontrol-show-node.txt', 'scontrol-show-node.json'),
}


def recorded_runner(directory):
    """A stand-in for running Slurm's commands: the answer of each command
    of :data:`RECORDED_FILES` is the first of its files in ``directory``
    (``clusterproof init --slurm-output DIR``)."""
    def run(argv):
        names = RECORDED_FILES.get(' '.join(argv), ())
        for name in names:
            path = os.path.join(directory, name)
            if os.path.isfile(path):
                with open(path, encoding='utf-8', errors='replace') as fh:
                    return {'argv': argv, 'rc': 0, 'stdout': fh.read(), 'stderr': ''}
        return {'argv': argv, 'rc': None, 'stdout': '', 'stderr': '',
                'missing': f'no {" or ".join(names) or "file"} in {directory}'}
    return run


def _warn(text):
    print(f'init: {text}', file=sys.stderr, flush=True)


def _without_all_where_refused(run):
    """``run``, which asks again without ``--all`` where a command with it
    fails or prints nothing (a Slurm or wrapper that does not take it)."""
    def again(argv):
        out = run(argv)
        if '--all' in argv and (out['rc'] != 0 or not out['stdout'].strip()):
            retry = run([a for a in argv if a != '--all'])
            if retry['rc'] == 0 and retry['stdout'].strip():
                return retry
        return out
    return again


def read_slurm(run=run_tool, warn=_warn):
    """Slurm's view of this cluster: ``(nodes, partitions, how)``, where
    ``partitions`` is ``{name: SlurmPartition}`` and ``how`` names the
    commands that answered. ``sinfo --json`` first; a Slurm without it
    (before 21.08) or JSON in a form not understood falls back to
    ``scontrol -o show node``, and ``warn`` says why."""
    how = []
    run = _without_all_where_refused(run)
    parts_out = run(PARTITION_COMMAND)
    partitions = {}
    if parts_out['rc'] == 0:
        text = parts_out['stdout']
        partitions = (slurm.partitions_from_json(text, 'scontrol show partition --json')
                      if text.lstrip().startswith('{') else slurm.partitions_from_scontrol(text))
        how.append('scontrol -o show partition')
    else:
        warn(f'scontrol -o show partition failed ({tool_failure(parts_out)}); the partitions '
             "are taken from sinfo --json's records where it has them, else from the nodes' "
             'records (no MaxNodes, MaxTime or state)')
    nodes = None
    js = run(SINFO_COMMAND)
    if js['rc'] == 0 and js['stdout'].lstrip().startswith('{'):
        try:
            nodes = slurm.nodes_from_json(js['stdout'], 'sinfo --json')
            how.insert(0, 'sinfo --json')
            if not partitions and '"sinfo"' in js['stdout']:
                # 23.02+ records carry their partition: its node list, limits and state
                partitions = slurm.partitions_from_json(js['stdout'], 'sinfo --json')
        except ClusterproofError as err:
            warn(f'{err}; reading scontrol -o show node instead')
        except (KeyError, TypeError, AttributeError, ValueError) as err:
            warn(f'sinfo --json: a form init does not read ({type(err).__name__}: {err}); '
                 'reading scontrol -o show node instead')
    elif js['rc'] == 0:
        warn('sinfo --json printed no JSON object; reading scontrol -o show node instead')
    else:
        warn(f'sinfo --json failed ({tool_failure(js)}; Slurm prints JSON from 21.08 on); '
             'reading scontrol -o show node instead')
    if nodes is None:
        text = run(NODE_COMMAND)
        if text['rc'] != 0:
            raise ClusterproofError(f'scontrol -o show node failed: {tool_failure(text)}; run '
                                    'clusterproof init on a login node of the cluster '
                                    '(SLURM_CONF set if Slurm needs it)')
        out, skipped = text['stdout'], []
        try:
            nodes = (slurm.nodes_from_json(out, 'scontrol show node --json')
                     if out.lstrip().startswith('{')
                     else slurm.nodes_from_scontrol(out, skipped=skipped))
        except (KeyError, TypeError, AttributeError, ValueError) as err:
            raise ClusterproofError(f'scontrol show node: a form init does not read '
                                    f'({type(err).__name__}: {err})') from None
        for msg in skipped:
            warn(f'{msg}: node left out')
        how.insert(0, 'scontrol -o show node')
    if not nodes:
        raise ClusterproofError('Slurm lists no nodes (' + ', '.join(how) + ')')
    return slurm.membership(nodes, partitions), partitions, ', '.join(how)


@dataclass
class NodeGroup:
    """Nodes of one partition that Slurm describes alike (CPUs, topology,
    memory, GPUs)."""
    partition: str
    nodes: list
    slurm: SlurmNode          # the first node: its shape is every node's
    partition_info: object = None   # the SlurmPartition, where Slurm listed it

    @property
    def nodelist(self):
        return compress([n.name for n in self.nodes])

    def probe_candidates(self):
        """``(nodes a job step can start on, best first; why none can)``."""
        info = self.partition_info
        if info is not None and info.state != 'UP':
            return [], (f'partition {self.partition} is {info.state}: Slurm starts no job '
                        'there')
        ok, why = [], []
        for node in self.nodes:
            can, reason = slurm_values.runnable(node.state)
            if can:
                ok.append(node)
            else:
                why.append(f'{node.name} {reason}' + (f' ({node.reason})' if node.reason else ''))
        ok.sort(key=lambda n: slurm_values.run_rank(n.state))
        if ok:
            return ok, ''
        shown = '; '.join(why[:4]) + (f'; and {len(why) - 4} more' if len(why) > 4 else '')
        return [], f'no node of {self.nodelist} can run a job: {shown}'


def _node_key(name):
    return [int(t) if t.isdigit() else t for t in re.split(r'(\d+)', name)]


def group_nodes(nodes, partitions=None, slurm_partitions=None):
    """:class:`NodeGroup` per partition and node shape, in partition order,
    then by first node. ``partitions``: only these (an unknown one is an
    error); ``slurm_partitions``: ``{name: SlurmPartition}`` from Slurm."""
    slurm_partitions = slurm_partitions or {}
    known = [p for p in slurm_partitions if any(p in n.partitions for n in nodes)]
    for node in nodes:
        for part in node.partitions:
            if part not in known:
                known.append(part)
    wanted = list(partitions) if partitions else known
    unknown = [p for p in wanted if p not in known]
    if unknown:
        raise ClusterproofError(f'Slurm has no partition {", ".join(unknown)} with nodes; '
                                f'it has: {", ".join(known) or "none"}')
    groups = []
    for part in wanted:
        shapes = {}
        for node in sorted((n for n in nodes if part in n.partitions),
                           key=lambda n: _node_key(n.name)):
            shapes.setdefault(node.shape(), []).append(node)
        for members in shapes.values():
            groups.append(NodeGroup(part, members, members[0], slurm_partitions.get(part)))
    return groups
