"""Milvus Lite's and pymilvus's log records: into ``milvus.log`` in the cache folder, never onto the terminal.

Milvus Lite runs inside this process and logs its own failures (and pymilvus its RPC errors) with
tracebacks. ``capture_logs`` sends both libraries' log records to ``milvus.log`` in the cache
folder (started afresh past ``LOG_MAX_BYTES``), and ``capture`` keeps the last error Lite logged, so
the error ragtui prints can be one line naming Lite's own reason.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from pathlib import Path

from ragtui.core.data.paths import cache_dir

__all__ = ["LOG_FILE", "LOG_MAX_BYTES", "capture", "capture_logs"]

#: Milvus Lite's and pymilvus's log records go to this file in the cache folder, never to a terminal.
LOG_FILE = "milvus.log"
#: The log is started afresh (the old one kept as ``milvus.log.1``) past this size.
LOG_MAX_BYTES = 1 << 20
_LOGGERS = (
    "pymilvus",
    "pymilvus.milvus_client",
    "pymilvus.bulk_writer",
    "milvus_lite",
    "grpc._server",  # Lite's gRPC server, in this process: an RPC Lite lacks is logged there
)


class _LogCapture(logging.Handler):
    """Where Milvus Lite's and pymilvus's log records go: appended to ``milvus.log`` in the cache
    folder (best effort: a folder that cannot be written loses them), never to the terminal; the
    last error Milvus Lite logged is kept, so the one-line message can name its reason."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s: %(message)s"))
        self.path: Path | None = None
        self.lite_error = ""

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR and record.name.startswith("milvus_lite"):
            exc = record.exc_info[1] if record.exc_info else None
            self.lite_error = (
                f"{type(exc).__name__}: {exc}" if exc is not None else record.getMessage()
            )
        if self.path is not None:
            with contextlib.suppress(Exception):  # a log that cannot be written is no error
                _append_log(self.path, self.format(record) + "\n")

    def handleError(self, record: logging.LogRecord) -> None:
        """Nothing: logging's own fallback would print a traceback on stderr."""

    def take_lite_error(self) -> str:
        """The last error Milvus Lite logged since the last call (empty when none)."""
        self.acquire()  # the lock ``emit`` runs under
        try:
            error, self.lite_error = self.lite_error, ""
        finally:
            self.release()
        return error


def _append_log(path: Path, text: str) -> None:
    """Append to the log (a regular file: a FIFO or a link planted there is left alone), starting a
    new one when it is over ``LOG_MAX_BYTES``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        if path.stat().st_size > LOG_MAX_BYTES:
            os.replace(path, path.with_name(path.name + ".1"))
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    fd = os.open(path, flags, 0o600)
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.write(fd, text.encode("utf-8", "replace"))
    finally:
        os.close(fd)


#: The one handler every Milvus logger is given (it keeps the last error Lite logged).
capture = _LogCapture()


def capture_logs(log_root: Path | None) -> None:
    """Route Milvus Lite's and pymilvus's loggers to ``milvus.log`` under ``log_root`` (the cache
    folder); pymilvus installs its own stderr handlers when imported, so this runs after that."""
    capture.path = (log_root or cache_dir()) / LOG_FILE
    for name in _LOGGERS:
        logger = logging.getLogger(name)
        if logger.handlers != [capture]:
            for handler in list(logger.handlers):
                logger.removeHandler(handler)
            logger.addHandler(capture)
        logger.propagate = False
