"""The Spack environment (spack.yaml, spack/), binary provenance from
spack.lock, and -- where spack is on PATH -- a real concretization and a real
install of the project's own package.

The provenance tests read a lock file recorded from a real concretization
(tests/data/spack/README.md says how it was made).
"""

import ast
import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from clusterproof import ClusterproofError
from clusterproof.site import binaries
from clusterproof.site import spackenv
from conftest import DATA, REPO, WAIT_S, run_reframe

SPACK_DATA = DATA / 'spack'
LOCK = SPACK_DATA / 'spack.lock.local'
REPO_PKGS = REPO / 'spack' / 'repo' / 'spack_repo' / 'clusterproof'

need_spack = pytest.mark.skipif(shutil.which('spack') is None,
                                reason='spack is not on PATH (docs/spack.md says how to get it)')


def manifest():
    return yaml.safe_load((REPO / 'spack.yaml').read_text())['spack']


def pinned_versions():
    """package name -> (version, rest) of each root spec of spack.yaml."""
    out = {}
    for spec in spackenv.root_specs(REPO):
        m = re.match(r'([a-z0-9-]+)(?:@(\S+))?\s*(.*)$', spec)
        out[m.group(1)] = (m.group(2), m.group(3).replace(' ', ''))
    return out


# -- spack.yaml ---------------------------------------------------------------

def test_documented_packages_are_pinned():
    """docs/spack.md names packages without versions (spack.yaml is the one
    place a version is written), and only packages spack.yaml pins; the
    variants the checks need are there."""
    section = (REPO / 'docs' / 'spack.md').read_text().split('## What it pins')[1].split('\n## ')[0]
    documented = re.findall(r'^\| `([^`]+)` \|', section, re.M)
    pins = pinned_versions()
    assert documented and set(documented) <= set(pins), set(documented) - set(pins)
    assert not [d for d in documented if '@' in d]
    assert pins['stream'][1] == '+openmp'
    assert pins['fio'][1] == '+pmem'
    assert 'mpi' in pins


def test_pinned_spec_is_read_from_spack_yaml():
    assert spackenv.pinned_spec('ior', REPO) == 'ior@4.0.0'
    assert spackenv.pinned_spec('fio', REPO) == 'fio@3.37 +pmem'
    with pytest.raises(ClusterproofError, match=r"spack.yaml: no root spec pins 'imb'"):
        spackenv.pinned_spec('imb', REPO)


def _check_specs():
    """(file, executable, package) of every use_binary call in
    reframe_checks/: its spec must come from ``pinned_spec('<package>')``,
    in the call or through a module-level constant."""
    def pinned_package(node):
        if (isinstance(node, ast.Call) and getattr(node.func, 'id', None) == 'pinned_spec'
                and node.args and isinstance(node.args[0], ast.Constant)):
            return node.args[0].value
        return None

    found = []
    for path in sorted((REPO / 'reframe_checks').glob('*.py')):
        tree = ast.parse(path.read_text(), str(path))
        consts = {t.id: pinned_package(n.value) for n in tree.body if isinstance(n, ast.Assign)
                  for t in n.targets if isinstance(t, ast.Name)}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == 'use_binary' and len(node.args) >= 2):
                arg = node.args[1]
                package = pinned_package(arg) or consts.get(getattr(arg, 'id', None))
                found.append((path.name, ast.unparse(node.args[0]), package))
    return found


def test_every_binary_the_checks_use_is_pinned():
    uses = _check_specs()
    assert uses, 'no use_binary call found in reframe_checks/'
    pins = pinned_versions()
    for fname, exe, package in uses:
        assert package, (f'{fname}: use_binary({exe}, ...) does not take its spec from '
                         f"pinned_spec('<package>') (spack.yaml is the one place of a version)")
        assert package in pins, f'{fname}: {package} is not a root spec of spack.yaml'


def test_default_mpi_is_openmpi_4_1_8_with_slurm_and_pmix_4_2_9():
    defaults = yaml.safe_load((REPO / 'spack' / 'defaults' / 'packages.yaml').read_text())
    pkgs = defaults['packages']
    assert pkgs['mpi']['require'] == ['openmpi']
    assert pkgs['openmpi']['require'] == ['@4.1.8 schedulers=slurm +pmi']
    assert pkgs['pmix']['require'] == ['@4.2.9']


