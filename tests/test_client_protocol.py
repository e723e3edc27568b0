"""The client's side of hearts.v1 in the corners a real referee reaches only rarely.

A scripted peer (a real grpc.aio server on loopback, speaking the generated protocol) sends
exactly the messages a test needs: several parts in one message, a decision kind from a newer
protocol, a clean end of the session, a refusal, a failure and then success. The client under
test is the real runner, in-process (:func:`arena.client.serve`) or as a sample-bot process.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import grpc
import pytest

from arena.cards import Card
from arena.client import Bot, DecisionView, FaultNotice, GameStarted, HandStarted, serve
from arena.client.remote import (
    BACKOFF_JITTER,
    DEFAULT_GIVE_UP_S,
    ENV_ADDRESS,
    ENV_BOT_NAME,
    ENV_GIVE_UP,
    ENV_TOKEN,
    EXIT_INTERRUPTED,
    ClientSettings,
    GaveUp,
    Refused,
    _reconnect_wait,
)
from arena.client.wire import PROTOCOL_VERSION
from arena.errors import ConfigError
from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb
from arena.proto.hearts.v1 import bot_service_pb2_grpc as bot_grpc
from arena.proto.hearts.v1 import events_pb2 as ev_pb
from arena.proto.hearts.v1 import game_pb2 as game_pb
from arena.rules import Rules
from arena.table import FaultKind

ROOT = Path(__file__).resolve().parent.parent
PROCESS_TIMEOUT_S = 60.0
UNKNOWN_DECISION_KIND = 7
POLL_S = 0.05
"""How often a test rereads a bot's stderr while it waits for a line."""
"""A decision kind no version of this SDK knows (the protocol keeps 3 and up for the future)."""

Stream = grpc.aio.ServicerContext[bot_pb.PlayRequest, bot_pb.PlayResponse]
Script = Callable[[int, Stream], Awaitable[None]]


class ScriptedPeer(bot_grpc.BotServiceServicer):
    """A BotService that plays ``script(n, stream)`` on the n-th stream, on its own thread."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.streams = 0
        self.received: list[bot_pb.PlayRequest] = []
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._server: grpc.aio.Server | None = None

    async def Play(self, request_iterator: Any, context: Stream) -> None:  # type: ignore[override]
        """Run the script on this stream."""
        n = self.streams
        self.streams += 1
        await self.script(n, context)

    async def read(self, stream: Stream) -> bot_pb.PlayRequest | None:
        """The client's next message (None once it has closed its side)."""
        message = await stream.read()
        if message is grpc.aio.EOF:  # type: ignore[attr-defined]
            return None
        assert isinstance(message, bot_pb.PlayRequest)
        self.received.append(message)
        return message

    async def drain(self, stream: Stream) -> None:
        """Read until the client closes its side."""
        while await self.read(stream) is not None:
            pass

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._start())
        self._ready.set()
        self._loop.run_forever()

    async def _start(self) -> None:
        server = grpc.aio.server()
        bot_grpc.add_BotServiceServicer_to_server(self, server)
        self.port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        self._server = server

    def __enter__(self) -> ScriptedPeer:
        self._thread.start()
        self._ready.wait()
        return self

    def __exit__(self, *exc: object) -> None:
        async def stop() -> None:
            if self._server is not None:
                await self._server.stop(0)

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    @property
    def settings(self) -> ClientSettings:
        """Client settings pointing at this peer."""
        return ClientSettings(f"127.0.0.1:{self.port}", "a-token", "tester")


def _rules_message(rules: Rules) -> game_pb.Rules:
    return game_pb.Rules(players=rules.players, rules_json=json.dumps(rules.to_dict()))


HAND = ["2C", "5C", "9D", "KD", "3H", "8H", "QH", "2S", "4S", "7S", "JS", "QS", "AS"]


