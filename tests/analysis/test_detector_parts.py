"""Each seam of the detector (clusterproof/analysis/detector/) on a series
that shows its one rule, called from its own module."""

import numpy as np
import pytest

from clusterproof.analysis.detector import (classification, figure, levels, model, nightly,
                                            noise, noisechange, retrospective, segmentation,
                                            significance, views)


def _noise(n, cv, seed):
    return cv * np.random.default_rng(seed).standard_normal(n)


def test_model_a_change_says_its_size_and_confidence():
    c = model.Change(at=10, found=12, shift=np.log(0.9), stderr=0.01)
    assert c.change == pytest.approx(-0.1) and c.uncertainty == pytest.approx(0.009)
    assert c.z == pytest.approx(10.536, abs=1e-3) and c.confidence > 0.999 and c.delay == 2


def test_noise_is_robust_and_has_a_floor():
    y = _noise(400, 0.02, 1)
    y[::50] += 1.0                                  # outliers do not widen it
    assert noise.robust_scale(y) == pytest.approx(0.02, rel=0.15)
    assert noise.has_outliers(y, 0.02)
    # values printed with few digits: mostly one number, a noise all the same
    q = np.log(np.array([515.0] * 30 + [499.0, 530.0] * 5))
    assert noise.robust_scale(q) == 0.0 and noise.noise_floor(q) > 0.005


def test_noise_a_figure_with_a_value_of_0_is_judged_on_its_values():
    v = np.r_[np.zeros(60), np.full(40, 2.0)] + _noise(100, 0.5, 12)
    assert noise.linear(v) and not noise.linear(np.abs(v) + 1)
    assert noise._log(v) == pytest.approx(v / noise.magnitude(v))
    (c,) = views.find(v)[0]
    # a share of the figure's typical magnitude (the median absolute value)
    assert (c.linear and abs(c.at - 60) <= 1
            and c.change == pytest.approx(2.0 / noise.magnitude(v), rel=0.1))


def test_levels_a_weekly_component_is_taken_out():
    y = _noise(140, 0.005, 2)
    y[np.arange(140) % 7 == 3] -= 0.08
    flat = levels.periodic_levels(y)
    assert np.std(np.diff(flat)) < 0.5 * np.std(np.diff(y))


def test_segmentation_places_a_step_and_a_change_of_variance():
    x = np.r_[np.zeros(50), np.full(50, 3.0)] + _noise(100, 1.0, 3)
    assert segmentation.binseg(x, 3, 3 * np.log(100)) == [50]
    u = np.r_[_noise(60, 1.0, 4), _noise(60, 4.0, 5)]
    (b,) = segmentation._var_binseg(u, 8, 3 * np.log(120))
    assert abs(b - 60) <= 3


def test_significance_the_shift_and_the_agreement_after_it():
    assert significance.hl_shift([1.0, 1.0, 1.0], [2.0, 2.0]) == 1.0
    assert significance.agree(np.array([0.0, 0.01, 0.02]), 0.01)
    assert not significance.agree(np.array([0.0, 0.2, 0.0, 0.2]), 0.01)


def test_nightly_the_night_a_step_is_raised():
    y = np.r_[np.zeros(30), np.full(5, -0.1)] + _noise(35, 0.01, 6)
    c = nightly.judge_session(y[:33], 0, model.Settings())
    assert c is not None and c.at == 30 and c.found == 32


def test_retrospective_a_ramp_is_one_drift_from_its_onset():
    t = np.arange(120)
    y = -0.08 * np.clip((t - 50) / 30, 0, 1) + _noise(120, 0.005, 7)
    (c,) = retrospective.segment(y, model.Settings(), noise.noise_floor(y))
    assert c.kind == 'drift' and abs(c.at - 50) <= 3


