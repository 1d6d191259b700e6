"""Running ReFrame, and what its command line and run report say.

The one module that starts ``reframe`` for clusterproof (``acceptance``, the
tests, the scripts) and reads back what it did: every run is given
``--report-file`` and the session (its UUID, its test cases) is read from
that JSON run report, never from ReFrame's console text. It also parses
ReFrame's ``--mode`` option (:func:`reframe_mode`, what
:func:`clusterproof.modes.current_mode` decides the mode with).

Written against ReFrame 4.10.4 (``requirements.lock``), whose run report has
``session_info.data_version`` :data:`DATA_VERSION`; a report of another
major version is refused with the version named, so an upgrade of ReFrame
that changes the format fails here and not somewhere downstream.

This module imports nothing from ReFrame: check files import
``clusterproof.modes`` inside ReFrame, and the tools run without it.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from clusterproof import ClusterproofError
from clusterproof.paths import REPO, results_dir

#: the run-report format read here (``session_info.data_version`` of ReFrame 4.10.4)
DATA_VERSION = '4.2'


class NotARunReport(ClusterproofError):
    """The file is absent, unreadable or no run report (not JSON, no
    ``session_info.uuid``): what a run interrupted before writing its report
    leaves. A report of another format version is not this: it is an error."""


def reframe_command():
    """The ``reframe`` of this Python environment."""
    return str(Path(sys.executable).parent / 'reframe')


def _is_reframe(argv0):
    path = Path(argv0 or '')
    return path.name == 'reframe' or (path.name == '__main__.py' and path.parent.name == 'reframe')


def reframe_mode(argv=None):
    """The ``--mode`` given to the running ``reframe`` command, or None (no
    ``--mode``, or this process is not ReFrame)."""
    argv = sys.argv if argv is None else argv
    if not argv or not _is_reframe(argv[0]):
        return None
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument('--mode')
    known, _ = parser.parse_known_args(argv[1:])
    return known.mode


@dataclass
class Run:
    """A finished ``reframe`` run: its exit status, its console output (for
    people; nothing is read from it), the run report file and its data."""
    returncode: int
    output: str
    report_file: Path
    report: dict

    @property
    def uuid(self):
        """The session UUID (the key of the session in the results database)."""
        return self.report['session_info']['uuid']

    @property
    def testcases(self):
        """Every test case of the session (see :func:`testcases`)."""
        return testcases(self.report)


def testcases(report):
    """Every test case of a run report's data (of every retry round)."""
    return [tc for run in report.get('runs', []) for tc in run.get('testcases', [])]


def default_report_file(env=None):
    """A new run report file under ``<results>/reports`` of the environment
    ``env`` (beside the ones the site configuration names
    ``run-report-<n>.json``)."""
    return results_dir(env) / 'reports' / f'run-report-cp-{time.strftime("%Y%m%d-%H%M%S")}-' \
                                       f'{os.getpid()}-{time.monotonic_ns()}.json'


def report_option(report_file):
    """The options that make ReFrame write its run report to ``report_file``
    (for a caller that runs ``reframe`` itself and reads the session with
    :func:`session_of`)."""
    return ['--report-file', str(report_file)]


def session_of(report_file):
    """The session UUID in the run report ``report_file``; None when ReFrame
    wrote none (it ran no test case or failed before)."""
    path = Path(report_file)
    return read_report(path)['session_info']['uuid'] if path.is_file() else None


def run(args, *, env=None, cwd=REPO, report_file=None, echo=False, timeout=None):
    """Run ``reframe ARGS --report-file FILE`` (``report_file``, default
    :func:`default_report_file` of ``env``) and return its :class:`Run`. With ``echo``
    the console output is copied to stdout as it comes (and ``timeout``, in
    seconds, is not applied). A run that wrote no
    report (ReFrame failed before any test case, or ran none) is an error
    naming the exit status and the last lines of its output."""
    report_file = Path(report_file or default_report_file(env)).resolve()
    report_file.parent.mkdir(parents=True, exist_ok=True)
    report_file.unlink(missing_ok=True)
    cmd = [reframe_command(), *map(str, args), *report_option(report_file)]
    if echo:
        with subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) as proc:
            lines = []
            for line in proc.stdout:
                lines.append(line)
                sys.stdout.write(line)
                sys.stdout.flush()
            status = proc.wait()
        output = ''.join(lines)
    else:
        proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=timeout)
        status, output = proc.returncode, proc.stdout
    if not report_file.is_file():
        tail = '\n'.join(output.rstrip().splitlines()[-15:]) or '(no output)'
        raise ClusterproofError(f'ReFrame wrote no run report {report_file} (exit status '
                                f'{status}): it ran no test case or failed before; its '
                                f'output ends:\n{tail}')
    return Run(status, output, report_file, read_report(report_file))


def read_report(path):
    """The data of a ReFrame run report (JSON), its format version checked:
    the one place that checks it. :class:`NotARunReport` when the file is
    absent, unreadable or no report."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except OSError as err:
        raise NotARunReport(f'{path}: cannot read: {err.strerror}') from None
    except ValueError as err:
        raise NotARunReport(f'{path}: not a ReFrame run report (not JSON: {err})') from None
    info = data.get('session_info') if isinstance(data, dict) else None
    if not isinstance(info, dict) or 'uuid' not in info:
        raise NotARunReport(f'{path}: not a ReFrame run report (no session_info.uuid)')
    version = str(info.get('data_version', '?'))
    if version.split('.')[0] != DATA_VERSION.split('.')[0]:
        raise ClusterproofError(f'{path}: run report format {version}; clusterproof reads '
                                f'format {DATA_VERSION} (ReFrame 4.10)')
    return data
