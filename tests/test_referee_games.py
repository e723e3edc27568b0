"""Whole games on a real referee with real bot processes over loopback gRPC."""

from __future__ import annotations

import base64
import dataclasses
import threading
import time
from pathlib import Path

import grpc
import pytest
from conftest import BotProcesses

from arena.cards import parse_cards
from arena.engine import Game
from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb
from arena.proto.hearts.v1 import events_pb2 as ev_pb
from arena.proto.hearts.v1 import spectator_service_pb2 as spec_pb
from arena.proto.hearts.v1 import spectator_service_pb2_grpc as spec_grpc
from arena.referee import RefereeConfig, RefereeThread, TokenAccounts
from arena.rules import Rules
from arena.table import (
    Clocks,
    Decision,
    FaultPolicy,
    GameRecord,
    TableSpec,
    Termination,
    TrickRecord,
)

RESULT_S = 120.0
CALM = Clocks(move_ms=5000, bank_ms=10_000, handshake_ms=30_000)
"""Clocks no well-behaved bot can miss, for the tables whose result must be exact."""
PROTO_DIR = Path(__file__).resolve().parent.parent / "proto" / "hearts" / "v1"


def spec(table_id: str, seats: tuple[str, ...], *, seed: int = 7, **kw: object) -> TableSpec:
    """A table spec with calm clocks unless told otherwise."""
    kw.setdefault("clocks", CALM)
    return TableSpec(table_id, Rules(), seed, seats, str(seed), **kw)  # type: ignore[arg-type]


def play(referee: RefereeThread, table: TableSpec) -> GameRecord:
    """Play one table and return its record."""
    return referee.submit(table).result(RESULT_S)


def proto_comment(value: str, file: str = "events.proto") -> str:
    """The comment above an enum value (or a field) in a hearts.v1 .proto file, as one line."""
    lines = (PROTO_DIR / file).read_text(encoding="utf-8").splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith(f"{value} ="))
    comment: list[str] = []
    while lines[at - 1].strip().startswith("//"):
        at -= 1
        comment.insert(0, lines[at].strip().removeprefix("//").strip())
    return " ".join(comment)


def replay_totals(record: GameRecord) -> tuple[int, ...]:
    """The totals the engine gives when the recorded cards are played again (checking that the
    record's deal, passes and trick winners are the engine's)."""
    game = Game(record.spec.rules, record.spec.seed)
    for h in record.hands:
        hand = game.hand
        assert h.dealt == tuple(tuple(str(c) for c in hand.dealt(s)) for s in range(4))
        for seat, cards in enumerate(h.passes):
            if cards:
                hand.pass_cards(seat, cards)
                assert cards == tuple(str(c) for c in hand.passed(seat) or ())
        for trick in h.tricks:
            assert len(trick.cards) == 4
            for i, card in enumerate(trick.cards):
                done = hand.play(card, (trick.leader + i) % 4)
            assert done is not None and done.winner == trick.winner
        game.finish_hand()
    return tuple(game.totals)


def test_a_full_game_of_four_bots_completes_and_replays(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses
) -> None:
    names = ("north", "east", "south", "west")
    for n in names:
        bots.start(n)
    bots.ready(*names)
    record = play(referee[0], spec("full", names, hands=None))
    assert record.termination is Termination.NORMAL
    assert record.seat_status == (Termination.NORMAL,) * 4
    assert record.faults == ()
    assert max(record.totals) >= 100
    assert all(h.complete and len(h.tricks) == 13 for h in record.hands)
    assert replay_totals(record) == record.totals
    assert sorted(record.placings)[0] == 1
    # Every card of every hand went through a decision, asked or forced.
    plays = [d for d in record.decisions if d.kind == "play"]
    assert len(plays) == 52 * len(record.hands)
    # The last trick of a hand is always forced: played without asking.
    assert sum(d.forced for d in plays) >= 4 * len(record.hands)
    assert all(d.request_id == 0 for d in plays if d.forced)
    # The referee builds its Decision records without the dataclass's __init__: each is the
    # record the constructor makes from the same fields, no field missing or extra.
    fields = [f.name for f in dataclasses.fields(Decision)]
    for d in record.decisions:
        assert list(vars(d)) == fields
        rebuilt = Decision(**vars(d))
        assert rebuilt == d and hash(rebuilt) == hash(d) and repr(rebuilt) == repr(d)
    # Likewise the tricks of the hand records.
    trick_fields = [f.name for f in dataclasses.fields(TrickRecord)]
    for t in (t for h in record.hands for t in h.tricks):
        assert list(vars(t)) == trick_fields
        rebuilt_trick = TrickRecord(**vars(t))
        assert (
            rebuilt_trick == t and hash(rebuilt_trick) == hash(t) and repr(rebuilt_trick) == repr(t)
        )


