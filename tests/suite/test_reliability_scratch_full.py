"""The scratch file system fills up during a run: IOR, IOzone and fio fail
with the "no space" cause in the failure message, their test files are
removed, and no figure is recorded as a pass (run report, results database,
perflog).

The scratch directory is on a small tmpfs (8 MiB) mounted under the test's
own tmp directory and unmounted afterwards. fio is asked for more than the
tmpfs holds (``-S filesize``: fio lays its files out and hits ENOSPC).
IOzone and IOR refuse sizes that do not fit before they write anything, so
for them the file system fills up *during* the run, as when another job
fills a shared file system: as soon as the check's test directory appears, a
filler takes every free byte; the benchmark's first write then fails.
"""

import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import database_intact, REPO, need_root, report_cases, run_reframe

CHECKS = REPO / 'reframe_checks'
IOR_DIRS = [Path('/opt/ior-4.0.0/bin')]


@pytest.fixture
def small_scratch(tmp_path):
    """An 8 MiB tmpfs under tmp_path; yields the scratch directory on it."""
    mnt = tmp_path / 'tmpfs'
    mnt.mkdir()
    subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=8m,mode=0755', 'tmpfs', str(mnt)],
                   check=True)
    try:
        yield mnt / 'scratch'
    finally:
        _kill_users_of(mnt)
        subprocess.run(['umount', str(mnt)], check=True)


def _kill_users_of(mnt):
    """Kill processes whose working directory or open files are on ``mnt``
    (a benchmark client the test started and that outlived its job)."""
    mnt = str(mnt)
    for proc in Path('/proc').iterdir():
        if not proc.name.isdigit():
            continue
        try:
            paths = [os.readlink(proc / 'cwd')]
            paths += [os.readlink(fd) for fd in (proc / 'fd').iterdir()]
        except OSError:
            continue
        if any(p == mnt or p.startswith(mnt + '/') for p in paths):
            try:
                os.kill(int(proc.name), 9)
            except ProcessLookupError:
                pass


class Filler(threading.Thread):
    """Fills the file system of ``scratch`` as soon as a test directory
    appears in it (polls every 5 ms)."""

    def __init__(self, scratch):
        super().__init__(daemon=True)
        self.scratch = Path(scratch)
        self.path = self.scratch.parent / 'filler'
        self.filled = False
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            if self.scratch.is_dir() and any(p.is_dir() for p in self.scratch.iterdir()):
                with open(self.path, 'wb') as f:
                    try:
                        while True:
                            f.write(b'\0' * 65536)
                            f.flush()
                    except OSError:
                        pass
                self.filled = True
                return
            time.sleep(0.005)


def _assert_no_pass_recorded(results_dir):
    db = Path(results_dir) / 'results.db'
    ok, msg = database_intact(db)
    assert ok, msg
    import sqlite3
    con = sqlite3.connect(f'file:{db}?mode=ro', uri=True)
    blobs = [json.loads(b) for (b,) in con.execute('SELECT json_blob FROM sessions')]
    con.close()
    for blob in blobs:
        for run in blob['runs']:
            for tc in run['testcases']:
                assert tc['result'] != 'pass', tc['name']
    for log in (Path(results_dir) / 'perflogs').rglob('*.log'):
        for line in log.read_text().splitlines()[1:]:
            assert line.split('|')[1] != 'pass', f'{log}: {line}'


def _run_full(args, results_dir, scratch_dir, extra_path=None, fill=False):
    env = {'CLUSTERPROOF_SCRATCH': str(scratch_dir)}
    if extra_path:
        env['PATH'] = f'{extra_path}:{os.environ["PATH"]}'
    filler = Filler(scratch_dir) if fill else None
    if filler:
        filler.start()
    try:
        proc = run_reframe(args + ['--system', 'local'], results_dir, extra_env=env)
    finally:
        if filler:
            filler.stop.set()
            filler.join()
    if filler:
        assert filler.filled, 'the file system was never filled: ' + proc.stdout[-2000:]
    return proc


def _check_outcome(proc, results_dir, scratch_dir, name):
    cases = report_cases(results_dir)
    assert cases, proc.stdout[-3000:]
    for tc in cases:
        assert tc['result'] == 'fail', f'{tc["name"]}: {tc["result"]}\n{proc.stdout[-3000:]}'
        reason = tc['fail_reason'] or ''
        assert 'no space left' in reason.lower() or 'enospc' in reason.lower(), \
            f'{tc["name"]}: the cause is not surfaced: {reason}'
    left = [p.name for p in scratch_dir.iterdir() if not p.name.startswith('.')]
    assert left == [], f'{name} left {left} in {scratch_dir}'
    _assert_no_pass_recorded(results_dir)


@need_root
def test_fio_fails_with_no_space_and_cleans_up(small_scratch, tmp_path, record_property):
    record_property('reliability', 'fault')
    proc = _run_full(['-c', str(CHECKS / 'pmem.py'), '-n', 'StorageFioBaseline', '-r',
                      '-S', f'StorageFioBaseline.filesize={16 * 2**20}'], tmp_path / 'results',
                     small_scratch)
    record_property('results_lost', 0)
    _check_outcome(proc, tmp_path / 'results', small_scratch, 'fio')


@need_root
def test_iozone_fails_with_no_space_and_cleans_up(small_scratch, tmp_path, record_property):
    record_property('reliability', 'fault')
    if not shutil.which('iozone'):
        pytest.skip('iozone is not on PATH (Debian package iozone3)')
    # IOzone in cluster mode hangs on ENOSPC; the check's space watchdog stops it
    # and names the cause. The time limit only bounds the test if that breaks.
    proc = _run_full(['-c', str(CHECKS / 'iozone.py'), '-n', 'IOzoneSequential%threads=1', '-r',
                      '-S', 'IOzoneSequential.time_limit=15s'],
                     tmp_path / 'results', small_scratch, fill=True)
    record_property('results_lost', 0)
    _check_outcome(proc, tmp_path / 'results', small_scratch, 'IOzone')


@need_root
def test_ior_fails_with_no_space_and_cleans_up(small_scratch, tmp_path, record_property):
    record_property('reliability', 'fault')
    where = next((d for d in IOR_DIRS if (d / 'ior').is_file()), None)
    if not where and not shutil.which('ior'):
        pytest.skip('no ior binary (Spack view, PATH or /opt/ior-4.0.0/bin)')
    proc = _run_full(['-c', str(CHECKS / 'ior.py'), '-n', 'IorSharedFile%threads=1', '-r'],
                     tmp_path / 'results', small_scratch, extra_path=where, fill=True)
    record_property('results_lost', 0)
    _check_outcome(proc, tmp_path / 'results', small_scratch, 'IOR')
