"""The checker's side of the wire: a scripted BotService on loopback.

It is not a referee: it decides nothing. Each Play stream a bot opens becomes a
:class:`ScriptedStream` handed to the scenario code, which says what to send, when to close the
stream with which status, and reads what the bot answers. The referee's own tables cannot be told
to drop a stream at a chosen moment or to put a bot in a chosen position; a compliance check
needs exactly that.

DESIGN.md's grpc.aio rules hold here too: one reader task per stream forwards every message,
stamped with its arrival time, into an inbox, and waiting for an answer is a wait on the inbox
with a deadline (a pending ``read()`` is never cancelled). Requests arrive as raw bytes, so that
bytes that are not a PlayRequest can be reported as such instead of killing the stream.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

import grpc
from google.protobuf.message import DecodeError

from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb

__all__ = ["Garbage", "Received", "ScriptServer", "ScriptedStream", "StreamEnded"]

SERVICE = "hearts.v1.BotService"
METHOD = "Play"
HOST = "127.0.0.1"
MAX_MESSAGE_BYTES = 64 * 1024
"""Welcome.max_message_bytes as announced: the referee's default limit, enforced as it does."""
GRPC_RECEIVE_LIMIT = 1024 * MAX_MESSAGE_BYTES
"""gRPC's own receive limit, far above ours, so that the reader sees an oversized message and
says how big it was: one past gRPC's limit reads as the end of the bot's side of the stream."""
_EOF: object = grpc.aio.EOF  # type: ignore[attr-defined]  # missing from grpc-stubs


@dataclass(frozen=True, slots=True)
class Garbage:
    """Bytes from the bot that are not a PlayRequest."""

    size: int
    """How many bytes arrived."""
    error: str
    """What the protobuf decoder said."""


@dataclass(frozen=True, slots=True)
class StreamEnded:
    """The stream is over: the bot closed or broke it, or the script ended it."""

    reason: str
    """What happened, as a sentence fragment ("the bot closed its side of the stream")."""


@dataclass(frozen=True, slots=True)
class Received:
    """One inbox entry."""

    at: float
    """Arrival time on the event loop's monotonic clock, in seconds."""
    item: bot_pb.PlayRequest | Garbage | StreamEnded
    """What arrived."""


@dataclass(frozen=True, slots=True)
class _Close:
    """The script's order to end the stream: with OK (code None) or with an error status."""

    code: grpc.StatusCode | None
    details: str


