"""What spectators see of a table: its public events, live, and each hand's deal once it is over.

A :class:`TableFeed` keeps the table's public log (so a late spectator can replay it) and a
bounded queue per watcher. A watcher that falls too far behind is dropped rather than allowed to
grow the referee's memory; publishing never waits, so no spectator can slow a game.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from arena import _compiled
from arena.proto.hearts.v1 import events_pb2 as ev_pb
from arena.proto.hearts.v1 import game_pb2 as game_pb
from arena.proto.hearts.v1 import spectator_service_pb2 as spec_pb

__all__ = ["TableFeed", "Watcher"]


class Watcher:
    """One spectator stream's queue; None in the queue means the table's feed has ended."""

    def __init__(self, limit: int) -> None:
        """A queue of at most ``limit`` events."""
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.limit = limit
        self.overflowed = False
        """Whether it fell too far behind and was dropped."""
        self.ended = asyncio.Event()
        """Set once no more events will come: the feed has ended, or the watcher was dropped.
        The stream's writer waits on it beside each write, so that a spectator that has stopped
        reading is let go rather than held (with its place among the spectators) forever."""

    def push(self, event: bytes | None) -> bool:
        """Queue an event; False (and the watcher is dropped) when it is too far behind."""
        if event is not None and self.queue.qsize() >= self.limit:
            self.overflowed = True
            self.queue.put_nowait(None)
            self.ended.set()
            return False
        self.queue.put_nowait(event)
        if event is None:
            self.ended.set()
        return True

    async def next_batch(self) -> list[bytes] | None:
        """The events waiting (at least one, serialised), or None once the feed has ended."""
        first = await self.queue.get()
        if first is None:
            return None
        batch = [first]
        while not self.queue.empty():
            event = self.queue.get_nowait()
            if event is None:
                self.queue.put_nowait(None)
                break
            batch.append(event)
        return batch


class TableFeed:
    """A table's public story, for ListTables and Watch."""

    def __init__(
        self, table_id: str, seat_names: Sequence[str], rules: game_pb.Rules, watcher_limit: int
    ) -> None:
        """A feed for a table that has not started yet."""
        self.table_id = table_id
        self.game_id = ""
        self.seat_names = list(seat_names)
        self.rules = rules
        self.status = spec_pb.TABLE_STATUS_WAITING
        self.hand_number = 0
        self.totals = [0] * len(seat_names)
        self.log: list[bytes] = []
        """Every public and spectator event so far, serialised (a game publishes an event per
        card; most are never watched, so they are kept as the bytes the table already has)."""
        self._shown = 0
        """How many events of the log the spectators may see: the cards of a trick under way are
        held back until it ends (:meth:`publish`)."""
        self._watchers: set[Watcher] = set()
        self._limit = watcher_limit

    @property
    def watchers(self) -> int:
        """Spectator streams watching now."""
        return len(self._watchers)

    def publish(self, event: ev_pb.Event | bytes, hold: bool = False) -> None:
        """Record a public (or spectator-only) event and pass it, with any held before it, to
        every watcher; ``hold``: keep it back until the next event not held.

        The cards of a trick are held until it ends: a card the referee plays itself (a seat's
        only legal card) follows the card before it at once, so that watching card by card
        showed which seat held a single card of the suit led, and a bot could watch its own
        table (spectators need no login)."""
        if not isinstance(event, bytes):
            event = event.SerializeToString()
        self.log.append(event)
        if not hold:
            self._show()

    def _show(self) -> None:
        """Pass the events held so far to every watcher."""
        shown, self._shown = self._shown, len(self.log)
        if not self._watchers:  # most games: one event per card, and nobody watching
            return
        for event in self.log[shown:]:
            dropped = [w for w in self._watchers if not w.push(event)]
            for w in dropped:
                self._watchers.discard(w)

    def subscribe(self, from_start: bool) -> Watcher:
        """A new watcher, primed with the log so far if asked; ended at once if the feed is."""
        watcher = Watcher(max(self._limit, self._shown + 1) if from_start else self._limit)
        if from_start:
            for event in self.log[: self._shown]:
                watcher.push(event)
        if self.status == spec_pb.TABLE_STATUS_FINISHED:
            watcher.push(None)
        else:
            self._watchers.add(watcher)
        return watcher

    def unsubscribe(self, watcher: Watcher) -> None:
        """Forget a watcher whose stream ended."""
        self._watchers.discard(watcher)

    def close(self) -> None:
        """The game is over: end every watcher's stream after what it has queued."""
        self._show()  # the cards of a trick cut short by an interruption
        self.status = spec_pb.TABLE_STATUS_FINISHED
        for w in self._watchers:
            w.push(None)
        self._watchers.clear()

    def summary(self) -> spec_pb.TableSummary:
        """The table at a glance."""
        return spec_pb.TableSummary(
            table_id=self.table_id,
            game_id=self.game_id,
            status=self.status,
            seat_names=self.seat_names,
            hand_number=self.hand_number,
            game_totals=self.totals,
            rules=self.rules,
        )


# ---- the compiled build (setup.py compiles this module with mypyc; see arena._compiled) ------

_BUILT_FROM = ""
COMPILED, BUILD = _compiled.guard(globals(), _BUILT_FROM)
