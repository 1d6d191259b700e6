"""What the morning page shows, computed before the page: the newest
session's records judged against the references
(:func:`clusterproof.analysis.compare.against_references`, the one judge),
the verdict counts, the changes of the last
:data:`~clusterproof.analysis.recent.RECENT_SESSIONS` sessions
with their triage, the failures with their findings, the published figures
beside the scaling curves and the mmap sweep's ratios. The page only
formats a :class:`Morning`.
"""

import dataclasses
from dataclasses import dataclass

from clusterproof import ClusterproofError
from clusterproof.analysis import findings, triage
from clusterproof.analysis.compare import against_references
from clusterproof.analysis.recent import change_key, recent_changes
from clusterproof.analysis.statistics import mmap_ratios
from clusterproof.references.judge import Bucket, Verdict
from clusterproof.references.lookup import lookup, references_for

#: the system whose references are the published figures (scaling curves)
PUBLISHED_SYSTEM = 'pixstor'
#: the count of the changes found (not a verdict: see :func:`recent_changes`)
CHANGE = 'change'
#: the counts of the first screen, in order: the verdicts' buckets
#: (``references.judge.Bucket``, where their names are decided) and the changes
BUCKETS = (Bucket.PASS, Bucket.REGRESSION, CHANGE, Bucket.FAILED, Bucket.SKIPPED,
           Bucket.NOT_JUDGED)


@dataclass(frozen=True)
class Morning:
    """The morning page's content, judged and counted."""
    latest: object      # the newest session (store.sessions.Session); None without one
    view: dict          # store.overview.overview: systems, smoke, emulated, sessions
    rows: list          # compare.Row of the newest session's records
    counts: dict        # {bucket or CHANGE: n}, in the order of BUCKETS
    histories: dict     # {record key: store.history.History}
    changes: list       # the changes found, each with id, state, carried_from, note
    change_at: dict     # {record key: [ISO time of each change]}
    failures: list      # [{row, id, state, note}], the untriaged first
    published: dict     # {record key: the published figure at its thread count}
    mmap: list          # statistics.mmap_ratios of the newest session's records


def prepare(latest, recs, histories, view, refs_by_system=None, kept=None, triaged=None,
            store_rows=None):
    """The :class:`Morning` of the newest session ``latest`` (None: none)
    and ``recs``, its records (those of other sessions are ignored).
    ``histories``: the figures' histories
    (:class:`clusterproof.store.history.History`); ``view``: the provenance
    of every session (:func:`clusterproof.store.overview.overview`);
    ``kept``: see :func:`recent_changes`; ``triaged``: the verdicts people
    gave (:func:`clusterproof.analysis.triage.read_all`); ``store_rows`` (a
    lazy frame of the figure store) says since when each failure fails
    (:func:`clusterproof.analysis.triage.failure_findings`; without it,
    since the newest session)."""
    refs = dict(refs_by_system or {})
    latest_recs = [r for r in recs if latest and r.session == latest.uuid]
    rows = against_references(latest_recs, refs)
    changes = _changes(histories, kept, triaged or [])
    change_at = {}
    for f in changes:
        change_at.setdefault(change_key(f), []).append(f['at'])
    return Morning(latest=latest, view=view, rows=rows, counts=counts(rows, len(changes)),
                   histories={h.key: h for h in histories}, changes=changes,
                   change_at=change_at, failures=_failures(rows, store_rows, triaged or []),
                   published=_published_of(rows, refs), mmap=mmap_ratios(latest_recs))


def counts(rows, n_changes):
    """``{bucket: n}`` of the verdicts of ``rows`` (every bucket of
    :data:`BUCKETS`, any other verdict under its own name) and the changes."""
    out = dict.fromkeys(BUCKETS, 0)
    for r in rows:
        out[r.verdict.bucket] = out.get(r.verdict.bucket, 0) + 1
    out[CHANGE] = n_changes
    return out


def _changes(histories, kept, triaged):
    """The changes of the last sessions, listed as ``clusterproof changes``
    lists them, each with its finding's id and triage state."""
    return [{**f, 'id': findings.change_id(f), 'state': state,
             'carried_from': carried, 'note': v['note'] if v else ''}
            for f, state, v, carried in triage.states(
                findings.listed(recent_changes(histories, kept=kept)), triaged)]


def _failures(rows, store_rows, triaged):
    """The rows that fail (``Verdict.failing``: failed test cases first, then
    regressions and stale ``$xfail`` marks, the largest miss first; the
    untriaged before those with a verdict), each with its finding's id and
    state."""
    bad = [row for row in rows if row.regression]
    bad.sort(key=lambda r: (r.verdict != Verdict.FAILED, -abs((r.ratio or 1) - 1), r.system,
                            r.test, r.figure))
    newest = triage.latest(triaged)
    out = []
    for row, f in zip(bad, triage.failure_findings(store_rows, bad)):
        v = newest.get(f['id'])
        out.append({'row': row, 'id': f['id'],
                    'state': v['state'] if v else triage.UNTRIAGED,
                    'note': v['note'] if v else ''})
    return sorted(out, key=lambda f: f['state'] != triage.UNTRIAGED)


def _published_of(rows, refs):
    """``{record key: value}`` of the published figure of each row's test
    (the references of :data:`PUBLISHED_SYSTEM`, resolved as ReFrame
    resolves them). Never a verdict of the row."""
    published = references_for(refs, PUBLISHED_SYSTEM)
    out = {}
    for row in rows:
        rec = row.rec
        if not rec.figure or rec.system == PUBLISHED_SYSTEM or rec.check not in published:
            continue
        try:
            found = lookup(published, dataclasses.replace(rec, system=PUBLISHED_SYSTEM,
                                                           smoke=False, emulated=False))
        except ClusterproofError:
            continue
        if found:
            out[rec.key] = found.value
    return out
