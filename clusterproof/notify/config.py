"""A site's notification settings: ``site_config/notify/<system>.yaml``
(``CLUSTERPROOF_NOTIFY_CONFIG`` names another directory, a site's own kept
outside the repository), read and checked here; the schema is documented in
docs/notify.md.

Secrets (the webhook's URL, the SMTP password) are never in the file: the
file names an environment variable (``*_env``) or a file (``*_file``) that
holds them, read when a message is sent (:func:`secret`). No error message
and no log line of this package shows a secret's value.
"""

import os
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from clusterproof import ClusterproofError
from clusterproof.paths import SITE_CONFIG, read_text

CHANNELS = ('alertmanager', 'email', 'webhook')
SECURITY = ('none', 'starttls', 'tls')
KINDS = ('regression', 'failure', 'change', 'outlier')

_TOP_KEYS = {'page', 'kinds', 'min_change_percent', 'summarise_above', 'top', 'retries',
             'retry_delay', 'timeout', 'forget_after_days', 'channels'}
_CHANNEL_KEYS = {
    'alertmanager': {'url', 'resolve_after_hours', 'heartbeat'},
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
        raise ClusterproofError(f'{path}: not YAML: {err}') from None
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
    _required(path, where, ch, 'url')
    ch['url'] = _typed(path, f'{where}.url', ch['url'], str).rstrip('/')
    ch['resolve_after_hours'] = _number(path, f'{where}.resolve_after_hours',
                                        ch.get('resolve_after_hours', 24), 0.01)
    ch['heartbeat'] = bool(ch.get('heartbeat', False))
    return ch


def _email(path, where, ch):
    for key in ('host', 'from', 'to'):
        _required(path, where, ch, key)
    if isinstance(ch['to'], str):
        ch['to'] = [ch['to']]
    if not isinstance(ch['to'], list) or not all(isinstance(t, str) and '@' in t
                                                  for t in ch['to']):
        raise ClusterproofError(f'{path}: {where}.to: want e-mail addresses; found '
                                f'{ch["to"]!r}')
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


def _one_secret(path, where, ch, name, required):
    given = [k for k in (f'{name}_env', f'{name}_file') if k in ch]
    if len(given) > 1:
        raise ClusterproofError(f'{path}: {where}: give {name}_env or {name}_file, not both')
    if required and not given:
        raise ClusterproofError(f'{path}: {where}: the {name} is a secret: name the '
                                f'environment variable that holds it ({name}_env) or the '
                                f'file ({name}_file); never the {name} itself')


def secret(cfg, channel, name):
    """The value of the secret ``name`` of ``channel`` (from the variable or
    file the settings name), or None when none is configured; an error names
    the variable or file, never the value."""
    ch = cfg.channels[channel]
    where = f'{cfg.path}: channels.{channel}'
    if f'{name}_env' in ch:
        var = ch[f'{name}_env']
        value = os.environ.get(var)
        if not value:
            raise ClusterproofError(f'{where}.{name}_env: the environment variable {var} is '
                                    f'not set or empty')
        return value.strip()
    if f'{name}_file' in ch:
        file = Path(ch[f'{name}_file'])
        try:
            value = file.read_text().strip()
        except OSError as err:
            raise ClusterproofError(f'{where}.{name}_file: cannot read {file}: '
                                    f'{err.strerror}') from None
        if not value:
            raise ClusterproofError(f'{where}.{name}_file: {file} is empty')
        return value
    return None


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
