"""IOR output: the summary bandwidths, the per-iteration rows, stonewalling,
the access mode, and every ``WARNING:`` and ``ERROR`` line.

Two sources, one result (:class:`IorRun`):

- the JSON summary file (``-O summaryFormat=JSON -O summaryFile=<f>``), used
  when it is valid JSON. IOR 4.0.0 writes *invalid* JSON when ``-v`` is given
  (it closes the ``Results`` array twice); IOR 3.3.0 and 4.0.0 without ``-v``
  write valid JSON. With a summary file, stdout carries no results table.
  Without a summary file the JSON goes to stdout, and lines IOR prints
  meanwhile (``--mpiio.showHints``/``-H`` hints, ``WARNING:``) land inside
  it: such JSON is refused quoting the stray line. IOR 3.2 writes its text
  banner before the JSON (skipped) and opens the file on every rank: with
  more than one rank the ranks overwrite each other and the file is refused
  naming that. ``Results`` holds one
  entry per iteration and operation (4.0) or one ``[write, read]`` list per
  iteration (3.3); every entry is read.
- the text on stdout otherwise: the per-iteration rows under ``Results:``
  (10 columns from 3.3 on; 8 in 3.0 and 3.2, without IOPS and latency) and
  the ``Summary of all tests:`` table. IOR 3.0 prints its options as
  ``key = value`` and ``Command line used:``.

A text output of several runs (each from its ``IOR-x.y: MPI Coordinated
Test of Parallel I/O`` banner: IOR's own test scripts, an administrator's
loop over APIs and task counts, a job script run twice into one file) is
read by the rule of every parser (:mod:`clusterproof.parsers.runs`): the
last run when all have the same API, access, operations, tasks, transfer
and block size; refused, naming the count and what differs run by run,
when they do not (POSIX then MPIIO, 4 then 32 tasks). :func:`split_runs`
gives each run's text, for a caller that runs IOR several times on purpose
(the IOR check: a write run, then a read run).

A text output without the summary table is refused, naming what it shows:
every iteration's row but no table and no ``Finished`` line is IOR run as a
library (IO500 calls ``ior_run()`` without ``-v``, which prints neither);
fewer rows than ``repetitions`` is a run that did not finish; CSV output
(``summaryFormat=CSV``) has rows only and is named as such.

Facts the text parser relies on (tests/data/ior/ has real recordings):

- per-iteration numbers change format with magnitude: six decimals below 1
  (``0.001871``), two decimals below 3600 (``2286.25``), no decimal point
  from 3600 up (``8778``); every number form is accepted;
- the summary table prints ``%.2f`` values; its ``Stonewall(s)`` and
  ``Stonewall(MiB)`` columns hold ``NA`` without stonewalling (parsed as
  ``None``) and numbers with it; ``fPP`` is 0 for one shared file (N-to-1)
  and 1 for file per process; ``reord`` is 1 when reads used ``-C``;
- ``remove`` rows (no ``-k``) hold ``-`` placeholders and are not results;
- ``WARNING:`` lines (for instance the expected aggregate size differs from
  the bytes moved, after a stonewall deadline) and ``ERROR`` lines (failed
  open, MPI_ABORT), with the error lines of the MPI library, UCX and Slurm
  (:mod:`clusterproof.parsers.runtime_errors`), are collected so a check can
  fail its sanity and quote them.

Every number is read as a finite number (a whole one where IOR counts):
``nan``, ``inf``, ``1e999`` or a garbled value in a row or in the JSON is
refused naming the row or key, never kept as a figure; a last line cut
mid-number is not read (:func:`clusterproof.parsers.runs.whole_lines`).

Bandwidth is MiB/s (2^20 bytes/s) as IOR prints it; :func:`gb_per_s` gives
the GB/s (10^9 bytes/s) the published figures use.
"""

import json
import re
from dataclasses import dataclass, field

from clusterproof.parsers import ParseError, finite, line_at, runs, runtime_errors, whole

