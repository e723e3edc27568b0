"""The competition's own logic over a real ledger: the ladder forms fair duplicate tables,
standings follow the results, a crash loses nothing finished, an event plays its schedule.

The tables here are played in-process by the engine (test_server_support.EngineHost) so that the
ladder, the ledger and the standings are tested apart from the network; the end-to-end tests
(test_server_e2e.py) run the same code with the real referee and bot processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import math
import random
import re
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Iterable
from http import HTTPStatus
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest
from test_server_support import EngineHost, play_record

import arena.server.competition as competition_module
from arena.errors import ConfigError
from arena.server.accounts import AccountStore, hash_token
from arena.server.competition import Competition, LadderState
from arena.server.config import ServerConfig, server_config_from_dict
from arena.server.ledger import INTERRUPTED_REASON, Ledger, LedgerDB, interrupted_record
from arena.server.matchmaking import board_seed
from arena.server.webapp import AdminError, NotFoundError
from arena.table import GameRecord, TableSpec, Termination


async def opened(
    db: Path, config: ServerConfig, bots: Iterable[str], seed: int
) -> tuple[Ledger, AccountStore, Competition]:
    """The competition of ``db`` opened and loaded, with an account for each of ``bots``."""
    ledger = Ledger.open(db, config)
    accounts = AccountStore(db)
    for bot in bots:
        if bot not in {a.name for a in accounts.accounts()}:
            accounts.add(bot)
    competition = Competition(config, ledger, accounts, seed=seed)
    await competition.load()
    return ledger, accounts, competition


async def run_ladder(
    db: Path,
    config: ServerConfig,
    sessions: dict[str, int],
    games: int,
    seed: int = 1,
    length: Callable[[TableSpec], float] | None = None,
    probe: Callable[[Competition], None] | None = None,
    lobby_wakes: bool = False,
) -> tuple[dict[str, Any], EngineHost]:
    """Play until ``games`` games are recorded, then stop starting tables and wait for the rest;
    returns the standings at the end and the host (with every table it played, each taking
    ``length(spec)`` seconds if given); ``probe`` looks at the competition every 20 ms;
    ``lobby_wakes``: a table's end wakes the ladder before its record is back, as the referee's
    lobby does (a table may then start as the last one counted ends)."""
    ledger, accounts, competition = await opened(db, config, sessions, seed)
    host = EngineHost(sessions)
    host.length = length
    if lobby_wakes:
        host.on_change = competition.poke
    competition.attach(host)
    enough = asyncio.Event()

    def count(game: int, record: GameRecord) -> None:
        if competition.health()["games"] >= games:
            competition.paused = True
            enough.set()

    async def probing(probe: Callable[[Competition], None]) -> None:
        while True:
            probe(competition)
            await asyncio.sleep(0.02)

    competition.on_record(count)
    competition.start()
    probed = None if probe is None else asyncio.create_task(probing(probe))
    await asyncio.wait_for(enough.wait(), 60)
    if probed is not None:
        probed.cancel()
    await competition.wait_recorded()
    standings = competition.standings()
    await competition.close()
    ledger.close()
    accounts.close()
    return standings, host


def test_ladder_plays_every_rotation_of_each_board_and_records_it(tmp_path: Path) -> None:
    config = server_config_from_dict({"seed": 3, "fit_interval": 0})
    standings, host = asyncio.run(
        run_ladder(tmp_path / "c.db", config, {n: 1 for n in "abcd"}, games=8)
    )
    boards: dict[str, set[tuple[str, ...]]] = {}
    for spec in host.played:
        boards.setdefault(spec.board, set()).add(spec.seats)
    # One session each: the four rotations of a board come one after another.
    assert [len(s) for s in boards.values()] == [4, 4]
    with sqlite3.connect(tmp_path / "c.db") as conn:
        stored = conn.execute("SELECT COUNT(*) FROM games WHERE termination='normal'").fetchone()
        running = conn.execute("SELECT COUNT(*) FROM server_running").fetchone()
    assert stored[0] == len(host.played) and running[0] == 0
    assert {r["name"] for r in standings["bots"]} == set("abcd")
    assert all(r["games"] == len(host.played) for r in standings["bots"])


def test_many_sessions_play_rotations_at_once_and_never_overbook(tmp_path: Path) -> None:
    config = server_config_from_dict({"fit_interval": 0})
    sessions = {"a": 4, "b": 4, "c": 4, "d": 4, "e": 2, "f": 1}
    _, host = asyncio.run(run_ladder(tmp_path / "c.db", config, sessions, games=40))
    # EngineHost asserts that no bot ever sits at more tables than it has sessions.
    per_bot = Counter(b for spec in host.played for b in spec.seats)
    assert set(per_bot) == set(sessions)
    # Fairness: the bots with fewer sessions still play, within a factor of their sessions.
    assert per_bot["f"] >= 5


def test_standings_publish_a_fit_with_intervals(tmp_path: Path) -> None:
    config = server_config_from_dict({"fit_interval": 0})

    asyncio.run(run_ladder(tmp_path / "c.db", config, {n: 2 for n in "abcde"}, games=60))
    # The fitter runs in a thread as results arrive; reopen to see the fit of all of them.

    async def reopen() -> dict[str, Any]:
        ledger = Ledger.open(tmp_path / "c.db", config)
        accounts = AccountStore(tmp_path / "c.db")
        competition = Competition(config, ledger, accounts)
        await competition.load()
        competition.start()
        for _ in range(200):
            if competition.standings()["fit"]["status"] == "ok":
                break
            await asyncio.sleep(0.05)
        standings = competition.standings()
        await competition.close()
        ledger.close()
        return standings

    standings = asyncio.run(reopen())
    assert standings["fit"]["status"] == "ok", standings["fit"]
    rows = standings["bots"]
    assert isinstance(rows, list) and len(rows) == 5
    for row in rows:
        assert row["low"] <= row["elo"] <= row["high"]
        assert row["games"] > 0 and row["hands"] == row["games"]
    assert [r["rank"] for r in rows] == [1, 2, 3, 4, 5]


def test_crash_loses_nothing_finished_and_marks_running_tables_interrupted(
    tmp_path: Path,
) -> None:
    db = tmp_path / "c.db"
    config = server_config_from_dict({})
    ledger = LedgerDB(db, config)
    finished = play_record("g0", ("a", "b", "c", "d"), 11)
    running = play_record("g1", ("a", "b", "c", "d"), 12)
    committed = play_record("g2", ("a", "b", "c", "d"), 13)
    ledger.begin(
        [(0, finished.spec), (1, running.spec), (2, committed.spec)], {"next_board": 3}, 1.0
    )
    ledger.finish(0, finished, lambda: {"a": (30.0, 5.0)})
    # A crash right after the store committed game 2 but before its mark was cleared.
    ledger.store.save_game(ledger.run_id, 2, committed)
    ledger.close()  # what a kill -9 leaves is the same file; nothing else is flushed on close

    again = LedgerDB(db, config)
    with pytest.raises(ConfigError, match=r"another arena serve .* is using this database"):
        LedgerDB(db, config)  # one server per database: the second would overwrite games
    interrupted, late = again.recover(now=2.0)
    assert [g for g, _ in interrupted] == [1]
    (_, record) = interrupted[0]
    assert record.termination is Termination.INTERRUPTED and record.reason == INTERRUPTED_REASON
    # Each seat's status as in a game a stop interrupted: no seat forfeited it.
    assert record.seat_status == (Termination.NORMAL,) * 4
    assert [g for g, _ in late] == [2] and late[0][1] == committed
    again.finish(2, committed, dict)
    again.flush()
    assert [g for g, _ in again.rated_results()] == [0, 2]
    assert again.next_game() == 3
    assert again.state() == {"next_board": 3}
    tallies = again.tallies()
    assert tallies["a"].games == 2 and tallies["a"].interrupted == 1
    # Recovering twice changes nothing.
    assert again.recover(now=3.0) == ([], [])
    again.close()


def test_restart_continues_numbering_and_owed_boards(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    config = server_config_from_dict({"seed": 9})
    _, first = asyncio.run(run_ladder(db, config, {n: 1 for n in "abcd"}, games=2))
    _, second = asyncio.run(run_ladder(db, config, {n: 1 for n in "abcd"}, games=6))
    ids = [s.table_id for s in first.played + second.played]
    assert len(ids) == len(set(ids))
    # The board begun before the restart is finished after it, in its remaining rotations.
    board = first.played[0].board
    seatings = {s.seats for s in first.played + second.played if s.board == board}
    assert len(seatings) == 4


def test_a_ladder_of_single_session_bots_mixes_its_tables(tmp_path: Path) -> None:
    # When a table ends, its bots are the only ones idle: they used to sit down together again
    # at once, board after board (a soak's 12 bots met in 30 foursomes only; 9 pairs never met).
    rng = random.Random(4)
    bots = {f"b{i:02}": 1 for i in range(12)}
    config = server_config_from_dict({"seed": 3, "fit_interval": 0})
    # 360 games, 90 boards, where 240 left one pair of 66 unmet once on a machine loaded three
    # times over (the tables' lengths are real time: who is free when follows the machine);
    # in four runs beside two busy loops the fewest meetings of a pair were 8 in 240 games and
    # 12 to 16 in 360.
    _, host = asyncio.run(
        run_ladder(
            tmp_path / "c.db", config, bots, games=360, length=lambda _: rng.uniform(0.005, 0.015)
        )
    )
    met = Counter(frozenset(p) for spec in host.played for p in combinations(spec.seats, 2))
    # Every pair has played a board together (all four rotations), and no foursome more than
    # four boards (unmixed: some pairs met once or twice, and one foursome played 28 games; on a
    # quiet machine at most three boards, but with the CPU shared four ways over, who is free
    # when moved enough for one foursome to meet on a fourth board: 16 games, in CI).
    assert set(met) == {frozenset(p) for p in combinations(bots, 2)}
    assert min(met.values()) >= 4
    assert max(Counter(frozenset(spec.seats) for spec in host.played).values()) <= 16
    # Each board is still played by one group in every rotation.
    groups: dict[str, set[frozenset[str]]] = {}
    for spec in host.played:
        groups.setdefault(spec.board, set()).add(frozenset(spec.seats))
    assert all(len(g) == 1 for g in groups.values())


def test_a_group_just_ended_is_seen_free_and_met_when_the_lobby_wakes_the_ladder(
    tmp_path: Path,
) -> None:
    # The lobby wakes the ladder as a table gives its sessions back, before the game is stored:
    # the ladder took the table for running and its bots' last table for the one before, held
    # groups for no one, and seated rematches (39 % of tables with duplicate = false).
    rng = random.Random(2)
    config = server_config_from_dict({"seed": 3, "fit_interval": 0, "duplicate": False})
    bots = {f"b{i:02}": 1 for i in range(12)}
    _, host = asyncio.run(
        run_ladder(
            tmp_path / "c.db",
            config,
            bots,
            200,
            length=lambda _: rng.uniform(0.005, 0.015),
            lobby_wakes=True,
        )
    )
    last: dict[str, frozenset[str]] = {}
    rematches = 0
    for spec in host.played:
        group = frozenset(spec.seats)
        rematches += all(last.get(bot) == group for bot in group)
        last.update(dict.fromkeys(group, group))
    assert rematches <= len(host.played) // 10, rematches  # before: 71 to 75 of 200


@pytest.mark.parametrize("mix_wait", ["0s", "0.3s"])
def test_a_group_waits_for_others_at_most_mix_wait_before_a_rematch(
    tmp_path: Path, mix_wait: str, caplog: pytest.LogCaptureFixture
) -> None:
    # The table with h lasts 3 s; the other group plays its board's four rotations, then waits
    # (while h's table plays) before it sits down together again, for mix_wait and no longer.
    starts: list[tuple[frozenset[str], str, float]] = []

    def length(spec: TableSpec) -> float:
        starts.append((frozenset(spec.seats), spec.board, time.monotonic()))
        return 3.0 if "h" in spec.seats else 0.01

    config = server_config_from_dict({"seed": 3, "fit_interval": 0, "mix_wait": mix_wait})
    waiting: list[list[list[str]]] = []
    bots = dict.fromkeys("abcdefgh", 1)

    def look(competition: Competition) -> None:
        waiting.append(competition.lobby()["waiting_to_mix"])

    with caplog.at_level(logging.INFO, logger="arena.server"):
        asyncio.run(run_ladder(tmp_path / "c.db", config, bots, 5, length=length, probe=look))
    (slow,) = {group for group, _, _ in starts if "h" in group}
    quick = [(board, at) for group, board, at in starts if group != slow]
    assert len({board for board, _ in quick}) >= 2 and len(quick) >= 5
    # The first rotation of the second board, after the fourth of the first.
    gap = quick[4][1] - (quick[3][1] + 0.01)
    held = [r for r in caplog.records if r.getMessage() == "bots wait for others before a rematch"]
    if mix_wait == "0s":
        assert not held and not any(waiting)
    else:
        assert gap >= 0.29
        quick_group = next(group for group, _, _ in starts if group != slow)
        assert [r.__dict__["bots"] for r in held] == [sorted(quick_group)]
        # The lobby shows them waiting (idle, and no table forming).
        assert [sorted(quick_group)] in waiting


def test_a_paused_ladder_shows_no_group_waiting_to_mix(tmp_path: Path) -> None:
    # The groups held when the pause came stayed listed as waiting for other bots, which no
    # longer kept them from a table (the pause did).
    seen: list[tuple[list[list[str]], list[list[str]]]] = []

    def pause_once_held(competition: Competition) -> None:
        waiting = competition.lobby()["waiting_to_mix"]
        if waiting and not competition.paused:
            competition.paused = True
            seen.append((waiting, competition.lobby()["waiting_to_mix"]))

    config = server_config_from_dict({"seed": 3, "fit_interval": 0})
    bots = dict.fromkeys("abcdefgh", 1)
    slow = {"h"}

    def length(spec: TableSpec) -> float:
        return 2.0 if slow & set(spec.seats) else 0.01

    asyncio.run(
        run_ladder(tmp_path / "c.db", config, bots, 5, length=length, probe=pause_once_held)
    )
    [(before, paused)] = seen
    assert len(before) == 1 and "h" not in before[0] and paused == []


def test_a_restart_knows_who_has_met_whom(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    config = server_config_from_dict({"seed": 9, "fit_interval": 0})
    _, host = asyncio.run(run_ladder(db, config, dict.fromkeys("abcdef", 1), games=10))

    async def loaded() -> tuple[Counter[frozenset[str]], dict[str, frozenset[str]]]:
        ledger = Ledger.open(db, config)
        accounts = AccountStore(db)
        competition = Competition(config, ledger, accounts)
        await competition.load()
        try:
            return competition._meetings, competition._previous
        finally:
            await competition.close()
            ledger.close()
            accounts.close()

    meetings, previous = asyncio.run(loaded())
    played = [spec.seats for spec in host.played]
    assert meetings == Counter(frozenset(p) for seats in played for p in combinations(seats, 2))
    last = {bot: frozenset(seats) for seats in played for bot in seats}
    assert previous == last


def test_fixed_event_plays_its_schedule_once_and_is_over(tmp_path: Path) -> None:
    config = server_config_from_dict(
        {"event": {"entrants": list("abcde"), "boards": 1}, "fit_interval": 0}
    )
    db = tmp_path / "c.db"

    async def go() -> tuple[Competition, EngineHost]:
        ledger = Ledger.open(db, config)
        accounts = AccountStore(db)
        for bot in "abcdef":
            accounts.add(bot)
        competition = Competition(config, ledger, accounts, seed=2)
        await competition.load()
        host = EngineHost({n: 2 for n in "abcdef"})
        competition.attach(host)
        competition.on_record(lambda game, record: owed.append(competition.lobby()["owed_boards"]))
        competition.start()
        for _ in range(500):
            if competition.state is LadderState.OVER:
                break
            await asyncio.sleep(0.01)
        await competition.wait_recorded()
        await competition.close()
        ledger.close()
        return competition, host

    owed: list[int] = []
    competition, host = asyncio.run(go())
    assert competition.state is LadderState.OVER
    # Boards part played are owed, as the ladder's are (the lobby said 0 all event long).
    assert max(owed) > 0 and owed[-1] == competition.lobby()["owed_boards"] == 0
    # 5 groups of 4 from 5 entrants, one board each, 4 rotations: 20 tables, never bot f.
    assert len(host.played) == 20
    assert all("f" not in spec.seats for spec in host.played)
    assert len({(s.board, s.seats) for s in host.played}) == 20
    # The table id ends every GameStarted.game_id; events.proto spells an event's for bot authors.
    assert all(re.fullmatch(r"g\d+-e\d+", s.table_id) for s in host.played)
    proto = Path(__file__).resolve().parent.parent / "proto" / "hearts" / "v1" / "events.proto"
    assert 'fixed event "g<N>-e<slot>"' in proto.read_text(encoding="utf-8")

    # Started again with its start moved ahead, it is still over (it held its bots in the
    # lobby, "waiting for the event's start", with every table played).
    assert config.event is not None
    later = dataclasses.replace(
        config, event=dataclasses.replace(config.event, start=time.time() + 3600)
    )

    async def reopened() -> LadderState:
        ledger = Ledger.open(db, later)
        accounts = AccountStore(db)
        competition = Competition(later, ledger, accounts)
        await competition.load()
        try:
            return competition.state
        finally:
            await competition.close()
            ledger.close()
            accounts.close()

    assert asyncio.run(reopened()) is LadderState.OVER


def test_fixed_event_waits_for_its_start_and_stops_at_its_end(tmp_path: Path) -> None:
    config = server_config_from_dict(
        {
            "event": {
                "entrants": list("abcd"),
                "boards": 50,
                "start": "2030-01-01T00:00:00+00:00",
                "end": "2030-01-01T01:00:00+00:00",
            }
        }
    )
    assert config.event is not None and config.event.start is not None
    start, end = config.event.start, config.event.end
    assert end is not None
    now = [start - 60.0]
    db = tmp_path / "c.db"

    async def go() -> tuple[list[LadderState], int]:
        ledger = Ledger.open(db, config)
        accounts = AccountStore(db)
        for bot in "abcd":
            accounts.add(bot)
        competition = Competition(config, ledger, accounts, clock=lambda: now[0])
        await competition.load()
        host = EngineHost({n: 1 for n in "abcd"})
        competition.attach(host)
        seen = [competition.state]
        stop_after = asyncio.Event()

        def at_end(game: int, record: GameRecord) -> None:
            if len(host.played) == 3:
                now[0] = end + 1.0  # the event's end passes while the fourth table is formed
                stop_after.set()

        competition.on_record(at_end)
        competition.start()
        for _ in range(20):
            await asyncio.sleep(0)
        assert host.played == []  # nothing before the start
        now[0] = start + 1.0
        seen.append(competition.state)
        competition.poke()
        await asyncio.wait_for(stop_after.wait(), 30)
        await competition.wait_recorded()
        for _ in range(20):
            await asyncio.sleep(0)
        seen.append(competition.state)
        played = len(host.played)
        await competition.close()
        ledger.close()
        return seen, played

    seen, played = asyncio.run(go())
    assert seen == [LadderState.WAITING, LadderState.RUNNING, LadderState.OVER]
    assert played == 3


EVENT = {"entrants": ["a", "b", "c", "d"]}


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ({"move_time": 0}, r"^server config: move_time = 0; give at least 1 ms$"),
        ({"handshake": "0"}, r"^server config: handshake = '0'; give at least 1 ms$"),
        ({"move_time": float("inf")}, r"^server config: move_time = inf: give a finite duration"),
        ({"move_time": [1]}, r"^server config: move_time = \[1\]: expected a duration"),
        ({"time_bank": 99999999999999}, r"^server config: time_bank = 99999999999999: at most a"),
        # The key the file wrote, not the rules field it sets (it said "rules.target: ...").
        ({"game_to": 2**31}, r"^server config: game_to = 2147483648; the target must be 1 to 1"),
        ({"game_to": 0}, r"^server config: game_to = 0; the target must be 1 to 1000000 points$"),
        # Named as the file names them (they said "faults.max_faults ..." and "event boards ...").
        ({"max_faults": -1}, r"^server config: max_faults = -1; give 0 to 4294967295"),
        ({"max_faults": 2**32}, r"^server config: max_faults = 4294967296; give 0 to 4294967295"),
        (
            {"max_faults": 5, "strict": True},
            r"^server config: max_faults = 5 has no effect with strict = true \(a seat is forfe",
        ),
        # Past the protocol's 32 bits every table failed as it started.
        ({"hands": 99999999999}, r"^server config: hands = 99999999999; give 1 to 100000 hands"),
        ({"hands": 0}, r"^server config: hands = 0; give 1 to 100000 hands per table$"),
        ({"max_message_bytes": 10**12}, r"^server config: max_message_bytes = 1000000000000; give"),
        ({"event": {**EVENT, "boards": 0}}, r"^server config: event.boards = 0; give 1 to 100000$"),
        (
            {"event": {**EVENT, "entrants": [*"abcdefghijklmnopqrst"], "boards": 100}},
            r"^server config: \[event\] of 1938000 tables \(4845 groups of 4 x 100 boards x 4 ",
        ),
        ({"event": {"entrants": ["a", "b", "c"]}}, r"^server config: \[event\]: a 4-player round"),
        # In the file's words, not the Rules fields' (they said rules.preset, rules.moon).
        ({"rules": "nope"}, r"^server config: rules = 'nope': unknown preset 'nope': choose one"),
        ({"rule": {"moon": "sideways"}}, r"^server config: \[rule\] moon: unknown value 'sid"),
        (
            {"event": {**EVENT, "format": "gauntlet"}},
            r'^server config: event.format = "gauntlet" needs candidate = NAME, one of the '
            r"entrants \(a, b, c, d\)$",
        ),
        (
            {"event": {**EVENT, "format": "gauntlet", "candidate": "z"}},
            r"^server config: event.candidate = 'z' is not one of the entrants \(a, b, c, d\);",
        ),
    ],
)
def test_a_bad_clock_or_target_in_the_server_config_is_one_line(
    settings: dict[str, object], says: str
) -> None:
    with pytest.raises(ConfigError, match=says):
        server_config_from_dict(settings)


async def ladder_of(db: Path, bots: str) -> tuple[Ledger, AccountStore, Competition]:
    """A ladder with default settings on ``db``, an account for each of ``bots`` (one letter a
    bot), loaded and not started."""
    ledger = Ledger.open(db, ServerConfig())
    accounts = AccountStore(db)
    for bot in bots:
        accounts.add(bot)
    competition = Competition(ServerConfig(), ledger, accounts, seed=1)
    await competition.load()
    return ledger, accounts, competition


async def close_ladder(ledger: Ledger, accounts: AccountStore, competition: Competition) -> None:
    """Stop starting tables, wait for those in play to be recorded, and close it all."""
    await held(competition)
    await competition.close()
    ledger.close()
    accounts.close()


def test_a_bot_added_while_the_ladder_runs_is_seated_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The ladder keeps the account statuses for a while; a bot added meanwhile, whose session
    # completed a table, was left out of it until the lobby changed again: with three bots
    # waiting and a fourth added and connected, no table ever started. (The time is taken out
    # of the test: the statuses are kept for good here, as a quiet lobby keeps them.)
    monkeypatch.setattr(competition_module, "STATUS_TTL_S", math.inf)

    async def go() -> int:
        ledger, accounts, competition = await ladder_of(tmp_path / "comp.db", "abc")
        host = EngineHost({"a": 1, "b": 1, "c": 1})
        competition.attach(host)
        recorded = asyncio.Event()
        competition.on_record(lambda game, record: recorded.set())
        competition.start()
        for _ in range(20):
            await asyncio.sleep(0)  # the ladder looks at the lobby: three bots, no table
        assert host.played == []
        await asyncio.to_thread(accounts.add, "d")
        host.connected["d"] = 1
        competition.poke()
        await asyncio.wait_for(recorded.wait(), 60)
        await close_ladder(ledger, accounts, competition)
        return len(host.played)

    assert asyncio.run(go()) >= 1


class LeavesAsItsTableForms(EngineHost):
    """A host whose bot ``leaver`` leaves (its session ends) just after the ladder has looked
    at the lobby and formed a table with it, before the table's first step takes the seats:
    as a bot's Goodbye, sent as its last game ended, arrives after the next table is formed."""

    def __init__(self, sessions: dict[str, int], leaver: str) -> None:
        super().__init__(sessions)
        self.leaver: str | None = leaver

    def idle(self) -> dict[str, int]:
        """The lobby as the ladder sees it; the leaver goes on the loop's next turn."""
        idle = super().idle()
        if self.leaver is not None and len(idle) == 4:
            bot, self.leaver = self.leaver, None
            asyncio.get_running_loop().call_soon(self.connected.pop, bot)
        return idle


