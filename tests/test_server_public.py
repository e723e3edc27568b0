"""What the leaderboard shows anyone, while a game runs: no token, no token digest, no server
secret, and no bot's network address.

/api/lobby listed each session's peer (``ipv4:ADDRESS:PORT``): the address a bot author's machine
connects from, to whoever opens the page. The organiser still has it in the server's log (each
session's line names it)."""

from __future__ import annotations

import hashlib
import re
import sqlite3
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_server_support import ServerProcess

BOTS = ("north", "east", "south", "west")
CONFIG = 'move_time = "30s"\ntime_bank = "0s"\nfit_interval = "100ms"\n'
"""A long move clock: the bot that stops answering holds its table open, running, for certain."""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[ServerProcess, dict[str, str]]]:
    process = ServerProcess(tmp_path / "comp.db", CONFIG)
    tokens = {name: process.add_bot(name) for name in BOTS}
    tokens["admin"] = process.admin_token()
    process.start()
    try:
        for name in BOTS[:3]:
            process.bot(name, tokens[name], "low")
        # Plays two one-hand games (13 or 14 decisions each), then stops answering in its third.
        process.bot(BOTS[3], tokens[BOTS[3]], "hang", "30")
        yield process, tokens
    finally:
        process.close()


def secrets_of(db: Path, tokens: dict[str, str]) -> set[str]:
    """Every form of a secret a public answer could carry: the tokens, their digests (hex, as
    bytes in the database), the server's secret."""
    found = set(tokens.values())
    found |= {hashlib.sha256(t.encode()).hexdigest() for t in tokens.values()}
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        rows = [*con.execute("SELECT token_hash FROM server_bots")]
        rows += [*con.execute("SELECT token_hash FROM server_admin")]
        rows += [*con.execute("SELECT secret FROM server_secret")]
    for (value,) in rows:
        found.add(value.hex() if isinstance(value, bytes) else str(value))
    return {s for s in found if s}


def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as response:
        return str(response.read().decode())


def test_public_answers_while_a_game_runs_show_no_secret_and_no_address(
    server: tuple[ServerProcess, dict[str, str]],
) -> None:
    process, tokens = server
    # Two games finished (the hanging bot's first 28 decisions at most), the third running.
    process.wait_for(
        lambda: (
            len(process.get("/api/games")["games"]) >= 2
            and bool(process.get("/api/lobby")["tables"])
        )
    )
    lobby = process.get("/api/lobby")
    running = lobby["tables"][0]["game"]
    assert {s["bot"] for s in lobby["sessions"]} == set(BOTS)
    paths = ["/", "/static/app.js", "/api/health", "/api/standings", "/api/lobby", "/healthz"]
    paths += ["/api/games?limit=500", f"/api/games/{running}"]
    paths += [f"/api/games/{g['game']}" for g in process.get("/api/games")["games"]]
    answers: dict[str, str] = {}
    for path in paths:
        try:
            answers[path] = fetch(process.url + path)
        except urllib.error.HTTPError as e:  # the running game: not stored yet
            answers[path] = e.read().decode()
    assert process.get("/api/lobby")["tables"], "the game ended while the answers were read"
    secrets = secrets_of(process.db, tokens)
    for path, text in answers.items():
        assert not [s for s in secrets if s in text], path
        # A bot's address, in gRPC's peer form or bare.
        assert not re.search(r"ipv[46]:|127\.0\.0\.1|\[::1\]", text), (path, text[:400])
