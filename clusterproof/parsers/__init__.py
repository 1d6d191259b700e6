"""Parsers of program outputs (benchmarks, and the tools that describe a
node: lscpu, ipmctl, ndctl, /proc/mounts): plain functions from the text a
program printed to plain data, with errors that name the file and what was
missing. Each module has ``parse(text, source)``; each is tested on output
recorded from a real run (tests/data/<program>/)."""

from clusterproof import ClusterproofError


class ParseError(ClusterproofError, ValueError):
    """A program's output lacks what its parser needs; the message names the
    file (or source) and the missing line. (A ValueError too: the text is
    not a value the parser can read.)"""