class LeavesAndComesBack(LeavesAsItsTableForms):
    """As :class:`LeavesAsItsTableForms`, its leaver back in the lobby at once (a reconnect),
    and each table's start noted (``time.monotonic()``)."""

    def __init__(self, sessions: dict[str, int], leaver: str) -> None:
        super().__init__(sessions, leaver)
        self.starts: list[float] = []

    def idle(self) -> dict[str, int]:
        """The lobby; the leaver leaves once, then is back on the loop's turn after that."""
        leaving = self.leaver
        idle = super().idle()
        if leaving is not None and self.leaver is None:
            asyncio.get_running_loop().call_later(0.01, self.comes_back, leaving)
        return idle

    def comes_back(self, bot: str) -> None:
        """``bot`` is in the lobby again, which wakes the ladder as the referee's lobby does."""
        self.connected[bot] = 1
        if self.on_change is not None:
            self.on_change()

    async def play_table(self, spec: TableSpec) -> GameRecord:
        """Note the start, then play as the engine host does."""
        self.starts.append(time.monotonic())
        return await super().play_table(spec)


def test_a_bot_that_left_a_table_as_it_formed_waits_before_it_is_seated_again(
    tmp_path: Path,
) -> None:
    # Leaving as a table formed cost nothing (an unrated game nobody played), and /api/lobby
    # listed the table first: a bot could leave every table it did not like, and an owed board
    # was formed again and again with it (161 times in 20 s).
    config = server_config_from_dict({"mix_wait": "500ms", "fit_interval": 0})

    async def go() -> tuple[float, list[float], list[list[dict[str, Any]]]]:
        ledger, accounts, competition = await opened(tmp_path / "c.db", config, "abcd", 1)
        host = LeavesAndComesBack({n: 1 for n in "abcd"}, "d")
        host.length = lambda _: 0.01
        host.on_change = competition.poke
        competition.attach(host)
        left: list[float] = []
        listed: list[list[dict[str, Any]]] = []
        real_play = competition._play

        async def play(game: int, spec: TableSpec) -> None:
            listed.append(competition.lobby()["tables"])  # before its first step takes seats
            left.append(time.monotonic())  # no later than the wait begins, in this step
            await real_play(game, spec)

        competition._play = play  # type: ignore[method-assign]
        competition.start()
        while len(host.starts) < 1:
            await asyncio.sleep(0.01)
        await close_ladder(ledger, accounts, competition)
        return left[0], host.starts, listed

    left, starts, listed = asyncio.run(go())
    assert starts[0] - left >= 0.5  # d waited out mix_wait; the others could not play without it
    assert listed[0] == []  # the table formed was not listed before its seats were taken


