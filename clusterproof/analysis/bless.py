"""References derived from measured sessions (``clusterproof bless``).

A reference file ``site_config/references/<system>.yaml`` is in ReFrame
4.10's external reference format (``reference = {'$ref': ...}``): one entry
per test class, ``$index`` naming the test attributes of each level, and at
the last level ``figure: [reference, lower, upper, unit]`` with relative
thresholds (``null`` = unbounded)::

    IORSequential:
      $index: [$partition, num_threads]
      pixstor:clients:
        16:
          write_bw: [28500.0, -0.05, null, MB/s]

Blessing one test class rewrites only that class's entry (and within it
only the figures and index values it measured); the text of every other
entry, comments included, is kept as it was.

Emulated results (the local cluster, pmem on tmpfs) are never references for
real hardware. ``--allow-emulated`` blesses them into a file of their own,
``<system>.emulated.yaml``, against which only emulated results are judged:
it lets a nightly run on emulated hardware catch a regression of the
toolkit or of the machine it runs on, never vouch for hardware.
"""

import datetime
import math
import re
import statistics
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from clusterproof import ClusterproofError
from clusterproof.paths import append_synced, read_text, write_atomic
from clusterproof.references.lookup import default_index, index_of, index_value, load_references
from clusterproof.references.entries import entry_reference, parse, reference_file, validate_data
from clusterproof.references.direction import record_lower_is_better
from clusterproof.analysis.statistics import percentile

DEFAULT_NSIGMA = 3.0
DEFAULT_MIN_TOLERANCE = 0.02
DEFAULT_MAX_TOLERANCE = 0.5
SPECIAL_INDEX = ('$system', '$partition', '$environ')


# -- deriving -----------------------------------------------------------------

@dataclass
class Refusal:
    session: str
    test: str
    figure: str
    why: str

    def __str__(self):
        where = ' '.join(x for x in (f'session {self.session[:8]}' if self.session else '',
                                     f'test {self.test!r}' if self.test else '',
                                     f'figure {self.figure}' if self.figure else '') if x)
        return f'{where}: {self.why}'


@dataclass
class NewReference:
    check: str
    index: list
    path: tuple            # index values
    figure: str
    ref: float
    lower: float
    upper: float
    unit: str
    n: int
    values: list
    smoke: bool = False
    emulated: bool = False

    @property
    def wide(self):
        """True when the spread makes the tolerance wider than 20%: the
        figure is too noisy to catch a regression; measure it more quietly."""
        return (self.lower or 0) < -0.2 or (self.upper or 0) > 0.2

    @property
    def entry(self):
        return [round_sig(self.ref), self.lower, self.upper, self.unit]


def round_sig(x, digits=6):
    if x == 0 or not math.isfinite(x):
        return x
    return round(x, digits - 1 - int(math.floor(math.log10(abs(x)))))


def refusals(recs, allow_smoke=False, allow_emulated=False):
    """Why these records cannot become references, one :class:`Refusal` per
    session/test/figure: a failed sanity (or any failure other than the
    performance check), smoke sizes, emulated hardware, a binary whose
    version differs between the sessions. With ``allow_emulated`` the
    records must all be emulated (they go to ``<system>.emulated.yaml``),
    and a real one is refused instead. A skipped test case measured
    nothing and blesses nothing (:func:`skipped`); it refuses no other."""
    out = []
    seen = set()
    versions = {}
    for r in recs:
        case_key = (r.session, r.test, r.system, r.partition)
        if not r.outcome.sanity_ok and not r.outcome.skipped and case_key not in seen:
            seen.add(case_key)
            out.append(Refusal(r.session, r.test, '',
                               f'{r.outcome.why}: a failed test is never a reference'))
        if not r.figure:
            continue
        if r.smoke and not allow_smoke:
            out.append(Refusal(r.session, r.test, r.figure,
                               'smoke sizes (cp_smoke); run mode nightly or acceptance'))
        if r.emulated and not allow_emulated:
            out.append(Refusal(r.session, r.test, r.figure,
                               f'emulated (cp_emulated or system {r.system}): figures for '
                               f'function, not speed; --allow-emulated blesses them into '
                               f'{r.system}.emulated.yaml, for emulated runs only'))
        if allow_emulated and not r.emulated:
            out.append(Refusal(r.session, r.test, r.figure,
                               'not emulated: --allow-emulated blesses emulated results only; '
                               'bless real results without it'))
        versions.setdefault((r.system, r.partition, r.check), {}).setdefault(
            r.binary_version or '(none)', set()).add(r.session)
    for (system, part, check), vers in versions.items():
        if len(vers) > 1:
            detail = '; '.join(f'{v} in {", ".join(sorted(s[:8] for s in ss))}'
                               for v, ss in sorted(vers.items()))
            out.append(Refusal('', f'{check} on {system}:{part}', '',
                               f'mixed binary versions ({detail}); select sessions of one version'))
    return out