MIB = 1024 ** 2

#: IOR's ``access`` option values
SHARED_FILE = 'single-shared-file'
FILE_PER_PROCESS = 'file-per-process'

OPERATIONS = ('write', 'read')

_NUM = r'(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?'
_VERSION = re.compile(r'^IOR-(\S+): MPI Coordinated Test of Parallel I/O\s*$\n?', re.M)
_CMD = re.compile(r'^Command line(?: used)?\s*: (.*)$', re.M)
#: the Options block: ``key : value`` (3.2 on) or ``key = value`` (3.0, tab-indented)
_OPTION = re.compile(r'^\s*(access|tasks|clients|nodes|clients per node|repetitions|xfersize|'
                     r'blocksize|aggregate filesize|ordering inter file|api)\s*[:=] (.*?)\s*$',
                     re.M)
_ITER_COLS = ('bw_mib', 'iops', 'latency_s', 'block_kib', 'xfer_kib', 'open_s', 'wrrd_s',
              'close_s', 'total_s', 'iter')
#: IOR 3.0 and 3.2 rows: no IOPS, no latency
_ITER_COLS_8 = tuple(c for c in _ITER_COLS if c not in ('iops', 'latency_s'))
_ITER = re.compile(r'^(write|read)\s+((?:' + _NUM + r'\s+){7,9}' + _NUM + r')\s*$', re.M)
#: a line that starts as an iteration row (CSV rows have a comma after the name)
_ITER_LIKE = re.compile(r'^(?:write|read)[ \t]+\S.*$', re.M)
_FINISHED = re.compile(r'^Finished\s*: ', re.M)
_JSON_RUN = re.compile(r'summaryFormat=JSON', re.I)
_SUMMARY_FILE = re.compile(r'^Writing output to (\S+)', re.M)
_CSV_HEAD = re.compile(r'^access,bw\(MiB/s\),', re.M)
_SUMMARY_HEAD = re.compile(r'^Operation\s+Max\(MiB\).*$', re.M)
_REORDER_LINE = "Using reorderTasks '-C'"
_WARNING = re.compile(r'^.*\bWARNING:.*$', re.M)
#: error lines: ``ERROR`` (IOR, mdtest 3.x/4.x), ``Process N(...): FAILED in <function>,``
#: (LLNL mdtest 1.9.x); the MPI library's are :mod:`clusterproof.parsers.runtime_errors`'
_ERROR = re.compile(r'^.*(?:\bERROR\b|: FAILED in \w+,).*$', re.M)

#: summary-table columns kept, and their names in the result
_SUMMARY_COLS = {
    'Max(MiB)': 'max_mib', 'Min(MiB)': 'min_mib', 'Mean(MiB)': 'mean_mib',
    'Mean(s)': 'mean_time_s', 'Stonewall(s)': 'stonewall_s', 'Stonewall(MiB)': 'stonewall_mib',
    '#Tasks': 'tasks', 'tPN': 'tasks_per_node', 'reps': 'repetitions', 'fPP': 'file_per_proc',
    'reord': 'reorder', 'blksiz': 'block_bytes', 'xsize': 'transfer_bytes',
    'aggs(MiB)': 'aggregate_mib', 'API': 'api',
}
_INT_FIELDS = {'tasks', 'tasks_per_node', 'repetitions', 'file_per_proc', 'reorder',
               'block_bytes', 'transfer_bytes', 'iter'}


def gb_per_s(mib_per_s):
    """MiB/s (IOR's unit) in GB/s (10^9 bytes/s, the published unit)."""
    return None if mib_per_s is None else mib_per_s * MIB / 1e9


