"""Bad input, end to end through ``reframe`` and ``clusterproof`` as a user
types them: each is refused before anything is written, with one message
naming file, key and value; shell metacharacters are never executed.

Every case is one test recording ``reliability=bad_input`` for the counts
printed at the end of the test run (tests/conftest.py). ReFrame runs use
system ``local`` (no cluster needed) and a scratch directory under the
test's tmp directory; "nothing written" means no test directory appeared
under it and no payload file was created.
"""

import json
import os
import subprocess
import textwrap
import uuid
from pathlib import Path

import pytest

from clusterproof import ClusterproofError
from clusterproof.methods import scratch
from conftest import REPO, VENV_BIN, WAIT_S, run_reframe

CHECKS = REPO / 'reframe_checks'
FAULTS = Path(__file__).resolve().parents[1] / 'checks' / 'reliability' / 'faults.py'


@pytest.fixture(autouse=True)
def _bad_input(record_property):
    record_property('reliability', 'bad_input')


def _clusterproof(*args, env=None):
    return subprocess.run([str(VENV_BIN / 'clusterproof'), *args], cwd=REPO, capture_output=True,
                          text=True, env=dict(os.environ, **(env or {})), timeout=WAIT_S)


def _written(scratch_dir):
    """What a run left under the scratch directory (test directories)."""
    if not scratch_dir.exists():
        return []
    return [p.name for p in scratch_dir.iterdir() if not p.name.startswith('.')]


def _fail_reasons(results):
    reports = sorted((Path(results) / 'reports').glob('run-report-*.json'))
    if not reports:
        return []
    return [(tc['result'], tc['fail_reason'] or '')
            for run in json.loads(reports[-1].read_text())['runs'] for tc in run['testcases']]


def _refused_by_reframe(proc, results, *words):
    """ReFrame exits non-zero and the run's failure names every word."""
    assert proc.returncode != 0, proc.stdout[-2000:]
    reasons = _fail_reasons(results)
    text = '\n'.join(r for _, r in reasons) if reasons else proc.stdout + proc.stderr
    assert all(res != 'pass' for res, _ in reasons), reasons
    for w in words:
        assert w in text, f'{w!r} not in:\n{text[-2000:]}'
    return text


# ---------------------------------------------------------------- references

def _refs(tmp_path, body):
    d = tmp_path / 'refs'
    d.mkdir(exist_ok=True)
    (d / 'local.yaml').write_text(textwrap.dedent(body))
    return d


def test_malformed_references_yaml(tmp_path):
    refs = _refs(tmp_path, """\
        ReliabilityQuick:
          $index: [$partition]
          'local:default':
            tasks: [1, -0.1, null, count
        """)
    proc = _clusterproof('validate', env={'CLUSTERPROOF_REFERENCES': str(refs)})
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert f'{refs}/local.yaml:' in proc.stderr and 'not valid YAML' in proc.stderr


def test_reference_with_a_wrong_unit_is_refused_before_the_run(tmp_path):
    refs = _refs(tmp_path, """\
        ReliabilityQuick:
          $index: [$partition]
          'local:default':
            tasks: [1, -0.1, null, MB/s]
        """)
    results = tmp_path / 'results'
    proc = run_reframe(['-c', str(FAULTS), '-n', 'ReliabilityQuick', '-r', '--system', 'local'],
                       results, mode='nightly', extra_env={'CLUSTERPROOF_REFERENCES': str(refs)})
    text = _refused_by_reframe(proc, results, 'local.yaml', 'tasks', "'MB/s'", "'count'")
    assert 'setup' in proc.stdout      # refused in the setup stage: the job never ran
    assert not list((results / 'output').rglob('rfm_job.out')), text


@pytest.mark.parametrize('entry,words', [
    ('[1, 0.5, null, count]', ['lower tolerance 0.5', 'impossible']),
    ('[1, -0.1, -0.2, count]', ['upper tolerance -0.2', 'impossible']),
    ('[1, -0.1, null, furlongs]', ["unknown unit 'furlongs'"]),
], ids=['lower-above-zero', 'negative-upper', 'unknown-unit'])
def test_impossible_tolerance_or_unit(tmp_path, entry, words):
    refs = _refs(tmp_path, f"""\
        ReliabilityQuick:
          $index: [$partition]
          'local:default':
            tasks: {entry}
        """)
    proc = _clusterproof('validate', env={'CLUSTERPROOF_REFERENCES': str(refs)})
    assert proc.returncode == 2, proc.stdout
    assert 'local.yaml' in proc.stderr and 'ReliabilityQuick.local:default.tasks' in proc.stderr
    for w in words:
        assert w in proc.stderr, proc.stderr


