"""A reconnect takes its seat back at once by naming its previous session (Hello.resume_session_id),
even while the referee still thinks that session alive (a half-open connection).

The half-open connection is real: a bot process stops itself (SIGSTOP) in the middle of a hand,
with a request open, and its TCP connection stays up and silent; the referee's keepalive is set
far beyond the test, so that nothing but the resume can take the seat from it. The SDK and the
Node.js sample bot are checked against a scripted peer: they name the broken session on a
reconnect, and no session after a Shutdown.
"""

from __future__ import annotations

import logging
import os
import queue
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Literal

import grpc
import pytest
from conftest import BOTS_DIR, EXIT_WAIT_S, BotProcesses
from test_audit_protocol import _answer
from test_client_protocol import ScriptedPeer, Stream
from test_js_bot import JS_BOT, require_node

from arena.client import Bot, serve
from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb
from arena.proto.hearts.v1 import bot_service_pb2_grpc as bot_grpc
from arena.referee import Referee, RefereeConfig, RefereeThread, TokenAccounts
from arena.rules import Rules
from arena.table import Clocks, FaultKind, GameRecord, TableSpec, Termination

RESUME_BOT = BOTS_DIR / "resume_bot.py"
RESULT_S = 120.0
CALM = Clocks(move_ms=10_000, bank_ms=20_000, handshake_ms=30_000)
"""Clocks long enough that the stalled request is normally answered by the resumed session."""
NEVER_MS = 3_600_000
"""A keepalive interval no test outlasts: the referee cannot notice the stopped bot by itself."""
GOOD = ("g1", "g2", "g3")
HALF_SEAT = 2
MOVE_MS = 300
"""A move time a test waits past, so that the seat's bank is being drawn."""


@pytest.fixture
def arena(tmp_path: Path) -> Iterator[BotProcesses]:
    """A referee that never notices a dead connection by itself, and its bot processes."""
    accounts = TokenAccounts()
    referee = RefereeThread(RefereeConfig(keepalive_ms=NEVER_MS), accounts)
    referee.start("127.0.0.1:0")
    bots = BotProcesses(referee, accounts, tmp_path)
    try:
        yield bots
    finally:
        for proc in bots.procs:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)  # a stopped process dies only once continued
        bots.kill_all()
        referee.stop(0)


