"""What a faulting bot is told, and what becomes of its seat.

A bot seated with three well-behaved ones answers wrongly on purpose (a real process, or a raw
gRPC client on a thread).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator

import grpc
from conftest import BotProcesses

from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb
from arena.referee import RefereeThread, TokenAccounts
from arena.rules import Rules
from arena.table import Clocks, FaultKind, GameRecord, TableSpec, Termination

RESULT_S = 120.0
SHORT = Clocks(move_ms=300, bank_ms=300, handshake_ms=30_000)
GOOD = ("n1", "n2", "n3")


def play_with(referee: RefereeThread, bad: str, table_id: str) -> GameRecord:
    """One game of ``bad`` (seat 0) with the good bots (already in the lobby), played out."""
    spec = TableSpec(table_id, Rules(), 7, (bad, *GOOD), "7", clocks=SHORT)
    record = referee.submit(spec).result(RESULT_S)
    assert record.termination is Termination.NORMAL, record.reason
    assert all(h.complete for h in record.hands)
    return record


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


def test_a_seat_forfeited_by_faults_found_between_requests_is_played_out(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses
) -> None:
    for name in GOOD:
        bots.start(name)
    twice = TwiceBot(bots.address, bots.token("twice"))
    try:
        bots.ready(*GOOD, "twice")
        record = play_with(referee[0], "twice", "twice")
    finally:
        twice.close()
    # Forfeited by faults found between requests, the seat is the fallback's (this once broke
    # the compiled table with a TypeError).
    assert {f.kind for f in record.faults_of(0)} == {FaultKind.PROTOCOL}
    assert record.seat_status[0].is_forfeit