def test_retrospective_an_abrupt_step_on_a_slope_is_not_made_a_ramp():
    """A jump of 5 % at session 65 inside a rise of 10 % over 70 sessions
    (1 % noise): the step keeps its place; a ramp alone is still a ramp
    (off: the step was made a ramp from the rise's onset, as before)."""
    t = np.arange(120)
    rise = 0.1 * np.clip((t - 30) / 70, 0, 1) + _noise(120, 0.01, 21)
    step = [model.Change(65, None, 0.1, 0.01)]
    jump = rise + 0.05 * (t >= 65)
    assert retrospective._fit_onset(jump, step, 0, 0.01, model.Settings()) is None
    before = retrospective._fit_onset(jump, step, 0, 0.01, model.Settings(abrupt_steps=False))
    assert before.kind == 'drift' and before.at < 50
    ramp = 0.2 * np.clip((t - 30) / 70, 0, 1) + _noise(120, 0.01, 21)
    assert retrospective._fit_onset(ramp, step, 0, 0.01, model.Settings()).kind == 'drift'


def test_views_a_row_of_alarms_on_a_rise_is_one_drift():
    """Three nightly alarms the whole history does not confirm, on a smooth
    rise, are one drift, found the night of the first alarm."""
    y = 0.003 * np.arange(120) + _noise(120, 0.004, 22)
    alarms = [model.Change(a, a + 2, 0.05, 0.005, view='nightly') for a in (30, 55, 80)]
    steps, (d,) = views._rows_of(y, alarms, model.Settings(), 1e-6)
    assert steps == [] and d.kind == 'drift' and (d.view, d.found) == ('both', 32)


def test_views_an_unconfirmed_alarm_is_widened_about_the_confirmed_changes():
    """A level that wanders, cut by an alarm every 12 sessions: about all of
    them its residuals look independent (no widening); each unconfirmed
    alarm is judged about the confirmed change and its own place, where
    the wandering shows (off: about all of them, as before)."""
    y = np.cumsum(_noise(300, 0.004, 23)) + _noise(300, 0.004, 24)
    steps = [model.Change(a, a + 2, 0.0, 0.01, view='nightly') for a in range(20, 300, 12)]
    steps[5] = model.Change(steps[5].at, None, 0.0, 0.01, view='retrospective')
    off = views._widenings(y, steps, model.Settings(own_widening=False))
    on = views._widenings(y, steps, model.Settings())
    assert off == [1.0] * len(steps) and on[5] == 1.0
    assert min(w for k, w in enumerate(on) if k != 5) > 1.5


def test_classify_a_short_excursion_is_one_transient():
    y = _noise(80, 0.01, 8)
    y[40:43] += 0.3
    steps = [model.Change(40, None, 0.3, 0.01, 40, 3), model.Change(43, None, -0.3, 0.01, 3, 37)]
    (c,) = classification.classify(y, steps, model.Settings())
    assert c.kind == 'transient' and (c.at, c.end) == (40, 43)


def test_noisechange_a_node_that_became_jittery():
    y = np.r_[_noise(80, 0.005, 9), _noise(80, 0.03, 10)]
    (c,) = noisechange.noise_changes(y, [], model.Settings())
    assert c.kind == 'noise' and abs(c.at - 80) <= 4 and c.change > 1.5


def test_figure_a_figure_too_noisy_to_judge():
    values = 100 * np.exp(_noise(120, 0.3, 11))
    fn = figure.figure_noise(values)
    assert fn.too_noisy and fn.detectable > model.DEFAULT_MAX_DETECTABLE


def test_a_figure_too_noisy_to_judge_still_lists_the_changes_it_keeps():
    """Noise of 12 %: a change must be 38 % to be seen within three sessions,
    but a drop of 30 % held for 60 sessions is certain; it is listed, and
    the figure is too noisy only for what it cannot show (off: not listed,
    as before)."""
    from clusterproof.analysis import findings
    from clusterproof.analysis.detector import model as detector_model
    from clusterproof.store.history import History, Point
    v = 100 * np.exp(_noise(120, 0.12, 5))
    v[60:] *= 0.7
    h = History('s', 'p', 'T', 'f', 'MB/s', (), [Point(1e9 + i * 86400, float(x))
                                                 for i, x in enumerate(v)])
    status, fn, found = findings.judge_figure(h, detector_model.Settings())
    assert fn.too_noisy and status == 'changed'
    assert [round(f['change'], 1) for f in found] == [-0.3]
    status, _, found = findings.judge_figure(h, detector_model.Settings(noisy_changes=False))
    assert status == 'noisy' and found == []
