"""fio JSON output (``--output-format=json`` or ``json+``).

Error text can precede the JSON in the same stream (``fio: pid=..., err=95
...``, ``fio: terminating on signal 2``): parsing starts at the first ``{``;
the text around the JSON is kept and read for signs of failure. An output
of several fio runs (appended: one JSON document after another) is read by
the rule of every parser (:mod:`clusterproof.parsers.runs`): the last
document, with the text between it and the one before, when all ran the
same jobs (names, engine, pattern, block size); refused, naming what
differs, when they did not. ``doc['_runs']`` and ``doc['_note']`` say so.

Per job (a section, with ``group_reporting=1``) and direction: IOPS,
bandwidth (MiB/s, from ``bw_bytes``; ``bw`` KiB/s before fio 3.3), mean
latency (us) and the latency percentiles p50, p99, p99.9, p99.99 (us) from
``lat_ns`` (filled by ``lat_percentiles=1``; ``clat_ns`` is not the
published figure; fio 3.1 to 3.12 print the ``lat_percentiles=1``
percentiles under ``clat_ns``, and they are read there).

:func:`problems` is the sanity rule; a run is not a result when any of these
shows (each is named in the message):

- fio was interrupted: the line ``fio: terminating on signal N`` (fio still
  prints complete JSON after a SIGINT or SIGTERM, percentiles and all), or
  a ``time_based`` job whose ``job_runtime`` is short of its ``runtime``;
- fio reported an error: ``fio: pid=..., err=...`` or ``fio: io_u error``
  lines, a job with ``error != 0``;
- a non-zero exit status, when the caller gives it (fio exits 128 after a
  signal);
- a job that did no I/O (a killed libpmem run writes JSON with error 0 and
  ``total_ios`` 0; before fio 2.1.14 there is no ``total_ios`` and
  ``io_bytes`` tells instead).

fio before 3.1 cannot measure total-latency percentiles (``lat_percentiles``
arrived in 3.1; 2.x prints ``clat`` percentiles in us only): its JSON is
read for its problems, and its figures are refused naming the version.

Every figure is a finite number read from its key: a key missing from a
damaged JSON, or a value ``NaN``, ``Infinity`` or ``1e999`` (which Python's
JSON reader accepts), is refused naming job, direction and key.
"""

import json
import re

from clusterproof.parsers import ParseError, finite, whole
from clusterproof.parsers import runs

DIRECTIONS = ('read', 'write', 'trim')

#: figure name -> percentile key in ``lat_ns.percentile``
PERCENTILES = {'lat_p50': '50.000000', 'lat_p99': '99.000000',
               'lat_p99_9': '99.900000', 'lat_p99_99': '99.990000'}

#: figure name -> unit
UNITS = {'iops': 'IOPS', 'bw': 'MiB/s', 'lat_mean': 'us',
         'lat_p50': 'us', 'lat_p99': 'us', 'lat_p99_9': 'us', 'lat_p99_99': 'us'}


def load(text, source='fio output'):
    """The JSON document in ``text`` (anything before the first ``{`` is
    skipped and kept as ``doc['_preamble']``)."""
    start = text.find('{')
    if start < 0 and not text.strip():
        raise ParseError(f'{source}: fio printed nothing: it was killed before writing its '
                         'JSON (SIGKILL, out of memory, a time limit) or never started')
    if start < 0:
        raise ParseError(f'{source}: no JSON in the output (fio printed: '
                         f'{text.strip()[:300]!r}); run fio with --output-format=json')
    docs = []               # (start, end, document) of each fio JSON document
    while start >= 0:
        try:
            doc, length = json.JSONDecoder().raw_decode(text[start:])
        except json.JSONDecodeError as err:
            raise ParseError(f'{source}: fio JSON is cut or invalid at line {err.lineno}, '
                             f'column {err.colno}: {err.msg} (was fio killed while writing '
                             f'it?)') from None
        if not isinstance(doc, dict) or not isinstance(doc.get('jobs'), list):
            raise ParseError(f'{source}: fio JSON has no "jobs" list')
        docs.append((start, start + length, doc))
        start = _NEXT_DOC.search(text, start + length)
        start = start.start() if start else -1
    previous = docs[-2][1] if len(docs) > 1 else 0
    begin, end, doc = docs[-1]
    _where, note = runs.last_of(len(docs), source, 'fio', [_kind(d) for _, _, d in docs])
    doc['_preamble'] = text[previous:begin].strip()
    doc['_text'] = text[previous:begin] + '\n' + text[end:]
    doc['_runs'], doc['_note'] = len(docs), note
    return doc


#: the start of another fio JSON document after one (an appended output)
_NEXT_DOC = re.compile(r'^\{\s*"fio version"', re.M)


