"""Notification (clusterproof.notify) without external servers but a real
HTTP receiver on loopback: the items and their ids, the first lines of a
message, one message for 500 findings, the ledger (a night run twice sends
once, a quiet night sends nothing, an all clear once a day, a receiver that
is down is retried, named and loses nothing), the settings and their
secrets (never in the output, the errors or the ledger)."""

import json

import pytest


from clusterproof import ClusterproofError
from clusterproof.analysis.findings import finding_id
from clusterproof.notify import config, items, ledger, message, send
from servers import Receiver

NOW = 1795400000.0          # 2026-11-23 in unix time, near the recorded sessions
SECRET_URL_PATH = '/hooks/T0SECRET/B0SECRET/xoxSECRETTOKEN'


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def write_config(path, text, system='pixstor'):
    """The settings ``text`` of ``system`` (that of :func:`regression`)."""
    path.write_text(text)
    return config.load(path, system)


def webhook_config(tmp_path, monkeypatch, url, extra=''):
    monkeypatch.setenv('CP_TEST_WEBHOOK', url)
    return write_config(tmp_path / 'local.yaml', f'''
page: https://hpc.example.org/nightly-latest.html
retries: 3
retry_delay: 0
timeout: 5
{extra}
channels:
  webhook:
    url_env: CP_TEST_WEBHOOK
''')


def regression(n=1, size=-0.12, cause='spack_lock_hash: a1b2 -> c3d4'):
    return items.make('regression', 'pixstor', 'compute', f'IorSharedFile %num_threads={n}',
                      'write_bw', 'sess-0001', NOW - 86400, size=size,
                      detail='REGRESSION: 8150 MB/s against the reference 9261 MB/s '
                             '(-5.0%/+inf)', cause=cause)


def test_an_items_id_is_the_findings_id():
    i = regression()
    assert i.id == finding_id('regression', 'pixstor', 'compute',
                              'IorSharedFile %num_threads=1', 'write_bw', 'sess-0001')
    o = items.of_outliers('pixstor', 'compute', [('n07', 'StreamTriad', -0.21, 'slow')],
                          'sess-0002', NOW)
    assert o[0].id == finding_id('outlier', 'pixstor', 'compute', 'StreamTriad', 'n07',
                                 'sess-0002')
    assert items.Item.from_dict(i.to_dict()) == i


def test_the_first_lines_say_what_where_how_big_cause_link(tmp_path, monkeypatch):
    cfg = webhook_config(tmp_path, monkeypatch, 'http://127.0.0.1:9/x')
    m = message.render([regression()], cfg)
    first = m.text.splitlines()[:6]
    assert first[0] == m.subject == ('clusterproof: REGRESSION on pixstor:compute: '
                                     'IorSharedFile %num_threads=1 write_bw -12.0% since '
                                     '2026-11-22 (session sess-000)')
    assert first[1].startswith('what: regression; REGRESSION: 8150 MB/s')
    assert first[2] == ('where: system pixstor, partition compute, IorSharedFile '
                        '%num_threads=1, figure write_bw')
    assert first[3] == 'how big: -12.0%'
    assert first[4] == 'suspected cause: spack_lock_hash: a1b2 -> c3d4'
    assert first[5] == 'page: https://hpc.example.org/nightly-latest.html'


def test_500_findings_are_one_message_that_summarises(tmp_path, monkeypatch):
    cfg = webhook_config(tmp_path, monkeypatch, 'http://127.0.0.1:9/x', 'top: 3')
    many = [regression(n, size=-0.01 * (n % 50 + 1)) for n in range(300)]
    many += [items.make('change', 'minerva', 'cpu', f'Stream %n={n}', 'Triad', f's{n}', NOW,
                        size=0.02) for n in range(150)]
    many += [items.make('failure', 'minerva', 'cpu', f'Hpl %n={n}', '', 's9', NOW,
                        detail='failed in sanity') for n in range(50)]
    m = message.render(many, cfg)
    assert m.summary and len(m.items) == 500
    lines = m.text.splitlines()
    assert lines[0] == ('clusterproof: 500 new findings on minerva, pixstor (300 regressions, '
                        '150 changes, 50 failures)')
    assert lines[1] == ('by system: minerva:cpu: 150 changes, 50 failures; pixstor:compute: '
                        '300 regressions')
    assert lines[2] == 'largest 3:'
    assert all(x.startswith('- FAILURE on minerva:cpu') for x in lines[3:6])
    assert lines[6:] == ['and 497 more on the page',
                         'page: https://hpc.example.org/nightly-latest.html']


