"""The spectator service as a third-party viewer uses it, from the generated stubs and the .proto
comments alone: what an unknown or malformed table id gets, and what a finished table's summary
and stream say, field by field, to several spectators at once."""

from __future__ import annotations

import threading

import grpc
import pytest
from conftest import BotProcesses

from arena.proto.hearts.v1 import events_pb2 as ev_pb
from arena.proto.hearts.v1 import spectator_service_pb2 as spec_pb
from arena.proto.hearts.v1 import spectator_service_pb2_grpc as spec_grpc
from arena.referee import RefereeThread, TokenAccounts
from arena.rules import Rules
from arena.table import Clocks, TableSpec, Termination

RESULT_S = 120.0
NAMES = ("a", "b", "c", "d")


def watch(port: int, table_id: str, from_start: bool = True) -> list[ev_pb.Event]:
    """Every event one Watch stream gives, to its OK end."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = spec_grpc.SpectatorServiceStub(channel)
        request = spec_pb.WatchRequest(table_id=table_id, from_start=from_start)
        events: list[ev_pb.Event] = []
        for response in stub.Watch(request, timeout=RESULT_S):
            assert response.table_id == table_id
            events.extend(response.events)
        return events


def refusal(port: int, table_id: str) -> grpc.RpcError:
    """The status a Watch of ``table_id`` ends with (it must not end OK)."""
    with pytest.raises(grpc.RpcError) as caught:
        watch(port, table_id)
    return caught.value


@pytest.mark.parametrize("length", [1, 20_000])
def test_an_unknown_table_id_of_any_length_is_not_found_and_says_where_to_look(
    referee: tuple[RefereeThread, TokenAccounts], length: int
) -> None:
    # Before the fix the referee echoed the whole id in the status message: past gRPC's 16 KiB
    # header cap the viewer got RESOURCE_EXHAUSTED "metadata size exceeds hard limit" instead.
    error = refusal(referee[0].port, "x" * length)
    assert error.code() is grpc.StatusCode.NOT_FOUND, error.details()
    assert "ListTables shows the tables" in (error.details() or "")
    assert len(error.details() or "") < 1000


def test_a_finished_table_as_several_spectators_see_it(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses
) -> None:
    thread = referee[0]
    port = thread.port
    for name in NAMES:
        bots.start(name)
    bots.ready(*NAMES)
    spec = TableSpec(
        "shown",
        Rules(),
        seed=3,
        seats=NAMES,
        board="3",
        hands=2,
        clocks=Clocks(move_ms=5000, bank_ms=20_000, handshake_ms=30_000),
    )
    seen: list[list[ev_pb.Event]] = []
    errors: list[BaseException] = []

    def spectate() -> None:
        try:
            seen.append(watch(port, "shown"))
        except BaseException as e:  # reported by the test's thread
            errors.append(e)

    record_future = thread.submit(spec)
    watchers = [threading.Thread(target=spectate) for _ in range(3)]
    for w in watchers:
        w.start()
    record = record_future.result(RESULT_S)
    for w in watchers:
        w.join(RESULT_S)
    assert not errors, errors
    assert record.termination is Termination.NORMAL, record.reason
    late = watch(port, "shown")  # from_start after the end: the same story
    streams = [[e.SerializeToString() for e in s] for s in [*seen, late]]
    assert all(s == streams[-1] for s in streams), "spectators saw different stories"
    assert watch(port, "shown", from_start=False) == []
    events = late

    # The stream: public and spectator kinds only, a bot's game_started field absent.
    kinds = [e.WhichOneof("kind") for e in events]
    private = {"cards_dealt", "cards_received", "fault_notice", "time_warning"}
    assert not private & set(kinds)
    assert kinds[-1] == "game_ended" and kinds[-2] == "hand_revealed"
    started = events[0].game_started
    assert not started.HasField("your_seat")
    # No card shows before it is played: each HandRevealed follows its own HandEnded.
    played: set[str] = set()
    for i, e in enumerate(events):
        if e.HasField("card_played"):
            played.add(e.card_played.card)
        if e.HasField("hand_revealed"):
            assert kinds[i - 1] == "hand_ended"
            assert events[i - 1].hand_ended.hand_number == e.hand_revealed.hand_number
            hand = record.hands[e.hand_revealed.hand_number]
            dealt = [set(s.cards) for s in e.hand_revealed.dealt]
            assert dealt == [{str(c) for c in d} for d in hand.dealt]
            assert set().union(*dealt) == played
            played = set()

    # The finished table's summary, field by field, against the stream and the record.
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = spec_grpc.SpectatorServiceStub(channel)
        assert not stub.ListTables(spec_pb.ListTablesRequest()).tables
        (summary,) = stub.ListTables(spec_pb.ListTablesRequest(include_finished=True)).tables
    ended = events[-1].game_ended
    assert summary.table_id == "shown"
    assert summary.game_id == started.game_id == ended.game_id
    assert summary.status == spec_pb.TABLE_STATUS_FINISHED
    assert list(summary.seat_names) == list(NAMES) == list(started.seat_names)
    assert summary.hand_number == len(record.hands) - 1
    assert list(summary.game_totals) == list(ended.game_totals) == list(record.totals)
    assert summary.rules == started.rules

    # A viewer that passes the game id where the table id goes is told the table's id.
    error = refusal(port, started.game_id)
    assert error.code() is grpc.StatusCode.NOT_FOUND
    assert "game id of table 'shown'" in (error.details() or ""), error.details()
