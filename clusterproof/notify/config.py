"""A site's notification settings: ``site_config/notify/<system>.yaml``
(``CLUSTERPROOF_NOTIFY_CONFIG`` names another directory, a site's own kept
outside the repository), read and checked here; the schema is documented in
docs/notify.md.

Secrets (the webhook's URL, an Alertmanager URL with a user and password,
the SMTP password) are never in the file: the file names an environment
variable (``*_env``) or a file (``*_file``) that holds them, read when a
message is sent (:func:`secret`). A URL, in the file or a secret, is
accepted only as http(s) (:func:`clusterproof.redact.checked`). No
error message and no log line of this package shows a secret's value
(:mod:`clusterproof.redact`).
"""

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from clusterproof import ClusterproofError
from clusterproof import redact
from clusterproof.paths import SITE_CONFIG, read_text

CHANNELS = ('alertmanager', 'email', 'webhook')
SECURITY = ('none', 'starttls', 'tls')
KINDS = ('regression', 'failure', 'change', 'outlier')

_TOP_KEYS = {'page', 'kinds', 'min_change_percent', 'summarise_above', 'top', 'retries',
             'retry_delay', 'timeout', 'forget_after_days', 'channels'}
_CHANNEL_KEYS = {
    'alertmanager': {'url', 'url_env', 'url_file', 'resolve_after_hours', 'heartbeat'},
    'email': {'host', 'port', 'security', 'cafile', 'user', 'password_env', 'password_file',
              'from', 'to', 'heartbeat'},
    'webhook': {'url_env', 'url_file', 'heartbeat'},
}


@dataclass
class Config:
    path: Path
    system: str
    page: str = ''                  # the link to the page of the night
    kinds: tuple = KINDS
    min_change: float = 0.0         # smallest relative change of a change sent
    summarise_above: int = 10       # more items than this: one summary message
    top: int = 5                    # items shown in a summary
    retries: int = 3                # attempts per channel and run
    retry_delay: float = 2.0        # seconds before the second attempt, doubled after
    timeout: float = 10.0           # seconds per attempt
    forget_after: float = 30.0      # days: the ledger forgets an item no run found since
    channels: dict = field(default_factory=dict)    # name -> its settings


def directory():
    """Where ``<system>.yaml`` lives: ``CLUSTERPROOF_NOTIFY_CONFIG`` or
    ``site_config/notify/``."""
    return Path(os.environ.get('CLUSTERPROOF_NOTIFY_CONFIG', SITE_CONFIG / 'notify'))


def path_of(system):
    return directory() / f'{system}.yaml'


def load(path, system):
    """The :class:`Config` of ``path``; an error names the file, the key
    and what is wrong."""
    path = Path(path)
    try:
        data = yaml.safe_load(read_text(path, 'notification settings'))
    except yaml.YAMLError as err:
        raise ClusterproofError(f'{path}: not YAML: {_yaml_problem(err)}') from None
    if not isinstance(data, dict):
        raise ClusterproofError(f'{path}: want a mapping of settings (docs/notify.md)')
    _unknown(path, '', data, _TOP_KEYS)
    cfg = Config(path, system)
    cfg.page = _typed(path, 'page', data.get('page', ''), str)
    kinds = data.get('kinds', list(KINDS))
    if not isinstance(kinds, list) or not set(kinds) <= set(KINDS) or not kinds:
        raise ClusterproofError(f'{path}: kinds: want a list of {", ".join(KINDS)}; '
                                f'found {kinds!r}')
    cfg.kinds = tuple(kinds)
    cfg.min_change = _number(path, 'min_change_percent', data.get('min_change_percent', 0),
                             0) / 100
    cfg.summarise_above = int(_number(path, 'summarise_above',
                                      data.get('summarise_above', 10), 1))
    cfg.top = int(_number(path, 'top', data.get('top', 5), 1))
    cfg.retries = int(_number(path, 'retries', data.get('retries', 3), 1))
    cfg.retry_delay = _number(path, 'retry_delay', data.get('retry_delay', 2.0), 0)
    cfg.timeout = _number(path, 'timeout', data.get('timeout', 10.0), 0.1)
    cfg.forget_after = _number(path, 'forget_after_days', data.get('forget_after_days', 30),
                               1)
    channels = data.get('channels')
    if not isinstance(channels, dict) or not channels:
        raise ClusterproofError(f'{path}: channels: want at least one of '
                                f'{", ".join(CHANNELS)} (docs/notify.md)')
    _unknown(path, 'channels.', channels, set(CHANNELS))
    for name, ch in channels.items():
        where = f'channels.{name}'
        if not isinstance(ch, dict):
            raise ClusterproofError(f'{path}: {where}: want a mapping of settings')
        _unknown(path, f'{where}.', ch, _CHANNEL_KEYS[name])
        cfg.channels[name] = _CHECK[name](path, where, dict(ch))
    return cfg


def _alertmanager(path, where, ch):
    _alertmanager_url(path, where, ch)
    ch['resolve_after_hours'] = _number(path, f'{where}.resolve_after_hours',
                                        ch.get('resolve_after_hours', 24), 0.01)
    ch['heartbeat'] = bool(ch.get('heartbeat', False))
    return ch


def _alertmanager_url(path, where, ch):
    """An Alertmanager's ``url`` in the file (no user or password in it),
    or the ``url_env`` or ``url_file`` that names where one is."""
    if 'url_env' in ch or 'url_file' in ch:
        if 'url' in ch:
            raise ClusterproofError(f'{path}: {where}: give one of url, url_env, url_file')
        _one_secret(path, where, ch, 'url', required=True)
        return
    if 'url' not in ch:
        raise ClusterproofError(f'{path}: {where}.url is required (or {where}.url_env or '
                                f'url_file, naming where a URL with a user and password is)')
    url = redact.checked(ch['url'], f'{path}: {where}.url')
    if redact.credentials(url)[1]:
        raise ClusterproofError(
            f'{path}: {where}.url holds a user and password: a secret is never in this '
            f'file; put the URL in a file named by {where}.url_file or a variable named '
            f'by {where}.url_env (docs/notify.md)')
    ch['url'] = url.rstrip('/')


