"""The fast tier, measured (docs/testing.md, "Tiers").

A pytest plugin (``-p tiers`` in pyproject.toml's ``addopts``). It times
every test that carries none of the tier markers (``slow``, ``cluster``,
``root``) in processor time, not wall time: user and system time of
pytest and of every program it started and waited for (``os.times``), over
the test's setup, call and teardown. A loaded machine stretches wall time
but hardly this, so the figure says what the test costs, not how busy the
machine was. A fixture of a wider scope than the test (a module's ReFrame
listing) is shared: its setup is divided among the tests of the run that
use it, rather than charged to the first one.

At the end of a run pytest's summary names the unmarked tests that took
more than ``--tier-bound`` seconds (default :data:`BOUND_S`): they belong in
the ``slow`` tier. A normal run never fails on it; ``--tier-check`` (what
``scripts/check-tiers`` passes) makes the run exit non-zero when it names any.
"""

import os

import pytest

#: Processor seconds above which the check names a test of the fast tier
#: (docs/testing.md): a test above about 1 s belongs in ``slow`` (the tier's
#: 900 tests must stay within a minute on a loaded 2-core machine); the check
#: leaves a margin for the tenth or two by which processor time varies.
BOUND_S = 1.5

#: The markers that take a test out of the fast tier (``make test-fast``).
TIER_MARKERS = ('slow', 'cluster', 'root')

_costs = pytest.StashKey[dict]()     # nodeid -> {phase: processor seconds}
_shared = pytest.StashKey[dict]()    # (fixture, scope node) -> processor seconds of its setups
_users = pytest.StashKey[dict]()     # (fixture, scope node) -> nodeids of the tests using it


def pytest_addoption(parser):
    group = parser.getgroup('tiers', 'the fast tier, measured (tests/tiers.py)')
    group.addoption('--tier-bound', type=float, default=BOUND_S, metavar='SECONDS',
                    help='processor seconds a test without slow, cluster or root may take '
                         f'(default {BOUND_S})')
    group.addoption('--tier-check', action='store_true',
                    help='exit non-zero when a test without slow, cluster or root took '
                         'more processor time than --tier-bound (scripts/check-tiers)')


def pytest_configure(config):
    config.stash[_costs] = {}
    config.stash[_shared] = {}
    config.stash[_users] = {}


def cpu_seconds():
    """User and system time of this process and of the children it waited for."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _unmarked(item):
    return not any(item.get_closest_marker(name) for name in TIER_MARKERS)


def _timed(phase):
    @pytest.hookimpl(wrapper=True)
    def hook(item):
        if phase == 'setup':
            _note_users(item)
        if not _unmarked(item):
            return (yield)
        start = cpu_seconds()
        try:
            return (yield)
        finally:
            cost = item.config.stash[_costs].setdefault(item.nodeid, {})
            cost[phase] = cpu_seconds() - start
    return hook


pytest_runtest_setup = _timed('setup')
pytest_runtest_call = _timed('call')
pytest_runtest_teardown = _timed('teardown')


def _scope_node(item, scope):
    """Node id of the module, class or package (or '' for the session)
    whose tests share a fixture of ``scope`` with ``item``."""
    kind = {'class': pytest.Class, 'module': pytest.Module, 'package': pytest.Package}.get(scope)
    node = item.getparent(kind) if kind else None
    return node.nodeid if node else ''


_inside = pytest.StashKey[bool]()    # in the setup of a shared fixture: counted by the outer


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef, request):
    config = request.config
    if fixturedef.scope == 'function' or config.stash.get(_inside, False):
        return (yield)
    start = cpu_seconds()
    config.stash[_inside] = True
    try:
        return (yield)
    finally:
        config.stash[_inside] = False
        cost = cpu_seconds() - start
        key = (fixturedef.argname, request.node.nodeid)
        config.stash[_shared][key] = config.stash[_shared].get(key, 0.0) + cost
        # not the first user's own: divided among all the users in over_bound
        item = request._pyfuncitem
        if _unmarked(item):
            mine = config.stash[_costs].setdefault(item.nodeid, {})
            mine['shared'] = mine.get('shared', 0.0) - cost


def _note_users(item):
    infos = getattr(getattr(item, '_fixtureinfo', None), 'name2fixturedefs', {})
    for name, defs in infos.items():
        if defs and defs[-1].scope != 'function':
            key = (name, _scope_node(item, defs[-1].scope))
            item.config.stash[_users].setdefault(key, set()).add(item.nodeid)


def over_bound(config):
    """(nodeid, processor seconds) of each unmarked test above the bound,
    costliest first; the setups of shared fixtures divided among their users."""
    bound = config.getoption('tier_bound')
    costs = {nodeid: sum(cost.values()) for nodeid, cost in config.stash[_costs].items()}
    for key, cost in config.stash[_shared].items():
        users = config.stash[_users].get(key) or set()
        for nodeid in users & costs.keys():
            costs[nodeid] += cost / len(users)
    return sorted([(n, c) for n, c in costs.items() if c > bound], key=lambda f: -f[1])


def pytest_terminal_summary(terminalreporter, config):
    slow = over_bound(config)
    if not slow:
        return
    bound = config.getoption('tier_bound')
    terminalreporter.section('tiers')
    terminalreporter.write_line(
        f'{len(slow)} test(s) without slow, cluster or root took more than {bound:g} s of '
        f'processor time (this process and the programs it ran); each needs '
        f'@pytest.mark.slow, or to be made cheaper (docs/testing.md, "Tiers"):')
    for nodeid, total in slow:
        terminalreporter.write_line(f'{total:6.1f} s  {nodeid}  needs slow')


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    if session.config.getoption('tier_check') and over_bound(session.config) \
            and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
