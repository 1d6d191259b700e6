"""fio on persistent memory: the published "worst case" job (4 KiB random
reads or writes, sync, one I/O in flight, four jobs), one test per section.

``PmemFio``            libpmem engine on the partition's DAX mount
                       (``extras['pmem']['dax_mounts']``); runs only when the
                       mount really is pmem: mounted with ``dax`` on a
                       /dev/pmemN whose namespace is fsdax (else SKIP with the
                       reason). Compared with ``site_config/references/<system>.yaml``.
``PmemFioDevDax``      dev-dax engine on a declared /dev/daxX.Y
                       (``extras['pmem']['devdax']``, with its ``align`` in
                       bytes, default 2 MiB).
``PmemFioEmulated``    libpmem on tmpfs with ``PMEM_IS_PMEM_FORCE=1``, on
                       ``local`` and ``emu`` only: for tests and demonstrations.
                       Its directory is the user's own, ``/dev/shm/clusterproof-<uid>``
                       (mode 0700), so users of one login node never meet.
                       Its name says emulated, ``cp_emulated`` is set in every
                       perflog entry, it has no reference and always uses smoke
                       sizes.
``StorageFioBaseline`` the same job with ``ioengine=psync`` on the scratch file
                       system, to put pmem figures beside the site's SSDs.

Figures per section: iops, bw (MiB/s), lat_mean and lat_p50/p99/p99_9/p99_99
(us, from fio's ``lat_ns``). Sanity: every job has error 0 and did I/O.

The job file is generated (``clusterproof.methods.fiojob``) into the stage
directory; fio's files go in a test directory of its own under the target
(created by the job, removed when it ends: clusterproof/checklib/testdirs.py);
sizes, loops and jobs come from the mode and can be set with
``-S filesize=<bytes> -S numjobs=N -S loops=N``.

What only the node under test knows (fio's engines, its mounts, its ndctl
namespaces, a device-DAX device) is probed inside the job before fio starts
(``clusterproof.site.pmem.probe_commands``); a node without it ends the job
before fio (``clusterproof fio-preflight``, the job's next line) and the test
is skipped with the reason. Nothing is probed on the machine that runs ReFrame.
"""

import os
import shlex

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import (parameter, run_after, run_before,
                                   sanity_function, variable)

from clusterproof.methods import fiojob
from clusterproof.parsers import fio as fioparser
from clusterproof.checklib.api import (ClusterproofCheck, ConfigurationError, TestDirectories,
                                       performance_figure, pinned_spec)
from clusterproof.paths import private_dir, user_path
from clusterproof.site import pmem as node

JOB_FILE = 'worst_case.fio'
FIO_SPEC = pinned_spec('fio')


class FioWorstCaseBase(rfm.RunOnlyRegressionTest, ClusterproofCheck, TestDirectories):
    """The published job on one target; subclasses choose engine and target."""

    valid_prog_environs = ['*']
    time_limit = '1h'

    section = parameter(list(fiojob.SECTIONS))

    #: 0: from the mode (clusterproof.methods.fiojob.MODE_PARAMS)
    filesize = variable(int, value=0)
    numjobs = variable(int, value=0)
    loops = variable(int, value=0)

    engine = 'libpmem'

    @run_after('setup')
    def find_fio(self):
        self.fio = self.use_binary('fio', FIO_SPEC)

    def node_needs(self):
        """What the node must have besides fio's engine: keyword arguments of
        clusterproof.site.pmem.node_verdict (``dax``, ``devdax``/``align``, ``tmpfs``)."""
        return {}

    def target_dir_root(self):
        """The directory under which this test makes its own directory."""
        raise NotImplementedError

    def fio_mode(self):
        return self.cp_mode

    def make_job(self, target):
        return fiojob.worst_case_job(self.engine, target, mode=self.fio_mode(),
                                     filesize=self.filesize or None,
                                     numjobs=self.numjobs or None, loops=self.loops or None)

    @run_before('run')
    def write_job_file(self):
        if self.engine == 'dev-dax':        # the device itself: no file, no directory
            self.fio_job = self.make_job(None)
        else:
            self.fio_job = self.make_job(str(self.test_directory(self.target_dir_root(), 'fio')))
        with open(os.path.join(self.stagedir, JOB_FILE), 'w') as f:
            f.write(self.fio_job.render())
        self.executable = self.fio
        self.executable_opts = [f'--section={self.section}', '--output-format=json', JOB_FILE]
        if self.engine == 'libpmem':
            # fio >= 3.26 cannot size a new file for libpmem (it prepopulates
            # until the file system is full): write the files first.
            self.prerun_cmds = [f'head -c {size} /dev/zero > {shlex.quote(path)}'
                                for path, size in self.fio_job.layout_files(self.section)]

    @run_before('run')
    def probe_the_node(self):
        # After write_job_file: the probe and its guard come before anything
        # the job writes.
        needs = self.node_needs()
        self.prerun_cmds = node.probe_commands(self.fio, dax='dax' in needs,
                                               devdax=needs.get('devdax')) + [
            node.guard_command(self.fio, self.engine, **needs)] + list(self.prerun_cmds)

    @run_before('sanity')
    def skip_unless_the_node_can(self):
        if self.is_dry_run():
            return
        verdict = node.node_verdict(self.stagedir, self.fio, self.engine, **self.node_needs())
        if not verdict and 'engine' in verdict.reason:
            self.skip(f'{verdict.reason}; build one with: spack -e . install {FIO_SPEC}')
        self.skip_if(not verdict, verdict.reason)

    def figures(self):
        return self.parsed_output(fioparser.section_figures, section=self.section)

    def program_failure(self, output):
        # fio's own signs of an interrupted or failed run, in its JSON and text
        try:
            return '; '.join(fioparser.problems(fioparser.load(output, str(self.job.stdout)),
                                                str(self.job.stdout))) or None
        except fioparser.ParseError as err:
            return str(err)

    @sanity_function
    def every_job_did_io(self):
        return sn.assert_gt(self.figures()['total_ios'], 0)

    @performance_figure('IOPS', lower_is_better=False)
    def iops(self):
        return self.figures()['iops']

    @performance_figure('MiB/s', lower_is_better=False)
    def bw(self):
        return self.figures()['bw']

    @performance_figure('us', lower_is_better=True)
    def lat_mean(self):
        return self.figures()['lat_mean']

    @performance_figure('us', lower_is_better=True)
    def lat_p50(self):
        return self.figures()['lat_p50']

    @performance_figure('us', lower_is_better=True)
    def lat_p99(self):
        return self.figures()['lat_p99']

    @performance_figure('us', lower_is_better=True)
    def lat_p99_9(self):
        return self.figures()['lat_p99_9']

    @performance_figure('us', lower_is_better=True)
    def lat_p99_99(self):
        return self.figures()['lat_p99_99']