def test_a_night_run_twice_sends_once_and_a_quiet_night_nothing(tmp_path, monkeypatch,
                                                                  receiver):
    cfg = webhook_config(tmp_path, monkeypatch, receiver.url + SECRET_URL_PATH)
    results = tmp_path / 'results'
    night = [regression(1), regression(2, size=-0.3)]
    [o] = send.run(cfg, night, results, now=NOW)
    assert o.sent and not o.error and len(receiver.bodies) == 1
    path, body = receiver.bodies[0]
    assert path == SECRET_URL_PATH and set(body) == {'text'}
    assert body['text'].startswith('clusterproof: 2 new findings on pixstor (2 regressions)\n'
                                   '- REGRESSION on pixstor:compute: IorSharedFile '
                                   '%num_threads=2 write_bw -30.0%')
    [o] = send.run(cfg, night, results, now=NOW + 86400)        # the same findings again
    assert o.sent is None and len(receiver.bodies) == 1
    [o] = send.run(cfg, [], results, now=NOW + 2 * 86400)       # a quiet night
    assert o.sent is None and len(receiver.bodies) == 1
    # one new finding beside the old: only it is sent
    [o] = send.run(cfg, night + [regression(3)], results, now=NOW + 3 * 86400)
    assert [i.id for i in o.sent.items] == [regression(3).id]
    sent = json.loads((results / 'notify' / 'ledger.json').read_text())
    assert set(sent['channels']['webhook']['sent']) == {regression(n).id for n in (1, 2, 3)}
    assert SECRET_URL_PATH not in (results / 'notify' / 'ledger.json').read_text()


def test_all_clear_once_a_day_when_asked(tmp_path, monkeypatch, receiver):
    monkeypatch.setenv('CP_TEST_WEBHOOK', receiver.url + '/hook')
    cfg = write_config(tmp_path / 'local.yaml', '''
channels:
  webhook: {url_env: CP_TEST_WEBHOOK, heartbeat: true}
''', 'local')
    other = write_config(tmp_path / 'emu.yaml', '''
channels:
  webhook: {url_env: CP_TEST_WEBHOOK, heartbeat: true}
''', 'emu')
    for t in (NOW, NOW + 60, NOW + 86400):
        send.run(cfg, [], tmp_path / 'results', now=t)
    # another system of the same results directory, on a channel of the same
    # name: its own quiet day, its own all clear
    send.run(other, [], tmp_path / 'results', now=NOW + 86400 + 60)
    send.run(other, [], tmp_path / 'results', now=NOW + 86400 + 120)
    texts = [b['text'] for _, b in receiver.bodies]
    assert texts == ['clusterproof: all clear on local (2026-11-23): nothing new needs a '
                     'person\n',
                     'clusterproof: all clear on local (2026-11-24): nothing new needs a '
                     'person\n',
                     'clusterproof: all clear on emu (2026-11-24): nothing new needs a '
                     'person\n']
    led = json.loads((tmp_path / 'results' / 'notify' / 'ledger.json').read_text())
    assert led['channels']['webhook']['heartbeat'] == {'local': '2026-11-24',
                                                       'emu': '2026-11-24'}


