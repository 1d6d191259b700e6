"""Detection defects seen on real histories, each on a series that shows it
(synthetic, fixed seeds), with the behaviour that fixes it: a change the
nightly runs missed, changes inside the noise, large changes of noisy
figures, quantised values, two node types, a slow drift. (The morning page
and `clusterproof changes` agreeing: tests/publish/test_report.py.)"""

import datetime

import numpy as np
import pytest

from clusterproof.analysis.detector import (figure, levels, model, nightly, noise, retrospective,
                                            views)
from clusterproof.analysis.findings import detect
from clusterproof.store import sources


def _night(i):
    t = datetime.datetime(2026, 10, 1, 1, 30, tzinfo=datetime.timezone.utc)
    return (t + datetime.timedelta(days=i)).isoformat()


def _histories(tmp_path, figures, nodes=None):
    """CSV history of ``figures`` ({name: values}), read back by the history
    readers; ``nodes`` the node list of each session."""
    rows = ['timestamp,system,partition,test,figure,value,unit,job_nodelist']
    for name, values in figures.items():
        for i, v in enumerate(values):
            node = nodes[i] if nodes is not None else 'n1'
            rows.append(f'{_night(i)},pm,batch,Stream,{name},{v:.4f},GB/s,{node}')
    path = tmp_path / 'h.csv'
    path.write_text('\n'.join(rows) + '\n')
    return sources.load([path])


def _listed(found):
    return [f for f in found if not f['withdrawn']]


def test_step_the_nightly_runs_missed_is_found_by_the_whole_history():
    """A -7.5 % step on 5 % noise, 40 sessions before and 70 after: the
    nightly screen sees too few sessions after it to raise it (this seed: no
    alarm near it), the segmentation of the whole history finds it."""
    rng = np.random.default_rng(16)
    values = 100 * (1 + 0.05 * rng.standard_normal(110))
    values[40:] *= 0.925
    assert not [c for c in nightly.scan(values) if abs(c.at - 40) <= 3 and c.shift < 0]
    kept, _ = views.find(values)
    (c,) = kept
    assert abs(c.at - 40) <= 3 and c.view == 'retrospective' and c.found is None
    assert c.change == pytest.approx(-0.075, abs=0.03) and c.confidence > 0.999


def test_changes_inside_the_noise_are_not_listed_and_a_disproved_alarm_is_withdrawn():
    """0.7 % noise: a -15 % step, then two bad nights that the nightly runs
    raise and later sessions disprove. Listed: the step only; the alarm is
    withdrawn; no small change next to the step."""
    rng = np.random.default_rng(12)
    values = 100 * (1 + 0.007 * rng.standard_normal(100))
    values[40:] *= 0.85
    values[70:72] *= 0.95
    alarms = nightly.scan(values)
    assert any(abs(c.at - 70) <= 1 for c in alarms)      # the nightly runs raised it
    kept, withdrawn = views.find(values)
    assert [(c.at, round(c.change, 2)) for c in kept] == [(40, -0.15)]
    assert [c.at for c in withdrawn] == [70] and withdrawn[0].z < model.DEFAULT_Z


def test_an_episode_that_ends_is_two_changes_not_a_withdrawn_alarm():
    """A CPU quota slows six sessions by 30 %, then the level comes back:
    the nightly alarm stands, and the return is a change of its own."""
    rng = np.random.default_rng(18)
    values = 100 * (1 + 0.01 * rng.standard_normal(80))
    values[40:46] *= 0.7
    kept, withdrawn = views.find(values)
    assert [c.at for c in kept] == [40, 46]
    assert kept[0].change == pytest.approx(-0.3, abs=0.02)
    assert kept[1].change == pytest.approx(1 / 0.7 - 1, abs=0.03)
    assert kept[0].found is not None and withdrawn == []


