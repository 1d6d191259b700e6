"""Notification against real servers started by the tests on loopback:
Debian's ``prometheus-alertmanager`` (its v2 API; routing to a webhook
receiver and to an SMTP server), an SMTP server with STARTTLS and AUTH
(aiosmtpd, pinned in requirements.lock) delivering to a Maildir the test
reads, a chat webhook receiver; ``clusterproof notify`` on the recorded
night (tests/data/results, references blessed from its first three
sessions, its fourth slowed: four regressions) run twice sends once, and a
server that is down is named, retried, and loses nothing. The alerting
rules of ``clusterproof export --format rules``: ``promtool check rules``
accepts them, and ``vmalert`` evaluates them against figures imported into
VictoriaMetrics: a figure out of its band fires, one in band does not."""

import json
import mailbox
import os
import re
import shutil
import ssl
import subprocess
import urllib.request

import pytest
import yaml
from aiosmtpd.controller import Controller
from aiosmtpd.handlers import Mailbox
from aiosmtpd.smtp import AuthResult, LoginPassword
from results_helpers import clusterproof, recorded_results
from servers import Receiver, free_port, get, serving, vm_query

from conftest import wait_for

#: seconds for a server to answer or deliver (under load, a few at most)
WAIT_S = 120


def wait(what, ready, proc=None):
    wait_for(what, ready, timeout=WAIT_S, proc=proc)

SMTP_USER, SMTP_PASSWORD = 'clusterproof', 'pw-SECRET-4711'
HOOK_PATH = '/hooks/T0SECRET/B0SECRET/tokenSECRET'
#: the recorded sessions (oldest first): three nightly, one slowed nightly, one smoke
SESSIONS = ('a55732ee', '9c278642', 'd8b0bc7f', '26fbb69e', 'f45191c0')


@pytest.fixture(scope='module')
def certificate(tmp_path_factory):
    """A self-signed certificate of 127.0.0.1: (cert file, key file)."""
    d = tmp_path_factory.mktemp('tls')
    subprocess.run(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1',
                    '-keyout', str(d / 'key.pem'), '-out', str(d / 'cert.pem'),
                    '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'],
                   check=True, capture_output=True)
    return d / 'cert.pem', d / 'key.pem'


class SmtpServer:
    """A real SMTP server on 127.0.0.1 requiring STARTTLS and AUTH, delivering
    to a Maildir."""

    def __init__(self, maildir, cert, key):
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(cert, key)
        self.logins = []
        self.port = free_port()
        self.maildir = maildir
        self.controller = Controller(Mailbox(maildir), hostname='127.0.0.1', port=self.port,
                                     tls_context=ctx, require_starttls=True,
                                     # Alertmanager's LOGIN does not take aiosmtpd's
                                     # challenge; PLAIN is what both speak
                                     auth_exclude_mechanism=['LOGIN'],
                                     authenticator=self._auth, auth_require_tls=True)
        self.controller.start()

    def _auth(self, server, session, envelope, mechanism, auth_data):
        ok = (isinstance(auth_data, LoginPassword) and auth_data.login == SMTP_USER.encode()
              and auth_data.password == SMTP_PASSWORD.encode())
        self.logins.append((mechanism, ok))
        return AuthResult(success=ok, handled=False)

    def messages(self):
        return [m for _, m in sorted(mailbox.Maildir(self.maildir, create=False).items(),
                                     key=lambda kv: kv[1]['Date'] or '')]

    def stop(self):
        self.controller.stop()


@pytest.fixture
def smtp(tmp_path, certificate):
    server = SmtpServer(tmp_path / 'Maildir', *certificate)
    yield server
    server.stop()


@pytest.fixture
def hook():
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def alertmanager(tmp_path, smtp, hook, certificate):
    """Debian's Alertmanager on 127.0.0.1, routing every alert to ``hook``
    (its webhook) and by e-mail through ``smtp``; yields its base URL."""
    binary = shutil.which('prometheus-alertmanager')
    if not binary:
        pytest.skip('needs prometheus-alertmanager (Debian package; make setup installs it '
                    'as root)')
    cfg = {
        'global': {'smtp_smarthost': f'127.0.0.1:{smtp.port}', 'smtp_from': 'am@example.org',
                   'smtp_auth_username': SMTP_USER, 'smtp_auth_password': SMTP_PASSWORD,
                   'smtp_require_tls': True},
        'route': {'receiver': 'admins', 'group_by': ['alertname', 'system'],
                  'group_wait': '1s', 'group_interval': '1s', 'repeat_interval': '24h'},
        'receivers': [{'name': 'admins',
                       'webhook_configs': [{'url': f'{hook.url}/am'}],
                       'email_configs': [{'to': 'hpc-admins@example.org', 'tls_config': {
                           'ca_file': str(certificate[0]), 'server_name': '127.0.0.1'}}]}]}
    (tmp_path / 'am.yml').write_text(yaml.safe_dump(cfg))
    url = f'http://127.0.0.1:{free_port()}'
    with serving([binary, f'--config.file={tmp_path / "am.yml"}',
                  f'--storage.path={tmp_path / "am-data"}',
                  f'--web.listen-address={url.removeprefix("http://")}',
                  '--cluster.listen-address=', '--log.level=warn'],
                 'Alertmanager is ready', lambda: get(f'{url}/-/ready') is not None, WAIT_S):
        yield url


