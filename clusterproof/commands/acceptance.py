"""``clusterproof acceptance``: one acceptance, a contract judged item by
item (:mod:`clusterproof.acceptance`). With ``--contract`` the contract is
a file; with ``--system`` it is made from the system's declared references
(:func:`clusterproof.acceptance.contract.from_references`). Either is run,
judged, recorded and rendered the same way."""

from pathlib import Path

from tabulate import tabulate

from clusterproof import ClusterproofError
from clusterproof.acceptance import contract, record
from clusterproof.acceptance import report as acceptance_report
from clusterproof.acceptance import run as contract_run
from clusterproof.commands import argtypes
from clusterproof.notify import send as notify_send
from clusterproof.paths import CHECKS_DIR, write_atomic
from clusterproof.references.judge import Verdict
from clusterproof.references.lookup import load_references
from clusterproof.references.entries import reference_file
from clusterproof.site.validate import find_system, load_site_configuration


def register(subparsers):
    p = subparsers.add_parser(
        'acceptance', help='an acceptance: items judged, a record, a report to sign',
        description='Judge an acceptance item by item, write its JSON acceptance record '
                    '(<results>/acceptance/<name>-<time>.json) and its report page (the '
                    'record with the suffix .html; clusterproof acceptance-report prints it '
                    'to PDF). With --system: every reference of '
                    'site_config/references/<system>.yaml (the vendor\'s or the site\'s) '
                    'that applies to the system is an item, judged on the median of '
                    '--repetitions sessions of the checks (reframe --mode acceptance) run '
                    'now; an item not measured in every repetition is not measured (no run) '
                    'or invalid (runs, too few valid: skipped, failed, with the reason); a '
                    'failed test case no item shows fails the acceptance too; the bless '
                    'command that freezes the measurements as references after sign-off is '
                    'printed. Refused before anything runs (exit status 2) when S has no '
                    'references file, when none of its references applies to S, or when '
                    'the reframe options after -- select no check that has one: an '
                    'acceptance that judges nothing is not recorded as accepted (make '
                    'references with clusterproof bless, or pass --contract). '
                    'With --contract: the items of a procurement contract '
                    '(docs/acceptance.md), judged on valid runs only, reusing stored '
                    'sessions. Exit status 1 when an item fails or was not measured '
                    'validly, or when ReFrame exited non-zero for a reason no item shows.')
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument('--system', help='the system under acceptance, against its declared '
                                       'references')
    what.add_argument('--contract', metavar='FILE',
                      help='judge the items of this contract (a file, or a name in '
                           'site_config/contracts/; docs/acceptance.md): run what it names '
                           'unless the store holds enough valid recent runs; '
                           'a contract naming a check, parameter value '
                           'or figure that the checks do not have is refused before anything runs')
    p.add_argument('--from-store', action='store_true',
                   help='with --contract: judge on the sessions in the store only, run nothing')
    p.add_argument('--session', action='append', metavar='ID',
                   help='with --contract: judge on these stored sessions only (repeatable)')
    p.add_argument('--screening', metavar='JSON',
                   help='the node screening to keep in the record (what '
                        'clusterproof screen --format json printed)')
    p.add_argument('--record', metavar='FILE',
                   help='the acceptance record '
                        '(default: <results>/acceptance/<name>-<YYYYmmddTHHMMSS>.json; the '
                        'name is the contract\'s, or <system>-references)')
    p.add_argument('--repetitions', type=argtypes.positive, default=3,
                   help='with --system: sessions to run (default %(default)s; a contract sets '
                        'its own)')
    p.add_argument('--checks', default=str(CHECKS_DIR), metavar='DIR',
                   help='check directory (default: reframe_checks)')
    p.add_argument('-o', '--output', metavar='FILE', type=argtypes.output_file,
                   help='the acceptance report, HTML (default: the record with the suffix .html)')
    p.add_argument('reframe_args', nargs='*', metavar='-- REFRAME_OPTION',
                   help='with --system: more reframe options after --, e.g. -- -n IOR')
    p.set_defaults(func=run)


def run(args):
    if args.contract:
        return run_contract(args)
    if args.from_store or args.session:
        raise ClusterproofError('--from-store and --session go with --contract; --system runs '
                                'its --repetitions sessions now')
    return run_system(args)


