"""Spectators never see a table of a duplicate board: its card play and its HandRevealed would give
a bot the deal of the board's other rotations (the audit's spy watched b0-g0-r0 while playing
b0-g0-r1..r3). A table dealt only once is watched as before."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from pathlib import Path

import grpc
import pytest
from conftest import BotProcesses
from test_server_competition import run_ladder

from arena.config import build_config
from arena.director.schedule import schedule, sprt_tables
from arena.proto.hearts.v1 import spectator_service_pb2 as spec_pb
from arena.proto.hearts.v1 import spectator_service_pb2_grpc as spec_grpc
from arena.referee import RefereeThread, TokenAccounts
from arena.rules import Rules
from arena.server.config import server_config_from_dict
from arena.table import Clocks, FaultPolicy, GameRecord, TableSpec, Termination

RESULT_S = 120.0
CALM = Clocks(move_ms=5000, bank_ms=10_000, handshake_ms=30_000)


class Spy(threading.Thread):
    """A spectator client (as a bot could run one) that keeps listing the tables, finished ones
    too, and tries to watch every table it knows of, from the start, until told to stop."""

    def __init__(self, port: int, table_ids: list[str]) -> None:
        super().__init__(daemon=True)
        self.port = port
        self.table_ids = table_ids
        self.listed: set[str] = set()
        self.watched: dict[str, list[str]] = {}
        """Per table, the kinds of event a Watch gave."""
        self.refusals: dict[str, set[grpc.StatusCode]] = {}
        self.rounds = 0
        self.error: Exception | None = None
        self.done = threading.Event()

    def run(self) -> None:
        try:
            with grpc.insecure_channel(f"127.0.0.1:{self.port}") as channel:
                stub = spec_grpc.SpectatorServiceStub(channel)
                while not self.done.is_set():
                    listed = stub.ListTables(spec_pb.ListTablesRequest(include_finished=True))
                    self.listed |= {t.table_id for t in listed.tables}
                    for table_id in self.table_ids:
                        self._watch(stub, table_id)
                    self.rounds += 1
                    time.sleep(0.005)
        except Exception as e:
            self.error = e

    def _watch(self, stub: spec_grpc.SpectatorServiceStub, table_id: str) -> None:
        request = spec_pb.WatchRequest(table_id=table_id, from_start=True)
        try:
            # A short deadline: a watchable table's stream would otherwise last its whole game.
            for response in stub.Watch(request, timeout=0.2):
                kinds = self.watched.setdefault(table_id, [])
                kinds.extend(str(e.WhichOneof("kind")) for e in response.events)
        except grpc.RpcError as e:
            self.refusals.setdefault(table_id, set()).add(e.code())

    def finish(self) -> None:
        """One more round after every table has ended, then stop."""
        rounds = self.rounds
        deadline = time.monotonic() + RESULT_S
        while self.rounds < rounds + 2 and self.is_alive():
            assert time.monotonic() < deadline, "the spy stopped making rounds"
            time.sleep(0.01)
        self.done.set()
        self.join(RESULT_S)
        assert self.error is None


def board_tables(seats: tuple[str, ...]) -> list[TableSpec]:
    """Board 0 of an `arena sprt` schedule: one deal in every seat rotation."""
    tables = sprt_tables(seats, Rules(), 11, CALM, FaultPolicy())
    return [next(tables).spec for _ in seats]


def play(referee: RefereeThread, table: TableSpec) -> GameRecord:
    record = referee.submit(table).result(RESULT_S)
    assert record.termination is Termination.NORMAL, record.reason
    return record


def test_the_rotations_of_a_duplicate_board_are_never_shown_to_spectators(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses
) -> None:
    names = ("d1", "d2", "d3", "d4")
    for n in names:
        bots.start(n)
    bots.ready(*names)
    tables = board_tables(names)
    assert [t.table_id for t in tables] == ["b0-r0", "b0-r1", "b0-r2", "b0-r3"]
    assert len({t.seed for t in tables}) == 1  # one deal, the seats rotating round it
    assert not any(t.watchable for t in tables)
    spy = Spy(referee[0].port, [t.table_id for t in tables])
    spy.start()
    # Rotation after rotation, as a spy bot plays r1..r3 once r0 has finished: live, then
    # finished (ListTables include_finished, and a late Watch from the start).
    records = [play(referee[0], t) for t in tables]
    spy.finish()
    assert spy.rounds > 0
    assert not spy.listed
    assert not spy.watched
    assert spy.refusals == {t.table_id: {grpc.StatusCode.NOT_FOUND} for t in tables}
    # Unseen, but played and recorded in full as ever: the deal is in the records.
    assert all(r.hands[0].dealt == records[0].hands[0].dealt for r in records)


def test_a_table_dealt_once_still_shows_its_deal_beside_a_hidden_one(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses
) -> None:
    names = ("o1", "o2", "o3", "o4")
    for n in names:
        bots.start(n)
    bots.ready(*names)
    hidden = TableSpec("hidden", Rules(), 5, names, "5", clocks=CALM, watchable=False)
    shown = TableSpec("shown", Rules(), 5, names, "5", clocks=CALM)
    assert shown.watchable
    spy = Spy(referee[0].port, ["hidden", "shown"])
    spy.start()
    play(referee[0], hidden)
    record = play(referee[0], shown)
    spy.finish()
    assert spy.listed == {"shown"}
    assert "hidden" not in spy.watched
    assert spy.refusals["hidden"] == {grpc.StatusCode.NOT_FOUND}
    # The finished table, replayed from its log: every event, the deal revealed after the hand.
    with grpc.insecure_channel(f"127.0.0.1:{referee[0].port}") as channel:
        stub = spec_grpc.SpectatorServiceStub(channel)
        events = [
            e
            for r in stub.Watch(spec_pb.WatchRequest(table_id="shown", from_start=True))
            for e in r.events
        ]
        with pytest.raises(grpc.RpcError) as err:
            list(stub.Watch(spec_pb.WatchRequest(table_id="hidden", from_start=True)))
        assert err.value.code() is grpc.StatusCode.NOT_FOUND
        assert "duplicate board" in (err.value.details() or "")
    revealed = [e.hand_revealed for e in events if e.HasField("hand_revealed")]
    assert [tuple(tuple(s.cards) for s in r.dealt) for r in revealed] == [record.hands[0].dealt]
    assert events[-1].HasField("game_ended")


def test_watchable_round_trips_and_older_records_read_as_watchable() -> None:
    names = ("a", "b", "c", "d")
    hidden = TableSpec("t", Rules(), 1, names, "1", watchable=False)
    assert TableSpec.from_dict(hidden.to_dict()) == hidden
    older = hidden.to_dict()
    del older["watchable"]
    assert TableSpec.from_dict(older).watchable is True


@pytest.mark.parametrize("duplicate", [True, False])
def test_the_competition_server_hides_the_tables_of_its_duplicate_boards(
    tmp_path: Path, duplicate: bool
) -> None:
    config = server_config_from_dict({"seed": 3, "fit_interval": 0, "duplicate": duplicate})
    _, host = asyncio.run(run_ladder(tmp_path / "c.db", config, {n: 1 for n in "abcd"}, games=4))
    rotations = Counter(spec.board for spec in host.played)
    # Duplicate: a board in every rotation, none shown; else a board per table, each shown.
    assert set(rotations.values()) == ({4} if duplicate else {1})
    assert {spec.watchable for spec in host.played} == {not duplicate}


def test_arena_run_hides_every_table_its_boards_are_dealt_at() -> None:
    config = build_config(bots=["a=true", "b=true", "c=true", "d=true"], boards=2, seed=4)
    tables = schedule(config)
    assert len(tables) == 2 * 4 and not any(t.spec.watchable for t in tables)
