"""Segmentation: binary segmentation with the squared-error cost over
prefix sums, placing the change points exactly where ruptures' ``Binseg``
places them (:func:`binseg`, :func:`_segment` on values in noise units), and
with the Gaussian cost of a segment's mean and variance, for changes of
noise (:func:`_var_binseg`)."""

import math

import numpy as np

#: segments of the retrospective view are at least this long
MIN_SEGMENT = 3


def _segment(seg, sigma, min_size, penalty):
    """Change points of ``seg``: indices of the first value of each new
    segment, by binary segmentation (:func:`binseg`) of the values in noise
    units with penalty ``penalty x log(n)``."""
    return binseg(seg / sigma, min_size, penalty * math.log(len(seg)))


def binseg(x, min_size, pen):
    """Binary segmentation of ``x`` with the squared-error cost, as
    ``ruptures.Binseg(model='l2', min_size=min_size, jump=1).fit(x)
    .predict(pen=pen)[:-1]`` places them (the same change points, in the same
    order of choice and ties), over prefix sums: each split of a segment is
    one vectorised pass instead of one cost per candidate. The gains of the
    candidates within rounding of the best are computed again as ruptures
    computes them, so a near tie falls as it falls there."""
    x = np.asarray(x, dtype=float)
    n = len(x)
    if min_size > n:
        raise ValueError(f'binary segmentation of {n} values with segments of '
                         f'{min_size} or more')
    col = x.reshape(-1, 1)
    c = x - x.mean()
    s1 = np.concatenate(([0.0], np.cumsum(c)))
    s2 = np.concatenate(([0.0], np.cumsum(c * c)))
    tol = 1e-10 * (float(s2[-1]) + 1.0)

    def cost(a, b):
        # ruptures' CostL2.error, operation for operation
        return col[a:b].var(axis=0).sum() * (b - a)

    cache = {}

    def best_split(a, b):
        """``[bkp, gain, exact]`` of the best split of ``x[a:b]``: the gain
        from the prefix sums (within ``tol`` of ruptures'), ``exact`` once
        it is computed as ruptures computes it."""
        if (a, b) in cache:
            return cache[a, b]
        lo, hi = a + min_size, b - min_size
        if hi < lo:
            cache[a, b] = [None, 0, True]
            return cache[a, b]
        k = np.arange(lo, hi + 1)
        left = s2[k] - s2[a] - (s1[k] - s1[a]) ** 2 / (k - a)
        right = s2[b] - s2[k] - (s1[b] - s1[k]) ** 2 / (b - k)
        loss = left + right
        best = loss.min()
        near = k[loss <= best + tol]
        if len(near) == 1:
            whole = s2[b] - s2[a] - (s1[b] - s1[a]) ** 2 / (b - a)
            cache[a, b] = [int(near[0]), float(whole - best), False]
        else:
            cache[a, b] = [*exact(a, b, near), True]
        return cache[a, b]

    def exact(a, b, near):
        whole = cost(a, b)
        gain, j = max((whole - cost(a, int(j)) - cost(int(j), b), int(j)) for j in near)
        return j, gain

    def settle(split, a, b):
        if not split[2]:
            split[1] = exact(a, b, [split[0]])[1]
            split[2] = True
        return split[1]

    bkps = [n]
    while True:
        pairs = list(zip([0] + bkps, bkps))
        splits = [best_split(a, b) for a, b in pairs]
        top = max(r[1] for r in splits)
        # near ties of the best gain, and a best gain near the penalty, are
        # decided on the gains as ruptures computes them
        close = [(a, b, r) for (a, b), r in zip(pairs, splits) if r[1] >= top - 2 * tol]
        if len(close) > 1 or abs(top - pen) <= 2 * tol:
            for a, b, r in close:
                settle(r, a, b)
        # the others are below these: the first best of these is ruptures' choice
        bkp, gain, _ = max((r for _, _, r in close), key=lambda r: r[1])
        if bkp is None or not gain > pen:
            break
        bkps.append(bkp)
        bkps.sort()
    return bkps[:-1]


def _var_binseg(u, min_size, pen):
    """Binary segmentation of ``u`` with the Gaussian cost of a segment's
    mean and variance (m values cost m log of their variance about their
    mean), ``pen`` per boundary."""
    n = len(u)
    s1 = np.concatenate(([0.0], np.cumsum(u)))
    s2 = np.concatenate(([0.0], np.cumsum(u * u)))
    tiny = 1e-12

    def costs(a, k):
        m = k - a
        return m * np.log(np.maximum((s2[k] - s2[a] - (s1[k] - s1[a]) ** 2 / m) / m, tiny))

    def best(a, b):
        k = np.arange(a + min_size, b - min_size + 1)
        if len(k) == 0:
            return None, 0.0
        right = (b - k) * np.log(np.maximum(
            (s2[b] - s2[k] - (s1[b] - s1[k]) ** 2 / (b - k)) / (b - k), tiny))
        loss = costs(a, k) + right
        j = int(np.argmin(loss))
        return int(k[j]), float(costs(a, np.asarray([b]))[0]) - float(loss[j])

    bkps = [n]
    while True:
        cands = [best(a, b) for a, b in zip([0] + bkps, bkps)]
        bkp, gain = max(cands, key=lambda c: c[1])
        if bkp is None or not gain > pen:
            break
        bkps.append(bkp)
        bkps.sort()
    return bkps[:-1]
