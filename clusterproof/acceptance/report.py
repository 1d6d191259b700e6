"""The signed acceptance report: one document per acceptance, rendered from
the acceptance record (docs/acceptance.md, "The signed report").

:func:`render` turns a record (the JSON document ``clusterproof acceptance``
writes) into a self-contained HTML page for A4 paper: the overall verdict and
why at the top, the contract table, the node screening summary, the invalid
runs and why, the provenance of every figure and a signature block for the
buyer and the vendor. An emulated or smoke record says so in the title and
in the running header of every printed page. :func:`print_pdf` prints that
page to PDF with headless Chromium.

Nothing here judges: every verdict, figure and reason is the record's.
"""

import hashlib
import json
import math
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import jinja2
from markupsafe import Markup

from clusterproof import ClusterproofError
from clusterproof.acceptance import record as acceptance_record
from clusterproof.references.judge import Verdict
from clusterproof.publish.report import TEMPLATES as PAGE_TEMPLATES, bucket

TEMPLATES = Path(__file__).with_name('templates')

#: how long Chromium may take to print a report before it counts as hung
CHROMIUM_TIMEOUT_S = 180

#: item verdicts that decide an acceptance, in the order the table's
#: summary counts them
ITEM_VERDICTS = (Verdict.PASS, Verdict.FAIL, Verdict.NOT_MEASURED, Verdict.INVALID,
                 Verdict.REPORTED)


def read_record(path):
    """The acceptance record at ``path`` (its writer's reader,
    :func:`clusterproof.acceptance.record.read`)."""
    return acceptance_record.read(path)


class _Fields:
    """Reads keys of one part of the record, naming the record file and the
    key path of anything missing or of the wrong type."""

    def __init__(self, source):
        self.source = source

    def get(self, obj, key, where, kind=None, default=KeyError):
        if not isinstance(obj, dict):
            raise ClusterproofError(f'{self.source}: {where} is not an object')
        if key not in obj:
            if default is KeyError:
                raise ClusterproofError(f'{self.source}: key {where}.{key} is missing')
            return default
        value = obj[key]
        if kind is Verdict:
            return value if value is None else self.verdict(value, f'{where}.{key}')
        if kind is not None and value is not None and not isinstance(value, kind):
            names = ' or '.join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
            raise ClusterproofError(f'{self.source}: {where}.{key} is {value!r}, not a {names}')
        return value

    def verdict(self, value, where):
        """The :class:`Verdict` the record spelled ``value`` (old spellings
        too); an error naming the record and ``where`` when it is none."""
        try:
            return Verdict.read(value)
        except ValueError as err:
            raise ClusterproofError(f'{self.source}: {where}: {err}') from None


def num(x):
    """A figure as the report prints it: five significant digits below
    100 000, whole units above; '-' for none."""
    if x is None or isinstance(x, bool) or not isinstance(x, (int, float)):
        return '-' if x is None or x == '' else str(x)
    if isinstance(x, float) and not math.isfinite(x):
        return '-'
    if abs(x) >= 1e5:   # whole units, digits grouped: 180 000, never 1.8e+05
        return f'{x:,.0f}'.replace(',', '\u2009')
    return f'{x:.5g}'


def labels(record):
    """The labels every page carries: 'EMULATED', 'SMOKE' (both can hold)."""
    out = []
    if record.get('emulated') or record.get('mode') == 'emulated':
        out.append('EMULATED')
    if record.get('smoke') or record.get('mode') == 'smoke':
        out.append('SMOKE')
    return out


def _run(f, run, where):
    """One run of an item: the documented keys, with the optional ones
    (``counted``, ``flags``) as None and () when the record has none."""
    mods = f.get(run, 'modifications', where, dict, default=None) or {}
    return {
        'session': f.get(run, 'session', where, str),
        'test': f.get(run, 'test', where, str),
        'time': f.get(run, 'time', where, str, default='') or '',
        'value': f.get(run, 'value', where, (int, float)),
        'valid': f.get(run, 'valid', where, bool),
        'invalid_why': f.get(run, 'invalid_why', where, str, default='') or '',
        'modifications': {'used': f.get(mods, 'used', f'{where}.modifications', dict,
                                        default=None) or {},
                          'allowed': f.get(mods, 'allowed', f'{where}.modifications', dict,
                                           default=None) or {}},
        'binary_sha256': f.get(run, 'binary_sha256', where, str, default='') or '',
        'fingerprint': f.get(run, 'fingerprint', where, str, default='') or '',
        'nodes': f.get(run, 'nodes', where, str, default='') or '',
        'counted': f.get(run, 'counted', where, bool, default=None),
        'flags': f.get(run, 'flags', where, list, default=None) or [],
    }