# ---------------------------------------------------- systems and partitions

def test_unknown_system_reframe(tmp_path):
    proc = run_reframe(['-c', str(FAULTS), '-r', '--system', 'nosuch'], tmp_path / 'results',
                       expect_cases=0)     # refused before any test case
    assert proc.returncode != 0
    assert "'nosuch'" in proc.stdout + proc.stderr
    assert not (tmp_path / 'results' / 'stage').exists()


def test_unknown_system_clusterproof_validate():
    proc = _clusterproof('validate', '--system', 'nosuch')
    assert proc.returncode == 2
    assert "unknown system 'nosuch'" in proc.stderr and 'local' in proc.stderr


def test_unknown_partition(tmp_path):
    proc = run_reframe(['-c', str(FAULTS), '-r', '--system', 'local:nosuch'], tmp_path / 'results',
                       expect_cases=0)     # refused before any test case
    assert proc.returncode != 0
    assert 'nosuch' in proc.stdout + proc.stderr
    assert not (tmp_path / 'results' / 'stage').exists()
    proc = _clusterproof('sizing', '--system', 'local', '--partition', 'nosuch', '--threads', '1')
    assert proc.returncode == 2 and "local:nosuch" in proc.stderr


def _site_config(tmp_path, edit):
    """A site configuration file that loads the project's and applies ``edit``
    (Python statements on ``local``, the local system entry)."""
    path = tmp_path / 'site.py'
    path.write_text(textwrap.dedent(f"""\
        import importlib.util
        _spec = importlib.util.spec_from_file_location('cp_settings', {str(REPO / 'site_config'
                                                                            / 'settings.py')!r})
        _mod = importlib.util.module_from_spec(_spec)
        _spec.loader.exec_module(_mod)
        site_configuration = _mod.site_configuration
        local = next(s for s in site_configuration['systems'] if s['name'] == 'local')
        storage = local['partitions'][0]['extras']['storage']
        """) + textwrap.dedent(edit))
    return path


def test_site_configuration_missing_the_scratch_directory(tmp_path):
    site = _site_config(tmp_path, "del storage['scratch']\n")
    results = tmp_path / 'results'
    proc = run_reframe(['-c', str(CHECKS / 'pmem.py'), '-n', 'StorageFioBaseline', '-r',
                        '--system', 'local'], results,
                       config=site)
    # refused: the check does not run (skip) and says which key of which file to declare
    cases = [tc for run in json.loads(sorted((results / 'reports').glob('*.json'))[-1].read_text())
             ['runs'] for tc in run['testcases']]
    assert cases and all(tc['result'] in ('skip', 'fail') for tc in cases), proc.stdout[-2000:]
    assert "extras['storage'] has no key 'scratch'" in proc.stdout, proc.stdout[-2000:]
    assert 'site_config/systems/local.py' in proc.stdout


# ------------------------------------------------------ thread counts, sizes

@pytest.mark.parametrize('threads', ['2048', '0', '-4'])
def test_iozone_thread_count_it_cannot_take(tmp_path, threads):
    results, scratch_dir = tmp_path / 'results', tmp_path / 'scratch'
    proc = run_reframe(['-c', str(CHECKS / 'iozone.py'), '-n', 'IOzoneSequential', '-r',
                        '--system', 'local', '-P', f'IOzoneSequential.threads={threads}'],
                       results, extra_env={'CLUSTERPROOF_SCRATCH': str(scratch_dir)},
                       expect_cases=0)      # refused when ReFrame makes the test cases
    text = _refused_by_reframe(proc, results, threads)
    assert 'thread' in text
    assert _written(scratch_dir) == []


@pytest.mark.parametrize('threads', ['0', '-1'])
def test_placement_thread_count(threads):
    proc = _clusterproof('placement', '--nodes', 'n[1-4]', '--threads', threads)
    assert proc.returncode == 2 and f'--threads: {threads}: want a thread count' in proc.stderr, \
        proc.stderr


@pytest.mark.parametrize('total,words', [
    ('0', ["'0'", 'greater than zero']),
    ('-1g', ["'-1g'"]),
    pytest.param('1000t', ['1000.0 TiB', 'free'], marks=pytest.mark.slow),
], ids=['zero', 'negative', 'larger-than-free-space'])
def test_sizes_zero_negative_or_larger_than_free_space(tmp_path, total, words):
    results, scratch_dir = tmp_path / 'results', tmp_path / 'scratch'
    proc = run_reframe(['-c', str(CHECKS / 'iozone.py'), '-n', 'IOzoneSequential%threads=1', '-r',
                        '--system', 'local', '-S', f'IOzoneSequential.total={total}'],
                       results, extra_env={'CLUSTERPROOF_SCRATCH': str(scratch_dir)})
    _refused_by_reframe(proc, results, *words)
    assert _written(scratch_dir) == []


