"""What the referee takes from a bot's answers, and what a faulting bot is told.

A bot seated with three well-behaved ones answers in a way of its own (a real process, or a raw
gRPC client on a thread): cards spelled in every way the protocol allows, or wrongly on purpose,
in which case what it received is read back and each FaultNotice is checked against the
DecisionRequest it concerns.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from conftest import BotProcesses, recorded_messages

from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb
from arena.proto.hearts.v1 import events_pb2 as ev_pb
from arena.referee import RefereeThread, TokenAccounts
from arena.rules import Rules
from arena.table import Clocks, FaultKind, GameRecord, TableSpec, Termination

RESULT_S = 120.0
SHORT = Clocks(move_ms=300, bank_ms=300, handshake_ms=30_000)
GOOD = ("n1", "n2", "n3")
GUIDE = Path(__file__).resolve().parent.parent / "proto" / "hearts" / "v1" / "README.md"
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

    A notice rides with the next message after its fault (or, when the request outlives the
    fault, comes at once on its own), so the request it concerns is the one received before the
    message that carries it.
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
    return recorded_messages(log, RESULT_S)


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
        assert notice.message.endswith(
            f"the open request is {open_id}: answer each DecisionRequest once, echoing its "
            "request_id"
        ), notice.message


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
        # What the bot sent, described: your_answer is empty only for a timeout or a disconnect.
        assert notice.your_answer == "a second Hello"


Answers = Callable[[bot_pb.DecisionRequest], list[bot_pb.PlayRequest | bytes]]
"""A scripted bot's answers to one request (sent in order)."""


def _serialize(message: bot_pb.PlayRequest | bytes) -> bytes:
    """A scripted answer on the wire: a PlayRequest serialised, or raw bytes as they are."""
    return message if isinstance(message, bytes) else message.SerializeToString()


class ScriptedBot:
    """A raw gRPC client on a thread of its own, answering each request as ``answers`` says."""

    def __init__(
        self,
        address: str,
        token: str,
        name: str,
        answers: Answers,
        on_notice: Callable[[ev_pb.FaultNotice], list[bot_pb.PlayRequest]] | None = None,
    ) -> None:
        self.received: list[bot_pb.PlayResponse] = []
        self._answers = answers
        self._on_notice = on_notice
        self._outbox: queue.Queue[bot_pb.PlayRequest | bytes | None] = queue.Queue()
        self._outbox.put(
            bot_pb.PlayRequest(hello=bot_pb.Hello(bot_name=name, token=token, protocol_version=1))
        )
        self._channel = grpc.insecure_channel(address)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _requests(self) -> Iterator[bot_pb.PlayRequest | bytes]:
        while (message := self._outbox.get()) is not None:
            yield message

    def _run(self) -> None:
        play = self._channel.stream_stream(
            "/hearts.v1.BotService/Play",
            request_serializer=_serialize,
            response_deserializer=bot_pb.PlayResponse.FromString,
        )
        try:
            for response in play(self._requests()):
                self.received.append(response)
                if self._on_notice is not None:
                    for event in response.events:
                        if event.HasField("fault_notice"):
                            for told in self._on_notice(event.fault_notice):
                                self._outbox.put(told)
                if response.HasField("request"):
                    for answer in self._answers(response.request):
                        self._outbox.put(answer)
                if response.HasField("shutdown"):
                    break
        except grpc.RpcError:
            pass
        finally:
            self._outbox.put(None)

    def game_over(self) -> list[bot_pb.PlayResponse]:
        """What it received, once that includes the end of its game (the referee's record can
        be back before the bot has read its last message)."""
        deadline = time.monotonic() + RESULT_S
        while not any(e.HasField("game_ended") for m in list(self.received) for e in m.events):
            assert time.monotonic() < deadline, "the bot never got the end of its game"
            time.sleep(0.01)
        return list(self.received)

    def close(self) -> None:
        """Stop and wait for the thread (the referee has ended the stream, or it is cut here)."""
        self._outbox.put(None)
        self._channel.close()
        self._thread.join(RESULT_S)


def _first_legal(
    request: bot_pb.DecisionRequest, spell: Callable[[str], str] = str
) -> bot_pb.PlayRequest:
    """The first legal card (or cards, for a pass), each written as ``spell`` says."""
    decision = bot_pb.Decision(request_id=request.request_id)
    if request.kind == bot_pb.DECISION_KIND_PASS:
        chosen = list(request.legal_cards)[: request.pass_count]
        decision.pass_cards.cards.extend([spell(c) for c in chosen])
    else:
        decision.play_card.card = spell(request.legal_cards[0])
    return bot_pb.PlayRequest(decision=decision)