def run_system(args):
    """``acceptance --system S``: the contract of S's declared references
    (:func:`clusterproof.acceptance.contract.from_references`), run
    --repetitions times and judged as any contract, its record and report
    written; the items printed one a line, then the bless command."""
    screening = _screening(args)
    partitions = [p['name'] for p in
                  find_system(load_site_configuration(), args.system)['partitions']]
    refs_file = reference_file(args.system)
    c = contract_run.check_selection(
        contract.from_references(args.system, partitions, load_references(args.system),
                                 refs_file, repetitions=args.repetitions,
                                 selection=args.reframe_args), checks=args.checks)
    done = contract_run.accept(c, checks=args.checks)
    judged = done.judged
    path, page = _write(args, c, done, screening)
    failed = [r for r in judged if r.failing]
    print(f'\nacceptance of {args.system}: {len(judged)} item(s), {len(failed)} not passed '
          f'(references: {refs_file})')
    for r in judged:
        it, why = r.item, r.judgement.reason
        value = why if r.measured is None else \
            f'{r.measured:.5g} {it.unit} (n={len(r.counted)})' + (f'; {why}' if why else '')
        print(f'  {r.judgement.verdict:<12} {it.id}: {value} (reference {it.reference})')
    for x in done.not_judged:
        print(f'  {Verdict.NO_REF:<12} {x["test"]} @{x["partition"]} {x["figure"]}: '
              f'{x["median"]:.5g} {x["unit"]} (n={x["n"]}; no reference: not an item)')
    for line in done.unexplained:
        print(line)
    print(f'record: {path}\nreport: {page}')
    # what is new and needs a person, sent once on the site's channels (docs/notify.md)
    if done.ran:
        notify_send.after_session(args.system, done.ran[-1])
    sess_args = ' '.join(f'--session {u}' for u in done.ran)
    print('\nAfter sign-off, freeze these measurements as the references of '
          f'{args.system}:\n  clusterproof bless --system {args.system} {sess_args} '
          f'--write --reason "acceptance sign-off"')
    return 1 if failed or done.unexplained else 0


def _screening(args):
    """The screening of ``--screening`` (None without), refused before
    anything runs when its report could not show it."""
    if not args.screening:
        return None
    return acceptance_report.check_screening(record.read_screening(args.screening),
                                             args.screening)


def _write(args, c, done, screening):
    """Write the acceptance record (``--record``, default under
    <results>/acceptance/) and its report page (``-o``, default the record
    with the suffix .html); their paths."""
    rec = record.build(c, done.judged, reused=done.reused, run=done.ran,
                       screening=screening, unexplained=done.unexplained,
                       not_judged=done.not_judged)
    path = record.write(args.record or record.default_path(c.name), rec)
    page = Path(args.output) if args.output else path.with_suffix('.html')
    write_atomic(page, acceptance_report.render_file(path))
    return path, page


def run_contract(args):
    """``acceptance --contract FILE``: judge the contract's items on the
    stored sessions it may reuse, run what still lacks valid runs (unless
    ``--from-store``), judge again, print, write the record."""
    if args.reframe_args:
        raise ClusterproofError('with --contract, the contract says what ReFrame runs '
                                '(its items\' check, parameters and set options)')
    checks = None if args.checks == str(CHECKS_DIR) else args.checks
    screening = _screening(args)
    c = contract_run.load(args.contract, checks=checks)
    done = contract_run.accept(c, ids=args.session or (), run_missing=not args.from_store,
                               checks=checks)
    judged, reused, ran = done.judged, done.reused, done.ran
    path, page = _write(args, c, done, screening)
    rec = record.read(path)
    print(f'\nacceptance of {c.system} against contract {c.name} ({rec["contract"]["file"]}), '
          f'mode {rec["mode"]}:')
    print(tabulate(_rows(judged), headers=_HEADERS, tablefmt='simple', disable_numparse=True))
    for r in judged:
        for x in r.runs:
            if not x.valid:
                print(f'  not counted: {r.item.id} session {x.session[:8]} ({x.test}): '
                      f'{x.invalid_why}')
    print(f'sessions reused from the store: {", ".join(u[:8] for u in reused) or "none"}; '
          f'run now: {", ".join(u[:8] for u in ran) or "none"}')
    unexplained = done.unexplained
    for line in unexplained:
        print(line)
    print(f'record: {path}\nreport: {page}\nthe report to sign as PDF: clusterproof '
          f'acceptance-report {path} --pdf {path.with_suffix(".pdf")}')
    if ran:     # what is new and needs a person, sent once on the site's channels (docs/notify.md)
        notify_send.after_session(c.system, ran[-1])
    failing = record.failures(judged)
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


def _rows(judged):
    out = []
    for r in judged:
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
