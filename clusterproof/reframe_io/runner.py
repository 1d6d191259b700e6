"""Running ReFrame, and what its command line and run report say.

The one module that starts ``reframe`` for clusterproof (``acceptance``, the
tests, the scripts) and reads back what it did, and the one that decides
which configuration it reads (:func:`reframe_env`, ``RFM_CONFIG_FILES``:
the one the environment names, else the project's
``site_config/settings.py``). A caller runs a session with :func:`run`, or
starts ``reframe`` with :func:`start` (to watch or interrupt it) or
:func:`invoke` (to list, describe or show its configuration); a shell script
runs it with ``clusterproof run`` or ``clusterproof nightly``.
Every run is given ``--report-file`` and the session (its UUID, its test
cases) is read from that JSON run report, never from ReFrame's console
text. A run whose
selection matched no test case is an error naming the selection
(:class:`NoTestCase`, :func:`require_cases`): ReFrame itself reports
``Ran 0/0 test case(s)``, exits 0 and writes no report. It also parses
ReFrame's ``--mode`` option (:func:`reframe_mode`, what
:func:`clusterproof.modes.current_mode` decides the mode with), and reads
what the checks are (:func:`describe`: each test case's check, parameters
and figures, from ``reframe --describe``).

Written against ReFrame 4.10.4 (``requirements.lock``), whose run report has
``session_info.data_version`` :data:`DATA_VERSION`; a report of another
major version is refused with the version named, so an upgrade of ReFrame
that changes the format fails here and not somewhere downstream.

This module imports nothing from ReFrame: check files import
``clusterproof.modes`` inside ReFrame, and the tools run without it.
"""

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from clusterproof import ClusterproofError
from clusterproof.paths import REPO, SETTINGS_FILE, results_dir

#: the run-report format read here (``session_info.data_version`` of ReFrame 4.10.4)
DATA_VERSION = '4.2'


class NotARunReport(ClusterproofError):
    """The file is absent, unreadable or no run report (not JSON, no
    ``session_info.uuid``): what a run interrupted before writing its report
    leaves. A report of another format version is not this: it is an error."""


class NoTestCase(ClusterproofError):
    """A ReFrame run whose selection (``-c``, ``-n``, ``-x``, ``-t``,
    ``--system``, ``--mode``...) matched no test case: ReFrame prints ``Ran
    0/0 test case(s)``, exits 0 and writes no run report; clusterproof
    takes it for an error, never for a run that passed."""


#: the environment variable that names ReFrame's configuration file(s)
CONFIG_VARIABLE = 'RFM_CONFIG_FILES'


def config_files(env=None):
    """The configuration a ``reframe`` started with the environment ``env``
    (default this process's) reads: the file(s) ``env`` names, else the
    project's ``site_config/settings.py``. The one place that decides it."""
    env = os.environ if env is None else env
    return env.get(CONFIG_VARIABLE) or str(SETTINGS_FILE)


def reframe_env(base=None, *, config=None):
    """A copy of the environment ``base`` (default this process's) in which
    ``reframe`` reads ``config`` (a file, or files joined with ``:``), or
    else :func:`config_files` of ``base``."""
    env = dict(os.environ if base is None else base)
    env[CONFIG_VARIABLE] = str(config) if config else config_files(env)
    return env


def reframe_command():
    """The ``reframe`` of this Python environment, else of the checkout's
    ``.venv`` (a script started with another Python)."""
    here = Path(sys.executable).parent / 'reframe'
    venv = REPO / '.venv' / 'bin' / 'reframe'
    return str(venv if not here.exists() and venv.exists() else here)


def installed():
    """Whether :func:`reframe_command` is there (``make setup`` was run)."""
    return Path(reframe_command()).exists()


def command(args, prefix=()):
    """The command line ``PREFIX reframe ARGS`` (``prefix``: ``nice -n 10``,
    ``runuser -u U -- env -i ...``: what runs ``reframe``)."""
    return [*map(str, prefix), reframe_command(), *map(str, args)]