def _kind(doc):
    """What the runs of one output must share: the jobs and their engine,
    pattern and block size."""
    jobs = doc.get('jobs') or []
    opts = [options(doc, job) for job in jobs]
    return {'jobs': ','.join(str(job.get('jobname', '?')) for job in jobs) or '?',
            'ioengine': ','.join(str(o.get('ioengine', '?')) for o in opts) or '?',
            'rw': ','.join(str(o.get('rw', o.get('readwrite', '?'))) for o in opts) or '?',
            'bs': ','.join(str(o.get('bs', o.get('blocksize', '?'))) for o in opts) or '?'}


#: lines fio prints when it stops early or an I/O fails
_FAILURE_LINES = re.compile(r'^fio: (?:terminating on signal \d+|pid=\d+, err=.*|io_u error.*)$',
                            re.M)
_SIGNAL = re.compile(r'terminating on signal (\d+)')
#: fio time units (a bare number is seconds)
_TIME_UNITS = {'us': 1e-6, 'usec': 1e-6, 'ms': 1e-3, 'msec': 1e-3, 's': 1, 'sec': 1, '': 1,
               'm': 60, 'min': 60, 'h': 3600, 'd': 86400}


def version(doc):
    """``(text, (major, minor))`` of the fio that wrote ``doc`` (``(0, 0)``
    when it does not say)."""
    text = str(doc.get('fio version', ''))
    m = re.search(r'(\d+)\.(\d+)', text)
    return text, (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def did_io(stats, source='fio output'):
    """True when one direction of a job moved data: ``total_ios`` (fio >=
    2.1.14), else ``io_bytes``/``io_kbytes``."""
    if 'total_ios' in stats:
        return whole(stats['total_ios'], 'total_ios', source) > 0
    return whole(stats.get('io_bytes', 0) or stats.get('io_kbytes', 0), 'io_bytes', source) > 0


def _seconds(value):
    m = re.fullmatch(r'\s*(\d+(?:\.\d*)?)\s*([a-z]*)\s*', str(value).lower())
    if not m or m.group(2) not in _TIME_UNITS:
        return None
    return float(m.group(1)) * _TIME_UNITS[m.group(2)]


def options(doc, job):
    """A job's options as fio reports them: its own over the global ones."""
    opts = dict(doc.get('global options') or {})
    opts.update(job.get('job options') or {})
    return opts


def _is_set(opts, name):
    """A boolean option given (``name`` alone, ``=1``, ``=true`` ...)."""
    return name in opts and str(opts[name]).lower() in ('1', 'true', 'on', 'yes', '')


def _short_time_based_run(doc, job):
    """Why a ``time_based`` job ran short of its ``runtime`` (fio stopped it
    early), or None."""
    opts = options(doc, job)
    if not _is_set(opts, 'time_based') or 'runtime' not in opts or 'job_runtime' not in job:
        return None
    wanted = _seconds(opts['runtime'])
    ramp = _seconds(opts.get('ramp_time', 0)) or 0      # counted in or out of runtime
    ran = finite(job['job_runtime'], 'job_runtime', f'job {job.get("jobname", "?")}') / 1000.0
    if wanted is None or ran + ramp >= 0.95 * wanted:
        return None
    return f'time_based job ran {ran:.1f} s of its runtime={opts["runtime"]}'


def interruption(doc, exit_status=None):
    """The signs in fio's own output (and exit status, when given) that it
    was interrupted, killed or failed: a list of short phrases, empty when
    there is none. ``doc`` is :func:`load`'s result."""
    # each fio process prints the signal line: once is enough
    signs = list(dict.fromkeys(m.group(0) for m in _FAILURE_LINES.finditer(doc.get('_text', ''))))
    if exit_status not in (None, 0):
        signs.append(f'fio exited with status {exit_status}')
    return signs


def problems(doc, source='fio output', exit_status=None):
    """Messages for everything that makes the run not a result (see the
    module's documentation); an empty list means the run is sane.
    ``exit_status`` is fio's exit status when the caller knows it."""
    found = []
    if not doc['jobs']:
        found.append(f'{source}: fio reported no job at all')
    preamble = doc.get('_preamble', '')
    signs = interruption(doc, exit_status)
    signal = next((m for m in map(_SIGNAL.search, signs) if m), None)
    failed_job = False
    for job in doc['jobs']:
        name = job.get('jobname', '?')
        err = whole(job.get('error', 0), 'error', f'{source}: job {name}')
        short = _short_time_based_run(doc, job)
        if err != 0:
            failed_job = True
            found.append(f'{source}: job {name}: error={err}'
                         + (f' ({preamble.splitlines()[0]})' if preamble else ''))
        elif not any(did_io(job.get(d) or {}, f'{source}: job {name}, {d}')
                     for d in DIRECTIONS):
            key = 'total_ios' if 'total_ios' in (job.get('read') or {}) else 'io_bytes'
            found.append(f'{source}: job {name}: error=0 but {key}=0: no I/O was done '
                         '(fio was killed or the files could not be set up)'
                         + (f'; fio said: {preamble.splitlines()[0]}' if preamble else ''))
        elif short and not signal:
            found.append(f'{source}: job {name}: {short}: fio stopped it early')
    if signal:
        found.insert(0, f'{source}: fio was interrupted by signal {signal.group(1)} '
                        f'({"; ".join(signs)}): its figures are partial, not a result')
    elif signs and not failed_job:
        found.insert(0, f'{source}: fio reported a failure: {"; ".join(signs)}')
    return found


def percentile_parent(doc, job):
    """The object holding the total-latency percentiles: ``lat_ns``, except
    in fio 3.1 to 3.12 where ``lat_percentiles=1`` fills the percentiles under
    ``clat_ns`` (with total latencies: the completion-latency percentiles are
    then off)."""
    _, ver = version(doc)
    if (3, 1) <= ver < (3, 13) and _is_set(options(doc, job), 'lat_percentiles'):
        return 'clat_ns'
    return 'lat_ns'


def direction_figures(stats, source, name, ddir, parent='lat_ns'):
    """Figures of one direction of one job; ``parent`` holds the percentiles
    (:func:`percentile_parent`)."""
    lat = stats.get('lat_ns') or {}
    pct = (stats.get(parent) or {}).get('percentile') or {}
    missing = [key for key in PERCENTILES.values() if key not in pct]
    if missing:
        raise ParseError(f'{source}: job {name}, {ddir}: {parent} has no percentile(s) '
                         f'{", ".join(missing)} (set lat_percentiles=1 in the job)')
    where = f'{source}: job {name}, {ddir}:'

    def value(obj, key, read, prefix=''):
        if not isinstance(obj, dict) or key not in obj:
            raise ParseError(f'{where} no {prefix}{key} (a cut or damaged fio JSON)')
        return read(obj[key], f'{prefix}{key}', where.rstrip(':'))
    figs = {
        'iops': value(stats, 'iops', finite),
        'bw': (value(stats, 'bw_bytes', finite) / 1024 ** 2 if 'bw_bytes' in stats
               else value(stats, 'bw', finite) / 1024),
        'lat_mean': value(lat, 'mean', finite, 'lat_ns.') / 1000.0,
        'total_ios': value(stats, 'total_ios', whole),
        'io_bytes': value(stats, 'io_bytes', whole),
    }
    for fig, key in PERCENTILES.items():
        figs[fig] = value(pct, key, finite, f'{parent}.percentile.') / 1000.0
    return figs


def parse(text, source='fio output', exit_status=None):
    """``{jobname: {direction: figures}}`` for every job and every direction
    that did I/O, after checking :func:`problems` (raises ParseError listing
    them all). ``figures`` has iops, bw (MiB/s), lat_mean and lat_p50/p99/
    p99_9/p99_99 (us), total_ios, io_bytes. JSON of fio before 3.0 is
    refused naming its version (after its problems)."""
    doc = load(text, source)
    bad = problems(doc, source, exit_status)
    if bad:
        raise ParseError('; '.join(bad))
    name, (major, minor) = version(doc)
    if (major, minor) != (0, 0) and (major, minor) < (3, 1):
        raise ParseError(f'{source}: written by {name}; the figures need fio 3.1 or newer '
                         '(total-latency percentiles, lat_percentiles=1; before 3.0 latencies '
                         'are in us and io_bytes in KiB)')
    result = {}
    for job in doc['jobs']:
        name = job.get('jobname', '?')
        per_dir = {}
        for ddir in DIRECTIONS:
            stats = job.get(ddir) or {}
            if did_io(stats, f'{source}: job {name}, {ddir}'):
                per_dir[ddir] = direction_figures(stats, source, name, ddir,
                                                  percentile_parent(doc, job))
        result[name] = per_dir
    return result


def section_figures(text, section, source='fio output', exit_status=None):
    """Figures of ``section`` (one job name) in its only direction: the
    direction of a randread or randwrite section."""
    jobs = parse(text, source, exit_status)
    if section not in jobs:
        raise ParseError(f'{source}: no job named {section!r} in the fio JSON '
                         f'(jobs: {", ".join(jobs) or "none"})')
    dirs = jobs[section]
    if len(dirs) != 1:
        raise ParseError(f'{source}: job {section} did I/O in {", ".join(dirs)}; '
                         'want exactly one direction')
    return next(iter(dirs.values()))


def parse_engines(enghelp_text):
    """Engine names from ``fio --enghelp``."""
    lines = enghelp_text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('Available IO engines')),
                 None)
    if start is None:
        raise ParseError('fio --enghelp: no "Available IO engines:" line in '
                         f'{enghelp_text.strip()[:200]!r}')
    return [ln.strip() for ln in lines[start + 1:] if ln.strip()]
