"""Every parser on damaged copies of the recorded outputs (tests/data/):
cut short, a line deleted or printed twice, a number garbled, stray bytes.
Each must return finite figures read from whole rows or raise its declared
error (docs/reliability.md, "Damaged input"; tests/parser_damage.py).

Three parts: property-based tests (hypothesis, derandomized and bounded by
``max_examples``, so a run is the same every time and takes seconds), the
corpus of smallest damaged inputs on which the parsers once failed
(tests/data/parsers-damaged/), and the damage the issue named, each with the
error it must give. tests/parser_damage.py, run as a program, makes the full count.
"""

import math
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import parser_damage as damage
from clusterproof.parsers import ParseError, hpcc, hpl, ior, lscpu, mdtest, mmap_sweep, osu

#: examples per entry point: well under a second of processor time each
EXAMPLES = 30
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))


def damaged_copies(text):
    """A strategy of damaged copies of ``text``, each kind of damage of
    tests/parser_damage.py, shrinking towards the smallest change."""
    size, lines = len(text), max(len(text.splitlines()), 1)
    junk = st.text(max_size=8) | st.sampled_from(damage.GARBAGE)
    return st.one_of(
        st.integers(0, size).map(lambda at: damage.cut(text, at)),
        st.integers(0, lines - 1).map(lambda i: damage.drop_line(text, i)),
        st.integers(0, lines - 1).map(lambda i: damage.double_line(text, i)),
        st.builds(lambda i, g: damage.garble_number(text, i, g),
                  st.integers(0, 10 ** 6), junk),
        st.builds(lambda at, j: damage.splice(text, at, j), st.integers(0, size), junk),
    )


@pytest.mark.parametrize('entry', damage.ENTRIES, ids=lambda e: e.name)
def test_a_damaged_output_gives_finite_figures_or_the_declared_error(entry):
    texts = [damage.read(path) for path in entry.files()]
    assert texts, f'no recorded output for {entry.name} ({", ".join(entry.seeds)})'

    @FUZZ
    @given(st.sampled_from(texts).flatmap(damaged_copies))
    def check(text):
        assert damage.outcome(entry, text) is None

    check()


@pytest.mark.parametrize('entry', damage.ENTRIES, ids=lambda e: e.name)
def test_every_recorded_output_keeps_the_rule(entry):
    for path in entry.files():
        assert damage.outcome(entry, damage.read(path)) is None, path


def corpus():
    return sorted(damage.CORPUS.glob('*--*.txt'))


def test_the_corpus_names_entry_points_that_exist():
    assert corpus()
    for path in corpus():
        assert path.name.split('--')[0] in damage.BY_NAME, path.name


@pytest.mark.parametrize('path', corpus(), ids=lambda p: p.stem)
def test_a_damaged_input_once_mishandled_now_keeps_the_rule(path):
    entry = damage.BY_NAME[path.name.split('--')[0]]
    assert damage.outcome(entry, damage.read(path)) is None


# ------------------------------------------------- the damage the issue named

def recorded(name):
    return damage.read(damage.DATA / name)


def test_osu_a_garbled_value_in_the_largest_size_row_is_named_not_skipped():
    text = recorded('osu/osu_bw-local-np2.txt')
    bad = re.sub(r'^(4194304\s+)\S+', r'\1x1y', text, flags=re.M)
    with pytest.raises(ParseError, match=r'osu_bw\.txt, line \d+: size 4194304, .*x1y'):
        osu.parse(bad, 'osu_bw.txt')
    assert osu.bandwidth_at_largest(osu.parse(text))[0] == 4194304


def test_osu_a_garbled_size_or_a_repeated_row_is_named():
    text = recorded('osu/osu_bw-local-np2.txt')
    with pytest.raises(ParseError, match=r'want a message size in bytes, found .x1y.'):
        osu.parse(re.sub(r'^4194304', 'x1y', text, flags=re.M), 'osu_bw.txt')
    row = re.search(r'^2097152 .*\n', text, re.M).group(0)
    with pytest.raises(ParseError, match=r'size 2097152 after size 2097152'):
        osu.parse(text.replace(row, row + row), 'osu_bw.txt')


