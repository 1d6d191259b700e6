"""The values inside Slurm's output, each read one way.

For every reader of :mod:`clusterproof.parsers.slurm`: whole numbers (also JSON's
``{"set", "infinite", "number"}`` objects), ``Gres`` strings and the GPUs
they name, and node states (their words, whether a job can start on the
node, and which runnable node to prefer).

A value that cannot be read raises :class:`SlurmFormatError` naming where
it was and what it held."""

import math
import re
from dataclasses import dataclass

from clusterproof import ClusterproofError

class SlurmFormatError(ClusterproofError):
    """Slurm's output is not in a form :mod:`clusterproof.parsers.slurm` reads."""


def number(value, where='value'):
    """A whole number from Slurm JSON or text: ``5``, ``"5"``, or
    ``{"set": true, "infinite": false, "number": 5}``; None for an unset or
    infinite one (``UNLIMITED``, ``{"set": false}``, ``{"infinite": true}``)."""
    if isinstance(value, dict):
        if value.get('infinite') or value.get('set') is False:
            return None
        value = value.get('number')
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise SlurmFormatError(f'{where}: {value!r} is not a whole number')
    if isinstance(value, (int, float)):
        return int(value)
    text = str(value).strip()
    if text.upper() in ('UNLIMITED', 'INFINITE', 'N/A', 'NONE', '(NULL)', ''):
        return None
    if not (text.isascii() and text.isdigit()):
        raise SlurmFormatError(f'{where}: {value!r} is not a whole number')
    return int(text)


def _required(value, where):
    num = number(value, where)
    if num is None:
        raise SlurmFormatError(f'{where}: {value!r} is not a whole number')
    return num


def _words(value):
    """A list of strings from a JSON list or a comma-separated string;
    ``(null)`` and empty give none."""
    if value is None:
        return []
    if isinstance(value, list):
        return [str(v).strip() for v in value if str(v).strip()]
    text = str(value).strip()
    if text in ('', '(null)'):
        return []
    return [w.strip() for w in text.split(',') if w.strip()]


# -------------------------------------------------------------------- GRES

@dataclass(frozen=True)
class Gres:
    """One generic resource of a node: ``gpu:a100:4(S:0-1)`` is
    ``Gres('gpu', 'a100', 4)``; ``gpu:2`` is ``Gres('gpu', None, 2)``."""
    name: str
    type: object
    count: int

    def __str__(self):
        return ':'.join([self.name] + ([self.type] if self.type else []) + [str(self.count)])


_SUFFIX = {'K': 1024, 'M': 1024 ** 2, 'G': 1024 ** 3, 'T': 1024 ** 4, 'P': 1024 ** 5}


def _split_top(text):
    """Split at commas outside parentheses."""
    items, depth, cur = [], 0, ''
    for ch in text:
        if ch == '(':
            depth += 1
        elif ch == ')':
            depth -= 1
        if ch == ',' and depth == 0:
            items.append(cur)
            cur = ''
        else:
            cur += ch
    items.append(cur)
    return [i.strip() for i in items if i.strip()]


def parse_gres(text, where='Gres'):
    """The :class:`Gres` list of a ``Gres=`` value: ``gpu:v100:2,gpu:m40:1``,
    ``gpu:nvidia:3(S:0-1)``, ``gpu:2``, ``gpu_mem:16280,gpu:1``,
    ``mps:a100:600``; ``(null)`` or empty gives ``[]``."""
    text = (text or '').strip()
    if text in ('', '(null)', 'N/A'):
        return []
    out = []
    for item in _split_top(text):
        item = re.sub(r'\(.*\)$', '', item).strip()        # (S:0-1), (IDX:0-3)
        parts = [p for p in item.split(':') if p != 'no_consume']
        name = parts[0]
        if not name:
            raise SlurmFormatError(f'{where}: {text!r}: an item without a name')
        m = re.fullmatch(r'(\d+)([KMGTP]?)', parts[-1]) if len(parts) > 1 else None
        if m:
            count = int(m.group(1)) * _SUFFIX.get(m.group(2), 1)
            gtype = ':'.join(parts[1:-1]) or None
        else:               # "gpu" or "gpu:a100": one of it
            count, gtype = 1, ':'.join(parts[1:]) or None
        out.append(Gres(name, gtype, count))
    return out


