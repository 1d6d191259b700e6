"""What every clusterproof check shares: the mode, provenance recorded with
each result, and access to the declared hardware.

Checks inherit :class:`ClusterproofCheck` next to ``rfm.RunOnlyRegressionTest``
(or ``RegressionTest``). Every variable here is loggable, so it is written to
the perflog (``%(check_#ALL)s``) and to ReFrame's results database with each
test case: a result carries its mode, whether it was smoke or emulated, the
project revision, the site configuration's hash and the binary that ran.
"""

import contextlib
import platform
import sys

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import run_after, run_before, variable
from reframe.core.exceptions import ReframeError, SanityError

from clusterproof import ClusterproofError, command
from clusterproof.hostlist import compress

from clusterproof.site import binaries
from clusterproof.references import entries
from clusterproof.reframe_io import figures, signals
from clusterproof.methods import placement
from clusterproof.site.hardware import partition_node_count, declared, is_emulated
from clusterproof.methods.mpi import emulated_mpi_env, mpirun_env
from clusterproof.methods.hpl import ranks_per_node as hpl_ranks_per_node
from clusterproof.modes import current_mode
from clusterproof.site.provenance import git_revision, site_config_hash
from clusterproof.site import fingerprint

signals.keep_force_exit()       # a SIGTERM that lands in ReFrame's logging still ends it


class ConfigurationError(ReframeError):
    """The site configuration cannot give what a check needs: no usable
    scratch directory, sizes the 2 x RAM rule cannot meet, a file system
    too full before the start, a missing client node count. The check
    FAILS with this message; it skips only for a missing binary or for
    hardware its system does not declare."""


