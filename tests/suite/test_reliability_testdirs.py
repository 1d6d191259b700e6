"""One test-directory lifecycle for every check that writes files
(clusterproof.checklib.testdirs): the job creates the directory on its node
and removes it when it exits; a dry run writes job scripts and creates
nothing anywhere."""

import json
from pathlib import Path

import pytest

from clusterproof.methods import scratch
from conftest import REPO, run_reframe

CHECKS = REPO / 'reframe_checks'
WRITERS = ['iozone.py', 'ior.py', 'mdtest.py', 'pmem.py', 'mmap_sweep.py']


def _entries(path):
    return sorted(p.name for p in Path(path).iterdir()) if Path(path).exists() else []


@pytest.mark.slow
def test_dry_run_creates_no_test_directory(tmp_path):
    scratch_dir = tmp_path / 'scratch'
    shm = Path('/dev/shm') / f'clusterproof-dry-{tmp_path.name}'
    args = [a for name in WRITERS for a in ('-c', str(CHECKS / name))]
    proc = run_reframe([*args, '--dry-run', '--system', 'local',
                        '-S', f'PmemFioEmulated.tmpfs_dir={shm}'], tmp_path / 'results',
                       extra_env={'CLUSTERPROOF_SCRATCH': str(scratch_dir)})
    assert proc.returncode == 0, proc.stdout[-3000:]
    scripts = list((tmp_path / 'results').rglob('rfm_job.sh'))
    made = {p.parent.name.split('_')[0] for p in scripts}
    # every check that writes files and can run here wrote its job script
    assert {'IOzoneSequential', 'IOzoneRandom', 'StorageFioBaseline', 'PmemFioEmulated',
            'MmapSweep'} <= made, sorted(made)
    for script in scripts:
        text = script.read_text()
        if 'PmemFioDevDax' in str(script):
            continue
        assert '-m clusterproof scratch create --path' in text, script
        assert 'trap clusterproof_at_exit EXIT' in text, script
        assert scratch.MARKER in text, script       # the removal, in the EXIT trap
    # and nothing was created: no scratch directory content, no tmpfs directory
    assert [n for n in _entries(scratch_dir) if not n.startswith('.')] == []
    assert _entries(shm) == []


@pytest.mark.slow
def test_job_creates_and_removes_the_test_directory(tmp_path):
    """fio on the scratch directory through the whole lifecycle: the job
    made the directory (its marker names the job script's process), fio
    wrote in it, and nothing is left afterwards."""
    scratch_dir = tmp_path / 'scratch'
    proc = run_reframe(['-c', str(CHECKS / 'pmem.py'), '-n', 'StorageFioBaseline%section=randread',
                        '-r', '--system', 'local'], tmp_path / 'results',
                       extra_env={'CLUSTERPROOF_SCRATCH': str(scratch_dir)})
    assert proc.returncode == 0, proc.stdout[-3000:]
    (script,) = (tmp_path / 'results').rglob('StorageFioBaseline*/rfm_job.sh')
    text = script.read_text()
    assert 'scratch create --path' in text
    assert [n for n in _entries(scratch_dir) if not n.startswith('.')] == []
    # the job created one directory (registered, with the job script as its
    # owner), and it is gone
    records = [json.loads(ln) for ln in (scratch_dir / scratch.REGISTRY).read_text().splitlines()]
    assert len(records) == 1, records
    assert Path(records[0]['path']).parent == scratch_dir.resolve()
    assert not Path(records[0]['path']).exists()
