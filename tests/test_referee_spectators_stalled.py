"""A spectator that stops reading is let go: it does not keep its place among ``max_spectators``.

The stalled spectator here speaks raw HTTP/2 and opens its Watch stream with a flow-control window
of zero, so the referee cannot send it one byte of the events it queues (a client whose program
stopped reading its stream looks the same to the referee once its buffers are full). It answers
the referee's pings, as a live connection does. Before the fix, its stream kept its place among
the spectators for as long as the connection lived: after it was dropped for falling behind, and
after its table had ended, so that a few such streams locked every other spectator out with
RESOURCE_EXHAUSTED "too many spectators". And once the spectator reads again, it is told why it was
dropped: gRPC refuses a status while a message is still held back for the stream (and logs an
error), so the referee sends it after that message.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import hpack
import pytest
from conftest import BotProcesses

from arena.proto.hearts.v1 import spectator_service_pb2 as spec_pb
from arena.proto.hearts.v1 import spectator_service_pb2_grpc as spec_grpc
from arena.referee import RefereeConfig, RefereeThread, TokenAccounts
from arena.rules import Rules
from arena.table import Clocks, FaultPolicy, TableSpec, Termination

HANG_S = 60.0
"""A guard against a hang only: nothing here measures a time."""
CALM = Clocks(move_ms=5000, bank_ms=10_000, handshake_ms=30_000)
SETTINGS, HEADERS, DATA, PING, RST_STREAM, WINDOW_UPDATE = 4, 1, 0, 6, 3, 8
END_STREAM, END_HEADERS, ACK = 0x1, 0x4, 0x1
INITIAL_WINDOW_SIZE = 0x4


def _frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
    return (
        struct.pack(">I", len(payload))[1:]
        + bytes([kind, flags])
        + struct.pack(">I", stream)
        + payload
    )


def _header(name: str, value: str) -> bytes:
    """An HPACK literal header field without indexing, new name, no Huffman coding."""
    n, v = name.encode(), value.encode()
    return b"\x00" + bytes([len(n)]) + n + bytes([len(v)]) + v


class StalledSpectator:
    """One Watch stream that never lets the referee send it a byte of DATA."""

    def __init__(self, port: int, table_id: str) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        request = spec_pb.WatchRequest(table_id=table_id, from_start=True).SerializeToString()
        headers = b"".join(
            _header(name, value)
            for name, value in (
                (":method", "POST"),
                (":scheme", "http"),
                (":path", "/hearts.v1.SpectatorService/Watch"),
                (":authority", f"127.0.0.1:{port}"),
                ("content-type", "application/grpc"),
                ("te", "trailers"),
            )
        )
        self.sock.sendall(
            b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
            + _frame(SETTINGS, 0, 0, struct.pack(">HI", INITIAL_WINDOW_SIZE, 0))
            + _frame(HEADERS, END_HEADERS, 1, headers)
            + _frame(DATA, END_STREAM, 1, b"\x00" + struct.pack(">I", len(request)) + request)
        )
        self.header_blocks: list[bytes] = []
        """The HEADERS frames' blocks of its stream (the response's headers, then its trailers)."""
        self.ended = threading.Event()
        """Set when its stream has ended: trailers, or a reset."""
        self.thread = threading.Thread(target=self._answer, daemon=True)
        self.thread.start()

    def _answer(self) -> None:
        """Acknowledge the referee's settings and pings (a live peer), and keep what ends the
        stream; the window stays closed until :meth:`read_on`."""
        buffer = b""
        try:
            while data := self.sock.recv(65536):
                buffer += data
                while len(buffer) >= 9 and len(buffer) >= 9 + int.from_bytes(buffer[:3], "big"):
                    length = int.from_bytes(buffer[:3], "big")
                    kind, flags, payload = buffer[3], buffer[4], buffer[9 : 9 + length]
                    buffer = buffer[9 + length :]
                    if kind == SETTINGS and not flags & ACK:
                        self.sock.sendall(_frame(SETTINGS, ACK, 0, b""))
                    elif kind == PING and not flags & ACK:
                        self.sock.sendall(_frame(PING, ACK, 0, payload))
                    elif kind == HEADERS:
                        assert flags & END_HEADERS, "a header block too long for one frame"
                        self.header_blocks.append(payload)
                        if flags & END_STREAM:
                            self.ended.set()
                    elif kind == RST_STREAM:
                        self.ended.set()
        except OSError:
            pass

    def read_on(self) -> dict[str, str]:
        """Open the flow-control windows (it reads again), and the trailers that end its stream."""
        more = struct.pack(">I", 1 << 30)
        self.sock.sendall(_frame(WINDOW_UPDATE, 0, 0, more) + _frame(WINDOW_UPDATE, 0, 1, more))
        assert self.ended.wait(HANG_S), "the stream never ended"
        decoder = hpack.Decoder()
        blocks = [
            {str(name): str(value) for name, value in decoder.decode(block, raw=False)}
            for block in self.header_blocks
        ]
        assert blocks, "the stream was reset, with no status"
        return blocks[-1]

    def close(self) -> None:
        """Hang up (shutdown first: a close alone leaves the reader thread's socket open)."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        self.thread.join(HANG_S)


def watch_when_let_in(port: int, table_id: str) -> list[str]:
    """Watch a table from the start as another spectator, retrying while the referee says there
    are too many spectators; the kinds of event the stream gave, once it has ended with OK."""
    deadline = time.monotonic() + HANG_S
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = spec_grpc.SpectatorServiceStub(channel)
        while True:
            request = spec_pb.WatchRequest(table_id=table_id, from_start=True)
            kinds: list[str] = []
            try:
                for response in stub.Watch(request, timeout=HANG_S):
                    kinds += [str(event.WhichOneof("kind")) for event in response.events]
                return kinds
            except grpc.RpcError as e:
                assert isinstance(e, grpc.Call)
                refused = e.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
                assert refused and "too many spectators" in (e.details() or ""), e
            assert time.monotonic() < deadline, "the stalled spectator kept its place"
            time.sleep(0.01)


@pytest.fixture
def one_spectator(tmp_path: Path) -> Iterator[tuple[RefereeThread, BotProcesses]]:
    """A referee with room for one spectator at a time (and a short queue), and its bots."""
    accounts = TokenAccounts()
    referee = RefereeThread(RefereeConfig(max_spectators=1, spectator_queue=4), accounts)
    referee.start("127.0.0.1:0")
    bots = BotProcesses(referee, accounts, tmp_path)
    try:
        yield referee, bots
    finally:
        bots.kill_all()
        referee.stop(0)


def grpc_errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What gRPC logged as errors (the referee runs in this process)."""
    return [
        r.getMessage()
        for r in caplog.records
        if r.name.startswith("grpc") and r.levelno >= logging.ERROR
    ]


def stalled_on(referee: RefereeThread, table_id: str) -> StalledSpectator:
    """A stalled spectator, once the referee counts it."""
    stalled = StalledSpectator(referee.port, table_id)
    deadline = time.monotonic() + HANG_S
    while referee.call(lambda r: r._spectators) != 1:
        assert time.monotonic() < deadline, "the stalled spectator was never counted"
        time.sleep(0.01)
    return stalled


def first_response_when_let_in(port: int, table_id: str) -> list[str]:
    """Watch a table from the start as another spectator, retrying while the referee says there
    are too many spectators; the kinds of event in its first response (then it hangs up)."""
    deadline = time.monotonic() + HANG_S
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = spec_grpc.SpectatorServiceStub(channel)
        while True:
            stream = stub.Watch(spec_pb.WatchRequest(table_id=table_id, from_start=True))
            try:
                for response in stream:
                    return [str(event.WhichOneof("kind")) for event in response.events]
                raise AssertionError("the stream ended with no response")
            except grpc.RpcError as e:
                assert isinstance(e, grpc.Call)
                refused = e.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
                assert refused and "too many spectators" in (e.details() or ""), e
            finally:
                stream.cancel()  # type: ignore[no-untyped-call]  # grpc-stubs: untyped
            assert time.monotonic() < deadline, "the stalled spectator kept its place"
            time.sleep(0.01)


def test_a_spectator_that_stopped_reading_leaves_room_once_its_table_has_ended(
    one_spectator: tuple[RefereeThread, BotProcesses], caplog: pytest.LogCaptureFixture
) -> None:
    referee, bots = one_spectator
    names = ("s1", "s2", "s3", "s4")
    table = TableSpec("ends", Rules(), 5, names, "5", clocks=CALM)
    future = referee.submit(table)
    for name in names:
        bots.start(name)
    assert future.result(HANG_S).termination is Termination.NORMAL
    # Watching the ended table from the start, it is sent the whole game at once and takes none
    # of it: no event can queue behind that, so it falls behind no further; it is let go when the
    # write has waited write_timeout_ms, and its place goes to whoever watches next.
    stalled = stalled_on(referee, "ends")
    try:
        kinds = watch_when_let_in(referee.port, "ends")
        assert kinds[0] == "game_started" and kinds[-1] == "game_ended", kinds
        assert referee.call(lambda r: r._spectators) == 0
        # Reading again, the stalled spectator gets what was held back, then why it was dropped.
        trailers = stalled.read_on()
        assert trailers.get("grpc-status") == str(grpc.StatusCode.RESOURCE_EXHAUSTED.value[0])
        assert "stopped reading" in trailers.get("grpc-message", ""), trailers
        assert not grpc_errors(caplog)
    finally:
        stalled.close()


def test_a_spectator_that_stopped_reading_slows_no_game(
    one_spectator: tuple[RefereeThread, BotProcesses],
) -> None:
    referee, bots = one_spectator
    names = ("s1", "s2", "s3", "s4")
    table = TableSpec("slow", Rules(), 5, names, "5", clocks=CALM)
    future = referee.submit(table)  # opens the table; it waits for its bots
    stalled = stalled_on(referee, "slow")
    try:
        for name in names:
            bots.start(name)
        assert future.result(HANG_S).termination is Termination.NORMAL
        kinds = watch_when_let_in(referee.port, "slow")
        assert kinds[0] == "game_started" and kinds[-1] == "game_ended", kinds
    finally:
        stalled.close()


def test_a_spectator_dropped_for_falling_behind_leaves_room_while_the_table_plays(
    one_spectator: tuple[RefereeThread, BotProcesses],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    referee, bots = one_spectator
    names = ("t1", "t2", "t3", "t4")
    back = tmp_path / "back"
    # t4 leaves mid-hand and stays away until told: the table waits for it (a long grace), live,
    # with more events published than the spectator queue holds.
    faults = FaultPolicy(grace_ms=int(HANG_S * 1000) * 2)
    table = TableSpec("plays", Rules(), 6, names, "6", clocks=CALM, faults=faults)
    future = referee.submit(table)
    stalled = stalled_on(referee, "plays")
    try:
        for name in names[:3]:
            bots.start(name)
        bots.start(names[3], "away", f"--back-when={back}")
        # Let in while the table waits for t4: the stalled spectator was dropped as it fell
        # behind, not held until the table ends. (The second spectator hangs up after its first
        # response: with a queue of 4, a reader on a loaded machine may fall behind too.)
        kinds = first_response_when_let_in(referee.port, "plays")
        assert kinds[0] == "game_started", kinds
        status = referee.call(lambda r: r._feeds["plays"].status)
        assert status == spec_pb.TABLE_STATUS_PLAYING  # t4 is still away
        trailers = stalled.read_on()
        assert trailers.get("grpc-status") == str(grpc.StatusCode.RESOURCE_EXHAUSTED.value[0])
        assert "fell too far behind" in trailers.get("grpc-message", ""), trailers
        back.touch()
        record = future.result(HANG_S)
        assert record.termination is Termination.NORMAL
        assert referee.call(lambda r: r._spectators) == 0
        assert not grpc_errors(caplog)
    finally:
        back.touch()
        stalled.close()
