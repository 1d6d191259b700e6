"""The fast tier, measured (docs/testing.md, "Tiers").

A pytest plugin (``-p tiers`` in pyproject.toml's ``addopts``). It times
every test that carries none of the tier markers (``slow``, ``cluster``,
``root``) in processor time, not wall time: user and system time of
pytest and of every program it started and waited for (``os.times``), over
the test's setup, call and teardown. A loaded machine stretches wall time
but hardly this, so the figure says what the test costs, not how busy the
machine was.

At the end of a run pytest's summary names the unmarked tests that took
more than ``--tier-bound`` seconds (default :data:`BOUND_S`): they belong in
the ``slow`` tier. A normal run never fails on it; ``--tier-check`` (what
``scripts/check-tiers`` passes) makes the run exit non-zero when it names any.
"""

import os

import pytest

#: Processor seconds a test of the fast tier may take (docs/testing.md):
#: about 2 s of wall time on a loaded 2-core machine; the tier's 850 tests
#: must stay within a minute.
BOUND_S = 1.0

#: The markers that take a test out of the fast tier (``make test-fast``).
TIER_MARKERS = ('slow', 'cluster', 'root')

_costs = pytest.StashKey[dict]()


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


def cpu_seconds():
    """User and system time of this process and of the children it waited for."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _unmarked(item):
    return not any(item.get_closest_marker(name) for name in TIER_MARKERS)


def _timed(phase):
    @pytest.hookimpl(wrapper=True)
    def hook(item):
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


def over_bound(config):
    """(nodeid, processor seconds, of which in setup) of each unmarked test
    above the bound, costliest first."""
    bound = config.getoption('tier_bound')
    found = [(nodeid, sum(cost.values()), cost.get('setup', 0.0))
             for nodeid, cost in config.stash[_costs].items()]
    return sorted([f for f in found if f[1] > bound], key=lambda f: -f[1])


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
    for nodeid, total, setup in slow:
        note = f' ({setup:.1f} s in setup: a fixture it shares may be the cost)' \
            if setup > total / 2 else ''
        terminalreporter.write_line(f'{total:6.1f} s  {nodeid}  needs slow{note}')


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    if session.config.getoption('tier_check') and over_bound(session.config) \
            and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
