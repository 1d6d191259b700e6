"""mmap sweep: read ``a`` bytes every ``b`` bytes of a memory mapping, over
anonymous memory and over files on each declared device, and compare.

The program is the project's own (``src/mmap_sweep``), built once per
environment by the ``build_mmap_sweep`` fixture. One test is one point
(a, b) and one access (read or rw, threads); its job sweeps every target the
partition declares in ``extras['mmap_targets']`` (memory, and a directory on
each device: Optane SSD, NAND SSD, DAX mount...), one after the other, so the
figures of one test can be set side by side as in the published table.

Figures per target: ``<target>_wall`` and ``<target>_cpu`` (s),
``<target>_io_idle`` (s, wall - cpu/threads) and ``<target>_throughput``
(MiB/s). Sizes come from the mode and the partition's declared node memory
(``clusterproof.methods.mmap_sweep.sizes``), threads from its declared cores,
never from the machine that runs ReFrame: in smoke mode every target is 32 MiB,
which the page cache holds, so smoke figures are never device figures.
"""

import os
import shlex

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import (fixture, parameter, run_after, run_before,
                                   sanity_function, variable)
from reframe.core.exceptions import SanityError

from clusterproof.methods import mmap_sweep
from clusterproof.modes import current_mode
from clusterproof.checklib.api import (ClusterproofCheck, ParseError, TestDirectories, node_cores,
                                       performance_figure_function)
from clusterproof.parsers import mmap_sweep as parser

SWEEP_SCRIPT = 'sweep_targets.sh'


class build_mmap_sweep(rfm.CompileOnlyRegressionTest):
    descr = 'Build the mmap sweep from reframe_checks/src/mmap_sweep'
    valid_systems = ['*']
    valid_prog_environs = ['*']
    sourcesdir = 'src/mmap_sweep'
    build_system = 'Make'

    @run_before('compile')
    def set_build_options(self):
        self.build_system.flags_from_environ = False
        self.build_system.options = [f'CC={self.current_environ.cc}']

    @sanity_function
    def binary_exists(self):
        return sn.assert_true(os.path.isfile(os.path.join(self.stagedir, 'mmap_sweep')),
                              msg=f'no mmap_sweep binary in {self.stagedir}')


@rfm.simple_test
class MmapSweep(rfm.RunOnlyRegressionTest, ClusterproofCheck, TestDirectories):
    descr = 'mmap sweep: read a bytes every b bytes, memory versus files on each device'
    valid_systems = ['*']
    valid_prog_environs = ['*']
    tags = {'mmap', 'pmem', 'storage'}
    time_limit = '2h'

    #: (a, b): bytes read per step, distance between steps
    point = parameter(mmap_sweep.points(current_mode()),
                      fmt=lambda p: f'a{p[0]}_b{p[1]}')

    #: (read|rw, threads): threads is a number or ``cores``, one per physical
    #: core of the partition's nodes (known only once the test has its partition)
    access = parameter(mmap_sweep.accesses(current_mode()),
                       fmt=lambda x: f'{x[0]}_t{x[1]}')

    #: threads of this test; 0 = from ``access`` and the partition's declared
    #: cores (``-S MmapSweep.threads=N`` sets N; logged with each result)
    threads = variable(int, value=0)

    #: bytes per target; 0 means from the mode and the node's memory
    file_size = variable(int, value=0)
    memory_size = variable(int, value=0)

    mmap_sweep_bin = fixture(build_mmap_sweep, scope='environment')

    @run_after('setup')
    def set_targets(self):
        with self.configuration():
            self.targets = mmap_sweep.targets(
                self.declared('mmap_targets', default=None),
                self.declared('storage', 'scratch', default=None))
            sizes = mmap_sweep.sizes(self.declared('hardware', 'memory_gib'), self.cp_mode)
        self.sizes = {'file': self.file_size or sizes['file'],
                      'memory': self.memory_size or sizes['memory']}
        a, b = self.point
        if self.threads == 0:
            with self.configuration():
                self.threads = mmap_sweep.access_threads(self.access[1],
                                                         node_cores(self.current_partition))
        threads = self.threads
        # A point larger than the sizes of this mode is not part of its sweep.
        too_small = [t['name'] for t in self.targets
                     if not mmap_sweep.fits(a, b, self.size_of(t), threads)]
        self.skip_if(too_small, f'a={a} b={b} with {threads} threads does not fit in the size '
                                f'of target(s) {", ".join(too_small)}')

    def size_of(self, target):
        return self.sizes['memory'] if target['path'] is None else self.sizes['file']

    @run_before('run')
    def write_sweep_script(self):
        binary = os.path.join(self.mmap_sweep_bin.stagedir, 'mmap_sweep')
        self.binary_path = binary
        self.binary_version = 'mmap_sweep 1 (built from reframe_checks/src/mmap_sweep)'
        a, b = self.point
        mode, threads = self.access[0], self.threads
        lines = ['#!/bin/bash', 'status=0']
        for target in self.targets:
            name = target['name']
            argv = [binary, '--size', str(self.size_of(target)), '-a', str(a), '-b', str(b),
                    '--mode', mode, '--threads', str(threads)]
            if target['path'] is None:
                argv.append('--memory')
            else:
                test_dir = self.test_directory(target['path'], f'mmap-sweep-{name}')
                argv += ['--file', f'{test_dir}/mmap_sweep.dat', '--create']
            out = shlex.quote(f'{name}.out')
            lines += [f'echo "target {name}: {shlex.join(argv)}"',
                      f'{shlex.join(argv)} > {out} 2>&1 || {{ status=1; '
                      f'echo "target {name} failed:"; cat {out}; }}']
        lines.append('exit $status')
        with open(os.path.join(self.stagedir, SWEEP_SCRIPT), 'w') as f:
            f.write('\n'.join(lines) + '\n')
        os.chmod(os.path.join(self.stagedir, SWEEP_SCRIPT), 0o755)
        self.executable = f'./{SWEEP_SCRIPT}'

    def results(self):
        if not hasattr(self, '_results'):
            found, bad = {}, []
            for target in self.targets:
                path = os.path.join(self.stagedir, f'{target["name"]}.out')
                try:
                    with open(path) as f:
                        res = parser.parse(f.read(), source=path)
                except (OSError, ParseError) as err:
                    bad.append(str(err))
                    continue
                bad += parser.problems(res, source=path)
                found[target['name']] = res
            self._results, self._problems = found, bad
        return self._results

    @sanity_function
    def every_target_swept(self):
        self.results()
        if self._problems:
            raise SanityError('; '.join(self._problems))
        return sn.assert_eq(sn.count(sn.extractall(r'^target \S+: ', self.stdout)),
                            len(self.targets))

    @run_before('performance')
    def set_perf_variables(self):
        self.perf_variables = {}
        for target in self.targets:
            name = target['name']
            for fig, key, unit, lower in (('wall', 'wall_s', 's', True),
                                          ('cpu', 'cpu_s', 's', True),
                                          ('io_idle', 'io_idle_s', 's', True),
                                          ('throughput', 'throughput_mib_s', 'MiB/s', False)):
                self.perf_variables[f'{name}_{fig}'] = performance_figure_function(
                    self._figure(name, key), unit, lower_is_better=lower)

    @sn.deferrable
    def _figure(self, name, key):
        return self.results()[name][key]
