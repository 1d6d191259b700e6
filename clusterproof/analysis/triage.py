"""A person's verdict on each finding, kept in the figure store beside the
findings: ``<store>/triage.json``.

A finding (a change of a figure, a regression against the reference, a
failed test, a screening outlier) has a stable id
(:func:`clusterproof.analysis.findings.finding_id`). ``clusterproof triage
ID STATE`` records a verdict on it (:data:`STATES`): who gave it, when, and
why (the note). The file keeps every verdict ever given, newest last; the
newest verdict of an id is its state (:func:`latest`), and a finding
without one is ``untriaged``.

The file is the person's, not derived: ``clusterproof store ingest``,
``store rebuild`` and the deriving of the findings never write it. It is
written as the store writes its parts (a temporary name, synced, renamed)
under the store's lock: a crash leaves the old file or the new one, and two
people triaging at once both count.

Findings are derived again when nights arrive, and a change point may then
be placed a session or two earlier or later: its id (which names the session
where it begins) changes. A verdict is not lost then: a verdict whose id no
longer names a finding is carried to a change of the same figure, in the same
direction, beginning within :data:`WINDOW` sessions of the figure's history
around where it was (the sessions are recorded with the verdict), and the
listing says it was carried from the old id (:func:`attach`). A change
further away, or in the other direction (the figure going back), is a new
finding, untriaged.
"""

import datetime
import difflib
import getpass
import json
import os
from pathlib import Path

import polars as pl

from clusterproof import ClusterproofError
from clusterproof import store as st
from clusterproof.paths import replace_synced
from clusterproof.analysis import findings
from clusterproof.analysis.compare import against_references
from clusterproof.analysis.findings import change_id
from clusterproof.references.judge import Verdict, judge
from clusterproof.store.sessions import check_name, load_sessions, records

#: the file of the verdicts, in each store
FILE = 'triage.json'
#: the format of :data:`FILE`
FORMAT = 1
#: a finding's states: no verdict yet, then the verdicts a person gives
#: (as Perfherder's alert states): being looked at; a planned change (an
#: upgrade, a new image; its new level may become the reference); fixed;
#: a false alarm. ``untriaged`` given as a verdict takes a verdict back.
STATES = ('untriaged', 'investigating', 'expected', 'fixed', 'invalid')
UNTRIAGED = STATES[0]
#: sessions of the figure's history either side of where a change began,
#: within which a re-derived change of the same figure keeps its verdict
WINDOW = 2


def path_of(store):
    return Path(store) / FILE


def read(store):
    """The verdicts kept in ``store``, oldest first ([] when it has none).
    An unreadable file is an error naming it: verdicts are never dropped."""
    path = path_of(store)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as err:
        raise ClusterproofError(f'{path}: unreadable triage file ({err}); it holds the '
                                f'verdicts people gave: repair it by hand (JSON), or move '
                                f'it away to start again') from None
    if not isinstance(data, dict) or data.get('format') != FORMAT \
            or not isinstance(data.get('verdicts'), list):
        raise ClusterproofError(f'{path}: not a triage file of format {FORMAT} (a JSON '
                                f'object with "format": {FORMAT} and a "verdicts" list)')
    return data['verdicts']


def read_all(stores):
    """The verdicts of every store of ``stores``, oldest first."""
    return sorted((v for s in stores for v in read(s)), key=lambda v: v['when'])


def latest(verdicts):
    """``{id: newest verdict}`` of ``verdicts`` (oldest first)."""
    return {v['id']: v for v in verdicts}


def record(store, finding, state, note='', who=None, when=None):
    """Add a verdict on ``finding`` (a dict with ``id``, ``kind``,
    ``system``, ``partition``, ``test``, ``figure``, ``since``, ``at``,
    ``direction``, ``near``: the sessions of its figure around where it
    begins, and ``replaces``: see :func:`change_finding`) to ``store``,
    under the store's lock. Returns the verdict."""
    if state not in STATES:
        raise ClusterproofError(f'unknown state {state!r}; one of: {", ".join(STATES)}')
    verdict = {**{k: finding.get(k) for k in ('id', 'kind', 'system', 'partition', 'test',
                                              'figure', 'since', 'at', 'direction',
                                              'replaces')},
               'near': list(finding.get('near') or []), 'state': state, 'note': note or '',
               'who': who or _user(),
               'when': when or datetime.datetime.now(datetime.timezone.utc)
               .isoformat(timespec='seconds')}
    with st.locked(store):
        verdicts = read(store) + [verdict]
        text = json.dumps({'format': FORMAT, 'verdicts': verdicts}, indent=1)
        replace_synced(path_of(store), lambda tmp: Path(tmp).write_text(text + '\n'))
    return verdict


def _user():
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return f'uid {os.getuid()}'


# -- the findings of a store, and their verdicts --------------------------------------

