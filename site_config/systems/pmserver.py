"""``pmserver``: the published NVDIMM server (two-socket Intel, 48 cores,
12 x 256 GB Intel Optane DCPMM + 12 x 32 GB DDR4).

A complete, realistic example of a persistent-memory system. The DCPMM run
in App Direct mode here (an fsdax namespace per socket, /dev/pmem1 mounted
with ``-o dax,noatime`` on /mnt/nvdimm); ``pmserver-mm`` below is the same
server provisioned in memory mode, where the DCPMM are the system memory
and the DDR4 a cache in front of them.

Host names, Slurm partition and paths are examples: copy this file and
change them for your own server.
"""

_dimm_locators = [f'CPU{s}_DIMM_{c}2' for s in (1, 2) for c in 'ABCDEF']

_hardware = {
    'cpu_model': 'Intel Xeon Scalable 2nd generation, 24 cores',
    'sockets': 2,
    'cores_per_socket': 24,
    'threads_per_core': 2,
    'numa_nodes': 2,
    'memory_gib': 384,                  # 12 x 32 GB DDR4
    'memory_channels_per_socket': 6,
    'memory_mts': 2933,                 # DDR4; the DCPMM run at 2666 MT/s
    'clock_ghz': 2.4,
    'dp_flops_per_cycle': 32,           # AVX-512, two FMA units
    'llc_mib': 2 * 35.75,
    'numa_dram': [0, 1],
}

_pmem_app_direct = {
    'provisioning': 'app_direct',
    'dimms': [{'locator': loc, 'capacity_gib': 252.4, 'memory_type': 'Logical Non-Volatile Device'}
              for loc in _dimm_locators],
    'memory_resources': {               # ipmctl show -memoryresources (GiB)
        'capacity': 3029.4, 'memory_capacity': 0.0, 'app_direct_capacity': 3024.0,
        'unconfigured_capacity': 0.0, 'inaccessible_capacity': 5.4, 'reserved_capacity': 0.0,
    },
    'namespaces': [                     # ndctl list -N
        {'dev': 'namespace0.0', 'mode': 'fsdax', 'size': 1598128390144, 'blockdev': 'pmem0'},
        {'dev': 'namespace1.0', 'mode': 'fsdax', 'size': 1598128390144, 'blockdev': 'pmem1'},
    ],
    'dax_mounts': [{'path': '/mnt/nvdimm', 'blockdev': 'pmem1'}],
    'devdax': [],
}

_partition = {
    'name': 'default',
    'descr': 'NVDIMM server',
    'scheduler': 'slurm',
    'launcher': 'srun',
    # --no-requeue: after a node failure Slurm would otherwise run the benchmark
    # again later, unannounced, on the file system under test.
    'access': ['--partition=pmem', '--exclusive', '--no-requeue'],
    'environs': ['gnu'],
    'max_jobs': 1,
    'time_limit': '2h',
    'processor': {'num_cpus': 96, 'num_cpus_per_core': 2, 'num_sockets': 2,
                  'num_cpus_per_socket': 48},
}

systems = [
    {
        'name': 'pmserver',
        'descr': 'Two-socket server with Intel Optane DCPMM in App Direct mode',
        'hostnames': [r'^pmserver\d*$'],
        'modules_system': 'nomod',
        'partitions': [dict(_partition, extras={
            'hardware': _hardware,
            'pmem': _pmem_app_direct,
            'storage': {'scratch': '/mnt/nvdimm/clusterproof', 'client_nodes': 1,
                        'client_ram_gib': 384, 'server_ram_gib': 0},
            'mmap_targets': [
                {'name': 'memory', 'path': None},
                {'name': 'optane-ssd', 'path': '/mnt/optane/clusterproof'},
                {'name': 'nand-ssd', 'path': '/mnt/nvme/clusterproof'},
                {'name': 'dax', 'path': '/mnt/nvdimm/clusterproof'},
            ],
        })],
    },
    {
        'name': 'pmserver-mm',
        'descr': 'The same server with the DCPMM in memory mode (DDR4 as cache)',
        'hostnames': [r'^pmserver-mm\d*$'],
        'modules_system': 'nomod',
        'partitions': [dict(_partition, extras={
            'hardware': dict(_hardware, memory_gib=3029.4),
            'pmem': dict(_pmem_app_direct, provisioning='memory_mode',
                         memory_resources={
                             'capacity': 3029.4, 'memory_capacity': 3024.0,
                             'app_direct_capacity': 0.0, 'unconfigured_capacity': 0.0,
                             'inaccessible_capacity': 5.4, 'reserved_capacity': 0.0},
                         namespaces=[], dax_mounts=[]),
            'storage': {'scratch': '/scratch/clusterproof', 'client_nodes': 1,
                        'client_ram_gib': 3029.4, 'server_ram_gib': 0},
        })],
    },
]
