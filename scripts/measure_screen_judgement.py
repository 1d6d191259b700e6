#!/usr/bin/env python3
"""Recall and false positives of the screening's judgement on generated
populations shaped like real ones, the rule before and the rule now (on a
first screening, and with 3 earlier screenings of every node in the
store) side by side in one run.

What is measured is the command's own judgement: ``run.judge_with_repeats``
(the function ``clusterproof screen`` calls after its first run, with its
repeat of outliers and suspects) over ``judge.Sample`` s; only the
measurements are generated (no Slurm, no ReFrame: the speed of the control
plane is ``scripts/measure_scale.py``'s).

A population: N nodes of four components each (sockets, GPUs, links). On
the log scale a component's figure in run r is

    node offset + component offset + run noise - injected slowdown

the node offset and the component offset each half of a component's
variance, sized so that the node figure (the mean of its four components)
spreads between nodes by the shape's spread; the run noise per component
is twice the shape's repeatability (the node's mean then repeats to it).
The offsets are the node's own: the same in every screening; the run
noise is drawn afresh for every run, the injected slowdown applied to the
current screening only.
Shapes (one standard deviation):

- tight: 0.6 % between nodes, 0.15 % run to run: 1,532 identical nodes of a
  production cluster, one run each (the figures the screening's issue
  reports); tight-1%: the upper end of "tight" (1 %, 0.25 %);
- STREAM-like: 2 %, 0.5 % (the middle of 1-3 %);
- storage-like: 5 %, 2 % (the middle of 3-8 %).

Half a percent of the nodes are persistently slow by 2 to 4 times the spread
(the tail real populations have: they are neither healthy nor injected, and
are counted apart). In each population nodes are slowed by 1, 2, 3, 5, 10
and 20 %, whole (every component) or one component of four (the node's
figure then drops by a quarter of it).

Rules:

- OLD: the rule before: the node's figure (no components), named when 10 %
  and 3 noise units worse than the peers' median, on the first run (its
  repeat could only clear an outlier, never name one: this is an upper
  bound on its recall and its false positives);
- NEW: the rule now with its defaults (``screen.rule.Rule()``: 3.5 noise
  units and the default smallest slowdown; ``--noise-units`` sets another
  k) and the shape's repeatability set as a site sets it
  (``repeatability`` in ``site_config/screening.yaml``), the node's figure
  and each component's judged (each among the same components of the
  peers), suspects and outliers run once more (``--repeat 1``) with fresh
  run noise and named only when confirmed; on the first screening of the
  population (no history: the population rule alone);
- NEW+3: the same after 3 earlier screenings of the whole population
  (fresh run noise, no slowdown, judged and kept as ``clusterproof screen``
  keeps them: ``store.screenings.rows_of``), so that each figure is judged
  against its node's own past too (``screen.ownpast``).

Prints one table: recall per severity (whole node / one component), false
positives per 1,000 healthy nodes, tail nodes named, jobs per node.

usage: .venv/bin/python scripts/measure_screen_judgement.py [--sizes 100,1000,10000]
                        [--shapes tight,tight-1%,STREAM-like,storage-like] [--seed 1]
                        [--noise-units K]
"""

import argparse
import sys
import time
from collections import defaultdict

import numpy as np

from clusterproof.screen import judge, memory, run, verdicts as screen_verdicts
from clusterproof.screen.verdicts import Sample
from clusterproof.screen.rule import Rule
from clusterproof.store import screenings

#: name: (check, figure, spread between nodes %, repeatability %)
SHAPES = {
    'tight': ('hpl', 'gflops', 0.6, 0.15),
    'tight-1%': ('hpl', 'gflops', 1.0, 0.25),
    'STREAM-like': ('stream', 'triad', 2.0, 0.5),
    'storage-like': ('fio', 'bandwidth', 5.0, 2.0),
}
SEVERITIES = (1, 2, 3, 5, 10, 20)
MODES = ('whole', 'component')
COMPONENTS = 4
TAIL_FRACTION = 0.005
#: populations per size, and nodes slowed per severity and mode in each
PLAN = {100: (100, 0), 1000: (20, 2), 10000: (3, 10)}
#: the earlier screenings of the NEW+3 rows
EARLIER = 3
RULES = ('OLD', 'NEW', f'NEW+{EARLIER}')

