"""A SIGTERM that lands while ReFrame writes a log record still ends it
(:mod:`clusterproof.reframe_io.signals`): a real signal, ReFrame's own
handler for it and its own debug-log handler (``RotatingFileHandler``)."""

import logging
import logging.handlers
import os
import signal

import pytest
from reframe.core.exceptions import ForceExitError
from reframe.frontend.executors import _force_exit

from clusterproof.reframe_io import signals


class _SignalWhileWriting(logging.Formatter):
    """Sends this process SIGTERM while the handler formats the record: the
    signal's handler runs inside the handler's emit."""

    def format(self, record):
        os.kill(os.getpid(), signal.SIGTERM)
        return super().format(record)


@pytest.fixture
def reframe_signal_handlers():
    """ReFrame's SIGTERM handler installed, as a run has it; every handler
    it changes (SIGTERM, SIGINT, SIGHUP) restored afterwards."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    signal.signal(signal.SIGTERM, _force_exit)
    yield
    for s, handler in saved.items():
        signal.signal(s, handler)


def _debug_log(tmp_path):
    logger = logging.getLogger(f'cp-test-signals-{tmp_path.name}')
    logger.propagate = False
    handler = logging.handlers.RotatingFileHandler(tmp_path / 'reframe.log')
    handler.setFormatter(_SignalWhileWriting())
    logger.addHandler(handler)
    return logger, handler


def test_sigterm_while_a_record_is_written_ends_the_run(tmp_path, reframe_signal_handlers):
    signals.keep_force_exit()
    logger, handler = _debug_log(tmp_path)
    try:
        with pytest.raises(ForceExitError, match=f'received signal {int(signal.SIGTERM)}'):
            logger.warning('polling the jobs')
    finally:
        handler.close()


def test_other_errors_of_a_handler_are_still_printed_and_passed_over(tmp_path, capsys):
    signals.keep_force_exit()
    installed = logging.Handler.handleError
    signals.keep_force_exit()           # installed once, whatever the number of calls
    assert logging.Handler.handleError is installed
    logger = logging.getLogger(f'cp-test-signals-other-{tmp_path.name}')
    logger.propagate = False
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter('%(nosuchfield)s'))
    logger.addHandler(handler)
    logger.warning('a record the formatter cannot format')     # no exception
    assert 'KeyError' in capsys.readouterr().err
