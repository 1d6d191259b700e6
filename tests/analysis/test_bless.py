"""clusterproof bless on sessions recorded from real runs
(tests/data/results/README.md), written into a references directory of the
test's own."""

import dataclasses

import pytest
import yaml

from clusterproof import ClusterproofError
from clusterproof.analysis import bless
from clusterproof.store.sessions import load_sessions, records
from results_helpers import clusterproof, recorded_results


@pytest.fixture
def recorded(tmp_path):
    results = recorded_results(tmp_path)
    refs = tmp_path / 'refs'
    refs.mkdir()
    return results, refs, load_sessions(results / 'results.db')


def test_reference_is_median_with_bounds_by_direction(recorded):
    _, _, sessions = recorded
    recs = records(sessions[:3])
    new = {(n.path, n.figure): n for n in bless.derive(recs, nsigma=3, min_tolerance=0.02,
                                                        max_tolerance=10)}
    bw = new[(('local:default', 1), 'copy_bw')]
    values = sorted(r.value for r in recs
                    if r.figure == 'copy_bw' and r.params['num_threads'] == '1')
    assert bw.ref == values[1] and bw.n == 3
    assert bw.upper is None and -1 <= bw.lower <= -0.02          # throughput: lower bound only
    t = new[(('local:default', 1), 'copy_time')]
    assert t.lower is None and t.upper >= 0.02                   # time: upper bound only
    p5 = bless.derive(recs, pct=5)[0]
    assert p5.ref < sorted(p5.values)[1]


def test_min_tolerance_on_a_single_session(recorded):
    _, _, sessions = recorded
    new = bless.derive(records(sessions[:1]))
    assert {n.lower or -n.upper for n in new} == {-0.02}


def test_refuses_smoke_and_failed_and_mixed_versions(recorded):
    results, refs, sessions = recorded
    smoke = sessions[-1].uuid
    out = clusterproof(['bless', '--session', smoke], results, refs)
    assert out.returncode == 2
    assert (f'session {smoke[:8]} test \'DevZeroCopy %num_threads=1\' figure copy_bw: smoke'
            in out.stdout)
    assert not (refs / 'local.yaml').exists()
    # Failed sanity and a second binary version: copies of real records with
    # the result / version changed (no such runs are recorded).
    recs = records(sessions[:2])
    failed = dataclasses.replace(recs[0], outcome=dataclasses.replace(
        recs[0].outcome, result='fail', fail_phase='sanity'))
    other = [dataclasses.replace(r, binary_version='9.4')
             for r in recs if r.session == sessions[1].uuid]
    why = [str(r) for r in bless.refusals([failed] + recs[1:])]
    assert any('failed in sanity' in w and sessions[0].uuid[:8] in w for w in why)
    why = [str(r) for r in bless.refusals(
        [r for r in recs if r.session == sessions[0].uuid] + other)]
    assert any('mixed binary versions' in w and '9.4' in w for w in why)
    emulated = [dataclasses.replace(r, emulated=True) for r in recs]
    assert any('emulated' in str(r) for r in bless.refusals(emulated))


def test_allow_smoke_says_so(recorded):
    results, refs, sessions = recorded
    out = clusterproof(['bless', '--session', sessions[-1].uuid, '--allow-smoke', '--write',
                        '--reason', 'demo'], results, refs)
    assert out.returncode == 0, out.stdout + out.stderr
    assert 'FROM SMOKE SIZES' in (refs / 'local.yaml').read_text()
    assert 'smoke: true' in (refs / 'local.history').read_text()


