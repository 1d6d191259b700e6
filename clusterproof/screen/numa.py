"""STREAM per NUMA domain in a screening: after the node's STREAM run,
the job runs STREAM again bound to each NUMA domain in turn (its cores and
its memory: ``numactl --cpunodebind=D --membind=D``, one thread per
physical core of the domain), each run after a line
``clusterproof numa domain D``. The check reports each domain's Triad as
``triad@numa<D>``, which the screening judges as the figure ``triad`` of
the component ``numa D`` among the same domains of the peers
(``screen.results``): a socket whose memory lost a channel is named,
where the node's average hides it.

The domains are those the node itself lists with CPUs (``numactl
--hardware``, inside the job: never the submit host's), and the loop runs
only where there are at least :data:`MIN_DOMAINS` (on a node of one
domain, domain 0 is the node). Pure functions: :func:`domain_loop` writes
the job's shell lines, :func:`split` reads its output back.
"""

import re
import shlex

#: the line before each domain's run
MARKER = 'clusterproof numa domain'
#: the fewest NUMA domains with CPUs for the per-domain runs
MIN_DOMAINS = 2

_MARK = re.compile(rf'^{MARKER} (\d+)\s*$', re.M)


def domain_loop(binary, min_domains=MIN_DOMAINS):
    """The shell lines that run ``binary`` bound to each NUMA domain with
    CPUs in turn, one OpenMP thread per physical core of it (``lscpu``'s
    cores of the domain, counted inside the job), when the node has at
    least ``min_domains`` of them."""
    bind = 'numactl --cpunodebind="$d" --membind="$d"'
    cores = ("lscpu -p=CORE,NODE | grep -v '^#' | awk -F, -v d=\"$d\" '$2 == d {print $1}' "
             '| sort -u | wc -l')
    return [
        "domains=$(numactl --hardware | sed -n 's/^node \\([0-9][0-9]*\\) cpus: [0-9].*/\\1/p')",
        f'if [ "$(echo $domains | wc -w)" -ge {int(min_domains)} ]; then',
        '  for d in $domains; do',
        f'    t=$({cores}); [ "$t" -ge 1 ] || t=1',
        f'    echo "{MARKER} $d"',
        f'    OMP_NUM_THREADS="$t" {bind} {shlex.quote(str(binary))}',
        '  done',
        'fi',
    ]


def split(text):
    """``(node text, {domain: text})``: the node's run (before the first
    marker) and each domain's run, in the order they ran."""
    marks = list(_MARK.finditer(text))
    if not marks:
        return text, {}
    domains = {}
    for m, nxt in zip(marks, marks[1:] + [None]):
        domains[int(m.group(1))] = text[m.end():nxt.start() if nxt else len(text)]
    return text[:marks[0].start()], domains


def figure(domain, name='triad'):
    """``triad@numa1``: the performance variable of a domain's figure."""
    return f'{name}@numa{domain}'


def runs(text, parse, source='STREAM output'):
    """``(node run, {domain: run})`` of a job's output, each part read by
    ``parse(text, source)`` (``parsers.stream.parse``); a domain's source
    names its marker."""
    node, domains = split(text)
    return parse(node, source), {d: parse(part, f'{source}, after "{MARKER} {d}"')
                                 for d, part in domains.items()}
