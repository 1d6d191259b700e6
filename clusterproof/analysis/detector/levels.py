"""What is taken out of a figure's log values before it is judged: the
levels of node lists that explain its spread (:func:`group_levels`: two
node types are two levels, not noise) and a periodic component
(:func:`periodic_levels`: a weekly cron job on the nights of the run), which
must not raise changes (:func:`_levels` does both)."""

import numpy as np

from clusterproof.analysis.detector.noise import _log, _median, diff_scale

#: sessions of a group (a node list) before its level is its own
MIN_GROUP = 4
#: the groups explain the spread when it shrinks below this share
GROUP_GAIN = 0.7
#: the longest period of a periodic component taken out (a cron job or a
#: file system's scheduled work repeats weekly or monthly: up to a month of
#: nightly sessions); a period needs 4 cycles in the history
PERIOD_MAX = 31
PERIOD_CYCLES = 4


def group_levels(y, groups):
    """``y`` with the level of each group of sessions (``groups[i]``, e.g.
    the node list of session ``i``) taken out, when the groups explain the
    spread: runs that land on one of two node types are two levels, not
    noise. Groups with fewer than ``MIN_GROUP`` / 2 sessions in either half
    of the history keep their values (a node used only after a change may be
    the cause of that change);
    nothing changes unless the spread within the groups is below
    ``GROUP_GAIN`` of the spread of all."""
    y = np.asarray(y, dtype=float)
    labels = np.asarray([g or '' for g in groups], dtype=object)
    half = len(y) // 2
    # a group whose sessions all fall in one half is not a node type: it may
    # be the slow node itself, whose level is the change
    names = [g for g in set(labels) if g and (labels[:half] == g).sum() >= MIN_GROUP // 2
             and (labels[half:] == g).sum() >= MIN_GROUP // 2]
    if len(names) < 2:
        return y
    adj = y.copy()
    big = max(names, key=lambda g: (labels == g).sum())
    ref = _median(y[labels == big])
    for g in names:
        sel = labels == g
        med = _median(y[sel])
        adj[sel] = y[sel] - med + ref
    if diff_scale(adj) >= GROUP_GAIN * diff_scale(y):
        return y
    return adj


def periodic_levels(y):
    """``y`` with a periodic component taken out, when one explains the
    spread: a cron job or a file system's scheduled work (a weekly backup
    on the night of the run, a monthly scrub) moves the same sessions of
    every cycle, which are neither noise nor changes. For each period of 2
    to ``PERIOD_MAX`` sessions with ``PERIOD_CYCLES`` cycles or more in the
    history, the level of each phase is the median, over the whole cycles,
    of its value less its cycle's median (a step or a drift moves a cycle,
    not a phase); a period is taken when the standard deviation of the
    session-to-session differences with its phase levels out is below
    ``GROUP_GAIN`` of the best so far (of the values as they are, at
    first): the shortest period that explains the cycle, as for the levels
    of node lists (:func:`group_levels`). Only the periods at which the
    differences are correlated, by half of what that shrinking needs (its
    share of their variance, 1 - ``GROUP_GAIN`` squared), are tried: a
    component that repeats every p sessions repeats its differences."""
    y = np.asarray(y, dtype=float)
    n = len(y)
    top = min(PERIOD_MAX, n // PERIOD_CYCLES)
    if top < 2:
        return y
    d = np.diff(y)
    d = d - d.mean()
    best = float(np.std(d))
    den = float(np.dot(d, d))
    if den <= 0:
        return y
    need = 0.5 * (1 - GROUP_GAIN ** 2)
    out = y
    for p in range(2, top + 1):
        if float(np.dot(d[p:], d[:-p])) < need * den:
            continue
        cycles = y[:n // p * p].reshape(-1, p)
        phase = np.median(cycles - np.median(cycles, axis=1, keepdims=True), axis=0)
        adj = y - (phase - _median(phase))[np.arange(n) % p]
        spread = float(np.std(np.diff(adj)))
        if spread < GROUP_GAIN * best:
            best, out = spread, adj
    return out


def _levels(values, groups, s):
    """The log values of a figure as the detector judges them: the levels of
    node lists (:func:`group_levels`) and a periodic component
    (:func:`periodic_levels`, unless ``s.periodic`` is off) taken out."""
    y = _log(values)
    if groups is not None:
        y = group_levels(y, groups)
    return periodic_levels(y) if s.periodic else y
