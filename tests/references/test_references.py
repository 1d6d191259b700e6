"""References files: parsing, and refusal of bad input with a precise message."""


import pytest

from clusterproof import ClusterproofError
from clusterproof.references import direction, entries, judge as references, lookup
from clusterproof.paths import REFERENCES_DIR
from conftest import run_reframe


def write(tmp_path, text, name='sys.yaml'):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_valid_file_counts_entries(tmp_path):
    path = write(tmp_path, """
IOzoneSequential:
  $index: [num_threads]
  8:
    write_bw: [28.5, -0.1, null, 'GB/s']
    read_bw: [31.4, -0.1, null, 'GB/s']
FioPmem:
  'pmserver:default':
    randwrite_lat_mean: [6.05, null, 0.2, 'us']
""")
    assert entries.validate_file(path) == 3


@pytest.mark.parametrize('text, message', [
    ('A:\n  s:p:\n    x: [1, -0.1, null, "MB/s"\n', 'sys.yaml:4: not valid YAML'),
    ('A:\n  s:p:\n    x: [1, -1.5, null, "MB/s"]\n', 'A.s:p.x: lower tolerance -1.5 is impossible'),
    ('A:\n  s:p:\n    x: [1, 0.1, null, "MB/s"]\n', 'A.s:p.x: lower tolerance 0.1 is impossible'),
    ('A:\n  s:p:\n    x: [1, null, -0.2, "us"]\n', 'A.s:p.x: upper tolerance -0.2 is impossible'),
    ('A:\n  s:p:\n    x: [1, -0.1, null, "furlongs"]\n', "A.s:p.x: unknown unit 'furlongs'"),
    ('A:\n  s:p:\n    x: ["fast", -0.1, null, "MB/s"]\n', "A.s:p.x: value 'fast' is not a number"),
    ('A:\n  $index: [num_threads]\n  8: [1, 2, 3]\n', 'A.8: want a mapping'),
    ('- just\n- a list\n', 'the top level must map check names'),
])
def test_bad_files_are_refused_naming_file_and_key(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(ClusterproofError) as err:
        entries.validate_file(path)
    assert str(path) in str(err.value)
    assert message in str(err.value)


def test_unit_must_match_the_check(tmp_path):
    with pytest.raises(ClusterproofError, match="unit 'MB/s' does not match the check, "
                                                "which reports 'GB/s'"):
        entries.check_entry('f.yaml: A.x', [1, -0.1, None, 'MB/s'], 'GB/s')


def test_direction_by_unit():
    assert direction.lower_is_better('us')
    assert not direction.lower_is_better('MB/s')


#: reference files the repository ships (the declared systems with real hardware)
SHIPPED_REFERENCES = {'minerva.yaml', 'pixstor.yaml', 'pmserver.yaml', 'pmserver-mm.yaml'}


def test_shipped_reference_files_are_valid():
    paths = sorted(REFERENCES_DIR.glob('*.yaml'))
    missing = SHIPPED_REFERENCES - {p.name for p in paths}
    assert not missing, f'{REFERENCES_DIR}: no {", ".join(sorted(missing))}'
    for path in paths:
        entries.validate_file(path)


CHECK = '''
import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import parameter, run_before, sanity_function
from clusterproof.checklib.base import ClusterproofCheck
from clusterproof.reframe_io.figures import performance_figure

@rfm.simple_test
class ReferenceProbe(rfm.RunOnlyRegressionTest, ClusterproofCheck):
    valid_systems = ['local']
    valid_prog_environs = ['*']
    num_threads = parameter([1, 2])
    executable = 'echo'

    @run_before('run')
    def set_value(self):
        self.executable = self.use_binary('echo', 'coreutils')
        self.executable_opts = [f'value {10 * self.num_threads}']

    @sanity_function
    def found(self):
        return sn.assert_found('value', self.stdout)

    @performance_figure('MB/s', lower_is_better=False)
    def bw(self):
        return sn.extractsingle(r'value (\\d+)', self.stdout, 1, float)
'''


def run_probe(tmp_path, refs, mode, text=CHECK):
    """Run a real check (``text``) through ReFrame with a references file
    for ``local``, in a references directory of the test's own
    (``CLUSTERPROOF_REFERENCES``): nothing is written into the repository."""
    check = tmp_path / 'probe.py'
    check.write_text(text)
    assert not (REFERENCES_DIR / 'local.yaml').exists(), 'local has no references in the repository'
    refs_dir = tmp_path / 'references'
    refs_dir.mkdir()
    (refs_dir / 'local.yaml').write_text(refs)
    return run_reframe(['-c', str(check), '-r', '--system', 'local'],
                       tmp_path / 'results', mode,
                       extra_env={'CLUSTERPROOF_REFERENCES': str(refs_dir)})


def test_references_indexed_on_threads_apply_for_real(tmp_path):
    proc = run_probe(tmp_path, 'ReferenceProbe:\n  $index: [num_threads]\n'
                               '  1:\n    bw: [10, -0.1, null, "MB/s"]\n'
                               '  2:\n    bw: [30, -0.1, null, "MB/s"]\n', 'nightly')
    assert proc.returncode != 0
    assert 'bw=20.0 MB/s, expected 30' in proc.stdout
    assert 'Ran 2/2 test case(s)' in proc.stdout and '1 failure(s)' in proc.stdout


def test_smoke_results_never_carry_references(tmp_path):
    proc = run_probe(tmp_path, 'ReferenceProbe:\n  $index: [num_threads]\n'
                               '  1:\n    bw: [99, -0.1, null, "MB/s"]\n'
                               '  2:\n    bw: [99, -0.1, null, "MB/s"]\n', 'smoke')
    assert proc.returncode == 0, proc.stdout


def test_wrong_unit_fails_the_test_before_it_runs(tmp_path):
    proc = run_probe(tmp_path, 'ReferenceProbe:\n  $index: [num_threads]\n'
                               '  1:\n    bw: [10, -0.1, null, "GB/s"]\n'
                               '  2:\n    bw: [20, -0.1, null, "GB/s"]\n', 'nightly')
    assert proc.returncode != 0
    assert "unit 'GB/s' does not match the check, which reports 'MB/s'" in proc.stdout
    assert 'local.yaml' in proc.stdout


# -- one judge: Reference, $xfail, declared items, direction ------------------

XFAIL_REFS = '''
ReferenceProbe:
  $index: [num_threads]
  1:
    bw: ['$xfail', 'known: the slow path', [10, -0.1, null, "MB/s"]]
  2:
    bw: ['$xfail', 'known: the slow path', [30, -0.1, null, "MB/s"]]
'''


def test_xfail_is_read_in_one_place(tmp_path):
    path = write(tmp_path, XFAIL_REFS)
    assert entries.validate_file(path) == 2
    ref = entries.check_entry('f', ['$xfail', 'why', [10, -0.1, None, 'MB/s']])
    assert ref == entries.Reference(10, -0.1, None, 'MB/s', 'why')
    assert entries.entry_reference([10, -0.1, None, 'MB/s']).xfail is None
    assert str(ref) == 'xfail (why) 10 MB/s [-10.0%/+inf]'
    with pytest.raises(ClusterproofError, match=r"\$xfail entries are"):
        entries.check_entry('f', ['$xfail', [10, -0.1, None, 'MB/s']])


def test_xfail_and_xpass_verdicts():
    assert references.judge(8, 10, -0.1, None, False, xfail='known').verdict == 'xfail'
    assert references.judge(10, 10, -0.1, None, False, xfail='known').verdict == 'xpass'
    assert references.judge(12, 10, None, 0.1, True, xfail='known').verdict == 'xfail'
    assert references.judge(8, 10, -0.1, None, False).verdict == 'REGRESSION'
    assert 'xpass' in references.FAILING and 'xfail' not in references.FAILING


def test_one_verdict_vocabulary():
    """Every judge's verdicts are members of one enum, each with one
    spelling; spellings written before it read as the verdict they meant;
    the report's counts are named in one place."""
    from clusterproof.analysis import morning
    Verdict = references.Verdict
    assert all(Verdict.read(v.value) is v for v in Verdict)
    assert [Verdict.read(old) for old in ('ok', 'failed', 'not-judged')] == \
        [Verdict.PASS, Verdict.FAILED, Verdict.NOT_JUDGED]
    with pytest.raises(ValueError, match=r"'okay' is not a verdict \(known: pass, REGRESSION"):
        Verdict.read('okay')
    # screening, contract and comparison states: which fail
    failing = {v for v in Verdict if v.failing}
    assert {Verdict.SLOW, Verdict.FAIL, Verdict.NOT_MEASURED, Verdict.INVALID,
            Verdict.FAILED, Verdict.REGRESSION} <= failing
    assert not failing & {Verdict.PASS, Verdict.REPORTED, Verdict.MISSING, Verdict.SKIPPED,
                          Verdict.NO_REF, Verdict.NOT_JUDGED, Verdict.XFAIL}
    # the report's counts: the buckets of references.judge, and the changes
    assert set(morning.BUCKETS) - {morning.CHANGE} <= set(references.Bucket)
    assert Verdict.NOT_JUDGED.bucket == Verdict.NO_REF.bucket == Verdict.NOT_JUDGED.value


def test_xfail_verdicts_agree_with_reframe(tmp_path):
    """A real run with $xfail references: ReFrame's verdict of each figure
    (recorded in its perfvalues) is the judge's verdict of the record."""
    from clusterproof.analysis import compare
    from clusterproof.store.sessions import load_sessions, records
    proc = run_probe(tmp_path, XFAIL_REFS, 'nightly')
    assert proc.returncode != 0                      # an xpass fails, as in ReFrame
    assert '1 expected failure(s)' in proc.stdout, proc.stdout
    recs = [r for r in records(load_sessions(tmp_path / 'results' / 'results.db'))
            if r.figure]
    assert {r.outcome.perf_result for r in recs} == {'xfail', 'xpass'}
    refs = {'local': entries.parse(XFAIL_REFS, 'refs'), 'local.emulated': {}}
    rows = compare.against_references(recs, refs)
    assert [row.verdict for row in rows] == [r.outcome.perf_result for r in recs]
    assert all(r.outcome.sanity_ok for r in recs)    # both ran and measured
    assert all('ref-changed' not in row.flags for row in rows)
    assert [row.regression for row in rows] == [r.outcome.perf_result == 'xpass' for r in recs]


def test_above_the_upper_bound_of_a_throughput_fails_as_in_reframe(tmp_path):
    """A throughput above an upper bound written by hand: ReFrame fails the
    figure, and the judge agrees (OUT-OF-BOUNDS, failing, with the reason);
    the other figure passes in both."""
    from clusterproof.analysis import compare
    from clusterproof.store.sessions import load_sessions, records
    text = ('ReferenceProbe:\n  $index: [num_threads]\n'
            '  1:\n    bw: [5, -0.1, 0.2, "MB/s"]\n'       # measures 10: above 6
            '  2:\n    bw: [20, -0.1, 0.1, "MB/s"]\n')     # measures 20
    proc = run_probe(tmp_path, text, 'nightly')
    assert proc.returncode != 0 and '1 failure(s)' in proc.stdout, proc.stdout
    recs = sorted((r for r in records(load_sessions(tmp_path / 'results' / 'results.db'))
                   if r.figure), key=lambda r: r.value)
    assert [(r.value, r.outcome.perf_result) for r in recs] == [(10, 'fail'), (20, 'pass')]
    rows = compare.against_references(recs, {'local': entries.parse(text, 'refs')})
    assert [row.verdict for row in rows] == [references.Verdict.OUT_OF_BOUNDS, 'pass']
    assert [row.regression for row in rows] == [True, False]
    assert rows[0].reason == 'above the upper bound 6, on the better side; ReFrame fails it too'


def test_direction_is_the_one_the_check_declared(tmp_path):
    """Each figure's direction is declared where the check defines it
    (reframe_io.figures.performance_figure), recorded with the test case by ReFrame, and
    what the judge uses; the unit no longer decides it."""
    import dataclasses
    from clusterproof.store.sessions import load_sessions, records
    proc = run_probe(tmp_path, 'ReferenceProbe: {}\n', 'nightly')
    assert proc.returncode == 0, proc.stdout
    recs = [r for r in records(load_sessions(tmp_path / 'results' / 'results.db')) if r.figure]
    assert [r.declared_lower_is_better for r in recs] == [False] * 2
    assert not direction.record_lower_is_better(recs[0])
    # The declaration wins over the unit; a figure it does not name is an error.
    as_time = dataclasses.replace(recs[0], unit='s')
    assert not direction.record_lower_is_better(as_time) and not as_time.lower_is_better
    with pytest.raises(ClusterproofError, match=r"figure 'lat' has no declared direction "
                                                r"\(its test case declares bw\)"):
        direction.lower_is_better('us', 'lat', {'bw': False})


def test_a_figure_without_a_direction_fails_its_test_case(tmp_path):
    check = CHECK.replace("from clusterproof.reframe_io.figures import performance_figure\n",
                          "from reframe.core.builtins import performance_function\n")
    check = check.replace("@performance_figure('MB/s', lower_is_better=False)",
                          "@performance_function('MB/s')")
    proc = run_probe(tmp_path, 'ReferenceProbe: {}\n', 'nightly', check)
    assert proc.returncode != 0 and 'Ran 2/2 test case(s)' in proc.stdout, proc.stdout
    assert ('ReferenceProbe: figure(s) bw declare no direction: define them with '
            'clusterproof.reframe_io.figures.performance_figure(unit, lower_is_better=...)') \
        in proc.stdout


def test_declared_items_of_a_system():
    refs = entries.parse('''
A:
  $index: [$partition, threads]
  "sys:p1":
    1: {bw: [1, -0.1, null, MB/s]}
    2: {bw: [2, -0.1, null, MB/s]}
  "sys:p[2-3]":
    1: {bw: [3, -0.1, null, MB/s]}
  "other:p1":
    1: {bw: [4, -0.1, null, MB/s]}
B:
  "sys:p1": {t: [1, null, 0.1, s]}
  "*": {t: [2, null, 0.1, s]}
C:
  $index: [threads]
  8: {iops: [5, -0.1, null, IOPS], lat: ['$xfail', 'slow', [1, null, 0.2, us]]}
''', 'refs')
    items = lookup.declared(refs, 'sys', ['p1', 'p2'])
    labels = sorted(d.label() for d in items)
    assert labels == ['A threads=1 @sys:p1 bw', 'A threads=1 @sys:p[2-3] bw',
                      'A threads=2 @sys:p1 bw', 'B @* t', 'B @sys:p1 t',
                      'C threads=8 iops', 'C threads=8 lat']
    lat = next(d for d in items if d.figure == 'lat')
    assert lat.reference.xfail == 'slow' and lat.where == ('C', (8,))
    # Only p1: B's '*' entry applies to no partition.
    assert 'B @* t' not in {d.label() for d in lookup.declared(refs, 'sys', ['p1'])}
    # Another system: only the '*' entry and entries not indexed on where.
    assert sorted(d.label() for d in lookup.declared(refs, 'nowhere', ['p1'])) == [
        'B @* t', 'C threads=8 iops', 'C threads=8 lat']


def test_ms_per_op_is_lower_is_better_everywhere(tmp_path):
    """ms/op (mdtest-style latencies) is a time: every place that needs the
    direction says so, because every place asks judge.lower_is_better."""
    import dataclasses
    from clusterproof.analysis import bless, compare
    from clusterproof.store import history
    from clusterproof.store.sessions import load_sessions, records
    from results_helpers import recorded_results
    assert direction.lower_is_better('ms/op')
    assert references.judge(1.2, 1.0, None, 0.1, direction.lower_is_better('ms/op')).verdict \
        == 'REGRESSION'
    rec = next(r for r in records(load_sessions(recorded_results(tmp_path) / 'results.db'))
               if r.figure == 'copy_bw')
    ms = dataclasses.replace(rec, figure='create_time', unit='ms/op')
    assert ms.lower_is_better
    assert history.History('local', 'default', ms.test, ms.figure, 'ms/op', ()).lower_is_better
    new = bless.derive([ms])[0]
    assert new.lower is None and new.upper > 0               # an upper bound, as for times
    refs = {'local': {ms.check: {'$index': ['$partition', 'num_threads'],
                                 'local:default': {1: {'create_time':
                                                       [ms.value / 2, None, 0.1, 'ms/op']}},
                                 }}}
    ms = dataclasses.replace(ms, case=dict(ms.case, num_threads=1))
    assert [r.verdict for r in compare.against_references([ms], refs)] == ['REGRESSION']
