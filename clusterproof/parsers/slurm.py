"""Slurm's view of a cluster, read from what Slurm prints: pure functions
over the text of ``scontrol show node|partition`` (every version, one-line
``-o`` or multi-line), the JSON of ``sinfo --json`` and ``scontrol show
node|partition --json`` of every generation (21.08 to 24.x and slurmrestd's
answers, which share their schema), ``Gres`` strings, node states and the
``NodeName``/``PartitionName`` lines of ``slurm.conf``.

The JSON generations:

- 21.08 to 22.05 (``openapi/v0.0.37``, ``v0.0.38``): a top-level ``nodes``
  list, one record per node; ``state`` a lower-case word and the flags in
  ``state_flags``; ``features`` a comma-separated string.
- 23.02 and later (``data_parser/v0.0.39`` ...): ``scontrol show node
  --json`` keeps the ``nodes`` list (``state`` a list of upper-case words,
  ``features`` a list); ``sinfo --json`` prints a top-level ``sinfo`` list
  of records, each for one partition and a set of nodes alike (``nodes``
  {``nodes``: names}, ``cpus``/``sockets``/``cores``/``threads``/``memory``
  {``minimum``, ``maximum``}, ``gres`` {``total``}, ``features``
  {``total``}, ``node`` {``state``}, ``partition`` {``name``, ...}).
- Numbers may be ``{"set": true, "infinite": false, "number": N}`` objects
  (:func:`~clusterproof.parsers.slurm_values.number`).

The values inside those forms (numbers, ``Gres`` strings, node states) are
read by :mod:`clusterproof.parsers.slurm_values`; their readers import them
from there.

A form that cannot be read raises :class:`SlurmFormatError` naming what is
missing, so a caller can fall back to another command and say why.
"""

import json
import re
from dataclasses import dataclass

from clusterproof import ClusterproofError
from clusterproof.hostlist import expand
from clusterproof.parsers.slurm_values import (SlurmFormatError, _required, _words, gpus, number,
                                               parse_gres, parse_state)


# ------------------------------------------------------------------- nodes

@dataclass(frozen=True)
class SlurmNode:
    """One node as Slurm has it configured. ``cpus`` is CPUTot, what Slurm
    may schedule; ``sockets``, ``cores_per_socket`` and ``threads_per_core``
    are Slurm's declared topology (their product can exceed ``cpus``)."""
    name: str
    partitions: tuple
    cpus: int
    sockets: int
    cores_per_socket: int
    threads_per_core: int
    real_memory_mib: int
    state: str = ''                 # upper case, base state first: ``IDLE+DRAIN``
    gres: tuple = ()
    features: tuple = ()
    reason: str = ''

    def shape(self):
        """What makes two nodes the same kind of node for Slurm: the CPU
        topology, CPUs, memory, and the GPUs (type and count)."""
        return (self.cpus, self.sockets, self.cores_per_socket, self.threads_per_core,
                self.real_memory_mib, tuple(sorted(gpus(self.gres), key=str)))

    @property
    def state_words(self):
        return parse_state(self.state)


_KEY = re.compile(r'(?:^|\s)([A-Za-z][A-Za-z0-9_:/]*)=')


def parse_scontrol_record(text):
    """``{key: value}`` of one ``scontrol show`` record (one line with ``-o``,
    or the indented multi-line form). Values may contain spaces
    (``OS=Linux 6.1 #1 SMP``): a value runs up to the next `` Key=``."""
    flat = ' '.join(text.split('\n'))
    keys = list(_KEY.finditer(flat))
    rec = {}
    for i, m in enumerate(keys):
        end = keys[i + 1].start() if i + 1 < len(keys) else len(flat)
        rec[m.group(1)] = flat[m.end():end].strip()
    return rec


def parse_scontrol(text, kind, source='scontrol'):
    """The records of ``scontrol show node|partition`` output; ``kind`` is
    ``NodeName`` or ``PartitionName``, the key that starts each record."""
    records, current = [], []
    for line in text.splitlines():
        if line.lstrip().startswith(f'{kind}='):
            if current:
                records.append(parse_scontrol_record('\n'.join(current)))
            current = [line.strip()]
        elif line.strip() and current:
            current.append(line)
        elif line.strip():
            raise SlurmFormatError(f'{source}: line before the first {kind}=: {line[:80]!r}')
    if current:
        records.append(parse_scontrol_record('\n'.join(current)))
    return records


def _tres_gres(tres):
    """``gres/gpu=4`` items of a CfgTRES value as a Gres string."""
    items = []
    for item in _words(tres):
        m = re.fullmatch(r'gres/([^=]+)=(\d+)', item)
        if m:
            name, _, gtype = m.group(1).partition(':')
            if not gtype:
                items.append(f'{name}:{m.group(2)}')
    return ','.join(items)