def test_too_noisy_figure_still_lists_changes_larger_than_it_can_detect(tmp_path):
    """A binary rebuilt at -O0 halves three figures of 7-9 % noise, which
    detect >= 26-34 % only: the halving is listed, the figure's smaller
    wobbles are not, and a quiet noisy figure is still too noisy to judge."""
    rng = np.random.default_rng(13)
    figures = {}
    for name, cv in (('copy', 0.07), ('scale', 0.08), ('triad', 0.09), ('add', 0.09)):
        v = 40 * (1 + cv * rng.standard_normal(60))
        if name != 'add':
            v[40:] *= 0.5
        figures[name] = v
    found, quiet, noisy, _ = detect(_histories(tmp_path, figures))
    listed = _listed(found)
    assert sorted(f['figure'] for f in listed) == ['copy', 'scale', 'triad']
    for f in listed:
        assert f['at'].startswith(_night(40)[:10])
        assert f['change'] == pytest.approx(-0.5, abs=0.06)
        assert f['detectable'] > model.DEFAULT_MAX_DETECTABLE     # a noisy figure
        assert abs(f['change']) >= f['detectable']
    assert [h.figure for h, _ in noisy] == ['add']


def test_quantised_values_do_not_collapse_the_noise():
    """Values that are mostly one number (499, 515, 530; mostly 515): the
    interquartile range is zero, the noise is not; nothing is listed."""
    rng = np.random.default_rng(14)
    values = rng.choice([499.0, 515.0, 530.0], p=[0.1, 0.8, 0.1], size=120)
    assert noise.robust_scale(np.log(values)) == 0.0
    fn = figure.figure_noise(values)
    assert fn.noise >= 0.008 and fn.detectable >= 0.025
    kept, _ = views.find(values)
    assert kept == []


def test_two_node_types_are_two_levels_not_noise(tmp_path):
    """Runs land on n1 (3 % faster) or n5 (3 % slower), 1 % noise, a -6 %
    step at session 70 on both: with the node list of each session the step
    is found where it is, with its size."""
    rng = np.random.default_rng(15)
    nodes = list(rng.choice(['n1', 'n5'], size=120))
    values = 100 * (1 + 0.01 * rng.standard_normal(120)) * np.where(
        np.array(nodes) == 'n1', 1.03, 0.97)
    values[70:] *= 0.94
    found, *_ = detect(_histories(tmp_path, {'triad': values}, nodes))
    (f,) = _listed(found)
    assert f['at'].startswith(_night(70)[:10])
    assert f['change'] == pytest.approx(-0.06, abs=0.015)
    assert f['noise'] < 0.02          # the node types are not counted as noise
    # Without the node list the mixture is noise: the figure detects less.
    fn = figure.figure_noise(values)
    assert fn.noise > 0.025


def test_a_node_used_only_after_the_change_is_not_taken_out(tmp_path):
    """Sessions on two node types in turn (n1 3 % faster than n2), then six
    on a slow n3: the node types' levels are taken out, n3's level is the
    change, not a node type."""
    rng = np.random.default_rng(19)
    nodes = [('n1', 'n2')[i % 2] for i in range(30)] + ['n3'] * 6
    values = 100 * (1 + 0.005 * rng.standard_normal(36)) * np.where(
        np.array(nodes) == 'n1', 1.015, 0.985)
    values[30:] *= 0.6
    y = np.log(values)
    assert not np.allclose(levels.group_levels(y, nodes)[:30], y[:30])   # n1, n2 out
    assert np.allclose(levels.group_levels(y, nodes)[30:], y[30:])       # n3 kept
    found, *_ = detect(_histories(tmp_path, {'triad': values}, nodes))
    (f,) = _listed(found)
    assert f['at'].startswith(_night(30)[:10])
    assert f['change'] == pytest.approx(-0.4, abs=0.03)
    assert 'nodes: n3 in every session after, not in every one before' in f['attribution']


def test_slow_drift_is_one_drift_with_its_rate():
    """0.2 % worse per session from session 40 on (a filling file system):
    one drift, its start and rate, not a staircase of steps."""
    rng = np.random.default_rng(16)
    t = np.arange(120)
    values = 100 * (1 + 0.01 * rng.standard_normal(120)) * 0.998 ** np.maximum(t - 40, 0)
    assert len(retrospective.segment(np.log(values))) == 1
    kept, _ = views.find(values)
    (c,) = kept
    assert c.kind == 'drift' and abs(c.at - 40) <= 8
    assert np.expm1(c.rate) == pytest.approx(-0.002, abs=0.0005)
    assert c.change == pytest.approx(0.998 ** (c.end - c.at) - 1, abs=0.03)


