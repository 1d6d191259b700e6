"""Damaged program outputs for the parsers: every parser entry point, the
recorded outputs of tests/data/ it reads, the ways an output gets damaged
(cut short, a line lost or printed twice, a number garbled, stray bytes),
and the rule a parser must keep on such input: return finite figures it
read, or raise the declared error (``ParseError``, ``SlurmFormatError``).

Used by tests/parsers/test_parsers_fuzz.py (property-based, bounded in time); run as a
program it makes the full count over every recorded output (:data:`_COUNT_DOC`):

    .venv/bin/python tests/parser_damage.py                 # 200 damaged copies of each output
    .venv/bin/python tests/parser_damage.py --per-seed 20 --entry osu --entry hpl
    .venv/bin/python tests/parser_damage.py --examples 3    # up to 3 failures per entry point
    .venv/bin/python tests/parser_damage.py --minimize DIR  # a smallest copy of the first input
                                                            # of each entry point and kind of
                                                            # failure, written to DIR
"""

import argparse
import dataclasses
import math
import random
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

from clusterproof.parsers import ParseError
from clusterproof.parsers import (fio, gpu, hpcc, hpl, ior, iozone, ipmctl_memoryresources,
                                  ipmctl_topology, lscpu, md_workbench, mdtest, mmap_sweep, mounts,
                                  ndctl, osu, runtime_errors, slurm, slurm_values, stream)

DATA = Path(__file__).resolve().parent / 'data'
#: the minimal damaged inputs found so far, one file each: ``<entry point>--<what>.txt``
CORPUS = DATA / 'parsers-damaged'
#: the errors a parser declares
DECLARED = (ParseError, slurm_values.SlurmFormatError)
SOURCE = 'damaged.out'


def _each(fn, *args):
    """``fn(*args)``, or None where it raises the declared error (an
    accessor whose column or phase the output does not have)."""
    try:
        return fn(*args)
    except DECLARED:
        return None


def _osu(text):
    parsed = osu.parse(text, SOURCE)
    return [parsed, _each(osu.bandwidth_at_largest, parsed),
            _each(osu.message_rate_at_smallest, parsed), _each(osu.latency_at_smallest, parsed)]


def _hpl(text):
    parsed = hpl.parse(text, SOURCE)
    return [parsed, hpl.verdict(parsed)]


def _hpcc(text):
    parsed = hpcc.parse(text, SOURCE)
    return [parsed, hpcc.verdict(parsed),
            {name: parsed['summary'][name] for name in hpcc.FIGURES if name in parsed['summary']}]


def _mmap_sweep(text):
    parsed = mmap_sweep.parse(text, SOURCE)
    return [parsed, mmap_sweep.problems(parsed, SOURCE)]


def _mdtest(text):
    run = mdtest.parse(text, SOURCE)
    return [run, [_each(run.rate, op) for op in mdtest.OPERATIONS]]


def _md_workbench(text):
    run = md_workbench.parse(text, SOURCE)
    return [run, [_each(run.rate, phase) for phase in md_workbench.PHASES]]


def _iozone(text):
    parsed = iozone.parse(text, SOURCE)
    names = {name for run in parsed['runs'] for name in run['tests']}
    return [parsed, [_each(iozone.find_test, parsed, name) for name in sorted(names)],
            iozone.stonewalled_tests(parsed)]


def _ior_run(run):
    return [run, [_each(run.bandwidth, op, stat) for op in ior.OPERATIONS
                  for stat in ('max', 'mean')]]


def _fio(text):
    return fio.parse(text, SOURCE)


@dataclasses.dataclass(frozen=True)
class Entry:
    """One parser entry point: ``call(text)`` runs it (and the accessors a
    check calls on its result); ``seeds``: globs under tests/data/."""
    name: str
    call: object
    seeds: tuple

    def files(self):
        return sorted(p for pattern in self.seeds for p in DATA.glob(pattern)
                      if p.name != 'README.md')


