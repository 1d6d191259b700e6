"""What a screening says of a node: a :class:`Sample` (one figure of one
node), the :class:`FigureVerdict` of a figure against its peers, the
:class:`NodeVerdict` of a node, and their order, worst first
(:func:`rank`). Plain data; the judgement is ``screen.judge``'s.
"""

from dataclasses import dataclass, field

from clusterproof.references import direction
from clusterproof.references.judge import Verdict
from clusterproof.screen.peerinventory import mismatch_text
from clusterproof.screen.stats import PeerStats

#: the verdicts of a node or a figure, worst first (the order of the ranking)
VERDICTS = (Verdict.FAILED, Verdict.MISSING, Verdict.SLOW, Verdict.PASS)
#: verdicts that name a node (exit status 1, a drain line)
OUTLIER = (Verdict.FAILED, Verdict.MISSING, Verdict.SLOW)


@dataclass(frozen=True)
class Sample:
    """One figure of one node. ``value`` None: the check failed on the node
    (``reason`` says why); ``reference``: a ``references.entries.Reference``
    of the system for this figure, or None; ``runs``: how many runs of the
    check on this node the value is the best of; ``pair``: the two nodes of
    a figure measured between them (``screen.pairs``), ``node`` then being
    the pair's label; ``component``: the part of the node the figure is of
    (``socket 1``, ``gpu 3``), judged among the same components of the
    peers; '' for the whole node."""
    node: str
    partition: str
    check: str
    figure: str
    value: float = None
    unit: str = ''
    reason: str = ''
    reference: object = None
    runs: int = 1               # runs this figure is the best of (:func:`best_of`)
    pair: tuple = ()            # a figure between two nodes: the two (``node`` is ``a+b``)
    #: the direction its check declared (``cp_lower_is_better``); None: none
    declared_lower_is_better: bool = None
    component: str = ''
    #: the value of every run, in order, where there are several (a suspect
    #: run again: :func:`best_of`); judged by :func:`judge_figure` on their mean
    run_values: tuple = ()

    @property
    def lower_is_better(self):
        return direction.record_lower_is_better(self)


@dataclass
class FigureVerdict:
    """One figure of one node against its peers."""
    sample: Sample
    verdict: Verdict
    peers: PeerStats = None
    noise_units: float = None       # signed, negative = worse than the peers
    percent: float = None           # signed, negative = worse than the peers
    why: str = ''
    group: PeerStats = None         # every node of the figure, the node included
    noise_pct: float = None         # one noise unit, in percent of the median
    smallest_pct: float = None      # the smallest slowdown that matters (percent)
    confirmed: tuple = None         # (runs near or past the line, runs) after a repeat
    history: str = ''               # slow in k of the last n screenings (``screen.memory``)
    own: object = None              # against its own earlier screenings (``screen.ownpast``)


@dataclass
class NodeVerdict:
    """A node: its verdict, the figure that decided it (the worst), every
    figure, and the inventory mismatches with its peers."""
    node: str
    partition: str
    verdict: Verdict
    worst: FigureVerdict = None
    figures: list = field(default_factory=list)
    mismatches: list = field(default_factory=list)
    note: str = ''

    @property
    def reason(self):
        """One line: why the node has its verdict."""
        parts = [self.note]
        if self.worst is not None and self.worst.verdict != Verdict.PASS and not (
                self.worst.sample.check == 'inventory'
                and self.worst.sample.figure in {m.field for m in self.mismatches}):
            parts.append(self.worst.why)
        parts += [mismatch_text(m) for m in self.mismatches]
        return '; '.join(p for p in parts if p)


def _figure_rank(fv):
    units = fv.noise_units if fv.noise_units is not None else 0.0
    pct = fv.percent if fv.percent is not None else 0.0
    return (VERDICTS.index(fv.verdict), pct, units)


def rank(verdicts):
    """Worst first: by verdict (:data:`VERDICTS`), then by the
    percent distance of the worst figure (most negative first), then name."""
    def key(nv):
        pct = nv.worst.percent if nv.worst is not None and nv.worst.percent is not None else 0.0
        return (VERDICTS.index(nv.verdict), pct, nv.partition, nv.node)
    return sorted(verdicts, key=key)


def outliers(verdicts):
    """The node verdicts that name a node (:data:`OUTLIER`)."""
    return [v for v in verdicts if v.verdict in OUTLIER]
