"""Binary identity and node fingerprints, recorded for real by ReFrame runs
on the system ``local``, and the attribution that names what changed
between sessions: the binary replaced in place (same path, same
``--version``), an environment setting changed. A secret in the
environment is never recorded."""

import json
import os
import shutil
import types

import pytest

from conftest import run_reframe
from results_helpers import SELFTEST_CHECKS, clusterproof

SECRET = 'do-not-record-7f3a'


def _session(results, env, **extra):
    """One real session of DevZeroCopy. Its copy of 16 MiB takes under a
    millisecond: one time slice lost to another process on a loaded machine
    divides that copy's figure by ten, as much as the swapped ``dd`` does.
    The figure is the best of the check's default 3 copies (a single copy
    once made the detector miss the injected drop under heavy load)."""
    proc = run_reframe(['-c', str(SELFTEST_CHECKS), '-r', '--system', 'local',
                        '-n', 'DevZeroCopy%num_threads=1', '-S', 'copy_mib=16'],
                       results, mode='nightly', extra_env={**env, **extra})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert 'Ran 1/1 test case(s)' in proc.stdout, proc.stdout[-3000:]


def _swap_in_place(dd):
    """Replace ``dd`` (same path, same --version) by one 512-byte block at a time."""
    tmp = dd.with_suffix('.new')
    tmp.write_text(f'#!/bin/sh\nexec {shutil.which("dd")} "$@" bs=512\n')
    tmp.chmod(0o755)
    os.replace(tmp, dd)


@pytest.fixture
def dd_env(tmp_path):
    """PATH with a copy of dd of the test's own, no Spack view, a secret."""
    bindir, view = tmp_path / 'bin', tmp_path / 'view'
    bindir.mkdir()
    view.mkdir()
    shutil.copy(shutil.which('dd'), bindir / 'dd')
    env = {'PATH': f'{bindir}:{os.environ["PATH"]}', 'CLUSTERPROOF_SPACK_VIEW': str(view),
           'CLUSTERPROOF_REFERENCES': str(tmp_path / 'refs'), 'SECRET_TOKEN': SECRET,
           'OMP_NUM_THREADS': '1'}
    return bindir / 'dd', env


def _points(results):
    from clusterproof.store import sources
    hists = sources.load([results / 'results.db'])
    bw = [h for h in hists if h.figure == 'copy_bw']
    assert len(bw) == 1, [h.key for h in hists]
    return bw[0].points


def _everything_recorded(results):
    """Every byte kept under ``results`` (database, perflogs, reports,
    fingerprints, the jobs' output) but the stage directories."""
    return '\n'.join(p.read_bytes().decode(errors='replace') for p in results.rglob('*')
                     if p.is_file() and 'stage' not in p.relative_to(results).parts)


@pytest.mark.slow
def test_fingerprint_names_a_binary_swapped_in_place_and_an_env_change(tmp_path, dd_env,
                                                                      monkeypatch):
    dd, env = dd_env
    results = tmp_path / 'results'
    _session(results, env)
    _swap_in_place(dd)
    _session(results, env, OMP_NUM_THREADS='4')
    before, after = _points(results)

    # recorded: one hash per node, its record stored once, the binary's sha256
    for p in (before, after):
        fp = p.provenance['cp_fingerprint']
        node, _, h = fp.partition('=')
        assert node and len(h) == 12, fp
        record = json.loads((results / 'fingerprints' / f'{h}.json').read_text())
        assert record['kernel'] == os.uname().release
        assert record['mem_gib'].isdigit()
        assert 'binary_sha256' not in record
        assert len(p.provenance['cp_binary_sha256']) == 64
    assert before.provenance['binary_path'] == after.provenance['binary_path'] == str(dd)
    assert before.provenance['binary_version'] == after.provenance['binary_version']
    assert len(list((results / 'fingerprints').glob('*.json'))) == 2

    from clusterproof.analysis.attribution import attribution
    monkeypatch.setenv('CLUSTERPROOF_RESULTS', str(results))     # where the records are
    lines = attribution([before, after], types.SimpleNamespace(at=1, n_before=1, n_after=1))
    sha_old = before.provenance['cp_binary_sha256']
    sha_new = after.provenance['cp_binary_sha256']
    assert f'dd sha256 {sha_old[:12]}... -> {sha_new[:12]}... (same path)' in lines, lines
    node = before.provenance['cp_fingerprint'].partition('=')[0]
    assert f'OMP_NUM_THREADS 1 -> 4 on {node}' in lines, lines

    assert 'SECRET_TOKEN' not in _everything_recorded(results)
    assert SECRET not in _everything_recorded(results)


