"""Why a job failed, in one line.

:func:`failure_cause` reads the output of a job (the program's, srun's and
slurmstepd's messages) and names the cause a user needs first: a node that
failed (by name), the job's time limit, a full file system, an MPI start
that failed, any other error line of the MPI library, UCX or Slurm (the one
table of them is :mod:`clusterproof.parsers.runtime_errors`), a cancellation.
Every clusterproof check calls it before its sanity function
(``ClusterproofCheck``) when the job did not end well: its program exited
non-zero or was killed by a signal (the job script records both statuses in
:data:`EXIT_STATUS_FILE`), or Slurm ended the job (a dead node, the time
limit, a cancellation, out of memory); the failure message then says what
happened instead of "pattern not found". A dead node is named from the
job's output and from what Slurm says of the job's nodes
(:func:`slurm_down_nodes`), whatever state Slurm gave the job.

The causes are a table (:data:`CAUSES`): a new one is one entry.

The faults the reliability tests inject into the local cluster (a node
dying, a node coming back) are in :mod:`clusterproof.cluster.faults`.
"""

import re
import signal
import subprocess

from clusterproof.hostlist import compress
from clusterproof.parsers import runtime_errors

#: lines that name a failed node (``*** JOB 5 ON n1 CANCELLED ... DUE TO NODE
#: FAILURE`` names the node that printed it, not the failed one)
_NODE_FAIL = [
    re.compile(r'srun: error: Node failure on (\S+)'),
    re.compile(r'Task launch for StepId=\S+ failed on node (\S+)'),
]


class Cause:
    """One cause of failure: ``name`` (the first word of the message), the
    Slurm job states that mean it, the pattern that shows it in the job's
    output (or ``find``, a function from the output to the line that shows
    it), and the message; ``{line}`` in it is the line that matched (at
    most 200 characters)."""

    def __init__(self, name, states, pattern, message, find=None):
        self.name = name
        self.states = frozenset(states)
        self.pattern = re.compile(pattern, re.I) if pattern else None
        self.message = message
        self.find = find

    def line(self, text):
        """The first line of ``text`` that shows this cause, or None."""
        if self.find is not None:
            found = self.find(text)
            return found[:200] if found else None
        if self.pattern is None:
            return None
        return next((ln.strip()[:200] for ln in text.splitlines() if self.pattern.search(ln)),
                    None)


def runtime_error(text):
    """``<runtime>: <line>``: the first error line of an MPI library, UCX or
    Slurm in ``text`` (:mod:`clusterproof.parsers.runtime_errors`), Slurm's
    cancellation lines passed over; None when there is none."""
    found = runtime_errors.first_error(text, cancellations=False)
    return f'{found[0]}: {found[1]}' if found else None


#: Causes in the order they are recognised: the first whose state or pattern
#: matches names the failure. The time limit and a dead node come first
#: (everything else a program prints after them is their consequence); a
#: dead node is also named from what Slurm says of the job's nodes
#: (:func:`failure_cause`, ``down_nodes``).
CAUSES = [
    Cause('timeout', ['TIMEOUT'],
          r'CANCELLED AT \S+ DUE TO TIME LIMIT|time limit exceeded|Job step aborted.*TIME LIMIT|'
          r'exceeded (?:its|the) time limit',
          'the job reached its time limit{limit} and was ended'),
    Cause('node failure', ['NODE_FAIL'], r'CANCELLED AT \S+ DUE TO NODE FAILURE',
          '{nodes} stopped answering during the run (Slurm state {state})'),
    Cause('out of memory', ['OUT_OF_MEMORY'],
          r'oom[-_ ]kill|Out of memory|Cannot allocate memory|std::bad_alloc|'
          r'Detected \d+ oom',
          'the program ran out of memory: {line}'),
    Cause('no space left on the file system under test', [],
          r'No space left on device|ENOSPC|error=28\b|Disk quota exceeded',
          '{line}'),
    # Open MPI's ranks did not all start: a peer it could not connect to
    # (often one that died in MPI_Init), MPI_Init's own error, PMIx/ORTE
    # start errors; before 'cancelled', as --kill-on-bad-exit cancels the step
    Cause('MPI start failed', [],
          r'Open MPI failed to TCP connect|An error occurred in MPI_Init\b|'
          r'MPI_INIT has failed|It looks like MPI_INIT failed|'
          r'ompi_rte_init failed|orte_ess_init failed|PMIx_Init failed|'
          r'PMIX ERROR',
          '{line}'),
    # a job Slurm says was cancelled (scancel): the tasks it ended print
    # 'srun: error: n1: task 0: Terminated', a consequence
    Cause('cancelled', ['CANCELLED'], None, 'the job was cancelled before it finished'),
    # any other error line of the MPI library, UCX or Slurm (ORTE_ERROR_LOG,
    # MPI_ABORT, a rank that died, srun: error: ...): before Slurm's line of a
    # cancelled step, which --kill-on-bad-exit prints after a rank's error
    Cause('runtime error', [], None, '{line}', find=runtime_error),
    Cause('cancelled', [], runtime_errors.CANCELLED.pattern,
          'the job was cancelled before it finished'),
]