def test_environment_settings():
    env = manifest()
    assert env['concretizer']['unify'] is True
    # the view is where clusterproof.site.binaries looks
    view = env['view']['default']['root']
    assert (REPO / view) == binaries.spack_view() or 'CLUSTERPROOF_SPACK_VIEW' in os.environ
    # compilers through the language virtuals, never on `all`
    for lang in ('c', 'cxx', 'fortran'):
        assert env['packages'][lang]['require'] == ['gcc']
    assert 'all' not in env['packages']
    # the project's repository is declared and is a Spack 1.x repository
    repo = REPO / env['repos']['clusterproof']
    assert yaml.safe_load((repo / 'repo.yaml').read_text())['repo']['namespace'] == 'clusterproof'
    # mmap-sweep is built from the checkout
    dev = env['develop']['mmap-sweep']
    assert (REPO / dev['path'] / 'Makefile').is_file()
    assert dev['spec'] == 'mmap-sweep@=develop'


def test_every_system_directory_is_included_and_selected_by_the_system():
    env = manifest()
    includes = {Path(i['path']).name: i for i in env['include'] if 'systems' in i['path']}
    assert sorted(includes) == spackenv.systems(REPO)
    assert {'local', 'emu', 'minerva', 'pixstor', 'pmserver'} <= set(includes)
    for system, inc in includes.items():
        # evaluated the way Spack evaluates `when:` (Python, `env` = os.environ)
        assert eval(inc['when'], {'env': {'CLUSTERPROOF_SYSTEM': system}}) is True
        others = [s for s in includes if s != system]
        assert not any(eval(includes[o]['when'], {'env': {'CLUSTERPROOF_SYSTEM': system}})
                       for o in others)
    assert eval(includes['local']['when'], {'env': {}}) is True
    # the defaults come after (below) every system
    paths = [i['path'] for i in env['include']]
    assert paths[-1] == 'spack/defaults'


@pytest.mark.parametrize('system', ['local', 'emu', 'minerva', 'pixstor', 'pmserver'])
def test_system_settings_are_valid(system):
    d = REPO / 'spack' / 'systems' / system
    files = sorted(d.glob('*.yaml'))
    assert files
    for f in files:
        data = yaml.safe_load(f.read_text())
        assert isinstance(data, dict) and len(data) == 1, f
        assert f.stem == next(iter(data)), f'{f}: top-level key must be {f.stem}'
    pkgs = yaml.safe_load((d / 'packages.yaml').read_text())['packages']
    # no compiler requirement on `all` (it breaks externals)
    assert 'require' not in pkgs.get('all', {})
    for name, entry in pkgs.items():
        for ext in entry.get('externals', []):
            assert ext['spec'].split('@')[0].split()[0] == name.rstrip(':')
            assert ext.get('prefix') or ext.get('modules')


def test_local_externals_are_the_debian_packages_that_meet_the_pins():
    pkgs = yaml.safe_load((REPO / 'spack' / 'systems' / 'local' / 'packages.yaml')
                          .read_text())['packages']
    assert pkgs['slurm']['externals'][0]['spec'].startswith('slurm@22-05-8-1')
    assert pkgs['openmpi:']['externals'][0]['spec'].startswith('openmpi@4.1.4')
    assert pkgs['pmdk']['externals'][0]['spec'] == 'pmdk@1.12.1'
    # Debian's fio 3.33 and iozone 3.489 do not meet the pins: not externals
    assert 'fio' not in pkgs and 'iozone' not in pkgs


# -- the project's packages -----------------------------------------------------

def _package_tree(name):
    path = REPO_PKGS / 'packages' / name / 'package.py'
    return path, ast.parse(path.read_text(), str(path))


def _calls(tree, fname):
    return [c for c in ast.walk(tree) if isinstance(c, ast.Call)
            and isinstance(c.func, ast.Name) and c.func.id == fname]


def test_mmap_sweep_package():
    path, tree = _package_tree('mmap_sweep')
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    assert [c.name for c in classes] == ['MmapSweep']
    assert [ast.literal_eval(c.args[0]) for c in _calls(tree, 'version')] == ['develop']
    deps = [ast.literal_eval(c.args[0]) for c in _calls(tree, 'depends_on')]
    assert deps == ['c']
    assert 'build_directory' in path.read_text()       # out of the checkout


