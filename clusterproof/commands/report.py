"""``clusterproof report``: a self-contained HTML page of measured sessions."""

from pathlib import Path

from clusterproof.results import report
from clusterproof.paths import results_dir, write_atomic
from clusterproof.results.database import add_selection_args, records, select_sessions


def register(subparsers):
    p = subparsers.add_parser(
        'report', help='HTML reports',
        description='Write one self-contained HTML page (Jinja2 templates; plotly.js inlined '
                    'once; no network needed to view it). First screen, "the morning page": '
                    'the verdict counts of the newest selected session against the '
                    'references (pass, regression, change, failed, skipped, not judged), the '
                    'changes found in the last %d sessions ranked by size x confidence with '
                    'what changed in the provenance (as clusterproof changes finds them), '
                    'then the failures and regressions with their reason. Below, per test '
                    'family: small multiples (history with the reference band and change '
                    'points), scaling with the thread count (with the published curve of '
                    'system pixstor, never judged against), latency percentiles and the '
                    'judged rows; then mmap sweep memory/device ratios and the provenance of '
                    'each session. Smoke and emulated results are labelled so. See '
                    'docs/report.md.' % report.RECENT_NIGHTS)
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

