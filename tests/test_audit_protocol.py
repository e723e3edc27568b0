"""Audit of the referee against the protocol guide (proto/hearts/v1/README.md), from a raw gRPC
bot's side: the generated stubs only, no arena.client. A real referee on 127.0.0.1 port 0."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import grpc

from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb
from arena.proto.hearts.v1 import events_pb2 as ev_pb
from arena.proto.hearts.v1 import game_pb2
from arena.referee import RefereeConfig, RefereeThread
from arena.rules import Rules
from arena.table import Clocks, FaultPolicy, GameRecord, TableSpec

SEATS = ("north", "east", "south", "west")
WAIT_S = 60.0

Policy = Callable[[bot_pb.DecisionRequest], list[bot_pb.PlayRequest]]


def _answer(request: bot_pb.DecisionRequest) -> list[bot_pb.PlayRequest]:
    """The first legal card, or the first pass_count cards."""
    if request.kind == bot_pb.DECISION_KIND_PASS:
        cards = list(request.legal_cards[: request.pass_count])
        choice = bot_pb.Decision(
            request_id=request.request_id, pass_cards=bot_pb.PassCards(cards=cards)
        )
    else:
        choice = bot_pb.Decision(
            request_id=request.request_id, play_card=bot_pb.PlayCard(card=request.legal_cards[0])
        )
    return [bot_pb.PlayRequest(decision=choice)]


def _pass(request: bot_pb.DecisionRequest, cards: Sequence[str]) -> list[bot_pb.PlayRequest]:
    decision = bot_pb.Decision(
        request_id=request.request_id, pass_cards=bot_pb.PassCards(cards=list(cards))
    )
    return [bot_pb.PlayRequest(decision=decision)]


@dataclass
class RawBot:
    """One Play stream, answered by ``policy`` from the stream's reader thread."""

    port: int
    name: str
    policy: Policy
    received: list[bot_pb.PlayResponse] = field(default_factory=list)
    status: grpc.StatusCode | None = None
    _outbox: queue.Queue[bot_pb.PlayRequest | None] = field(default_factory=queue.Queue)

    def start(self) -> threading.Thread:
        self._outbox.put(
            bot_pb.PlayRequest(
                hello=bot_pb.Hello(
                    bot_name=self.name, token=f"token-{self.name}", protocol_version=1
                )
            )
        )
        thread = threading.Thread(target=self._run, daemon=True)
        thread.start()
        return thread

    def _requests(self) -> Iterator[bot_pb.PlayRequest]:
        while (message := self._outbox.get()) is not None:
            yield message

    def _run(self) -> None:
        with grpc.insecure_channel(f"127.0.0.1:{self.port}") as channel:
            call = channel.stream_stream(
                "/hearts.v1.BotService/Play",
                request_serializer=bot_pb.PlayRequest.SerializeToString,
                response_deserializer=bot_pb.PlayResponse.FromString,
            )(self._requests())
            try:
                for response in call:
                    self.received.append(response)
                    if response.HasField("request"):
                        for message in self.policy(response.request):
                            self._outbox.put(message)
                self.status = grpc.StatusCode.OK
            except grpc.RpcError as error:
                self.status = error.code()
            finally:
                self._outbox.put(None)

    def events(self) -> list[ev_pb.Event]:
        return [event for response in self.received for event in response.events]

    def requests(self) -> list[bot_pb.DecisionRequest]:
        return [r.request for r in self.received if r.HasField("request")]

    def notices(self) -> list[ev_pb.FaultNotice]:
        return [e.fault_notice for e in self.events() if e.HasField("fault_notice")]