def test_a_receiver_down_is_retried_named_and_loses_nothing(tmp_path, monkeypatch, receiver,
                                                           capsys):
    receiver.status = 503
    cfg = webhook_config(tmp_path, monkeypatch, receiver.url + SECRET_URL_PATH)
    results = tmp_path / 'results'
    slept = []
    [o] = send.run(cfg, [regression(1)], results, now=NOW, sleep=slept.append)
    assert o.sent is None and o.attempts == 3 and o.pending == 1
    assert o.error == (f'chat webhook {receiver.url} refused the message: HTTP 503 Service '
                       f'Unavailable: ')
    assert slept == [0.0, 0.0]              # bounded: three attempts, two waits
    err = capsys.readouterr().err
    assert err.count('notify: webhook: attempt') == 3 and 'HTTP 503' in err
    # the next night, with the receiver back: the kept item and the new one, once
    receiver.status = 200
    [o] = send.run(cfg, [regression(2)], results, now=NOW + 86400)
    assert sorted(i.id for i in o.sent.items) == sorted([regression(1).id, regression(2).id])
    assert len(receiver.bodies) == 1
    out = capsys.readouterr()
    for text in (out.out, out.err, o.error, (results / 'notify' / 'ledger.json').read_text()):
        assert 'SECRET' not in text


def ledger_of(results):
    return json.loads((results / 'notify' / 'ledger.json').read_text())


def test_a_finding_found_every_night_is_sent_once_and_the_ledger_stays_bounded(
        tmp_path, monkeypatch, receiver):
    """A regression that lasts 60 nights is sent once; a new finding each
    night is sent that night; what no night found for forget_after_days
    leaves the ledger, so it holds a month of findings, not all of them."""
    cfg = webhook_config(tmp_path, monkeypatch, receiver.url + '/hook')
    assert cfg.forget_after == 30
    results = tmp_path / 'results'
    lasting = regression(1)
    day = 86400

    def new(d):
        return regression(100 + d)
    [o] = send.run(cfg, [lasting, new(0)], results, now=NOW)
    assert {i.id for i in o.sent.items} == {lasting.id, new(0).id}
    first = ledger_of(results)['channels']['webhook']['sent'][lasting.id]
    for d in range(1, 61):
        [o] = send.run(cfg, [lasting, new(d)], results, now=NOW + d * day)
        assert [i.id for i in o.sent.items] == [new(d).id]        # the old one: never again
    led = ledger_of(results)
    kept = {new(d).id for d in range(30, 61)} | {lasting.id}
    assert set(led['found']) == kept and set(led['channels']['webhook']['sent']) == kept
    assert led['channels']['webhook']['sent'][lasting.id] == first
    assert len(receiver.bodies) == 61
    # the same night run twice after the forgetting: sent once
    [o] = send.run(cfg, [lasting, new(60)], results, now=NOW + 60 * day + 60)
    assert o.sent is None and len(receiver.bodies) == 61
    # gone for longer than forget_after_days and found again: forgotten, so sent again
    [o] = send.run(cfg, [new(0)], results, now=NOW + 61 * day)
    assert [i.id for i in o.sent.items] == [new(0).id]


def test_a_pending_item_triaged_is_dropped_and_said(tmp_path, monkeypatch, receiver):
    receiver.status = 503
    cfg = webhook_config(tmp_path, monkeypatch, receiver.url + '/hook')
    results = tmp_path / 'results'
    said = []
    [o] = send.run(cfg, [regression(1), regression(2)], results, now=NOW,
                   sleep=lambda s: None, log=said.append)
    assert o.pending == 2
    receiver.status = 200
    said.clear()
    [o] = send.run(cfg, [], results, now=NOW + 86400, triaged={regression(1).id},
                   log=said.append)
    assert [i.id for i in o.sent.items] == [regression(2).id] and len(receiver.bodies) == 1
    assert said == ['notify: webhook: 1 item(s) triaged before they could be sent: dropped']
    led = ledger_of(results)
    assert led['channels']['webhook']['pending'] == {}
    assert set(led['found']) == {regression(1).id, regression(2).id}    # triage looks it up
    # pending on none, found by no run for forget_after_days: forgotten
    send.run(cfg, [], results, now=NOW + 31 * 86400, log=said.append)
    assert ledger_of(results)['found'] == {}


