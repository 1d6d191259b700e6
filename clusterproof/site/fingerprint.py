"""What each result ran on: the identity of the binary (sha256 of the
executable and of the MPI library it loads) and a fingerprint of every
node of the job, taken inside the job.

The probe (:data:`PROBE`) is a POSIX shell script the job runs once per node
before the program (under Slurm ``srun --label --ntasks-per-node=1``): it reads
``/proc``, ``/sys`` and ``/etc/os-release`` with shell built-ins and forks
only ``env``, ``ldd``, ``sha256sum`` and ``srun --version``. It prints one
block per node::

    @node n1
    kernel=6.1.0-28-amd64
    governor=performance
    env.OMP_NUM_THREADS=4
    ...

Only the environment variables whose names start with one of
:data:`ENV_PREFIXES` (and ``LOADEDMODULES``) are recorded, never the rest
of the environment.

Stored compactly: a result carries ``cp_fingerprint`` (``n[1-16]=3fa1c2d4e5f6``
node sets and the hash of their record, ``;``-separated) and the full record
is written once per distinct hash to ``<results>/fingerprints/<hash>.json``.
"""

import hashlib
import json
import re
from pathlib import Path

from ClusterShell.NodeSet import NodeSet

from clusterproof import ClusterproofError
from clusterproof.paths import results_dir, write_atomic

#: environment variables recorded (name prefixes); nothing else of the environment
ENV_PREFIXES = ('OMP_', 'UCX_', 'OMPI_', 'I_MPI_', 'MPICH_', 'FI_', 'SLURM_CPU_BIND',
                'SLURM_DISTRIBUTION', 'LOADEDMODULES')

#: the probe's output file in the stage directory
OUTPUT = 'cp_fingerprint.out'
#: the probe script written to the stage directory
SCRIPT = 'cp_fingerprint.sh'

#: fields of a node record that describe the binary, not the node
BINARY_FIELDS = ('binary_sha256', 'mpi_library', 'mpi_library_sha256')

#: hex digits of a record's hash kept in ``cp_fingerprint``
HASH_DIGITS = 12

#: a line of ``srun --label``: the task number, then the task's line
_LABEL = re.compile(r' *(\d+): ?(.*)')

_ENV_CASE = '|'.join(f'{p}*' for p in ENV_PREFIXES)

#: the probe (``$1``: the binary, ``$2``: the stage directory, whose file
#: system is recorded); :func:`script` sets them
PROBE = r'''#!/bin/sh
# clusterproof node fingerprint: key=value lines after "@node <hostname>"
get() { v=; [ -r "$2" ] && { read -r v < "$2" || :; }; echo "$1=$v"; }
read -r host < /proc/sys/kernel/hostname || host=unknown
echo "@node $host"
get kernel /proc/sys/kernel/osrelease
os=
if [ -r /etc/os-release ]; then
  while IFS='=' read -r k v; do
    [ "$k" = PRETTY_NAME ] && { os=$v; break; }
  done < /etc/os-release
fi
os=${os#\"}; echo "os=${os%\"}"
model=; ucode=
while IFS=':' read -r k v; do
  case "$k" in
    'model name'*) model=${v# } ;;
    microcode*) ucode=${v# } ;;
    '') break ;;
  esac
done < /proc/cpuinfo
echo "cpu_model=$model"; echo "microcode=$ucode"
get bios_version /sys/class/dmi/id/bios_version
get bios_date /sys/class/dmi/id/bios_date
get governor /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor
get boost /sys/devices/system/cpu/cpufreq/boost
get no_turbo /sys/devices/system/cpu/intel_pstate/no_turbo
get thp /sys/kernel/mm/transparent_hugepage/enabled
get numa_balancing /proc/sys/kernel/numa_balancing
read -r k mem unit < /proc/meminfo || :
echo "mem_kib=$mem"
s=; [ -n "$SLURM_JOB_ID" ] && s=$(srun --version 2>/dev/null); echo "slurm=$s"
dir=$2; fs=; opts=; best=; cg1=; cg2=
while read -r dev mnt type o rest; do
  m=${mnt%/}
  case "$dir/" in
    "$m"/*) [ ${#mnt} -ge ${#best} ] && { best=$mnt; fs=$type; opts=$o; } ;;
  esac
  case "$type,$o," in
    cgroup2,*) cg2=$m ;;
    cgroup,*,cpu,*) cg1=$m ;;
  esac
done < /proc/self/mounts
echo "stage_fs=$fs"; echo "stage_mount=$best"; echo "stage_options=$opts"
# the CPU quota the job runs under: the tightest of its own cgroup and its
# ancestors (v2 cpu.max "quota period", v1 cpu.cfs_quota_us and _period_us)
bq=; bp=
quota() {
  case "$1$2" in ''|*[!0-9]*) return ;; esac
  [ "$2" -gt 0 ] || return
  if [ -z "$bq" ] || [ $(($1 * bp)) -lt $((bq * $2)) ]; then bq=$1; bp=$2; fi
}
while IFS=: read -r num ctrl path; do
  p=${path%/}
  case "$num:,$ctrl," in
    0:,,) [ -n "$cg2" ] || continue
      while :; do
        q=; per=; [ -r "$cg2$p/cpu.max" ] && read -r q per < "$cg2$p/cpu.max"
        quota "$q" "$per"; [ -z "$p" ] && break; p=${p%/*}
      done ;;
    *,cpu,*) [ -n "$cg1" ] || continue
      while :; do
        q=; per=; [ -r "$cg1$p/cpu.cfs_quota_us" ] && read -r q < "$cg1$p/cpu.cfs_quota_us"
        [ -r "$cg1$p/cpu.cfs_period_us" ] && read -r per < "$cg1$p/cpu.cfs_period_us"
        quota "$q" "$per"; [ -z "$p" ] && break; p=${p%/*}
      done ;;
  esac
done < /proc/self/cgroup
echo "cpu_quota=${bq:-max}${bq:+/$bp}"
env | while IFS= read -r line; do
  case "$line" in ENVCASE) echo "env.$line" ;; esac
done
lib=
if [ -n "$1" ] && [ -f "$1" ]; then
  lib=$(ldd "$1" 2>/dev/null | while read -r n arrow path rest; do
    case "$n" in libmpi.so*|libmpi_*.so*|libmpich*.so*) echo "$path"; break ;; esac
  done)
  set -- $(sha256sum "$1" $lib 2>/dev/null)
  echo "binary_sha256=$1"
  [ -n "$lib" ] && echo "mpi_library=$lib" && echo "mpi_library_sha256=$3"
fi
exit 0
'''.replace('ENVCASE', _ENV_CASE)


