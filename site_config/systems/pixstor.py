"""``pixstor``: the published parallel file system test bed: 16 client
nodes over HDR InfiniBand, GPFS (8 MiB blocks) served by 2 storage and
2 metadata servers.

Clients: 8 nodes with 2 x Xeon Gold 6230 (20 cores, 12 x 16 GiB at
2933 MT/s) and 8 with 2 x Xeon Gold 6148 (20 cores, 2666 MT/s); 640 cores.
Servers: 4 x 256 GiB. The methodology writes more than twice the RAM of
clients and servers together, so no cache can serve a read.

Host names, Slurm partition and paths are examples: copy this file and
change them for your own file system.
"""

_client = {
    'cpu_model': 'Intel Xeon Gold 6230 / 6148, 20 cores',
    'sockets': 2,
    'cores_per_socket': 20,
    'threads_per_core': 1,
    'numa_nodes': 2,
    'memory_gib': 192,
    'memory_channels_per_socket': 6,
    'memory_mts': 2666,
    'clock_ghz': 2.1,
    'dp_flops_per_cycle': 32,
    'llc_mib': 2 * 27.5,
    'link_gbps': 100,
}

system = {
    'name': 'pixstor',
    'descr': 'Storage client nodes of a GPFS file system under test',
    'hostnames': [r'^pixstor-client\d+$', r'^pixstor-login\d*$'],
    'modules_system': 'nomod',
    'partitions': [{
        'name': 'clients',
        'descr': '16 storage client nodes',
        'scheduler': 'slurm',
        'launcher': 'srun',
        # --no-requeue: after a node failure Slurm would otherwise run the benchmark
        # again later, unannounced, on the file system under test.
        'access': ['--partition=clients', '--exclusive', '--no-requeue'],
        'environs': ['gnu'],
        'max_jobs': 1,
        'time_limit': '12h',
        'processor': {'num_cpus': 40, 'num_cpus_per_core': 1, 'num_sockets': 2,
                      'num_cpus_per_socket': 20},
        'extras': {
            'hardware': _client,
            'network': {'fabric': 'InfiniBand HDR', 'link_gbps': 100},
            'storage': {
                'scratch': '/mmfs1/clusterproof',
                'filesystem': 'GPFS, 8 MiB block size',
                'client_nodes': 16,
                'client_ram_gib': 128,       # per client, as the published cache rule counts it
                'server_ram_gib': 4 * 256,   # 2 storage + 2 metadata servers
                'transfer_size': '16m',
                'total_data': '8T',          # as published: 8 TiB > 2 x 3 TiB of RAM
            },
        },
    }],
}