def start(args, *, env=None, cwd=REPO, prefix=(), **popen):
    """Start ``PREFIX reframe ARGS`` in ``cwd`` with :func:`reframe_env` of
    ``env`` and return its :class:`subprocess.Popen` (``popen``: its
    keywords, e.g. ``stdout``), for a caller that watches or interrupts the
    run; it gives ``--report-file`` (:func:`report_option`) and reads the
    session with :func:`session_of`."""
    return subprocess.Popen(command(args, prefix), cwd=cwd, env=reframe_env(env), **popen)


def invoke(args, *, env=None, cwd=REPO, prefix=(), timeout=None):
    """Run ``PREFIX reframe ARGS`` to its end (a listing, ``--show-config``,
    or a run whose report the caller reads itself) and return the
    :class:`subprocess.CompletedProcess`, its output captured as text."""
    return subprocess.run(command(args, prefix), cwd=cwd, env=reframe_env(env),
                          capture_output=True, text=True, timeout=timeout)


def _is_reframe(argv0):
    path = Path(argv0 or '')
    return path.name == 'reframe' or (path.name == '__main__.py' and path.parent.name == 'reframe')


def reframe_mode(argv=None):
    """The ``--mode`` given to the running ``reframe`` command, or None (no
    ``--mode``, or this process is not ReFrame)."""
    argv = sys.argv if argv is None else argv
    if not argv or not _is_reframe(argv[0]):
        return None
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument('--mode')
    known, _ = parser.parse_known_args(argv[1:])
    return known.mode


@dataclass
class Run:
    """A finished ``reframe`` run: its exit status, its console output (for
    people; nothing is read from it), the run report file and its data."""
    returncode: int
    output: str
    report_file: Path
    report: dict

    @property
    def uuid(self):
        """The session UUID (the key of the session in the results database)."""
        return self.report['session_info']['uuid']

    @property
    def testcases(self):
        """Every test case of the session (see :func:`testcases`)."""
        return testcases(self.report)


def testcases(run_report):
    """Every test case of a run report's data (of every retry round)."""
    return [tc for run in run_report.get('runs', []) for tc in run.get('testcases', [])]


def default_report_file(env=None):
    """A new run report file under ``<results>/reports`` of the environment
    ``env`` (beside the ones the site configuration names
    ``run-report-<n>.json``)."""
    return results_dir(env) / 'reports' / f'run-report-cp-{time.strftime("%Y%m%d-%H%M%S")}-' \
                                       f'{os.getpid()}-{time.monotonic_ns()}.json'


def report_option(report_file):
    """The options that make ReFrame write its run report to ``report_file``
    (for a caller that runs ``reframe`` itself and reads the session with
    :func:`session_of`)."""
    return ['--report-file', str(report_file)]


def session_of(report_file):
    """The session UUID in the run report ``report_file``; None when ReFrame
    wrote none (it ran no test case or failed before)."""
    path = Path(report_file)
    return read_report(path)['session_info']['uuid'] if path.is_file() else None


#: ReFrame's options that decide which test cases a run selects, with a value
_SELECTING = {'-c', '--checkpath', '-n', '--name', '-x', '--exclude', '-t', '--tag', '-T',
              '--exclude-tag', '-p', '--prgenv', '-E', '--filter-expr', '--maintainer', '-P',
              '--parameterize', '--system', '--mode', '--restore-session'}
#: ... and without one
_SELECTING_FLAGS = {'-R', '--recursive', '--cpu-only', '--gpu-only', '--failed'}


def selection(args):
    """The options of the ``reframe`` arguments ``args`` that select its test
    cases, as one shell-quoted string (what an empty selection names)."""
    args = [str(a) for a in args]
    out = []
    for i, arg in enumerate(args):
        opt = arg.split('=', 1)[0] if arg.startswith('--') else arg
        if opt in _SELECTING_FLAGS or (opt in _SELECTING and opt != arg):
            out.append(arg)
        elif arg in _SELECTING and i + 1 < len(args):
            out += [arg, args[i + 1]]
    return shlex.join(out)