def test_a_channel_sends_only_its_systems_items_and_keeps_a_down_channels_items(
        tmp_path, monkeypatch, receiver):
    """Two systems with a webhook each: the items one system left pending
    are not sent by the other; they are never forgotten while pending, and
    dropped, said, once the system's settings no longer have the channel."""
    receiver.status = 503
    cfg = webhook_config(tmp_path, monkeypatch, receiver.url + '/hook')
    results = tmp_path / 'results'
    send.run(cfg, [regression(1)], results, now=NOW, sleep=lambda s: None)
    receiver.status = 200
    other = write_config(tmp_path / 'minerva.yaml',
                         'channels: {webhook: {url_env: CP_TEST_WEBHOOK}}\n', 'minerva')
    [o] = send.run(other, [], results, now=NOW + 40 * 86400)
    assert o.sent is None and not receiver.bodies
    led = ledger_of(results)
    assert list(led['channels']['webhook']['pending']) == [regression(1).id]
    assert list(led['found']) == [regression(1).id]
    said = []
    mail = write_config(tmp_path / 'mail.yaml', 'channels: {email: {host: 127.0.0.1, port: 9, '
                        'security: none, from: a@example.org, to: [b@example.org]}}\n')
    send.run(mail, [], results, now=NOW + 41 * 86400, sleep=lambda s: None, log=said.append)
    assert said[0] == (f'notify: webhook: 1 item(s) of pixstor pending for a channel '
                       f'{tmp_path / "mail.yaml"} no longer has: dropped')
    assert ledger_of(results)['found'] == {} and not receiver.bodies


def test_nothing_listening_is_named_without_the_secret(tmp_path, monkeypatch):
    r = Receiver()
    url = r.url
    r.close()                           # nothing listens on its port any more
    cfg = webhook_config(tmp_path, monkeypatch, url + SECRET_URL_PATH)
    [o] = send.run(cfg, [regression()], tmp_path / 'results', now=NOW, sleep=lambda s: None)
    assert o.error.startswith(f'chat webhook {url} did not answer: ')
    assert 'Connection refused' in o.error and 'SECRET' not in o.error


@pytest.mark.parametrize('text, message_part', [
    ('channels: {webhook: {url: "https://hooks.example/T/B/X"}}',
     'unknown key channels.webhook.url'),
    ('channels: {webhook: {}}', 'channels.webhook: the url is a secret: name the environment'),
    ('channels: {email: {host: smtp.example.org, from: a@example.org, to: [b@example.org], '
     'user: cp, password: hunter2}}', 'unknown key channels.email.password'),
    ('channels: {email: {host: smtp.example.org, from: a@example.org, to: [b@example.org], '
     'security: ssl}}', "channels.email.security: 'ssl'; want one of none, starttls, tls"),
    ('channels: {pager: {}}', 'unknown key channels.pager'),
    ('kinds: [regressions]\nchannels: {alertmanager: {url: "http://127.0.0.1:9093"}}',
     "kinds: want a list of regression, failure, change, outlier; found ['regressions']"),
    ('retries: 0\nchannels: {alertmanager: {url: "http://127.0.0.1:9093"}}',
     'retries: want a number >= 1; found 0'),
    ('channels: {alertmanager: {resolve_after_hours: 1}}',
     'channels.alertmanager.url is required (or channels.alertmanager.url_env or url_file'),
    ('channels: {alertmanager: {url: "http://am:9093", url_env: AM_URL}}',
     'channels.alertmanager: give one of url, url_env, url_file'),
    ('channels: {email: {host: "smtp://smtp.example.org", from: a@example.org, '
     'to: [b@example.org]}}', "channels.email.host: want a host name or address"),
    ('channels: {email: {host: smtp.example.org, from: a@example.org, '
     'to: ["b@example.org\\r\\nBcc: c@example.org"]}}', 'channels.email.to: want e-mail addresses'),
])
def test_bad_settings_are_named(tmp_path, text, message_part):
    path = tmp_path / 'local.yaml'
    path.write_text(text + '\n')
    with pytest.raises(ClusterproofError) as err:
        config.load(path, 'local')
    assert str(err.value).startswith(f'{path}: ') and message_part in str(err.value)
    assert 'hunter2' not in str(err.value)


