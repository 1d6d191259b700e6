"""What a move is (:func:`classify`): a short excursion after which the
level came back is one transient (:func:`_transients`), a move to a level
the figure keeps going to and leaving is a flip and is not listed
(:func:`_flips`), and nothing smaller than the smallest change that
matters is listed; a nightly alarm the later sessions seem to disprove
because the level came back was an episode with an end
(:func:`_episode_end`)."""

import dataclasses

import numpy as np

from clusterproof.analysis.detector.model import Settings
from clusterproof.analysis.detector.noise import _floor, _median, _segments_scale, robust_scale
from clusterproof.analysis.detector.segmentation import MIN_SEGMENT
from clusterproof.analysis.detector.significance import (
    POWER, _HL_VAR, _SLACK, agree, hl_shift, shift_stderr)

#: an excursion of at most this many sessions after which the level comes
#: back (the shift across it stays under ``z`` standard errors) is one
#: transient, not two changes of level
TRANSIENT = 5
#: a move to a level the figure went to and came back from this many times
#: elsewhere, staying ``FLIP_RUN`` sessions in a row or more each time, is a
#: flip between two levels (two node types, a cache that is warm or not),
#: not a change
FLIP_VISITS = 3
FLIP_RUN = 2
#: a session is at a level when within this many noise units of it (and
#: nearer to it than to the level before the move)
FLIP_NEAR = 3.0


def classify(y, steps, settings=None, floor=1e-6):
    """What is listed of the ``steps`` of log values ``y`` (oldest first):
    each short excursion that came back as one transient
    (:func:`_transients`), none of the moves to a level the figure keeps
    returning to (:func:`_flips`), and nothing smaller than
    ``settings.min_change``."""
    s = settings or Settings()
    out = _transients(y, steps, s, floor)
    out = [c for c in out if not _flips(y, steps, c, floor)]
    return [c for c in out if abs(c.change) >= s.min_change]


def _transients(y, steps, s, floor):
    """``steps`` with each excursion that came back made one transient: two
    neighbouring steps of opposite directions at most ``TRANSIENT``
    sessions apart, where the shift from the sessions before the first to
    those after the second stays under ``z`` standard errors (the level
    came back). A short spike (three sessions up, then back) is one
    transient of its size, not two changes of level."""
    out, i = [], 0
    while i < len(steps):
        c = steps[i]
        if i + 1 < len(steps):
            d = steps[i + 1]
            if d.at - c.at <= TRANSIENT and (c.shift > 0) != (d.shift > 0):
                prev = steps[i - 1].at if i > 0 else 0
                nxt = steps[i + 2].at if i + 2 < len(steps) else len(y)
                before = y[max(prev, c.at - s.window):c.at]
                after = y[d.at:nxt][:s.window]
                sigma = _floor(robust_scale(before), floor)
                net = hl_shift(before, after)
                if abs(net) < s.z * shift_stderr(sigma, len(before), len(after)):
                    out.append(dataclasses.replace(
                        c, kind='transient', end=d.at, n_after=d.at - c.at,
                        found=c.found if c.found is not None else d.found,
                        view=c.view if c.view == d.view else 'both'))
                    i += 2
                    continue
        out.append(c)
        i += 1
    return out


