"""References files: parsing, and refusal of bad input with a precise message."""

import subprocess

import pytest

from clusterproof import ClusterproofError
from clusterproof.references import judge as references
from clusterproof.paths import REFERENCES_DIR
from conftest import REPO, VENV_BIN, WAIT_S, reframe_env


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
    assert references.validate_file(path) == 3


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
        references.validate_file(path)
    assert str(path) in str(err.value)
    assert message in str(err.value)


def test_unit_must_match_the_check(tmp_path):
    with pytest.raises(ClusterproofError, match="unit 'MB/s' does not match the check, "
                                                "which reports 'GB/s'"):
        references.check_entry('f.yaml: A.x', [1, -0.1, None, 'MB/s'], 'GB/s')


def test_direction_by_unit():
    assert references.lower_is_better('us')
    assert not references.lower_is_better('MB/s')


def test_shipped_reference_files_are_valid():
    for path in REFERENCES_DIR.glob('*.yaml'):
        references.validate_file(path)


CHECK = '''
import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import parameter, performance_function, run_before, sanity_function
from clusterproof.checks.base import ClusterproofCheck

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

    @performance_function('MB/s')
    def bw(self):
        return sn.extractsingle(r'value (\\d+)', self.stdout, 1, float)
'''


def run_probe(tmp_path, refs, mode):
    """Run a real check through ReFrame with a references file for ``local``.

    The references directory of the repository is used as ReFrame sees it,
    so the test writes ``local.yaml`` there and always removes it."""
    check = tmp_path / 'probe.py'
    check.write_text(CHECK)
    ref = REFERENCES_DIR / 'local.yaml'
    assert not ref.exists(), 'local has no references in the repository'
    ref.write_text(refs)
    try:
        return subprocess.run([str(VENV_BIN / 'reframe'), '-c', str(check), '-r',
                               '--system', 'local'],
                              cwd=REPO, env=reframe_env(tmp_path / 'results', mode),
                              capture_output=True, text=True, timeout=WAIT_S)
    finally:
        ref.unlink()


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
