"""``clusterproof changes``: change points in the history of every figure,
with their size, confidence and what changed at that night."""

import datetime
import json

from clusterproof import ClusterproofError
from clusterproof.results import changes, history
from clusterproof.results.database import add_selection_args, parse_since


def register(subparsers):
    p = subparsers.add_parser(
        'changes', help='change points in the history of every figure',
        description='Find where each figure moved to a new level, as the nightly runs would '
                    'have found it (each night sees only the history up to that night). '
                    'Reads the ReFrame results database, or history kept elsewhere: '
                    'perflogs (files or directories) and CSV files with the header '
                    'timestamp,system,partition,test,figure,value,unit (further columns are '
                    'provenance). Nothing is written. Each change: the figure, the time of the '
                    'first session after it, its signed size with its standard error, the '
                    'confidence, and what changed in the provenance (binary version, Spack '
                    'spec and lock hash, configuration hash, project revision, ReFrame '
                    'version, nodes). A figure too noisy to detect a useful change is listed '
                    'as such and raises nothing. These are not verdicts against the '
                    'references: that is clusterproof compare.')
    p.add_argument('sources', nargs='*', metavar='PATH',
                   help='perflog files or directories, *.csv, or a results database *.db '
                        '(default: the results database)')
    add_selection_args(p, default_help='every session of the database')
    p.add_argument('--test', metavar='TEXT', help='only tests whose name contains TEXT')
    p.add_argument('--figure', metavar='NAME', help='only this figure')
    p.add_argument('--format', choices=('table', 'json'), default='table')
    p.add_argument('--all', action='store_true',
                   help='also list the noise of figures without a change')
    p.add_argument('--max-detectable', type=float,
                   default=changes.DEFAULT_MAX_DETECTABLE * 100, metavar='PERCENT',
                   help='a figure whose minimum detectable change is larger is too noisy '
                        'to judge (default %(default)g)')
    p.set_defaults(func=run)


def run(args):
    hists = _load(args)
    settings = changes.Settings(max_detectable=args.max_detectable / 100)
    hists = [h for h in hists if (not args.test or args.test in h.test)
             and (not args.figure or h.figure == args.figure)]
    found, quiet, noisy, skipped = detect(hists, settings)
    if args.format == 'json':
        print(json.dumps(found, indent=1))
        return 0
    _print_table(found, noisy, quiet if args.all else [], skipped, len(hists))
    return 0


def detect(hists, settings=None):
    """``(found, quiet, noisy, skipped)`` of ``hists``: the changes (dicts
    with their summary, largest first), the figures without a change, those
    too noisy to judge and those not judged (with the reason)."""
    settings = settings or changes.Settings()
    found, quiet, noisy, skipped = [], [], [], []
    for h in hists:
        if any(v <= 0 for v in h.values):
            skipped.append((h, 'values <= 0'))
            continue
        cps = changes.scan(h.values, settings) if len(h.points) > 1 else []
        fn = changes.figure_noise(h.values, cps, settings) if len(h.points) > 1 else None
        if fn is not None and fn.too_noisy:
            noisy.append((h, fn))
            continue
        if not cps:
            quiet.append((h, fn))
        for c in cps:
            found.append(_finding(h, c, fn))
    for f in found:
        f['summary'] = summary(f)
    found.sort(key=lambda f: (-abs(f['change']), f['system'], f['test'], f['figure']))
    return found, quiet, noisy, skipped


def _load(args):
    if args.sources:
        if args.session or args.last or args.since or args.mode:
            raise ClusterproofError('--session, --last, --since and --mode select sessions of '
                                    'the results database; not with PATH arguments')
        hists = history.load(args.sources)
        if args.system:
            hists = [h for h in hists if h.system == args.system]
    else:
        since = parse_since(args.since) if args.since else None
        hists = history.from_database(ids=args.session or (), last=args.last, since=since,
                                      system=args.system, mode=args.mode)
    if not hists:
        raise ClusterproofError('no figures in the history selected')
    return hists


def _finding(h, c, fn):
    first = h.points[c.at]
    return {
        'system': h.system, 'partition': h.partition, 'test': h.test, 'figure': h.figure,
        'unit': h.unit, 'flags': list(h.flags),
        'at': _iso(first.time), 'session': first.session, 'where': first.where,
        'change': round(c.change, 4), 'uncertainty': round(c.uncertainty, 4),
        'confidence': round(c.confidence, 4),
        'direction': _direction(h, c),
        'found': _iso(h.points[c.found].time),
        'sessions_before': c.n_before, 'sessions_after': c.n_after,
        'noise': None if fn is None else round(fn.noise, 4),
        'detectable': None if fn is None else round(fn.detectable, 4),
        'attribution': attribution(h.points, c),
    }


