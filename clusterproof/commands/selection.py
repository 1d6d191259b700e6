"""The session selection every command line shares: ``--session``,
``--last``, ``--since``, ``--system``, ``--mode`` and ``--store``, turned
into the arguments of :func:`clusterproof.store.sessions.load_sessions`."""

import argparse
import re
import time
from pathlib import Path

from clusterproof import ClusterproofError
from clusterproof.commands import argtypes
from clusterproof.paths import results_db
from clusterproof.store.sessions import load_sessions, read_store

_SINCE_RE = re.compile(r'^(\d+(?:\.\d+)?)\s*([smhdw])$')
_SINCE_UNITS = {'s': 1, 'm': 60, 'h': 3600, 'd': 86400, 'w': 7 * 86400}


def parse_since(text, now=None):
    """``30d``, ``12h``, ``2w`` -> unix time that long before ``now``."""
    m = _SINCE_RE.match(text.strip())
    if not m:
        raise ClusterproofError(
            f'--since {text!r}: give a number and a unit s, m, h, d or w (e.g. 30d)')
    return (now or time.time()) - float(m.group(1)) * _SINCE_UNITS[m.group(2)]


def since_text(text):
    """``--since`` as typed, refused by argparse when :func:`parse_since`
    cannot read it."""
    try:
        parse_since(text)
    except ClusterproofError:
        raise argparse.ArgumentTypeError(f'{text!r}: give a number and a unit s, m, h, d or w '
                                         f'(e.g. 30d)') from None
    return text


class _StoreAction(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, read_store(Path(values)))


def add_store_arg(parser):
    """``--store DIR`` (repeatable): read these figure stores (a directory of
    stores is a fleet) instead of the results database."""
    parser.add_argument('--store', action=_StoreAction, metavar='DIR',
                        help='read this figure store, or every store in this directory (a '
                             'fleet), instead of the results database (repeatable; default: '
                             '$CLUSTERPROOF_STORE, else <results>/store, ingested first)')


def select_sessions(args, system=None, mode=None):
    """Sessions chosen on a command line: ``--session ID`` (repeatable),
    ``--last N``, ``--since 30d``; the newest session when none is given."""
    sessions = load_sessions(**selection(args, system, mode))
    if not sessions:
        none_selected(args, system, mode)
    return sessions


def selection(args, system=None, mode=None):
    """The arguments of :func:`load_sessions` (and :func:`select`) that a
    command line chooses (see :func:`select_sessions`)."""
    ids = getattr(args, 'session', None) or []
    since = parse_since(args.since) if getattr(args, 'since', None) else None
    last = getattr(args, 'last', None)
    if not ids and since is None and last is None:
        last = 1
    return dict(ids=ids, last=last, since=since, system=system, mode=mode)


def none_selected(args, system=None, mode=None):
    """Raise the error of a selection (see :func:`select_sessions`) that
    matched no session."""
    what = []
    if getattr(args, 'session', None):
        what.append('ids ' + ', '.join(args.session))
    if getattr(args, 'since', None):
        what.append(f'since {args.since}')
    if system:
        what.append(f'system {system}')
    if mode:
        what.append(f'mode {mode}')
    raise ClusterproofError(f'no sessions in {results_db()} match '
                            f'({"; ".join(what) or "any"})')


def add_selection_args(parser, default_help='the newest session'):
    g = parser.add_argument_group('session selection (ReFrame results database)')
    g.add_argument('--session', action='append', metavar='ID',
                   help='a session uuid or unique prefix (repeatable)')
    g.add_argument('--last', type=argtypes.positive, metavar='N', help='the newest N sessions')
    g.add_argument('--since', metavar='AGE', type=since_text,
                   help='sessions started within AGE, e.g. 30d, 12h')
    g.add_argument('--system', help='only test cases that ran on this system')
    g.add_argument('--mode', choices=('smoke', 'nightly', 'acceptance'),
                   help='only test cases run in this mode')
    add_store_arg(g)
    parser.epilog = ((parser.epilog or '') +
                     f' Without a selection: {default_help}. The database is '
                     f'$CLUSTERPROOF_RESULTS/results.db.')
