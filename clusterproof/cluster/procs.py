"""Processes of the local cluster: running a program with one-line errors,
reading pid files and /proc, telling our daemons from anyone else's."""

import os
import subprocess
from pathlib import Path

from clusterproof import ClusterproofError


def run(cmd, env=None, check=True, **kw):
    """Run ``cmd`` capturing its output; with ``check``, a failure raises one
    line naming the program and its last message."""
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, **kw)
    if check and proc.returncode != 0:
        msg = (proc.stderr or proc.stdout).strip().splitlines()
        raise ClusterproofError(f'{Path(str(cmd[0])).name} {cmd[1] if len(cmd) > 1 else ""} '
                                f'failed (exit {proc.returncode}): '
                                f'{msg[-1] if msg else "no output"}')
    return proc


def pid_from(path):
    try:
        return int(Path(path).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def proc_text(pid, what):
    try:
        return (Path(f'/proc/{pid}/{what}').read_bytes().replace(b'\0', b' ')
                .decode(errors='replace'))
    except OSError:
        return None


def alive(pid):
    if not pid:
        return False
    stat = proc_text(pid, 'stat')
    if stat is None:
        return False
    # a zombie is not running
    return stat.rsplit(')', 1)[-1].split()[0] != 'Z'


def is_ours(pid, program, marker):
    """True if ``pid`` runs ``program`` and its command line or environment
    names ``marker`` (a path under this cluster's run directory)."""
    cmdline = proc_text(pid, 'cmdline')
    if not cmdline:
        return False
    argv0 = Path(cmdline.split()[0]).name
    if argv0 != program and not argv0.startswith(program):
        return False
    return marker in cmdline or marker in (proc_text(pid, 'environ') or '')


def slurm_job_of(pid):
    """Id of the Slurm job a process belongs to, or None: a step daemon
    names it on its command line (``slurmstepd: [12.0]``), a task has
    ``SLURM_JOB_ID`` in its environment."""
    cmdline = proc_text(pid, 'cmdline') or ''
    if cmdline.startswith('slurmstepd: ['):
        return cmdline[len('slurmstepd: ['):].split('.')[0].split(']')[0] or None
    for item in (proc_text(pid, 'environ') or '').split(' '):
        if item.startswith('SLURM_JOB_ID='):
            return item.split('=', 1)[1] or None
    return None


def write_file(path, data, mode):
    """Write ``data`` to ``path`` with ``mode``, never through a link."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    with os.fdopen(fd, 'wb') as f:
        os.fchmod(f.fileno(), mode)
        f.write(data)


def write_private(path, data):
    """Write ``data`` to ``path``, readable by root only (mode 0600)."""
    write_file(path, data, 0o600)