def _scripted_game(
    referee: RefereeThread,
    bots: BotProcesses,
    name: str,
    answers: Answers,
    on_notice: Callable[[ev_pb.FaultNotice], list[bot_pb.PlayRequest]] | None = None,
) -> tuple[GameRecord, list[bot_pb.PlayResponse]]:
    """A game of three good bots and a :class:`ScriptedBot` in seat 0: the record and what the
    scripted bot received."""
    for good in GOOD:
        bots.start(good)
    scripted = ScriptedBot(bots.address, bots.token(name), name, answers, on_notice)
    try:
        bots.ready(*GOOD, name)
        record = play_with(referee, name, name)
        return record, scripted.game_over()
    finally:
        scripted.close()


def test_a_second_answer_between_requests_is_told_with_no_request_open(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses
) -> None:
    record, received = _scripted_game(referee[0], bots, "twice", lambda r: [_first_legal(r)] * 2)
    # Forfeited by faults found between requests, the seat is the fallback's (this once broke
    # the compiled table with a TypeError).
    assert record.seat_status[0].is_forfeit
    # A second answer is read between requests, unless this bot's threads were slow enough
    # for the next request to be open by then (a loaded machine): either way it is told.
    kinds = {f.kind for f in record.faults_of(0)}
    assert kinds <= {FaultKind.PROTOCOL, FaultKind.WRONG_REQUEST_ID}
    told = notices(received)
    assert len(told) == len(record.faults_of(0))
    for last, notice in told:
        if notice.kind == ev_pb.FAULT_KIND_PROTOCOL:
            # No request was open when it arrived: 0, and the id it carried is in the words.
            assert notice.request_id == 0
            assert f"(request {last})" in notice.your_answer
            assert "arrived with no request open" in notice.message
            assert f"(request {last})" in notice.message
        else:
            assert notice.request_id == last
            assert f"the open request is {last}" in notice.message


def test_a_wrong_request_id_is_told_in_time_to_answer_the_request_still_open(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses
) -> None:
    # The notice rode with the next message: the timeout of the very request it said was still
    # open. A bot that waits for it, to answer right, got two faults for one mistake.
    asked: dict[int, bot_pb.DecisionRequest] = {}
    wrong = [2]  # plays answered with a wrong id, fewer than the faults allowed

    def answers(request: bot_pb.DecisionRequest) -> list[bot_pb.PlayRequest | bytes]:
        asked[request.request_id] = request
        answer = _first_legal(request)
        if request.kind == bot_pb.DECISION_KIND_PLAY and wrong[0] > 0:
            wrong[0] -= 1
            answer.decision.request_id += WRONG_ID_OFFSET  # then waits to be told
        return [answer]

    def on_notice(notice: ev_pb.FaultNotice) -> list[bot_pb.PlayRequest]:
        if notice.kind != ev_pb.FAULT_KIND_WRONG_REQUEST_ID:
            return []
        return [_first_legal(asked[notice.request_id])]

    record, received = _scripted_game(referee[0], bots, "corrects", answers, on_notice)
    faults = record.faults_of(0)
    assert [f.kind for f in faults] == [FaultKind.WRONG_REQUEST_ID] * 2, faults
    assert not record.late
    told = notices(received)
    assert [n.kind for _, n in told] == [ev_pb.FAULT_KIND_WRONG_REQUEST_ID] * 2
    for last, notice in told:
        assert notice.request_id == last and notice.substitute_cards == []


def test_a_hello_between_requests_is_named_in_the_notice(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses
) -> None:
    hello = bot_pb.PlayRequest(hello=bot_pb.Hello(bot_name="again", token="", protocol_version=1))
    record, received = _scripted_game(referee[0], bots, "again", lambda r: [_first_legal(r), hello])
    told = notices(received)
    assert told and len(told) == len(record.faults_of(0))
    # Read between requests (the usual case), the Hello was recorded as "a message"; read while
    # the next request was open, it was already named.
    for _, notice in told:
        assert notice.kind == ev_pb.FAULT_KIND_PROTOCOL
        assert notice.your_answer == "a second Hello"
        assert "a second Hello" in notice.message


