"""`clusterproof changes` on real series: sessions of the suite's checks
recorded on this machine by scripts/record-series, with real slowdowns
injected at known sessions (tests/data/history-real/README.md says how).
Asserts only what the recorded data robustly supports."""

import json
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parents[1] / 'data' / 'history-real'
CSV = DATA / 'local-smoke.csv'


@pytest.fixture(scope='module')
def labels():
    return json.loads((DATA / 'labels.json').read_text())


@pytest.fixture(scope='module')
def found():
    """Every change of the recorded series, as `clusterproof changes --format
    json` lists it (no figure left out as too noisy)."""
    out = subprocess.run([str(REPO / '.venv' / 'bin' / 'clusterproof'), 'changes', str(CSV),
                          '--format', 'json', '--max-detectable', '100000'],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout)


def _injection(labels, kind):
    return next(i for i in labels['injections'] if i['kind'] == kind)


def _index(labels, session):
    return next(s['index'] for s in labels['sessions'] if s['session'] == session)


def test_the_labels_match_the_data(labels):
    header = CSV.read_text().splitlines()[0].split(',')
    assert header[:7] == ['timestamp', 'system', 'partition', 'test', 'figure', 'value',
                          'unit']
    sessions = {line.split(',')[7] for line in CSV.read_text().splitlines()[1:]}
    assert sessions == {s['session'] for s in labels['sessions']}
    assert [s['index'] for s in labels['sessions']] == list(range(len(labels['sessions'])))


def test_the_competing_io_load_is_found_where_it_started(labels, found):
    """stress-ng --hdd 1 in the scratch directory: fio's random read and
    write bandwidth fell by about half from the first session under load."""
    io = _injection(labels, 'io-load')
    for section, slack in (('randread_8files', 0), ('randwrite_8files', 1)):
        bw = [f for f in found if f['test'] == f'StorageFioBaseline %section={section} +gnu'
              and f['figure'] == 'bw' and f['direction'] == 'worse'
              and io['first'] <= _index(labels, f['session']) <= io['first'] + slack]
        assert len(bw) == 1, (section, bw)
        assert bw[0]['change'] < -0.3


def test_no_change_where_nothing_moved(labels, found):
    """STREAM with one thread per L3 domain (one thread here) is moved by
    none of the injections (pinning leaves it its core; the CPU quota and
    the loads leave its best-of-N time alone): no change in any session.
    And no bandwidth, IOPS or throughput figure changes in the quiet
    sessions before the first injection or between the CPU quota and the
    I/O load (the machine's other work came back from session 42)."""
    assert not [f for f in found if f['test'].startswith('Stream %placement=l3')]
    quota, io = _injection(labels, 'cpu-quota'), _injection(labels, 'io-load')
    quiet = set(range(0, labels['injections'][0]['first'])) | set(
        range(quota['last'] + 1 + 3, io['first']))
    moved = [(f['test'], f['figure'], _index(labels, f['session'])) for f in found
             if f['figure'] in ('bw', 'iops') or f['figure'].endswith(('_gbs', 'throughput'))]
    assert not [m for m in moved if m[2] in quiet], moved