@dataclass
class IorRun:
    """What one IOR run reported."""
    source: str                       # file or description the values came from
    source_format: str                # 'json' or 'text'
    version: str = ''
    command: str = ''
    access: str = ''                  # SHARED_FILE or FILE_PER_PROCESS
    tasks: int = 0
    nodes: int = 0
    reorder: bool = False             # reads reordered with -C
    #: per operation: max_mib, min_mib, mean_mib, mean_time_s, stonewall_s,
    #: stonewall_mib (None when NA), tasks, tasks_per_node, repetitions,
    #: file_per_proc, reorder, block_bytes, transfer_bytes
    summary: dict = field(default_factory=dict)
    #: per iteration, in order: operation, iter, bw_mib, iops, latency_s, ...
    iterations: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    runs: int = 1                     # runs the output holds (the last is read)
    note: str = ''                    # which run was read, when there are several

    @property
    def stonewalled(self):
        """True when an operation ran under a stonewall deadline (numbers in
        the Stonewall columns)."""
        return any(s.get('stonewall_s') is not None for s in self.summary.values())

    def problems(self):
        """The ``ERROR`` and ``WARNING:`` lines, errors first."""
        return self.errors + self.warnings

    def bandwidth(self, operation, stat='max', unit='MiB/s'):
        """Summary ``max``/``mean`` bandwidth of ``operation`` in MiB/s or GB/s."""
        try:
            value = self.summary[operation][f'{stat}_mib']
        except KeyError:
            raise ParseError(f'{self.source}: no {operation} {stat} bandwidth in the IOR '
                             f'summary (operations found: {", ".join(self.summary) or "none"})'
                             ) from None
        return gb_per_s(value) if unit == 'GB/s' else value


def _number(text, what, source, key=None):
    """A value of IOR's text: None for ``NA``/``-``, a whole number for the
    columns of :data:`_INT_FIELDS`, a finite float otherwise."""
    if text in ('NA', '-'):
        return None
    return whole(text, what, source) if key in _INT_FIELDS else finite(text, what, source)


def problem_lines(*texts):
    """``(errors, warnings)``: the ERROR and WARNING: lines of the texts, in
    order; the error lines of the MPI library, UCX and Slurm
    (:mod:`clusterproof.parsers.runtime_errors`: ``ORTE_ERROR_LOG``,
    ``srun: error:`` ...) are errors too."""
    errors, warnings = [], []
    for text in texts:
        for line in (text or '').splitlines():
            if _ERROR.match(line) or runtime_errors.error_lines(line):
                errors.append(line.strip())
            if _WARNING.match(line):
                warnings.append(line.strip())
    return errors, warnings


def _summary_rows(text, source, first=1):
    """The rows of the summary table in ``text`` (whose first line is line
    ``first`` of the output), by operation."""
    rows = {}
    head = _SUMMARY_HEAD.search(text)
    if not head:
        return rows
    names = head.group(0).split()
    start = line_at(text, head.end(), first) + 1
    for number, line in enumerate(text[head.end():].split('\n')[1:], start):
        where = f'{source}, line {number}'
        tokens = line.split()
        if not tokens:
            continue
        if tokens[0] not in OPERATIONS:
            break
        if len(tokens) != len(names):
            raise ParseError(f'{where}: IOR summary row has {len(tokens)} fields, its header '
                             f'{len(names)}: {line.strip()!r}')
        row = {}
        for name, tok in zip(names[1:], tokens[1:]):
            key = _SUMMARY_COLS.get(name)
            if key is not None:
                row[key] = tok if key == 'api' else _number(tok, f'summary column {name}',
                                                            where, key)
        rows[tokens[0]] = row
    return rows


def _iteration(line, where):
    """One iteration row (``write  2286.25  ...``: 10 values from IOR 3.3 on,
    8 before) as a dict; a damaged row raises :class:`ParseError` naming
    ``where``."""
    m = _ITER.match(line)
    values = m.group(2).split() if m else []
    if len(values) not in (len(_ITER_COLS), len(_ITER_COLS_8)):
        raise ParseError(f'{where}: a damaged iteration row (want the operation and '
                         f'{len(_ITER_COLS_8)} or {len(_ITER_COLS)} numbers): {line.strip()!r}')
    row = {'operation': m.group(1), 'iops': None, 'latency_s': None}
    for col, val in zip(_ITER_COLS if len(values) == len(_ITER_COLS) else _ITER_COLS_8, values):
        row[col] = _number(val, f'{m.group(1)} row, {col}', where, col)
    return row


