"""The Python SDK facing a referee that misbehaves or is newer than the SDK.

A stand-in referee (:class:`test_client_protocol.ScriptedPeer`, a real grpc.aio server on
loopback) sends crafted messages; the bot is a real process (``sample_bots/lowcard.py``, or a
small bot written for the test that hooks every event). The bar: no traceback, one line saying
what the referee did wrong, play goes on where the protocol guide says it should, the documented
exit codes, and no reconnection storm.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from test_client_protocol import (
    PROCESS_TIMEOUT_S,
    ScriptedPeer,
    Stream,
    _events,
    _play_request,
)

from arena.client.remote import BACKOFF_JITTER
from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb
from arena.proto.hearts.v1 import events_pb2 as ev_pb

ROOT = Path(__file__).resolve().parent.parent
LOWCARD = str(ROOT / "sample_bots" / "lowcard.py")
POLL_S = 0.05
"""How often a test rereads a bot's stderr while it waits for lines."""
UNKNOWN_EVENT_FIELD = b"\xfa\x07\x02\x08\x01"
"""An Event holding only field 127 (a message with field 1 = 1): a kind from a newer protocol."""

HOOKED_BOT = """
from arena.client import Bot, run

class Hooked(Bot):
    # Every hook overridden, so that the SDK reads every event it is sent.
    def on_game_start(self, e): print("game_start", flush=True)
    def on_hand_start(self, e): print("hand_start", getattr(e.pass_direction, "name", None))
    def on_cards_dealt(self, e): print("cards_dealt", flush=True)
    def on_cards_received(self, e): print("cards_received", flush=True)
    def on_card_played(self, e): print("card_played", e.card, flush=True)
    def on_trick(self, e): print("trick", flush=True)
    def on_hand_end(self, e): print("hand_end", flush=True)
    def on_game_end(self, e): print("game_end", e.termination, flush=True)
    def on_fault(self, e): print("fault", flush=True)
    def on_seat_fault(self, e): print("seat_fault", flush=True)
    def on_time_warning(self, e): print("time_warning", flush=True)

run(Hooked())
"""


@pytest.fixture
def bot_env() -> Iterator[dict[str, str]]:
    """The environment for a bot process, without any ARENA_* of the caller's."""
    yield {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}


