"""``clusterproof screen``: every node of a partition measured with the
node-level checks and judged against its peers; exit status 1 when a node
is an outlier. The method is in ``clusterproof.screen`` (docs/screening.md)."""

import json
import os
import shlex
import sys
import time

from tabulate import tabulate

from clusterproof import ClusterproofError
from clusterproof.commands import argtypes
from clusterproof.modes import MODES
from clusterproof.notify import send as notify_send
from clusterproof.references.lookup import load_references
from clusterproof.screen import (jobs, judge, memory, output, page, results, rule, run,
                                 verdicts as screen_verdicts)
from clusterproof.site.inventory import tool_failure


def register(subparsers):
    p = subparsers.add_parser(
        'screen', help='every node of a partition against its peers',
        description='Run the node-level checks (--checks) on every node of a Slurm partition '
                    'of SYSTEM, in one Slurm job per node running every check on that node '
                    '(ReFrame inside the job), all queued at once within the site\'s '
                    'MaxSubmitJobs, and judge each node against its peers: the '
                    "peers' median and MAD per figure; a node is slow when it is worse than "
                    'the median by more than k noise units (the peers\' scaled MAD, or the '
                    "check's repeatability where larger; k %g) and by more than the smallest "
                    'slowdown that matters (%g %%), both set per check or figure in '
                    'site_config/screening.yaml ($CLUSTERPROOF_SCREENING), or worse than the '
                    "system's reference, or, where the store holds 2 or more of its earlier "
                    'screenings, slower than its own past by as much (k noise units of its '
                    "repeatability, and the smallest slowdown); failed when a check failed on "
                    'it or its inventory '
                    'differs from its peers (less memory: a missing DIMM); missing when it '
                    'gave no result or Slurm has it down or drained (before or during the '
                    "screening; Slurm's reason given). Outliers and suspects "
                    '(near the line) are run again (--repeat) and judged on the mean of their '
                    'runs: named only when every run was near or past the line ("confirmed '
                    'in 2 of 2 runs"; a node named for its inventory alone is not '
                    'run again: its hardware reads the same). Checks between two nodes (osu) '
                    'run on pairs of nodes, each node in two pairs; a node in two bad pairs is '
                    'named. Prints '
                    'one row per node, worst first. Exit status 1 when a node is an outlier, '
                    '0 when none, 2 on an error.' % (rule.DEFAULT_NOISE_UNITS,
                                                      rule.DEFAULT_SMALLEST_PCT['default']))
    p.add_argument('--system', required=True, type=argtypes.known_system,
                   help='system of the site configuration')
    p.add_argument('--partition', help='its partition (default: its first)')
    p.add_argument('--checks', default=','.join(results.DEFAULT_CHECKS),
                   help=f'comma-separated, of: {", ".join(results.SCREEN_CHECKS)} '
                        '(default %(default)s)')
    p.add_argument('--format', choices=('table', 'json'), default='table')
    p.add_argument('--repeat', type=argtypes.count, default=1, metavar='N',
                   help='run outliers and suspects again up to N times, judging each on '
                        'the mean of its runs, before naming them (default '
                        '%(default)s; 0: judge on one run)')
    p.add_argument('--batch', type=argtypes.positive, metavar='N',
                   help="node jobs in the queue at once (default: the site's MaxSubmitJobs "
                        "(sacctmgr) less one, else all the nodes up to "
                        f'{jobs.DEFAULT_WINDOW})')
    p.add_argument('--resume', action='store_true',
                   help='continue the screening started in --workdir (interrupted by Ctrl-C '
                        'or a reboot): run only the nodes without a result; jobs of the '
                        'interrupted run still queued are watched, not submitted again')
    p.add_argument('--progress-every',
                   type=argtypes.number(above=0, high=86400, what='a number of seconds'),
                   default=60.0, metavar='S',
                   help='a progress line (nodes done, running, pending, missing, the time '
                        'left) on standard error every S seconds (default %(default)g)')
    p.add_argument('--page', metavar='FILE', type=argtypes.output_file,
                   help='also write the screening as one HTML page: the nodes laid out by '
                        "switch (Slurm's topology), rack (node-name ranges) or partition, "
                        'coloured by their distance from their peers, the outliers listed')
    p.add_argument('--mode', choices=list(MODES),
                   default=os.environ.get('CLUSTERPROOF_MODE') or 'nightly',
                   help='mode of the checks (default $CLUSTERPROOF_MODE, else nightly)')
    p.add_argument('--set', action='append', default=[], metavar='VAR=VALUE',
                   help="a variable of the checks, given to ReFrame as -S VAR=VALUE (e.g. "
                        "StreamBuild.array_size=4000000); repeatable")
    p.add_argument('--from-report', action='append', metavar='FILE',
                   help='judge these ReFrame run reports (written with --report-file by a '
                        'screening run) instead of running anything; repeatable, later '
                        'reports replace the nodes they hold')
    p.add_argument('--drain', action='store_true',
                   help='print the scontrol line that drains each outlier, with its reason')
    p.add_argument('--apply', action='store_true', help='with --drain: run those lines')
    p.add_argument('--workdir', help='where the run reports and ReFrame logs go (default: a '
                                     'new temporary directory, printed); each node\'s run '
                                     'report lands in WORKDIR/nodes as its job ends')
    p.set_defaults(func=main)


