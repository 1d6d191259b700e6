"""Running the screening checks on every node of a partition.

The nodes come from Slurm (``screen.run.partition_nodes``: the Slurm
partition the ReFrame partition's ``access`` options name). Nodes Slurm has
down, drained or failed are not run: they are ``missing``, their state the
reason. The others get one job each running every node check of the
screening (``screen.jobs``: ReFrame inside the job with the local
scheduler), all queued at once within the site's ``MaxSubmitJobs``; a node
whose job gives no result is missing with Slurm's reason. Checks between
two nodes (OSU) run one case per node pair instead (``screen.pairs``: the
nodes in a ring, each paired with the next; ``reframe -P
node_pair=n1+n3,n3+n4,...``, the check pins its job to the pair), in rounds
of pairs that share no node (``pairs.rounds``), one invocation per
benchmark (latency, bandwidth) so that two cases never wait for one pair.
Results are read from the run reports (``--report-file``), never from a
console.

After the first pass, nodes that are outliers or near the line
(suspects) are run again, up to ``repeat`` times
(:func:`judge_with_repeats`): a node is named only when every run was near
or past the line and the mean of its runs is past it.
"""

import shlex
import subprocess
import tempfile
import time
import uuid
from collections import defaultdict
from pathlib import Path

from clusterproof import ClusterproofError
from clusterproof.parsers import slurm_values
from clusterproof.paths import REPO
from clusterproof.references.judge import Verdict
from clusterproof.reframe_io import runner
from clusterproof.screen import jobs, judge, output, pairs, results, verdicts as screen_verdicts
from clusterproof.site import slurm_view
from clusterproof.site.hardware import is_emulated
from clusterproof.site.inventory import run_tool
from clusterproof.hostlist import compress


def slurm_partition_of(part):
    """The Slurm partition a ReFrame partition entry's ``access`` options
    name (``--partition=X``, ``-p X``), or None."""
    opts = [w for a in part.get('access', []) for w in shlex.split(a)]
    for i, opt in enumerate(opts):
        if opt.startswith('--partition='):
            return opt.split('=', 1)[1]
        if opt in ('-p', '--partition') and i + 1 < len(opts):
            return opts[i + 1]
        if opt.startswith('-p') and len(opt) > 2:
            return opt[2:]
    return None


def partition_nodes(slurm_nodes, slurm_partition):
    """``(runnable, unavailable)``: node names of ``slurm_partition`` (every
    node when None) Slurm can run jobs on, and ``{node: state}`` of the rest."""
    runnable, unavailable = [], {}
    for node in slurm_nodes:
        if slurm_partition and slurm_partition not in node.partitions:
            continue
        state = node.state.upper()
        if slurm_values.runnable(state)[0]:        # the rule init probes by, too
            runnable.append(node.name)
        else:
            unavailable[node.name] = state
    return sorted(runnable, key=slurm_view._node_key), unavailable


def peer_kinds(slurm_nodes):
    """``{node: kind}`` for ``judge.screen``'s peers: Slurm's shape of the
    node (``SlurmNode.shape``: CPU topology, CPUs, GPUs) but its memory, so
    a partition of several kinds of node compares each with its own kind,
    while a node Slurm gives less memory than its siblings (RealMemory
    lowered for a failed DIMM) is still compared with them and named."""
    def kind(node):
        cpus, sockets, cores, threads, _memory, gpus = node.shape()
        return cpus, sockets, cores, threads, gpus
    return {n.name: kind(n) for n in slurm_nodes}


def slurm_nodes():
    """Slurm's nodes (``site.slurm_view.read_slurm``)."""
    return slurm_view.read_slurm()[0]


def batches(nodes, size):
    """``nodes`` in lists of at most ``size``."""
    if size < 1:
        raise ClusterproofError(f'--batch {size}: use 1 or more')
    return [nodes[i:i + size] for i in range(0, len(nodes), size)]


def progress_line(done, total, elapsed, what='nodes'):
    """``nodes done k/n, estimated remaining ...``."""
    if done and done < total:
        left = elapsed / done * (total - done)
        eta = f'{left / 60:.1f} min' if left >= 60 else f'{left:.0f} s'
    elif done >= total:
        eta = '0 s'
    else:
        eta = 'unknown'
    return f'{what} done {done}/{total}, estimated remaining {eta} (elapsed {elapsed:.0f} s)'


def _select(checks):
    """The ``reframe`` arguments that select the node checks ``checks``."""
    cmd = []
    for c in checks:
        cmd += ['-c', str(REPO / 'reframe_checks' / results.SCREEN_CHECKS[c].file)]
    for c in checks:
        cmd += list(results.SCREEN_CHECKS[c].options)
    return cmd


