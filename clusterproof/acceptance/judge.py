"""Judging a contract's items on the figure store's rows.

For each :class:`~clusterproof.acceptance.contract.Item`, every test case of
the candidate sessions that is the item's (same system, partition when the
contract names one, check class, parameters, mode) is a :class:`Repetition`:
its record (the store's :class:`~clusterproof.store.sessions.Record`, whose
value, session and provenance it shows), whether it counts (the validity
rules and the allowed modifications, checked on what the test case recorded)
and why not, and what it used. The
newest ``repetitions`` valid runs give the statistic, judged against the
committed value and tolerance by :func:`clusterproof.references.judge.judge_reference`
(the one verdict vocabulary: a :class:`~clusterproof.references.judge.Judgement`).
An item without enough valid runs is ``invalid`` with the reason ``not
measured validly`` (runs there were, none or too few counted), or ``not
measured`` (no run).

What a run recorded comes from its store record: the test's attributes, its
provenance (:attr:`~clusterproof.store.sessions.Record.provenance`) and its
run time (:attr:`~clusterproof.store.sessions.Times.run_s`, ReFrame's
``time_run``). The RAM of the nodes under test comes from their
fingerprints (``<results>/fingerprints/``), never from this machine.
"""

import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from clusterproof.analysis.statistics import statistic
from clusterproof.site import fingerprint
from clusterproof.references.judge import Judgement, Verdict, judge_reference
from clusterproof.references.lookup import locate
from clusterproof.store.sessions import Record, check_name, load_sessions, store_paths

_SIZE_RE = re.compile(r'^\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)(i?b?)\s*$', re.I)


@dataclass
class Repetition:
    """One test case of an item in one session: its figure record
    (``rec``), whether it counts, why not, and the modifications it used."""
    rec: Record
    valid: bool
    invalid_why: str
    used: dict

    session = property(lambda self: self.rec.session)
    test = property(lambda self: self.rec.test)
    value = property(lambda self: self.rec.value)
    flags = property(lambda self: tuple(self.rec.flags))
    binary_sha256 = property(lambda self: self.rec.provenance.get('cp_binary_sha256', ''))
    fingerprint = property(lambda self: self.rec.provenance.get('cp_fingerprint', ''))
    nodes = property(lambda self: self.rec.provenance.get('job_nodelist', ''))


@dataclass
class Result:
    """An item judged: its runs (newest first), the ones counted, the
    statistic and its spread, the :class:`Judgement`."""
    item: object
    runs: list
    counted: list
    measured: float
    judgement: Judgement
    lower_is_better: bool = False
    sessions: set = field(default_factory=set)

    @property
    def spread(self):
        vals = [r.value for r in self.counted]
        return {'min': min(vals), 'max': max(vals), 'n': len(vals)} if vals else None

    @property
    def failing(self):
        """True when this item fails the acceptance: a committed item whose
        verdict fails (informative items never do)."""
        return self.item.is_committed and self.judgement.failing


def size_bytes(value):
    """Bytes of a recorded size: a number of bytes, or text such as
    ``8TiB``, ``512g``, ``16M`` (powers of 1024); None when it is none."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    m = _SIZE_RE.match(str(value))
    if not m:
        return None
    return float(m.group(1)) * 1024 ** ' kmgtp'.index((m.group(2) or ' ').lower())


def matches(item, contract, rec):
    """True when store record ``rec`` is a test case of ``item``: for an item
    made from a declared reference, one whose test case resolves to that
    reference's entry, as ReFrame resolves it (:func:`locate`)."""
    if rec.system != contract.system or check_name(rec.test) != item.check:
        return False
    if contract.partition and rec.partition != contract.partition:
        return False
    if rec.mode and rec.mode != contract.mode:
        return False
    if item.where is not None:
        return locate(contract.references, rec) == item.where
    params = rec.params
    return all(params.get(k) == v for k, v in item.parameters.items())


def _db():
    from clusterproof.paths import results_db
    return results_db()


