"""fio JSON output (``--output-format=json`` or ``json+``).

Error text can precede the JSON in the same stream (``fio: pid=..., err=95
...``, ``fio: terminating on signal 2``): parsing starts at the first ``{``.

Per job (a section, with ``group_reporting=1``) and direction: IOPS,
bandwidth (MiB/s, from ``bw_bytes``), mean latency (us) and the latency
percentiles p50, p99, p99.9, p99.99 (us) from ``lat_ns`` (filled by
``lat_percentiles=1``; ``clat_ns`` is not the published figure).

:func:`problems` is the sanity rule: every job has ``error == 0`` and
``total_ios > 0`` (a killed libpmem run writes JSON with error 0 and no I/O).
"""

import json

from clusterproof.parsers import ParseError

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
    if start < 0:
        raise ParseError(f'{source}: no JSON in the output (fio printed: '
                         f'{text.strip()[:300]!r}); run fio with --output-format=json')
    try:
        doc, _ = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError as err:
        raise ParseError(f'{source}: fio JSON is cut or invalid at line {err.lineno}, column '
                         f'{err.colno}: {err.msg} (was fio killed while writing it?)') from None
    if not isinstance(doc, dict) or not isinstance(doc.get('jobs'), list):
        raise ParseError(f'{source}: fio JSON has no "jobs" list')
    doc['_preamble'] = text[:start].strip()
    return doc


def total_ios(job):
    return sum(int(job.get(d, {}).get('total_ios', 0)) for d in DIRECTIONS)


def problems(doc, source='fio output'):
    """Messages for every job whose run is not a result: ``error != 0`` or
    no I/O at all. An empty list means the run is sane."""
    found = []
    if not doc['jobs']:
        found.append(f'{source}: fio reported no job at all')
    preamble = doc.get('_preamble', '')
    for job in doc['jobs']:
        name = job.get('jobname', '?')
        err = int(job.get('error', 0))
        if err != 0:
            found.append(f'{source}: job {name}: error={err}'
                         + (f' ({preamble.splitlines()[0]})' if preamble else ''))
        elif total_ios(job) <= 0:
            found.append(f'{source}: job {name}: error=0 but total_ios=0: no I/O was done '
                         '(fio was killed or the files could not be set up)'
                         + (f'; fio said: {preamble.splitlines()[0]}' if preamble else ''))
    return found


def direction_figures(stats, source, name, ddir):
    """Figures of one direction of one job."""
    lat = stats.get('lat_ns') or {}
    pct = lat.get('percentile') or {}
    missing = [key for key in PERCENTILES.values() if key not in pct]
    if missing:
        raise ParseError(f'{source}: job {name}, {ddir}: lat_ns has no percentile(s) '
                         f'{", ".join(missing)} (set lat_percentiles=1 in the job)')
    figs = {
        'iops': float(stats['iops']),
        'bw': float(stats['bw_bytes']) / 1024 ** 2,
        'lat_mean': float(lat['mean']) / 1000.0,
        'total_ios': int(stats['total_ios']),
        'io_bytes': int(stats['io_bytes']),
    }
    for fig, key in PERCENTILES.items():
        figs[fig] = float(pct[key]) / 1000.0
    return figs


def parse(text, source='fio output'):
    """``{jobname: {direction: figures}}`` for every job and every direction
    that did I/O, after checking :func:`problems` (raises ParseError listing
    them all). ``figures`` has iops, bw (MiB/s), lat_mean and lat_p50/p99/
    p99_9/p99_99 (us), total_ios, io_bytes."""
    doc = load(text, source)
    bad = problems(doc, source)
    if bad:
        raise ParseError('; '.join(bad))
    result = {}
    for job in doc['jobs']:
        name = job.get('jobname', '?')
        per_dir = {}
        for ddir in DIRECTIONS:
            stats = job.get(ddir) or {}
            if int(stats.get('total_ios', 0)) > 0:
                per_dir[ddir] = direction_figures(stats, source, name, ddir)
        result[name] = per_dir
    return result


def section_figures(text, section, source='fio output'):
    """Figures of ``section`` (one job name) in its only direction: the
    direction of a randread or randwrite section."""
    jobs = parse(text, source)
    if section not in jobs:
        raise ParseError(f'{source}: no job named {section!r} in the fio JSON '
                         f'(jobs: {", ".join(jobs) or "none"})')
    dirs = jobs[section]
    if len(dirs) != 1:
        raise ParseError(f'{source}: job {section} did I/O in {", ".join(dirs)}; '
                         'want exactly one direction')
    return next(iter(dirs.values()))

