"""STREAM per NUMA domain in a screening (``screen.numa``): the job's
shell lines run for real on this machine (one domain: the loop made to run
on one), the per-domain output read back, the job script ReFrame writes
for ``-S Stream.per_numa=true``, and the screening's selection of it."""

import shutil
import subprocess

import pytest

from clusterproof.parsers import stream as stream_parser
from clusterproof.screen import numa, results
from conftest import DATA, REPO, run_reframe

SOURCE = REPO / '.venv/share/clusterproof/stream/stream.c'
#: recorded: the node's run, then the loop's run bound to domain 0 (this machine)
RECORDED = DATA / 'stream' / 'stream-5.10-per-numa-domain-local.txt'


def _cores_of_domain(d):
    out = subprocess.run(['lscpu', '-p=CORE,NODE'], capture_output=True, text=True,
                         check=True).stdout
    rows = [line.split(',') for line in out.splitlines() if not line.startswith('#')]
    return len({core for core, node in rows if node == str(d)})


@pytest.mark.skipif(not SOURCE.is_file() or shutil.which('gcc') is None
                    or shutil.which('numactl') is None,
                    reason='needs the STREAM source (make setup), gcc and numactl')
def test_the_job_runs_stream_bound_to_each_numa_domain_in_turn(tmp_path):
    binary = tmp_path / 'stream'
    subprocess.run(['gcc', '-O2', '-fopenmp', '-DSTREAM_ARRAY_SIZE=100000', '-DNTIMES=2',
                    str(SOURCE), '-o', str(binary)], check=True)
    script = '\n'.join([str(binary)] + numa.domain_loop(binary, min_domains=1))
    out = subprocess.run(['bash', '-c', script], capture_output=True, text=True, check=True,
                         timeout=60).stdout
    node, domains = numa.runs(out, stream_parser.parse, 'job.out')
    assert node['validates'] and node['rates']['Triad'] > 0
    assert set(domains) == {0}, 'this machine lists one NUMA domain'
    assert domains[0]['validates'] and domains[0]['rates']['Triad'] > 0
    assert domains[0]['threads'] == _cores_of_domain(0), 'one thread per core of the domain'
    alone = subprocess.run(['bash', '-c', '\n'.join(numa.domain_loop(binary))],
                           capture_output=True, text=True, check=True).stdout
    assert alone == '', 'a node of one domain: domain 0 is the node, no loop'


def test_the_recorded_output_gives_the_node_and_each_domain():
    node, domains = numa.runs(RECORDED.read_text(), stream_parser.parse, str(RECORDED))
    assert (node['rates']['Triad'], domains[0]['rates']['Triad']) == (200.3, 202.0)
    assert node['runs'] == 1 and domains[0]['runs'] == 1
    assert numa.figure(0) == 'triad@numa0'
    assert results.component_name('numa1') == 'numa 1'      # judged as "numa 1: triad"
    assert numa.split('no marker') == ('no marker', {})


@pytest.mark.slow
def test_the_screening_selects_stream_per_numa_domain_and_the_job_script_has_the_loop(tmp_path):
    options = results.SCREEN_CHECKS['stream'].options
    assert options[-2:] == ('-S', 'Stream.per_numa=true')
    proc = run_reframe(['-c', 'reframe_checks/stream.py', *options, '--dry-run',
                        '--system', 'local'], tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:]
    script = next(tmp_path.rglob('Stream_*/rfm_job.sh')).read_text()
    assert f'echo "{numa.MARKER} $d"' in script
    assert 'numactl --cpunodebind="$d" --membind="$d"' in script
