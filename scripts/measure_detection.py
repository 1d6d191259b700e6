#!/usr/bin/env python3
"""Labelled detection measurement: how often each method finds a real step,
how late, and how often it raises a false alarm, per noise model.

Synthetic figures of 120 nights each (fixed seeds):

- noise models: Gaussian at CV 1, 2, 5 and 10 %; heavy tails (CV 1 % and
  3 % of nights 20-40 % worse: a busy node, a cold cache); bimodal (CV 1 %
  around two levels 6 % apart: the job lands on one of two node types);
  slow drift (CV 1 %, 0.2 %/night worse from night 40 on);
- on every model but drift: figures without a change, and figures with one
  step of 2, 5, 10 or 20 % at a known night (30 to 100), worse and better,
  for a throughput (GB/s: worse is lower) and a time (s: worse is higher);
- with --classes, the classes of false alarm (spikes, flipping, wander,
  jitter, periodic) and the onset of a slow degradation (degrade: the same
  sizes reached by a steady decline over 10 to 40 nights; the truth is the
  night it began).

Every method is run as the nightly runs would run it: at night t it sees
the history up to night t only. Nights 20 to 119 are judged (today's rule
blesses its reference from the first 20 nights).

Scoring: an alarm at or after the step, in its direction (and, for methods
that place the change, within 3 sessions of it) finds the step; its delay
is the number of nights after the first changed session (0: found that
very night). Recall counts steps found within 3 nights. Any other alarm is
false; false alarms are counted per 1,000 judged figure-nights. A drift is
found by an alarm in its direction after night 40.

    .venv/bin/python scripts/measure_detection.py                # small, held-out seeds
    .venv/bin/python scripts/measure_detection.py --methods all  # and every library alone
    .venv/bin/python scripts/measure_detection.py --size full \
        --methods today,changes,otava,e-divisive
    .venv/bin/python scripts/measure_detection.py --seeds tune   # the seeds used for tuning

Then the real series (tests/data/history-real/, recorded by
scripts/record-series: real runs of the suite's checks on system local with
slowdowns injected at known sessions), one table per method: per injection,
the recall of the figures it moved by 5 % or more, the delay in sessions,
and the false alarms per 1000 figure-sessions without an injection
(--real none leaves them out).

Then the detector's speed, in memory (not a command's time): CPU seconds of
detector.find and detector.figure_noise per 2,000 generated figures of 365
sessions (levels, steps, drifts, quantised values, two node types, heavy
tails; --speed N figures timed, 0: none).

The last line is for scripts (one line, shown here in two):
    detection: recall >=5% steps (CV<=2%) X%, median delay D nights,
    false alarms F per 1000 figure-nights
for the product's nightly alarms as `clusterproof changes` lists them (its
function, findings.listing: every method named listed* or changes scores
what it returns); F is the worst noise model's rate.
"""

import argparse
import datetime
import json
import math
import re
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from clusterproof.analysis import bless, compare, findings
from clusterproof.analysis.detector import (figure as detector_figure, model as detector_model,
                                            nightly, views)
from clusterproof.references.direction import lower_is_better
from clusterproof.store import history, sources
from clusterproof.store.sessions import Outcome, Record, Times

NIGHTS = 120
FIRST_JUDGED = 20           # today's rule blesses from the nights before
STEP_NIGHTS = (30, 100)
DRIFT_START = 40
STEPS = (0.02, 0.05, 0.10, 0.20)
WITHIN = 3                  # nights
MATCH = 3                   # sessions between a placed change and the step

NOISE_MODELS = {
    'gauss 1%': dict(cv=0.01),
    'gauss 2%': dict(cv=0.02),
    'gauss 5%': dict(cv=0.05),
    'gauss 10%': dict(cv=0.10),
    'heavy tails': dict(cv=0.01, outliers=0.03),
    'bimodal': dict(cv=0.01, modes=0.06),
    'drift': dict(cv=0.01, drift=0.002),
}
#: the classes of false alarm seen on data nobody here labelled, as noise
#: models scored by the listing (``--classes``): short spikes (two of three
#: sessions 20-40 % worse, then back), a figure flipping between two levels
#: (runs at +50 %: entered with probability 0.05 a session, left with 0.3),
#: a level that wanders (a random walk of 0.3 % a session under 0.5 % noise);
#: and a change of noise, not of level (``jitter``: from a random night on,
#: the noise of a figure at CV 1 % is 1 + 10 x the step times as large, so
#: the steps of 2, 5, 10 and 20 % are noise 1.2, 1.5, 2 and 3 times as large,
#: or as many times smaller when "better": a node that became jittery, or
#: was mended); and a periodic component (``periodic``: two sessions in a
#: row of every seven, at a phase drawn per figure, 5-10 % worse, drawn per
#: figure: a weekend backup or scrub on the file system on the nights of the
#: run), which must not raise changes; and the onset of a slow degradation
#: (``degrade``: CV 1 %, then from a random night a linear decline of the
#: step's size over 10 to 40 nights, held after it: a storage target
#: filling up, a fan failing, a DIMM correcting more and more errors; the
#: truth is the onset, the first night of the decline)
CLASS_MODELS = {
    'spikes': dict(cv=0.01, spikes=2),
    'flipping': dict(cv=0.01, flip=0.5),
    'wander': dict(cv=0.005, walk=0.003),
    'jitter': dict(cv=0.01, jitter=10),
    'periodic': dict(cv=0.01, period=7, busy=2, cron=(0.05, 0.10)),
    'degrade': dict(cv=0.01, ramp=(10, 40)),
}
#: the noise models the recall target applies to
QUIET = ('gauss 1%', 'gauss 2%')

SIZES = {
    # figures without a change, and repetitions of every step cell
    # (4 sizes x 2 directions x 2 units)
    'small': dict(null=30, reps=3),
    'full': dict(null=200, reps=15),
}
SEEDS = {'eval': 20261122, 'tune': 777}

TARGET_RECALL = 0.95
TARGET_DELAY = WITHIN
TARGET_FA = 1.0


# -- series ---------------------------------------------------------------------

class Series:
    __slots__ = ('model', 'values', 'unit', 'step_at', 'step', 'sign', 'figure', 'first',
                 'kind')

    def __init__(self, model, values, unit, step_at=None, step=0.0, sign=0, figure='',
                 first=FIRST_JUDGED, kind='level'):
        self.model, self.values, self.unit = model, values, unit
        self.kind = kind        # what changes at ``step_at``: the level or the noise
        self.step_at, self.step, self.sign = step_at, step, sign
        self.figure = figure
        self.first = first      # the first night judged (today's rule blesses before)

    @property
    def lower_is_better(self):
        return lower_is_better(self.unit, self.figure)


