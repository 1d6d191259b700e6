"""One Slurm job per node, running every screening check on that node.

A screening of N nodes submits N jobs (``sbatch -N1 --exclusive
--nodelist=NODE``), never one per node and check: ReFrame runs inside each
node's job with the local scheduler (``reframe_io.runner.in_job_command``),
the checks one after another on the node they hold, with their own
sanity functions and parsers. All the nodes' jobs are queued at once, as
many as the site lets one user queue (``MaxSubmitJobs``,
:func:`site_limits`), more as earlier ones end: the nodes of a round are
measured in the same window, and nothing waits for a batch to finish.

Why not a job array: a task of an array cannot be pinned to a node of its
own (every task has the array's options), and a screening must measure
each node, not whichever node a task lands on. Why not one allocation with
a step per node: it waits until every node is free at once, and a node that
fails ends it.

Each node's run report is written by ReFrame to ``nodes/NODE.LABEL.json.part``
in the working directory and renamed to ``nodes/NODE.LABEL.json`` by the job
when ReFrame ends: a report is there whole or not at all, as it arrives.
``screening.json`` records what the screening is; ``--resume`` with the same
``--workdir`` runs only the nodes without a report, and watches the jobs of
an interrupted run still in the queue rather than submitting them again.

While the jobs run, :class:`Watch` asks Slurm (one ``squeue`` and one
``sinfo`` per poll, whatever the number of nodes) what became of them: a
node whose job is pending while Slurm has the node down or drained is
cancelled and named missing with Slurm's state and reason; a job that ended
without a report names its node missing with the node's state and reason
(or its log when the node is well).
"""

import json
import os
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path

from clusterproof import ClusterproofError
from clusterproof.hostlist import compress
from clusterproof.parsers import slurm_values
from clusterproof.paths import REPO, write_atomic
from clusterproof.reframe_io import runner
from clusterproof.site.inventory import run_tool, tool_failure

STATE_FILE = 'screening.json'
#: seconds between two looks at the queue
POLL_S = float(os.environ.get('CLUSTERPROOF_SCREEN_POLL_S', '2'))
#: node jobs queued at once when the site sets no MaxSubmitJobs
DEFAULT_WINDOW = 1024


def config_value(text, key):
    """The integer ``key`` of ``scontrol show config`` output, or None."""
    for line in text.splitlines():
        k, _, value = line.partition('=')
        if k.strip().lower() == key.lower() and value.strip().isdigit():
            return int(value.strip())
    return None


def max_submit_from_sacctmgr(text):
    """The smallest ``MaxSubmit`` of ``sacctmgr -nP show assoc format=MaxSubmit``
    output (one value a line, empty when unlimited), or None."""
    values = [int(v) for v in (ln.strip() for ln in text.splitlines()) if v.isdigit()]
    return min(values) if values else None


def site_limits(run=run_tool):
    """``{'MaxSubmitJobs': n or None, 'MaxArraySize': n or None}`` of this
    site: the accounting associations' ``MaxSubmit`` (``sacctmgr``), else a
    ``MaxSubmitJobs`` in ``scontrol show config``; ``MaxArraySize`` from it."""
    config = run(['scontrol', 'show', 'config'])
    text = config['stdout'] if config['rc'] == 0 else ''
    assoc = run(['sacctmgr', '-nP', 'show', 'assoc', 'format=MaxSubmit'])
    submit = max_submit_from_sacctmgr(assoc['stdout']) if assoc['rc'] == 0 else None
    return {'MaxSubmitJobs': submit if submit is not None else config_value(text, 'MaxSubmitJobs'),
            'MaxArraySize': config_value(text, 'MaxArraySize')}


def window(limits, given=None):
    """Node jobs queued at once: ``given`` (``--batch``), else the site's
    ``MaxSubmitJobs`` less one (room for the person's own work), else
    :data:`DEFAULT_WINDOW`."""
    if given is not None:
        if given < 1:
            raise ClusterproofError(f'--batch {given}: use 1 or more node jobs')
        return given
    limit = limits.get('MaxSubmitJobs')
    return max(1, limit - 1) if limit else DEFAULT_WINDOW


def progress_line(label, counts, total, elapsed):
    """``first run: nodes done 12/16, running 4, pending 0, missing 0,
    estimated remaining 40 s (elapsed 120 s)``; the estimate from the rate
    of nodes ended so far."""
    ended = counts.get('done', 0) + counts.get('missing', 0)
    if ended >= total:
        eta = '0 s'
    elif ended:
        left = elapsed / ended * (total - ended)
        eta = f'{left / 60:.1f} min' if left >= 60 else f'{left:.0f} s'
    else:
        eta = 'unknown'
    return (f'{label}: nodes done {counts.get("done", 0)}/{total}, running '
            f'{counts.get("running", 0)}, pending {counts.get("pending", 0)}, missing '
            f'{counts.get("missing", 0)}, estimated remaining {eta} (elapsed {elapsed:.0f} s)')


# ---------------------------------------------------------------- the working directory

