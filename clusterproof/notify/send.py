"""One notification run: the items found (:mod:`.items`), filtered through
the site's settings and :func:`~clusterproof.notify.items.to_send`, queued
in the ledger (:mod:`.ledger`) before anything is sent, then, channel by
channel, what is pending sent in one message, retried a bounded number of
times; the ledger records what each channel took. A channel that stays down
keeps its items pending for the next run; the others go on.
"""

import dataclasses
import datetime
import sys
import time
from dataclasses import dataclass

from clusterproof import ClusterproofError
from clusterproof import store as st
from clusterproof.analysis import findings, triage
from clusterproof.notify import channels, config, items, ledger, message
from clusterproof.notify.items import Item, to_send
from clusterproof.paths import results_db, results_dir
from clusterproof.store.sessions import load_sessions, store_paths

#: exit status when a channel did not take its message (its items are kept
#: in the ledger and sent by the next run)
NOT_SENT = 4


@dataclass
class Outcome:
    channel: str
    sent: object = None     # the Message sent; None: nothing to send
    error: str = ''         # why it was not sent (after every attempt)
    pending: int = 0        # items left pending on the channel
    attempts: int = 0


def _attempt(cfg, channel, msg, now, sleep, log):
    delay = cfg.retry_delay
    for attempt in range(1, cfg.retries + 1):
        try:
            channels.SEND[channel](cfg, msg, now)
            return attempt, ''
        except (channels.ChannelError, ClusterproofError) as err:
            error = str(err)
            if isinstance(err, ClusterproofError):
                return attempt, error       # a setting (a secret unreadable): no retry
            log(f'notify: {channel}: attempt {attempt} of {cfg.retries}: {error}')
            if attempt < cfg.retries:
                sleep(delay)
                delay *= 2
    return cfg.retries, error


def run(cfg, items, results, now=None, sleep=time.sleep, log=None, triaged=frozenset()):
    """Send the new ``items`` (:class:`~clusterproof.notify.items.Item`) and
    whatever earlier runs left pending on each channel of ``cfg``, but those
    whose id is in ``triaged`` (a person gave them a verdict; see
    :func:`~clusterproof.notify.items.to_send`: a pending one is dropped,
    and said); then forget what the ledger no longer needs to keep
    (:meth:`~clusterproof.notify.ledger.Ledger.forget`). Returns one
    :class:`Outcome` per channel."""
    log = log or (lambda text: print(text, file=sys.stderr))
    now = time.time() if now is None else now
    day = datetime.datetime.fromtimestamp(now, datetime.timezone.utc).strftime('%Y-%m-%d')
    fresh = to_send([i for i in items if i.kind in cfg.kinds], triaged)
    out = []
    with ledger.opened(results) as led:
        led.saw(items, now)
        for channel in cfg.channels:
            led.queue(channel, fresh, now)
        _drop(cfg, led, triaged, log)
        led.save()                  # what was found is kept before anything is sent
        for channel, ch in cfg.channels.items():
            pending = [Item.from_dict(d) for d in led.pending(channel).values()
                       if d['system'] == cfg.system]
            if pending:
                msg = message.render(pending, cfg)
            elif ch.get('heartbeat') and led.last_heartbeat(channel, cfg.system) != day:
                msg = message.all_clear(cfg, day)
            else:
                out.append(Outcome(channel))
                continue
            attempts, error = _attempt(cfg, channel, msg, now, sleep, log)
            if error:
                out.append(Outcome(channel, None, error, len(pending), attempts))
                continue
            if pending:
                led.mark_sent(channel, [i.id for i in pending],
                              datetime.datetime.fromtimestamp(
                                  now, datetime.timezone.utc).isoformat(timespec='seconds'))
            else:
                led.mark_heartbeat(channel, cfg.system, day)
            led.save()
            out.append(Outcome(channel, msg, '', 0, attempts))
        if led.forget(cfg.system, cfg.channels, now, cfg.forget_after * 86400):
            led.save()
    return out


def _drop(cfg, led, triaged, log):
    """Take off the ledger the items of ``cfg.system`` pending on a channel
    that a person has triaged since (``triaged``), or that ``cfg`` no longer
    has, saying so with ``log``."""
    for channel in list(led.data['channels']):
        mine = [i for i, d in led.pending(channel).items() if d['system'] == cfg.system]
        if channel not in cfg.channels:
            if n := led.drop(channel, mine):
                log(f'notify: {channel}: {n} item(s) of {cfg.system} pending for a '
                    f'channel {cfg.path} no longer has: dropped')
        elif n := led.drop(channel, [i for i in mine if i in triaged]):
            log(f'notify: {channel}: {n} item(s) triaged before they could be sent: dropped')