class ClusterproofCheck(rfm.RegressionTestPlugin):
    #: smoke, nightly or acceptance (from CLUSTERPROOF_MODE when the checks load)
    cp_mode = variable(str, value=current_mode())

    #: True when the figures come from smoke sizes: never a reference, never a pass
    #: against published figures
    cp_smoke = variable(bool, value=current_mode() == 'smoke')

    #: True when the hardware under test is emulated (e.g. pmem on tmpfs)
    cp_emulated = variable(bool, value=False)

    #: git revision of this project (``-dirty`` with local changes)
    cp_git_rev = variable(str, value=git_revision())

    #: hash of the site configuration (systems and declared hardware)
    cp_config_hash = variable(str, value=site_config_hash())

    #: binary provenance: path, version as the program reports it, and the
    #: concretized Spack spec and spack.lock hash when it came from Spack
    binary_path = variable(str, value='')
    binary_version = variable(str, value='')
    spack_spec = variable(str, value='')
    spack_lock_hash = variable(str, value='')

    #: the copy of that spack.lock kept with the results (<results>/spack/)
    spack_lock_copy = variable(str, value='')

    #: what the job ran on, taken inside the job (clusterproof.site.fingerprint):
    #: ``n[1-16]=<hash>;...`` (each hash's record in <results>/fingerprints/),
    #: the sha256 of the binary run and the MPI library it loads
    cp_fingerprint = variable(str, value='')
    cp_binary_sha256 = variable(str, value='')
    cp_mpi_library = variable(str, value='')

    #: why the test case was skipped: ReFrame prints it but keeps it in no
    #: report, so every skip of a clusterproof check records it here
    cp_skip_reason = variable(str, value='')

    #: ``{figure: lower_is_better}``: the direction each figure declares where
    #: it is defined (clusterproof.reframe_io.figures), what the judge reads
    cp_lower_is_better = variable(typ.Dict[str, bool], value={})

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # ReFrame's skip() comes first in the MRO of a check
        # (``class X(rfm.RunOnlyRegressionTest, ClusterproofCheck)``): put
        # the recording one on every check class.
        cls.skip = ClusterproofCheck._cp_skip

    def _cp_skip(self, msg=None):
        self.cp_skip_reason = str(msg or '')
        rfm.RegressionTest.skip(self, msg)

    @run_after('init')
    def _cp_tags(self):
        self.tags |= {self.cp_mode}
        if self.cp_smoke:
            self.tags.add('smoke')

    @run_after('setup')
    def _cp_mark_emulated_partition(self):
        '''A partition that declares ``extras['emulated']`` (the local cluster)
        makes every result on it an emulated one.'''
        if is_emulated(self.current_partition):
            self.cp_emulated = True

    @run_before('performance', always_last=True)
    def _cp_record_directions(self):
        '''Record the direction of every figure (after every hook that sets
        ``perf_variables``); a figure without one fails the test case.'''
        self.cp_lower_is_better = figures.declared(self.perf_variables, type(self).__name__)

    @run_after('setup')
    def _cp_load_references(self):
        '''References come from site_config/references/<system>.yaml, keyed by
        the check's class name. Smoke and emulated results never carry them:
        their figures are not comparable with a real system's.'''
        if self.cp_smoke or self.cp_emulated:
            return
        if isinstance(self.reference, dict) and self.reference:
            return              # the check set its own
        units = {name: getattr(fn, 'unit', None)
                 for name, fn in self.perf_variables.items()}
        path = entries.check_references(self.current_system.name, type(self).__name__,
                                        units)
        if path is None:
            return
        # An absolute path: ReFrame joins it to its reference prefix unchanged.
        self.reference = {'$ref': str(path)}

    def read_job_output(self, program=None, filename=None):
        '''The one way a check reads what its job wrote:
        ``(stdout, stderr, stdout_path, stderr_path)`` of the job, or with
        ``filename`` ``(text, path)`` of that file in the stage directory. A
        file that cannot be read fails sanity naming the program, the file
        and the error.'''
        import os

        names = [filename] if filename else [self.job.stdout, self.job.stderr]
        paths = [os.path.join(self.stagedir, str(name)) for name in names]
        texts = []
        for path in paths:
            try:
                with open(path, errors='replace') as f:
                    texts.append(f.read())
            except OSError as exc:
                raise SanityError(f'cannot read the {program or "job"} output {path}: '
                                  f'{exc.strerror}') from None
        return (texts[0], paths[0]) if filename else (*texts, *paths)

    @contextlib.contextmanager
    def configuration(self):
        """Turn a :class:`ClusterproofError` raised inside into a failure of
        the check (:class:`ConfigurationError`) naming the partition."""
        try:
            yield
        except ClusterproofError as err:
            raise ConfigurationError(f'{self.current_partition.fullname}: {err}') from None

    def skip_unless_declared(self, section, what):
        """Skip when the partition declares no ``extras[section]``: hardware
        the system does not have (``what`` says what the section holds).
        Returns the section."""
        found = self.declared(section, default=None)
        self.skip_if(not found, f'{self.current_partition.fullname} declares no '
                                f"extras[{section!r}] ({what})")
        return found

    def parsed_output(self, parse, filename=None, **options):
        """``parse(text, source=path, **options)`` of the job's standard
        output (or of ``filename`` in the stage directory), read and parsed
        once per test case; an unreadable file or a parse error fails sanity
        with the parser's message, which names the file."""
        import os

        from clusterproof.parsers import ParseError

        path = os.path.join(self.stagedir, filename or str(self.job.stdout))
        cache = self.__dict__.setdefault('_cp_parsed', {})
        key = (parse.__module__, parse.__qualname__, path, tuple(sorted(options)))
        if key not in cache:
            text, _ = self.read_job_output(filename=filename or str(self.job.stdout))
            try:
                cache[key] = parse(text, source=path, **options)
            except ParseError as err:
                raise SanityError(str(err)) from None
        return cache[key]

    def declared(self, section, key=None, default=KeyError):
        """Declared hardware of the current partition (see clusterproof.site.hardware)."""
        return declared(self.current_partition, section, key, default)

    def use_binary(self, executable, spec, version_argv=None, view_subdirs=('bin',)):
        """Find ``executable`` (Spack view, then PATH), record its provenance,
        and return its path; skip the test with the build command if absent.

        ``version_argv`` is the command that prints the program's version,
        with ``{exe}`` standing for the path (default: ``{exe} --version``).
        A binary from the view also records its concretized spec from
        ``spack.lock`` and the lock file's hash, and keeps a copy of the lock
        file with the results (see clusterproof.site.binaries).
        """
        found = binaries.locate(executable, view_subdirs)
        self.skip_if(found is None,
                     f'{executable} not found in the Spack view ({binaries.spack_view()}) '
                     f'or on PATH; build it with: {binaries.build_command(spec)}')
        if found.source == 'spack':
            binaries.spack_provenance(found, spec)
        self.binary_path = found.path
        self.spack_spec = found.spack_spec
        self.spack_lock_hash = found.spack_lock_hash
        self.spack_lock_copy = found.spack_lock_copy
        argv = [a.format(exe=found.path) for a in (version_argv or ['{exe}', '--version'])]
        self.binary_version = binaries.program_version(argv) or 'unknown'
        return found.path

    def record_built_binary(self, path, source_files, compiler_version):
        """Provenance of a binary this check (or its build fixture) compiled:
        its path, and as its version the compiler and the sha256 of
        ``source_files``."""
        built = binaries.built_binary(path, source_files, compiler_version)
        self.binary_path = built.path
        self.binary_version = built.version
        self.spack_spec = ''
        self.spack_lock_hash = ''
        self.spack_lock_copy = ''
        return built.path

    #: shell commands the job script runs before the check's own (creating
    #: test directories), and at its exit however it exits (removing them):
    #: mixins append to them (see clusterproof.checklib.testdirs)
    _cp_job_first = ()
    _cp_job_at_exit = ()

    @run_before('run', always_last=True)
    def _cp_record_exit_status(self):
        '''The job script records the program's exit status (the first
        command after it, whatever the check runs next) and its own at exit,
        in :data:`clusterproof.methods.job_failure.EXIT_STATUS_FILE`; it runs
        the commands of :attr:`_cp_job_first` first and those of
        :attr:`_cp_job_at_exit` when it exits.'''
        from clusterproof.methods import job_failure

        self.prerun_cmds = [*job_failure.shell_at_exit(self._cp_job_at_exit),
                            *self._cp_job_first, *self.prerun_cmds]
        self.postrun_cmds = [job_failure.SHELL_RECORD_PROGRAM_STATUS, *self.postrun_cmds]

    def _cp_job(self):
        if isinstance(self, rfm.CompileOnlyRegressionTest):
            return self.build_job
        return self.job

    def program_failure(self, output):
        '''Why the program says it did not finish, from its own output (the
        job's stdout and stderr), or None. A check whose parser knows its
        program's signs (fio's ``terminating on signal N``) overrides this;
        its reason then replaces the bare exit status in the failure.'''
        return None

    @run_before('sanity')
    def _cp_job_ended_well(self):
        '''A job whose program exited non-zero, was killed by a signal, or
        ended in a Slurm state other than COMPLETED (a dead node, the time
        limit, a cancellation, out of memory) fails naming the cause
        (:func:`clusterproof.methods.job_failure.failure_cause`): the job's
        output, its exit statuses, Slurm's state of the job and of its nodes.
        A job that ended well fails too when its output holds an error line
        of the MPI library, UCX or Slurm (:mod:`clusterproof.parsers.runtime_errors`),
        quoting it.
        A job that never wrote its output fails naming its state and nodes,
        not a missing file.'''
        import os

        from clusterproof.methods import job_failure
        from clusterproof.parsers import runtime_errors

        if self.is_dry_run():           # --dry-run: nothing ran, nothing to read
            return
        job = self._cp_job()
        if job is None:
            return
        state = job.state or 'unknown'
        nodes = sorted(job.nodelist or [])
        wrote = os.path.exists(os.path.join(self.stagedir, str(job.stdout)))
        statuses = job_failure.read_exit_status(os.path.join(self.stagedir,
                                                             job_failure.EXIT_STATUS_FILE))
        failed = job_failure.job_failed(state, statuses, job.exitcode)
        text = ''
        if wrote and job is self.job:
            stdout, stderr, _, _ = self.read_job_output()
            text = stdout + '\n' + stderr
        if wrote and not failed:
            # ended well, but the MPI library, UCX or Slurm reported an error
            found = runtime_errors.first_error(text)
            if found:
                raise SanityError(f'{found[0]} reported an error, although the job ended '
                                  f'well: {found[1][:200]} (job {job.jobid} on '
                                  f'{self.current_partition.fullname}, node(s) '
                                  f'{compress(nodes) or "unknown"})')
            return
        down = []
        if self.current_partition.scheduler.registered_name == 'slurm':
            down = job_failure.slurm_down_nodes(nodes)
        cause = job_failure.failure_cause(text, state, self.time_limit,
                                          statuses.get('program'), down)
        own = self.program_failure(text) if text else None
        if own and (cause is None or cause.startswith(('the program exited', 'signal:'))):
            cause = own         # what the program itself printed, read by its parser
        where = (f'job {job.jobid} on {self.current_partition.fullname} ended in state '
                 f'{state} on node(s) {compress(nodes) or "unknown"}')
        if not wrote:
            raise SanityError(f'the job wrote no output ({job.stdout}); {where}'
                              + (f': {cause}' if cause else ''))
        if cause is None and 'program' not in statuses and statuses.get('script'):
            cause = (f'the job stopped before its program started (exit status '
                     f'{statuses["script"]})')
        detail = cause or 'the job failed'
        if not own and cause and cause.startswith(('the program exited', 'the job stopped')):
            line = job_failure.first_error_line(text)
            detail += f': {line}' if line else ''
        raise SanityError(f'{detail} ({where})')

    @run_before('run', always_last=True)
    def _cp_fingerprint_probe(self):
        '''Run the fingerprint probe on every node of the job, before the
        program (a build runs no job: nothing to probe).'''
        import os

        if isinstance(self, rfm.CompileOnlyRegressionTest) or self.job is None:
            return
        with open(os.path.join(self.stagedir, fingerprint.SCRIPT), 'w') as f:
            f.write(fingerprint.script(self.job.scheduler.registered_name,
                                       self.binary_path or self.executable, self.stagedir))
        self.prerun_cmds = [fingerprint.COMMAND, *self.prerun_cmds]

    @run_before('sanity')
    def _cp_record_fingerprint(self):
        '''Record the fingerprints and the binary's identity (a probe that
        could not run leaves them empty; it never fails the test case).'''
        import os

        if self.is_dry_run():
            return
        try:
            with open(os.path.join(self.stagedir, fingerprint.OUTPUT)) as f:
                nodes = fingerprint.parse(f.read())
            hashes = fingerprint.store(nodes)
        except (OSError, ClusterproofError):
            return
        self.cp_fingerprint = fingerprint.by_nodes(hashes)
        self.cp_binary_sha256, self.cp_mpi_library = fingerprint.binary_identity(nodes)

    @run_before('sanity')
    def _cp_require_provenance(self):
        '''A result without provenance is not a result: a check must have
        recorded the binary it ran (use_binary or record_built_binary).'''
        if not self.binary_path and self.executable == sys.executable:
            # The program is clusterproof itself (``python -m clusterproof ...``
            # report): the interpreter and cp_git_rev say what ran.
            self.binary_path = sys.executable
            self.binary_version = f'Python {platform.python_version()}'
        if not self.binary_path:
            raise SanityError(
                f'{type(self).__name__}: no binary provenance (binary_path is empty); '
                f'the check must call self.use_binary(executable, spec) or '
                f'self.record_built_binary(path, sources, compiler) before it runs')


