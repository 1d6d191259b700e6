"""Run modes: how big and how long.

``smoke``       minutes on a laptop: small sizes, direct I/O, results marked smoke
``nightly``     a short subset of the methodology, compared with references
``acceptance``  the full published methodology

The mode is read from ``CLUSTERPROOF_MODE`` (default ``smoke``) when the checks
are loaded, because it decides their parameter lists (thread counts, sizes).
"""

import os

from clusterproof import ClusterproofError

MODES = ('smoke', 'nightly', 'acceptance')
DEFAULT_MODE = 'smoke'
ENV_VAR = 'CLUSTERPROOF_MODE'


def current_mode(environ=None):
    environ = os.environ if environ is None else environ
    mode = environ.get(ENV_VAR, DEFAULT_MODE) or DEFAULT_MODE
    if mode not in MODES:
        raise ClusterproofError(
            f'{ENV_VAR}={mode!r} is not a mode; choose one of {", ".join(MODES)}')
    return mode


def by_mode(table, mode=None):
    """Pick the value for the current mode from ``{'smoke': .., 'nightly': ..,
    'acceptance': ..}``; a missing mode is an error naming the table keys."""
    mode = mode or current_mode()
    try:
        return table[mode]
    except KeyError:
        raise ClusterproofError(
            f'no value for mode {mode!r} (have: {", ".join(table)})') from None