def pair_selections(checks):
    """``[(check, selection)]``: each ``-n`` selection of the pair
    ``checks`` (names) apart, one invocation each: two cases on one pair
    would wait for each other's nodes."""
    out = []
    for c in checks:
        opts = results.SCREEN_CHECKS[c].options
        out += [(c, tuple(opts[i:i + 2])) for i in range(0, len(opts), 2)]
    return out


def pair_command(system, partition, selection, batch, report_file, mode, extra=()):
    """The ``reframe`` arguments that run one pair check ``selection`` (a check
    name and its ``-n`` option, :func:`pair_selections`) on each node pair
    of ``batch``: one test case per pair (``-P node_pair=a+b,...``; the
    check pins its job to the two nodes, alone on them)."""
    check, options = selection
    cmd = ['-c', str(REPO / 'reframe_checks' / results.SCREEN_CHECKS[check].file), *options]
    cmd += ['-P', 'node_pair=' + ','.join(pairs.pair_label(p) for p in batch),
            '--system', f'{system}:{partition}', '--mode', mode,
            *runner.report_option(report_file), '-r']
    return cmd + list(extra)


def set_options(assignments):
    """ReFrame's ``-S VAR=VALUE`` options of ``--set VAR=VALUE`` s; one
    without ``=`` or a name is an error naming it."""
    out = []
    for text in assignments:
        name, eq, _value = text.partition('=')
        if not eq or not name.strip():
            raise ClusterproofError(f'--set {text!r}: write VAR=VALUE (a variable of the checks, '
                                    'e.g. StreamBuild.array_size=4000000)')
        out += ['-S', text]
    return out


def split_checks(checks):
    """``(node checks, pair checks)`` of screening check names."""
    return ([c for c in checks if not results.SCREEN_CHECKS[c].pairs],
            [c for c in checks if results.SCREEN_CHECKS[c].pairs])


class Screening:
    """One screening of a partition: the node checks in one job per node
    (``screen.jobs``), the pair checks one ReFrame invocation per round of
    node pairs (``screen.pairs.ring_pairs``), the repeats; progress through
    ``log`` (a function of one line). ``missing`` is ``{node: reason}`` of
    the nodes whose job gave no result (Slurm's state and reason)."""

    def __init__(self, system, partition, checks, mode='smoke', batch=None, repeat=1,
                 refs=None, log=print, extra=(), workdir=None, env=None, access=(),
                 resume=False, progress_s=60.0, limits=None):
        self.system, self.partition, self.checks = system, partition, checks
        self.mode, self.batch, self.repeat, self.refs = mode, batch, repeat, refs
        self.log, self.extra, self.env = log, list(extra), env
        self.access, self.progress_s = list(access), progress_s
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix='clusterproof-screen-'))
        try:
            self.workdir.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ClusterproofError(f'--workdir {self.workdir}: cannot create: '
                                    f'{err.strerror}') from None
        self.wd = jobs.Workdir(self.workdir)
        state = {'id': uuid.uuid4().hex, 'system': system, 'partition': partition,
                 'checks': list(checks), 'mode': mode, 'extra': self.extra,
                 'started': time.strftime('%Y-%m-%dT%H:%M:%S%z')}
        self.state = self.wd.start(state, resume=resume)
        self.id = self.state['id']
        self.limits = limits if limits is not None else {}
        self.window = jobs.window(self.limits, batch)
        self.invocations = 0
        self.submitted = 0
        self.missing = {}
        self._script = None

    def _env(self):
        return runner.reframe_env(self.env)

    def _invoke(self, make_args):
        self.invocations += 1
        report_file = self.workdir / f'report-{self.invocations}.json'
        args = make_args(report_file)
        with open(self.workdir / f'reframe-{self.invocations}.log', 'w') as out:
            status = runner.start(args, env=self.env, stdout=out,
                                  stderr=subprocess.STDOUT).wait()
        runner.require_cases(args, report_file, status)
        if not report_file.is_file():
            raise ClusterproofError(
                f'reframe wrote no run report (exit status {status}); its output: '
                f'{self.workdir / f"reframe-{self.invocations}.log"}')
        data = runner.read_report(report_file)
        self.submitted += len(runner.testcases(data))
        return results.samples_from_report(data, self.refs)

    def node_args(self, checks):
        """The ``reframe`` arguments each node's job runs ``checks`` with."""
        return [*_select(checks), '--system', f'{self.system}:{self.partition}',
                '--mode', self.mode, *self.extra]

    def run_node_jobs(self, nodes, label, checks):
        """One job per node of ``nodes`` running ``checks`` (node checks);
        ``(samples, {node: partition})`` of the nodes that gave a report."""
        if self._script is None:
            # a selection of no test case fails here, once, not in every node's job
            args = self.node_args(checks)
            if not runner.describe(args, env=self._env()):
                raise runner.NoTestCase(runner.no_case_message(args))
            self._script = jobs.write_node_job(self.wd)
        watch = jobs.Watch(self.wd, self._script, jobs.job_name(self.id), label, list(nodes),
                           self.node_args(checks), jobs.slurm_options(self.access),
                           self.window, log=self.log, progress_s=self.progress_s)
        try:
            reports = watch.run_round()
        finally:
            self.submitted += watch.submitted
        samples, seen = [], {}
        for node, path in reports.items():
            try:
                got, where = results.samples_from_report(runner.read_report(path), self.refs,
                                                         node=node)
            except ClusterproofError as err:
                watch.missing[node] = f'its run report is unreadable: {err}'
                continue
            samples += got
            seen.update(where)
        for node, why in watch.missing.items():
            self.missing.setdefault(node, why)
        return samples, seen

    def cancel_jobs(self, nodes):
        """Cancel this screening's jobs still queued for ``nodes``."""
        jobs.cancel_queued(jobs.job_name(self.id), nodes)

    def run_nodes(self, all_nodes, nodes, label, node_pairs=(), checks=None):
        """Run the node checks (of ``checks``, default all of the screening)
        on ``nodes``, one job per node, and the pair checks on
        ``node_pairs``; returns their samples (and every node a case was
        made for)."""
        node_checks, pair_checks = split_checks(checks or self.checks)
        samples, seen = [], {}
        if node_checks and nodes:
            tag = label.replace(' ', '-') if checks is None else \
                f'{label.replace(" ", "-")}-{"+".join(node_checks)}'
            samples, seen = self.run_node_jobs(nodes, tag, node_checks)
        start, done = time.monotonic(), 0
        groups = [g for rnd in pairs.rounds(node_pairs) for g in batches(rnd, self.window)] \
            if pair_checks else []
        selections = pair_selections(pair_checks)
        for group in groups:
            for selection in selections:
                got, where = self._invoke(lambda report_file: pair_command(
                    self.system, self.partition, selection, group, report_file, self.mode,
                    self.extra))
                samples += got
                seen.update(where)
            done += len(group)
            self.log(f'{label}: ' + progress_line(done, len(node_pairs), time.monotonic() - start,
                                                  'node pairs'))
        return samples, seen