def change_finding(f, near=(), verdicts=()):
    """The triage fields of a change found by the detector (a dict of
    :func:`clusterproof.analysis.findings.detect`); ``near``: the sessions
    of its figure around where it begins (:func:`near`); ``replaces``: the
    id of the verdict of ``verdicts`` carried to it (:func:`attach`), which
    a verdict on it replaces."""
    cid = change_id(f)
    return {'id': cid, 'kind': 'change', 'system': f['system'],
            'partition': f['partition'], 'test': f['test'], 'figure': f['figure'],
            'since': f['session'] or f['at'], 'at': f['at'], 'direction': f['direction'],
            'near': list(near), 'replaces': attach([f], verdicts).get(cid, (None, None))[1]}


def failure_findings(lf, failing):
    """The triage fields of each failing figure or test case of
    ``failing``: the rows that fail (:class:`~clusterproof.analysis.compare.Row`,
    each a :class:`~clusterproof.store.sessions.Record` judged). Its kind is
    ``failure`` (the test case failed) or ``regression`` (the figure fails
    its reference), and it begins where its failure began in the store rows
    ``lf`` (:func:`failing_since`): the same failure night after night is
    one finding. One read of the store for all of them."""
    history = _case_rows(lf, [row.rec for row in failing])
    out = []
    for row in failing:
        rec = row.rec
        kind = 'failure' if row.verdict == Verdict.FAILED else 'regression'
        test = f'{rec.test} +{rec.environ}' if rec.environ else rec.test
        since, start = failing_since(history.get(_case_key(rec), []), rec, row)
        out.append({
            'id': findings.finding_id(kind, rec.system, rec.partition, test, row.figure, since),
            'kind': kind, 'system': rec.system, 'partition': rec.partition, 'test': test,
            'figure': row.figure, 'since': since,
            'at': datetime.datetime.fromtimestamp(start, datetime.timezone.utc).isoformat(),
            'direction': None, 'near': [], 'flags': list(rec.flags)})
    return out


def judged_failures(lf, recs, refs_by_system=None):
    """``[(finding, row)]``: the failures and regressions of ``recs`` (the
    records of one session), judged against the reference files (``{system:
    parsed file}``, read from ``site_config/references`` when absent) as
    ``clusterproof compare`` judges them, each with the triage fields of
    :func:`failure_findings` (its id, beginning where its failure began in
    the store rows ``lf``) and its :class:`~clusterproof.analysis.compare.Row`.
    The one rule for a failure's or regression's finding: ``clusterproof
    triage``, the morning page and ``clusterproof notify`` all call it, so an
    id one of them names is an id the others know."""
    failing = [row for row in against_references(recs, refs_by_system) if row.regression]
    return list(zip(failure_findings(lf, failing), failing))


def failures(stores):
    """The triage fields of the failures and regressions of the newest
    session of each system of ``stores`` (see :func:`judged_failures`)."""
    lf = st.scan(list(stores))
    out = []
    for system in sorted(lf.select('system').unique().collect()['system']):
        recs = records(load_sessions(last=1, system=system))
        out += [f for f, _row in judged_failures(lf, recs)]
    return out


#: the columns that name a test case in the store: the identity but the figure
_CASE = tuple(c for c in st.IDENTITY if c != 'figure')


def _case_key(rec):
    key = st.identity(rec.system, rec.partition, rec.environ, rec.test, '', rec.smoke,
                      rec.emulated)
    return tuple(v for c, v in zip(st.IDENTITY, key) if c != 'figure')


def _case_rows(lf, recs):
    """``{test case key: [(session, start, figure, value, result)]}`` of the
    store rows ``lf`` of the test cases of ``recs`` (none when ``lf`` is None)."""
    if lf is None or not recs:
        return {}
    keys = pl.DataFrame([dict(zip(_CASE, _case_key(r))) for r in recs],
                        schema={c: st.SCHEMA[c] for c in _CASE}).unique()
    df = (lf.join(keys.lazy(), on=list(_CASE), how='semi', nulls_equal=True)
          .select(*_CASE, 'session', 'start', 'figure', 'value', 'result').collect())
    out = {}
    for r in df.iter_rows():
        out.setdefault(tuple(r[:len(_CASE)]), []).append(r[len(_CASE):])
    return out


def failing_since(rows, rec, row):
    """``(session, start)`` where the failure of ``rec`` (judged ``row``)
    began, from ``rows`` (``(session, start, figure, value, result)`` of its
    test case in the store): the first of the sessions up to ``rec``'s, with
    no passing one after it, in which its test case failed (ReFrame's result
    ``fail`` or ``abort``) or, for a figure, in which its value fails the
    reference ``row`` was judged against. ``rec``'s own session when the
    sessions before it do not fail."""
    bad, starts = {}, {}
    for session, start, figure, value, result in rows:
        if start > rec.times.session_start:
            continue
        if row.verdict == Verdict.FAILED:
            failed = result in ('fail', 'abort')
        elif figure == rec.figure:
            failed = judge(value, row.base, row.lower, row.upper,
                           row.lower_is_better).verdict.failing
        else:
            continue
        bad[session] = bad.get(session, False) or failed
        starts[session] = start
    since = (rec.session, rec.times.session_start)
    for s in sorted(starts, key=starts.get, reverse=True):
        if s != rec.session and not bad[s]:
            break
        since = (s, starts[s])
    return since