def test_allow_emulated_takes_emulated_results_only(recorded, tmp_path):
    results, refs, sessions = recorded
    # The recorded sessions ran on real hardware: --allow-emulated refuses them.
    out = clusterproof(['bless', '--session', sessions[0].uuid, '--allow-emulated', '--write',
                        '--reason', 'demo'], results, refs)
    assert out.returncode == 2 and 'not emulated: --allow-emulated' in out.stdout
    assert list(refs.iterdir()) == []
    recs = records(sessions[:2])
    emulated = [dataclasses.replace(r, emulated=True) for r in recs]
    assert bless.refusals(emulated, allow_emulated=True) == []
    assert bless.refusals(emulated[:1] + recs[1:], allow_emulated=True)
    # Written beside the system's file, never into it.
    (refs / 'local.yaml').write_text('# real hardware\nOther:\n  local:default:\n'
                                     '    bw: [1.0, -0.1, null, MB/s]\n')
    before = (refs / 'local.yaml').read_text()
    new = bless.derive(emulated)
    path = bless.write_references('local', new, 'emulated demo', sessions[:2],
                                  path=bless.reference_file('local', refs, emulated=True))
    assert path.name == 'local.emulated.yaml' and (refs / 'local.yaml').read_text() == before
    assert 'FROM EMULATED RUNS' in path.read_text()
    assert 'emulated: true' in (refs / 'local.emulated.history').read_text()
    mixed = bless.derive(emulated[:2]) + bless.derive(recs[2:])
    with pytest.raises(ClusterproofError, match='emulated and real'):
        bless.write_references('local', mixed, 'demo', sessions[:2], path=tmp_path / 'x.yaml')
    assert not (tmp_path / 'x.yaml').exists()


def test_diff_without_write_writes_nothing(recorded):
    results, refs, _ = recorded
    out = clusterproof(['bless', '--last', '3', '--mode', 'nightly'], results, refs)
    assert out.returncode == 0 and 'Nothing written' in out.stdout
    out = clusterproof(['bless', '--session', 'a', '--write'], results, refs)
    assert out.returncode == 2 and '--reason is required' in out.stderr
    assert list(refs.iterdir()) == []


def test_write_keeps_other_checks_and_records_the_reason(recorded):
    results, refs, sessions = recorded
    other = ("# Published figures (IOzone 3.492, seed 002)\n"
             "IOzoneSequential:\n"
             "  $index: [$partition, num_threads]\n"
             "  # peak at 8 threads\n"
             "  local:default:\n"
             "    8: {write_bw: [28500, -0.1, null, MB/s]}\n"
             "\n"
             "DevZeroCopy:\n"
             "  $index: [$partition, num_threads]\n"
             "  local:default:\n"
             "    64:\n"
             "      copy_bw: [1.0, -0.5, null, MB/s]\n")
    (refs / 'local.yaml').write_text(other)
    ids = [a for s in sessions[:3] for a in ('--session', s.uuid)]
    out = clusterproof(['bless', *ids], results, refs)
    assert out.returncode == 0, out.stdout + out.stderr
    assert 'copy_bw' in out.stdout and 'new' in out.stdout
    assert (refs / 'local.yaml').read_text() == other            # no --write: unchanged
    out = clusterproof(['bless', *ids, '--write', '--reason', 'BIOS 2.3 update'], results, refs)
    assert out.returncode == 0, out.stdout + out.stderr
    text = (refs / 'local.yaml').read_text()
    assert text.startswith(other.split('\nDevZeroCopy')[0])      # other entry kept verbatim
    assert '# reason: BIOS 2.3 update' in text
    data = yaml.safe_load(text)
    assert data['IOzoneSequential']['local:default'][8]['write_bw'] == [28500, -0.1, None, 'MB/s']
    dz = data['DevZeroCopy']['local:default']
    assert dz[64]['copy_bw'] == [1.0, -0.5, None, 'MB/s']        # index values not measured: kept
    assert set(dz) == {1, 2, 64} and set(dz[1]) == {'copy_bw', 'copy_time'}
    hist = list(yaml.safe_load_all((refs / 'local.history').read_text()))
    assert hist[-1]['reason'] == 'BIOS 2.3 update'
    assert hist[-1]['sessions'] == [s.uuid for s in sessions[:3]]


def test_write_refuses_what_validate_would_reject(recorded):
    """One rule decides what a valid reference is: the tolerance a negative
    maximum gives (bless --max-tolerance -5, before the option refused it)
    is refused at write, as clusterproof validate refuses it; nothing written."""
    _, refs, sessions = recorded
    new = bless.derive(records(sessions[:3]), max_tolerance=-0.05)
    with pytest.raises(ClusterproofError, match='impossible.*nothing was written'):
        bless.write_references('local', new, 'a reason', sessions[:3], path=refs / 'local.yaml')
    assert list(refs.iterdir()) == []
