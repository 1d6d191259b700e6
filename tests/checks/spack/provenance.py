"""Checks for the test suite: one records a binary from the Spack view (its
concretized spec and the spack.lock hash), one records none and must fail."""

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_after, sanity_function

from clusterproof.checklib.base import ClusterproofCheck


@rfm.simple_test
class SpackBinaryCheck(rfm.RunOnlyRegressionTest, ClusterproofCheck):
    descr = 'Runs mmap_sweep from the Spack view and records its provenance'
    valid_systems = ['local']
    valid_prog_environs = ['gnu']
    time_limit = '2m'

    @run_after('setup')
    def find_binary(self):
        self.executable = self.use_binary('mmap_sweep', 'mmap-sweep@develop')

    @sanity_function
    def ran(self):
        return sn.assert_found(r'version', self.stdout)


@rfm.simple_test
class NoProvenanceCheck(rfm.RunOnlyRegressionTest, ClusterproofCheck):
    descr = 'Runs a program without recording it: not a result'
    valid_systems = ['local']
    valid_prog_environs = ['gnu']
    time_limit = '2m'
    executable = 'true'

    @sanity_function
    def ran(self):
        return sn.assert_true(True)