def start_resume_bot(
    bots: BotProcesses, name: str, mode: str = "good", resume: str = "", *options: str
) -> subprocess.Popen[str]:
    """Start tests/bots/resume_bot.py for bot ``name`` (its token), killed at the end."""
    proc = subprocess.Popen(
        [
            sys.executable,
            str(RESUME_BOT),
            f"--address={bots.address}",
            f"--token={bots.token(name)}",
            f"--name={name}",
            f"--mode={mode}",
            f"--resume={resume}",
            *options,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    bots.procs.append(proc)
    return proc


def line(proc: subprocess.Popen[str], word: str) -> list[str]:
    """The words of the next line the process prints that starts with ``word``."""
    assert proc.stdout is not None
    while True:
        text = proc.stdout.readline()
        assert text, f"the bot ended without printing {word}: {proc.stderr and proc.stderr.read()}"
        if text.startswith(word + " "):
            return text.split()


def session_ids(bots: BotProcesses) -> set[str]:
    """The ids of the referee's live sessions."""
    return {s.session_id for s in bots.referee.call(Referee.sessions)}


def stall_half_open(
    arena: BotProcesses, table_id: str, clocks: Clocks
) -> tuple[subprocess.Popen[str], str, Future[GameRecord], int]:
    """Three good bots and a resume bot that stalls half-open (SIGSTOP) at its play request of
    the second trick: the stalled process, its session id, the game's future and the request
    it holds open."""
    for name in GOOD:
        arena.start(name)
    half = start_resume_bot(arena, "half", "stall")
    arena.ready(*GOOD, "half")
    old_id = line(half, "WELCOME")[1]
    seats = list(GOOD)
    seats.insert(HALF_SEAT, "half")
    spec = TableSpec(table_id, Rules(), 5, tuple(seats), "5", hands=1, clocks=clocks)
    future = arena.referee.submit(spec)
    return half, old_id, future, int(line(half, "STALLED")[1])


def test_a_reconnect_takes_back_a_half_open_sessions_seat_at_once(
    arena: BotProcesses, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="arena.referee")
    half, old_id, future, stalled = stall_half_open(arena, "half-open", CALM)
    # Stopped, with its request open: its connection is up and silent (half-open).
    info = os.waitid(os.P_PID, half.pid, os.WSTOPPED | os.WEXITED | os.WNOWAIT)
    assert info is not None and info.si_code == os.CLD_STOPPED
    live = {s.session_id: s for s in arena.referee.call(Referee.sessions)}
    assert live[old_id].table_id == "half-open"  # the referee still seats it

    back = start_resume_bot(arena, "half", "good", resume=old_id)
    welcome = line(back, "WELCOME")
    record = future.result(RESULT_S)

    assert welcome[2] == "True"  # Welcome.resumed: the seat was taken back
    assert record.termination is Termination.NORMAL
    assert record.seat_status == (Termination.NORMAL,) * 4
    assert all(h.complete for h in record.hands)
    # No disconnect, no forfeit: at most the stalled request itself ran out (had the new
    # session come after its deadline), and no other seat was touched.
    half_faults = record.faults_of(HALF_SEAT)
    assert all(f.kind is FaultKind.TIMEOUT for f in half_faults) and len(half_faults) <= 1
    assert all(f.seat == HALF_SEAT for f in record.faults)
    later = [d for d in record.decisions if d.seat == HALF_SEAT and d.request_id > stalled]
    assert later and not any(d.fallback for d in later)  # the new session played on
    assert old_id not in session_ids(arena)
    assert any(
        f"replaces session {old_id}, which it named in Hello.resume_session_id" in r.message
        for r in caplog.records
    )

    # Continued, the old process finds the Shutdown the referee sent it (its answer to the
    # stalled request goes to a session no longer read).
    os.kill(half.pid, signal.SIGCONT)
    assert line(half, "SHUTDOWN")[1] == "SHUTDOWN_REASON_REPLACED_BY_NEW_SESSION"
    assert half.wait(EXIT_WAIT_S) == 0
    assert back.poll() is None  # the new session waits for its next game


def test_a_request_sent_again_after_a_reconnect_gives_no_more_bank_than_time_left(
    arena: BotProcesses,
) -> None:
    # Sent again to the bot back in its seat past the move time, the request gave the time
    # left as its deadline (the move time spent, some bank too) beside the whole bank: 395 ms
    # to answer and 500 ms of bank, where the deadline includes the bank.
    clocks = Clocks(move_ms=MOVE_MS, bank_ms=20_000, handshake_ms=30_000)
    half, old_id, future, stalled = stall_half_open(arena, "sent-again", clocks)
    time.sleep(2 * MOVE_MS / 1000)  # past the move time: the bank is being drawn
    back = start_resume_bot(arena, "half", "good", old_id, "--show-requests")
    request_id, deadline_ms, bank_ms = line(back, "REQUEST")[1:]
    record = future.result(RESULT_S)
    # The same decision asked again (under a new id): its deadline counts from the first ask.
    assert int(request_id) > stalled
    assert 0 < int(bank_ms) <= int(deadline_ms) <= 20_000 + MOVE_MS - 2 * MOVE_MS
    assert record.termination is Termination.NORMAL
    os.kill(half.pid, signal.SIGCONT)


def test_a_resume_id_names_only_a_live_session_of_the_same_token(arena: BotProcesses) -> None:
    other = start_resume_bot(arena, "other")
    other_id = line(other, "WELCOME")[1]
    # Another token's session: ignored, and left alone.
    intruder = start_resume_bot(arena, "intruder", resume=other_id)
    assert line(intruder, "WELCOME")[2] == "False"
    # An id no session has: ignored.
    stranger = start_resume_bot(arena, "stranger", resume="s999999")
    assert line(stranger, "WELCOME")[2] == "False"
    arena.ready("other", "intruder", "stranger")
    assert other_id in session_ids(arena)

    # The same token's idle session: replaced (there was no seat to take back).
    twin = start_resume_bot(arena, "twin")
    twin_id = line(twin, "WELCOME")[1]
    again = start_resume_bot(arena, "twin", resume=twin_id)
    new_id, resumed = line(again, "WELCOME")[1:3]
    assert resumed == "False"
    assert line(twin, "SHUTDOWN")[1] == "SHUTDOWN_REASON_REPLACED_BY_NEW_SESSION"
    assert twin.wait(EXIT_WAIT_S) == 0
    arena.ready("twin")
    ids = session_ids(arena)
    assert new_id in ids and twin_id not in ids and other_id in ids
    # An ended session's id: ignored.
    late = start_resume_bot(arena, "twin", resume=twin_id)
    assert line(late, "WELCOME")[2] == "False"
    arena.ready("twin", "twin")
    assert new_id in session_ids(arena)


# ---- the clients: the broken session is named on a reconnect ---------------------------------


async def _resume_script(n: int, stream: Stream, peer: ScriptedPeer, drain: bool) -> None:
    """Welcome s1 then break; welcome s2 then a restart; then no more games (``drain``: wait
    for the client to close its side after a Shutdown, as the SDK does; else close at once)."""
    await peer.read(stream)
    if n == 0:
        await stream.write(bot_pb.PlayResponse(welcome=bot_pb.Welcome(session_id="s1")))
        await stream.abort(grpc.StatusCode.UNAVAILABLE, "the connection broke")
    shutdown = bot_pb.Shutdown(reason=bot_pb.SHUTDOWN_REASON_NO_MORE_GAMES)
    if n == 1:
        shutdown = bot_pb.Shutdown(
            reason=bot_pb.SHUTDOWN_REASON_SERVER_SHUTDOWN, may_reconnect=True, reconnect_after_ms=1
        )
    await stream.write(
        bot_pb.PlayResponse(welcome=bot_pb.Welcome(session_id=f"s{n + 1}"), shutdown=shutdown)
    )
    if drain:
        await peer.drain(stream)


def _resume_ids(peer: ScriptedPeer) -> list[str]:
    return [m.hello.resume_session_id for m in peer.received if m.HasField("hello")]


def test_the_sdk_names_the_broken_session_when_it_reconnects() -> None:
    async def script(n: int, stream: Stream) -> None:
        await _resume_script(n, stream, peer, drain=True)

    with ScriptedPeer(script) as peer:
        end = serve(Bot(), peer.settings, give_up_after=30)
    assert end.reason == "NO_MORE_GAMES"
    # After the break: the broken session; after the referee's own Shutdown: none.
    assert _resume_ids(peer) == ["", "s1", ""]


def test_the_js_bot_names_the_broken_session_when_it_reconnects(tmp_path: Path) -> None:
    node = require_node()

    async def script(n: int, stream: Stream) -> None:
        await _resume_script(n, stream, peer, drain=False)

    with ScriptedPeer(script) as peer:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("ARENA_")},
            "ARENA_ADDRESS": f"127.0.0.1:{peer.port}",
            "ARENA_TOKEN": "a-token",
            "ARENA_BOT_NAME": "js",
        }
        done = subprocess.run(
            [node, str(JS_BOT)], env=env, capture_output=True, text=True, timeout=RESULT_S
        )
    assert done.returncode == 0, done.stderr
    assert _resume_ids(peer) == ["", "s1", ""]


