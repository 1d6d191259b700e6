"""``clusterproof store``: the figure store every command reads."""

from pathlib import Path

from clusterproof import ClusterproofError, store
from clusterproof.paths import results_db
from clusterproof.analysis import findings
from clusterproof.store import sources


def register(subparsers):
    p = subparsers.add_parser(
        'store', help='the figure store every command reads',
        description='The figure store: every figure of every session in Parquet files '
                    '(<results>/store/), derived from ReFrame\'s results database, which '
                    'stays the record. Every command ingests the sessions the store lacks '
                    'before reading it; "ingest" does only that (after a nightly run, say), then '
                    'derives the change detector\'s findings of the figures whose history '
                    'changed and keeps them in the store (clusterproof changes and report '
                    'read them). '
                    '"rebuild" derives the store anew from the database. "import" adds '
                    'history kept elsewhere (CSV with the header timestamp,system,partition,'
                    'test,figure,value,unit; ReFrame perflogs, files or directories), once. '
                    'See docs/results.md.')
    p.add_argument('action', choices=('ingest', 'rebuild', 'import'))
    p.add_argument('paths', nargs='*', metavar='PATH', help='import: CSV files or perflogs')
    p.add_argument('--store', metavar='DIR',
                   help='the store (default: <results>/store, next to results.db)')
    p.add_argument('--no-findings', action='store_true',
                   help='do not derive the change detector\'s findings of the figures whose '
                        'history changed (clusterproof changes and report then judge them '
                        'when they run)')
    p.set_defaults(func=run)


def run(args):
    db = results_db()
    where = Path(args.store) if args.store else store.default_path(db)
    if args.action == 'import':
        if not args.paths:
            raise ClusterproofError('import: give the CSV files or perflogs to import')
        sessions, rows = sources.import_history(args.paths, where)
        print(f'imported {rows} figure(s) of {sessions} session(s) into {where}')
    elif args.action == 'rebuild':
        n = store.rebuild(db, where)
        print(f'rebuilt {where} from {n} session(s) of {db}')
    else:
        n = store.ingest(db, where)
        print(f'ingested {n} new session(s) of {db} into {where}' if n else
              f'{where} holds every session of {db} already (each command ingests what '
              'it lacks when it reads the store)')
    if not args.no_findings:
        n, seconds = findings.derive(where)
        print(f'findings derived for {n} figures in {seconds:.1f} s')
    return 0
