"""``clusterproof screen``: every node of a partition measured with the
node-level checks and judged against its peers; exit status 1 when a node
is an outlier. The method is in ``clusterproof.screen`` (docs/screening.md)."""

import json
import os
import shlex
import sys

from tabulate import tabulate

from clusterproof import ClusterproofError
from clusterproof.modes import MODES
from clusterproof.notify import send as notify_send
from clusterproof.references.judge import load_references
from clusterproof.screen import judge, results, run


def register(subparsers):
    p = subparsers.add_parser(
        'screen', help='every node of a partition against its peers',
        description='Run the node-level checks (--checks) on every node of a Slurm partition '
                    'of SYSTEM, one ReFrame test case per node (reframe --distribute=all), in '
                    'batches of --batch nodes, and judge each node against its peers: the '
                    "peers' median and MAD per figure; a node is slow when it is worse than "
                    'the median by more than the guidance (STREAM, HPL: 10 %%; network: 4 %%) '
                    'and by more than %g noise units (scaled MADs), or worse than the '
                    "system's reference; failed when a check failed on it or its inventory "
                    'differs from its peers (less memory: a missing DIMM); missing when it '
                    'gave no result or Slurm has it down or drained. Outliers are run again '
                    '(--repeat) and judged on the best of their runs: named only when they '
                    'are outliers every time. Checks between two nodes (osu) run on pairs of '
                    'nodes, each node in two pairs; a node in two bad pairs is named. Prints '
                    'one row per node, worst first. Exit status 1 when a node is an outlier, '
                    '0 when none, 2 on an error.' % judge.MIN_NOISE_UNITS)
    p.add_argument('--system', required=True, help='system of the site configuration')
    p.add_argument('--partition', help='its partition (default: its first)')
    p.add_argument('--checks', default=','.join(results.DEFAULT_CHECKS),
                   help=f'comma-separated, of: {", ".join(results.SCREEN_CHECKS)} '
                        '(default %(default)s)')
    p.add_argument('--format', choices=('table', 'json'), default='table')
    p.add_argument('--repeat', type=int, default=1, metavar='N',
                   help='run outliers again up to N times, judging each on the best of its '
                        'runs, before naming them (default '
                        '%(default)s; 0: judge on one run)')
    p.add_argument('--batch', type=int, metavar='N',
                   help="nodes per ReFrame invocation (default: Slurm's MaxSubmitJobs from "
                        f'scontrol show config / number of checks, else {run.DEFAULT_BATCH})')
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
                                     'new temporary directory, printed)')
    p.set_defaults(func=main)


def main(args):
    if args.apply and not args.drain:
        raise ClusterproofError('--apply runs the --drain lines: give --drain --apply')
    if args.repeat < 0:
        raise ClusterproofError(f'--repeat {args.repeat}: use 0 or more')
    checks = results.check_names(args.checks)
    refs = load_references(args.system)
    note = ''
    if args.from_report:
        verdicts = run.judge_reports(args.from_report, refs, args.partition)
    else:
        from clusterproof.site.validate import load_site_configuration
        part, slurm_part, emulated = run.resolve_partition(
            load_site_configuration(), args.system, args.partition)
        if emulated:
            note = f'{args.system}:{part} is emulated: figures for function, not speed'
        nodes = run.slurm_nodes()
        batch = args.batch or run.site_batch(len(checks))
        screening = run.Screening(args.system, part, checks, args.mode, batch, args.repeat,
                                  refs, log=_progress, workdir=args.workdir,
                                  extra=run.set_options(args.set))
        _progress(f'screening {args.system}:{part} (Slurm partition {slurm_part or "default"}) '
                  f'with {",".join(checks)}, {batch} nodes per invocation; reports in '
                  f'{screening.workdir}')
        verdicts, _runs = run.screen_partition(screening, nodes, slurm_part)
    bad = judge.outliers(verdicts)
    # the outliers, sent once on the site's channels (docs/notify.md)
    notify_send.after_screening(args.system, bad)
    if args.format == 'json':
        # one line, written at once: json.dump with indent writes piece by piece (slow)
        print(json.dumps(judge.as_json(verdicts, note)))
    else:
        print(tabulate([judge.as_row(v) for v in verdicts], headers=judge.ROW_HEADERS))
        print(f'\n{len(verdicts)} node(s), {len(bad)} outlier(s)'
              + (': ' + ', '.join(f'{v.node} {v.verdict}' for v in bad) if bad else ''))
        if note:
            print(note)
    if args.drain:
        for argv, done in run.drain(verdicts, apply=args.apply):
            line = shlex.join(argv)
            if done is None:
                print(line)
            elif done['rc'] == 0:
                print(f'{line}  # done')
            else:
                print(f'{line}  # FAILED: {(done.get("missing") or done["stderr"]).strip()}')
    return 1 if bad else 0


def _progress(line):
    print(f'screen: {line}', file=sys.stderr, flush=True)