#: SlurmNode's counts and the keys that give them in scontrol's text ...
SCONTROL_COUNTS = {'cpus': 'CPUTot', 'sockets': 'Sockets', 'cores_per_socket': 'CoresPerSocket',
                   'threads_per_core': 'ThreadsPerCore', 'real_memory_mib': 'RealMemory'}
#: ... and in a record of a JSON ``nodes`` list
JSON_COUNTS = {'cpus': 'cpus', 'sockets': 'sockets', 'cores_per_socket': 'cores',
               'threads_per_core': 'threads', 'real_memory_mib': 'real_memory'}


def _counts(record, keys, where):
    return {name: _required(record.get(key), f'{where}: {key}') for name, key in keys.items()}


def nodes_from_scontrol(text, source='scontrol -o show node', skipped=None):
    """:class:`SlurmNode` list from ``scontrol show node`` text of any
    version (17.11's ``Features``, later ``AvailableFeatures``; ``CPUTot``;
    ``State=IDLE+DRAIN``, ``DOWN*``; ``Gres``, else the GRES in ``CfgTRES``).
    A record that cannot be read is an error naming node and key, or, where
    ``skipped`` is a list, appended to it as that message and left out."""
    nodes = []
    for rec in parse_scontrol(text, 'NodeName', source):
        where = f'{source}: node {rec.get("NodeName")}'
        try:
            gres_text = rec.get('Gres')
            if gres_text is None or gres_text == '(null)':
                gres_text = _tres_gres(rec.get('CfgTRES', '')) or gres_text
            nodes.append(SlurmNode(
                name=rec['NodeName'], partitions=tuple(_words(rec.get('Partitions'))),
                **_counts(rec, SCONTROL_COUNTS, where),
                state='+'.join(parse_state(rec.get('State', ''))),
                gres=tuple(parse_gres(gres_text, f'{where}: Gres')),
                features=tuple(_words(rec.get('AvailableFeatures', rec.get('Features')))),
                reason=rec.get('Reason', '')))
        except (KeyError, SlurmFormatError) as err:
            msg = f'{where}: no {err.args[0]}' if isinstance(err, KeyError) else str(err)
            if skipped is None:
                raise SlurmFormatError(msg) from None
            skipped.append(msg)
    return nodes


def _node_from_json(row, where):
    """One record of a ``nodes`` list (every JSON generation)."""
    state = '+'.join(parse_state(row.get('state'), row.get('state_flags')))
    return SlurmNode(
        name=row['name'], partitions=tuple(_words(row.get('partitions'))),
        **_counts(row, JSON_COUNTS, where), state=state,
        gres=tuple(parse_gres(row.get('gres'), f'{where}: gres')),
        features=tuple(_words(row.get('features'))),
        reason=str((row.get('reason') or {}).get('description', '')
                   if isinstance(row.get('reason'), dict) else row.get('reason') or ''))


def _one(record, key, where):
    """The one value of a ``{minimum, maximum}`` range of a sinfo record."""
    val = record.get(key)
    if not isinstance(val, dict):
        raise SlurmFormatError(f'{where}: no "{key}" {{minimum, maximum}}')
    low, high = number(val.get('minimum'), f'{where}: {key}'), number(val.get('maximum'),
                                                                        f'{where}: {key}')
    if low is None or low != high:
        raise SlurmFormatError(f'{where}: {key} ranges from {low} to {high}: the record '
                               'does not say which node has which')
    return low