def test_fio_package_has_a_deliberate_pmem_variant():
    path, tree = _package_tree('fio')
    text = path.read_text()
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    assert [c.name for c in classes] == ['Fio']
    assert ast.unparse(classes[0].bases[0]) == 'BuiltinFio'
    variants = {ast.literal_eval(c.args[0]): c for c in _calls(tree, 'variant')}
    assert 'pmem' in variants
    dep = [c for c in _calls(tree, 'depends_on') if ast.literal_eval(c.args[0]).startswith('pmdk')]
    assert dep and {k.arg: ast.literal_eval(k.value) for k in dep[0].keywords} == {'when': '+pmem'}
    assert '--disable-pmem' in text
    assert 'CONFIG_LIBPMEM' in text


def test_fio_3_37_configure_knows_disable_pmem():
    """The switch the package passes exists in fio 3.37 (recorded from its configure)."""
    help_text = (SPACK_DATA / 'fio-3.37-configure-pmem.txt').read_text()
    assert '--disable-pmem' in help_text


# -- provenance from spack.lock ---------------------------------------------------

def recorded_lock():
    return binaries.read_lock(LOCK)


def root_hash(lock, name):
    return next(r['hash'] for r in lock['roots']
                if lock['concrete_specs'][r['hash']]['name'] == name)


def test_spec_string_from_the_recorded_lock():
    lock = recorded_lock()
    fio = binaries.spec_string(lock, root_hash(lock, 'fio'))
    assert fio.startswith('clusterproof.fio@3.37')
    assert '+pmem' in fio and '~libaio' in fio
    assert '%c=gcc@12.2.0' in fio
    assert fio.endswith('/' + root_hash(lock, 'fio'))
    mpi = binaries.spec_string(lock, root_hash(lock, 'openmpi'))
    assert 'openmpi@4.1.4' in mpi and 'external=/usr' in mpi and 'schedulers:=slurm' in mpi
    sweep = binaries.spec_string(lock, root_hash(lock, 'mmap-sweep'))
    assert sweep.startswith('clusterproof.mmap-sweep@develop')


def test_default_mpi_as_concretized_for_a_cluster():
    """minerva keeps the default MPI: openmpi 4.1.8 with Slurm, PMI, PMIx
    4.2.9 and UCX with the InfiniBand transports, for zen2."""
    lock = binaries.read_lock(SPACK_DATA / 'spack.lock.minerva')
    specs = lock['concrete_specs']
    mpi = specs[root_hash(lock, 'openmpi')]
    assert mpi['version'] == '4.1.8'
    assert mpi['parameters']['schedulers'] == ['slurm'] and mpi['parameters']['pmi'] is True
    assert mpi['arch']['target'] == 'zen2' or mpi['arch']['target'].get('name') == 'zen2'
    deps = {specs[d['hash']]['name']: specs[d['hash']] for d in mpi['dependencies']}
    assert deps['pmix']['version'] == '4.2.9'
    assert deps['slurm']['external']['path'] == '/usr'
    assert all(deps['ucx']['parameters'][v] for v in ('verbs', 'rc', 'ud', 'dc', 'mlx5_dv'))
    assert 'fabrics:=ucx' in binaries.spec_string(lock, root_hash(lock, 'openmpi'))


def make_view(tmp_path, lock, name, exe):
    """A real install prefix named like Spack's, and a view linking to it."""
    h = root_hash(lock, name)
    version = lock['concrete_specs'][h]['version']
    prefix = tmp_path / 'store' / 'linux-x86_64_v4' / f'{name}-{version}-{h}'
    (prefix / 'bin').mkdir(parents=True)
    target = prefix / 'bin' / exe
    target.write_text('#!/bin/sh\necho "%s version %s"\n' % (exe, version))
    target.chmod(0o755)
    view = tmp_path / 'env' / '.spack-env' / 'view'
    (view / 'bin').mkdir(parents=True, exist_ok=True)
    (view / 'bin' / exe).symlink_to(target)
    shutil.copy(LOCK, tmp_path / 'env' / 'spack.lock')
    return view, h