@dataclass
class Workdir:
    """A screening's working directory: what it is (``screening.json``), the
    node job script, the nodes' run reports, logs and stage directories."""
    path: Path

    @property
    def nodes(self):
        return self.path / 'nodes'

    def report(self, node, label):
        return self.nodes / f'{node}.{label}.json'

    def log(self, node, label):
        return self.path / 'logs' / f'{node}.{label}.log'

    def done(self, node, label):
        return self.report(node, label).is_file()

    def read_state(self):
        path = self.path / STATE_FILE
        try:
            return json.loads(path.read_text())
        except FileNotFoundError:
            raise ClusterproofError(f'--resume: {path} does not exist: no screening was started '
                                    f'in {self.path} (give the --workdir of the screening to '
                                    'resume)') from None
        except (OSError, ValueError) as err:
            raise ClusterproofError(f'--resume: cannot read {path}: {err}') from None

    def start(self, state, resume=False):
        """Record ``state`` (a new screening), or with ``resume`` check it
        is the screening recorded; returns the state in force."""
        if resume:
            old = self.read_state()
            for key in ('system', 'partition', 'checks', 'mode', 'extra'):
                if old.get(key) != state.get(key):
                    raise ClusterproofError(
                        f'--resume: {self.path / STATE_FILE} is a screening with {key} '
                        f'{old.get(key)!r}, not {state.get(key)!r}: give the same options, or a '
                        'new --workdir for a new screening')
            return old
        if (self.path / STATE_FILE).exists():
            raise ClusterproofError(f'{self.path / STATE_FILE} exists: a screening was started in '
                                    f'{self.path}; continue it with --resume, or give a new '
                                    '--workdir')
        for d in (self.nodes, self.path / 'logs'):
            d.mkdir(parents=True, exist_ok=True)
        write_atomic(self.path / STATE_FILE, json.dumps(state, indent=1) + '\n')
        return state


# ---------------------------------------------------------------- the node job

NODE_JOB = '''#!/bin/bash
# One node's screening (clusterproof/screen/jobs.py): every check, in this job.
# Arguments: NODE LABEL REFRAME_ARGS...; the run report is renamed into place
# when ReFrame ends, so that it is there whole or not at all.
node=$1 label=$2
shift 2
part={nodes}/$node.$label.json.part
rm -f "$part"
cd {repo} || exit 2
{command}
status=$?
if [ -s "$part" ]; then mv -f "$part" {nodes}/$node.$label.json; fi
exit $status
'''


def write_node_job(wd):
    """The node job script of the working directory ``wd`` (and the ReFrame
    configuration it runs with); returns its path."""
    settings = runner.write_in_job_settings(wd.path / 'in-job-settings.py')
    command = runner.in_job_command(['"$@"'], settings, '"$part"',
                                    shlex.quote(f'{wd.path}/stage/') + '"$node.$label"')
    # the placeholders stay shell words: quote the rest
    words = [w if '"' in w else shlex.quote(w) for w in command]
    script = NODE_JOB.format(nodes=shlex.quote(str(wd.nodes)), repo=shlex.quote(str(REPO)),
                             command=' '.join(words))
    path = wd.path / 'node-job.sh'
    write_atomic(path, script, mode=0o755)
    return path


def job_name(screening_id):
    return f'cp-screen-{screening_id[:8]}'


def sbatch_command(script, name, node, label, slurm_options, reframe_args, log):
    """The ``sbatch`` argv of ``node``'s job."""
    return ['sbatch', '--parsable', f'--job-name={name}', f'--comment={node}.{label}',
            '-N1', '--exclusive', f'--nodelist={node}', f'--output={log}', *slurm_options,
            str(script), node, label, *reframe_args]


def slurm_options(access):
    """The Slurm options of a partition's ``access`` to give each node job:
    all but ``--exclude``/``-x`` (the screening names its node itself)."""
    words = [w for a in access for w in shlex.split(a)]
    out, skip = [], False
    for w in words:
        if skip:
            skip = False
            continue
        if w.startswith('--exclude') or w.startswith('-x'):
            skip = w in ('--exclude', '-x')
            continue
        out.append(w)
    return out


# ---------------------------------------------------------------- watching the jobs

QUEUE_COMMAND = ['squeue', '-h', '--me', '-o', '%i|%T|%r|%j|%k']
NODES_COMMAND = ['sinfo', '-h', '-N', '-o', '%N|%T|%E']


def parse_queue(text, name):
    """``{comment (NODE.LABEL): (job id, state, reason)}`` of the jobs named
    ``name`` in ``squeue -o '%i|%T|%r|%j|%k'`` output."""
    out = {}
    for line in text.splitlines():
        parts = line.strip().split('|')
        if len(parts) >= 5 and parts[3] == name:
            out[parts[4]] = (parts[0], parts[1].upper(), parts[2])
    return out


def parse_node_states(text):
    """``{node: (STATE, reason)}`` of ``sinfo -N -o '%N|%T|%E'`` output (a
    node in two partitions appears twice, alike)."""
    out = {}
    for line in text.splitlines():
        parts = line.strip().split('|', 2)
        if len(parts) == 3 and parts[0]:
            out[parts[0]] = (parts[1].upper(), parts[2].strip())
    return out


