"""No secret of the notification settings is ever shown. A known token is
put in every setting that holds a secret (the webhook's URL by variable and
by file, an Alertmanager URL with a user and password by variable, by file
and, refused, in the settings file, the SMTP password by variable and by
file), every way of failing is driven through what ``screen`` and
``acceptance`` call (:func:`clusterproof.notify.send.after_screening`):
URLs without a scheme, with a space, with a port that is no number, of
another scheme (``file://``: never "sent"), files that hold no URL, are not
UTF-8 or cannot be read, a port where nothing listens, a real HTTP server on
loopback that echoes the path, the query and the Authorization header it was
sent, an SMTP server that refuses the login; and everything printed (both
standard streams, at the file descriptor) and the ledger is searched for the
token. Also: header values (an e-mail's Subject, alert labels) are one line
whatever a test's name holds."""

import mailbox

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.handlers import Mailbox
from aiosmtpd.smtp import AuthResult
from servers import Echo, free_port
from servers import leaks as servers_leaks

from clusterproof import redact
from clusterproof.notify import channels, config, items, message, send
from clusterproof.references.judge import Verdict
from clusterproof.screen.verdicts import FigureVerdict, NodeVerdict, Sample

NOW = 1795400000.0
TOKEN = 'Tok3nWh00k5ecret'
USER = 'amadmin'
SYSTEM = 'emu'
SCREENING = 'a1b2c3d4e5f60718'


def leaks(*texts):
    """The forms of the token found in ``texts`` (:func:`servers.leaks`)."""
    return servers_leaks(TOKEN, USER, *texts)


class RefusingSmtp:
    """A real SMTP server (aiosmtpd) on 127.0.0.1, without TLS, that offers
    AUTH and refuses every login; it delivers to ``maildir`` what it takes
    without a login."""

    def __init__(self, maildir):
        self.maildir = maildir
        self.port = free_port()
        self.controller = Controller(
            Mailbox(maildir), hostname='127.0.0.1', port=self.port, auth_require_tls=False,
            authenticator=lambda *args: AuthResult(success=False, handled=False))
        self.controller.start()

    def stop(self):
        self.controller.stop()


@pytest.fixture(scope='module')
def echo_server():
    e = Echo()
    yield e
    e.close()


@pytest.fixture
def echo(echo_server):
    echo_server.got.clear()
    echo_server.status = 404
    return echo_server


@pytest.fixture(scope='module')
def smtp_server(tmp_path_factory):
    s = RefusingSmtp(tmp_path_factory.mktemp('mail') / 'Maildir')
    yield s
    s.stop()


@pytest.fixture
def smtp(smtp_server):
    for key in mailbox.Maildir(smtp_server.maildir, create=True).keys():
        mailbox.Maildir(smtp_server.maildir).remove(key)
    return smtp_server