OLD = Rule(noise_units=3.0, smallest={'default': 10.0, 'stream': 10.0, 'hpl': 10.0,
                                      'fio': 10.0, 'osu': 4.0}, source='the rule before',
           widen=False)
NEW = Rule(source='defaults')


class Population:
    """One generated population: persistent offsets, the injected and tail
    nodes; :meth:`run` draws one run's figures."""

    def __init__(self, rng, size, shape, slowed):
        self.rng, self.size = rng, size
        self.check, self.figure, between, repeat = SHAPES[shape]
        sb = np.log1p(between / 100)
        # node figure = mean of components: var = a^2 + b^2/4 = sb^2 with a = b
        part = sb / np.sqrt(1.25)
        self.run_sd = 2 * np.log1p(repeat / 100)
        self.names = [f'n{i:05d}' for i in range(size)]
        self.offset = (rng.normal(0, part, (size, 1)) + rng.normal(0, part, (size, COMPONENTS)))
        self.slowed = slowed                       # {index: (severity, mode)}
        self.cut = np.zeros((size, COMPONENTS))    # the injected slowdowns, now only
        for i, (sev, mode) in slowed.items():
            cut = np.log1p(-sev / 100)
            if mode == 'whole':
                self.cut[i] += cut
            else:
                self.cut[i, rng.integers(COMPONENTS)] += cut
        free = [i for i in range(size) if i not in slowed]
        n_tail = max(1, round(size * TAIL_FRACTION))
        self.tail = set(rng.choice(free, n_tail, replace=False).tolist())
        for i in self.tail:
            self.offset[i] -= rng.uniform(2, 4) * sb

    def run(self, index, now=True):
        """The component values of one run of the nodes ``index``: in this
        screening (``now``: with the injected slowdowns) or an earlier one."""
        noise = self.rng.normal(0, self.run_sd, (len(index), COMPONENTS))
        cut = self.cut[index] if now else 0.0
        return 100 * np.exp(self.offset[index] + cut + noise)

    def samples(self, index, values, per_component):
        out = []
        for i, comps in zip(index, values):
            node = self.names[i]
            out.append(Sample(node, 'p', self.check, self.figure, float(comps.mean()),
                              'MB/s', declared_lower_is_better=False))
            if per_component:
                out += [Sample(node, 'p', self.check, self.figure, float(v), 'MB/s',
                               declared_lower_is_better=False, component=f'socket {j}')
                        for j, v in enumerate(comps)]
        return out


