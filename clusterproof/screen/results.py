"""Screening samples from ReFrame run reports (``reframe --report-file``).

A screening run is ReFrame with ``--distribute=all``: one test case per node,
pinned to it, the node named in the case's ``job_nodelist`` (and in its
display name as ``%.nid=NODE``). :func:`samples_from_report` turns the test
cases of the screening checks (:data:`SCREEN_CHECKS`) into
``screen.verdicts.Sample`` s: one per performance figure, and for the inventory
check one per hardware figure of the node's report (read from the job's
standard output file, the lines ``clusterproof inventory --report`` prints).
A failed case gives one sample without a value and ReFrame's fail reason.

A figure of one component of the node (a socket or NUMA domain, a GPU, a
network link) is a performance variable named ``<figure>@<component>``
(``triad@numa1``, ``bandwidth@gpu3``): its sample has the figure
(``triad``) and the component (``numa 1``, :func:`component_name`), and
is judged among the same components of the peers. A check that measures
per component plugs in by naming its variables so.

Later cases of the same node, check and figure replace earlier ones: a
report read after a repeat holds the repeat's value.

Only the minimal use of ReFrame's run report this command needs lives here;
nothing is read from the console output.
"""

import re
from dataclasses import dataclass, replace
from pathlib import Path

from clusterproof import ClusterproofError
from clusterproof.reframe_io import runner
from clusterproof.references import direction, lookup
from clusterproof.screen import pairs
from clusterproof.screen.peerinventory import INVENTORY_FIGURES, INVENTORY_UNITS
from clusterproof.screen.verdicts import Sample
from clusterproof.site import inventory as inv


@dataclass(frozen=True)
class ScreenCheck:
    """A screening check: its name on the command line, the ReFrame check
    class(es) it runs, the ``reframe`` options selecting it, what it measures."""
    name: str
    cls: object                 # a class name, or a tuple of them
    file: str
    options: tuple
    what: str
    #: the figures judged (the check's headline figures); None: every one
    figures: tuple = None
    #: a parameter of the check whose value names the figure too (fio:
    #: ``section``, so the two sections' ``bw`` are two figures)
    figure_param: str = None
    #: measured between two nodes: run per node pair (``screen.pairs``), not
    #: with ``--distribute``
    pairs: bool = False


#: the checks ``clusterproof screen --checks`` knows, in run order
SCREEN_CHECKS = {c.name: c for c in (
    ScreenCheck('inventory', 'SystemInventory', 'inventory.py',
                ('-n', '^SystemInventory$', '-S', 'SystemInventory.num_nodes=1'),
                'the hardware of each node (sockets, cores, NUMA nodes, memory, Slurm record)'),
    ScreenCheck('stream', 'Stream', 'stream.py',
                ('-n', 'Stream%placement=cores', '-x', 'Stream%membind=dram',
                 '-x', 'Stream%membind=pmem', '-S', 'Stream.per_numa=true'),
                'STREAM memory bandwidth, one thread per core, then bound to each NUMA '
                "domain in turn (a node of two or more): Triad is judged, the node's and "
                "each domain's",
                figures=('triad',)),
    ScreenCheck('hpl', 'Hpl', 'hpl.py', ('-n', 'Hpl%num_nodes=1'),
                'single-node HPL (Gflop/s)', figures=('gflops',)),
    ScreenCheck('fio', 'StorageFioBaseline', 'pmem.py', ('-n', '^StorageFioBaseline'),
                "fio on the partition's declared scratch directory (4 KiB random reads "
                'and writes, direct, psync): bandwidth of each section is judged',
                figures=('bw',), figure_param='section'),
    ScreenCheck('osu', ('OsuLatency', 'OsuBandwidth'), 'osu.py',
                ('-n', '^OsuLatency$', '-n', 'OsuBandwidth%benchmark=osu_bw'),
                'OSU between the two nodes of each pair, one rank per node: latency of the '
                'smallest message (osu_latency) and bandwidth of the largest (osu_bw)',
                figures=('latency', 'bandwidth'), pairs=True),
)}
DEFAULT_CHECKS = ('inventory', 'stream', 'hpl')

_BY_CLASS = {cls: c.name for c in SCREEN_CHECKS.values()
             for cls in ((c.cls,) if isinstance(c.cls, str) else c.cls)}
_NID = re.compile(r'%\.nid=(\S+)')
_PAIR = re.compile(r'%\.?node_pair=(\S+)')


def check_names(text):
    """The screening checks of ``--checks a,b``; an unknown name is an error
    listing the known ones."""
    names = [n.strip() for n in (text or '').split(',') if n.strip()]
    unknown = [n for n in names if n not in SCREEN_CHECKS]
    if unknown or not names:
        raise ClusterproofError(f'--checks {text!r}: unknown check(s) '
                                f'{", ".join(unknown) or "(none)"}; '
                                f'known: {", ".join(SCREEN_CHECKS)}')
    return names


def node_of(tc):
    """The node a distributed test case was pinned to, or None."""
    nodes = tc.get('job_nodelist') or []
    if isinstance(nodes, list) and len(nodes) == 1:
        return nodes[0]
    m = _NID.search(tc.get('display_name') or '')
    return m.group(1) if m else None


