"""``clusterproof acceptance``: the full methodology in mode acceptance,
repeated, with a verdict per item against the declared references.

The items are the references the system declares, not what happened to run:
every referenced (test, index values, figure) that was not measured in
every repetition FAILS with the reason (``skipped: <reason>``, ``failed in
<phase>: <reason>``, ``absent: not run``); what was measured is judged on
the median of the repetitions. A failed test case is always an item that
fails; a skipped one without a reference is listed, not counted.
"""

import math
import os
import re
import shlex
import statistics
import subprocess
import sys

from clusterproof import ClusterproofError
from clusterproof.results import report
from clusterproof.references.judge import (FAILING, declared, judge_reference, load_references,
                                           locate, reference_file)
from clusterproof.commands.report import write_atomic
from clusterproof.modes import ENV_VAR
from clusterproof.paths import CHECKS_DIR, REPO, SETTINGS_FILE, results_dir
from clusterproof.results.database import load_sessions, records
from clusterproof.site.validate import find_system, load_site_configuration

_UUID_RE = re.compile(r'Current session stored with UUID: ([0-9a-f-]+)')


def register(subparsers):
    p = subparsers.add_parser(
        'acceptance', help='the full methodology, three repetitions, a verdict',
        description='Run the checks (reframe --mode acceptance) on SYSTEM --repetitions times (each '
                    'a ReFrame session in the results database), judge the median of each '
                    'figure against the declared references of '
                    'site_config/references/<system>.yaml (the vendor\'s or the site\'s), '
                    'write an HTML report with a verdict per item, and print the bless '
                    'command that freezes the measurements as references after sign-off. '
                    'Every referenced test, index value and figure is an item: one not '
                    'measured in every repetition fails (skipped: reason, failed in phase: '
                    'reason, absent: not run). Exit status 1 when an item is not passed, '
                    'or when ReFrame exited non-zero for a reason no item shows.')
    p.add_argument('--system', required=True, help='the system under acceptance')
    p.add_argument('--repetitions', type=int, default=3, help='sessions (default %(default)s)')
    p.add_argument('--checks', default=str(CHECKS_DIR), metavar='DIR',
                   help='check directory (default: reframe_checks)')
    p.add_argument('-o', '--output', metavar='FILE',
                   help='report (default: <results>/reports/acceptance-<system>.html)')
    p.add_argument('reframe_args', nargs='*', metavar='-- REFRAME_OPTION',
                   help='more reframe options after --, e.g. -- -n IOR')
    p.set_defaults(func=run)