@pytest.fixture
def night(tmp_path):
    """The recorded results with references blessed from the first three
    sessions: (results, references directory)."""
    results, refs = recorded_results(tmp_path), tmp_path / 'refs'
    sel = [a for s in SESSIONS[:3] for a in ('--session', s)]
    proc = clusterproof(['bless', *sel, '--write', '--reason', 'notify test'], results, refs)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return results, refs


def notify_config(tmp_path, am_url, smtp, hook_url, certificate, retries=2):
    (tmp_path / 'smtp-password').write_text(SMTP_PASSWORD + '\n')
    path = tmp_path / 'notify' / 'local.yaml'
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump({
        'page': 'https://hpc.example.org/clusterproof/nightly-latest.html',
        'retries': retries, 'retry_delay': 0.1, 'timeout': 10,
        'channels': {
            'alertmanager': {'url': am_url},
            'email': {'host': '127.0.0.1', 'port': smtp.port, 'security': 'starttls',
                      'cafile': str(certificate[0]), 'user': SMTP_USER,
                      'password_file': str(tmp_path / 'smtp-password'),
                      'from': 'clusterproof@example.org', 'to': ['hpc-admins@example.org']},
            'webhook': {'url_env': 'CP_TEST_HOOK'}}}))
    return path


def run_notify(results, refs, path, hook_url, *args):
    os.environ['CP_TEST_HOOK'] = hook_url
    try:
        return clusterproof(['notify', SESSIONS[3], '--config', str(path), *args], results, refs)
    finally:
        del os.environ['CP_TEST_HOOK']


def _am_alerts(url):
    return json.loads(get(f'{url}/api/v2/alerts') or '[]')


@pytest.mark.slow
def test_a_night_reaches_alertmanager_mail_and_chat_once(tmp_path, night, alertmanager,
                                                         smtp, hook, certificate):
    results, refs = night
    path = notify_config(tmp_path, alertmanager, smtp, f'{hook.url}{HOOK_PATH}', certificate)
    proc = run_notify(results, refs, path, f'{hook.url}{HOOK_PATH}')
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count('notify: ') == 3 and '(4 item(s))' in proc.stdout, proc.stdout

    # the chat webhook: one message, its first lines what, where, how big, cause, link
    chat = [b for p, b in hook.bodies if p == HOOK_PATH]
    [body] = chat
    lines = body['text'].splitlines()
    assert lines[0] == 'clusterproof: 4 new findings on local (4 regressions)'
    assert lines[1].startswith('- REGRESSION on local:default: DevZeroCopy %num_threads=2 '
                               '+gnu copy_time +')
    assert 'suspected cause: ' in lines[1] and lines[-1] == (
        'page: https://hpc.example.org/clusterproof/nightly-latest.html')

    # Alertmanager holds one alert per regression, labelled
    def held():
        alerts = [a for a in _am_alerts(alertmanager)
                  if a['labels'].get('alertname') == 'ClusterproofFinding']
        return alerts if len(alerts) == 4 else None
    wait('Alertmanager holds the 4 alerts', held)
    alerts = held()
    for a in alerts:
        assert {k: a['labels'][k] for k in ('system', 'partition', 'severity', 'kind')} == {
            'system': 'local', 'partition': 'default', 'severity': 'critical',
            'kind': 'regression'}
        assert re.fullmatch(r'DevZeroCopy %num_threads=\d+ \+gnu', a['labels']['test'])
        assert a['labels']['figure'] in ('copy_bw', 'copy_time')
        assert a['labels']['id'].startswith('r') and len(a['labels']['id']) == 11
        assert a['annotations']['link'] == a['generatorURL'] == (
            'https://hpc.example.org/clusterproof/nightly-latest.html')
        assert a['status']['state'] == 'active'
    (tmp_path / 'am-alerts.json').write_text(json.dumps(alerts, indent=1))

    # Alertmanager routed them: one group to its webhook and one mail; clusterproof's own
    # mail arrived too, through STARTTLS and AUTH
    wait('Alertmanager notifies its webhook', lambda: any(p == '/am' for p, _ in
                                                                hook.bodies))
    # (one group; under load it may come in more than one notification)
    wait('Alertmanager notifies its webhook of all 4', lambda: {
        a['labels']['id'] for p, b in hook.bodies if p == '/am' for a in b['alerts']} == {
        a['labels']['id'] for a in alerts})
    assert all(b['groupLabels'] == {'alertname': 'ClusterproofFinding', 'system': 'local'}
               for p, b in hook.bodies if p == '/am')
    wait('the mails of clusterproof and of Alertmanager in the mailbox', lambda: {
        m['From'] for m in smtp.messages()} == {'clusterproof@example.org', 'am@example.org'})
    mails = {m['From']: m for m in smtp.messages()}
    [ours] = [m for m in smtp.messages() if m['From'] == 'clusterproof@example.org']
    assert ours['Subject'] == 'clusterproof: 4 new findings on local (4 regressions)'
    assert ours.get_payload(decode=True).decode() == body['text']
    assert 'ClusterproofFinding' in mails['am@example.org']['Subject']
    assert smtp.logins and all(ok for _, ok in smtp.logins)
    (tmp_path / 'mail.txt').write_text(ours.as_string())

    # the same night again: nothing sent anywhere
    proc = run_notify(results, refs, path, f'{hook.url}{HOOK_PATH}')
    assert proc.returncode == 0 and proc.stdout.count('nothing new') == 3, proc.stdout
    assert len([p for p, _ in hook.bodies if p == HOOK_PATH]) == 1
    assert len([m for m in smtp.messages() if m['From'] == 'clusterproof@example.org']) == 1
    for text in (proc.stdout, proc.stderr, (results / 'notify' / 'ledger.json').read_text()):
        assert 'SECRET' not in text


