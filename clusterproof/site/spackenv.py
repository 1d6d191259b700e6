"""The Spack environment of the repository (``spack.yaml``, ``spack/``):
which systems it knows, which specs it pins, and how to run Spack on it.

Spack itself is optional: nothing here imports it, and every function that
needs the ``spack`` command says how to get it when it is missing.
"""

import os
import shutil
import subprocess
from pathlib import Path

import yaml

from clusterproof import ClusterproofError
from clusterproof.site.binaries import package_of, spack_env_dir, spack_lock_path

#: environment variable that selects spack/systems/<system>/ in spack.yaml
SYSTEM_VAR = 'CLUSTERPROOF_SYSTEM'
DEFAULT_SYSTEM = 'local'

#: Spack release the environment is written for and tested with
SPACK_RELEASE = 'v1.1.0'
#: spack-packages release branch whose builtin packages it uses
PACKAGES_RELEASE = 'releases/v2025.11'

HOW_TO_GET_SPACK = f'''\
spack is not on PATH. Get Spack {SPACK_RELEASE} (it fetches its builtin packages, branch
{PACKAGES_RELEASE}, on first use):
  git clone --depth 1 --branch {SPACK_RELEASE} https://github.com/spack/spack.git ~/spack
  . ~/spack/share/spack/setup-env.sh
Without internet, give Spack clingo from PyPI and a local copy of spack-packages:
  python3 -m venv ~/spack-python && ~/spack-python/bin/pip install clingo
  export SPACK_PYTHON=~/spack-python/bin/python
  spack repo add --scope site <spack-packages>/repos/spack_repo/builtin
Then run this command again. See docs/spack.md.'''

#: file in the environment's .spack-env/ naming the system spack.lock was concretized for
SYSTEM_MARKER = Path('.spack-env') / 'clusterproof-system'


def manifest_path(env_dir=None):
    return Path(env_dir or spack_env_dir()) / 'spack.yaml'


def load_manifest(env_dir=None):
    """``spack.yaml`` as data; ClusterproofError naming the file if it is
    missing or not YAML with a top-level ``spack:`` mapping."""
    path = manifest_path(env_dir)
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as err:
        raise ClusterproofError(f'{path}: cannot read the Spack environment: '
                                f'{err.strerror}') from None
    except yaml.YAMLError as err:
        raise ClusterproofError(f'{path}: not valid YAML: {err}') from None
    if not isinstance(data, dict) or not isinstance(data.get('spack'), dict):
        raise ClusterproofError(f'{path}: no top-level "spack:" mapping')
    return data['spack']


def root_specs(env_dir=None):
    """The abstract root specs of ``spack.yaml``, as written."""
    specs = load_manifest(env_dir).get('specs', [])
    if not all(isinstance(s, str) for s in specs):
        raise ClusterproofError(f'{manifest_path(env_dir)}: specs: every entry must be a '
                                f'spec string (matrices are not used here)')
    return list(specs)


def pinned_spec(package, env_dir=None):
    """The root spec of ``spack.yaml`` that pins ``package`` (``'ior'`` ->
    ``'ior@4.0.0'``): the one place a benchmark's version is written. The
    checks ask for it by package name; a package that is not a root spec is
    an error naming spack.yaml."""
    specs = root_specs(env_dir)
    for spec in specs:
        if package_of(spec) == package:
            return spec
    raise ClusterproofError(
        f'{manifest_path(env_dir)}: no root spec pins {package!r} (specs: '
        f'{", ".join(package_of(s) for s in specs)}); add it under spack: specs:')


def systems(env_dir=None):
    """Systems with Spack settings: the directories of ``spack/systems/``."""
    base = Path(env_dir or spack_env_dir()) / 'spack' / 'systems'
    return sorted(p.name for p in base.iterdir() if p.is_dir()) if base.is_dir() else []


def check_system(system, env_dir=None):
    known = systems(env_dir)
    if system not in known:
        raise ClusterproofError(
            f'no Spack settings for system {system!r}: spack/systems/ has '
            f'{", ".join(known) or "nothing"}; add spack/systems/{system}/ and an include '
            f'entry in spack.yaml (docs/spack.md, "Adding a site")')
    return system


def default_system():
    return os.environ.get(SYSTEM_VAR) or DEFAULT_SYSTEM


def spack_command():
    """Path of the ``spack`` command; ClusterproofError saying how to get it."""
    found = shutil.which('spack')
    if not found:
        raise ClusterproofError(HOW_TO_GET_SPACK)
    return found


def concretized_system(env_dir=None):
    """The system the current spack.lock was concretized for, or ''."""
    marker = Path(env_dir or spack_env_dir()) / SYSTEM_MARKER
    try:
        return marker.read_text().strip()
    except OSError:
        return ''


def run_spack(args, system, env_dir=None):
    """Run ``spack -e <env> <args>`` with the system selected; its exit status."""
    env_dir = Path(env_dir or spack_env_dir())
    argv = [spack_command(), '-e', str(env_dir)] + list(args)
    env = dict(os.environ, **{SYSTEM_VAR: system})
    print(f'+ {SYSTEM_VAR}={system} {" ".join(argv)}', flush=True)
    return subprocess.run(argv, env=env, cwd=env_dir).returncode


def concretize(system, force=False, env_dir=None):
    """``spack -e . concretize`` for ``system``; forced when asked or when
    spack.lock was concretized for another system. Records the system."""
    env_dir = Path(env_dir or spack_env_dir())
    before = concretized_system(env_dir)
    force = force or before != system or not spack_lock_path().is_file()
    status = run_spack(['concretize'] + (['--force'] if force else []), system, env_dir)
    if status == 0:
        marker = env_dir / SYSTEM_MARKER
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(system + '\n')
    return status