def _email(path, where, ch):
    for key in ('host', 'from', 'to'):
        _required(path, where, ch, key)
    host = _typed(path, f'{where}.host', ch['host'], str)
    if not re.fullmatch(r'[A-Za-z0-9.:\[\]_-]+', host):
        raise ClusterproofError(f'{path}: {where}.host: want a host name or address (e.g. '
                                f'smtp.example.org); found {host!r}')
    if isinstance(ch['to'], str):
        ch['to'] = [ch['to']]
    if not isinstance(ch['to'], list) or not all(_address(t) for t in ch['to']):
        raise ClusterproofError(f'{path}: {where}.to: want e-mail addresses; found '
                                f'{ch["to"]!r}')
    if not _address(ch['from']):
        raise ClusterproofError(f'{path}: {where}.from: want an e-mail address; found '
                                f'{ch["from"]!r}')
    ch['security'] = ch.get('security', 'starttls')
    if ch['security'] not in SECURITY:
        raise ClusterproofError(f'{path}: {where}.security: {ch["security"]!r}; want one of '
                                f'{", ".join(SECURITY)}')
    ch['port'] = int(_number(path, f'{where}.port', ch.get(
        'port', {'none': 25, 'starttls': 587, 'tls': 465}[ch['security']]), 1))
    if 'user' in ch:
        _one_secret(path, where, ch, 'password', required=True)
    elif 'password_env' in ch or 'password_file' in ch:
        raise ClusterproofError(f'{path}: {where}: a password without a user; add '
                                f'{where}.user, or remove the password')
    ch['heartbeat'] = bool(ch.get('heartbeat', False))
    return ch


def _webhook(path, where, ch):
    _one_secret(path, where, ch, 'url', required=True)
    ch['heartbeat'] = bool(ch.get('heartbeat', False))
    return ch


_CHECK = {'alertmanager': _alertmanager, 'email': _email, 'webhook': _webhook}


def _address(text):
    """An e-mail address: one ``@``, no space or control character (a line
    break in a header would end it)."""
    return isinstance(text, str) and '@' in text and not re.search(r'[\s\x00-\x1f\x7f]',
                                                                   text)


def _one_secret(path, where, ch, name, required):
    given = [k for k in (f'{name}_env', f'{name}_file') if k in ch]
    if len(given) > 1:
        raise ClusterproofError(f'{path}: {where}: give {name}_env or {name}_file, not both')
    if required and not given:
        raise ClusterproofError(f'{path}: {where}: the {name} is a secret: name the '
                                f'environment variable that holds it ({name}_env) or the '
                                f'file ({name}_file); never the {name} itself')


def url(cfg, channel):
    """The URL of ``channel``: its ``url`` setting, or the secret its
    ``url_env`` or ``url_file`` names (:func:`secret`)."""
    return cfg.channels[channel].get('url') or secret(cfg, channel, 'url')


def secret(cfg, channel, name):
    """The value of the secret ``name`` of ``channel`` (from the variable or
    file the settings name), or None when none is configured; a URL
    (``name`` ``url``) must be an http(s) one. An error names the variable
    or file, never the value."""
    ch = cfg.channels[channel]
    where = f'{cfg.path}: channels.{channel}'
    if f'{name}_env' in ch:
        var = ch[f'{name}_env']
        value = os.environ.get(var)
        if not value or not value.strip():
            raise ClusterproofError(f'{where}.{name}_env: the environment variable {var} is '
                                    f'not set or empty')
        return _checked(value.strip(), name, f'{where}.{name}_env (the variable {var})')
    if f'{name}_file' in ch:
        file = Path(ch[f'{name}_file'])
        try:
            value = file.read_text().strip()
        except OSError as err:
            raise ClusterproofError(f'{where}.{name}_file: cannot read {file}: '
                                    f'{err.strerror}') from None
        except UnicodeDecodeError:
            raise ClusterproofError(f'{where}.{name}_file: {file} is not UTF-8 text') \
                from None
        if not value:
            raise ClusterproofError(f'{where}.{name}_file: {file} is empty')
        return _checked(value, name, f'{where}.{name}_file ({file})')
    return None


def _checked(value, name, where):
    return redact.checked(value, where) if name == 'url' else value


def _yaml_problem(err):
    """Where and what the YAML error ``err`` is, without the line it quotes
    (a line of a settings file may hold what must not be shown)."""
    mark = getattr(err, 'problem_mark', None)
    where = f'line {mark.line + 1}, column {mark.column + 1}: ' if mark else ''
    return where + (getattr(err, 'problem', None) or 'cannot be parsed')


def _unknown(path, prefix, data, known):
    extra = sorted(set(data) - known)
    if extra:
        raise ClusterproofError(f'{path}: unknown key {prefix}{extra[0]}; known: '
                                f'{", ".join(sorted(known))} (docs/notify.md)')


def _required(path, where, ch, key):
    if ch.get(key) in (None, '', []):
        raise ClusterproofError(f'{path}: {where}.{key} is required')


def _typed(path, key, value, kind):
    if not isinstance(value, kind):
        raise ClusterproofError(f'{path}: {key}: want a {kind.__name__}; found {value!r}')
    return value


def _number(path, key, value, least):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < least:
        raise ClusterproofError(f'{path}: {key}: want a number >= {least}; found {value!r}')
    return float(value)
