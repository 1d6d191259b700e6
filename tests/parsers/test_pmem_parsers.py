"""Persistent memory: parsers of ipmctl/ndctl output and /proc/mounts, DAX
detection and comparisons with the declared provisioning.

The inputs are recordings (tests/data/ipmctl, ndctl, mounts and their
README.md): real output of this machine, which has no persistent memory, and
output posted from real Optane machines. Where a test needs a variant (a
namespace in another mode), it derives it from a recording in the test.
"""

import importlib.util
import json

import pytest

from clusterproof.parsers import ipmctl, ipmctl_memoryresources, ipmctl_topology, mounts, ndctl
from clusterproof.site import pmem
from conftest import DATA, REPO

IPMCTL, NDCTL, MOUNTS = DATA / 'ipmctl', DATA / 'ndctl', DATA / 'mounts'


def read(path):
    return path.read_text()


def pmserver_systems():
    spec = importlib.util.spec_from_file_location(
        'pmserver_site', REPO / 'site_config' / 'systems' / 'pmserver.py')
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return {s['name']: s['partitions'][0]['extras']['pmem'] for s in mod.systems}


# -- ipmctl show -memoryresources ---------------------------------------------

def test_memoryresources_table_of_12x256gb_server():
    mr = ipmctl_memoryresources.parse(read(IPMCTL / 'memoryresources-12x256gb-appdirect.txt'))
    assert mr['capacity'] == 3029.452
    assert mr['app_direct_capacity'] == 3024.0 and mr['memory_capacity'] == 0.0
    assert mr['inaccessible_capacity'] == 5.452
    assert mr['ddr_volatile_capacity'] == 381.5
    assert pmem.provisioning_of(mr) == 'app_direct'


def test_memoryresources_table_with_dcpmm_column_and_dash_cells():
    mr = ipmctl_memoryresources.parse(read(IPMCTL / 'memoryresources-4x128gb-appdirect-dcpmm.txt'))
    assert (mr['capacity'], mr['app_direct_capacity'], mr['inaccessible_capacity']) == \
        (505.689, 504.0, 1.689)


def test_memoryresources_key_value_format_of_ipmctl_1():
    mr = ipmctl_memoryresources.parse(read(IPMCTL / 'memoryresources-keyvalue-v1.txt'))
    assert mr == {'capacity': 505.6, 'memory_capacity': 0.0, 'app_direct_capacity': 504.0,
                  'unconfigured_capacity': 0.0, 'inaccessible_capacity': 1.6,
                  'reserved_capacity': 0.0}


def test_memoryresources_errors_name_the_tool_message():
    with pytest.raises(ValueError, match='No PMem modules in the system'):
        ipmctl_memoryresources.parse(read(IPMCTL / 'memoryresources-no-pmem-this-machine.txt'))
    with pytest.raises(ValueError, match='ipmctl reported an error: Error: GetMemoryResources'):
        ipmctl_memoryresources.parse(read(IPMCTL / 'memoryresources-error-memory-mode.txt'))
    assert ipmctl.no_pmem_reason(read(IPMCTL / 'topology-no-pmem-this-machine.txt'))


def test_pmserver_declaration_matches_the_12x256gb_recording():
    declared = pmserver_systems()['pmserver']
    mr = ipmctl_memoryresources.parse(read(IPMCTL / 'memoryresources-12x256gb-appdirect.txt'))
    assert pmem.compare_memory_resources('pmserver1', declared['memory_resources'], mr,
                                         declared['provisioning']) == []


def test_memory_mode_declared_but_app_direct_found():
    declared = pmserver_systems()['pmserver-mm']
    mr = ipmctl_memoryresources.parse(read(IPMCTL / 'memoryresources-12x256gb-appdirect.txt'))
    problems = pmem.compare_memory_resources('pmserver-mm1', declared['memory_resources'], mr,
                                             declared['provisioning'])
    text = '; '.join(map(str, problems))
    assert 'pmserver-mm1: pmem.provisioning: expected memory_mode, found app_direct' in text
    assert ('pmserver-mm1: pmem.memory_resources.memory_capacity: expected 3024 GiB, '
            'found 0 GiB') in text
    assert 'app_direct_capacity: expected 0 GiB, found 3024 GiB' in text


# -- ipmctl show -topology --------------------------------------------------------

HM1_DIMMS = [{'locator': loc, 'capacity_gib': 126.4,
              'memory_type': 'Logical Non-Volatile Device'}
             for loc in ('P1-DIMMA2', 'P1-DIMMB1', 'P1-DIMMD2', 'P1-DIMME1')]


def test_topology_rows_pmem_and_ddr4():
    rows = ipmctl_topology.parse(read(IPMCTL / 'topology-4pmem-4ddr4.txt'))
    assert len(rows) == 8
    assert rows[0] == {'dimm_id': '0x0001', 'memory_type': 'Logical Non-Volatile Device',
                       'capacity_gib': 126.375, 'physical_id': '0x0011', 'locator': 'P1-DIMMA2'}
    assert rows[4]['dimm_id'] is None and rows[4]['memory_type'] == 'DDR4'
    assert [r['locator'] for r in ipmctl_topology.parse(
        read(IPMCTL / 'topology-2pmem-4ddr4.txt'))][:2] == ['DIMM_P0_A1', 'DIMM_P1_G1']


