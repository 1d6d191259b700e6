"""Finding references as ReFrame does.

The parsed references of a system, the entry of a measured figure under its
check and ``$index`` levels
(:func:`lookup`, :func:`locate`), and every reference a system declares for
its partitions (:func:`declared`, what ``acceptance`` walks)."""

import re
from pathlib import Path
from typing import NamedTuple

from clusterproof import ClusterproofError
from clusterproof.references.entries import Reference, entry_reference, load, reference_file

def load_references(system, path=None, emulated=False):
    """The parsed reference file of ``system`` (``{}`` when there is none);
    with ``emulated``, the file blessed from emulated runs."""
    path = Path(path) if path else reference_file(system, emulated=emulated)
    if not path.is_file():
        return {}
    return load(path)


def references_for(refs_by_system, system, emulated=False):
    """The parsed references of ``system``, or with ``emulated`` those blessed
    from its emulated runs (the only ones an emulated result is judged
    against). ``refs_by_system`` caches them (keys ``system`` and
    ``system.emulated``)."""
    key = f'{system}.emulated' if emulated else system
    if key not in refs_by_system:
        refs_by_system[key] = load_references(system, emulated=emulated)
    return refs_by_system[key]


def index_value(attr, rec):
    """The value of index attribute ``attr`` for the test case of ``rec``."""
    if attr == '$system':
        return rec.system
    if attr == '$partition':
        return f'{rec.system}:{rec.partition}'
    if attr == '$environ':
        return rec.environ
    if attr.startswith('$'):
        raise ClusterproofError(
            f'reference index {attr!r} of {rec.check} is not recorded with the results; '
            f'index by $system, $partition, $environ or test attributes')
    if attr in rec.case:
        return rec.case[attr]
    params = rec.params
    if attr in params:
        return _scalar(params[attr])
    raise ClusterproofError(f'reference index {attr!r} of {rec.check}: the test case '
                            f'{rec.test!r} has no such attribute')


def _scalar(value):
    for conv in (int, float):
        try:
            return conv(value)
        except ValueError:
            pass
    return value


def index_of(entry):
    """The ``$index`` of a check's entry (its list of test attributes), or
    None for an entry without one (or no entry)."""
    if not isinstance(entry, dict) or not entry.get('$index'):
        return None
    return list(entry['$index'])


def default_index(rec):
    """``[$partition, <parameters of the test>]``: what a check declares when
    its references depend on the partition and on its parameters."""
    return ['$partition'] + sorted(rec.params)


def _resolve(refs, rec):
    """``(keys, node)``: the keys taken through ``rec.check``'s entry and the
    mapping of figures reached for ``rec``'s test case, resolved as ReFrame
    does (index levels, an exact key first, then a key that is a regular
    expression; without ``$index``, keys ``system:partition``, ``system`` or
    ``*``); None when no entry applies."""
    entry = refs.get(rec.check)
    if not isinstance(entry, dict):
        return None
    index = index_of(entry)
    keys = []
    if index:
        node = entry
        for attr in index:
            if not isinstance(node, dict):
                return None
            key = _match_key(node, index_value(attr, rec))
            if key is None:
                return None
            keys.append(key)
            node = node[key]
    else:
        key = next((key for key in (f'{rec.system}:{rec.partition}', rec.system, '*')
                    if key in entry), None)
        if key is None:
            return None
        keys.append(key)
        node = entry[key]
    return (tuple(keys), node) if isinstance(node, dict) else None


def _match_key(node, val):
    if val in node:
        return val
    if isinstance(val, str):
        return next((key for key in node if isinstance(key, str) and not key.startswith('$')
                     and re.fullmatch(key, val)), None)
    return None


def lookup(refs, rec):
    """The :class:`Reference` of ``rec``'s figure in parsed reference data,
    resolved as ReFrame does (see :func:`locate`); None when absent."""
    found = _resolve(refs, rec)
    if found is None or rec.figure not in found[1]:
        return None
    return entry_reference(found[1][rec.figure])