def test_a_second_hello_before_the_game_is_dropped_and_logged(
    referee: tuple[RefereeThread, TokenAccounts],
    bots: BotProcesses,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Sent in the lobby, it was dropped as the bot sat down, with no word anywhere.
    caplog.set_level(logging.INFO, logger="arena.referee")
    for good in GOOD:
        bots.start(good)
    name = "eager"
    hello = bot_pb.PlayRequest(hello=bot_pb.Hello(bot_name=name, token="", protocol_version=1))
    scripted = ScriptedBot(bots.address, bots.token(name), name, lambda r: [_first_legal(r)])
    try:
        scripted._outbox.put(hello)  # right behind its first Hello: it waits in the lobby
        bots.ready(*GOOD, name)
        record = play_with(referee[0], name, name)
        scripted.game_over()
    finally:
        scripted.close()
    assert not record.faults  # a fault belongs to a game: this one came before it
    lines = [r.getMessage() for r in caplog.records]
    assert f"table {name} seat 0 ({name}): dropped a second Hello sent before it sat down" in lines


GARBAGE = b"\xff\xfe\x00garbage, not a PlayRequest\x07"
"""The raw bot's garbage (tests/bots/raw_bot.py is a script, so its constants are copied, as
WRONG_ID_OFFSET is)."""


def test_garbage_between_requests_is_told_as_malformed(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses
) -> None:
    record, received = _scripted_game(
        referee[0], bots, "garbler", lambda r: [_first_legal(r), GARBAGE]
    )
    told = notices(received)
    assert told and len(told) == len(record.faults_of(0))
    # Read between requests (the usual case), the bytes were a PROTOCOL fault blamed on "a
    # second answer"; read while the next request is open, they are that request's malformed
    # answer, and the bot's own answer to it, arriving after, answers no open request.
    malformed = [n for _, n in told if n.kind == ev_pb.FAULT_KIND_MALFORMED]
    assert malformed
    for notice in malformed:
        assert notice.your_answer == f"{len(GARBAGE)} undecodable bytes"
        assert "not a PlayRequest" in notice.message
        assert "a second answer" not in notice.message
    for _, notice in told:
        if notice.kind == ev_pb.FAULT_KIND_PROTOCOL:
            assert "arrived with no request open" in notice.message
        elif notice.kind == ev_pb.FAULT_KIND_WRONG_REQUEST_ID:
            # That own answer, when this bot's threads are slow (a loaded machine), comes once
            # the seat's next request is open: the open request is named, it stays open.
            assert "but the open request is" in notice.message
            assert notice.substitute_cards == []
        else:
            assert notice.kind == ev_pb.FAULT_KIND_MALFORMED


def _spellings(code: str) -> list[str]:
    """Every other spelling of a card code that the .proto and the guide list."""
    rank, suit = code[0], code[1]
    out = [code.lower(), rank + suit.lower(), rank.lower() + suit, f" {code}", f"\t{code}\r\n"]
    if rank == "T":
        out += ["10" + suit, "10" + suit.lower()]
    return out


def test_every_spelling_the_guide_lists_is_taken(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses
) -> None:
    # The guide and the .proto say which spellings besides the referee's own a bot may send:
    # a bot that uses each of them in turn plays a whole game without a fault.
    texts = " ".join(GUIDE.read_text().split())
    for listed in ('"qs"', '"Qs"', '"th"', '"10H"', '"10h"', "spaces, tabs or line breaks"):
        assert listed in texts
    used: list[str] = []

    def spell(code: str) -> str:
        options = _spellings(code)
        used.append(options[len(used) % len(options)])
        return used[-1]

    for name in GOOD:
        bots.start(name)
    bot = ScriptedBot(
        bots.address, bots.token("spell"), "spell", lambda r: [_first_legal(r, spell)]
    )
    try:
        bots.ready(*GOOD, "spell")
        record = play_with(referee[0], "spell", "spell")
    finally:
        bot.close()
    assert record.faults_of(0) == ()
    assert not any(d.fallback for d in record.decisions if d.seat == 0)
    assert {u for u in used if u.strip() != u} and {u for u in used if u.islower()}


def test_a_spelling_the_guide_does_not_list_is_not_a_card(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses
) -> None:
    # A no-break space around the code is not among the spellings (the engine's Card.parse
    # would take it, as any Unicode space): what a bot may send is only what is documented.
    for name in GOOD:
        bots.start(name)
    bot = ScriptedBot(
        bots.address,
        bots.token("nbsp"),
        "nbsp",
        lambda r: [_first_legal(r, lambda c: f"\u00a0{c}")],
    )
    try:
        bots.ready(*GOOD, "nbsp")
        record = play_with(referee[0], "nbsp", "nbsp")
    finally:
        bot.close()
    faults = record.faults_of(0)
    assert faults and {f.kind for f in faults} == {FaultKind.MALFORMED}
    assert any("is not a card: expected rank then suit" in f.detail for f in faults)