def _item(f, it, i):
    where = f'items[{i}]'
    runs = [_run(f, run, f'{where}.runs[{j}]')
            for j, run in enumerate(f.get(it, 'runs', where, list, default=[]) or [])]
    spread = f.get(it, 'spread', where, dict, default=None) or {}
    valid = [r for r in runs if r['valid']]
    setting = dict(f.get(it, 'parameters', where, dict, default=None) or {})
    setting.update(f.get(it, 'set', where, dict, default=None) or {})
    return {
        'id': f.get(it, 'id', where, str),
        'benchmark': f.get(it, 'benchmark', where, str, default=''),
        'figure': f.get(it, 'figure', where, str, default=''),
        'unit': f.get(it, 'unit', where, str, default='') or '',
        'kind': f.get(it, 'kind', where, str),
        'committed_value': f.get(it, 'committed_value', where, (int, float), default=None),
        'lower_is_better': bool(f.get(it, 'lower_is_better', where, default=False)),
        'tolerance': f.get(it, 'tolerance', where, default='') or '',
        'statistic': f.get(it, 'statistic', where, str, default='') or '',
        'repetitions_required': f.get(it, 'repetitions_required', where, int, default=None),
        'measured': f.get(it, 'measured', where, (int, float), default=None),
        'spread': {'min': spread.get('min'), 'max': spread.get('max'), 'n': spread.get('n')},
        'verdict': f.get(it, 'verdict', where, Verdict),
        'why': f.get(it, 'why', where, str, default='') or '',
        'runs': runs, 'n_valid': len(valid), 'n_invalid': len(runs) - len(valid),
        'setting': setting,
        'validity': f.get(it, 'validity', where, dict, default=None) or {},
    }


def _screening(f, sc):
    """The summary of a screening (``clusterproof screen --format json``):
    nodes screened, and each outlier with its worst figure and distance."""
    if not sc:
        return None
    nodes = f.get(sc, 'nodes', 'screening', list, default=[]) or []
    named = set(f.get(sc, 'outliers', 'screening', list, default=None) or ())
    outliers = []
    for i, node in enumerate(nodes):
        name = f.get(node, 'node', f'screening.nodes[{i}]', str)
        verdict = f.get(node, 'verdict', f'screening.nodes[{i}]', Verdict, default='')
        if name not in named and verdict in (Verdict.PASS, ''):
            continue
        worst = node.get('worst') or {}
        outliers.append({'node': name, 'verdict': verdict, 'reason': node.get('reason') or '',
                         'check': worst.get('check', ''), 'figure': worst.get('figure', ''),
                         'value': worst.get('value'), 'unit': worst.get('unit') or '',
                         'noise_units': worst.get('noise_units'),
                         'percent': worst.get('percent'),
                         'mismatch': [f'{m.get("field")}: {m.get("found")} '
                                      f'(expected {m.get("expected")})'
                                      for m in node.get('inventory_mismatch') or ()]})
    verdicts = {}
    for i, node in enumerate(nodes):
        verdict = f.get(node, 'verdict', f'screening.nodes[{i}]', Verdict, default='')
        verdicts[verdict] = verdicts.get(verdict, 0) + 1
    return {'n_nodes': len(nodes), 'outliers': outliers, 'verdicts': sorted(verdicts.items()),
            'note': sc.get('note') or '', 'thresholds': sc.get('thresholds_pct') or {}}


def check_screening(sc, source):
    """``sc`` (a screening's JSON, read from ``source``) when the report can
    show it; else an error naming ``source`` and the key: checked before an
    acceptance runs anything, not when its report is rendered."""
    _screening(_Fields(source), sc)
    return sc


def view(record, source='the record'):
    """What the template shows, from ``record``; a missing or mistyped key is
    an error naming ``source`` and the key."""
    f = _Fields(source)
    contract = f.get(record, 'contract', 'record', dict)
    items = [_item(f, it, i) for i, it in enumerate(f.get(record, 'items', 'record', list))]
    counts = {v: 0 for v in ITEM_VERDICTS}
    for it in items:
        counts[it['verdict']] = counts.get(it['verdict'], 0) + 1
    runs = [dict(run, item=it['id'], unit=it['unit']) for it in items for run in it['runs']]
    marks = labels(record)
    name = f.get(contract, 'name', 'contract', str)
    return {
        'contract': {k: contract.get(k) or '' for k in (
            'name', 'title', 'file', 'sha256', 'system', 'partition', 'buyer', 'vendor')},
        'name': name, 'title': contract.get('title') or name,
        'judged_at': f.get(record, 'judged_at', 'record', str),
        'version': record.get('clusterproof_version') or '',
        'mode': record.get('mode') or '', 'labels': marks,
        'label_text': ', '.join(marks) + (
            ': not the speed of real hardware' if 'EMULATED' in marks else
            ': function only, not speed' if marks else ''),
        'verdict': f.get(record, 'verdict', 'record', str),
        'why': f.get(record, 'why', 'record', str, default='') or '',
        'items': items, 'counts': [(k, n) for k, n in counts.items() if n],
        'invalid': [r for r in runs if not r['valid']], 'runs': runs,
        'screening': _screening(f, record.get('screening')),
        'sessions': f.get(record, 'sessions', 'record', dict, default=None) or {},
        'not_judged': [{'test': f.get(x, 'test', f'not_judged[{i}]', str),
                        'partition': f.get(x, 'partition', f'not_judged[{i}]', str),
                        'figure': f.get(x, 'figure', f'not_judged[{i}]', str),
                        'unit': f.get(x, 'unit', f'not_judged[{i}]', str, default='') or '',
                        'median': f.get(x, 'median', f'not_judged[{i}]', (int, float)),
                        'n': f.get(x, 'n', f'not_judged[{i}]', int)}
                       for i, x in enumerate(f.get(record, 'not_judged', 'record', list,
                                                   default=None) or ())],
    }