@pytest.mark.slow
def test_a_server_down_is_named_retried_and_loses_nothing(tmp_path, night, smtp, hook,
                                                          certificate):
    results, refs = night
    down = f'http://127.0.0.1:{free_port()}'        # no Alertmanager listens there
    path = notify_config(tmp_path, down, smtp, f'{hook.url}{HOOK_PATH}', certificate)
    proc = run_notify(results, refs, path, f'{hook.url}{HOOK_PATH}')
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert (f'notify: alertmanager: NOT SENT after 2 attempt(s): Alertmanager {down} did not '
            f'answer: [Errno 111] Connection refused; 4 item(s) kept for the next run'
            in proc.stderr), proc.stderr
    assert proc.stderr.count('notify: alertmanager: attempt') == 2
    assert len(smtp.messages()) == 1 and len(hook.bodies) == 1    # the others went on
    led = json.loads((results / 'notify' / 'ledger.json').read_text())
    assert len(led['channels']['alertmanager']['pending']) == 4
    assert not led['channels']['email']['pending'] and len(led['channels']['email']['sent']) == 4

    # the mail server goes down too, with a wrong password on the next try: named
    (tmp_path / 'smtp-password').write_text('wrong-SECRET\n')
    proc = run_notify(results, refs, path, f'{hook.url}{HOOK_PATH}')
    assert proc.returncode == 4
    assert 'SECRET' not in proc.stdout + proc.stderr
    assert 'Alertmanager' in proc.stderr and 'email: nothing new' in proc.stdout

    # the same path with a working Alertmanager address: the kept items go, once
    receiver = Receiver()
    try:
        path.write_text(path.read_text().replace(down, receiver.url))
        proc = run_notify(results, refs, path, f'{hook.url}{HOOK_PATH}')
        assert proc.returncode == 0, proc.stderr
        [(p, alerts)] = receiver.bodies
        assert p == '/api/v2/alerts' and len(alerts) == 4
    finally:
        receiver.close()
    assert not json.loads((results / 'notify' / 'ledger.json').read_text())[
        'channels']['alertmanager']['pending']


