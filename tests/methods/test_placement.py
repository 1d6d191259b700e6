"""Round-robin placement and Slurm hostlist expressions."""

import subprocess
from collections import Counter

import pytest

from clusterproof import ClusterproofError
from clusterproof import hostlist
from clusterproof.methods.placement import place, render

from conftest import REPO, VENV_BIN


# -- hostlist -------------------------------------------------------------------

@pytest.mark.parametrize('expr, names', [
    ('n[1-4]', ['n1', 'n2', 'n3', 'n4']),
    ('node[01-04,10],gpu1', ['node01', 'node02', 'node03', 'node04', 'node10', 'gpu1']),
    # items keep the order written; inside one item ClusterShell's order
    # (unpadded numbers before padded ones)
    ('node[01-02,7]', ['node7', 'node01', 'node02']),
    ('n[098-101]', ['n098', 'n099', 'n100', 'n101']),
    ('n[8-11]', ['n8', 'n9', 'n10', 'n11']),
    ('r[1-2]n[01-02]', ['r1n01', 'r1n02', 'r2n01', 'r2n02']),
    ('a,b[3],c-[1-2].ib', ['a', 'b3', 'c-1.ib', 'c-2.ib']),
    ('login', ['login']),
])
def test_expand(expr, names):
    assert hostlist.expand(expr) == names


@pytest.mark.parametrize('bad, words', [
    ('n[1-', 'unmatched'),
    ('n]1', 'unmatched'),
    ('n[4-1]', 'backwards'),
    ('n[a-b]', 'not a number'),
    ('n[[1]]', 'nested'),
    ('', 'no node names'),
    ('n1 n2', 'white space'),
    ('n;rm', 'not a node name'),
    ('n[1-99999999999]', 'more than'),
])
def test_expand_refuses(bad, words):
    with pytest.raises(ClusterproofError, match=words):
        hostlist.expand(bad)


@pytest.mark.parametrize('names, expr', [
    (['n1', 'n2', 'n3', 'n7'], 'n[1-3,7]'),
    (['node01', 'node02', 'node10'], 'node[01-02,10]'),
    (['n9', 'n10', 'n11'], 'n[9-11]'),
    (['a', 'n1'], 'a,n1'),
])
def test_compress(names, expr):
    assert hostlist.compress(names) == expr


@pytest.mark.parametrize('names', [
    ['n1', 'n2', 'n3', 'n7', 'gpu1', 'gpu2', 'login'],
    ['n01', 'n2', 'n03', 'n100', 'n099'],
    ['x007', 'x8', 'x009', 'x010', 'x0', 'x00'],
    [f'c{i:04d}' for i in range(1, 3000, 7)],
    ['n3', 'n1', 'n2'],
])
def test_compress_roundtrip(names):
    assert hostlist.expand(hostlist.compress(names)) == names


# -- placement ------------------------------------------------------------------

@pytest.mark.parametrize('nodes, threads', [
    (16, 1), (16, 8), (16, 16), (16, 32), (16, 1024), (16, 1000), (4, 7), (3, 2),
])
def test_every_thread_once_balanced_round_robin(nodes, threads):
    names = [f'n{i}' for i in range(1, nodes + 1)]
    pl = place(names, threads)
    order = pl.order()
    assert len(order) == threads                                   # every thread placed once
    counts = Counter(order)
    assert max(counts.values()) - min(counts.values()) <= 1        # balanced
    assert len(counts) == min(nodes, threads)                      # T < N uses T nodes
    assert order == [names[i % nodes] for i in range(threads)]     # round-robin order
    assert pl.threads_per_node() == [counts[n] for n in pl.nodes]


def test_published_examples():
    nodes = 'n[1-16]'
    assert set(place(nodes, 32).threads_per_node()) == {2}
    assert set(place(nodes, 1024).threads_per_node()) == {64}
    assert place(nodes, 4).nodes == ('n1', 'n2', 'n3', 'n4')


def test_forms_agree():
    pl = place('n[1-16]', 1000)
    order = pl.order()
    assert pl.hostfile().splitlines() == order
    tl = [line.split() for line in pl.threadlist('/scratch/t', '/usr/bin/iozone').splitlines()]
    assert [t[0] for t in tl] == order
    assert {(t[1], t[2]) for t in tl} == {('/scratch/t', '/usr/bin/iozone')}
    slots = dict(line.split(' slots=') for line in pl.hostfile_slots().splitlines())
    assert {n: int(k) for n, k in slots.items()} == Counter(order)
    srun = pl.srun_args(cores_per_node=63)
    assert '--nodes=16' in srun and '--ntasks=1000' in srun
    assert '--distribution=cyclic' in srun and '--overcommit' not in srun
    assert hostlist.expand(srun[2].split('=', 1)[1]) == list(pl.nodes)