def test_root_for_binary_follows_the_view_link(tmp_path):
    lock = recorded_lock()
    view, h = make_view(tmp_path, lock, 'mmap-sweep', 'mmap_sweep')
    assert binaries.root_for_binary(lock, str(view / 'bin' / 'mmap_sweep')) == h
    # a copied file (no link) is found through the package name
    copied = tmp_path / 'copied'
    shutil.copy(view / 'bin' / 'mmap_sweep', copied)
    assert binaries.root_for_binary(lock, str(copied)) is None
    assert binaries.root_for_binary(lock, str(copied), 'mmap-sweep') == h


def test_spack_provenance_keeps_the_lock_once(tmp_path, monkeypatch):
    lock = recorded_lock()
    view, h = make_view(tmp_path, lock, 'fio', 'fio')
    monkeypatch.setenv('CLUSTERPROOF_SPACK_ENV', str(tmp_path / 'env'))
    monkeypatch.delenv('CLUSTERPROOF_SPACK_VIEW', raising=False)
    results = tmp_path / 'results'
    found = binaries.locate('fio')
    assert found.source == 'spack' and found.path == str(view / 'bin' / 'fio')
    binaries.spack_provenance(found, 'fio@3.37+pmem', results=results)
    digest = hashlib.sha256(LOCK.read_bytes()).hexdigest()[:16]
    assert found.spack_lock_hash == digest
    copy = results / 'spack' / f'spack.lock.{digest}'
    assert found.spack_lock_copy == str(copy)
    assert copy.read_bytes() == LOCK.read_bytes()
    assert found.spack_spec.endswith('/' + h) and '+pmem' in found.spack_spec
    # a second binary of the same run does not copy the lock again
    before = copy.stat().st_mtime_ns
    again = binaries.spack_provenance(binaries.locate('fio'), 'fio', results=results)
    assert again.spack_lock_copy == str(copy) and copy.stat().st_mtime_ns == before
    assert [p.name for p in (results / 'spack').iterdir()] == [copy.name]


def test_spack_provenance_fails_when_view_and_lock_disagree(tmp_path):
    exe = tmp_path / 'store' / ('fio-3.37-' + 'a' * 32) / 'bin' / 'fio'   # not in the lock
    exe.parent.mkdir(parents=True)
    exe.write_text('')
    b = binaries.Binary('fio', str(exe), 'spack')
    with pytest.raises(ClusterproofError, match='no root spec of .* installed this binary'):
        binaries.spack_provenance(b, 'fio@3.37', lock_path=LOCK, results=tmp_path / 'r')
    assert not (tmp_path / 'r').exists()


def test_read_lock_names_the_file_and_the_problem(tmp_path):
    bad = tmp_path / 'spack.lock'
    bad.write_text('{"roots": [')
    with pytest.raises(ClusterproofError, match=rf'{bad}: not JSON'):
        binaries.read_lock(bad)
    bad.write_text(json.dumps({'roots': []}))
    with pytest.raises(ClusterproofError, match='not a Spack lock file'):
        binaries.read_lock(bad)
    with pytest.raises(ClusterproofError, match='cannot read'):
        binaries.read_lock(tmp_path / 'missing.lock')


def test_built_binary_provenance_is_compiler_and_source_hash(tmp_path):
    src = tmp_path / 'a.c'
    src.write_text('int main(void) { return 0; }\n')
    mk = tmp_path / 'Makefile'
    mk.write_text('a: a.c\n')
    b = binaries.built_binary(tmp_path / 'a', [src, mk], 'gcc 12.2.0')
    digest = b.extra['source_sha256']
    assert b.source == 'built' and 'gcc 12.2.0' in b.version and digest in b.version
    assert binaries.built_binary(tmp_path / 'a', [mk, src], 'gcc 12.2.0').version == b.version
    src.write_text('int main(void) { return 1; }\n')
    assert binaries.built_binary(tmp_path / 'a', [src, mk], 'gcc 12.2.0').version != b.version
    with pytest.raises(ClusterproofError, match='cannot read source file'):
        binaries.built_binary(tmp_path / 'a', [tmp_path / 'gone.c'], 'gcc')


