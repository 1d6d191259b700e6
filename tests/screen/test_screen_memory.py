"""Screenings remembered (``store.screenings``, ``screen.memory``): the
rows a screening keeps, "slow in k of the last n screenings", and a node
persistently at the tail named on the mean of its screenings."""

import json
import os
import random
import subprocess

from conftest import DATA, REPO, VENV_BIN

from clusterproof.screen import judge, memory, output, verdicts as screen_verdicts
from clusterproof.screen.verdicts import Sample
from clusterproof.store import screenings


def _tight(extra):
    rnd = random.Random(1)
    values = {f'n{i}': 100 * (1 + rnd.uniform(-0.01, 0.01)) for i in range(1, 201)}
    values.update(extra)
    return judge.screen([Sample(n, 'p', 'stream', 'triad', v, 'MB/s') for n, v in values.items()])


def _rows(node, distances, verdicts=None):
    verdicts = verdicts or ['pass'] * len(distances)
    return [{'screening': f's{k}', 'time': float(k), 'system': 'sys', 'partition': 'p',
             'node': node, 'check': 'stream', 'figure': 'triad', 'component': '',
             'value': 100 + pct, 'median': 100.0, 'noise_pct': 0.74, 'noise_units': units,
             'percent': pct, 'verdict': v}
            for k, ((units, pct), v) in enumerate(zip(distances, verdicts))]


def test_a_node_whose_screenings_straddle_the_line_is_named_on_their_mean():
    now = _tight({'n9': 97.5, 'n10': 97.8})      # -3.4 and -3.0 noise units: both pass
    assert screen_verdicts.outliers(now) == []
    past = _rows('n9', [(-3.6, -2.7), (-3.9, -2.9), (-3.7, -2.7)], ['pass', 'slow', 'slow']) \
        + _rows('n10', [(-3.0, -2.2), (-3.1, -2.3), (-2.9, -2.1)])
    out = memory.remember(now, past, screening_id='s9')
    named = screen_verdicts.outliers(out)
    assert [v.node for v in named] == ['n9']
    assert 'persistently at the tail, near or past the line in 4 of the last 4 screenings' \
        in named[0].reason
    assert named[0].worst.history == 'slow in 2 of the last 4 screenings'
    n10 = next(v for v in out if v.node == 'n10')
    assert n10.verdict == 'pass', 'steadily inside the line: a healthy node at the tail'
    assert output.as_dict(n10)['worst']['history'] == 'slow in 0 of the last 4 screenings'


def test_the_same_screening_judged_again_is_not_its_own_history():
    now = _tight({'n9': 97.5})
    past = _rows('n9', [(-3.9, -2.9)] * 3, ['slow'] * 3)
    past[-1]['screening'] = 's9'
    out = memory.remember(now, past, screening_id='s9')
    assert next(v for v in out if v.node == 'n9').worst.history == \
        'slow in 2 of the last 3 screenings'


def test_a_screening_is_kept_in_the_store_and_read_back(tmp_path):
    now = _tight({'n9': 90.0})
    rows = screenings.rows_of(now, 'sys', 'abc', 1000.0)
    assert len(rows) == 200
    n9 = next(r for r in rows if r['node'] == 'n9')
    assert (n9['verdict'], n9['component'], round(n9['percent'])) == ('slow', '', -10)
    screenings.write(tmp_path, rows, 'abc')
    screenings.write(tmp_path, rows[:3], 'abc')             # judged again: replaced
    screenings.write(tmp_path, rows[:2], 'def')
    back = screenings.read(tmp_path, 'sys')
    assert len(back) == 5 and back[0]['screening'] == 'abc'
    assert screenings.read(tmp_path, 'other') == [] and screenings.read(tmp_path / 'x') == []


def test_the_command_keeps_its_screening_and_says_the_nodes_history(tmp_path):
    """``clusterproof screen --from-report`` on the recorded run report, a
    screening of the day before already in the store: n3's Triad says it was
    slow in 2 of its last 3 screenings, is judged against its own past too,
    and this screening is kept beside."""
    results = tmp_path / 'results'
    store = results / 'store'
    for k, day in enumerate(('the day before', 'yesterday')):
        before = [{'screening': day, 'time': float(k), 'system': 'emu', 'partition': 'srun',
                   'node': 'n3', 'check': 'stream', 'figure': 'triad', 'component': '',
                   'value': 5000.0, 'median': 7000.0, 'noise_pct': 3.0, 'noise_units': -9.0,
                   'percent': -28.0, 'verdict': 'slow'}]
        screenings.write(store, before, day.replace(' ', '-'))
    proc = subprocess.run([str(VENV_BIN / 'clusterproof'), 'screen', '--system', 'emu',
                           '--from-report',
                           str(DATA / 'screen' / 'report-emu-stream-inventory.json'),
                           '--format', 'json'], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, 'CLUSTERPROOF_RESULTS': str(results)}, timeout=60)
    assert proc.returncode == 1, proc.stderr            # n2: less memory
    n3 = next(n for n in json.loads(proc.stdout)['nodes'] if n['node'] == 'n3')
    triad = next(f for f in n3['figures'] if f['figure'] == 'triad')
    assert triad['history'] == 'slow in 2 of the last 3 screenings'
    assert triad['own_past']['earlier_screenings'] == 2
    kept = {r['screening'] for r in screenings.read(store, 'emu')}
    assert kept == {'the day before', 'yesterday', '00000000-0000-0000-0000-000000000000'}
    assert f'kept in {store / "screenings"}' in proc.stderr