# ------------------------------------------------------------ target paths

@pytest.mark.parametrize('where', ['/', 'home'])
def test_scratch_is_root_or_a_home_directory(tmp_path, where):
    target = '/' if where == '/' else os.path.expanduser('~')
    results = tmp_path / 'results'
    before = set(os.listdir(target))
    proc = run_reframe(['-c', str(CHECKS / 'pmem.py'), '-n', 'StorageFioBaseline', '-r',
                        '--system', 'local'], results,
                       extra_env={'CLUSTERPROOF_SCRATCH': target})
    reasons = _fail_reasons(results)
    text = '\n'.join(r for _, r in reasons) + proc.stdout
    assert all(res != 'pass' for res, _ in reasons)
    assert 'system directory' in text or 'home directory' in text, text[-2000:]
    assert set(os.listdir(target)) == before


def test_target_outside_scratch_and_non_empty_foreign_directory(tmp_path):
    root = tmp_path / 'scratch'
    root.mkdir()
    outside = tmp_path / 'elsewhere'
    with pytest.raises(ClusterproofError, match='not under the scratch directory'):
        scratch.create_test_dir(root, outside)
    assert not outside.exists()
    foreign = root / 'users-data'
    foreign.mkdir()
    (foreign / 'thesis.tex').write_text('keep me')
    with pytest.raises(ClusterproofError, match='not empty and was not created by clusterproof'):
        scratch.create_test_dir(root, foreign)
    with pytest.raises(ClusterproofError, match='no .clusterproof-created marker'):
        scratch.remove_test_dir(root, foreign)
    assert (foreign / 'thesis.tex').read_text() == 'keep me'


# ------------------------------------------------- shell metacharacters

@pytest.fixture
def payload(tmp_path):
    """A command that would create a file if anything ran it."""
    d = tmp_path / f'pwn-{uuid.uuid4().hex[:6]}'
    d.mkdir()
    yield f'$(touch {d}/pwned)', d / 'pwned'


def test_metacharacters_in_the_scratch_directory(tmp_path, payload):
    cmd, pwned = payload
    results = tmp_path / 'results'
    proc = run_reframe(['-c', str(CHECKS / 'iozone.py'), '-n', 'IOzoneSequential%threads=1', '-r',
                        '--system', 'local'], results,
                       extra_env={'CLUSTERPROOF_SCRATCH': f'{tmp_path}/s{cmd}'})
    _refused_by_reframe(proc, results, 'not allowed')
    assert not pwned.exists()


def test_metacharacters_in_the_site_configuration(tmp_path, payload):
    cmd, pwned = payload
    site = _site_config(tmp_path, f"storage['scratch'] = {str(tmp_path) + '/s;' + cmd!r}\n")
    results = tmp_path / 'results'
    proc = run_reframe(['-c', str(CHECKS / 'pmem.py'), '-n', 'StorageFioBaseline', '-r',
                        '--system', 'local'], results,
                       config=site)
    assert proc.returncode != 0 or all(r != 'pass' for r, _ in _fail_reasons(results))
    assert 'not allowed' in proc.stdout + '\n'.join(r for _, r in _fail_reasons(results))
    assert not pwned.exists()


def test_metacharacters_in_a_command_line_option(tmp_path, payload):
    cmd, pwned = payload
    results, scratch_dir = tmp_path / 'results', tmp_path / 'scratch'
    proc = run_reframe(['-c', str(CHECKS / 'iozone.py'), '-n', 'IOzoneSequential%threads=1', '-r',
                        '--system', 'local', '-S', f'IOzoneSequential.master_address={cmd}'],
                       results, extra_env={'CLUSTERPROOF_SCRATCH': str(scratch_dir)})
    _refused_by_reframe(proc, results, 'master address', cmd)
    assert not pwned.exists()
    assert _written(scratch_dir) == []


@pytest.mark.parametrize('args', [
    ['--nodes', 'n1;{cmd}', '--threads', '2'],
    ['--nodes', 'n[1-2]', '--threads', '2', '--format', 'threadlist', '--workdir', '/x/{cmd}',
     '--iozone', '/usr/bin/iozone'],
], ids=['nodes', 'workdir'])
def test_metacharacters_in_clusterproof_placement(payload, args):
    cmd, pwned = payload
    proc = _clusterproof('placement', *[a.format(cmd=cmd) for a in args])
    assert proc.returncode == 2, proc.stdout
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not pwned.exists()
