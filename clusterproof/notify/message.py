"""The text of a message: its first lines say what, where, how big, the
suspected cause and the link to the page (:func:`render`); a run with more
items than the site's ``summarise_above`` is one message that summarises
(counts by kind and system, the largest few, the link), never one per item;
a quiet day may send an "all clear" (:func:`all_clear`). The subject is one
line without control characters (:func:`header`): a line break in a test's
name would end an e-mail's Subject header."""

import collections
import datetime
import re
from dataclasses import dataclass

from clusterproof.notify.items import NAMES, rank


@dataclass
class Message:
    subject: str            # the first line
    text: str               # the whole text, the subject first
    items: list             # what it tells of (empty: an all clear)
    summary: bool = False   # one message summarising many items


def header(text):
    """``text`` fit for a header or a label: each run of control characters
    (and of Unicode line and paragraph separators) one space."""
    return re.sub(r'[\x00-\x1f\x7f-\x9f\u2028\u2029]+', ' ', str(text)).strip()


def _count(n, kind):
    return f'{n} {NAMES[kind][n != 1]}'


def _counts(items):
    c = collections.Counter(i.kind for i in items)
    return ', '.join(_count(n, k) for k, n in sorted(c.items(), key=lambda kv: -kv[1]))


def _day(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime('%Y-%m-%d')


def headline(i):
    """One line: kind, where, test and figure, how big, since when."""
    fig = f' {i.figure}' if i.figure else ''
    node = 'node ' if i.kind == 'outlier' else ''
    what = f'{i.test} {node}{i.figure}'.strip() if i.kind == 'outlier' else f'{i.test}{fig}'
    day = _day(i.at)
    session = '' if i.since[:10] == day else \
        f' ({"screening" if i.kind == "outlier" else "session"} {i.since[:8]})'
    return f'{i.kind.upper()} on {i.where}: {what} {i.size_text()} since {day}{session}'


def cause(i):
    return i.cause or 'not known (no recorded provenance changed at it)'


def _systems(items):
    return ', '.join(sorted({i.system for i in items}))


def render(items, cfg):
    """The :class:`Message` telling of ``items`` (not empty) under the
    settings ``cfg`` (:class:`~clusterproof.notify.config.Config`)."""
    items = rank(items)
    page = cfg.page or '(no page configured: see page in ' + str(cfg.path) + ')'
    if len(items) == 1:
        [i] = items
        lines = [header(f'clusterproof: {headline(i)}'),
                 f'what: {NAMES[i.kind][0]}; {i.detail}' if i.detail else
                 f'what: {NAMES[i.kind][0]}',
                 f'where: system {i.system}, partition {i.partition}, {i.test}'
                 + (f', {"node" if i.kind == "outlier" else "figure"} {i.figure}'
                    if i.figure else ''),
                 f'how big: {i.size_text()}',
                 f'suspected cause: {cause(i)}',
                 f'page: {page}',
                 f'id: {i.id}']
        return Message(lines[0], '\n'.join(lines) + '\n', items)
    subject = header(f'clusterproof: {len(items)} new findings on {_systems(items)} '
                     f'({_counts(items)})')
    lines = [subject]
    summary = len(items) > cfg.summarise_above
    if summary:
        by_system = collections.defaultdict(list)
        for i in items:
            by_system[i.where].append(i)
        lines.append('by system: ' + '; '.join(f'{w}: {_counts(v)}'
                                               for w, v in sorted(by_system.items())))
        shown = items[:cfg.top]
        lines.append(f'largest {len(shown)}:')
    else:
        shown = items
    for i in shown:
        lines.append(f'- {headline(i)}; suspected cause: {cause(i)}; id {i.id}')
    if summary:
        lines.append(f'and {len(items) - len(shown)} more on the page')
    lines.append(f'page: {page}')
    return Message(subject, '\n'.join(lines) + '\n', items, summary)


def all_clear(cfg, day):
    """The daily "all clear" of a quiet day."""
    subject = header(f'clusterproof: all clear on {cfg.system} ({day}): nothing new needs '
                     f'a person')
    page = f'page: {cfg.page}\n' if cfg.page else ''
    return Message(subject, f'{subject}\n{page}', [])
