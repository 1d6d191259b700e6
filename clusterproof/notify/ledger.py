"""The ledger of what was sent: ``<results>/notify/ledger.json``, per
channel the ids of the items sent (and when), the items found but not yet
sent (a channel that was down: sent on the next run), and per system the
day of its last "all clear" (systems of one results directory may share a
channel name; each has its own quiet day); and every item queued, by id, with when a run last found
it (:func:`item`): what ``clusterproof triage`` reads to record a verdict
on a finding the figure store cannot name again (a screening outlier, a
failure of a session that is no longer the newest).

It is bounded: an item of a system leaves it (:meth:`Ledger.forget`) once
it is pending on none of that system's channels and no run of that system
has found it for ``forget_after_days``; a pending item a person triaged
leaves its channel (:meth:`Ledger.drop`). A finding found night after night
(a regression that lasts, a standing change) is kept, so sent once.

Read and written under ``<results>/notify/.lock`` (two runs notify one after
the other), written as the figure store writes its files (a temporary name,
synced, renamed): a crash leaves the ledger as it was before or after a
channel's send, never half-written.
"""

import contextlib
import json
from pathlib import Path

from clusterproof import ClusterproofError, store
from clusterproof.paths import replace_synced

NAME = 'ledger.json'
VERSION = 1


def directory(results):
    return Path(results) / 'notify'


class Ledger:
    """The ledger of one results directory (see :func:`opened`)."""

    def __init__(self, path, data):
        self.path = path
        self.data = data

    def _channel(self, channel):
        return self.data['channels'].setdefault(channel, {'sent': {}, 'pending': {},
                                                          'heartbeat': {}})

    def sent(self, channel):
        """``{id: when sent}`` of ``channel``."""
        return self._channel(channel)['sent']

    def pending(self, channel):
        """``{id: item dict}``: found, not yet sent on ``channel``."""
        return self._channel(channel)['pending']

    def last_heartbeat(self, channel, system):
        """The day ``system`` last sent an all clear on ``channel``, or None."""
        return self._heartbeats(channel).get(system)

    def _heartbeats(self, channel):
        ch = self._channel(channel)
        # a ledger written before the days were kept per system held one day
        # for the channel, of no known system: forgotten (at most one all
        # clear more, that day)
        if not isinstance(ch['heartbeat'], dict):
            ch['heartbeat'] = {}
        return ch['heartbeat']

    def _found(self):
        return self.data.setdefault('found', {})

    def queue(self, channel, items, now):
        """Keep ``items`` as pending on ``channel``, but those sent already;
        and each of them among the items found, found at unix time ``now``."""
        ch = self._channel(channel)
        found = self._found()
        for i in items:
            found[i.id] = dict(i.to_dict(), seen=now)
            if i.id not in ch['sent']:
                ch['pending'][i.id] = i.to_dict()

    def saw(self, items, now):
        """Note that a run found ``items`` at unix time ``now`` (those the
        ledger holds: a finding found again is not forgotten)."""
        found = self._found()
        for i in items:
            if i.id in found:
                found[i.id]['seen'] = now

    def drop(self, channel, ids):
        """Take ``ids`` off the items pending on ``channel``; the number
        taken off."""
        pending = self._channel(channel)['pending']
        return sum(pending.pop(i, None) is not None for i in ids)

    def forget(self, system, channels, now, horizon):
        """Forget the items of ``system`` that no run found in the
        ``horizon`` seconds before unix time ``now`` (an item of a ledger
        written before runs noted when: found ``now``) and that are pending
        on none of ``channels``: out of the items found and every channel's
        sent. The ids forgotten."""
        found = self._found()
        waiting = {i for c in channels for i in self.pending(c)}
        gone = [i for i, d in found.items() if d.get('system') == system
                and d.setdefault('seen', now) < now - horizon and i not in waiting]
        for i in gone:
            del found[i]
            for ch in self.data['channels'].values():
                ch['sent'].pop(i, None)
        return gone

    def mark_sent(self, channel, ids, when):
        ch = self._channel(channel)
        for i in ids:
            ch['sent'][i] = when
            ch['pending'].pop(i, None)

    def mark_heartbeat(self, channel, system, day):
        self._heartbeats(channel)[system] = day

    def save(self):
        text = json.dumps(self.data, indent=1, sort_keys=True)
        replace_synced(self.path, lambda tmp: Path(tmp).write_text(text))


def _read(path):
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {'version': VERSION, 'channels': {}}
    except (OSError, ValueError) as err:
        raise ClusterproofError(
            f'{path}: the ledger of sent notifications is unreadable ({err}); nothing is '
            f'sent while it is, lest everything be sent again: move it aside to start '
            f'afresh') from None
    if not isinstance(data, dict) or data.get('version') != VERSION:
        raise ClusterproofError(f'{path}: not a ledger of version {VERSION}; move it aside '
                                f'to start afresh')
    return data


def item(results, item_id):
    """The item dict of the id ``item_id`` that a notification run queued in
    the ledger of ``results`` (None when it queued none such)."""
    return _read(directory(results) / NAME).get('found', {}).get(item_id)


@contextlib.contextmanager
def opened(results):
    """The :class:`Ledger` of ``results``, under its lock for the whole run."""
    d = directory(results)
    with store.locked(d):
        path = d / NAME
        yield Ledger(path, _read(path))
