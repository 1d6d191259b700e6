"""IOzone N-to-N command lines, thread lists and limits (the published
methodology; see docs/storage.md).

Sequential (one file per thread, write pass then read pass)::

    iozone -i0 -c -e -w -r 16M -s <FileSize> -t T -+n -+m threadlist -+h <master>
    iozone -i1 -c -e -w -r 16M -s <FileSize> -t T -+n -+m threadlist -+h <master>

Random 4 KiB (the files are created with the sequential write pass first)::

    iozone -i0 -c -e -w -r 16M -s <Size> -t T -+n -+m threadlist -+h <master>
    iozone -i2 -O -w -r 4K -s <Size> -t T -+n -+m threadlist -+h <master>

Smoke mode adds ``-I`` (O_DIRECT). ``-x`` (stonewalling off) is added only
when asked: the published runs keep IOzone's default. ``-+h`` names the
master's address, to which the clients connect back.
"""

import re
import shlex

from clusterproof import ClusterproofError
from clusterproof.modes import by_mode

#: thread counts per mode (published: 1..1024 sequential, 16..512 random)
SEQUENTIAL_THREADS = {
    'smoke': [1, 2, 4, 8],
    'nightly': [1, 8, 64],
    'acceptance': [2 ** i for i in range(11)],
}
RANDOM_THREADS = {
    'smoke': [1, 2, 4, 8],
    'nightly': [16, 128],
    'acceptance': [2 ** i for i in range(4, 10)],
}

RANDOM_RECORD = '4k'

#: IOzone's MAXSTREAMS: 3.489 and 3.492 (the published runs) accept 1024
#: threads and refuse 1025; older builds cap at 256.
MAX_THREADS = 1024
MAX_THREADS_OLD = 256
_NEW_ENOUGH = (3, 489)


def thread_list(kind, mode=None):
    table = {'sequential': SEQUENTIAL_THREADS, 'random': RANDOM_THREADS}[kind]
    return by_mode(table, mode)


def _version_tuple(version):
    m = re.match(r'(\d+)\.(\d+)', version or '')
    return (int(m.group(1)), int(m.group(2))) if m else None


def max_threads(version):
    """Most threads (-t) this IOzone build accepts; unknown versions get the
    current limit, versions older than 3.489 the old one."""
    vt = _version_tuple(version)
    if vt is not None and vt < _NEW_ENOUGH:
        return MAX_THREADS_OLD
    return MAX_THREADS


def check_threads(threads, version=''):
    """Refuse a thread count the IOzone build cannot run, before anything is written."""
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ClusterproofError(f'IOzone thread count {threads!r}: must be a whole number >= 1')
    limit = max_threads(version)
    if threads > limit:
        raise ClusterproofError(
            f'IOzone {version or "(unknown version)"} runs at most {limit} threads '
            f'(its MAXSTREAMS); {threads} were asked. Use at most {limit} threads, or '
            f'fio/IOR for more clients')
    return threads


def pass_argv(iozone, test, record, size, threads, threadlist, direct_io=False,
              stonewall=True, ops=False, include_close_fsync=True):
    """argv of one IOzone pass (without ``-+h``, see :func:`command_line`)."""
    argv = [iozone, f'-i{test}']
    if ops:
        argv.append('-O')
    if include_close_fsync:
        argv += ['-c', '-e']
    argv += ['-w', '-r', record.upper(), '-s', size, '-t', str(threads),
             '-+n', '-+m', threadlist]
    if direct_io:
        argv.append('-I')
    if not stonewall:
        argv.append('-x')
    return argv


#: the shell expressions ``master_address`` may be (evaluated on the first node)
MASTER_EXPRESSIONS = ('$(hostname)', '$(hostname -f)', '$(hostname -s)', '$(hostname -i)')
_HOST_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9.:-]*$')


def command_line(argv, master):
    """Shell command of ``argv`` plus ``-+h <master>``. ``master`` is a host
    name or address, or one of :data:`MASTER_EXPRESSIONS` (evaluated in the
    job); anything else is refused, so a value can never run a command."""
    if master in MASTER_EXPRESSIONS:
        host = f'"{master}"'
    elif _HOST_RE.match(master or ''):
        host = shlex.quote(master)
    else:
        raise ClusterproofError(
            f'IOzone master address {master!r}: not a host name or address; use letters, '
            f'digits, . : - or one of {", ".join(MASTER_EXPRESSIONS)}')
    return f'{shlex.join(argv)} -+h {host}'


def sequential_passes(iozone, sizing, threads, threadlist, stonewall=True):
    """(write argv, read argv) of the sequential N-to-N test."""
    common = dict(record=sizing.transfer_arg, size=sizing.per_thread_arg, threads=threads,
                  threadlist=threadlist, direct_io=sizing.direct_io, stonewall=stonewall)
    return (pass_argv(iozone, 0, **common), pass_argv(iozone, 1, **common))


def random_passes(iozone, sizing, threads, threadlist, stonewall=True):
    """(create argv, random argv) of the random 4 KiB N-to-N test."""
    create = pass_argv(iozone, 0, record=sizing.transfer_arg, size=sizing.per_thread_arg,
                       threads=threads, threadlist=threadlist, direct_io=sizing.direct_io,
                       stonewall=stonewall)
    rand = pass_argv(iozone, 2, record=RANDOM_RECORD, size=sizing.per_thread_arg,
                     threads=threads, threadlist=threadlist, direct_io=sizing.direct_io,
                     stonewall=stonewall, ops=True, include_close_fsync=False)
    return create, rand


#: what the space watchdog prints when the test directory's file system is full
NO_SPACE_MESSAGE = 'clusterproof: No space left on device'


def space_watchdog(test_dir, interval=1):
    """A shell snippet for a job script: a background loop that watches the
    free space of ``test_dir``'s file system and, when none is left, says so
    on stderr and stops every IOzone process of the job's session (TERM, then
    KILL: IOzone's own signal handler can wait on a dead peer).

    IOzone in cluster mode does not exit when a client hits ENOSPC: master
    and clients wait for each other until the time limit, and the write error
    shows nowhere in the job's output. The watchdog turns that hang into a
    prompt failure that names the cause. It sets ``$iozone_watchdog`` to its
    pid; :func:`stop_space_watchdog` ends it.
    """
    q = shlex.quote(str(test_dir))
    return (f'( while sleep {int(interval)}; do '
            f'avail=$(df -Pk {q} 2>/dev/null | awk \'NR==2 {{print $4}}\'); '
            f'if [ "${{avail:-1}}" -eq 0 ] 2>/dev/null; then '
            f'echo "{NO_SPACE_MESSAGE}: {test_dir} has 0 KiB free; stopping IOzone" >&2; '
            f'pkill -TERM -s 0 -x iozone; sleep 2; pkill -KILL -s 0 -x iozone; '
            f'break; fi; done ) & iozone_watchdog=$!')


def stop_space_watchdog():
    return 'kill $iozone_watchdog 2>/dev/null; wait $iozone_watchdog 2>/dev/null'