#: node state words (``parsers.slurm_values.parse_state``) under which a node's job
#: will not run until a person acts: the node is named missing. Not the
#: passing states that also stop a job starting now (``parsers.slurm_values.runnable``:
#: PLANNED, CONFIGURING, RESERVED, a moment NOT_RESPONDING): a job waits those out.
LOST = ('DOWN', 'DRAIN', 'FAIL')


def unavailable_reason(state, reason):
    """``Slurm state DRAINED: Reason`` when a node in ``state`` will run no
    job until a person acts (:data:`LOST`), else None."""
    if not any(w in LOST for w in slurm_values.parse_state(state)):
        return None
    return f'Slurm state {state}' + (f': {reason}' if reason and reason != 'none' else '')


def cancel_queued(name, nodes, run=run_tool):
    """Cancel the jobs named ``name`` still queued for any of ``nodes``
    (one ``squeue``, one ``scancel``); returns their ids."""
    out = run(QUEUE_COMMAND)
    queue = parse_queue(out['stdout'], name) if out['rc'] == 0 else {}
    ids = [job for key, (job, _state, _why) in queue.items() if key.rsplit('.', 1)[0] in nodes]
    if ids:
        run(['scancel', *ids])
    return ids


@dataclass
class Watch:
    """The node jobs of one round (``label``: ``first``, ``repeat1``...) of a
    screening, submitted and watched until every node has a report or is
    missing. ``missing`` is ``{node: reason}``; ``submitted`` counts the
    ``sbatch`` calls."""
    wd: Workdir
    script: Path
    name: str
    label: str
    nodes: list
    reframe_args: list
    slurm_options: list
    window: int
    log: object = print
    progress_s: float = 60.0
    run: object = run_tool
    missing: dict = field(default_factory=dict)
    submitted: int = 0

    def _submit(self, node):
        argv = sbatch_command(self.script, self.name, node, self.label, self.slurm_options,
                              self.reframe_args, self.wd.log(node, self.label))
        out = self.run(argv)
        self.submitted += 1
        if out['rc'] != 0:
            self.missing[node] = f'sbatch refused its job: {tool_failure(out)}'

    def _cancel(self, job):
        self.run(['scancel', job])

    def run_round(self):
        """Submit and wait; returns ``{node: report path}`` of the nodes
        done. Ctrl-C leaves the queued jobs running (a ``--resume`` watches
        them) and is raised again."""
        start, last = time.monotonic(), time.monotonic()
        todo = [n for n in self.nodes if not self.wd.done(n, self.label)]
        queue = parse_queue(self._ask(QUEUE_COMMAND), self.name)
        # jobs of an interrupted run still queued: watched, not submitted again
        waiting = [n for n in todo if f'{n}.{self.label}' not in queue]
        active = {n for n in todo if f'{n}.{self.label}' in queue}
        if active:
            self.log(f'{self.label}: {len(active)} node job(s) of an earlier run still queued: '
                     f'{compress(sorted(active))}')
        counts = {}
        while True:
            while waiting and len(active) < self.window:
                node = waiting.pop(0)
                self._submit(node)
                if node not in self.missing:
                    active.add(node)
            queue = parse_queue(self._ask(QUEUE_COMMAND), self.name)
            states = parse_node_states(self._ask(NODES_COMMAND)) if active else {}
            for node in sorted(active):
                job = queue.get(f'{node}.{self.label}')
                why = unavailable_reason(*states.get(node, ('UNKNOWN', 'not in sinfo')))
                if job is None:
                    active.discard(node)
                    if not self.wd.done(node, self.label):
                        self.missing[node] = (f'{why}; its job ended without a result' if why else
                                              f'its job ended without a run report: see '
                                              f'{self.wd.log(node, self.label)}')
                elif job[1] == 'PENDING' and why:
                    self._cancel(job[0])
                    active.discard(node)
                    self.missing[node] = f'{why}; its job (pending) was cancelled'
            counts = {'done': sum(self.wd.done(n, self.label) for n in self.nodes),
                      'missing': len(self.missing),
                      'running': sum(1 for n in active
                                     if queue.get(f'{n}.{self.label}', ('', ''))[1] == 'RUNNING'),
                      'pending': len(waiting) + sum(
                          1 for n in active
                          if queue.get(f'{n}.{self.label}', ('', ''))[1] != 'RUNNING')}
            now = time.monotonic()
            if not active and not waiting:
                break
            if now - last >= self.progress_s:
                self.log(progress_line(self.label, counts, len(self.nodes), now - start))
                last = now
            time.sleep(POLL_S)
        self.log(progress_line(self.label, counts, len(self.nodes), time.monotonic() - start))
        return {n: self.wd.report(n, self.label) for n in self.nodes
                if self.wd.done(n, self.label)}

    def _ask(self, argv):
        out = self.run(argv)
        if out['rc'] != 0:
            raise ClusterproofError(f'{shlex.join(argv)} failed (exit status {out["rc"]}): '
                                    f'{tool_failure(out)}; the node jobs keep running: '
                                    f'continue with clusterproof screen --resume --workdir '
                                    f'{self.wd.path}')
        return out['stdout']