def skipped(recs):
    """``{test: skip reason}`` of the skipped test cases of ``recs``: never
    references (they measured nothing); their old references are kept."""
    return {r.test: r.outcome.why for r in recs if r.outcome.skipped}


def derive(recs, existing=None, pct=None, nsigma=DEFAULT_NSIGMA,
           min_tolerance=DEFAULT_MIN_TOLERANCE, max_tolerance=DEFAULT_MAX_TOLERANCE):
    """New references from records of good sessions.

    Reference = median of the sessions' values (or percentile ``pct``);
    tolerance = ``nsigma`` standard deviations relative to the reference,
    at least ``min_tolerance``, at most ``max_tolerance`` (a wider spread
    means the figure is too noisy to judge; bless warns); a lower bound for throughputs, an upper
    bound for latencies and times. The index is the one the reference file
    already declares for the test class, else ``[$partition, parameters]``.
    """
    existing = existing or {}
    groups = {}
    for r in recs:
        if not r.figure or not math.isfinite(r.value):
            continue
        index = index_of(existing.get(r.check)) or default_index(r)
        path = tuple(index_value(a, r) for a in index)
        groups.setdefault((r.check, tuple(index), path, r.figure), []).append(r)
    out = []
    for (check, index, path, figure), rs in sorted(groups.items(), key=lambda kv: str(kv[0])):
        values = [r.value for r in rs]
        ref = statistics.median(values) if pct is None else percentile(values, pct)
        # numpy's: statistics.pstdev (exact fractions) took most of bless's time
        spread = float(np.std(values)) if len(values) > 1 else 0.0
        tol = max(min_tolerance, nsigma * spread / abs(ref)) if ref else min_tolerance
        lib = record_lower_is_better(rs[0])
        tol = min(tol, max_tolerance)
        if not lib:
            tol = min(tol, 1.0)     # ReFrame's lower threshold is at least -100%
        tol = float(f'{tol:.4g}')
        out.append(NewReference(check, list(index), path, figure, ref,
                                None if lib else -tol, tol if lib else None,
                                rs[0].unit, len(values), values,
                                smoke=any(r.smoke for r in rs),
                                emulated=any(r.emulated for r in rs)))
    return out


# -- diff and write -------------------------------------------------------------

def _get_leaf(entry, path, figure):
    node = entry or {}
    for k in path:
        if not isinstance(node, dict) or k not in node:
            return None
        node = node[k]
    return node.get(figure) if isinstance(node, dict) else None


def diff_rows(existing, new_refs):
    """Rows ``(check, index path, figure, old, new, change)`` for display."""
    rows = []
    for n in new_refs:
        raw = _get_leaf(existing.get(n.check), n.path, n.figure)
        old = entry_reference(raw)
        change = ''
        if old is not None and isinstance(old.value, (int, float)) and old.value:
            change = f'{(n.entry[0] - old.value) / abs(old.value) * 100:+.1f}%'
        elif raw is None:
            change = 'new'
        rows.append((n.check, ' '.join(str(p) for p in n.path), n.figure,
                     '-' if raw is None else str(old or raw), str(entry_reference(n.entry)),
                     change))
    return rows


def merged_entries(existing, new_refs):
    """``{check: entry}`` for the blessed checks: the existing entry with the
    blessed leaves replaced (other index values and figures kept)."""
    out = {}
    for n in new_refs:
        old = existing.get(n.check)
        if n.check not in out:
            base = old if isinstance(old, dict) else {}
            if (index_of(base) or []) != n.index:
                base = {}       # a new index: the old layout cannot be merged
            out[n.check] = _deepcopy({'$index': n.index, **{k: v for k, v in base.items()
                                                           if k != '$index'}})
        node = out[n.check]
        for k in n.path:
            node = node.setdefault(k, {})
        node[n.figure] = n.entry
    return out


def _deepcopy(d):
    if isinstance(d, dict):
        return {k: _deepcopy(v) for k, v in d.items()}
    if isinstance(d, list):
        return [_deepcopy(v) for v in d]
    return d


_TOP_KEY = re.compile(r'^(?:\'([^\']*)\'|"([^"]*)"|([^\s#:][^:]*))\s*:')


