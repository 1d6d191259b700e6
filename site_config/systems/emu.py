"""``emu``: the local Slurm cluster started by ``clusterproof cluster up``.

Nodes n1..nN are network namespaces on this machine, so they share its
processors, memory and file systems: the declared hardware is this machine's,
and figures measured here are for function, never for speed (the name of the
system says so in every report).

Two partitions: ``srun`` (launcher ``srun --mpi=pmix``) and ``mpirun``
(OpenMPI's mpirun inside the allocation). Both need ``SLURM_CONF`` from
``clusterproof cluster env`` in the environment.
"""

import os

from clusterproof.methods.declared import storage_checks
from clusterproof.paths import local_scratch
from clusterproof.site.topology import detect_hardware

#: the most threads of each storage benchmark this machine holds over the
#: emulated nodes (docs/storage.md, "At the published shape"); the checks
#: skip higher counts, naming this limit. The limit is the launch's, not the
#: benchmark's. IOzone clients: 1,024 (each an srun step) take ~18 GiB of
#: this machine's 24 (one run finished in 650 s, one was stopped when memory
#: ran low); 512 take ~9. MPI ranks: 64 (4 per node) passed 3 of 3 runs of
#: the IOR and mdtest checks once every PMIx fence was a ring
#: (slurm/local-cluster/mpi.conf.in); at 128, IOR passed once in 450 s of its
#: 600 s time limit and mdtest lost a node to the load of 128 starting ranks
#: on the shared 2 cores: not declared.
THREAD_CLIENTS, MPI_RANKS = 512, 64
#: per benchmark, from what its check declares (clusterproof/methods/declared.py)
MAX_THREADS = {c.benchmark: MPI_RANKS if c.mpi else THREAD_CLIENTS for c in storage_checks()}

_scratch = local_scratch()
_hw = detect_hardware()
_nodes = int(os.environ.get('CLUSTERPROOF_EMU_NODES', '4'))
_cpus = int(os.environ.get('CLUSTERPROOF_EMU_CPUS', '2'))

_extras = {
    'hardware': _hw,
    'storage': {
        # All emulated nodes see this machine's file systems: a shared scratch.
        'scratch': _scratch,
        'client_nodes': _nodes,
        'client_ram_gib': _hw['memory_gib'] / _nodes,
        'server_ram_gib': 0,
        'max_threads': MAX_THREADS,
    },
    # mmap sweep: anonymous memory and a file on the shared scratch directory
    'mmap_targets': [{'name': 'memory', 'path': None},
                     {'name': 'scratch', 'path': _scratch}],
    'emulated': True,
}

_env_vars = [
    # OpenMPI: stay on the cluster bridge, allow root (the local cluster runs as root).
    ['OMPI_MCA_oob_tcp_if_include', '198.18.0.0/24'],
    ['OMPI_MCA_btl_tcp_if_include', '198.18.0.0/24'],
    ['OMPI_MCA_btl', '^openib'],
    ['OMPI_ALLOW_RUN_AS_ROOT', '1'],
    ['OMPI_ALLOW_RUN_AS_ROOT_CONFIRM', '1'],
]

#: srun launches MPI ranks over PMIx (Debian's OpenMPI is built for PMIx only)
SRUN_ENV_VARS = _env_vars + [['SLURM_MPI_TYPE', 'pmix']]

_partition = {
    'scheduler': 'slurm',
    # --no-requeue: after a node failure Slurm would otherwise run the benchmark
    # again later, unannounced, on the file system under test.
    'access': ['--partition=emu', '--no-requeue'],
    'environs': ['gnu'],
    'max_jobs': 4,
    'time_limit': '10m',
    'env_vars': _env_vars,
    'processor': {'num_cpus': _cpus},
    'extras': _extras,
}

system = {
    'name': 'emu',
    'descr': 'Local Slurm cluster in network namespaces (emulated: function, not speed)',
    'hostnames': ['^clusterproof-emu-never-matches$'],
    'modules_system': 'nomod',
    'partitions': [
        # SLURM_MPI_TYPE=pmix is srun's --mpi=pmix for every step.
        dict(_partition, name='srun', descr='srun --mpi=pmix', launcher='srun',
             env_vars=SRUN_ENV_VARS),
        dict(_partition, name='mpirun', descr='OpenMPI mpirun in the allocation',
             launcher='mpirun'),
    ],
}