def test_a_secret_unset_or_unreadable_is_named_not_shown(tmp_path, monkeypatch):
    monkeypatch.delenv('CP_TEST_UNSET', raising=False)
    cfg = write_config(tmp_path / 'local.yaml',
                       'channels: {webhook: {url_env: CP_TEST_UNSET}}\n')
    with pytest.raises(ClusterproofError, match='url_env: the environment variable '
                                                'CP_TEST_UNSET is not set or empty'):
        config.secret(cfg, 'webhook', 'url')
    secret_file = tmp_path / 'hook-url'
    cfg = write_config(tmp_path / 'local.yaml',
                       f'channels: {{webhook: {{url_file: {secret_file}}}}}\n')
    with pytest.raises(ClusterproofError, match=f'cannot read {secret_file}: No such file'):
        config.secret(cfg, 'webhook', 'url')
    secret_file.write_text('https://hooks.example/T/B/SECRETVALUE\n')
    assert config.secret(cfg, 'webhook', 'url') == 'https://hooks.example/T/B/SECRETVALUE'
    # a setting error is not retried: the outcome names it at once
    [o] = send.run(write_config(tmp_path / 'local.yaml',
                                'channels: {webhook: {url_env: CP_TEST_UNSET}}\n'),
                   [regression()], tmp_path / 'results', now=NOW)
    assert o.attempts == 1 and 'CP_TEST_UNSET is not set' in o.error


def test_an_unreadable_ledger_stops_rather_than_resend(tmp_path, monkeypatch, receiver):
    cfg = webhook_config(tmp_path, monkeypatch, receiver.url + '/hook')
    led = tmp_path / 'results' / 'notify' / 'ledger.json'
    led.parent.mkdir(parents=True)
    led.write_text('{"version": 1, "chann')
    with pytest.raises(ClusterproofError, match=f'{led}: the ledger of sent notifications '
                                                f'is unreadable'):
        send.run(cfg, [regression()], tmp_path / 'results', now=NOW)
    assert led.read_text() == '{"version": 1, "chann' and not receiver.bodies


def test_to_send_drops_what_a_person_triaged():
    night = [regression(1), regression(2)]
    assert items.to_send(night) == night
    assert items.to_send(night, {regression(1).id}) == [regression(2)]
    assert ledger.NAME == 'ledger.json'


def test_the_example_settings_load():
    from clusterproof.paths import SITE_CONFIG
    cfg = config.load(SITE_CONFIG / 'notify' / 'example.yaml.sample', 'example')
    assert set(cfg.channels) == {'alertmanager', 'email', 'webhook'}
    assert cfg.min_change == 0.02 and cfg.channels['email']['port'] == 587
    assert cfg.forget_after == 30