def _leading_int(value):
    """The number a value starts with (``2 (2 per node)`` gives 2), 0 if none."""
    m = re.match(r'\s*(\d+)', value or '')
    return int(m.group(1)) if m else 0


def _why_no_summary(run, text, repetitions):
    """What an output without the summary table shows: an error, iterations
    missing (IOR did not finish), or every iteration (IOR run as a library)."""
    if run.errors:
        return f'IOR failed; first error: {run.errors[0]!r}'
    counts = {op: sum(r['operation'] == op for r in run.iterations) for op in OPERATIONS}
    done = ', '.join(f'{op} {n} of {repetitions}' for op, n in counts.items() if n)
    m = _SUMMARY_FILE.search(text)
    if not run.iterations and m:
        return f'the run wrote its results to the JSON summary file {m.group(1)}'
    if not run.iterations and _JSON_RUN.search(run.command or text):
        return 'the run wrote its results as JSON (summaryFormat=JSON), not as text'
    if _CSV_HEAD.search(text):
        return ('the run printed CSV (summaryFormat=CSV): iteration rows only, no summary; '
                'run it with the text or JSON summary')
    if not run.iterations:
        return 'no iteration row either: IOR did not finish'
    if repetitions and all(n in (0, repetitions) for n in counts.values()) \
            and not _FINISHED.search(text):
        return (f'every iteration row is there ({done}) but no "Finished" line: IOR was run as '
                'a library (IO500 runs it so, printing neither without -v), or was stopped '
                'right after its last iteration; read the summary its harness wrote, or run '
                'ior itself')
    return f'iteration rows: {done or "none"}: IOR did not finish'


def split_runs(text):
    """The text of each IOR run of a text output, oldest first."""
    return runs.split(text, _VERSION)


def _kind(text):
    """What the runs of one output must share (:mod:`clusterproof.parsers.runs`)."""
    options = {k: v for k, v in _OPTION.findall(text)}
    summary_at = text.find('Summary of all tests:')
    ops = dict.fromkeys(m.group(1) for m in _ITER.finditer(text[:summary_at]
                                                            if summary_at >= 0 else text))
    return {'API': options.get('api', '?'), 'access': options.get('access', '?'),
            'operations': '+'.join(ops) or '?',
            'tasks': options.get('tasks') or options.get('clients') or '?',
            'transfer': options.get('xfersize', '?'), 'block': options.get('blocksize', '?')}


def parse_text(text, source='IOR output', stderr=''):
    """:class:`IorRun` from IOR's text output (stdout; ``stderr`` adds its
    ERROR/WARNING lines). A run without a summary table is an error naming
    ``source`` and quoting the first ERROR line if there is one. An output
    of several runs gives the last, or is refused when they differ in kind
    (the module's documentation)."""
    chosen = runs.one_run(text, _VERSION, source, 'IOR', kind=_kind)
    text, source = chosen.text, chosen.source
    errors, warnings = problem_lines(text, stderr)
    run = IorRun(source, 'text', errors=errors, warnings=warnings, runs=chosen.runs,
                 note=chosen.note)
    m = _VERSION.search(text)
    run.version = m.group(1) if m else ''
    m = _CMD.search(text)
    run.command = m.group(1).strip() if m else ''
    options = {k: v for k, v in _OPTION.findall(text)}
    run.access = options.get('access', '')
    run.tasks = _leading_int(options.get('tasks') or options.get('clients'))
    run.nodes = _leading_int(options.get('nodes'))
    run.reorder = _REORDER_LINE in text
    summary_at = text.find('Summary of all tests:')
    body = text if summary_at < 0 else text[:summary_at]
    for like in _ITER_LIKE.finditer(body):
        where = f'{source}, line {chosen.line_at(like.start())}'
        run.iterations.append(_iteration(like.group(0), where))
    run.summary = (_summary_rows(text[summary_at:], source, chosen.line_at(summary_at))
                   if summary_at >= 0 else {})
    if not run.summary:
        raise ParseError(f'{source}: no "Summary of all tests:" table with a write or read row '
                         f'({_why_no_summary(run, text, _leading_int(options.get("repetitions")))}'
                         ')')
    if not run.access:
        fpp = {s.get('file_per_proc') for s in run.summary.values()}
        run.access = FILE_PER_PROCESS if fpp == {1} else SHARED_FILE if fpp == {0} else ''
    if not run.tasks:
        run.tasks = next(iter(run.summary.values())).get('tasks') or 0
    run.reorder = run.reorder or any(s.get('reorder') for s in run.summary.values())
    return run