def main(args):
    _check_args(args)
    checks = results.check_names(args.checks)
    refs = load_references(args.system)
    judged_by = rule.load()
    if args.from_report:
        verdicts, screening_id, kept, note = _judged_reports(args, refs, judged_by)
    else:
        screened = _screened(args, checks, refs, judged_by)
        if screened is None:
            return 130
        verdicts, screening_id, kept, note = screened
    system = args.system
    verdicts = _remembered(verdicts, system, screening_id, judged_by, kept)
    bad = screen_verdicts.outliers(verdicts)
    findings = {v.node: output.finding_of(v, system, screening_id) for v in bad}
    if args.page:
        page.write(args.page, verdicts, system=system, screening_id=screening_id, note=note,
                   findings=findings, topology_text=page.slurm_topology(), rule=judged_by)
        _progress(f'page: {args.page}')
    # the outliers, sent once on the site's channels (docs/notify.md)
    notify_send.after_screening(args.system, bad, screening_id)
    if args.format == 'json':
        # one line, written at once: json.dump with indent writes piece by piece (slow)
        print(json.dumps(output.as_json(verdicts, note, findings, screening_id, judged_by)))
    else:
        _print_table(verdicts, bad, findings, note)
    if args.drain:
        _print_drain(verdicts, args.apply)
    return 1 if bad else 0


def _check_args(args):
    """A clear error for options that do not go together."""
    if args.apply and not args.drain:
        raise ClusterproofError('--apply runs the --drain lines: give --drain --apply')
    if args.repeat < 0:
        raise ClusterproofError(f'--repeat {args.repeat}: use 0 or more')
    if args.resume and not args.workdir:
        raise ClusterproofError('--resume continues the screening of a --workdir: give the '
                                '--workdir of the screening to resume')


def _judged_reports(args, refs, judged_by):
    """``(verdicts, screening_id, kept, note)`` of the reports of --from-report."""
    try:
        peers_of = run.peer_kinds(run.slurm_nodes())
    except ClusterproofError as err:
        peers_of = None
        _progress(f'peers: every node of a partition (Slurm cannot say which nodes are of one '
                  f'kind: {err})')
    screening_id = run.reports_id(args.from_report)
    kept, past = _past(args.system, screening_id)
    verdicts = run.judge_reports(args.from_report, refs, args.partition, peers_of,
                                 judged_by, past)
    return verdicts, screening_id, kept, ''


