"""What a person is told of: one :class:`Item` per finding that needs a
person (a regression against the reference, a failed test case, a change
found by the detector, a screening outlier), its id
:func:`clusterproof.analysis.findings.finding_id`, and how the items of a
session are found in the figure store (:func:`of_sessions`,
:func:`of_changes`) or in a screening (:func:`of_outliers`).

A regression or failure that persists session after session is one finding, and
its id is the one ``clusterproof triage`` accepts: both take it from
:func:`clusterproof.analysis.triage.judged_failures` (its test named with its
`` +environ``, its ``since`` the first session of the run of failing
sessions of its test case in the store), so it stays the same and is sent
once.
"""

import dataclasses
import datetime

import polars as pl

from clusterproof.analysis import attribution, findings, triage
from clusterproof.store import history

#: how a kind is called in a message, one item and many
NAMES = {'regression': ('regression', 'regressions'), 'failure': ('failure', 'failures'),
         'change': ('change', 'changes'), 'outlier': ('outlier', 'outliers')}
#: the Alertmanager severity of each kind
SEVERITY = {'regression': 'critical', 'failure': 'critical', 'change': 'warning',
            'outlier': 'warning'}
@dataclasses.dataclass(frozen=True)
class Item:
    """One finding a person is told of; ``id`` is its
    :func:`~clusterproof.analysis.findings.finding_id`."""
    id: str
    kind: str               # regression, failure, change, outlier
    system: str
    partition: str
    test: str
    figure: str             # a screening outlier: the node
    since: str              # the session (or time) where it begins
    at: float               # unix time where it begins
    size: float = None      # relative size (-0.12: 12 % lower); None: a failure
    detail: str = ''        # how big, in words: value, reference, tolerance
    cause: str = ''         # the suspected cause (the finding's attribution)

    @property
    def severity(self):
        return SEVERITY[self.kind]

    @property
    def where(self):
        return f'{self.system}:{self.partition}'

    def size_text(self):
        return 'failed' if self.size is None else f'{self.size * 100:+.1f}%'

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d):
        return cls(**{f.name: d.get(f.name) for f in dataclasses.fields(cls)})


def make(kind, system, partition, test, figure, since, at, **more):
    """An :class:`Item`, its id from :func:`findings.finding_id`."""
    return Item(findings.finding_id(kind, system, partition, test, figure, since),
                kind, system, partition, test, figure, since, at, **more)


def to_send(items, triaged=frozenset()):
    """The items that need a person, of ``items``: all but those whose id is
    in ``triaged``, the findings a person has already given a verdict
    (:func:`clusterproof.analysis.triage.triaged`)."""
    return [i for i in items if i.id not in triaged]


def rank(items):
    """Largest first: failures, then by the size of the change."""
    return sorted(items, key=lambda i: (i.size is not None, -abs(i.size or 0), i.kind,
                                        i.system, i.partition, i.test, i.figure))


def of_sessions(session, lf, refs_by_system=None):
    """The regressions against the reference and the failed test cases of
    ``session`` (a :class:`~clusterproof.store.sessions.Session`), each
    beginning where its failure began in the store rows ``lf``: the findings
    of :func:`clusterproof.analysis.triage.judged_failures`, whose ids
    ``clusterproof triage`` accepts."""
    out = []
    for f, row in triage.judged_failures(lf, session.recs, refs_by_system):
        at = _unix(f['at'])
        if f['kind'] == 'failure':
            out.append(Item(f['id'], 'failure', f['system'], f['partition'], f['test'], '',
                            f['since'], at, detail=row.reason))
            continue
        ratio = row.ratio
        detail = (f'{row.verdict.value}: {_num(row.value)} {row.unit} against the reference '
                  f'{_num(row.base)} {row.unit} ({row.tolerance})')
        out.append(Item(f['id'], 'regression', f['system'], f['partition'], f['test'],
                        f['figure'], f['since'], at,
                        size=None if ratio is None else round(ratio - 1, 4), detail=detail))
    return out


def of_changes(found, min_change=0.0, smoke=False):
    """The standing changes of ``found`` (the detector's findings, dicts of
    :func:`clusterproof.analysis.findings.detect`) at least ``min_change``
    (relative) in size; withdrawn alarms are not sent, nor, unless
    ``smoke``, changes of smoke-size figures (a check of the toolkit, not
    of the hardware)."""
    out = []
    for f in found:
        if f.get('withdrawn') or abs(f['change']) < min_change or (
                'smoke' in f['flags'] and not smoke):
            continue
        since = f['session'] or f['at']
        out.append(Item(findings.change_id(f), 'change', f['system'], f['partition'],
                        f['test'], f['figure'], since, _unix(f['at']), size=f['change'],
                        detail=f'{f["direction"]}, ±{f["uncertainty"] * 100:.1f}%, '
                               f'confidence {f["confidence"]:.2f}; {f["summary"]}',
                        cause='; '.join(f['attribution']) or 'no recorded provenance changed'))
    return out


def of_outliers(system, partition, nodes, since, at):
    """The screening outliers ``nodes`` (``[(node, check, size or None,
    reason)]``: the node, what it was screened with, its relative distance
    from its peers' median (None: it failed) and why) of a screening of
    ``system``:``partition`` begun ``since`` (its session or time) at unix
    time ``at``. The node stands in the figure's place of the id."""
    return [make('outlier', system, partition, check, node, since, at, size=size,
                 detail=reason) for node, check, size, reason in nodes]


def _num(x):
    """Four significant digits, without an exponent up to a million."""
    if x is None:
        return '-'
    return f'{x:.0f}' if 1e4 <= abs(x) < 1e6 else f'{x:.4g}'


def _unix(iso):
    return datetime.datetime.fromisoformat(iso).timestamp()


def of_session_and_changes(session, lf, found, min_change=0.0, refs_by_system=None):
    """Every item of a session: the regressions and failures of ``session``
    (:func:`of_sessions`, their beginnings in the store rows ``lf``) and the
    standing changes of ``found`` (:func:`of_changes`; those of smoke
    figures only when ``session`` is a smoke run); a regression takes as its
    suspected cause the attribution of a change found in the same figure,
    else what changed at the session where it began (:func:`regression_cause`)."""
    changes = of_changes(found, min_change, smoke=session.smoke)
    causes = {(c.system, c.partition, c.test, c.figure): c.cause
              for c in sorted(changes, key=lambda c: c.at)}
    out = []
    for i in of_sessions(session, lf, refs_by_system):
        c = causes.get((i.system, i.partition, i.test, i.figure))
        if not c and i.kind == 'regression':
            c = regression_cause(lf, i)
        out.append(dataclasses.replace(i, cause=c) if c and not i.cause else i)
    return out + changes


def regression_cause(lf, i):
    """What changed at the session where regression ``i`` began, in the
    history of its figure in the store rows ``lf``: the sessions before it
    against it and those after (:func:`clusterproof.analysis.attribution.cause_at`:
    the run's own settings first, then the system and provenance); '' when
    nothing recorded changed or the figure has no earlier session."""
    if lf is None:
        return ''
    rows = lf.filter((pl.col('system') == i.system) & (pl.col('partition') == i.partition)
                     & (pl.col('figure') == i.figure))
    for h in history.from_frame(rows):
        sessions = [p.session for p in h.points] if h.test == i.test else []
        if i.since in sessions and sessions.index(i.since):
            return '; '.join(attribution.cause_at(h.points, sessions.index(i.since)))
    return ''
