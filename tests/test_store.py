"""The SQLite store: whole games in, the same games and rating input out, one run per database."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import sqlite3
import time
from pathlib import Path

import pytest

from arena.config import build_config
from arena.director.schedule import schedule
from arena.engine import Game
from arena.errors import ConfigError
from arena.ratings import fit
from arena.ratings.report import result_unit
from arena.store import (
    SCHEMA_VERSION,
    Store,
    StoreError,
    check_writable,
    database_locked,
    load_results,
    result_of,
    write_replay,
)
from arena.table import (
    Decision,
    Fault,
    FaultKind,
    GameRecord,
    HandRecord,
    LateReply,
    TableSpec,
    Termination,
    TrickRecord,
)

BOTS = ["a=true", "b=true", "c=true", "d=true", "e=true"]


def play_record(spec: TableSpec, fault_seat: int | None = None) -> GameRecord:
    """Play a table with the engine alone (every seat plays its lowest legal card)."""
    game = Game(spec.rules, spec.seed)
    hands: list[HandRecord] = []
    decisions: list[Decision] = []
    faults: list[Fault] = []
    while True:
        hand = game.hand
        number = game.hand_number
        dealt = tuple(tuple(str(c) for c in hand.dealt(s)) for s in range(spec.rules.players))
        passes: list[tuple[str, ...]] = [()] * spec.rules.players
        for seat in hand.seats_to_pass:
            cards = sorted(hand.hand(seat))[: spec.rules.pass_count]
            hand.pass_cards(seat, cards)
            passes[seat] = tuple(str(c) for c in cards)
            decisions.append(Decision(number, seat, "pass", 1, passes[seat], 0.1, False))
        tricks: list[TrickRecord] = []
        while hand.to_move is not None:
            seat = hand.to_move
            card = min(hand.legal_plays())
            fault = FaultKind.TIMEOUT if seat == fault_seat and not faults else None
            if fault is not None:
                faults.append(
                    Fault(
                        number,
                        len(tricks),
                        seat,
                        spec.seats[seat],
                        fault,
                        "too slow",
                        "",
                        (str(card),),
                        12.5,
                    )
                )
            decisions.append(Decision(number, seat, "play", 2, (str(card),), 0.2, False, fault))
            trick = hand.play(card)
            if trick is not None:
                assert trick.winner is not None
                tricks.append(
                    TrickRecord(trick.leader, tuple(str(c) for c in trick.cards), trick.winner)
                )
        result = game.finish_hand()
        hands.append(
            HandRecord(
                number,
                hand.dealer,
                hand.pass_direction.value,
                dealt,
                tuple(passes),
                tuple(tricks),
                result.points,
                result.moon,
                result.sun,
            )
        )
        if spec.hands is not None and len(hands) >= spec.hands:
            break
        if spec.hands is None and game.is_over:
            break
    totals = tuple(game.totals)
    return GameRecord(
        spec=spec,
        hands=tuple(hands),
        decisions=tuple(decisions),
        faults=tuple(faults),
        totals=totals,
        placings=game.placings,
        termination=Termination.NORMAL,
        seat_status=(Termination.NORMAL,) * len(totals),
        reason="played to the end",
        started_at=time.time(),
        finished_at=time.time(),
    )


def test_a_game_a_stopped_run_has_not_stored_yet_is_said_to_be_played_on_resuming(
    tmp_path: Path,
) -> None:
    # Games 0, 1 and 3 stored (the run stopped with game 2 still in play): "no game '2'; give
    # ... a game number (0 to 3)", the number it refused inside the range it suggested.
    config = build_config(bots=BOTS, boards=1, db=tmp_path / "a.db")
    tables = schedule(config)
    with Store.open(config.db) as store:
        store.claim(config.run_id, "batch", config.identity(), len(tables))
        for index in (0, 1, 3):
            store.save_game(config.run_id, index, play_record(tables[index].spec))
        with pytest.raises(StoreError) as refused:
            store.find_game("2")
    assert str(refused.value).endswith(
        f"a game number (0 to 3); run {config.run_id} stopped with 3 of {len(tables)} games "
        "stored: one not stored yet is played when the same `arena run` command resumes it"
    )


def test_a_game_goes_in_whole_and_comes_back_equal(tmp_path: Path) -> None:
    config = build_config(bots=BOTS, boards=2, db=tmp_path / "a.db")
    tables = schedule(config)
    with Store.open(config.db) as store:
        assert store.claim(config.run_id, "batch", config.identity(), len(tables))
        records = {t.index: play_record(t.spec, fault_seat=1) for t in tables[:7]}
        for index, record in records.items():
            store.save_game(config.run_id, index, record, crashed=(2,) if index == 3 else ())
        assert store.finished(config.run_id) == set(records)
        assert dict(store.records(config.run_id)) == records
        run_id, game, record = store.find_game(tables[3].spec.table_id)
        assert (run_id, game, record) == (config.run_id, 3, records[3])
        assert store.find_game("5")[2] == records[5]
        assert store.find_game(5)[2] == records[5]  # was an AttributeError (no strip)
        # Spaces around a table id, as around a number: "no game ' b0-g0-r1'".
        assert store.find_game(f" {tables[3].spec.table_id} ")[1] == 3
        with pytest.raises(StoreError, match=r"^a game is named by its table id or number, got"):
            store.find_game(None)  # type: ignore[arg-type]
        with pytest.raises(StoreError, match="no game 'b9-g9-r9'"):
            store.find_game("b9-g9-r9")
    db = sqlite3.connect(config.db)
    crashed = db.execute("SELECT game, seat FROM seats WHERE crashed = 1").fetchall()
    assert crashed == [(3, 2)]
    kinds = db.execute("SELECT DISTINCT kind, seat FROM faults").fetchall()
    assert kinds == [("timeout", 1)]
    assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    db.close()

    results = load_results(config.db)
    assert len(results) == len(records)
    for result, (index, record) in zip(results, sorted(records.items()), strict=True):
        assert result.board == record.spec.board
        assert result.players == record.spec.seats
        assert result.points == tuple(float(t) for t in record.totals)
        assert result.placings is None  # single hands
        assert result.moon == record.hands[0].moon
        assert result.faults == (0, 1, 0, 0), index
    assert load_results(config.db, run=config.run_id) == results
    with pytest.raises(StoreError, match=rf"holds no run 'other'; its runs: {config.run_id}$"):
        load_results(config.db, run="other")


def test_full_games_load_with_placings(tmp_path: Path) -> None:
    config = build_config(bots=BOTS[:4], boards=1, game_to=30, db=tmp_path / "g.db")
    table = schedule(config)[0]
    record = play_record(table.spec)
    assert len(record.hands) > 1
    with Store.open(config.db) as store:
        store.claim(config.run_id, "batch", config.identity(), 4)
        store.save_game(config.run_id, 0, record)
    [result] = load_results(config.db)
    assert result.placings == record.placings
    assert result.points == tuple(float(t) for t in record.totals)
    assert result.moon is None


def test_moons_over_a_game_and_forfeits_load_as_the_ratings_count_them(tmp_path: Path) -> None:
    config = build_config(bots=BOTS[:4], boards=1, game_to=60, db=tmp_path / "g.db")
    played = play_record(schedule(config)[0].spec)
    assert len(played.hands) >= 3
    # Seat 2 shot the moon in the first and third hands, seat 0 in the second; seat 1 forfeited
    # (a disconnect), though it took the fewest points.
    shots = {0: 2, 1: 0, 2: 2}
    hands = tuple(dataclasses.replace(h, moon=shots.get(k)) for k, h in enumerate(played.hands))
    totals = (40, 0, 45, 50)
    record = dataclasses.replace(
        played,
        hands=hands,
        totals=totals,
        placings=(1, 4, 2, 3),
        seat_status=(
            Termination.NORMAL,
            Termination.DISCONNECT,
            Termination.NORMAL,
            Termination.NORMAL,
        ),
    )
    with Store.open(config.db) as store:
        store.claim(config.run_id, "batch", config.identity(), 4)
        store.save_game(config.run_id, 0, record)
    [result] = load_results(config.db)
    assert result.moons == (1, 0, 2, 0) and result.moon is None
    assert result.forfeits == (False, True, False, False)
    assert result_of(record) == result


def test_a_table_of_several_hands_that_ended_after_one_is_a_game_not_a_hand(
    tmp_path: Path,
) -> None:
    # A server's `hands = 3` table whose first hand reached the target: read as a single hand,
    # so that `arena ratings` labelled a ladder of such tables a mix ("pts/result", "results"),
    # the label changing with how the games went rather than with what was configured.
    config = build_config(bots=BOTS[:4], boards=1, db=tmp_path / "h.db")
    spec = dataclasses.replace(schedule(config)[0].spec, hands=3)
    played = play_record(spec)
    record = dataclasses.replace(played, hands=played.hands[:1], totals=played.hands[0].points)
    with Store.open(config.db) as store:
        store.claim(config.run_id, "batch", {**config.identity(), "hands": 3}, 1)
        store.save_game(config.run_id, 0, record)
    [result] = load_results(config.db)
    assert result.moon is None and result.moons is not None  # a game's moons, counted
    assert result_unit([result]) == "game"
    assert result_of(record) == result


def test_a_failed_commit_leaves_nothing(tmp_path: Path) -> None:
    config = build_config(bots=BOTS[:4], boards=1, db=tmp_path / "f.db")
    table = schedule(config)[0]
    record = play_record(table.spec)
    with Store.open(config.db) as store:
        store.claim(config.run_id, "batch", config.identity(), 4)
        store.save_game(config.run_id, 0, record)
        # The same table again under another index breaks UNIQUE(run_id, table_id) after the
        # games row would have gone in: the whole game must roll back.
        with pytest.raises(StoreError, match=r"is already stored$"):
            store.save_game(config.run_id, 1, record)
        assert store.finished(config.run_id) == {0}
    db = sqlite3.connect(config.db)
    assert db.execute("SELECT COUNT(*) FROM seats").fetchone() == (4,)
    assert db.execute("SELECT COUNT(*) FROM hands").fetchone() == (1,)
    db.close()


def test_another_configuration_is_refused_with_what_differs(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    first = build_config(bots=BOTS[:4], boards=2, db=db)
    second = build_config(bots=BOTS[:4], boards=3, db=db)
    same_but_faster = build_config(bots=BOTS[:4], boards=2, db=db, concurrency=7)
    with Store.open(db) as store:
        assert store.claim(first.run_id, "batch", first.identity(), 8)
        assert not store.claim(same_but_faster.run_id, "batch", same_but_faster.identity(), 8)
        with pytest.raises(ConfigError, match=r"holds another run \(--boards 2, not 3\)") as no:
            store.claim(second.run_id, "batch", second.identity(), 12)
        # No game stored (a run killed before its first): "keeps that run's games" misled.
        assert str(no.value).endswith(
            f"use another --db (that run stopped before its first game: delete {db} to start anew)"
        )
        store.save_game(first.run_id, 0, play_record(schedule(first)[0].spec))
        with pytest.raises(ConfigError) as kept:
            store.claim(second.run_id, "batch", second.identity(), 12)
        assert str(kept.value).endswith(
            f"use another --db (this one keeps that run's games; delete {db} only if you no "
            "longer need them)"
        )
        for other, said in (
            (build_config(bots=BOTS[:4], boards=2, db=db, move_time="2s"),
             "--move-time 1000ms, not 2000ms"),
            (build_config(bots=BOTS[:4], boards=2, db=db, rule=["moon=best"]),
             "--rule moon=add, not moon=best"),
            (build_config(bots=[*BOTS[:3], "d=false"], boards=2, db=db),
             "bot d 'true', not 'false'"),
            (build_config(bots=[BOTS[1], BOTS[0], *BOTS[2:4]], boards=2, db=db),
             "bots in the order a, b, c, d, not b, a, c, d"),
            (build_config(bots=BOTS[:3], boards=2, db=db, players=3),
             "bots a, b, c, d, not a, b, c"),
            (build_config(bots=BOTS[:4], boards=2, db=db, game_to=50),
             "single hands, not --game-to 50)"),  # its target is not said again
            (build_config(bots=BOTS[:4], boards=2, db=db, strict=True, grace="2s"),
             "--grace 5000ms, not 2000ms; --no-strict, not --strict"),  # the flags' words
        ):  # fmt: skip
            with pytest.raises(ConfigError, match=re.escape(f"holds another run ({said}")):
                store.claim(other.run_id, "batch", other.identity(), 8)
        # An sprt test shares few settings with a run: which of the two is said, no more.
        sprt = {**first.identity(), "format": "sprt", "boards": 10}
        with pytest.raises(ConfigError, match=re.escape("another run (an arena run, not an sprt")):
            store.claim("sprt-id", "batch", sprt, None)
        assert [r.run_id for r in store.runs()] == [first.run_id]


def test_a_competition_database_is_named_as_such_to_a_run_and_back(tmp_path: Path) -> None:
    # An arena serve database refused arena sprt with "holds another run (an arena run, not an
    # sprt test)": it holds neither.
    run = build_config(bots=BOTS[:4], boards=2, db=tmp_path / "r.db")
    served = {"kind": "ladder", "rules": {}, "hands": 1, "seed": 1, "event": None}
    with Store.open(tmp_path / "c.db") as store:
        store.claim("ladder-id", "ladder", served, None)
        for kind in ("batch", "sprt"):
            with pytest.raises(
                ConfigError,
                match=re.escape("another run (arena serve's competition, not an arena run or sprt"),
            ):
                store.claim(run.run_id, kind, run.identity(), None)
    with Store.open(run.db) as store:
        store.claim(run.run_id, "batch", run.identity(), 8)
        with pytest.raises(
            ConfigError,
            match=re.escape("another run (an arena run or sprt test, not arena serve's comp"),
        ):
            store.claim("event-id", "event", {**served, "kind": "event"}, None)


def test_unusable_databases_are_one_line_errors(tmp_path: Path) -> None:
    check_writable(tmp_path / "new.db")
    assert not (tmp_path / "new.db").exists()
    with pytest.raises(ConfigError, match="does not exist"):
        check_writable(tmp_path / "nowhere" / "x.db")
    with pytest.raises(ConfigError, match="is a folder"):
        check_writable(tmp_path)
    # A str as Store.open takes one: it was an AttributeError ('str' has no 'is_dir').
    check_writable(str(tmp_path / "new.db"))
    with pytest.raises(ConfigError, match="is a folder"):
        check_writable(str(tmp_path))
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not a Hearts Arena database"):
        Store.open(garbage)
    other = tmp_path / "other.db"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute("INSERT INTO meta VALUES ('schema_version', '99')")
    db.commit()
    db.close()
    with pytest.raises(
        StoreError, match=f"schema version 99, this arena reads version {SCHEMA_VERSION}"
    ):
        Store.open(other)
    with pytest.raises(StoreError, match="no such database"):
        Store.open(tmp_path / "absent.db", create=False)
    # Another program's database, or an empty file, is refused and left as it was (a run would
    # have added the arena's tables and switched it to WAL; a reader would have done the latter).
    foreign = tmp_path / "foreign.sqlite"
    db = sqlite3.connect(foreign)
    db.execute("CREATE TABLE notes (body TEXT)")
    db.commit()
    db.close()
    empty = tmp_path / "empty.db"
    empty.touch()
    for path, held, create in (
        (foreign, "it holds other tables: notes", True),
        (foreign, "it holds other tables: notes", False),
        (empty, "empty", False),
    ):
        before = path.read_bytes()
        with pytest.raises(StoreError, match=rf"not a Hearts Arena database \({held}\)"):
            Store.open(path, create=create)
        assert path.read_bytes() == before
        assert not Path(f"{path}-wal").exists()
    # The competition server's account tables may be there first (`arena bots add`).
    accounts_first = tmp_path / "comp.db"
    db = sqlite3.connect(accounts_first)
    db.execute("CREATE TABLE server_bots (name TEXT)")
    db.commit()
    db.close()
    Store.open(accounts_first).close()
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(0o500)
        try:
            with pytest.raises(ConfigError, match="not writable"):
                check_writable(locked / "x.db")
        finally:
            locked.chmod(0o700)


def test_replay_is_json_lines_that_rebuild_the_record(tmp_path: Path) -> None:
    config = build_config(bots=BOTS[:4], boards=1, db=tmp_path / "x.db")
    record = play_record(schedule(config)[2].spec, fault_seat=0)
    # A late reply too: the replay left the record's out, and could not rebuild it.
    late = LateReply(hand=0, seat=1, bot="b", request_id=9, sent="play '2C' (request 9)", late_ms=3)
    record = dataclasses.replace(record, late=(late,))
    path = write_replay(tmp_path / "out", 2, record)
    assert path.name == "000002-b0-g0-r2.jsonl"
    assert not list(path.parent.glob("*.tmp"))
    # A str folder too (it was a TypeError: str / str), to the same file.
    assert write_replay(str(tmp_path / "out"), 2, record) == path
    # A game index as save_game takes it: -1 wrote "-00001-....jsonl", listed before game 0.
    for bad in (-1, "2", True):
        with pytest.raises(StoreError, match="a whole number from 0, got"):
            write_replay(tmp_path / "out", bad, record)  # type: ignore[arg-type]
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    events = [x.pop("event") for x in lines]
    assert events[0] == "table" and events[-1] == "result"
    assert events.count("hand") == 1 and events.count("fault") == 1
    assert events.count("late") == 1
    rebuilt = GameRecord.from_dict(
        {
            "spec": lines[0],
            "hands": [x for x, e in zip(lines, events, strict=True) if e == "hand"],
            "decisions": [x for x, e in zip(lines, events, strict=True) if e == "decision"],
            "faults": [x for x, e in zip(lines, events, strict=True) if e == "fault"],
            "late": [x for x, e in zip(lines, events, strict=True) if e == "late"],
            **lines[-1],
        }
    )
    assert rebuilt == record
    # The stored game, its replay under a folder given as a str (it was a TypeError).
    with Store.open(config.db) as store:
        store.claim(config.run_id, "batch", config.identity(), 4)
        store.save_game(config.run_id, 2, record)
        assert list(store.replays_missing(config.run_id, str(tmp_path / "out"))) == []
        assert [g for g, _ in store.replays_missing(config.run_id, str(tmp_path / "o2"))] == [2]


@pytest.mark.parametrize("ending", [Termination.INTERRUPTED, Termination.CRASH])
def test_an_interrupted_or_crashed_game_is_stored_but_not_rated(
    tmp_path: Path, ending: Termination
) -> None:
    config = build_config(bots=BOTS[:4], boards=1, db=tmp_path / "i.db")
    first, second = schedule(config)[:2]
    whole = play_record(first.spec)
    cut = dataclasses.replace(
        play_record(second.spec), termination=ending, reason="the referee stopped"
    )
    with Store.open(config.db) as store:
        store.claim(config.run_id, "batch", config.identity(), 4)
        store.save_game(config.run_id, 0, whole)
        store.save_game(config.run_id, 1, cut)
        assert store.finished(config.run_id) == {0, 1}
    [result] = load_results(config.db)
    assert result.board == whole.spec.board
    assert result.points == tuple(float(t) for t in whole.totals)
    assert len(load_results(config.db, run=config.run_id)) == 1


def test_settling_games_are_rated_by_their_placings_not_their_points(tmp_path: Path) -> None:
    # Under sweepstakes the counters won decide the places, not the points: the ratings must
    # score each pair as the game placed it (they scored by points, against the stored winner).
    config = build_config(
        bots=BOTS[:4], rules="sweepstakes", game_to=30, boards=4, db=tmp_path / "s.db"
    )
    records = {t.index: play_record(t.spec) for t in schedule(config)}
    with Store.open(config.db) as store:
        store.claim(config.run_id, "batch", config.identity(), len(records))
        for index, record in records.items():
            store.save_game(config.run_id, index, record)
    results = load_results(config.db)
    assert [r.points for r in results] == [
        tuple(float(t) for t in records[i].totals) for i in sorted(records)
    ]
    disagreeing = 0
    for result, index in zip(results, sorted(records), strict=True):
        placings = records[index].placings
        assert result.placings == placings and result_of(records[index]) == result
        by_points = sorted(range(4), key=lambda s: records[index].totals[s])
        disagreeing += by_points != sorted(
            range(4), key=lambda s: (placings[s], records[index].totals[s])
        )
        for a in range(4):
            for b in range(4):
                assert (result.standing()[a] < result.standing()[b]) == (placings[a] < placings[b])
    assert disagreeing > 0  # the case this test is about did occur
    # The fit counts the pairs the same way.
    fitted = fit(results)
    wins = {name: 0.0 for name in fitted.names}
    for result in results:
        for a in range(4):
            for b in range(4):
                if a != b and result.placings is not None:
                    pa, pb = result.placings[a], result.placings[b]
                    wins[result.players[a]] += 1.0 if pa < pb else 0.5 if pa == pb else 0.0
    for i, name in enumerate(fitted.names):
        assert fitted.pair_score[i].sum() == wins[name]

    # `arena replay` shows the settlement that decided the places.
    from arena.director.replay import _balances, replay_text

    for record in records.values():
        keys = [-b for b in _balances(record)]
        assert tuple(1 + sum(o < k for o in keys) for k in keys) == record.placings
        assert any(line.startswith("settled (sweepstakes)") for line in replay_text(record))


def test_a_link_to_a_database_in_use_is_refused_as_the_database_itself(tmp_path: Path) -> None:
    # The lock sat beside the name given: a run on a link to a database another run was
    # writing played beside it, and one of them ended in a traceback (UNIQUE constraint).
    db = tmp_path / "real.db"
    db.touch()
    (tmp_path / "link.db").symlink_to(db)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "far.db").symlink_to(Path("..") / "link.db")
    with database_locked(db, "arena run"):
        for other in (tmp_path / "link.db", tmp_path / "sub" / "far.db"):
            with pytest.raises(ConfigError, match=r"another arena run \(pid \d+\) is using"):
                database_locked(other, "arena run").__enter__()
    with database_locked(tmp_path / "link.db", "arena run"):  # free again, and links still work
        assert (tmp_path / "real.db.lock").exists()
    assert not (tmp_path / "real.db.lock").exists()


def test_a_game_stored_twice_or_of_an_unclaimed_run_is_a_store_error(tmp_path: Path) -> None:
    # Both were bare sqlite3.IntegrityErrors ("FOREIGN KEY constraint failed"), naming no game
    # and no run; a negative game index was stored.
    config = build_config(bots=BOTS, boards=1, db=tmp_path / "a.db")
    table = schedule(config)[0]
    record = play_record(table.spec)
    with Store.open(config.db) as store:
        with pytest.raises(StoreError, match=r"of run 'nope' is of a run .* claim the run"):
            store.save_game("nope", 0, record)
        store.claim(config.run_id, "batch", config.identity(), 4)
        store.save_game(config.run_id, 0, record)
        table_id = table.spec.table_id
        with pytest.raises(
            StoreError, match=rf"^game 0 \({table_id}\) of run '{config.run_id}' is already stored$"
        ):
            store.save_game(config.run_id, 0, record)
        with pytest.raises(StoreError, match=r"^game must be the game's index.*got -5$"):
            store.save_game(config.run_id, -5, record)
        # A record's dict was an AttributeError; seats that are none of the game's, ignored.
        with pytest.raises(StoreError, match=r"^game 1: save_game takes a GameRecord .* got dict$"):
            store.save_game(config.run_id, 1, record.to_dict())  # type: ignore[arg-type]
        with pytest.raises(
            StoreError,
            match=r"^game 1 \(.*\): crashed names seats \[9, 'x'\]; give seat numbers 0 to 3$",
        ):
            store.save_game(config.run_id, 1, record, crashed=(9, "x", 2))  # type: ignore[arg-type]
        assert dict(store.records(config.run_id)) == {0: record}


def test_check_writable_refuses_a_file_that_is_no_database(tmp_path: Path) -> None:
    # A text file passed, and the run then failed as it opened it.
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    with pytest.raises(ConfigError, match=r"^--db .*notes\.txt: not a database \(an SQLite file\)"):
        check_writable(notes)
    empty = tmp_path / "empty.db"
    empty.touch()
    check_writable(empty)  # SQLite makes a database of an empty file
    made = tmp_path / "made.db"
    with Store.open(made):
        pass
    check_writable(made)
    assert notes.read_text() == "hello"


def test_a_database_sqlite_may_not_write_is_said_so_not_called_another_programs(
    tmp_path: Path,
) -> None:
    # A good database on a read-only file or mount was "not a Hearts Arena database (attempt to
    # write a readonly database)"; a full disk's write was a traceback at a server's restart.
    from arena.store import cannot_write, unreadable

    path = tmp_path / "r.db"
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("CREATE TABLE t (x)")
    ro = contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True))
    with ro as reader, pytest.raises(sqlite3.OperationalError) as readonly:
        reader.execute("INSERT INTO t VALUES (1)")
    said = unreadable(path, readonly.value)
    assert said.startswith(f"{path}: cannot write the database (attempt to write a readonly")
    assert "not a Hearts Arena database" not in said
    assert said.endswith("; make the file and its folder writable and try again")
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        db.execute(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(sqlite3.OperationalError) as full:
            for _ in range(100):
                db.execute("INSERT INTO t VALUES (?)", ("x" * 4000,))
    assert cannot_write(full.value) == (
        "cannot write the database (database or disk is full); make room (or fix the disk)"
    )
    assert cannot_write(sqlite3.OperationalError("no such table: x")) is None
