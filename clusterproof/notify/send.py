"""One notification run: the items found (:mod:`.items`), filtered through
the site's settings and :func:`~clusterproof.notify.items.to_send`, queued
in the ledger (:mod:`.ledger`) before anything is sent, then, channel by
channel, what is pending sent in one message, retried a bounded number of
times; the ledger records what each channel took. A channel that stays down
keeps its items pending for the next run; the others go on.
"""

import datetime
import sys
import time
from dataclasses import dataclass

from clusterproof.notify import channels, ledger, message
from clusterproof import ClusterproofError
from clusterproof.notify.items import Item, to_send


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


def run(cfg, items, results, now=None, sleep=time.sleep, log=None):
    """Send the new ``items`` (:class:`~clusterproof.notify.items.Item`) and
    whatever earlier runs left pending on each channel of ``cfg``; return
    one :class:`Outcome` per channel."""
    log = log or (lambda text: print(text, file=sys.stderr))
    now = time.time() if now is None else now
    day = datetime.datetime.fromtimestamp(now, datetime.timezone.utc).strftime('%Y-%m-%d')
    fresh = to_send([i for i in items if i.kind in cfg.kinds])
    out = []
    with ledger.opened(results) as led:
        for channel in cfg.channels:
            led.queue(channel, fresh)
        led.save()                  # what was found is kept before anything is sent
        for channel, ch in cfg.channels.items():
            pending = [Item.from_dict(d) for d in led.pending(channel).values()]
            if pending:
                msg = message.render(pending, cfg)
            elif ch.get('heartbeat') and led.last_heartbeat(channel) != day:
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
                led.mark_heartbeat(channel, day)
            led.save()
            out.append(Outcome(channel, msg, '', 0, attempts))
    return out
