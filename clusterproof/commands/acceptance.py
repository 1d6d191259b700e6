"""``clusterproof acceptance``: the full methodology in mode acceptance,
repeated, with a verdict per item against the declared references (the
verdict table is :mod:`clusterproof.results.acceptance`; ReFrame is run by
:mod:`clusterproof.reframe_io.runner`); or, with ``--contract``, the items of
a procurement contract (:mod:`clusterproof.acceptance`)."""

import os
import shlex

from tabulate import tabulate

from clusterproof import ClusterproofError
from clusterproof.acceptance import record
from clusterproof.acceptance import run as contract_run
from clusterproof.modes import ENV_VAR
from clusterproof.notify import send as notify_send
from clusterproof.paths import CHECKS_DIR, SETTINGS_FILE, results_dir, write_atomic
from clusterproof.references.judge import Verdict, load_references, reference_file
from clusterproof.reframe_io import runner
from clusterproof.results import report
from clusterproof.results.acceptance import reframe_status, verdict_table
from clusterproof.store.sessions import load_sessions, records
from clusterproof.site.validate import find_system, load_site_configuration


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
                    'or when ReFrame exited non-zero for a reason no item shows. With '
                    '--contract instead of --system: the items of a procurement contract '
                    '(docs/acceptance.md), judged on valid runs only, reusing stored '
                    'sessions, with a JSON acceptance record.')
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument('--system', help='the system under acceptance (its declared references)')
    what.add_argument('--contract', metavar='FILE',
                      help='judge the items of this contract (a file, or a name in '
                           'site_config/contracts/; docs/acceptance.md): run what it names '
                           'unless the store holds enough valid recent runs, print the '
                           'table, write the acceptance record <results>/acceptance/'
                           '<name>-<time>.json; exit 1 when a committed item fails or was '
                           'not measured validly; a contract naming a check, parameter value '
                           'or figure that the checks do not have is refused before anything runs')
    p.add_argument('--from-store', action='store_true',
                   help='with --contract: judge on the sessions in the store only, run nothing')
    p.add_argument('--session', action='append', metavar='ID',
                   help='with --contract: judge on these stored sessions only (repeatable)')
    p.add_argument('--screening', metavar='JSON',
                   help='with --contract: the node screening to keep in the record (what '
                        'clusterproof screen --format json printed)')
    p.add_argument('--record', metavar='FILE',
                   help='with --contract: the acceptance record '
                        '(default: <results>/acceptance/<name>-<YYYYmmddTHHMMSS>.json)')
    p.add_argument('--repetitions', type=int, default=3,
                   help='sessions (default %(default)s; a contract sets its own)')
    p.add_argument('--checks', default=str(CHECKS_DIR), metavar='DIR',
                   help='check directory (default: reframe_checks)')
    p.add_argument('-o', '--output', metavar='FILE',
                   help='report (default: <results>/reports/acceptance-<system>.html)')
    p.add_argument('reframe_args', nargs='*', metavar='-- REFRAME_OPTION',
                   help='more reframe options after --, e.g. -- -n IOR')
    p.set_defaults(func=run)