class MpiRanks(rfm.RegressionTestPlugin):
    """An MPI program under srun: a rank that dies (a crash in MPI_Init)
    ends the step at once (``placement.SRUN_END_ON_CRASH``) and the test
    fails then, instead of its peers waiting for it until the time limit.
    mpirun aborts the job by itself."""

    @run_before('run')
    def end_the_step_when_a_rank_dies(self):
        if (self.job.launcher.registered_name == 'srun'
                and placement.SRUN_END_ON_CRASH not in self.job.launcher.options):
            self.job.launcher.options = [*self.job.launcher.options, placement.SRUN_END_ON_CRASH]


class OneRankPerCore(MpiRanks):
    """MPI ranks of the HPL-type runs (HPL, HPCC): one per physical core of
    each node, or one per node on the emulated cluster (its nodes share this
    machine's cores); single-threaded OpenMP and BLAS; OpenMPI's mpirun on
    this machine when the partition has no scheduler."""

    def set_mpi_ranks(self, num_nodes):
        self.cp_emulated = is_emulated(self.current_partition)
        per_node = hpl_ranks_per_node(self.declared('hardware'), self.cp_emulated)
        self.num_tasks_per_node = per_node
        self.num_tasks = num_nodes * per_node
        self.env_vars['OMP_NUM_THREADS'] = '1'
        self.env_vars['OPENBLAS_NUM_THREADS'] = '1'
        self.env_vars.update(emulated_mpi_env(self.cp_emulated))

    @run_before('run')
    def use_mpirun_without_scheduler(self):
        import os

        from reframe.core.backends import getlauncher

        if self.current_partition.launcher_type.registered_name == 'local' and self.num_tasks > 1:
            self.job.launcher = getlauncher('mpirun')()
            self.env_vars.update(mpirun_env(os.geteuid()))