def _run_bot(
    peer: ScriptedPeer, env: dict[str, str], command: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = dict(env, ARENA_ADDRESS=f"127.0.0.1:{peer.port}", ARENA_TOKEN="t", ARENA_BOT_NAME="l")
    return subprocess.run(
        command or [sys.executable, LOWCARD],
        env=env,
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_S,
        check=False,
    )


def _welcome(**fields: object) -> bot_pb.PlayResponse:
    return bot_pb.PlayResponse(welcome=bot_pb.Welcome(session_id="s", **fields))  # type: ignore[arg-type]


def _no_more_games() -> bot_pb.PlayResponse:
    return bot_pb.PlayResponse(
        shutdown=bot_pb.Shutdown(reason=bot_pb.SHUTDOWN_REASON_NO_MORE_GAMES, message="done")
    )


# ---- Shutdown of each reason, a newer one included ---------------------------------------------


@pytest.mark.parametrize(
    ("reason", "exit_code", "says"),
    [
        (bot_pb.SHUTDOWN_REASON_NO_MORE_GAMES, 0, "(NO_MORE_GAMES): bye"),
        (bot_pb.SHUTDOWN_REASON_SERVER_SHUTDOWN, 0, "(SERVER_SHUTDOWN): bye"),
        (bot_pb.SHUTDOWN_REASON_KICKED, 1, "removed bot 'l': bye"),
        (bot_pb.SHUTDOWN_REASON_REPLACED_BY_NEW_SESSION, 0, "(REPLACED_BY_NEW_SESSION): bye"),
        (bot_pb.SHUTDOWN_REASON_GOODBYE, 0, "(GOODBYE): bye"),
        (bot_pb.SHUTDOWN_REASON_UNSPECIFIED, 0, "(UNSPECIFIED): bye"),
        (9, 0, "for a reason unknown to this SDK (9)"),
    ],
    ids=["no-more-games", "server-shutdown", "kicked", "replaced", "goodbye", "unset", "newer"],
)
def test_a_shutdown_of_any_reason_ends_the_bot_without_a_traceback(
    bot_env: dict[str, str], reason: int, exit_code: int, says: str
) -> None:
    async def script(n: int, stream: Stream) -> None:
        await peer.read(stream)
        await stream.write(_welcome())
        shutdown = bot_pb.Shutdown(reason=reason, message="bye")  # type: ignore[arg-type]
        await stream.write(bot_pb.PlayResponse(shutdown=shutdown))
        await peer.drain(stream)

    with ScriptedPeer(script) as peer:
        done = _run_bot(peer, bot_env)
    assert done.returncode == exit_code, done.stderr
    assert "Traceback" not in done.stderr
    assert says in done.stderr
    assert peer.streams == 1  # none of these, without may_reconnect, invites a reconnection


# ---- requests the SDK cannot answer; events it cannot read ------------------------------------


def _bad_requests() -> list[tuple[bot_pb.DecisionRequest, str]]:
    """Requests no bot can answer, each with what the bot's log must say of it."""
    empty = _play_request(1)
    del empty.hand[:]
    del empty.legal_cards[:]
    misspelt = _play_request(2)
    misspelt.legal_cards[:] = ["1X"]
    short_pass = _play_request(3, bot_pb.DECISION_KIND_PASS)
    short_pass.pass_count = 3
    short_pass.pass_direction = 2  # type: ignore[assignment]
    short_pass.hand[:] = ["2C", "3C"]
    short_pass.legal_cards[:] = ["2C", "3C"]
    newer_direction = _play_request(4)
    newer_direction.state.pass_direction = 9  # type: ignore[assignment]
    newer_direction.state.passed_to_seat = 9  # no seat of the table: nothing to read it from
    # Cards in hand but none legal: the empty list was taken for the whole hand, and answered.
    no_legal = _play_request(5)
    del no_legal.legal_cards[:]
    newer_kind = _play_request(6)
    newer_kind.kind = 3  # type: ignore[assignment]
    return [
        (empty, "request 1 offers no card to play"),
        (misspelt, "request 2 (cannot parse card '1X'"),
        (short_pass, "request 3 asks to pass 3 cards out of 2"),
        (newer_direction, "request 4 (pass direction 9 is not one this SDK knows)"),
        (no_legal, "request 5 offers no card to play"),
        # An ERROR, as the others (a WARNING went uncounted by `arena run`).
        (newer_kind, "a decision of kind 3, unknown to this SDK; not answering it"),
    ]


def test_a_request_that_cannot_be_answered_is_named_in_one_line_and_play_goes_on(
    bot_env: dict[str, str],
) -> None:
    bad = _bad_requests()

    async def script(n: int, stream: Stream) -> None:
        await peer.read(stream)
        await stream.write(_welcome())
        for request, _ in bad:
            await stream.write(bot_pb.PlayResponse(request=request))
        await stream.write(bot_pb.PlayResponse(request=_play_request(10)))
        await peer.read(stream)  # the answer to 10: the bad ones came before it, unanswered
        await stream.write(_no_more_games())
        await peer.drain(stream)

    with ScriptedPeer(script) as peer:
        done = _run_bot(peer, bot_env)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    answers = [m.decision for m in peer.received if m.HasField("decision")]
    assert [(a.request_id, a.play_card.card) for a in answers] == [(10, "2C")]
    errors = [line for line in done.stderr.splitlines() if " ERROR " in line]
    assert len(errors) == len(bad), errors
    for line, (_, says) in zip(errors, bad, strict=True):
        assert says in line and "not answering it" in line


NEWER_VIEW_BOT = """
from arena.client import Bot, lowest, run
from arena.rules import Rules

class Newer(Bot):
    def choose_play(self, view):
        print(view.pass_direction.name, view.rules == Rules(), flush=True)
        return lowest(view.legal)

run(Newer())
"""


def test_a_newer_rules_option_or_pass_direction_is_left_out_and_the_request_answered(
    bot_env: dict[str, str], tmp_path: Path
) -> None:
    # v1 may add rules options and enum values, which a bot must skip (the protocol guide):
    # the SDK left every such request unanswered, and the seat was forfeited.
    newer_option = _play_request(1)
    newer_option.state.rules.rules_json = '{"double_jack": true}'
    newer_value = _play_request(2)
    newer_value.state.rules.rules_json = '{"moon": "double", "double_jack": true}'
    newer_direction = _play_request(3)
    newer_direction.state.pass_direction = 9  # type: ignore[assignment]
    newer_direction.state.passed_to_seat = 2  # read from the seats: across at four

    async def script(n: int, stream: Stream) -> None:
        await peer.read(stream)
        await stream.write(_welcome())
        for request in (newer_option, newer_value, newer_direction):
            await stream.write(bot_pb.PlayResponse(request=request))
            await peer.read(stream)
        await stream.write(_no_more_games())
        await peer.drain(stream)

    bot = tmp_path / "newer.py"
    bot.write_text(NEWER_VIEW_BOT)
    with ScriptedPeer(script) as peer:
        done = _run_bot(peer, bot_env, [sys.executable, str(bot)])
    assert done.returncode == 0, done.stderr
    answers = [m.decision for m in peer.received if m.HasField("decision")]
    assert [(a.request_id, a.play_card.card) for a in answers] == [(1, "2C"), (2, "2C"), (3, "2C")]
    # The standard rules: the newer parts left out.
    assert done.stdout.split("\n")[:3] == ["HOLD True", "HOLD True", "ACROSS True"]
    warned = [line for line in done.stderr.splitlines() if " WARNING " in line]
    assert len(warned) == 2 and " ERROR " not in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert "options this SDK does not know or read (double_jack=True)" in warned[0]
    assert "a wrong value is the organiser's to mend" in warned[0]
    assert "(double_jack=True, moon='double')" in warned[1]


def test_events_newer_or_garbled_are_skipped_in_one_line_each_and_play_goes_on(
    bot_env: dict[str, str], tmp_path: Path
) -> None:
    newer = ev_pb.Event()
    newer.MergeFromString(UNKNOWN_EVENT_FIELD)
    events = [
        *_events()[:1],
        newer,
        ev_pb.Event(hand_started=ev_pb.HandStarted(hand_number=0, dealer=3, pass_direction=9)),  # type: ignore[arg-type]
        ev_pb.Event(card_played=ev_pb.CardPlayed(seat=1, card="ZZ")),
        ev_pb.Event(card_played=ev_pb.CardPlayed(seat=1, card="3C")),
        ev_pb.Event(game_ended=ev_pb.GameEnded(game_id="g1", termination=42)),  # type: ignore[arg-type]
    ]

    async def script(n: int, stream: Stream) -> None:
        await peer.read(stream)
        await stream.write(_welcome())
        await stream.write(bot_pb.PlayResponse(events=events, request=_play_request(7)))
        await peer.read(stream)
        await stream.write(_no_more_games())
        await peer.drain(stream)

    bot = tmp_path / "hooked.py"
    bot.write_text(HOOKED_BOT)
    with ScriptedPeer(script) as peer:
        done = _run_bot(peer, bot_env, [sys.executable, str(bot)])
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    # The readable events reach their hooks in order; the newer kind is skipped in silence, and
    # a newer pass direction is None (the hook was skipped, with an ERROR line, every hand).
    assert done.stdout.split("\n")[:4] == [
        "game_start",
        "hand_start None",
        "card_played 3C",
        "game_end None",
    ]
    errors = [line for line in done.stderr.splitlines() if " ERROR " in line]
    assert len(errors) == 1, errors
    assert "card_played event (cannot parse card 'ZZ'" in errors[0]
    assert peer.received[-1].decision.request_id == 7


def test_a_welcome_in_another_protocol_version_is_warned_of_and_play_goes_on(
    bot_env: dict[str, str],
) -> None:
    async def script(n: int, stream: Stream) -> None:
        await peer.read(stream)
        await stream.write(_welcome(protocol_version=2))
        await stream.write(bot_pb.PlayResponse(request=_play_request(3)))
        await peer.read(stream)
        await stream.write(_no_more_games())
        await peer.drain(stream)

    with ScriptedPeer(script) as peer:
        done = _run_bot(peer, bot_env)
    assert done.returncode == 0, done.stderr
    assert "protocol version 2 on this session, but this SDK asked for 1" in done.stderr
    assert peer.received[-1].decision.play_card.card == "2C"


# ---- streams that end right after their welcome ------------------------------------------------


@pytest.mark.parametrize(
    ("code", "exit_code"),
    [(grpc.StatusCode.UNAUTHENTICATED, 2), (grpc.StatusCode.PERMISSION_DENIED, 2)],
)
def test_a_refusal_after_the_welcome_exits_2_with_one_line(
    bot_env: dict[str, str], code: grpc.StatusCode, exit_code: int
) -> None:
    async def script(n: int, stream: Stream) -> None:
        await peer.read(stream)
        await stream.write(_welcome())
        await stream.abort(code, "token revoked\njust now")

    with ScriptedPeer(script) as peer:
        done = _run_bot(peer, bot_env)
    assert done.returncode == exit_code
    assert "Traceback" not in done.stderr
    (last,) = [line for line in done.stderr.splitlines() if line.startswith("arena.client:")]
    assert code.name in last and "token revoked just now" in last


WAITS_SEEN = 4
"""Reconnections to watch before stopping the bot: enough for the backoff to have doubled."""
TOO_BIG = 5 << 20
"""A game id longer than the SDK's receive limit (4 MiB)."""


def _waits(text: str) -> list[float]:
    """The waits announced by the bot's log lines ("retrying in 0.2 s", "reconnecting in ...")."""
    words = text.split()
    return [
        float(words[i + 2])
        for i, word in enumerate(words[:-2])
        if word.endswith("ing") and words[i + 1] == "in"
    ]


@pytest.mark.parametrize(
    "failure",
    ["INTERNAL", "RESOURCE_EXHAUSTED", "UNAVAILABLE", "too-big", "restart-at-once"],
)
def test_a_referee_that_ends_each_session_as_it_welcomes_is_retried_with_growing_waits(
    bot_env: dict[str, str], tmp_path: Path, failure: str
) -> None:
    async def script(n: int, stream: Stream) -> None:
        await peer.read(stream)
        await stream.write(_welcome())
        if failure == "too-big":
            request = _play_request(1)
            request.game_id = "x" * TOO_BIG
            await stream.write(bot_pb.PlayResponse(request=request))
        elif failure == "restart-at-once":
            shutdown = bot_pb.Shutdown(
                reason=bot_pb.SHUTDOWN_REASON_SERVER_SHUTDOWN, may_reconnect=True
            )
            await stream.write(bot_pb.PlayResponse(shutdown=shutdown))
        else:
            await stream.abort(getattr(grpc.StatusCode, failure), "broken again")
        await peer.drain(stream)

    log = tmp_path / "bot.log"
    env = dict(bot_env, ARENA_TOKEN="t", ARENA_BOT_NAME="l", ARENA_GIVE_UP_S="inf")
    with ScriptedPeer(script) as peer, log.open("w") as err:
        env["ARENA_ADDRESS"] = f"127.0.0.1:{peer.port}"
        bot = subprocess.Popen([sys.executable, LOWCARD], env=env, stderr=err)
        try:
            deadline = time.monotonic() + PROCESS_TIMEOUT_S
            while len(_waits(log.read_text())) < WAITS_SEEN and time.monotonic() < deadline:
                time.sleep(POLL_S)
            bot.send_signal(signal.SIGTERM)
            code = bot.wait(PROCESS_TIMEOUT_S)
        finally:
            if bot.poll() is None:
                bot.kill()
                bot.wait()
    text = log.read_text()
    assert code == 0, text
    assert "Traceback" not in text
    waits = _waits(text)
    assert len(waits) >= WAITS_SEEN, text
    # Doubled each time, so longer whatever the jitter (2 * 0.8 > 1.2): it was 0.1 s for ever,
    # ten reconnections a second.
    assert 2 * (1 - BACKOFF_JITTER) > 1 + BACKOFF_JITTER
    assert waits[:WAITS_SEEN] == sorted(set(waits[:WAITS_SEEN])), waits
    if failure == "too-big":
        assert "the referee sent a message larger than this SDK accepts (4194304 bytes)" in text


# ---- a referee that falls silent: its machine gone, no FIN, no reset --------------------------

QUICK_KEEPALIVE = """
import runpy, sys
from arena.client import remote

# Pings a second apart, so that the test need not wait the 30 s of the real settings.
remote.KEEPALIVE_TIME_MS = remote.KEEPALIVE_TIMEOUT_MS = 1000
runpy.run_path(sys.argv[1], run_name="__main__")
"""


class FreezingProxy:
    """A TCP relay to ``port`` whose connections can be frozen: open, but carrying nothing more,
    as a connection looks to a bot whose referee vanished. Later connections relay again."""

    def __init__(self, port: int) -> None:
        self.upstream = port
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.server.getsockname()[1]
        self.stop = threading.Event()
        self.frozen: list[socket.socket] = []
        self.sockets: list[socket.socket] = []
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def freeze(self) -> None:
        """Relay nothing more on the connections open now."""
        self.frozen.extend(self.sockets)

    def _accept(self) -> None:
        self.server.settimeout(POLL_S)
        while not self.stop.is_set():
            try:
                near, _ = self.server.accept()
            except TimeoutError:
                continue
            far = socket.create_connection(("127.0.0.1", self.upstream))
            self.sockets += [near, far]
            for a, b in ((near, far), (far, near)):
                thread = threading.Thread(target=self._pump, args=(a, b), daemon=True)
                self.threads.append(thread)
                thread.start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        while not self.stop.is_set():
            if source in self.frozen or not select.select([source], [], [], POLL_S)[0]:
                time.sleep(POLL_S)
                continue
            try:
                data = source.recv(65536)
                if not data:
                    sink.shutdown(socket.SHUT_WR)
                    return
                sink.sendall(data)
            except OSError:
                return

    def close(self) -> None:
        """Stop relaying and close every socket."""
        self.stop.set()
        for thread in self.threads:
            thread.join()
        for sock in (self.server, *self.sockets):
            sock.close()


def test_a_referee_fallen_silent_is_noticed_by_keepalive_and_the_bot_reconnects(
    bot_env: dict[str, str], tmp_path: Path
) -> None:
    welcomed = threading.Event()

    async def script(n: int, stream: Stream) -> None:
        await peer.read(stream)
        await stream.write(_welcome())
        if n == 0:
            welcomed.set()  # the test freezes the connection now: nothing more gets through
        else:
            await stream.write(_no_more_games())
        await peer.drain(stream)

    wrapper = tmp_path / "quick_keepalive.py"
    wrapper.write_text(QUICK_KEEPALIVE)
    with ScriptedPeer(script) as peer:
        proxy = FreezingProxy(peer.port)
        try:
            env = dict(bot_env, ARENA_ADDRESS=f"127.0.0.1:{proxy.port}", ARENA_TOKEN="t")
            env["ARENA_BOT_NAME"] = "l"
            bot = subprocess.Popen(
                [sys.executable, str(wrapper), LOWCARD],
                env=env,
                stderr=subprocess.PIPE,
                text=True,
            )
            try:
                assert welcomed.wait(PROCESS_TIMEOUT_S)
                # Frozen once the bot has read its Welcome, not once the peer has sent it: on a
                # loaded host the Welcome was still in the proxy, and the bot never saw it.
                assert bot.stderr is not None
                seen = []
                for line in bot.stderr:
                    seen.append(line)
                    if " connected to " in line:
                        break
                proxy.freeze()
                _, rest = bot.communicate(timeout=PROCESS_TIMEOUT_S)
                err = "".join(seen) + rest
            finally:
                if bot.poll() is None:
                    bot.kill()
                    bot.communicate()
        finally:
            proxy.close()
    # It waited on the silent stream for ever: no ping of its own, nothing to notice the loss.
    assert bot.returncode == 0, err
    assert "Traceback" not in err
    assert "lost the connection" in err
    assert peer.streams == 2