ENTRIES = (
    Entry('osu', _osu, ('osu/*.txt',)),
    Entry('hpl', _hpl, ('hpl/*.txt',)),
    Entry('hpcc', _hpcc, ('hpcc/*.txt',)),
    Entry('stream', lambda t: stream.parse(t, SOURCE), ('stream/*.txt',)),
    Entry('mmap_sweep', _mmap_sweep, ('mmap_sweep/*.out',)),
    Entry('lscpu', lambda t: lscpu.parse(t, SOURCE), ('inventory/lscpu*',)),
    Entry('nvidia_smi', lambda t: gpu.parse_nvidia_smi_list(t, SOURCE),
          ('inventory/nvidia-smi*',)),
    Entry('rocm_smi', lambda t: gpu.parse_rocm_smi(t, SOURCE), ('inventory/rocm-smi*',)),
    Entry('mdtest', _mdtest, ('mdtest/*.out',)),
    Entry('md_workbench', _md_workbench, ('md-workbench/*.out',)),
    Entry('iozone', _iozone, ('iozone/*.txt',)),
    Entry('ior_text', lambda t: _ior_run(ior.parse_text(t, SOURCE)), ('ior/*.out', 'ior/*.txt')),
    Entry('ior_json', lambda t: _ior_run(ior.parse_json(t, SOURCE)), ('ior/*.json',)),
    Entry('runtime_errors', runtime_errors.first_error, ('*/*.err',)),
    Entry('fio', _fio, ('fio/*.json', 'fio/*.jsonplus', 'fio/*.txt')),
    Entry('ipmctl_memoryresources', lambda t: ipmctl_memoryresources.parse(t, SOURCE),
          ('ipmctl/memoryresources-*',)),
    Entry('ipmctl_topology', lambda t: ipmctl_topology.parse(t, SOURCE), ('ipmctl/topology-*',)),
    Entry('ndctl', lambda t: ndctl.parse(t, SOURCE), ('ndctl/*.json',)),
    Entry('mounts', lambda t: mounts.parse(t, SOURCE), ('mounts/*.txt',)),
    Entry('scontrol_nodes', lambda t: slurm.nodes_from_scontrol(t, SOURCE),
          ('slurm/scontrol-show-node-*.txt',)),
    Entry('json_nodes', lambda t: slurm.nodes_from_json(t, SOURCE),
          ('slurm/scontrol-show-node-*.json', 'slurm/sinfo-*.json')),
    Entry('scontrol_partitions', lambda t: slurm.partitions_from_scontrol(t, SOURCE),
          ('slurm/scontrol-show-partition-*.txt',)),
    Entry('json_partitions', lambda t: slurm.partitions_from_json(t, SOURCE),
          ('slurm/scontrol-show-partition-*.json',)),
    Entry('topology', lambda t: slurm.parse_topology(t, SOURCE), ('slurm/*topology*',)),
    Entry('slurm_conf', lambda t: [slurm.parse_slurm_conf(t, SOURCE),
                                   slurm.nodes_from_slurm_conf(t, SOURCE)],
          ('slurm/slurm.conf*',)),
)
BY_NAME = {entry.name: entry for entry in ENTRIES}


def read(path):
    return Path(path).read_bytes().decode('utf-8', 'replace')


# ------------------------------------------------------------ the rule

def bad_figures(value, where='result'):
    """Where in a parser's result a figure is not a finite number: NaN or
    infinity anywhere, or text under a name that is a figure (HPCC's
    summary). ``[]`` when every figure is finite."""
    if isinstance(value, float):
        return [] if math.isfinite(value) else [f'{where} = {value!r}']
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    if isinstance(value, dict):
        found = []
        for key, item in value.items():
            found += bad_figures(item, f'{where}[{key!r}]')
            if key in hpcc.FIGURES and not isinstance(item, (int, float)):
                found.append(f'{where}[{key!r}] = {item!r}: text as a figure')
        return found
    if isinstance(value, (list, tuple)):
        return [bad for i, item in enumerate(value) for bad in bad_figures(item, f'{where}[{i}]')]
    return []


def outcome(entry, text):
    """``None`` when ``entry`` keeps the rule on ``text``, otherwise what it
    did: ``'ValueError: ...'`` (an undeclared exception) or
    ``'non-finite: ...'``."""
    try:
        result = entry.call(text)
    except DECLARED:
        return None
    except Exception as err:            # the very thing counted
        return f'{type(err).__name__}: {err}'[:300]
    bad = bad_figures(result)
    return f'non-finite: {bad[0]}'[:300] if bad else None


# ------------------------------------------------------------ damage

#: what a garbled number becomes
GARBAGE = ('x1y', 'nan', '-nan', 'inf', '-inf', 'NaN', '1e999', '-1e999', '1.2.3', '-', '',
           '99999999999999999999999999', '0', '-0', '-1', '1e-400', '.', 'e5', '١٢', '½', '0x10')
_NUMBER = re.compile(r'\d+(?:\.\d+)?(?:[eE][-+]?\d+)?')


def cut(text, at):
    return text[:at]


def drop_line(text, index):
    lines = text.splitlines(keepends=True)
    return ''.join(lines[:index] + lines[index + 1:]) if lines else text


def double_line(text, index):
    lines = text.splitlines(keepends=True)
    return ''.join(lines[:index + 1] + lines[index:]) if lines else text


def garble_number(text, index, garbage):
    """The ``index``-th number of ``text`` (modulo their count) replaced by ``garbage``."""
    numbers = list(_NUMBER.finditer(text))
    if not numbers:
        return text
    m = numbers[index % len(numbers)]
    return text[:m.start()] + garbage + text[m.end():]


def splice(text, at, junk):
    """``junk`` written over ``text`` from ``at``."""
    return text[:at] + junk + text[at + len(junk):]


