"""``clusterproof triage``: a person's verdict on a finding, kept in the
figure store (:mod:`clusterproof.analysis.triage`), and the site's own
false-alarm rate from those verdicts."""

import datetime
import re
import shlex

import polars as pl
from tabulate import tabulate

from clusterproof import ClusterproofError
from clusterproof import store as st
from clusterproof.analysis import findings, triage
from clusterproof.notify import ledger
from clusterproof.paths import results_dir


def register(subparsers):
    p = subparsers.add_parser(
        'triage', help="a person's verdict on a finding, and the false-alarm rate",
        description='Record a verdict on a finding (the id that clusterproof changes, '
                    'the morning page and clusterproof notify show: a change, a failure or '
                    'regression of the newest session of a system, or a finding a '
                    'notification named, a screening outlier too): investigating (being '
                    'looked at), expected (a planned change: an upgrade, a new image), '
                    'fixed, invalid (a false alarm), or untriaged (takes a verdict back). '
                    f'It is kept in the figure store ({triage.FILE}) with who gave it, '
                    'when, and the note; store ingest and rebuild never touch it. When '
                    'later nights move a change by up '
                    f'to {triage.WINDOW} sessions, its verdict follows it and the '
                    'listing says from which id; a change further away is a new finding. '
                    '"expected" prints the clusterproof bless command that makes the new '
                    'level the reference; nothing is blessed unless you run it. '
                    'With --summary: per system and check, the findings by state and the '
                    'false-alarm rate (invalid / triaged).')
    p.add_argument('id', nargs='?', metavar='ID', help='the finding (e.g. c3f2a1b2c4d)')
    p.add_argument('state', nargs='?', metavar='STATE', choices=triage.STATES,
                   help=f'one of: {", ".join(triage.STATES)}')
    p.add_argument('--note', default='', metavar='TEXT', help='why (kept with the verdict)')
    p.add_argument('--summary', action='store_true',
                   help='findings by state and the false-alarm rate, per system and check')
    p.add_argument('--since', metavar='DATE',
                   help='--summary: only findings that began on or after DATE (YYYY-MM-DD)')
    p.add_argument('--system', help='--summary: only this system')
    p.set_defaults(func=run)


def run(args):
    if args.summary:
        if args.id:
            raise ClusterproofError('--summary takes no ID nor STATE')
        return _summary(args)
    if not args.id or not args.state:
        raise ClusterproofError('give ID and STATE (e.g. clusterproof triage c3f2a1b2c4d '
                                'investigating), or --summary')
    if args.since or args.system:
        raise ClusterproofError('--since and --system go with --summary')
    stores = findings.stores_read()
    found, verdicts = _found(stores)
    f = _finding(args.id, found, verdicts, stores)
    sessions = where = None
    if 'session' in f:          # a change found now: its figure's sessions, its store
        where, sessions = _home(stores, f)
        kept = triage.change_finding(f, triage.near(sessions, f['session'] or f['at']),
                                     verdicts)
    else:               # a failure, a regression, or a verdict given before
        kept = f
        where = _home_of_system(stores, f['system'])
    v = triage.record(where, kept, args.state, args.note)
    print(f'{v["id"]}: {v["state"]} ({v["test"]} @{v["system"]}:{v["partition"]} '
          f'{v["figure"]}, since {v["at"][:16].replace("T", " ")}), by {v["who"]} at '
          f'{v["when"]}; kept in {triage.path_of(where)}')
    if args.state == 'expected' and (sessions is not None or f['kind'] == 'regression'):
        print('to make the new level the reference, bless the sessions since the '
              + ('change:' if sessions is not None else 'regression began:'))
        print('  ' + bless_command(stores, f, args.note))
    return 0


def _found(stores):
    (found, _q, _n, _s), _total, now = findings.detect_kept(stores)
    findings.note(now)
    return found, triage.read_all(stores)


def _finding(fid, found, verdicts, stores):
    """The change ``fid`` names, the failure or regression of a newest
    session, a finding a notification named (a screening outlier, a failure
    of an older session: the notification ledger keeps what it queued), or
    the newest verdict on ``fid`` (a finding no longer found); an unknown id
    is an error naming the nearest ones."""
    for f in found:
        if findings.change_id(f) == fid:
            return f
    failing = triage.failures(stores)
    for f in failing:
        if f['id'] == fid:
            return f
    item = ledger.item(results_dir(), fid)
    if item is not None:
        return _of_item(item)
    newest = triage.latest(verdicts)
    if fid in newest:
        return newest[fid]
    ids = [findings.change_id(f) for f in found] + [f['id'] for f in failing] + list(newest)
    near = triage.nearest(fid, ids)
    raise ClusterproofError(
        f'no finding has the id {fid!r} ({len(found)} change(s), {len(failing)} failure(s) '
        f'and regression(s) of the newest sessions, {len(newest)} finding(s) triaged)'
        + (f'; the nearest: {", ".join(near)}' if near else '')
        + '; clusterproof changes and the morning page list the ids')


