"""``clusterproof report``: a self-contained HTML page of measured sessions."""

from pathlib import Path

from clusterproof.results import report
from clusterproof.paths import results_dir, write_atomic
from clusterproof.results.database import add_selection_args, records, select_sessions


def register(subparsers):
    p = subparsers.add_parser(
        'report', help='HTML reports',
        description='Write one self-contained HTML page (plots with plotly.js inlined; no '
                    'network needed to view it): the newest selected session against the '
                    'references, scaling with the thread count, STREAM kernels, HPL '
                    'efficiency, latency percentiles, mmap sweep memory/device ratios, the '
                    'history of every figure over the '
                    'selected sessions with its reference band, and the provenance of each '
                    'session. Smoke and emulated results are labelled so.')
    add_selection_args(p, default_help='the newest 30 sessions')
    p.add_argument('-o', '--output', metavar='FILE',
                   help='where to write the page (default: <results>/reports/report.html)')
    p.add_argument('--title', default='clusterproof report', help='page title')
    p.set_defaults(func=run)


def run(args):
    if not (args.session or args.last is not None or args.since):
        args.last = 30
    sessions = select_sessions(args, system=args.system, mode=args.mode)
    recs = records(sessions)
    out = Path(args.output) if args.output else results_dir() / 'reports' / 'report.html'
    page = report.build(sessions, recs, title=args.title)
    write_atomic(out, page)
    print(f'report of {len(sessions)} session(s), {len(recs)} figure(s): {out}')
    return 0

