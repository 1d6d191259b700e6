"""``clusterproof export``: figures of the figure store for other tools."""

import sys

from clusterproof import ClusterproofError
from clusterproof.commands import argtypes
from clusterproof.commands.selection import add_selection_args, none_selected, selection
from clusterproof.paths import references_dir, results_db
from clusterproof.store.sessions import load_sessions, records, select, store_paths
from clusterproof.store import export


def register(subparsers):
    p = subparsers.add_parser(
        'export', help='figures of the store as CSV, Parquet, BMF or OpenMetrics',
        description='Write the figures of the selected sessions from the figure store. '
                    'csv: one row per figure, in the CSV history format that '
                    '"clusterproof store import" reads back (timestamp = session start, '
                    'test = name with parameters and " +environ", flags = smoke/emulated), '
                    'with the reference and verdict ReFrame judged with and the provenance. '
                    'parquet: the selected rows of the store, every column (needs -o). '
                    'bmf: Bencher Metric Format of one session, benchmark '
                    '"system:partition:environ/test" (" [smoke]", " [emulated]" added), '
                    'measure "figure (unit)", lower_value/upper_value the bounds of the '
                    'reference ReFrame judged with. openmetrics: the OpenMetrics text of one '
                    'session for a Prometheus pushgateway, one gauge '
                    'clusterproof_figure_<unit> per unit, labels system, partition, environ, '
                    'test, figure, unit, mode, smoke, emulated. rules: Prometheus alerting rules '
                    '(promtool check rules, vmalert), one per figure of the selection with a '
                    'reference in site_config/references/<system>.yaml today (not smoke, not '
                    '$xfail), alert ClusterproofFigureOutOfBand firing while that figure, '
                    'as openmetrics exports it, is outside its reference band; select many '
                    'sessions (--last 30) to cover every figure. Without a results database '
                    '(and no --store), the rules come from the reference files alone (of '
                    '--system, else of every system): one per bounded reference, selecting '
                    'its series by system, check, index parameters (%%name=value in the test '
                    'name), partition, figure and unit. Only figures with a finite '
                    'value are exported. See docs/results.md and docs/notify.md.')
    p.add_argument('--format', required=True, choices=export.FORMATS,
                   help='the output format')
    p.add_argument('-o', '--output', metavar='FILE', type=argtypes.output_file,
                   help='write to FILE (atomically: a temporary file renamed) instead of '
                        'standard output')
    add_selection_args(p)
    p.set_defaults(func=run)


def run(args):
    if args.format == 'parquet' and not args.output:
        raise ClusterproofError('--format parquet writes a binary file: give it with -o FILE')
    if args.format == 'rules':
        return _rules(args)
    rows = select(**selection(args, args.system, args.mode)).sort(['start', 'session']).collect()
    if not rows.height:
        none_selected(args, args.system, args.mode)
    return _emit(args, export.export(rows, args.format),
                 f'{rows["session"].n_unique()} session(s)')


def _emit(args, data, what):
    """``data`` to ``-o FILE`` (atomically, saying what went there) or to
    standard output."""
    if args.output:
        path = export.write(data, args.output)
        print(f'{args.format}: {what} to {path}', file=sys.stderr)
    else:
        sys.stdout.write(data)
    return 0


def _rules(args):
    if not results_db().exists() and not store_paths():
        return _rules_of_references(args)
    sessions = load_sessions(**selection(args, args.system, args.mode))
    if not sessions:
        none_selected(args, args.system, args.mode)
    pairs = export.banded(records(sessions))
    if not pairs:
        raise ClusterproofError(
            f'no rules to write: none of the figures of the {len(sessions)} selected '
            f'session(s) has a bounded reference in {references_dir()} (smoke figures and '
            f'$xfail references have none); bless references first (clusterproof bless)')
    return _emit(args, export.to_rules(pairs),
                 f'{len(pairs)} figure(s) of {len(sessions)} session(s)')


def _rules_of_references(args):
    """The rules of the reference files alone: there is no figure to select."""
    text, n = export.rules_of_references(references_dir(), args.system)
    if not n:
        raise ClusterproofError(
            f'no rules to write: no results database at {results_db()}, and no bounded '
            f'reference in {references_dir()}'
            + (f' for system {args.system}' if args.system else '')
            + ' (smoke figures and $xfail references have none); bless references first '
              '(clusterproof bless)')
    return _emit(args, text, f'{n} reference(s) of {references_dir()}')