#: file in the stage directory where the job script records exit statuses:
#: ``program N`` (the check's program, the command ReFrame launches) and
#: ``script N`` (the job script itself, at its exit)
EXIT_STATUS_FILE = '.clusterproof-exit-status'

#: first command after the program: record its status and leave ``$?`` as it
#: was, for the check's own commands after it (the function is defined by
#: :func:`shell_at_exit`)
SHELL_RECORD_PROGRAM_STATUS = 'clusterproof_program_ended $?'


def shell_at_exit(commands=()):
    """First lines of a job script: at its exit, however it exits, record
    its exit status, then run ``commands`` (removing test directories);
    the script's exit status stays what it was. Defines the function that
    :data:`SHELL_RECORD_PROGRAM_STATUS` calls. No '=' or '|' in these lines:
    job script lines are logged in the perflog, whose fields are
    ``|``-separated and whose figures are ``name=value``."""
    record = 'echo "{what} $1" >> ' + EXIT_STATUS_FILE
    body = '; '.join([record.format(what='script'), *commands])
    return [f'clusterproof_program_ended() {{ {record.format(what="program")}; return $1; }}',
            f'clusterproof_at_exit() {{ set -- $?; {body}; return $1; }}',
            'trap clusterproof_at_exit EXIT']


#: Slurm (and ReFrame's local scheduler) states of a job that did not end well
FAILED_STATES = frozenset(['FAILED', 'FAILURE', 'CANCELLED', 'TIMEOUT', 'NODE_FAIL',
                           'OUT_OF_MEMORY', 'BOOT_FAIL', 'DEADLINE', 'PREEMPTED'])


def read_exit_status(path):
    """``{'program': N, 'script': N}`` from an exit status file (what was
    recorded; nothing when the job never got there)."""
    found = {}
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2 and parts[1].lstrip('-').isdigit():
                    found.setdefault(parts[0], int(parts[1]))
    except OSError:
        pass
    return found


def job_failed(job_state, statuses=None, exitcode=None):
    """True when a job's state, its recorded statuses or its exit code say
    that it did not end well."""
    states = {s.split()[0].upper() for s in (job_state or '').split(',') if s.strip()}
    return bool(states & FAILED_STATES or any((statuses or {}).values()) or exitcode)


#: a word that says error, bounded by anything but a letter: ``_`` is a
#: word character, and ``\berror\b`` misses ``ORTE_ERROR_LOG``
_ERROR_LINE = re.compile(r'(?<![a-z])(error|fatal|abort(ed)?|killed|segmentation fault|'
                         r'core dumped|exception)(?![a-z])', re.I)


def first_error_line(text):
    """The first error line of a runtime (:func:`runtime_error`), else the
    first line of ``text`` that says error, fatal, aborted, killed..., else
    its last non-empty line (at most 200 characters); '' for no text."""
    found = runtime_errors.first_error(text)
    if found:
        return found[1][:200]
    lines = [ln.strip() for ln in (text or '').splitlines() if ln.strip()]
    line = next((ln for ln in lines if _ERROR_LINE.search(ln)), lines[-1] if lines else '')
    return line[:200]


