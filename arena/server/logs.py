"""Structured logs: one JSON object per line, so that an organiser can grep, jq or ship them.

Every line has ``ts`` (seconds since the epoch), ``level``, ``logger`` and ``msg``; whatever was
passed as ``extra={...}`` to the logging call is added as fields of its own (``bot``, ``session``,
``table``, ...), and an exception is added as ``error`` with its traceback in ``trace``.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any, TextIO

__all__ = ["JsonFormatter", "setup_logging"]

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


def setup_logging(path: Path | None = None, level: int = logging.INFO) -> None:
    """Send the ``arena`` loggers' records as JSON lines to ``path`` (or standard error)."""
    stream: TextIO
    handler: logging.Handler
    if path is None:
        stream = sys.stderr
        handler = logging.StreamHandler(stream)
    else:
        handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger("arena")
    for old in list(root.handlers):
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    root.setLevel(level)
    root.propagate = False