def script(scheduler, binary, stagedir):
    """The probe as written to the stage directory: ``sh cp_fingerprint.sh``
    in the job (:data:`COMMAND`) runs it on every node of the job
    (``scheduler``: the ReFrame scheduler's name), for ``binary`` and the
    file system of ``stagedir``."""
    q = _quote
    head = f'set -- {q(binary)} {q(stagedir)}\n'
    if scheduler in ('slurm', 'squeue'):
        head = ('[ -z "$CP_FINGERPRINT_NODE" ] && [ -n "$SLURM_JOB_ID" ] && '
                'CP_FINGERPRINT_NODE=1 exec srun --label --ntasks-per-node=1 -N"$SLURM_NNODES" '
                '-n"$SLURM_NNODES" sh "$0"\n') + head
    return PROBE.replace('#!/bin/sh\n', '#!/bin/sh\n' + head, 1)


#: the job-script line (short: ReFrame logs it with every result)
COMMAND = f'sh {SCRIPT} > {OUTPUT} 2>/dev/null || :'


def _quote(s):
    return "'" + str(s).replace("'", "'\\''") + "'"


def parse(text, source='probe output'):
    """``{node: {field: value}}`` of the probe's output; a line outside a
    node's block or without ``=`` is refused naming the line. Output of
    ``srun --label`` (each line ``<task>: ...``; srun interleaves the lines
    of the nodes) is taken task by task."""
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    blocks = [lines]
    if lines and _LABEL.fullmatch(lines[0][1]):
        tasks = {}
        for n, line in lines:
            m = _LABEL.fullmatch(line)
            if not m:
                raise ClusterproofError(f'{source}:{n}: {line[:80]!r} has no task label '
                                        f'("<task>: ", srun --label) as the lines before it')
            tasks.setdefault(m.group(1), []).append((n, m.group(2)))
        blocks = list(tasks.values())
    nodes = {}
    for block in blocks:
        cur = None
        for n, line in block:
            if line.startswith('@node '):
                cur = nodes.setdefault(line[6:].strip(), {})
                continue
            key, sep, value = line.partition('=')
            if cur is None or not sep:
                raise ClusterproofError(f'{source}:{n}: {line[:80]!r} is not a fingerprint '
                                        f'line (key=value after "@node <name>")')
            cur[key] = value.strip()
    for rec in nodes.values():
        # MemTotal differs by a few MiB between nodes of one model (firmware
        # reservations): whole GiB, so that such nodes share one record
        kib = rec.pop('mem_kib', '')
        rec['mem_gib'] = str(round(int(kib) / 2**20)) if kib.isdigit() else ''
    return nodes


