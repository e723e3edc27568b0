"""Idle sessions waiting for a table, by bot name."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping, Sequence

from arena.referee.session import Session

__all__ = ["Lobby"]


class Lobby:
    """Sessions that are connected and authenticated but not seated, first come first seated.

    A table takes all the sessions it needs at once or none (:meth:`take`), so that two tables
    that need the same bots never each hold part of what the other needs.
    """

    def __init__(self) -> None:
        """An empty lobby."""
        self._idle: dict[str, list[Session]] = {}
        self._changed = asyncio.Event()
        self._closed = False
        """Whether the referee is stopping: no table waits for its bots any more."""

    def add(self, session: Session) -> None:
        """Let a session wait for a table."""
        if session.closed:
            return
        session.owner = self
        self._idle.setdefault(session.bot, []).append(session)
        self._pulse()

    def session_lost(self, session: Session) -> None:
        """Forget a session that ended while idle."""
        waiting = self._idle.get(session.bot)
        if waiting and session in waiting:
            waiting.remove(session)
            if not waiting:
                del self._idle[session.bot]
            self._pulse()

    def counts(self) -> dict[str, int]:
        """Idle sessions per bot name."""
        return {name: len(s) for name, s in self._idle.items() if s}

    def has(self, needed: Mapping[str, int]) -> bool:
        """Whether every bot has at least the number of idle sessions given."""
        return all(len(self._idle.get(name, ())) >= k for name, k in needed.items())

    def _take_now(self, names: Sequence[str], partial: bool) -> list[Session | None] | None:
        if not partial and not self.has(Counter(names)):
            return None
        taken: list[Session | None] = []
        for name in names:
            waiting = self._idle.get(name)
            if waiting:
                session = waiting.pop(0)
                session.owner = None
                taken.append(session)
                if not waiting:
                    del self._idle[name]
            else:
                taken.append(None)
        self._pulse()
        return taken

    async def take(self, names: Sequence[str], timeout_s: float) -> list[Session | None]:
        """One session per name (in order), waiting up to ``timeout_s`` for all of them at once.

        At the deadline it takes what there is; a seat whose bot is not there gets None. Once
        the lobby is closed (:meth:`close`) it takes nothing: every seat gets None.
        """
        try:
            async with asyncio.timeout(timeout_s):
                while not self._closed:
                    got = self._take_now(names, partial=False)
                    if got is not None:
                        return got
                    await self._changed.wait()
            return [None] * len(names)
        except TimeoutError:
            pass
        got = self._take_now(names, partial=True)
        assert got is not None
        return got

    async def wait_for(self, needed: Mapping[str, int], timeout_s: float) -> bool:
        """Wait until the lobby holds the sessions given (name to count); False at the timeout,
        or once the lobby is closed."""
        try:
            async with asyncio.timeout(timeout_s):
                while not self.has(needed):
                    if self._closed:
                        return False
                    await self._changed.wait()
        except TimeoutError:
            return False
        return True

    async def changed(self) -> None:
        """Return when a session next enters the lobby or is taken from it."""
        await self._changed.wait()

    def close(self) -> None:
        """The referee is stopping: wake every wait for bots, which ends at once (a stop waited
        out each table's whole wait for its bots, a minute if asked, before it returned)."""
        self._closed = True
        self._pulse()

    def drain(self) -> list[Session]:
        """Remove and return every idle session (the referee is stopping)."""
        out = [s for waiting in self._idle.values() for s in waiting]
        self._idle.clear()
        for s in out:
            s.owner = None
        return out

    def _pulse(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()