def make_series(model, rng, unit, step=0.0, worse=True):
    """One figure of 120 nights under ``model``; ``step`` (relative) at a
    random night, in the worse or better direction of ``unit``."""
    p = {**NOISE_MODELS, **CLASS_MODELS}[model]
    n = NIGHTS
    worse_sign = 1 if lower_is_better(unit) else -1
    level = np.full(n, 100.0 if unit == 'GB/s' else 10.0)
    values = level * (1 + p['cv'] * rng.standard_normal(n))
    if 'modes' in p:
        values *= 1 + p['modes'] / 2 * rng.choice((-1.0, 1.0), n)
    if 'outliers' in p:
        hit = rng.random(n) < p['outliers']
        values[hit] *= 1 + worse_sign * rng.uniform(0.2, 0.4, hit.sum())
    if 'spikes' in p:
        for _ in range(p['spikes']):
            at = int(rng.integers(FIRST_JUDGED, n - 3))
            values[at:at + 3] *= 1 + worse_sign * rng.uniform(0.2, 0.4)
    if 'flip' in p:
        high, state = np.zeros(n, dtype=bool), False
        for t, u in enumerate(rng.random(n)):
            state = (u >= 0.3) if state else (u < 0.05)
            high[t] = state
        values[high] *= 1 + p['flip']
    if 'period' in p:
        phase = (np.arange(n) - rng.integers(p['period'])) % p['period']
        values[phase < p['busy']] *= 1 + worse_sign * rng.uniform(*p['cron'])
    if 'walk' in p:
        values *= np.exp(np.cumsum(p['walk'] * rng.standard_normal(n)))
    if 'drift' in p:
        t = np.arange(n) - DRIFT_START
        values *= np.where(t > 0, (1 + worse_sign * p['drift']) ** np.maximum(t, 0), 1.0)
        return Series(model, values, unit, DRIFT_START + 1, 0.0, worse_sign)
    if step and 'jitter' in p:
        at = int(rng.integers(STEP_NIGHTS[0], STEP_NIGHTS[1] + 1))
        factor = 1 + p['jitter'] * step
        z = rng.standard_normal(n)
        z[at:] *= factor if worse else 1 / factor
        values = level * (1 + p['cv'] * z)
        return Series(model, values, unit, at, step, worse_sign if worse else -worse_sign,
                      kind='noise')
    if step and 'ramp' in p:
        nights = int(rng.integers(p['ramp'][0], p['ramp'][1] + 1))
        at = int(rng.integers(STEP_NIGHTS[0], n - nights - 5 + 1))
        sign = worse_sign if worse else -worse_sign
        values *= 1 + sign * step * np.clip((np.arange(n) - at + 1) / nights, 0, 1)
        return Series(model, values, unit, at, step, sign)
    if step:
        at = int(rng.integers(STEP_NIGHTS[0], STEP_NIGHTS[1] + 1))
        sign = worse_sign if worse else -worse_sign
        values[at:] *= 1 + sign * step
        return Series(model, values, unit, at, step, sign)
    return Series(model, values, unit)


