"""What changed at a change point: the provenance of the sessions before and
after it (the binary, the MPI library, the Spack lock, the nodes, their
number and their fingerprints, the mode of the run) and what the sessions
themselves set (the test case's variables and parameters, named first,
:mod:`.runsettings`), in one line per difference.

A change found by :mod:`clusterproof.analysis.detector` is listed with the
attribution of :func:`attribution`, computed from the provenance every point
of the figure's history carries (:class:`clusterproof.store.history.Point`).
"""

import os
from dataclasses import dataclass

from clusterproof.analysis import runsettings
from clusterproof.site import fingerprint

#: provenance keys of the run's own settings, read by :mod:`.runsettings`
RUN_SETTINGS = (runsettings.SETTINGS, runsettings.SETVARS)


def attribution(points, c):
    """What changed at the change point: provenance fields whose value in
    the sessions after it differs from every session before it (within the
    same segment), and for node lists the nodes common to the sessions after
    the change that no session before it used."""
    before = points[max(0, c.at - c.n_before):c.at]
    after = points[c.at:c.at + c.n_after]
    out = []
    keys = sorted({k for p in before + after for k in p.provenance})
    for k in keys:
        if k in RUN_SETTINGS:
            continue
        old = {p.provenance.get(k, '') for p in before}
        new = {p.provenance.get(k, '') for p in after}
        if k == 'cp_fingerprint':
            out += fingerprint.changes([p.provenance.get(k, '') for p in before],
                                       [p.provenance.get(k, '') for p in after])
            continue
        if k == 'cp_binary_sha256' and new and not (new & old):
            out.append(_binary_change(before, after, old, new))
            continue
        if k == 'cp_mpi_library' and new and not (new & old):
            out += _library_changes(old, new)
            continue
        if k == 'job_nodelist':
            common = _common_nodes(after) - _common_nodes(before)
            if common and old != new:
                out.append(f'nodes: {", ".join(sorted(common))} in every session after, '
                           f'not in every one before')
            out += _node_count(before, after)
            continue
        if new and not (new & old):
            out.append(f'{k}: {_short(old)} -> {_short(new)}')
    return runsettings.changes(before, after, provenance=set(keys)) + out


def cause_at(points, at, n_before=8):
    """What changed at ``points[at]`` (:func:`attribution`): the up to
    ``n_before`` points before it against it and every point after it; a
    regression against the reference that began at ``at`` takes it as its
    suspected cause."""
    return attribution(points, _At(at, min(at, n_before), len(points) - at))


@dataclass
class _At:
    at: int
    n_before: int
    n_after: int


def _node_count(before, after):
    """``node count: 1 -> 4`` when every session before ran on one number
    of nodes and every one after on another."""
    old = {len(_nodes(p)) for p in before}
    new = {len(_nodes(p)) for p in after}
    if len(old) == 1 and len(new) == 1 and old != new and 0 not in old | new:
        return [f'node count: {old.pop()} -> {new.pop()}']
    return []


def _binary_change(before, after, old, new):
    '''``stream_c.exe sha256 3fa1.. -> 9c0e.. (same path)``.'''
    paths = {p.provenance.get('binary_path', '') for p in before + after}
    name = os.path.basename(next(iter(paths))) if len(paths) == 1 else 'binary'
    same = ' (same path)' if len(paths) == 1 and paths != {''} else ''
    return f'{name or "binary"} sha256 {_short(old)} -> {_short(new)}{same}'


def _library_changes(old, new):
    """``MPI library /a/libmpi.so.40 sha256 3fa1.. -> /b/libmpi.so.40 sha256
    9c0e..``, or ``MPI library libmpi.so.40 sha256 3fa1.. -> 9c0e.. (same
    path)``; one line per group of nodes that changed alike, ``on n3`` when
    not every node did (the nodes disagree: ``n[1-2]=<path> <sha>;n3=...``)."""
    def by_node(values):
        out = {}
        for t in values:
            for node, v in fingerprint.per_node(t).items():
                out.setdefault(node, set()).add(v)
        return out
    o, n = by_node(old), by_node(new)
    nodes = (set(o) | set(n)) - {''} or {''}
    groups = {}
    for node in nodes:
        ov = o.get(node, set()) | o.get('', set())
        nv = n.get(node, set()) | n.get('', set())
        if nv and not (ov & nv):
            groups.setdefault((tuple(sorted(ov)), tuple(sorted(nv))), []).append(node)
    lines = []
    for (ov, nv), changed in sorted(groups.items()):
        where = '' if set(changed) == nodes or changed == [''] else \
            f' on {fingerprint.node_set(changed)}'
        po, _, so = ov[0].partition(' ') if len(ov) == 1 else ('', '', '')
        pn, _, sn = nv[0].partition(' ') if len(nv) == 1 else ('', '', '')
        if not (so and sn):
            lines.append(f'MPI library {_short(set(ov))} -> {_short(set(nv))}{where}')
        elif po == pn:
            lines.append(f'MPI library {os.path.basename(po)} sha256 {_short({so})} -> '
                         f'{_short({sn})} (same path){where}')
        else:
            lines.append(f'MPI library {po} sha256 {_short({so})} -> {pn} sha256 '
                         f'{_short({sn})}{where}')
    return lines


def _nodes(point):
    return set(filter(None, (point.provenance.get('job_nodelist') or '').split(',')))


def _common_nodes(points):
    sets = [_nodes(p) for p in points]
    return set.intersection(*sets) if sets else set()


def _short(values):
    vals = sorted(values)
    text = ', '.join((v[:12] + '...' if len(v) > 15 else v) or '(none)' for v in vals[:3])
    return text + (f' (+{len(vals) - 3})' if len(vals) > 3 else '')
