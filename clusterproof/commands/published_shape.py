"""``clusterproof published-shape``: the published storage plan at its
real shape on the local Slurm cluster.

Brings up a local Slurm cluster of 16 nodes (the pixstor test bed's 16
client nodes), onboards it with ``clusterproof init`` as a system of its own,
runs the acceptance plan of the storage checks (IOzone sequential 1..1024
threads, IOzone random 16..512, IOR N-to-1 1..512, mdtest 1..512; threads
round-robin over the 16 nodes, IOR reads reordered with -C, IOzone's
stonewalling as published) with tiny files (``-S cp_scale=tiny``: 1 MiB per
thread), writes the morning page of the session with ``clusterproof report``
and prints where it is, then brings the cluster down (also on Ctrl-C).

Every figure is emulated (16 namespaces on one machine) and tiny (flagged
smoke): it shows the plan runs at its shape, never how fast a file system is.

The system file that ``clusterproof init`` writes goes into a scratch copy of
the site configuration (``<work>/repo/site_config``), never into the
repository's; the run uses that copy (its configuration,
``CLUSTERPROOF_REFERENCES``) and removes it at the end (``--keep-work``
keeps it). The copy also declares what this machine holds: the local
cluster's ``extras['storage']['max_threads']`` and its OpenMPI/PMIx settings,
taken from ``site_config/systems/emu.py``; thread counts above the limit are
skipped by the checks, naming it (docs/storage.md, "At the published shape").

A cluster already up at the instance is used when it has the node count
asked for and left up afterwards; one with another shape is refused. While
the plan runs, the command stops it (cancels the cluster's jobs) when this
machine's available memory falls below ``--min-free-gib``.

Exit status: 0 every selected test passed or was skipped by a declared
limit, 1 a test failed, 2 set-up error, 130 interrupted.
"""

import argparse
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from clusterproof import ClusterproofError, command
from clusterproof.cluster import run_dir_for, users_lock_path
from clusterproof.methods.declared import plan_names, published_plan, storage_benchmarks
from clusterproof.paths import CHECKS_DIR, REPO, results_dir
from clusterproof.reframe_io import runner

#: the storage checks of the published plan (their ``published_plan``), in its order
PLAN = published_plan()
CHECKS = list(dict.fromkeys(c.file for c in PLAN))
#: the benchmarks of the plan: (name, ReFrame check class)
BENCHMARKS = plan_names(PLAN)
#: what --limit may name: every storage benchmark
LIMITED = storage_benchmarks()
DEFAULT_NAME = 'emu16-tiny'

_RESULT = re.compile(r'^\[\s*(OK|FAIL|SKIP|ABORT|XFAIL|XPASS)\s*\]\s*\(\s*(\d+)/(\d+)\)\s+(\S+)\s+'
                     r'%threads=(\d+)')
_RUN = re.compile(r'^\[\s*RUN\s*\]\s+(\S+)\s+%threads=(\d+)')
_LISTED = re.compile(r'^- (\w+) %threads=(\d+) ')


def say(text):
    print(f'published-shape: {text}', flush=True)


class SetupError(Exception):
    pass


def cli(*args, env=None, check=True, capture=True, python_path=None):
    """``clusterproof ARGS`` (of this checkout, or of ``python_path``'s copy)."""
    env = dict(env or os.environ)
    if python_path:
        env['PYTHONPATH'] = str(python_path)
    proc = subprocess.run(command(*args), cwd=python_path or REPO, env=env, text=True,
                          capture_output=capture)
    if check and proc.returncode != 0:
        out = ((proc.stderr or '') + (proc.stdout or '')).strip().splitlines()
        raise SetupError(f'clusterproof {" ".join(map(str, args))} failed (exit '
                         f'{proc.returncode}): {out[-1] if out else "no output"}')
    return proc


def cluster_marker(instance):
    return run_dir_for(instance) / 'cluster.json'


