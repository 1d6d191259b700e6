"""The whole suite, as a user types it, on the local Slurm cluster:
``reframe -c reframe_checks -r --system emu`` (mode smoke, both partitions:
srun and mpirun), asserting on the results it stores.

Every check either passes on both partitions or is skipped for one of the
two allowed reasons (its binary is missing: the message gives the build
command; or the system does not declare the hardware). No list of checks is
kept here: a new check in reframe_checks/ is covered as it is. Every result
is marked emulated and none is compared with a reference.
"""

import glob
import json
import re

from conftest import REPO, need_netns, run_reframe

@need_netns
def test_whole_suite_on_the_local_cluster(emu_cluster, tmp_path):
    results = tmp_path / 'results'
    proc = run_reframe(['-c', str(REPO / 'reframe_checks'), '-r', '--system', 'emu'],
                       results, mode='smoke', extra_env=emu_cluster)
    assert proc.returncode == 0, proc.stdout[-4000:]
    report = sorted(glob.glob(str(results / 'reports' / 'run-report-*.json')))[-1]
    cases = json.load(open(report))['runs'][0]['testcases']

    by_check = {}
    for tc in cases:
        by_check.setdefault(tc['name'].split()[0], []).append(tc)
    for tc in cases:
        assert tc['result'] in ('pass', 'skip'), f'{tc["name"]} on {tc["partition"]}: ' \
                                                 f'{tc["result"]}: {tc.get("fail_reason")}'
    ran = {check for check, runs in by_check.items()
           if any(tc['result'] == 'pass' for tc in runs)}
    for check in ran:
        assert {tc['partition'] for tc in by_check[check]
                if tc['result'] == 'pass'} == {'srun', 'mpirun'}, check
    # what set-up installs (Debian packages, sources built by the checks) runs
    assert {'SystemInventory', 'Stream', 'IOzoneSequential', 'MmapSweep'} <= ran, ran

    # every skip says why, on the line ReFrame prints
    skips = re.findall(r'SKIP.*?\] \(\s*\d+/\d+\) (\S+).*@emu:\S+ \[(.+)\]', proc.stdout)
    assert len(skips) == sum(tc['result'] == 'skip' for tc in cases)
    for name, reason in skips:
        assert ('spack -e . install' in reason or 'declares no' in reason
                or 'between two nodes' in reason), f'{name}: {reason}'

    # one inventory task per emulated node, on both partitions
    for tc in by_check['SystemInventory']:
        assert tc['job_nodelist'] == ['n1', 'n2', 'n3', 'n4']

    # figures are there, marked emulated, never judged against references
    measured = [tc for tc in cases if tc['result'] == 'pass' and tc.get('perfvalues')]
    assert measured
    for tc in measured:
        assert tc['cp_emulated'] is True and tc['cp_smoke'] is True, tc['name']
        for key, (value, ref, *_rest) in tc['perfvalues'].items():
            assert ref == 0, f'{tc["name"]} {key}: reference {ref} on emulated hardware'
    triad = [tc['perfvalues']['emu:srun:triad'][0] for tc in by_check['Stream']
             if tc['partition'] == 'srun' and 'emu:srun:triad' in tc['perfvalues']]
    assert triad and min(triad) > 0
