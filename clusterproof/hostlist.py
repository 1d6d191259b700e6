"""Slurm hostlist expressions (``n[1-16]``, ``node[01-04,7],gpu1``,
``rack[1-2]-n[001-010]``) through ClusterShell's ``NodeSet``.

ClusterShell is what the field uses for node sets (ReFrame itself reads
Slurm node lists with it), and it is installed with ReFrame; this module
only adds what clusterproof needs on top:

- :func:`expand` keeps the order of the comma-separated items, as
  ``scontrol show hostnames`` does (``NodeSet`` sorts; within one item its
  order is used), and refuses bad expressions with a
  :class:`ClusterproofError` that says what is wrong (unmatched or nested
  brackets, a backwards range, white space, shell characters, an expression
  that would expand to more than :data:`MAX_NAMES` names);
- :func:`count` says how many names an expression names, from its brackets,
  without expanding it: the one rule a node list is bounded by (a local
  cluster's ``--node-spec`` too);
- :func:`compress` folds a list of node names back into an expression that
  :func:`expand` turns into the same list, in the same order.
"""

import re

from ClusterShell.NodeSet import NodeSet, NodeSetParseError

from clusterproof import ClusterproofError

#: refuse expressions that would expand to more names than this, counted
#: before anything is expanded (a typo such as ``n[1-100000000]`` must not
#: exhaust memory); the largest machines have about 160,000 nodes
MAX_NAMES = 1_000_000

_NAME_OK = re.compile(r'^[A-Za-z0-9._-]+$')
_BRACKETS = re.compile(r'\[([^\[\]]*)\]')
_RANGE = re.compile(r'^(\d+)(?:-(\d+))?$')
_EXPR_OK = re.compile(r'^[A-Za-z0-9._,\[\]-]*$')


def _items(expr):
    """The comma-separated items outside brackets, in order; nested or
    unmatched brackets are refused."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(expr):
        if ch == '[':
            depth += 1
            if depth > 1:
                raise ClusterproofError(
                    f'hostlist {expr!r}: nested brackets at position {i} are not allowed')
        elif ch == ']':
            depth -= 1
            if depth < 0:
                raise ClusterproofError(f'hostlist {expr!r}: unmatched "]" at position {i}')
        elif ch == ',' and depth == 0:
            items.append(expr[start:i])
            start = i + 1
    if depth != 0:
        raise ClusterproofError(f'hostlist {expr!r}: unmatched "["')
    items.append(expr[start:])
    return [item for item in items if item]


def _count(item):
    """How many names ``item`` (one comma-separated item) names, from its
    brackets alone: the product of the sizes of their ranges. A part that
    is not a range counts as one name (``NodeSet`` says what is wrong)."""
    total = 1
    for inside in _BRACKETS.findall(item):
        size = 0
        for part in inside.split(','):
            m = _RANGE.match(part)
            size += max(int(m.group(2)) - int(m.group(1)) + 1, 1) if m and m.group(2) else 1
        total *= size
    return total


def _node_set(expr, item):
    try:
        nodes = NodeSet(item)
    except NodeSetParseError as err:
        text = str(err)
        if 'invalid values in range' in text:
            why = f'a range in {item!r} runs backwards; write it as lo-hi'
        elif 'convert string to integer' in text or 'bad range' in text:
            why = f'{item!r}: the brackets hold something that is not a number or a range lo-hi'
        else:
            why = text
        raise ClusterproofError(f'hostlist {expr!r}: {why}') from None
    except AssertionError:          # ClusterShell: "range too large"
        raise ClusterproofError(
            f'hostlist {expr!r}: {item!r} has more than {MAX_NAMES:,} names') from None
    return nodes


def _checked_items(expr):
    """The comma-separated items of ``expr`` once its characters and
    brackets are found sound."""
    if not isinstance(expr, str):
        raise ClusterproofError(f'hostlist: expected a string, got {expr!r}')
    text = expr.strip()
    if any(ch.isspace() for ch in text):
        raise ClusterproofError(f'hostlist {expr!r}: white space inside the expression')
    if not _EXPR_OK.match(text):
        bad = sorted({ch for ch in text if not _EXPR_OK.match(ch)})
        raise ClusterproofError(
            f'hostlist {expr!r}: {", ".join(map(repr, bad))} is not a node name character '
            f'(letters, digits, ".", "_", "-" only)')
    return _items(text)


def count(expr):
    """How many names ``expr`` names, counted from its brackets before
    anything is expanded (a repeated name counts each time): the one rule by
    which a node list's size is bounded before it is expanded."""
    return sum(map(_count, _checked_items(expr)))


def expand(expr, most=MAX_NAMES):
    """The node names of a Slurm hostlist expression, item by item in the
    order written; an expression without any name, or of more than ``most``
    names (:func:`count`), is an error."""
    items = _checked_items(expr)
    if sum(map(_count, items)) > most:
        raise ClusterproofError(f'hostlist {expr!r}: expands to more than {most:,} names; '
                                f'check the ranges in its brackets')
    names = []
    for item in items:
        names.extend(_node_set(expr, item))
    if not names:
        raise ClusterproofError(f'hostlist {expr!r}: no node names in the expression')
    return names


def _in_order(a, b):
    """True when ``NodeSet`` lists ``a`` before ``b`` (and they differ)."""
    return list(NodeSet.fromlist([a, b])) == [a, b]


def compress(names):
    """A short hostlist expression for ``names``, keeping their order:
    ``expand(compress(x)) == x``. Names already in ``NodeSet``'s order (as
    Slurm lists a job's nodes) fold into one set; otherwise each run in
    that order folds on its own (``n3,n1,n2`` gives ``n3,n[1-2]``)."""
    names = list(names)
    for n in names:
        if not isinstance(n, str) or not n or not _NAME_OK.match(n):
            raise ClusterproofError(f'hostlist: {n!r} is not a node name')
    if not names:
        return ''
    folded = NodeSet.fromlist(names)
    if len(folded) == len(names) and list(folded) == names:
        return str(folded)
    runs = [[names[0]]]
    for name in names[1:]:
        if _in_order(runs[-1][-1], name):
            runs[-1].append(name)
        else:
            runs.append([name])
    return ','.join(str(NodeSet.fromlist(run)) for run in runs)