def cases_selected(report_file, status):
    """How many test cases the finished ``reframe`` run selected: the count
    of its run report ``report_file``; 0 when ReFrame ended with status 0
    without writing it (it writes none of a session without test cases);
    None when it failed before (no report, non-zero status)."""
    path = Path(report_file)
    return _cases_of(read_report(path) if path.is_file() else None, status)


def _cases_of(run_report, status):
    """:func:`cases_selected` of the run report's data ``run_report`` (None: no report)."""
    if run_report is not None:
        return int(run_report['session_info'].get('num_cases', len(testcases(run_report))))
    return 0 if status == 0 else None


def no_case_message(args):
    """The one line that says the run ``reframe ARGS`` selected nothing."""
    sel = selection(args)
    return (f'ReFrame selected no test case: nothing matches {sel or "(no selection)"}; '
            f'list what it does match with: reframe {sel} -l')


def require_cases(args, report_file, status):
    """Raise :class:`NoTestCase` when the finished run ``reframe ARGS``
    (exit ``status``, run report ``report_file``) selected no test case:
    the one rule every command that runs ReFrame applies."""
    if cases_selected(report_file, status) == 0:
        raise NoTestCase(no_case_message(args))


def run(args, *, env=None, cwd=REPO, report_file=None, echo=False, timeout=None, log=None):
    """Run ``reframe ARGS --report-file FILE`` (``report_file``, default
    :func:`default_report_file` of ``env``) and return its :class:`Run`. With ``echo``
    the console output is copied to stdout as it comes, and to the file ``log``
    when given (and ``timeout``, in seconds, is not applied). A selection of no test case is
    :class:`NoTestCase` (:func:`require_cases`); a run that wrote no report
    otherwise (ReFrame failed before any test case) is an error naming the
    exit status and the last lines of its output."""
    report_file = Path(report_file or default_report_file(env)).resolve()
    report_file.parent.mkdir(parents=True, exist_ok=True)
    report_file.unlink(missing_ok=True)
    args = [*map(str, args), *report_option(report_file)]
    if echo:
        with start(args, env=env, cwd=cwd, stdout=subprocess.PIPE,
                   stderr=subprocess.STDOUT, text=True) as proc:
            lines = []
            with open(log or os.devnull, 'a') as copy:
                for line in proc.stdout:
                    lines.append(line)
                    for out in (sys.stdout, copy):
                        out.write(line)
                        out.flush()
            status = proc.wait()
        output = ''.join(lines)
    else:
        proc = subprocess.run(command(args), cwd=cwd, env=reframe_env(env),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=timeout)
        status, output = proc.returncode, proc.stdout
    run_report = read_report(report_file) if report_file.is_file() else None
    if _cases_of(run_report, status) == 0:
        raise NoTestCase(no_case_message(args))
    if run_report is None:
        tail = '\n'.join(output.rstrip().splitlines()[-15:]) or '(no output)'
        raise ClusterproofError(f'ReFrame wrote no run report {report_file} (exit status '
                                f'{status}): it failed before running any test case; its '
                                f'output ends:\n{tail}')
    return Run(status, output, report_file, run_report)


