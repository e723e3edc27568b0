"""``arena bots`` and an event's times as a newcomer organiser meets them, run for real on SQLite
files: a second revoke or ban that said it revoked or banned again, bot names that differ only in
case, and an event that ends before it starts refused without showing either time."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from test_cli_tokens import owner
from typer.testing import CliRunner

from arena.cli import app
from arena.server.accounts import AccountStore, hash_token

ARENA = Path(sys.executable).with_name("arena")
BASE = [str(ARENA)] if ARENA.exists() else [sys.executable, "-m", "arena.cli"]
TIMEOUT_S = 120


def bots(*args: str, db: Path) -> tuple[int, str, str]:
    """(exit code, standard output, standard error) of ``arena bots ARGS --db DB``."""
    done = CliRunner().invoke(app, ["bots", *args, "--db", str(db)])
    assert done.exception is None or isinstance(done.exception, SystemExit), done.exception
    return done.exit_code, done.stdout, done.stderr


def error_line(stderr: str) -> str:
    """The one ``arena: error:`` line of a refused command."""
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("arena: error: "), stderr
    assert "Traceback" not in stderr, stderr
    return lines[0]


def listed(db: Path) -> dict[str, tuple[str, str]]:
    """Each bot's (status, note), as ``arena bots list --json`` gives them."""
    code, out, err = bots("list", "--json", db=db)
    assert code == 0, err
    return {a["name"]: (a["status"], a["note"]) for a in json.loads(out)}


def test_a_second_revoke_or_ban_says_nothing_changed(tmp_path: Path) -> None:
    # Run twice, `bots revoke` said "token revoked" both times (and `bots ban` "banned"), as if
    # the second had done something: the organiser could not tell a repeat from a first revoke.
    # A path with a space: the command it suggests is quoted, to be pasted as it is.
    db = tmp_path / "the comp.db"
    assert bots("add", "alice", db=db)[0] == 0
    assert bots("revoke", "alice", db=db)[:2] == (0, "bot 'alice': token revoked\n")

    # Exit 0 as a second ban has always had: the token is gone, as asked.
    assert bots("revoke", "alice", db=db)[:2] == (
        0,
        "bot 'alice': its token was already revoked, so nothing changed; to give it a new one: "
        f"`arena bots add alice --new-token --db '{db}'`\n",
    )
    # A new reason is a change, and said as one.
    assert bots("revoke", "alice", "--reason", "leaked", db=db)[:2] == (
        0,
        "bot 'alice': its token was already revoked; reason now 'leaked'\n",
    )
    assert listed(db) == {"alice": ("revoked", "leaked")}

    assert bots("ban", "alice", db=db)[:2] == (0, "bot 'alice': banned\n")
    assert bots("ban", "alice", db=db)[:2] == (
        0,
        "bot 'alice': already banned (reason 'leaked'), so nothing changed\n",
    )
    assert bots("ban", "alice", "--reason", "collusion", db=db)[:2] == (
        0,
        "bot 'alice': already banned; reason now 'collusion'\n",
    )
    code, out, _ = bots("revoke", "alice", db=db)
    assert code == 0
    assert out.startswith("bot 'alice': its token was already revoked (it stays banned), so ")
    assert listed(db) == {"alice": ("banned", "collusion")}

    # A bot banned with its token, then revoked, is revoked now (and stays banned).
    assert bots("add", "bob", db=db)[0] == 0
    assert bots("ban", "bob", db=db)[0] == 0
    assert bots("revoke", "bob", db=db)[:2] == (0, "bot 'bob': token revoked (it stays banned)\n")
    # An unban of a bot that is not banned stays an error, as it was.
    assert bots("unban", "alice", db=db)[0] == 0
    code, _, err = bots("unban", "alice", db=db)
    assert code == 2
    assert error_line(err) == "arena: error: bot 'alice' is not banned (it is revoked)"


def test_an_empty_reason_is_refused_not_read_as_none(tmp_path: Path) -> None:
    # `--reason ""` was taken as no reason: the ban went through with the earlier reason (or
    # "banned by the organiser"), where every other empty value is refused.
    db = tmp_path / "comp.db"
    assert bots("add", "alice", db=db)[0] == 0
    for command in ("ban", "revoke"):
        for empty in ("", "  "):
            code, out, err = bots(command, "alice", "--reason", empty, db=db)
            assert (code, out) == (2, "")
            assert error_line(err) == (
                f"arena: error: --reason {empty!r}: an empty reason was given; give one, or "
                "leave --reason out"
            )
    assert listed(db) == {"alice": ("active", "")}  # nothing changed
    # `arena admin ban` and `kick` refuse it before anything is sent (no server is asked).
    for words in (["ban", "alice"], ["kick", "s1"]):
        done = CliRunner().invoke(
            app, ["admin", *words, "--reason", "", "--url", "http://127.0.0.1:9", "--token", "t"]
        )
        assert done.exit_code == 2
        assert error_line(done.stderr).startswith("arena: error: --reason '': an empty reason")