@rfm.simple_test
class PmemFio(FioWorstCaseBase):
    descr = 'fio worst-case job with the libpmem engine on the DAX mount (fsdax)'
    valid_systems = ['*']
    tags = {'pmem', 'fio'}

    @run_after('setup')
    def verify_dax_mount(self):
        mounts = self.declared('pmem', 'dax_mounts', default=[])
        self.skip_if(not mounts, f'{self.current_partition.fullname} declares no DAX mount '
                                 "(extras['pmem']['dax_mounts'])")
        self.dax_mount = mounts[0]['path']

    def node_needs(self):
        return {'dax': self.dax_mount}

    def target_dir_root(self):
        return os.path.join(self.dax_mount, 'clusterproof')


@rfm.simple_test
class PmemFioDevDax(FioWorstCaseBase):
    descr = 'fio worst-case job with the dev-dax engine on a device-DAX namespace'
    valid_systems = ['*']
    tags = {'pmem', 'fio'}
    engine = 'dev-dax'

    @run_after('setup')
    def find_device(self):
        devices = self.declared('pmem', 'devdax', default=[])
        self.skip_if(not devices, f'{self.current_partition.fullname} declares no device-DAX '
                                  "namespace (extras['pmem']['devdax'])")
        dev = devices[0]
        name = dev.get('chardev') or dev.get('path') if isinstance(dev, dict) else dev
        self.device = name if name.startswith('/') else f'/dev/{name}'
        # declared, and checked on the node by the probe (its sysfs align)
        self.devdax_align = (dev.get('align') if isinstance(dev, dict) else None) \
            or fiojob.DEFAULT_DEVDAX_ALIGN

    def node_needs(self):
        return {'devdax': self.device, 'align': self.devdax_align}

    def make_job(self, target):
        return fiojob.worst_case_job('dev-dax', self.device, mode=self.fio_mode(),
                                     filesize=self.filesize or None,
                                     numjobs=self.numjobs or None, loops=self.loops or None,
                                     devdax_align=self.devdax_align)


@rfm.simple_test
class PmemFioEmulated(FioWorstCaseBase):
    descr = ('EMULATED pmem: fio libpmem on tmpfs with PMEM_IS_PMEM_FORCE=1 '
             '(function only, never a pmem figure)')
    valid_systems = ['local', 'emu']
    tags = {'pmem', 'fio', 'emulated'}
    cp_emulated = True
    cp_smoke = True

    #: a directory on tmpfs, where this test makes its own directory; empty:
    #: the user's own /dev/shm/clusterproof-<uid> (created mode 0700)
    tmpfs_dir = variable(str, value='')

    @run_after('init')
    def never_a_reference(self):
        self.reference = {}

    def fio_mode(self):
        return 'smoke'

    @run_after('setup')
    def check_tmpfs(self):
        if not self.tmpfs_dir:
            # local and emu: the nodes are this machine, the user's directory theirs
            self.tmpfs_dir = user_path('/dev/shm/clusterproof')
            if not self.is_dry_run():
                with self.configuration():
                    private_dir(self.tmpfs_dir)
        parent = os.path.dirname(self.tmpfs_dir.rstrip('/'))
        st = os.statvfs(parent)
        free = st.f_bavail * st.f_frsize
        need = 4 * self.make_job('/x').total_bytes      # with -S filesize/numjobs
        if free < need:
            raise ConfigurationError(f'{parent}: {free} bytes free on tmpfs, the test needs '
                                     f'{need}; free space or set -S filesize=<bytes>')
        self.env_vars['PMEM_IS_PMEM_FORCE'] = '1'

    def node_needs(self):
        return {'tmpfs': self.tmpfs_dir}

    def target_dir_root(self):
        return self.tmpfs_dir


@rfm.simple_test
class StorageFioBaseline(FioWorstCaseBase):
    descr = 'fio worst-case job with ioengine=psync on the scratch file system (baseline)'
    valid_systems = ['*']
    tags = {'storage', 'fio'}
    engine = 'psync'

    @run_after('setup')
    def need_storage(self):
        self.skip_unless_declared('storage', 'scratch directory')

    def target_dir_root(self):
        return self.declared('storage', 'scratch')
