"""The one rule for what clusterproof shows of a secret, and the URLs a
secret may be. A secret is a URL or password a setting holds: a chat
webhook's URL (its path carries the token), an Alertmanager URL (it may
carry ``user:password``), the SMTP password (:mod:`clusterproof.notify`),
and the metrics URL of the figures sent to a time-series database
(``$CLUSTERPROOF_METRICS_URL``, a system file's ``metrics_url``:
:mod:`clusterproof.publish.metrics`). Every command holding one prints,
logs, raises and writes it only through this rule:

- A URL is shown as its scheme, host and port only (:func:`shown`): never
  its user, password, path, query or fragment.
- Text that comes from outside (a server's answer, an exception's message)
  is quoted only through :func:`redact`, which takes out every part of the
  secrets that could be echoed: the whole value, the user information, the
  path with its query, each path segment and query value of
  :data:`SHORTEST` characters or more, their percent-decoded forms, and the
  ``Authorization`` header's Basic credentials.
- A URL is accepted only as ``http://`` or ``https://`` with a host, a port
  that is a number, and no space or control character (:func:`checked`);
  the refusal names the setting, never the value.
"""

import base64
import re
import urllib.parse

from clusterproof import ClusterproofError

SCHEMES = ('http', 'https')
#: what stands where a secret was
HIDDEN = '<secret>'
#: a part of a secret URL shorter than this (a path segment such as ``v2``)
#: is not taken out of text on its own: it would garble the text around it;
#: the whole path that holds it is
SHORTEST = 4
_DEFAULT_PORT = {'http': 80, 'https': 443}
_KNOWN = {'file', 'ftp', 'ftps', 'smtp', 'smtps', 'ws', 'wss', 'mailto', 'data', 'unix',
          'ldap', 'ldaps'}
_UNSAFE = re.compile(r'[\s\x00-\x1f\x7f]')


def shown(url):
    """``scheme://host:port`` of ``url`` (the scheme's port when it names
    none); ``<not a URL>`` when it has no scheme and host."""
    try:
        s = urllib.parse.urlsplit(url)
        host, port = s.hostname, s.port
    except (ValueError, TypeError, AttributeError):
        return '<not a URL>'
    if not s.scheme or not host:
        return '<not a URL>'
    host = f'[{host}]' if ':' in host else host
    port = port or _DEFAULT_PORT.get(s.scheme.lower())
    return f'{s.scheme.lower()}://{host}' + (f':{port}' if port else '')


def checked(url, where):
    """``url`` when it is an http(s) URL with a host; else an error naming
    the setting ``where`` and what is wrong with the value, not the value."""
    if not isinstance(url, str) or not url:
        raise ClusterproofError(f'{where}: want an http:// or https:// URL; found '
                                f'{"nothing" if not url else type(url).__name__}')
    if _UNSAFE.search(url):
        raise ClusterproofError(f'{where}: the URL holds a space or a control character '
                                f'(the value is a secret: not shown)')
    try:
        s = urllib.parse.urlsplit(url)
        host, _port = s.hostname, s.port
    except ValueError:
        raise ClusterproofError(f'{where}: not a URL: its host or port cannot be read '
                                f'(the value is a secret: not shown)') from None
    if s.scheme.lower() not in SCHEMES:
        # another scheme is named only when it is a known one: ``user:pw@host``
        # parses as the scheme ``user``
        scheme = (f'the scheme {s.scheme.lower()}:' if s.scheme.lower() in _KNOWN
                  else 'no http(s) scheme')
        raise ClusterproofError(f'{where}: want an http:// or https:// URL; found {scheme} '
                                f'(the value is a secret: not shown)')
    if not host:
        raise ClusterproofError(f'{where}: the URL names no host (want '
                                f'{s.scheme.lower()}://HOST[:PORT]/...)')
    return url


def credentials(url):
    """``(url without its user information, (user, password) or None)``."""
    s = urllib.parse.urlsplit(url)
    if s.username is None:
        return url, None
    netloc = s.netloc.rpartition('@')[2]
    return (urllib.parse.urlunsplit(s._replace(netloc=netloc)),
            (urllib.parse.unquote(s.username), urllib.parse.unquote(s.password or '')))


def basic_auth(user, password):
    """The value of the ``Authorization`` header of HTTP Basic."""
    return 'Basic ' + base64.b64encode(f'{user}:{password}'.encode()).decode()


def _parts(secret):
    """Every string of ``secret`` that must not appear in what is shown."""
    out = {secret}
    try:
        s = urllib.parse.urlsplit(secret)
        user, password = s.username, s.password
    except ValueError:
        return out
    if not (s.scheme and s.netloc):
        return out
    pieces = s.path.split('/') + [v for _, v in urllib.parse.parse_qsl(s.query)]
    pieces += [s.query, s.fragment]
    if user is not None:
        out.add(s.netloc.rpartition('@')[0])
        pieces += [user, password or '', basic_auth(urllib.parse.unquote(user),
                                                    urllib.parse.unquote(password or ''))[6:]]
    if s.path.strip('/'):
        out |= {s.path, s.path + (f'?{s.query}' if s.query else '')}
    out |= {p for p in pieces if len(p) >= SHORTEST}
    out |= {urllib.parse.unquote(p) for p in out}
    return {p for p in out if p}


def redact(text, secrets):
    """``text`` with every part of each of ``secrets`` (strings; None and
    empty ones are skipped) replaced by :data:`HIDDEN`, matched without
    regard to case; the longest parts first."""
    parts = sorted({p for s in secrets if s for p in _parts(s)}, key=len, reverse=True)
    if not parts:
        return str(text)
    return re.sub('|'.join(map(re.escape, parts)), HIDDEN, str(text), flags=re.IGNORECASE)
