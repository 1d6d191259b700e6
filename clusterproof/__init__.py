"""clusterproof: HPC benchmark and acceptance toolkit.

The logic that is not ReFrame's job (placement, sizing, parsing, references,
results, reports, the local cluster) lives here as plain Python; the ReFrame
checks in ``reframe_checks/`` stay thin and call it.
"""

__version__ = '0.1.0'


class ClusterproofError(Exception):
    """An error with a message meant for the user: it names what was wrong
    and where (file, key, node, value), and what to do next."""
