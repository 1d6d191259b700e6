"""``clusterproof report``: a self-contained HTML page of measured sessions."""

from pathlib import Path

from clusterproof import store
from clusterproof.analysis import findings, morning, triage
from clusterproof.analysis.recent import RECENT_SESSIONS
from clusterproof.commands import argtypes
from clusterproof.commands.selection import add_selection_args, none_selected, selection
from clusterproof.paths import results_dir, write_atomic
from clusterproof.publish import report
from clusterproof.store import history
from clusterproof.store.overview import overview
from clusterproof.store.sessions import load_sessions, records, select


def register(subparsers):
    p = subparsers.add_parser(
        'report', help='the morning page (HTML)',
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
                    'docs/report.md.' % RECENT_SESSIONS)
    add_selection_args(p, default_help='the newest 30 sessions')
    p.add_argument('-o', '--output', metavar='FILE', type=argtypes.output_file,
                   help='where to write the page (default: <results>/reports/report.html)')
    p.add_argument('--title', default='clusterproof report', help='page title')
    p.set_defaults(func=run)


def run(args):
    if not (args.session or args.last is not None or args.since):
        args.last = 30
    # the engine reads the selection: every session's provenance aggregated,
    # every figure's history as columns; records (one object per figure) only
    # for the newest session, which the page judges
    lf = select(**selection(args, system=args.system, mode=args.mode))
    view = overview(lf)
    if not view['sessions']:
        none_selected(args, args.system, args.mode)
    newest = load_sessions(ids=[view['sessions'][-1]['uuid']], system=args.system,
                           mode=args.mode)
    recs = records(newest)
    out = Path(args.output) if args.output else results_dir() / 'reports' / 'report.html'
    hists = history.from_frame(lf)
    kept = None
    stores = findings.stores_read()
    if not (args.session or args.mode):
        # the selection is the newest sessions: the kept findings of the
        # figures' whole history say which changed in them
        kept = findings.current(stores, {h.key for h in hists})
        findings.note(sum(h.key not in kept for h in hists),
                      'changes of {} figure(s) without kept findings looked for now')
    shown = morning.prepare(newest[-1], recs, hists, view, kept=kept,
                            triaged=triage.read_all(stores), store_rows=store.scan(stores))
    page = report.build(shown, title=args.title)
    write_atomic(out, page)
    print(f'report of {len(view["sessions"])} session(s), {len(recs)} figure(s) in the '
          f'newest: {out}')
    return 0
