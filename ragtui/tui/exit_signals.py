"""How the app ends: on SIGHUP (the terminal or SSH link went away) and SIGTERM it quits cleanly, and
a watchdog ends the process if a quit does not finish in time.

Every label is fsynced when it is made, so nothing is pending when the process ends: quitting never
waits for a worker (a model still loading, a live retriever's request) nor for torch's teardown.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import NoReturn

#: Signals that end the app cleanly: SIGHUP (the terminal or SSH link went away) and SIGTERM.
EXIT_SIGNALS = (signal.SIGHUP, signal.SIGTERM)
#: Seconds a quitting app may take to exit cleanly before the watchdog ends the process.
EXIT_GRACE_S = 2.0


def end_process(code: int) -> NoReturn:
    """End the process now (the exit watchdog): flush what can be flushed, then ``os._exit``."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def on_exit_signals(handler: Callable[[int], None]) -> None:
    """Call ``handler(signum)`` on the running event loop when an exit signal arrives.

    When the terminal is gone (SIGHUP from a dropped SSH link or a closed pane), Textual's shutdown
    can block for ever on output that can no longer be written (its writer thread's queue fills):
    the handler quits through ``App.exit``, whose ``ExitWatchdog`` ends the process if need be.
    """
    loop = asyncio.get_running_loop()
    for signum in EXIT_SIGNALS:
        # Not the main thread, or Windows: no signal handlers.
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, handler, signum)


class ExitWatchdog:
    """Ends the process ``EXIT_GRACE_S`` after a quit began, if it is still running then.

    A worker may be inside a call nothing can interrupt (a plugin's search, a request that has not
    reached its deadline); Python would wait for it after the terminal is restored.
    """

    def __init__(self) -> None:
        self._timer: threading.Timer | None = None

    def start(self, code: int) -> None:
        """Start the countdown (once: a second quit keeps the first countdown)."""
        if self._timer is not None:
            return
        self._timer = threading.Timer(EXIT_GRACE_S, end_process, args=(code,))
        self._timer.daemon = True
        self._timer.start()
