"""Concurrency and users: two nightly runs at once (the second exits with a
clear message, the results database stays intact), a check run by an
ordinary user on the local cluster, and safe permissions on the local
cluster's secrets."""

import os
import pwd
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from clusterproof import cluster as lc
from clusterproof.reframe_io import runner
from conftest import (database_intact, EMU_INSTANCE, REPO, VENV_BIN, WAIT_S, assert_cases,
                      need_netns, need_repo_open_to_others, need_root, reframe_env, report_cases,
                      wait_for, with_report_file)

FAULTS = Path(__file__).resolve().parents[1] / 'checks' / 'reliability' / 'faults.py'


@pytest.mark.slow
def test_two_nightly_runs_at_once(tmp_path, record_property):
    record_property('reliability', 'fault')
    env = reframe_env(tmp_path)
    env['CLUSTERPROOF_CHECKS'] = str(FAULTS)
    # the first run holds until the second one has been refused
    release = tmp_path / 'release'
    nightly = [str(REPO / 'scripts' / 'nightly'), '--system', 'local', '--',
               '-n', 'ReliabilityHold', '-S', f'ReliabilityHold.hold={WAIT_S}',
               '-S', f'ReliabilityHold.release={release}',
               '-S', f'ReliabilityHold.time_limit={2 * WAIT_S}s']
    first = subprocess.Popen(nightly, cwd=REPO, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    try:
        wait_for('the first nightly run staging its test', (tmp_path / 'stage').exists, proc=first)
        second = subprocess.run(nightly, cwd=REPO, env=env, capture_output=True, text=True,
                                timeout=WAIT_S)
        assert first.poll() is None, 'the first run ended before the second started'
        release.touch()
        out, _ = first.communicate(timeout=WAIT_S)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert second.returncode == 3, second.stdout + second.stderr
    assert 'another nightly run holds' in second.stderr and 'nightly.lock' in second.stderr
    assert 'Use --wait' in second.stderr
    assert first.returncode in (0, 1), out[-3000:]      # 1: no references to compare with
    assert 'Current session stored with UUID' in out
    # the page ingested the night already: store ingest says so, never "0 new"
    assert 'ingested 0 new session' not in out and 'holds every session' in out, out[-3000:]
    ok, msg = database_intact(tmp_path / 'results.db')
    record_property('results_lost', 0 if ok else 1)
    assert ok, msg


@need_netns
def test_local_cluster_secrets_have_safe_permissions(emu_cluster, record_property):
    record_property('reliability', 'fault')
    record_property('results_lost', 0)
    spec = lc.load_spec(EMU_INSTANCE, lc.Instance(EMU_INSTANCE).default_run_dir())
    lay = lc.Layout(spec.run_dir)
    for path, mode in [(lay.munge_key, 0o600), (lay.slurmdbd_conf, 0o600), (lay.db_pass, 0o600),
                       (lay.db_init, 0o600), (lay.db, 0o700), (lay.state, 0o700)]:
        st = path.stat()
        assert stat.S_IMODE(st.st_mode) == mode, f'{path}: mode {stat.S_IMODE(st.st_mode):o}'
        assert st.st_uid == 0, f'{path}: owner {st.st_uid}'
    # what ordinary users need stays readable, and nothing is writable by others
    assert stat.S_IMODE(lay.slurm_conf.stat().st_mode) == 0o644
    for path in lay.root.rglob('*'):
        if path.is_symlink() or path.is_socket() or path.parent.name == 'tmp' or path.name == 'tmp':
            continue
        assert not path.stat().st_mode & stat.S_IWOTH, f'{path} is writable by others'


def _reachable_by_others(path):
    """True when every directory above ``path`` is searchable by others."""
    return all(os.stat(p).st_mode & stat.S_IXOTH for p in Path(path).parents)


@need_root
@need_netns
@need_repo_open_to_others
def test_checks_run_as_an_ordinary_user(emu_cluster, ordinary_user, record_property):
    record_property('reliability', 'fault')
    name, home = ordinary_user
    results = home / 'results'
    env = reframe_env(results, extra=emu_cluster)
    env.update({'HOME': str(home), 'USER': name, 'LOGNAME': name,
                'CLUSTERPROOF_SCRATCH': str(home / 'scratch')})
    keep = [runner.CONFIG_VARIABLE, 'CLUSTERPROOF_RESULTS', 'CLUSTERPROOF_MODE',
            'CLUSTERPROOF_SCRATCH', 'PATH', 'HOME', 'USER', 'LOGNAME',
            'SLURM_CONF', 'CLUSTERPROOF_EMU_NODES',
            'CLUSTERPROOF_EMU_CPUS']
    # scripts/setup builds .venv from Debian's python3 so that every user can run it
    assert _reachable_by_others(os.path.realpath(VENV_BIN / 'python')), \
        f'{os.path.realpath(VENV_BIN / "python")} is not reachable by ordinary users'
    argv = ['runuser', '-u', name, '--', 'env', '-i'] + [f'{k}={env[k]}' for k in keep if k in env]
    args, report = with_report_file(['-c', str(FAULTS), '-r', '--system', 'emu:srun',
                                     '-n', 'ReliabilityQuick|ReliabilityHold',
                                     '-S', 'ReliabilityHold.hold=1'], results)
    proc = runner.invoke(args, prefix=argv, cwd='/', timeout=WAIT_S)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-1000:]
    assert_cases(args, report, proc.returncode, proc.stdout, 2)
    # the user's results are the user's own
    uid = pwd.getpwnam(name).pw_uid
    for path in [results, results / 'results.db', *results.glob('perflogs/**/*.log')]:
        assert path.stat().st_uid == uid, f'{path} is not owned by {name}'
    ok, msg = database_intact(results / 'results.db')
    record_property('results_lost', 0 if ok else 1)
    assert ok, msg
    acct = subprocess.run(['sacct', '-X', '-n', '-P', '-u', name, '-o', 'user,jobname,state'],
                          env=dict(os.environ, **emu_cluster), capture_output=True,
                          text=True).stdout
    assert f'{name}|rfm_ReliabilityHold|COMPLETED' in acct, acct


