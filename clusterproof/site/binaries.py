"""Find the benchmark binaries and say where they came from.

A check looks for its executable in the Spack environment's view first
(``.spack-env/view/bin`` of the repository, or ``$CLUSTERPROOF_SPACK_VIEW``),
then on ``PATH`` (the Debian packages on ``local`` and ``emu``). When it is
missing the check is skipped with the exact command that builds it.

Provenance of a binary from the view is the concretized spec of the root
that installed it, read from the environment's ``spack.lock`` (plain JSON:
Spack is not needed at run time), and the sha256 of that lock file, which is
copied once into the run's results (``<results>/spack/spack.lock.<hash>``)
so the run can be rebuilt later. A binary a check compiles itself records
the compiler and the sha256 of its source files instead.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from clusterproof import ClusterproofError
from clusterproof.paths import REPO, results_dir

#: digits of a sha256 kept in names and records (64 bits: no collision in practice)
HASH_DIGITS = 16

#: STREAM's source, fetched and checked by ``make setup``
#: (``scripts/setup.d/stream.sh``): the Stream check builds it where Spack's
#: ``stream_c.exe`` is absent
STREAM_SOURCE = REPO / '.venv' / 'share' / 'clusterproof' / 'stream' / 'stream.c'


def spack_env_dir():
    """The Spack environment: the repository root (``spack.yaml``), or
    ``$CLUSTERPROOF_SPACK_ENV``."""
    return Path(os.environ.get('CLUSTERPROOF_SPACK_ENV') or REPO)


def spack_view():
    """The environment's view (``view: default: root:`` in ``spack.yaml``)."""
    return Path(os.environ.get('CLUSTERPROOF_SPACK_VIEW')
                or spack_env_dir() / '.spack-env' / 'view')


def spack_lock_path():
    return spack_env_dir() / 'spack.lock'


@dataclass
class Binary:
    name: str
    path: str
    source: str                  # 'spack', 'path' or 'built'
    version: str = ''
    spack_spec: str = ''
    spack_lock_hash: str = ''
    spack_lock_copy: str = ''
    extra: dict = field(default_factory=dict)


def build_command(spec):
    """What a user types to build the binary that provides ``spec``."""
    return f'spack -e . install {spec}'


def locate(executable, view_subdirs=('bin',)):
    """Path of ``executable``: the Spack view first, then PATH; None if absent."""
    view = spack_view()
    for sub in view_subdirs:
        cand = view / sub / executable
        if cand.is_file() and os.access(cand, os.X_OK):
            return Binary(executable, str(cand), 'spack')
    found = shutil.which(executable)
    if found:
        return Binary(executable, found, 'path')
    return None


def program_version(argv, pattern=r'(\d+(?:\.\d+)+\S*)', timeout=20):
    """Run ``argv`` (e.g. ``['fio', '--version']``) and return the first
    version-looking string of its output, or '' if there is none."""
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return ''
    m = re.search(pattern, out.stdout + out.stderr)
    return m.group(1) if m else ''


# -- spack.lock -------------------------------------------------------------

def file_sha256(path):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for block in iter(lambda: f.read(1 << 20), b''):
            h.update(block)
    return h.hexdigest()


def read_lock(path):
    """The parsed ``spack.lock`` at ``path``; ClusterproofError naming the
    file and what is wrong when it is not a Spack lock file."""
    try:
        with open(path) as f:
            lock = json.load(f)
    except OSError as err:
        raise ClusterproofError(f'{path}: cannot read the Spack lock file: {err.strerror}; '
                                f'run: spack -e . concretize') from None
    except ValueError as err:
        raise ClusterproofError(f'{path}: not JSON ({err}); a spack.lock is written by '
                                f'spack -e . concretize') from None
    if not isinstance(lock, dict) or lock.get('_meta', {}).get('file-type') != 'spack-lockfile':
        raise ClusterproofError(f"{path}: not a Spack lock file (no _meta.file-type "
                                f"'spack-lockfile')")
    for key in ('roots', 'concrete_specs'):
        if key not in lock:
            raise ClusterproofError(f'{path}: Spack lock file without {key!r}')
    return lock


def _variant_text(name, value):
    if isinstance(value, bool):
        return ('+' if value else '~') + name
    if isinstance(value, list):
        return f'{name}:={",".join(str(v) for v in value)}' if value else ''
    return f'{name}={value}'


def spec_string(lock, dag_hash):
    """The concretized spec ``dag_hash`` of ``lock`` in Spack's spec syntax:
    ``name@version`` with every variant, the architecture, the compilers of
    its languages, ``external=<prefix>`` for an external, and ``/hash``."""
    specs = lock['concrete_specs']
    if dag_hash not in specs:
        raise ClusterproofError(f'spack.lock: no concrete spec with hash {dag_hash}')
    node = specs[dag_hash]
    flags = ('cflags', 'cppflags', 'cxxflags', 'fflags', 'ldflags', 'ldlibs')
    params = node.get('parameters', {})
    bools = ''.join(_variant_text(k, v) for k, v in sorted(params.items())
                    if isinstance(v, bool))
    others = [_variant_text(k, v) for k, v in sorted(params.items())
              if not isinstance(v, bool) and not (k in flags and not v)]
    text = f"{node.get('namespace', '')}.{node['name']}@{node['version']}{bools}"
    text = text.lstrip('.')
    parts = [text] + [o for o in others if o]
    arch = node.get('arch', {})
    if arch:
        target = arch.get('target')
        if isinstance(target, dict):
            target = target.get('name')
        parts.append(f"arch={arch.get('platform')}-{arch.get('platform_os')}-{target}")
    compilers = {}
    for dep in node.get('dependencies', []):
        langs = [v for v in dep.get('parameters', {}).get('virtuals', [])
                 if v in ('c', 'cxx', 'fortran')]
        if langs and dep['hash'] in specs:
            comp = specs[dep['hash']]
            compilers.setdefault(f"{comp['name']}@{comp['version']}", []).extend(langs)
    for comp, langs in sorted(compilers.items()):
        parts.append(f'%{",".join(langs)}={comp}')
    if node.get('external'):
        parts.append(f"external={node['external'].get('path') or node['external'].get('module')}")
    parts.append(f'/{dag_hash}')
    return ' '.join(parts)


