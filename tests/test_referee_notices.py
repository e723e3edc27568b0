"""What a faulting bot is told: the FaultNotice names the request the fault concerns.

A bot seated with three well-behaved ones answers wrongly on purpose (a real process, or a raw
gRPC client on a thread); what it received is read back and each FaultNotice is checked against
the DecisionRequest it concerns.
"""

from __future__ import annotations

import base64
import queue
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
from conftest import BotProcesses

from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb
from arena.proto.hearts.v1 import events_pb2 as ev_pb
from arena.referee import RefereeThread, TokenAccounts
from arena.rules import Rules
from arena.table import Clocks, FaultKind, GameRecord, TableSpec, Termination

RESULT_S = 120.0
SHORT = Clocks(move_ms=300, bank_ms=300, handshake_ms=30_000)
GOOD = ("n1", "n2", "n3")
WRONG_ID_OFFSET = 1_000_000
"""What tests/bots/raw_bot.py's wrongid mode adds to the request id it echoes."""


def play_with(referee: RefereeThread, bad: str, table_id: str) -> GameRecord:
    """One game of ``bad`` (seat 0) with the good bots (already in the lobby), played out."""
    spec = TableSpec(table_id, Rules(), 7, (bad, *GOOD), "7", clocks=SHORT)
    record = referee.submit(spec).result(RESULT_S)
    assert record.termination is Termination.NORMAL, record.reason
    assert all(h.complete for h in record.hands)
    return record


def notices(messages: list[bot_pb.PlayResponse]) -> list[tuple[int, ev_pb.FaultNotice]]:
    """Each FaultNotice received, with the id of the last request received before it (0: none).

    A notice rides with the next message after its fault, so the request it concerns is the
    one received before the message that carries it.
    """
    out = []
    last = 0
    for message in messages:
        for event in message.events:
            if event.HasField("fault_notice"):
                out.append((last, event.fault_notice))
        if message.HasField("request"):
            last = message.request.request_id
    return out


def recorded(log: Path) -> list[bot_pb.PlayResponse]:
    """What a raw_bot.py run with --record received, up to the end of its game (which it may
    still be writing down when the referee's record is already back)."""
    deadline = time.monotonic() + RESULT_S
    while True:
        text = log.read_text() if log.exists() else ""
        messages = [bot_pb.PlayResponse.FromString(base64.b64decode(x)) for x in text.split()]
        if any(e.HasField("game_ended") for m in messages for e in m.events):
            return messages
        assert time.monotonic() < deadline, "the bot never got the end of its game"
        time.sleep(0.01)


def test_a_wrong_request_id_notice_names_the_request_still_open(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses, tmp_path: Path
) -> None:
    log = tmp_path / "wrongid.b64"
    for name in GOOD:
        bots.start(name)
    bots.start("wrongid", "wrongid", f"--record={log}")
    bots.ready(*GOOD, "wrongid")
    play_with(referee[0], "wrongid", "wrongid")
    wrong = [
        (open_id, n)
        for open_id, n in notices(recorded(log))
        if n.kind == ev_pb.FAULT_KIND_WRONG_REQUEST_ID
    ]
    assert wrong
    for open_id, notice in wrong:
        # The request the bot should have answered (still open), not 0; the id it sent instead
        # is in the words.
        assert open_id != 0 and notice.request_id == open_id
        sent = f"request {open_id + WRONG_ID_OFFSET}"
        assert sent in notice.your_answer and sent in notice.message
        assert f"the open request is {open_id}" in notice.message


def test_a_second_hello_notice_names_the_request_still_open(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses, tmp_path: Path
) -> None:
    # The muddled bot's third play answer is a second Hello (then the right answer).
    log = tmp_path / "muddled.b64"
    for name in GOOD:
        bots.start(name)
    bots.start("muddled", "muddled", "--decide-forced", f"--record={log}")
    bots.ready(*GOOD, "muddled")
    play_with(referee[0], "muddled", "muddled")
    hellos = [
        (open_id, n)
        for open_id, n in notices(recorded(log))
        if n.message.startswith("a second Hello arrived")
    ]
    assert hellos
    for open_id, notice in hellos:
        assert notice.kind == ev_pb.FAULT_KIND_PROTOCOL
        assert open_id != 0 and notice.request_id == open_id
        assert notice.substitute_cards == []  # the request stayed open


class TwiceBot:
    """A raw gRPC client that answers every request twice, on a thread of its own."""

    def __init__(self, address: str, token: str) -> None:
        self.received: list[bot_pb.PlayResponse] = []
        self._outbox: queue.Queue[bot_pb.PlayRequest | None] = queue.Queue()
        self._outbox.put(
            bot_pb.PlayRequest(
                hello=bot_pb.Hello(bot_name="twice", token=token, protocol_version=1)
            )
        )
        self._channel = grpc.insecure_channel(address)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _requests(self) -> Iterator[bot_pb.PlayRequest]:
        while (message := self._outbox.get()) is not None:
            yield message

    def _run(self) -> None:
        play = self._channel.stream_stream(
            "/hearts.v1.BotService/Play",
            request_serializer=bot_pb.PlayRequest.SerializeToString,
            response_deserializer=bot_pb.PlayResponse.FromString,
        )
        try:
            for response in play(self._requests()):
                self.received.append(response)
                if response.HasField("request"):
                    answer = _first_legal(response.request)
                    self._outbox.put(answer)
                    self._outbox.put(answer)
                if response.HasField("shutdown"):
                    break
        except grpc.RpcError:
            pass
        finally:
            self._outbox.put(None)

    def close(self) -> None:
        """Stop and wait for the thread (the referee has ended the stream, or it is cut here)."""
        self._outbox.put(None)
        self._channel.close()
        self._thread.join(RESULT_S)


def _first_legal(request: bot_pb.DecisionRequest) -> bot_pb.PlayRequest:
    decision = bot_pb.Decision(request_id=request.request_id)
    if request.kind == bot_pb.DECISION_KIND_PASS:
        decision.pass_cards.cards.extend(list(request.legal_cards)[: request.pass_count])
    else:
        decision.play_card.card = request.legal_cards[0]
    return bot_pb.PlayRequest(decision=decision)


def test_a_second_answer_between_requests_is_told_with_no_request_open(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses
) -> None:
    for name in GOOD:
        bots.start(name)
    twice = TwiceBot(bots.address, bots.token("twice"))
    try:
        bots.ready(*GOOD, "twice")
        record = play_with(referee[0], "twice", "twice")
        received = list(twice.received)
    finally:
        twice.close()
    # Forfeited by faults found between requests, the seat is the fallback's (this once broke
    # the compiled table with a TypeError).
    assert {f.kind for f in record.faults_of(0)} == {FaultKind.PROTOCOL}
    assert record.seat_status[0].is_forfeit
    strays = [(last, n) for last, n in notices(received) if n.kind == ev_pb.FAULT_KIND_PROTOCOL]
    assert strays
    for answered, notice in strays:
        # No request was open when it arrived: 0, and the id it carried is in the words.
        assert notice.request_id == 0
        assert f"(request {answered})" in notice.your_answer
        assert "arrived with no request open" in notice.message
        assert f"(request {answered})" in notice.message