def _play(policies: dict[str, Policy], hands: int = 1) -> tuple[GameRecord, dict[str, RawBot]]:
    """One table of four raw bots on a fresh referee; every stream ended when it returns."""
    referee = RefereeThread(RefereeConfig(), {f"token-{name}": name for name in SEATS})
    port = referee.start("127.0.0.1:0")
    bots = {name: RawBot(port, name, policies.get(name, _answer)) for name in SEATS}
    threads = [bot.start() for bot in bots.values()]
    try:
        assert referee.wait_for_bots(list(SEATS), int(WAIT_S * 1000))
        spec = TableSpec(
            "audit",
            Rules(),
            seed=7,
            seats=SEATS,
            board="7",
            hands=hands,
            clocks=Clocks(move_ms=1000, bank_ms=10_000),
            faults=FaultPolicy(max_faults=30),
        )
        record = referee.submit(spec).result(timeout=WAIT_S)
    finally:
        referee.stop(0, finished=True)
        for thread in threads:
            thread.join(WAIT_S)
    assert all(bot.status is grpc.StatusCode.OK for bot in bots.values())
    return record, bots


def test_a_wrong_pass_notice_stays_small_however_many_cards_were_sent() -> None:
    # The notice's message and the record's detail listed every card of the pass (a pass of
    # 15,000 cards made a 45 kB notice), where the guide cuts the echo at 16 "so that a notice
    # stays small".
    def flood_pass(request: bot_pb.DecisionRequest) -> list[bot_pb.PlayRequest]:
        if request.kind == bot_pb.DECISION_KIND_PASS:
            return _pass(request, [request.hand[0]] * 2000)
        return _answer(request)

    record, bots = _play({"north": flood_pass})
    (notice,) = bots["north"].notices()
    assert notice.kind == ev_pb.FAULT_KIND_WRONG_PASS
    assert "(2000 cards)" in notice.your_answer  # the echo the guide documents: cut at 16
    assert len(notice.your_answer) < 200
    assert len(notice.message) < 500, f"a notice of {len(notice.message)} characters"
    assert "... (2000 cards)" in notice.message
    (fault,) = record.faults
    assert len(fault.detail) < 500


def test_a_pass_naming_one_card_in_two_spellings_names_it_twice() -> None:
    """The guide takes "qs" for "QS": a pass of both gives the same card twice."""

    def spelled_twice(request: bot_pb.DecisionRequest) -> list[bot_pb.PlayRequest]:
        if request.kind == bot_pb.DECISION_KIND_PASS:
            first = request.hand[0]
            return _pass(request, [first, first.lower(), request.hand[1]])
        return _answer(request)

    record, bots = _play({"east": spelled_twice})
    (notice,) = bots["east"].notices()
    assert notice.kind == ev_pb.FAULT_KIND_WRONG_PASS
    assert "given twice" in notice.message
    assert len(notice.substitute_cards) == 3
    assert [f.seat for f in record.faults] == [1]


def test_a_hold_hand_asks_no_pass_and_its_state_names_the_seat_itself() -> None:
    """Hand 3 of the standard cycle holds: HandStarted says HOLD with pass_count 0, no pass
    request and no CardsReceived come, and the state's pass fields name the seat itself."""
    _, bots = _play({}, hands=4)
    north = bots["north"]
    started = [e.hand_started for e in north.events() if e.HasField("hand_started")]
    assert [s.pass_direction for s in started] == [
        game_pb2.PASS_DIRECTION_LEFT,
        game_pb2.PASS_DIRECTION_RIGHT,
        game_pb2.PASS_DIRECTION_ACROSS,
        game_pb2.PASS_DIRECTION_HOLD,
    ]
    assert [s.pass_count for s in started] == [3, 3, 3, 0]
    passes = [r for r in north.requests() if r.kind == bot_pb.DECISION_KIND_PASS]
    assert [(r.hand_number, r.pass_to_seat) for r in passes] == [(0, 1), (1, 3), (2, 2)]
    received = [e.cards_received for e in north.events() if e.HasField("cards_received")]
    assert [r.hand_number for r in received] == [0, 1, 2]
    hold_plays = [r for r in north.requests() if r.hand_number == 3]
    assert hold_plays
    for request in hold_plays:
        state = request.state
        assert state.pass_direction == game_pb2.PASS_DIRECTION_HOLD
        assert (state.passed_to_seat, state.received_from_seat) == (0, 0)
        assert not state.passed_cards and not state.received_cards
