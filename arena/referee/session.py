"""One bot's stream: a reader task feeding a bounded inbox, and serialised writes.

DESIGN.md's rule for grpc.aio: never cancel a pending ``read()``. So each stream has exactly one
reader task, owned by the stream's handler, that reads until the stream ends and forwards every
message, stamped with its arrival time on the referee's monotonic clock, into the session's
inbox. Whoever waits for an answer waits on the inbox, with a deadline on that wait. The inbox is
bounded by counting: a bot that sends more than ``inbox_limit`` messages nobody asked for is a
flood, and its stream is ended with RESOURCE_EXHAUSTED instead of growing memory.

A session ends exactly once (:meth:`Session.end`), for any reason: the bot closed or broke its
stream, said Goodbye, flooded, was replaced by a newer session with the same token, or the
referee is stopping. Ending puts a :class:`Closed` marker in the inbox, so that a table waiting
for an answer wakes at once, tells the session's owner (a table seat or the lobby), and resolves
:attr:`Session.ending`, which the stream's handler awaits to close the stream with a status.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from dataclasses import dataclass
from typing import Final, Protocol

import grpc

from arena import _compiled
from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb
from arena.referee.wire import Malformed, Oversized, Play

__all__ = [
    "Closed",
    "Ending",
    "Expired",
    "Inbound",
    "Inbox",
    "Session",
    "SessionLostError",
    "SessionOwner",
    "Wake",
]

log = logging.getLogger("arena.referee")

# Final: compiled, these are C statics rather than lookups in the module's dict on every message.
_EOF: Final[object] = grpc.aio.EOF  # type: ignore[attr-defined]  # missing from grpc-stubs
_PlayRequest: Final = bot_pb.PlayRequest
_monotonic: Final = time.monotonic
_get_running_loop: Final = asyncio.get_running_loop

HALF_CLOSED_REASON: Final = "the bot closed its side of the stream"
"""Why a session ended whose stream ended without a Goodbye (until :meth:`Session.cut`)."""
OVERSIZE_SLACK: Final = 4
"""gRPC's own receive limit, in multiples of the referee's: a message between the two is read
and refused by the referee with its size said; gRPC cuts a stream whose message is over it."""
CUT_REASON: Final = (
    "its stream was cut (cancelled, or its process or connection ended, or gRPC refused a "
    f"message of over {OVERSIZE_SLACK} times this referee's limit)"
)
"""Why a session ended whose stream gRPC cancelled."""


@dataclass(frozen=True, slots=True)
class Closed:
    """The marker a session's inbox receives when the session ends."""

    reason: str
    """Why, for the record."""
    goodbye: bool
    """Whether the bot left on purpose (Goodbye): no grace period for its seat."""


@dataclass(frozen=True, slots=True)
class Wake:
    """A marker a table puts in a seated session's inbox to stop waiting (it is interrupted)."""


@dataclass(frozen=True, slots=True)
class Expired:
    """A marker a table's alarm puts in a session's inbox: the request's deadline has passed."""

    request_id: int
    """The request whose deadline it is (a marker for an earlier request is ignored)."""


Inbound = tuple[float, bot_pb.PlayRequest | Play | Malformed | Closed | Wake | Expired]
"""An inbox entry: arrival time (``time.monotonic()``, seconds) and what arrived.

The referee stamps and compares times with ``time.monotonic()``, which is asyncio's own loop
clock, and not the loop's ``time()``: another event loop (uvloop) counts whole milliseconds."""


