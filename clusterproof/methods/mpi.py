"""The environment every MPI run of the checks takes (HPL, HPCC, OSU): what
OpenMPI's ``mpirun`` needs without a scheduler, and what MPI ranks need on
emulated nodes that share one machine's cores."""


def mpirun_env(euid):
    """Environment OpenMPI's mpirun needs on a machine without a scheduler:
    running as root must be allowed explicitly."""
    if euid != 0:
        return {}
    return {'OMPI_ALLOW_RUN_AS_ROOT': '1', 'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM': '1'}


def emulated_mpi_env(emulated):
    """On emulated nodes (all sharing this machine's cores) MPI ranks that
    busy-poll starve each other: let OpenMPI yield when idle."""
    return {'OMPI_MCA_mpi_yield_when_idle': '1'} if emulated else {}