def test_session_ids_differ_from_one_referee_start_to_the_next(tmp_path: Path) -> None:
    # Counted from s1 at each start, a bot's stale resume_session_id (kept over a crash of the
    # referee, as the protocol asks) named another live session of its token after the
    # restart, and ended it.
    ids = []
    for start in range(2):
        accounts = TokenAccounts()
        referee = RefereeThread(RefereeConfig(keepalive_ms=NEVER_MS), accounts)
        referee.start("127.0.0.1:0")
        bots = BotProcesses(referee, accounts, tmp_path / str(start))
        try:
            bot = start_resume_bot(bots, "solo")
            ids.append(line(bot, "WELCOME")[1])
        finally:
            bots.kill_all()
            referee.stop(0)
    first, again = ids
    assert first != again, ids
    assert all(re.fullmatch(r"s1-[0-9a-f]{6}", i) for i in ids), ids


class _RawStream:
    """One Play stream driven by hand from this thread: messages in, responses out."""

    def __init__(self, channel: grpc.Channel, hello: bot_pb.Hello) -> None:
        self._outbox: queue.Queue[bot_pb.PlayRequest | None] = queue.Queue()
        self._outbox.put(bot_pb.PlayRequest(hello=hello))
        stub = bot_grpc.BotServiceStub(channel)
        self.responses = stub.Play(iter(self._outbox.get, None), timeout=RESULT_S)

    def send(self, *messages: bot_pb.PlayRequest) -> None:
        for message in messages:
            self._outbox.put(message)

    def close(self) -> None:
        self._outbox.put(None)

    def until(self, field: Literal["request", "shutdown", "welcome"]) -> bot_pb.PlayResponse:
        """The next response that has ``field`` (a request, a welcome, a shutdown)."""
        for response in self.responses:
            if response.HasField(field):
                return response
        raise AssertionError(f"the stream ended before a {field}")