def test_a_game_to_the_target_whose_totals_fall_ends_at_the_rules_hand_limit(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses
) -> None:
    # Six seats, no queen, the jack of diamonds and a negative no-tricks bonus: the totals fall,
    # and the game would run for ever without the hand limit of a game to the target.
    rules = Rules(players=6, queen_penalty=0, jack_of_diamonds=-10, no_tricks_bonus=-5)
    names = ("n1", "n2", "n3", "n4", "n5", "n6")
    for n in names:
        bots.start(n)
    bots.ready(*names)
    table = TableSpec("falling", rules, 5, names, "5", hands=None, clocks=CALM)
    record = play(referee[0], table)
    assert record.termination is Termination.NORMAL and record.faults == ()
    assert len(record.hands) == rules.max_hands == 100
    assert all(h.complete for h in record.hands)
    assert max(record.totals) < rules.target
    assert record.reason == "100 hands played, no total at 100: the most hands a game to 100 plays"
    # Placed by the totals, the lowest first, as any game.
    totals = record.totals
    assert record.placings == tuple(1 + sum(o < t for o in totals) for t in totals)


def test_one_session_plays_table_after_table(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses
) -> None:
    names = ("a", "b", "c", "d")
    for n in names:
        bots.start(n)
    bots.ready(*names)
    first = play(referee[0], spec("one", names, seed=1))
    second = play(referee[0], spec("two", ("d", "c", "b", "a"), seed=1))
    assert first.termination is second.termination is Termination.NORMAL
    # The same board in another seat order deals the same cards to the same seats.
    assert first.hands[0].dealt == second.hands[0].dealt
    assert first.totals == second.totals  # the bots play the same deterministic way


def test_a_seat_waiting_for_a_bot_takes_it_as_its_other_table_ends(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses
) -> None:
    # "a" plays "busy" when "waits" starts (no wait for bots): the seat it should take is
    # held for it. When "busy" let it go, it went to the lobby, unseen by that seat, which then
    # waited out its grace period and was forfeited with its bot idle beside it.
    names = ("a", "b", "c", "d", "e", "f", "g")
    for n in names:
        bots.start(n)
    bots.ready(*names)
    busy = referee[0].submit(spec("busy", ("a", "b", "c", "d"), seed=1))
    while referee[0].idle().get("a"):  # "busy" has taken its bots
        time.sleep(0.01)
    waits = referee[0].submit(
        spec(
            "waits",
            ("a", "e", "f", "g"),
            seed=2,
            clocks=dataclasses.replace(CALM, move_ms=20_000, handshake_ms=0),
            faults=FaultPolicy(grace_ms=20_000),
        )
    )
    assert busy.result(RESULT_S).termination is Termination.NORMAL
    record = waits.result(RESULT_S)
    assert record.seat_status == (Termination.NORMAL,) * 4, record.reason
    assert not record.faults_of(0), record.faults_of(0)
    assert any(d.seat == 0 and not d.fallback and not d.forced for d in record.decisions)


def test_a_bot_asking_for_forced_moves_is_asked(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses
) -> None:
    bots.start("asker", "good", "--decide-forced")
    for n in ("x", "y", "z"):
        bots.start(n)
    bots.ready("asker", "x", "y", "z")
    record = play(referee[0], spec("forced", ("asker", "x", "y", "z")))
    assert record.termination is Termination.NORMAL
    mine = [d for d in record.decisions if d.seat == 0 and d.kind == "play"]
    others = [d for d in record.decisions if d.seat != 0 and d.kind == "play"]
    assert len(mine) == 13 and not any(d.forced for d in mine)
    assert all(d.request_id > 0 for d in mine)
    assert sum(d.forced for d in others) >= 3


def _cards_in(message: object, out: set[str], skip: frozenset[str]) -> None:
    """Every card code anywhere in a protobuf message (strings of two characters)."""
    from google.protobuf.message import Message

    assert isinstance(message, Message)
    for field, value in message.ListFields():
        if field.name in skip:
            continue
        values = value if field.is_repeated else [value]
        for v in values:
            if isinstance(v, Message):
                _cards_in(v, out, skip)
            elif isinstance(v, str) and len(v) == 2:
                out.add(v)


