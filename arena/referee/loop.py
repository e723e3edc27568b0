"""The event loop a referee runs on: uvloop where it is installed, else asyncio's own.

uvloop (a dependency on every platform but Windows) runs the loop's own work, timers and
callbacks in C: about a tenth less work per decision for the referee. The referee reads its
clock with ``time.monotonic()`` (asyncio's loop clock) rather than ``loop.time()``, which
counts whole milliseconds under uvloop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["run"]

T = TypeVar("T")


def run(main: Coroutine[Any, Any, T]) -> T:
    """Run ``main`` to completion on a new event loop (uvloop's where installed)."""
    try:
        import uvloop
    except ImportError:  # Windows, or an install without it: asyncio's loop works the same
        return asyncio.run(main)
    return uvloop.run(main)
