"""The screening rule's settings, as a site sets them in
``site_config/screening.yaml`` (``CLUSTERPROOF_SCREENING`` names another
file): when a node is worse than its peers by enough to be named.

A node is named slow on a figure when it is worse than its peers' median
by more than ``noise_units`` noise units **and** by more than the
smallest slowdown that matters for that figure. A noise unit is the
larger of the peers' robust spread (scaled MAD) and the check's
run-to-run repeatability where the site knows it (the peers' spread
already holds one run's noise; the repeatability is a floor, so that a
group of peers that happens to agree does not make every small step many
units). The file::

    noise_units: 3.5            # k (default DEFAULT_NOISE_UNITS)
    smallest_slowdown:          # percent, per check or figure
      default: 1.5              # every figure (default DEFAULT_SMALLEST_PCT)
      fio: 5                    # every figure of the check fio
      stream triad: 1           # one figure of it
    repeatability:              # percent, a run's noise on one node
      stream: 0.15
      hpl: 0.3

Keys are screening check names (``stream``, ``hpl``, ``osu``, ``fio``,
``inventory``), alone or followed by a figure. A figure takes the first of
``<check> <figure>``, ``<check>`` and ``default`` the mapping names. A
missing file is the defaults; a file that is not this mapping, an unknown
key, or a value that is not a number of 0 or more (``noise_units``: more
than 0) is refused naming the file, the key and the value.
"""

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from clusterproof import ClusterproofError
from clusterproof.paths import SITE_CONFIG

#: k: how many noise units beyond the peers' median a node must be. 3.5 keeps
#: one figure's false positives near 2 in 10,000 healthy nodes of normal
#: noise (one-sided), with room for the several correlated figures of a
#: node (its components); measured: 0.1 to 0.5 false positives per 1,000
#: healthy nodes, where 3.25 gives about 1 and 3 about 2
#: (scripts/measure_screen_judgement.py)
DEFAULT_NOISE_UNITS = 3.5

#: the smallest slowdown that matters (percent), per check or figure; a site
#: sets its own (``smallest_slowdown``). A node 2 % slow costs every tightly
#: coupled job it lands in 2 %, and must be named: its drop is measured
#: with run-to-run noise, so a line at 2 % names only half of such nodes;
#: at 1.5 % a node 2 % slower than its own past is named 92-100 % of the
#: time (scripts/measure_screen_judgement.py, NEW+3). The 10 % of Intel's
#: cluster-checker guidance for STREAM and HPL is a site's choice here, no
#: longer a gate
DEFAULT_SMALLEST_PCT = {'default': 1.5}

#: a node this many noise units short of the line (and past the smallest
#: slowdown) is a suspect: it is run again before it is named or cleared
SUSPECT_MARGIN = 1.0

KEYS = ('noise_units', 'smallest_slowdown', 'repeatability')


@dataclass(frozen=True)
class Rule:
    """The rule's settings: ``noise_units`` (k), ``smallest`` and
    ``repeatability`` (``{key: percent}``, keys as in the file)."""
    noise_units: float = DEFAULT_NOISE_UNITS
    smallest: dict = field(default_factory=lambda: dict(DEFAULT_SMALLEST_PCT))
    repeatability: dict = field(default_factory=dict)
    source: str = 'defaults'
    #: a noise unit is the peers' scaled MAD widened by its own uncertainty
    #: (``screen.stats.widening``); False only to measure the rule before it
    widen: bool = True

    def smallest_pct(self, check, figure):
        """The smallest slowdown that matters (percent) of ``figure`` of ``check``."""
        return _lookup(self.smallest, check, figure, DEFAULT_SMALLEST_PCT['default'])

    def repeatability_pct(self, check, figure):
        """A run's noise on one node (percent) of the figure, or 0 when unknown."""
        return _lookup(self.repeatability, check, figure, 0.0)

    @property
    def suspect_units(self):
        return max(0.0, self.noise_units - SUSPECT_MARGIN)

    def as_dict(self):
        return {'noise_units': self.noise_units, 'smallest_slowdown_pct': dict(self.smallest),
                'repeatability_pct': dict(self.repeatability), 'source': self.source}


def _lookup(table, check, figure, default):
    for key in (f'{check} {figure}', check, 'default'):
        if key in table:
            return table[key]
    return default


def path_of():
    return Path(os.environ.get('CLUSTERPROOF_SCREENING', SITE_CONFIG / 'screening.yaml'))


def _percentages(path, key, table):
    if not isinstance(table, dict):
        raise ClusterproofError(f'{path}: {key}: expected a mapping {{check or "check figure" '
                                f'or default: percent}}; found {table!r}')
    out = {}
    for name, value in table.items():
        if not _number(value) or value < 0:
            raise ClusterproofError(f'{path}: {key}: {name}: {value!r} is not a percentage of '
                                    f'0 or more (2 for two percent)')
        out[str(name)] = float(value)
    return out


def _number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def load(path=None):
    """The :class:`Rule` of the file (the defaults when there is none)."""
    path = Path(path) if path is not None else path_of()
    if not path.is_file():
        return Rule()
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise ClusterproofError(f'{path}: not YAML ({e}); fix the file') from None
    if data is None:
        return Rule(source=str(path))
    if not isinstance(data, dict) or set(data) - set(KEYS):
        unknown = sorted(set(data) - set(KEYS)) if isinstance(data, dict) else data
        raise ClusterproofError(f'{path}: expected a mapping of {", ".join(KEYS)}; found '
                                f'{unknown!r}')
    k = data.get('noise_units', DEFAULT_NOISE_UNITS)
    if not _number(k) or k <= 0:
        raise ClusterproofError(f'{path}: noise_units: {k!r} is not a number above 0 '
                                f'(3.5 for three and a half scaled MADs)')
    smallest = dict(DEFAULT_SMALLEST_PCT)
    smallest.update(_percentages(path, 'smallest_slowdown', data.get('smallest_slowdown', {})))
    return Rule(float(k), smallest,
                _percentages(path, 'repeatability', data.get('repeatability', {})), str(path))
