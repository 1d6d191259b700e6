"""Node pairs for the network checks of a screening (OSU between two nodes).

A figure between two nodes belongs to the pair, not to either node. To tell
which node of a bad pair is at fault, every node is measured in two pairs:
the nodes of the partition in a ring, each paired with the next
(:func:`ring_pairs`; n1+n2, n2+n3, ..., nN+n1). Each pair is judged against
the other pairs like a node against its peers (``screen.judge``); then
:func:`attribute` turns the pairs' verdicts into the nodes':

- a node in two bad pairs is the culprit, named alone (its partners are
  cleared by the other pair each is in);
- a bad pair neither of whose nodes is a culprit names both nodes (the
  measurement cannot tell which one it is);
- a node whose pairs are all good is ok.

A pair is written ``a+b`` (:func:`pair_label`), the form the screening
gives ReFrame (``-P node_pair=n1+n2,n2+n3``) and the output shows.
"""

from collections import defaultdict
from dataclasses import replace

from clusterproof import ClusterproofError
from clusterproof.references.judge import Verdict

SEP = '+'


def ring_pairs(nodes):
    """The pairs of ``nodes`` (in their order): each node with the next, the
    last with the first, so each node is in two pairs (three or more
    nodes); two nodes make one pair, fewer none."""
    nodes = list(nodes)
    if len(nodes) < 2:
        return []
    if len(nodes) == 2:
        return [tuple(nodes)]
    return [(nodes[i], nodes[(i + 1) % len(nodes)]) for i in range(len(nodes))]


def rounds(pairs):
    """``pairs`` in rounds of pairs that share no node (first fit, in
    order): a ring of an even number of nodes in two, an odd one in three.
    The pairs of one round run at once; rounds one after the other, so no
    pair job waits for a node another pair holds (ReFrame cancels a job that
    Slurm keeps pending for a requested node: ``ReqNodeNotAvail``)."""
    out = []
    for pair in pairs:
        for group, used in out:
            if not used & set(pair):
                group.append(pair)
                used.update(pair)
                break
        else:
            out.append(([pair], set(pair)))
    return [group for group, _ in out]


def pairs_of(pairs, nodes):
    """The pairs in ``pairs`` that hold one of ``nodes`` (for a repeat)."""
    wanted = set(nodes)
    return [p for p in pairs if wanted & set(p)]


def pair_label(pair):
    """``n1+n2``."""
    return SEP.join(pair)


def parse_pair(text):
    """``('n1', 'n2')`` of ``n1+n2``; anything else is an error naming it."""
    parts = (text or '').split(SEP)
    if len(parts) != 2 or not all(parts) or parts[0] == parts[1]:
        raise ClusterproofError(f'node pair {text!r}: write two different node names joined '
                                f'by {SEP!r}, e.g. n1{SEP}n2')
    return tuple(parts)


def attribute(pair_verdicts):
    """Per node, the ``FigureVerdict`` s of the pairs it is in, with the
    verdict of the node (rules in the module text); ``pair_verdicts``: the
    judged figures of pairs (their sample's ``pair`` holds the two nodes),
    of one or more (partition, check, figure). Returns ``{(partition,
    node): [FigureVerdict]}``."""
    bad = defaultdict(list)             # (partition, check, figure, node) -> bad pair verdicts
    for fv in pair_verdicts:
        if fv.verdict != Verdict.PASS:
            s = fv.sample
            for node in s.pair:
                bad[(s.partition, s.check, s.figure, node)].append(fv)
    culprits = {key for key, fvs in bad.items() if len(fvs) >= 2}
    out = defaultdict(list)
    for fv in pair_verdicts:
        s = fv.sample
        for node in s.pair:
            mine = (s.partition, s.check, s.figure, node)
            other = next(n for n in s.pair if n != node)
            theirs = (s.partition, s.check, s.figure, other)
            if fv.verdict == Verdict.PASS:
                out[(s.partition, node)].append(fv)
            elif mine in culprits:
                out[(s.partition, node)].append(replace(
                    fv, why=f'{fv.why}; {node} is in {len(bad[mine])} bad pairs '
                            f'({", ".join(pair_label(b.sample.pair) for b in bad[mine])})'))
            elif theirs in culprits:
                out[(s.partition, node)].append(replace(
                    fv, verdict=Verdict.PASS, why=f'{fv.why}; {other} is in {len(bad[theirs])} bad '
                                          f'pairs, {node} in one'))
            else:
                out[(s.partition, node)].append(replace(
                    fv, why=f'{fv.why}; either node of the pair (neither is in another bad '
                            'pair)'))
    return out
