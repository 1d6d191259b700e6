"""Figures sent to a time-series database (VictoriaMetrics) by ReFrame's own ``httpjson``
perflog handler.

ReFrame's ``httpjson`` handler POSTs one JSON document per test case to a
URL, shaped by an optional ``json_formatter``. :func:`victoria_metrics_lines`
is that formatter: it turns the record into VictoriaMetrics' JSON line
import format (``POST /api/v1/import``), one line per performance figure::

    {"metric": {"__name__": "clusterproof_figure", "system": "local", ...,
                "figure": "copy_bw", "unit": "MB/s"},
     "values": [1234.5], "timestamps": [1764000000000]}

so that every figure is one series named ``clusterproof_figure`` with the
labels in :data:`LABELS`. :func:`perflog_handler` is the handler entry of
the site configuration (``site_config/settings.py`` adds it for a system
whose file sets ``metrics_url``, or for every system when
``CLUSTERPROOF_METRICS_URL`` is set). Off by default. The URL is a secret
by the rule of :mod:`clusterproof.redact`: refused naming the setting, never
the value; a ``user:password`` in it is sent as HTTP Basic, not left in the
URL ReFrame shows, and refused in a system file.
"""

import json
import math
import os
import urllib.parse

from clusterproof import ClusterproofError, redact

#: environment variable naming the import URL for every system (overrides the system files)
URL_VARIABLE = 'CLUSTERPROOF_METRICS_URL'

#: the one series name of every figure
METRIC = 'clusterproof_figure'

#: label -> attribute of ReFrame's log record
LABELS = {
    'system': 'check_system',
    'partition': 'check_partition',
    'environ': 'check_environ',
    'test': 'check_name',
    'mode': 'check_cp_mode',
    'smoke': 'check_cp_smoke',
    'emulated': 'check_cp_emulated',
}


def _label(value):
    if isinstance(value, bool):
        return 'true' if value else 'false'
    return str(value)


def victoria_metrics_lines(record, extras, ignore_keys):
    """ReFrame ``json_formatter``: the performance figures of ``record`` as
    VictoriaMetrics JSON import lines, or None when it has none (a failed
    test, a test without figures: nothing is sent). ``extras`` (the
    handler's) become labels of every figure; ``ignore_keys`` names labels
    left out."""
    perfvalues = getattr(record, 'check_perfvalues', None) or {}
    labels = {name: _label(getattr(record, attr)) for name, attr in LABELS.items()
              if getattr(record, attr, None) is not None and name not in (ignore_keys or ())}
    labels.update({str(k): _label(v) for k, v in (extras or {}).items()
                   if k not in (ignore_keys or ())})
    when = getattr(record, 'check_job_completion_time_unix', None) or record.created
    lines = []
    for var, (value, _ref, _lower, _upper, unit, _result) in perfvalues.items():
        if value is None or not math.isfinite(float(value)):
            continue
        metric = {'__name__': METRIC, **labels, 'figure': var.split(':')[-1]}
        if unit:
            metric['unit'] = str(unit)
        lines.append(json.dumps({'metric': metric, 'values': [float(value)],
                                 'timestamps': [int(float(when) * 1000)]}))
    return '\n'.join(lines) + '\n' if lines else None


def import_url(url, where=URL_VARIABLE):
    """The import endpoint for ``url``: a bare server address
    (``http://host:8428``) gets VictoriaMetrics' ``/api/v1/import``; a URL
    with a path is taken as it is. A URL that is not http(s) is refused by
    the rule of :func:`clusterproof.redact.checked`: the error names the
    setting ``where``, never the value (it may hold a password)."""
    parts = urllib.parse.urlsplit(redact.checked(url, where))
    if parts.path.strip('/'):
        return url
    return urllib.parse.urlunsplit(parts._replace(path='/api/v1/import'))


def perflog_handler(url, where=URL_VARIABLE):
    """The ``handlers_perflog`` entry that sends every figure to ``url``.
    A ``user:password`` in it is taken out of the URL ReFrame holds (and
    may print) and sent as HTTP Basic by the handler's
    ``authorization_header``."""
    target, login = redact.credentials(import_url(url, where))
    entry = {
        'type': 'httpjson',
        'url': target,
        'level': 'info',
        'json_formatter': victoria_metrics_lines,
    }
    return dict(entry, authorization_header=_basic(*login)) if login else entry


def _basic(user, password):
    def basic_authorization():
        return redact.basic_auth(user, password)
    return basic_authorization


def _no_password(url, where):
    """``url`` of a system file, refused when it holds a user and password:
    a secret is never in a site configuration file."""
    if url and redact.credentials(redact.checked(url, where))[1]:
        raise ClusterproofError(f'{where} holds a user and password: a secret is never in a '
                                f'system file; give the URL in ${URL_VARIABLE} (docs/results.md)')
    return url


def logging_entries(entry, system_urls):
    """The ``logging`` section of the site configuration: ``entry`` (the
    handlers every system has) for every system, and for each system of
    ``system_urls`` (name -> ``metrics_url`` of its file, None for none) a
    copy whose perflog handlers also send to that URL.
    ``$CLUSTERPROOF_METRICS_URL`` replaces them all: set, it sends every
    system's figures there; set and empty, no system sends any."""
    def sending(url, system=None):
        where = f'metrics_url of system {system}' if system else URL_VARIABLE
        if system:
            _no_password(url, where)
        new = dict(entry, handlers_perflog=[*entry['handlers_perflog'],
                                            perflog_handler(url, where)])
        return dict(new, target_systems=[system]) if system else new

    if URL_VARIABLE in os.environ:
        url = os.environ[URL_VARIABLE]
        return [sending(url) if url else entry]
    return [sending(url, name) for name, url in system_urls.items() if url] + [entry]