def run(args):
    if args.repetitions < 1:
        raise ClusterproofError(f'--repetitions {args.repetitions}: give 1 or more')
    partitions = [p['name'] for p in
                  find_system(load_site_configuration(), args.system)['partitions']]
    # The mode is ReFrame's --mode; a CLUSTERPROOF_MODE left in the shell
    # would only contradict it.
    env = {k: v for k, v in os.environ.items() if k != ENV_VAR}
    env['RFM_CONFIG_FILES'] = os.environ.get('RFM_CONFIG_FILES', str(SETTINGS_FILE))
    reframe = os.path.join(os.path.dirname(sys.executable), 'reframe')
    cmd = [reframe, '-c', args.checks, '-r', '--mode', 'acceptance',
           '--system', args.system] + args.reframe_args
    uuids, statuses = [], []
    for i in range(1, args.repetitions + 1):
        print(f'acceptance: repetition {i}/{args.repetitions}: {shlex.join(cmd)}', flush=True)
        proc = subprocess.run(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
        sys.stdout.write(proc.stdout)
        found = _UUID_RE.findall(proc.stdout)
        if not found:
            raise ClusterproofError(f'repetition {i}: ReFrame stored no session (exit status '
                                    f'{proc.returncode}); see the output above')
        uuids.append(found[-1])
        statuses.append(proc.returncode)
    sessions = load_sessions(ids=uuids)
    recs = [r for r in records(sessions) if r.system == args.system]
    refs = load_references(args.system)
    verdicts, failed = verdict_table(recs, refs, args.system, partitions, uuids)
    out = args.output or results_dir() / 'reports' / f'acceptance-{args.system}.html'
    write_atomic(out, report.build(sessions, recs, {args.system: refs}, verdicts=verdicts,
                                   title=f'clusterproof acceptance of {args.system}'))
    print(f'\nacceptance of {args.system}: {len(verdicts)} item(s), {failed} not passed '
          f'(references: {reference_file(args.system)})')
    for item, value, ref, verdict in verdicts:
        head, why = verdict, ''
        if verdict.startswith('FAILED ('):
            head, why = 'FAILED', verdict[len('FAILED ('):-1]
            value = why + ('' if value == '-' else f'; measured {value}')
        print(f'  {head:<10} {item}: {value} (reference {ref})')
    unexplained = reframe_status(recs, uuids, statuses)
    for line in unexplained:
        print(line)
    print(f'report: {out}')
    sess_args = ' '.join(f'--session {u}' for u in uuids)
    print('\nAfter sign-off, freeze these measurements as the references of '
          f'{args.system}:\n  clusterproof bless --system {args.system} {sess_args} '
          f'--write --reason "acceptance sign-off"')
    return 1 if failed or unexplained else 0


def reframe_status(recs, uuids, statuses):
    """Lines for the repetitions where ReFrame exited non-zero with no test
    case of its session failing (so that no item shows why): each one fails
    the acceptance."""
    out = []
    for i, (uuid, status) in enumerate(zip(uuids, statuses), 1):
        if status and not any(r.session == uuid and r.result in ('fail', 'abort', 'xpass')
                              for r in recs):
            out.append(f'FAILED: repetition {i}: ReFrame exited with status {status} and no '
                       f'test case of its session {uuid[:8]} failed; see its output above')
    return out


def verdict_table(recs, refs, system, partitions, uuids):
    """``[(item, measured, reference, verdict)]`` and the count of items not
    passed, for ``recs`` of the sessions ``uuids`` (the repetitions) on
    ``system`` with ``partitions``, against parsed ``refs``.

    One item per declared reference (:func:`judge.declared`): the median of
    its values judged when it was measured in every repetition, else
    ``FAILED (<why>)``. Then figures without a reference (``no-ref``, not
    counted), failed test cases no item shows (``FAILED``, counted) and
    skipped ones without a reference (``skipped``, not counted)."""
    by_where = {}
    for r in recs:
        where = locate(refs, r)
        if where is not None:
            by_where.setdefault(where, []).append(r)
    rows, failed = [], 0
    items = sorted(declared(refs, system, partitions), key=lambda d: d.label())
    covered, shown = set(), set()
    for d in items:
        rs = by_where.get(d.where, [])
        covered |= {id(r) for r in rs if r.figure == d.figure}
        measured = [r for r in rs if r.figure == d.figure and r.sanity_ok
                    and math.isfinite(r.value)]
        missing = [u for u in uuids if not any(r.session == u for r in measured)]
        if missing:
            why, cases = _why_missing(d, rs, missing, uuids)
            shown |= cases
            rows.append((d.label(), _value(measured), str(d.reference), f'FAILED ({why})'))
            failed += 1
            continue
        verdict, bad = _judged(measured, d.reference)
        failed += bad
        rows.append((_flagged(d.label(), measured), _value(measured), str(d.reference),
                     verdict))
    groups = {}
    for r in recs:
        if r.figure and r.sanity_ok and id(r) not in covered:
            groups.setdefault(('fig', r.test, r.partition, r.figure), []).append(r)
        elif not r.sanity_ok and _case(r) not in shown:
            groups.setdefault(('case', r.test, r.partition, r.why), []).append(r)
    for (kind, test, part, what), rs in sorted(groups.items()):
        label = f'{test} @{system}:{part}'
        if kind == 'fig':
            rows.append((_flagged(f'{label} {what}', rs), _value(rs), 'none declared',
                         'no-ref'))
        elif rs[0].skipped:
            rows.append((f'{label} ({what})', '-', 'none declared', 'skipped'))
        else:
            rows.append((label, '-', '-', f'FAILED ({what})'))
            failed += 1
    return rows, failed


def _case(r):
    return (r.session, r.test, r.partition)


def _why_missing(d, rs, missing, uuids):
    """Why declared item ``d`` was not measured in the repetitions
    ``missing``: the failure of one of its test cases there, else a skip,
    else ``absent``; and the test cases that reason covers."""
    there = [r for r in rs if r.session in missing]
    problems = [r for r in there if not r.sanity_ok]
    first = next((r for r in problems if not r.skipped), None) or \
        (problems[0] if problems else None)
    if first is not None:
        why = first.why
    elif there:
        why = f'absent: the test ran but reported no {d.figure}'
    else:
        why = 'absent: not run'
    if len(missing) < len(uuids):
        reps = ', '.join(str(uuids.index(u) + 1) for u in missing)
        why += f' (repetition {reps} of {len(uuids)})'
    return why, {_case(r) for r in problems}


def _judged(measured, reference):
    """The verdict of the median of ``measured`` and 1 when it counts as not
    passed: a regression (``FAIL``), an ``xpass``, or smoke or emulated
    figures (never accepted); ``xfail`` (failed as expected) and ``better``
    do not count."""
    flags = sorted({f for r in measured for f in r.flags})
    med = statistics.median(r.value for r in measured)
    verdict = judge_reference(med, reference, measured[0].lower_is_better)
    if verdict == 'REGRESSION':
        verdict = 'FAIL'
    if flags and verdict != 'FAIL':
        return f'not accepted ({", ".join(flags)})', 1
    return verdict, int(verdict == 'FAIL' or verdict in FAILING)


def _flagged(label, rs):
    flags = sorted({f for r in rs for f in r.flags})
    return label + (f' [{", ".join(flags)}]' if flags else '')


def _value(rs):
    vals = [r.value for r in rs if math.isfinite(r.value)]
    if not vals:
        return '-'
    return f'{statistics.median(vals):.5g} {rs[0].unit} (n={len(vals)})'
