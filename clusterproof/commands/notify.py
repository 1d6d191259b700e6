"""``clusterproof notify``: what is new in a session and needs a person
(regressions against the reference, failed test cases, changes found by the
detector), sent once on the channels of ``site_config/notify/<system>.yaml``
(:mod:`clusterproof.notify`; docs/notify.md)."""

from clusterproof import ClusterproofError
from clusterproof.commands.selection import add_store_arg
from clusterproof.notify import items, message, send
from clusterproof.store.sessions import load_sessions


def register(subparsers):
    p = subparsers.add_parser(
        'notify', help='what is new and needs a person, sent once (Alertmanager, e-mail, chat)',
        description='Find what is new in SESSION (default: the newest) and needs a person: '
                    'regressions against the references and failed test cases, as compare '
                    'judges them (a regression that persists is one finding, since the first '
                    'night it failed, with the id clusterproof triage accepts), and the '
                    'standing changes the change detector found, of at least '
                    'min_change_percent. Send what no earlier run sent, on each '
                    'channel of site_config/notify/<system>.yaml (or $CLUSTERPROOF_NOTIFY_CONFIG'
                    '/<system>.yaml, or --config): a Prometheus Alertmanager (v2 API), e-mail '
                    '(SMTP) and a chat webhook. More than summarise_above items: one message '
                    'that summarises. The ledger <results>/notify/ledger.json records what '
                    'each channel took; a channel that stays down after its retries keeps its '
                    'items for the next run. A system without a settings file: nothing is '
                    'sent, exit 0. A finding a person has triaged (clusterproof triage, any '
                    'state but untriaged) is not sent (kept for a channel that was down: '
                    'dropped, and said). The ledger forgets an item of the system pending on '
                    'none of its channels that no run found for forget_after_days (30). Exit '
                    'status 0 when every channel took '
                    f'its message (or had nothing to send), {send.NOT_SENT} when one did not, '
                    '2 on an error. See docs/notify.md.')
    p.add_argument('sessions', nargs='?', metavar='SESSION',
                   help='session uuid or unique prefix (default: the newest)')
    p.add_argument('--system', help="the system (default: the session's, when it has one)")
    p.add_argument('--config', metavar='FILE',
                   help='the settings file (default: site_config/notify/<system>.yaml)')
    p.add_argument('--dry-run', action='store_true',
                   help='print the messages that would be sent; send nothing, record nothing')
    add_store_arg(p)
    p.set_defaults(func=run)


def run(args):
    ids = [args.sessions] if args.sessions else []
    newest = load_sessions(ids=ids, last=None if ids else 1, system=args.system)
    if not newest or not newest[0].recs:
        raise ClusterproofError('no session to notify of'
                                + (f' on system {args.system}' if args.system else ''))
    session = newest[0]
    system = args.system
    if not system:
        if len(session.systems) != 1:
            raise ClusterproofError(f'session {session.label()} ran on systems '
                                    f'{", ".join(session.systems) or "none"}: choose one with '
                                    f'--system')
        system = session.systems[0]
    cfg = send.settings(system, args.config)
    if cfg is None:
        return 0
    found, triaged = send.items_of_session(cfg, session)
    if args.dry_run:
        fresh = items.to_send([i for i in found if i.kind in cfg.kinds], triaged)
        print(message.render(fresh, cfg).text if fresh else
              f'notify: nothing needs a person on {system}')
        return 0
    return send.notify(cfg, found, triaged=triaged)