def _flips(y, steps, c, floor):
    """True when ``c`` (a step or transient) goes to a level the figure
    keeps returning to: the figure went from the level before ``c`` to the
    new one ``FLIP_VISITS`` times or more (outside the sessions ``c`` holds
    it, and ``c`` itself when the figure left that level again). A session
    is at a level when nearer to it than to the
    other and within ``FLIP_NEAR`` noise units of it; a stay at a level
    counts when it lasts ``FLIP_RUN`` sessions or more (one odd session
    neither ends nor makes one). Levels less than 2 x ``FLIP_NEAR`` noise
    units apart cannot be told apart session by session: never a flip. A
    figure flipping between two levels (two
    node types without node lists, a cache that is warm or not) keeps
    returning; a new level, or the return from an episode, is reached
    once."""
    cuts = [0] + [d.at for d in steps] + [len(y)]
    i = cuts.index(c.at)
    hi = c.end if c.kind == 'transient' else cuts[i + 1]
    old = _median(y[cuts[i - 1]:c.at])
    new = _median(y[c.at:hi])
    sigma = _segments_scale(y, cuts[1:-1], floor)
    if abs(new - old) < 2 * FLIP_NEAR * sigma:
        return False        # levels within the noise of each other: no visits to tell
    dn, do = np.abs(y - new), np.abs(y - old)
    at = np.where((dn < do) & (dn <= FLIP_NEAR * sigma), 1,
                  np.where((do <= dn) & (do <= FLIP_NEAR * sigma), -1, 0))
    at[c.at:hi] = 0
    # the stays: runs of one level, FLIP_RUN sessions or more, in order
    edges = np.flatnonzero(np.diff(at)) + 1
    starts = np.concatenate(([0], edges))
    ends = np.concatenate((edges, [len(at)]))
    stays = [int(at[a]) for a, b in zip(starts, ends) if at[a] != 0 and b - a >= FLIP_RUN]
    visits = sum(1 for k, v in enumerate(stays) if v == 1 and (k == 0 or stays[k - 1] == -1))
    # its own stay counts when the figure left the new level again
    return visits + (hi < len(y)) >= FLIP_VISITS


def _episode_end(y, steps, c, s, floor):
    """The end of an episode that a nightly alarm ``c`` raised and the
    later sessions seem to disprove because the level came back (a CPU
    quota for six sessions): the session ``e`` where the level returned,
    when the episode has ``MIN_SEGMENT`` sessions or more (two bad nights
    are not one), and both the sessions ``[c.at, e)`` against those before
    and the sessions from ``e`` against the episode reach ``z + POWER``
    standard errors (as the retrospective view keeps a boundary), judged as
    :func:`refine` would; else None."""
    cuts = [0] + [d.at for d in steps] + [len(y)]
    i = cuts.index(c.at)
    prev, nxt = cuts[i - 1], cuts[i + 1]
    before = y[max(prev, c.at - s.window):c.at]
    sig_b = _floor(robust_scale(before), floor)
    best = None
    need = s.z + POWER
    for e in (_may_reach(y[c.at:nxt - MIN_SEGMENT], before, sig_b, need) + c.at).tolist():
        ep = y[c.at:e]
        # z = min(z1, z2) must reach ``need``: z2 only where z1 does
        z1 = abs(hl_shift(before, ep)) / shift_stderr(sig_b, len(before), len(ep))
        if not z1 >= need or not agree(ep, sig_b):
            continue
        rest = y[e:nxt][:s.window]
        sig_e = _floor(robust_scale(ep), floor)
        z2 = abs(hl_shift(ep, rest)) / shift_stderr(sig_e, len(ep), len(rest))
        z = min(z1, z2)
        if z >= need and (best is None or z > best[0]):
            best = (z, e)
    return None if best is None else best[1]


def _may_reach(ep, before, sigma, need):
    """The lengths ``k`` (``MIN_SEGMENT`` up to all of ``ep``) for which the
    Hodges-Lehmann shift of ``ep[:k]`` against ``before`` may reach
    ``need`` standard errors; all at once. The shift is the median of the
    differences: it is certainly below a bound ``t`` when more than half of
    the differences are below ``t`` and more than half above ``-t``, which
    counts of the sorted ``before`` give for every length at once (``t``
    lowered by a relative ``_SLACK`` for rounding)."""
    ks = np.arange(MIN_SEGMENT, len(ep) + 1)
    if len(ks) == 0:
        return ks
    b = np.sort(before)
    nb = len(b)
    t = need * sigma * np.sqrt(_HL_VAR * (1.0 / ks + 1.0 / nb)) * (1 - _SLACK)
    inside = np.arange(len(ep))[None, :] < ks[:, None]
    below = np.where(inside, nb - np.searchsorted(b, ep[None, :] - t[:, None], 'right'), 0)
    above = np.where(inside, np.searchsorted(b, ep[None, :] + t[:, None], 'left'), 0)
    half = (nb * ks) // 2
    quiet = (below.sum(axis=1) > half) & (above.sum(axis=1) > half)
    return ks[~quiet]
