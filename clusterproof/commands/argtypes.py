"""Argument types of the command line that refuse impossible values.

Each factory returns a function for ``argparse``'s ``type=``: it turns the
text into a number and refuses, before the command runs, a value outside
the bounds the option allows. argparse prints the refusal with the
option's name (``argument --tolerance: -1 is below 0 ...``) and exits with
status 2.
"""

import argparse
import math
import os


def integer(low=None, high=None, what='a whole number'):
    """An ``int`` type accepting ``low <= value <= high`` (None: unbounded)."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f'{text!r}: want {what}{_range(low, high)}') \
                from None
        return _bounded(text, value, low, high, what)
    parse.__name__ = what
    return parse


def number(low=None, high=None, what='a number', above=None):
    """A ``float`` type accepting finite ``low <= value <= high`` and, with
    ``above``, only values strictly greater than it."""
    def parse(text):
        span = _range(low, high) if above is None else \
            f' above {above:g}' + (f' and at most {_show(high)}' if high is not None else '')
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f'{text!r}: want {what}{span}') from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f'{text}: want a finite {what.removeprefix("a ")}'
                                             f'{span}')
        if above is not None and not value > above:
            raise argparse.ArgumentTypeError(f'{text}: want {what}{span}')
        return _bounded(text, value, low, high, what)
    parse.__name__ = what
    return parse


def _show(value):
    return f'{value:,}' if isinstance(value, int) else f'{value:g}'


def _range(low, high):
    if low is not None and high is not None:
        return f' from {_show(low)} to {_show(high)}'
    if low is not None:
        return f' of {_show(low)} or more'
    return f' of {_show(high)} or less' if high is not None else ''


def _bounded(text, value, low, high, what):
    if (low is not None and value < low) or (high is not None and value > high):
        raise argparse.ArgumentTypeError(f'{text}: want {what}{_range(low, high)}')
    return value


#: the largest count of sessions, nights, repetitions, jobs or cores an
#: option takes (a typo such as 99999999999999999999 overflowed a C long)
MAX_COUNT = 1_000_000
#: a count of things: 0 or more
count = integer(0, MAX_COUNT, what='a whole number')
#: a count of at least one
positive = integer(1, MAX_COUNT, what='a whole number')
#: a process id (Linux's largest pid_max is 2^22)
pid = integer(1, 2 ** 22, what='a process id')
#: the largest number of bytes a size may be: the largest file offset
#: (``off_t``, 8 EiB), which IOR's and IOzone's sizes are
MAX_BYTES = 2 ** 63 - 1
#: a number of bytes (the free space of the file system bounds it further)
nbytes = integer(1, MAX_BYTES, what='a number of bytes')
#: the largest percentage an option takes: a tolerance or change of ten
#: times the figure (1e308 was taken)
MAX_PERCENT = 1000
#: a percentage that cannot be negative (a tolerance, a drop)
percent = number(0, MAX_PERCENT, what='a percentage')
#: a minimum detectable change above which a figure is too noisy to judge:
#: larger than a tolerance may be (a test that never wants a figure called
#: too noisy gives 100000); above a million percent it is no setting but a typo
MAX_DETECTABLE_PERCENT = 1_000_000


def size(text):
    """A size as IOR and IOzone read it (``16m``, ``512g``): refused unless
    :func:`clusterproof.methods.sizing.parse_size` reads it as at most
    :data:`MAX_BYTES`; kept as typed."""
    from clusterproof import ClusterproofError
    from clusterproof.methods.sizing import parse_size
    try:
        nbytes = parse_size(text, what='')
    except ClusterproofError as err:
        raise argparse.ArgumentTypeError(str(err).strip()) from None
    if nbytes > MAX_BYTES:
        raise argparse.ArgumentTypeError(f'{text}: want a size of at most 8 EiB ({MAX_BYTES:,} '
                                         f'bytes, the largest file offset)')
    return text


def output_file(text):
    """A file to write: an existing directory is refused (name the file)."""
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f'{text} is a directory: name the file to write '
                                         f'(e.g. {os.path.join(text, "report.html")})')
    return text


def threads(text):
    """A thread count: 1 to :data:`clusterproof.methods.placement.MAX_THREADS`."""
    from clusterproof.methods.placement import MAX_THREADS
    return integer(1, MAX_THREADS, 'a thread count')(text)


def regex(text):
    """A regular expression (Python's ``re``), kept as typed."""
    import re
    try:
        re.compile(text)
    except re.error as err:
        raise argparse.ArgumentTypeError(f'{text!r}: not a regular expression ({err})') from None
    return text


def known_system(name):
    """A system name the site configuration declares (a file in
    ``site_config/systems/`` or ``CLUSTERPROOF_SYSTEMS``)."""
    from clusterproof import ClusterproofError
    from clusterproof.paths import system_file, system_files
    try:
        have = system_files()
    except ClusterproofError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    if not system_file(name).is_file():
        names = ', '.join(p.stem for p in have)
        raise argparse.ArgumentTypeError(f'no system {name!r} in the site configuration '
                                         f'(have: {names})')
    return name


#: Slurm's bounds on what a local cluster's node declares: CPUs are 16-bit
MAX_NODE_CPUS = 65_535
#: memory of a node, MiB (1 EiB: far beyond any node)
MAX_NODE_MIB = 2 ** 40
#: Slurm's largest MaxArraySize
MAX_ARRAY_SIZE = 4_000_001


def instance(text):
    """A local cluster's instance number: one of
    :data:`clusterproof.cluster.network.INSTANCES`."""
    from clusterproof.cluster.network import INSTANCES
    return integer(INSTANCES[0], INSTANCES[-1], 'an instance number')(text)


def cluster_nodes(text):
    """A local cluster's node count: 1 to
    :data:`clusterproof.cluster.network.MAX_NODES`."""
    from clusterproof.cluster.network import MAX_NODES
    return integer(1, MAX_NODES, 'a node count')(text)


#: CPUs Slurm gives a node
node_cpus = integer(1, MAX_NODE_CPUS, 'a number of CPUs')
#: memory Slurm gives a node, MiB
node_mib = integer(1, MAX_NODE_MIB, 'a number of MiB')
#: a site's MaxSubmitJobs (0: Slurm's default)
submit_jobs = integer(0, MAX_COUNT, 'a number of jobs')
#: a site's MaxArraySize (0: Slurm's default)
array_size = integer(0, MAX_ARRAY_SIZE, 'an array size')
