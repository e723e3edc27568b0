"""``arena bots`` and ``arena admin`` as a newcomer organiser meets them, run for real: an admin
token read from a file written on Windows, an admin body that names a key twice, a ban's reason
too long for the refusal that tells it to the bot, and a database another program keeps locked."""

from __future__ import annotations

import contextlib
import http.server
import json
import sqlite3
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_audit_serve import one_error
from test_server_support import ServerProcess

from arena.server.accounts import MAX_NOTE_LENGTH

BOT_WAIT_S = 120.0
"""How long a refused bot may take to exit (a deadline only against a hang)."""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path / "comp.db")
    yield process
    process.close()


def post(server: ServerProcess, action: str, body: bytes, token: str) -> tuple[int, Any]:
    """(status, parsed JSON answer) of ``POST /api/admin/ACTION`` with ``body`` as it is and the
    admin ``token`` as a bearer token."""
    return post_as(server, action, body, f"Bearer {token}")


def post_as(server: ServerProcess, action: str, body: bytes, authorization: str) -> tuple[int, Any]:
    """:func:`post` with ``authorization`` as the whole Authorization header ("": none sent)."""
    request = urllib.request.Request(
        f"{server.url}/api/admin/{action}",
        data=body,
        method="POST",
        headers={"Authorization": authorization} if authorization else {},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def statuses(server: ServerProcess) -> dict[str, tuple[str, str]]:
    """Each bot's (status, note), as ``arena bots list --json`` gives them."""
    listed = server.cli("bots", "list", "--db", str(server.db), "--json")
    assert listed.returncode == 0, listed.stderr
    return {a["name"]: (a["status"], a["note"]) for a in json.loads(listed.stdout)}


def test_an_admin_token_with_a_carriage_return_or_a_foreign_character(
    server: ServerProcess,
) -> None:
    # `--token "$(cat admin.txt)"` of a file written on Windows keeps its "\r": http.client
    # refused the header, a ValueError traceback; a character outside Latin-1, a
    # UnicodeEncodeError traceback.
    token = server.admin_token()
    server.start()
    url = ("--url", server.url)
    paused = server.cli("admin", "pause", *url, "--token", token + "\r")
    assert paused.returncode == 0, paused.stderr
    assert json.loads(paused.stdout) == {"ladder": "paused"}
    for bad, shown in (("€", "'€'"), ("a\nb", "'\\n'")):
        line = one_error(server.cli("admin", "resume", *url, "--token", token + bad))
        assert f"the admin token holds {shown}, which no token has" in line
    assert server.get("/api/health")["ladder"] == "paused"


def test_an_admin_body_that_names_a_key_twice_is_refused(server: ServerProcess) -> None:
    # {"bot": "alice", "bot": "bob"} banned bob (the last one won), without a word, where a
    # query parameter given twice is a 400.
    for name in ("alice", "bob"):
        server.add_bot(name)
    token = server.admin_token()
    server.start()
    status, answer = post(server, "ban", b'{"bot": "alice", "bot": "bob"}', token)
    assert status == 400, answer
    assert answer == {"error": "'bot' given twice in the JSON body: give it once"}
    assert statuses(server) == {"alice": ("active", ""), "bob": ("active", "")}


def test_a_ban_reason_is_no_longer_than_a_refusal_can_tell_the_bot(server: ServerProcess) -> None:
    # A ban's reason goes to the refused bot in its gRPC status, in the call's metadata: one of
    # 20,000 characters reached the bot as RESOURCE_EXHAUSTED ("received metadata size exceeds
    # hard limit"), and the banned bot, never told it was banned, retried for ever.
    token = server.add_bot("carol")
    dave = server.add_bot("dave")
    admin = server.admin_token()
    too_long = "r" * (MAX_NOTE_LENGTH + 1)
    for args in (("ban", "carol"), ("revoke", "carol")):
        line = one_error(server.cli("bots", *args, "--db", str(server.db), "--reason", too_long))
        assert f"the reason is {MAX_NOTE_LENGTH + 1} characters long: give at most" in line
    server.start()
    body = json.dumps({"bot": "carol", "reason": too_long}).encode()
    status, answer = post(server, "ban", body, admin)
    assert status == 400 and "give at most" in answer["error"], answer
    assert statuses(server)["carol"] == ("active", "")

    # The longest reason, in characters that take the most room in the metadata (4 bytes of
    # UTF-8, each sent as %XX), reaches the bot, which stops.
    longest = "🂡" * MAX_NOTE_LENGTH
    body = json.dumps({"bot": "carol", "reason": longest}).encode()
    assert post(server, "ban", body, admin) == (200, {"banned": "carol", "sessions_ended": 0})
    # A reason kept before there was a limit is cut to fit.
    with contextlib.closing(sqlite3.connect(server.db)) as db, db:
        db.execute(
            "UPDATE server_bots SET status = 'banned', note = ? WHERE name = 'dave'",
            [too_long * 40],
        )
    for name, secret in (("carol", token), ("dave", dave)):
        bot = server.bot(name, secret, sample="random_bot")
        _, err = bot.communicate(timeout=BOT_WAIT_S)
        said = err.decode()
        assert bot.returncode == 2, said
        assert "PERMISSION_DENIED" in said and "RESOURCE_EXHAUSTED" not in said, said[-400:]
    assert said.count("r") >= MAX_NOTE_LENGTH - 1 and "r…" in said, said[-200:]


def test_a_database_locked_by_another_program_is_one_line_not_a_traceback(
    server: ServerProcess,
) -> None:
    # A sqlite3 shell (or a backup) in the middle of a write transaction: `arena bots add`,
    # `ban`, `revoke`, `unban` and `admin token` ended in sqlite3.OperationalError's traceback,
    # and `arena admin ban` in "ban: 500 internal error" (a traceback in the server's log).
    server.add_bot("alice")
    server.add_bot("bob")
    admin = server.admin_token()
    server.start()
    db = str(server.db)
    with contextlib.closing(sqlite3.connect(server.db, isolation_level=None)) as holder:
        holder.execute("BEGIN IMMEDIATE")
        try:
            refused = ServerProcess.clis(
                ("bots", "add", "carol", "--db", db),
                ("bots", "ban", "alice", "--db", db),
                ("bots", "revoke", "alice", "--db", db),
                ("admin", "token", "--db", db),
                ("admin", "ban", "bob", "--url", server.url, "--token", admin),
            )
        finally:
            holder.execute("ROLLBACK")
    for done in refused[:4]:
        line = one_error(done, code=1)
        assert line.startswith(f"arena: error: --db {db}: the database is locked by another"), line
        assert done.stdout == ""  # no token shown for a change that was not made
    line = one_error(refused[4], code=1)  # the server's state: a script may try again
    assert line.startswith("arena: error: ban: 503 ban not done: the database is locked"), line
    assert statuses(server) == {"alice": ("active", ""), "bob": ("active", "")}
    # The admin token in force is still the old one, and the server serves on.
    assert post(server, "pause", b"", admin) == (200, {"ladder": "paused"})


class _Foreign(http.server.BaseHTTPRequestHandler):
    """Something else answering at --url, with control characters in what it says: a 400 with
    them in its JSON error, or a 200 with them raw."""

    status = 400
    said = "evil \x1b]0;retitled\x07 \x9b2J \u202e text\nsecond line"

    def do_POST(self) -> None:
        """Answer as :attr:`status` says."""
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.status == 400:
            body = json.dumps({"error": self.said}).encode()
        else:
            body = self.said.encode()
        self.send_response(self.status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        """Quiet."""


def test_what_a_server_answers_reaches_the_terminal_escaped() -> None:
    # `arena admin pause` printed what answered at --url as it came: a title-setting sequence,
    # a C1 CSI and a right-to-left override reached the organiser's terminal raw, and a line
    # break split its one line of error.
    for status in (400, 200):
        _Foreign.status = status
        with http.server.HTTPServer(("127.0.0.1", 0), _Foreign) as foreign:
            worker = threading.Thread(target=foreign.serve_forever, daemon=True)
            worker.start()
            try:
                url = f"http://127.0.0.1:{foreign.server_port}"
                done = ServerProcess.cli("admin", "pause", "--url", url, "--token", "x")
            finally:
                foreign.shutdown()
        told = done.stdout + done.stderr
        assert not any(c in told for c in "\x1b\x07\x9b\u202e"), told
        assert "evil \\x1b]0;retitled\\x07 \\x9b2J \\u202e text" in told, told
        if status == 400:
            assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
