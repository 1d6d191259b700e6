"""The signed acceptance report (clusterproof acceptance-report): the page
rendered from an acceptance record, and its PDF read back page by page
(poppler's pdftoppm to PNG, then tesseract's OCR; pdftotext beside it)."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clusterproof import ClusterproofError
from clusterproof.acceptance import record as acceptance_record, report
from conftest import WAIT_S
from results_helpers import REPO

RECORD = Path(__file__).resolve().parents[1] / 'data' / 'acceptance_report' / 'record-emulated.json'
CLUSTERPROOF = REPO / '.venv' / 'bin' / 'clusterproof'
CHROMIUM = shutil.which('chromium')
need_chromium = pytest.mark.skipif(CHROMIUM is None, reason='needs chromium (Debian package)')
need_pdf_tools = pytest.mark.skipif(
    not all(shutil.which(t) for t in ('pdftoppm', 'pdftotext', 'tesseract')),
    reason='needs pdftoppm, pdftotext (poppler-utils) and tesseract (tesseract-ocr)')


def record():
    return json.loads(RECORD.read_text())


def write(tmp_path, rec, name='record.json'):
    path = tmp_path / name
    path.write_text(json.dumps(rec))
    return path


def section(page, ident):
    m = re.search(rf'<section id="{ident}">(.*?)</section>', page, re.S)
    assert m, f'no section {ident}'
    return m.group(1)


def text(html):
    return re.sub(r'\s+', ' ', re.sub(r'<[^>]+>', ' ', html))


def test_fixture_has_every_case():
    """The fixture holds what the report must show; a test on it means something."""
    rec = record()
    assert rec['format'] == acceptance_record.FORMAT and rec['emulated'] is True
    kinds = {(it['kind'], it['verdict']) for it in rec['items']}
    assert {('committed', 'fail'), ('committed', 'pass'), ('informative', 'reported')} <= kinds
    assert sum(not r['valid'] for it in rec['items'] for r in it['runs']) == 2
    assert rec['screening']['outliers'] == ['n2']


def test_page_of_an_emulated_rejected_acceptance():
    page = report.render_file(RECORD)
    head = page[:page.index('<body>')]
    # the title and the running header of every printed page say EMULATED
    assert re.search(r'<title>[^<]*EMULATED[^<]*</title>', head)
    assert re.search(r'@top-right\{content:"EMULATED: not the speed of real hardware"', head)
    assert re.search(r'@top-left\{content:"Acceptance: local-cluster"', head)
    assert 'counter(page)' in head and 'counter(pages)' in head and 'size:A4' in head
    # the verdict and why come before the contract table
    body = page[page.index('<body>'):]
    assert body.index('REJECTED') < body.index('id="contract-table"')
    assert '1 committed item failed: stream-triad' in text(body[:body.index('id="contract"')])
    rows = dict(re.findall(r'<tr class="\w+" data-item="([^"]+)" data-verdict="([^"]+)"',
                           section(page, 'contract')))
    assert rows == {'stream-triad': 'fail', 'hpl-node': 'pass', 'ior-easy-write': 'reported'}
    contract = text(section(page, 'contract'))
    assert '9000 MB/s' in contract and '7412.3 MB/s' in contract and 'median of 3' in contract
    assert '7188.9 – 7530.6' in contract and 'n=3 of 3 required' in contract
    assert '3 valid, 1 invalid' in contract and 'rules: min_runtime_s 1' in contract
    assert 'rules: no_stonewall true; reordered_reads true' in contract
    assert 'stream Triad placement=cores' in contract
    # the invalid runs and why
    invalid = text(section(page, 'invalid'))
    assert 'interrupted: the job was cancelled by Slurm (TIMEOUT)' in invalid
    assert 'stonewalled: the write phase stopped' in invalid
    # the provenance of every figure: every run with its binary and fingerprint
    prov = section(page, 'provenance')
    runs = [r for it in record()['items'] for r in it['runs']]
    assert prov.count('<tr>') == len(runs) + 1 == 11
    for r in runs:
        assert r['binary_sha256'] in prov and r['session'] in prov
    assert 'fingerprint fp:41c07d9a2b6e' in prov and 'threads=2 (allowed [1, 4])' in prov
    assert text(prov).count('NO not counted') == 2 and text(prov).count('yes counted') == 8
    assert prov.count('<span class="flag">EMULATED</span>') == len(runs)
    assert '0 reused from the store, 4 run for this acceptance' in text(page)
    # the screening summary names the node with less memory, and no other
    screening = section(page, 'screening')
    assert re.findall(r'data-node="([^"]+)"', screening) == ['n2']
    assert '4 node(s) screened' in text(screening) and '-50%' in text(screening)
    signatures = text(section(page, 'signatures'))
    assert 'Buyer: Example University HPC Centre' in signatures
    assert 'Vendor: Example Systems Ltd' in signatures
    assert signatures.count('signature') >= 2 and signatures.count('date') == 2


def test_page_of_a_real_record():
    """A record the acceptance command wrote on the local cluster
    (tests/data/acceptance_report/README.md)."""
    page = report.render_file(RECORD.with_name('record-local-trip.json'))
    assert re.search(r'<title>Acceptance of trip \[EMULATED, SMOKE\]</title>', page)
    assert '@top-right{content:"EMULATED, SMOKE: not the speed of real hardware"' in page
    rows = dict(re.findall(r'data-item="([^"]+)" data-verdict="([^"]+)"', page))
    assert rows == {'triad-met': 'pass', 'triad-missed': 'fail', 'copy-info': 'reported',
                    'add-too-short': 'invalid'}
    assert '2 committed item(s) failed: triad-missed, add-too-short' in text(page)
    invalid = text(section(page, 'invalid'))
    assert invalid.count('less than the minimum 3600 s') == 2
    assert 'id="screening"' not in page
    prov = section(page, 'provenance')
    assert prov.count('fingerprint n1=') == prov.count('<span class="flag">EMULATED</span>') == 8


def test_record_without_optional_parts():
    """The record's documented core alone (no screening, no sessions, no
    validity rules or counted flags) makes a whole report."""
    rec = record()
    rec['screening'] = None
    del rec['sessions']
    for it in rec['items']:
        for key in ('parameters', 'set', 'validity'):
            del it[key]
        for run in it['runs']:
            del run['counted'], run['flags']
    page = report.render(rec)
    assert 'id="screening"' not in page and 'sessions' not in text(section(page, 'contract'))
    assert 'rules:' not in page and 'counted' not in section(page, 'provenance')
    assert re.findall(r'data-item="([^"]+)"', page) == \
        ['stream-triad', 'hpl-node', 'ior-easy-write']


def test_old_screening_spellings_read_as_the_one_vocabulary(tmp_path):
    """The fixture's screening was written before the one verdict vocabulary
    (``ok``, ``failed``): it reads as ``pass`` and ``FAILED``, the page it
    makes is the page of the same screening written today, and a spelling
    that is no verdict is an error naming the record and the key."""
    old = record()
    assert {n['verdict'] for n in old['screening']['nodes']} == {'ok', 'failed'}
    now = record()
    for node in now['screening']['nodes']:
        node['verdict'] = {'ok': 'pass', 'failed': 'FAILED'}[node['verdict']]
    screening = text(section(report.render(old), 'screening'))
    assert '4 node(s) screened against their peers: 1 FAILED, 3 pass;' in screening
    assert section(report.render(old), 'screening') == section(report.render(now), 'screening')
    now['screening']['nodes'][0]['verdict'] = 'okay'
    with pytest.raises(ClusterproofError, match=r"record\.json: screening\.nodes\[0\]\.verdict: "
                                                r"'okay' is not a verdict \(known: pass, "):
        report.render_file(write(tmp_path, now))
    now['screening']['nodes'][0]['verdict'] = 'FAILED'
    now['items'][0]['verdict'] = 'failed-ish'
    with pytest.raises(ClusterproofError,
                       match=r'items\[0\]\.verdict: .failed-ish. is not a verdict'):
        report.render_file(write(tmp_path, now))


def test_labels_follow_the_record():
    """A smoke record says SMOKE; a full one on real hardware carries no label."""
    def flagged(flags, **top):
        rec = dict(record(), **top)
        for it in rec['items']:
            for run in it['runs']:
                run['flags'] = flags
        return rec
    smoke = flagged(['smoke'], mode='smoke', emulated=False, smoke=True)
    page = report.render(smoke)
    assert re.search(r'<title>[^<]*SMOKE', page) and 'EMULATED' not in page
    assert '@top-right{content:"SMOKE: function only, not speed"' in page
    full = flagged([], mode='full', emulated=False, smoke=False)
    page = report.render(full)
    assert 'EMULATED' not in page and 'SMOKE' not in page
    assert '@top-right{content:""' in page


def test_contract_text_cannot_break_out_of_the_page_style():
    rec = record()
    rec['contract']['name'] = 'x"}</style><script>alert(1)</script>'
    page = report.render(rec)
    assert '<script>' not in page
    assert page.count('</style>') == 1


def test_figures_as_printed():
    assert [report.num(x) for x in (7412.3, 9000.0, 7016, 9.41, 180000.0, 1234567.8, None,
                                     float('nan'))] == \
        ['7412.3', '9000', '7016', '9.41', '180\u2009000', '1\u2009234\u2009568', '-', '-']


def test_bad_records_are_named(tmp_path):
    rec = record()
    rec['format'] = 2
    with pytest.raises(ClusterproofError, match=r'record\.json.*format 2.*reads format 1'):
        report.render_file(write(tmp_path, rec))
    rec = record()
    del rec['items'][1]['verdict']
    with pytest.raises(ClusterproofError,
                       match=r'record\.json: key items\[1\]\.verdict is missing'):
        report.render_file(write(tmp_path, rec))
    rec = record()
    rec['items'][0]['runs'][2]['valid'] = 'yes'
    with pytest.raises(ClusterproofError,
                       match=r"items\[0\]\.runs\[2\]\.valid is 'yes', not a bool"):
        report.render_file(write(tmp_path, rec))
    rec = record()
    del rec['items'][2]['runs'][1]['session']
    with pytest.raises(ClusterproofError, match=r'key items\[2\]\.runs\[1\]\.session is missing'):
        report.render_file(write(tmp_path, rec))
    bad = tmp_path / 'truncated.json'
    bad.write_text(RECORD.read_text()[:500])
    with pytest.raises(ClusterproofError, match=r'truncated\.json: not an acceptance record'):
        report.render_file(bad)


def test_failed_print_leaves_the_pdf_as_it_was(tmp_path):
    """A printer that exits with an error: its exit status is named, the
    previous PDF is untouched, no temporary file is left."""
    page = tmp_path / 'report.html'
    page.write_text(report.render_file(RECORD))
    out = tmp_path / 'report.pdf'
    out.write_bytes(b'%PDF-1.4 the signed one\n')
    with pytest.raises(ClusterproofError,
                       match=r'/bin/false failed to print .*exit status 1.*unchanged'):
        report.print_pdf(page, out, chromium='/bin/false')
    assert out.read_bytes() == b'%PDF-1.4 the signed one\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ['report.html', 'report.pdf']


def test_missing_chromium_is_named(tmp_path):
    """The command as a user runs it: exit status 2, the cause on stderr,
    the HTML written, the PDF already there untouched."""
    rec = shutil.copy(RECORD, tmp_path / 'record.json')
    pdf = tmp_path / 'record.pdf'
    pdf.write_bytes(b'%PDF-1.4 the signed one\n')
    env = dict(os.environ, CLUSTERPROOF_CHROMIUM=str(tmp_path / 'no-chromium'))
    proc = subprocess.run([str(CLUSTERPROOF), 'acceptance-report', str(rec), '--pdf', str(pdf)],
                          capture_output=True, text=True, timeout=WAIT_S, env=env)
    assert proc.returncode == 2
    assert ('clusterproof acceptance-report: error: cannot print the PDF: CLUSTERPROOF_CHROMIUM='
            f'{tmp_path}/no-chromium is not an executable file; install the Debian package '
            'chromium') in proc.stderr
    assert (tmp_path / 'record.html').is_file() and pdf.read_bytes() == b'%PDF-1.4 the signed one\n'


@pytest.mark.slow
@need_chromium
def test_chromium_failure_shows_its_stderr(tmp_path):
    """Chromium that cannot load the page exits 0 and writes nothing: that
    is an error, with Chromium's own reason."""
    out = tmp_path / 'report.pdf'
    with pytest.raises(ClusterproofError, match=r'(?s)no PDF written.*ERR_FILE_NOT_FOUND'):
        report.print_pdf(tmp_path / 'missing.html', out)
    assert list(tmp_path.iterdir()) == []