def _split_blocks(text):
    """Top-level blocks of a YAML mapping: ``[(key or None, text)]``; a block
    holds the comments right above its key."""
    blocks, pending, cur_key, cur = [], [], None, []
    for line in text.splitlines(keepends=True):
        m = _TOP_KEY.match(line)
        if m:
            if cur or cur_key is not None:
                blocks.append((cur_key, ''.join(cur)))
            cur_key = next(g for g in m.groups() if g is not None).strip()
            cur = pending + [line]
            pending = []
        elif line.startswith('#') or not line.strip():
            pending.append(line)
        else:
            cur += pending + [line]
            pending = []
    if cur or cur_key is not None:
        blocks.append((cur_key, ''.join(cur)))
    if pending:
        blocks.append((None, ''.join(pending)))
    return blocks


def render(old_text, entries, comment):
    """New file text: ``old_text`` with the blocks of ``entries`` replaced
    (or appended), each preceded by ``comment`` lines."""
    blocks = _split_blocks(old_text or '')
    done = set()
    parts = []
    for key, text in blocks:
        if key in entries:
            parts.append(_render_block(key, entries[key], comment))
            done.add(key)
        else:
            parts.append(text if text.endswith('\n') else text + '\n')
    for key in entries:
        if key not in done:
            if parts and parts[-1].strip():
                parts.append('\n')
            parts.append(_render_block(key, entries[key], comment))
    return ''.join(parts)


def _render_block(key, entry, comment):
    head = ''.join(f'# {line}\n' for line in comment.splitlines())
    body = yaml.safe_dump({key: entry}, sort_keys=False, default_flow_style=None, width=100)
    return head + body


def write_references(system, new_refs, reason, sessions, pct=None, nsigma=DEFAULT_NSIGMA,
                     min_tolerance=DEFAULT_MIN_TOLERANCE, now=None, path=None):
    """Write the blessed entries into ``<system>.yaml`` (atomically) and
    append the bless to ``<system>.history``. Returns the file path."""
    if not reason or not reason.strip():
        raise ClusterproofError('--reason is required with --write: say why the references '
                                'change (e.g. "acceptance sign-off", "BIOS update")')
    emulated = any(n.emulated for n in new_refs)
    if emulated and not all(n.emulated for n in new_refs):
        raise ClusterproofError('emulated and real results cannot be blessed together; '
                                'nothing was written')
    path = Path(path) if path else reference_file(system, emulated=emulated)
    old_text = read_text(path, 'references file') if path.is_file() else ''
    existing = load_references(system, path)
    entries = merged_entries(existing, new_refs)
    now = now or datetime.datetime.now().astimezone()
    stat = 'median' if pct is None else f'percentile {pct:g}'
    smoke = any(n.smoke for n in new_refs)
    comment = (f'blessed {now:%Y-%m-%d %H:%M %z} from {len(sessions)} session(s) '
               f'({stat}; tolerance {nsigma:g} stddev, at least {min_tolerance * 100:g}%)'
               + (' FROM SMOKE SIZES: not a reference for real runs' if smoke else '')
               + (' FROM EMULATED RUNS: judges emulated runs only, never hardware'
                  if emulated else '')
               + f'\nreason: {reason.strip()}'
               + f'\nsessions: {" ".join(s.uuid for s in sessions)}')
    text = render(old_text, entries, comment)
    check = parse(text, path)
    try:
        validate_data(check, path)
    except ClusterproofError as err:
        raise ClusterproofError(f'{err}; nothing was written') from None
    for key, entry in entries.items():
        if check.get(key) != entry:
            raise ClusterproofError(f'{path}: internal error: entry {key} did not survive '
                                    f'the rewrite; nothing was written')
    for key, val in existing.items():
        if key not in entries and check.get(key) != val:
            raise ClusterproofError(f'{path}: entry {key} would change; nothing was written')
    write_atomic(path, text)
    hist = {
        'time': now.isoformat(timespec='seconds'),
        'system': system,
        'reason': reason.strip(),
        'statistic': stat,
        'nsigma': nsigma,
        'min_tolerance': min_tolerance,
        'smoke': smoke,
        'emulated': emulated,
        'sessions': [s.uuid for s in sessions],
        'references': [{'check': n.check, 'index': [str(p) for p in n.path],
                        'figure': n.figure, 'entry': n.entry, 'values': n.values}
                       for n in new_refs],
    }
    append_synced(path.with_suffix('.history'),
                  '---\n' + yaml.safe_dump(hist, sort_keys=False, width=100))
    return path