def repeat_groups(verdicts, nodes, checks, rule=None):
    """``[(checks, nodes)]``: the outlier ``nodes`` grouped by the checks
    that made them outliers (a node without any result: every check), so
    a repeat runs again only what it must (a node slow on STREAM is not
    run through the inventory again)."""
    groups = {}
    for v in verdicts:
        if v.node not in nodes:
            continue
        bad = {f.sample.check for f in judge.measured_outliers(v, rule)} & set(checks)
        key = tuple(c for c in checks if c in bad) or tuple(checks)
        groups.setdefault(key, []).append(v.node)
    return [(key, sorted(ns, key=slurm_view._node_key)) for key, ns in groups.items()]


def judge_with_repeats(samples, expected, checks, repeat, rerun, rule=None, peers_of=None,
                       log=print, exclude=(), past=None):
    """The verdicts of a screening's first run ``samples`` after its
    repeats: the outliers and the suspects (``judge.to_repeat``) run again
    up to ``repeat`` times, each time only the checks that made them so
    (:func:`repeat_groups`), through ``rerun(k, checks, nodes)`` (the
    samples of repeat ``k``); a node's runs are judged together
    (``judge.best_of``, ``judge.judge_figure``). Returns ``(verdicts,
    {node: runs})``. ``past``: the nodes' earlier screenings
    (``judge.screen``). The one judgement ``clusterproof screen`` makes, and
    the one ``scripts/measure_screen_judgement.py`` measures."""
    verdicts = judge.screen(samples, expected, rule, peers_of=peers_of, past=past)
    runs = defaultdict(lambda: 1)
    called = {v.node for v in judge.to_repeat(verdicts, rule)} - set(exclude)
    for k in range(1, repeat + 1):
        if not called:
            break
        again = sorted(called, key=slurm_view._node_key)
        log(f'repeat {k}/{repeat}: {len(again)} outlier or suspect node(s) {compress(again)}')
        for group_checks, nodes in repeat_groups(verdicts, called, checks, rule):
            samples = judge.best_of(samples, rerun(k, group_checks, nodes))
        for n in again:
            runs[n] += 1
        verdicts = judge.screen(samples, expected, rule, peers_of=peers_of, past=past)
        called &= {v.node for v in judge.to_repeat(verdicts, rule)}
    return verdicts, dict(runs)


