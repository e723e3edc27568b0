"""A command's end: a Ctrl-C or SIGTERM that comes once its output is complete, as Python exits.

Python gives a moment's work after the last line (joining threads, the exit hooks of the
libraries loaded: logging, matplotlib, the thread pools) before it resets the signals to their
defaults. A Ctrl-C there raised a KeyboardInterrupt inside that work: a traceback ("Exception
ignored in ...") and exit code 0, as if nothing had happened. :func:`until_exit` has the
command's own handler take the signals to the process's end instead: one line, exit code 130.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

__all__ = [
    "UNFINISHED",
    "hold_at_the_last",
    "is_the_command",
    "remove_unfinished",
    "stop_on_hangup",
    "until_exit",
]

Handler = Callable[[int, Any], None]

ENDING_SIGNALS = (signal.SIGINT, signal.SIGTERM)

UNFINISHED: set[str] = set()
"""Files being written that a command ended at once (``os._exit``, which runs no ``finally``)
must not leave behind: a plot's temporary file, renamed into place only once it is whole."""


def remove_unfinished() -> None:
    """Delete the :data:`UNFINISHED` files (from a signal handler, just before ``os._exit``)."""
    for path in list(UNFINISHED):
        with contextlib.suppress(OSError):
            os.unlink(path)


def is_the_command() -> bool:
    """Whether this process is the `arena` command, which ends when the command returns (its
    ``__main__`` is ``arena.cli``, or the console script that calls its ``entry``), and not a
    program that calls a command in-process (a test's CliRunner): that one keeps its signals."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name == "arena.cli":  # python -m arena.cli
        return True
    return getattr(getattr(main, "entry", None), "__module__", None) == "arena.cli"


def until_exit(handler: Handler, before: dict[signal.Signals, Any] | None = None) -> None:
    """Have ``handler`` take Ctrl-C and SIGTERM until the process ends, in the `arena` command
    only (:func:`is_the_command`); a signal ``before`` says was ignored stays ignored (a script's
    ``arena ratings ... &``)."""
    if not is_the_command():
        return
    _ENDING.append(True)
    for sig in ENDING_SIGNALS:
        if before is not None and before.get(sig) is signal.SIG_IGN:
            continue
        with contextlib.suppress(ValueError):  # not the main thread: Python's handling stays
            signal.signal(sig, handler)


_ENDING: list[bool] = []
"""Set (non-empty) once :func:`until_exit` has given the command's handler the signals."""


def hold_at_the_last() -> None:
    """Have Ctrl-C and SIGTERM ignored once the last exit hook has run, in a command that
    called :func:`until_exit`: call it before any library registers its exit hooks (hooks run
    last registered, first).

    After the hooks, Python puts the signals' default actions back and tears its modules down
    (a second or so with scipy and matplotlib loaded): a Ctrl-C then killed the process by the
    signal without a word, its output complete. Ignored from the last hook on, it is dropped
    and the process ends with the command's own exit code: the command had finished.
    """
    atexit.register(_hold)


def _hold() -> None:
    if not _ENDING:
        return
    for sig in ENDING_SIGNALS:
        # Ignored, not blocked: a mask is the main thread's only, and a signal sent to the
        # process then went to another thread (gRPC's) and killed it all the same. Python
        # leaves an "ignore" as it is when it puts the signals' default actions back.
        with contextlib.suppress(ValueError, OSError):
            signal.signal(sig, signal.SIG_IGN)


def stop_on_hangup(handler: Handler) -> None:
    """Stop on SIGHUP (a closed terminal, a dropped ssh session) with ``handler``, as on
    SIGTERM: by default it killed the command at once, without a word, its bots left running.
    An inherited ignore (`nohup`) is kept; nothing on a platform without SIGHUP (Windows)."""
    hangup = getattr(signal, "SIGHUP", None)
    if hangup is not None and signal.getsignal(hangup) is not signal.SIG_IGN:
        signal.signal(hangup, handler)