class ThreadPlacement(rfm.RegressionTestPlugin):
    """Threads dealt round-robin over the client nodes of the allocation, as
    the published storage methodology does: one placement
    (clusterproof/methods/placement.py) for every launcher.

    The check provides ``threads``; :meth:`place_threads` sizes the job from
    it and the partition's declared client node count (an error naming the
    system and key when that is missing). MPI checks take
    :class:`RoundRobinRanks`; IOzone writes the same placement as its
    ``-+m`` threadlist with :meth:`placement_command`.
    """

    #: client nodes the threads are dealt over (logged with each result)
    client_nodes = variable(int, value=0)

    def place_threads(self, one_task_per_node=False):
        """Size the job for ``self.threads`` threads over the client nodes:
        one MPI rank per thread, or (``one_task_per_node``, IOzone) one task
        per client node whose threads the program starts itself."""
        with self.configuration():
            self.placement = placement.layout(partition_node_count(self.current_partition),
                                              self.threads)
        self.client_nodes = self.placement.num_nodes
        if one_task_per_node:
            self.num_tasks = self.placement.num_nodes
            self.num_tasks_per_node = 1
        else:
            self.num_tasks = self.threads
            self.num_tasks_per_node = self.placement.max_threads_per_node()
        self.oversubscribed = not one_task_per_node and self.placement.oversubscribed(
            self.current_partition.processor.num_cpus)
        if self.oversubscribed and self.current_partition.scheduler.registered_name == 'slurm':
            # Slurm refuses --ntasks-per-node above a node's CPUs even with
            # --overcommit ("Requested node configuration is not available"):
            # ask for the client nodes instead; srun/the hostfile deal the ranks.
            self.num_tasks_per_node = None
            self.job.options += [f'--nodes={self.placement.num_nodes}', '--overcommit']

    def placement_command(self, nodes, fmt, *extra):
        """The shell command that writes the placement in the job, for the
        client nodes ``nodes`` (a shell word: ``"$SLURM_JOB_NODELIST"``)."""
        import shlex
        cli = shlex.join(command())
        return (f'{cli} placement --nodes "{nodes}" --threads {self.threads} '
                f'--format {fmt} {shlex.join(extra)}'.rstrip())