def node_ram_gib(fp_text, results_dir=None):
    """The RAM (GiB) of the nodes of a recorded ``cp_fingerprint``, summed
    over its nodes; None when a node's record or memory is missing."""
    nodes = fingerprint.per_node(fp_text)
    if not nodes or '' in nodes:
        return None
    total = 0.0
    for h in nodes.values():
        rec = fingerprint.load(h, results_dir)
        mem = (rec or {}).get('mem_gib')
        if not mem:
            return None
        total += float(mem)
    return total


def check_run(item, rec, results_dir=None):
    """``(valid, why not, used)`` of the run ``rec`` of ``item``."""
    case = rec.case or {}
    runtime = rec.times.run_s
    used = {a.name: case.get(a.name) for a in item.modifications}
    if not rec.outcome.sanity_ok:
        return False, rec.outcome.why, used
    if not math.isfinite(rec.value):
        return False, f'no finite {item.figure}', used
    why = []
    rules = item.validity
    if 'min_runtime_s' in rules:
        if runtime is None:
            why.append('run time not recorded (no run report in the results database)')
        elif runtime < rules['min_runtime_s']:
            why.append(f'ran {runtime:.3g} s, less than the minimum {rules["min_runtime_s"]:g} s')
    if 'min_data_ram_ratio' in rules:
        k, var = rules['min_data_ram_ratio'], rules['data_variable']
        data = size_bytes(case.get(var))
        ram = node_ram_gib(case.get('cp_fingerprint', ''), results_dir)
        if data is None:
            why.append(f'data moved not recorded ({var}={case.get(var)!r})')
        elif ram is None:
            why.append('RAM of the nodes under test not recorded (no node fingerprint)')
        elif data < k * ram * 2**30:
            why.append(f'{var}={data / 2**30:.4g} GiB is less than {k:g} x the '
                       f'{ram:g} GiB RAM of the nodes under test')
    if rules.get('no_stonewall'):
        walled = case.get('iozone_stonewalled')
        if walled is None:
            why.append('stonewalling not recorded (iozone_stonewalled)')
        elif walled:
            why.append(f'stonewalled: {walled}')
    if rules.get('reordered_reads'):
        reorder = case.get('ior_read_reorder')
        if reorder != '-C':
            why.append(f'reads not reordered with -C (ior_read_reorder={reorder!r})')
    # residual_passed: HPL's sanity is every residual PASSED, checked above
    for key, want in item.set.items():
        cls, _, var = key.rpartition('.')
        if cls in ('', item.check) and var in case and str(case[var]) != str(want):
            why.append(f'ran with {var}={case[var]}, the contract sets {want}')
    for allowed in item.modifications:
        bad = allowed.permits(used[allowed.name])
        if bad:
            why.append(f'modification not allowed: {bad}')
    return not why, '; '.join(why), used


def judge_item(item, contract, recs, results_dir=None):
    """The :class:`Result` of ``item`` on store records ``recs``: its
    :func:`repetitions`, the newest valid ones counted, their statistic
    judged against the committed value in the direction of
    :func:`_direction` (the reason says the statistic and how far it is from
    the commitment)."""
    runs = repetitions(item, contract, recs, results_dir)
    counted = [run for run in runs if run.valid][:item.repetitions]
    lower = _direction(runs)
    if len(counted) < item.repetitions:
        return Result(item, runs, counted, None, _unmeasured(item, runs, counted), lower)
    value = statistic(item.statistic, [run.value for run in counted], lower)
    judged = judge_reference(value, item.reference, lower)
    flags = sorted({f for run in counted for f in run.flags} - set(contract.allow))
    if flags and not judged.failing:
        judged = Judgement(Verdict.NOT_ACCEPTED, f'{", ".join(flags)} figures; the contract '
                                                 f'allows none', judged.bounds)
    else:
        rel = (value - item.committed) / abs(item.committed) * 100 if item.committed else 0.0
        judged = Judgement(judged.verdict,
                           f'{item.statistic} {value:.5g} {item.unit} is {abs(rel):.1f}% '
                           f'{"above" if rel >= 0 else "below"} the committed '
                           f'{item.committed:g} {item.unit} (tolerance {item.tolerance})'
                           + (f'; {judged.reason}' if judged.reason else ''), judged.bounds)
    return Result(item, runs, counted, value, judged, lower, {run.session for run in counted})


