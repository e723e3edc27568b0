"""The process's limit on open files: lifted towards the hard limit as servers do, and checked
before a run starts more bot processes than it leaves room for."""

from __future__ import annotations

import contextlib
from typing import Final

from arena.errors import ConfigError

__all__ = [
    "OPEN_FILES_WANTED",
    "SERVE_FILES",
    "check_open_files",
    "check_serve_open_files",
    "raise_open_files_limit",
]

OPEN_FILES_WANTED: Final = 65536
"""Open files asked for (at most the hard limit): a connection is one."""
RUN_FILES: Final = 32
"""Open files a run holds whatever its size (the referee's gRPC, the database, the bots' logs),
measured with four bots."""
FILES_PER_PROCESS: Final = 2
"""Open files a run holds per bot process (its connection to the referee, its process handle)."""
SERVE_FILES: Final = 64
"""Open files `arena serve` holds with no bot connected (gRPC's, the page's, the database's,
the rating fit's worker: about 35) with room for a few bots."""


def raise_open_files_limit(want: int = OPEN_FILES_WANTED) -> int | None:
    """Lift the soft limit on open files towards ``want`` (at most the hard limit); the soft
    limit now, or None where there is none to read (Windows) or it is unlimited."""
    try:
        import resource
    except ImportError:  # not on this platform (Windows): its own limits apply
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY:
        want = min(hard, want)
    if soft != resource.RLIM_INFINITY and soft < want:
        with contextlib.suppress(ValueError, OSError):  # refused: the soft limit stays
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else soft


def check_open_files(processes: int) -> None:
    """Refuse in one line a run whose bot processes need more open files than the limit allows
    (after lifting it): past it, gRPC logged "File descriptor limit reached" until the bots'
    start timed out with the blame on a bot, or the process died of a segmentation fault."""
    need = RUN_FILES + FILES_PER_PROCESS * processes
    _refuse_below(
        need,
        f"this run needs about {need} ({processes} bot processes): raise it, e.g. ulimit -n "
        f"{max(1024, 2 * need)}, or lower --concurrency",
    )


def check_serve_open_files() -> None:
    """Refuse in one line a server with too few open files for its own start (after lifting
    the limit): under about 30 it died of a segmentation fault or an abort, or blamed its
    database."""
    _refuse_below(
        SERVE_FILES,
        f"arena serve needs at least {SERVE_FILES}, and one more for each connection: raise "
        "it, e.g. ulimit -n 4096",
    )


def _refuse_below(need: int, says: str) -> None:
    """A :class:`ConfigError` if the limit on open files, lifted, stays under ``need``."""
    limit = raise_open_files_limit()
    if limit is not None and limit < need:
        raise ConfigError(f"the limit on open files (ulimit -n) is {limit}, and {says}")
