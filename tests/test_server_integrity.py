"""The competition server deals fair boards and keeps them secret while they are played.

``arena serve`` runs as a process on loopback with bot processes and its own SQLite file:

* a table of one hand passes in the direction of its board's number (left, right, across, hold,
  as `arena run` deals), the same in every rotation of the board, on the ladder and in an event;
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_server_support import ServerProcess

CYCLE = ("left", "right", "across", "hold")
"""The four-player pass cycle: board n passes CYCLE[n % 4]."""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path / "comp.db", 'fit_interval = "100ms"\nmove_time = "2s"\n')
    yield process
    process.close()


def start_four(server: ServerProcess, names: str = "abcd") -> None:
    tokens = {name: server.add_bot(name) for name in names}
    server.start()
    for name in names:
        server.bot(name, tokens[name], "low")


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


def test_tables_of_several_hands_keep_the_cycle(server: ServerProcess) -> None:
    server.config_path.write_text('fit_interval = "100ms"\nmove_time = "2s"\nhands = 3\n')
    start_four(server)
    server.wait_for(lambda: games(server) >= 5)
    assert server.terminate() == 0
    for board, directions in directions_by_board(server.db).items():
        per_game = [directions[i : i + 3] for i in range(0, len(directions), 3)]
        assert all(d == ["left", "right", "across"] for d in per_game), (board, directions)
