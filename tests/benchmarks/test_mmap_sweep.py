"""mmap sweep: the C program's arguments and output (built with gcc here),
its parser on recorded output, the sizing, and the check end to end through
ReFrame on ``local`` and on the local cluster ``emu``."""

import glob
import re
import shutil
import subprocess

import pytest

from clusterproof import ClusterproofError
from clusterproof.methods import mmap_sweep
from clusterproof.parsers import ParseError
from clusterproof.parsers import mmap_sweep as parser

from conftest import DATA, REPO, WAIT_S, reframe_env, run_reframe

SRC = REPO / 'reframe_checks' / 'src' / 'mmap_sweep' / 'mmap_sweep.c'


@pytest.fixture(scope='module')
def binary(tmp_path_factory):
    if not shutil.which('gcc'):
        pytest.skip('gcc not installed')
    out = tmp_path_factory.mktemp('mmap_sweep') / 'mmap_sweep'
    subprocess.run(['gcc', '-O2', '-std=c11', '-Wall', '-Wextra', '-Werror', '-o', str(out),
                    str(SRC), '-pthread'], check=True)
    return str(out)


def run(binary, *args):
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=WAIT_S)


def test_help(binary):
    res = run(binary, '--help')
    assert res.returncode == 0 and '--memory' in res.stdout and 'io_idle_s' in res.stdout


@pytest.mark.parametrize('args,message', [
    (['--memory', '-s', '1M', '-a', '8K', '-b', '4K'], 'larger than -b'),
    (['--memory', '-s', '1M', '-a', '1M', '-b', '1M', '-t', '2'], 'does not fit in a slice'),
    (['--file', '/nonexistent/dir/f', '-s', '1M', '-a', '4K', '-b', '4K'], 'No such file'),
    (['-s', '1M', '-a', '4K', '-b', '4K'], 'exactly one of --memory and --file'),
    (['--memory', '-s', '1X', '-a', '4K', '-b', '4K'], 'unknown size suffix'),
    (['--memory', '-s', '0', '-a', '4K', '-b', '4K'], 'greater than 0'),
    (['--memory', '-s', '1M', '-a', '4K', '-b', '4K', '-t', '0'], '--threads'),
    (['--memory', '-s', '1M', '-a', '4K', '-b', '4K', '--mode', 'write'], '--mode write'),
    (['--memory', '-a', '4K', '-b', '4K'], '--size is required'),
])
def test_bad_arguments_exit_2_with_a_clear_message(binary, args, message):
    res = run(binary, *args)
    assert res.returncode == 2, res
    assert message in res.stderr and res.stdout == ''


def test_file_smaller_than_size_is_refused(binary, tmp_path):
    f = tmp_path / 'small'
    f.write_bytes(b'x' * 4096)
    res = run(binary, '--file', str(f), '-s', '1M', '-a', '4K', '-b', '4K')
    assert res.returncode == 2 and 'less than --size' in res.stderr


@pytest.mark.parametrize('mode,threads', [('read', 1), ('rw', 3)])
def test_memory_sweep_output(binary, mode, threads):
    res = run(binary, '--memory', '-s', '3M', '-a', '4K', '-b', '16K', '--mode', mode,
              '-t', str(threads))
    assert res.returncode == 0, res.stderr
    out = parser.parse(res.stdout)
    assert parser.problems(out) == []
    assert out['verified'] == 'yes' and out['threads'] == threads and out['mode'] == mode
    assert out['steps'] == parser.expected_steps(3 * 2 ** 20, 4096, 16384, threads)
    assert out['bytes_touched'] == out['steps'] * 4096
    assert out['throughput_mib_s'] > 0 and out['cpu_s'] <= out['wall_s'] * threads + 0.02


def test_file_rw_reverses_chunks_and_syncs(binary, tmp_path):
    f = tmp_path / 'data'
    res = run(binary, '--file', str(f), '--create', '-s', '1M', '-a', '8', '-b', '4096',
              '--mode', 'rw')
    assert res.returncode == 0 and 'verified=yes' in res.stdout
    data = f.read_bytes()
    assert len(data) == 2 ** 20
    # mmap_sweep's fill pattern: (off * 131) ^ (off >> 9), low byte
    pat = [((off * 131) ^ (off >> 9)) & 0xff for off in range(8)]
    assert list(data[:8]) == pat[::-1]                     # first chunk reversed on disk
    assert data[8] == ((8 * 131) ^ 0) & 0xff               # outside the chunk untouched
    again = run(binary, '--file', str(f), '-s', '1M', '-a', '8', '-b', '4096')
    assert 'verified=unknown' in again.stdout and again.returncode == 0


# -- parser on recorded output ----------------------------------------------

@pytest.mark.parametrize('name', ['memory-read-t1.out', 'file-rw-t2.out',
                                  'file-read-existing-t2.out'])
def test_recorded_outputs_parse_and_are_sane(name):
    out = parser.parse((DATA / 'mmap_sweep' / name).read_text(), name)
    assert parser.problems(out, name) == []
    assert out['io_idle_s'] >= 0 and out['throughput_mib_s'] > 0


def test_truncated_output_names_missing_keys():
    text = (DATA / 'mmap_sweep' / 'file-rw-t2.out').read_text()
    cut = '\n'.join(text.splitlines()[:8])
    with pytest.raises(ParseError, match=r'cut\.out: mmap_sweep output lacks .*wall_s'):
        parser.parse(cut, 'cut.out')


