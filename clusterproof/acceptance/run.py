"""Running what a contract names: only the checks of the items that lack
valid runs (for a contract made from references, its selection, every
repetition), through :mod:`clusterproof.reframe_io.runner` (the one runner),
as ReFrame sessions recorded in the results database; and what fails an
acceptance that no item shows (:func:`unexplained`)."""

import os
import re
import shlex
from dataclasses import dataclass

from clusterproof import ClusterproofError
from clusterproof.modes import ENV_VAR
from clusterproof.paths import CHECKS_DIR, REPO
from clusterproof.acceptance import judge
from clusterproof.acceptance.contract import check_names, check_site, selected
from clusterproof.acceptance.contract import load as load_contract
from clusterproof.reframe_io import runner
from clusterproof.references.judge import Verdict
from clusterproof.store.sessions import load_sessions, records


def name_pattern(item):
    """The ``-n`` pattern selecting the test cases of ``item``: its check
    class with its parameters, in any order (ReFrame matches it against
    the test's display name without spaces)."""
    looks = ''.join(f'(?=.*%{re.escape(k)}={re.escape(v)}(?:%|/|$))'
                    for k, v in item.parameters.items())
    return f'^{re.escape(item.check)}{looks}(?:%|/|$)'


def groups(items):
    """Items grouped by their ``set`` options (one ReFrame run per group):
    ``[(set options, [items])]``."""
    out = {}
    for item in items:
        key = tuple(sorted((k, str(v)) for k, v in item.set.items()))
        out.setdefault(key, []).append(item)
    return list(out.items())


def reframe_args(contract, items, checks=None):
    """The ReFrame arguments of one run of ``items`` (all with the same
    ``set`` options) of ``contract``."""
    target = contract.system + (f':{contract.partition}' if contract.partition else '')
    args = ['-c', str(checks or _checks_dir(contract)), '-r', '--mode', contract.mode,
            '--system', target]
    if contract.selection is not None:
        return args + list(contract.selection)
    for pattern in dict.fromkeys(name_pattern(item) for item in items):
        args += ['-n', pattern]
    for k, v in sorted(items[0].set.items()):
        args += ['-S', f'{k}={v}']
    return args


def _checks_dir(contract):
    if not contract.checks:
        return CHECKS_DIR
    return (REPO / contract.checks) if not os.path.isabs(contract.checks) else contract.checks


def _env():
    """The environment of ReFrame for a contract: its mode is ReFrame's
    ``--mode``, never a ``CLUSTERPROOF_MODE`` left in the shell."""
    return runner.reframe_env({k: v for k, v in os.environ.items() if k != ENV_VAR})


def load(path, checks=None):
    """The contract of the file ``path`` (:func:`load_contract`), refused
    when the site configuration lacks its system or partition
    (:func:`check_site`) or when an item names a check, a parameter
    value or a figure that the checks (``checks``, default the contract's)
    do not have on that system in that mode: what ReFrame's loader makes of
    them (:func:`clusterproof.reframe_io.runner.describe`), never a list
    kept by hand."""
    c = check_site(load_contract(path))
    target = c.system + (f':{c.partition}' if c.partition else '')
    cases = runner.describe(['-c', str(checks or _checks_dir(c)), '--system', target,
                             '--mode', c.mode], env=_env())
    return check_names(c, cases, f'{target} in mode {c.mode}')


def check_selection(contract, checks=None):
    """The contract made from references ``contract``, refused when the
    ReFrame options of its selection select no check that has an item
    (:func:`clusterproof.acceptance.contract.selected`), as ReFrame's loader
    selects them (:func:`clusterproof.reframe_io.runner.describe`). Without
    a selection every check runs: nothing to ask."""
    if not contract.selection:
        return contract
    args = ['-c', str(checks or _checks_dir(contract)), '--mode', contract.mode, '--system',
            contract.system, *contract.selection]
    cases = runner.describe(args, env=_env())
    if not cases:
        raise runner.NoTestCase(runner.no_case_message(args))
    return selected(contract, cases, contract.selection)


