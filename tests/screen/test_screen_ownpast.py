"""A node against its own past (``screen.ownpast``): a node 2.5 % slower
than in its earlier screenings is named where its peers alone pass it,
confirmed by a repeat as the population rule is; a node with too little
history is judged by the population rule only."""

import random

from clusterproof.screen import (judge, memory, output, ownpast, run, stats,
                                 verdicts as screen_verdicts)
from clusterproof.screen.verdicts import Sample
from clusterproof.screen.rule import Rule

RULE = Rule(repeatability={'stream': 0.15})


def _offsets(count=200):
    """Persistent offsets (fractions) of a population spread 1.5 %."""
    rnd = random.Random(7)
    return {f'n{i}': rnd.gauss(0, 0.015) for i in range(1, count + 1)}


def _values(offsets, noise, rnd, slower=None):
    slower = slower or {}
    return {n: 100 * (1 + o + rnd.gauss(0, noise)) * (1 - slower.get(n, 0.0))
            for n, o in offsets.items()}


def _samples(values):
    return [Sample(n, 'p', 'stream', 'triad', v, 'MB/s') for n, v in values.items()]


def _past(offsets, screenings, rnd):
    """``{key: rows}`` of ``screenings`` earlier screenings, judged and kept
    as the command keeps them."""
    from clusterproof.store.screenings import rows_of
    rows = []
    for k in range(screenings):
        verdicts = judge.screen(_samples(_values(offsets, 0.0015, rnd)), None, RULE)
        rows += rows_of(verdicts, 'sys', f's{k}', float(k))
    return memory.earlier(rows, 'now')


def _node(verdicts, node):
    return next(v for v in verdicts if v.node == node)


def _n7_slower(seed, earlier, slower=0.025):
    """``(past, now)``: a population whose n7, at its peers' median in
    ``earlier`` screenings, is now ``slower`` (a fraction)."""
    rnd = random.Random(seed)
    offsets = _offsets()
    offsets['n7'] = 0.0
    past = _past(offsets, earlier, rnd)
    return past, _samples(_values(offsets, 0.0015, rnd, {'n7': slower}))


def test_a_node_slower_than_its_own_past_is_named_where_its_peers_pass_it():
    past, now = _n7_slower(1, 3)
    assert screen_verdicts.outliers(judge.screen(now, None, RULE)) == [], 'the peers alone pass it'
    verdicts = judge.screen(now, None, RULE, past=past)
    assert [v.node for v in screen_verdicts.outliers(verdicts)] == ['n7']
    why = _node(verdicts, 'n7').reason
    assert 'stream triad' in why and 'against its last 3 screenings' in why
    own = _node(verdicts, 'n7').worst.own
    assert -2.9 < own.percent < -2.1 and own.units < -RULE.noise_units
    assert output.as_dict(_node(verdicts, 'n7'))['worst']['own_past']['earlier_screenings'] == 3


def test_a_node_with_one_earlier_screening_is_judged_by_its_peers_only():
    past, now = _n7_slower(2, 1)
    verdicts = judge.screen(now, None, RULE, past=past)
    assert screen_verdicts.outliers(verdicts) == []
    assert _node(verdicts, 'n7').worst.own is None


def test_a_drop_against_its_own_past_is_confirmed_by_a_repeat_or_cleared():
    past, now = _n7_slower(3, 3)

    def judged(again):
        def rerun(_k, _checks, nodes):
            return [Sample(n, 'p', 'stream', 'triad', again, 'MB/s') for n in nodes]
        return run.judge_with_repeats(now, None, ['stream'], 1, rerun, RULE,
                                      log=lambda line: None, past=past)

    slow, runs = judged(97.5)
    assert runs['n7'] == 2
    assert 'confirmed in 2 of 2 runs' in _node(slow, 'n7').reason
    clean, _ = judged(100.0)
    n7 = _node(clean, 'n7')
    assert n7.verdict == 'pass' and n7.worst.own.confirmed == (1, 2)


def test_a_noise_unit_is_the_repeatability_or_the_nodes_own_spread_and_never_the_peers_less():
    two = [0.0, 0.0]
    assert round(ownpast.noise_unit(two, 0.15), 3) == round(
        100 * 0.0014989 * (1.5 ** 0.5), 3)                  # median of 2: x sqrt(1 + 1/2)
    assert ownpast.noise_unit(two, 0) == ownpast.FLOOR_PCT * stats.widening(2) * 1.5 ** 0.5
    spread = [0.0, 1.0, -1.0]
    assert ownpast.noise_unit(spread, 0) > 1.0             # its own spread, widened
    assert ownpast.noise_unit(two, 0.15, pooled=0.5) == 0.5
    # no repeatability, too few peers with history: no finer than among the peers
    assert ownpast.noise_unit(two, 0, None, peers_unit=2.0) == 2.0
    assert ownpast.noise_unit(two, 0.15, None, peers_unit=2.0) < 0.2
    assert ownpast.pooled_unit([0.1] * 19) is None          # too few peers with history


def test_offsets_are_signed_so_that_slower_is_negative_whatever_the_direction():
    assert ownpast.offset(98, 100, False) < 0 < ownpast.offset(98, 100, True)
    row = {'percent': -2.0, 'median': 100.0}
    assert round(ownpast.row_offset(row, False), 3) == round(ownpast.offset(98, 100, False), 3)
    assert round(ownpast.row_offset(row, True), 3) == round(ownpast.offset(102, 100, True), 3)
    assert ownpast.offset(0, 100, False) is None


def test_a_small_partition_without_the_repeatability_is_judged_no_finer_than_among_its_peers():
    """Ten nodes spread 5 %, two identical earlier screenings each: n3 now 3 %
    below its past is inside its peers' noise; named only once the site
    gives the check's repeatability."""
    rnd = random.Random(4)
    offsets = {f'n{i}': rnd.gauss(0, 0.05) for i in range(1, 11)}
    offsets['n3'] = 0.0

    def judged(rule):
        before = {n: 100 * (1 + o) for n, o in offsets.items()}
        from clusterproof.store.screenings import rows_of
        rows = []
        for k in range(2):
            rows += rows_of(judge.screen(_samples(before), None, rule), 'sys', f's{k}', float(k))
        now = _samples(dict(before, n3=97.0))
        return screen_verdicts.outliers(judge.screen(now, None, rule,
                                                     past=memory.earlier(rows, 'now')))

    assert judged(Rule()) == []
    assert [v.node for v in judged(RULE)] == ['n3']