def found_reference(refs_by_system, rec):
    """``(reference, emulated)``: the :class:`Reference` of ``rec``'s figure
    (None: none) and whether it was blessed from emulated runs. An emulated
    figure's comes from its system's emulated file when that has one, else
    from the system's own file (shown, never judged against); any other
    figure's from its system's file (:func:`references_for`)."""
    return _first_found(rec, _files(refs_by_system, rec))


def _first_found(rec, files):
    for refs, emulated in files:
        found = lookup(refs, rec)
        if found is not None:
            return found, emulated
    return None, False


def _files(refs_by_system, rec):
    """The parsed files ``rec``'s figure is looked up in, in order, each
    with whether it was blessed from emulated runs (read only when reached)."""
    if rec.emulated:
        yield references_for(refs_by_system, rec.system, emulated=True), True
    yield references_for(refs_by_system, rec.system), False


def locate(refs, rec):
    """``(check, keys)``: which entry of ``refs`` the test case of ``rec``
    resolves to (the same identity :func:`declared` gives), or None."""
    found = _resolve(refs, rec)
    return None if found is None else (rec.check, found[0])


class Declared(NamedTuple):
    """A reference a system declares: check class, the index attributes
    and the keys taken at each level, the figure, its :class:`Reference`."""
    check: str
    index: tuple
    keys: tuple
    figure: str
    reference: Reference

    @property
    def where(self):
        """``(check, keys)``, as :func:`locate` names a test case's entry."""
        return (self.check, self.keys)

    def label(self):
        """``IorSharedFile threads=16 @pixstor:clients write_bw``."""
        parts, at = [], ''
        for attr, key in zip(self.index, self.keys):
            if attr in ('$partition', '$system', None):
                at = f' @{key}'
            else:
                parts.append(f'{attr.lstrip("$")}={key}')
        return ' '.join([self.check] + parts) + at + f' {self.figure}'


def declared(refs, system, partitions):
    """Every reference of parsed ``refs`` that applies to ``system`` with
    its ``partitions`` (names): what an acceptance must measure. A
    ``$partition`` level applies with keys ``system:partition`` (or a
    regular expression matching one), a ``$system`` level with ``system``;
    any other attribute with every key. Without ``$index``: the key ReFrame
    takes for each partition (``system:partition``, else ``system``, else
    ``*``)."""
    full = [f'{system}:{p}' for p in partitions]
    out = []
    for check, entry in refs.items():
        if not isinstance(entry, dict):
            continue
        index = index_of(entry)
        body = {k: v for k, v in entry.items() if k != '$index'}
        if index:
            levels = [(attr, _applying(body, attr, system, full)) for attr in index]
            out += _declared_walk(check, tuple(index), body, levels, ())
        else:
            used = []
            for name in full:
                key = next((k for k in (name, system, '*') if k in body), None)
                if key is not None and key not in used:
                    used.append(key)
            for key in used:
                out += _declared_walk(check, (None,), {key: body[key]},
                                      [(None, lambda node: [key])], ())
    return out


def _applying(body, attr, system, full):
    """The keys of a level of ``attr`` that apply to the system (a function of
    the node, since each node has its own keys)."""
    if attr == '$partition':
        names = full
    elif attr == '$system':
        names = [system]
    else:
        return lambda node: [k for k in node if not (isinstance(k, str) and k.startswith('$'))]
    return lambda node: [k for k in node
                         if any(_match_key(node, n) == k for n in names)]


def _declared_walk(check, index, node, levels, keys):
    if not levels:
        out = []
        for figure, entry in node.items():
            ref = entry_reference(entry)
            if ref is not None:
                out.append(Declared(check, index, keys, figure, ref))
        return out
    out = []
    for key in levels[0][1](node):
        child = node.get(key)
        if isinstance(child, dict):
            out += _declared_walk(check, index, child, levels[1:], keys + (key,))
    return out
