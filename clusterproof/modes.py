"""Run modes: how big and how long.

``smoke``       minutes on a laptop: small sizes, direct I/O, results marked smoke
``nightly``     a short subset of the methodology, compared with references
``acceptance``  the full published methodology

Choose one with ReFrame's own option, ``reframe -c reframe_checks -r --mode
nightly``: ``site_config/settings.py`` declares the modes from :data:`MODES`
(:func:`reframe_modes`), so ReFrame refuses a name that is none of them.

The mode decides the checks' parameter lists (thread counts, sizes), so it
must be known when ReFrame imports the check files, before it applies any
``-S`` option. :func:`current_mode` is the one place that decides it: the
``--mode`` of the running ``reframe`` command line, else ``CLUSTERPROOF_MODE``
(for tools that start ReFrame without options), else ``smoke``. Both given
and different is an error, so the two can never disagree.
"""

import os

from clusterproof import ClusterproofError
from clusterproof.reframe_io.runner import reframe_mode

MODES = ('smoke', 'nightly', 'acceptance')
DEFAULT_MODE = 'smoke'
ENV_VAR = 'CLUSTERPROOF_MODE'


def reframe_modes():
    """The ``modes`` section of the ReFrame configuration.

    Each mode also sets the checks' ``cp_mode`` variable (``-S``), so the
    expansion ReFrame logs (``-vv``) names the mode it applied.
    """
    return [{'name': mode, 'options': ['-S', f'cp_mode={mode}']} for mode in MODES]


def current_mode(environ=None, argv=None):
    """The mode of this run (see the module documentation)."""
    environ = os.environ if environ is None else environ
    from_env = environ.get(ENV_VAR) or None
    from_reframe = reframe_mode(argv)
    if from_env and from_reframe and from_env != from_reframe:
        raise ClusterproofError(
            f'reframe --mode {from_reframe} and {ENV_VAR}={from_env} disagree; give the mode '
            f'once (reframe --mode {from_reframe}, with {ENV_VAR} unset)')
    mode = from_reframe or from_env or DEFAULT_MODE
    if mode not in MODES:
        where = f'reframe --mode {mode}' if from_reframe else f'{ENV_VAR}={mode}'
        raise ClusterproofError(f'{where!s}: {mode!r} is not a mode; choose one of '
                                f'{", ".join(MODES)}')
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