def test_overcommit_only_beyond_cores():
    pl = place('n[1-16]', 1024)                    # 64 per node
    assert '--overcommit' in pl.srun_args(cores_per_node=40)
    assert '--overcommit' not in pl.srun_args(cores_per_node=64)
    assert '--overcommit' not in pl.srun_args()    # cores unknown: Slurm decides
    assert '--oversubscribe' in pl.mpirun_args('h', cores_per_node=40)
    assert pl.mpirun_args('h')[:5] == ['-np', '1024', '--hostfile', 'h', '--map-by']


@pytest.mark.parametrize('threads', [0, -3, 2.0, True])
def test_refuses_bad_thread_counts(threads):
    with pytest.raises(ClusterproofError, match='thread count'):
        place('n[1-4]', threads)


def test_refuses_duplicate_and_bad_nodes():
    with pytest.raises(ClusterproofError, match="'n2' is listed twice"):
        place('n[1-3],n2', 4)
    with pytest.raises(ClusterproofError, match='not a client node name'):
        place(['n1', '-rf'], 2)
    with pytest.raises(ClusterproofError, match='white space'):
        place('n[1-2]', 2).threadlist('/a b', '/usr/bin/iozone')
    with pytest.raises(ClusterproofError, match='unknown format'):
        render(place('n1', 1), 'yaml')


@pytest.mark.slow
def test_command_line():
    out = subprocess.run(
        [str(VENV_BIN / 'clusterproof'), 'placement', '--nodes', 'n[1-4]', '--threads', '6',
         '--format', 'threadlist', '--workdir', '/s/x', '--iozone', '/opt/iozone'],
        capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert [l.split()[0] for l in out.stdout.splitlines()] == ['n1', 'n2', 'n3', 'n4', 'n1', 'n2']
    out = subprocess.run(
        [str(VENV_BIN / 'clusterproof'), 'placement', '--nodes', 'n[1-16]', '--threads', '64',
         '--format', 'srun', '--cores-per-node', '2'], capture_output=True, text=True, cwd=REPO)
    assert out.stdout == ("srun --nodes=16 --ntasks=64 '--nodelist=n[1-16]' "
                          "--distribution=cyclic --kill-on-bad-exit=1 --overcommit\n")
    bad = subprocess.run(
        [str(VENV_BIN / 'clusterproof'), 'placement', '--nodes', 'n[2-1]', '--threads', '2'],
        capture_output=True, text=True, cwd=REPO)
    assert bad.returncode == 2 and 'backwards' in bad.stderr


# ------------------------------------------- the storage benchmarks, declared

def test_storage_benchmarks_are_what_the_checks_declare():
    from clusterproof.methods import declared
    from clusterproof.methods import placement
    checks = {c.name: c for c in declared.storage_checks()}
    assert checks['IOzoneRandom'].benchmark == 'iozone'       # inherited from IOzoneBase
    assert not checks['IOzoneRandom'].mpi and checks['Mdtest'].mpi
    assert set(declared.storage_benchmarks()) >= {'iozone', 'ior', 'mdtest'}
    plan = declared.plan_names(declared.published_plan())
    assert list(plan) == ['iozone-sequential', 'iozone-random', 'ior', 'mdtest']
    # placement's thread limits accept exactly the declared benchmarks
    for benchmark in declared.storage_benchmarks():
        assert placement.declared_limit({'max_threads': {benchmark: 8}}, benchmark) == \
            (8, f"extras['storage']['max_threads'][{benchmark!r}]")
    with pytest.raises(ClusterproofError, match="'fio': not a storage benchmark"):
        placement.declared_limit({'max_threads': {'fio': 4}}, 'ior')


def test_a_new_storage_check_joins_the_lists(tmp_path):
    from clusterproof.methods import declared
    (tmp_path / 'mine.py').write_text(
        'class Base(rfm.RunOnlyRegressionTest, StorageScale, RoundRobinRanks):\n'
        "    benchmark = 'mine'\n\n"
        '@rfm.simple_test\nclass MineA(Base):\n    published_plan = 2\n\n'
        '@rfm.simple_test\nclass MineB(Base):\n    pass\n\n'
        '@rfm.simple_test\nclass NotStorage(rfm.RunOnlyRegressionTest):\n'
        "    benchmark = 'other'\n")
    assert declared.storage_benchmarks(tmp_path) == ('mine',)
    assert [c.name for c in declared.published_plan(tmp_path)] == ['MineA']
    assert declared.plan_names(declared.storage_checks(tmp_path)) == \
        {'mine-a': 'MineA', 'mine-b': 'MineB'}
    (tmp_path / 'bad').mkdir()
    (tmp_path / 'bad' / 'bad.py').write_text('@rfm.simple_test\nclass Bad(StorageScale):\n'
                                             '    pass\n')
    with pytest.raises(ClusterproofError, match=r'bad\.py: storage check Bad sets no benchmark'):
        declared.storage_checks(tmp_path / 'bad')