def test_osu_a_last_row_cut_mid_number_is_not_read():
    text = recorded('osu/osu_bw-local-np2.txt').rstrip('\n')
    cut = text[:-3]                                   # '... 1784.22' -> '... 1784'
    size, _ = osu.bandwidth_at_largest(osu.parse(cut))
    assert size == 2097152                            # the cut row is not a figure


def test_mdtest_a_garbled_file_creation_row_is_an_error():
    text = recorded('mdtest/mdtest-4.0.0-u-N1-w-e.out')
    bad = re.sub(r'^(\s+File creation\s*:?\s+)\S+', r'\1x1y', text, count=1, flags=re.M)
    with pytest.raises(ParseError, match=r"mdtest\.out, line \d+: a damaged 'File creation' row"):
        mdtest.parse(bad, 'mdtest.out')


def test_hpcc_text_in_place_of_a_figure_is_an_error():
    text = recorded('hpcc/hpccoutf-local-np2.txt')
    bad = re.sub(r'^SingleRandomAccess_GUPs=.*$', 'SingleRandomAccess_GUPs=x1y', text,
                 flags=re.M)
    with pytest.raises(ParseError, match=r"hpccoutf\.txt, line \d+: SingleRandomAccess_GUPs: "
                                         r"want a finite number, found 'x1y'"):
        hpcc.parse(bad)


def test_hpl_cut_mid_number_is_a_parse_error():
    text = recorded('hpl/hpl-2.3-passed.txt')
    row = re.search(r'^WR11C2R4.*$', text, re.M)
    bad = text[:row.end()].rstrip('0123456789') + 'e+\n' + text[row.end():]
    with pytest.raises(ParseError, match=r'HPL output, line \d+: Gflops: want a finite number'):
        hpl.parse(bad)
    assert hpl.verdict(hpl.parse(text[:row.end() - 3])) is not None    # cut there: no result


def test_mmap_sweep_nan_throughput_is_an_error():
    text = recorded('mmap_sweep/memory-read-t1.out')
    bad = re.sub(r'^throughput_mib_s=.*$', 'throughput_mib_s=nan', text, flags=re.M)
    with pytest.raises(ParseError, match=r'throughput_mib_s: want a finite number'):
        mmap_sweep.parse(bad)


def test_ior_an_infinite_count_is_a_parse_error():
    text = recorded('ior/ior-3.3.0-write.out')
    head = re.search(r'^Operation .*\n(write .*)$', text, re.M)
    fields = head.group(1).split()
    fields[head.group(0).split().index('#Tasks')] = '1e999'
    bad = text.replace(head.group(1), ' '.join(fields))
    with pytest.raises(ParseError, match=r'line 40: summary column #Tasks: want a whole number, '
                                         r"found '1e999'"):
        ior.parse_text(bad)


def test_ior_a_garbled_iteration_row_is_named_not_skipped():
    text = recorded('ior/ior-3.3.0-write.out')
    bad = re.sub(r'^(write\s+)252\.27', r'\1x1y', text, count=1, flags=re.M)
    with pytest.raises(ParseError, match=r'line 35: a damaged iteration row'):
        ior.parse_text(bad)


def test_lscpu_json_with_a_record_without_field_is_a_parse_error():
    with pytest.raises(ParseError, match=r'"lscpu"\[0\] is not a \{"field", "data"\} record'):
        lscpu.parse('{"lscpu": [{"data": "4"}]}', 'lscpu.json')


def test_the_rule_finds_nan_at_any_depth_and_text_as_a_figure():
    found = damage.bad_figures({'a': [1.0, (2, {'b': math.nan})]})
    assert found == ["result['a'][1][1]['b'] = nan"]
    assert damage.bad_figures({'HPL_Tflops': 'x1y'})