def figure_sessions(stores, f):
    """The sessions of the history of the figure of ``f`` (a finding dict)
    in ``stores``, oldest first."""
    name, _, environ = f['test'].partition(' +')
    key = st.identity(f['system'], f['partition'], environ, name, f['figure'],
                      'smoke' in f.get('flags', ()), 'emulated' in f.get('flags', ()))
    lf = st.scan(list(stores)).filter(*(pl.col(c) == v for c, v in zip(st.IDENTITY, key)))
    return [s for s, _ in st.session_starts(lf)]


def near(sessions, since):
    """The sessions within :data:`WINDOW` of ``since`` in ``sessions``."""
    if since not in sessions:
        return [since]
    i = sessions.index(since)
    return sessions[max(0, i - WINDOW):i + WINDOW + 1]


def attach(found, verdicts):
    """``{change id: (verdict, carried from)}`` of the changes ``found``
    that have a verdict: their own (carried from None), or one given to a
    change of the same figure and direction that began within
    :data:`WINDOW` sessions (carried from that change's id; see the module's
    doc). Each verdict goes to one change at most, the nearest."""
    newest = latest(verdicts)
    ids = {change_id(f): f for f in found}
    out = {i: (newest[i], None) for i in ids if i in newest}
    gone = replaced(verdicts)
    for v in newest.values():
        if (v['id'] in ids or v.get('kind') != 'change' or v['state'] == UNTRIAGED
                or v['id'] in gone):
            continue
        candidates = [(i, f) for i, f in ids.items()
                      if i not in out and _same_figure(v, f) and f['direction'] ==
                      v['direction'] and (f['session'] or f['at']) in v['near']]
        if candidates:
            at = _time(v['at'])
            i, _ = min(candidates, key=lambda c: abs(_time(c[1]['at']) - at))
            out[i] = (v, v['id'])
    return out


def replaced(verdicts):
    """The ids whose verdicts a verdict on a moved change replaced (its
    ``replaces``: the id the verdict was carried from when it was given)."""
    return {v['replaces'] for v in verdicts if v.get('replaces')}


def _same_figure(v, f):
    return all(v[k] == f[k] for k in ('system', 'partition', 'test', 'figure'))


def _time(iso):
    return datetime.datetime.fromisoformat(iso).timestamp()


def state_of(finding_id, stores=None):
    """The state of the finding ``finding_id`` (:data:`UNTRIAGED` without a
    verdict) in ``stores`` (default: the stores the commands read): for
    findings other than changes (a screening outlier), whose id does not
    move."""
    if stores is None:
        stores = findings.stores_read()
    v = latest(read_all(stores)).get(finding_id)
    return v['state'] if v else UNTRIAGED


def triaged(verdicts, found=()):
    """The ids of the findings a person has triaged (a newest verdict other
    than :data:`UNTRIAGED`) in ``verdicts``, and of the changes of ``found``
    such a verdict was carried to (:func:`attach`): what needs no person
    any more, and is not notified."""
    ids = {i for i, v in latest(verdicts).items() if v['state'] != UNTRIAGED}
    return ids | {i for i, (v, _c) in attach(found, verdicts).items()
                  if v['state'] != UNTRIAGED}


def states(found, verdicts):
    """``[(finding, state, verdict or None, carried from)]`` of ``found``,
    untriaged first, then in the order given (see :func:`attach`)."""
    got = attach(found, verdicts)
    rows = []
    for f in found:
        v, carried = got.get(change_id(f), (None, None))
        rows.append((f, v['state'] if v else UNTRIAGED, v, carried))
    return sorted(rows, key=lambda r: r[1] != UNTRIAGED)


def nearest(finding_id, ids, n=5):
    """The ids of ``ids`` most like ``finding_id``: a mistyped or shortened id."""
    ids = list(dict.fromkeys(ids))
    starts = [i for i in ids if i.startswith(finding_id)]
    return (starts + [i for i in difflib.get_close_matches(finding_id, ids, n=n, cutoff=0.4)
                      if i not in starts])[:n]


# -- the site's own precision ----------------------------------------------------------

def summary(rows):
    """``[(system, check, {state: count}, false-alarm rate or None)]`` of
    ``rows`` (``(finding, state)`` pairs), one per system and check (the
    test's class): the false-alarm rate is the share of the triaged findings
    (investigating, expected, fixed, invalid) found invalid."""
    table = {}
    for f, state in rows:
        counts = table.setdefault((f['system'], check_name(f['test'])), dict.fromkeys(STATES, 0))
        counts[state] += 1
    out = []
    for (system, check), counts in sorted(table.items()):
        triaged = sum(counts[s] for s in STATES[1:])
        out.append((system, check, counts, counts['invalid'] / triaged if triaged else None))
    return out