def test_problems_catch_wrong_step_count_and_cpu_over_wall():
    out = parser.parse((DATA / 'mmap_sweep' / 'memory-read-t1.out').read_text())
    bad = dict(out, steps=out['steps'] - 1, cpu_s=out['wall_s'] * 3 + 1)
    msgs = parser.problems(bad, 'x')
    assert any('steps' in m for m in msgs) and any('exceeds wall_s' in m for m in msgs)


# -- sizing -------------------------------------------------------------------

def test_sizes_by_mode():
    assert mmap_sweep.sizes(24, 'smoke') == {'file': 32 * 2 ** 20, 'memory': 32 * 2 ** 20}
    acc = mmap_sweep.sizes(384, 'acceptance')
    assert acc['file'] == 768 * 2 ** 30 and acc['memory'] == 192 * 2 ** 30
    with pytest.raises(ClusterproofError, match='memory_gib'):
        mmap_sweep.sizes(0, 'nightly')


def test_acceptance_points_cover_the_published_a_values():
    pts = mmap_sweep.points('acceptance')
    assert {a for a, _ in pts} == {4096, 131072, 1048576, 4194304}
    assert all(b >= a and (b & (b - 1)) == 0 for a, b in pts)
    assert len(mmap_sweep.points('smoke')) * len(mmap_sweep.accesses('smoke')) <= 4


def test_default_targets_and_duplicates():
    assert [t['name'] for t in mmap_sweep.targets(None, '/s')] == ['memory', 'scratch']
    with pytest.raises(ClusterproofError, match='twice'):
        mmap_sweep.targets([{'name': 'x', 'path': None}, {'name': 'x', 'path': '/a'}], '/s')


# -- end to end through ReFrame ----------------------------------------------

def _assert_sweep_results(res, results):
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    logs = glob.glob(str(results / 'perflogs' / '*' / '*' / 'MmapSweep.log'))
    assert logs
    rows = 0
    for path in logs:
        lines = open(path).read().splitlines()
        header = lines[0].split('|')
        figures = [i for i, h in enumerate(header) if '_var=' in h]    # name=value
        for line in lines[1:]:
            fields = line.split('|')
            row = dict(zip(header, fields))
            perf = {fields[i].split('=')[0]: float(fields[i].split('=')[1]) for i in figures}
            threads = 2 if 'rw_t2' in row['display_name'] else 1
            for target in ('memory', 'scratch'):
                assert perf[f'{target}_throughput'] > 0
                assert perf[f'{target}_cpu'] <= perf[f'{target}_wall'] * threads + 0.02
            assert row['cp_smoke'].lower() == 'true'
            rows += 1
    assert rows == 4
    assert not glob.glob(str(results / 'scratch' / 'mmap-sweep-*'))


@pytest.mark.slow
def test_sweep_on_local(tmp_path):
    res = run_reframe(['-c', 'reframe_checks/mmap_sweep.py', '-r', '--system', 'local'],
                      tmp_path)
    _assert_sweep_results(res, tmp_path)
    # The report shows the published table's memory/device ratio per test case.
    page = tmp_path / 'report.html'
    out = subprocess.run([str(REPO / '.venv' / 'bin' / 'clusterproof'), 'report', '--last', '1',
                          '-o', str(page)], cwd=REPO, capture_output=True, text=True,
                         env=reframe_env(tmp_path), timeout=WAIT_S)
    assert out.returncode == 0, out.stdout + out.stderr
    table = page.read_text().split('id="mmap-ratio-table"')[1].split('</table>')[0]
    rows = re.findall(r'<tr><td>(MmapSweep [^<]*)<span class="flag">SMOKE</span></td>'
                      r'<td>local:default</td><td>scratch</td><td class="num">([\d.e-]+)</td>'
                      r'<td class="num">([\d.e-]+)</td><td class="num">([\d.]+)</td></tr>',
                      table)
    assert len(rows) == 4, table
    for _test, mem, dev, ratio in rows:
        assert float(ratio) == pytest.approx(float(mem) / float(dev), abs=1e-3)


def test_sweep_on_emu(tmp_path, emu_cluster):
    res = run_reframe(['-c', 'reframe_checks/mmap_sweep.py', '-r', '--system', 'emu:srun'],
                      tmp_path, extra_env=emu_cluster)
    _assert_sweep_results(res, tmp_path)


# ------------------------------------------------- several runs in one output

def test_several_runs_of_one_kind_yield_the_last_and_others_are_refused():
    """Recordings concatenated: the same sweep twice reads the last; a file
    sweep then a memory sweep is refused; a cut last run is never completed
    from the run before it."""
    rw = (DATA / 'mmap_sweep' / 'file-rw-t2.out').read_text()
    mem = (DATA / 'mmap_sweep' / 'memory-read-t1.out').read_text()
    res = parser.parse(rw + rw, 'job.out')
    assert (res['runs'], res['note']) == (2, 'job.out holds 2 mmap_sweep runs; the last is read')
    assert res['wall_s'] == parser.parse(rw)['wall_s']
    with pytest.raises(ParseError, match=r'^job\.out holds 2 mmap_sweep runs that differ '
                                         r'\(target: file \(run 1\), memory \(run 2\); mode: rw '
                                         r'\(run 1\), read \(run 2\)'):
        parser.parse(rw + mem, 'job.out')
    cut = rw[:rw.index('throughput_mib_s=')]
    with pytest.raises(ParseError, match=r'^job\.out \(run 2 of 2, the last\): mmap_sweep '
                                         r'output lacks checksum, throughput_mib_s'):
        parser.parse(rw + cut, 'job.out')
