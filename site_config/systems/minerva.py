"""``minerva``: the published AMD EPYC Rome cluster (PowerEdge C6525, two
sockets, 256 GB = 16 x 16 GB DDR4-3200 on 8 channels per socket,
ConnectX-6 HDR100 InfiniBand), one partition per CPU model, NPS4.

Zen 2 does 16 double-precision FLOPs per cycle per core. Each CCX has up to
4 cores and 16 MB of L3.

Host names and Slurm partitions are examples: copy this file and change
them for your own cluster.
"""

# CPU model: (cores per socket, base clock GHz, L3 MiB per socket)
_models = {
    '7702': (64, 2.0, 256),
    '7502': (32, 2.5, 128),
    '7452': (32, 2.35, 128),
    '7402': (24, 2.8, 128),
}


def _partition(model):
    cores, ghz, l3 = _models[model]
    return {
        'name': f'rome{model}',
        'descr': f'2 x AMD EPYC {model} ({cores} cores, {ghz} GHz), NPS4',
        'scheduler': 'slurm',
        'launcher': 'srun',
        # --no-requeue: after a node failure Slurm would otherwise run the benchmark
        # again later, unannounced, on the file system under test.
        'access': [f'--partition=rome{model}', '--exclusive', '--no-requeue'],
        'environs': ['gnu'],
        'max_jobs': 8,
        'time_limit': '2h',
        'processor': {'num_cpus': 2 * cores, 'num_cpus_per_core': 1,
                      'num_sockets': 2, 'num_cpus_per_socket': cores},
        'extras': {
            'hardware': {
                'cpu_model': f'AMD EPYC {model}',
                'sockets': 2,
                'cores_per_socket': cores,
                'threads_per_core': 1,
                'numa_nodes': 8,                 # NPS4 on two sockets
                'nps': 4,
                'memory_gib': 256,
                'memory_channels_per_socket': 8,
                'memory_mts': 3200,
                'clock_ghz': ghz,
                'dp_flops_per_cycle': 16,
                'llc_mib': 2 * l3,
                'l3_domains': 2 * cores // 4,    # CCX of 4 cores
                'cores_per_l3_domain': 4,
            },
            'network': {'fabric': 'InfiniBand HDR100', 'link_gbps': 100},
            'storage': {'scratch': '/scratch/clusterproof', 'client_nodes': 64,
                        'client_ram_gib': 256, 'server_ram_gib': 0},
            'max_nodes': 64,
        },
    }


system = {
    'name': 'minerva',
    'descr': 'AMD EPYC Rome cluster, HDR100',
    'hostnames': [r'^minerva\d+$', r'^minerva-login\d*$'],
    'modules_system': 'nomod',
    'partitions': [_partition(m) for m in _models],
}