HEAD = 'retries: 2\nretry_delay: 0\ntimeout: 5\nchannels:\n'
DEAD = '127.0.0.1:{dead}'
#: (name, the channel's settings, the variable CP_SECRET, files by name,
#:  exit status, what the error says). In the settings and values: {echo}
#:  the echoing server's host:port, {dead} a port where nothing listens,
#:  {smtp} the SMTP server's port, {tmp} the test's directory, {T} the token
CASES = [
    # the webhook's URL in a variable
    ('webhook env: no scheme', '  webhook: {url_env: CP_SECRET}',
     'hooks.example.org/services/T0/B0/{T}', {}, 4,
     'url_env (the variable CP_SECRET): want an http:// or https:// URL; found no http(s) '
     'scheme'),
    ('webhook env: a space', '  webhook: {url_env: CP_SECRET}',
     'http://{echo}/hooks/T0/B0/{T} x', {}, 4, 'the URL holds a space or a control character'),
    ('webhook env: a port that is no number', '  webhook: {url_env: CP_SECRET}',
     'http://127.0.0.1:9{T}/hooks', {}, 4, 'not a URL: its host or port cannot be read'),
    ('webhook env: no host', '  webhook: {url_env: CP_SECRET}', 'https:///hooks/{T}', {}, 4,
     'the URL names no host'),
    ('webhook env: file://', '  webhook: {url_env: CP_SECRET}', 'file:///etc/hostname#{T}',
     {}, 4, 'found the scheme file:'),
    ('webhook env: nothing listens', '  webhook: {url_env: CP_SECRET}',
     'http://' + DEAD + '/hooks/T0/B0/{T}', {}, 4,
     'chat webhook http://127.0.0.1:{dead} did not answer: [Errno 111] Connection refused'),
    ('webhook env: the server echoes the path', '  webhook: {url_env: CP_SECRET}',
     'http://{echo}/hooks/T0/B0/{T}', {}, 4,
     'chat webhook http://{echo} refused the message: HTTP 404 No route <secret>: '
     '<pre>Cannot POST <secret></pre> <secret> auth='),
    ('webhook env: the server echoes the query', '  webhook: {url_env: CP_SECRET}',
     'http://{echo}/hooks?token={T}&x=1', {}, 4, 'refused the message: HTTP 404'),
    ('webhook env: the server echoes user and password', '  webhook: {url_env: CP_SECRET}',
     'http://' + USER + ':{T}@{echo}/hooks', {}, 4, 'refused the message: HTTP 404'),
    # the webhook's URL in a file
    ('webhook file: no URL', '  webhook: {url_file: "{tmp}/hook"}', None,
     {'hook': 'paste-the-hook-here-{T}\n'}, 4,
     'url_file ({tmp}/hook): want an http:// or https:// URL; found no http(s) scheme'),
    ('webhook file: two lines', '  webhook: {url_file: "{tmp}/hook"}', None,
     {'hook': 'https://hooks.example.org/T0/B0/{T}\nhttps://hooks.example.org/{T}\n'}, 4,
     'the URL holds a space or a control character'),
    ('webhook file: not UTF-8', '  webhook: {url_file: "{tmp}/hook"}', None,
     {'hook': b'\xff\xfehttps://hooks.example.org/{T}'}, 4, '{tmp}/hook is not UTF-8 text'),
    ('webhook file: missing', '  webhook: {url_file: "{tmp}/nosuch"}', None, {}, 4,
     'cannot read {tmp}/nosuch: No such file or directory'),
    ('webhook file: a directory', '  webhook: {url_file: "{tmp}/hookdir"}', None,
     {'hookdir': None}, 4, 'cannot read {tmp}/hookdir: Is a directory'),
    ('webhook file: the server echoes the path', '  webhook: {url_file: "{tmp}/hook"}', None,
     {'hook': 'http://{echo}/services/{T}/B0\n'}, 4, 'refused the message: HTTP 404'),
    # an Alertmanager with a user and password
    ('alertmanager url in the settings: a password', '  alertmanager: {url: '
     '"http://' + USER + ':{T}@127.0.0.1:9093"}', None, {}, 2,
     'channels.alertmanager.url holds a user and password: a secret is never in this file'),
    ('alertmanager url in the settings: a space', '  alertmanager: {url: '
     '"http://' + USER + ':{T}@127.0.0.1:9093 /"}', None, {}, 2,
     'channels.alertmanager.url: the URL holds a space'),
    ('alertmanager url in the settings: no scheme', '  alertmanager: {url: '
     '"' + USER + ':{T}@127.0.0.1:9093"}', None, {}, 2,
     'channels.alertmanager.url: want an http:// or https:// URL; found no http(s) scheme'),
    ('alertmanager env: no scheme', '  alertmanager: {url_env: CP_SECRET}',
     USER + ':{T}@127.0.0.1:9093', {}, 4, 'found no http(s) scheme'),
    ('alertmanager env: nothing listens', '  alertmanager: {url_env: CP_SECRET}',
     'http://' + USER + ':{T}@' + DEAD, {}, 4,
     'Alertmanager http://127.0.0.1:{dead} did not answer: [Errno 111] Connection refused'),
    ('alertmanager env: the server echoes the credentials',
     '  alertmanager: {url_env: CP_SECRET}', 'http://' + USER + ':{T}@{echo}', {}, 4,
     'Alertmanager http://{echo} refused the message: HTTP 404 No route /api/v2/alerts: '
     '<pre>Cannot POST /api/v2/alerts</pre> /api/v2/alerts auth=Basic <secret>'),
    ('alertmanager file: a path prefix echoed', '  alertmanager: {url_file: "{tmp}/am"}',
     None, {'am': 'http://' + USER + ':{T}@{echo}/am-{T}/\n'}, 4,
     'refused the message: HTTP 404'),
    # the SMTP password
    ('email env: nothing listens', '  email: {host: 127.0.0.1, port: {dead}, security: none, '
     'user: cp, password_env: CP_SECRET, from: a@example.org, to: b@example.org}', '{T}', {},
     4, 'SMTP server 127.0.0.1:{dead} (none) did not take the message'),
    ('email file: the server refuses the login', '  email: {host: 127.0.0.1, port: {smtp}, '
     'security: none, user: cp, password_file: "{tmp}/pw", from: a@example.org, '
     'to: b@example.org}', None, {'pw': '{T}\n'}, 4,
     'SMTP server 127.0.0.1:{smtp} (none) refused the login of user cp: 535'),
    ('email file: not UTF-8', '  email: {host: 127.0.0.1, port: {smtp}, security: none, '
     'user: cp, password_file: "{tmp}/pw", from: a@example.org, to: b@example.org}', None,
     {'pw': b'\xff{T}'}, 4, 'password_file: {tmp}/pw is not UTF-8 text'),
    # the settings file itself, holding what it must not
    ('settings: not UTF-8', b'\xff  webhook: {url_file: "/x/{T}"}', None, {}, 2,
     'not UTF-8 text, as the notification settings must be'),
    ('settings: not YAML', '  webhook: {url_env: CP_SECRET}\n  password: {T}: [', None, {}, 2,
     'not YAML: line 6, column 29: mapping values are not allowed here'),
]