def record_hash(record):
    """Hash of a node's record (without the binary's fields)."""
    body = json.dumps({k: v for k, v in record.items() if k not in BINARY_FIELDS},
                      sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()[:HASH_DIGITS]


def by_nodes(values):
    """``{node: value}`` as ``n[1-3]=v1;n4=v2`` (node sets per value, in the
    order of their first node)."""
    groups = {}
    for node, v in values.items():
        groups.setdefault(v, []).append(node)
    items = [(NodeSet.fromlist(nodes), v) for v, nodes in groups.items()]
    # n3 before n[1-2,4] as text: order by the first node, its numbers as numbers
    items.sort(key=lambda x: [int(p) if p.isdigit() else p
                              for p in re.split(r'(\d+)', next(iter(x[0])))])
    return ';'.join(f'{ns}={v}' for ns, v in items)


def node_set(nodes):
    """``n[1-3]`` of node names."""
    return str(NodeSet.fromlist(nodes))


def per_node(text):
    """``n[1-3]=v1;n4=v2`` back to ``{node: value}``; a bare value (no node
    set) is returned under the key ``''``."""
    out = {}
    for item in filter(None, (text or '').split(';')):
        ns, sep, v = item.rpartition('=')
        if not sep:
            out[''] = item
            continue
        for node in NodeSet(ns):
            out[node] = v
    return out


def store_dir(results=None):
    return Path(results or results_dir()) / 'fingerprints'


def store(nodes, results=None):
    """Write each distinct node record once (``<hash>.json``); returns
    ``{node: hash}``."""
    d = store_dir(results)
    out = {}
    for node, rec in nodes.items():
        h = record_hash(rec)
        out[node] = h
        path = d / f'{h}.json'
        if not path.exists():
            d.mkdir(parents=True, exist_ok=True)
            body = {k: v for k, v in rec.items() if k not in BINARY_FIELDS}
            write_atomic(path, json.dumps(body, sort_keys=True, indent=1) + '\n')
    return out


def load(h, results=None):
    """The record stored under hash ``h``, or None when there is none."""
    try:
        return json.loads((store_dir(results) / f'{h}.json').read_text())
    except (OSError, ValueError):
        return None


def binary_identity(nodes):
    """``(binary sha256, 'mpi library path sha256')`` as recorded on the
    nodes: one value when every node agrees, else per node set."""
    def one(f):
        vals = {n: f(r) for n, r in nodes.items() if f(r)}
        if not vals:
            return ''
        return next(iter(vals.values())) if len(set(vals.values())) == 1 else by_nodes(vals)
    return (one(lambda r: r.get('binary_sha256', '')),
            one(lambda r: (f'{r["mpi_library"]} {r.get("mpi_library_sha256", "")}'
                           if r.get('mpi_library') else '')))


def changes(before, after, results=None):
    """What changed on the nodes: ``before`` and ``after`` are lists of
    ``cp_fingerprint`` texts (one per session). For every node in both, a
    field whose values after share none with its values before is named:
    ``kernel 6.1.0-25 -> 6.1.0-28 on n[1-16]``. A field other than an
    environment variable that one side's records lack was not read by the
    probe of that time (the probe prints every field it reads, empty when
    unreadable): a newer probe, not a change of the nodes, and not named."""
    records = {}

    def values(texts):
        vals, missing = {}, set()
        for t in set(texts):
            for node, h in per_node(t).items():
                if h not in records:
                    records[h] = load(h, results)
                rec = records[h]
                if rec is None:
                    missing.add(h)
                    continue
                for k, v in rec.items():
                    vals.setdefault(node, {}).setdefault(k, set()).add(v)
        return vals, missing

    old, miss_b = values(before)
    new, miss_a = values(after)
    groups = {}
    for node in sorted(set(old) & set(new)):
        for k in sorted(set(old[node]) | set(new[node])):
            if not k.startswith('env.') and not (k in old[node] and k in new[node]):
                continue
            o = old[node].get(k, {'(unset)'})
            n = new[node].get(k, {'(unset)'})
            if not (o & n):
                groups.setdefault((k, _vals(o), _vals(n)), []).append(node)
    lines = [f'{k.removeprefix("env.")} {o} -> {n} on {node_set(nodes)}'
             for (k, o, n), nodes in sorted(groups.items())]
    if miss_b | miss_a:
        lines.append(f'node fingerprint(s) {", ".join(sorted(miss_b | miss_a))} not found '
                     f'in {store_dir(results)}')
    return lines


def _vals(s):
    return ', '.join(sorted(v or '(empty)' for v in s))