def _play_request(request_id: int, kind: int = bot_pb.DECISION_KIND_PLAY) -> bot_pb.DecisionRequest:
    """Seat 0 to lead the first trick of a hold hand, holding the two of clubs."""
    return bot_pb.DecisionRequest(
        request_id=request_id,
        kind=kind,  # type: ignore[arg-type]
        game_id="g1",
        your_seat=0,
        hand=HAND,
        legal_cards=["2C"],
        move_deadline_ms=6000,  # as the referee counts it: 1000 ms move time + the bank
        time_bank_ms=5000,
        state=game_pb.PublicState(
            players=4,
            seat_names=["tester", "b", "c", "d"],
            current_trick=game_pb.Trick(trick_number=0, leader=0),
            hand_points=[0, 0, 0, 0],
            game_totals=[0, 0, 0, 0],
            cards_in_hand=[13, 13, 13, 13],
            first_trick=True,
            pass_direction=game_pb.PASS_DIRECTION_HOLD,
            forfeited=[False] * 4,
            rules=_rules_message(Rules()),
        ),
    )


def _events() -> list[ev_pb.Event]:
    return [
        ev_pb.Event(
            game_started=ev_pb.GameStarted(
                game_id="g1",
                seat_names=["tester", "b", "c", "d"],
                your_seat=0,
                rules=_rules_message(Rules()),
                clock=ev_pb.ClockSettings(move_time_ms=1000, time_bank_ms=5000),
            )
        ),
        ev_pb.Event(
            hand_started=ev_pb.HandStarted(
                hand_number=0, dealer=3, pass_direction=game_pb.PASS_DIRECTION_HOLD
            )
        ),
        ev_pb.Event(
            fault_notice=ev_pb.FaultNotice(
                kind=ev_pb.FAULT_KIND_TIMEOUT,
                game_id="g1",
                request_id=1,
                substitute_cards=["2C"],
                message="no answer within 1000 ms",
                faults=1,
                faults_allowed=3,
            )
        ),
    ]


