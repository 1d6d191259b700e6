"""The acceptance record: one JSON document per acceptance against a
contract, ``<results>/acceptance/<contract>-<YYYYmmddTHHMMSS>.json``,
written atomically. The signed report is rendered from it alone; its shape
is described in docs/acceptance.md ("The acceptance record").

:func:`build` makes it from a contract and its judged items, :func:`write`
writes it, :func:`read` reads it back and refuses another format.
"""

import json
import time
from pathlib import Path

from clusterproof import ClusterproofError, __version__
from clusterproof.paths import results_dir, write_atomic
from clusterproof.references.judge import Verdict

#: the format of the record; a reader refuses another one
FORMAT = 1


def item_verdict(result):
    """The :class:`~clusterproof.references.judge.Verdict` of an item as the
    record names it: ``reported`` for an informative item, ``not measured``
    (no run), ``invalid`` (runs, too few of them valid), ``fail`` or
    ``pass``, from the item's Judgement (which says why)."""
    if not result.item.is_committed:
        return Verdict.REPORTED
    if result.judgement.verdict in (Verdict.NOT_MEASURED, Verdict.INVALID):
        return result.judgement.verdict
    return Verdict.FAIL if result.judgement.failing else Verdict.PASS


def _iso(t):
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(t)) if t else ''


def _json_value(v):
    return None if isinstance(v, float) and v != v else v


def item_record(result):
    item = result.item
    allowed = {a.name: a.as_json() for a in item.modifications}
    return {
        'id': item.id, 'benchmark': item.check, 'figure': item.figure, 'unit': item.unit,
        'parameters': dict(item.parameters), 'set': dict(item.set),
        'kind': item.kind, 'committed_value': item.committed,
        'lower_is_better': result.lower_is_better, 'tolerance': item.tolerance,
        'statistic': item.statistic, 'repetitions_required': item.repetitions,
        'validity': dict(item.validity),
        'measured': result.measured, 'spread': result.spread,
        'verdict': str(item_verdict(result)),
        'judgement': str(result.judgement.verdict),
        'why': result.judgement.reason,
        'runs': [{'session': r.session, 'test': r.test, 'time': _iso(r.rec.times.completed),
                  'value': _json_value(r.value), 'valid': r.valid,
                  'invalid_why': r.invalid_why, 'counted': r in result.counted,
                  'modifications': {'allowed': allowed, 'used': r.used},
                  'flags': list(r.flags), 'binary_sha256': r.binary_sha256,
                  'fingerprint': r.fingerprint, 'nodes': r.nodes}
                 for r in result.runs],
    }


def failures(judged):
    """The committed items that fail, as ``id (why)`` texts."""
    return [f'{r.item.id} ({r.judgement.reason or r.judgement.verdict})'
            for r in judged if r.failing]


def build(contract, judged, *, reused=(), run=(), screening=None, unexplained=(),
          not_judged=(), now=None):
    """The record (a dict) of ``contract`` with its items ``judged``
    (:class:`clusterproof.acceptance.judge.Result`); ``reused`` and ``run``
    are the session uuids taken from the store and run now; ``unexplained``
    the lines of what failed although no item shows it
    (:func:`clusterproof.acceptance.run.unexplained`): they reject it too;
    ``not_judged`` the figures measured that no item judges
    (:func:`clusterproof.acceptance.judge.not_judged`), shown only."""
    from clusterproof.site.provenance import git_revision
    # every run looked at, counted or not: an acceptance whose every run was an
    # emulated one that timed out is as emulated as one that passed
    flags = {f for r in judged for x in r.runs for f in x.flags}
    failed = [r for r in judged if r.failing]
    why = (f'{len(failed)} committed item(s) failed: '
           f'{", ".join(r.item.id for r in failed)}' if failed else
           f'every committed item passed ({sum(r.item.is_committed for r in judged)})')
    if unexplained:
        why += f'; and what no item shows failed: {"; ".join(unexplained)}'
        failed = failed or list(unexplained)
    rev = git_revision()
    return {
        'format': FORMAT,
        'contract': contract.header(),
        'judged_at': _iso(now or time.time()),
        'clusterproof_version': __version__ if rev == 'unknown' else f'{__version__} ({rev})',
        'mode': 'emulated' if 'emulated' in flags else 'smoke' if 'smoke' in flags else 'full',
        'emulated': 'emulated' in flags, 'smoke': 'smoke' in flags,
        'verdict': 'rejected' if failed else 'accepted',
        'why': why,
        'sessions': {'reused': list(reused), 'run': list(run)},
        'items': [item_record(r) for r in judged],
        'screening': screening,
        'not_judged': [dict(x, median=_json_value(x['median'])) for x in not_judged],
    }


def read_screening(path):
    """The JSON a node screening printed (``clusterproof screen --format
    json``), kept as it is in the record."""
    path = Path(path)
    try:
        return json.loads(path.read_text())
    except OSError as err:
        raise ClusterproofError(f'{path}: cannot read the screening: {err.strerror}') from None
    except ValueError as err:
        raise ClusterproofError(f'{path}: not the JSON of a screening ({err})') from None


def default_path(contract_name, now=None):
    stamp = time.strftime('%Y%m%dT%H%M%S', time.gmtime(now or time.time()))
    return results_dir() / 'acceptance' / f'{contract_name}-{stamp}.json'


def write(path, record):
    """Write ``record`` to ``path`` atomically (temporary file and rename)."""
    return write_atomic(path, json.dumps(record, indent=1, sort_keys=False) + '\n')


def read(path):
    """The record at ``path``; an error naming the file when it is not a
    record of :data:`FORMAT`."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except OSError as err:
        raise ClusterproofError(f'{path}: cannot read the acceptance record: '
                                f'{err.strerror}') from None
    except ValueError as err:
        raise ClusterproofError(f'{path}: not an acceptance record (not JSON: {err})') from None
    if not isinstance(data, dict) or data.get('format') != FORMAT:
        found = data.get('format') if isinstance(data, dict) else type(data).__name__
        raise ClusterproofError(f'{path}: acceptance record of format {found!r}; this '
                                f'clusterproof reads format {FORMAT}')
    return data