def _of_item(item):
    """The triage fields of a notified item (a dict of
    :class:`clusterproof.notify.items.Item`)."""
    at = datetime.datetime.fromtimestamp(item['at'], datetime.timezone.utc).isoformat()
    return {**{k: item[k] for k in ('id', 'kind', 'system', 'partition', 'test', 'figure',
                                    'since')},
            'at': at, 'direction': None, 'near': [], 'flags': []}


def _home(stores, f):
    """The store that holds the figure of the change ``f``, and the
    figure's sessions there."""
    for s in stores:
        sessions = triage.figure_sessions([s], f)
        if (f['session'] or f['at']) in sessions:
            return s, sessions
    return stores[0], triage.figure_sessions(stores, f)


def _home_of_system(stores, system):
    """The store that holds ``system``'s figures (the first one, else)."""
    for s in stores:
        if st.scan([s]).filter(pl.col('system') == system).head(1).collect().height:
            return s
    return stores[0]


def bless_command(stores, f, note=''):
    """The ``clusterproof bless`` line that makes the level of the change
    or regression ``f`` the reference: its test, the sessions of its system
    since it began."""
    start = datetime.datetime.fromisoformat(f['at']).timestamp()
    after = [s for s, _ in st.session_starts(
        st.scan(list(stores)).filter((pl.col('system') == f['system'])
                                     & (pl.col('start') >= start - 1e-3)))]
    name = f['test'].partition(' +')[0]
    words = ['clusterproof', 'bless', '--system', f['system'],
             '--check', '^' + re.escape(name).replace('\\ ', ' ') + '$']
    words += [w for s in after for w in ('--session', s)] if len(after) <= 10 else \
        ['--last', str(len(after))]
    words += [f'--allow-{flag}' for flag in f.get('flags', ())]
    what = f'regression {f["id"]}' if f.get('kind') == 'regression' else \
        f'change {findings.change_id(f)}'
    reason = f'expected {what}' + (f': {note}' if note else '')
    words += ['--write', '--reason', reason]
    return shlex.join(words)


def _summary(args):
    since = None
    if args.since:
        try:
            since = datetime.date.fromisoformat(args.since).isoformat()
        except ValueError:
            raise ClusterproofError(f'--since {args.since!r}: give a date, YYYY-MM-DD') \
                from None
    stores = findings.stores_read()
    found, verdicts = _found(stores)
    listed = triage.states(found, verdicts)
    newest = triage.latest(verdicts)
    failing = [(f, newest[f['id']]['state'] if f['id'] in newest else triage.UNTRIAGED)
               for f in triage.failures(stores)]
    rows = [(f, state) for f, state, _v, _c in listed] + failing
    shown = {v['id'] for _f, _s, v, _c in listed if v} | {f['id'] for f, _s in failing}
    # verdicts on findings not found now (of other kinds; changes gone): still counted
    gone = shown | triage.replaced(verdicts)
    rows += [(v, v['state']) for v in newest.values()
             if v['id'] not in gone and v['state'] != triage.UNTRIAGED]
    rows = [(f, s) for f, s in rows if (not args.system or f['system'] == args.system)
            and (not since or f['at'][:10] >= since)]
    if not rows:
        raise ClusterproofError('no findings' + (f' of system {args.system}' if args.system
                                                 else '') + (f' since {since}' if since
                                                             else ''))
    table = [(system, check, *counts.values(),
              '-' if rate is None else f'{rate * 100:.0f}%')
             for system, check, counts, rate in triage.summary(rows)]
    print(tabulate(table, headers=('system', 'check', *triage.STATES, 'false alarms'),
                   tablefmt='plain', disable_numparse=True))
    triaged = sum(1 for _f, s in rows if s != triage.UNTRIAGED)
    invalid = sum(1 for _f, s in rows if s == 'invalid')
    print(f'\n{len(rows)} finding(s), {triaged} triaged, {invalid} invalid: false-alarm rate '
          + (f'{invalid / triaged * 100:.0f}%' if triaged else '- (nothing triaged)'))
    return 0
