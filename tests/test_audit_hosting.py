"""Hosting tables from Python (README "Hosting tables from Python"), as a newcomer uses it: a
referee starts once, a table id is one table at a time, a stop ends the tables still waiting for
their bots, and values the protocol cannot carry are refused where they are given."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import BOT_READY_MS, EXIT_WAIT_S, BotProcesses, on_referee_loop, recorded_messages

from arena.errors import ConfigError
from arena.proto.hearts.v1 import events_pb2 as game_pb
from arena.referee import Referee, RefereeConfig, RefereeThread, TokenAccounts
from arena.referee.config import MAX_MESSAGE_BYTES, MAX_MS
from arena.rules import Rules
from arena.table import (
    MAX_CLOCK_MS,
    MAX_FAULTS,
    MAX_SEED,
    Clocks,
    FaultKind,
    FaultPolicy,
    TableSpec,
    Termination,
)

RESULT_S = 120.0
SEATS = ("a", "b", "c", "d")
WAITING = Clocks(move_ms=5000, bank_ms=10_000, handshake_ms=600_000)
"""A table that waits ten minutes for bots that never come: only a stop ends it soon."""


def test_a_referee_starts_once_and_not_again_after_its_stop() -> None:
    # A second start listened on a new port beside the first; a start after stop() served a
    # referee that answered every Hello INTERNAL (its account lookups had been shut down).
    async def body() -> None:
        referee = Referee(RefereeConfig(), {})
        port = await referee.start("127.0.0.1:0")
        with pytest.raises(
            ConfigError, match=rf"^referee: already started \(listening on port {port}\)"
        ):
            await referee.start("127.0.0.1:0")
        assert referee.port == port
        await referee.stop(0)
        with pytest.raises(ConfigError, match=r"has stopped .*make a new Referee"):
            await referee.start("127.0.0.1:0")

    on_referee_loop(body)


def test_a_referee_thread_says_whether_it_runs_or_has_stopped() -> None:
    # After stop() a second start said "already started", as if it still ran.
    thread = RefereeThread(RefereeConfig(), {})
    thread.start("127.0.0.1:0")
    try:
        with pytest.raises(ConfigError, match=r"^the referee thread was already started; call"):
            thread.start("127.0.0.1:0")
    finally:
        thread.stop(0)
    with pytest.raises(ConfigError, match=r"has stopped .*make a new RefereeThread"):
        thread.start("127.0.0.1:0")


def test_a_referee_thread_whose_start_failed_may_start_again_and_leaves_no_thread() -> None:
    # The failed start left a "referee" thread behind, and the next start() said "already
    # started", where a Referee's may be called again.
    thread = RefereeThread(RefereeConfig(), {})
    with pytest.raises(ConfigError, match=r"cannot listen on '127.0.0.1'"):
        thread.start("127.0.0.1")
    assert not [t for t in threading.enumerate() if t.name == "referee"]
    port = thread.start("127.0.0.1:0")
    try:
        assert port > 0 and thread.idle() == {}
    finally:
        assert thread.stop(0)


def test_a_table_id_waiting_for_its_bots_is_not_taken_twice(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses
) -> None:
    # Both were taken while they waited; both played, the second to end raised KeyError, and
    # its bots were never given back to the lobby.
    thread = referee[0]
    first = thread.submit(TableSpec("dup", Rules(), 3, SEATS, "3"), wait_ms=BOT_READY_MS)
    other = thread.submit(TableSpec("dup", Rules(), 4, ("e", "f", "g", "h"), "4"), wait_ms=0)
    with pytest.raises(ConfigError, match=r"^table 'dup' is already being played .*table_id$"):
        other.result(RESULT_S)
    for name in SEATS:
        bots.start(name)
    record = first.result(RESULT_S)
    assert record.termination is Termination.NORMAL, record.reason
    bots.ready(*SEATS)  # all four are back in the lobby, for the next table
    again = thread.submit(TableSpec("dup", Rules(), 5, SEATS, "5")).result(RESULT_S)
    assert again.termination is Termination.NORMAL, again.reason


def test_a_stop_ends_a_table_waiting_for_its_bots_at_once() -> None:
    # stop() returned while play_table() went on waiting out the table's wait for its bots.
    async def body() -> None:
        referee = Referee(RefereeConfig(), {})
        await referee.start("127.0.0.1:0")
        table = asyncio.create_task(referee.play_table(TableSpec("w", Rules(), 1, SEATS, "1")))
        await asyncio.sleep(0)  # the table is in the lobby, waiting for its bots
        table_waiting = asyncio.create_task(
            referee.play_table(TableSpec("w2", Rules(), 2, SEATS, "2", clocks=WAITING))
        )
        await asyncio.sleep(0)
        assert not referee.stopping
        await referee.stop(0)
        assert table.done() and table_waiting.done()
        for record in (table.result(), table_waiting.result()):
            assert record.termination is Termination.INTERRUPTED
            assert record.reason == "interrupted before it started: the referee is stopping"
        assert await referee.wait_for_bots(SEATS, 600_000) is False

    on_referee_loop(body)


def test_a_stopped_referee_thread_gives_a_waiting_table_its_record() -> None:
    # The future was cancelled (a bare CancelledError) instead of resolving to a record.
    thread = RefereeThread(RefereeConfig(), {})
    thread.start("127.0.0.1:0")
    try:
        future = thread.submit(TableSpec("w", Rules(), 1, SEATS, "1", clocks=WAITING))
    finally:
        thread.stop(0)
    assert future.done()
    assert future.result().termination is Termination.INTERRUPTED


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Clocks(move_ms=0, bank_ms=0), r"^clocks\.move_ms must be a whole number from 1"),
        (lambda: Clocks(move_ms=2**40), r"^clocks\.move_ms .* to 86400000 \(ms: at most a day\)"),
        (lambda: Clocks(bank_ms=MAX_CLOCK_MS + 1), r"^clocks\.bank_ms .*, got 86400001$"),
        (lambda: Clocks(handshake_ms=2**40), r"^clocks\.handshake_ms .* at most a day"),
        (lambda: FaultPolicy(grace_ms=2**40), r"^faults\.grace_ms .* at most a day"),
        (lambda: FaultPolicy(max_faults=2**32), r"^faults\.max_faults .* to 4294967295, got"),
        (
            lambda: TableSpec("t", Rules(), -1, SEATS, "1"),
            r"^table 't': seed -1 is out of range: give a whole number from 0 to 922337203685477",
        ),
        (lambda: TableSpec("t", Rules(), 2**63, SEATS, "1"), r"seed 9223372036854775808 is out"),
        (lambda: RefereeConfig(grace_ms=2**40), r"^referee\.grace_ms must be at most a day"),
        (lambda: RefereeConfig(reconnect_after_ms=MAX_MS + 1), r"^referee\.reconnect_after_ms"),
        (lambda: RefereeConfig(keepalive_ms=2**40), r"^referee\.keepalive_ms must be at most"),
        (
            lambda: RefereeConfig(max_message_bytes=2**40),
            r"^referee\.max_message_bytes .*\(256 MiB\)",
        ),
    ],
)
def test_a_value_the_protocol_cannot_carry_is_refused_where_it_is_given(
    make: Callable[[], object], message: str
) -> None:
    # Each was taken, then failed far away: the game as it started or at its first fault (a
    # CRASH record), every handshake (Welcome), the stop (Shutdown), or the start (gRPC's C
    # ints); a move of 0 ms cut every bot's session; seed -1 dealt fixed cards.
    with pytest.raises(ConfigError, match=message):
        make()


def test_the_largest_clocks_and_fault_limit_play_a_whole_table(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses
) -> None:
    bots.start("a", "illegal")
    for name in SEATS[1:]:
        bots.start(name)
    bots.ready(*SEATS)
    spec = TableSpec(
        "limits",
        Rules(),
        MAX_SEED,
        SEATS,
        "max",
        clocks=Clocks(move_ms=MAX_CLOCK_MS, bank_ms=MAX_CLOCK_MS, handshake_ms=MAX_CLOCK_MS),
        faults=FaultPolicy(max_faults=MAX_FAULTS, grace_ms=MAX_CLOCK_MS),
    )
    record = referee[0].submit(spec).result(RESULT_S)
    assert record.termination is Termination.NORMAL, record.reason
    assert record.seat_status == (Termination.NORMAL,) * 4
    assert {f.kind for f in record.faults} == {FaultKind.ILLEGAL_CARD}


def test_the_largest_referee_settings_serve_and_stop(tmp_path: Path) -> None:
    accounts = TokenAccounts()
    config = RefereeConfig(
        handshake_ms=MAX_MS,
        grace_ms=MAX_MS,
        reconnect_after_ms=MAX_MS,
        keepalive_ms=MAX_MS,
        min_ping_interval_ms=MAX_MS,
        max_message_bytes=MAX_MESSAGE_BYTES,
    )
    thread = RefereeThread(config, accounts)
    thread.start("127.0.0.1:0")
    bots = BotProcesses(thread, accounts, tmp_path)
    try:
        bot = bots.start("a")
        bots.ready("a")  # welcomed: Welcome carries grace_ms and max_message_bytes
        thread.stop(0)  # not finished: the Shutdown carries reconnect_after_ms
        out, _ = bot.communicate(timeout=EXIT_WAIT_S)
        assert "SHUTDOWN SHUTDOWN_REASON_SERVER_SHUTDOWN" in out, out
    finally:
        thread.stop(0)
        bots.kill_all()


def test_the_shortest_clock_times_moves_out_and_cuts_no_session(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses
) -> None:
    # 1 ms a move and no bank: a request's deadline can pass while it is still being written.
    # The alarm cancelled the write then, which ended the session: all four bots were cut, and
    # the table was decided by disconnects. Now a move that comes too late is a timeout, and
    # the bots stay connected (a forfeit for too many timeouts is the policy's, not a cut).
    for name in SEATS:
        bots.start(name)
    bots.ready(*SEATS)
    spec = TableSpec(
        "fastest",
        Rules(),
        5,
        SEATS,
        "5",
        clocks=Clocks(move_ms=1, bank_ms=0),
        faults=FaultPolicy(max_faults=MAX_FAULTS),
    )
    record = referee[0].submit(spec).result(RESULT_S)
    assert record.termination is Termination.NORMAL, record.reason
    assert {f.kind for f in record.faults} <= {FaultKind.TIMEOUT}
    assert record.seat_status == (Termination.NORMAL,) * 4
    assert referee[0].wait_for_bots(SEATS, BOT_READY_MS)  # all four back in the lobby


def test_a_table_of_several_hands_ended_by_the_target_says_so(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses
) -> None:
    # Target 1: the first hand's points end the game (every hand gives some seat a point), so
    # the table's count of 5 hands is never reached; "1 hand played" read as if it had been.
    for name in SEATS:
        bots.start(name)
    bots.ready(*SEATS)
    spec = TableSpec("target", Rules(target=1), 3, SEATS, "t", hands=5)
    record = referee[0].submit(spec).result(RESULT_S)
    assert record.termination is Termination.NORMAL, record.reason
    assert record.reason == "1 hand played to 1"
    counted = TableSpec("count", Rules(), 3, SEATS, "c", hands=2)
    assert referee[0].submit(counted).result(RESULT_S).reason == "2 hands played"


@pytest.mark.parametrize("how", ["future", "wait_for"])
def test_a_cancelled_table_ends_its_game_for_its_bots_and_gives_them_back(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses, tmp_path: Path, how: str
) -> None:
    # Cancelled (Future.cancel(), asyncio.wait_for), the game stopped mid-trick: its bots were
    # never told it ended (no GameEnded), and an answer in flight was dropped as a stranger's.
    thread = referee[0]
    log = tmp_path / "a.log"
    bots.start("a", "slow", "--delay-ms=30", f"--record={log}")
    for name in SEATS[1:]:
        bots.start(name, "slow", "--delay-ms=30")
    bots.ready(*SEATS)
    spec = TableSpec("long", Rules(), 3, SEATS, "3", hands=None)
    if how == "future":
        future = thread.submit(spec)
        time.sleep(0.5)
        assert future.cancel() and future.cancelled()
    else:

        async def bounded(referee: Referee) -> None:
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(referee.play_table(spec), 0.5)

        loop = thread._running_loop()
        asyncio.run_coroutine_threadsafe(bounded(thread.referee), loop).result(RESULT_S)
    ended = [e.game_ended for m in recorded_messages(log, RESULT_S) for e in m.events]
    [end] = [e for e in ended if e.game_id]
    assert end.termination == game_pb.TERMINATION_INTERRUPTED
    assert end.message.startswith("interrupted (its host cancelled the table) after ")
    # Back in the lobby, the four play the next table (an answer still in flight when the game
    # ended is listed there as late, as the README says of an earlier game's answers).
    bots.ready(*SEATS)
    record = thread.submit(TableSpec("next", Rules(), 4, SEATS, "4")).result(RESULT_S)
    assert record.termination is Termination.NORMAL and not record.faults