def _nodes_from_sinfo_records(rows, source):
    """Nodes of 23.02+ ``sinfo --json`` records, merged over partitions."""
    found = {}
    for i, rec in enumerate(rows):
        where = f'{source}: sinfo[{i}]'
        if not isinstance(rec, dict) or not isinstance(rec.get('nodes'), dict):
            raise SlurmFormatError(f'{where}: no "nodes" object with the node names')
        names = rec['nodes'].get('nodes')
        if isinstance(names, str):
            names = list(_expand_nodes(names, where))
        if not isinstance(names, list) or not names:
            raise SlurmFormatError(f'{where}: "nodes"."nodes" lists no node names')
        part = rec.get('partition') or {}
        pname = part.get('name') if isinstance(part, dict) else part
        where = f'{where} ({",".join(names[:3])}{"..." if len(names) > 3 else ""})'
        gres = rec.get('gres') or {}
        feats = rec.get('features') or {}
        node_state = (rec.get('node') or {}).get('state')
        reason = rec.get('reason')
        per = dict(
            cpus=_one(rec, 'cpus', where),
            sockets=_one(rec, 'sockets', where), cores_per_socket=_one(rec, 'cores', where),
            threads_per_core=_one(rec, 'threads', where),
            real_memory_mib=_one(rec, 'memory', where),
            state='+'.join(parse_state(node_state)),
            gres=tuple(parse_gres(gres.get('total') if isinstance(gres, dict) else gres,
                                  f'{where}: gres')),
            features=tuple(_words(feats.get('total') if isinstance(feats, dict) else feats)),
            reason=(reason.get('description', '') if isinstance(reason, dict) else reason or ''))
        for name in names:
            if name in found:
                node = found[name]
                if pname and pname not in node.partitions:
                    node = SlurmNode(**{**node.__dict__, 'partitions': node.partitions + (pname,)})
                found[name] = node
            else:
                found[name] = SlurmNode(name=name, partitions=(pname,) if pname else (), **per)
    return list(found.values())


def nodes_from_json(text, source='sinfo --json'):
    """:class:`SlurmNode` list from Slurm's JSON: a ``nodes`` list (21.08+
    ``sinfo --json``, ``scontrol show node --json``, slurmrestd) or a
    ``sinfo`` list of records (23.02+ ``sinfo --json``)."""
    try:
        data = json.loads(text)
    except ValueError as err:
        raise SlurmFormatError(f'{source}: not JSON ({err})') from None
    if not isinstance(data, dict):
        raise SlurmFormatError(f'{source}: the JSON is not an object')
    if data.get('errors'):
        errs = data['errors']
        first = errs[0] if isinstance(errs, list) else errs
        desc = first.get('description') or first.get('error') if isinstance(first, dict) else first
        raise SlurmFormatError(f'{source}: Slurm reports an error: {desc}')
    if isinstance(data.get('nodes'), list):
        return [_node_from_json(row, f'{source}: node {row.get("name")}')
                if isinstance(row, dict) and 'name' in row else _bad_row(source, row)
                for row in data['nodes']]
    if isinstance(data.get('sinfo'), list):
        return _nodes_from_sinfo_records(data['sinfo'], source)
    raise SlurmFormatError(f'{source}: neither a "nodes" nor a "sinfo" list in the JSON '
                           f'(keys: {", ".join(sorted(data)) or "none"})')


def _bad_row(source, row):
    raise SlurmFormatError(f'{source}: a node record without a name: {str(row)[:80]!r}')


# -------------------------------------------------------------- partitions

@dataclass(frozen=True)
class SlurmPartition:
    """One partition as Slurm defines it."""
    name: str
    nodes: tuple = ()               # node names, in the order Slurm lists them
    state: str = 'UP'
    max_nodes: object = None        # None: unlimited
    max_time: object = None         # Slurm's text (``1-00:00:00``, ``UNLIMITED``)
    hidden: bool = False
    default: bool = False


def _expand_nodes(expr, where):
    expr = (expr or '').strip()
    if expr in ('', '(null)'):
        return ()
    try:
        return tuple(expand(expr))
    except ClusterproofError as err:
        raise SlurmFormatError(f'{where}: Nodes={expr!r}: {err}') from None


@dataclass(frozen=True)
class SlurmSwitch:
    """A switch of Slurm's tree topology: the nodes it names and the
    switches below it (a leaf names nodes and no switch)."""
    name: str
    nodes: tuple = ()
    switches: tuple = ()

    @property
    def leaf(self):
        return bool(self.nodes) and not self.switches


def parse_topology(text, source='topology.conf'):
    """``[SlurmSwitch]`` of ``topology.conf`` lines or ``scontrol show
    topology`` output (``SwitchName=s1 [Level=0 LinkSpeed=1] Nodes=n[1-32]``,
    ``SwitchName=top Switches=s[1-32]``: scontrol also names the nodes under
    a switch above others); comments and blank lines skipped."""
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split('#', 1)[0].strip()
        if not line:
            continue
        rec = parse_scontrol_record(line)
        where = f'{source}: line {number}'
        name = rec.get('SwitchName')
        if not name:
            raise SlurmFormatError(f'{where}: no SwitchName= ({line[:60]!r})')
        switches = _expand_nodes(rec.get('Switches'), f'{where}: switch {name}')
        out.append(SlurmSwitch(name, _expand_nodes(rec.get('Nodes'), f'{where}: switch {name}'),
                               switches))
    return out


