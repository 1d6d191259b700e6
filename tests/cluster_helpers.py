"""Shared by the local-cluster tests (tests/cluster, tests/suite): what an
instance leaves behind, and the session's cluster replaced for a block."""

import contextlib
import os
import subprocess
from pathlib import Path

from clusterproof import cluster as lc
from conftest import EMU_INSTANCE, VENV_BIN, WAIT_S, emu_cluster_exclusive


def _cluster(*args):
    return subprocess.run([str(VENV_BIN / 'clusterproof'), 'cluster', *args], env=dict(os.environ),
                          capture_output=True, text=True, timeout=WAIT_S)


def leftovers(k):
    """Processes, namespaces, links, mounts and run-time files (pid files,
    sockets, cluster.json) of instance k (none when down)."""
    inst = lc.Instance(k)
    found = [ln for ln in lc.links() if inst.owns_link(ln)]
    found += [ns for ns in lc.netns_list() if inst.owns_netns(ns)]
    run_dir = str(inst.default_run_dir())
    found += [line for line in Path('/proc/self/mounts').read_text().splitlines()
              if run_dir + '/' in line]
    root = Path(run_dir)
    if root.is_dir():
        found += [str(p) for p in root.rglob('*') if p.is_socket() or p.suffix == '.pid']
        found += [str(p) for p in (root / 'cluster.json',) if p.exists()]
    for proc in Path('/proc').iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / 'cmdline').read_bytes().replace(b'\0', b' ').decode(errors='replace')
            env = (proc / 'environ').read_bytes().decode(errors='replace')
        except OSError:
            continue
        if cmd and (run_dir + '/') in cmd + env and lc.alive(int(proc.name)):
            found.append(f'pid {proc.name}: {cmd.strip()}')
    return found


@contextlib.contextmanager
def session_cluster_replaced():
    """The session's cluster brought down for the block, which brings up
    another at the same instance and run directory (``--instance K
    --run-dir DIR``, yielded); then brought back up as it was."""
    with emu_cluster_exclusive():
        k = EMU_INSTANCE
        spec = lc.load_spec(k, lc.Instance(k).default_run_dir())
        rd = ['--instance', str(k), '--run-dir', str(spec.run_dir)]
        assert _cluster('down', '--force', *rd).returncode == 0
        try:
            yield rd
        finally:
            _cluster('down', '--force', *rd)
            proc = _cluster('up', *rd, '--nodes', str(spec.nodes),
                            '--cpus-per-node', str(spec.cpus), '--mem-per-node', str(spec.mem))
            assert proc.returncode == 0, proc.stdout + proc.stderr
