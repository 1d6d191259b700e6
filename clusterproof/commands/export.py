"""``clusterproof export``: figures of the figure store for other tools."""

import sys

from clusterproof import ClusterproofError
from clusterproof.commands.selection import add_selection_args, none_selected, selection
from clusterproof.store.sessions import select
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
                    'test, figure, unit, mode, smoke, emulated. Only figures with a finite '
                    'value are exported. See docs/results.md.')
    p.add_argument('--format', required=True, choices=export.FORMATS,
                   help='the output format')
    p.add_argument('-o', '--output', metavar='FILE',
                   help='write to FILE (atomically: a temporary file renamed) instead of '
                        'standard output')
    add_selection_args(p)
    p.set_defaults(func=run)


def run(args):
    if args.format == 'parquet' and not args.output:
        raise ClusterproofError('--format parquet writes a binary file: give it with -o FILE')
    rows = select(**selection(args, args.system, args.mode)).sort(['start', 'session']).collect()
    if not rows.height:
        none_selected(args, args.system, args.mode)
    data = export.export(rows, args.format)
    if args.output:
        path = export.write(data, args.output)
        print(f'{args.format}: {rows["session"].n_unique()} session(s) to {path}',
              file=sys.stderr)
    else:
        sys.stdout.write(data)
    return 0