def partitions_from_scontrol(text, source='scontrol -o show partition'):
    """``{name: SlurmPartition}`` from ``scontrol show partition`` text."""
    out = {}
    for rec in parse_scontrol(text, 'PartitionName', source):
        name = rec['PartitionName']
        where = f'{source}: partition {name}'
        max_nodes = rec.get('MaxNodes', 'UNLIMITED')
        out[name] = SlurmPartition(
            name=name, nodes=_expand_nodes(rec.get('Nodes'), where),
            state=(rec.get('State') or 'UP').upper(),
            max_nodes=number(max_nodes, f'{where}: MaxNodes'),
            max_time=rec.get('MaxTime') or None,
            hidden=rec.get('Hidden', 'NO').upper() == 'YES',
            default=rec.get('Default', 'NO').upper() == 'YES')
    return out


def _minutes_text(minutes):
    if minutes is None:
        return 'UNLIMITED'
    days, rest = divmod(minutes, 24 * 60)
    text = f'{rest // 60:02d}:{rest % 60:02d}:00'
    return f'{days}-{text}' if days else text


def partitions_from_json(text, source='scontrol show partition --json'):
    """``{name: SlurmPartition}`` from a ``partitions`` list (``scontrol
    show partition --json``, slurmrestd), or from the partition objects of
    23.02+ ``sinfo --json`` records."""
    try:
        data = json.loads(text)
    except ValueError as err:
        raise SlurmFormatError(f'{source}: not JSON ({err})') from None
    rows = data.get('partitions') if isinstance(data, dict) else None
    if rows is None and isinstance(data, dict) and isinstance(data.get('sinfo'), list):
        rows = [r.get('partition') for r in data['sinfo'] if isinstance(r, dict)]
    if not isinstance(rows, list):
        raise SlurmFormatError(f'{source}: no "partitions" list in the JSON')
    out = {}
    for row in rows:
        if not isinstance(row, dict) or 'name' not in row or row['name'] in out:
            continue
        where = f'{source}: partition {row["name"]}'
        nodes = row.get('nodes')
        configured = nodes.get('configured') if isinstance(nodes, dict) else nodes
        maxima = row.get('maximums') or {}
        state = (row.get('partition') or {}).get('state') if isinstance(row.get('partition'),
                                                                        dict) else None
        state = '+'.join(_words(state)).upper() or 'UP'
        flags = [str(f).upper() for f in _words(row.get('flags'))]
        max_time = maxima.get('time')
        out[row['name']] = SlurmPartition(
            name=row['name'], nodes=_expand_nodes(configured, where), state=state,
            max_nodes=number(maxima.get('nodes'), f'{where}: maximums.nodes'),
            max_time=(_minutes_text(number(max_time, f'{where}: maximums.time'))
                      if max_time is not None else None),
            hidden='HIDDEN' in flags, default='DEFAULT' in flags)
    return out


def membership(nodes, partitions):
    """Nodes with their partitions completed from the partitions' node
    lists (a node record may omit a hidden partition)."""
    extra = {}
    for part in partitions.values():
        for name in part.nodes:
            extra.setdefault(name, []).append(part.name)
    out = []
    for node in nodes:
        parts = list(node.partitions)
        for p in extra.get(node.name, ()):
            if p not in parts:
                parts.append(p)
        out.append(node if tuple(parts) == node.partitions
                   else SlurmNode(**{**node.__dict__, 'partitions': tuple(parts)}))
    return out


# -------------------------------------------------------------- slurm.conf

