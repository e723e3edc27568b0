"""The event loop a referee runs on: uvloop where it is installed, else asyncio's own.

uvloop (a dependency on every platform but Windows) runs the loop's own work, timers and
callbacks in C: about a tenth less work per decision for the referee. The referee reads its
clock with ``time.monotonic()`` (asyncio's loop clock) rather than ``loop.time()``, which
counts whole milliseconds under uvloop.

Before the loop starts, the process's garbage collector is tuned for a server (see
:func:`tune_gc`): about 2 % fewer instructions per decision for the referee.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["YOUNG_THRESHOLD", "run", "tune_gc"]

T = TypeVar("T")

YOUNG_THRESHOLD = 10_000
"""Allocations between two collections of the youngest generation (CPython's default: 700)."""
_frozen = False
"""Whether :func:`tune_gc` has frozen this process's objects."""


def tune_gc() -> None:
    """Freeze what exists now out of the collector's sight and collect the young less often.

    A decision allocates a few hundred short-lived objects (messages, tuples, records); at
    CPython's defaults the collector ran every few decisions and its full collections walked
    every module, class and message descriptor imported at start-up, none of which ever
    becomes garbage. Freezing them (``gc.freeze``) takes them out of every collection; the
    higher threshold for the youngest generation, a few megabytes at most, lets most of a
    decision's objects die by reference count before a collection looks at them. Counted with
    callgrind over ``scripts/bench_protocol.py``'s counted referee runs (``--role=count``, 4 and
    24 games; three pairs): 173.6k-173.7k instructions per round trip against 176.1k-178.2k.
    Process-wide; only the first call freezes (a later one, in a
    process that runs referee after referee, would freeze the garbage of those before it, which
    the collector could then never free), and the threshold is only ever raised.
    """
    global _frozen
    if not _frozen:
        _frozen = True
        gc.freeze()
    young, middle, old = gc.get_threshold()
    if 0 < young < YOUNG_THRESHOLD:  # 0: the collector's thresholds are off; left so
        gc.set_threshold(YOUNG_THRESHOLD, middle, old)


def run(main: Coroutine[Any, Any, T]) -> T:
    """Run the coroutine ``main`` (``run(main())``, as ``asyncio.run`` takes it) to completion
    on a new event loop (uvloop's where installed)."""
    if not asyncio.iscoroutine(main):
        # uvloop's words for a function given uncalled: "object function can't be used in
        # 'await' expression".
        raise TypeError(f"run() takes a coroutine, such as main(), not {main!r:.60}")
    tune_gc()
    try:
        import uvloop
    except ImportError:  # Windows, or an install without it: asyncio's loop works the same
        return asyncio.run(main)
    return uvloop.run(main)