def test_declared_population_matches_and_a_missing_module_shows():
    rows = ipmctl_topology.parse(read(IPMCTL / 'topology-4pmem-4ddr4.txt'))
    assert pmem.compare_dimms('hm1', HM1_DIMMS, rows) == []
    # the server declares 5 modules; the recording has 4
    declared = HM1_DIMMS + [{'locator': 'P1-DIMMF2', 'capacity_gib': 126.4}]
    text = '; '.join(map(str, pmem.compare_dimms('hm1', declared, rows)))
    assert 'hm1: pmem.dimms (count): expected 5, found 4' in text
    assert 'hm1: pmem.dimms[P1-DIMMF2]: expected a module, found no module' in text


def test_ddr4_only_server_has_no_pmem_modules():
    rows = ipmctl_topology.parse(read(IPMCTL / 'topology-12ddr4-no-pmem.txt'))
    problems = pmem.compare_dimms('n1', HM1_DIMMS, rows)
    assert 'n1: pmem.dimms (count): expected 4, found 0' in str(problems[0])
    # declaring the DDR4 population checks it too
    ddr = [{'locator': r['locator'], 'capacity_gib': 16, 'memory_type': 'DDR4'} for r in rows]
    assert pmem.compare_dimms('n1', ddr, rows) == []


# -- ndctl list -N -----------------------------------------------------------------

def test_ndctl_shapes():
    assert ndctl.parse(read(NDCTL / 'list-N-no-pmem-this-machine.json')) == []
    one, = ndctl.parse(read(NDCTL / 'list-N-1x-fsdax.json'))
    assert (one['dev'], one['mode'], one['size'], one['blockdev']) == \
        ('namespace0.0', 'fsdax', 532708065280, 'pmem0')
    old, = ndctl.parse(read(NDCTL / 'list-namespaces-single-object-memory-mode.json'))
    assert old['mode'] == 'fsdax' and old['mode_reported'] == 'memory'
    nested = ndctl.parse(read(NDCTL / 'list-DRNi-nested.json'))
    assert [(n['dev'], n['enabled']) for n in nested] == [('namespace0.1', False),
                                                          ('namespace0.0', True)]
    devdax = ndctl.parse(read(NDCTL / 'list-X-2x-devdax.json'))
    assert {n['chardev'] for n in devdax} == {'dax0.0', 'dax0.2'}
    with pytest.raises(ValueError, match='ndctl list -N: not JSON'):
        ndctl.parse('Error: no such bus')


def test_namespace_comparison():
    declared = [{'dev': 'namespace0.0', 'mode': 'fsdax', 'size': 532708065280,
                 'blockdev': 'pmem0'}]
    nested = ndctl.parse(read(NDCTL / 'list-DRNi-nested.json'))
    assert pmem.compare_namespaces('hm1', declared, nested) == []   # idle seed ignored
    wrong = [dict(declared[0], mode='devdax', blockdev='pmem1')]
    text = '; '.join(map(str, pmem.compare_namespaces('hm1', wrong, nested)))
    assert 'hm1: pmem.namespaces[namespace0.0].mode: expected devdax, found fsdax' in text
    assert 'hm1: pmem.namespaces[namespace0.0].blockdev: expected pmem1, found pmem0' in text
    # pmserver declares two 1.45 TiB namespaces; this recording has one 496 GiB
    declared_pm = pmserver_systems()['pmserver']['namespaces']
    text = '; '.join(map(str, pmem.compare_namespaces('hm1', declared_pm, nested)))
    assert 'pmem.namespaces[namespace1.0]: expected present, found absent' in text
    assert ('pmem.namespaces[namespace0.0].size: expected 1488.37 GiB (1598128390144 B), '
            'found 496.12 GiB') in text


def test_devdax_declared():
    found = ndctl.parse(read(NDCTL / 'list-X-2x-devdax.json'))
    assert pmem.compare_devdax('n1', [{'chardev': 'dax0.0'}], found) == []
    problems = pmem.compare_devdax('n1', [{'chardev': 'dax1.0'}], found)
    assert 'n1: pmem.devdax[dax1.0]: expected present, found absent' in str(problems[0])


# -- DAX detection -----------------------------------------------------------------

def test_dax_mount_on_fsdax_namespace_is_accepted():
    verdict = pmem.verify_dax_target('/hana/pmem/nv02/fio', read(MOUNTS / 'hana-16x-xfs-dax.txt'),
                                     read(NDCTL / 'list-Nv-2x-fsdax.json'))
    assert verdict.ok, verdict.reason
    assert verdict.mount.device == '/dev/pmem1' and verdict.namespace['dev'] == 'namespace1.0'
    always = pmem.verify_dax_target('/hana/pmem/XXX/pmem0', read(MOUNTS / 'xfs-dax-always.txt'),
                                    read(NDCTL / 'list-N-1x-fsdax.json'))
    assert always.ok, always.reason


