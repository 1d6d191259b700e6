"""The smallest change that matters, per check or figure, as a site sets it
in ``site_config/changes.yaml`` (``CLUSTERPROOF_CHANGES`` names another
file): a change, transient or drift smaller than it is never listed by
``clusterproof changes`` nor on the morning page.

The file holds one mapping, ``smallest_change``, of percentages::

    smallest_change:
      default: 1            # every figure
      Stream: 2             # every figure of the check Stream
      Stream triad: 0.5     # one figure of it

A figure takes the first of ``<check> <figure>``, ``<check>`` and
``default`` that the file names (the check is the first word of the test's
name, its class), else its reference's tolerance where it has one (the
smaller of its bounds: a throughput blessed at -5 % takes 5 %; the
reference of ``site_config/references/<system>.yaml`` that ``compare``
judges it by, found from the test's name, ``Check %param=value +environ``),
else 0: every change the figure's noise allows.
``clusterproof changes --min-change PERCENT`` sets it for every figure
instead. A missing file is no setting; a file that is not this mapping, or
a value that is not a number of 0 or more, is refused naming the file, the
key and the value.
"""

import math
import os
from pathlib import Path

import yaml

from clusterproof import ClusterproofError
from clusterproof.paths import SITE_CONFIG
from clusterproof.references import lookup

KEY = 'smallest_change'


def path_of():
    return Path(os.environ.get('CLUSTERPROOF_CHANGES', SITE_CONFIG / 'changes.yaml'))


def load(path=None):
    """``{key: fraction}`` of the file (``{}`` when there is none)."""
    path = Path(path) if path is not None else path_of()
    if not path.is_file():
        return {}
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise ClusterproofError(f'{path}: not YAML ({e}); fix the file') from None
    if data is None:
        return {}
    if not isinstance(data, dict) or set(data) != {KEY} or not isinstance(data[KEY], dict):
        raise ClusterproofError(f'{path}: expected one mapping {KEY}: {{check or "check '
                                f'figure" or default: percent}}; found {data!r}')
    out = {}
    for key, value in data[KEY].items():
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or not math.isfinite(value) or value < 0):
            raise ClusterproofError(f'{path}: {KEY}: {key}: {value!r} is not a percentage of '
                                    f'0 or more (1 for one percent)')
        out[str(key)] = value / 100
    return out


def for_figure(table, test, figure, reference=None):
    """The smallest change that matters (a fraction) of ``figure`` of
    ``test`` under ``table`` (:func:`load`), else from ``reference`` (a
    :class:`clusterproof.references.entries.Reference`), else 0."""
    check = test.split()[0] if test.strip() else test
    for key in (f'{check} {figure}', check, 'default'):
        if key in table:
            return table[key]
    if reference is not None and reference.xfail is None:
        bounds = [abs(b) for b in (reference.lower, reference.upper) if b is not None]
        if bounds:
            return min(bounds)
    return 0.0


class _Case:
    """What ``references.lookup.lookup`` asks of a finding: check, system,
    partition, environment and parameters, read from the test's name as
    ReFrame prints it (``Check %param=value +environ``)."""

    def __init__(self, f):
        words = f['test'].split()
        self.check = words[0] if words else ''
        self.system, self.partition, self.figure = f['system'], f['partition'], f['figure']
        self.params = dict(w[1:].split('=', 1) for w in words[1:]
                           if w.startswith('%') and '=' in w)
        environ = [w[1:] for w in words[1:] if w.startswith('+')]
        self.environ = environ[0] if environ else None
        self.case = {}
        self.test = f['test']


def reference_of(f, refs_by_system):
    """The reference of finding ``f``'s figure, or None (no file, no entry,
    or an entry indexed by an attribute its test's name does not carry)."""
    refs = lookup.references_for(refs_by_system, f['system'],
                                 emulated='emulated' in f.get('flags', ()))
    if not refs:
        return None
    try:
        return lookup.lookup(refs, _Case(f))
    except ClusterproofError:
        return None


def keep(found, table, references=True):
    """The findings of ``found`` (dicts of ``findings.detect``) at least as
    large as their figure's smallest change that matters (``references``:
    the reference's tolerance is the default)."""
    refs_by_system = {}
    out = []
    for f in found:
        ref = reference_of(f, refs_by_system) if references else None
        if abs(f['change']) >= for_figure(table, f['test'], f['figure'], ref):
            out.append(f)
    return out