def _flat(results):
    """The result entries of a test: 4.0 lists them, 3.3 nests one
    ``[write, read]`` list per iteration."""
    for res in results:
        if isinstance(res, list):
            yield from _flat(res)
        else:
            yield res


def _why_invalid_json(text, err):
    """The cause an invalid JSON summary shows at the place it breaks."""
    lines = text.splitlines()
    line = lines[err.lineno - 1].strip() if 0 < err.lineno <= len(lines) else ''
    if 'Test of Parallel I/O' in text and not _VERSION.match(text):
        return ('several ranks wrote the file over each other (IOR 3.2 opens the summary file '
                'on every rank; only a one-rank run writes it whole): use the text output')
    if 'hints passed to MPI_File_open' in text or line.startswith('hints '):
        return ('MPI-IO hint text (--mpiio.showHints, -H) is printed into JSON written to '
                'stdout: name a summaryFile, or drop the hints option')
    if _WARNING.match(line) or _ERROR.match(line):
        return f'IOR printed {line!r} into the JSON: name a summaryFile'
    if line.startswith(']') and re.search(r'^\s*\]\s*\n\s*\]\s*\n\s*,\s*\n\s*"max"', text,
                                          re.M):
        return ('the Results array is closed twice, as IOR 4.0.0 writes it with -v; '
                'use the text output instead')
    return f'it breaks at {line[:120]!r}'


def _read_json(run, doc, banner):
    """Fill ``run`` from IOR's JSON summary ``doc``; every number finite
    (whole where IOR counts), else :class:`ParseError` naming its key."""
    source = run.source

    def num(entry, key, where):
        return finite(entry[key], f'{where} {key}', source)

    def count(entry, key, where):
        return whole(entry[key], f'{where} {key}', source)

    def optional(entry, key, where):
        return None if entry.get(key) is None else num(entry, key, where)

    run.version = str(doc.get('Version', '') or (banner.group(1) if banner else ''))
    run.command = str(doc.get('Command line', ''))
    tests = doc.get('tests') or []
    options = tests[0].get('Options', {}) if tests else {}
    run.access = options.get('access', '')
    run.nodes = whole(options.get('nodes') or 0, 'Options nodes', source)
    run.tasks = whole(options.get('tasks') or 0, 'Options tasks', source)
    for test in tests:
        counters = {}
        for res in _flat(test.get('Results', [])):
            op = res.get('access')
            if op not in OPERATIONS:
                continue
            counters[op] = counters.get(op, -1) + 1
            where = f'Results, {op} {counters[op]}:'
            run.iterations.append({
                'operation': op, 'iter': counters[op], 'bw_mib': num(res, 'bwMiB', where),
                # no iops and latency before 3.3
                'iops': optional(res, 'iops', where), 'latency_s': optional(res, 'latency', where),
                'block_kib': num(res, 'blockKiB', where), 'xfer_kib': num(res, 'xferKiB', where),
                'open_s': num(res, 'openTime', where), 'wrrd_s': num(res, 'wrRdTime', where),
                'close_s': num(res, 'closeTime', where), 'total_s': num(res, 'totalTime', where)})
    for s in doc.get('summary') or []:
        op = s.get('operation')
        if op not in OPERATIONS:
            continue
        where = f'summary, {op}:'
        run.summary[op] = {
            'max_mib': num(s, 'bwMaxMIB', where), 'min_mib': num(s, 'bwMinMIB', where),
            'mean_mib': num(s, 'bwMeanMIB', where), 'mean_time_s': num(s, 'MeanTime', where),
            'stonewall_s': optional(s, 'StoneWallTime', where),
            'stonewall_mib': optional(s, 'StoneWallbwMeanMIB', where),
            'tasks': count(s, 'numTasks', where), 'tasks_per_node': count(s, 'tasksPerNode', where),
            'repetitions': count(s, 'repetitions', where),
            'file_per_proc': count(s, 'filePerProc', where),
            'reorder': count(s, 'reorderTasks', where), 'block_bytes': count(s, 'blockSize', where),
            'transfer_bytes': count(s, 'transferSize', where), 'api': s.get('API', '')}