def _fill(text, values):
    if isinstance(text, bytes):
        return text.replace(b'{T}', TOKEN.encode())
    for key, value in values.items():
        text = text.replace('{' + key + '}', str(value))
    return text


def _outlier():
    sample = Sample('n3', 'compute', 'stream', 'Triad', 61000.0, 'MB/s')
    return NodeVerdict('n3', 'compute', Verdict.SLOW, worst=FigureVerdict(
        sample, Verdict.SLOW, percent=-21.0, why='Triad 21 % below the median of its peers'))


@pytest.mark.parametrize('case', CASES, ids=[c[0] for c in CASES])
def test_no_failure_shows_a_secret(case, tmp_path, monkeypatch, capfd, echo, smtp):
    _, channel, value, files, status, said = case
    values = {'T': TOKEN, 'echo': echo.netloc, 'dead': free_port(), 'smtp': smtp.port,
              'tmp': tmp_path}
    settings = tmp_path / 'notify' / f'{SYSTEM}.yaml'
    settings.parent.mkdir()
    settings.write_bytes(HEAD.encode() + _fill(channel, values).encode()
                         if isinstance(channel, str) else HEAD.encode() + _fill(channel, {}))
    for name, content in files.items():
        if content is None:
            (tmp_path / name).mkdir()
        else:
            (tmp_path / name).write_bytes(_fill(content, values).encode()
                                          if isinstance(content, str) else _fill(content, {}))
    monkeypatch.setenv('CLUSTERPROOF_NOTIFY_CONFIG', str(settings.parent))
    monkeypatch.setenv('CLUSTERPROOF_RESULTS', str(tmp_path / 'results'))
    if value is not None:
        monkeypatch.setenv('CP_SECRET', _fill(value, values))
    assert send.after_screening(SYSTEM, [_outlier()], SCREENING, when=NOW) == status
    out, err = capfd.readouterr()
    ledger = tmp_path / 'results' / 'notify' / 'ledger.json'
    kept = ledger.read_text() if ledger.exists() else ''
    assert _fill(said, values) in err, err
    assert 'Traceback' not in out + err
    assert leaks(out, err, kept) == []
    assert '"sent": {}' in kept or status == 2          # nothing was marked sent
    if echo.got:            # what was configured was used: the path, the credentials
        assert any(TOKEN in path or redact.basic_auth(USER, TOKEN) == auth
                   for path, auth in echo.got)


def test_credentials_in_a_secret_url_go_as_http_basic(tmp_path, monkeypatch, echo):
    """The user and password of an Alertmanager's (or a webhook's) URL are
    sent as HTTP Basic, not in the URL, and the alerts reach the API."""
    echo.status = 200
    monkeypatch.setenv('CP_SECRET', f'http://{USER}:{TOKEN}@{echo.netloc}/')
    path = tmp_path / 'emu.yaml'
    path.write_text(HEAD + '  alertmanager: {url_env: CP_SECRET}\n')
    cfg = config.load(path, SYSTEM)
    [o] = send.run(cfg, items.of_outliers(SYSTEM, 'compute', [('n3', 'stream', -0.2, 'slow')],
                                          SCREENING, NOW), tmp_path / 'results', now=NOW)
    assert o.sent and not o.error
    assert echo.got == [('/api/v2/alerts', redact.basic_auth(USER, TOKEN))]