def bring_up(args, env):
    """Start the cluster (True) or use the one up at the instance (False)."""
    marker = cluster_marker(args.instance)
    status = cli('cluster', 'status', '--json', '--instance', args.instance, env=env, check=False)
    if marker.exists() and status.returncode == 0 and json.loads(status.stdout).get('up'):
        up = json.loads(marker.read_text())
        if up['nodes'] != args.nodes:
            raise SetupError(f'instance {args.instance} is up with {up["nodes"]} nodes, not '
                             f'{args.nodes}: bring it down (clusterproof cluster down '
                             f'--instance {args.instance}) or use another --instance')
        say(f'using the cluster up at instance {args.instance} ({args.nodes} nodes); '
            f'it stays up')
        return False
    t0 = time.monotonic()
    cli('cluster', 'up', '--instance', args.instance, '--nodes', args.nodes,
        '--cpus-per-node', args.cpus_per_node, '--mem-per-node', args.mem_per_node, env=env)
    say(f'cluster cp{args.instance} up: {args.nodes} nodes x {args.cpus_per_node} CPUs '
        f'({time.monotonic() - t0:.1f} s)')
    return True


def site_copy(work):
    """A scratch copy of the package and the site configuration under
    ``work/repo``: ``clusterproof init`` run from it writes there."""
    copy = work / 'repo'
    ignore = shutil.ignore_patterns('__pycache__', '*.pyc')
    shutil.copytree(REPO / 'clusterproof', copy / 'clusterproof', ignore=ignore)
    shutil.copytree(REPO / 'site_config', copy / 'site_config', ignore=ignore)
    return copy


#: appended to the system file ``clusterproof init`` wrote: what init cannot
#: discover about the local cluster, from site_config/systems/emu.py
LOCAL_CLUSTER_ADDITIONS = '''
# Added by clusterproof published-shape: the local cluster's settings that no tool
# reports, from site_config/systems/emu.py (OpenMPI over PMIx on the cluster
# bridge, and the thread counts this machine holds: docs/storage.md).
import runpy as _runpy
from pathlib import Path as _Path
_emu = _runpy.run_path(str(_Path(__file__).with_name('emu.py')))
for _p in system['partitions']:
    _p['env_vars'] = _emu['SRUN_ENV_VARS']
    _p['extras']['storage']['max_threads'] = dict(_emu['MAX_THREADS'], **%(limits)r)
'''


def onboard(args, copy, scratch, env):
    t0 = time.monotonic()
    proc = cli('init', '--name', args.name, '--scratch', scratch, env=env, python_path=copy)
    system_file = copy / 'site_config' / 'systems' / f'{args.name}.py'
    if not system_file.is_file():
        raise SetupError(f'clusterproof init wrote no {system_file}:\n{proc.stdout}')
    with open(system_file, 'a') as f:
        f.write(LOCAL_CLUSTER_ADDITIONS % {'limits': args.limits})
    say(f'onboarded as system {args.name} with clusterproof init ({time.monotonic() - t0:.1f} s): '
        f'{system_file}')
    return system_file


def reframe_args(args):
    sel = []
    for bench in args.benchmark:
        sel += ['-n', f'^{BENCHMARKS[bench]}\\b']
    checks = [a for c in CHECKS for a in ('-c', str(CHECKS_DIR / c))]
    conds = ([] if args.max_threads is None else [f'threads <= {args.max_threads}']) + \
        ([] if not args.threads else [f'threads in {tuple(args.threads)!r}'])
    expr = ['-E', ' and '.join(conds)] if conds else []
    retries = ['--max-retries', str(args.retries)] if args.retries else []
    return checks + sel + expr + ['--system', args.name, '--mode', 'acceptance',
                                  '-S', 'cp_scale=tiny', '--exec-policy', 'serial', '--nocolor',
                                  *retries, *args.reframe_options]


def plan(args, env):
    """(check, threads) of every selected test case, in ReFrame's order."""
    proc = runner.invoke([*reframe_args(args), '-l'], env=env)
    cases = [(m.group(1), int(m.group(2))) for m in map(_LISTED.match, proc.stdout.splitlines())
             if m]
    if proc.returncode == 0 and not cases:
        raise SetupError(runner.no_case_message(reframe_args(args)))
    if proc.returncode != 0:
        raise SetupError(f'reframe -l failed (exit {proc.returncode}):\n'
                         + (proc.stdout + proc.stderr)[-2000:])
    return cases