def run(contract, needed, checks=None, echo=True):
    """Run each item of ``needed`` (``{item: runs still needed}``) that many
    times (repetition i runs the items that need i runs or more); returns
    ``[(uuid, exit status)]`` of the sessions. A contract made from
    references runs its selection its ``repetitions`` times instead."""
    env = _env()
    done = []
    if contract.selection is not None:
        total = contract.repetitions
        plan = [[(None, list(contract.items))]] * total
    else:
        total = max(needed.values(), default=0)
        plan = [groups([item for item, n in needed.items() if n >= i])
                for i in range(1, total + 1)]
    for i, rounds in enumerate(plan, 1):
        for _key, group in rounds:
            args = reframe_args(contract, group, checks)
            what = '' if contract.selection is not None else \
                f' ({", ".join(x.id for x in group)})'
            print(f'acceptance {contract.name}: repetition {i}/{total}{what}: '
                  f'{shlex.join(runner.command(args))}', flush=True)
            try:
                out = runner.run(args, env=env, echo=echo)
            except ClusterproofError as err:
                raise ClusterproofError(f'acceptance {contract.name}, repetition {i}: {err}') \
                    from None
            done.append((out.uuid, out.returncode))
    return done


@dataclass
class Acceptance:
    """What :func:`accept` did: the judged items, the sessions reused from
    the store and those run now (uuids), lines for what failed although no
    item shows it, and the figures measured that no item judges."""
    judged: list
    reused: list
    ran: list
    unexplained: list
    #: the figures the sessions run now measured that no item judges
    #: (:func:`clusterproof.acceptance.judge.not_judged`)
    not_judged: list


def accept(contract, ids=(), run_missing=True, checks=None):
    """Judge ``contract`` on the stored sessions it may reuse (or on
    ``ids``), run the items still lacking valid runs (unless ``ids`` are
    given or not ``run_missing``), and judge again on both."""
    stored = records(judge.candidate_sessions(contract, ids=ids))
    judged = judge.judge_contract(contract, stored)
    lacking = judge.needed(judged)
    new, fresh_recs = [], []
    if contract.selection is not None and run_missing and not ids:
        new = run(contract, lacking, checks=checks)
        fresh_recs = records(load_sessions(ids=[u for u, _ in new]))
        judged = judge.judge_contract(contract, fresh_recs)
    elif lacking and run_missing and not ids:
        print(f'acceptance {contract.name}: {len(lacking)} item(s) lack valid runs in the '
              f'store ({", ".join(f"{i.id}: {n} more" for i, n in lacking.items())})',
              flush=True)
        new = run(contract, lacking, checks=checks)
        fresh_recs = records(load_sessions(ids=[u for u, _ in new]))
        known = {r.session for r in stored}
        judged = judge.judge_contract(contract,
                                      stored + [r for r in fresh_recs if r.session not in known])
    ran = [u for u, _ in new]
    used = set().union(*(r.sessions for r in judged))
    return Acceptance(judged, sorted(u for u in used if u not in ran), ran,
                      unexplained(judged, fresh_recs, new),
                      judge.not_judged(judged, fresh_recs))


def unexplained(judged, recs, runs):
    """Lines for what fails an acceptance although no item shows it: a test
    case of ``recs`` that failed and is no item's (a check run beside the
    items), and a run of ``runs`` (``[(uuid, exit status)]``) where ReFrame
    exited non-zero and no test case of its session failed."""
    mine = {(x.session, x.test) for r in judged for x in r.runs}
    out = []
    for r in recs:
        ended = r.outcome
        if ended.result in _FAILED and (r.session, r.test) not in mine:
            out.append(f'{Verdict.FAILED}: {r.test} @{r.system}:{r.partition} (session '
                       f'{r.session[:8]}), no item of the acceptance: '
                       f'{ended.why or ended.result}')
    for i, (uuid, status) in enumerate(runs, 1):
        if status and not any(r.session == uuid and r.outcome.result in _FAILED for r in recs):
            out.append(f'{Verdict.FAILED}: repetition {i}: ReFrame exited with status {status} '
                       f'and no test case of its session {uuid[:8]} failed; see its output above')
    return list(dict.fromkeys(out))


#: ReFrame's results of a test case that failed (an unexpected pass too)
_FAILED = ('fail', 'abort', 'xpass')
