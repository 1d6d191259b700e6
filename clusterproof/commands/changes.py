"""``clusterproof changes``: change points in the history of every figure,
with their size, confidence and what changed at that night."""

import json

from tabulate import tabulate

from clusterproof import ClusterproofError
from clusterproof.analysis import findings, triage
from clusterproof.analysis.detector import model
from clusterproof.commands import argtypes
from clusterproof.commands.selection import add_selection_args, parse_since
from clusterproof.store import history, sources


def register(subparsers):
    p = subparsers.add_parser(
        'changes', help='change points in the history of every figure',
        description='Find where each figure moved to a new level or drifted, two ways: as '
                    'the nightly runs would have found it (each night sees only the history '
                    'up to that night), and by a segmentation of the whole history; each '
                    'change says which found it, and nightly alarms that later sessions '
                    'disproved are listed as withdrawn. A short excursion after which the '
                    'level came back is one transient, not two changes; moves of a figure '
                    'that keeps flipping between two levels are not listed; a change of the '
                    'noise alone (a node that became jittery: the noise 1.5 times larger or '
                    'smaller while the level held) is listed as a change of noise; a periodic '
                    'component (a weekly backup on the nights of the run) is taken out first '
                    'and raises no change. A figure with a value of 0 or less is judged on '
                    'its values: its changes are shares of its typical magnitude (the median '
                    'absolute value). '
                    'Reads the ReFrame results database, or history kept elsewhere: '
                    'perflogs (files or directories) and CSV files with the header '
                    'timestamp,system,partition,test,figure,value,unit (further columns are '
                    'provenance). Nothing is written. Each change: the figure, the time of the '
                    'first session after it, its signed size with its standard error, the '
                    'confidence, and what changed in the provenance (binary version, Spack '
                    'spec and lock hash, configuration hash, project revision, ReFrame '
                    'version, nodes). A figure too noisy to detect a useful change within '
                    'a few sessions still lists the changes found, else it is listed as too '
                    'noisy. '
                    'These are not verdicts against the references: that is clusterproof '
                    'compare. Each change has an id and, where the figure store is read, the '
                    'verdict a person gave it with clusterproof triage (untriaged first).')
    p.add_argument('sources', nargs='*', metavar='PATH',
                   help='perflog files or directories, *.csv, or a results database *.db '
                        '(default: the results database)')
    add_selection_args(p, default_help='every session of the database')
    p.add_argument('--test', metavar='TEXT', help='only tests whose name contains TEXT')
    p.add_argument('--figure', metavar='NAME', help='only this figure')
    p.add_argument('--format', choices=('table', 'json'), default='table')
    p.add_argument('--untriaged', action='store_true',
                   help='only the changes nobody has given a verdict yet (clusterproof triage)')
    p.add_argument('--all', action='store_true',
                   help='also list the noise of figures without a change')
    p.add_argument('--max-detectable',
                   type=argtypes.number(above=0, high=argtypes.MAX_DETECTABLE_PERCENT,
                                        what='a percentage'),
                   default=model.DEFAULT_MAX_DETECTABLE * 100, metavar='PERCENT',
                   help='a figure whose minimum detectable change is larger is listed as '
                        'too noisy to judge when it has no change (default %(default)g)')
    p.add_argument('--min-change', type=argtypes.percent, metavar='PERCENT',
                   help='the smallest change that matters, for every figure: a change, '
                        'transient or drift smaller than PERCENT is not listed (default: '
                        'per check or figure from site_config/changes.yaml, else the '
                        'tolerance of the figure\'s reference, else 0: every change the '
                        'noise allows)')
    p.set_defaults(func=run)


def run(args):
    if args.min_change is not None and not args.min_change >= 0:
        raise ClusterproofError(f'--min-change {args.min_change:g}: the smallest change that '
                                'matters is a percentage of 0 or more (1 for one percent)')
    settings = model.Settings(max_detectable=args.max_detectable / 100,
                              min_change=(args.min_change or 0) / 100)
    min_change = None if args.min_change is None else args.min_change / 100
    if args.untriaged and args.sources:
        raise ClusterproofError('--untriaged: the verdicts are kept in the figure store; not '
                                'with PATH arguments')

    def wanted(h):
        return (not args.test or args.test in h.test) and (not args.figure
                                                          or h.figure == args.figure)
    if _kept_apply(args, settings):
        # the whole history of the store's figures, default settings: the
        # findings `clusterproof store ingest` keeps, where current
        (found, quiet, noisy, skipped), total, now = findings.detect_kept(
            findings.stores_read(), settings, system=args.system, want=wanted)
        if not total:
            raise ClusterproofError('no figures in the history selected')
        findings.note(now)
        found = findings.listed(found, min_change)
    else:
        hists = [h for h in _load(args) if wanted(h)]
        total = len(hists)
        found, quiet, noisy, skipped = findings.listing(hists, settings, min_change)
    verdicts = None if args.sources else triage.read_all(findings.stores_read())
    listed = triage.states(found, verdicts or [])
    if args.untriaged:
        listed = [r for r in listed if r[1] == triage.UNTRIAGED]
    found = [_with_verdict(f, state, v, carried, verdicts is not None)
             for f, state, v, carried in listed]
    if args.format == 'json':
        print(json.dumps(found, indent=1))
        return 0
    _print_table(found, noisy, quiet if args.all else [], skipped, total,
                 verdicts is not None)
    return 0


