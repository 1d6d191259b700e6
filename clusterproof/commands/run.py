"""``clusterproof run``: the checks through ReFrame in one mode, its session
tagged with the mode and the checkout's revision (``make run``)."""

import os
import sys
from pathlib import Path

from clusterproof import ClusterproofError
from clusterproof.site.provenance import git_revision
from clusterproof.modes import MODES
from clusterproof.paths import REPO, results_dir
from clusterproof.reframe_io import runner

#: ReFrame's performance report of ``clusterproof run``: the mode and whether
#: each figure is a smoke or emulated one, beside the previous run's value
PERFORMANCE_REPORT = 'now-1d:now/last:+cp_mode+cp_smoke+cp_emulated/+result'


def register(subparsers):
    p = subparsers.add_parser(
        'run', help='the checks through ReFrame in one mode',
        description='Run the checks (CLUSTERPROOF_CHECKS, default reframe_checks/) with '
                    'ReFrame in one mode, with the project\'s configuration (RFM_CONFIG_FILES, '
                    'else site_config/settings.py); the session is stored in the results '
                    'directory\'s results.db, tagged with the mode and the git revision, and '
                    'ReFrame\'s performance report shows each figure beside the previous '
                    'run\'s. Exit status: ReFrame\'s; 2 when the selection matched no test '
                    'case or ReFrame failed before running any (the reason on stderr). '
                    'scripts/run-local (make run) runs it on system local.')
    p.add_argument('--mode', choices=MODES, default=None,
                   help='the mode (default: CLUSTERPROOF_MODE, else smoke)')
    p.add_argument('--system', help="the system to run on (default: ReFrame's auto-detection)")
    p.add_argument('--report-file', type=Path,
                   help='where ReFrame writes its run report (default: a new file under '
                        '<results>/reports)')
    p.add_argument('--log', type=Path,
                   help="a file ReFrame's output is appended to as it comes, and the reason "
                        'of an exit status 2')
    p.add_argument('--print-config', action='store_true',
                   help='print the ReFrame configuration file(s) a run reads (RFM_CONFIG_FILES, '
                        'else site_config/settings.py) and run nothing; .venv/bin/activate '
                        'sets RFM_CONFIG_FILES from it')
    p.add_argument('reframe_args', nargs='*', metavar='-- REFRAME_OPTION',
                   help='more options for reframe, after --')
    p.set_defaults(func=run)


def checks_dir(environ=None):
    """The checks a run selects from: ``CLUSTERPROOF_CHECKS``, else ``reframe_checks/``."""
    environ = os.environ if environ is None else environ
    return environ.get('CLUSTERPROOF_CHECKS') or str(REPO / 'reframe_checks')


def reframe_args(mode, system, extra, environ=None):
    """The ``reframe`` arguments that run the checks in ``mode`` on
    ``system`` (None: ReFrame's auto-detection), ``extra`` after them."""
    return ['-c', checks_dir(environ), '-r', '--mode', mode,
            *(['--system', system] if system else []), *extra]


def run_env(environ=None):
    """The environment ReFrame runs in: ``environ`` (default this
    process's) without ``CLUSTERPROOF_MODE``, which ReFrame's ``--mode``
    decides and a value left in the environment would only contradict."""
    env = dict(os.environ if environ is None else environ)
    env.pop('CLUSTERPROOF_MODE', None)
    return env


def run_reframe(args, env, report_file=None, log=None):
    """:func:`clusterproof.reframe_io.runner.run` of ``args``, its output
    copied to stdout and ``log``: the run, or None when ReFrame selected no
    test case or failed before any (the reason on stderr and in ``log``)."""
    try:
        return runner.run(args, env=env, report_file=report_file, echo=True, log=log)
    except ClusterproofError as err:
        print(f'clusterproof: {err}', file=sys.stderr)
        if log:
            with open(log, 'a') as out:
                print(f'clusterproof: {err}', file=out)
        return None


def run(args):
    if args.print_config:
        print(runner.config_files())
        return 0
    mode = args.mode or os.environ.get('CLUSTERPROOF_MODE') or 'smoke'
    env = run_env()
    results = results_dir(env)
    results.mkdir(parents=True, exist_ok=True)
    print(f'clusterproof: running the checks (system {args.system or "auto-detected"}, '
          f'mode {mode})', flush=True)
    extra = ['--performance-report', PERFORMANCE_REPORT, '--session-extras',
             f'clusterproof_mode={mode},clusterproof_git_rev={git_revision()}',
             *args.reframe_args]
    done = run_reframe(reframe_args(mode, args.system, extra, env), env,
                       args.report_file, args.log)
    print(f'\nclusterproof: results in {results}\n'
          f'  perflogs:          {results}/perflogs/\n'
          f'  results database:  {results}/results.db  (reframe --list-stored-sessions)\n'
          f'  run reports:       {results}/reports/')
    return 2 if done is None else done.returncode