def plain(value):
    """A recorded setting as written in the record: lists, mappings,
    booleans and null as JSON, strings and numbers as they are."""
    if value is None or isinstance(value, (list, dict, bool)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def css_string(text):
    """``text`` as a CSS string literal, safe inside a <style> element."""
    out = ['"']
    for ch in str(text):
        if ch in '"\\<>&' or ord(ch) < 0x20:
            out.append(f'\\{ord(ch):x} ')
        else:
            out.append(ch)
    out.append('"')
    return Markup(''.join(out))


def _env():
    loader = jinja2.FileSystemLoader([str(TEMPLATES), str(PAGE_TEMPLATES)])
    env = jinja2.Environment(loader=loader, autoescape=True, trim_blocks=True,
                             lstrip_blocks=True, undefined=jinja2.StrictUndefined)
    env.filters['bucket'] = bucket   # the morning page's macros use it
    env.filters['num'] = num
    env.filters['css_string'] = css_string
    env.filters['plain'] = plain
    env.filters['vclass'] = lambda v: 'v-' + str(v).replace(' ', '-')
    return env


def render(record, source='the record', record_sha256=''):
    """The report page (HTML text) of ``record``. ``record_sha256``, the hash
    of the record file, is printed at the foot of every page."""
    v = view(record, source)
    return _env().get_template('acceptance.html.j2').render(
        **v, record_file=str(source), record_sha256=record_sha256)


def render_file(path):
    """The report page of the record file at ``path``."""
    path = Path(path)
    record = read_record(path)
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as err:
        raise ClusterproofError(f'cannot read {path}: {err.strerror}') from None
    return render(record, source=path.name, record_sha256=digest)


def find_chromium():
    """The Chromium binary: $CLUSTERPROOF_CHROMIUM, else chromium on PATH."""
    given = os.environ.get('CLUSTERPROOF_CHROMIUM')
    found = given or shutil.which('chromium')
    if not found or not (os.path.isfile(found) and os.access(found, os.X_OK)):
        where = (f'CLUSTERPROOF_CHROMIUM={given} is not an executable file' if given
                 else 'no chromium on PATH')
        raise ClusterproofError(f'cannot print the PDF: {where}; install the Debian package '
                                'chromium (scripts/setup does) or set CLUSTERPROOF_CHROMIUM')
    return found


def print_pdf(html, out, chromium=None):
    """Print the HTML file ``html`` to the PDF ``out`` with headless Chromium
    (A4, the page's own running header and page numbers). ``out`` is written
    through a temporary file and a rename: a failed print leaves it as it was."""
    chromium = chromium or find_chromium()
    html, out = Path(html).resolve(), Path(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f'.{out.name}.', suffix='.pdf', dir=out.parent)
        os.close(fd)
    except OSError as err:
        raise ClusterproofError(f'cannot write {out}: {err.strerror}') from None
    try:
        with tempfile.TemporaryDirectory(prefix='clusterproof-chromium-') as profile:
            cmd = [chromium, '--headless', '--no-sandbox', '--disable-gpu',
                   '--no-first-run', '--disable-background-networking',
                   '--disable-component-update', '--disable-sync', '--disable-extensions',
                   f'--user-data-dir={profile}', '--no-pdf-header-footer',
                   f'--print-to-pdf={tmp}', html.as_uri()]
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True,
                                      timeout=CHROMIUM_TIMEOUT_S, stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                raise ClusterproofError(f'{chromium} did not print {html} to PDF within '
                                        f'{CHROMIUM_TIMEOUT_S} s; {out} is unchanged') from None
            except OSError as err:
                raise ClusterproofError(f'cannot run {chromium}: {err.strerror}') from None
        with open(tmp, 'rb') as fp:
            head = fp.read(5)
        if proc.returncode != 0 or head != b'%PDF-':
            # headless Chromium always complains that it has no D-Bus: not the cause
            lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and 'dbus' not in ln]
            err = '\n'.join(lines[-15:]) or '(nothing on stderr)'
            what = (f'exit status {proc.returncode}' if proc.returncode
                    else 'exit status 0 but no PDF written')
            raise ClusterproofError(f'{chromium} failed to print {html} to PDF ({what}); '
                                    f'{out} is unchanged. Its stderr:\n{err}')
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return out