class RoundRobinRanks(ThreadPlacement, MpiRanks):
    """MPI ranks in the placement of :class:`ThreadPlacement`: under Slurm's
    srun ``--distribution=cyclic``; under mpirun a hostfile with one client
    node per rank, written in the job by ``clusterproof placement``, and
    ``--map-by node``; without a scheduler (``local``) mpirun on this
    machine. The check calls :meth:`place_threads` after set-up."""

    #: the hostfile the mpirun launcher reads, in the stage directory
    hostfile = 'hostfile'

    @run_before('run')
    def launch_ranks_round_robin(self):
        import os

        from reframe.core.backends import getlauncher

        launcher = self.current_partition.launcher_type.registered_name
        cores = self.current_partition.processor.num_cpus
        if launcher in ('srun', 'mpirun'):
            if launcher == 'mpirun':
                self.prerun_cmds = [self.placement_command('$SLURM_JOB_NODELIST', 'hostfile')
                                    + f' > {self.hostfile}']
            self.job.launcher.options = self.placement.launcher_options(launcher, cores,
                                                                        self.hostfile)
        else:                   # no scheduler: MPI ranks on this machine
            self.job.launcher = getlauncher('mpirun')()
            self.job.launcher.options = ['--oversubscribe']
            self.env_vars.update(mpirun_env(os.geteuid()))
