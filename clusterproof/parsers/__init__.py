"""Parsers of benchmark outputs: plain functions from the text a program
printed to plain data, with errors that name the file and what was missing.
Each is tested on output recorded from a real run (tests/data/<benchmark>/)."""

from clusterproof import ClusterproofError


class ParseError(ClusterproofError):
    """A benchmark output lacks what its parser needs; the message names the
    file (or source) and the missing line."""
