"""A real, cheap figure for the results round trip: copy /dev/zero to
/dev/null with ``dd`` in ``num_threads`` parallel processes.

It measures the kernel's copy rate through two character devices (memory
work, never a storage figure) in a fraction of a second. ``block_size``
throttles it: ``-S block_size=512`` costs one system call per 512 bytes
instead of per MiB, so the same test becomes a slowed run whose figures a
comparison must flag (the same bytes in 2048 times as many
system calls). References come from ``clusterproof bless`` in
``<references dir>/<system>.yaml`` (``CLUSTERPROOF_REFERENCES``).
"""

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import (parameter, run_after,
                                   run_before, sanity_function, variable)

from clusterproof.references.entries import reference_file
from clusterproof.checklib.base import ClusterproofCheck
from clusterproof.reframe_io.figures import performance_figure


@rfm.simple_test
class DevZeroCopy(rfm.RunOnlyRegressionTest, ClusterproofCheck):
    descr = 'dd /dev/zero -> /dev/null in parallel processes (results round trip)'
    valid_systems = ['*']
    valid_prog_environs = ['*']
    num_threads = parameter([1, 2])

    #: bytes per dd block (``dd bs=``); small blocks slow the copy down
    block_size = variable(str, value='1M', loggable=True)

    #: MiB each process copies
    copy_mib = variable(int, value=512, loggable=True)

    #: copies per process; the figures take the fastest (quiet the noise of
    #: a shared machine, as STREAM takes the best of its iterations)
    repeats = variable(int, value=3, loggable=True)

    tags = {'results-selftest'}

    @run_after('setup')
    def use_blessed_references(self):
        path = reference_file(self.current_system.name)
        if path.is_file():
            self.reference = {'$ref': str(path)}

    @run_before('run')
    def set_command(self):
        self.executable = self.use_binary('dd', 'coreutils')
        dd = (f'{self.executable} if=/dev/zero of=/dev/null iflag=count_bytes '
              f'bs={self.block_size} count={self.copy_mib}M')
        self.executable = 'bash'
        self.executable_opts = [
            '-c', f"'for i in $(seq {self.num_threads}); do "
                  f"(for r in $(seq {self.repeats}); do LC_ALL=C {dd}; done) 2> dd.$i & "
                  f"done; wait; cat dd.*'"]

    @sanity_function
    def all_copies_complete(self):
        return sn.assert_eq(sn.count(sn.findall(r'bytes .* copied', self.stdout)),
                            self.num_threads * self.repeats)

    def _best_times(self):
        """Fastest copy time of each process (dd.1, dd.2... in order)."""
        times = sn.extractall(r'^\d+ bytes .* copied, ([\d.e+-]+) s', self.stdout, 1, float)
        return sn.map(lambda i: sn.min(times[i * self.repeats:(i + 1) * self.repeats]),
                      range(self.num_threads))

    @performance_figure('MB/s', lower_is_better=False)
    def copy_bw(self):
        nbytes = self.num_threads * self.copy_mib * 2**20
        return nbytes / sn.max(self._best_times()) / 1e6

    @performance_figure('s', lower_is_better=True)
    def copy_time(self):
        return sn.max(self._best_times())