def failed_nodes(text):
    """Nodes that srun or slurmstepd report as failed, in order of appearance."""
    found = []
    for line in text.splitlines():
        for pattern in _NODE_FAIL:
            m = pattern.search(line)
            if m:
                node = m.group(1).rstrip(':,')
                if node not in found:
                    found.append(node)
    return found


def _limit(time_limit):
    if isinstance(time_limit, (int, float)) and not isinstance(time_limit, bool):
        return f' of {time_limit:g} s'
    return f' of {time_limit}' if time_limit else ''


def exit_status_cause(status):
    """What an exit status says: ``killed by signal SIGKILL (exit status
    137)``, ``exited with status 2``, or None for 0 / unknown."""
    if status is None or status == 0:
        return None
    if 128 < status < 128 + 65:
        try:
            name = signal.Signals(status - 128).name
        except ValueError:
            name = f'signal {status - 128}'
        return f'signal: the program was killed by {name} (exit status {status})'
    return f'the program exited with status {status}'


def failure_cause(text, job_state=None, time_limit=None, exit_status=None, down_nodes=()):
    """One line naming why a job failed, or ``None``.

    ``text`` is the job's output (stdout and stderr together); ``job_state``
    is Slurm's state of the job when known (``TIMEOUT``, ``NODE_FAIL``,
    ``CANCELLED``...); ``time_limit`` is the limit that was in force, to quote;
    ``exit_status`` is the program's exit status (``128 + N``: killed by
    signal N); ``down_nodes`` are nodes of the job that Slurm reports down
    or not responding (:func:`slurm_down_nodes`), ``[(node, reason)]``.
    """
    text = text or ''
    state = (job_state or '').upper().split()[0] if job_state else ''
    nodes = failed_nodes(text) + [n for n, _ in down_nodes if n not in failed_nodes(text)]
    for cause in CAUSES:
        line = cause.line(text)
        hit = state in cause.states or line is not None
        if cause.name == 'node failure':
            hit = hit or bool(nodes)
        if not hit:
            continue
        if cause.name == 'node failure':
            named = compress(nodes) if nodes else 'a node of the job'
            by_reason = {}
            for n, r in down_nodes:
                if r:
                    by_reason.setdefault(r, []).append(n)
            why = '; '.join(f'{compress(ns)}: {r}' for r, ns in by_reason.items())
            return (f'{cause.name}: ' + cause.message.format(nodes=named, state=state or '?')
                    + (f'; Slurm says {why}' if why else ''))
        line = line or (f'Slurm state {state}' if state else '')
        return f'{cause.name}: ' + cause.message.format(limit=_limit(time_limit), line=line)
    return exit_status_cause(exit_status)


def slurm_down_nodes(nodes, env=None):
    """``[(node, reason)]`` of the nodes among ``nodes`` (a list, or a Slurm
    host list such as ``n[1-4]``) that Slurm reports down, failing or not
    responding (``scontrol show node``): the dead nodes of a job whatever
    state the job itself ended in. Empty when scontrol cannot say."""
    if not nodes:
        return []
    spec = nodes if isinstance(nodes, str) else ','.join(nodes)
    try:
        proc = subprocess.run(['scontrol', '-o', 'show', 'node', spec], env=env,
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return []
    return parse_down_nodes(proc.stdout) if proc.returncode == 0 else []


def parse_down_nodes(text):
    """``[(node, reason)]`` from ``scontrol -o show node`` output: nodes
    whose State has DOWN, FAIL or NOT_RESPONDING."""
    found = []
    for line in text.splitlines():
        name = re.search(r'\bNodeName=(\S+)', line)
        state = re.search(r'\bState=(\S+)', line)
        if not name or not state:
            continue
        flags = set(re.split(r'[+*]', state.group(1).upper()))
        if flags & {'DOWN', 'FAIL', 'FAILING', 'NOT_RESPONDING'} or state.group(1).endswith('*'):
            reason = re.search(r'\bReason=(.*?)(?: \[[^]]*\])?(?: \S+=|$)', line)
            found.append((name.group(1), reason.group(1).strip() if reason else ''))
    return found
