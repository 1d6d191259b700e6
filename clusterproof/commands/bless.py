"""``clusterproof bless``: references derived from measured sessions."""

import re

from tabulate import tabulate

from clusterproof import ClusterproofError
from clusterproof.analysis import bless
from clusterproof.commands import argtypes
from clusterproof.commands.selection import add_selection_args, select_sessions
from clusterproof.store.sessions import records


def register(subparsers):
    p = subparsers.add_parser(
        'bless', help='references derived from measured sessions',
        description='Derive reference values from sessions of the ReFrame results database '
                    'and show them against the current references of '
                    'site_config/references/<system>.yaml (CLUSTERPROOF_REFERENCES sets '
                    'the directory). Reference = median of the sessions (or --percentile); '
                    'tolerance = 3 standard deviations over the reference, at least 2%%, at most '
                    '50%%; a lower bound for throughputs, an upper bound for times and latencies. '
                    'Refuses failed tests, smoke sizes, emulated hardware and mixed binary '
                    'versions; a skipped test blesses nothing and keeps its old references. '
                    'Writes only with --write, recording --reason in the file and '
                    'in <system>.history. With --allow-emulated, blesses emulated results '
                    '(the local cluster, pmem on tmpfs) into <system>.emulated.yaml, against '
                    'which compare judges emulated results and nothing else.')
    add_selection_args(p)
    p.add_argument('--check', metavar='REGEX', type=argtypes.regex,
                   help='only tests whose name matches (e.g. "^IOR"); others keep their '
                        'references')
    p.add_argument('--percentile', type=argtypes.number(0, 100, 'a percentile'), metavar='P',
                   help='reference = the P-th percentile instead of the median '
                        '(e.g. 5 for throughputs)')
    p.add_argument('--nsigma', type=argtypes.number(0, 1000, 'a number of standard deviations'),
                   default=bless.DEFAULT_NSIGMA,
                   help='tolerance in standard deviations (default %(default)g)')
    p.add_argument('--min-tolerance', type=argtypes.percent,
                   default=bless.DEFAULT_MIN_TOLERANCE * 100,
                   metavar='PERCENT', help='smallest tolerance in percent (default %(default)g)')
    p.add_argument('--max-tolerance', type=argtypes.percent,
                   default=bless.DEFAULT_MAX_TOLERANCE * 100,
                   metavar='PERCENT', help='largest tolerance in percent (default %(default)g)')
    p.add_argument('--write', action='store_true', help='write the reference file')
    p.add_argument('--reason', help='why the references change (required with --write)')
    p.add_argument('--allow-smoke', action='store_true',
                   help='accept smoke-size results (demonstrations only: the file then says '
                        'FROM SMOKE SIZES)')
    p.add_argument('--allow-emulated', action='store_true',
                   help='bless emulated results (only those) into <system>.emulated.yaml: '
                        'references for emulated runs, never for hardware')
    p.set_defaults(func=run)


def run(args):
    if args.write and not (args.reason or '').strip():
        raise ClusterproofError('--reason is required with --write: say why the references '
                                'change (e.g. "acceptance sign-off", "BIOS update")')
    sessions = select_sessions(args, system=args.system, mode=args.mode)
    recs = records(sessions)
    if args.check:
        pat = re.compile(args.check)
        recs = [r for r in recs if pat.search(r.test)]
    if not recs:
        raise ClusterproofError('the selected sessions have no test cases'
                                + (f' matching --check {args.check!r}' if args.check else ''))
    systems = sorted({r.system for r in recs})
    if len(systems) > 1:
        raise ClusterproofError(f'the selected sessions ran on systems {", ".join(systems)}; '
                                f'choose one with --system')
    system = systems[0]
    print(f'bless: {len(sessions)} session(s) of system {system}: '
          + ', '.join(s.label() for s in sessions))
    refused = bless.refusals(recs, allow_smoke=args.allow_smoke,
                             allow_emulated=args.allow_emulated)
    if refused:
        print(f'bless: refused, {len(refused)} problem(s):')
        for r in refused:
            print(f'  {r}')
        print('Select other sessions (--session/--last/--since) or tests (--check).')
        return 2
    for test, why in sorted(bless.skipped(recs).items()):
        print(f'not blessed: {test}: {why}')
    ref_path = bless.reference_file(system, emulated=args.allow_emulated)
    existing = bless.load_references(system, ref_path)
    good = [r for r in recs if r.figure]
    new = bless.derive(good, existing, pct=args.percentile, nsigma=args.nsigma,
                       min_tolerance=args.min_tolerance / 100,
                       max_tolerance=args.max_tolerance / 100)
    if not new:
        raise ClusterproofError('the selected test cases have no performance figures')
    rows = bless.diff_rows(existing, new)
    print(f'references of {ref_path} (old -> new):')
    print(_table(('check', 'index', 'figure', 'old', 'new', 'change'), rows))
    for n in new:
        if n.wide:
            print(f'WARNING: {n.check} {" ".join(map(str, n.path))} {n.figure}: the sessions '
                  f'spread so much ({", ".join(f"{v:.4g}" for v in n.values)}) that the '
                  f'tolerance exceeds 20%; it will only catch large regressions')
    if any(n.smoke for n in new):
        print('NOTE: from smoke sizes (--allow-smoke): these are no references for real runs')
    if args.allow_emulated:
        print('NOTE: from emulated runs (--allow-emulated): they judge emulated runs only')
    if not args.write:
        print('Nothing written; add --write --reason "..." to write these references.')
        return 0
    path = bless.write_references(system, new, args.reason, sessions, pct=args.percentile,
                                  nsigma=args.nsigma, min_tolerance=args.min_tolerance / 100,
                                  path=ref_path)
    print(f'wrote {path} ({len(new)} figure(s)); history in {path.with_suffix(".history")}')
    return 0


def _table(header, rows):
    return tabulate([tuple(map(str, r)) for r in rows], headers=header, tablefmt='simple',
                    disable_numparse=True)
