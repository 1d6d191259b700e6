"""The fio checks learn what only the node under test knows (fio's engines,
its mounts, its ndctl namespaces, a device-DAX device) from a probe inside
their job, never from the machine that runs ReFrame: the verdict on real
probe output, and real ReFrame runs whose job ends before fio and whose
test is skipped with the reason the node gave."""

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from clusterproof import command
from clusterproof.references.judge import Verdict
from clusterproof.site import pmem as node
from conftest import REPO, report_cases, run_reframe, site_config_overlay

FIO = '/usr/bin/fio'
need_fio = pytest.mark.skipif(not os.access(FIO, os.X_OK), reason=f'no {FIO}')

#: ``ndctl list -N`` of the published server's fsdax namespace on pmem1
NDCTL = json.dumps([{'dev': 'namespace1.0', 'mode': 'fsdax', 'size': 1598128390144,
                     'blockdev': 'pmem1'}])


def probe_dir(tmp_path, mounts=None, ndctl=None, devdax=None):
    """Run the probe commands for real in ``tmp_path`` (this machine is the
    node); ``mounts``/``ndctl``/``devdax`` replace what it recorded."""
    cmds = node.probe_commands(FIO, dax=ndctl is not None, devdax='/dev/dax9.9')
    subprocess.run(' ; '.join(cmds), shell=True, cwd=tmp_path, check=False)
    for name, text in ((node.PROBE_MOUNTS, mounts), (node.PROBE_NDCTL, ndctl),
                       (node.PROBE_DEVDAX, devdax)):
        if text is not None:
            (tmp_path / name).write_text(text)
    return tmp_path


@need_fio
def test_engines_and_tmpfs_from_the_probe(tmp_path):
    d = probe_dir(tmp_path)
    assert node.node_verdict(d, FIO, 'psync')
    missing = node.node_verdict(d, FIO, 'no-such-engine')
    assert not missing and 'has no no-such-engine engine on this node' in missing.reason
    # a verdict of the one vocabulary, with its reason
    assert missing.verdict == Verdict.FAILED and missing.failing
    assert str(missing) == f'FAILED ({missing.reason})'
    assert node.node_verdict(d, FIO, 'psync').verdict == Verdict.PASS
    assert node.node_verdict(d, FIO, 'psync', tmpfs='/dev/shm/x')
    on_disk = node.node_verdict(d, FIO, 'psync', tmpfs=str(REPO))
    assert not on_disk and 'is not on tmpfs on the node' in on_disk.reason


@need_fio
def test_dax_mount_from_the_probe(tmp_path):
    dax = '/dev/pmem1 /mnt/nvdimm ext4 rw,relatime,dax 0 0\n'
    d = probe_dir(tmp_path, mounts=dax, ndctl=NDCTL)
    assert node.node_verdict(d, FIO, 'psync', dax='/mnt/nvdimm/clusterproof')
    (d / node.PROBE_MOUNTS).write_text(dax.replace(',dax', ''))
    verdict = node.node_verdict(d, FIO, 'psync', dax='/mnt/nvdimm/clusterproof')
    assert not verdict and 'not a DAX mount' in verdict.reason
    (d / node.PROBE_NDCTL).write_text(node.NO_NDCTL + '\n')
    verdict = node.node_verdict(d, FIO, 'psync', dax='/mnt/nvdimm/clusterproof')
    assert not verdict and 'ndctl not installed on the node' in verdict.reason


@need_fio
def test_devdax_presence_and_alignment_from_the_probe(tmp_path):
    d = probe_dir(tmp_path)
    # this machine has no /dev/dax9.9: the probe recorded no device
    verdict = node.node_verdict(d, FIO, 'psync', devdax='/dev/dax9.9', align=2097152)
    assert not verdict and '/dev/dax9.9 does not exist on the node' in verdict.reason
    (d / node.PROBE_DEVDAX).write_text('present\n1073741824\n')
    verdict = node.node_verdict(d, FIO, 'psync', devdax='/dev/dax9.9', align=2097152)
    assert not verdict and "declare 'align': 1073741824" in verdict.reason
    (d / node.PROBE_DEVDAX).write_text('present\n2097152\n')
    assert node.node_verdict(d, FIO, 'psync', devdax='/dev/dax9.9', align=2097152)


def _job(line, directory):
    """``line`` and what would come after it, run as the job's shell runs them."""
    return subprocess.run(['sh', '-c', f'{line}\necho fio starts'], cwd=directory,
                          capture_output=True, text=True, timeout=60)


