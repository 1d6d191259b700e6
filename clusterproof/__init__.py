"""clusterproof: HPC benchmark and acceptance toolkit.

The logic that is not ReFrame's job (placement, sizing, parsing, references,
results, reports, the local cluster) lives here as plain Python; the ReFrame
checks in ``reframe_checks/`` stay thin and call it.
"""

__version__ = '0.1.0'


def command(*args):
    """The argv that runs the ``clusterproof`` command with ``args`` in
    this interpreter (``python -m clusterproof ARGS``): what job scripts
    and the nightly run start, whether ``clusterproof`` is on PATH or not."""
    import sys
    return [sys.executable, '-m', 'clusterproof', *map(str, args)]


class ClusterproofError(Exception):
    """An error with a message meant for the user: it names what was wrong
    and where (file, key, node, value), and what to do next."""