def repetitions(item, contract, recs, results_dir=None):
    """The test cases of ``item`` among store records ``recs``, newest first,
    each a :class:`Repetition` checked by :func:`check_run` (a test case
    that reported none of the item's figure is one that does not count)."""
    runs = []
    for rec in recs:
        if matches(item, contract, rec) and _of_figure(item, rec, recs):
            runs.append(_repetition(item, rec, results_dir))
    runs.sort(key=lambda run: run.rec.times.completed, reverse=True)
    return runs


def _of_figure(item, rec, recs):
    """True for ``rec`` of the item's figure, or for a test case's row
    without figures where the test case has no record of that figure."""
    if rec.figure == item.figure:
        return True
    return rec.figure == '' and not any(
        o.session == rec.session and o.test == rec.test and o.figure == item.figure
        for o in recs)


def _repetition(item, rec, results_dir):
    valid, why, used = check_run(item, rec, results_dir)
    if rec.figure == '' and rec.outcome.sanity_ok:
        valid, why = False, f'the test case reported no {item.figure}'
    return Repetition(rec, valid, why, used)


def _direction(runs):
    """True when a smaller value is better, as the newest run of the figure
    declared it (False without one)."""
    for run in runs:
        if run.rec.figure:
            return run.rec.lower_is_better
    return False


def _unmeasured(item, runs, counted):
    """The Judgement of an item without enough valid runs."""
    if not runs:
        return Judgement(Verdict.NOT_MEASURED, 'not measured: no run of this item')
    bad = [run for run in runs if not run.valid]
    return Judgement(Verdict.INVALID,
                     f'not measured validly: {len(counted)} valid run(s) of '
                     f'{item.repetitions} required'
                     + (f'; not counted: {bad[0].invalid_why}' if bad else '')
                     + (f' (and {len(bad) - 1} more)' if len(bad) > 1 else ''))


def candidate_sessions(contract, ids=(), now=None, db=None):
    """The stored sessions an acceptance may use: ``ids`` when given, else
    those of the contract's system and mode started within its
    ``reuse_within_days`` (none when that is 0)."""
    if ids:
        return load_sessions(db, ids=ids)
    if contract.reuse_within_days <= 0 or not (store_paths() or Path(db or _db()).is_file()):
        return []           # nothing to reuse: no results database yet
    since = (now or time.time()) - contract.reuse_within_days * 86400
    return load_sessions(db, since=since, system=contract.system, mode=contract.mode)


def judge_contract(contract, recs, results_dir=None):
    """``[Result]`` of every item of ``contract`` on the figure store's
    records ``recs`` (:func:`~clusterproof.store.sessions.records` of the
    candidate sessions, run times too)."""
    return [judge_item(item, contract, recs, results_dir) for item in contract.items]


def needed(judged):
    """``{item: runs still needed}`` for the items without enough valid runs
    (what ``acceptance --contract`` runs)."""
    return {r.item: r.item.repetitions - len(r.counted) for r in judged
            if len(r.counted) < r.item.repetitions}


def not_judged(judged, recs):
    """The figures of ``recs`` that were measured and that no item of
    ``judged`` (``[Result]``) covers (a figure without a reference, or beside
    a contract's items), one per test case and figure: ``{test, partition, figure, unit,
    median, n}``, sorted. Shown, never counted."""
    covered = {(x.session, x.test, r.item.figure) for r in judged for x in r.runs}
    groups = {}
    for r in recs:
        if r.figure and r.outcome.sanity_ok and math.isfinite(r.value) and \
                (r.session, r.test, r.figure) not in covered:
            groups.setdefault((r.test, r.system, r.partition, r.figure, r.unit), []).append(
                r.value)
    return [{'test': test, 'partition': f'{system}:{part}', 'figure': figure, 'unit': unit,
             'median': statistic('median', vals, False), 'n': len(vals)}
            for (test, system, part, figure, unit), vals in sorted(groups.items())]