def test_smooth_curved_rise_is_one_drift():
    """A smooth, curving rise over 300 sessions (0.5 % noise) is one drift,
    not a staircase of evenly spaced steps."""
    rng = np.random.default_rng(17)
    t = np.arange(300)
    values = 100 * np.exp(0.3 * (t / 300) ** 2) * (1 + 0.005 * rng.standard_normal(300))
    kept, _ = views.find(values)
    assert [c.kind for c in kept] == ['drift']
    assert kept[0].change == pytest.approx(np.expm1(0.3), rel=0.25)


def test_constant_figure_has_the_floor_and_no_change():
    values = np.full(40, 12.5)
    kept, withdrawn = views.find(values)
    assert kept == [] and withdrawn == []
    assert figure.figure_noise(values).noise < 1e-5


def test_tcpd_metrics_on_hand_worked_cases():
    """F1 (margin 5) and cover as van den Burg & Williams define them,
    checked on cases worked by hand (TCPD itself is not in the repository)."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / 'scripts'))
    import measure_detection as detection
    # each prediction matches at most one annotated point
    assert detection.true_positives({1, 10, 20, 23}, {3, 8, 20}) == 3
    assert detection.true_positives({1, 2, 3}, set()) == 0
    # one annotator at 50, prediction at 53: the points {0, 50} and {0, 53}
    assert detection.f1_score({'a': [50]}, [53]) == 1.0
    # no prediction: precision 1 (the start), recall 1/2 -> F1 2/3
    assert detection.f1_score({'a': [50]}, []) == pytest.approx(2 / 3)
    # two annotators, one marks nothing: recall (1 + 1) / 2, precision 2 / 2
    assert detection.f1_score({'a': [50], 'b': []}, [50]) == 1.0
    # cover: truth [0, 50), [50, 100); prediction one segment: each true
    # segment's best Jaccard index is 50 / 100
    assert detection.cover_score({'a': [50]}, [], 100) == pytest.approx(0.5)
    assert detection.cover_score({'a': [50]}, [50], 100) == 1.0
    # prediction at 60: [0,50) vs [0,60) = 50/60, [50,100) vs [60,100) = 40/50
    assert detection.cover_score({'a': [50]}, [60], 100) == pytest.approx(
        (50 * 50 / 60 + 50 * 40 / 50) / 100)


def _detection():
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / 'scripts'))
    import measure_detection
    return measure_detection


def test_tcpd_scores_the_points_tcpdbench_scores():
    """TCPDBench drops predicted points at the first and last positions
    (several methods name them by default) and duplicates."""
    detection = _detection()
    assert detection.tcpd_clean([0, 5, 5, 98, 99, 140], 100) == [5, 98]
    assert detection.tcpd_clean([], 10) == []


def test_tcpd_counts_the_onset_of_a_slow_decline_not_its_end(tmp_path):
    """The change points scored on TCPD, as the command lists them: a level
    held, then a steady 4 % decline from session 40 over 30 sessions (a
    missing value among them, left out of the CSV, its day kept) is one
    point, at its onset."""
    detection = _detection()
    rng = np.random.default_rng(6)
    values = 100 * (1 + 0.01 * rng.standard_normal(90)) * (
        1 - 0.04 * np.clip((np.arange(90) - 39) / 30, 0, 1))
    raw = [float(v) for v in values]
    raw[20] = None
    detection.tcpd_csv([('decline', raw, {})], tmp_path / 'h.csv')
    found, skipped = detection.command_listing(tmp_path / 'h.csv')
    assert skipped == []
    (point,) = detection.tcpd_points(found)['decline']
    assert abs(point - 39) <= 3


def test_tcpd_r_column_says_why_when_rscript_is_absent(tmp_path, monkeypatch):
    detection = _detection()
    monkeypatch.setenv('PATH', str(tmp_path))
    why = detection.r_changepoint_missing()
    assert why is not None and 'Rscript not found' in why


def test_tcpd_r_binseg_default_places_a_step():
    """Measured only where R and its changepoint package are installed (a
    measurement tool of the benchmark, not a dependency)."""
    detection = _detection()
    why = detection.r_changepoint_missing()
    if why:
        pytest.skip(why)
    rng = np.random.default_rng(3)
    raw = list(np.r_[np.full(60, 10.0), np.full(40, 13.0)] + 0.3 * rng.standard_normal(100))
    raw[20] = None                       # a missing value is left out, places mapped back
    for _, method in detection.TCPD_R_DEFAULTS:
        assert detection.tcpd_clean(detection.r_changepoint_predict(raw, method), 100) == [59]