class KickedAsItsTableForms(LeavesAndComesBack):
    """As :class:`LeavesAndComesBack`, its leaver gone by an organiser's ``arena admin kick``
    (the competition's, set before the ladder starts) rather than by leaving on its own."""

    competition: Competition

    def idle(self) -> dict[str, int]:
        """The lobby; the leaver is kicked on the loop's next turn, then comes back."""
        leaving = self.leaver
        idle = EngineHost.idle(self)
        if leaving is not None and len(idle) == 4:
            self.leaver = None
            kick = self.competition.admin("kick", {"session": f"{leaving}#0"})
            asyncio.get_running_loop().call_soon(asyncio.ensure_future, kick)
            asyncio.get_running_loop().call_later(0.01, self.comes_back, leaving)
        return idle


def test_a_bot_kicked_as_its_table_forms_is_not_kept_waiting(tmp_path: Path) -> None:
    # The kick was taken for the bot leaving on its own: "carol left as the table formed", and
    # the bot was kept out for mix_wait (60 s); with four bots, the ladder stood still.
    config = server_config_from_dict({"mix_wait": "60s", "fit_interval": 0})

    async def go() -> tuple[list[GameRecord], list[float]]:
        ledger, accounts, competition = await opened(tmp_path / "c.db", config, "abcd", 1)
        host = KickedAsItsTableForms({n: 1 for n in "abcd"}, "d")
        host.competition = competition
        host.length = lambda _: 0.01
        host.on_change = competition.poke
        competition.attach(host)
        records: list[GameRecord] = []
        competition.on_record(lambda game, record: records.append(record))
        competition.start()
        deadline = time.monotonic() + 30  # half of mix_wait: d was not kept out
        while len(host.starts) < 1:
            assert time.monotonic() < deadline, "the kicked bot was kept waiting"
            await asyncio.sleep(0.01)
        await close_ladder(ledger, accounts, competition)
        return records, host.starts

    records, starts = asyncio.run(go())
    assert records[0].termination is Termination.INTERRUPTED and len(starts) >= 1
    assert records[0].reason == (
        "interrupted (d kicked by the organiser as the table formed) after 0 hands played"
    )


