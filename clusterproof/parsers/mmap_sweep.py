"""Output of the project's mmap sweep (``reframe_checks/src/mmap_sweep``):
one ``key=value`` per line, ``status=ok`` last.

Figures: wall_s, cpu_s (user+sys of all threads), io_idle_s (wall -
cpu/threads), throughput_mib_s, bytes_touched. :func:`problems` is the
sanity rule: status ok, the checksum verified where it can be, the bytes
touched as the arguments say, CPU time within wall time x threads.

An output of several runs (each from its ``mmap_sweep_version=`` line) is
read by the rule of every parser (:mod:`clusterproof.parsers.runs`): the
last run when all swept the same target, mode, size, chunk, stride and
threads; refused, naming what differs, when they did not (a sweep over
parameters into one log); keys of older runs never fill a cut last run.
Every number is finite (``nan``, ``inf`` or a garbled value is refused
naming the key); a last line cut mid-number is not read.
"""

import re

from clusterproof.parsers import ParseError, finite, whole
from clusterproof.parsers import runs

INT_KEYS = ('size', 'a', 'b', 'threads', 'steps', 'bytes_touched', 'checksum')
FLOAT_KEYS = ('wall_s', 'user_s', 'sys_s', 'cpu_s', 'io_idle_s', 'throughput_mib_s')
STR_KEYS = ('mmap_sweep_version', 'target', 'path', 'mode', 'verified', 'status')
REQUIRED = INT_KEYS + FLOAT_KEYS + STR_KEYS

_LINE = re.compile(r'^([a-z_]+)=(.*)$')
_BANNER = re.compile(r'^mmap_sweep_version=', re.M)
#: what the runs of one output must share
KIND_KEYS = ('target', 'mode', 'size', 'a', 'b', 'threads')


def _values(text):
    values = {}
    for line in text.splitlines():
        m = _LINE.match(line.strip())
        if m:
            values[m.group(1)] = m.group(2)
    return values


def _kind(text):
    values = _values(text)
    return {k: values.get(k, '?') for k in KIND_KEYS}

#: slack on "cpu_s <= wall_s x threads": getrusage ticks vs. the monotonic clock
CPU_SLACK_S = 0.02


def parse(text, source='mmap_sweep output'):
    """The key/value lines as a dict with numbers converted; a missing key
    is an error naming ``source`` and the key. ``runs`` and ``note`` say how
    many runs the output holds and which was read."""
    run = runs.one_run(text, _BANNER, source, 'mmap_sweep', kind=_kind)
    source = run.source
    values = _values(run.text)
    missing = [k for k in REQUIRED if k not in values]
    if missing:
        status = values.get('status')
        raise ParseError(f'{source}: mmap_sweep output lacks {", ".join(missing)}'
                         + (f' (status={status})' if status else
                            ' (the program failed before printing its results?)'))
    out = dict(values)
    for k in INT_KEYS:
        out[k] = whole(values[k], k, source)
    for k in FLOAT_KEYS:
        out[k] = finite(values[k], k, source)
    out['runs'], out['note'] = run.runs, run.note
    return out


def expected_steps(size, a, b, threads):
    """Steps the sweep must make: per slice of size//threads bytes, offsets
    0, b, 2b, ... with a whole chunk of ``a`` bytes inside the slice."""
    per = size // threads
    return threads * (0 if per < a else (per - a) // b + 1)


def problems(res, source='mmap_sweep output'):
    found = []
    if res['status'] != 'ok':
        found.append(f'{source}: status={res["status"]}')
    if res['verified'] == 'no':
        found.append(f'{source}: checksum {res["checksum"]} does not match the data written')
    steps = (expected_steps(res['size'], res['a'], res['b'], res['threads'])
             if res['threads'] > 0 and res['b'] > 0 else None)
    if steps is None:
        found.append(f'{source}: threads={res["threads"]}, b={res["b"]}: the sweep needs '
                     'at least one thread and a stride of at least one byte')
    elif res['steps'] != steps or res['bytes_touched'] != steps * res['a']:
        found.append(f'{source}: {res["steps"]} steps and {res["bytes_touched"]} bytes touched; '
                     f'want {steps} steps of {res["a"]} bytes')
    if res['wall_s'] <= 0 or res['throughput_mib_s'] <= 0:
        found.append(f'{source}: wall_s={res["wall_s"]}, throughput_mib_s='
                     f'{res["throughput_mib_s"]}: no time measured')
    if res['cpu_s'] > res['wall_s'] * res['threads'] + CPU_SLACK_S:
        found.append(f'{source}: cpu_s={res["cpu_s"]} exceeds wall_s x threads = '
                     f'{res["wall_s"] * res["threads"]:.6f}')
    return found