def test_mail_over_implicit_tls_with_auth(tmp_path, certificate):
    """security: tls (SMTPS, port 465 in the field): the connection is TLS
    from the first byte; the password comes from the environment."""
    from clusterproof.notify import config, message
    from clusterproof.notify.channels import ChannelError, send_email
    from test_notify import NOW, regression
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(*certificate)
    port = free_port()
    logins = []

    def auth(server, session, envelope, mechanism, data):
        logins.append(data.password == SMTP_PASSWORD.encode())
        return AuthResult(success=logins[-1], handled=False)
    server = Controller(Mailbox(tmp_path / 'Maildir'), hostname='127.0.0.1', port=port,
                        ssl_context=ctx, authenticator=auth, auth_require_tls=False)
    server.start()
    try:
        path = tmp_path / 'local.yaml'
        path.write_text(yaml.safe_dump({'channels': {'email': {
            'host': '127.0.0.1', 'port': port, 'security': 'tls', 'cafile': str(certificate[0]),
            'user': SMTP_USER, 'password_env': 'CP_TEST_SMTP_PASSWORD',
            'from': 'clusterproof@example.org', 'to': 'hpc-admins@example.org'}}}))
        cfg = config.load(path, 'local')
        os.environ['CP_TEST_SMTP_PASSWORD'] = SMTP_PASSWORD
        try:
            send_email(cfg, message.render([regression()], cfg), NOW)
            os.environ['CP_TEST_SMTP_PASSWORD'] = 'wrong-SECRET'
            with pytest.raises(ChannelError) as err:
                send_email(cfg, message.render([regression()], cfg), NOW)
        finally:
            del os.environ['CP_TEST_SMTP_PASSWORD']
        assert str(err.value).startswith(f'SMTP server 127.0.0.1:{port} (tls) refused the '
                                         f'login of user {SMTP_USER}: 535')
        assert 'SECRET' not in str(err.value)
        assert logins[0] and not any(logins[1:])     # smtplib tries each mechanism
        [mail] = [m for _, m in mailbox.Maildir(tmp_path / 'Maildir', create=False).items()]
        assert mail['Subject'].startswith('clusterproof: REGRESSION on pixstor:compute')
    finally:
        server.stop()


@pytest.mark.slow
def test_rules_pass_promtool_and_vmalert_fires_out_of_band_only(tmp_path, night,
                                                               victoria_metrics):
    results, refs = night
    proc = clusterproof(['export', '--format', 'rules', '--last', '5'], results,
                        tmp_path / 'no-refs')
    assert proc.returncode == 2 and (
        f'no rules to write: none of the figures of the 5 selected session(s) has a bounded '
        f'reference in {tmp_path / "no-refs"}') in proc.stderr, proc.stderr
    rules = tmp_path / 'rules.yml'
    proc = clusterproof(['export', '--format', 'rules', '--last', '5', '-o', str(rules)],
                        results, refs)
    assert proc.returncode == 0, proc.stderr
    assert 'rules: 4 figure(s) of 5 session(s)' in proc.stderr
    promtool = shutil.which('promtool')
    if promtool:
        check = subprocess.run([promtool, 'check', 'rules', str(rules)], capture_output=True,
                               text=True)
        assert check.returncode == 0 and 'SUCCESS: 4 rules found' in check.stdout, check
    vmalert = shutil.which('vmalert')
    if not vmalert:
        pytest.skip('needs vmalert (Debian package victoria-metrics)')

    def openmetrics(session):
        p = clusterproof(['export', '--format', 'openmetrics', '--session', session],
                         results, refs)
        assert p.returncode == 0, p.stderr
        return p.stdout
    # in band: the third session's figures; out of band: the slowed fourth's, of 2 threads
    text = openmetrics(SESSIONS[2])
    text += ''.join(x + '\n' for x in openmetrics(SESSIONS[3]).splitlines()
                    if 'num_threads=2' in x)
    req = urllib.request.Request(f'{victoria_metrics}/api/v1/import/prometheus',
                                 data=text.replace('# EOF\n', '').encode(), method='POST')
    with urllib.request.urlopen(req, timeout=30) as resp:
        assert resp.status == 204
    wait('VictoriaMetrics holds the 4 figures with the newest values', lambda: len(
        vm_query(victoria_metrics, '{__name__=~"clusterproof_figure.*"} > 0.5 and '
                                   '{__name__=~"clusterproof_figure.*"} < 1000')) == 2)
    notified = Receiver()
    url = f'http://127.0.0.1:{free_port()}'

    def groups():
        body = get(f'{url}/api/v1/rules')
        return json.loads(body)['data']['groups'] if body else []

    def evaluated():
        rs = [r for g in groups() for r in g['rules']]
        return len(rs) == 4 and all(not r['lastEvaluation'].startswith('0001') for r in rs)
    try:
        with serving([vmalert, f'-rule={rules}', f'-datasource.url={victoria_metrics}',
                      f'-notifier.url={notified.url}',
                      f'-httpListenAddr={url.removeprefix("http://")}',
                      '-evaluationInterval=1s', '-loggerLevel=WARN'],
                     'vmalert evaluated every rule', evaluated, WAIT_S) as proc:
            firing = json.loads(get(f'{url}/api/v1/alerts'))['data']['alerts']
            assert sorted((a['labels']['test'], a['labels']['figure'], a['state'])
                          for a in firing) == [
                ('DevZeroCopy %num_threads=2', 'copy_bw', 'firing'),
                ('DevZeroCopy %num_threads=2', 'copy_time', 'firing')]
            assert all(a['labels']['alertname'] == 'ClusterproofFigureOutOfBand'
                       for a in firing)
            wait('vmalert notifies', lambda: notified.bodies, proc=proc)
    finally:
        notified.close()
