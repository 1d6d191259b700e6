"""What the morning page draws, chosen before the page
(clusterproof.analysis.morning): the small multiples chosen and capped, a
history downsampled, a row's band shaded; on records of real runs
(tests/data/results/README.md)."""

import dataclasses

import pytest

from clusterproof.analysis import compare, morning
from clusterproof.store import history
from clusterproof.store.sessions import load_sessions, records
from results_helpers import recorded_results


@pytest.fixture(scope='module')
def recorded(tmp_path_factory):
    """(sessions, records) of the two oldest recorded sessions, 40 figures
    each (one recorded figure of one test case renamed)."""
    sessions = load_sessions(recorded_results(tmp_path_factory.mktemp('morning'))
                             / 'results.db')[:2]
    rec = [r for r in records(sessions)
           if r.figure == 'copy_bw' and r.test.endswith('%num_threads=1')]
    recs = [dataclasses.replace(r, figure=f'copy_bw{i}') for r in rec for i in range(40)]
    return sessions, recs


def _rows(sessions, recs, refs=None):
    newest = [r for r in recs if r.session == sessions[-1].uuid]
    return compare.against_references(newest, refs or {})


def test_multiples_changed_first_then_failing_then_capped(recorded):
    sessions, recs = recorded
    hists = {h.key: h for h in history.from_records(sessions, recs)}
    rows = _rows(sessions, recs)
    assert all(row.verdict.bucket in morning.QUIET for row in rows)     # no reference
    chosen = morning.chosen_multiples(rows, hists, {})
    assert len(chosen) == morning.MAX_MULTIPLES
    changed = {rows[i].rec.key: ['2026-01-01T00:00:00'] for i in range(-5, 0)}
    chosen = morning.chosen_multiples(rows, hists, changed)
    assert len(chosen) == 5 + morning.MAX_MULTIPLES
    assert {id(row) for row in rows[-5:]} <= chosen
    # every figure misses its reference: all notable, MAX_MULTIPLES_TOTAL in all
    refs = {'local': {'DevZeroCopy': {'local:default': {
        f'copy_bw{i}': [1e9, -0.1, None, 'MB/s'] for i in range(40)}}}}
    failing = _rows(sessions, recs, refs)
    assert len(morning.chosen_multiples(failing, hists, {})) == morning.MAX_MULTIPLES_TOTAL
    # a history of one point is not drawn
    newest = [r for r in recs if r.session == sessions[-1].uuid]
    one_point = {h.key: h for h in history.from_records(sessions[-1:], newest)}
    assert morning.chosen_multiples(rows, one_point, changed) == set()


def test_downsample_keeps_the_newest_half_and_spaces_the_older():
    points = list(range(1000))
    drawn = morning.downsample(points)
    assert len(drawn) == morning.MAX_POINTS
    assert drawn[-60:] == points[-60:] and drawn[0] == 0
    steps = {b - a for a, b in zip(drawn[:60], drawn[1:60])}
    assert steps <= {15, 16}                  # 940 older points in 60 steps
    assert morning.downsample(points[:morning.MAX_POINTS]) == points[:morning.MAX_POINTS]


def test_multiple_shades_the_band_of_its_row(recorded):
    """A band open above is closed a span of the values beyond the highest
    of them and the reference."""
    sessions, recs = recorded
    one = [r for r in recs if r.figure == 'copy_bw0']
    refs = {'local': {'DevZeroCopy': {'local:default': {'copy_bw0': [500.0, -0.2, None,
                                                                     'MB/s']}}}}
    row, = _rows(sessions, one, refs)
    hist, = history.from_records(sessions, one)
    drawn = morning.multiple(row, hist, ['2026-01-01T00:00:00'])
    values = [p.value for p in hist.points]
    span = max(values) - min(values)
    assert drawn.values == values and drawn.times == [p.time for p in hist.points]
    assert drawn.shaded == (pytest.approx(400.0), max(max(values), 500.0) + span)
    assert drawn.changes == ['2026-01-01T00:00:00']
    unjudged, = _rows(sessions, one)
    assert morning.multiple(unjudged, hist, []).shaded is None
