"""The channels a message goes out on: a Prometheus Alertmanager (its v2
API, ``POST /api/v2/alerts``), e-mail by SMTP (plain, STARTTLS or TLS, and
AUTH where a user is configured) and a chat incoming webhook (the JSON
``{"text": ...}`` that Slack, Mattermost and Teams accept).

Each ``send_<channel>(cfg, message, now)`` sends one message once and raises
:class:`ChannelError` naming the server (never a secret) when it cannot;
retrying is :mod:`.send`'s. A server is named by its scheme, host and port,
and what it or the system answered is quoted through
:func:`clusterproof.redact.redact` with the channel's secrets; an
alert's labels have their control characters replaced
(:func:`~clusterproof.notify.message.header`).
"""

import datetime
import hashlib
import http.client
import json
import smtplib
import ssl
import urllib.error
import urllib.request
from email.message import EmailMessage
from email.utils import formatdate, make_msgid

from clusterproof import __version__, redact
from clusterproof.notify import config
from clusterproof.notify.items import SEVERITY
from clusterproof.notify.message import cause, header, headline

USER_AGENT = f'clusterproof/{__version__}'
#: the Alertmanager alert names: one finding, a summary of many, an all clear
ALERT_FINDING = 'ClusterproofFinding'
ALERT_SUMMARY = 'ClusterproofFindings'
ALERT_ALL_CLEAR = 'ClusterproofAllClear'


class ChannelError(Exception):
    """A channel could not take a message; the text names the server and the
    cause, never a secret."""


def _iso(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).isoformat(
        timespec='seconds').replace('+00:00', 'Z')


def _post_json(url, body, timeout, what, secret=None):
    """POST ``body`` as JSON to the http(s) ``url`` (its user and password,
    if any, sent as HTTP Basic); ``what`` names the server in errors, with
    :func:`~clusterproof.redact.shown` ``url``; what is quoted is
    redacted of ``secret`` (default: ``url``)."""
    secrets = [secret or url]
    name = f'{what} {redact.shown(url)}'
    target, login = redact.credentials(redact.checked(url, name))
    headers = {'Content-Type': 'application/json', 'User-Agent': USER_AGENT}
    if login:
        headers['Authorization'] = redact.basic_auth(*login)
    req = urllib.request.Request(target, data=json.dumps(body).encode(), method='POST',
                                 headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            resp.read()
    except urllib.error.HTTPError as err:
        detail = err.read()[:300].decode(errors='replace').strip()
        raise ChannelError(f'{name} refused the message: HTTP {err.code} '
                           f'{redact.redact(f"{err.reason}: {detail}", secrets)}') from None
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as err:
        reason = getattr(err, 'reason', err)
        raise ChannelError(f'{name} did not answer: {redact.redact(reason, secrets)}') from None


# -- Alertmanager ----------------------------------------------------------------------

def alerts(cfg, message, now):
    """The Alertmanager alerts of ``message``: one per item, or one that
    summarises, or one all clear; each ends ``resolve_after_hours`` after
    ``now`` (a finding is told once, not kept firing). Their labels and
    summaries are one line each (:func:`~clusterproof.notify.message.header`)."""
    return [dict(a, labels={k: header(v) for k, v in a['labels'].items()},
                 annotations=dict(a['annotations'], summary=header(a['annotations']['summary'])))
            for a in _alerts(cfg, message, now)]


def _alerts(cfg, message, now):
    ch = cfg.channels['alertmanager']
    ends = _iso(now + ch['resolve_after_hours'] * 3600)
    common = {'endsAt': ends}
    if cfg.page:
        common['generatorURL'] = cfg.page
    notes = {'link': cfg.page} if cfg.page else {}
    if not message.items:
        return [dict(common, startsAt=_iso(now), labels={
            'alertname': ALERT_ALL_CLEAR, 'system': cfg.system, 'severity': 'none',
            'kind': 'all-clear'}, annotations={'summary': message.subject, **notes})]
    if message.summary:
        ids = sorted(i.id for i in message.items)
        severity = ('critical' if any(i.severity == 'critical' for i in message.items)
                    else 'warning')
        return [dict(common, startsAt=_iso(min(i.at for i in message.items)), labels={
            'alertname': ALERT_SUMMARY, 'system': ','.join(sorted({i.system for i in
                                                                   message.items})),
            'severity': severity, 'kind': 'summary',
            'id': 's' + hashlib.sha256(' '.join(ids).encode()).hexdigest()[:10]},
            annotations={'summary': message.subject, 'description': message.text, **notes})]
    out = []
    for i in message.items:
        out.append(dict(common, startsAt=_iso(i.at), labels={
            'alertname': ALERT_FINDING, 'system': i.system, 'partition': i.partition,
            'test': i.test, 'figure': i.figure, 'severity': SEVERITY[i.kind],
            'kind': i.kind, 'id': i.id},
            annotations={'summary': headline(i), 'description':
                         f'{i.detail}\nsuspected cause: {cause(i)}', **notes}))
    return out


def send_alertmanager(cfg, message, now):
    url = config.url(cfg, 'alertmanager').rstrip('/')
    _post_json(f'{url}/api/v2/alerts', alerts(cfg, message, now), cfg.timeout,
               'Alertmanager', secret=url)


# -- e-mail ----------------------------------------------------------------------------

def send_email(cfg, message, now):
    ch = cfg.channels['email']
    name = f'SMTP server {ch["host"]}:{ch["port"]} ({ch["security"]})'
    password = config.secret(cfg, 'email', 'password')
    mail = EmailMessage()
    mail['Subject'] = message.subject
    mail['From'] = ch['from']
    mail['To'] = ', '.join(ch['to'])
    mail['Date'] = formatdate(now, usegmt=True)
    mail['Message-ID'] = make_msgid('clusterproof')
    mail.set_content(message.text)
    try:
        context = ssl.create_default_context(cafile=ch.get('cafile'))
        if ch['security'] == 'tls':
            smtp = smtplib.SMTP_SSL(ch['host'], ch['port'], timeout=cfg.timeout,
                                    context=context)
        else:
            smtp = smtplib.SMTP(ch['host'], ch['port'], timeout=cfg.timeout)
        with smtp:
            if ch['security'] == 'starttls':
                smtp.starttls(context=context)
            if ch.get('user'):
                smtp.login(ch['user'], password)
            refused = smtp.send_message(mail)
    except smtplib.SMTPAuthenticationError as err:
        raise ChannelError(f'{name} refused the login of user {ch["user"]}: {err.smtp_code} '
                           f'{redact.redact(_text(err.smtp_error), [password])}') from None
    except smtplib.SMTPRecipientsRefused as err:
        raise ChannelError(f'{name} refused every recipient: '
                           f'{", ".join(sorted(err.recipients))}') from None
    except smtplib.SMTPResponseException as err:
        raise ChannelError(f'{name} refused the message: {err.smtp_code} '
                           f'{redact.redact(_text(err.smtp_error), [password])}') from None
    except (smtplib.SMTPException, OSError, ValueError) as err:
        raise ChannelError(f'{name} did not take the message: '
                           f'{redact.redact(err, [password])}') from None
    if refused:
        raise ChannelError(f'{name} refused recipient(s) {", ".join(sorted(refused))}')


def _text(b):
    return b.decode(errors='replace') if isinstance(b, bytes) else str(b)


# -- chat webhook ----------------------------------------------------------------------

def send_webhook(cfg, message, now):
    _post_json(config.url(cfg, 'webhook'), {'text': message.text}, cfg.timeout,
               'chat webhook')


SEND = {'alertmanager': send_alertmanager, 'email': send_email, 'webhook': send_webhook}
