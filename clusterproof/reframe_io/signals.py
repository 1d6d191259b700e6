"""A SIGTERM or SIGHUP sent to ReFrame is not lost in its logging.

ReFrame turns SIGTERM and SIGHUP into ``ForceExitError``, raised wherever
the signal lands, and ignores both signals from then on. Python's logging
handlers catch any ``Exception`` their ``emit`` raises and hand it to
``handleError``, which prints the traceback (``--- Logging error ---``)
and goes on; ReFrame's debug log is a ``RotatingFileHandler``, which looks
at its file (``os.path.exists``) for every record. A signal that lands
while a record is written was so swallowed: ReFrame ran on, its jobs
held, and the same signal sent again was ignored.

:func:`keep_force_exit` (called once the checks' base class is imported,
:mod:`clusterproof.checklib.base`) makes ``handleError`` raise
``ForceExitError`` again, so that ReFrame cancels its jobs and ends as it
does when the signal lands anywhere else.
"""

import logging
import sys

from reframe.core.exceptions import ForceExitError

#: marks the handleError this module installed, so it is installed once
_MARK = '_cp_keeps_force_exit'


def _raising_force_exit(handle_error):
    def handle(handler, record):
        if isinstance(sys.exc_info()[1], ForceExitError):
            raise               # the exception emit caught: ReFrame ends
        handle_error(handler, record)
    setattr(handle, _MARK, True)
    return handle


def keep_force_exit():
    """Make every logging handler let ReFrame's ``ForceExitError`` through
    (once per process; every other error of a handler is still printed and
    passed over)."""
    current = logging.Handler.handleError
    if not getattr(current, _MARK, False):
        logging.Handler.handleError = _raising_force_exit(current)