def gpus(gres):
    """``[(type or None, count)]`` of the GPUs in a :class:`Gres` list, one
    entry per type in the order first listed (``gpu:a100:4(S:0-1),
    gpu:a100:4(S:2-3)`` is 8 a100)."""
    counts = {}
    for g in gres:
        if g.name == 'gpu':
            counts[g.type] = counts.get(g.type, 0) + g.count
    return list(counts.items())


def gpu_count(gres):
    return sum(c for _, c in gpus(gres))


# ------------------------------------------------------------------ states

#: scontrol's one-character state suffixes (``DOWN*``, ``IDLE~``)
STATE_SUFFIXES = {'*': 'NOT_RESPONDING', '~': 'POWERED_DOWN', '#': 'POWERING_UP',
                  '%': 'POWERING_DOWN', '!': 'POWER_DOWN', '$': 'MAINT',
                  '@': 'REBOOT_REQUESTED', '^': 'REBOOT_ISSUED', '-': 'PLANNED'}
_STATE_ALIASES = {'ALLOC': 'ALLOCATED', 'MIX': 'MIXED', 'COMP': 'COMPLETING',
                  'DRNG': 'DRAINING', 'DRAINED': 'DRAIN', 'DRAINING': 'DRAIN',
                  'NO_RESPOND': 'NOT_RESPONDING', 'POWER': 'POWERED_DOWN',
                  'POWER_DOWN': 'POWERED_DOWN', 'FUTR': 'FUTURE', 'UNK': 'UNKNOWN',
                  'RESV': 'RESERVED', 'NPC': 'PERFCTRS', 'FAILING': 'FAIL'}
#: base states in which a job step can start on the node (best first)
RUNNABLE = ('IDLE', 'MIXED', 'ALLOCATED', 'COMPLETING')
#: states and flags that keep a node from running a new job step
UNRUNNABLE = ('DRAIN', 'DOWN', 'NOT_RESPONDING', 'FAIL', 'MAINT', 'POWERED_DOWN',
              'POWERING_DOWN', 'POWERING_UP', 'FUTURE', 'UNKNOWN', 'REBOOT_REQUESTED',
              'REBOOT_ISSUED', 'RESERVED', 'PERFCTRS', 'INVAL', 'BLOCKED', 'PLANNED')


def parse_state(value, flags=()):
    """The state words of a node, upper case, base state first:
    ``IDLE+DRAIN`` and ``["IDLE", "DRAIN"]`` and (``"idle"``, ``["DRAIN"]``)
    all give ``('IDLE', 'DRAIN')``; ``DOWN*`` gives ``('DOWN',
    'NOT_RESPONDING')``."""
    raw = value if isinstance(value, list) else re.split(r'[+|]', str(value or ''))
    words, marks = [], []
    for word in list(raw) + list(flags or ()):
        word = str(word).strip().upper()
        while word and word[-1] in STATE_SUFFIXES:
            marks.append(STATE_SUFFIXES[word[-1]])
            word = word[:-1]
        if word:
            words.append(_STATE_ALIASES.get(word, word))
    out = []
    for w in words + marks:
        if w not in out:
            out.append(w)
    return tuple(out)


def runnable(state):
    """``(True, '')`` when Slurm can start a job step on a node in ``state``
    (``IDLE+DRAIN`` or words from :func:`parse_state`), else ``(False, why)``."""
    state = parse_state(state) if isinstance(state, str) else tuple(state)
    bad = [w for w in state if w in UNRUNNABLE]
    if 'CLOUD' in state and 'POWERED_DOWN' in state:
        bad = bad or ['CLOUD+POWERED_DOWN']
    if bad:
        return False, '+'.join(state)
    if not any(w in RUNNABLE for w in state):
        return False, '+'.join(state) or 'no state'
    return True, ''


def run_rank(state):
    """Sort key among runnable nodes: idle before mixed before allocated."""
    state = parse_state(state) if isinstance(state, str) else tuple(state)
    for i, word in enumerate(RUNNABLE):
        if word in state:
            return i
    return len(RUNNABLE)