def test_bot_names_that_differ_only_in_case_are_refused(tmp_path: Path) -> None:
    # `Foo` and `foo` could both be added: two bots in the standings and logs that people (and
    # case-insensitive file systems, for their log folders) tell apart only by case.
    db = tmp_path / "comp.db"
    code, token, _ = bots("add", "Foo", db=db)
    assert code == 0
    code, out, err = bots("add", "foo", db=db)
    assert (code, out) == (2, "")
    assert error_line(err) == (
        "arena: error: bot 'Foo' already exists, and 'foo' differs only in case; choose a name "
        "that differs in more than case (or, to replace 'Foo''s token, add 'Foo' with "
        "--new-token)"
    )
    assert list(listed(db)) == ["Foo"]
    assert owner(db, token.strip()) == "Foo"

    # Names stay exact: another spelling finds nothing, but says which bot was meant.
    code, out, err = bots("add", "FOO", "--new-token", db=db)
    assert (code, out) == (2, "")
    assert "there is no bot 'FOO' to give a new token (did you mean 'Foo'?" in error_line(err)
    code, _, err = bots("revoke", "foo", db=db)
    assert code == 2
    assert error_line(err) == (
        "arena: error: no bot named 'foo' (names are exact: did you mean 'Foo'?); "
        "`arena bots list` shows them"
    )
    assert owner(db, token.strip()) == "Foo"
    # Names that differ in more than case are still free.
    assert bots("add", "Foo2", db=db)[0] == 0


def test_a_database_that_already_has_such_names_keeps_working(tmp_path: Path) -> None:
    # Made before the rule: both accounts keep working by their exact names.
    db = tmp_path / "comp.db"
    store = AccountStore(db)
    try:
        upper = store.add("Foo")
    finally:
        store.close()
    lower = "a-token-made-before-the-rule"
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO server_bots (name, token_hash, status, note, created_at, changed_at)"
            " VALUES ('foo', ?, 'active', '', ?, ?)",
            (hash_token(lower), time.time(), time.time()),
        )
    conn.close()
    assert listed(db) == {"Foo": ("active", ""), "foo": ("active", "")}
    assert (owner(db, upper), owner(db, lower)) == ("Foo", "foo")

    code, new, _ = bots("add", "foo", "--new-token", db=db)
    assert code == 0
    assert (owner(db, upper), owner(db, new.strip()), owner(db, lower)) == ("Foo", "foo", None)
    assert bots("ban", "foo", db=db)[:2] == (0, "bot 'foo': banned\n")
    assert listed(db) == {"Foo": ("active", ""), "foo": ("banned", "banned by the organiser")}

    code, _, err = bots("add", "FOO", db=db)
    assert code == 2
    assert error_line(err).startswith("arena: error: bots 'Foo' and 'foo' already exist, and ")


def serve_with_event(tmp_path: Path, event: str) -> subprocess.CompletedProcess[str]:
    """``arena serve`` with a config of four entrants and ``event`` (TOML lines) in [event]."""
    return serve_with_config(
        tmp_path, f'players = 4\n[event]\nentrants = ["a", "b", "c", "d"]\n{event}\n'
    )


def serve_with_config(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    """``arena serve`` (on ephemeral ports) with the config ``text``, its database comp.db in
    ``tmp_path``, run until it exits (a config it refuses)."""
    config = tmp_path / "comp.toml"
    config.write_text(text)
    return subprocess.run(
        [
            *BASE,
            *("serve", "--config", str(config), "--db", str(tmp_path / "comp.db")),
            *("--port", "0", "--web-port", "0"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def test_an_event_that_ends_before_it_starts_shows_both_times(tmp_path: Path) -> None:
    # Refused with "event.end must come after event.start" alone: which of the two was wrong (a
    # date, an hour, an offset) was left to find.
    done = serve_with_event(
        tmp_path, "start = 2027-06-01T18:00:00+02:00\nend = 2027-06-01T15:00:00Z"
    )
    assert done.returncode == 2, done.stderr
    assert error_line(done.stderr) == (
        "arena: error: server config: event.end = 2027-06-01T15:00:00Z is not after "
        "event.start = 2027-06-01T18:00:00+02:00 (2027-06-01T16:00:00Z); give an end later "
        "than the start, or leave end out to play the whole schedule"
    )
    assert not (tmp_path / "comp.db").exists()