class SaysGoodbyeOnceSeated(EngineHost):
    """A host whose first table ends as the referee ends one whose bot ``leaver`` said Goodbye
    once seated, before anything of its game reached it; each table's start noted."""

    def __init__(self, sessions: dict[str, int], leaver: str) -> None:
        super().__init__(sessions)
        self.leaver: str | None = leaver
        self.starts: list[float] = []

    async def play_table(self, spec: TableSpec) -> GameRecord:
        """The first table interrupted by the leaver's Goodbye; the others played."""
        self.starts.append(time.monotonic())
        if self.leaver is None:
            return await super().play_table(spec)
        bot, self.leaver = self.leaver, None
        reason = f"interrupted ({bot} left (Goodbye) before its game started) after 0 hands played"
        return interrupted_record(spec, 0.0, 0.0, reason)


def test_a_bot_that_says_goodbye_once_seated_waits_before_it_is_seated_again(
    tmp_path: Path,
) -> None:
    # Seated, then a Goodbye before its first request: an unrated game nobody played, as for a
    # table left as it formed, but the bot was seated again at once (0.8 s, mix_wait 3 s).
    config = server_config_from_dict({"mix_wait": "500ms", "fit_interval": 0})

    async def go() -> list[float]:
        ledger, accounts, competition = await opened(tmp_path / "c.db", config, "abcd", 1)
        host = SaysGoodbyeOnceSeated({n: 1 for n in "abcd"}, "d")
        host.length = lambda _: 0.01
        host.on_change = competition.poke
        competition.attach(host)
        competition.start()
        while len(host.starts) < 2:
            await asyncio.sleep(0.01)
        await close_ladder(ledger, accounts, competition)
        return host.starts

    first, second, *_ = asyncio.run(go())
    assert second - first >= 0.5


