"""The competition server's live rating: a game whose store was given up (another program kept
the database locked for minutes) is not counted in it, as a restart does not count it."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from test_server_support import EngineHost

import arena.server.ledger as ledger_module
import arena.store as store_module
from arena.server.accounts import AccountStore
from arena.server.competition import Competition
from arena.server.config import ServerConfig
from arena.server.ledger import Ledger
from arena.table import GameRecord, Termination

BOTS = ("a", "b", "c", "d")


def live_ratings(competition: Competition) -> dict[str, tuple[Any, Any]]:
    """Every bot's live (mu, sigma) as the standings show it."""
    return {r["name"]: (r["live_mu"], r["live_sigma"]) for r in competition.standings()["bots"]}


async def wait_until(what: Any) -> None:
    """Let the loop run until ``what()`` holds (a bound only against a hang)."""
    for _ in range(10_000):
        if what():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never: {what}")


def test_a_game_whose_store_is_given_up_is_not_counted_in_the_live_rating(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The live rating counted a game as soon as it ended, before its store: a store given up
    # (minutes of a locked database) left it counted for matchmaking until the next start,
    # whose live rating (read from the database) did not count it. The minutes are taken out:
    # one attempt after the first, and a short busy timeout for each.
    monkeypatch.setattr(ledger_module, "BUSY_RETRY_DELAYS_S", (0.0,))
    monkeypatch.setattr(store_module, "_BUSY_TIMEOUT_MS", 50)
    db = tmp_path / "comp.db"
    config = ServerConfig()

    async def open_competition() -> tuple[Competition, Ledger, AccountStore, list[int]]:
        ledger = Ledger.open(db, config)
        accounts = AccountStore(db)
        competition = Competition(config, ledger, accounts, seed=1)
        interrupted = await competition.load()
        return competition, ledger, accounts, [game for game, _ in interrupted]

    async def first_start() -> dict[str, tuple[Any, Any]]:
        competition, ledger, accounts, _ = await open_competition()
        for bot in BOTS:
            await asyncio.to_thread(accounts.add, bot)
        host = EngineHost(dict.fromkeys(BOTS, 1))  # one table at a time
        competition.attach(host)
        stored = asyncio.Event()

        def first(game: int, record: GameRecord) -> None:
            competition.paused = True  # no table after game 0 until the test says so
            stored.set()

        competition.on_record(first)
        competition.start()
        await asyncio.wait_for(stored.wait(), 60)
        await competition.wait_recorded()
        # Game 1 starts (the database is free), and waits at the gate with its four bots.
        host.gate = asyncio.Event()
        competition.paused = False
        competition.poke()
        await wait_until(lambda: sum(host.busy.values()) == len(BOTS))
        competition.paused = True  # nothing starts after it
        with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as holder:
            holder.execute("BEGIN IMMEDIATE")
            try:
                host.gate.set()  # game 1 ends while the database is locked: its store is given up
                await competition.wait_recorded()
                assert competition.health()["games"] == 1
                live = live_ratings(competition)
            finally:
                holder.execute("ROLLBACK")
        await competition.close()
        ledger.close()
        accounts.close()
        return live

    async def restart() -> tuple[dict[str, tuple[Any, Any]], list[int]]:
        competition, ledger, accounts, interrupted = await open_competition()
        try:
            return live_ratings(competition), interrupted
        finally:
            await competition.close()
            ledger.close()
            accounts.close()

    before = asyncio.run(first_start())
    after, interrupted = asyncio.run(restart())
    assert interrupted == [1]
    with contextlib.closing(sqlite3.connect(db)) as conn:
        games = conn.execute("SELECT game, termination FROM games ORDER BY game").fetchall()
    # Game 1 was never stored: the restart records it as interrupted (not rated).
    assert games == [(0, "normal"), (1, Termination.INTERRUPTED.value)]
    assert all(mu is not None for mu, _ in before.values()), before  # game 0 counted
    assert before == after