# -- what the commands call ------------------------------------------------------------

def settings(system, path=None):
    """The :class:`~clusterproof.notify.config.Config` of ``system`` (or of
    the file ``path``), or None, said on stderr, when it has no settings
    file: such a system is not notified."""
    if path is None:
        path = config.path_of(system)
        if not path.exists():
            print(f'notify: no notification settings for system {system} ({path}); '
                  f'nothing sent', file=sys.stderr)
            return None
    return config.load(path, system)


def items_of_session(cfg, session):
    """``(items, triaged)``: the items of ``session`` (a
    :class:`~clusterproof.store.sessions.Session`) on ``cfg.system``, its
    regressions and failures (each beginning where its failure began in the
    figure store) and the standing changes the detector kept that
    `clusterproof changes` lists (:func:`clusterproof.analysis.findings.listed`,
    :func:`clusterproof.notify.items.of_session_and_changes`); and the ids of those a
    person has triaged (:func:`clusterproof.analysis.triage.triaged`)."""
    stores = findings.stores_read()
    (found, *_), _, now = findings.detect_kept(stores, system=cfg.system)
    findings.note(now)
    found = findings.listed(found)
    recs = [r for r in session.recs if r.system == cfg.system]
    got = items.of_session_and_changes(dataclasses.replace(session, recs=recs),
                                       st.scan(stores), found, cfg.min_change)
    return got, triage.triaged(triage.read_all(stores), found)


def notify(cfg, found, results=None, out=None, triaged=None):
    """Send ``found`` (items) under ``cfg``, but those whose id is in
    ``triaged`` (default: the findings triaged in the stores read, see
    :func:`clusterproof.analysis.triage.triaged`), saying on ``out`` (default
    stdout) what each channel took and on stderr what it did not; returns
    the exit status: 0, or :data:`NOT_SENT`."""
    out = out or sys.stdout
    if triaged is None:
        triaged = _triaged()
    status = 0
    for o in run(cfg, found, results or results_dir(), triaged=triaged):
        if o.error:
            status = NOT_SENT
            print(f'notify: {o.channel}: NOT SENT after {o.attempts} attempt(s): {o.error}; '
                  f'{o.pending} item(s) kept for the next run', file=sys.stderr)
        elif o.sent is None:
            print(f'notify: {o.channel}: nothing new', file=out)
        else:
            n = len(o.sent.items)
            print(f'notify: {o.channel}: sent "{o.sent.subject}"'
                  + (f' ({n} item(s))' if n else ''), file=out)
    return status


def _triaged():
    """The ids triaged in the stores the commands read; none before there
    is any (a screening before the first nightly has no results database,
    and nothing triaged)."""
    if not store_paths() and not results_db().exists():
        return set()
    return triage.triaged(triage.read_all(findings.stores_read()))


def _guarded(system, send_them):
    """Run ``send_them(cfg)`` for ``system`` after another command's work:
    a system without settings is skipped; an error of the settings is said
    on stderr and gives exit status 2 without undoing that work."""
    try:
        cfg = settings(system)
        return 0 if cfg is None else send_them(cfg)
    except ClusterproofError as err:
        print(f'notify: error: {err}; nothing sent', file=sys.stderr)
        return 2


def after_session(system, session_id):
    """Notify of what is new in session ``session_id`` on ``system`` (after
    ``clusterproof acceptance``); returns the exit status of :func:`notify`."""
    def send_them(cfg):
        [session] = load_sessions(ids=[session_id], system=system)
        got, triaged = items_of_session(cfg, session)
        return notify(cfg, got, triaged=triaged)
    return _guarded(system, send_them)


def after_screening(system, outliers, screening_id, when=None):
    """Notify of the outliers of the screening ``screening_id`` of ``system``
    (node verdicts of :func:`clusterproof.screen.verdicts.outliers`: ``node``,
    ``partition``, ``worst`` and ``reason``), each under the id ``screen``
    prints for it (:func:`clusterproof.screen.output.finding_of`): the same
    screening judged again sends nothing new; another screening's outliers
    are its own findings. Said on stderr (screen's stdout may be JSON);
    returns the exit status of :func:`notify`."""
    from clusterproof.screen.output import named_by
    when = time.time() if when is None else when
    found = []
    for nv in outliers:
        pct = getattr(nv.worst, 'percent', None)
        found += items.of_outliers(system, nv.partition, [
            (nv.node, named_by(nv), None if pct is None else pct / 100,
             nv.reason or str(nv.verdict))], screening_id, when)
    return _guarded(system, lambda cfg: notify(cfg, found, out=sys.stderr))