def test_a_bot_that_leaves_as_its_table_forms_makes_it_unplayed_not_its_forfeit(
    tmp_path: Path,
) -> None:
    # The referee waited for it (the handshake clock, then the grace period), then forfeited
    # it as a disconnect, a rated game, the other three bots held meanwhile (an audit: 7 s).
    async def go() -> tuple[GameRecord, EngineHost]:
        ledger, accounts, competition = await ladder_of(tmp_path / "comp.db", "abcd")
        host = LeavesAsItsTableForms({n: 1 for n in "abcd"}, "d")
        competition.attach(host)
        records: list[GameRecord] = []
        recorded = asyncio.Event()

        def keep(game: int, record: GameRecord) -> None:
            records.append(record)
            recorded.set()

        competition.on_record(keep)
        competition.start()
        await asyncio.wait_for(recorded.wait(), 60)
        await close_ladder(ledger, accounts, competition)
        return records[0], host

    record, host = asyncio.run(go())
    assert record.termination is Termination.INTERRUPTED
    assert record.reason == "interrupted (d left as the table formed) after 0 hands played"
    assert record.seat_status == (Termination.NORMAL,) * 4  # nobody's forfeit
    assert host.played == [] and host.busy == {}  # no game; the others were never held
    ledger = LedgerDB(tmp_path / "comp.db", ServerConfig())
    try:
        assert ledger.rated_results() == []
        assert ledger.tallies()["d"].interrupted == 1
    finally:
        ledger.close()


async def _plays_despite_a_stale_look(tmp_path: Path, change: str) -> tuple[list[str], int]:
    """Four accounts, d's changed after the ladder last read the accounts (``change``: "unban"
    or "new token"), then d connects as its token check allows: what the ladder kicked, and
    how many tables it played."""
    db = tmp_path / "comp.db"
    ledger = Ledger.open(db, ServerConfig())
    accounts = AccountStore(db)
    tokens = {bot: accounts.add(bot) for bot in "abcd"}
    if change == "unban":
        accounts.ban("d", "cheats")
    competition = Competition(ServerConfig(), ledger, accounts, seed=1)
    await competition.load()
    host = EngineHost({"a": 1, "b": 1, "c": 1})
    host.tokens = {bot: hash_token(token) for bot, token in tokens.items()}
    competition.attach(host)
    recorded = asyncio.Event()
    competition.on_record(lambda game, record: recorded.set())
    competition.start()
    for _ in range(20):
        await asyncio.sleep(0)  # the ladder reads the statuses: three bots, no table
    # The look the watcher takes once a second, taken just before the change.
    competition._tokens = {n: d for n, d in accounts.token_digests().items() if d is not None}
    if change == "unban":
        await asyncio.to_thread(accounts.unban, "d")
    else:
        token = await asyncio.to_thread(accounts.add, "d", new_token_for_existing=True)
        host.tokens["d"] = hash_token(token)  # d connects with its new token
    host.connected["d"] = 1
    competition.poke()
    with contextlib.suppress(TimeoutError):  # a table of four, or d ended: no table
        await asyncio.wait_for(recorded.wait(), 5)
    await held(competition)
    await competition.close()
    ledger.close()
    accounts.close()
    return host.kicked, len(host.played)