def mem_available_gib():
    with open('/proc/meminfo') as f:
        for line in f:
            if line.startswith('MemAvailable:'):
                return int(line.split()[1]) / 1024 ** 2
    return float('inf')


class MemoryGuard(threading.Thread):
    """Cancels the cluster's jobs whenever this machine's available memory
    falls below ``floor_gib`` (the emulated nodes share it with everything
    else), and keeps the lowest available memory seen (``low``, GiB)."""

    def __init__(self, floor_gib, env):
        super().__init__(daemon=True)
        self.floor, self.env, self.tripped = floor_gib, env, []
        self.low = mem_available_gib()
        self.done = threading.Event()

    def run(self):
        last = 0
        while not self.done.wait(0.5):
            avail = mem_available_gib()
            self.low = min(self.low, avail)
            if avail < self.floor and time.monotonic() - last > 10:
                last = time.monotonic()
                self.tripped.append(f'{avail:.1f} GiB')
                say(f'available memory {avail:.1f} GiB is below --min-free-gib {self.floor:g}: '
                    f'cancelling the jobs of the cluster')
                subprocess.run(['scancel', '--full', '--user', str(os.getuid())], env=self.env,
                               capture_output=True)


def run_plan(args, env, cases):
    """Run the plan with progress lines; returns (exit status, session UUID, log)."""
    total = len(cases)
    log = Path(args.results) / 'reports' / f'published-shape-{time.strftime("%Y%m%d-%H%M%S")}.log'
    log.parent.mkdir(parents=True, exist_ok=True)
    say(f'{total} test cases: ' + ', '.join(
        f'{check} {min(t for c, t in cases if c == check)}..'
        f'{max(t for c, t in cases if c == check)}'
        for check in dict.fromkeys(c for c, _ in cases)) + f'; log {log}')
    t0 = time.monotonic()
    started = {}
    # beside the run reports ReFrame writes itself, where every reader looks
    report_file = log.with_name(f'run-report-{log.stem}.json')
    guard = MemoryGuard(args.min_free_gib, env)
    guard.start()
    with open(log, 'w') as out:
        proc = runner.start([*reframe_args(args), '-r', *runner.report_option(report_file)],
                            env=env, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
        try:
            for line in proc.stdout:
                out.write(line)
                out.flush()
                line = line.rstrip('\n')
                elapsed = time.monotonic() - t0
                stamp = (f'{int(elapsed // 3600)}:{int(elapsed % 3600 // 60):02d}:'
                         f'{int(elapsed % 60):02d}')
                if m := _RUN.match(line):
                    started[(m.group(1), m.group(2))] = time.monotonic()
                    guard.low = mem_available_gib()
                    n = len(started)
                    say(f'[{n}/{total} {stamp}] {m.group(1)} threads={m.group(2)}: running')
                elif m := _RESULT.match(line):
                    took = time.monotonic() - started.get((m.group(4), m.group(5)),
                                                          time.monotonic())
                    why = line.rstrip()[line.index(' [', m.end()) + 2:-1] \
                        if ' [' in line[m.end():] and line.rstrip().endswith(']') else ''
                    say(f'[{m.group(2)}/{m.group(3)} {stamp}] {m.group(4)} threads={m.group(5)}: '
                        f'{m.group(1)} in {took:.0f} s (lowest available memory '
                        f'{guard.low:.1f} GiB)' + (f': {why}' if why else ''))
                elif line.startswith(('P: ', 'FAILURE INFO', '  * Reason:', '  * Rerun with')) \
                        or 'skipping' in line.lower() or 'not run' in line \
                        or line.lstrip().startswith('Retrying'):
                    print(f'    {line.strip()}', flush=True)
            status = proc.wait()
        except BaseException:
            os.killpg(proc.pid, signal.SIGINT)     # ReFrame cancels its jobs on SIGINT
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
            raise
        finally:
            guard.done.set()
    if guard.tripped:
        say(f'jobs cancelled for want of memory {len(guard.tripped)} time(s): '
            f'{", ".join(guard.tripped)}')
    elapsed = time.monotonic() - t0
    say(f'the plan ran in {elapsed:.0f} s ({elapsed / 60:.1f} min); ReFrame exit status {status}')
    try:
        runner.require_cases(reframe_args(args), report_file, status)
    except runner.NoTestCase as err:
        raise SetupError(str(err)) from None
    return status, runner.session_of(report_file), log


def write_report(args, session, env):
    out = Path(args.results) / 'reports' / f'published-shape-{session}.html'
    cli('report', '--session', session, '-o', out,
        '--title', f'Published storage plan at its shape: {args.name} '
                   f'(emulated, tiny files: function only)', env=env)
    return out


def _interrupt(*_):
    raise KeyboardInterrupt


def _limit(text):
    bench, _, n = text.partition('=')
    if bench not in LIMITED or not n.isdigit() or int(n) < 1:
        raise argparse.ArgumentTypeError(f'{text!r}: want BENCH=N, BENCH one of '
                                         f'{", ".join(LIMITED)} and N a whole number >= 1')
    return bench, int(n)


def register(subparsers):
    p = subparsers.add_parser(
        'published-shape',
        help='the storage plan at its published thread counts on a 16-node local cluster, '
             'tiny files',
        description='Bring up a local Slurm cluster of 16 nodes, onboard it with clusterproof '
                    'init (into a scratch copy of the site configuration), run the acceptance '
                    'plan of the storage checks at its published thread counts with tiny files '
                    '(1 MiB per thread), write the morning page of the session and bring the '
                    'cluster down (also on Ctrl-C). Every figure is emulated and tiny: it shows '
                    'the plan runs at its shape, never how fast a file system is. Exit status '
                    '0 every selected test passed or was skipped by a declared limit, 1 a test '
                    'failed, 2 set-up error, 130 interrupted.',
        epilog='Options after -- go to reframe (-- --keep-stage-files). See docs/storage.md.')
    p.add_argument('--instance', type=int,
                   default=int(os.environ.get('CLUSTERPROOF_INSTANCE', '0')),
                   help='local cluster instance 0..7 (default $CLUSTERPROOF_INSTANCE, else 0)')
    p.add_argument('--nodes', type=int, default=16, help='client nodes (default 16, as published)')
    p.add_argument('--cpus-per-node', type=int, default=2)
    p.add_argument('--mem-per-node', type=int, default=1024, help='MiB Slurm gives each node')
    p.add_argument('--max-threads', type=int, metavar='N',
                   help='only thread counts up to N (default: the whole plan)')
    p.add_argument('--threads', metavar='T,T,...',
                   type=lambda text: [int(t) for t in text.split(',') if t.strip()],
                   help="only these thread counts of the plan (e.g. 1,16,64)")
    p.add_argument('--benchmark', action='append', choices=list(BENCHMARKS),
                   help='only this benchmark (repeat for more; default: the whole plan)')
    p.add_argument('--limit', metavar='BENCH=N', action='append', default=[], type=_limit,
                   help=f'hold BENCH ({", ".join(LIMITED)}) to N threads in this run, below what '
                        'site_config/systems/emu.py declares; higher counts are skipped naming '
                        'the limit (repeat for more)')
    p.add_argument('--retries', type=int, default=0, metavar='N',
                   help='run a failed test case again up to N times (reframe --max-retries; '
                        'default 0: a failure is reported as it happened)')
    p.add_argument('--name', default=DEFAULT_NAME,
                   help=f'system name for clusterproof init (default {DEFAULT_NAME})')
    p.add_argument('--results', metavar='DIR',
                   help='results directory (default: <results>/published-shape)')
    p.add_argument('--min-free-gib', type=float, default=3.0,
                   help="stop the plan when this machine's available memory falls below "
                        'this (default 3)')
    p.add_argument('--keep-work', action='store_true',
                   help='keep the scratch copy of the site configuration')
    p.add_argument('reframe_options', nargs='*', metavar='-- REFRAME_OPTION',
                   help='more reframe options, after --')
    p.set_defaults(func=run)


def _checked(args):
    """``args`` completed (the benchmarks, the limits, the results
    directory made absolute); a value out of range is refused."""
    if args.retries < 0:
        raise ClusterproofError(f'--retries {args.retries}: must be 0 or more')
    if args.max_threads is not None and args.max_threads < 1:
        raise ClusterproofError(f'--max-threads {args.max_threads}: must be at least 1')
    if not runner.installed():
        raise ClusterproofError('this environment has no reframe: run make setup')
    args.benchmark = args.benchmark or list(BENCHMARKS)
    args.limits = dict(args.limit)
    if args.results is None:
        args.results = str(results_dir() / 'published-shape')
    args.results = str(Path(args.results).resolve())
    return args


def _base_env(args, scratch):
    """The environment of every command the run starts."""
    env = dict(os.environ, CLUSTERPROOF_RESULTS=args.results,
               CLUSTERPROOF_SCRATCH=str(scratch), RFM_COLORIZE='n')
    env.pop('CLUSTERPROOF_MODE', None)         # the mode is reframe --mode below
    # init writes the system file and its references into the scratch copy of
    # the site configuration (site_copy), never into a site's own directories
    env.pop('CLUSTERPROOF_SYSTEMS', None)
    env.pop('CLUSTERPROOF_REFERENCES', None)
    env['SLURM_CONF'] = str(run_dir_for(args.instance) / 'etc' / 'slurm.conf')
    return env


def run(args):
    args = _checked(args)
    scratch = Path(args.results) / 'scratch'
    scratch.mkdir(parents=True, exist_ok=True)
    base_env = _base_env(args, scratch)
    t_start = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix='published-shape-', dir=args.results))
    started = []
    status = 2
    # While the plan runs, `clusterproof cluster down` of this instance refuses.
    users_lock = open(users_lock_path(args.instance), 'a+')
    fcntl.flock(users_lock, fcntl.LOCK_SH)
    # Ctrl-C and SIGTERM: stop the plan, then the cleanup below runs. SIGINT
    # gets its handler explicitly: started in the background (`cmd &`), the
    # command inherits SIGINT ignored and Python leaves it so; ReFrame, started
    # below, would inherit it ignored too and never cancel its jobs.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        status = _plan_and_page(args, work, scratch, base_env, started)
    except SetupError as err:
        say(f'error: {err}')
    except KeyboardInterrupt:
        say('interrupted')
        status = 130
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)    # finish cleaning up
        _clean_up(args, work, started, base_env)
        users_lock.close()
        say(f'total {time.monotonic() - t_start:.0f} s')
    return status