class ScriptedStream:
    """One Play stream, driven by the script."""

    def __init__(self, context: grpc.aio.ServicerContext[bytes, bytes]) -> None:
        """Wrap a stream's context (the handler owns the reader task)."""
        self._context = context
        self.inbox: asyncio.Queue[Received] = asyncio.Queue()
        """What the bot sent, oldest first, ending with a :class:`StreamEnded`."""
        self.ended: str | None = None
        """Why the stream ended, once it has."""
        self.left = False
        """Whether the bot ended the stream itself (Goodbye, or the end of its side), as a bot
        leaving does: the checker then closed it with OK, as the referee does."""
        self._outbox: asyncio.Queue[bytes | _Close] = asyncio.Queue()
        self._closing = False

    def send(self, message: bot_pb.PlayResponse) -> None:
        """Queue a message for the bot (written in order by the stream's handler)."""
        if self.ended is None and not self._closing:
            self._outbox.put_nowait(message.SerializeToString())

    def close(self, code: grpc.StatusCode | None = None, details: str = "") -> None:
        """End the stream after the queued messages: OK, or the given error status."""
        # Also once the bot's side has ended: its call lasts until the handler returns, and a
        # bot that half-closed (or said Goodbye) waits for that, as it must, to learn the status.
        if not self._closing:
            self._closing = True
            self._outbox.put_nowait(_Close(code, details))

    @property
    def is_open(self) -> bool:
        """Whether the stream can still carry a question: neither ended nor being closed."""
        return self.ended is None and not self._closing

    def leave(self, shutdown: bot_pb.Shutdown | None = None) -> None:
        """The bot left (Goodbye, or the end of its side): end the stream as the referee ends
        the session, with ``shutdown`` first if given and then status OK."""
        self.left = True
        if shutdown is not None and not self._closing:
            # Sent even once the bot's side has ended: the call is still open to the bot.
            self._outbox.put_nowait(bot_pb.PlayResponse(shutdown=shutdown).SerializeToString())
        self.close()

    async def receive(self, timeout_s: float) -> Received | None:
        """The next thing the bot sent, or None if nothing came within ``timeout_s``."""
        try:
            async with asyncio.timeout(max(0.0, timeout_s)):
                return await self.inbox.get()
        except TimeoutError:
            return None

    def _end(self, reason: str) -> None:
        if self.ended is None:
            self.ended = reason
            self.inbox.put_nowait(Received(asyncio.get_running_loop().time(), StreamEnded(reason)))

    async def _read_loop(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self.ended is None:
                data = await self._context.read()
                if data is _EOF:
                    self._end("the bot closed its side of the stream")
                    self.leave()  # the referee ends such a session with OK
                    return
                assert isinstance(data, bytes)
                if len(data) > MAX_MESSAGE_BYTES:
                    # What the referee does with it: the session ends, RESOURCE_EXHAUSTED.
                    said = (
                        f"a message of {len(data)} bytes is over Welcome.max_message_bytes "
                        f"({MAX_MESSAGE_BYTES}): send smaller messages"
                    )
                    self._end(
                        f"the bot sent a message of {len(data)} bytes, over "
                        f"Welcome.max_message_bytes ({MAX_MESSAGE_BYTES}; the referee ends the "
                        "stream with RESOURCE_EXHAUSTED)"
                    )
                    self.close(grpc.StatusCode.RESOURCE_EXHAUSTED, said)
                    return
                item: bot_pb.PlayRequest | Garbage
                try:
                    item = bot_pb.PlayRequest.FromString(data)
                except DecodeError as e:
                    item = Garbage(len(data), str(e) or "not a PlayRequest")
                self.inbox.put_nowait(Received(loop.time(), item))
        except asyncio.CancelledError:
            self._end("the stream was cancelled")
            raise
        except Exception as e:  # a broken stream surfaces as many exception types
            self._end(f"the stream broke ({type(e).__name__}: {e})")

    async def _serve(self) -> None:
        """The stream's handler body: write what the script queues, close when told."""
        try:
            while True:
                out = await self._outbox.get()
                if isinstance(out, _Close):
                    why = "OK" if out.code is None else out.code.name
                    self._end(f"the checker closed the stream ({why})")
                    if out.code is not None:
                        await self._context.abort(out.code, out.details)
                    return
                await self._context.write(out)
        finally:
            self._end("the stream ended")


class ScriptServer:
    """A grpc.aio server whose every Play stream is queued for the script to take."""

    def __init__(self) -> None:
        """An idle server; :meth:`start` binds it."""
        self._server = grpc.aio.server(
            options=[("grpc.max_receive_message_length", GRPC_RECEIVE_LIMIT)]
        )
        self._arrivals: asyncio.Queue[ScriptedStream] = asyncio.Queue()
        self._readers: set[asyncio.Task[None]] = set()
        handler = grpc.stream_stream_rpc_method_handler(self._play)  # raw bytes both ways
        self._server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(SERVICE, {METHOD: handler}),)
        )
        self.port = 0
        """The bound port, once started."""

    async def start(self) -> int:
        """Bind 127.0.0.1 on a free port and serve; returns the port."""
        self.port = self._server.add_insecure_port(f"{HOST}:0")
        await self._server.start()
        return self.port

    @property
    def address(self) -> str:
        """``host:port`` for ARENA_ADDRESS."""
        return f"{HOST}:{self.port}"

    async def next_stream(self, timeout_s: float) -> ScriptedStream | None:
        """The next stream a bot opened, or None if none came within ``timeout_s``."""
        try:
            async with asyncio.timeout(max(0.0, timeout_s)):
                return await self._arrivals.get()
        except TimeoutError:
            return None

    @property
    def waiting(self) -> int:
        """How many streams are opened but not yet taken by the script."""
        return self._arrivals.qsize()

    def pending_streams(self) -> list[ScriptedStream]:
        """Streams opened but not yet taken by the script (emptied)."""
        streams = []
        while not self._arrivals.empty():
            streams.append(self._arrivals.get_nowait())
        return streams

    async def stop(self) -> None:
        """Close every stream and stop serving."""
        for stream in self.pending_streams():
            stream.close()
        await self._server.stop(grace=0.5)
        for task in list(self._readers):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _play(
        self, _requests: object, context: grpc.aio.ServicerContext[bytes, bytes]
    ) -> None:
        stream = ScriptedStream(context)
        reader = asyncio.create_task(stream._read_loop())
        self._readers.add(reader)
        reader.add_done_callback(self._readers.discard)
        self._arrivals.put_nowait(stream)
        await stream._serve()