@pytest.mark.parametrize(
    ("passes", "answers"),
    [(True, 1), (False, 1), (False, 2)],
    ids=["a-pass", "a-play", "two-plays"],
)
def test_an_answer_sent_as_a_reconnect_replaces_its_session_is_recorded_late(
    arena: BotProcesses, passes: bool, answers: int
) -> None:
    # The old stream's answer, read once its session had ended (replaced by the reconnect
    # that named it), went to an inbox no one read: neither applied nor in the record's late
    # replies. It is read where the seat now is: a late reply, no fault.
    names = ("raw", "g1", "g2", "g3")
    for name in names[1:]:
        arena.start(name)
    token = arena.token("raw")
    with grpc.insecure_channel(arena.address) as channel:

        def hello(resume: str = "") -> bot_pb.Hello:
            return bot_pb.Hello(
                bot_name="raw", token=token, protocol_version=1, resume_session_id=resume
            )

        old = _RawStream(channel, hello())
        old_id = old.until("welcome").welcome.session_id
        arena.ready(*names)
        # Without a pass the first request is a play, whose answer the referee's fast reader
        # takes apart from other messages (it was the one still dropped).
        rules = Rules() if passes else Rules(pass_count=0)
        spec = TableSpec("heir", rules, seed=9, seats=names, board="9", hands=1, clocks=CALM)
        future = arena.referee.submit(spec)
        first = old.until("request").request
        new = _RawStream(channel, hello(old_id))
        assert new.until("welcome").welcome.resumed
        assert (
            old.until("shutdown").shutdown.reason == bot_pb.SHUTDOWN_REASON_REPLACED_BY_NEW_SESSION
        )
        for _ in range(answers):  # as the Shutdown arrives: the old stream is still read
            old.send(*_answer(first))
        old.close()
        answered = 0
        for response in new.responses:
            if response.HasField("request"):
                new.send(*_answer(response.request))
                answered += 1
            if any(e.HasField("game_ended") for e in response.events):
                break
        new.close()
        record = future.result(RESULT_S)
    assert answered > 0
    assert record.termination is Termination.NORMAL and record.faults == (), record.faults
    late = [x for x in record.late if x.seat == 0]
    assert [x.request_id for x in late] == [first.request_id] * answers
    assert first.kind == (bot_pb.DECISION_KIND_PASS if passes else bot_pb.DECISION_KIND_PLAY)
    asked_again = [d for d in record.decisions if d.seat == 0 and d.request_id > first.request_id]
    assert asked_again and not any(d.fallback for d in record.decisions)