def read_report(path):
    """The data of a ReFrame run report (JSON), its format version checked:
    the one place that checks it. :class:`NotARunReport` when the file is
    absent, unreadable or no report."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except OSError as err:
        raise NotARunReport(f'{path}: cannot read: {err.strerror}') from None
    except ValueError as err:
        raise NotARunReport(f'{path}: not a ReFrame run report (not JSON: {err})') from None
    info = data.get('session_info') if isinstance(data, dict) else None
    if not isinstance(info, dict) or 'uuid' not in info:
        raise NotARunReport(f'{path}: not a ReFrame run report (no session_info.uuid)')
    version = str(info.get('data_version', '?'))
    if version.split('.')[0] != DATA_VERSION.split('.')[0]:
        raise ClusterproofError(f'{path}: run report format {version}; clusterproof reads '
                                f'format {DATA_VERSION} (ReFrame 4.10)')
    return data


@dataclass(frozen=True)
class Case:
    """A test case as ReFrame loads it (``reframe --describe``): its check
    (the test class), its parameter values (``{name: value}``, as text) and
    the names of its figures (empty: the check makes its figures at run time)."""
    check: str
    parameters: dict
    figures: tuple


def _parameters(display_name):
    """``{name: value}`` of a display name ``Stream %placement=cores %membind=local``."""
    out = {}
    for part in display_name.split(' %')[1:]:
        name, _, value = part.partition('=')
        out[name.strip()] = value.strip()
    return out


def describe(args, *, env=None, cwd=REPO):
    """The test cases (:class:`Case`) that ``reframe ARGS`` selects, as
    ReFrame's loader makes them (``reframe ARGS --describe``, JSON). A
    failure of ReFrame is an error naming the command and its last lines."""
    cmd = [reframe_command(), *map(str, args), '--describe']
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    try:
        data = json.loads(proc.stdout) if proc.returncode == 0 else None
    except ValueError:
        data = None
    if not isinstance(data, list):
        tail = '\n'.join((proc.stderr + proc.stdout).rstrip().splitlines()[-10:]) or '(no output)'
        raise ClusterproofError(f'{shlex.join(["reframe", *map(str, args), "--describe"])} '
                                f'failed (exit status {proc.returncode}); its output ends:\n{tail}')
    return [Case(d['@class'], _parameters(d.get('display_name', '')),
                 tuple(d.get('perf_variables') or ())) for d in data if '@class' in d]


# ---------------------------------------------------------------- ReFrame inside a node's job

#: the ReFrame configuration a job that already holds its node runs ReFrame
#: with: the site's own (``site_config/settings.py``), every Slurm partition
#: run by the local scheduler (no job of its own: the test cases run one after
#: another in the job, their launcher, srun, starts steps inside it)
IN_JOB_SETTINGS = '''"""ReFrame configuration for ReFrame run inside a job that holds its node
(written by clusterproof.reframe_io.runner.write_in_job_settings): the
site's {settings}, its Slurm partitions run by the local scheduler."""

import importlib.util

_spec = importlib.util.spec_from_file_location('clusterproof_site_settings', {settings!r})
_site = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_site)
site_configuration = _site.site_configuration
for _system in site_configuration['systems']:
    for _part in _system['partitions']:
        if _part.get('scheduler') == 'slurm':
            _part.update(scheduler='local', access=[], max_jobs=1)
'''


def write_in_job_settings(path, settings=None):
    """Write the configuration of :data:`IN_JOB_SETTINGS` (of the site
    configuration ``settings``, default ``site_config/settings.py``) to
    ``path``; returns ``path``."""
    from clusterproof.paths import SETTINGS_FILE, write_atomic
    write_atomic(Path(path), IN_JOB_SETTINGS.format(settings=str(settings or SETTINGS_FILE)))
    return Path(path)


def in_job_command(args, settings, report_file, stage):
    """The argv that runs ``reframe ARGS`` inside a job holding one node:
    the configuration :func:`write_in_job_settings` wrote (``settings``), the
    test cases one after another (``--exec-policy=serial``: two benchmarks
    never share the node), stage and output under ``stage``, the run report
    to ``report_file``."""
    return ['env', f'RFM_CONFIG_FILES={settings}', reframe_command(), *map(str, args),
            '--exec-policy=serial', '--stage', f'{stage}/stage', '--output', f'{stage}/output',
            *report_option(report_file), '-r']