def test_a_url_is_shown_as_scheme_host_and_port():
    assert redact.shown(f'https://{USER}:{TOKEN}@hooks.example.org/T0/{TOKEN}?t={TOKEN}#x') \
        == 'https://hooks.example.org:443'
    assert redact.shown('http://[::1]:9093/am') == 'http://[::1]:9093'
    assert redact.shown(f'hooks.example.org/{TOKEN}') == '<not a URL>'
    assert redact.redact(f'HTTP 404: no route /T0/{TOKEN.lower()}', [f'http://h/T0/{TOKEN}']) \
        == 'HTTP 404: no route <secret>'
    assert redact.redact('nothing to hide', [None, '']) == 'nothing to hide'


def test_a_line_break_in_a_test_name_leaves_the_headers_one_line(tmp_path, smtp, monkeypatch):
    """A test's name with CR/LF (and a forged header after it): the message
    is delivered, its Subject one line with no header added; an alert's
    labels and summary are one line."""
    path = tmp_path / 'emu.yaml'
    path.write_text(HEAD + f'  email: {{host: 127.0.0.1, port: {smtp.port}, security: none, '
                           f'from: a@example.org, to: b@example.org}}\n')
    cfg = config.load(path, SYSTEM)
    bad = items.of_outliers(SYSTEM, 'compute', [('n3\r\nBcc: x@example.org', 'Ior\r\nX-A: 1',
                                                 -0.2, 'slow')], SCREENING, NOW)
    [o] = send.run(cfg, bad, tmp_path / 'results', now=NOW)
    assert o.sent and not o.error
    [mail] = mailbox.Maildir(smtp.maildir, create=False)
    assert mail['Subject'].replace('\n', '') == ('clusterproof: OUTLIER on emu:compute: Ior X-A: '
                                                 '1 node n3 Bcc: x@example.org -20.0% since '
                                                 '2026-11-23 (screening a1b2c3d4)')
    assert mail['Bcc'] is None and mail['X-A'] is None
    alert_cfg = tmp_path / 'am.yaml'
    alert_cfg.write_text(HEAD + '  alertmanager: {url: "http://127.0.0.1:9"}\n')
    cfg = config.load(alert_cfg, SYSTEM)
    [alert] = channels.alerts(cfg, message.render(bad, cfg), NOW)
    assert alert['labels']['test'] == 'Ior X-A: 1'
    assert alert['labels']['figure'] == 'n3 Bcc: x@example.org'
    assert '\n' not in alert['annotations']['summary']
    assert message.header('a\r\n\tb\u2028c\x00') == 'a b c'


def test_the_notify_command_shows_no_secret(tmp_path, monkeypatch, capfd, echo):
    """``clusterproof notify`` on a recorded night, every channel holding
    the token and failing (the webhook's server echoes its path, the
    Alertmanager and the SMTP server are not there), then with a password in
    the settings file: exit 4, then 2, and the token nowhere."""
    from results_helpers import recorded_results

    from clusterproof.cli import main
    monkeypatch.setenv('CLUSTERPROOF_RESULTS', str(recorded_results(tmp_path)))
    monkeypatch.setenv('CLUSTERPROOF_REFERENCES', str(tmp_path / 'refs'))
    monkeypatch.setenv('CP_HOOK', f'http://{echo.netloc}/hooks/T0/B0/{TOKEN}')
    monkeypatch.setenv('CP_AM', f'http://{USER}:{TOKEN}@127.0.0.1:{free_port()}')
    monkeypatch.setenv('CP_PASSWORD', TOKEN)
    path = tmp_path / 'local.yaml'
    path.write_text(HEAD + f'''\
  webhook: {{url_env: CP_HOOK, heartbeat: true}}
  alertmanager: {{url_env: CP_AM, heartbeat: true}}
  email: {{host: 127.0.0.1, port: {free_port()}, security: none, user: cp,
          password_env: CP_PASSWORD, from: a@example.org, to: b@example.org, heartbeat: true}}
''')
    assert main(['notify', '26fbb69e', '--config', str(path)]) == send.NOT_SENT
    out, err = capfd.readouterr()
    assert err.count('NOT SENT after 2 attempt(s)') == 3, err
    assert f'chat webhook http://{echo.netloc} refused the message: HTTP 404' in err
    path.write_text(HEAD + f'  alertmanager: {{url: "http://{USER}:{TOKEN}@127.0.0.1:9093"}}\n')
    assert main(['notify', '26fbb69e', '--config', str(path)]) == 2
    out2, err2 = capfd.readouterr()
    assert 'channels.alertmanager.url holds a user and password' in err2
    ledger = (tmp_path / 'results' / 'notify' / 'ledger.json').read_text()
    assert leaks(out, err, out2, err2, ledger) == [] and 'Traceback' not in err + err2