def screen_partition(screening, slurm_nodes, slurm_partition, rule=None, past=None):
    """Screen every node of a partition: ``(verdicts, runs)`` where
    ``runs`` is ``{node: number of runs}``. A node Slurm cannot run a job on
    is not run; one whose job gave no result (drained, down) is missing,
    Slurm's reason given. ``rule``: the ``screen.rule.Rule`` (its defaults
    when None); ``past``: the nodes' earlier screenings (``judge.screen``)."""
    runnable, unavailable = partition_nodes(slurm_nodes, slurm_partition)
    if not runnable and not unavailable:
        raise ClusterproofError(f'Slurm partition {slurm_partition!r} has no nodes')
    part = screening.partition
    all_nodes = runnable + sorted(unavailable)
    ring = pairs.ring_pairs(runnable)
    samples, seen = screening.run_nodes(all_nodes, runnable, 'first run', ring) \
        if runnable else ([], {})
    gone = dict(screening.missing)
    expected = {n: part for n in runnable if n not in gone}
    def rerun(k, checks, nodes):
        newer, _ = screening.run_nodes(all_nodes, nodes, f'repeat{k}',
                                       pairs.pairs_of(ring, nodes), checks)
        return newer

    verdicts, runs = judge_with_repeats(samples, expected, screening.checks, screening.repeat,
                                        rerun, rule, peer_kinds(slurm_nodes), screening.log,
                                        exclude=set(gone), past=past)
    runs = {n: runs.get(n, 1) for n in runnable}
    verdicts = [v for v in verdicts if v.node not in gone]
    verdicts += [screen_verdicts.NodeVerdict(n, part, Verdict.MISSING, note=why)
                 for n, why in sorted(gone.items())]
    reasons = {n.name: n.reason for n in slurm_nodes}
    if unavailable:
        # a resumed screening's job still queued for a node Slurm now has drained
        screening.cancel_jobs(unavailable)
    verdicts += [screen_verdicts.NodeVerdict(n, part, Verdict.MISSING,
                                             note=f'Slurm state {state}: '
                                                  + (f'{reasons[n]}; ' if reasons.get(n) else '')
                                                  + 'not run')
                 for n, state in sorted(unavailable.items())]
    return screen_verdicts.rank(verdicts), runs


def resolve_partition(config, system, partition=None):
    """``(partition name, Slurm partition, emulated)`` of ``system``'s
    ``partition`` (default: its first) in the site configuration."""
    from clusterproof.site.validate import find_partition, find_system
    sysentry = find_system(config, system)
    part = find_partition(sysentry, partition) if partition else sysentry['partitions'][0]
    if part.get('scheduler') != 'slurm':
        raise ClusterproofError(f'{system}:{part["name"]} is not a Slurm partition '
                                f'(scheduler {part.get("scheduler")!r}): screening runs one job '
                                'per node through Slurm')
    return part['name'], slurm_partition_of(part), is_emulated(part.get('extras', {}))


def drain(verdicts, apply=False, run=run_tool):
    """The ``scontrol update ... State=DRAIN`` argv of every outlier; with
    ``apply`` each is run. Returns ``[(argv, result or None)]``."""
    out = []
    for v in screen_verdicts.outliers(verdicts):
        argv = output.drain_command(v)
        out.append((argv, run(argv) if apply else None))
    return out


def judge_reports(paths, refs=None, partition=None, peers_of=None, rule=None, past=None):
    """Verdicts from run reports already written (``--from-report``), for
    the cases of ``partition`` (all when None); a node in several reports
    is judged on the best of its runs, as repeats are (``judge.best_of``);
    ``peers_of``, ``rule`` and ``past`` as for ``judge.screen``."""
    by_node, nodes = {}, {}
    for path in paths:
        got, seen = results.samples_from_report(runner.read_report(path), refs,
                                                base=Path(path).parent)
        if partition:
            got = [s for s in got if s.partition == partition]
            seen = {n: p for n, p in seen.items() if p == partition}
        # merged node by node: a report holds one node in a screening, and
        # merging each into all the samples so far grew as the square of
        # the nodes (1.2 s of 2.7 at 781 nodes)
        for node, own in _by_node(got).items():
            by_node[node] = judge.best_of(by_node.get(node, []), own)
        nodes.update(seen)
    samples = [s for own in by_node.values() for s in own]
    if not nodes:
        raise ClusterproofError(f'no screening test case in {", ".join(map(str, paths))}'
                                + (f' for partition {partition}' if partition else ''))
    return judge.screen(samples, nodes, rule, peers_of=peers_of, past=past)


def _by_node(samples):
    out = {}
    for s in samples:
        out.setdefault((s.partition, s.node), []).append(s)
    return out


def reports_id(paths):
    """The id of a screening judged from run reports (``--from-report``):
    the session UUID of the first, the one the outliers' findings name."""
    return runner.read_report(paths[0])['session_info']['uuid']
