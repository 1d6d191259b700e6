# The project's own mmap benchmark, built from this repository's checkout.

import os

from spack_repo.builtin.build_systems.makefile import MakefilePackage

from spack.package import *


class MmapSweep(MakefilePackage):
    """mmap_sweep reads A bytes every B bytes of a memory mapping (a file on the
    storage under test, or anonymous memory) with T threads and reports wall
    time, CPU time and a checksum as key=value lines.

    Its source is clusterproof's ``reframe_checks/src/mmap_sweep/``; it has no
    release tarball. The environment (``spack.yaml``) declares that directory
    as the ``develop`` source of ``mmap-sweep@develop``, so the binary is built
    from the checkout the environment lives in, and the environment's git
    revision says which source it was.
    """

    license("BSD-3-Clause")

    # Built only from the repository checkout (see spack.yaml, ``develop:``).
    version("develop")

    depends_on("c", type="build")

    @property
    def build_directory(self):
        # Out of the checkout: the source directory is the repository's and
        # must not collect build products.
        return join_path(self.stage.path, "spack-build")

    def edit(self, spec, prefix):
        mkdirp(self.build_directory)
        # Regular files only: a stage link or an old binary left in the
        # checkout must not reach the build.
        for name in sorted(os.listdir(self.stage.source_path)):
            path = join_path(self.stage.source_path, name)
            if os.path.isfile(path) and not os.path.islink(path) and name != "mmap_sweep":
                copy(path, self.build_directory)

    @property
    def build_targets(self):
        return [f"CC={spack_cc}"]

    @property
    def install_targets(self):
        return [f"PREFIX={self.prefix}", "install"]

    @run_after("install")
    @on_package_attributes(run_tests=True)
    def check_help(self):
        Executable(self.prefix.bin.mmap_sweep)("--help", output=str, error=str)
