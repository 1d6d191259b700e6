"""``clusterproof compare``: a session against the references or another
session, and slow drift over the history; exit status 1 on a regression."""

import polars as pl

from clusterproof import ClusterproofError
from clusterproof.analysis import compare
from clusterproof.commands import argtypes
from clusterproof.commands.selection import add_store_arg
from clusterproof.references.entries import reference_file
from clusterproof.store import history
from clusterproof.store.sessions import load_sessions, records, select


def register(subparsers):
    p = subparsers.add_parser(
        'compare', help='sessions against each other or against references',
        description='Compare a session of the ReFrame results database with the references '
                    'of site_config/references/<system>.yaml (one SESSION, or none: the '
                    'newest), or with another session (BASE then SESSION). Prints a table '
                    'per test and figure: base value (reference or base session), value, '
                    'ratio, tolerance, verdict. Also looks for slow drift over the history '
                    'of the session\'s system: a rolling median worse than the reference by '
                    'more than --drift-percent, or a figure worse --drift-sessions sessions in '
                    'a row. Emulated results are judged only against references blessed '
                    'from emulated runs (<system>.emulated.yaml, bless --allow-emulated), '
                    'flagged emulated-ref. A reference marked $xfail gives xfail (failed as '
                    'expected) or xpass (the mark is stale); a row whose reference differs '
                    'from the one ReFrame judged it against when it ran is flagged '
                    'ref-changed with that reference; a skipped test is shown skipped with '
                    'its reason. A figure beyond a bound on its better side (a throughput '
                    'above an upper bound) is OUT-OF-BOUNDS, a failure as in ReFrame. Exit '
                    'status 1 on a regression, OUT-OF-BOUNDS, an xpass, a failed test or '
                    'drift; 0 otherwise.')
    p.add_argument('sessions', nargs='*', metavar='SESSION',
                   help='session uuid or unique prefix: SESSION, or BASE SESSION')
    p.add_argument('--system', help='only test cases that ran on this system')
    p.add_argument('--tolerance', type=argtypes.percent, default=compare.DEFAULT_TOLERANCE * 100,
                   metavar='PERCENT',
                   help='between sessions, for figures without a reference tolerance '
                        '(default %(default)g)')
    p.add_argument('--history', type=argtypes.count, default=30, metavar='N',
                   help='sessions of history searched for drift (default %(default)s; 0: no '
                        'drift check)')
    p.add_argument('--drift-window', type=argtypes.positive,
                   default=compare.DEFAULT_WINDOW, metavar='N',
                   help='rolling median over the last N sessions (default %(default)s)')
    p.add_argument('--drift-percent', type=argtypes.percent, default=compare.DEFAULT_DROP * 100,
                   metavar='X', help='drift when that median is X%% worse than the reference '
                                     '(default %(default)g)')
    p.add_argument('--drift-sessions', '--drift-nights', type=argtypes.count,
                   default=compare.DEFAULT_DRIFT_SESSIONS, metavar='N',
                   help='drift when a figure got worse N sessions in a row (default '
                        '%(default)s; 0: off; --drift-nights is its former name)')
    add_store_arg(p)
    p.add_argument('--mode', choices=('smoke', 'nightly', 'acceptance'),
                   help='history: only sessions of this mode (default: the mode of SESSION)')
    p.set_defaults(func=run)


def run(args):
    if len(args.sessions) > 2:
        raise ClusterproofError('give at most two sessions: SESSION, or BASE SESSION')
    if args.sessions:
        new = load_sessions(ids=[args.sessions[-1]], system=args.system)
    else:
        new = load_sessions(last=1, system=args.system)
    if not new or not new[0].recs:
        raise ClusterproofError('no session to compare'
                                + (f' on system {args.system}' if args.system else ''))
    session = new[0]
    new_recs = records(new)
    print(f'session {session.label()} ({", ".join(session.systems)}; mode '
          f'{"/".join(session.modes) or "?"}'
          + ('; SMOKE sizes' if session.smoke else '')
          + ('; EMULATED' if session.emulated else '') + ')')
    if len(args.sessions) == 2:
        base = load_sessions(ids=[args.sessions[0]], system=args.system)
        print(f'against session {base[0].label()}')
        rows = compare.against_session(records(base), new_recs,
                                       tolerance=args.tolerance / 100)
    else:
        print('against the references')
        rows = compare.against_references(new_recs)
        if any('emulated-ref' in row.flags for row in rows):
            files = sorted({str(reference_file(rec.system, emulated=True))
                            for rec in new_recs if rec.emulated})
            print(f'emulated figures against references blessed from emulated runs '
                  f'({", ".join(files)}): a check of the toolkit and this machine, '
                  f'not of hardware')
    print(compare.format_rows(rows))
    regressions = [row for row in rows if row.regression]
    status = 1 if regressions else 0
    counts = {}
    for row in rows:
        counts[row.verdict] = counts.get(row.verdict, 0) + 1
    print('verdicts: ' + ', '.join(f'{k} {v}' for k, v in sorted(counts.items())))

    if args.history > 0:
        mode = args.mode or (session.modes[0] if len(session.modes) == 1 else None)
        # drift over the history of the session's system, not of every system of a fleet
        own = args.system or (session.systems[0] if len(session.systems) == 1 else None)
        lf = select(last=args.history, system=own, mode=mode, until=session.start + 1e-3)
        newest = {rec.key: rec for rec in new_recs if rec.figure and not rec.smoke}
        hists = history.from_frame(lf, keys=set(newest))
        drifts = compare.drift_of({h.key: (newest[h.key], h.values) for h in hists},
                                  window=args.drift_window, drop=args.drift_percent / 100,
                                  in_a_row=args.drift_sessions)
        n_hist = lf.select('session').unique().select(pl.len()).collect().item()
        print(f'drift over {n_hist} session(s)'
              + (f' of mode {mode}' if mode else '') + ': '
              + (f'{len(drifts)} found' if drifts else 'none'))
        for drift in drifts:
            print(f'  DRIFT {drift.test} @{drift.system}:{drift.partition} {drift.figure}: '
                  f'{drift.detail}')
        if drifts:
            status = 1
    if regressions:
        print(f'{len(regressions)} regression(s)')
    return status
