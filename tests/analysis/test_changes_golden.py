"""The findings of the change detector on a fixed set of generated figures
(``scripts/measure_detection.py``'s speed set: levels, steps, drifts,
quantised values, two node types, heavy tails) are those recorded in
``tests/data/changes-golden/findings.json``: making the detector faster
must not change what it finds. Rewrite the record only for a change of
behaviour that is argued as a fix:

    .venv/bin/python tests/analysis/test_changes_golden.py --write
"""

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / 'scripts'))
sys.path.insert(0, str(REPO))

import measure_detection as detection  # noqa: E402
from clusterproof.analysis.detector import figure, nightly, segmentation, views  # noqa: E402

RECORD = REPO / 'tests' / 'data' / 'changes-golden' / 'findings.json'
COUNT, NIGHTS, SEED = 60, 200, 7


def _change(c):
    return [c.at, c.found, _num(c.shift), _num(c.stderr), c.n_before, c.n_after, c.view,
            c.kind, c.end, _num(c.rate)]


def _num(x):
    return float(f'{x:.10g}')


def findings(count=COUNT, nights=NIGHTS, seed=SEED):
    """What the detector finds on each figure of the speed set: the nightly
    alarms (:func:`changes.scan`), the changes kept and withdrawn
    (:func:`changes.find`) and the figure's noise."""
    out = []
    for kind, values, groups in detection.speed_series(count, nights, seed):
        kept, withdrawn = views.find(values, None, groups)
        fn = figure.figure_noise(values, kept, None, groups)
        out.append({
            'kind': kind,
            'alarms': [_change(c) for c in nightly.scan(values)],
            'kept': [_change(c) for c in kept],
            'withdrawn': [_change(c) for c in withdrawn],
            'noise': [_num(fn.noise), _num(fn.detectable), fn.n, fn.too_noisy,
                      fn.heavy_tailed],
        })
    return out


def test_findings_are_those_recorded():
    want = json.loads(RECORD.read_text())
    got = findings()
    json.dumps(got)     # plain numbers, as `clusterproof changes --json` writes them
    assert len(got) == len(want) == COUNT
    # the set is not trivial: it holds changes of every view, drifts and withdrawn alarms
    kept = [c for f in want for c in f['kept']]
    assert {c[6] for c in kept} == {'nightly', 'retrospective', 'both'}
    assert any(c[7] == 'drift' for c in kept) and any(f['withdrawn'] for f in want)
    for i, (g, w) in enumerate(zip(got, want)):
        for key in w:
            assert g[key] == pytest.approx(w[key], rel=1e-9, abs=1e-12) if key == 'noise' \
                else _rounded(g[key]) == _rounded(w[key]), (i, g['kind'], key)


def test_lists_and_arrays_give_the_same_findings():
    """The loaders hand the detector numpy arrays (values, node lists) or
    lists: the same findings either way."""
    for kind, values, groups in detection.speed_series(12, 120, 3):
        as_list = views.find(list(values), None, groups)
        as_array = views.find(np.asarray(values, dtype=float), None,
                              None if groups is None else np.asarray(groups))
        assert as_list == as_array, kind


@pytest.mark.slow
def test_binary_segmentation_places_the_change_points_ruptures_places():
    """:func:`changes.binseg` (prefix sums) against ruptures' Binseg itself on
    series with steps, ties (rounded values) and a large level."""
    import ruptures
    rng = np.random.default_rng(5)
    for i in range(120):
        n = int(rng.integers(6, 200))
        x = rng.standard_normal(n) * rng.uniform(0.1, 10)
        if i % 3 == 0:
            x[int(rng.integers(0, n)):] += rng.uniform(-5, 5)
        if i % 5 == 0:
            x = np.round(x)
        if i % 7 == 0:
            x = x + 460.0
        size = int(rng.choice((2, 3)))
        pen = 3 * math.log(n)
        want = ruptures.Binseg(model='l2', min_size=size, jump=1).fit(x).predict(pen=pen)[:-1]
        assert segmentation.binseg(x, size, pen) == want, (i, n)


def _rounded(rows):
    return rows if isinstance(rows, str) else [
        [round(x, 9) if isinstance(x, float) else x for x in row] for row in rows]


if __name__ == '__main__' and sys.argv[1:] == ['--write']:
    RECORD.write_text(json.dumps(findings(), indent=0) + '\n')
    print(f'wrote {RECORD}')