def _screened(args, checks, refs, judged_by):
    """``(verdicts, screening_id, kept, note)`` of a screening run now; None
    when it was interrupted (its results kept, the command to resume said)."""
    from clusterproof.site.validate import find_partition, find_system, \
        load_site_configuration
    config = load_site_configuration()
    part, slurm_part, emulated = run.resolve_partition(config, args.system, args.partition)
    note = f'{args.system}:{part} is emulated: figures for function, not speed' if emulated \
        else ''
    nodes = run.slurm_nodes()
    limits = jobs.site_limits()
    screening = run.Screening(args.system, part, checks, args.mode, args.batch, args.repeat,
                              refs, log=_progress, workdir=args.workdir,
                              extra=run.set_options(args.set),
                              access=find_partition(find_system(config, args.system),
                                                    part).get('access', []),
                              resume=args.resume, progress_s=args.progress_every,
                              limits=limits)
    kept, past = _past(args.system, screening.id)
    _progress(f'screening {args.system}:{part} (Slurm partition {slurm_part or "default"}) '
              f'with {",".join(checks)}: one job per node, at most {screening.window} '
              f'queued at once (MaxSubmitJobs {limits.get("MaxSubmitJobs") or "unset"}); '
              f'results in {screening.workdir}'
              + (' (resumed)' if args.resume else ''))
    try:
        verdicts, _runs = run.screen_partition(screening, nodes, slurm_part, judged_by, past)
    except KeyboardInterrupt:
        _progress(f'interrupted: the results so far are kept in {screening.workdir / "nodes"}'
                  '; node jobs already queued keep running; continue with: clusterproof '
                  f'screen {shlex.join(_resume_args(args, screening.workdir))}')
        return None
    _progress(f'jobs submitted: {screening.submitted} for {len(nodes)} node(s)')
    return verdicts, screening.id, kept, note


def _print_table(verdicts, bad, findings, note):
    """The verdicts as a table, then the outliers with their finding ids."""
    print(tabulate([output.as_row(v) for v in verdicts], headers=output.ROW_HEADERS))
    rows = judge.outlier_rows(bad)
    print(f'\n{len(verdicts)} node(s), {len(bad)} outlier(s)'
          + (': ' + ', '.join(f'{nodes} {row[0].verdict}' for nodes, row in rows) if bad else ''))
    for nodes, row in rows:
        ids = (findings[row[0].node] if len(row) == 1 else
               f'{findings[row[0].node]} .. {findings[row[-1].node]} '
               f'({len(row)}, each in --format json)')
        print(f'  finding {ids}  {nodes} {row[0].verdict}: {row[0].reason}')
    if note:
        print(note)


def _print_drain(verdicts, apply):
    """The drain line of each outlier, and with ``apply`` how running it went."""
    for argv, done in run.drain(verdicts, apply=apply):
        line = shlex.join(argv)
        if done is None:
            print(line)
        elif done['rc'] == 0:
            print(f'{line}  # done')
        else:
            print(f'{line}  # FAILED: {tool_failure(done)}')


def _resume_args(args, workdir):
    """The command line that resumes this screening."""
    out = ['--system', args.system, '--checks', args.checks, '--mode', args.mode,
           '--resume', '--workdir', str(workdir)]
    if args.partition:
        out += ['--partition', args.partition]
    for s in args.set:
        out += ['--set', s]
    return out


def _store():
    """Where screenings are kept (``store.screenings``: the first of --store /
    CLUSTERPROOF_STORE, else the results database's)."""
    from clusterproof.paths import results_db
    from clusterproof.store import default_path, sessions
    return (sessions.store_paths() or [default_path(results_db())])[0]


def _past(system, screening_id):
    """``(rows, past)``: the remembered rows of ``system`` and, by figure,
    those of other screenings than this one (``memory.earlier``), which
    the judgement weighs a node's own past with (``screen.ownpast``)."""
    from clusterproof.store import screenings
    kept = screenings.read(_store(), system)
    return kept, memory.earlier(kept, screening_id)


def _remembered(verdicts, system, screening_id, judged_by, kept):
    """The verdicts with the node's earlier screenings ``kept`` (``screen.memory``),
    this screening then kept in the store (:func:`_store`)."""
    from clusterproof.store import screenings
    where = _store()
    verdicts = memory.remember(verdicts, kept, judged_by, screening_id)
    screenings.write(where, screenings.rows_of(verdicts, system, screening_id, time.time()),
                     screening_id)
    _progress(f'kept in {screenings.path_of(where)}')
    return verdicts


def _progress(line):
    print(f'screen: {line}', file=sys.stderr, flush=True)