def test_a_bot_never_sees_a_card_of_another_seat_before_it_is_played(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses, tmp_path: Path
) -> None:
    log = tmp_path / "seen.b64"
    spy = bots.start("spy", "good", f"--record={log}")
    for n in ("p", "q", "r"):
        bots.start(n)
    bots.ready("spy", "p", "q", "r")
    record = play(referee[0], spec("spy", ("p", "spy", "q", "r"), hands=4))
    assert record.termination is Termination.NORMAL
    referee[0].stop(0)  # the spy gets a Shutdown and exits: its log is then complete
    assert "SHUTDOWN SHUTDOWN_REASON_SERVER_SHUTDOWN" in bots.output(spy)
    seat = 1
    messages = [
        bot_pb.PlayResponse.FromString(base64.b64decode(x)) for x in log.read_text().split()
    ]
    assert messages[0].HasField("welcome")
    hand_no = -1
    played: set[str] = set()
    own: set[str] = set()
    requests = 0
    skip = frozenset({"rules_json", "session_id", "server_version"})

    def check(part: object) -> None:
        seen: set[str] = set()
        _cards_in(part, seen, skip)
        leaked = {c for c in seen if _is_card(c)} - own - played
        assert not leaked, f"hand {hand_no}: saw {sorted(leaked)} before they were played"

    for message in messages:
        for event in message.events:
            kind = event.WhichOneof("kind")
            assert kind != "hand_revealed", "a bot must never get the spectators' reveal"
            if kind == "hand_started":
                hand_no = event.hand_started.hand_number
                h = record.hands[hand_no]
                got = [
                    p for s, p in enumerate(h.passes) if (s + _offset(h.pass_direction)) % 4 == seat
                ]
                own = set(h.dealt[seat]) | {c for p in got for c in p}
                played = set()
            if kind == "card_played":
                played.add(event.card_played.card)
                trick = record.hands[hand_no].tricks[event.card_played.trick_number]
                assert event.card_played.card in trick.cards  # the event tells the truth
            check(event)
        if message.HasField("request"):
            requests += 1
            req = message.request
            assert set(req.hand) <= own
            check(req)
    # Events ride with requests: a message per request, plus the welcome, the game's end and
    # the shutdown.
    assert messages[-1].HasField("shutdown")
    assert len(messages) == requests + 3


def _offset(direction: str) -> int:
    return {"left": 1, "right": 3, "across": 2, "hold": 0}[direction]


def _is_card(text: str) -> bool:
    try:
        parse_cards([text])
    except ValueError:
        return False
    return True


def test_a_missing_bot_is_forfeited_and_the_table_still_ends(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses
) -> None:
    for n in ("m1", "m2", "m3"):
        bots.start(n)
    bots.ready("m1", "m2", "m3")
    table = spec(
        "missing",
        ("m1", "m2", "m3", "ghost"),
        clocks=Clocks(move_ms=100, bank_ms=100, handshake_ms=100),
        faults=FaultPolicy(grace_ms=200),
    )
    record = play(referee[0], table)
    assert record.termination is Termination.NORMAL
    assert record.seat_status[3] is Termination.DISCONNECT
    # What events.proto tells bot authors of such a seat (it named TIMEOUT for it).
    assert "never came to the table" in proto_comment("TERMINATION_DISCONNECT")
    assert "never came" not in proto_comment("TERMINATION_TIMEOUT")
    assert record.placings[3] == 4  # a forfeit places last
    assert {f.kind.value for f in record.faults_of(3)} == {"disconnect"}
    assert all(d.fallback or d.forced for d in record.decisions if d.seat == 3)


class Watcher(threading.Thread):
    """A spectator client on its own thread, collecting one table's events."""

    def __init__(self, port: int, table_id: str) -> None:
        super().__init__(daemon=True)
        self.port = port
        self.table_id = table_id
        self.events: list[ev_pb.Event] = []
        self.batches: list[list[str | None]] = []
        """Each WatchResponse's events, by kind."""
        self.error: Exception | None = None

    def run(self) -> None:
        try:
            with grpc.insecure_channel(f"127.0.0.1:{self.port}") as channel:
                stub = spec_grpc.SpectatorServiceStub(channel)
                deadline = time.monotonic() + RESULT_S
                while time.monotonic() < deadline:
                    listed = stub.ListTables(spec_pb.ListTablesRequest(include_finished=True))
                    if any(t.table_id == self.table_id for t in listed.tables):
                        break
                    time.sleep(0.01)
                request = spec_pb.WatchRequest(table_id=self.table_id, from_start=True)
                for response in stub.Watch(request, timeout=RESULT_S):
                    self.events.extend(response.events)
                    self.batches.append([e.WhichOneof("kind") for e in response.events])
        except Exception as e:
            self.error = e


