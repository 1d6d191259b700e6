"""``clusterproof nightly``: the nightly regression run, from the checks in
mode nightly to the morning page, the comparison and the notification."""

import fcntl
import os
import subprocess
import sys
import time

from clusterproof import command
from clusterproof.commands.run import reframe_args, run_env, run_reframe
from clusterproof.paths import results_dir
from clusterproof.reframe_io.database import session_index

#: the exit statuses of ``clusterproof nightly``
OK, REGRESSION, SETUP, LOCKED, NOT_SENT = 0, 1, 2, 3, 4


def register(subparsers):
    p = subparsers.add_parser(
        'nightly', help='the nightly regression run: checks, page, compare, notify',
        description='The nightly regression run: the checks (CLUSTERPROOF_CHECKS, default '
                    'reframe_checks/) in mode nightly, stored in ReFrame\'s results database; '
                    'an HTML page of the last 60 nightly sessions (reports/nightly-STAMP.html, '
                    'reports/nightly-latest.html); clusterproof compare of the session against '
                    'the references and the recent history; clusterproof store ingest (the '
                    'change detector\'s findings); then clusterproof notify: what is new and '
                    'needs a person, sent once (a system without '
                    'site_config/notify/<system>.yaml is not notified). ReFrame\'s output and '
                    'the comparison go to reports/nightly-STAMP.log. One nightly run at a '
                    'time per results directory (its nightly.lock). Exit status: 0 '
                    'all good; 1 regression, drift or failed test; 2 usage or set-up error, or '
                    'a selection of no test case; 3 another nightly run holds the lock; 4 no '
                    'regression but a notification not sent (its items are kept and sent by '
                    'the next run). scripts/nightly runs it.')
    p.add_argument('--wait', action='store_true',
                   help='wait for a running nightly run instead of exiting with status 3')
    p.add_argument('--system', help="the system to run on (default: ReFrame's auto-detection)")
    p.add_argument('reframe_args', nargs='*', metavar='-- REFRAME_OPTION',
                   help='more options for reframe, after --')
    p.set_defaults(func=run)


def _lock(results, wait):
    """The nightly lock of ``results``, held open (the process holds it until
    it ends), or None when another run holds it and ``wait`` is false."""
    path = results / 'nightly.lock'
    held = open(path, 'a')
    if wait:
        print(f'nightly: waiting for {path}', flush=True)
        fcntl.flock(held, fcntl.LOCK_EX)
    else:
        try:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _read(path.with_name('nightly.lock.pid')) or '?'
            print(f'nightly: another nightly run holds {path} (pid {pid}); not starting a '
                  'second one. Use --wait to wait for it.', file=sys.stderr)
            held.close()
            return None
    path.with_name('nightly.lock.pid').write_text(f'{os.getpid()}\n')
    return held


def _read(path):
    try:
        return path.read_text().strip()
    except OSError:
        return ''


def _stored(db, session):
    """Whether ReFrame stored ``session`` in its results database ``db``."""
    try:
        return any(uuid == session for uuid, _ in session_index(db))
    except Exception:       # a damaged or empty database: the run report stands for it
        return False


def _command(args, env, log=None):
    """``clusterproof ARGS`` run by this interpreter; its output (stdout and
    stderr) copied to ``log`` as it comes when given. Its exit status."""
    cmd = command(*args)
    if log is None:
        return subprocess.run(cmd, env=env).returncode
    with subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True) as proc, open(log, 'a') as copy:
        for line in proc.stdout:
            for out in (sys.stdout, copy):
                out.write(line)
                out.flush()
        return proc.wait()


def _after_run(session, system, stamp, results, env, log):
    """The page, the comparison, the findings and the notification of the
    night ``session``: ``(compare's status, notify's status)``, or None when
    the page could not be written."""
    reports_dir = results / 'reports'
    sel = ['--system', system] if system else []
    page = reports_dir / f'nightly-{stamp}.html'
    if _command(['report', '--mode', 'nightly', '--last', '60', *sel,
                 '--title', f'clusterproof nightly {stamp}', '-o', str(page)], env) != 0:
        return None
    latest = reports_dir / 'nightly-latest.html'
    latest.unlink(missing_ok=True)
    latest.symlink_to(page.name)
    compared = _command(['compare', session, *sel], env, log)
    if _command(['store', 'ingest'], env, log) != 0:
        print('nightly: findings not kept (clusterproof store ingest failed); clusterproof '
              'changes judges them when it runs', file=sys.stderr)
    notified = _command(['notify', session, *sel], env, log)
    if notified != 0:
        print(f'nightly: notification not sent (clusterproof notify exit status {notified}); '
              'the night\'s results are kept, and what was not sent goes with the next run',
              file=sys.stderr)
    print(f'nightly: session {session}; report {page}')
    return compared, notified


def _verdict(compared, ran, notified):
    """The night's exit status from those of compare, ReFrame and notify."""
    if compared != 0:
        print(f'nightly: REGRESSION (compare exit status {compared})')
        return REGRESSION
    if ran != 0:
        print(f'nightly: ReFrame reported failures (exit status {ran})')
        return REGRESSION
    print('nightly: no regression')
    return OK if notified == 0 else NOT_SENT


def run(args):
    env = run_env()
    results = results_dir(env)
    (results / 'reports').mkdir(parents=True, exist_ok=True)
    lock = _lock(results, args.wait)
    if lock is None:
        return LOCKED
    stamp = time.strftime('%Y%m%d-%H%M%S')
    log = results / 'reports' / f'nightly-{stamp}.log'
    print(f'nightly: mode nightly, results in {results}, log {log}', flush=True)
    # ReFrame writes its run report here whatever happens to results.db; the
    # commands read the night from it when the database is damaged
    report_file = results / 'reports' / f'run-report-nightly-{stamp}.json'
    done = run_reframe(reframe_args('nightly', args.system, args.reframe_args, env), env,
                       report_file, log)
    if done is None:
        return SETUP
    if not _stored(results / 'results.db', done.uuid):
        print(f'nightly: ReFrame did not store session {done.uuid} in {results}/results.db; '
              f'reading it from its run report {done.report_file}', file=sys.stderr)
    after = _after_run(done.uuid, args.system, stamp, results, env, log)
    if after is None:
        return SETUP
    compared, notified = after
    return _verdict(compared, done.returncode, notified)

