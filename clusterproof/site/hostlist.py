"""Slurm hostlist expressions: ``n[1-16]``, ``node[01-04,7],gpu1``,
``rack[1-2]-n[001-010]``.

:func:`expand` turns an expression into the list of node names in order
(as ``scontrol show hostnames`` does); :func:`compress` turns a list of node
names back into a short expression (as ``scontrol show hostlist`` does,
keeping the given order). Pure Python: no Slurm needed.

Rules, as Slurm reads them:
- commas outside brackets separate items; inside brackets they separate ranges;
- ``lo-hi`` is a range; the zero padding is the width of ``lo`` when ``lo``
  starts with ``0`` (``[01-10]`` gives ``01 .. 10``, ``[001-010]`` gives
  ``001 .. 010``); without a leading zero numbers are not padded;
- several bracket groups in one item give every combination, left to right
  (``r[1-2]n[1-2]`` is ``r1n1,r1n2,r2n1,r2n2``).
"""

import re

from clusterproof import ClusterproofError

#: refuse expressions that would expand to more names than this (a typo such
#: as ``n[1-100000000]`` must not exhaust memory)
MAX_NAMES = 10_000_000

_NAME_OK = re.compile(r'^[A-Za-z0-9._-]+$')


def _split_top(expr):
    """Split on commas that are not inside brackets."""
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
    return items


def _expand_range(expr, body):
    """``01-04,7`` -> ['01', '02', '03', '04', '7']"""
    out = []
    for part in body.split(','):
        part = part.strip()
        m = re.fullmatch(r'(\d+)(?:-(\d+))?', part)
        if not m:
            raise ClusterproofError(
                f'hostlist {expr!r}: {part!r} in [{body}] is not a number or a range lo-hi')
        lo_s, hi_s = m.group(1), m.group(2)
        if hi_s is None:
            out.append(lo_s)
            continue
        lo, hi = int(lo_s), int(hi_s)
        if hi < lo:
            raise ClusterproofError(
                f'hostlist {expr!r}: range {part!r} runs backwards; write {hi_s}-{lo_s}')
        if hi - lo + 1 > MAX_NAMES:
            raise ClusterproofError(
                f'hostlist {expr!r}: range {part!r} has more than {MAX_NAMES} names')
        width = len(lo_s) if lo_s.startswith('0') and len(lo_s) > 1 else 0
        if width:
            out.extend(str(i).zfill(width) for i in range(lo, hi + 1))
        else:
            out.extend(str(i) for i in range(lo, hi + 1))
    return out


def _expand_item(expr, item):
    # item = text [range] text [range] ... text
    pieces = re.split(r'\[([^\]]*)\]', item)
    names = ['']
    for idx, piece in enumerate(pieces):
        if idx % 2 == 0:
            if piece and not _NAME_OK.match(piece):
                raise ClusterproofError(
                    f'hostlist {expr!r}: {piece!r} is not a node name '
                    f'(letters, digits, ".", "_", "-" only)')
            names = [n + piece for n in names]
        else:
            values = _expand_range(expr, piece)
            if len(names) * len(values) > MAX_NAMES:
                raise ClusterproofError(
                    f'hostlist {expr!r}: expands to more than {MAX_NAMES} names')
            names = [n + v for n in names for v in values]
    return names


def expand(expr):
    """The node names of a Slurm hostlist expression, in order.

    Duplicates are kept (Slurm keeps them too); empty items are ignored;
    an expression without any name is an error.
    """
    if not isinstance(expr, str):
        raise ClusterproofError(f'hostlist: expected a string, got {expr!r}')
    text = expr.strip()
    if any(ch.isspace() for ch in text):
        raise ClusterproofError(f'hostlist {expr!r}: white space inside the expression')
    names = []
    for item in _split_top(text):
        if not item:
            continue
        names.extend(_expand_item(expr, item))
        if len(names) > MAX_NAMES:
            raise ClusterproofError(f'hostlist {expr!r}: expands to more than {MAX_NAMES} names')
    if not names:
        raise ClusterproofError(f'hostlist {expr!r}: no node names in the expression')
    return names


_TAIL = re.compile(r'^(.*?)(\d+)$')


def compress(names):
    """A short hostlist expression for ``names``, keeping their order.

    Consecutive names sharing a prefix and a number width are merged into one
    bracket group (``n1,n2,n3,n7`` -> ``n[1-3,7]``); ``expand(compress(x)) == x``.
    """
    names = list(names)
    for n in names:
        if not isinstance(n, str) or not n or not _NAME_OK.match(n):
            raise ClusterproofError(f'hostlist: {n!r} is not a node name')
    groups = []   # [prefix, width, [ints]] or [name, None, None]
    for n in names:
        m = _TAIL.match(n)
        if not m:
            groups.append([n, None, None])
            continue
        prefix, digits = m.group(1), m.group(2)
        # width 0: unpadded number; otherwise the fixed width of a padded one
        width = len(digits) if digits.startswith('0') and len(digits) > 1 else 0
        num = int(digits)
        last = groups[-1] if groups else None
        if last is not None and last[1] is not None and last[0] == prefix:
            lw = last[1]
            ok = (lw == width) or (
                # an unpadded run of equal digit count mixes with padded ones of that width
                lw and width == 0 and len(digits) == lw) or (
                lw == 0 and width and all(len(str(v)) == width for v in last[2]))
            if ok:
                if lw == 0 and width:
                    last[1] = width
                last[2].append(num)
                continue
        groups.append([prefix, width, [num]])
    out = []
    for prefix, width, nums in groups:
        if width is None:
            out.append(prefix)
            continue
        if len(nums) == 1:
            out.append(prefix + (str(nums[0]).zfill(width) if width else str(nums[0])))
            continue
        fmt = (lambda v: str(v).zfill(width)) if width else str
        parts, start, prev = [], nums[0], nums[0]
        for v in nums[1:] + [None]:
            if v is not None and v == prev + 1:
                prev = v
                continue
            parts.append(fmt(start) if start == prev else f'{fmt(start)}-{fmt(prev)}')
            if v is not None:
                start = prev = v
        out.append(f'{prefix}[{",".join(parts)}]')
    return ','.join(out)