def _plan_and_page(args, work, scratch, base_env, started):
    """Bring the cluster up (or use the one up: ``started`` gets True when it
    was started here), onboard it, run the plan and write its page; the
    exit status."""
    started.append(bring_up(args, base_env))
    copy = site_copy(work)
    onboard(args, copy, scratch, base_env)
    env = dict(runner.reframe_env(base_env, config=copy / 'site_config' / 'settings.py'),
               CLUSTERPROOF_REFERENCES=str(copy / 'site_config' / 'references'),
               CLUSTERPROOF_EMU_NODES=str(args.nodes))
    cases = plan(args, env)
    rc, session, log = run_plan(args, env, cases)
    if not session:
        raise SetupError(f'ReFrame stored no session (exit status {rc}); see {log}')
    report = write_report(args, session, env)
    say(f'session {session}')
    say(f'report: {report}')
    return 0 if rc == 0 else 1


def _clean_up(args, work, started, base_env):
    """The scratch copy removed (unless kept), the cluster brought down when
    it was started here."""
    if not args.keep_work:
        shutil.rmtree(work, ignore_errors=True)
    else:
        say(f'kept the scratch copy: {work}')
    if any(started):
        t0 = time.monotonic()
        down = cli('cluster', 'down', '--force', '--instance', args.instance,
                   env=base_env, check=False)
        say(f'cluster cp{args.instance} down ({time.monotonic() - t0:.1f} s)' if
            down.returncode == 0 else f'cluster down failed: {down.stderr.strip()}')