# -- checks record their binary (real ReFrame) ----------------------------------------

def test_checks_record_the_spack_spec_and_fail_without_provenance(tmp_path):
    lock = recorded_lock()
    make_view(tmp_path, lock, 'mmap-sweep', 'mmap_sweep')
    results = tmp_path / 'results'
    proc = run_reframe(['-c', str(REPO / 'tests' / 'checks' / 'spack' / 'provenance.py'), '-r',
                        '--system', 'local', '--report-file', str(tmp_path / 'report.json')],
                       results, extra_env={'CLUSTERPROOF_SPACK_ENV': str(tmp_path / 'env'),
                                           'CLUSTERPROOF_SPACK_VIEW': ''})
    report = json.loads((tmp_path / 'report.json').read_text())
    cases = {c['name']: c for run in report['runs'] for c in run['testcases']}
    ok = cases['SpackBinaryCheck']
    assert ok['result'] == 'pass', proc.stdout[-3000:]
    digest = hashlib.sha256(LOCK.read_bytes()).hexdigest()[:16]
    assert ok['spack_lock_hash'] == digest
    assert ok['spack_spec'].startswith('clusterproof.mmap-sweep@develop')
    assert ok['binary_path'].endswith('.spack-env/view/bin/mmap_sweep')
    assert ok['spack_lock_copy'] == str(results / 'spack' / f'spack.lock.{digest}')
    assert (results / 'spack' / f'spack.lock.{digest}').is_file()
    bad = cases['NoProvenanceCheck']
    assert bad['result'] == 'fail'
    assert 'no binary provenance' in (bad['fail_reason'] or '')


# -- the command -----------------------------------------------------------------

def test_command_says_how_to_get_spack(tmp_path):
    env = dict(os.environ, PATH=f'{tmp_path}:/usr/bin:/bin')
    clusterproof = REPO / '.venv' / 'bin' / 'clusterproof'
    proc = subprocess.run([str(clusterproof), 'spack', 'concretize', '--system', 'emu'],
                          capture_output=True, text=True, env=env, timeout=WAIT_S)
    if shutil.which('spack', path=env['PATH']):
        pytest.skip('spack is in /usr/bin')
    assert proc.returncode == 2
    assert 'spack is not on PATH' in proc.stderr
    assert 'git clone' in proc.stderr and 'setup-env.sh' in proc.stderr
    assert 'pip install clingo' in proc.stderr


def test_command_rejects_an_unknown_system():
    proc = subprocess.run([str(REPO / '.venv' / 'bin' / 'clusterproof'), 'spack', 'status',
                           '--system', 'nosuch'], capture_output=True, text=True, timeout=WAIT_S)
    assert proc.returncode == 2
    assert "no Spack settings for system 'nosuch'" in proc.stderr
    assert 'local' in proc.stderr and 'minerva' in proc.stderr


# -- with spack (skipped where it is not on PATH) --------------------------------------

@pytest.fixture(scope='module')
def env_copy(tmp_path_factory):
    """The environment copied out of the checkout (spack.yaml, spack/, the
    mmap-sweep source), so a test never rewrites the checkout's spack.lock."""
    d = tmp_path_factory.mktemp('spack-env')
    shutil.copy(REPO / 'spack.yaml', d)
    shutil.copytree(REPO / 'spack', d / 'spack')
    src = d / 'reframe_checks' / 'src' / 'mmap_sweep'
    src.mkdir(parents=True)
    for name in ('Makefile', 'mmap_sweep.c'):
        shutil.copy(REPO / 'reframe_checks' / 'src' / 'mmap_sweep' / name, src)
    return d


@need_spack
def test_spack_concretizes_every_pinned_version(env_copy):
    proc = subprocess.run(['spack', '-e', str(env_copy), 'concretize', '--force'],
                          capture_output=True, text=True, timeout=1200,
                          env=dict(os.environ, CLUSTERPROOF_SYSTEM='local'))
    assert proc.returncode == 0, proc.stderr[-3000:]
    lock = binaries.read_lock(env_copy / 'spack.lock')
    roots = {lock['concrete_specs'][r['hash']]['name']: lock['concrete_specs'][r['hash']]
             for r in lock['roots']}
    for name, (version, _variants) in pinned_versions().items():
        if version and version != 'develop':
            assert roots[name]['version'] == version, name
    assert roots['fio']['namespace'] == 'clusterproof' and roots['fio']['parameters']['pmem']
    assert roots['stream']['parameters']['openmp'] is True
    assert roots['openmpi']['version'] == '4.1.4'           # local: Debian's, the site MPI


