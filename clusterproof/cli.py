"""The ``clusterproof`` command.

Each subcommand lives in ``clusterproof/commands/<name>.py`` and provides
``register(subparsers)``, which adds its parser and sets ``func`` to a
function taking the parsed arguments and returning the exit status. A
command line that names a subcommand imports that one module only (job
scripts run ``placement`` and ``scratch`` several times per job); ``--help``
and a word that is no subcommand import them all.

An error is one line on standard error and exit status 2: a refusal
(``ClusterproofError``) as it is worded, any other exception as the
command, what it was given and a hint; the traceback only with ``--debug``.
"""

import argparse
import importlib
import importlib.util
import sys

from clusterproof import ClusterproofError, __version__

#: subcommands in the order ``--help`` lists them
COMMANDS = [
    'cluster',      # the local Slurm cluster
    'init',         # a new system's files, discovered from Slurm and its nodes
    'placement',    # round-robin placement of threads over client nodes
    'sizing',       # file sizes that defeat caches
    'ior_args',     # the IOR options of the N-to-1 run, for job scripts
    'scratch',      # test directories under a scratch directory, for job scripts
    'inventory',    # this node's hardware, for the inventory checks
    'fio_preflight',  # whether this node has what a fio check needs, for its job
    'spack',        # the Spack environment
    'bless',        # references derived from measured sessions
    'compare',      # sessions against each other or against references
    'report',       # the morning page (HTML)
    'changes',      # change points in the history of every figure
    'triage',       # a person's verdict on each finding, the false-alarm rate
    'acceptance',   # the full methodology, three repetitions, a verdict
    'acceptance_report',  # the signed report of one acceptance, HTML and PDF
    'published_shape',  # the storage plan at its published shape, on a local cluster
    'screen',       # every node of a partition against its peers
    'validate',     # the site configuration and references, checked
    'store',        # the figure store every command reads
    'export',       # figures of the store as CSV, Parquet, BMF, OpenMetrics
    'notify',       # what is new and needs a person, sent once
    'run',          # the checks through ReFrame in one mode
    'nightly',      # the nightly run: checks, page, compare, store, notify
]


def build_parser(commands=COMMANDS):
    """The parser of the subcommands ``commands`` (modules of
    ``clusterproof/commands/``; every one by default)."""
    parser = argparse.ArgumentParser(
        prog='clusterproof',
        description='HPC benchmark and acceptance toolkit around ReFrame and Slurm. '
                    'The checks themselves run with: reframe -c reframe_checks -r '
                    '[--mode smoke|nightly|acceptance]')
    parser.add_argument('--version', action='version', version=f'clusterproof {__version__}')
    parser.add_argument('--debug', action='store_true',
                        help='on an unexpected error, print its traceback too (without it: '
                             'one line naming the command, its input and a hint)')
    sub = parser.add_subparsers(dest='command', metavar='COMMAND')
    for name in commands:
        modname = f'clusterproof.commands.{name}'
        if importlib.util.find_spec(modname) is None:
            continue
        importlib.import_module(modname).register(sub)
    return parser


def named_command(argv):
    """``[module]`` of the subcommand ``argv`` names (its first word after
    ``--debug``), or every module of COMMANDS when it names none of them
    (``--help``, ``--version``, a typing error). A job script runs
    ``placement`` or ``scratch`` several times per job: parsing it imports
    that one module, not every command's (the analysis commands import
    polars and numpy, some 0.5 s of processor time)."""
    word = next((a for a in argv if a != '--debug'), '')
    name = word.replace('-', '_')
    return [name] if name in COMMANDS and word == name.replace('_', '-') else COMMANDS


def main(argv=None):
    parser = build_parser(named_command(sys.argv[1:] if argv is None else argv))
    args = parser.parse_args(argv)
    if not getattr(args, 'func', None):
        parser.print_help()
        return 2
    try:
        return args.func(args) or 0
    except ClusterproofError as err:
        print(f'clusterproof {args.command}: error: {err}', file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f'clusterproof {args.command}: interrupted', file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, as cat does.
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as err:    # noqa: BLE001 -- the one place any error becomes one line
        if args.debug:
            raise
        print(unexpected(args.command, argv if argv is not None else sys.argv[1:], err),
              file=sys.stderr)
        return 2


def unexpected(command, argv, err):
    """The one line of an error nothing refused by name: the command, its
    input, the error (a file error names its file) and a hint."""
    if isinstance(err, OSError) and err.filename:
        what = f'{err.filename}: {err.strerror or err}'
    elif isinstance(err, UnicodeDecodeError):
        what = f'input that is not UTF-8 text ({err.reason} at byte {err.start})'
    else:
        what = f'{type(err).__name__}: {err}'
    given = ' '.join(argv)
    if len(given) > 300:
        given = given[:300] + '...'
    return (f'clusterproof {command}: unexpected error: {what} (input: {given}); check the '
            f'files and values given, or run again with --debug for the traceback')


if __name__ == '__main__':
    sys.exit(main())
