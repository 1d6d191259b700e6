"""Real servers that tests start on loopback (VictoriaMetrics, Alertmanager,
a pushgateway, vmalert, a webhook receiver, an HTTP server that echoes what it
was sent, to find a secret it might make a program quote): a free port, a GET
that says when nothing answers, a VictoriaMetrics query that sees what was just
sent, and one way to start a server, wait for the event that says it is ready,
and stop it (terminate, then kill) whatever the test did."""

import base64
import contextlib
import http.server
import json
import shutil
import socket
import subprocess
import threading
import urllib.parse
import urllib.request

import pytest

from conftest import WAIT_S, wait_for


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def get(url, **params):
    """Body of a GET on ``url``, or None when the server does not answer."""
    try:
        with urllib.request.urlopen(f'{url}?{urllib.parse.urlencode(params)}', timeout=10) as resp:
            return resp.read().decode()
    except OSError:
        return None


def vm_query(url, query, **params):
    """The result list of the instant query ``query`` on the VictoriaMetrics
    at ``url`` ([] when it does not answer). It first asks the server to
    make what it was sent searchable (``/internal/force_flush``, which its
    documentation gives for tests): otherwise it buffers new samples in
    memory for some 10 s before a query sees them."""
    get(f'{url}/internal/force_flush')
    body = get(f'{url}/api/v1/query', query=query, **params)
    return json.loads(body)['data']['result'] if body else []


def stop(proc):
    """Stop a server a test started (terminate, then kill)."""
    proc.terminate()
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def serving(argv, what, ready, timeout=WAIT_S):
    """Start the server ``argv`` (its output a pipe, quiet: it never fills),
    return once ``ready()`` (the event ``what`` names; a server that ends
    first fails the test with its output), yield its Popen, stop it at the
    end."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for(what, ready, timeout=timeout, proc=proc)
        yield proc
    finally:
        stop(proc)


@pytest.fixture
def victoria_metrics(tmp_path):
    """A VictoriaMetrics server on 127.0.0.1, storage under ``tmp_path``;
    yields its base URL and stops it at the end."""
    binary = shutil.which('victoria-metrics')
    if not binary:
        pytest.skip('needs victoria-metrics (Debian package victoria-metrics; '
                    'make setup installs it as root)')
    url = f'http://127.0.0.1:{free_port()}'
    with serving([binary, f'-httpListenAddr={url.removeprefix("http://")}',
                  f'-storageDataPath={tmp_path / "vm-data"}', '-memory.allowedBytes=64MB',
                  '-retentionPeriod=100y', '-loggerLevel=WARN',    # little output
                  # a figure is visible to queries at once (default: 30 s after it arrived)
                  '-search.latencyOffset=0s'],
                 'VictoriaMetrics answers /health', lambda: get(f'{url}/health') == 'OK'):
        yield url


class Receiver:
    """A real HTTP server on 127.0.0.1 that keeps the JSON bodies POSTed to
    it (a webhook receiver), or answers them with ``status`` and keeps nothing."""

    def __init__(self, status=200):
        self.bodies = []
        self.status = status
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get('Content-Length', 0))
                body = json.loads(self.rfile.read(n))
                if owner.status == 200:
                    owner.bodies.append((self.path, body))
                self.send_response(owner.status)
                self.send_header('Content-Length', '0')
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f'http://127.0.0.1:{self.port}'
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Echo:
    """A real HTTP server on 127.0.0.1 that answers every POST with
    ``status`` and a body quoting the path and the Authorization header it
    was sent (as some chat servers and proxies do), the path also in the
    reason phrase; it keeps what it was sent."""

    def __init__(self, status=404):
        self.status = status
        self.got = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get('Content-Length', 0)))
                auth = self.headers.get('Authorization', '')
                owner.got.append((self.path, auth))
                body = (f'<pre>Cannot POST {self.path}</pre> '
                        f'{urllib.parse.unquote(self.path)} auth={auth}').encode()
                self.send_response(owner.status, f'No route {self.path}')
                self.send_header('Content-Length', str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.netloc = f'127.0.0.1:{self.server.server_address[1]}'
        threading.Thread(target=self.server.serve_forever, kwargs={'poll_interval': 0.05},
                         daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def leaks(token, user, *texts):
    """The forms of ``token`` found in ``texts``: as it is (in any case),
    percent-encoded, or inside the HTTP Basic credentials of ``user``."""
    forms = {token, urllib.parse.quote(token), urllib.parse.quote(f'/{token}', safe=''),
             base64.b64encode(f'{user}:{token}'.encode()).decode()}
    return sorted(f for f in forms for t in texts if f.lower() in t.lower())
