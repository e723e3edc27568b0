"""An organiser's restarts and crashes of ``arena serve``, on one real SQLite file.

A Ctrl-C in the terminal (SIGINT to the server's whole process group, its rating fit's worker
included) while a game is in play: the server drains and exits 0 without a traceback, the game
in play is recorded interrupted and counted nowhere, the standings read the same after a
restart on the same database and ports, and the sample bots come back by themselves and play on.
The fit's worker dying (the OOM killer, a kill) is replaced instead of freezing the published
standings. ``kill -9`` as a game ends and mid-game leaves a database that passes ``PRAGMA
integrity_check``, keeps every stored game as it was and records the tables it cut short as
interrupted, saying so at the next start. An admin pause and ban just before a stop hold after it.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from test_server_support import ServerProcess

from arena.server.competition import INTERRUPTED_RECORDED

CONFIG = 'fit_interval = "100ms"\ndrain = "1s"\nmove_time = "60s"\ntime_bank = "0s"\n'
"""One-hand tables (the default); a long move clock, so that a bot that stops answering holds
its table open until the test stops the server."""
STOP_TIMEOUT_S = 60.0
"""A deadline only against a hang."""
HANG_IN_GAME = 3
"""The game in which the hanging bot stops answering, for good: it stays in play. (A count of
decisions, 29 for "two one-hand games of 13 or 14", could run into a fourth game: the forced
moves, played without asking the bot, differ from deal to deal.)"""


class Server(ServerProcess):
    """``arena serve`` that starts again on the ports it had (bots keep their address), in a
    process group of its own (as a terminal's foreground job is)."""

    def serve(self) -> None:
        """Start the server: on free ports the first time, then on the same ones."""
        self.start(same_ports=True, own_group=True)

    def stop(self, sig: signal.Signals, *, group: bool = False) -> tuple[int, str]:
        """Send ``sig`` to the server (``group``: to its whole process group, as a terminal's
        Ctrl-C does); its exit code and what it wrote on stderr."""
        assert self.proc is not None
        if group:
            os.killpg(self.proc.pid, sig)
        else:
            self.proc.send_signal(sig)
        code = self.proc.wait(timeout=STOP_TIMEOUT_S)
        return code, self.proc.communicate()[1]

    def health(self) -> dict[str, Any]:
        """``/api/health``."""
        return dict(self.get("/api/health"))

    def admin(self, token: str, action: str, body: dict[str, str] | None = None) -> Any:
        """``POST /api/admin/ACTION``; the answer."""
        request = urllib.request.Request(
            f"{self.url}/api/admin/{action}",
            data=json.dumps(body or {}).encode(),
            method="POST",
            headers={"Authorization": f"Bearer {token}"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    process = Server(tmp_path / "comp.db", CONFIG)
    yield process
    process.close()


def stored(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row the results live in, and whether the file is whole."""
    with sqlite3.connect(db) as conn:
        out = {
            "integrity": conn.execute("PRAGMA integrity_check").fetchall(),
            "games": conn.execute("SELECT * FROM games ORDER BY game").fetchall(),
            "seats": conn.execute("SELECT * FROM seats ORDER BY game, seat").fetchall(),
            "running": conn.execute("SELECT game FROM server_running ORDER BY game").fetchall(),
        }
    conn.close()
    return out


def tallies(rows: dict[str, list[tuple[Any, ...]]]) -> dict[str, tuple[int, int, int]]:
    """(rated games, points in them, games interrupted) per bot, from the stored rows."""
    ends = {game[1]: game[7] for game in rows["games"]}  # game -> termination
    out: dict[str, tuple[int, int, int]] = {}
    for seat in rows["seats"]:
        game, bot, points = seat[1], seat[3], seat[4]
        rated, total, cut = out.get(bot, (0, 0, 0))
        if ends[game] == "normal":
            out[bot] = (rated + 1, total + points, cut)
        else:
            out[bot] = (rated, total, cut + 1)
    return out


def shown(server: Server) -> dict[str, tuple[int, int, int]]:
    """The same figures as /api/standings shows them."""
    return {
        row["name"]: (row["games"], row["points"], row["interrupted"])
        for row in server.get("/api/standings")["bots"]
        if row["games"] or row["interrupted"]
    }


def fitted(server: Server) -> bool:
    """Whether the published fit counts every rated game (and there are some)."""
    fit = server.get("/api/standings")["fit"]
    return bool(fit["results"] == server.health()["rated"] > 0)


def online(server: Server, *names: str) -> bool:
    """Whether each of these bots has a session."""
    rows = {row["name"]: row["sessions"] for row in server.get("/api/standings")["bots"]}
    return all(rows.get(name) == 1 for name in names)


def test_ctrl_c_in_the_terminal_mid_game_then_a_restart_loses_and_adds_nothing(
    server: Server,
) -> None:
    # The fit's worker is in the server's process group, so a terminal's Ctrl-C reached it too:
    # it died printing a KeyboardInterrupt traceback under the server's log, while the server
    # itself drained and stopped cleanly.
    tokens = {name: server.add_bot(name) for name in "abcd"}
    server.serve()
    samples = [server.bot(name, tokens[name], sample="lowcard") for name in "abc"]
    hang = server.bot("d", tokens["d"], "hang-game", str(HANG_IN_GAME))
    server.wait_for(lambda: server.health()["games"] == 2 and fitted(server))
    server.wait_for(lambda: len(server.get("/api/lobby")["tables"]) == 1)
    before = server.get("/api/standings")
    (cut,) = server.get("/api/lobby")["tables"]
    finished = stored(server.db)["games"]

    code, errors = server.stop(signal.SIGINT, group=True)
    assert code == 0 and "Traceback" not in errors and "KeyboardInterrupt" not in errors, errors
    hang.kill()
    after_stop = stored(server.db)
    assert after_stop["integrity"] == [("ok",)] and after_stop["running"] == []
    assert after_stop["games"][:-1] == finished
    game, termination = after_stop["games"][-1][1], after_stop["games"][-1][7]
    assert (game, termination) == (cut["game"], "interrupted")

    server.serve()
    # The standings show what the database holds, as before the stop but for the game cut.
    assert shown(server) == tallies(stored(server.db))
    server.wait_for(lambda: fitted(server))
    now = {row["name"]: row for row in server.get("/api/standings")["bots"]}
    for row in before["bots"]:
        again = now[row["name"]]
        assert again["interrupted"] == row["interrupted"] + (row["name"] in cut["seats"])
        for key in ("games", "hands", "points", "faults", "forfeits", "elo", "low", "high"):
            assert again[key] == row[key], (row["name"], key)
    (interrupted,) = server.get(f"/api/games?limit=1&before={cut['game'] + 1}")["games"]
    assert interrupted["termination"] == "interrupted" and not interrupted["rated"]
    # The sample bots come back by themselves, and the ladder plays on.
    server.wait_for(lambda: online(server, "a", "b", "c"))
    assert all(bot.poll() is None for bot in samples)
    server.bot("d", tokens["d"], sample="lowcard")
    played = server.health()["games"]
    server.wait_for(lambda: server.health()["games"] >= played + 4)

    # The fit's worker dies (the OOM killer, a kill): the pool refused every fit from then on,
    # and the standings stayed as they were for the rest of the competition, with an error
    # and its traceback in the log at each game.
    os.kill(fit_worker(server), signal.SIGKILL)
    rated = server.health()["rated"]
    server.wait_for(lambda: server.health()["rated"] > rated)
    server.admin(server.admin_token(), "pause")
    server.wait_for(lambda: server.get("/api/lobby")["tables"] == [])
    server.wait_for(lambda: fitted(server))
    code, errors = server.stop(signal.SIGTERM)
    assert code == 0, errors
    assert stored(server.db)["integrity"] == [("ok",)]
    lines = [json.loads(line) for line in server.log.read_text().splitlines()]
    assert [line["msg"] for line in lines if line["level"] == "error"] == []
    assert any("worker process ended unexpectedly" in line["msg"] for line in lines)


def fit_worker(server: Server) -> int:
    """The process id of the server's rating fit worker (read from /proc: Linux)."""
    assert server.proc is not None
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == server.proc.pid and b"spawn_main" in command:
            return int(entry.name)
    raise AssertionError("the server has no fit worker")


def table_finished(server: Server) -> int:
    """How many "table finished" lines the log holds."""
    return server.log.read_text().count('"msg":"table finished"')


def finished_more(server: Server, games: int) -> Callable[[], bool]:
    """Whether ``games`` more tables have finished than now (as the log says: at once)."""
    now = table_finished(server)
    return lambda: table_finished(server) >= now + games


def test_kill_9_at_a_few_moments_then_a_pause_and_a_ban_survive_a_stop(server: Server) -> None:
    # The pause was the server's memory only: a restart (a crash's, a service manager's) went
    # back to forming tables, with no word of it.
    tokens = {name: server.add_bot(name) for name in "abcd"}
    admin = server.admin_token()
    server.serve()
    bots = {name: server.bot(name, tokens[name], sample="lowcard") for name in "abcd"}
    warned = 0
    for moment in ("as a game ends", "mid-game", "as a game ends"):
        server.wait_for(finished_more(server, 3))
        if moment == "mid-game":
            server.wait_for(lambda: bool(server.get("/api/lobby")["tables"]))
        else:
            server.wait_for(finished_more(server, 1))
        server.kill()
        crashed = stored(server.db)
        assert crashed["integrity"] == [("ok",)]
        server.serve()
        # Paused, so that the database and the pages are read at rest.
        server.admin(admin, "pause")
        server.wait_for(lambda: server.get("/api/lobby")["tables"] == [])
        # Every stored game is kept as it was; each table left marked running (and not
        # stored) is stored as interrupted, not rated, and the log says so.
        now = stored(server.db)
        assert now["integrity"] == [("ok",)] and now["running"] == []
        kept = {game[1]: game for game in now["games"]}
        assert all(kept[game[1]] == game for game in crashed["games"])
        marked = {game for (game,) in crashed["running"]} - {game[1] for game in crashed["games"]}
        cut = {n for n, game in kept.items() if game[7] != "normal"}
        assert cut - {game[1] for game in crashed["games"]} == marked
        warned += len(marked)
        log = server.log.read_text()
        assert log.count(f'"msg":"{INTERRUPTED_RECORDED}"') == warned
        assert shown(server) == tallies(now)
        health = server.health()
        assert health["games"] == len(now["games"])
        assert health["rated"] == len(now["games"]) - len(cut)
        server.admin(admin, "resume")

    # An admin ban and pause, then at once a stop: both hold after the restart.
    server.wait_for(lambda: online(server, *"abcd"))
    server.admin(admin, "ban", {"bot": "d", "reason": "testing restarts"})
    assert server.admin(admin, "pause") == {"ladder": "paused"}
    code, errors = server.stop(signal.SIGTERM)
    assert code == 0, errors
    assert bots["d"].wait(timeout=STOP_TIMEOUT_S) == 1  # the SDK: removed by the organiser
    server.serve()
    assert server.health()["ladder"] == "paused"
    assert '"msg":"the ladder is paused' in server.log.read_text()
    standings = {row["name"]: row for row in server.get("/api/standings")["bots"]}
    assert standings["d"]["status"] == "banned"
    assert server.admin(admin, "resume") == {"ladder": "running"}
    code, errors = server.stop(signal.SIGTERM)
    assert code == 0, errors
    assert stored(server.db)["integrity"] == [("ok",)]