def plan_slowed(rng, size, trial):
    """``{node index: (severity, mode)}`` of one population."""
    per = PLAN[size][1]
    cells = [(s, m) for s in SEVERITIES for m in MODES]
    if per == 0:                    # 100 nodes: one per severity, the mode by turns
        cells = [(s, MODES[(trial + k) % 2]) for k, s in enumerate(SEVERITIES)]
        per = 1
    chosen = rng.choice(size, per * len(cells), replace=False).tolist()
    return {i: cells[k // per] for k, i in enumerate(chosen)}


def earlier_screenings(pop, rule, count):
    """``{figure key: rows}`` of ``count`` earlier screenings of the whole of
    ``pop`` (no slowdown), judged and kept as ``clusterproof screen`` does."""
    everyone = list(range(pop.size))
    rows = []
    for k in range(count):
        samples = pop.samples(everyone, pop.run(everyone, now=False), True)
        rows += screenings.rows_of(judge.screen(samples, None, rule), 'bench', f'earlier{k}',
                                   float(k))
    return memory.earlier(rows, 'now')


def judge_population(pop, rule, per_component, repeat, past=None):
    """``(named nodes, jobs)`` of the command's judgement on ``pop``."""
    everyone = list(range(pop.size))
    first = pop.samples(everyone, pop.run(everyone), per_component)
    by_name = {n: i for i, n in enumerate(pop.names)}
    jobs = [pop.size]

    def rerun(_k, _checks, nodes):
        index = [by_name[n] for n in nodes]
        jobs[0] += len(index)
        return pop.samples(index, pop.run(index), per_component)

    verdicts, _ = run.judge_with_repeats(first, None, [pop.check], repeat, rerun, rule,
                                         log=lambda line: None, past=past)
    return {v.node for v in screen_verdicts.outliers(verdicts)}, jobs[0]


def site_rule(new, shape):
    """``new`` with the repeatability of ``shape`` set as a site sets it."""
    check, _figure, _between, repeat = SHAPES[shape]
    return Rule(new.noise_units, dict(new.smallest), {check: repeat}, 'the site')


def measure(shape, size, seed, new=NEW):
    """``{rule name: tallies}`` over the populations of one shape and size."""
    rng = np.random.default_rng(seed)
    tallies = {name: defaultdict(int) for name in RULES}
    new = site_rule(new, shape)
    for trial in range(PLAN[size][0]):
        slowed = plan_slowed(rng, size, trial)
        pop = Population(rng, size, shape, slowed)
        past = earlier_screenings(pop, new, EARLIER)
        for name, rule, per_comp, repeat, known in (
                ('OLD', OLD, False, 0, None), ('NEW', new, True, 1, None),
                (RULES[2], new, True, 1, past)):
            named, jobs = judge_population(pop, rule, per_comp, repeat, known)
            t = tallies[name]
            for i, cell in slowed.items():
                t[('n',) + cell] += 1
                t[('hit',) + cell] += pop.names[i] in named
            healthy = [n for i, n in enumerate(pop.names) if i not in slowed and i not in pop.tail]
            t['healthy'] += len(healthy)
            t['fp'] += len(named.intersection(healthy))
            t['tail'] += len(pop.tail)
            t['tail_named'] += len(named.intersection(pop.names[i] for i in pop.tail))
            t['jobs'] += jobs
            t['nodes'] += size
    return tallies


def row(shape, size, name, t):
    cells = []
    for sev in SEVERITIES:
        parts = [f'{100 * t[("hit", sev, m)] / t[("n", sev, m)]:.0f}' if t[('n', sev, m)]
                 else '-' for m in MODES]
        cells.append('/'.join(parts))
    fp = 1000 * t['fp'] / t['healthy']
    return [shape, f'{size:,}', name, *cells, f'{fp:.2f}',
            f'{100 * t["tail_named"] / t["tail"]:.0f} %', f'{t["jobs"] / t["nodes"]:.3f}']


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--sizes', default='100,1000,10000')
    ap.add_argument('--shapes', default=','.join(SHAPES))
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--noise-units', type=float, default=NEW.noise_units,
                    help="the NEW rule's k (default %(default)s, the shipped default)")
    args = ap.parse_args()
    new = Rule(noise_units=args.noise_units)
    sizes = [int(s) for s in args.sizes.split(',')]
    shapes = args.shapes.split(',')
    for s in shapes:
        if s not in SHAPES:
            sys.exit(f'--shapes: unknown {s!r}; known: {", ".join(SHAPES)}')
    for n in sizes:
        if n not in PLAN:
            sys.exit(f'--sizes: {n} has no plan; known: {", ".join(map(str, PLAN))}')
    start = time.monotonic()
    headers = ['shape', 'nodes', 'rule', *[f'{s} %' for s in SEVERITIES], 'FP/1000',
               'tail named', 'jobs/node']
    rows = []
    for shape in shapes:
        for k, size in enumerate(sizes):
            tallies = measure(shape, size, args.seed * 1000 + k, new)
            rows += [row(shape, size, name, t) for name, t in tallies.items()]
    print('recall (% named) of nodes slowed by each severity, whole node / one component '
          'of four;\nfalse positives per 1,000 healthy nodes; the judgement of '
          '`clusterproof screen` (run.judge_with_repeats) on generated figures\n')
    widths = [max(len(str(r[i])) for r in rows + [headers]) for i in range(len(headers))]
    for r in [headers] + rows:
        print('  '.join(str(c).rjust(w) for c, w in zip(r, widths)))
    print(f'\n{time.monotonic() - start:.0f} s; OLD: node figure, 10 % and 3 noise units, one '
          f'run; NEW: node and components, {new.noise_units:g} noise units and '
          f'{new.smallest_pct("", ""):g} %, the shape\'s repeatability, --repeat 1 (suspects '
          f'confirmed), a first screening; NEW+{EARLIER}: the same with {EARLIER} earlier '
          'screenings of every node (against its own past too)')


if __name__ == '__main__':
    main()
