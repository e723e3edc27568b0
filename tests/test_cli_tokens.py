"""A token is printed once: `arena bots add` and `arena admin token` change nothing when it cannot
be written (a closed pipe, a full disk), since a token nobody received would lock its bot out."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arena.cli import app
from arena.server.accounts import AccountError, AccountStore, check_name, hash_token

ARENA = Path(sys.executable).with_name("arena")
BASE = [str(ARENA)] if ARENA.exists() else [sys.executable, "-m", "arena.cli"]
TIMEOUT_S = 120


def arena(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the `arena` command with its standard output captured."""
    return subprocess.run(
        [*BASE, *args], cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )


def arena_into_closed_pipe(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the `arena` command with its standard output a pipe whose reader has gone, as in
    ``arena bots add x | head -0`` (but without the race: the reader is gone before it starts)."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [*BASE, *args],
            cwd=cwd,
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        )
    finally:
        os.close(write)


def here(*args: str) -> str:
    """Run an `arena` command that must succeed in this process; its standard output.

    For what a test sets up or looks at afterwards: the commands whose output is at stake run
    as processes, each of which spends seconds importing the rating maths on a loaded machine.
    """
    done = CliRunner().invoke(app, list(args))
    assert done.exit_code == 0 and done.exception is None, (done.stderr, done.exception)
    return done.stdout


def listed(db: Path) -> list[str]:
    return [a["name"] for a in json.loads(here("bots", "list", "--db", str(db), "--json"))]


def owner(db: Path, token: str) -> str | None:
    """The bot whose token is ``token`` now in the database ``db``, if any (a revoked or
    replaced token is nobody's)."""
    store = AccountStore(db)
    try:
        digests = store.token_digests()
    finally:
        store.close()
    return next((name for name, d in digests.items() if d == hash_token(token)), None)


def one_error_line(stderr: str, says: str) -> None:
    assert stderr.count("\n") == 1 and stderr.startswith("arena: error: "), stderr
    assert says in stderr and "Traceback" not in stderr, stderr


