"""What a check author imports from clusterproof, in one import: the base
class and its mixins, the figure decorator with its direction, the mode's
values, the pinned Spack spec and the binary it names, the partition's
declared hardware, the parse error, and the ``clusterproof`` command as a
job script runs it.

    from clusterproof.checklib.api import (ClusterproofCheck, by_mode,
                                           performance_figure, pinned_spec)

A check imports besides only its own method (``clusterproof.methods.<name>``)
and parser (``clusterproof.parsers.<name>``). The names live where their
other readers find them; this module only gathers them (it imports ReFrame:
only check files import it)."""

from clusterproof import command
from clusterproof.checklib.base import (ClusterproofCheck, ConfigurationError, MpiRanks,
                                        OneRankPerCore, RoundRobinRanks, ThreadPlacement)
from clusterproof.checklib.storage import METADATA_THREADS, StorageScale
from clusterproof.checklib.testdirs import TestDirectories
from clusterproof.modes import by_mode
from clusterproof.parsers import ParseError
from clusterproof.paths import REPO
from clusterproof.reframe_io.figures import performance_figure, performance_figure_function
from clusterproof.site import binaries
from clusterproof.site.hardware import is_emulated, node_cores, partition_node_count
from clusterproof.site.spackenv import pinned_spec

__all__ = [
    # the base class and the mixins
    'ClusterproofCheck', 'MpiRanks', 'OneRankPerCore', 'RoundRobinRanks', 'ThreadPlacement',
    'StorageScale', 'TestDirectories', 'METADATA_THREADS',
    # figures, modes, binaries
    'performance_figure', 'performance_figure_function', 'by_mode', 'pinned_spec', 'binaries',
    # the partition's declared hardware, the repository, errors
    'is_emulated', 'node_cores', 'partition_node_count', 'REPO', 'ConfigurationError',
    'ParseError',
    # the clusterproof command, as a job script runs it
    'command',
]
