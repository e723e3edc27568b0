"""Structured logs: one JSON object per line, so that an organiser can grep, jq or ship them.

Every line has ``ts`` (seconds since the epoch), ``level``, ``logger`` and ``msg``; whatever was
passed as ``extra={...}`` to the logging call is added as fields of its own (``bot``, ``session``,
``table``, ...), and an exception is added as ``error`` with its traceback in ``trace``.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import select
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

__all__ = ["EXIT_LOG_GONE", "JsonFormatter", "LogHandler", "setup_logging"]

EXIT_LOG_GONE = 141
"""The exit status of a server whose log's reader has gone: a closed pipe's, as the shell
reports a process that SIGPIPE ended, and as every arena command exits on a closed output."""

# The attributes every LogRecord has; anything else came in through `extra`.
_STANDARD = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON line."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as JSON."""
        line: dict[str, Any] = {
            "ts": round(record.created, 6),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                line[key] = value
        if record.exc_info and record.exc_info[1] is not None:
            line["error"] = repr(record.exc_info[1])
            line["trace"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str, separators=(",", ":"))


class LogHandler(logging.StreamHandler[TextIO]):
    """Writes the log to a stream and notices when the stream's reader has gone (a closed pipe:
    ``arena serve 2>&1 | head``, a ``| jq`` that died, ``--log >(...)``)."""

    def __init__(self, stream: TextIO, path: Path | None = None) -> None:
        super().__init__(stream)
        self.path = path
        """The ``--log`` file, or None for standard error."""
        self.gone = False
        """Whether the reader has gone: nothing is written any more."""
        self.failure: OSError | None = None
        """Why the log stopped: a closed pipe (BrokenPipeError) or a failed write (a full disk)."""
        self._listeners: list[Callable[[], None]] = []
        self._identity = _identity(os.fstat(stream.fileno())) if path is not None else None

    def emit(self, record: logging.LogRecord) -> None:
        """Write the record, unless the reader has gone; to a new ``--log`` file if the old one
        was moved or deleted."""
        if self.gone:
            return
        if self.path is not None:
            try:
                self._follow(self.path)
            except OSError:
                self.handleError(record)  # a new file cannot be made: as a failed write
                return
        super().emit(record)

    def _follow(self, path: Path) -> None:
        """Open ``path`` anew if the file there is no longer the one written to: logrotate (its
        default, ``create``) renames the log and makes a new one, and a server that kept
        writing to the renamed file filled it for ever while the new one stayed empty. As
        ``logging.handlers.WatchedFileHandler`` does, whose class cannot also be this one
        (a pipe's reader and a failed write stop the server, above)."""
        try:
            now = _identity(os.stat(path))
        except FileNotFoundError:
            now = None
        if now == self._identity:
            return
        stream = open(path, "a", encoding="utf-8")  # noqa: SIM115 (kept open, as the first)
        old = self.setStream(stream)
        self._identity = _identity(os.fstat(stream.fileno()))
        if old is not None:
            with contextlib.suppress(OSError):
                old.close()

    def handleError(self, record: logging.LogRecord) -> None:
        """A closed pipe or a failed write ends the log (see :meth:`when_gone`); another error
        is logging's to report, as before."""
        error = sys.exc_info()[1]
        if not isinstance(error, OSError):
            super().handleError(record)
            return
        self._stop(error)

    def _stop(self, error: OSError) -> None:
        """End the log for ``error`` (a closed pipe or a failed write) and tell the listeners;
        called with the handler's lock held, as logging holds it around a write."""
        # A full disk (`--log` on a full file system, /dev/full) printed logging's traceback
        # on standard error for every line, and served on unlogged: as a closed pipe instead.
        self.failure = error
        self.gone = True
        # Whatever else would write there (a line buffered for it, gRPC's C core on standard
        # error, the interpreter at exit) would fail again: it goes to /dev/null instead.
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, self.stream.fileno())
            finally:
                os.close(devnull)
        listeners, self._listeners = self._listeners, []
        for listener in listeners:
            listener()

    def check_reader(self) -> None:
        """End the log if it is a pipe whose reader has gone, though nothing was written: an idle
        server (no bot, nothing to log) otherwise never noticed `2>&1 | head -3` and ran on."""
        if self.gone:
            return
        try:
            fd = self.stream.fileno()
            if not stat.S_ISFIFO(os.fstat(fd).st_mode):
                return  # a file or a terminal has no reader to lose
            poller = select.poll()
            poller.register(fd, 0)  # POLLERR is reported whatever is asked: no reader left
            gone = any(events & select.POLLERR for _, events in poller.poll(0))
        except (OSError, ValueError):  # closed, or no descriptor: nothing to look at
            return
        if gone:
            with self.lock or contextlib.nullcontext():
                if not self.gone:  # a write may have found it first
                    self._stop(BrokenPipeError(errno.EPIPE, "the log's reader has gone"))

    def when_gone(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener`` once the reader has gone (at once if it has), in the thread that
        logged; returns what takes it back."""
        with self.lock or contextlib.nullcontext():
            if not self.gone:
                self._listeners.append(listener)
                return lambda: self._forget(listener)
        listener()
        return lambda: None

    def _forget(self, listener: Callable[[], None]) -> None:
        with self.lock or contextlib.nullcontext(), contextlib.suppress(ValueError):
            self._listeners.remove(listener)

    def close(self) -> None:
        """Close the handler, and the ``--log`` file it opened."""
        try:
            if self.path is not None:
                with contextlib.suppress(OSError):  # the reader gone, or a full disk: no matter
                    self.stream.close()
        finally:
            super().close()


def _identity(st: os.stat_result) -> tuple[int, int]:
    """A file's identity: its device and inode."""
    return st.st_dev, st.st_ino


def setup_logging(path: Path | None = None, level: int = logging.INFO) -> LogHandler:
    """Send the ``arena`` loggers' records as JSON lines to ``path`` (or standard error)."""
    # Opened as logging.FileHandler does (appending), but written through the one handler that
    # notices a closed pipe: `--log` may name one (a FIFO, `>(jq .)`).
    stream = sys.stderr if path is None else open(path, "a", encoding="utf-8")  # noqa: SIM115
    handler = LogHandler(stream, path)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger("arena")
    for old in list(root.handlers):
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    root.setLevel(level)
    root.propagate = False
    return handler