def test_spectators_see_public_events_live_and_the_deal_only_after_the_hand(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses
) -> None:
    names = ("s1", "s2", "s3", "s4")
    for n in names:
        bots.start(n)
    bots.ready(*names)
    watcher = Watcher(referee[0].port, "watched")
    watcher.start()
    record = play(referee[0], spec("watched", names, hands=2))
    watcher.join(RESULT_S)
    assert watcher.error is None
    kinds = [e.WhichOneof("kind") for e in watcher.events]
    assert kinds[0] == "game_started" and kinds[-1] == "game_ended"
    assert not {"cards_dealt", "cards_received", "fault_notice"} & set(kinds)
    assert kinds.count("card_played") == 52 * len(record.hands)
    # A trick's cards come together with its end: one by one, a card the referee played itself
    # (a seat's only legal card) came at once after the card before it, which showed a seat
    # with a single card of the suit led.
    for batch in watcher.batches:
        if "card_played" in batch:
            last = max(i for i, kind in enumerate(batch) if kind == "card_played")
            assert "trick_won" in batch[last:], batch
    # Each hand's reveal comes after its last card and its score, never before.
    for number, h in enumerate(record.hands):
        reveal = next(
            i
            for i, e in enumerate(watcher.events)
            if e.HasField("hand_revealed") and e.hand_revealed.hand_number == number
        )
        last_play = max(
            i
            for i, e in enumerate(watcher.events)
            if e.HasField("card_played") and e.card_played.hand_number == number
        )
        assert last_play < reveal
        shown = watcher.events[reveal].hand_revealed
        assert tuple(tuple(s.cards) for s in shown.dealt) == h.dealt
    assert watcher.events[0].game_started.HasField("your_seat") is False


def test_a_finished_table_can_be_replayed_by_a_late_spectator(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses
) -> None:
    names = ("l1", "l2", "l3", "l4")
    for n in names:
        bots.start(n)
    bots.ready(*names)
    play(referee[0], spec("late", names))
    with grpc.insecure_channel(f"127.0.0.1:{referee[0].port}") as channel:
        stub = spec_grpc.SpectatorServiceStub(channel)
        listed = stub.ListTables(spec_pb.ListTablesRequest(include_finished=True))
        assert [t.status for t in listed.tables if t.table_id == "late"] == [
            spec_pb.TABLE_STATUS_FINISHED
        ]
        assert not stub.ListTables(spec_pb.ListTablesRequest()).tables
        events = [
            e
            for r in stub.Watch(spec_pb.WatchRequest(table_id="late", from_start=True))
            for e in r.events
        ]
        assert events[-1].HasField("game_ended")
        with pytest.raises(grpc.RpcError) as err:
            list(stub.Watch(spec_pb.WatchRequest(table_id="nope")))
        assert err.value.code() is grpc.StatusCode.NOT_FOUND
        # A finished table is forgotten in time: the refusal says so, with how many are kept.
        keep = referee[0].call(lambda r: r.config.keep_finished)
        assert f"of the finished ones, only the last {keep} are kept" in str(err.value.details())


def test_a_kitty_is_in_the_record_and_the_points_add_up_from_it(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses
) -> None:
    from arena.cards import Card
    from arena.director.replay import replay_text

    names = ("north", "east", "south")
    for n in names:
        bots.start(n)
    bots.ready(*names)
    rules = Rules(players=3, kitty=True)
    table = TableSpec("kitty", rules, 11, names, "11", hands=3, clocks=CALM)
    record = play(referee[0], table)
    assert record.termination is Termination.NORMAL
    for h in record.hands:
        assert len(h.kitty) == 1 and all(len(d) == 17 for d in h.dealt)
        assert len({*h.kitty, *(c for d in h.dealt for c in d)}) == 52
        taken = [0, 0, 0]
        for number, trick in enumerate(h.tricks):
            cards = [*trick.cards, *(h.kitty if number == 0 else ())]
            taken[trick.winner] += sum(rules.card_points(Card.parse(c)) for c in cards)
        if h.moon is None:
            assert tuple(taken) == h.points
    # The record reads back whole, kitty included.
    assert GameRecord.from_dict(record.to_dict()) == record
    text = list(replay_text(record))
    # The most hands the table deals: "3 hand(s)" read as the hands played.
    assert text[0].startswith("table kitty: seed 11, up to 3 hands, move "), text[0]
    assert text[1] == "rules: standard with kitty=true, 3 players, target 100"
    kitty_lines = [line for line in text if line.startswith("    kitty")]
    assert kitty_lines == [
        f"    kitty{' ' * (len('seat 0 north') - 5)}  {h.kitty[0]} (to the first trick's winner)"
        for h in record.hands
    ]


