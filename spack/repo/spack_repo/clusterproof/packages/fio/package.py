# fio with the libpmem engine built on purpose, not by accident.

from spack_repo.builtin.packages.fio.package import Fio as BuiltinFio

from spack.package import *


class Fio(BuiltinFio):
    """Flexible I/O Tester, with a ``pmem`` variant.

    fio's ``configure`` enables the ``libpmem`` and ``dev-dax`` engines when it
    happens to find libpmem (>= 1.5) on the compiler's paths, so the builtin
    package builds them or not depending on the build host. Here ``+pmem``
    depends on PMDK and fails the build if ``configure`` did not enable the
    libpmem engine; ``~pmem`` passes ``--disable-pmem`` so neither engine is
    built even where libpmem is installed.
    """

    variant("pmem", default=False, description="Build the libpmem and dev-dax engines (PMDK)")

    depends_on("pmdk@1.5:", when="+pmem")

    def configure_args(self):
        args = super().configure_args()
        if self.spec.satisfies("~pmem"):
            args.append("--disable-pmem")
        return args

    @run_after("configure")
    def check_pmem_engine(self):
        """``+pmem`` means the libpmem engine is built: say so or stop."""
        if self.spec.satisfies("~pmem"):
            return
        with open(join_path(self.stage.source_path, "config-host.mak")) as f:
            config = f.read()
        for symbol, engine in (("CONFIG_LIBPMEM", "libpmem"), ("CONFIG_LINUX_DEVDAX", "dev-dax")):
            if f"{symbol}=y" not in config:
                raise InstallError(
                    f"fio+pmem: configure did not enable the {engine} engine "
                    f"({symbol} missing from config-host.mak) although pmdk is "
                    f"{self.spec['pmdk'].prefix}; see config.log"
                )