class Listener(Bot):
    """Records the hooks called and the views shown."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.views: list[DecisionView] = []
        self.faults: list[FaultNotice] = []

    def choose_play(self, view: DecisionView) -> Card:
        self.views.append(view)
        self.calls.append("choose_play")
        return super().choose_play(view)

    def choose_pass(self, view: DecisionView) -> Sequence[Card]:
        self.calls.append("choose_pass")
        return super().choose_pass(view)

    def on_game_start(self, event: GameStarted) -> None:
        self.calls.append("on_game_start")

    def on_hand_start(self, event: HandStarted) -> None:
        self.calls.append("on_hand_start")

    def on_fault(self, event: FaultNotice) -> None:
        self.calls.append("on_fault")
        self.faults.append(event)


def _restarting(after_ms: int) -> bot_pb.PlayResponse:
    """A session welcomed and ended at once: the referee restarts, come back after ``after_ms``."""
    return bot_pb.PlayResponse(
        welcome=bot_pb.Welcome(session_id="s"),
        shutdown=bot_pb.Shutdown(
            reason=bot_pb.SHUTDOWN_REASON_SERVER_SHUTDOWN,
            may_reconnect=True,
            reconnect_after_ms=after_ms,
        ),
    )


def _shutdown(reason: int, may_reconnect: bool = False) -> bot_pb.PlayResponse:
    return bot_pb.PlayResponse(
        shutdown=bot_pb.Shutdown(
            reason=reason,  # type: ignore[arg-type]
            message="that is all",
            may_reconnect=may_reconnect,
        )
    )


# ---- one message, several parts; a kind from the future; a clean end ------------------------


def test_parts_are_handled_in_order_and_an_unknown_kind_is_left_unanswered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def script(n: int, stream: Stream) -> None:
        hello = await peer.read(stream)
        assert hello is not None and hello.HasField("hello")
        await stream.write(
            bot_pb.PlayResponse(
                welcome=bot_pb.Welcome(session_id="s1", protocol_version=1),
                events=_events(),
                request=_play_request(41),
            )
        )
        answer = await peer.read(stream)
        assert answer is not None and answer.decision.request_id == 41
        await stream.write(bot_pb.PlayResponse(request=_play_request(42, UNKNOWN_DECISION_KIND)))
        await stream.write(_shutdown(bot_pb.SHUTDOWN_REASON_NO_MORE_GAMES))
        await peer.drain(stream)

    bot = Listener()
    with ScriptedPeer(script) as peer:
        end = serve(bot, peer.settings, give_up_after=5)
    assert (end.reason, end.message) == ("NO_MORE_GAMES", "that is all")
    assert bot.calls == ["on_game_start", "on_hand_start", "on_fault", "choose_play"]
    hello, decision = peer.received
    assert hello.hello.token == "a-token" and hello.hello.bot_name == "tester"
    assert hello.hello.protocol_version == PROTOCOL_VERSION
    assert not hello.hello.decide_forced_moves
    assert decision.decision.play_card.card == "2C"
    (fault,) = bot.faults
    assert fault.kind is FaultKind.TIMEOUT and fault.substitute == (Card.parse("2C"),)
    (view,) = bot.views
    assert view.hand == tuple(map(Card.parse, HAND)) and view.leading and view.first_trick
    assert (view.move_ms, view.bank_ms, view.deadline_ms) == (1000, 5000, 6000)
    logged = caplog.text
    assert "FAULT TIMEOUT in game g1" in logged
    assert f"kind {UNKNOWN_DECISION_KIND}" in logged


# ---- refusals and retries ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "code",
    [
        grpc.StatusCode.UNAUTHENTICATED,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.INVALID_ARGUMENT,
    ],
)
def test_a_refusal_is_final(code: grpc.StatusCode) -> None:
    async def script(n: int, stream: Stream) -> None:
        await peer.read(stream)
        await stream.abort(code, "go away\nand do not come back")

    with ScriptedPeer(script) as peer, pytest.raises(Refused) as refused:
        serve(Bot(), peer.settings, give_up_after=5)
    assert refused.value.code is code
    assert peer.streams == 1
    assert "go away and do not come back" in str(refused.value)
    assert "\n" not in str(refused.value)


def test_transient_failures_are_retried_then_the_session_plays() -> None:
    async def script(n: int, stream: Stream) -> None:
        await peer.read(stream)
        if n == 0:
            await stream.abort(grpc.StatusCode.UNAVAILABLE, "restarting")
        if n == 1:
            await stream.abort(grpc.StatusCode.INTERNAL, "oops")
        if n == 2:
            await stream.write(_restarting(50))
        if n == 3:
            await stream.write(bot_pb.PlayResponse(request=_play_request(7)))
            await peer.read(stream)
            await stream.write(_shutdown(bot_pb.SHUTDOWN_REASON_NO_MORE_GAMES))
        await peer.drain(stream)

    with ScriptedPeer(script) as peer:
        end = serve(Bot(), peer.settings, give_up_after=30)
    assert end.reason == "NO_MORE_GAMES"
    assert peer.streams == 4
    assert [m.WhichOneof("kind") for m in peer.received] == [
        "hello",
        "hello",
        "hello",
        "hello",
        "decision",
    ]


def test_a_reconnect_the_referee_asks_for_comes_no_sooner_than_it_said() -> None:
    # Shutdown.reconnect_after_ms is how long to wait: the SDK's spread only lengthens it (a
    # backoff of its own is spread both ways, so that many bots do not retry in lockstep).
    for draw in (0.0, 0.5, 0.999):
        assert 2.0 <= _reconnect_wait(2.0, 0.1, draw) < 2.0 * (1 + BACKOFF_JITTER)
    assert _reconnect_wait(None, 1.0, 0.0) == pytest.approx(1 - BACKOFF_JITTER)
    assert _reconnect_wait(None, 1.0, 0.999) == pytest.approx(1 + BACKOFF_JITTER, abs=1e-3)
    asked_ms = 400
    times: list[float] = []

    async def script(n: int, stream: Stream) -> None:
        await peer.read(stream)
        times.append(time.monotonic())
        if n == 0:
            await stream.write(_restarting(asked_ms))
        else:
            await stream.write(_shutdown(bot_pb.SHUTDOWN_REASON_NO_MORE_GAMES))
        await peer.drain(stream)

    with ScriptedPeer(script) as peer:
        end = serve(Bot(), peer.settings, give_up_after=30)
    assert end.reason == "NO_MORE_GAMES" and peer.streams == 2
    assert times[1] - times[0] >= asked_ms / 1000


def test_a_session_replaced_by_another_ends_without_reconnecting() -> None:
    async def script(n: int, stream: Stream) -> None:
        await peer.read(stream)
        await stream.write(_shutdown(bot_pb.SHUTDOWN_REASON_REPLACED_BY_NEW_SESSION))
        await peer.drain(stream)

    with ScriptedPeer(script) as peer:
        end = serve(Bot(), peer.settings, give_up_after=5)
    assert end.reason == "REPLACED_BY_NEW_SESSION" and peer.streams == 1


# ---- the process: exit codes ----------------------------------------------------------------


@pytest.fixture
def bot_env() -> Iterator[dict[str, str]]:
    """The environment for a sample-bot process, without any ARENA_* of the caller's."""
    yield {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}