@need_fio
def test_the_guard_line_runs_fio_preflight_and_ends_the_job_of_an_unfit_node(tmp_path):
    """The job's guard is ``clusterproof fio-preflight`` with the check's
    needs, run as a whole process: a node that has them prints the verdict
    and the job goes on to fio; one that lacks them says why on stderr,
    exit status 3, and the job ends there (exit 0: the check then skips)."""
    guard = node.guard_command(FIO, 'libpmem', dax='/mnt/nvdimm', devdax='/dev/dax0.0',
                               align=2097152, tmpfs='/dev/shm/x')
    assert guard == shlex.join(command('fio-preflight', '.', FIO, 'libpmem', '--dax',
                                       '/mnt/nvdimm', '--devdax', '/dev/dax0.0', '--align',
                                       '2097152', '--tmpfs', '/dev/shm/x')) + ' || exit 0'
    d = probe_dir(tmp_path)
    fit = _job(node.guard_command(FIO, 'psync', tmpfs='/dev/shm/x'), d)
    assert (fit.returncode, fit.stderr) == (0, '')
    assert fit.stdout == 'clusterproof node probe: the node has what the check needs\nfio starts\n'
    unfit = _job(node.guard_command(FIO, 'psync', tmpfs=str(REPO)), d)
    assert (unfit.returncode, unfit.stdout) == (0, '')
    assert unfit.stderr.startswith(f'clusterproof node probe: {REPO} is not on tmpfs on the node')
    alone = subprocess.run(command('fio-preflight', d, FIO, 'no-such-engine'),
                           capture_output=True, text=True, timeout=60)
    assert (alone.returncode, alone.stdout) == (3, '')
    assert 'has no no-such-engine engine on this node' in alone.stderr


def test_a_probe_that_wrote_nothing_is_no_pass(tmp_path):
    verdict = node.node_verdict(tmp_path, FIO, 'libpmem')
    assert not verdict and 'the probe on the node wrote no' in verdict.reason


#: the site configuration with a DAX mount declared for ``local`` at a
#: directory of the test (which is no DAX mount)
CONFIG = '''
for system in site_configuration['systems']:
    if system['name'] == 'local':
        part = system['partitions'][0]
        part['extras'] = dict(part['extras'], pmem={{'provisioning': 'app_direct',
                                                     'dax_mounts': [{{'path': {dax!r}}}]}})
'''


def _case(results, prefix):
    return [tc for tc in report_cases(results) if tc['name'].startswith(prefix)]


@pytest.mark.slow
@need_fio
@pytest.mark.slow
def test_not_a_dax_mount_on_the_node_skips_before_fio(tmp_path):
    dax = tmp_path / 'not-dax'
    dax.mkdir()
    config = site_config_overlay(tmp_path, CONFIG.format(dax=str(dax)))
    results = tmp_path / 'results'
    res = run_reframe(['-c', 'reframe_checks/pmem.py', '-r', '--system', 'local',
                       '-n', 'PmemFio', '-x', 'PmemFioDevDax', '-x', 'PmemFioEmulated',
                       '--keep-stage-files'], results,
                      config=config)
    cases = _case(results, 'PmemFio %')
    assert cases and all(tc['result'] == 'skip' for tc in cases), res.stdout[-3000:]
    for tc in cases:
        stage = Path(tc['stagedir'])
        # the verdict came from the job: its probe files, and fio never ran
        assert (stage / node.PROBE_MOUNTS).is_file() and (stage / node.PROBE_NDCTL).is_file()
        assert 'not persistent memory' in (stage / 'rfm_job.err').read_text()
        assert '"jobs"' not in (stage / 'rfm_job.out').read_text()
    assert 'not persistent memory' in res.stdout and 'not a DAX mount' in res.stdout
    assert not list(dax.rglob('*.0'))


@pytest.mark.slow
@need_fio
@pytest.mark.slow
def test_emulated_pmem_off_tmpfs_skips_naming_the_node_mount(tmp_path):
    results = tmp_path / 'results'
    disk = tmp_path / 'disk'
    disk.mkdir()
    res = run_reframe(['-c', 'reframe_checks/pmem.py', '-r', '--system', 'local',
                       '-n', 'PmemFioEmulated', '-S', f'PmemFioEmulated.tmpfs_dir={disk}'],
                      results)
    cases = _case(results, 'PmemFioEmulated')
    assert cases and all(tc['result'] == 'skip' for tc in cases), res.stdout[-3000:]
    assert 'is not on tmpfs on the node' in res.stdout


@pytest.mark.slow
def test_default_tmpfs_directory_is_the_users_own(tmp_path):
    """The one test case run (ReFrame's listing in smoke mode has
    ``PmemFioEmulated %section=randread_8files``) makes its directory on
    tmpfs at setup, whether fio then runs or is skipped: the user's own."""
    results = tmp_path / 'results'
    res = run_reframe(['-c', 'reframe_checks/pmem.py', '-r', '--system', 'local',
                       '-n', 'PmemFioEmulated%section=randread_8files'], results, expect_cases=1)
    assert res.returncode == 0, res.stdout[-3000:]
    mine = Path(f'/dev/shm/clusterproof-{os.getuid()}')
    [case] = report_cases(results)
    assert case['tmpfs_dir'] == str(mine)
    st = mine.stat()
    assert st.st_uid == os.getuid() and st.st_mode & 0o777 == 0o700
