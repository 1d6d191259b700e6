"""``clusterproof acceptance``: the full methodology in mode acceptance,
repeated, with a verdict per item against the declared references."""

import os
import re
import shlex
import statistics
import subprocess
import sys

from clusterproof import ClusterproofError
from clusterproof.results import report
from clusterproof.references.judge import judge, load_references, lookup, reference_file
from clusterproof.commands.report import write_atomic
from clusterproof.modes import ENV_VAR
from clusterproof.paths import CHECKS_DIR, REPO, SETTINGS_FILE, results_dir
from clusterproof.results.database import load_sessions, records

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
                    'Exit status 1 when an item fails.')
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
    # The mode is ReFrame's --mode; a CLUSTERPROOF_MODE left in the shell
    # would only contradict it.
    env = {k: v for k, v in os.environ.items() if k != ENV_VAR}
    env['RFM_CONFIG_FILES'] = os.environ.get('RFM_CONFIG_FILES', str(SETTINGS_FILE))
    reframe = os.path.join(os.path.dirname(sys.executable), 'reframe')
    cmd = [reframe, '-c', args.checks, '-r', '--mode', 'acceptance',
           '--system', args.system] + args.reframe_args
    uuids = []
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
    sessions = load_sessions(ids=uuids)
    recs = [r for r in records(sessions) if r.system == args.system]
    refs = load_references(args.system)
    verdicts, failed = verdict_table(recs, refs)
    out = args.output or results_dir() / 'reports' / f'acceptance-{args.system}.html'
    write_atomic(out, report.build(sessions, recs, {args.system: refs}, verdicts=verdicts,
                                   title=f'clusterproof acceptance of {args.system}'))
    print(f'\nacceptance of {args.system}: {len(verdicts)} item(s), {failed} not passed '
          f'(references: {reference_file(args.system)})')
    for item, value, ref, verdict in verdicts:
        print(f'  {verdict:<10} {item}: {value} (reference {ref})')
    print(f'report: {out}')
    sess_args = ' '.join(f'--session {u}' for u in uuids)
    print('\nAfter sign-off, freeze these measurements as the references of '
          f'{args.system}:\n  clusterproof bless --system {args.system} {sess_args} '
          f'--write --reason "acceptance sign-off"')
    return 1 if failed else 0


def verdict_table(recs, refs):
    """``[(item, measured, reference, verdict)]`` judging the median of the
    sessions' values of every figure; and the count of items not passed."""
    groups = {}
    for r in recs:
        groups.setdefault((r.test, r.partition, r.figure), []).append(r)
    rows, failed = [], 0
    for (test, part, figure), rs in sorted(groups.items()):
        flags = sorted({f for r in rs for f in r.flags})
        item = f'{test} @{rs[0].system}:{part} {figure or "(test)"}' + (
            f' [{", ".join(flags)}]' if flags else '')
        bad = [r for r in rs if not r.sanity_ok]
        if bad or not figure:
            rows.append((item, '-', '-', f'FAILED ({bad[0].result} in {bad[0].fail_phase})'
                         if bad else 'FAILED'))
            failed += 1
            continue
        med = statistics.median(r.value for r in rs)
        found = lookup(refs, rs[-1])
        if not found:
            rows.append((item, f'{med:.5g} {rs[0].unit}', 'none declared', 'no-ref'))
            continue
        verdict = judge(med, found[0], found[1], found[2], rs[0].lower_is_better)
        if verdict == 'REGRESSION':
            verdict = 'FAIL'
        if verdict == 'FAIL' or flags:
            failed += 1
        if flags and verdict != 'FAIL':
            verdict = f'not accepted ({", ".join(flags)})'
        lo = '' if found[1] is None else f' {found[1] * 100:+.0f}%'
        hi = '' if found[2] is None else f' {found[2] * 100:+.0f}%'
        rows.append((item, f'{med:.5g} {rs[0].unit} (n={len(rs)})',
                     f'{found[0]:g}{lo}{hi}', verdict))
    return rows, failed