def _root_hashes(lock):
    return [r['hash'] for r in lock['roots']]


def root_for_binary(lock, binary_path, package=None):
    """Hash of the root spec of ``lock`` that installed ``binary_path``.

    The view links each file to its install prefix, whose name ends in the
    spec's hash (``<name>-<version>-<hash>``): the resolved path names the
    root; a prefix whose hash the lock does not list gives None (the view
    was installed from another lock). Where the view copies files instead of
    linking them, ``package`` (e.g. ``'ior'`` from ``'ior@4.0.0'``) names it:
    ``unify: true`` keeps one spec per package. None if nothing finds it."""
    roots = _root_hashes(lock)
    parts = Path(os.path.realpath(binary_path)).parts
    prefix_hashes = [m.group(1) for m in
                     (re.search(r'-([a-z2-7]{32})$', part) for part in parts) if m]
    if prefix_hashes:
        # a Spack install prefix: its hash is the answer, in the lock or not
        return prefix_hashes[-1] if prefix_hashes[-1] in roots else None
    for part in parts:              # projections with a short hash ({hash:7})
        m = re.search(r'-([a-z2-7]{7,31})$', part)
        if m:
            hits = [h for h in roots if h.startswith(m.group(1))]
            if len(hits) == 1:
                return hits[0]
    if package:
        hits = [h for h in roots if lock['concrete_specs'].get(h, {}).get('name') == package]
        if len(hits) == 1:
            return hits[0]
    return None


def package_of(spec):
    """``'ior'`` of ``'ior@4.0.0 +lustre'``; '' when spec is empty."""
    m = re.match(r'\s*(?:[\w-]+\.)?([a-z0-9][\w-]*)', spec or '')
    return m.group(1) if m else ''


def keep_lock(lock_path, results=None):
    """Copy ``lock_path`` to ``<results>/spack/spack.lock.<hash>`` unless a
    copy is already there; return (hash, path of the copy). The copy is
    written under a temporary name and renamed, so it is whole or absent."""
    digest = file_sha256(lock_path)[:HASH_DIGITS]
    dest_dir = Path(results or results_dir()) / 'spack'
    dest = dest_dir / f'spack.lock.{digest}'
    if not dest.is_file():
        dest_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=dest_dir, prefix='.spack.lock.')
        try:
            with os.fdopen(fd, 'wb') as out, open(lock_path, 'rb') as src:
                shutil.copyfileobj(src, out)
            os.replace(tmp, dest)
        except BaseException:
            os.unlink(tmp)
            raise
    return digest, str(dest)


def spack_provenance(binary, spec='', lock_path=None, results=None):
    """Fill ``binary.spack_spec``, ``spack_lock_hash`` and ``spack_lock_copy``
    for a binary found in the view; returns ``binary``.

    ClusterproofError when the lock file is missing or does not list the
    root that installed the binary: the view and ``spack.lock`` disagree."""
    lock_path = Path(lock_path or spack_lock_path())
    lock = read_lock(lock_path)
    root = root_for_binary(lock, binary.path, package_of(spec))
    if root is None:
        raise ClusterproofError(
            f'{binary.path}: no root spec of {lock_path} installed this binary '
            f'(the view and the lock file disagree); run: spack -e . install')
    binary.spack_spec = spec_string(lock, root)
    binary.spack_lock_hash, binary.spack_lock_copy = keep_lock(lock_path, results)
    return binary


# -- binaries a check builds itself ------------------------------------------

def sources_sha256(source_files):
    """sha256 over the files' names and contents, in sorted name order."""
    h = hashlib.sha256()
    for path in sorted(str(p) for p in source_files):
        h.update(os.path.basename(path).encode() + b'\0')
        try:
            h.update(Path(path).read_bytes())
        except OSError as err:
            raise ClusterproofError(f'{path}: cannot read source file: {err.strerror}') from None
        h.update(b'\0')
    return h.hexdigest()


def built_binary(path, source_files, compiler_version):
    """Provenance of a binary built by a check (a ReFrame build fixture): the
    compiler and the hash of its sources, in place of a Spack spec."""
    if not source_files:
        raise ClusterproofError(f'{path}: no source files given for its provenance')
    digest = sources_sha256(source_files)[:HASH_DIGITS]
    names = ','.join(sorted(os.path.basename(str(p)) for p in source_files))
    return Binary(os.path.basename(str(path)), str(path), 'built',
                  version=f'built from {names} sha256:{digest} '
                          f'with {compiler_version or "unknown compiler"}',
                  extra={'source_sha256': digest, 'compiler': compiler_version})