def parse_json(text, source='IOR JSON summary', stdout=''):
    """:class:`IorRun` from IOR's JSON summary file. Invalid JSON raises
    :class:`ParseError` naming the file, line and column (IOR 4.0.0 with
    ``-v`` writes such files). ``stdout`` adds its ERROR/WARNING lines."""
    banner = _VERSION.match(text)          # IOR 3.2 puts its text banner first
    try:
        doc = json.loads(text[banner.end():] if banner else text)
    except json.JSONDecodeError as err:
        raise ParseError(f'{source}: not valid JSON ({err}); {_why_invalid_json(text, err)}'
                         ) from None
    errors, warnings = problem_lines(stdout)
    run = IorRun(source, 'json', errors=errors, warnings=warnings)
    try:
        _read_json(run, doc, banner)
    except (KeyError, TypeError, AttributeError) as err:
        raise ParseError(f'{source}: IOR JSON summary lacks or mangles {err}') from None
    if not run.summary:
        raise ParseError(f'{source}: the IOR JSON summary has no write or read entry')
    run.reorder = any(s['reorder'] for s in run.summary.values())
    if not run.access:
        fpp = {s['file_per_proc'] for s in run.summary.values()}
        run.access = FILE_PER_PROCESS if fpp == {1} else SHARED_FILE
    return run


def parse(stdout, source='IOR output', json_text=None, json_source=None, stderr=''):
    """The JSON summary where it is given and valid, the text otherwise.

    When the JSON is invalid and stdout has no summary table either, the
    error names both (the JSON error first). A stdout that is JSON
    (``summaryFormat=JSON`` without a summary file) is read as the JSON."""
    if json_text is None and stdout.lstrip().startswith('{'):
        json_text, json_source = stdout, f'{source} (JSON on stdout)'
    if json_text is not None:
        try:
            run = parse_json(json_text, json_source or f'{source} (JSON summary)',
                             stdout=stdout + '\n' + stderr)
            return run
        except ParseError as json_err:
            try:
                return parse_text(stdout, source, stderr)
            except ParseError as text_err:
                raise ParseError(f'{json_err}; and {text_err}') from None
    return parse_text(stdout, source, stderr)


def check_access(run, expected):
    """None when ``run`` used the ``expected`` access mode, else why not."""
    if run.access != expected:
        return (f'{run.source}: IOR access mode is {run.access or "unknown"!r}, expected '
                f'{expected!r}')
    fpp = 1 if expected == FILE_PER_PROCESS else 0
    for op, s in run.summary.items():
        if s.get('file_per_proc') not in (None, fpp):
            return f'{run.source}: {op} summary has fPP={s["file_per_proc"]}, expected {fpp}'
    return None