def test_a_token_that_cannot_be_written_adds_no_bot(tmp_path: Path) -> None:
    db = tmp_path / "comp.db"
    # A database started for the bot is not left behind either.
    lost = arena_into_closed_pipe("bots", "add", "alpha", "--db", str(db), cwd=tmp_path)
    assert lost.returncode == 1
    one_error_line(
        lost.stderr,
        "bot 'alpha': its token could not be written to standard output (Broken pipe), "
        "so the bot was not added",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    # In a database that holds other bots: the addition is rolled back, and the name stays free.
    first = arena("bots", "add", "beta", "--db", str(db), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    again = arena_into_closed_pipe("bots", "add", "alpha", "--db", str(db), cwd=tmp_path)
    assert again.returncode == 1
    one_error_line(again.stderr, "so the bot was not added")
    assert listed(db) == ["beta"]
    added = arena("bots", "add", "alpha", "--db", str(db), cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    token = added.stdout.strip()
    assert added.stdout == token + "\n" and token not in added.stderr
    assert "give its author the token above" in added.stderr
    assert owner(db, token) == "alpha"


def test_a_new_token_that_cannot_be_written_leaves_the_old_one_working(tmp_path: Path) -> None:
    db = tmp_path / "comp.db"
    added = arena("bots", "add", "alpha", "--db", str(db), cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    old = added.stdout.strip()
    lost = arena_into_closed_pipe(
        "bots", "add", "alpha", "--new-token", "--db", str(db), cwd=tmp_path
    )
    assert lost.returncode == 1
    one_error_line(
        lost.stderr,
        "bot 'alpha': its new token could not be written to standard output (Broken pipe), "
        "so the old token still works",
    )
    assert owner(db, old) == "alpha"


def test_an_admin_token_that_cannot_be_written_changes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "comp.db"
    made = arena("admin", "token", "--db", str(db), cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    old = made.stdout.strip()
    lost = arena_into_closed_pipe("admin", "token", "--db", str(db), cwd=tmp_path)
    assert lost.returncode == 1
    one_error_line(
        lost.stderr,
        "a new admin token could not be written to standard output (Broken pipe), "
        "so the admin token was not changed",
    )
    store = AccountStore(db)
    try:
        assert store.check_admin(old)
    finally:
        store.close()


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
def test_a_full_output_is_refused_as_a_closed_one(tmp_path: Path) -> None:
    db = tmp_path / "comp.db"
    here("bots", "add", "beta", "--db", str(db))
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [*BASE, "bots", "add", "alpha", "--db", str(db)],
            cwd=tmp_path,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        )
    assert done.returncode == 1
    one_error_line(done.stderr, "(No space left on device), so the bot was not added")
    assert listed(db) == ["beta"]


def test_a_closed_standard_output_adds_no_bot(tmp_path: Path) -> None:
    db = tmp_path / "comp.db"
    here("bots", "add", "beta", "--db", str(db))
    # `arena bots add alpha >&-`: no standard output at all.
    done = subprocess.run(
        ["sh", "-c", 'exec "$@" >&-', "sh", *BASE, "bots", "add", "alpha", "--db", str(db)],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 1
    one_error_line(done.stderr, "so the bot was not added")
    assert listed(db) == ["beta"]


def test_account_commands_do_not_load_the_rating_maths(tmp_path: Path) -> None:
    """`arena bots add/list` start in a fraction of a second: they never import scipy (about
    1.2 s), which only the server's rating fit and `arena ratings` need."""
    db = tmp_path / "comp.db"
    script = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from arena.cli import app\n"
        f"db = {str(db)!r}\n"
        "for args in (['bots', 'add', 'alice', '--db', db], ['bots', 'list', '--db', db]):\n"
        "    result = CliRunner().invoke(app, args)\n"
        "    assert result.exit_code == 0, result.output\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('scipy', 'numpy')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    assert listed(db) == ["alice"]


def test_a_new_token_for_a_mistyped_name_or_database_adds_nothing(tmp_path: Path) -> None:
    db = tmp_path / "comp.db"
    here("bots", "add", "alpha", "--db", str(db))
    typo = arena("bots", "add", "alpah", "--new-token", "--db", str(db), cwd=tmp_path)
    assert typo.returncode == 2 and typo.stdout == ""
    one_error_line(typo.stderr, "there is no bot 'alpah' to give a new token")
    assert listed(db) == ["alpha"]
    # Nor is a database started for it left behind.
    elsewhere = tmp_path / "comp2.db"
    typo = arena("bots", "add", "alpha", "--new-token", "--db", str(elsewhere), cwd=tmp_path)
    assert typo.returncode == 2 and typo.stdout == ""
    one_error_line(typo.stderr, "there is no bot 'alpha' to give a new token")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["comp.db"]


def bots_listed(db: Path, columns: int) -> tuple[subprocess.CompletedProcess[str], list[list[str]]]:
    """`arena bots list --db DB` on a terminal ``columns`` wide: its outcome (exit 0 checked) and
    the table's rows, each a list of its cells (a folded cell's lines are rows of their own)."""
    done = subprocess.run(
        [*BASE, "bots", "list", "--db", str(db)],
        cwd=db.parent,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
        env={**os.environ, "COLUMNS": str(columns)},
    )
    assert done.returncode == 0, done.stderr
    rows = [line.strip("│").split("│") for line in done.stdout.splitlines() if line[:1] == "│"]
    return done, rows


def test_bots_list_shows_reasons_with_brackets_and_long_names_whole(tmp_path: Path) -> None:
    # A ban's reason with square brackets was read as rich markup: "[/x] cheating" ended `arena
    # bots list` in a MarkupError traceback, and "[bold]" vanished; a 64-character name was cut
    # to fit 80 columns ("Lxxx…"), so two long names alike at the start showed as one.
    db = tmp_path / "comp.db"
    long_name = "L" + "x" * 62 + "Z"
    for name in ("spiky", long_name):
        here("bots", "add", name, "--db", str(db))
    reason = "[/x] cheating [bold]loud[/bold]"
    here("bots", "ban", "spiky", "--db", str(db), "--reason", reason)
    done, cells = bots_listed(db, columns=80)
    assert "Traceback" not in done.stderr, done.stderr
    bots = "".join(c[0].strip() for c in cells)  # the bot column, its folded lines joined
    assert long_name + "spiky" == bots, done.stdout
    assert any(c[2].strip() == reason for c in cells), done.stdout
    assert "…" not in done.stdout


def test_bots_list_gives_its_path_whole_and_a_reasons_control_characters_escaped(
    tmp_path: Path,
) -> None:
    # The path was the table's title, wrapped at its spaces even under COLUMNS=200; a reason's
    # escape sequences went to the terminal raw (a new window title, a cleared screen).
    folder = tmp_path / "a long folder name" / "for the competition"
    folder.mkdir(parents=True)
    db = folder / "comp.db"
    here("bots", "add", "spiky", "--db", str(db))
    here("bots", "ban", "spiky", "--db", str(db), "--reason", "\x1b]0;PWNED\x07\x1b[2J bad")
    done, rows = bots_listed(db, columns=40)
    assert done.stdout.splitlines()[0] == f"bots in {db}"
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    note = "".join(row[2].strip() for row in rows)  # the note column, its folds joined
    assert note.replace(" ", "") == "\\x1b]0;PWNED\\x07\\x1b[2Jbad", done.stdout


def test_a_refused_account_name_says_ascii_letters(tmp_path: Path) -> None:
    # "use 1 to 64 letters" for 'café', whose 'é' is a letter.
    done = arena("bots", "add", "café", "--db", str(tmp_path / "comp.db"), cwd=tmp_path)
    assert done.returncode == 2
    one_error_line(done.stderr, "use 1 to 64 ASCII letters, digits")
    # Which character is wrong, as arena run says it ("is not allowed" alone, before).
    assert "bot name 'café' has 'é': use 1 to 64" in done.stderr


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("", "'' is empty"),
        (".x", "'.x' starts with '.'"),
        ("a" * 65, f"'{'a' * 65}' is 65 characters long"),
    ],
)
def test_a_refused_account_name_says_what_is_wrong_with_it(name: str, said: str) -> None:
    with pytest.raises(AccountError, match=f"^bot name {re.escape(said)}: use 1 to 64 ASCII"):
        check_name(name)