def test_refusal_on_a_non_dax_mount():
    verdict = pmem.verify_dax_target('/work/scratch', read(MOUNTS / 'this-machine-no-dax.txt'),
                                     read(NDCTL / 'list-N-no-pmem-this-machine.json'))
    assert not verdict
    assert verdict.reason.startswith('/work/scratch is on / (/dev/vda, ext4), not a DAX mount')
    home = pmem.verify_dax_target('/home/me', read(MOUNTS / 'hana-16x-xfs-dax.txt'), '')
    assert 'is on /home (/dev/sdb1, xfs), not a DAX mount' in home.reason


def test_refusal_when_dax_mount_is_not_a_pmem_device():
    mounts = read(MOUNTS / 'hana-16x-xfs-dax.txt').replace('/dev/pmem1 ', '/dev/sdc1 ')
    verdict = pmem.verify_dax_target('/hana/pmem/nv02', mounts,
                                     read(NDCTL / 'list-Nv-2x-fsdax.json'))
    assert not verdict and 'not on a pmem block device' in verdict.reason


def test_refusal_when_namespace_is_not_fsdax():
    namespaces = json.loads(read(NDCTL / 'list-Nv-2x-fsdax.json'))
    namespaces[0]['mode'] = 'sector'       # namespace1.0 -> pmem1
    verdict = pmem.verify_dax_target('/hana/pmem/nv02', read(MOUNTS / 'hana-16x-xfs-dax.txt'),
                                     json.dumps(namespaces))
    assert not verdict
    assert 'namespace namespace1.0 (blockdev pmem1) is in mode sector, not fsdax' in verdict.reason
    missing = pmem.verify_dax_target('/hana/pmem/nv05', read(MOUNTS / 'hana-16x-xfs-dax.txt'),
                                     read(NDCTL / 'list-Nv-2x-fsdax.json'))
    assert 'no namespace in ndctl list -N has blockdev pmem4' in missing.reason


def test_dax_inode_is_not_accepted_and_paths_are_unescaped():
    line = read(MOUNTS / 'xfs-dax-always.txt')
    inode = line.replace('dax=always', 'dax=inode')
    assert not pmem.verify_dax_target('/hana/pmem/XXX/pmem0', inode,
                                      read(NDCTL / 'list-N-1x-fsdax.json'))
    spaced = line.replace('/hana/pmem/XXX/pmem0', '/mnt/my\\040pmem')
    mount, = mounts.parse(spaced)
    assert mount.path == '/mnt/my pmem'


def test_compare_pmem_on_one_machine_end_to_end():
    """hm1: every recording of one machine against a declaration of it."""
    declared = {
        'provisioning': 'app_direct',
        'dimms': HM1_DIMMS,
        'memory_resources': {'capacity': 505.7, 'app_direct_capacity': 504.0,
                             'memory_capacity': 0.0},
        'namespaces': [{'dev': 'namespace0.0', 'mode': 'fsdax', 'size': 532708065280,
                        'blockdev': 'pmem0'}],
        'dax_mounts': [{'path': '/hana/pmem/XXX/pmem0', 'blockdev': 'pmem0'}],
        'devdax': [],
    }
    args = (read(IPMCTL / 'memoryresources-4x128gb-appdirect-dcpmm.txt'),
            read(IPMCTL / 'topology-4pmem-4ddr4.txt'), read(NDCTL / 'list-N-1x-fsdax.json'),
            read(MOUNTS / 'xfs-dax-always.txt'))
    assert pmem.compare_pmem('hm1', declared, *args) == []
    no_tools = pmem.compare_pmem('vm', declared,
                                 read(IPMCTL / 'memoryresources-no-pmem-this-machine.txt'),
                                 read(IPMCTL / 'topology-no-pmem-this-machine.txt'), '',
                                 read(MOUNTS / 'this-machine-no-dax.txt'))
    text = '; '.join(map(str, no_tools))
    assert 'vm: pmem.memory_resources: expected ipmctl capacities, found' in text
    assert 'No PMem modules in the system' in text
    assert 'vm: pmem.dax_mounts[/hana/pmem/XXX/pmem0]: expected DAX mount on pmem0' in text


def test_pmem_declarations_validate_and_errors_name_the_key():
    from clusterproof import ClusterproofError
    from clusterproof.site.hardware import validate_pmem
    for name, declared in pmserver_systems().items():
        validate_pmem(declared, f'site_config/systems/pmserver.py: system {name}')
    bad = dict(pmserver_systems()['pmserver'], provisioning='appdirect',
               namespaces=[{'dev': 'namespace0.0', 'mode': 'memory'}])
    with pytest.raises(ClusterproofError) as err:
        validate_pmem(bad, 'site_config/systems/pmserver.py: system pmserver')
    assert "pmem: provisioning='appdirect' (want one of app_direct" in str(err.value)
    assert "namespaces[0].mode='memory'" in str(err.value)
