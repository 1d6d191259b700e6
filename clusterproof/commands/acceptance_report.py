"""``clusterproof acceptance-report``: the signed report of one acceptance."""

from pathlib import Path

from clusterproof.acceptance import report
from clusterproof.commands import argtypes
from clusterproof.paths import write_atomic


def register(subparsers):
    p = subparsers.add_parser(
        'acceptance-report', help='the report of one acceptance to sign, HTML and PDF',
        description='Render the acceptance record RECORD (the JSON document clusterproof '
                    'acceptance writes under <results>/acceptance/, and renders beside it) as '
                    'the document a buyer '
                    'and a vendor sign: the overall verdict and why at the top, the contract '
                    'table (committed value, measured statistic with its spread and number '
                    'of repetitions, verdict, validity), the node screening summary, the '
                    'figures measured that no item judges, the '
                    'invalid runs and why, the provenance of every figure (binary sha256, '
                    'node fingerprint, nodes, session) and a signature block. Emulated and '
                    'smoke records say so in the title and on every page. --pdf prints the '
                    'page to A4 PDF with headless Chromium (chromium on PATH, or '
                    '$CLUSTERPROOF_CHROMIUM). Outputs are written atomically. See '
                    'docs/acceptance.md, "The signed report".')
    p.add_argument('record', metavar='RECORD.json', help='the acceptance record')
    p.add_argument('-o', '--output', metavar='OUT.html', type=argtypes.output_file,
                   help='where to write the HTML page (default: RECORD with the suffix .html)')
    p.add_argument('--pdf', metavar='OUT.pdf', type=argtypes.output_file,
                   help='also print the page to this PDF')
    p.set_defaults(func=run)


def run(args):
    record = Path(args.record)
    page = report.render_file(record)
    out = Path(args.output) if args.output else record.with_suffix('.html')
    write_atomic(out, page)
    print(f'report: {out}')
    if args.pdf:
        pdf = report.print_pdf(out, args.pdf)
        print(f'PDF: {pdf}')
    return 0