@pytest.mark.parametrize("change", ["unban", "new token"])
def test_a_bot_let_in_just_after_an_offline_change_is_not_ended_by_an_older_look(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    # The ladder keeps the accounts' statuses and token digests for a second. A bot that
    # connected within it after `arena bots unban` was welcomed (its token check reads the
    # database), then ended for good as banned; one that connected with the token `arena bots
    # add --new-token` had just given, as on the replaced one (3 times in 4 or 5 by hand).
    # The statuses are kept for good here, as the second between two looks keeps them.
    monkeypatch.setattr(competition_module, "STATUS_TTL_S", math.inf)
    kicked, played = asyncio.run(_plays_despite_a_stale_look(tmp_path, change))
    assert kicked == [] and played >= 1


def test_a_board_begun_by_an_older_server_is_finished_with_its_own_seed_and_rules(
    tmp_path: Path,
) -> None:
    # An older server's database: no secret, a board whose seed anyone could compute from its
    # name, its first rotation played passing left, three rotations owed.
    db = tmp_path / "c.db"
    config = server_config_from_dict({"seed": 9, "fit_interval": 0})
    old = LedgerDB(db, config)
    first = play_record("g0", ("a", "b", "c", "d"), 12345, board="9:1")
    assert first.spec.rules == config.rules  # every table passed left, whatever its board
    group = ["a", "b", "c", "d"]
    owed = [{"board": "9:1", "seed": 12345, "group": group, "rotations": [1, 2, 3], "created": 1}]
    old.begin([(0, first.spec)], {"next_board": 2, "owed": owed}, 1.0)
    old.finish(0, first, dict)
    old._db.execute("DELETE FROM server_secret")
    old.close()

    _, host = asyncio.run(run_ladder(db, config, {n: 1 for n in "abcd"}, games=5))
    rest = [s for s in host.played if s.board == "9:1"]
    # The same cards and the same pass in every rotation: duplicate play holds across versions.
    assert len(rest) == 3 and {(s.seed, s.rules) for s in rest} == {(12345, config.rules)}
    # A new board passes by its number (board 2: across) and is keyed by the new secret.
    new = next(s for s in host.played if s.board == "9:2")
    assert new.rules.pass_direction(0).value == "across" and new.seed != 12345
    with sqlite3.connect(db) as conn:
        (secret,) = conn.execute("SELECT secret FROM server_secret").fetchone()
    assert new.seed == board_seed(secret, 9, 2)


def test_a_game_a_crash_cut_off_ends_when_the_server_was_last_seen_not_at_the_restart(
    tmp_path: Path,
) -> None:
    # Its finished_at was the restart's time: a server down for a day showed the game finished
    # a day after it was cut off.
    config = server_config_from_dict({})
    ledger = LedgerDB(tmp_path / "c.db", config)
    done = dataclasses.replace(
        play_record("g0", ("a", "b", "c", "d"), 11), started_at=100.0, finished_at=150.0
    )
    cut = play_record("g1", ("a", "b", "c", "d"), 12)
    late = play_record("g2", ("a", "b", "c", "d"), 13)
    ledger.begin([(0, done.spec), (1, cut.spec)], {}, 100.0)
    ledger.finish(0, done, dict)
    ledger.begin([(2, late.spec)], {}, 160.0)  # started after the last game stored
    ledger.close()
    again = LedgerDB(tmp_path / "c.db", config)
    interrupted, _ = again.recover(now=86_400.0)
    ends = {game: (record.started_at, record.finished_at) for game, record in interrupted}
    assert ends == {1: (100.0, 150.0), 2: (160.0, 160.0)}
    again.close()


@pytest.mark.parametrize(("done", "cut", "owed"), [((0,), 1, [2, 3]), ((0, 1, 2), 3, [])])
def test_a_duplicate_rotation_a_crash_cut_short_is_dealt_again(
    tmp_path: Path, done: tuple[int, ...], cut: int, owed: list[int]
) -> None:
    # Recorded as interrupted, the rotation was never dealt again: the board was scored on the
    # seatings played to the end only. Rotation r seats bot i of the group at seat (i + r) % 4.
    db = tmp_path / "c.db"
    config = server_config_from_dict({"seed": 9, "fit_interval": 0})
    group = ("a", "b", "c", "d")

    def seats(rotation: int) -> tuple[str, ...]:
        return tuple(group[(s - rotation) % 4] for s in range(4))

    ledger = LedgerDB(db, config)
    records = [play_record(f"g{r}", seats(r), 12345, board="9:1") for r in (*done, cut)]
    board = {"board": "9:1", "seed": 12345, "group": group, "rotations": owed, "created": 1}
    state = {"next_board": 2, "owed": [board]}
    ledger.begin([(r, rec.spec) for r, rec in enumerate(records)], state, 1.0)
    for r, record in enumerate(records[:-1]):
        ledger.finish(r, record, dict)
    ledger.close()  # the cut rotation is still marked running: a crash

    _, host = asyncio.run(run_ladder(db, config, {n: 1 for n in "abcd"}, games=len(done) + 6))
    again = [s for s in host.played if s.board == "9:1"]
    assert sorted(s.seats for s in again) == sorted(seats(r) for r in (cut, *owed))
    assert {s.seed for s in again} == {12345}


def test_no_table_seats_a_bot_while_its_ban_is_being_written(tmp_path: Path) -> None:
    # A table formed while a ban waited for the database read the bot as still active: it was
    # seated, the ban then ended its session, and its seat forfeited a rated game it never sat.
    db = tmp_path / "c.db"
    config = server_config_from_dict({"seed": 3, "fit_interval": 0})

    async def go() -> tuple[list[tuple[str, ...]], dict[str, Any]]:
        ledger = Ledger.open(db, config)
        accounts = AccountStore(db)
        for bot in "abce":
            accounts.add(bot)
        competition = Competition(config, ledger, accounts, seed=1)
        await competition.load()
        host = EngineHost(dict.fromkeys("abce", 1))
        competition.attach(host)
        competition.paused = True
        competition.start()
        # Another program holds the database's write lock: the ban waits for it.
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            ban = asyncio.create_task(competition.admin("ban", {"bot": "e"}))
            for _ in range(20):
                await asyncio.sleep(0)
            assert not ban.done()  # waiting for the lock, in its thread
            competition.paused = False  # the ladder forms tables meanwhile
            competition.poke()
            for _ in range(50):
                await asyncio.sleep(0)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        answer = await asyncio.wait_for(ban, 30)
        competition.poke()
        for _ in range(50):
            await asyncio.sleep(0)
        await competition.wait_recorded()
        planned = [spec.seats for spec in host.played]
        planned += [r.spec.seats for r in competition._running.values()]
        await competition.close()
        ledger.close()
        accounts.close()
        return planned, answer

    planned, answer = asyncio.run(go())
    assert answer == {"banned": "e", "sessions_ended": 1}
    # Three bots left: no table at all, and none with the banned bot.
    assert planned == []


def test_an_entrant_without_an_account_has_no_games_yet_not_no_such_bot(tmp_path: Path) -> None:
    # /api/games?bot=z answered 404 "no bot named 'z': /api/standings lists the bots", for an
    # entrant the standings list (as "unknown") until its account is added.
    config = server_config_from_dict({"event": {"entrants": list("abcz"), "boards": 1}})

    async def go() -> list[dict[str, Any]]:
        ledger, accounts, competition = await opened(tmp_path / "c.db", config, "abc", 2)
        try:
            with pytest.raises(NotFoundError, match="no bot named 'y'"):
                await competition.recent(10, None, "y")
            return await competition.recent(10, None, "z")
        finally:
            await competition.close()
            ledger.close()
            accounts.close()

    assert asyncio.run(go()) == []


def test_recent_games_are_read_once_per_game_stored(tmp_path: Path) -> None:
    # Each /api/games read the database: four clients polling it slowed the ladder sevenfold.
    # The answer is kept until a game is stored (or for RECENT_TTL_S).
    config = server_config_from_dict({"seed": 3, "fit_interval": 0})

    async def go() -> tuple[bool, bool, int, int]:
        ledger, accounts, competition, _ = await two_games_played(tmp_path, config)
        await held(competition)
        first = await competition.recent(500, None, None)
        again = await competition.recent(500, None, None)
        other = await competition.recent(1, None, None)
        competition.paused = False
        competition.poke()
        while competition.health()["games"] <= len(first):
            await asyncio.sleep(0.01)
        await held(competition)
        later = await competition.recent(500, None, None)
        stored = competition.health()["games"]
        await competition.close()
        ledger.close()
        accounts.close()
        return again is first, other is first, len(later), stored

    same, other_query_shared, later, stored = asyncio.run(go())
    assert same and not other_query_shared
    assert later == stored  # a game stored since: a new answer, with it


def test_the_published_fits_message_counts_in_the_singular_too() -> None:
    # It read "from 4 results on 1 boards" on the leaderboard.
    from arena.ratings import TableResult
    from arena.server.competition import compute_fit

    rotations = [tuple("ABCD"[(s - r) % 4] for s in range(4)) for r in range(4)]
    one = [TableResult("b0", seats, (0.0, 5.0, 8.0, 13.0)) for seats in rotations]
    assert "from 4 results on 1 board; refitted" in compute_fit(one, 1).message


def test_a_ladder_with_a_bot_left_over_deals_each_board_in_every_rotation(tmp_path: Path) -> None:
    # Thirteen bots of one session: the one left over as a table ended took three of its bots,
    # and their board's other rotations waited for them to be idle together again, seldom.
    rng = random.Random(5)
    bots = {f"b{i:02}": 1 for i in range(13)}
    config = server_config_from_dict({"seed": 3, "fit_interval": 0})
    owed: list[int] = []
    _, host = asyncio.run(
        run_ladder(
            tmp_path / "c.db",
            config,
            bots,
            games=300,
            length=lambda _: rng.uniform(0.005, 0.015),
            probe=lambda competition: owed.append(competition.lobby()["owed_boards"]),
        )
    )
    rotations = Counter(spec.board for spec in host.played)
    assert max(owed) <= 5, max(owed)
    # All but the last few boards were played in all four rotations.
    assert sum(n < 4 for n in rotations.values()) <= 5, rotations


async def two_games_played(
    tmp_path: Path, config: ServerConfig
) -> tuple[Ledger, AccountStore, Competition, EngineHost]:
    """A ladder of four one-session bots at tables of 10 ms, running, with two games stored."""
    ledger, accounts, competition = await opened(tmp_path / "c.db", config, "abcd", 1)
    host = EngineHost(dict.fromkeys("abcd", 1))
    host.length = lambda _: 0.01
    host.on_change = competition.poke  # as the referee's lobby wakes the ladder
    competition.attach(host)
    competition.start()
    while competition.health()["games"] < 2:
        await asyncio.sleep(0.01)
    return ledger, accounts, competition, host


async def held(competition: Competition) -> None:
    """Pause the ladder and wait until every table it started is recorded (a batch being
    committed as the pause came included: ``wait_recorded`` missed it, and its game was then
    played and stored after the caller thought the ladder still)."""
    competition.paused = True
    await competition.wait_recorded()


async def four_more_and_closed(
    ledger: Ledger, accounts: AccountStore, competition: Competition, games: int
) -> dict[str, Any]:
    """The health once four games past ``games`` are stored and the rest recorded; all closed."""
    while competition.health()["games"] < games + 4:
        await asyncio.sleep(0.01)
    await held(competition)
    after = competition.health()
    await competition.close()
    ledger.close()
    accounts.close()
    return after


def query_only(on: bool) -> Callable[[LedgerDB], None]:
    """A ledger write that makes the database refuse every write (or take them again), as a
    read-only file or a disk error does: the games' connection and the ladder's own."""

    def set_it(db: LedgerDB) -> None:
        for conn in (db.store._db, db._db):
            conn.execute(f"PRAGMA query_only = {int(on)}")

    return set_it


async def cannot_store(competition: Competition) -> dict[str, Any]:
    """The health once it says ``cannot-store``."""
    deadline = time.monotonic() + 60
    while competition.health()["status"] != "cannot-store":
        assert time.monotonic() < deadline, "the database's refusal was never noticed"
        await asyncio.sleep(0.01)
    return competition.health()


def test_a_full_disk_holds_the_ladder_and_loses_no_game(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # On a full disk the game's commit failed (its error hidden by a failed ROLLBACK), the game
    # was dropped though played to its end, the next tables started and were lost too, and the
    # health said "ok"; a failure while forming tables stalled the ladder for good. The disk is
    # "full" here as SQLite makes it: no page may be added to the file.
    monkeypatch.setattr("arena.server.ledger.FULL_RETRY_S", 0.05, raising=False)
    config = server_config_from_dict({"seed": 3, "fit_interval": 0})

    def cap(pages: int | None) -> Callable[[LedgerDB], None]:
        def set_cap(db: LedgerDB) -> None:
            # The game store's connection only: a table's start, a small write, still fits (as
            # on a real disk with free pages), and the ladder must not start tables meanwhile.
            conn = db.store._db
            now = conn.execute("PRAGMA page_count").fetchone()[0]
            conn.execute(f"PRAGMA max_page_count = {now if pages is None else pages}")

        return set_cap

    async def play() -> tuple[list[dict[str, Any]], int, int]:
        ledger, accounts, competition, host = await two_games_played(tmp_path, config)
        await ledger.write(cap(None))  # full from now on
        stuck = await cannot_store(competition)
        played_then = len(host.played)
        seen = []
        for _ in range(30):  # 0.3 s: thirty tables' time
            seen.append(competition.health())
            await asyncio.sleep(0.01)
        played_while_full = len(host.played) - played_then
        await ledger.write(cap(1 << 30))  # space freed
        after = await four_more_and_closed(ledger, accounts, competition, stuck["games"])
        return [stuck, *seen, after], played_while_full, len(host.played)

    with caplog.at_level(logging.INFO, logger="arena.server"):
        seen, played_while_full, played = asyncio.run(play())
    stuck, *full, after = seen
    assert "database or disk is full" in stuck["error"], stuck
    # While full, no game was counted (the ones played wait to be stored) and no table started
    # but one formed as the disk filled (its start queued behind the first failed record).
    assert all(h["status"] == "cannot-store" and h["games"] == stuck["games"] for h in full)
    assert played_while_full <= 1  # before: 21
    assert after["status"] == "ok" and after["error"] is None
    assert not any(r.getMessage() == "committing a game failed" for r in caplog.records)
    said = {r.getMessage() for r in caplog.records}
    assert "the database's disk has room again" in said  # not "free again", a lock's words
    assert "the database is free again" not in said
    with sqlite3.connect(tmp_path / "c.db") as db:
        (stored,) = db.execute("SELECT COUNT(*) FROM games WHERE termination = 'normal'").fetchone()
    assert stored == after["games"] == played


def test_a_tables_start_queued_behind_a_refused_record_waits_with_it(tmp_path: Path) -> None:
    # The start was handed to the writer thread before the record's refusal was known, and,
    # small, fitted on the full disk: one more table played a game that could not be stored.
    ledger = Ledger.open(tmp_path / "c.db", server_config_from_dict({"seed": 3}))
    ran: list[str] = []

    def record(db: LedgerDB) -> None:
        db._db.execute("CREATE TABLE IF NOT EXISTS t (x)")

    def start(db: LedgerDB) -> None:
        ran.append("start")

    async def play() -> tuple[BaseException | None, BaseException | None]:
        await ledger.write(query_only(True))
        refused = ledger.submit(record)  # the record, then the start, queued in this order
        start_after = asyncio.ensure_future(ledger.write(start, gated=True))
        results = await asyncio.gather(refused, start_after, return_exceptions=True)
        await ledger.write(start)  # an ungated write runs, as the record's retry would
        await ledger.write(query_only(False))
        await ledger.write(start, gated=True)  # once a write succeeds, starts run again
        first, second = (r if isinstance(r, BaseException) else None for r in results)
        return first, second

    try:
        first, second = asyncio.run(play())
    finally:
        ledger.close()
    assert isinstance(first, sqlite3.OperationalError) and second is first
    assert ran == ["start", "start"]


def test_a_drain_while_a_tables_start_waits_for_the_disk_ends_at_once_and_closes_clean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A SIGTERM while a table's start waited for room waited out the retry (10 s), logged
    # "forming tables failed" with a traceback, and the ledger's close raised on the refused
    # write: the drained server exited 1 with a failed start's words. Here the retry is an hour.
    monkeypatch.setattr("arena.server.ledger.FULL_RETRY_S", 3600.0, raising=False)
    config = server_config_from_dict({"seed": 3, "fit_interval": 0})

    async def play() -> tuple[dict[str, Any], int]:
        ledger, accounts, competition, _ = await two_games_played(tmp_path, config)
        await held(competition)  # no record left to store: only a start will wait
        await ledger.write(query_only(True))
        competition.paused = False
        competition.poke()
        stuck = await cannot_store(competition)
        left = await asyncio.wait_for(competition.drain(60.0), timeout=600)
        await competition.close()
        ledger.close()  # raised the refused write's error
        accounts.close()
        return stuck, left

    with caplog.at_level(logging.INFO, logger="arena.server"):
        stuck, left = asyncio.run(play())
    assert "readonly database" in stuck["error"] and left == 0, stuck
    waited = [r for r in caplog.records if getattr(r, "waiting", None) == "starting tables"]
    assert waited, "the table's start never waited"
    assert not any(r.getMessage() == "forming tables failed" for r in caplog.records)


def test_a_stop_while_a_finished_game_waits_for_the_disk_says_so_and_the_next_start_records_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # The stop logged "committing a game failed" with a traceback, and the next start's record
    # named a crash or a kill for a game played to its end under a clean stop.
    monkeypatch.setattr("arena.server.ledger.FULL_RETRY_S", 3600.0, raising=False)
    config = server_config_from_dict({"seed": 3, "fit_interval": 0})

    async def play() -> int:
        ledger, accounts, competition, _ = await two_games_played(tmp_path, config)
        await ledger.write(query_only(True))
        stuck = await cannot_store(competition)  # a finished game's record waits
        await asyncio.wait_for(competition.drain(60.0), timeout=600)
        await competition.wait_recorded()
        await competition.close()
        ledger.close()
        accounts.close()
        return int(stuck["games"])

    with caplog.at_level(logging.INFO, logger="arena.server"):
        stored = asyncio.run(play())
    said = [r for r in caplog.records if r.getMessage() == competition_module.UNSTORED_AT_STOP]
    assert said and all(r.levelno == logging.ERROR and not r.exc_info for r in said)
    assert not any(r.getMessage() == "committing a game failed" for r in caplog.records)
    again = LedgerDB(tmp_path / "c.db", config)
    try:
        interrupted, _ = again.recover(now=time.time())
    finally:
        again.close()
    assert sorted(g for g, _ in interrupted) == sorted(r.game for r in said)  # type: ignore[attr-defined]
    assert all(g >= stored for g, _ in interrupted)
    assert {record.reason for _, record in interrupted} == {INTERRUPTED_REASON}


def test_an_unwritable_database_holds_the_ladder_and_loses_no_game(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A write refused for another reason than a full disk (here a read-only connection, as a
    # read-only file or a disk error refuses it) lost the game's record at once, /api/health
    # said ok while the ladder retried in silence, and `arena admin pause` was a 500.
    monkeypatch.setattr("arena.server.ledger.FULL_RETRY_S", 0.05, raising=False)
    config = server_config_from_dict({"seed": 3, "fit_interval": 0})

    async def play() -> tuple[dict[str, Any], dict[str, Any], str, int]:
        ledger, accounts, competition, host = await two_games_played(tmp_path, config)
        await ledger.write(query_only(True))
        stuck = await cannot_store(competition)
        with pytest.raises(AdminError) as refused:
            await competition.admin("pause", {})
        await ledger.write(query_only(False))
        after = await four_more_and_closed(ledger, accounts, competition, stuck["games"])
        assert refused.value.status == HTTPStatus.SERVICE_UNAVAILABLE
        return stuck, after, str(refused.value), len(host.played)

    with caplog.at_level(logging.INFO, logger="arena.server"):
        stuck, after, refusal, played = asyncio.run(play())
    assert "readonly database" in stuck["error"], stuck
    assert refusal.startswith("pause not done: cannot write the database (attempt to write a "), (
        refusal
    )
    assert after["status"] == "ok" and after["error"] is None
    said = {r.getMessage() for r in caplog.records}
    assert "the database can be written again" in said
    assert not any(r.getMessage() == "committing a game failed" for r in caplog.records)
    with sqlite3.connect(tmp_path / "c.db") as db:
        (stored,) = db.execute("SELECT COUNT(*) FROM games WHERE termination = 'normal'").fetchone()
    assert stored == after["games"] == played


def test_a_pause_not_stored_in_time_says_so_and_takes_effect_once_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Behind game commits each waiting out a lock, a pause took over 30 s: the command said it
    # could not reach the server, and the pause was then done all the same.
    monkeypatch.setattr(competition_module, "ADMIN_WRITE_WAIT_S", 0.2)
    config = server_config_from_dict({"seed": 3, "fit_interval": 0})

    async def go() -> tuple[str, str, str]:
        ledger, accounts, competition = await opened(tmp_path / "c.db", config, "abcd", 1)
        try:
            with contextlib.closing(sqlite3.connect(tmp_path / "c.db", isolation_level=None)) as db:
                db.execute("BEGIN IMMEDIATE")
                try:
                    with pytest.raises(AdminError) as refused:
                        await competition.admin("pause", {})
                    before = competition.state.value
                finally:
                    db.execute("ROLLBACK")
            while not competition.paused:  # stored once the lock goes: in force then
                await asyncio.sleep(0.01)
            return str(refused.value), before, competition.state.value
        finally:
            await competition.close()
            ledger.close()
            accounts.close()

    said, before, after = asyncio.run(go())
    assert said.startswith("pause not stored yet: another program keeps the database locked")
    assert (before, after) == ("running", "paused")