def run(args):
    if args.contract:
        return run_contract(args)
    if args.from_store or args.session or args.record or args.screening:
        raise ClusterproofError('--from-store, --session, --record and --screening go with '
                                '--contract')
    if args.repetitions < 1:
        raise ClusterproofError(f'--repetitions {args.repetitions}: give 1 or more')
    partitions = [p['name'] for p in
                  find_system(load_site_configuration(), args.system)['partitions']]
    # The mode is ReFrame's --mode; a CLUSTERPROOF_MODE left in the shell
    # would only contradict it.
    env = {k: v for k, v in os.environ.items() if k != ENV_VAR}
    env['RFM_CONFIG_FILES'] = os.environ.get('RFM_CONFIG_FILES', str(SETTINGS_FILE))
    cmd = ['-c', args.checks, '-r', '--mode', 'acceptance',
           '--system', args.system] + args.reframe_args
    uuids, statuses = [], []
    for i in range(1, args.repetitions + 1):
        print(f'acceptance: repetition {i}/{args.repetitions}: '
              f'{shlex.join([runner.reframe_command()] + cmd)}', flush=True)
        try:
            done = runner.run(cmd, env=env, echo=True)
        except ClusterproofError as err:
            raise ClusterproofError(f'repetition {i}: {err}') from None
        uuids.append(done.uuid)
        statuses.append(done.returncode)
    sessions = load_sessions(ids=uuids)
    recs = [r for r in records(sessions) if r.system == args.system]
    refs = load_references(args.system)
    verdicts, failed = verdict_table(recs, refs, args.system, partitions, uuids)
    out = args.output or results_dir() / 'reports' / f'acceptance-{args.system}.html'
    write_atomic(out, report.build(sessions, recs, {args.system: refs}, verdicts=verdicts,
                                   title=f'clusterproof acceptance of {args.system}'))
    print(f'\nacceptance of {args.system}: {len(verdicts)} item(s), {failed} not passed '
          f'(references: {reference_file(args.system)})')
    for v in verdicts:
        value = v.measured
        if v.verdict == Verdict.FAILED:
            value = v.judgement.reason + ('' if value == '-' else f'; measured {value}')
        elif v.judgement.reason:
            value += f'; {v.judgement.reason}'
        print(f'  {v.verdict:<10} {v.item}: {value} (reference {v.reference})')
    unexplained = reframe_status(recs, uuids, statuses)
    for line in unexplained:
        print(line)
    print(f'report: {out}')
    # what is new and needs a person, sent once on the site's channels (docs/notify.md)
    notify_send.after_session(args.system, uuids[-1])
    sess_args = ' '.join(f'--session {u}' for u in uuids)
    print('\nAfter sign-off, freeze these measurements as the references of '
          f'{args.system}:\n  clusterproof bless --system {args.system} {sess_args} '
          f'--write --reason "acceptance sign-off"')
    return 1 if failed or unexplained else 0


def run_contract(args):
    """``acceptance --contract FILE``: judge the contract's items on the
    stored sessions it may reuse, run what still lacks valid runs (unless
    ``--from-store``), judge again, print, write the record."""
    if args.reframe_args:
        raise ClusterproofError('with --contract, the contract says what ReFrame runs '
                                '(its items\' check, parameters and set options)')
    checks = None if args.checks == str(CHECKS_DIR) else args.checks
    c = contract_run.load(args.contract, checks=checks)
    done = contract_run.accept(c, ids=args.session or (), run_missing=not args.from_store,
                               checks=checks)
    results, reused, ran = done.results, done.reused, done.ran
    rec = record.build(c, results, reused=reused, run=ran,
                       screening=record.read_screening(args.screening) if args.screening
                       else None)
    path = record.write(args.record or record.default_path(c.name), rec)
    print(f'\nacceptance of {c.system} against contract {c.name} ({rec["contract"]["file"]}), '
          f'mode {rec["mode"]}:')
    print(tabulate(_rows(results), headers=_HEADERS, tablefmt='simple', disable_numparse=True))
    for r in results:
        for x in r.runs:
            if not x.valid:
                print(f'  not counted: {r.item.id} session {x.session[:8]} ({x.test}): '
                      f'{x.invalid_why}')
    print(f'sessions reused from the store: {", ".join(u[:8] for u in reused) or "none"}; '
          f'run now: {", ".join(u[:8] for u in ran) or "none"}')
    unexplained = done.unexplained
    for line in unexplained:
        print(line)
    print(f'record: {path}\nthe report to sign: clusterproof acceptance-report {path} '
          f'--pdf {path.with_suffix(".pdf")}')
    failing = record.failures(results)
    if failing:
        print(f'REJECTED: {len(failing)} committed item(s) failed: {"; ".join(failing)}')
        return 1
    if unexplained:
        print('REJECTED: ReFrame failed for a reason no item shows (above)')
        return 1
    print(f'ACCEPTED: {rec["why"]}' + (f' ({rec["mode"]} results: function, not speed)'
                                        if rec['mode'] != 'full' else ''))
    return 0


_HEADERS = ('item', 'kind', 'committed', 'measured', 'runs', 'verdict', 'why')


def _rows(results):
    out = []
    for r in results:
        it = r.item
        spread = r.spread
        measured = '-' if r.measured is None else \
            f'{it.statistic} {r.measured:.5g} {it.unit}' + \
            (f' [{spread["min"]:.5g}..{spread["max"]:.5g}]' if spread['n'] > 1 else '')
        valid = sum(x.valid for x in r.runs)
        out.append((it.id, it.kind, f'{it.committed:g} {it.unit} {it.tolerance}', measured,
                    f'{len(r.counted)}/{it.repetitions} ({valid} valid of {len(r.runs)})',
                    record.item_verdict(r), r.judgement.reason))
    return out
