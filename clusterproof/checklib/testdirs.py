"""The test directories of a check, one lifecycle for every check that
writes files (IOR, mdtest, IOzone, fio, the mmap sweep).

A check mixes in :class:`TestDirectories` and asks for a directory in a
pipeline hook before the run::

    self.test_dir = self.test_directory(self.declared('storage', 'scratch'),
                                        f'ior-t{self.threads}', nbytes, 'IOR ...')

The path is planned here (``<scratch>/<name>-<unique>``, checked by the rules
of :mod:`clusterproof.methods.scratch`); nothing is written on the machine
running ReFrame. The job creates it on its node before the check's own
commands (``clusterproof scratch create``: leftovers of killed runs removed,
the free space checked against ``nbytes``, the marker written; a refusal
stops the job with status 2 and the check fails naming it) and removes it
when the job script exits, however it exits. The check removes it again
after the run, and ``reframe`` at its exit (an interrupted run). With
``--dry-run`` the job script is written and nothing is created anywhere.
"""

import reframe as rfm
from reframe.core.builtins import run_after

from clusterproof.methods import scratch


class TestDirectories(rfm.RegressionTestPlugin):
    """Mixed in next to :class:`clusterproof.checklib.base.ClusterproofCheck`."""

    def test_directory(self, scratch_dir, name, nbytes=None, what='test files'):
        """Plan a test directory under ``scratch_dir`` for this test case
        (a refusal fails the check naming the path and the rule); the job
        creates and removes it. Returns its path."""
        with self.configuration():
            root = scratch.check_scratch(scratch_dir)
            path = scratch.plan_test_dir(root, name)
        dirs = self.__dict__.setdefault('_cp_test_dirs', [])
        dirs.append((root, path))
        self._cp_job_first = [*self._cp_job_first, scratch.shell_create(root, path, nbytes, what)]
        self._cp_job_at_exit = [*self._cp_job_at_exit, scratch.shell_cleanup(path)]
        if not self.is_dry_run():
            scratch.remove_at_exit(root, path)
        return path

    @run_after('run')
    def _cp_remove_test_dirs(self):
        with self.configuration():
            for root, path in self.__dict__.get('_cp_test_dirs', []):
                scratch.remove_test_dir(root, path)
