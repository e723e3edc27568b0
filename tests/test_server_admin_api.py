"""The JSON API of a real ``arena serve`` process: the admin actions' arguments are text, and
/api/games refuses a parameter left empty, a malformed Content-Length is a 400 saying so, and the
server commands (serve too) tell an output they cannot write from other errors."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_server_support import REPO, ServerProcess

from arena.referee.accounts import MAX_NOTE_LENGTH
from arena.server.accounts import BAN_NOTE, AccountStatus
from arena.server.competition import _barred_note

ARENA = (
    [str(Path(sys.executable).with_name("arena"))]
    if Path(sys.executable).with_name("arena").exists()
    else [sys.executable, "-m", "arena.cli"]
)
"""The `arena` command, as installed (closed output is handled by its command classes)."""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path / "comp.db", 'fit_interval = "100ms"\n')
    yield process
    process.close()


def post(
    server: ServerProcess, action: str, body: bytes, token: str, scheme: str = "Bearer"
) -> tuple[int, Any]:
    """(status, parsed JSON answer) of ``POST /api/admin/ACTION`` with ``body`` as it is."""
    request = urllib.request.Request(
        f"{server.url}/api/admin/{action}",
        data=body,
        method="POST",
        headers={"Authorization": f"{scheme} {token}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def note(server: ServerProcess) -> str:
    listed = server.cli("bots", "list", "--db", str(server.db), "--json")
    (account,) = json.loads(listed.stdout)
    return str(account["note"])


def test_an_argument_that_is_not_text_is_refused_not_read_as_its_python_spelling(
    server: ServerProcess,
) -> None:
    # A null reason banned with the reason "None", over the one the earlier ban gave (which a
    # ban without a reason keeps); {"bot": null} looked for a bot named 'None'; {"session": 3}
    # for a session '3'; and a missing session said "no session ''".
    server.add_bot("a")
    admin = server.admin_token()
    server.start()
    assert post(server, "ban", b'{"bot": "a", "reason": "plays too slowly"}', admin)[0] == 200

    status, answer = post(server, "ban", b'{"bot": "a", "reason": null}', admin)
    assert status == 400
    assert answer == {"error": "reason must be a string, not null: give reason as text"}
    status, answer = post(server, "ban", b'{"bot": "a", "reason": true}', admin)
    assert status == 400 and answer["error"].startswith("reason must be a string, not true")
    assert note(server) == "plays too slowly"

    status, answer = post(server, "unban", b'{"bot": null}', admin)
    assert status == 400 and answer["error"].startswith("bot must be a string, not null")
    status, answer = post(server, "unban", b'{"bot": ["a"]}', admin)
    assert status == 400 and answer["error"].startswith('bot must be a string, not ["a"]')
    status, answer = post(server, "kick", b'{"session": 3}', admin)
    assert status == 400 and answer["error"].startswith("session must be a string, not 3")
    status, answer = post(server, "kick", b"{}", admin)
    assert status == 400 and answer == {"error": "kick needs 'session' in the JSON body"}
    status, answer = post(server, "unban", b"{}", admin)
    assert status == 400 and answer == {"error": "unban needs 'bot' in the JSON body"}

    # Text, and a reason left out, work as before.
    assert post(server, "unban", b'{"bot": "a"}', admin) == (200, {"unbanned": "a"})
    assert post(server, "ban", b'{"bot": "a", "reason": "again"}', admin)[0] == 200
    assert note(server) == "again"
    assert server.terminate() == 0


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("limit=", "limit is empty: give 1 to 500, or leave limit out for 30"),
        ("limit", "limit is empty: give 1 to 500, or leave limit out for 30"),
        ("before=", "before is empty: give 0 to 9223372036854775807, or leave before out for"),
        ("bot=alpha&limit=", "limit is empty: give 1 to 500"),
    ],
)
def test_games_refuses_an_empty_limit_or_before_as_it_does_an_empty_bot(
    server: ServerProcess, query: str, says: str
) -> None:
    # An empty bot= was a 400, but limit= and before= were read as left out: a page or script
    # that built the query with a value missing was shown the 30 newest games without a word.
    server.add_bot("alpha")
    server.start()
    try:
        urllib.request.urlopen(f"{server.url}/api/games?{query}", timeout=30)
    except urllib.error.HTTPError as e:
        assert e.code == 400
        assert json.loads(e.read())["error"].startswith(says)
    else:
        raise AssertionError(f"/api/games?{query} was served")
    assert server.get("/api/games?limit=1") == {"games": []}
    assert server.terminate() == 0


def test_a_body_nested_too_deep_is_a_400_not_an_internal_error(server: ServerProcess) -> None:
    # json.loads raises RecursionError there, not ValueError: the answer was a 500 "internal
    # error", and the log a traceback.
    admin = server.admin_token()
    server.start()
    status, answer = post(server, "pause", b"[" * 50_000, admin)
    assert (status, answer) == (
        400,
        {"error": "the body must be a JSON object, not nested this deep"},
    )
    assert post(server, "pause", b"{}", admin) == (200, {"ladder": "paused"})
    assert server.terminate() == 0
    assert "Traceback" not in server.log.read_text()


def test_a_content_length_that_is_not_digits_is_a_400_saying_so(server: ServerProcess) -> None:
    # int() read "-1" as a number: the answer was 413 "body of -1 bytes; the limit is 65536".
    admin = server.admin_token()
    server.start()
    for length in ("-1", "+2", "1_0", "abc"):
        with socket.create_connection(("127.0.0.1", server.web_port), timeout=30) as s:
            s.sendall(
                f"POST /api/admin/pause HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {admin}\r\n"
                f"Content-Length: {length}\r\nConnection: close\r\n\r\n{{}}".encode()
            )
            answer = b""
            while chunk := s.recv(65536):
                answer += chunk
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400 "), answer
        assert json.loads(body) == {
            "error": f"Content-Length {length!r} is not a number of bytes"
        }, answer
    assert server.get("/api/health")["ladder"] == "running"
    assert server.terminate() == 0


def run_cli(*args: str, stdout: int) -> subprocess.CompletedProcess[str]:
    """An ``arena`` server command with its standard output on ``stdout`` (a file descriptor)."""
    return subprocess.run(
        [*ARENA, *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        timeout=60,
        check=False,
    )


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_an_output_that_cannot_be_written_is_not_taken_for_an_unreachable_server(
    server: ServerProcess,
) -> None:
    # The admin commands printed the server's answer inside the try that reports the network:
    # `arena admin pause | head -0` said "cannot reach the server ... Broken pipe" (exit 2) of a
    # pause the server had made, where a closed output stops every command quietly (141); and
    # `arena bots list > /dev/full` ended in a traceback.
    server.add_bot("a")
    admin = server.admin_token()
    server.start()
    base = ["--url", server.url, "--token", admin]
    read, write = os.pipe()
    os.close(read)
    try:
        closed = run_cli("admin", "pause", *base, stdout=write)
    finally:
        os.close(write)
    assert (closed.returncode, closed.stderr) == (141, "")
    assert server.get("/api/health")["ladder"] == "paused"

    full = os.open("/dev/full", os.O_WRONLY)
    try:
        resumed = run_cli("admin", "resume", *base, stdout=full)
        listed = run_cli("bots", "list", "--db", str(server.db), stdout=full)
        banned = run_cli("bots", "ban", "a", "--db", str(server.db), stdout=full)
    finally:
        os.close(full)
    assert resumed.returncode == 1
    assert resumed.stderr == (
        "arena: error: cannot write the output: No space left on device; the server did resume\n"
    )
    assert server.get("/api/health")["ladder"] == "running"
    assert listed.returncode == 1
    assert listed.stderr == "arena: error: cannot write the output: No space left on device\n"
    assert banned.returncode == 1 and banned.stderr.endswith("; the change is made\n")
    assert (
        note(server) == "banned by the organiser"
        and "banned" in server.cli("bots", "list", "--db", str(server.db)).stdout
    )
    assert server.terminate() == 0


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_serve_with_an_output_it_cannot_write_stops_as_documented(tmp_path: Path) -> None:
    # The banner's write error went to the catch-all for bad input: `arena serve | head -0`
    # said "arena: error: [Errno 32] Broken pipe" (exit 2), not the quiet 141 of every command
    # whose output is closed; a full output, "[Errno 28] No space left on device" (exit 2).
    flags = ["serve", "--port", "0", "--web-port", "0", "--log", str(tmp_path / "log")]
    read, write = os.pipe()
    os.close(read)
    try:
        closed = run_cli(*flags, "--db", str(tmp_path / "a.db"), stdout=write)
    finally:
        os.close(write)
    assert closed.returncode == 141 and "error" not in closed.stderr, closed.stderr
    full = os.open("/dev/full", os.O_WRONLY)
    try:
        done = run_cli(*flags, "--db", str(tmp_path / "b.db"), stdout=full)
    finally:
        os.close(full)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        "arena: error: cannot write the output: No space left on device; the server stopped"
    )


def test_unbanning_a_bot_whose_token_was_revoked_leaves_it_revoked(server: ServerProcess) -> None:
    # Unbanned as "active", a bot with no token was listed (and shown on the page) as one that
    # may play, though no token could; and `bots add` then called it active, not revoked.
    server.add_bot("a")
    server.add_bot("b")
    admin = server.admin_token()
    db = ["--db", str(server.db)]
    for bot in ("a", "b"):
        assert server.cli("bots", "revoke", bot, *db).returncode == 0
        assert server.cli("bots", "ban", bot, "--reason", "leaked", *db).returncode == 0
    unbanned = server.cli("bots", "unban", "a", *db)
    assert unbanned.returncode == 0
    assert unbanned.stdout == (
        f"bot 'a': unbanned, but its token was revoked: give it a new one with "
        f"`arena bots add a --new-token --db {server.db}`\n"
    )
    server.start()
    assert post(server, "unban", b'{"bot": "b"}', admin) == (200, {"unbanned": "b"})
    listed = json.loads(server.cli("bots", "list", *db, "--json").stdout)
    assert [(row["name"], row["status"]) for row in listed] == [("a", "revoked"), ("b", "revoked")]
    assert {row["name"]: row["status"] for row in server.get("/api/standings")["bots"]} == {
        "a": "revoked",
        "b": "revoked",
    }
    assert server.terminate() == 0


def test_revoking_a_banned_bot_keeps_the_ban_through_a_new_token(server: ServerProcess) -> None:
    # Revoked, a banned bot lost its ban: the new token `bots add --new-token` gives a revoked
    # bot then made it active, with no unban, and the ban's reason was wiped; its author could
    # play again.
    server.add_bot("a")
    db = ["--db", str(server.db)]
    assert server.cli("bots", "ban", "a", "--reason", "cheats", *db).returncode == 0
    revoked = server.cli("bots", "revoke", "a", *db)
    assert (revoked.returncode, revoked.stdout) == (0, "bot 'a': token revoked (it stays banned)\n")
    token = server.cli("bots", "add", "a", "--new-token", *db).stdout.strip()
    (row,) = json.loads(server.cli("bots", "list", *db, "--json").stdout)
    assert (row["status"], row["note"]) == ("banned", "cheats")
    server.start()
    bot = server.bot("a", token, sample="lowcard")
    assert bot.wait(60) == 2
    assert bot.stderr is not None and b"(PERMISSION_DENIED)" in bot.stderr.read()
    assert server.terminate() == 0


def test_the_bearer_scheme_is_read_in_any_case(server: ServerProcess) -> None:
    # "bearer TOKEN" was refused as no token at all; the scheme's name is case-insensitive.
    server.start()
    admin = server.admin_token()
    for scheme in ("bearer", "BEARER", "Bearer"):
        assert post(server, "pause", b"{}", admin, scheme)[0] == 200, scheme
    assert post(server, "pause", b"{}", admin, "Basic")[0] == 401
    assert server.terminate() == 0


BARRED_EXIT_S = 120.0
"""A deadline against a hang only: how long a barred bot may take to be sent away and exit."""


def test_a_bot_barred_from_the_offline_cli_is_sent_away_not_left_waiting(
    server: ServerProcess,
) -> None:
    # Banned or revoked with `arena bots` while the server ran, a bot's waiting session was
    # never seated again and never told: it waited for good, and a small ladder stopped with
    # nothing in the log. Now the session is ended for good (as `arena admin ban` ends one: a
    # kick that let it back had the SDK say it was reconnecting, then be refused).
    tokens = {name: server.add_bot(name) for name in "abcdef"}
    server.start()
    bots = {name: server.bot(name, token, sample="lowcard") for name, token in tokens.items()}
    server.wait_for(lambda: server.get("/api/health")["games"] >= 2)
    db = ["--db", str(server.db)]
    assert server.cli("bots", "ban", "e", "--reason", "cheats", *db).returncode == 0
    assert server.cli("bots", "revoke", "f", "--reason", "leaked on a forum", *db).returncode == 0
    # With the organiser's reason, as `arena admin ban` tells it (it was left out).
    for name, why in (
        (
            "e",
            "this bot is banned (arena bots ban): it plays no more games here (the "
            "organiser's reason: cheats)",
        ),
        (
            "f",
            "this bot's token was revoked (arena bots revoke): it plays no more games here "
            "until the organiser gives it a new one (the organiser's reason: leaked on a forum)",
        ),
    ):
        assert bots[name].wait(BARRED_EXIT_S) == 1, name  # removed during a session
        stderr = bots[name].stderr
        assert stderr is not None
        told = stderr.read().decode()
        assert f"removed bot '{name}': {why}" in told and "reconnecting" not in told, told
    played = server.get("/api/health")["games"]
    server.wait_for(lambda: server.get("/api/health")["games"] >= played + 2)  # the rest play on
    lines = [json.loads(line) for line in server.log.read_text().splitlines()]
    ended = "session ended: its bot may not play"
    said = {line["bot"]: line["why"] for line in lines if line["msg"] == ended}
    assert said["e"].startswith("this bot is banned (arena bots ban)"), said
    assert said["f"].startswith("this bot's token was revoked (arena bots revoke)"), said
    assert server.terminate() == 0


def test_a_barred_bots_told_reason_fits_what_a_kick_may_say() -> None:
    # The longest reason the CLI takes, after the words on the ban, was over the kick's limit.
    longest = _barred_note(AccountStatus.REVOKED, "x" * MAX_NOTE_LENGTH)
    assert len(longest) == MAX_NOTE_LENGTH and longest.endswith("x…)"), longest
    # A ban given no reason stores one that says nothing more than the words on the ban.
    assert _barred_note(AccountStatus.BANNED, BAN_NOTE) == _barred_note(AccountStatus.BANNED, "")
    assert "reason" not in _barred_note(AccountStatus.BANNED, BAN_NOTE)


def test_a_bot_banned_from_the_offline_cli_on_a_paused_ladder_is_sent_away_at_once(
    server: ServerProcess,
) -> None:
    # Seen only as tables were formed: on a paused ladder the banned bot waited in the lobby,
    # listed in /api/lobby, until `arena admin resume`.
    tokens = {name: server.add_bot(name) for name in "abcd"}
    admin = server.admin_token()
    server.start()
    assert post(server, "pause", b"{}", admin)[0] == 200
    bots = {name: server.bot(name, token, sample="lowcard") for name, token in tokens.items()}
    server.wait_for(lambda: len(server.get("/api/lobby")["sessions"]) == 4)
    assert (
        server.cli("bots", "ban", "d", "--reason", "cheats", "--db", str(server.db)).returncode == 0
    )
    assert bots["d"].wait(BARRED_EXIT_S) == 1
    assert server.get("/api/health")["ladder"] == "paused"
    assert sorted(s["bot"] for s in server.get("/api/lobby")["sessions"]) == ["a", "b", "c"]
    assert server.terminate() == 0


def test_a_game_at_its_table_is_said_to_be_played_not_missing(server: ServerProcess) -> None:
    # /api/lobby listed the game while /api/games/N said "no game N".
    tokens = {name: server.add_bot(name) for name in "abcd"}
    server.start()
    for name in "abc":
        server.bot(name, tokens[name], "low")
    server.bot("d", tokens["d"], "hang", "1")  # holds its first table open
    server.wait_for(lambda: bool(server.get("/api/lobby")["tables"]))
    (table,) = server.get("/api/lobby")["tables"]
    game = table["game"]
    try:
        urllib.request.urlopen(f"{server.url}/api/games/{game}", timeout=30)
    except urllib.error.HTTPError as e:
        assert e.code == 404
        assert json.loads(e.read()) == {
            "error": f"game {game} is being played: its record is here once it ends"
        }
    else:
        raise AssertionError("a game in play was served")
    try:
        urllib.request.urlopen(f"{server.url}/api/games/{game + 100}", timeout=30)
    except urllib.error.HTTPError as e:
        assert (e.code, json.loads(e.read())) == (404, {"error": f"no game {game + 100}"})
    server.stop_bots()
    assert server.terminate() == 0


def test_a_session_on_a_replaced_token_is_sent_away(server: ServerProcess) -> None:
    # `bots add NAME --new-token`: "the old one stops working", but a session opened with it
    # played on, rated games under the bot's name, for as long as it stayed connected.
    tokens = {name: server.add_bot(name) for name in "abcd"}
    server.start()
    bots = {name: server.bot(name, token, sample="lowcard") for name, token in tokens.items()}
    server.wait_for(lambda: server.get("/api/health")["games"] >= 2)
    new = server.cli_here("bots", "add", "d", "--new-token", "--db", str(server.db)).strip()
    assert bots["d"].wait(BARRED_EXIT_S) == 1  # removed during a session
    stderr = bots["d"].stderr
    assert stderr is not None
    told = stderr.read().decode()
    assert "removed bot 'd': this bot's token was replaced (arena bots add --new-token)" in told
    lines = [json.loads(line) for line in server.log.read_text().splitlines()]
    assert any(line["msg"] == "session ended: its token was replaced" for line in lines)
    played = server.get("/api/health")["games"]
    server.bot("d", new, sample="lowcard")  # the new token plays on
    server.wait_for(lambda: server.get("/api/health")["games"] >= played + 2)
    assert server.terminate() == 0
