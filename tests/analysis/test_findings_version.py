"""The detector's version (``clusterproof.analysis.findings.VERSION``) follows
its findings: kept findings are current only while the detector that
derived them would find the same, so a change to the detector, the
attribution or a figure's findings that changes what they find must raise
VERSION. The findings of a fixed recorded history are digested here and
held against ``findings.GOLDEN``, one digest per version."""

import hashlib
import json
from pathlib import Path

import pytest

from clusterproof.analysis import findings
from clusterproof.analysis.detector import figure, model
from clusterproof.store import sources

REPO = Path(__file__).resolve().parents[2]
#: 53 real sessions of the suite's own checks with injected slowdowns (its README)
HISTORY = Path('tests/data/history-real/local-smoke.csv')


def _digest():
    """sha256 of what :func:`findings.judge_figure` finds for each figure of
    :data:`HISTORY`: status, noise and the changes (with their summaries and
    attributions), floats to 6 significant digits."""
    def plain(v):
        if isinstance(v, float):
            return float(f'{v:.6g}')
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        return v
    out = []
    for h in sources.load([HISTORY]):
        status, what, found = findings.judge_figure(h, model.Settings())
        noise = what.__dict__ if isinstance(what, figure.FigureNoise) else what
        out.append(plain([list(h.key), status, noise, found]))
    return hashlib.sha256(json.dumps(out, sort_keys=True).encode()).hexdigest()[:16]


def test_the_findings_change_only_with_the_detectors_version(monkeypatch):
    monkeypatch.chdir(REPO)         # the findings name the file: one path everywhere
    digest = _digest()
    version, golden = findings.VERSION, findings.GOLDEN
    assert max(golden) == version, (
        f'findings.VERSION is {version}, findings.GOLDEN holds versions {sorted(golden)}: '
        f'add GOLDEN[{version}] = {digest!r} in clusterproof/analysis/findings.py')
    if golden[version] != digest:
        pytest.fail(
            f'the findings of {HISTORY} changed (digest {digest}, findings.GOLDEN[{version}] '
            f'is {golden[version]}): kept findings derived before would be read as current. '
            f'In clusterproof/analysis/findings.py raise VERSION to {version + 1} and add '
            f'GOLDEN[{version + 1}] = {digest!r} (keep the older entries)', pytrace=False)