def damaged(text, rng, count):
    """``count`` damaged copies of ``text``: ``[(what, damaged text)]``."""
    out = []
    size, lines = max(len(text), 1), max(len(text.splitlines()), 1)
    kinds = ('cut', 'drop', 'double', 'garble', 'garble', 'garble', 'bytes')
    for _ in range(count):
        kind = rng.choice(kinds)
        if kind == 'cut':
            at = rng.randrange(size)
            out.append((f'cut at {at}', cut(text, at)))
        elif kind == 'drop':
            i = rng.randrange(lines)
            out.append((f'line {i + 1} deleted', drop_line(text, i)))
        elif kind == 'double':
            i = rng.randrange(lines)
            out.append((f'line {i + 1} twice', double_line(text, i)))
        elif kind == 'garble':
            i, junk = rng.randrange(10 ** 6), rng.choice(GARBAGE)
            out.append((f'number {i} -> {junk!r}', garble_number(text, i, junk)))
        else:
            at = rng.randrange(size)
            junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
            out.append((f'bytes at {at}', splice(text, at, junk.decode('latin-1'))))
    return out


def kind_of(result):
    """What kind of failure an :func:`outcome` is: the exception's name, or
    ``non-finite``."""
    return result.split(':', 1)[0]


def minimal(entry, text, kind):
    """A smallest copy of ``text`` (whole lines removed, then characters cut
    from the end of the last line) on which ``entry`` still fails with
    ``kind``: delta debugging over lines."""
    def fails(candidate):
        result = outcome(entry, candidate)
        return result is not None and kind_of(result) == kind
    lines = text.splitlines(keepends=True)
    chunk = len(lines) // 2
    while chunk >= 1:
        i, removed = 0, False
        while i < len(lines):
            candidate = lines[:i] + lines[i + chunk:]
            if candidate and fails(''.join(candidate)):
                lines, removed = candidate, True
            else:
                i += chunk
        if not removed:
            chunk //= 2
    return ''.join(lines)


def sweep(entries=ENTRIES, per_seed=200, seed=39):
    """Every entry point on ``per_seed`` damaged copies of each of its
    recorded outputs (and the outputs themselves): yields ``(entry, file,
    what, text, outcome)``."""
    rng = random.Random(seed)
    for entry in entries:
        for path in entry.files():
            text = read(path)
            for what, bad in [('as recorded', text)] + damaged(text, rng, per_seed):
                yield entry, path, what, bad, outcome(entry, bad)


# -- the full count, run as a program ------------------------------------------------------

_COUNT_DOC = '''Every parser on damaged copies of every recorded output of tests/data/
(cut short, a line deleted or doubled, a number garbled, stray bytes),
counting the inputs on which a parser raised an exception other than its
declared error, or returned a figure that is not a finite number. Exit 1
when anything is counted (the counts are 0 and 0 when every parser keeps
the rule of docs/reliability.md, "Damaged input").'''


def main(argv=None):
    ap = argparse.ArgumentParser(description=_COUNT_DOC,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--per-seed', type=int, default=200, metavar='N',
                    help='damaged copies of each recorded output (default 200)')
    ap.add_argument('--seed', type=int, default=39, help='random seed (default 39)')
    ap.add_argument('--entry', action='append', choices=sorted(BY_NAME),
                    help='only this entry point (repeatable)')
    ap.add_argument('--examples', type=int, default=2, metavar='N',
                    help='failures shown per entry point (default 2)')
    ap.add_argument('--minimize', type=Path, metavar='DIR',
                    help='write a smallest failing copy of the first input of each entry '
                         'point and kind of failure to DIR (<entry point>--<kind>.txt)')
    args = ap.parse_args(argv)
    if args.per_seed < 0:
        ap.error(f'--per-seed {args.per_seed}: want 0 or more')
    entries = [BY_NAME[n] for n in args.entry] if args.entry else ENTRIES
    inputs, raised, nonfinite = Counter(), Counter(), Counter()
    shown = defaultdict(list)
    kept = set()
    for entry, path, what, text, result in sweep(entries, args.per_seed, args.seed):
        inputs[entry.name] += 1
        if result is None:
            continue
        kind = kind_of(result)
        if args.minimize and (entry.name, kind) not in kept:
            kept.add((entry.name, kind))
            args.minimize.mkdir(parents=True, exist_ok=True)
            (args.minimize / f'{entry.name}--{kind}.txt').write_text(
                minimal(entry, text, kind))
        (nonfinite if result.startswith('non-finite') else raised)[entry.name] += 1
        if len(shown[entry.name]) < args.examples:
            shown[entry.name].append(f'{path.relative_to(DATA)}, {what}: {result}')
    print(f'{"entry point":24} {"inputs":>7} {"undeclared":>10} {"non-finite":>10}')
    for entry in entries:
        n = entry.name
        print(f'{n:24} {inputs[n]:7} {raised[n]:10} {nonfinite[n]:10}')
        for line in shown[n]:
            print(f'    {line}')
    total = (sum(inputs.values()), sum(raised.values()), sum(nonfinite.values()))
    label = f'all {len(entries)} entry points'
    print(f'{label:24} {total[0]:7} {total[1]:10} {total[2]:10}')
    return 1 if total[1] or total[2] else 0


if __name__ == '__main__':
    sys.exit(main())