def _one_decision_then_no_more_games(
    bot_env: dict[str, str], command: list[str]
) -> tuple[subprocess.CompletedProcess[str], ScriptedPeer]:
    """Run the bot ``command`` against a peer that asks one play, then has no more games."""

    async def script(n: int, stream: Stream) -> None:
        await peer.read(stream)
        await stream.write(bot_pb.PlayResponse(welcome=bot_pb.Welcome(session_id="s")))
        await stream.write(bot_pb.PlayResponse(request=_play_request(3)))
        await peer.read(stream)
        await stream.write(_shutdown(bot_pb.SHUTDOWN_REASON_NO_MORE_GAMES))
        await peer.drain(stream)

    with ScriptedPeer(script) as peer:
        bot_env.update(ARENA_ADDRESS=f"127.0.0.1:{peer.port}", ARENA_TOKEN="t", ARENA_BOT_NAME="h")
        done = subprocess.run(
            command,
            env=bot_env,
            capture_output=True,
            text=True,
            timeout=PROCESS_TIMEOUT_S,
            check=False,
        )
    return done, peer


def test_a_sample_bot_exits_0_when_there_are_no_more_games(bot_env: dict[str, str]) -> None:
    done, peer = _one_decision_then_no_more_games(
        bot_env, [sys.executable, str(ROOT / "sample_bots" / "heuristic.py")]
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert peer.received[-1].decision.play_card.card == "2C"


def test_a_version_refusal_exits_2_with_one_line(bot_env: dict[str, str]) -> None:
    async def script(n: int, stream: Stream) -> None:
        await peer.read(stream)
        await stream.abort(
            grpc.StatusCode.FAILED_PRECONDITION, "protocol version 1 is not spoken here: use 2"
        )

    with ScriptedPeer(script) as peer:
        bot_env.update(ARENA_ADDRESS=f"127.0.0.1:{peer.port}", ARENA_TOKEN="t", ARENA_BOT_NAME="l")
        done = subprocess.run(
            [sys.executable, str(ROOT / "sample_bots" / "lowcard.py")],
            env=bot_env,
            capture_output=True,
            text=True,
            timeout=PROCESS_TIMEOUT_S,
            check=False,
        )
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 1, lines
    assert "does not speak this protocol version" in lines[0]
    assert "FAILED_PRECONDITION" in lines[0] and "use 2" in lines[0]


LEFT_AT_EXIT = """
import atexit, gc, runpy, sys
import grpc

def left():
    # What the interpreter's finalization would have to free, alive or cyclic garbage.
    calls = {type(o).__name__ for o in gc.get_objects() if isinstance(o, (grpc.Channel, grpc.Call))}
    print("left at exit:", sorted(calls), flush=True)

atexit.register(left)
runpy.run_path(sys.argv[1], run_name="__main__")
"""


@pytest.mark.parametrize(
    ("status", "exit_code"),
    [(grpc.StatusCode.UNAUTHENTICATED, 2), (grpc.StatusCode.UNAVAILABLE, 1)],
    ids=["refused", "gave-up"],
)
def test_a_bot_ending_on_a_failed_call_leaves_no_grpc_object_to_the_interpreter(
    bot_env: dict[str, str], status: grpc.StatusCode, exit_code: int
) -> None:
    # gRPC's daemon threads stop wherever they are when finalization begins, holding what
    # they hold; a call freed after that may wait forever for its lock (a refused bot once
    # printed its line and never exited). So the SDK lets go of every call and channel first.
    async def script(n: int, stream: Stream) -> None:
        await peer.read(stream)
        await stream.abort(status, "no")

    with ScriptedPeer(script) as peer:
        bot_env.update(
            ARENA_ADDRESS=f"127.0.0.1:{peer.port}",
            ARENA_TOKEN="t",
            ARENA_BOT_NAME="l",
            ARENA_GIVE_UP_S="0",
        )
        done = subprocess.run(
            [sys.executable, "-c", LEFT_AT_EXIT, str(ROOT / "sample_bots" / "lowcard.py")],
            env=bot_env,
            capture_output=True,
            text=True,
            timeout=PROCESS_TIMEOUT_S,
            check=False,
        )
    assert done.returncode == exit_code, done.stderr
    assert done.stdout.splitlines() == ["left at exit: []"], done.stderr
    assert done.stderr.splitlines()[-1].startswith("arena.client: "), done.stderr


@pytest.mark.parametrize(
    ("sig", "code", "confirm"),
    [
        (signal.SIGTERM, 0, True),
        (signal.SIGTERM, 0, False),
        (signal.SIGINT, 130, True),
    ],
    ids=["sigterm", "sigterm-unanswered", "sigint"],
)
def test_a_stop_signal_says_goodbye_then_exits(
    bot_env: dict[str, str], sig: signal.Signals, code: int, confirm: bool
) -> None:
    connected = threading.Event()

    async def script(n: int, stream: Stream) -> None:
        await peer.read(stream)
        await stream.write(bot_pb.PlayResponse(welcome=bot_pb.Welcome(session_id="s")))
        connected.set()
        said = await peer.read(stream)
        if confirm and said is not None and said.HasField("goodbye"):
            # What the real referee answers (arena/referee/session.py).
            await stream.write(_shutdown(bot_pb.SHUTDOWN_REASON_GOODBYE, may_reconnect=True))
            return
        await peer.drain(stream)  # never confirms: the bot must hang up by itself

    with ScriptedPeer(script) as peer:
        bot_env.update(ARENA_ADDRESS=f"127.0.0.1:{peer.port}", ARENA_TOKEN="t", ARENA_BOT_NAME="h")
        proc = subprocess.Popen(
            [sys.executable, "-c", LEFT_AT_EXIT, str(ROOT / "sample_bots" / "heuristic.py")],
            env=bot_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert connected.wait(PROCESS_TIMEOUT_S), "the bot never connected"
            proc.send_signal(sig)
            stdout, stderr = proc.communicate(timeout=PROCESS_TIMEOUT_S)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == code, stderr
    assert stdout.splitlines() == ["left at exit: []"], stderr
    assert [m.WhichOneof("kind") for m in peer.received] == ["hello", "goodbye"]
    assert peer.received[-1].goodbye.reason == f"received {sig.name}"
    assert "Traceback" not in stderr
    if sig is signal.SIGTERM:
        assert stderr.splitlines()[-1].endswith("stopped by SIGTERM"), stderr
    else:
        assert stderr.splitlines()[-1] == "arena.client: interrupted", stderr


THINKER = """
import sys, time
from arena.client import Bot, run

class Thinker(Bot):
    def choose_play(self, view):
        print("thinking", file=sys.stderr, flush=True)
        time.sleep(600)  # a long search; a signal handler that returns lets it go on

run(Thinker())
"""

STUBBORN_THINKER = """
import sys, time
from arena.client import Bot, run

class Thinker(Bot):
    def choose_play(self, view):
        print("thinking", file=sys.stderr, flush=True)
        while True:
            try:
                time.sleep(600)
            except:  # a bare except, as bots have: it must not swallow a second Ctrl-C
                pass

run(Thinker())
"""


def _wait_for_line(path: Path, proc: subprocess.Popen[bytes], text: str) -> str:
    """The process's output in ``path`` once a line of it ends with ``text`` (or it exits)."""
    deadline = time.monotonic() + PROCESS_TIMEOUT_S
    while True:
        said = path.read_text()
        if any(line.endswith(text) for line in said.splitlines()) or proc.poll() is not None:
            return said
        assert time.monotonic() < deadline, said
        time.sleep(POLL_S)


@pytest.mark.parametrize("thinker", [THINKER, STUBBORN_THINKER], ids=["plain", "bare-except"])
def test_ctrl_c_during_a_decision_says_at_once_that_the_bot_stops_after_it(
    bot_env: dict[str, str], tmp_path: Path, thinker: str
) -> None:
    _ctrl_c_twice(bot_env, tmp_path, thinker, decisions=1)


C_THINKER = """
import os, sqlite3, sys
from arena.client import Bot, run

def wait_in_c(folder):
    # SQLite's busy handler sleeps and retries in C until the other connection's lock goes
    # (here never), without returning to Python, so Python runs no signal handler meanwhile:
    # the main thread of a bot in a long C call (a query, a C extension's computation).
    path = os.path.join(folder, "book.db")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    waiter = sqlite3.connect(path, timeout=600, isolation_level=None)
    print("thinking", file=sys.stderr, flush=True)
    waiter.execute("BEGIN EXCLUSIVE")

class Thinker(Bot):
    def choose_play(self, view):
        wait_in_c(sys.argv[1])

run(Thinker())
"""

ASYNC_THINKER = (
    C_THINKER.removesuffix("run(Thinker())\n")
    + """
import asyncio, signal

async def own_signal():
    # The bot's own asyncio signal handling: its loop takes Python's wakeup fd, and closing
    # the loop leaves none set.
    loop = asyncio.get_running_loop()
    got = loop.create_future()
    loop.add_signal_handler(signal.SIGUSR1, got.set_result, "SIGUSR1")
    os.kill(os.getpid(), signal.SIGUSR1)
    print("asyncio got", await got, file=sys.stderr, flush=True)

class AsyncFirst(Thinker):
    decisions = 0

    def choose_play(self, view):
        self.decisions += 1
        if self.decisions == 1:
            asyncio.run(own_signal())
            return Bot.choose_play(self, view)
        return super().choose_play(view)

run(AsyncFirst())
"""
)


def _ctrl_c_twice(
    bot_env: dict[str, str], tmp_path: Path, thinker: str, decisions: int
) -> tuple[str, ScriptedPeer]:
    """Run ``thinker`` until it thinks on decision number ``decisions``, then Ctrl-C it twice:
    its stderr once it has exited 130 (the peer has the first Ctrl-C's Goodbye by then)."""
    said_goodbye = threading.Event()

    async def script(n: int, stream: Stream) -> None:
        await peer.read(stream)
        await stream.write(bot_pb.PlayResponse(welcome=bot_pb.Welcome(session_id="s")))
        for rid in range(1, decisions + 1):
            await stream.write(bot_pb.PlayResponse(request=_play_request(rid)))
            said = await peer.read(stream)
            if said is not None and said.HasField("goodbye"):
                said_goodbye.set()
        await peer.drain(stream)

    bot = tmp_path / "thinker.py"
    bot.write_text(thinker)
    err = tmp_path / "stderr"
    with ScriptedPeer(script) as peer, err.open("wb") as out:
        bot_env.update(ARENA_ADDRESS=f"127.0.0.1:{peer.port}", ARENA_TOKEN="t", ARENA_BOT_NAME="h")
        proc = subprocess.Popen(
            [sys.executable, str(bot), str(tmp_path)],
            env=bot_env,
            stdin=subprocess.DEVNULL,
            stderr=out,
        )
        try:
            _wait_for_line(err, proc, "thinking")
            proc.send_signal(signal.SIGINT)
            said = _wait_for_line(err, proc, "again to quit now")
            assert said.splitlines()[-1] == (
                "arena.client: SIGINT: stopping after this decision; Ctrl-C again to quit now"
            )
            assert said_goodbye.wait(PROCESS_TIMEOUT_S), "no Goodbye at the first Ctrl-C"
            assert proc.poll() is None  # still thinking
            proc.send_signal(signal.SIGINT)
            try:
                code = proc.wait(PROCESS_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                raise AssertionError(
                    f"a second Ctrl-C did not stop it: {err.read_text()}"
                ) from None
            said = err.read_text()
            assert code == EXIT_INTERRUPTED, said
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    lines = said.splitlines()
    assert lines[-1] == "arena.client: interrupted", said
    assert sum("stopping after this decision" in line for line in lines) == 1, said
    assert sum(line.endswith("interrupted") for line in lines) == 1, said
    assert peer.received[-1].goodbye.reason == "received SIGINT"
    return said, peer


def test_ctrl_c_reaches_a_bot_that_waits_in_c_code(bot_env: dict[str, str], tmp_path: Path) -> None:
    # Python runs a signal's handler only between two bytecodes of the main thread: a bot in C
    # code heard nothing, neither the first Ctrl-C (no line, no Goodbye) nor the second.
    _ctrl_c_twice(bot_env, tmp_path, C_THINKER, decisions=1)


def test_ctrl_c_reaches_a_bot_in_c_code_after_the_bots_own_asyncio_signals(
    bot_env: dict[str, str], tmp_path: Path
) -> None:
    # The bot's asyncio loop takes Python's wakeup fd for its own signal handler, which works,
    # and leaves none set when it closes: the SDK takes it back at the next decision.
    said, peer = _ctrl_c_twice(bot_env, tmp_path, ASYNC_THINKER, decisions=2)
    assert "asyncio got SIGUSR1" in said.splitlines(), said
    assert peer.received[1].decision.play_card.card == "2C"


AFTER_RUN = """
import signal, socket, threading
from arena.client import Bot, run

# A wakeup fd of the program's own, set before run(): it must be given back.
own, theirs = socket.socketpair()
theirs.setblocking(False)
signal.set_wakeup_fd(theirs.fileno())
run(Bot())
print("wakeup fd given back:", signal.set_wakeup_fd(-1) == theirs.fileno())
print("threads left:", [t.name for t in threading.enumerate() if t.name.startswith("arena")])
"""


def test_run_gives_back_the_wakeup_fd_and_leaves_no_thread_behind(
    bot_env: dict[str, str],
) -> None:
    done, _ = _one_decision_then_no_more_games(bot_env, [sys.executable, "-c", AFTER_RUN])
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "wakeup fd given back: True",
        "threads left: []",
    ], done.stderr


# ---- settings ---------------------------------------------------------------------------------


@pytest.fixture
def arena_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """The three required ARENA_* variables set, every other one unset."""
    for var in [v for v in os.environ if v.startswith("ARENA_")]:
        monkeypatch.delenv(var)
    monkeypatch.setenv(ENV_ADDRESS, "127.0.0.1:1")
    monkeypatch.setenv(ENV_TOKEN, "t")
    monkeypatch.setenv(ENV_BOT_NAME, "b")
    return monkeypatch


def test_the_give_up_time_comes_from_the_argument_else_the_environment(
    arena_env: pytest.MonkeyPatch,
) -> None:
    assert ClientSettings.resolve().give_up_after == DEFAULT_GIVE_UP_S == 600
    arena_env.setenv(ENV_GIVE_UP, "2.5")
    assert ClientSettings.resolve().give_up_after == 2.5
    assert ClientSettings.resolve(give_up_after=7).give_up_after == 7
    arena_env.setenv(ENV_GIVE_UP, "inf")
    assert ClientSettings.resolve().give_up_after == math.inf


@pytest.mark.parametrize("text", ["soon", "-1", "nan", "10s"])
def test_a_bad_give_up_time_is_refused_naming_the_variable(
    arena_env: pytest.MonkeyPatch, text: str
) -> None:
    arena_env.setenv(ENV_GIVE_UP, text)
    with pytest.raises(ConfigError, match=f"ARENA_GIVE_UP_S .*{text!r}"):
        ClientSettings.resolve()


def test_a_tls_ca_that_is_not_a_certificate_is_refused_at_once(
    arena_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    arena_env.setenv("ARENA_TLS_CA", str(junk))
    with pytest.raises(ConfigError, match="is not a PEM file"):
        ClientSettings.resolve()
    junk.write_text("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
    with pytest.raises(ConfigError, match="holds no usable certificate"):
        ClientSettings.resolve()


def test_serve_takes_the_give_up_time_of_its_settings() -> None:
    async def script(n: int, stream: Stream) -> None:
        await peer.read(stream)
        await stream.abort(grpc.StatusCode.UNAVAILABLE, "not today")

    with ScriptedPeer(script) as peer:
        settings = dataclasses.replace(peer.settings, give_up_after=0)
        with pytest.raises(GaveUp, match="not today"):
            serve(Bot(), settings)
    # The give-up time counts from the first attempt: none is left to retry in (a second
    # attempt "in 0.0 s" was made when the count started at the first failure).
    assert peer.streams == 1


def test_a_missing_variable_is_named_with_what_it_holds(arena_env: pytest.MonkeyPatch) -> None:
    arena_env.delenv(ENV_TOKEN)
    with pytest.raises(ConfigError) as caught:
        ClientSettings.resolve()
    assert str(caught.value) == "set ARENA_TOKEN (or pass it to run()): the bot's token"