def parse_slurm_conf(text, source='slurm.conf'):
    """``(nodes, partitions)`` of the ``NodeName=`` and ``PartitionName=``
    lines of a ``slurm.conf``: ``nodes`` a list of ``{key: value}`` (one per
    node name, ``NodeName=DEFAULT`` values applied; ``CPUs``, ``Sockets``,
    ``CoresPerSocket``, ``ThreadsPerCore``, ``RealMemory``, ``Gres``,
    ``Feature``...), ``partitions`` ``{name: {key: value}}`` with
    ``PartitionName=DEFAULT`` applied. Keys are matched without regard to
    case, as Slurm does, and kept as written in Slurm's documentation."""
    canon = {k.lower(): k for k in (
        'NodeName', 'NodeHostname', 'NodeAddr', 'CPUs', 'Boards', 'SocketsPerBoard', 'Sockets',
        'CoresPerSocket', 'ThreadsPerCore', 'RealMemory', 'Gres', 'Feature', 'Features',
        'State', 'Weight', 'TmpDisk', 'PartitionName', 'Nodes', 'MaxNodes', 'MaxTime',
        'Default', 'Hidden', 'State', 'DefaultTime', 'MinNodes')}
    node_default, part_default = {}, {}
    nodes, partitions = [], {}
    lines = []
    for raw in text.splitlines():
        line = raw.split('#', 1)[0].rstrip()
        if lines and lines[-1].endswith('\\'):
            lines[-1] = lines[-1][:-1] + ' ' + line.strip()
        elif line.strip():
            lines.append(line.strip())
    for num, line in enumerate(lines, 1):
        head = line.split('=', 1)[0].strip().lower()
        if head not in ('nodename', 'partitionname'):
            continue
        rec = {}
        for m in re.finditer(r'(\S+?)=("[^"]*"|\S+)', line):
            key = canon.get(m.group(1).lower(), m.group(1))
            rec[key] = m.group(2).strip('"')
        if canon[head] not in rec:
            raise SlurmFormatError(f'{source}: {line[:80]!r}: {canon[head]}= without a name')
        if head == 'nodename':
            if rec['NodeName'].upper() == 'DEFAULT':
                node_default.update({k: v for k, v in rec.items() if k != 'NodeName'})
                continue
            try:
                names = expand(rec['NodeName'])
            except ClusterproofError as err:
                raise SlurmFormatError(f'{source}: NodeName={rec["NodeName"]}: {err}') from None
            for name in names:
                nodes.append({**node_default, **rec, 'NodeName': name})
        else:
            if rec['PartitionName'].upper() == 'DEFAULT':
                part_default.update({k: v for k, v in rec.items() if k != 'PartitionName'})
                continue
            partitions[rec['PartitionName']] = {**part_default, **rec}
    return nodes, partitions


def _conf_int(rec, key, default, where):
    if key not in rec:
        return default
    return _required(rec[key], f'{where}: {key}')


def nodes_from_slurm_conf(text, source='slurm.conf'):
    """``(nodes, partitions)`` as :class:`SlurmNode` and
    :class:`SlurmPartition` from the lines of a ``slurm.conf``
    (:func:`parse_slurm_conf`), with Slurm's defaults: a node that gives
    only ``CPUs`` has that many sockets of one core and one thread;
    ``Sockets`` defaults to ``SocketsPerBoard`` x ``Boards``, cores and
    threads to 1, ``CPUs`` to their product, ``RealMemory`` to 1 MiB;
    ``Nodes=ALL`` is every node."""
    conf_nodes, conf_parts = parse_slurm_conf(text, source)
    names = [n['NodeName'] for n in conf_nodes]
    partitions = {}
    for name, rec in conf_parts.items():
        where = f'{source}: PartitionName={name}'
        nodes = tuple(names) if rec.get('Nodes', '').upper() == 'ALL' \
            else _expand_nodes(rec.get('Nodes'), where)
        partitions[name] = SlurmPartition(
            name=name, nodes=nodes, state=rec.get('State', 'UP').upper(),
            max_nodes=number(rec.get('MaxNodes', 'UNLIMITED'), f'{where}: MaxNodes'),
            max_time=rec.get('MaxTime', 'UNLIMITED'),
            hidden=rec.get('Hidden', 'NO').upper() == 'YES',
            default=rec.get('Default', 'NO').upper() == 'YES')
    members = {p.name: set(p.nodes) for p in partitions.values()}
    nodes = []
    for rec in conf_nodes:
        where = f'{source}: NodeName={rec["NodeName"]}'
        topo = [k for k in ('Boards', 'SocketsPerBoard', 'Sockets', 'CoresPerSocket',
                            'ThreadsPerCore') if k in rec]
        cpus = _conf_int(rec, 'CPUs', None, where)
        if cpus is not None and not topo:
            sockets, cores, threads = cpus, 1, 1
        else:
            boards = _conf_int(rec, 'Boards', 1, where)
            sockets = _conf_int(rec, 'Sockets', _conf_int(rec, 'SocketsPerBoard', 1, where)
                                * boards, where)
            cores = _conf_int(rec, 'CoresPerSocket', 1, where)
            threads = _conf_int(rec, 'ThreadsPerCore', 1, where)
            cpus = cpus if cpus is not None else sockets * cores * threads
        nodes.append(SlurmNode(
            name=rec['NodeName'],
            partitions=tuple(p for p, names in members.items() if rec['NodeName'] in names),
            cpus=cpus, sockets=sockets, cores_per_socket=cores, threads_per_core=threads,
            real_memory_mib=_conf_int(rec, 'RealMemory', 1, where),
            state='+'.join(parse_state(rec.get('State', 'UNKNOWN'))),
            gres=tuple(parse_gres(rec.get('Gres'), f'{where}: Gres')),
            features=tuple(_words(rec.get('Feature', rec.get('Features'))))))
    return nodes, partitions
