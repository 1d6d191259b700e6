"""OSU micro-benchmarks 7.5 between two nodes.

``OsuBandwidth`` runs ``osu_bw`` (uni-directional) and ``osu_bibw``
(bi-directional) with one rank on each of two nodes: bandwidth at the
largest message size (MB/s = 10^6 bytes/s), message rate at the smallest
size, and bandwidth as a fraction of the declared link rate
(``extras['network']['link_gbps']``; twice that for bi-directional).

``OsuLatency`` runs ``osu_latency`` with one rank on each of two nodes: the
latency of the smallest message (us).

``OsuMessageRate`` runs ``osu_mbw_mr`` with all cores of one socket on each of
two nodes (rank i talks to rank i + n/2 on the other node): the all-core
message rate at the smallest size, which the BIOS "preferred I/O device"
setting changes on AMD Rome.

Every check can be pinned to two named nodes with ``-S node_pair=n1+n2``
(or one case per pair with ``-P node_pair=n1+n2,n2+n3``, as ``clusterproof
screen`` runs them): the job asks Slurm for exactly those nodes
(``--nodelist``), alone on them (``--exclusive``, so that two pairs sharing a
node are not measured at once).

The binaries come from the Spack view (``libexec/osu-micro-benchmarks/mpi/pt2pt``)
or PATH; when missing the checks are skipped with the build command.
"""


import reframe as rfm
from reframe.core.builtins import (parameter, run_after, run_before,
                                   sanity_function, variable)
from reframe.core.exceptions import SanityError

from clusterproof.methods import mpi
from clusterproof.checklib.api import (ClusterproofCheck, MpiRanks, by_mode, is_emulated,
                                       partition_node_count, performance_figure, pinned_spec)
from clusterproof.parsers import osu as osu_parser
from clusterproof.screen.pairs import parse_pair

OSU_SPEC = pinned_spec('osu-micro-benchmarks')
#: directions a benchmark moves data in at once (the line rate counts per direction)
DIRECTIONS = {'osu_bw': 1, 'osu_bibw': 2}
OSU_VIEW_DIRS = ('libexec/osu-micro-benchmarks/mpi/pt2pt/standard',
                 'libexec/osu-micro-benchmarks/mpi/pt2pt', 'bin')


class _OsuTwoNodes(rfm.RunOnlyRegressionTest, ClusterproofCheck, MpiRanks):
    """One OSU benchmark on two nodes (base of both checks)."""

    valid_systems = ['*']
    valid_prog_environs = ['*']
    tags = {'network', 'osu'}
    time_limit = '10m'
    num_nodes = 2

    #: OSU options: fewer iterations in smoke mode (seconds, not a measurement)
    osu_options = variable(list, value=by_mode({'smoke': ['-i', '20', '-x', '2', '-m', '1:1048576'],
                                                'nightly': [], 'acceptance': []}))

    #: two node names joined by '+' (n1+n2): run on exactly these two nodes
    node_pair = variable(str, value='')

    @run_after('setup')
    def pin_to_the_pair(self):
        if self.node_pair:
            with self.configuration():
                nodes = parse_pair(self.node_pair)
            self.job.options += [f'--nodelist={",".join(nodes)}', '--exclusive']

    def find_benchmark(self, name):
        part = self.current_partition
        self.cp_emulated = is_emulated(part)
        with self.configuration():
            available = partition_node_count(part)
        self.skip_if(available < 2, f'{name} measures the network between two nodes; '
                                    f'{part.fullname} has {available}')
        self.env_vars.update(mpi.emulated_mpi_env(self.cp_emulated))
        self.executable = self.use_binary(name, OSU_SPEC, version_argv=['true'],
                                          view_subdirs=OSU_VIEW_DIRS)
        self.executable_opts = list(self.osu_options)

    def result(self):
        return self.parsed_output(osu_parser.parse)

    @sanity_function
    def all_sizes_reported(self):
        out = self.result()
        self.binary_version = out['version']
        if max(out['rows']) < 2 ** 20:
            raise SanityError(f'{self.executable}: largest message size {max(out["rows"])} B; '
                              f'the run stopped before 1 MiB')
        return True

    def link_mbs(self, directions):
        gbps = self.declared('network', 'link_gbps', default=None)
        return None if gbps is None else directions * gbps * 1e9 / 8 / 1e6


class _OsuBandwidthFigures(_OsuTwoNodes):
    """The figures of the bandwidth benchmarks: the largest message's
    bandwidth, the smallest's rate."""

    @performance_figure('MB/s', lower_is_better=False)
    def bandwidth(self):
        return osu_parser.bandwidth_at_largest(self.result())[1]

    @performance_figure('msg/s', lower_is_better=False)
    def message_rate(self):
        return osu_parser.message_rate_at_smallest(self.result())[1]


@rfm.simple_test
class OsuLatency(_OsuTwoNodes):
    descr = 'OSU point-to-point latency between two nodes, one core each'

    num_tasks = 2
    num_tasks_per_node = 1

    @run_after('setup')
    def set_benchmark(self):
        self.find_benchmark('osu_latency')

    @performance_figure('us', lower_is_better=True)
    def latency(self):
        return osu_parser.latency_at_smallest(self.result())[1]


@rfm.simple_test
class OsuBandwidth(_OsuBandwidthFigures):
    descr = 'OSU uni- and bi-directional bandwidth between two nodes, one core each'

    #: uni-directional (osu_bw) or bi-directional (osu_bibw)
    benchmark = parameter(['osu_bw', 'osu_bibw'])

    num_tasks = 2
    num_tasks_per_node = 1

    @run_after('setup')
    def set_benchmark(self):
        self.find_benchmark(self.benchmark)

    @run_before('performance')
    def drop_link_fraction_without_link_rate(self):
        if self.link_mbs(1) is None:
            self.perf_variables.pop('link_fraction', None)

    @performance_figure('%', lower_is_better=False)
    def link_fraction(self):
        return (100.0 * osu_parser.bandwidth_at_largest(self.result())[1]
                / self.link_mbs(DIRECTIONS[self.benchmark]))


@rfm.simple_test
class OsuMessageRate(_OsuBandwidthFigures):
    descr = ('OSU multi-pair bandwidth and message rate, all cores of one socket on each of '
             'two nodes')

    @run_after('setup')
    def set_pairs(self):
        self.find_benchmark('osu_mbw_mr')
        hw = self.declared('hardware')
        per_node = 1 if self.cp_emulated else int(hw['cores_per_socket'])
        self.num_tasks_per_node = per_node
        self.num_tasks = 2 * per_node
