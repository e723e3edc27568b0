"""A bad-input sweep of the `arena` command, run as a user would (real processes, real SQLite
files): what the sweep found that the other audits did not cover. Each refusal is one line, exit
code 2, before any referee or bot starts, and leaves every file as it was.

- A batch (`arena run`, `demo`, `sprt`) given the competition's database: the accounts alone
  named no run, so the batch was stored in it, and from then on `arena serve` and every
  `arena bots` command refused the organiser's database ("holds a batch run").
- A `--host` or an admin `--url` whose host Python's IDNA encoding refuses (a label over 63
  characters, an empty one, a character no host name holds): a traceback.
- A config file that tomllib cannot read for Python's own limits (an integer of over 4300
  digits, arrays nested past the recursion limit): a traceback, for `arena run` and `serve`.
- A config file's `rules = true` (or a date, a table; `db`, `out` alike) said in Python's words
  (`True`, `datetime.date(...)`), not the file's.
- `--help` names a bot's value `NAME`, as the README and the refusals do (`--candidate NAME`,
  `--anchor NAME`), not `BOT`.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ARENA = str(Path(sys.executable).with_name("arena"))
ROOT = Path(__file__).resolve().parent.parent
LOW = f"{shlex.quote(sys.executable)} {shlex.quote(str(ROOT / 'sample_bots' / 'lowcard.py'))}"
WAIT_S = 120.0
"""A deadline only against a hang: each command here is refused as it reads its flags."""


def arena(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``arena ARGS`` in ``cwd`` to completion."""
    return subprocess.run(
        [ARENA, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        check=False,
        env={**os.environ, "COLUMNS": "200"},
    )


def one_error(done: subprocess.CompletedProcess[str]) -> str:
    """The one ``arena: error:`` line of a refusal (exit code 2), asserting there is only it."""
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("arena: error: "), done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return lines[0]


def files(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with a digest of its bytes (folders as ``/``)."""
    digest = {
        p: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*") if p.is_file()
    }
    return {str(p.relative_to(folder)): digest.get(p, "/") for p in sorted(folder.rglob("*"))}


def test_a_batch_on_the_competitions_database_is_refused_and_leaves_it_as_it_was(
    tmp_path: Path,
) -> None:
    added = arena(tmp_path, "bots", "add", "alice", "--db", "comp.db")
    assert added.returncode == 0, added.stderr
    (tmp_path / "run.toml").write_text('db = "comp.db"\nplayers = 3\n')
    before = files(tmp_path)
    for args, flag in (
        (["run", "--players", "3", "--db", "comp.db"], "--db comp.db"),
        (["run", "--config", "run.toml"], "config file: db = comp.db"),
        (["demo", "--db", "comp.db"], "--db comp.db"),
        (["sprt", "--bot", f"a={LOW}", "--bot", f"b={LOW}", "--db", "comp.db"], "--db comp.db"),
    ):
        line = one_error(arena(tmp_path, *args))
        assert line == (
            f"arena: error: {flag}: holds arena serve's competition (its bot accounts), not a "
            "batch run; give the run a database of its own (a new file)"
        ), args
        # Nothing made (no comp-out, no lock, no side file), the database byte for byte.
        assert files(tmp_path) == before, args
    listed = arena(tmp_path, "bots", "list", "--db", "comp.db")
    assert listed.returncode == 0 and "alice" in listed.stdout, listed.stderr


def test_accounts_made_as_a_runs_bots_start_are_refused_by_it_and_kept(tmp_path: Path) -> None:
    # `arena bots add` on the new file while the run's bots started: the run, refused the file
    # (a competition's now), removed it as one it had made, the accounts and their token too.
    adds = f"{shlex.quote(ARENA)} bots add alice --db comp.db > token.txt 2> /dev/null"
    first = f"sh -c {shlex.quote(f'{adds}; exec {LOW}')}"
    done = arena(
        tmp_path, "run", "--db", "comp.db", "--bot", f"a={first}",
        *(arg for name in "bcd" for arg in ("--bot", f"{name}={LOW}")),
    )  # fmt: skip
    assert one_error(done) == (
        "arena: error: --db comp.db: holds arena serve's competition (its bot accounts), not a "
        "batch run; give the run a database of its own (a new file)"
    )
    token = (tmp_path / "token.txt").read_text().strip()
    assert token, "the bot's command added no account"
    listed = arena(tmp_path, "bots", "list", "--db", "comp.db")
    assert listed.returncode == 0 and "alice" in listed.stdout, listed.stderr


def test_a_database_of_the_admin_token_alone_is_a_competitions_too(tmp_path: Path) -> None:
    made = arena(tmp_path, "admin", "token", "--db", "comp.db")
    assert made.returncode == 0, made.stderr
    before = files(tmp_path)
    assert "holds arena serve's competition" in one_error(
        arena(tmp_path, "run", "--players", "3", "--db", "comp.db")
    )
    assert files(tmp_path) == before


LONG_LABEL = "a" * 64
"""One label past DNS's 63 characters: Python's IDNA encoding raises UnicodeError on it."""


@pytest.mark.parametrize("host", [LONG_LABEL, "\u202e", f"x.{'b' * 300}"])
def test_a_host_no_host_name_can_be_is_one_line_naming_host(tmp_path: Path, host: str) -> None:
    line = one_error(arena(tmp_path, "serve", "--host", host, "--port", "0", "--web-port", "0"))
    assert line.startswith(f"arena: error: --host {host!r}: not an address or a host name"), line
    assert "give one of this machine's addresses" in line
    assert list(tmp_path.iterdir()) == []  # no comp.db started


@pytest.mark.parametrize(
    "host", [LONG_LABEL, "a..b"], ids=["label-over-63-characters", "empty-label"]
)
@pytest.mark.parametrize("scheme", ["http", "https"])
def test_an_admin_url_whose_host_no_host_name_can_be_is_refused_before_sending(
    tmp_path: Path, host: str, scheme: str
) -> None:
    url = f"{scheme}://{host}:8080"
    line = one_error(arena(tmp_path, "admin", "pause", "--token", "t", "--url", url))
    assert line.startswith(f"arena: error: --url {url}: {host!r} is not a host name"), line
    assert line.endswith("give the leaderboard's address as http://HOST:PORT (https:// if the "
                         "server was started with --tls-cert)")  # fmt: skip


def test_help_names_a_bots_value_name_as_the_readme_does(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    for command, flag in (("run", "--candidate"), ("ratings", "--anchor")):
        assert f"{flag} NAME" in readme
        shown = arena(tmp_path, command, "--help")
        assert shown.returncode == 0, shown.stderr
        rows = [" ".join(line.split()) for line in shown.stdout.splitlines()]
        assert any(r.startswith(f"│ {flag} NAME ") for r in rows), (flag, shown.stdout)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        # tomllib reads an integer with int(), which refuses over 4300 digits (ValueError).
        (f"players = {'9' * 5000}\n", "holds a number of more than 4300 digits"),
        # tomllib parses nested arrays and inline tables recursively (RecursionError).
        (f"players = {'[' * 2000}{']' * 2000}\n", "arrays or inline tables nested too deep"),
        (f"players = {'{a = ' * 2000}1{'}' * 2000}\n", "arrays or inline tables nested too deep"),
    ],
    ids=["huge-integer", "deep-arrays", "deep-inline-tables"],
)
@pytest.mark.parametrize("command", ["run", "serve"])
def test_a_config_file_tomllib_cannot_read_is_one_line(
    tmp_path: Path, command: str, text: str, says: str
) -> None:
    (tmp_path / "c.toml").write_text(text)
    args = ["--port", "0", "--web-port", "0"] if command == "serve" else []
    line = one_error(arena(tmp_path, command, "--config", "c.toml", *args))
    assert line.startswith(f"arena: error: --config c.toml: {says}"), line
    assert line.endswith(": fix that value"), line
    assert [p.name for p in tmp_path.iterdir()] == ["c.toml"]


RULES_OF_ANOTHER_TYPE = [
    ("rules = true", "rules = true: expected a preset name in quotes"),
    ("rules = 2024-01-01", "rules = 2024-01-01: expected a preset name in quotes"),
    ("rules = { a = 1 }", "rules = {a = 1}: expected a preset name in quotes"),
    ("rules = 5", "rules = 5: expected a preset name in quotes"),
]
PATHS_OF_ANOTHER_TYPE = [
    ("db = true", "db = true: expected a path (a string)"),
    ("out = 2024-01-01", "out = 2024-01-01: expected a path (a string)"),
]


@pytest.mark.parametrize(
    ("command", "text", "refused"),
    [("run", *case) for case in RULES_OF_ANOTHER_TYPE + PATHS_OF_ANOTHER_TYPE]
    + [("serve", *case) for case in RULES_OF_ANOTHER_TYPE],
)
def test_a_setting_of_another_type_is_named_as_the_file_writes_it(
    tmp_path: Path, command: str, text: str, refused: str
) -> None:
    # It said "rules = True: unknown preset 'True'" and "db = datetime.date(2024, 1, 1)":
    # Python's words, where the numbers' refusals are the file's (`players = true`).
    (tmp_path / "c.toml").write_text(text + "\n")
    args = ["--port", "0", "--web-port", "0"] if command == "serve" else []
    line = one_error(arena(tmp_path, command, "--config", "c.toml", *args))
    where = "server config" if command == "serve" else "config file"
    assert line.startswith(f"arena: error: {where}: {refused}"), line
    assert [p.name for p in tmp_path.iterdir()] == ["c.toml"]