class Inbox:
    """A session's inbox: what its bot sent, oldest first (``asyncio.Queue``'s ``put_nowait``,
    ``get``, ``get_nowait``, ``empty`` and ``qsize``, unbounded).

    Compiled with the rest of this module: the queue's Python methods ran about a dozen times
    per decision, between the reader that fills an inbox and the table that empties it. A
    waiter cancelled after it was woken passes the wake-up on, as asyncio.Queue does.
    """

    __slots__ = ("_items", "_loop", "_waiters")

    def __init__(self) -> None:
        self._items: deque[Inbound] = deque()
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        """The loop of the first wait (asking for the running loop costs a getpid() call)."""

    def put_nowait(self, item: Inbound) -> None:
        """Add an entry and wake the oldest waiter."""
        self._items.append(item)
        self._wake()

    def _wake(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    async def get(self) -> Inbound:
        """The oldest entry, once there is one."""
        while not self._items:
            loop = self._loop
            if loop is None:
                loop = self._loop = _get_running_loop()
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except BaseException:
                waiter.cancel()
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
                if self._items and not waiter.cancelled():
                    self._wake()  # woken, then cancelled: the entry is another waiter's
                raise
        return self._items.popleft()

    def put_back(self, item: Inbound) -> None:
        """Return an entry just taken to the front, to be read first again (its reader's own
        step back: no waiter is woken)."""
        self._items.appendleft(item)

    def get_nowait(self) -> Inbound:
        """The oldest entry; ``asyncio.QueueEmpty`` if there is none."""
        if not self._items:
            raise asyncio.QueueEmpty
        return self._items.popleft()

    def empty(self) -> bool:
        """Whether nothing is waiting to be read."""
        return not self._items

    def qsize(self) -> int:
        """How many entries wait to be read."""
        return len(self._items)


class WriteLock:
    """A session's write lock: one write on a stream at a time (``asyncio.Lock``'s ``acquire``
    and ``release``, without its context manager).

    Compiled with the rest of this module: asyncio.Lock's Python methods ran five times per
    decision; its uncontended path makes none (:meth:`try_acquire`). A waiter cancelled
    after it was woken passes the wake-up on, as asyncio.Lock does.
    """

    __slots__ = ("_locked", "_waiters")

    def __init__(self) -> None:
        self._locked = False
        self._waiters: deque[asyncio.Future[None]] = deque()

    def try_acquire(self) -> bool:
        """Take the lock if it is free, without waiting; whether it was taken."""
        if self._locked or self._waiters:
            return False
        self._locked = True
        return True

    async def acquire(self) -> bool:
        """Take the lock, waiting for it if need be (True, as asyncio.Lock returns)."""
        while self._locked or self._waiters:
            waiter: asyncio.Future[None] = _get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except BaseException:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
                if not self._locked and waiter.done() and not waiter.cancelled():
                    self._wake()  # woken, then cancelled: the lock is another waiter's
                raise
            self._waiters.remove(waiter)
            if not self._locked:
                break
        self._locked = True
        return True

    def release(self) -> None:
        """Free the lock and wake the oldest waiter."""
        self._locked = False
        self._wake()

    def _wake(self) -> None:
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
                return


@dataclass(frozen=True, slots=True)
class Ending:
    """How the handler closes a stream."""

    code: grpc.StatusCode | None
    """An error status to end with, or None for OK."""
    message: str
    """The status details (for an error) or the log line (for OK)."""
    shutdown: bot_pb.Shutdown | None = None
    """A Shutdown to send before closing with OK."""

    @property
    def code_name(self) -> str:
        """The status the stream closes with, by name ("OK", "UNAUTHENTICATED", ...)."""
        return "OK" if self.code is None else self.code.name


class SessionLostError(Exception):
    """A write to a session whose stream has ended or could not take the message."""


class SessionOwner(Protocol):
    """Who holds a session (the lobby, or a table seat) and must hear when it ends."""

    def session_lost(self, session: Session) -> None:
        """The session has ended; forget it."""
        ...


class Session:
    """One authenticated (or authenticating) Play stream."""

    def __init__(
        self,
        context: grpc.aio.ServicerContext[
            bot_pb.PlayRequest | Malformed | Oversized, bot_pb.PlayResponse | bytes
        ],
        session_id: str,
        inbox_limit: int,
        max_message_bytes: int,
    ) -> None:
        """Wrap a stream's context; call :meth:`read_loop` in a task owned by the handler."""
        self.context = context
        self.id = session_id
        """Unique on this referee, shown in Welcome and logs."""
        self.peer = context.peer()
        """The bot's address, for logs."""
        self.bot = ""
        """The bot's name (from its token), once authenticated."""
        self.key = b""
        """The digest of the session's token: a newer session with the same key replaces it."""
        self.hello: bot_pb.Hello | None = None
        """The bot's Hello."""
        self.decide_forced = False
        """Whether the bot asked to decide forced moves itself."""
        self.expired: dict[int, float] = {}
        """Request ids sent on this stream that timed out, with their deadlines, across games:
        an answer to one that arrives in the bot's next game is late, not a wrong request id."""
        self.last_request_id = 0
        """The last request id sent on this stream, in any game: an answer echoing one up to the
        last of its earlier games belongs to that game (a late reply, never the next's fault)."""
        self.inbox = Inbox()
        """What the bot sent, in order; bounded by :attr:`inbox_limit` (see module docstring)."""
        self.inbox_limit = inbox_limit
        self.max_message_bytes = max_message_bytes
        """The largest message the referee takes (for the refusal of a bigger one)."""
        self.owner: SessionOwner | None = None
        """The lobby or table seat holding the session."""
        self.closed = False
        """Whether the session has ended."""
        self.close_reason = ""
        """Why the session ended."""
        self.said_goodbye = False
        """Whether it ended with the bot's Goodbye (its seat gets no grace period)."""
        self.goodbye_reason = ""
        """The Goodbye's reason (free text for the referee's log)."""
        self.heir: Session | None = None
        """The reconnect that took this session's place by naming it (Hello.resume_session_id):
        a Decision read here once this session has ended goes to its inbox."""
        self.ending: asyncio.Future[Ending] = asyncio.get_running_loop().create_future()
        """Resolved once, when the session ends."""
        self._write_lock = WriteLock()

    def __repr__(self) -> str:
        return f"<Session {self.id} bot={self.bot!r} peer={self.peer}>"

    async def read_loop(self) -> None:
        """Read the stream until it ends, forwarding into the inbox (the one reader)."""
        try:
            while not self.closed or self.heir is not None:
                message = await self.context.read()
                if self.closed:
                    # Ended by a reconnect that named it: what the bot sent here meanwhile (its
                    # answers as the reconnect's Hello went out) was dropped unseen. Its heir
                    # holds the seat now, and judges each answer as one sent there (late, and
                    # noted), until the stream ends (the handler lingers for it, then closes).
                    heir = self.heir
                    if (
                        heir is None
                        or heir.closed
                        or message is _EOF
                        or heir.inbox.qsize() >= heir.inbox_limit
                    ):
                        return
                    if isinstance(message, Play) or (
                        isinstance(message, _PlayRequest) and message.HasField("decision")
                    ):
                        heir.inbox.put_nowait((_monotonic(), message))
                    continue
                if message is _EOF:
                    # Or it was cut: gRPC says so a moment later (see :meth:`cut`).
                    self.end(Ending(None, HALF_CLOSED_REASON))
                    return
                if isinstance(message, Oversized):
                    self.end(
                        Ending(
                            grpc.StatusCode.RESOURCE_EXHAUSTED,
                            f"a message of {message.size} bytes is over this referee's limit of "
                            f"{self.max_message_bytes} bytes (Welcome.max_message_bytes): send "
                            "smaller messages",
                        )
                    )
                    return
                if isinstance(message, _PlayRequest) and message.HasField("goodbye"):
                    said = message.goodbye.reason
                    self.goodbye_reason = said
                    shutdown = bot_pb.Shutdown(
                        reason=bot_pb.SHUTDOWN_REASON_GOODBYE,
                        message="goodbye" + (f" ({said})" if said else ""),
                        may_reconnect=True,
                    )
                    self.end(Ending(None, "the bot said goodbye", shutdown), goodbye=True)
                    return
                if self.inbox.qsize() >= self.inbox_limit:
                    self.end(
                        Ending(
                            grpc.StatusCode.RESOURCE_EXHAUSTED,
                            f"flooding: more than {self.inbox_limit} messages were waiting "
                            "unanswered; send exactly one Decision per DecisionRequest",
                        )
                    )
                    return
                self.inbox.put_nowait((_monotonic(), message))
        except asyncio.CancelledError:
            self.end(Ending(None, "the stream was cancelled"))
            raise
        except Exception as e:  # a broken stream surfaces as many exception types
            self.end(Ending(None, f"the stream broke: {type(e).__name__}: {e}"))

    async def send(self, message: bot_pb.PlayResponse | bytes) -> None:
        """Write one message; a failure ends the session and raises :class:`SessionLostError`.

        A write returns as soon as gRPC has taken the message, so it is awaited directly (a
        task per write would cost two turns of the loop on every decision). It can only be cut
        short when the bot has not read its stream for a whole deadline, or when the referee
        stops; a cut-short write leaves the stream in an unknown state, so the session ends.
        """
        if self.closed:
            raise SessionLostError(f"session {self.id} has ended: {self.close_reason}")
        lock = self._write_lock
        if not lock.try_acquire():
            await lock.acquire()
        try:
            await self.context.write(message)
        except asyncio.CancelledError:
            self.end(Ending(None, "a message could not be sent in time (is the bot reading?)"))
            raise
        except Exception as e:
            self.end(Ending(None, f"writing to the stream failed: {type(e).__name__}: {e}"))
            raise SessionLostError(f"session {self.id}: {e}") from e
        finally:
            lock.release()

    async def send_final(self, message: bot_pb.PlayResponse, timeout_s: float) -> bool:
        """Write a last message before closing, within ``timeout_s``; False if it did not go."""
        try:
            async with asyncio.timeout(timeout_s):
                lock = self._write_lock
                if not lock.try_acquire():
                    await lock.acquire()
                try:
                    await self.context.write(message)
                finally:
                    lock.release()
        except Exception:
            return False
        return True

    def cut(self) -> None:
        """gRPC cancelled the stream: the bot cancelled it, its process ended or its connection
        broke. A read sees such an end first as the end of the stream, and the session then
        ended as if the bot had closed its side (what a crashed bot was told it had done)."""
        if self.close_reason == HALF_CLOSED_REASON:
            self.close_reason = CUT_REASON
        self.end(Ending(None, CUT_REASON))

    def end(self, ending: Ending, *, goodbye: bool = False) -> None:
        """End the session (once): wake its waiter, tell its owner, let the handler close it."""
        if self.closed:
            return
        self.closed = True
        self.close_reason = ending.message
        self.said_goodbye = goodbye
        log.debug("session %s (%s) ends: %s", self.id, self.bot, ending.message)
        self.inbox.put_nowait((_monotonic(), Closed(ending.message, goodbye)))
        owner, self.owner = self.owner, None
        if owner is not None:
            owner.session_lost(self)
        if not self.ending.done():
            self.ending.set_result(ending)


# ---- the compiled build (setup.py compiles this module with mypyc; see arena._compiled) ------

_BUILT_FROM = ""
COMPILED, BUILD = _compiled.guard(globals(), _BUILT_FROM)