def summary(f):
    """One sentence: 'Stream triad -7.9 % since 2026-11-20 (session 3f2a1b2c):
    spack_lock_hash: a1b2 -> c3d4; nothing else changed'."""
    since = f['at'][:10] + (f' (session {f["session"][:8]})' if f['session'] else '')
    what = '; '.join(f['attribution'])
    what = (what + '; nothing else changed') if what else 'no recorded provenance changed'
    return (f'{f["test"]} {f["figure"]} {f["change"] * 100:+.1f}% since {since}: {what}')


def _direction(h, c):
    up = c.shift > 0
    return 'better' if up != h.lower_is_better else 'worse'


def _iso(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).isoformat()


def attribution(points, c):
    """What changed at the change point: provenance fields whose value in
    the sessions after it differs from every session before it (within the
    same segment), and for node lists the nodes common to the sessions after
    the change that no session before it used."""
    before = points[max(0, c.at - c.n_before):c.at]
    after = points[c.at:c.at + c.n_after]
    out = []
    keys = sorted({k for p in before + after for k in p.provenance})
    for k in keys:
        old = {p.provenance.get(k, '') for p in before}
        new = {p.provenance.get(k, '') for p in after}
        if k == 'job_nodelist':
            common = _common_nodes(after) - _common_nodes(before)
            if common and old != new:
                out.append(f'nodes: {", ".join(sorted(common))} in every session after, '
                           f'not in every one before')
            continue
        if new and not (new & old):
            out.append(f'{k}: {_short(old)} -> {_short(new)}')
    return out


def _common_nodes(points):
    sets = [set(filter(None, (p.provenance.get('job_nodelist') or '').split(',')))
            for p in points]
    return set.intersection(*sets) if sets else set()


def _short(values):
    vals = sorted(values)
    text = ', '.join((v[:12] + '...' if len(v) > 15 else v) or '(none)' for v in vals[:3])
    return text + (f' (+{len(vals) - 3})' if len(vals) > 3 else '')


def _print_table(found, noisy, quiet, skipped, total):
    print(f'{len(found)} change(s) in {total} figure(s); {len(noisy)} too noisy to judge')
    if found:
        header = ('figure', 'at', 'change', 'confidence', 'noise', 'attribution')
        rows = []
        for f in found:
            flags = f' [{",".join(f["flags"])}]' if f['flags'] else ''
            rows.append((f'{f["test"]} @{f["system"]}:{f["partition"]} {f["figure"]}{flags}',
                         f['at'][:16].replace('T', ' ')
                         + (f' ({f["session"][:8]})' if f['session'] else ''),
                         f'{f["change"] * 100:+.1f}% ±{f["uncertainty"] * 100:.1f}% '
                         f'{f["direction"]}',
                         f'{f["confidence"] * 100:.1f}%',
                         '-' if f['noise'] is None else
                         f'{f["noise"] * 100:.1f}% (>= {f["detectable"] * 100:.1f}%)',
                         '; '.join(f['attribution']) or 'no recorded provenance changed'))
        _table(header, rows)
    if noisy:
        print('\ntoo noisy to judge (minimum detectable change above the limit):')
        for h, fn in noisy:
            print(f'  {h.test} @{h.system}:{h.partition} {h.figure}: noise '
                  f'{fn.noise * 100:.1f}%, detects >= {fn.detectable * 100:.0f}%')
    if quiet:
        print('\nno change:')
        for h, fn in quiet:
            what = ('one session' if fn is None else
                    f'noise {fn.noise * 100:.1f}%, detects >= {fn.detectable * 100:.1f}%')
            print(f'  {h.test} @{h.system}:{h.partition} {h.figure}: {what}')
    for h, why in skipped:
        print(f'  not judged: {h.test} @{h.system}:{h.partition} {h.figure}: {why}')


def _table(header, rows):
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    fmt = '  '.join(f'{{:<{w}}}' for w in widths)
    print(fmt.format(*header).rstrip())
    for r in rows:
        print(fmt.format(*r).rstrip())