def pair_of(tc):
    """The two nodes of a test case run on a node pair (``-P
    node_pair=a+b``: the case's ``node_pair``, or its display name), else
    the two of its ``job_nodelist``; None otherwise."""
    text = tc.get('node_pair')
    if not text:
        m = _PAIR.search(tc.get('display_name') or '')
        text = m.group(1) if m else None
    if text:
        return pairs.parse_pair(text)
    nodes = tc.get('job_nodelist') or []
    if isinstance(nodes, list) and len(nodes) == 2:
        return tuple(nodes)
    return None


def param_of(tc, name):
    """The value of a test parameter of a case (a field of its own in the
    run report, else ``%name=value`` in its display name), or None."""
    if tc.get(name) is not None:
        return str(tc[name])
    m = re.search(rf'%{re.escape(name)}=(\S+)', tc.get('display_name') or '')
    return m.group(1) if m else None


def check_of(tc):
    """The screening check name of a test case (None: not a screening check)."""
    if tc.get('fixture'):
        return None
    return _BY_CLASS.get((tc.get('name') or '').split(' ')[0])


def samples_from_report(run_report, refs=None, base=None, node=None):
    """``(samples, nodes)``: the :class:`Sample` s of a parsed run report and
    ``{node: partition}`` of every node a case ran or was meant to run on.
    ``refs``: parsed references of the system (``references.judge``);
    ``base``: the directory a relative ``outputdir`` is under (ReFrame
    writes absolute ones); ``node``: the node every case of a node check
    ran on (the report of one node's job, ``screen.jobs``), whatever
    host name ReFrame recorded."""
    only = node
    latest = {}
    nodes = {}
    for tc in runner.testcases(run_report):
        check = check_of(tc)
        if check is None:
            continue
        pair = pair_of(tc) if SCREEN_CHECKS[check].pairs else ()
        node = pairs.pair_label(pair) if pair else (only or node_of(tc))
        if node is None or (SCREEN_CHECKS[check].pairs and not pair):
            continue
        part = tc.get('partition') or ''
        for n in pair or (node,):
            nodes[n] = part
        for s in _case_samples(tc, check, node, part, refs, base):
            s = replace(s, pair=pair) if pair else s
            latest[(s.partition, s.node, s.check, s.figure, s.component)] = s
    return list(latest.values()), nodes


def _case_samples(tc, check, node, part, refs, base):
    if tc.get('result') in ('skip', 'skipped'):
        return []
    failed = tc.get('result') not in ('pass', 'success')
    reason = (tc.get('fail_reason') or tc.get('result') or 'failed').splitlines()[0][:300] \
        if failed else ''
    if check == 'inventory':
        if failed:
            return [Sample(node, part, check, 'hardware', None, '', reason)]
        return _inventory_samples(tc, node, part, base)
    sc = SCREEN_CHECKS[check]
    named = param_of(tc, sc.figure_param) if sc.figure_param else None
    if failed:
        return [Sample(node, part, check, f'{named} result' if named else 'result', None, '',
                       reason)]
    out = []
    for key, pv in (tc.get('perfvalues') or {}).items():
        figure, _, component = key.rsplit(':', 1)[-1].partition('@')
        if sc.figures is not None and figure not in sc.figures:
            continue
        ref = _reference(refs, tc, figure)
        declared = direction.declared_direction(tc.get('cp_lower_is_better'), figure)
        if named:
            figure = f'{named} {figure}'
        value, unit = pv[0], pv[4] if len(pv) > 4 else ''
        out.append(Sample(node, part, check, figure, value, unit or '',
                          reference=ref, declared_lower_is_better=declared,
                          component=component_name(component)))
    return out


def component_name(text):
    """``numa 1`` of ``numa1``, ``gpu 3`` of ``gpu3``: a component as the
    page and the reasons name it; other text as it is."""
    m = re.fullmatch(r'([A-Za-z_]+?)_?(\d+)', text)
    return f'{m.group(1)} {m.group(2)}' if m else text


def _inventory_samples(tc, node, part, base):
    path = Path(base or '.') / (tc.get('outputdir') or tc.get('stagedir') or '.') / \
        (tc.get('job_stdout') or '')
    try:
        reports = inv.parse_reports(path.read_text(), source=str(path))
    except (OSError, ValueError) as err:
        return [Sample(node, part, 'inventory', 'hardware', None, '',
                       f'cannot read the node report {path}: {err}')]
    mine = [r for r in reports if r.get('node') == node] or reports
    hw = mine[0].get('hardware') if mine else None
    if not isinstance(hw, dict):
        return [Sample(node, part, 'inventory', 'hardware', None, '',
                       f'{path}: no hardware report'
                       + (f': {mine[0].get("error")}' if mine else ''))]
    return [Sample(node, part, 'inventory', fig, float(hw[fig]), INVENTORY_UNITS.get(fig, 'count'))
            for fig in INVENTORY_FIGURES if isinstance(hw.get(fig), (int, float))]


class _Case:
    """What ``references.lookup.lookup`` asks of a result: the test case's
    check, system, partition, environment, parameters and figure."""

    def __init__(self, tc, figure):
        self.check = (tc.get('name') or '').split(' ')[0]
        self.system = tc.get('system')
        self.partition = tc.get('partition')
        self.environ = tc.get('environ')
        self.figure = figure
        self.params = {k: str(v) for k, v in (tc.get('check_params') or {}).items()
                       if not k.startswith('.')}
        self.case = {k: v for k, v in tc.items() if isinstance(v, (int, float, str))}
        self.test = tc.get('display_name')


def _reference(refs, tc, figure):
    if not refs:
        return None
    try:
        return lookup.lookup(refs, _Case(tc, figure))
    except ClusterproofError:
        return None