def test_tables_are_listed_while_hosted_however_many_open_and_only_finished_ones_expire() -> None:
    # keep_finished bounds the finished tables remembered; a table still waiting for its bots
    # (or playing) was dropped from ListTables and Watch once that many tables had opened after
    # it, and a table playing then was never forgotten at all.
    referee = RefereeThread(RefereeConfig(keep_finished=1), TokenAccounts())
    referee.start("127.0.0.1:0")
    try:
        absent = Clocks(move_ms=10, bank_ms=0, handshake_ms=30_000)
        ids = ["w0", "w1", "w2"]
        futures = [
            referee.submit(
                spec(
                    i,
                    (f"{i}a", f"{i}b", f"{i}c", f"{i}d"),
                    clocks=absent,
                    faults=FaultPolicy(grace_ms=0),
                ),
                wait_ms=2000,
            )
            for i in ids
        ]
        with grpc.insecure_channel(f"127.0.0.1:{referee.port}") as channel:
            stub = spec_grpc.SpectatorServiceStub(channel)
            referee.call(lambda r: None)  # on the loop after the three tables opened
            listed = stub.ListTables(spec_pb.ListTablesRequest()).tables
            assert [(t.table_id, t.status) for t in listed] == [
                (i, spec_pb.TABLE_STATUS_WAITING) for i in ids
            ]
            with pytest.raises(grpc.RpcError) as err:  # watched, not NOT_FOUND: nothing yet
                list(stub.Watch(spec_pb.WatchRequest(table_id="w0"), timeout=0.2))
            assert err.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
            for future in futures:
                future.result(RESULT_S)
            finished = stub.ListTables(spec_pb.ListTablesRequest(include_finished=True)).tables
            assert len(finished) == 1 and finished[0].status == spec_pb.TABLE_STATUS_FINISHED
        assert referee.call(lambda r: len(r._feeds)) == 1
    finally:
        referee.stop(0)


def test_a_spectator_that_falls_behind_is_dropped_with_resource_exhausted(
    tmp_path: Path,
) -> None:
    # A queue of one event: the table publishes GameStarted and HandStarted in one go, before
    # the spectator's stream can take the first, so this spectator is too far behind at once.
    accounts = TokenAccounts()
    referee = RefereeThread(RefereeConfig(spectator_queue=1), accounts)
    referee.start("127.0.0.1:0")
    bots = BotProcesses(referee, accounts, tmp_path)
    try:
        names = ("d1", "d2", "d3", "d4")
        for n in names[:3]:
            bots.start(n)
        future = referee.submit(spec("behind", names))  # it waits for d4
        watcher = Watcher(referee.port, "behind")
        watcher.start()
        deadline = time.monotonic() + RESULT_S
        while not referee.call(lambda r: r._feeds["behind"].watchers):
            assert time.monotonic() < deadline, "the spectator never started watching"
            time.sleep(0.01)
        bots.start(names[3])
        record = future.result(RESULT_S)
        watcher.join(RESULT_S)
        assert record.termination is Termination.NORMAL  # a spectator never slows a game
        error = watcher.error
        assert isinstance(error, grpc.Call)
        assert error.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "fell too far behind" in (error.details() or "")
    finally:
        bots.kill_all()
        referee.stop(0)


def test_a_table_that_fails_as_it_starts_gives_its_bots_back_to_the_lobby(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses
) -> None:
    """A table the referee cannot even set up (here: a table id that is not valid Unicode, which
    its game id cannot carry) fails alone: its sessions go back to the lobby and the next table
    seats them at once (they were held by no one, and the next table waited for them until its
    forfeits)."""
    names = ("a", "b", "c", "d")
    for n in names:
        bots.start(n)
    bots.ready(*names)
    with pytest.raises(ValueError):
        play(referee[0], spec("broken\ud800", names, hands=2))
    quick = Clocks(move_ms=5000, bank_ms=10_000, handshake_ms=20_000)
    record = play(referee[0], spec("after", names, hands=1, clocks=quick))
    assert record.termination is Termination.NORMAL
    assert record.seat_status == (Termination.NORMAL,) * 4
    assert record.faults == ()