def generate(model, size, seed):
    cfg = SIZES[size]
    midx = list({**NOISE_MODELS, **CLASS_MODELS}).index(model)
    out = []
    k = 0

    def rng():
        nonlocal k
        k += 1
        return np.random.default_rng([seed, midx, k])

    if model == 'drift':
        for i in range(cfg['null'] // 2):
            out.append(make_series(model, rng(), ('GB/s', 's')[i % 2]))
        return out
    for i in range(cfg['null']):
        out.append(make_series(model, rng(), ('GB/s', 's')[i % 2]))
    for step in STEPS:
        for worse in (True, False):
            for unit in ('GB/s', 's'):
                for _ in range(cfg['reps']):
                    out.append(make_series(model, rng(), unit, step, worse))
    return out



# -- speed: the detector alone, in memory ------------------------------------------

#: kinds of the speed set, in turn: a level with Gaussian noise, one step,
#: a slow drift, values printed with few digits (mostly one number), two node
#: types (their node list given), heavy tails
SPEED_KINDS = ('level', 'step', 'drift', 'quantised', 'bimodal', 'outliers')


def speed_series(count, nights, seed):
    """``count`` figures of ``nights`` sessions for timing the detector:
    ``[(kind, values, groups)]``, the kinds of :data:`SPEED_KINDS` in turn
    (``groups``: the node list of each session, or None), levels and noise
    (CV 0.5-5 %) drawn per figure."""
    out = []
    for i in range(count):
        rng = np.random.default_rng([seed, i])
        kind = SPEED_KINDS[i % len(SPEED_KINDS)]
        cv = float(rng.uniform(0.005, 0.05))
        level = float(10 ** rng.uniform(0, 4))
        values = level * (1 + cv * rng.standard_normal(nights))
        groups = None
        if kind == 'step':
            at = int(rng.integers(10, nights - 3))
            values[at:] *= 1 + float(rng.choice((-1, 1))) * float(rng.uniform(0.02, 0.3))
        elif kind == 'drift':
            start = int(rng.integers(0, nights // 2))
            t = np.maximum(np.arange(nights) - start, 0)
            values *= (1 + float(rng.choice((-1, 1))) * float(rng.uniform(0.0005, 0.003))) ** t
        elif kind == 'quantised':
            values = np.round(values / (level * 0.03)) * (level * 0.03)
        elif kind == 'bimodal':
            slow = rng.random(nights) < 0.4
            values[slow] *= 0.94
            groups = np.where(slow, 'n[1-4]', 'n[5-8]').tolist()
        elif kind == 'outliers':
            hit = rng.random(nights) < 0.03
            values[hit] *= 1 - rng.uniform(0.2, 0.4, hit.sum())
        out.append((kind, values, groups))
    return out


#: figures and sessions of the speed set the benchmark times by default
SPEED_COUNT = 2000
SPEED_NIGHTS = 365
def speed_line(count, nights=SPEED_NIGHTS):
    """The speed line: the detector's CPU time in memory per 2,000 figures
    (one system's findings, as ``clusterproof store ingest`` derives them)
    and per 20,000 (10 systems). ``clusterproof changes`` reads the findings
    kept in the store; its whole-process time is scripts/measure_results_commands.py's."""
    cpu = detector_speed(count, nights)
    per = cpu / count
    return (f"detector speed (in memory, not a command's time): {per * 2000:.2f} s CPU "
            f'per 2,000 figures x {nights} sessions ({count} timed), the findings of one '
            f'system as store ingest derives them; 20,000 figures {per * 20000:.1f} s '
            '(changes reads the kept findings: its time is '
            f'scripts/measure_results_commands.py\'s)')


def detector_speed(count, nights, seed=1, profile=None):
    """CPU seconds of the detector (:func:`detector.find` and
    :func:`detector.figure_noise`, as ``clusterproof changes`` runs them per
    figure) on :func:`speed_series`, in memory; ``profile``: a file for
    cProfile's statistics."""
    data = speed_series(count, nights, seed)
    prof = None
    if profile:
        import cProfile
        prof = cProfile.Profile()
        prof.enable()
    t0 = time.process_time()
    for _kind, values, groups in data:
        cps, _withdrawn = views.find(values, None, groups)
        detector_figure.figure_noise(values, cps, None, groups)
    cpu = time.process_time() - t0
    if prof is not None:
        prof.disable()
        prof.dump_stats(profile)
    return cpu


# -- methods ----------------------------------------------------------------------
# Each returns the alarms of one series: [(night, placed change or None, sign)],
# sign +1 for a move up, -1 for a move down.

def method_today(series):
    """compare.py as `clusterproof compare` runs it every night: the
    reference blessed (bless.derive) from the first 20 nights, each night
    judged against it (fixed band), plus drift over the last 30 sessions
    (rolling median of 7, 5 nights worse in a row). Consecutive alarm
    nights are one alarm."""
    recs = [_record(series, t, v) for t, v in enumerate(series.values)]
    refs = {'bench': bless.merged_entries({}, bless.derive(recs[:series.first]))}
    worse = 1 if series.lower_is_better else -1
    alarms, on = [], False
    for t in range(series.first, len(series.values)):
        row = compare.against_references([recs[t]], refs)[0]
        alarm = row.verdict == 'REGRESSION' or bool(
            compare.drift(recs[max(0, t - 29):t + 1], refs))
        if alarm and not on:
            alarms.append((t, None, worse))
        on = alarm
    return alarms


def _record(series, t, value):
    return Record(session=f's{t}', system='bench', partition='p', environ='e', check='Bench',
                  test='Bench', figure=series.figure or 'value', value=float(value),
                  unit=series.unit, ran_against=None, outcome=Outcome('pass'),
                  times=Times(float(t), float(t)), mode='nightly', smoke=False,
                  emulated=False, binary_version='', case={})


def method_changes(series):
    """The product's nightly alarms, as `clusterproof changes` lists them
    (:func:`listed_findings`): every change and transient a nightly run
    raised, on the night it raised it (withdrawn ones too: they were
    raised), placed where the listing puts it (binary segmentation placing
    the change, the Hodges-Lehmann shift confirming it)."""
    found = listed_findings(series.values, series.unit, series.figure)
    return sorted((_night(f['found']), _night(f['at']), 1 if f['change'] > 0 else -1)
                  for f in found if f['found'] is not None and f['kind'] != 'noise')


def method_listed(series, transients=False, settings=None):
    """What `clusterproof changes` lists once the whole history is seen
    (:func:`listed_findings`: the function the command calls): the nightly
    alarms that later sessions confirm, and the changes the retrospective
    segmentation finds (placed where it puts them; "raised" on the last
    night when no nightly run raised them); a withdrawn alarm is not one. A
    transient is not a change of level: it counts only with ``transients``
    (the injections of the real series are episodes of a few sessions,
    which a transient finds)."""
    found = listed_findings(series.values, series.unit, series.figure, settings)
    last = len(series.values) - 1
    worse = 1 if series.lower_is_better else -1
    out = []
    for f in found:
        if f['withdrawn'] or (f['kind'] == 'transient' and not transients):
            continue
        night = last if f['found'] is None else _night(f['found'])
        if f['kind'] == 'noise':
            out.append((last, _night(f['at']), worse if f['direction'] == 'worse'
                        else -worse, 'noise'))
        else:
            out.append((night, _night(f['at']), 1 if f['change'] > 0 else -1))
    return sorted(out, key=lambda a: a[:2])


#: the time of the first session of a history given to the command (the
#: i-th value is a session i days later)
EPOCH = datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc)


def _night(iso):
    """The index of the session at ISO time ``iso`` (see :data:`EPOCH`)."""
    return (datetime.datetime.fromisoformat(iso) - EPOCH).days


def history_of(values, unit, figure='value', test='Bench', keep=None):
    """One history as the command reads it from a CSV file: the i-th value
    at :data:`EPOCH` + i days (``keep``: the indices to keep, default all,
    keeping their days: a missing value leaves its day out)."""
    idx = range(len(values)) if keep is None else keep
    t0 = EPOCH.timestamp()
    return history.History('bench', 'p', test, figure or 'value', unit, (), [
        history.Point(t0 + i * 86400.0, float(values[i]), '', f'{test}:{i}') for i in idx])


def listed_findings(values, unit, figure='value', settings=None):
    """What `clusterproof changes` lists of one history of ``values``, with
    ``settings`` (default the command's defaults): the same function,
    :func:`clusterproof.analysis.findings.listing`."""
    return findings.listing([history_of(values, unit, figure)], settings)[0]


def method_listed_aperiodic(series, transients=False):
    """:func:`method_listed` without taking out periodic components: the
    listing as it was before :func:`detector.periodic_levels` (for a
    before/after in one run)."""
    return method_listed(series, transients, detector_model.Settings(periodic=False))


def method_listed_steps(series, transients=False):
    """:func:`method_listed` without the onsets of slow changes (a single
    step never made a ramp from its onset, ``detector.Settings(onsets=False)``):
    the listing as it was before (for a before/after in one run)."""
    return method_listed(series, transients, detector_model.Settings(onsets=False))


def method_listed_noisy(series, transients=False):
    """:func:`method_listed` where a figure too noisy to judge lists only its
    changes larger than its minimum detectable change
    (``detector.Settings(noisy_changes=False)``): the listing as it was
    before (for a before/after in one run)."""
    return method_listed(series, transients, detector_model.Settings(noisy_changes=False))


def method_listed_unconfirmed(series, transients=False):
    """:func:`method_listed` where a nightly alarm the whole history does not
    confirm stays while it reaches ``z`` (``detector.Settings(
    confirm_alarms=False)``): the listing as it was before (for a
    before/after in one run)."""
    return method_listed(series, transients, detector_model.Settings(confirm_alarms=False))


#: the listing with rules of the detector turned off, each as it was before
#: that rule (for a before/after in one run): ``{method: (settings, what
#: the rule does)}``
RULES_OFF = {
    'listed-cut': (detector_model.Settings(own_widening=False),
                   'an unconfirmed alarm widened about confirmed ones'),
    'listed-retro-rows': (detector_model.Settings(drift_rows=False),
                          'rows of kept alarms made one drift'),
    'listed-ramps': (detector_model.Settings(abrupt_steps=False),
                     'an abrupt step kept, not made a ramp'),
    'listed-before': (detector_model.Settings(own_widening=False, drift_rows=False,
                                              abrupt_steps=False), 'all three'),
}


def method_listed_off(name):
    """:func:`method_listed` with the settings of ``RULES_OFF[name]``."""
    return lambda series, transients=False: method_listed(series, transients,
                                                          RULES_OFF[name][0])


def method_listed_levels(series, transients=False):
    """:func:`method_listed` without the changes of noise: the listing as it
    was before they were found (for a before/after in one run)."""
    return [a for a in method_listed(series, transients) if len(a) < 4]


def _library_scan(series, place):
    """The same nightly glue as the product (noise from the figure's own
    history, the screen, ``min_after`` sessions after a change) with a
    library deciding alone: ``place(seg, sigma)`` returns the change
    points it finds significant (indices of the first session after)."""
    s = detector_model.Settings()
    y = np.log(series.values)
    alarms, start = [], 0
    for t in range(len(y)):
        screened = nightly.moved_enough(y[:t + 1], start, s)
        if screened is None:
            continue
        seg, offset, sigma, need = screened
        for b in sorted(place(seg, sigma), reverse=True):
            if len(seg) - b >= need and b >= s.min_before:
                sign = 1 if np.median(seg[b:]) > np.median(seg[:b]) else -1
                alarms.append((t, offset + b, sign))
                start = offset + b
                break
    return alarms


def method_ruptures_pelt(series):
    """ruptures PELT alone (L1 cost, penalty 3 log n in noise units)."""
    import ruptures

    def place(seg, sigma):
        algo = ruptures.Pelt(model='l1', min_size=detector_model.DEFAULT_MIN_AFTER, jump=1)
        return algo.fit(seg / sigma).predict(pen=3 * math.log(len(seg)))[:-1]
    return _library_scan(series, place)


def method_otava(series):
    """apache-otava (e-divisive split, t-test merge, p < 0.001)."""
    from otava.analysis import compute_change_points

    def place(seg, sigma):
        cps, _ = compute_change_points(list(seg), window_len=30, max_pvalue=0.001)
        return [c.index for c in cps]
    return _library_scan(series, place)


def method_edivisive(series):
    """signal-processing-algorithms (MongoDB's e-divisive means, permutation
    test p < 0.01, 100 permutations, seeded)."""
    from signal_processing_algorithms.energy_statistics import energy_statistics

    def place(seg, sigma):
        np.random.seed(len(seg))
        return energy_statistics.e_divisive(seg, pvalue=0.01, permutations=100)
    return _library_scan(series, place)


METHODS = {
    'today': ('today\'s rule (compare.py: fixed band + rolling median + nights in a row)',
              method_today, None),
    'changes': ('clusterproof changes, its nightly alarms (ruptures Binseg + Hodges-Lehmann '
                'shift)', method_changes, 'ruptures'),
    'listed': ('clusterproof changes after the whole history (nightly alarms confirmed or '
               'withdrawn + retrospective segmentation); recall: steps listed at all',
               method_listed, 'ruptures'),
    'listed-levels': ('the same listing without its changes of noise (as listed before '
                      'they were found)', method_listed_levels, 'ruptures'),
    'listed-aperiodic': ('the same listing without taking out periodic components (as '
                         'listed before they were)', method_listed_aperiodic, 'ruptures'),
    'listed-steps': ('the same listing without the onsets of slow changes (a single step '
                     'never made a ramp: as listed before)', method_listed_steps, 'ruptures'),
    'listed-noisy': ('the same listing where a figure too noisy to judge lists only its '
                     'changes larger than it can detect (as listed before)',
                     method_listed_noisy, 'ruptures'),
    'listed-unconfirmed': ('the same listing where a nightly alarm the whole history does '
                           'not confirm stays while it reaches z (as listed before)',
                           method_listed_unconfirmed, 'ruptures'),
    **{name: (f'the same listing without the rule: {what} (as listed before)',
              method_listed_off(name), 'ruptures') for name, (_, what) in RULES_OFF.items()},
    'ruptures-pelt': ('ruptures PELT alone', method_ruptures_pelt, 'ruptures'),
    'otava': ('apache-otava alone', method_otava, 'otava'),
    'e-divisive': ('signal-processing-algorithms e-divisive alone', method_edivisive,
                   'signal_processing_algorithms'),
}


# -- scoring --------------------------------------------------------------------------

class Score:
    def __init__(self):
        self.found = {}          # (step, worse) -> [delay or None]
        self.false = 0
        self.nights = 0

    def add(self, series, alarms, locates):
        self.nights += NIGHTS - FIRST_JUDGED
        at, sign = series.step_at, series.sign
        delay = None
        for alarm in alarms:
            night, placed, s = alarm[:3]
            # a change of noise is signed as the figure is: noisier is worse
            kind = alarm[3] if len(alarm) > 3 else 'level'
            if night < FIRST_JUDGED:
                continue
            true = (at is not None and night >= at and s == sign and kind == series.kind
                    and (not locates or placed is None or abs(placed - at) <= MATCH
                         or series.model == 'drift'))
            if not true:
                self.false += 1
            elif delay is None:
                delay = night - at
        if at is not None:
            worse_sign = 1 if series.lower_is_better else -1
            key = (series.step, sign == worse_sign)
            self.found.setdefault(key, []).append(delay)

    def recall(self, step=None, worse=None, minimum=None, within=WITHIN):
        ds = [d for (st, w), v in self.found.items() for d in v
              if (step is None or st == step) and (worse is None or w == worse)
              and (minimum is None or st >= minimum)]
        if not ds:
            return None
        return sum(d is not None and d <= within for d in ds) / len(ds)

    def delays(self, minimum=None):
        return [d for (st, _), v in self.found.items() for d in v
                if d is not None and (minimum is None or st >= minimum)]

    def paired_delays(self, other, minimum=None):
        """(this delay, other delay) of the steps both found."""
        out = []
        for key, v in self.found.items():
            if minimum is not None and key[0] < minimum:
                continue
            for d, e in zip(v, other.found.get(key, [])):
                if d is not None and e is not None:
                    out.append((d, e))
        return out

    @property
    def fa_rate(self):
        return 1000.0 * self.false / self.nights if self.nights else 0.0


def evaluate(name, data):
    _, fn, _ = METHODS[name]
    locates = name != 'today'
    scores = {}
    t0 = time.process_time()
    for model, series in data.items():
        sc = scores[model] = Score()
        for s in series:
            sc.add(s, fn(s), locates)
    return scores, time.process_time() - t0


# -- real series ---------------------------------------------------------------------------
# Histories recorded on this machine by scripts/record-series: real runs of
# the suite's checks with real slowdowns injected at known sessions
# (tests/data/history-real/README.md says how). labels.json names the
# sessions of each injection and the figures it is expected to move.

REAL_DIR = Path(__file__).resolve().parent.parent / 'tests' / 'data' / 'history-real'
#: today's rule blesses its reference from the sessions before this one;
#: the first injection starts there
REAL_FIRST_JUDGED = 10
#: an expected figure counts as a real step when the injection moved it at
#: least this much (median of its sessions against the baseline before it)
REAL_MIN_STEP = 0.05
#: false alarms listed by name
REAL_LIST = 5


@dataclass
class Injection:
    kind: str
    first: int              # index of its first session
    last: int
    expected: list          # regular expressions on '<test> <figure>'


class RealSeries(Series):
    """One recorded figure: ``sessions[i]`` is the session index of
    ``values[i]`` (a failed test case leaves a session out)."""
    __slots__ = ('name', 'sessions')


def load_real(directory=REAL_DIR):
    """``(series, injections, n_sessions)`` of a directory written by
    scripts/record-series (``labels.json`` and the CSV beside it)."""
    directory = Path(directory)
    labels = json.loads((directory / 'labels.json').read_text())
    index = {s['session']: s['index'] for s in labels['sessions']}
    injections = [Injection(i['kind'], i['first'], i['last'], i['expected'])
                  for i in labels['injections']]
    out = []
    for h in sources.load(sorted(directory.glob('*.csv'))):
        if min(h.values) <= 0:
            continue        # not judged (clusterproof changes: values <= 0)
        sessions = [index[p.session] for p in h.points]
        name = f'{h.test} {h.figure}'
        s = RealSeries(name, np.array(h.values), h.unit, figure=h.figure,
                       first=REAL_FIRST_JUDGED)       # model: the figure itself
        s.name, s.sessions = name, sessions
        out.append(s)
    return out, injections, len(labels['sessions'])


def measured_step(series, inj, injections):
    """Relative change of the median of ``inj``'s sessions against the
    median of the baseline sessions just before it, signed so that > 0 is
    worse (None when either side has no session)."""
    prev_end = max([j.last + 1 for j in injections if j.last < inj.first], default=0)
    y = np.log(series.values)
    ses = np.array(series.sessions)
    before = y[(ses >= prev_end) & (ses < inj.first)]
    during = y[(ses >= inj.first) & (ses <= inj.last)]
    if not len(before) or not len(during):
        return None
    worse = 1 if series.lower_is_better else -1
    return math.expm1(worse * (np.median(during) - np.median(before)))


class RealScore:
    """Per injection kind: figures expected to move, those that moved by
    REAL_MIN_STEP or more, those found (and when); alarms of other figures
    at an injection; false alarms on the sessions without one."""

    def __init__(self, injections):
        self.injections = injections
        self.kinds = {i.kind: dict(expected=0, moved=0, delays=[], other=0)
                      for i in injections}
        self.false = 0
        self.sessions = 0
        self.false_where = []

    def _near(self, session, placed):
        """The injection an alarm belongs to, if any: its change placed
        within MATCH sessions of the injection's start or end (for today's
        rule, which places nothing: raised during it or up to MATCH after)."""
        for inj in self.injections:
            if placed is None:
                if inj.first <= session <= inj.last + 1 + MATCH:
                    return inj
            elif min(abs(placed - inj.first), abs(placed - inj.last - 1)) <= MATCH:
                return inj
        return None

    def add(self, series, alarms, locates):
        ses = series.sessions
        quiet = [t for t in ses[series.first:] if not any(
            i.first <= t <= i.last + MATCH for i in self.injections)]
        self.sessions += len(quiet)
        worse = 1 if series.lower_is_better else -1
        alarmed = set()
        for night, placed, sign, *_kind in alarms:
            session = ses[night]
            placed = ses[placed] if (placed is not None and locates) else None
            if night < series.first:
                continue
            inj = self._near(session, placed)
            if inj is None:
                self.false += 1
                self.false_where.append((series.name, session))
            else:
                alarmed.add(inj.kind)
        for inj in self.injections:
            k = self.kinds[inj.kind]
            if not any(re.search(e, series.name) for e in inj.expected):
                k['other'] += inj.kind in alarmed
                continue
            k['expected'] += 1
            step = measured_step(series, inj, self.injections)
            if step is None or step < REAL_MIN_STEP:
                continue
            k['moved'] += 1
            delay = None
            for night, placed, sign, *_kind in alarms:
                p = ses[placed] if (placed is not None and locates) else None
                if (sign == worse and ses[night] >= inj.first
                        and (p is None or abs(p - inj.first) <= MATCH)):
                    delay = ses[night] - inj.first
                    break
            k['delays'].append(delay)

    @property
    def fa_rate(self):
        return 1000.0 * self.false / self.sessions if self.sessions else 0.0


def evaluate_real(name, series, injections):
    _, fn, _ = METHODS[name]
    sc = RealScore(injections)
    t0 = time.process_time()
    for s in series:
        sc.add(s, fn(s, transients=True) if name.startswith('listed') else fn(s),
               name != 'today')
    return sc, time.process_time() - t0


def real_table(name, sc, cpu):
    lines = [f'{name} on the real series  ({cpu:.1f} s CPU)',
             f'  {"injection":<10} {"sessions":>8} {"expected":>8} {"moved":>6} '
             f'{"found":>6} {"recall":>6} {"delay":>6} {"others":>7}',
             f'  {"":<10} {"":>8} {"figures":>8} {">=5%":>6} {"<=3":>6} {"%":>6} '
             f'{"median":>6} {"alarmed":>7}']
    for inj in sc.injections:
        k = sc.kinds[inj.kind]
        found = [d for d in k['delays'] if d is not None and d <= WITHIN]
        rec = len(found) / len(k['delays']) if k['delays'] else None
        med = statistics.median(found) if found else None
        lines.append(f'  {inj.kind:<10} {f"{inj.first}-{inj.last}":>8} {k["expected"]:>8} '
                     f'{k["moved"]:>6} {len(found):>6} {_pct(rec):>6} '
                     f'{"-" if med is None else f"{med:g}":>6} {k["other"]:>7}')
    lines.append(f'  false alarms: {sc.false} in {sc.sessions} figure-sessions without an '
                 f'injection: {sc.fa_rate:.2f} per 1000')
    for where, session in sc.false_where[:REAL_LIST]:
        lines.append(f'    {where} at session {session}')
    if len(sc.false_where) > REAL_LIST:
        lines.append(f'    ... and {len(sc.false_where) - REAL_LIST} more')
    return '\n'.join(lines)


# -- printing -----------------------------------------------------------------------------

def _pct(x):
    return '  -  ' if x is None else f'{x * 100:5.1f}'


def table(name, scores, cpu, base=None):
    title, _, _ = METHODS[name]
    within = NIGHTS if name.startswith('listed') else WITHIN
    what = 'recall of worse steps, listed' if name.startswith('listed') else \
        'recall of worse steps within 3 nights'
    lines = [f'{name}: {title}  ({cpu:.1f} s CPU)',
             f'  {"noise model":<12} {what:^29} '
             f'{"better":>6} {"delay":>6} {"false alarms":>13}',
             f'  {"":<12} ' + ' '.join(f'{int(s * 100):>5}%' for s in STEPS)
             + f' {">=5%":>6} {"nights":>6} {"/1000":>13}']
    for model, sc in scores.items():
        if model == 'drift':
            rec = sc.recall(within=NIGHTS)
            d = sc.delays()
            med = statistics.median(d) if d else None
            cells = (f'  {"drift":<12} found {_pct(rec).strip()}% of drifts'
                     f' ({len(d)}), median {med if med is not None else "-"} nights after its'
                     f' start ({(med or 0) * 0.2:.1f}% by then)')
            lines.append(f'{cells:<67} {sc.fa_rate:13.2f}' + _worse_mark(sc, base, model))
            continue
        d = sc.delays(minimum=0.05)
        med = statistics.median(d) if d else None
        lines.append(
            f'  {model:<12} ' + ' '.join(_pct(sc.recall(s, worse=True, within=within)) + ' '
                                         for s in STEPS)
            + f'{_pct(sc.recall(worse=False, minimum=0.05, within=within)):>6} '
            + f'{"-" if med is None else f"{med:g}":>6} {sc.fa_rate:13.2f}'
            + _worse_mark(sc, base, model))
    return '\n'.join(lines)


def side_by_side(before, after, what):
    """The listing before and after ``what`` (``listed-levels``: changes of
    noise listed; ``listed-aperiodic``: periodic components taken out) and
    after (``listed``), model by model: recall of worse steps listed at
    all, and false alarms per 1000 figure-nights."""
    lines = [f'before / after {what} (recall of worse steps listed, '
             'false alarms per 1000 figure-nights)',
             f'  {"noise model":<12} '
             f'{"recall " + " / ".join(f"{int(x * 100)}%" for x in STEPS):<30}'
             f' {"false alarms":>16}']
    for model in after:
        b, a = before[model], after[model]
        def pair(x=None):
            return '->'.join('-' if r is None else f'{r * 100:.0f}' for r in (
                b.recall(x, True if x else None, within=NIGHTS),
                a.recall(x, True if x else None, within=NIGHTS)))
        cells = (f'drifts {pair()}' if model == 'drift'
                 else ' / '.join(pair(x) for x in STEPS))
        lines.append(f'  {model:<12} {cells:<30} {b.fa_rate:6.2f} -> {a.fa_rate:6.2f}')
    return '\n'.join(lines)


def _worse_mark(sc, base, model):
    """Where this method is worse than today's rule on the row."""
    if base is None:
        return ''
    b = base[model]
    why = []
    for s in STEPS:
        r, rb = sc.recall(s, worse=True), b.recall(s, worse=True)
        if r is not None and rb is not None and r < rb - 1e-9:
            why.append(f'recall {int(s * 100)}%')
    if sc.fa_rate > max(b.fa_rate, TARGET_FA) + 1e-9:
        why.append('false alarms')
    pairs = sc.paired_delays(b, minimum=0.05)
    if pairs and (statistics.median(p for p, _ in pairs)
                  > statistics.median(q for _, q in pairs)):
        why.append('delay')
    return ('  < worse than today: ' + ', '.join(why)) if why else ''


def headline(scores):
    quiet = [scores[m] for m in QUIET]
    found = [d for sc in quiet for (st, _), v in sc.found.items() if st >= 0.05 for d in v]
    recall = sum(d is not None and d <= WITHIN for d in found) / len(found)
    delays = [d for d in found if d is not None]
    delay = statistics.median(delays) if delays else float('nan')
    worst = max(sc.fa_rate for sc in scores.values())
    return recall, delay, worst


def targets(name, scores, base):
    recall, delay, worst = headline(scores)
    worst_model = max(scores, key=lambda m: scores[m].fa_rate)
    lines = [f'{name} against the targets:',
             f'  recall of >=5% steps within {WITHIN} nights where CV <= 2%: '
             f'{recall * 100:.1f}% (target >= {TARGET_RECALL * 100:g}%: '
             f'{"met" if recall >= TARGET_RECALL else "NOT met"}; ratio '
             f'{recall / TARGET_RECALL:.3f})',
             f'  median delay: {delay:g} nights (target <= {TARGET_DELAY}: '
             f'{"met" if delay <= TARGET_DELAY else "NOT met"}; ratio {delay / TARGET_DELAY:.2f})']
    for model, sc in scores.items():
        lines.append(f'  false alarms {model:<12} {sc.fa_rate:6.2f} per 1000 figure-nights '
                     f'(target <= {TARGET_FA:g}: '
                     f'{"met" if sc.fa_rate <= TARGET_FA else "NOT met"}; '
                     f'ratio {sc.fa_rate / TARGET_FA:.2f})')
    if base is not None:
        marks = [m for m in scores if _worse_mark(scores[m], base, m)]
        lines.append('  never worse than today\'s rule: '
                     + ('met' if not marks else 'NOT met on ' + ', '.join(marks)))
    lines.append(f'  (worst false alarm rate: {worst_model})')
    return '\n'.join(lines)


def available(name):
    mod = METHODS[name][2]
    if mod is None:
        return True
    try:
        __import__(mod)
        return True
    except ImportError:
        return False


def print_real(directory, names):
    if not (directory / 'labels.json').is_file():
        print(f'\nreal series: no {directory / "labels.json"}; skipped')
        return
    series, injections, n = load_real(directory)
    print(f'\nreal series: {directory.name} ({n} sessions, {len(series)} figures, smoke '
          f'sizes on system local; scripts/record-series); judged sessions '
          f'{REAL_FIRST_JUDGED}-{n - 1}')
    for name in names:
        sc, cpu = evaluate_real(name, series, injections)
        print()
        print(real_table(name, sc, cpu))


# -- the Turing Change Point Dataset (run by hand; never in the repository) --------------

#: published F1 (margin 5) on the univariate series, van den Burg & Williams
#: 2020, "An Evaluation of Change Point Detection Algorithms": TCPDBench's
#: current aggregate table (analysis/output/tables/aggregate_scores_wide.tex,
#: the mean of its per-series score file over the 32 univariate series every
#: method ran on), then its earlier one (aggregate_table_wide.tex: the
#: figures issue 31 quotes)
TCPD_PUBLISHED = (
    ('current', (('binseg, default', 0.698, 0.672), ('pelt, default', 0.674, 0.652),
                 ('zero (no change point)', 0.645, 0.566), ('binseg, best', 0.873, 0.774),
                 ('bocpd, best (the best F1)', 0.886, 0.783))),
    ('earlier', (('binseg, default', 0.744, 0.706), ('pelt, default', 0.710, 0.689),
                 ('zero (no change point)', 0.669, 0.583), ('binseg, best', 0.856, 0.780),
                 ('bocpd, best (the best F1)', 0.880, 0.789))))
TCPD_MARGIN = 5


def tcpd_series(directory):
    """``(name, values, annotations, skipped)`` of a TCPD checkout or
    extract: the univariate series whose data is in the repository
    (``datasets/<name>/<name>.json``), with the annotations of each
    annotator (``annotations.json``); ``skipped`` says which were left out
    and why."""
    root = Path(directory)
    ann_path = root / 'annotations.json'
    if not ann_path.is_file():
        raise SystemExit(f'{ann_path}: not found (give the root of a TCPD checkout)')
    annotations = json.loads(ann_path.read_text())
    out, skipped = [], []
    for name in sorted(annotations):
        path = root / 'datasets' / name / f'{name}.json'
        if not path.is_file():
            skipped.append((name, 'data not in the repository (built by a download script)'))
            continue
        data = json.loads(path.read_text())
        if data['n_dim'] != 1:
            skipped.append((name, f'{data["n_dim"]} dimensions'))
            continue
        out.append((name, data['series'][0]['raw'], annotations[name]))
    return out, skipped


#: TCPDBench's default experiment for binary segmentation and PELT, as its
#: configuration documents it: the R package changepoint's ``cpt.mean`` on
#: the series scaled to mean 0 and standard deviation 1, the normal test
#: statistic, the MBIC penalty; binary segmentation with at most 5 changes
#: (``Q``, changepoint's own default)
TCPD_R_DEFAULTS = (('binseg, default', 'BinSeg'), ('pelt, default', 'PELT'))
#: our own call of changepoint (R reads the values on its standard input)
R_CPT_MEAN = """
suppressPackageStartupMessages(library(changepoint))
x <- as.vector(scale(scan(file("stdin"), quiet = TRUE)))
m <- commandArgs(trailingOnly = TRUE)[1]
cp <- suppressWarnings(cpt.mean(x, penalty = "MBIC", method = m,
                                test.stat = "Normal", Q = 5, class = FALSE))
if (is.list(cp)) cp <- cp$cpts
cat(cp, sep = "\\n")
"""


def r_changepoint_missing():
    """Why the R column cannot be measured here (``None`` when it can): R's
    ``Rscript`` and its package changepoint are a measurement tool of this
    script, not a dependency of clusterproof."""
    if shutil.which('Rscript') is None:
        return 'Rscript not found (install R, e.g. the Debian package r-base-core)'
    probe = subprocess.run(['Rscript', '-e', 'library(changepoint)'],
                           capture_output=True, text=True)
    if probe.returncode:
        why = [line for line in probe.stderr.splitlines() if 'rror' in line]
        return ('the R package changepoint is not installed (install it into a library '
                'named by R_LIBS): ' + (why or probe.stderr.splitlines() or ['?'])[0].strip())
    return None


def r_changepoint_predict(raw, method):
    """Change points of one TCPD series by changepoint's ``cpt.mean`` with
    TCPDBench's defaults for ``method`` (``BinSeg`` or ``PELT``); missing
    values left out and locations mapped back, as for the retrospective
    view. changepoint names the last position of each segment, counted from
    1 (the series' last one too, which the scoring drops, :func:`tcpd_clean`);
    as TCPDBench does, a change is placed at the last point before it."""
    idx = [i for i, v in enumerate(raw) if v is not None]
    values = '\n'.join(repr(float(raw[i])) for i in idx)
    run = subprocess.run(['Rscript', '-e', R_CPT_MEAN, method], input=values,
                         capture_output=True, text=True)
    if run.returncode:
        raise SystemExit(f'Rscript (changepoint cpt.mean, method {method}) failed: '
                         f'{run.stderr.strip()}')
    return [idx[int(float(x)) - 1] for x in run.stdout.split()]


def tcpd_clean(points, n):
    """The predicted points TCPDBench scores: distinct, from 1 to n - 2 (the
    first and last positions, which several methods name by default, are
    dropped)."""
    return sorted({p for p in points if 1 <= p < n - 1})


def tcpd_csv(series, path):
    """Write the TCPD ``series`` (of :func:`tcpd_series`) to ``path`` as one
    CSV history of `clusterproof changes`: the test is the series' name,
    the i-th value at :data:`EPOCH` + i days, a missing value left out."""
    lines = ['timestamp,system,partition,test,figure,value,unit']
    for name, raw, _ann in series:
        for i, v in enumerate(raw):
            if v is not None:
                t = (EPOCH + datetime.timedelta(days=i)).isoformat()
                lines.append(f'{t},tcpd,p,{name},value,{float(v)!r},')
    Path(path).write_text('\n'.join(lines) + '\n')


def command_listing(path, settings=None):
    """What `clusterproof changes PATH --format json` prints of the CSV
    file ``path`` with ``settings`` (default the command's): the command's
    own function, :func:`clusterproof.analysis.findings.listing`, each
    finding with its id; and the figures not judged, with the reason."""
    found, _quiet, _noisy, skipped = findings.listing(sources.load([path]), settings)
    return [{'id': findings.change_id(f), **f} for f in found], skipped


def tcpd_points(found):
    """``{series: [index]}``: the change points the command lists (see
    :func:`command_listing`) of each TCPD series: where each change, drift,
    transient or change of noise begins ("at"); a withdrawn alarm is not a
    change."""
    out = {}
    for f in found:
        if not f['withdrawn']:
            out.setdefault(f['test'], []).append(_night(f['at']))
    return out


def true_positives(truth, predicted, margin=TCPD_MARGIN):
    """The points of ``truth`` matched by a distinct point of ``predicted``
    within ``margin`` (each prediction matches at most one, the nearest
    unmatched first)."""
    free = sorted(predicted)
    hits = 0
    for t in sorted(truth):
        near = [(abs(t - x), x) for x in free if abs(t - x) <= margin]
        if near:
            free.remove(min(near)[1])
            hits += 1
    return hits


def f1_score(annotations, predicted, margin=TCPD_MARGIN):
    """F1 as the paper defines it: precision against the union of every
    annotator's points, recall averaged over annotators; the start of the
    series counts as a change point in every set."""
    pred = set(predicted) | {0}
    users = [set(v) | {0} for v in annotations.values()]
    union = set().union(*users)
    precision = true_positives(union, pred, margin) / len(pred)
    recall = sum(true_positives(u, pred, margin) / len(u) for u in users) / len(users)
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def _segments(points, n):
    cuts = sorted({0, n} | {p for p in points if 0 < p < n})
    return [set(range(a, b)) for a, b in zip(cuts, cuts[1:])]


def cover_score(annotations, predicted, n):
    """Covering of each annotator's segmentation by the predicted one (each
    true segment weighted by its length, by its best Jaccard index with a
    predicted segment), averaged over annotators."""
    pred = _segments(predicted, n)
    scores = []
    for truth in annotations.values():
        total = sum(len(a) * max(len(a & b) / len(a | b) for b in pred)
                    for a in _segments(truth, n))
        scores.append(total / n)
    return sum(scores) / len(scores)


#: binary segmentation's default F1 per series as TCPDBench publishes it
#: (analysis/output/scores/default_f1_scores.json of
#: alan-turing-institute/TCPDBench; None: it failed on the series, scored
#: there as missing)
TCPD_BINSEG_DEFAULT = {
    'bank': 0.4, 'brent_spot': 0.48343, 'businv': 0.37037, 'centralia': 0.90909,
    'children_per_woman': 0.61751, 'co2_canada': 0.69057, 'construction': 0.70909,
    'debt_ireland': 0.76033, 'gdp_argentina': 0.88889, 'gdp_croatia': 0.58333,
    'gdp_iran': 0.49153, 'gdp_japan': 0.61538, 'global_co2': 0.92857, 'homeruns': 0.81188,
    'jfk_passengers': 0.77551, 'lga_passengers': 0.43820, 'nile': 1.0, 'ozone': 0.64957,
    'rail_lines': 0.84615, 'seatbelts': 0.68293, 'shanghai_license': 0.86792,
    'uk_coal_employ': None, 'unemployment_nl': 0.87640, 'us_population': 0.66667,
    'usd_isk': 0.65651, 'well_log': 0.53420, 'quality_control_1': 1.0,
    'quality_control_2': 1.0, 'quality_control_3': 1.0, 'quality_control_4': 0.87273,
    'quality_control_5': 1.0}


def tcpd_scores(directory, tmp, settings=None):
    """``(rows, skipped, not_judged, cpu)`` of the command on the TCPD
    checkout ``directory`` (its CSV written into ``tmp``): per series
    ``(name, n, points, F1, cover, zero F1, zero cover)``."""
    series, skipped = tcpd_series(directory)
    csv_path = Path(tmp) / 'tcpd.csv'
    tcpd_csv(series, csv_path)
    t0 = time.process_time()
    found, not_judged = command_listing(csv_path, settings)
    cpu = time.process_time() - t0
    points = tcpd_points(found)
    rows = []
    for name, raw, ann in series:
        n = len(raw)
        pred = tcpd_clean(points.get(name, []), n)
        rows.append((name, n, pred, f1_score(ann, pred), cover_score(ann, pred, n),
                     f1_score(ann, []), cover_score(ann, [], n)))
    return rows, skipped, [(h.test, why) for h, why in not_judged], cpu


#: each rule's effect on TCPD through the command, in the same run: the
#: settings that turn it off (the listing as it was before it)
TCPD_RULES = tuple((what, settings) for settings, what in RULES_OFF.values())


def print_tcpd(directory):
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        rows, skipped, not_judged, cpu = tcpd_scores(directory, tmp)
        without = [(label, tcpd_scores(directory, tmp, settings)[0])
                   for label, settings in TCPD_RULES]
    series, _ = tcpd_series(directory)
    missing = r_changepoint_missing()
    measured = {}           # method -> [(F1, cover) per series]
    if missing is None:
        for label, method in TCPD_R_DEFAULTS:
            measured[label] = []
            for name, raw, ann in series:
                pred = tcpd_clean(r_changepoint_predict(raw, method), len(raw))
                measured[label].append((f1_score(ann, pred),
                                        cover_score(ann, pred, len(raw))))
    print(f'TCPD: {len(rows)} univariate series with their data in the repository '
          f'({len(skipped)} left out: ' + ', '.join(
              f'{sum(w == why for _, w in skipped)} {why}'
              for why in dict.fromkeys(w for _, w in skipped)) + ')')
    print(f'  through `clusterproof changes FILE --format json`, default settings (its '
          f'function, findings.listing); {cpu:.1f} s CPU')
    for name, why in not_judged:
        print(f'  not judged by the command: {name}: {why} (scored as no change point)')
    if missing:
        print(f'  binseg and pelt defaults (R changepoint) not measured: {missing}')
    extra = ''.join(f' {label.split(",")[0] + " F1":>10}' for label in measured)
    print(f'  {"series":<20} {"n":>5} {"points":>6} {"F1":>6} {"cover":>6} '
          f'{"binseg default F1, published":>28}{extra}')
    for i, (name, n, pred, f1, cov, _, _) in enumerate(rows):
        pub = TCPD_BINSEG_DEFAULT.get(name)
        extra = ''.join(f' {scores[i][0]:10.3f}' for scores in measured.values())
        print(f'  {name:<20} {n:>5} {len(pred):>6} {f1:6.3f} {cov:6.3f} '
              f'{"failed" if pub is None else f"{pub:.3f}":>28}{extra}')
    mean = lambda k: sum(r[k] for r in rows) / len(rows)   # noqa: E731
    pub = [(r[3], TCPD_BINSEG_DEFAULT[r[0]]) for r in rows
           if TCPD_BINSEG_DEFAULT.get(r[0]) is not None]
    print(f'\n  {"method":<34} {"F1":>6} {"cover":>6}  series')
    print(f'  {"clusterproof changes, default":<34} {mean(3):6.3f} {mean(4):6.3f}  '
          f'{len(rows)} (measured here)')
    print(f'  {"zero (no change point)":<34} {mean(5):6.3f} {mean(6):6.3f}  '
          f'{len(rows)} (measured here)')
    for label, scores in measured.items():
        f1, cov = (sum(s[k] for s in scores) / len(scores) for k in (0, 1))
        print(f'  {label:<34} {f1:6.3f} {cov:6.3f}  {len(rows)} (measured here, '
              'R changepoint)')
    print(f'  {"clusterproof changes, default":<34} {sum(p[0] for p in pub) / len(pub):6.3f}'
          f'{"":>7}  {len(pub)} on which binseg ran (published per series)')
    print(f'  {"binseg, default":<34} {sum(p[1] for p in pub) / len(pub):6.3f}{"":>7}  '
          f'{len(pub)} (published per series, default_f1_scores.json)')
    for table_name, published in TCPD_PUBLISHED:
        for name, f1, cover in published:
            print(f'  {name:<34} {f1:6.3f} {cover:6.3f}  published, univariate series '
                  f'({table_name} table)')
    print('\n  each rule, through the command, in this run: F1 (cover) without -> with it')
    for label, before in without:
        f1b, covb = (sum(r[k] for r in before) / len(before) for k in (3, 4))
        print(f'  {label:<50} {f1b:.3f} ({covb:.3f}) -> {mean(3):.3f} ({mean(4):.3f})')
    print(f'tcpd: F1 {mean(3):.3f}, cover {mean(4):.3f} on {len(rows)} series '
          f'(zero baseline on the same series: F1 {mean(5):.3f}, cover {mean(6):.3f})')


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--size', choices=SIZES, default='small')
    ap.add_argument('--seeds', choices=SEEDS, default='eval',
                    help='eval: the held-out seeds reported (default); tune: the seeds '
                         'the thresholds were tuned on')
    ap.add_argument('--methods', default='today,changes,' + ','.join(RULES_OFF) + ',listed',
                    help='comma-separated, of: ' + ', '.join(METHODS) + '; or all (the '
                         'small configuration takes about 15 s of CPU per method, '
                         'ruptures-pelt 80 s; full about six times as long)')
    ap.add_argument('--models', default=','.join(NOISE_MODELS),
                    help='comma-separated noise models')
    ap.add_argument('--real', default=str(REAL_DIR), metavar='DIR',
                    help='recorded real series with injected slowdowns (scripts/record-series; '
                         'default %(default)s); none: leave them out')
    ap.add_argument('--classes', action=argparse.BooleanOptionalAction, default=True,
                    help='also score the listing on the classes of false alarm: short '
                         'spikes, figures flipping between two levels, levels that wander, '
                         'a change of noise, a weekly periodic component; and on the onset '
                         'of a slow degradation (a steady decline over 10-40 nights) '
                         '(default: on)')
    ap.add_argument('--tcpd', metavar='DIR',
                    help='only score what `clusterproof changes` lists (default '
                         'settings, through its function) on the Turing Change Point '
                         'Dataset: DIR is a checkout of alan-turing-institute/TCPD (its '
                         'univariate series with the data in the repository, as one CSV '
                         'file), F1 (margin 5) and cover beside the published tables and '
                         'binary segmentation\'s published default per series; also '
                         'TCPDBench\'s default binary '
                         'segmentation and PELT, measured on the same series, when R\'s '
                         'Rscript and its package changepoint are installed (a library '
                         'named by R_LIBS; said and skipped when absent)')
    ap.add_argument('--speed', type=int, default=SPEED_COUNT, metavar='N',
                    help='time the detector in memory on N generated figures of '
                         f'{SPEED_NIGHTS} sessions (default %(default)s; 0: not timed)')
    args = ap.parse_args(argv)
    if args.tcpd:
        print_tcpd(args.tcpd)
        return 0
    names = [m.strip() for m in args.methods.split(',') if m.strip()]
    if names == ['all']:
        names = list(METHODS)
    for n in names:
        if n not in METHODS:
            ap.error(f'unknown method {n!r}; choose from {", ".join(METHODS)}')
    if 'changes' not in names:
        names.append('changes')
    models = [m.strip() for m in args.models.split(',')]
    seed = SEEDS[args.seeds]
    data = {m: generate(m, args.size, seed) for m in models}
    n = sum(len(v) for v in data.values())
    print(f'{n} figures x {NIGHTS} nights ({args.size}, seeds {args.seeds} = {seed}); '
          f'judged nights {FIRST_JUDGED}-{NIGHTS - 1}')
    results = {}
    for name in names:
        if not available(name):
            print(f'\n{name}: not installed ({METHODS[name][2]}); skipped')
            continue
        results[name] = evaluate(name, data)
    base = results.get('today', (None,))[0]
    for name, (scores, cpu) in results.items():
        print()
        print(table(name, scores, cpu, None if name == 'today' else base))
    if args.real != 'none':
        print_real(Path(args.real), list(results))
    if args.classes:
        data = {m: generate(m, args.size, seed) for m in CLASS_MODELS}
        scores, cpu = evaluate('listed', data)
        print(f'\nclasses of false alarm ({sum(len(v) for v in data.values())} figures; '
              'the listing; a transient is not a change of level; jitter: a change of '
              'noise)')
        print(table('listed', scores, cpu, None))
        for name, what in (('listed-noisy', 'listing the changes of figures too noisy '
                                            'to judge'),
                           ('listed-unconfirmed', 'z + POWER for an unconfirmed nightly '
                                                  'alarm'),
                           *((name, what) for name, (_, what) in RULES_OFF.items()),
                           ('listed-levels', 'listing changes of noise'),
                           ('listed-aperiodic', 'taking out periodic components'),
                           ('listed-steps', 'the onsets of slow changes')):
            if name in results and 'listed' in results:
                before, _ = evaluate(name, data)
                print()
                print(side_by_side({**results[name][0], **before},
                                   {**results['listed'][0], **scores}, what))
    print()
    if args.speed:
        print(speed_line(args.speed))
    chosen = results['changes'][0]
    if set(QUIET) <= set(chosen):
        print(targets('changes', chosen, base))
        recall, delay, worst = headline(chosen)
        print(f'detection: recall >=5% steps (CV<=2%) {recall * 100:.1f}%, median delay '
              f'{delay:g} nights, false alarms {worst:.2f} per 1000 figure-nights')
    return 0


if __name__ == '__main__':
    sys.exit(main())