def ocr(png):
    # one thread: tesseract's OpenMP threads fight each other on a busy machine (4x slower)
    proc = subprocess.run(['tesseract', str(png), '-', '--psm', '3'], capture_output=True,
                          text=True, timeout=WAIT_S, env=dict(os.environ, OMP_THREAD_LIMIT='1'))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.slow
@need_chromium
@need_pdf_tools
def test_pdf_pages_read_back(tmp_path):
    """The whole command as a user runs it, then every page of the PDF as an
    image read back by OCR: EMULATED and the page number on every page, the
    verdict at the top of page 1, the failed item named FAIL."""
    rec = shutil.copy(RECORD, tmp_path / 'local-cluster-20261124T150211.json')
    html, pdf = tmp_path / 'signed.html', tmp_path / 'signed.pdf'
    proc = subprocess.run([str(CLUSTERPROOF), 'acceptance-report', str(rec), '-o', str(html),
                           '--pdf', str(pdf)], capture_output=True, text=True, timeout=WAIT_S)
    assert proc.returncode == 0, proc.stderr
    assert f'report: {html}' in proc.stdout and f'PDF: {pdf}' in proc.stdout
    assert pdf.read_bytes()[:5] == b'%PDF-'
    subprocess.run(['pdftoppm', '-r', '150', '-gray', '-png', str(pdf), str(tmp_path / 'page')],
                   check=True, timeout=WAIT_S)
    pngs = sorted(tmp_path.glob('page-*.png'))
    assert len(pngs) >= 2, 'the fixture is long enough for two pages'
    pages = [ocr(p) for p in pngs]
    for i, page in enumerate(pages, 1):
        assert 'EMULATED' in page, f'page {i} of {len(pngs)} does not say EMULATED:\n{page}'
        assert re.search(rf'Page {i} of {len(pngs)}', page), f'page {i}:\n{page}'
        assert 'local-cluster' in page, f'page {i}:\n{page}'
    first = pages[0]
    top = first[:first.index('The contract, item by item')]
    assert 'REJECTED' in top and 'stream-triad' in top, top
    table = first[first.index('The contract, item by item'):]
    assert 'stream-triad' in table and 'FAIL' in table and 'REPORTED' in table
    # the same from the PDF's text layer, page by page
    layers = [subprocess.run(['pdftotext', '-f', str(i), '-l', str(i), '-layout', str(pdf), '-'],
                             capture_output=True, text=True, check=True, timeout=WAIT_S).stdout
              for i in range(1, len(pngs) + 1)]
    for i, layer in enumerate(layers, 1):
        assert ('Acceptance: local-cluster' in layer
                and 'EMULATED: not the speed of real hardware' in layer)
        assert f'Page {i} of {len(pngs)}' in layer
    # the signature block is never split from its heading and statement
    signing = [layer for layer in layers if 'By signing' in layer]
    assert len(signing) == 1 and 'Vendor: Example Systems Ltd' in signing[0]
    assert signing[0].count('date') == 2
    whole = subprocess.run(['pdftotext', str(pdf), '-'], capture_output=True, text=True,
                           check=True, timeout=WAIT_S).stdout
    for r in (r for it in record()['items'] for r in it['runs']):
        assert r['session'] in whole.replace('\n', '')
    print(f'{len(pngs)} page(s); page 1: {pngs[0]}', file=sys.stderr)