def _with_verdict(f, state, v, carried, kept):
    """``f`` with its id and, when the verdicts are read (``kept``), its
    state and the verdict (who, when, note; the id it was carried from)."""
    f = {'id': findings.change_id(f), **f}
    if kept:
        f['state'] = state
        f['verdict'] = v and {'who': v['who'], 'when': v['when'], 'note': v['note'],
                              'carried_from': carried}
    return f


def _kept_apply(args, settings):
    """Kept findings answer: the store's figures (no PATH), every session of
    their history, the detector's default settings."""
    return (not args.sources and not (args.session or args.last or args.since or args.mode)
            and findings.settings_digest(settings) == findings.settings_digest())


def _load(args):
    if args.sources:
        if args.session or args.last or args.since or args.mode:
            raise ClusterproofError('--session, --last, --since and --mode select sessions of '
                                    'the results database; not with PATH arguments')
        hists = sources.load(args.sources)
        if args.system:
            hists = [h for h in hists if h.system == args.system]
    else:
        since = parse_since(args.since) if args.since else None
        hists = history.from_database(ids=args.session or (), last=args.last, since=since,
                                      system=args.system, mode=args.mode)
    if not hists:
        raise ClusterproofError('no figures in the history selected')
    return hists


def _print_table(found, noisy, quiet, skipped, total, kept):
    withdrawn = [f for f in found if f['withdrawn']]
    found = [f for f in found if not f['withdrawn']]
    transients = sum(f['kind'] == 'transient' for f in found)
    noise = sum(f['kind'] == 'noise' for f in found)
    print(f'{len(found) - transients - noise} change(s) in {total} figure(s); '
          + (f'{transients} transient(s); ' if transients else '')
          + (f'{noise} change(s) of noise; ' if noise else '')
          + f'{len(noisy)} too noisy to judge; {len(withdrawn)} nightly alarm(s) withdrawn')
    if found:
        header = ('id', *(('state',) if kept else ()), 'figure', 'at', 'change', 'confidence',
                  'noise', 'found by', 'attribution')
        rows = []
        for f in found:
            drift = (f' drift {f["rate"] * 100:+.2f}%/session' if f['kind'] == 'drift'
                     else f' transient, {f["sessions_after"]} session(s), then back'
                     if f['kind'] == 'transient'
                     else f' noise x{f["change"] + 1:.2f}, level held' if f['kind'] == 'noise'
                     else '')
            flags = f' [{",".join(f["flags"])}]' if f['flags'] else ''
            rows.append((f['id'], *((_state(f),) if kept else ()),
                         f'{f["test"]} @{f["system"]}:{f["partition"]} {f["figure"]}{flags}',
                         f['at'][:16].replace('T', ' ')
                         + (f' ({f["session"][:8]})' if f['session'] else ''),
                         f'{f["change"] * 100:+.1f}% ±{f["uncertainty"] * 100:.1f}% '
                         f'{f["direction"]}{drift}',
                         f'{f["confidence"] * 100:.1f}%',
                         '-' if f['noise'] is None else
                         f'{f["noise"] * 100:.1f}% (>= {f["detectable"] * 100:.1f}%)',
                         _view(f),
                         '; '.join(f['attribution']) or 'no recorded provenance changed'))
        _table(header, rows)
    if withdrawn:
        print('\nnightly alarms withdrawn (later sessions do not confirm them):')
        for f in withdrawn:
            state = f' {_state(f)}' if kept else ''
            print(f'  {f["id"]}{state} {f["test"]} @{f["system"]}:{f["partition"]} '
                  f'{f["figure"]}: raised '
                  f'{f["found"][:16].replace("T", " ")}, {f["change"] * 100:+.1f}% '
                  f'±{f["uncertainty"] * 100:.1f}% over the sessions since')
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


def _state(f):
    v = f['verdict']
    return f['state'] + (f' (from {v["carried_from"]})' if v and v['carried_from'] else '')


def _view(f):
    if f['view'] == 'retrospective':
        return 'whole history'
    nightly = 'nightly ' + f['found'][:10]
    return nightly + (' + whole history' if f['view'] == 'both' else '')


def _table(header, rows):
    print(tabulate(rows, headers=header, tablefmt='plain', disable_numparse=True))

