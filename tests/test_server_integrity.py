"""The competition server deals fair boards and keeps them secret while they are played.

``arena serve`` runs as a process on loopback with bot processes and its own SQLite file:

* a table of one hand passes in the direction of its board's number (left, right, across, hold,
  as `arena run` deals), the same in every rotation of the board, on the ladder and in an event;
* a board's seed is keyed by a secret the database keeps (made at its first start, the same
  after a restart, never served), so that a board's public name says nothing of its cards;
* while a rotation of a board is running or owed, the API (and so the page) withholds the seed
  and the cards of the board's finished games, saying why; once the board is done, all is shown.
"""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_server_browser import CHROMIUM, INSTALL, browse
from test_server_support import ServerProcess

from arena.server.matchmaking import board_seed

CYCLE = ("left", "right", "across", "hold")
"""The four-player pass cycle: board n passes CYCLE[n % 4]."""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path / "comp.db", 'fit_interval = "100ms"\nmove_time = "2s"\n')
    yield process
    process.close()


def start_four(server: ServerProcess, names: str = "abcd") -> dict[str, str]:
    """Add four bots, start the server and the bots; their tokens."""
    tokens = {name: server.add_bot(name) for name in names}
    server.start()
    for name in names:
        server.bot(name, tokens[name], "low")
    return tokens


def games(server: ServerProcess) -> int:
    return int(server.get("/api/health")["games"])


def directions_by_board(db: Path) -> dict[str, list[str]]:
    """Each stored board's pass directions, one per hand of each of its games."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT g.board, h.pass_direction FROM games g JOIN hands h"
            " ON h.run_id = g.run_id AND h.game = g.game ORDER BY g.game, h.number"
        ).fetchall()
    boards: dict[str, list[str]] = {}
    for board, direction in rows:
        boards.setdefault(board, []).append(direction)
    return boards


def test_ladder_boards_pass_by_their_number_in_every_rotation(server: ServerProcess) -> None:
    # One session each: the rotations of a board come one after another, board after board.
    start_four(server)
    server.wait_for(lambda: games(server) >= 12)
    assert server.terminate() == 0
    boards = directions_by_board(server.db)
    full = {b: d for b, d in boards.items() if len(d) == 4}
    assert len(full) >= 3, boards
    for board, directions in full.items():
        number = int(board.rsplit(":", 1)[1])
        assert directions == [CYCLE[number % 4]] * 4, (board, directions)
    # Not all left any more (the audit found every stored ladder hand passing left).
    assert {d for ds in boards.values() for d in ds} >= {"left", "right", "across"}


def test_event_boards_pass_every_way_alike_in_their_rotations(server: ServerProcess) -> None:
    server.config_path.write_text(
        'fit_interval = "100ms"\nmove_time = "2s"\n'
        '[event]\nentrants = ["a", "b", "c", "d"]\nboards = 4\n'
    )
    start_four(server)
    server.wait_for(lambda: server.get("/api/health")["event"]["done"] == 16)
    assert server.terminate() == 0
    boards = directions_by_board(server.db)
    assert len(boards) == 4
    assert sorted(d[0] for d in boards.values()) == sorted(CYCLE)
    for board, directions in boards.items():
        assert directions == [directions[0]] * 4, (board, directions)
    # The event's seeds are keyed by the secret too: its schedule is public.
    secret, seeds = stored_seeds(server.db)
    for board, dealt in seeds.items():
        seed, index = map(int, board.split(":"))
        assert set(dealt) == {board_seed(secret, seed, index)}


def test_tables_of_several_hands_keep_the_cycle(server: ServerProcess) -> None:
    server.config_path.write_text('fit_interval = "100ms"\nmove_time = "2s"\nhands = 3\n')
    start_four(server)
    server.wait_for(lambda: games(server) >= 5)
    assert server.terminate() == 0
    for board, directions in directions_by_board(server.db).items():
        per_game = [directions[i : i + 3] for i in range(0, len(directions), 3)]
        assert all(d == ["left", "right", "across"] for d in per_game), (board, directions)


def stored_seeds(db: Path) -> tuple[str, dict[str, list[int]]]:
    """The database's secret, and the seed of each stored game of each board."""
    with sqlite3.connect(db) as conn:
        (secret,) = conn.execute("SELECT secret FROM server_secret").fetchone()
        seeds: dict[str, list[int]] = {}
        for board, seed in conn.execute("SELECT board, seed FROM games ORDER BY game"):
            seeds.setdefault(board, []).append(seed)
    return secret, seeds


def public_texts(server: ServerProcess) -> str:
    """Everything the page's API serves without a login, as text."""
    texts = [json.dumps(server.get(p)) for p in ("/api/health", "/api/standings", "/api/lobby")]
    listed = server.get("/api/games?limit=500")
    texts.append(json.dumps(listed))
    texts += [json.dumps(server.get(f"/api/games/{g['game']}")) for g in listed["games"]]
    return "\n".join(texts)


