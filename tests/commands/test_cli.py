"""The ``clusterproof`` command line reads only the subcommand it names:
a job script's ``placement`` or ``scratch`` does not import the analysis
commands (polars, numpy)."""

import subprocess

from clusterproof import cli
from conftest import VENV_BIN


def test_the_named_subcommand_alone_is_registered():
    assert cli.named_command(['placement', '--nodes', 'n1']) == ['placement']
    assert cli.named_command(['--debug', 'ior-args', '--threads', '4']) == ['ior_args']
    # --help, --version, no word, a word that is no subcommand: all of them
    for argv in (['--help', 'placement'], ['--version'], [], ['ior_args'], ['placment']):
        assert cli.named_command(argv) == cli.COMMANDS, argv


def test_a_job_script_command_imports_no_analysis_module():
    code = ('import sys; from clusterproof.cli import main; '
            "status = main(['placement', '--nodes', 'n[1-2]', '--threads', '3']); "
            "print(status, sorted(m for m in ('polars', 'numpy', 'clusterproof.store') "
            'if m in sys.modules))')
    out = subprocess.run([str(VENV_BIN / 'python'), '-c', code], capture_output=True,
                         text=True, timeout=60)
    assert out.stdout.split('\n')[-2] == '0 []', out.stdout + out.stderr


def test_a_word_that_is_no_subcommand_lists_them_all(capsys):
    status = None
    try:
        cli.main(['placment'])
    except SystemExit as exit_:
        status = exit_.code
    err = capsys.readouterr().err
    assert status == 2 and "invalid choice: 'placment'" in err and 'acceptance-report' in err, err
