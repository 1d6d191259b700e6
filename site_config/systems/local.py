"""``local``: this machine, with no scheduler. The embedded default: it
matches any host name and is tried last, so a machine that is no declared
cluster runs the suite on itself.

The declared hardware is this machine as Linux reports it when the
configuration loads; the inventory check still compares it with what the
node reports at run time (and with ReFrame's own topology detection).
"""


from clusterproof.paths import local_scratch
from clusterproof.site.topology import detect_hardware

_scratch = local_scratch()
_hw = detect_hardware()

system = {
    'name': 'local',
    'descr': 'This machine (no scheduler)',
    'hostnames': ['.*'],
    'modules_system': 'nomod',
    'partitions': [{
        'name': 'default',
        'descr': 'This machine',
        'scheduler': 'local',
        'launcher': 'local',
        'environs': ['gnu'],
        'max_jobs': 1,
        'extras': {
            'hardware': _hw,
            'storage': {
                'scratch': _scratch,
                'client_nodes': 1,
                'client_ram_gib': _hw['memory_gib'],
                'server_ram_gib': 0,
            },
            # mmap sweep: anonymous memory and a file on the scratch directory
            'mmap_targets': [{'name': 'memory', 'path': None},
                             {'name': 'scratch', 'path': _scratch}],
        },
    }],
}