def test_board_seeds_are_keyed_by_a_secret_the_database_keeps(server: ServerProcess) -> None:
    tokens = start_four(server)
    server.wait_for(lambda: games(server) >= 6)
    served = public_texts(server)
    assert server.terminate() == 0
    secret, seeds = stored_seeds(server.db)
    assert len(secret) == 64 and secret not in served
    for board, dealt in seeds.items():
        seed, index = map(int, board.split(":"))
        # One deal per board, keyed by the secret: not the seed anyone could compute from the
        # board's name (as before), which the lobby and the games list show.
        assert set(dealt) == {board_seed(secret, seed, index)}
        assert set(dealt) != {random.Random(board).getrandbits(63)}
    # A restart keeps the secret: the boards dealt after it (and a board begun before it and
    # finished after) are keyed by the same one.
    server.stop_bots()
    before = {board: len(dealt) for board, dealt in seeds.items()}
    server.start()
    for name, token in tokens.items():
        server.bot(name, token, "low")
    server.wait_for(lambda: games(server) >= sum(before.values()) + 4)
    assert server.terminate() == 0
    again, seeds = stored_seeds(server.db)
    assert again == secret and len(seeds) > len(before)
    for board, dealt in seeds.items():
        seed, index = map(int, board.split(":"))
        assert set(dealt) == {board_seed(secret, seed, index)}


CARDS = ("dealt", "passes", "tricks", "kitty")
"""A hand's fields that hold cards."""


def hold_a_board(server: ServerProcess) -> tuple[str, dict[str, str], subprocess.Popen[bytes]]:
    """Start the server with a board held in play after two finished rotations: the board, the
    bots' tokens, and the bot that holds it.

    One session each, so the rotations of board 0 come one after another; "hang" stops answering
    at its third table (rotation 2; each has a pass and 13 plays), which then holds the board in
    play, with rotation 3 owed, while the first two are finished and listed.
    """
    server.config_path.write_text('move_time = "120s"\ntime_bank = "0s"\nfit_interval = "100ms"\n')
    tokens = {name: server.add_bot(name) for name in ("a", "b", "c", "hang")}
    server.start()
    for name in ("a", "b", "c"):
        server.bot(name, tokens[name], "low")
    hang = server.bot("hang", tokens["hang"], "hang", str(14 * 2))
    server.wait_for(lambda: games(server) >= 2 and len(server.get("/api/lobby")["tables"]) == 1)
    (running,) = server.get("/api/lobby")["tables"]
    return running["board"], tokens, hang


def test_a_board_in_play_withholds_its_seed_and_cards_until_it_is_done(
    server: ServerProcess,
) -> None:
    board, tokens, hang = hold_a_board(server)
    listed = server.get("/api/games?limit=100")["games"]
    assert [g["board"] for g in listed] == [board, board]
    for game in listed:
        assert game["seed"] is None
        assert game["withheld"] and f"board {board} is still being played" in game["withheld"]
        record = server.get(f"/api/games/{game['game']}")
        assert record["withheld"] == game["withheld"]
        assert record["spec"]["seed"] is None and record["decisions"] is None
        (hand,) = record["hands"]
        assert all(hand[key] is None for key in CARDS)
        # What is not a card is still there: who sat where, the points, how it ended.
        assert record["spec"]["seats"] == [s["bot"] for s in game["seats"]]
        assert sum(hand["points"]) in (26, 78) and record["termination"] == "normal"
    # The hanging bot goes (its seat is forfeited after the grace period, so the table ends)
    # and comes back to play the owed rotation: the board is done and everything is shown.
    hang.kill()
    server.bot("hang", tokens["hang"], "low")
    server.wait_for(lambda: games(server) >= 4)
    with sqlite3.connect(server.db) as conn:
        seeds = dict(conn.execute("SELECT game, seed FROM games WHERE board = ?", (board,)))
    assert len(seeds) == 4
    server.wait_for(
        lambda: all(g["withheld"] is None for g in server.get("/api/games?limit=100")["games"]
                    if g["board"] == board)
    )  # fmt: skip
    for game in server.get("/api/games?limit=100")["games"]:
        if game["board"] != board:
            continue
        assert game["seed"] == seeds[game["game"]]
        record = server.get(f"/api/games/{game['game']}")
        assert record["withheld"] is None and record["spec"]["seed"] == seeds[game["game"]]
        assert record["decisions"] and len(record["hands"][0]["tricks"]) == 13
        assert all(len(cards) == 13 for cards in record["hands"][0]["dealt"])
    assert server.terminate() == 0


@pytest.mark.skipif(CHROMIUM is None, reason=f"Chromium is missing: {INSTALL}")
def test_the_page_shows_a_withheld_replay_as_withheld(
    server: ServerProcess, tmp_path: Path
) -> None:
    assert CHROMIUM is not None
    board, _, _ = hold_a_board(server)
    first = server.get("/api/games?limit=100")["games"][-1]
    page = browse(CHROMIUM, tmp_path / "profile", "--enable-logging=stderr", "--v=0",
                  "--dump-dom", f"{server.url}/#game/{first['game']}/0/5")  # fmt: skip
    console = [line for line in page.stderr.splitlines() if "CONSOLE" in line]
    assert not [line for line in console if "Uncaught" in line], console
    replay = page.stdout
    assert f"Replay of game {first['game']}" in replay and "cards withheld" in replay
    assert f"board {board} is still being played" in replay
    body = replay.split('id="replay-table"')[1].split("</table>")[0]
    assert body.count("<tr>") == 1 + 4 and 'class="card' not in body