def test_a_screenings_outliers_are_sent_once_under_the_ids_screen_prints(
        tmp_path, monkeypatch, receiver, capsys):
    from clusterproof.references.judge import Verdict
    from clusterproof.screen.verdicts import FigureVerdict, NodeVerdict, Sample
    from clusterproof.screen.output import finding_of
    (tmp_path / 'notify').mkdir()
    (tmp_path / 'notify' / 'emu.yaml').write_text(
        'channels: {webhook: {url_env: CP_TEST_WEBHOOK}}\n')
    monkeypatch.setenv('CLUSTERPROOF_NOTIFY_CONFIG', str(tmp_path / 'notify'))
    monkeypatch.setenv('CLUSTERPROOF_RESULTS', str(tmp_path / 'results'))
    monkeypatch.setenv('CP_TEST_WEBHOOK', receiver.url + '/hook')
    sample = Sample('n3', 'compute', 'stream', 'Triad', 61000.0, 'MB/s')
    slow = NodeVerdict('n3', 'compute', Verdict.SLOW, worst=FigureVerdict(
        sample, Verdict.SLOW, percent=-21.0, why='Triad 21 % below the median of its peers'))
    sid = 'a1b2c3d4e5f60718'
    assert send.after_screening('emu', [slow], sid, when=NOW) == 0
    # the same screening judged again (screen --from-report): nothing new
    assert send.after_screening('emu', [slow], sid, when=NOW + 3600) == 0
    [(_, body)] = receiver.bodies
    assert f'id: {finding_of(slow, "emu", sid)}' in body['text']
    assert body['text'].splitlines()[:5] == [
        'clusterproof: OUTLIER on emu:compute: stream node n3 -21.0% since 2026-11-23 '
        '(screening a1b2c3d4)',
        'what: outlier; Triad 21 % below the median of its peers',
        'where: system emu, partition compute, stream, node n3',
        'how big: -21.0%',
        'suspected cause: not known (no recorded provenance changed at it)']
    err = capsys.readouterr()
    assert 'notify: webhook: sent' in err.err and not err.out     # screen's stdout may be JSON
    # a system without settings: nothing sent, said, exit 0
    assert send.after_screening('pixstor', [slow], sid, when=NOW) == 0
    assert 'no notification settings for system pixstor' in capsys.readouterr().err


def test_alertmanager_gets_one_alert_per_item_or_one_summary(tmp_path):
    from clusterproof.notify import channels
    cfg = write_config(tmp_path / 'local.yaml', '''
page: https://hpc.example.org/p.html
summarise_above: 2
channels: {alertmanager: {url: "http://127.0.0.1:9", resolve_after_hours: 12}}
''')
    few = [regression(1), regression(2)]
    alerts = channels.alerts(cfg, message.render(few, cfg), NOW)
    assert [a['labels']['id'] for a in alerts] == [i.id for i in items.rank(few)]
    a = alerts[0]
    assert a['labels'] == {'alertname': 'ClusterproofFinding', 'system': 'pixstor',
                           'partition': 'compute', 'test': 'IorSharedFile %num_threads=1',
                           'figure': 'write_bw', 'severity': 'critical', 'kind': 'regression',
                           'id': regression(1).id}
    assert a['startsAt'] == '2026-11-22T02:13:20Z' and a['endsAt'] == '2026-11-23T14:13:20Z'
    assert a['generatorURL'] == a['annotations']['link'] == 'https://hpc.example.org/p.html'
    [summary] = channels.alerts(cfg, message.render(few + [regression(3)], cfg), NOW)
    assert summary['labels']['alertname'] == 'ClusterproofFindings'
    assert summary['labels']['kind'] == 'summary' and summary['labels']['severity'] == 'critical'
    assert summary['annotations']['summary'] == ('clusterproof: 3 new findings on pixstor '
                                                 '(3 regressions)')


def test_changes_of_smoke_figures_only_after_a_smoke_run():
    base = {'system': 'local', 'partition': 'default', 'test': 'Stream +gnu',
            'figure': 'Triad', 'session': 's1', 'at': '2026-11-22T00:00:00+00:00',
            'change': -0.08, 'uncertainty': 0.01, 'confidence': 0.99, 'direction': 'worse',
            'summary': 'Stream Triad -8.0%', 'attribution': ['binary_sha256: a -> b'],
            'withdrawn': False}
    smoke = dict(base, flags=['smoke'], session='s2')
    real = dict(base, flags=[])
    assert [i.since for i in items.of_changes([smoke, real])] == ['s1']
    assert [i.since for i in items.of_changes([smoke, real], smoke=True)] == ['s2', 's1']
    assert items.of_changes([real], min_change=0.1) == []
    assert items.of_changes([dict(real, withdrawn=True)]) == []
    [c] = items.of_changes([real])
    assert c.cause == 'binary_sha256: a -> b' and c.size == -0.08 and c.kind == 'change'