@need_spack
def test_spack_installs_mmap_sweep_from_the_project_source(env_copy):
    if not (env_copy / 'spack.lock').is_file():
        pytest.skip('the concretization test did not run')
    proc = subprocess.run(['spack', '-e', str(env_copy), 'install', 'mmap-sweep'],
                          capture_output=True, text=True, timeout=900,
                          env=dict(os.environ, CLUSTERPROOF_SYSTEM='local'))
    assert proc.returncode == 0, proc.stderr[-3000:]
    exe = env_copy / '.spack-env' / 'view' / 'bin' / 'mmap_sweep'
    out = subprocess.run([str(exe), '--help'], capture_output=True, text=True, timeout=WAIT_S)
    assert out.returncode == 0 and '--size' in out.stdout + out.stderr
    # built out of the checkout: nothing left in the source directory
    src = env_copy / 'reframe_checks' / 'src' / 'mmap_sweep'
    assert sorted(p.name for p in src.iterdir()) == ['Makefile', 'mmap_sweep.c']
    lock = binaries.read_lock(env_copy / 'spack.lock')
    assert binaries.root_for_binary(lock, str(exe)) == root_hash(lock, 'mmap-sweep')


# -- what scripts/setup installs for the Spack externals ----------------------

def _setup_packages(repo=REPO):
    proc = subprocess.run(['bash', str(Path(repo) / 'scripts' / 'setup'), '--list-packages'],
                          capture_output=True, text=True, timeout=WAIT_S)
    return proc, proc.stdout.split()


def _externals(system):
    data = yaml.safe_load((REPO / 'spack' / 'systems' / system / 'packages.yaml').read_text())
    return {name.rstrip(':'): [e['spec'] for e in entry.get('externals', [])]
            for name, entry in data['packages'].items() if entry.get('externals')}


def test_setup_ensures_the_debian_packages_of_the_declared_externals():
    proc, listed = _setup_packages()
    assert proc.returncode == 0, proc.stderr
    for system in ('local', 'emu'):
        # fio+pmem links the pmdk external at /usr: its headers are libpmem-dev's
        assert _externals(system)['pmdk'] == ['pmdk@1.12.1']
    assert 'libpmem-dev' in listed and 'gfortran-12' in listed and 'cmake' in listed
    assert len(listed) == len(set(listed))
    if os.geteuid() != 0:
        return
    # `make test` ran the set-up as root: every package is there, and the
    # pmdk external really is the pinned version, found where fio's configure looks
    status = subprocess.run(['dpkg-query', '-W', '-f=${Package} ${Status}\n', *listed],
                            capture_output=True, text=True).stdout.splitlines()
    missing = [line for line in status if not line.endswith('install ok installed')]
    assert not missing and len(status) == len(listed), missing
    assert Path('/usr/include/libpmem.h').is_file()
    version = subprocess.run(['pkg-config', '--modversion', 'libpmem'], capture_output=True,
                             text=True).stdout.strip()
    assert f'pmdk@{version}' in spackenv.load_manifest()['specs']


def test_setup_refuses_an_external_it_cannot_install(tmp_path):
    (tmp_path / 'scripts').mkdir()
    shutil.copy(REPO / 'scripts' / 'setup', tmp_path / 'scripts' / 'setup')
    for system in ('local', 'emu'):
        shutil.copytree(REPO / 'spack' / 'systems' / system,
                        tmp_path / 'spack' / 'systems' / system)
    emu = tmp_path / 'spack' / 'systems' / 'emu' / 'packages.yaml'
    emu.write_text(emu.read_text() + '  libfabric:\n    externals:\n    - spec: libfabric@1.17.0\n'
                                     '      prefix: /usr\n')
    proc, _ = _setup_packages(tmp_path)
    assert proc.returncode == 1
    assert 'spack/systems/emu/packages.yaml declares the external libfabric' in proc.stderr