@pytest.mark.slow
def test_changes_names_the_causes_injected_at_a_known_session(tmp_path, dd_env):
    """Twelve real sessions; at the ninth, dd is replaced in place by one
    copying 512 bytes per system call and OMP_NUM_THREADS changes:
    ``clusterproof changes`` finds the drop there and names both."""
    dd, env = dd_env
    results = tmp_path / 'results'
    for _ in range(8):
        _session(results, env)
    _swap_in_place(dd)
    for _ in range(4):
        _session(results, env, OMP_NUM_THREADS='4')
    out = clusterproof(['changes', '--format', 'json', '--system', 'local',
                        '--max-detectable', '100000'], results, tmp_path / 'refs')
    assert out.returncode == 0, out.stdout + out.stderr
    points = _points(results)
    # dd on this shared machine is noisy: other changes may be found before
    # the ninth session; the one at the ninth must be found and named.
    found = [c for c in json.loads(out.stdout)
             if c['figure'] == 'copy_bw' and c['session'] == points[8].session]
    assert len(found) == 1, out.stdout
    bw = found[0]
    assert bw['direction'] == 'worse' and bw['sessions_after'] == 4, bw
    node = points[8].provenance['cp_fingerprint'].partition('=')[0]
    sha = [points[i].provenance['cp_binary_sha256'][:12] for i in (0, 8)]
    assert f'dd sha256 {sha[0]}... -> {sha[1]}... (same path)' in bw['attribution'], bw
    assert f'OMP_NUM_THREADS 1 -> 4 on {node}' in bw['attribution'], bw
    print('\n'.join(bw['attribution']))


def test_parse_the_probe_output_of_two_nodes():
    """Output recorded on two nodes of the local Slurm cluster (see
    tests/data/fingerprint/README.md): one record each, alike, one hash."""
    from clusterproof.site import fingerprint
    from conftest import REPO
    path = REPO / 'tests' / 'data' / 'fingerprint' / 'emu-2-nodes.out'
    nodes = fingerprint.parse(path.read_text(), source=str(path))
    assert sorted(nodes) == ['n1', 'n2']
    assert nodes['n1']['slurm'] == 'slurm-wlm 22.05.8'
    assert nodes['n1']['mem_gib'].isdigit() and 'mem_kib' not in nodes['n1']
    hashes = {n: fingerprint.record_hash(r) for n, r in nodes.items()}
    text = fingerprint.by_nodes(hashes)
    assert text == f'n[1-2]={hashes["n1"]}'
    assert fingerprint.per_node(text) == hashes
    sha, _ = fingerprint.binary_identity(nodes)
    assert len(sha) == 64
    with pytest.raises(Exception, match=r'emu-2-nodes.out:1: .*not a fingerprint line'):
        fingerprint.parse('kernel=6.1\n', source=str(path))


def test_parse_the_labelled_output_of_two_nodes_whose_lines_interleave():
    """``srun --label`` output recorded on two nodes of the local Slurm
    cluster, the nodes' lines interleaved: each node gets its own lines."""
    from clusterproof.site import fingerprint
    from conftest import REPO
    path = REPO / 'tests' / 'data' / 'fingerprint' / 'emu-2-nodes-labelled.out'
    text = path.read_text()
    assert text.index('1: @node n2') < text.index('0: @node n1') < text.index('0: kernel=')
    nodes = fingerprint.parse(text, source=str(path))
    assert sorted(nodes) == ['n1', 'n2']
    assert nodes['n1'] == nodes['n2']
    assert nodes['n1']['cpu_quota'] == 'max' and nodes['n1']['slurm'] == 'slurm-wlm 22.05.8'
    assert len(nodes['n1']['binary_sha256']) == 64
    bad = text.replace('0: kernel=', 'kernel=', 1)
    n = bad[:bad.index('\nkernel=')].count('\n') + 2
    with pytest.raises(Exception, match=rf'labelled.out:{n}: .kernel=.* has no task label'):
        fingerprint.parse(bad, source=str(path))


def test_a_field_the_older_probe_did_not_read_is_not_a_change(tmp_path):
    """Records of the recorded probe output, before it read the CPU quota
    and after: the new field is not named; a changed field and an
    environment variable set anew are."""
    from clusterproof.site import fingerprint
    from conftest import REPO
    path = REPO / 'tests' / 'data' / 'fingerprint' / 'emu-2-nodes.out'
    old = fingerprint.parse(path.read_text(), source=str(path))
    assert 'cpu_quota' not in old['n1']
    new = {n: dict(r, cpu_quota='max') for n, r in old.items()}
    new['n2'].update({'thp': 'always madvise [never]', 'env.OMP_NUM_THREADS': '8'})
    before = fingerprint.by_nodes(fingerprint.store(old, tmp_path))
    after = fingerprint.by_nodes(fingerprint.store(new, tmp_path))
    assert fingerprint.changes([before], [after], tmp_path) == [
        'OMP_NUM_THREADS (unset) -> 8 on n2',
        'thp always [madvise] never -> always madvise [never] on n2']