#: a quick subset of the suite with everything that lives outside a user's
#: results directory: the emulated pmem check's tmpfs directory, the fio
#: baseline, the mmap sweep, and the local IOzone lock under /tmp; one test
#: case of each, one that writes (the others of a check share its files)
SHARED_MACHINE_ARGS = ['-c', str(REPO / 'reframe_checks' / 'pmem.py'),
                       '-c', str(REPO / 'reframe_checks' / 'mmap_sweep.py'),
                       '-c', str(REPO / 'reframe_checks' / 'iozone.py'),
                       '-r', '--system', 'local',
                       '-n', 'PmemFioEmulated%section=randwrite_8files',
                       '-n', 'StorageFioBaseline%section=randwrite_8files',
                       '-n', 'MmapSweep%point=a4096_b16384%access=rw_t2',
                       '-n', 'IOzoneSequential%threads=2',
                       '-S', 'StorageFioBaseline.filesize=1048576']


def _suite_passed(proc, results, run):
    out = proc.stdout[-4000:] + proc.stderr[-1000:]
    assert proc.returncode == 0, out
    assert_cases(*run, proc.returncode, out)
    cases = report_cases(results)
    ran = {tc['name'].split()[0] for tc in cases if tc['result'] == 'pass'}
    assert {'PmemFioEmulated', 'StorageFioBaseline', 'MmapSweep',
            'IOzoneSequential'} <= ran, out
    assert not [tc for tc in cases if tc['result'] == 'fail'], out


@need_root
@need_repo_open_to_others
def test_the_suite_as_root_then_as_an_ordinary_user(tmp_path, ordinary_user, record_property):
    record_property('reliability', 'fault')
    name, home = ordinary_user
    uid = pwd.getpwnam(name).pw_uid
    # root first: it makes its own tmpfs directory, and the IOzone lock if none is there
    root_results = tmp_path / 'root'
    run = with_report_file(SHARED_MACHINE_ARGS, root_results)
    proc = runner.invoke(run[0], env=reframe_env(root_results, extra={
                             'CLUSTERPROOF_SCRATCH': str(tmp_path / 'root-scratch')}),
                         timeout=WAIT_S)
    _suite_passed(proc, root_results, run)
    # then the user, on the same machine
    results = home / 'results'
    env = reframe_env(results)
    env.update({'HOME': str(home), 'USER': name, 'LOGNAME': name,
                'CLUSTERPROOF_SCRATCH': str(home / 'scratch')})
    keep = [runner.CONFIG_VARIABLE, 'CLUSTERPROOF_RESULTS', 'CLUSTERPROOF_MODE',
            'CLUSTERPROOF_SCRATCH', 'PATH', 'HOME', 'USER', 'LOGNAME']
    argv = ['runuser', '-u', name, '--', 'env', '-i'] + [f'{k}={env[k]}' for k in keep]
    mine = Path(f'/dev/shm/clusterproof-{uid}')
    run = with_report_file(SHARED_MACHINE_ARGS, results)
    try:
        proc = runner.invoke(run[0], prefix=argv, cwd='/', timeout=WAIT_S)
        _suite_passed(proc, results, run)
        record_property('results_lost', 0)
        # each user's tmpfs directory is their own and closed to the other
        for path, owner in ((mine, uid), (Path('/dev/shm/clusterproof-0'), 0)):
            st = path.stat()
            assert st.st_uid == owner and stat.S_IMODE(st.st_mode) == 0o700, path
        intrude = subprocess.run(['runuser', '-u', name, '--', 'touch',
                                  '/dev/shm/clusterproof-0/intruder'], capture_output=True)
        assert intrude.returncode != 0
    finally:
        shutil.rmtree(mine, ignore_errors=True)
