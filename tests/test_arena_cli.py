"""The `arena` command as a user runs it: exit codes, one-line errors, nothing half-written, and
the replay, ratings, sprt and demo commands."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import resource
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from conftest import run_at_once
from test_store import play_record
from typer.testing import CliRunner, Result

from arena.cli import MAX_SPRT_BOARDS, app
from arena.config import MAX_BOARDS, build_config
from arena.director.run import check_port
from arena.director.schedule import schedule
from arena.errors import ConfigError
from arena.store import Store

ROOT = Path(__file__).resolve().parent.parent
PY = shlex.quote(sys.executable)
LOW = f"{PY} {shlex.quote(str(ROOT / 'sample_bots' / 'lowcard.py'))}"
BOTS = ROOT / "sample_bots"
HEUR = f"{PY} {shlex.quote(str(ROOT / 'sample_bots' / 'heuristic.py'))}"
HASH = f"{PY} {shlex.quote(str(ROOT / 'tests' / 'arena_bots' / 'hashbot.py'))}"
CLI_TIMEOUT_S = 240
QUITTER = 'import sys; print("no cards today", file=sys.stderr); sys.exit(3)'
DUMPER = (
    'import sys; print("RuntimeError: cannot load the weights", file=sys.stderr); '
    'print("z" * 20000, file=sys.stderr); sys.exit(3)'
)
"""A bot whose error line is followed by a long debug line (a 4 kB window quoted a piece of it)."""
ARENA = Path(sys.executable).with_name("arena")
BASE = [str(ARENA)] if ARENA.exists() else [sys.executable, "-m", "arena.cli"]


def arena(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the `arena` command in ``cwd``."""
    return subprocess.run(
        [*BASE, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def arenas(cwd: Path, commands: Sequence[Sequence[str]]) -> list[subprocess.CompletedProcess[str]]:
    """:func:`arena` for each of ``commands``, all started at once (for commands refused before
    they write anything, whose time is mostly the start); their outcomes in order."""

    def starter(args: Sequence[str]) -> Callable[[], subprocess.Popen[str]]:
        return lambda: subprocess.Popen(
            [*BASE, *args],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )

    return run_at_once([starter(args) for args in commands], CLI_TIMEOUT_S)


def start_run(cwd: Path, *args: str, background: bool = False) -> subprocess.Popen[str]:
    """Start `arena run ARGS` in ``cwd``, its progress and errors readable on stderr;
    ``background``: with SIGINT ignored, as a shell script starts a command with ``&``."""
    return subprocess.Popen(
        [*BASE, "run", *args],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_ignoring_sigint if background else _hangup_default,
    )


def _hangup_default() -> None:
    """SIGHUP as a terminal's command has it (a test suite started under `nohup` ignores it,
    and `arena run` keeps an inherited ignore)."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _ignoring_sigint() -> None:
    """As a shell script's ``command &`` starts it: SIGINT ignored."""
    _hangup_default()
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_version_and_help(tmp_path: Path) -> None:
    done = arena("--version", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("arena ")
    helped = arena("run", "--help", cwd=tmp_path)
    assert helped.returncode == 0
    for flag in (
        "--bot", "--players", "--rules", "--rule", "--format", "--candidate", "--boards",
        "--game-to", "--concurrency", "--seed", "--move-time", "--time-bank", "--db", "--out",
        "--config", "--port",
    ):  # fmt: skip
        assert flag in helped.stdout


def test_every_help_says_what_each_option_takes_in_words(tmp_path: Path) -> None:
    # typer 0.29 showed Python types beside options (`--bot <list[str]>`, `--seed <int>`) and
    # `<bool>` beside every flag, --help included.
    commands = [
        [*c, "--help"]
        for c in (
            [], ["run"], ["demo"], ["replay"], ["ratings"], ["sprt"], ["serve"], ["check-bot"],
            ["bots"], ["bots", "add"], ["bots", "list"], ["bots", "revoke"], ["bots", "ban"],
            ["bots", "unban"], ["admin"], ["admin", "token"], ["admin", "pause"],
            ["admin", "resume"], ["admin", "kick"], ["admin", "ban"], ["admin", "unban"],
        )
    ]  # fmt: skip
    done = arenas(tmp_path, commands)
    for command, helped in zip(commands, done, strict=True):
        assert helped.returncode == 0, (command, helped.stderr)
        assert not re.search(r"<(bool|int|float|str|path|list\[)", helped.stdout), command
    run, sprt, ratings = done[1], done[5], done[4]
    rows = [" ".join(line.split()) for line in run.stdout.splitlines()]
    for row in ("--bot NAME=COMMAND", "--rule NAME=VALUE", "--seed N", "--move-time TIME"):
        assert any(r.startswith(f"│ {row} ") for r in rows), row
    assert any(" ".join(r.split()).startswith("│ --strict --no-strict Forfeit") for r in rows)
    assert "--filler" in sprt.stdout and "NAME=COMMAND" in sprt.stdout
    assert "sandwich|bootstrap" in ratings.stdout


def test_check_bot_with_no_command_fails_rather_than_showing_help(tmp_path: Path) -> None:
    # It printed its help and exited 0: a CI step whose bot command came out empty passed with
    # nothing checked.
    (bare,) = arenas(tmp_path, [["check-bot"]])
    assert bare.returncode == 2, bare.stdout
    assert bare.stderr == (
        "arena: error: give the bot's command after '--', e.g. "
        "arena check-bot -- python sample_bots/heuristic.py\n"
    )


def one_port_in_use() -> socket.socket:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    return listener


def three_bots(first: str, *more: str) -> list[str]:
    """``arena run`` arguments: the bot ``first`` (NAME=COMMAND) and two lowcard bots at 3-player
    tables, then ``more``."""
    return ["--bot", first, "--bot", f"b={LOW}", "--bot", f"c={LOW}", "--players", "3", *more]


LONG_NAME = "x" * 300
"""A file name longer than any file system takes (255 bytes): looking it up fails."""
BAD_INPUT = {
    "missing command": (
        three_bots("a=/no/such/bot"),
        "bot 'a': command '/no/such/bot' does not exist",
    ),
    "command is a folder": (
        three_bots(f"a={BOTS}"),
        f"bot 'a': command '{BOTS}' is a folder: give the program inside it",
    ),
    "command is not executable": (
        three_bots(f"a={ROOT / 'README.md'}"),
        "is not executable: chmod +x it, or start it with its interpreter (python FILE)",
    ),
    "exits at once": (
        three_bots(f"quitter={PY} -c {shlex.quote(QUITTER)}", "--concurrency", "1"),
        "exited before it connected, with code 3: no cards today",
    ),
    "exits at once, a long line after its error": (
        three_bots(f"dumper={PY} -c {shlex.quote(DUMPER)}"),
        "exited before it connected, with code 3: RuntimeError: cannot load the weights",
    ),
    "exits at once, --out in a new folder": (
        three_bots(f"quitter={PY} -c {shlex.quote(QUITTER)}", "--out", "od/sub"),
        "exited before it connected, with code 3",
    ),
    "out is the database": (
        three_bots(f"a={LOW}", "--db", "x.db", "--out", "x.db"),
        "--out x.db: is the --db path; give the replays and logs a folder of their own",
    ),
    "out is the database's write-ahead log": (
        three_bots(f"a={LOW}", "--db", "w.db", "--out", "w.db-wal"),
        "--out w.db-wal: is where SQLite keeps a file of the --db w.db; give the replays and logs",
    ),
    "flag given twice": (["--players", "3", "--players", "5"], "--players is given more than once"),
    "bad rule": (["--rule", "colour=red"], "--rule 'colour=red': 'colour' is not a rule"),
    "bad preset": (["--rules", "chess"], "--rules 'chess': not a preset; choose one of"),
    "too few bots": (
        ["--bot", f"a={LOW}", "--bot", f"b={LOW}"],
        "2 bot(s) (a, b) for 4-player tables: give at least 4",
    ),
    "database in a missing folder": (
        three_bots(f"a={LOW}", "--db", "nowhere/x.db"),
        "--db nowhere/x.db: folder nowhere does not exist",
    ),
    "database is a folder": (["--db", "."], "--db .: is a folder, not a database file"),
    "bad duration": (["--move-time", "soon"], "--move-time 'soon'"),
    "config file missing": (["--config", "nothing.toml"], "--config nothing.toml: no such file"),
    "negative seed": (["--seed", "-1"], "--seed -1: a seed is a whole number from 0 to 9223372036"),
    "seed past 64 bits": (
        ["--seed", str(2**63)],
        f"--seed {2**63}: a seed is a whole number from 0 to {2**63 - 1} (2**63 - 1)",
    ),
    # Paths the system cannot look up at all (Path.exists() raises on these): were tracebacks.
    "command name too long": (
        three_bots(f"a=/{LONG_NAME}"),
        f"bot 'a': command '/{LONG_NAME}' cannot be looked up: File name too long",
    ),
    "database name too long": (
        three_bots(f"a={LOW}", "--db", f"{LONG_NAME}.db"),
        f"--db {LONG_NAME}.db: cannot look it up: File name too long",
    ),
    "out in a folder whose name is too long": (
        three_bots(f"a={LOW}", "--out", f"{LONG_NAME}/out"),
        f"--out {LONG_NAME}/out: cannot look it up: File name too long",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUT))
def test_bad_input_is_one_line_exit_2_and_nothing_written(tmp_path: Path, case: str) -> None:
    args, message = BAD_INPUT[case]
    done = arena("run", *args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("arena: error: ") and message in done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_every_command_with_a_seed_refuses_one_out_of_range(tmp_path: Path) -> None:
    commands = (
        ["demo", "--seed", "-1"],
        ["sprt", "--bot", f"a={LOW}", "--bot", f"b={HEUR}", "--seed", "-1"],
        ["run", "--seed=-5"],
    )
    for done in arenas(tmp_path, commands):
        assert done.returncode == 2, done.stderr
        assert re.fullmatch(
            r"arena: error: --seed -\d: a seed is a whole number from 0 to 9223372036854775807 "
            r"\(2\*\*63 - 1\); the same seed always deals the same cards\n",
            done.stderr,
        ), done.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_number_in_quotes_in_the_config_file_is_one_line_naming_the_key(tmp_path: Path) -> None:
    # `boards = "3"` was taken as 3; a seed out of range from the file names the file's key too.
    toml = tmp_path / "run.toml"
    for text, says in (
        ('boards = "3"', "config file: boards = '3': expected a whole number, not a string: "
         "write it without quotes"),
        ("seed = -1", "config file: seed = -1: a seed is a whole number from 0 to "),
        ('[rule]\nkitty = "yes"', "config file: [rule] kitty = 'yes': expected true or false"),
    ):  # fmt: skip
        toml.write_text(text + "\n")
        done = arena("run", "--config", str(toml), cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"arena: error: {says}"), (
            done.stderr
        )
    assert [p.name for p in tmp_path.iterdir()] == ["run.toml"]


def test_a_port_in_use_is_refused(tmp_path: Path) -> None:
    with one_port_in_use() as taken:
        port = taken.getsockname()[1]
        done = arena(
            "run", "--port", str(port), "--bot", f"a={LOW}", "--bot", f"b={LOW}", "--bot",
            f"c={LOW}", "--players", "3", cwd=tmp_path,
        )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == f"arena: error: --port {port}: 127.0.0.1:{port} is not free " + (
        "(Address already in use)\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_a_port_whose_connections_wait_out_time_wait_is_free_to_resume_on() -> None:
    # After a Ctrl-C the referee's last connections on --port wait in TIME_WAIT for a minute;
    # "run the same command again to resume" was refused meanwhile as "not free", though
    # nothing listened there. A listener on it is still refused (the test above, and here).
    with one_port_in_use() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC's is
        port = listener.getsockname()[1]
        with pytest.raises(ConfigError, match="is not free"):
            check_port(port)
        client = socket.create_connection(("127.0.0.1", port))
        served, _ = listener.accept()
        served.close()  # the listening side closes first: its end waits in TIME_WAIT
        client.close()
    check_port(port)


def test_an_existing_database_is_left_as_it_was_when_a_bot_fails(tmp_path: Path) -> None:
    # The same run, resumed with one more board... no: the same command, whose bot c now dies at
    # start-up (its environment says so): the run must stop before touching the database.
    flaky = f"""sh -c 'test -z "$BREAK_BOT" && exec {LOW}'"""
    args = ["--bot", f"a={LOW}", "--bot", f"b={LOW}", "--bot", f"c={flaky}", "--players", "3"]
    # A first run, stopped with Ctrl-C after a few games, leaves games to resume.
    first = start_run(tmp_path, *args, "--boards", "20")
    assert first.stderr is not None
    for line in first.stderr:
        if re.match(r"arena: [1-9]\d*/60 games", line):
            break
    first.send_signal(signal.SIGINT)
    _, said = first.communicate(timeout=CLI_TIMEOUT_S)
    assert first.returncode == 130, said
    before = (tmp_path / "arena.db").read_bytes()
    os.environ["BREAK_BOT"] = "1"
    try:
        broken = arena("run", *args, "--boards", "20", cwd=tmp_path)
    finally:
        del os.environ["BREAK_BOT"]
    assert broken.returncode == 2, broken.stderr
    assert (
        broken.stderr.startswith("arena: error: bot 'c': ")
        and "exited before it connected" in broken.stderr
    )
    assert (tmp_path / "arena.db").read_bytes() == before
    assert not (tmp_path / "arena.db-wal").exists()
    # Another configuration (c's command changed) is refused before any bot starts.
    other = [*args[:4], "--bot", f"c={PY} -c 'import sys; sys.exit(1)'", "--players", "3"]
    done = arena("run", *other, "--boards", "20", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert f"holds another run (bot c {flaky!r}, not " in done.stderr
    assert (tmp_path / "arena.db").read_bytes() == before


def test_an_empty_file_as_db_stays_empty_when_a_bot_fails_then_takes_the_run(
    tmp_path: Path,
) -> None:
    # A `touch`ed --db is taken as a database not made yet (SQLite reads an empty file as an empty
    # database; nothing is in it to lose), and made only once the bots are up: a failed start
    # left it holding the schema of a run that never was.
    db = tmp_path / "mine.db"
    db.touch()
    quitter = f"quitter={PY} -c {shlex.quote(QUITTER)}"
    args = ["--bot", f"b={LOW}", "--bot", f"c={LOW}", "--players", "3", "--db", "mine.db"]
    broken = arena("run", "--bot", quitter, *args, cwd=tmp_path)
    assert broken.returncode == 2 and "exited before it connected, with code 3" in broken.stderr
    assert db.read_bytes() == b""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.db"]
    done = arena("run", "--bot", f"a={LOW}", *args, "--boards", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with Store.open(db, create=False) as store:
        (run,) = store.runs()
        assert len(list(store.records(run.run_id))) == 3


@pytest.mark.parametrize(
    ("stop", "background"),
    [
        (signal.SIGINT, False),
        (signal.SIGTERM, False),
        (signal.SIGTERM, True),
        (signal.SIGHUP, False),
    ],
    ids=["SIGINT", "SIGTERM", "SIGTERM-with-SIGINT-ignored", "SIGHUP"],
)
def test_ctrl_c_while_the_bots_start_is_one_line_and_exit_130(
    tmp_path: Path, stop: signal.Signals, background: bool
) -> None:
    # With SIGINT ignored (a script's `arena run ... &`), a SIGTERM turned into a SIGINT was
    # ignored with it: the run went on, and a kill -9 after it left its bots running.
    # Still starting when the Ctrl-C comes; its sleep is this test's own (a sibling case on the
    # other xdist worker may be starting its bots as this one looks for leftovers).
    pause = f"sleep 37.{secrets.randbelow(10**9):09d}"
    slow = f"sh -c '{pause}; exec {LOW}'"
    args = ["--bot", f"a={LOW}", "--bot", f"b={LOW}", "--bot", f"c={slow}", "--players", "3"]
    run = start_run(tmp_path, *args, "--boards", "1", background=background)
    try:
        log = tmp_path / "arena-out" / "logs" / "c.log"
        deadline = time.monotonic() + CLI_TIMEOUT_S
        while "started process" not in (log.read_text() if log.exists() else ""):
            assert run.poll() is None and time.monotonic() < deadline, "the run never got going"
            time.sleep(0.05)
        run.send_signal(stop)
        _, said = run.communicate(timeout=CLI_TIMEOUT_S)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 130, said
    assert "Traceback" not in said
    assert not (tmp_path / "arena-out").exists() and not (tmp_path / "arena.db").exists()
    # The bot still starting was stopped with its children (the shell's sleep).
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True)
    assert pause not in ps.stdout
    assert said.strip().splitlines()[-1] == (
        "arena: error: interrupted before any game was played; nothing was made"
    )


def test_a_bot_command_under_the_home_folder_as_the_readme_gives_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "hearts-arena").mkdir(parents=True)
    (home / "hearts-arena" / "sample_bots").symlink_to(BOTS)
    mine = "low=python ~/hearts-arena/sample_bots/lowcard.py"
    bots = ["--bot", mine, "--bot", f"b={LOW}", "--bot", f"c={HEUR}", "--players", "3"]
    done = subprocess.run(
        [*BASE, "run", *bots, "--boards", "1", "--db", str(tmp_path / "home.db")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        env={**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(home)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "3 of 3 games" in done.stdout + done.stderr, done.stdout + done.stderr


@pytest.mark.parametrize("hard", [False, True], ids=["soft-limit", "hard-limit"])
def test_a_low_limit_on_open_files_is_lifted_or_refused_in_one_line(
    tmp_path: Path, hard: bool
) -> None:
    # Under `ulimit -n 40` a run of 8 bot processes spammed "File descriptor limit reached"
    # and blamed a bot for not starting (at 20, a segmentation fault): a soft limit is lifted
    # as the server lifts its own, a hard one refused before anything is made.
    def low_limit() -> None:
        _hangup_default()
        _, top = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (40, 40 if hard else top))

    done = subprocess.run(
        [*BASE, "run", "--boards", "1", "--concurrency", "2", "--db", str(tmp_path / "f.db")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        preexec_fn=low_limit,
        check=False,
    )
    if not hard:
        assert done.returncode == 0, done.stderr
        assert "4 of 4 games" in done.stdout
        return
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        "arena: error: the limit on open files (ulimit -n) is 40, and this run needs about 48 "
        "(8 bot processes): raise it, e.g. ulimit -n 1024, or lower --concurrency\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_an_argument_in_another_encoding_than_utf8_is_one_line(tmp_path: Path) -> None:
    # From a Latin-1 terminal: a traceback (UnicodeEncodeError: surrogates not allowed) where
    # the value is stored or looked up as text; a path in that encoding is fine.
    db = tmp_path / "c.db"
    assert arena("bots", "add", "alice", "--db", str(db), cwd=tmp_path).returncode == 0
    runs = tmp_path / "r.db"
    played = arena("run", *three_bots(f"a={LOW}"), "--boards", "1", "--db", str(runs), cwd=tmp_path)
    assert played.returncode == 0, played.stderr
    latin1 = os.fsdecode(b"caf\xe9")
    commands = (
        ["bots", "ban", "alice", "--reason", latin1, "--db", str(db)],
        ["replay", latin1, "--db", str(runs)],
        ["ratings", "--run", latin1, "--db", str(runs)],
    )
    for done in arenas(tmp_path, commands):
        assert done.returncode == 2, done.stderr
        assert done.stderr == (
            "arena: error: 'caf\\udce9' is not UTF-8 text (it holds bytes of another "
            "encoding); give it in UTF-8 (nothing was changed)\n"
        )
    checked = arena("check-bot", "--name", latin1, "--", "true", cwd=tmp_path)
    assert checked.returncode == 2 and checked.stderr == (
        "arena: error: --name 'caf\\udce9': not UTF-8 text (it holds bytes of another encoding)\n"
    ), checked.stderr
    listed = arena("bots", "list", "--json", "--db", str(db), cwd=tmp_path)
    assert json.loads(listed.stdout)[0]["status"] == "active"  # the ban was not made


def test_a_command_run_in_a_removed_folder_says_so_in_one_line(tmp_path: Path) -> None:
    # After `git clean` or a rebuilt checkout: a FileNotFoundError traceback (run, demo, sprt,
    # ratings --plot), "[Errno 2] No such file or directory" alone (serve).
    gone = tmp_path / "gone"
    gone.mkdir()
    commands = [["run", "--boards", "1"], ["serve"], ["ratings", "--db", str(tmp_path / "x.db")]]
    script = (
        "import os, subprocess, sys\n"
        f"os.chdir({str(gone)!r}); os.rmdir({str(gone)!r})\n"
        "for args in sys.argv[2:]:\n"
        "    words = args.split('|') if args else []\n"
        "    done = subprocess.run([sys.argv[1], *words], capture_output=True, text=True)\n"
        "    print(done.returncode, done.stderr, end='', flush=True)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(ARENA), *("|".join(c) for c in commands)],
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        check=False,
    )
    said = (
        "2 arena: error: the current folder no longer exists (it was removed after the shell "
        "went there): cd to one that does and run the command again\n"
    )
    assert done.stdout == said * len(commands), done.stdout + done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    # What only prints help or the version is answered there: `arena`, `arena bots` alone.
    gone.mkdir()
    asked = subprocess.run(
        [sys.executable, "-c", script, str(ARENA), "", "bots", "admin", "run|--help", "--version"],
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        check=False,
    )
    assert asked.stdout.count("0 ") == 5 and "no longer exists" not in asked.stdout, asked.stdout


def test_a_second_run_on_a_database_in_use_is_refused(tmp_path: Path) -> None:
    args = ["--bot", f"a={LOW}", "--bot", f"b={LOW}", "--bot", f"c={LOW}", "--players", "3"]
    # Boards enough that the first run is still playing when the second starts, however fast
    # the machine: it is stopped right after.
    first = start_run(tmp_path, *args, "--boards", "2000")
    try:
        assert first.stderr is not None
        for line in first.stderr:
            if re.match(r"arena: [1-9]\d*/6000 games", line):
                break
        second = arena("run", *args, "--boards", "2000", cwd=tmp_path)
        assert second.returncode == 2, second.stderr
        assert second.stderr.strip() == (
            f"arena: error: --db arena.db: another arena run (pid {first.pid}) is using this "
            "database; wait for it or stop it first, or give this arena run its own --db"
        )
        first.send_signal(signal.SIGINT)
        _, said = first.communicate(timeout=CLI_TIMEOUT_S)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert first.returncode == 130, said
    # The first run's games are whole and its lock is gone: the same command carries on.
    assert not (tmp_path / "arena.db.lock").exists()
    done = arena("run", *args, "--boards", "1", "--db", "other.db", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "other.db.lock").exists()


def test_a_folder_of_another_runs_replays_is_refused_and_kept(tmp_path: Path) -> None:
    # col.db and col.sqlite both default to col-out: the second run wrote its replays over the
    # first's (named by game number), and the first, run again, took them for its own.
    args = ["--bot", f"a={LOW}", "--bot", f"b={LOW}", "--bot", f"c={LOW}", "--players", "3"]
    first = arena("run", *args, "--boards", "1", "--seed", "1", "--db", "col.db", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    replays = {p: p.read_bytes() for p in (tmp_path / "col-out" / "replays").iterdir()}
    assert len(replays) == 3
    other = ["--boards", "1", "--seed", "2", "--db", "col.sqlite"]
    refused = arena("run", *args, *other, cwd=tmp_path)
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr == (
        "arena: error: --out col-out: holds the replays and logs of another run (its database: "
        f"{tmp_path / 'col.db'}), which this one would overwrite; give this run its own --out\n"
    )
    assert {p: p.read_bytes() for p in (tmp_path / "col-out" / "replays").iterdir()} == replays
    assert not (tmp_path / "col.sqlite").exists()  # nothing made for the refused run
    again = arena("run", *args, "--boards", "1", "--seed", "1", "--db", "col.db", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert arena("run", *args, *other, "--out", "own", cwd=tmp_path).returncode == 0


def test_the_same_run_in_another_database_is_refused_the_first_ones_folder(tmp_path: Path) -> None:
    # The same configuration (so the same run id) under --db col.sqlite after col.db, as the
    # README advises for a new version of a bot: its replays went over col.db's in col-out.
    args = ["--bot", f"a={LOW}", "--bot", f"b={LOW}", "--bot", f"c={LOW}", "--players", "3"]
    args += ["--boards", "1", "--seed", "1"]
    assert arena("run", *args, "--db", "col.db", cwd=tmp_path).returncode == 0
    replays = {p: p.read_bytes() for p in (tmp_path / "col-out" / "replays").iterdir()}
    refused = arena("run", *args, "--db", "col.sqlite", cwd=tmp_path)
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.startswith(
        "arena: error: --out col-out: holds the replays and logs of another run (its database: "
        f"{tmp_path / 'col.db'}), which this one would overwrite"
    ), refused.stderr
    assert {p: p.read_bytes() for p in (tmp_path / "col-out" / "replays").iterdir()} == replays
    # A database moved since (with its folder named for it) is still that run's.
    (tmp_path / "col.db").rename(tmp_path / "moved.db")
    moved = arena("run", *args, "--db", "moved.db", "--out", "col-out", cwd=tmp_path)
    assert moved.returncode == 0, moved.stderr
    mark = json.loads((tmp_path / "col-out" / ".arena-run.json").read_text())
    assert mark["db"] == str(tmp_path / "moved.db")


def test_a_batch_and_check_bot_ignore_tls_variables_exported_for_a_competition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The README has a bot author export ARENA_TLS_CA for a competition: every bot of a local
    # batch (plain text on 127.0.0.1) then refused the referee's port, and the batch failed.
    (tmp_path / "ca.pem").write_text("not used by a local batch\n")
    for name, value in (("ARENA_TLS", "1"), ("ARENA_TLS_CA", str(tmp_path / "ca.pem"))):
        monkeypatch.setenv(name, value)
    bots = ["--bot", f"a={LOW}", "--bot", f"b={LOW}", "--bot", f"c={LOW}", "--players", "3"]
    done = arena("run", *bots, "--boards", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    checked = arena("check-bot", "--only", "handshake", "--", *shlex.split(LOW), cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def closed_pipe_run(
    cwd: Path, *args: str, stderr_closed: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run `arena ARGS` with its stdout (or, with ``stderr_closed``, its stderr) a pipe nobody
    reads any more (as `| head -1` leaves it once it has its line): every write to it fails."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [*BASE, *args],
            cwd=cwd,
            stdout=subprocess.DEVNULL if stderr_closed else write_end,
            stderr=write_end if stderr_closed else subprocess.PIPE,
            text=True,
            timeout=CLI_TIMEOUT_S,
        )
    finally:
        os.close(write_end)


def test_a_closed_output_stops_quietly_with_141_and_the_run_resumes(tmp_path: Path) -> None:
    # `arena run ... 2>&1 | head -1` exited 1, and `arena ratings | head -1` too: a Unix tool
    # stops quietly on a closed pipe, and the shell says 141 (128 + SIGPIPE).
    args = ["run", "--bot", f"a={LOW}", "--bot", f"b={HEUR}", "--bot", f"c={LOW}"]
    args += ["--players", "3", "--boards", "4", "--concurrency", "1"]
    first = subprocess.Popen(
        [*BASE, *args], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        assert first.stderr is not None
        assert first.stderr.readline() == "arena: 12 games to play of 12\n"
        first.stderr.close()  # head -1 has its line
        assert first.wait(timeout=CLI_TIMEOUT_S) == 141
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    # Stopped as by Ctrl-C: the games finished are whole, each with its replay, none interrupted.
    with Store.open(tmp_path / "arena.db", create=False) as store:
        (run,) = store.runs()
        kept = dict(store.records(run.run_id))
    assert 0 < len(kept) < 12
    assert all(r.termination.value == "normal" for r in kept.values())
    replays = sorted((tmp_path / "arena-out" / "replays").iterdir())
    assert len(replays) == len(kept)
    assert not (tmp_path / "arena.db.lock").exists()
    done = arena(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"{12 - len(kept)} games to play of 12, {len(kept)} already stored (resuming)" in (
        done.stderr
    )
    with Store.open(tmp_path / "arena.db", create=False) as store:
        assert sorted(game for game, _ in store.records(run.run_id)) == list(range(12))
    # Commands writing to a stdout whose reader has gone: 141, not a word, not a traceback.
    added = invoke("bots", "add", "alpha", "--db", str(tmp_path / "comp.db"))  # set-up only
    assert added.exit_code == 0, added.output
    commands = (
        ["ratings"],
        ["replay", "1"],
        ["replay", "1", "--json"],
        ["bots", "list", "--db", "comp.db"],
    )
    for command, closed in zip(commands, closed_pipe_runs(tmp_path, commands), strict=True):
        assert (closed.returncode, closed.stderr) == (141, ""), command
    # No standard output at all (`arena ratings >&-`): as a closed one (was a traceback; replay
    # wrote nothing and exited 0, its output lost without a sign).
    for command in (
        ["ratings"],
        ["replay", "1"],
        ["replay", "1", "--json"],
        ["--version"],
        ["replay", "--help"],
    ):
        none = subprocess.run(
            ["sh", "-c", 'exec "$@" >&-', "sh", *BASE, *command],
            cwd=tmp_path,
            stderr=subprocess.PIPE,
            text=True,
            timeout=CLI_TIMEOUT_S,
            check=False,
        )
        assert (none.returncode, none.stderr) == (141, ""), command
    # A full output: one line and exit 1 ('--plot None: cannot write None' and tracebacks were).
    if Path("/dev/full").exists():
        filled = (*commands[:3], ["ratings", "--format", "json"], ["--help"], ["--version"])
        for command, full in zip(filled, full_output_runs(tmp_path, filled), strict=True):
            said = "arena: error: cannot write the output: No space left on device\n"
            assert (full.returncode, full.stderr) == (1, said), command
    # The run's summary goes to the closed stdout once every game is played.
    closed = closed_pipe_run(tmp_path, *args)
    assert closed.returncode == 141 and "Traceback" not in closed.stderr, closed.stderr


def test_a_usage_error_on_a_closed_stderr_stops_quietly_with_141(tmp_path: Path) -> None:
    # `arena run --nosuch 2>&1 | true` exited 1 (the error line's own write failed, and its
    # handling raised out of typer), where arena's own refusals exit 141.
    for args in (["run", "--nosuch"], ["run", "--boards", "x"], ["ratings", "--nosuch"]):
        done = closed_pipe_run(tmp_path, *args, stderr_closed=True)
        assert done.returncode == 141, args


def test_help_and_version_on_a_closed_output_stop_quietly_with_141(tmp_path: Path) -> None:
    """`arena run --help | head -1` exited 1 (typer's console and echo exit so on a closed
    pipe), where every arena command exits 141 as a Unix tool killed by SIGPIPE would."""
    commands = (["--help"], ["run", "--help"], ["ratings", "--help"], ["bots"], ["--version"])
    for command, closed in zip(commands, closed_pipe_runs(tmp_path, commands), strict=True):
        assert (closed.returncode, closed.stderr) == (141, ""), command
    shown = arena("run", "--help", cwd=tmp_path)  # an open pipe: the help, exit 0
    assert shown.returncode == 0 and "--boards" in shown.stdout, shown.stderr


def full_output_runs(
    cwd: Path, commands: Sequence[Sequence[str]]
) -> list[subprocess.CompletedProcess[str]]:
    """Each of ``commands`` with its output on /dev/full (every write fails: no space left), all
    started at once; their outcomes in order."""

    def starter(args: Sequence[str]) -> Callable[[], subprocess.Popen[str]]:
        def start() -> subprocess.Popen[str]:
            with open("/dev/full", "w") as full:
                return subprocess.Popen(
                    [*BASE, *args], cwd=cwd, stdout=full, stderr=subprocess.PIPE, text=True
                )

        return start

    return run_at_once([starter(args) for args in commands], CLI_TIMEOUT_S)


def closed_pipe_runs(
    cwd: Path, commands: Sequence[Sequence[str]]
) -> list[subprocess.CompletedProcess[str]]:
    """:func:`closed_pipe_run` for commands that only read: all started at once, each with a
    closed pipe of its own; their outcomes in order."""

    def starter(args: Sequence[str]) -> Callable[[], subprocess.Popen[str]]:
        def start() -> subprocess.Popen[str]:
            read_end, write_end = os.pipe()
            os.close(read_end)
            try:
                return subprocess.Popen(
                    [*BASE, *args], cwd=cwd, stdout=write_end, stderr=subprocess.PIPE, text=True
                )
            finally:
                os.close(write_end)

        return start

    return run_at_once([starter(args) for args in commands], CLI_TIMEOUT_S)


def stored_db(tmp_path: Path, boards: int = 2) -> Path:
    """A database with a few engine-played games (no processes needed)."""
    config = build_config(
        bots=["a=true", "b=true", "c=true", "d=true"], boards=boards, db=tmp_path / "s.db"
    )
    with Store.open(config.db) as store:
        store.claim(config.run_id, "batch", config.identity(), 8)
        for table in schedule(config):
            store.save_game(config.run_id, table.index, play_record(table.spec, fault_seat=2))
    return config.db


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    """Run the `arena` command in this process (for commands that start no process)."""
    return CliRunner().invoke(app, list(args), env=env)


def test_replay_names_the_preset_the_rules_differ_least_from() -> None:
    # black-lady (standard with penalty_on_first_trick) with queen_penalty=10 was named as the
    # standard game with both options, as if the preset given were not one.
    from arena.director.replay import _rules_text
    from arena.rules import MoonRule, PassDirection, Rules, preset

    black = preset("black-lady")
    assert _rules_text(black.replace(queen_penalty=10)) == (
        "black-lady with queen_penalty=10, 4 players, target 100"
    )
    assert _rules_text(black.replace(pass_cycle=(PassDirection.ACROSS,))) == (
        "black-lady with pass_cycle=across, 4 players, target 100"
    )
    best = Rules(moon=MoonRule.BEST)
    assert _rules_text(best) == "standard with moon=best, 4 players, target 100"


def test_a_substitute_pass_is_said_to_be_passed_not_played() -> None:
    from arena.director.replay import _fault_line
    from arena.table import Fault, FaultKind

    def fault(trick: int, substitute: tuple[str, ...]) -> Fault:
        return Fault(0, trick, 1, "b", FaultKind.WRONG_PASS, "two cards", "2C 3C", substitute, 5.0)

    assert "(sent '2C 3C'; passed 3H 3S 4S instead, at 5 ms)" in _fault_line(
        fault(-1, ("3H", "3S", "4S"))
    )
    assert "; played QS instead" in _fault_line(fault(4, ("QS",)))


def test_replay_prints_the_deal_the_passes_every_trick_and_fault(tmp_path: Path) -> None:
    db = stored_db(tmp_path)
    done = invoke("replay", "b1-g0-r3", "--db", str(db))
    assert done.exit_code == 0, done.output
    lines = done.stdout.splitlines()
    assert lines[0].startswith("table b1-g0-r3 (game 7): seed ")
    assert lines[1] == "rules: standard with pass_cycle=right, 4 players, target 100"
    assert lines[2] == "seats: 0 b, 1 c, 2 d, 3 a"
    # Hands from 1, as tricks are (and the page's replay): it said "hand 0" beside "trick  1".
    assert lines[3] == "hand 1: dealer seat 0, pass right"  # board 1 passes right
    assert sum(line.startswith("    seat ") and "->" in line for line in lines) == 4
    assert sum(line.startswith("  trick ") for line in lines) == 13
    assert sum("FAULT seat 2 d: timeout: too slow" in line for line in lines) == 1
    assert lines[-1] == "ended: normal: played to the end"
    as_json = invoke("replay", "7", "--db", str(db), "--json")
    replay = [json.loads(line) for line in as_json.stdout.splitlines()]
    events = [line["event"] for line in replay]
    assert events[0] == "table" and events[-1] == "result" and "fault" in events
    # Each line's fields, as the README gives them: its record part's to_dict(), or the result's.
    store = Store.open(db, create=False)
    _, _, record = store.find_game("7")
    store.close()
    parts = {
        "table": record.spec.to_dict(),
        "hand": record.hands[0].to_dict(),
        "decision": record.decisions[0].to_dict(),
        "fault": record.faults[0].to_dict(),
    }
    result = {"totals", "placings", "termination", "seat_status", "reason", "started_at"}
    for line in replay:
        kind = line.pop("event")
        assert set(line) == (set(parts[kind]) if kind in parts else result | {"finished_at"})
    readme = (ROOT / "README.md").read_text()
    for field in (*parts["table"], *result, "finished_at"):
        assert f"`{field}`" in readme.split("`OUT/replays/NNNNNN-TABLE.jsonl`", 1)[1][:1200]
    # The game id in the bots' logs is the referee's count, then the table id.
    from_log = invoke("replay", "g31-b1-g0-r3", "--db", str(db))
    assert from_log.exit_code == 0 and from_log.stdout == done.stdout
    missing = invoke("replay", "b9-g9-r9", "--db", str(db))
    assert missing.exit_code == 2 and "no game 'b9-g9-r9'" in missing.stderr
    # It says what the database holds: the names it would have taken.
    assert re.search(
        r"; give a table id \(b0-g0-r0 to b\d+-g\d+-r\d+\), the game id in the bots' logs "
        r"\(gN-b0-g0-r0\) or a game number \(0 to \d+\)\n$",
        missing.stderr,
    ), missing.stderr


def test_a_database_path_sqlite_cannot_use_is_one_line(tmp_path: Path) -> None:
    db = stored_db(tmp_path)
    huge = invoke("replay", "99999999999999999999", "--db", str(db))
    assert huge.exit_code == 2 and "no game '99999999999999999999'" in huge.stderr
    for args in (
        ["bots", "add", "x", "--db", "/dev/null"],
        ["admin", "token", "--db", "/dev/null"],
        ["ratings", "--db", "/dev/null"],
    ):
        done = invoke(*args)
        assert done.exit_code == 2, done.output
        assert done.stderr == "arena: error: /dev/null: not a regular file, not a database file\n"
    assert not Path("/dev/null-journal").exists()
    nowhere = invoke("bots", "add", "x", "--db", "/proc/x.db")
    assert nowhere.exit_code == 2
    assert nowhere.stderr.startswith("arena: error: /proc/x.db: cannot open or create a database")


def test_a_database_path_that_cannot_be_looked_up_is_one_line(tmp_path: Path) -> None:
    # Store.open asked Path.exists(), which raises on a name too long: a traceback, exit 1.
    done = invoke("replay", "1", "--db", str(tmp_path / f"{LONG_NAME}.db"))
    assert done.exit_code == 2, done.output
    assert done.stderr == (
        f"arena: error: {tmp_path / LONG_NAME}.db: cannot look it up: File name too long\n"
    )


@pytest.mark.parametrize(
    "command",
    [
        ("ratings", "--db", "{long}.db"),
        ("ratings", "--db", "{here}/README.md", "--plot", "{long}.png"),
        ("bots", "list", "--db", "{long}.db"),
        ("admin", "token", "--db", "{long}.db"),
        ("check-bot", "--log", "{long}.log", "--", "true"),
    ],
    ids=["ratings-db", "ratings-plot", "bots-list", "admin-token", "check-bot-log"],
)
def test_any_command_given_a_path_that_cannot_be_looked_up_says_so_in_one_line(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    # Path.exists() raises OSError on a name too long (or a link loop, an unsearchable folder),
    # where each command's own checks expected True or False: a traceback, exit 1.
    long = str(tmp_path / LONG_NAME)
    args = [a.format(long=long, here=ROOT) for a in command]
    done = invoke(*args)
    assert done.exit_code == 2, done.output
    assert done.stderr.startswith("arena: error: ") and done.stderr.count("\n") == 1
    assert "File name too long" in done.stderr and "Traceback" not in done.output


RATINGS_FIT_FIELDS = {"table_size", "anchor", "method", "confidence", "prior_draws", "results"} | {
    "boards",
    "bootstrap_samples",
    "seed",
    "ratings",
    "names",
    "covariance",
    "los",
    "crosstable",
}
RATINGS_ROW_FIELDS = (
    {"rank", "name", "elo", "se", "low", "high", "naive_se", "los_next"}
    | {
        "tables",
        "boards",
        "pairs",
        "score",
        "points_mean",
        "points_se",
        "points_low",
        "points_high",
    }
    | {"games", "placings", "mean_placing", "moons", "faults"}
)
"""The fields of ``arena ratings --format json``: each fit's, and each of its rows'."""


def test_ratings_in_every_format(tmp_path: Path) -> None:
    db = stored_db(tmp_path)
    table = invoke("ratings", "--db", str(db), "--crosstable", "--los")
    assert table.exit_code == 0, table.stderr
    assert "Ratings, 4-seat tables" in table.stdout and "Crosstable" in table.stdout
    as_json = invoke("ratings", "--db", str(db), "--format", "json")
    assert as_json.exit_code == 0, as_json.stderr
    as_csv = invoke("ratings", "--db", str(db), "--format", "csv")
    assert as_csv.exit_code == 0 and as_csv.stdout.count("\n") >= 5
    # Every field is the README's, and the README names every field.
    readme = (ROOT / "README.md").read_text()
    said = readme.split("`--format json` prints one object", 1)[1].split("\n\n", 1)[0]
    (fit,) = json.loads(as_json.stdout)["fits"]
    assert set(fit) == RATINGS_FIT_FIELDS
    assert {r["name"] for r in fit["ratings"]} == {"a", "b", "c", "d"}
    for row in fit["ratings"]:
        assert set(row) == RATINGS_ROW_FIELDS
    assert set(fit["crosstable"]["a"]["b"]) == {"score", "pairs"}
    for name in (*RATINGS_FIT_FIELDS, *RATINGS_ROW_FIELDS, "score", "pairs", "table_size"):
        assert f"`{name}`" in said, name
    header = as_csv.stdout.splitlines()[0].split(",")
    assert header == ["table_size", *[k for k in fit["ratings"][0]], "method"]
    plot = tmp_path / "elo.png"
    plotted = invoke("ratings", "--db", str(db), "--plot", str(plot))
    assert plotted.exit_code == 0 and plot.read_bytes().startswith(b"\x89PNG")
    # The history goes beside the plot in the plot's format, as the README says.
    svg = invoke("ratings", "--db", str(db), "--plot", str(tmp_path / "elo.svg"))
    assert svg.exit_code == 0 and (tmp_path / "elo-history.svg").read_text().count("<svg") == 1
    bad = invoke("ratings", "--db", str(tmp_path / "none.db"))
    assert bad.exit_code == 2 and bad.stderr.startswith("arena: error: --db ")
    wrong = invoke("ratings", "--db", str(db), "--format", "xml")
    assert wrong.exit_code == 2
    nobody = arena("ratings", "--db", str(db), "--anchor", "nobody", cwd=tmp_path)
    assert nobody.returncode == 2 and nobody.stderr == (
        "arena: error: anchor 'nobody' did not play at 4-seat tables; give one of the bots "
        "there: a, b, c, d\n"
    )  # the names as a Python tuple, ('a', 'b', 'c', 'd'), before
    lost = invoke("ratings", "--db", str(db), "--format", "csv", "--los")
    assert lost.exit_code == 2 and "with --format csv give neither" in lost.stderr
    for where, says in (
        (tmp_path / "elo.txt", "give a file ending in .png"),
        # The history's bands came out opaque, each hiding the ones before it.
        (tmp_path / "elo.eps", "PostScript has no transparency"),
        (tmp_path / "elo.PS", "PostScript has no transparency"),
        (tmp_path / "no" / "e.png", "does not exist"),
    ):
        refused = invoke("ratings", "--db", str(db), "--plot", str(where))
        assert refused.exit_code == 2 and refused.stdout == "" and says in refused.stderr


def test_a_run_or_a_database_with_no_game_says_what_there_is(tmp_path: Path) -> None:
    db = stored_db(tmp_path)
    (run_id,) = [r.run_id for r in Store.open(db, create=False).runs()]
    mine = invoke("ratings", "--db", str(db), "--run", run_id, "--format", "csv")
    assert mine.exit_code == 0 and mine.stdout.count("\n") == 5, mine.output
    # A run id not in the database: the ids that are (it said only "no game stored").
    other = arena("ratings", "--db", str(db), "--run", "nope", cwd=tmp_path)
    assert other.returncode == 2 and other.stderr == (
        f"arena: error: --run nope: no game stored for that run in {db}; its runs: {run_id}\n"
    )
    # A run killed before its first game: said, with how to carry on (it said "no game stored").
    config = build_config(
        bots=["a=true", "b=true", "c=true", "d=true"], boards=1, db=tmp_path / "early.db"
    )
    with Store.open(config.db) as store:
        store.claim(config.run_id, "batch", config.identity(), 4)
    early = invoke("ratings", "--db", str(config.db))
    assert early.exit_code == 2 and early.stderr == (
        f"arena: error: --db {config.db}: no game stored yet: its run {config.run_id} stopped "
        "before its first game; run the same arena run command again to play it\n"
    )
    # A competition database with accounts and no game yet is not "not a Hearts Arena database".
    comp = tmp_path / "comp.db"
    added = invoke("bots", "add", "alice", "--db", str(comp))  # set-up only
    assert added.exit_code == 0, added.output
    for args in (("ratings",), ("replay", "1")):
        empty = arena(*args, "--db", str(comp), cwd=tmp_path)
        assert empty.returncode == 2 and empty.stdout == "", empty.stderr
        assert empty.stderr == (
            f"arena: error: {comp}: no game stored yet: it holds only the competition server's "
            "accounts (games are stored once arena serve plays them)\n"
        )


def test_a_plot_that_cannot_be_written_is_refused_before_the_fit(tmp_path: Path) -> None:
    db = stored_db(tmp_path)
    (tmp_path / "d.png").mkdir()
    (tmp_path / "afile").write_text("")
    (tmp_path / "h-history.png").mkdir()
    for where, says in (
        (tmp_path / "d.png", "cannot write " + str(tmp_path / "d.png") + " (it is a folder)"),
        (tmp_path / "h.png", "cannot write " + str(tmp_path / "h-history.png") + " (it is a"),
        (tmp_path / "afile" / "x.png", f"{tmp_path / 'afile'} is a file, not a folder"),
        (Path("/proc/elo.png"), "cannot write /proc/elo.png (No such file or directory)"),
    ):
        refused = invoke("ratings", "--db", str(db), "--plot", str(where))
        assert refused.exit_code == 2, refused.output
        assert refused.stdout == "" and refused.stderr.count("\n") == 1, refused.stderr
        assert (
            refused.stderr.startswith(f"arena: error: --plot {where}: ") and says in refused.stderr
        )
    assert not (tmp_path / "h.png").exists()  # the probe leaves nothing behind


def test_a_plot_of_one_board_shows_no_interval_rather_than_failing(tmp_path: Path) -> None:
    db = stored_db(tmp_path, boards=1)
    plot = tmp_path / "one.png"
    done = invoke("ratings", "--db", str(db), "--plot", str(plot))
    assert done.exit_code == 0, done.output
    assert plot.read_bytes().startswith(b"\x89PNG")
    assert (tmp_path / "one-history.png").read_bytes().startswith(b"\x89PNG")


def test_sprt_refuses_an_elo_that_is_not_finite(tmp_path: Path) -> None:
    for flag, value in (("--elo1", "inf"), ("--elo0", "-inf"), ("--elo1", "1e308")):
        done = invoke("sprt", "--bot", "a=true", "--bot", "b=true", flag, value)
        assert done.exit_code == 2 and done.stdout == ""
        assert done.stderr.startswith(f"arena: error: {flag} {float(value)}: give a finite Elo")
    # The test's other parameters are named as flags too (it said "alpha (0.0) and beta ...",
    # and only once the bots' commands were found).
    named = (
        (("--elo0", "30", "--elo1", "20"), "--elo0 30 --elo1 20: give --elo0 below --elo1"),
        (("--alpha", "0"), "--alpha 0: a chance of error, above 0 and below 1, e.g. --alpha 0.05"),
        (("--beta", "nan"), "--beta nan: a chance of error, above 0 and below 1"),
        (("--alpha", "0.6", "--beta", "0.5"), "--alpha 0.6 --beta 0.5: their sum must be below 1"),
    )
    # As given, not as Python prints a float (it said "--elo1 3000.0").
    far = invoke("sprt", "--bot", "a=true", "--bot", "b=true", "--elo1", "3000")
    assert far.exit_code == 2 and far.stderr.startswith("arena: error: --elo1 3000: give a finite")
    sprt = ["sprt", "--bot", "a=/no/such", "--bot", "b=/no/such"]
    runs = arenas(tmp_path, [[*sprt, *flags] for flags, _ in named])
    for ran, (_, says) in zip(runs, named, strict=True):
        assert ran.returncode == 2 and ran.stdout == "", ran.stderr
        assert ran.stderr.startswith(f"arena: error: {says}") and ran.stderr.count("\n") == 1


def test_an_engine_variable_with_another_value_than_documented_is_refused(tmp_path: Path) -> None:
    db = stored_db(tmp_path)
    for value in ("yes", "true", "2"):
        done = invoke("ratings", "--db", str(db), env={"HEARTS_ARENA_PURE_ENGINE": value})
        assert done.exit_code == 2 and done.stdout == ""
        assert done.stderr == (
            f"arena: error: HEARTS_ARENA_PURE_ENGINE={value}: set it to 1 to run the Python "
            "source of the engine and referee, or to 0 (or unset it) for the compiled build\n"
        )
    for value in ("1", "0", ""):
        done = invoke("ratings", "--db", str(db), env={"HEARTS_ARENA_PURE_ENGINE": value})
        assert done.exit_code == 0, done.output


def test_a_single_valued_flag_given_twice_is_refused() -> None:
    for args, says in (
        (("run", "--config", "a.toml", "--config=b.toml"), "--config is given more than once"),
        (("run", "--rules", "spot", "--rules", "old"), "--rules is given more than once"),
        (("run", "--strict", "--no-strict"), "--strict/--no-strict is given more than once"),
        (("bots", "ban", "x", "--reason", "a", "--reason", "b"), "--reason is given more than"),
        (("ratings", "--format", "json", "--format", "csv"), "--format is given more than once"),
    ):
        done = invoke(*args)
        assert done.exit_code == 2 and done.stdout == "", done.output
        assert done.stderr.startswith(f"arena: error: {says}") and done.stderr.count("\n") == 1
    # Repeatable flags repeat, and a value that looks like a flag is a value.
    fine = invoke("run", "--bot", "a=true", "--bot", "b=true", "--db", "--db")
    assert "more than once" not in fine.stderr
    after = invoke("check-bot", "--name", "a", "--", "/no/such/bot", "--name", "b")
    assert "more than once" not in after.stderr


FOUR_MISSING = tuple(w for n in "abcd" for w in ("--bot", f"{n}=no-such-command"))
"""Four bots whose commands are looked for only after the paths are checked."""


def test_an_empty_path_or_name_is_one_line_saying_so(tmp_path: Path) -> None:
    # typer reads --db "" as ".", which was refused as "a folder, not a database file".
    refusals = (
        (("ratings", "--db", ""), "--db '': an empty path was given; give a file name, or leave "
         "--db out for the default (arena.db)"),
        (("replay", "1", "--db="), "--db '': an empty path was given"),
        (("demo", "--db", ""), "leave --db out for the default (arena-demo.db)"),
        (("sprt", "--db", "", "--bot", "a=x", "--bot", "b=y"), "leave --db out for the default "
         "(arena-sprt.db)"),
        (("run", "--config", ""), "--config '': an empty path was given; give a file name, or "
         "leave --config out"),
        (("ratings", "--plot", ""), "--plot '': an empty path was given"),
        (("check-bot", "--log", "", "--", "true"), "--log '': an empty path was given"),
        (("ratings", "--run", ""), "--run '': give a run id"),
        (("ratings", "--anchor", ""), "--anchor '': give a bot's name"),
        (("check-bot", "--name", "", "--", "true"), "--name '': give the bot a name"),
        # Spaces alone: a database, a folder or a log named by a space, unseen in `ls`.
        (("ratings", "--db", " "), "--db ' ': a path of spaces alone was given; give a file "
         "name, or leave --db out for the default (arena.db)"),
        (("bots", "add", "zed", "--db", "  "), "--db '  ': a path of spaces alone was given"),
        (("run", "--db", " ", *FOUR_MISSING), "--db ' ': give a database file"),
        (("run", "--out", "\t", *FOUR_MISSING), "--out '\\t': give a folder"),
    )  # fmt: skip
    runs = arenas(tmp_path, [args for args, _ in refusals])
    for done, (args, says) in zip(runs, refusals, strict=True):
        assert done.returncode == 2 and done.stdout == "", (args, done.stderr)
        assert done.stderr.startswith("arena: error: --") and says in done.stderr, done.stderr
        assert done.stderr.count("\n") == 1, done.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_sprt_verdict_is_one_line_in_a_pipe(tmp_path: Path) -> None:
    # A script reads the verdict from stdout (every outcome exits 0): piped, it was cut at 160
    # columns into two lines. Equal bots and a test of -600 against -500 Elo: H1 in a few boards.
    args = [
        "sprt", "--bot", f"a={LOW}", "--bot", f"b={LOW}", "--players", "3", "--elo0", "-600",
        "--elo1", "-500", "--alpha", "0.2", "--beta", "0.2", "--max-boards", "60",
    ]  # fmt: skip
    done = arena(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == (
        "H1 accepted: the test favours elo1 = -500 over elo0 = -600; b is likely no more than "
        "600 Elo weaker than a (-500 Elo is what the test was built to detect, not a measure of "
        "the gap)"
    )


def test_sprt_shows_the_faults_its_verdict_may_owe_to(tmp_path: Path) -> None:
    # A bot that played illegal cards lost the test with nothing said of its faults: only
    # `arena ratings` showed them.
    broken = f"{PY} {shlex.quote(str(ROOT / 'tests' / 'checkbot_bots' / 'broken_bot.py'))}"
    args = [
        "sprt", "--bot", f"a={LOW}", "--bot", f"b={broken} first-in-hand", "--players", "3",
        "--max-boards", "2",
    ]  # fmt: skip
    done = arena(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert "Faults per bot" in done.stdout, done.stdout
    [row] = [line for line in out if line.startswith("│ b ")]
    assert "illegal-card" in row or "card-not-held" in row, done.stdout
    assert "LLR" in out[-2] and out[-1].startswith(("H1 accepted", "H0 accepted", "no decision"))


def test_sprt_plays_boards_until_a_decision_or_the_cap_and_resumes(tmp_path: Path) -> None:
    args = [
        "sprt", "--bot", f"low={LOW}", "--bot", f"heur={HEUR}", "--filler", f"h1={HASH}",
        "--filler", f"h2={HASH}", "--elo0", "0", "--elo1", "300", "--alpha", "0.1", "--beta",
        "0.1", "--max-boards", "3", "--concurrency", "2",
    ]  # fmt: skip
    done = arena(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out[0].startswith("SPRT heur (B) against low (A) at low, heur, h1, h2")
    assert "LLR" in out[-2]
    assert out[-1].startswith(("H1 accepted", "H0 accepted", "no decision: stopped at the cap"))
    boards = [line for line in done.stderr.splitlines() if "LLR" in line]
    assert 1 <= len(boards) <= 3
    assert boards[-1].split("LLR")[1] == out[-2].split("LLR")[1]
    # The same command again feeds the stored boards and decides the same, playing nothing.
    again = arena(*args, cwd=tmp_path)
    assert again.returncode == 0 and again.stdout.splitlines()[-2:] == out[-2:]
    assert "up to" not in again.stderr and "games of at most" not in again.stderr
    too_many = arena(
        "sprt", "--bot", f"a={LOW}", "--bot", f"b={LOW}", "--filler", f"c={LOW}", "--filler",
        f"d={LOW}", "--filler", f"e={LOW}", cwd=tmp_path,
    )  # fmt: skip
    assert too_many.returncode == 2 and "3 filler(s) for a 4-player table" in too_many.stderr
    no_boards = arena(
        "sprt", "--bot", f"a={LOW}", "--bot", f"b={LOW}", "--max-boards", "0", cwd=tmp_path
    )
    assert no_boards.returncode == 2 and no_boards.stdout == ""
    assert no_boards.stderr.strip() == "arena: error: --max-boards 0: play at least 1 board"


def test_sprt_refuses_a_cap_of_boards_past_the_most_a_run_takes(tmp_path: Path) -> None:
    # It was taken: the bots started, then storing the run failed with a traceback (an
    # OverflowError from SQLite), exit 1.
    for value in ("100001", "99999999999999999999"):
        done = arena("sprt", "--bot", f"a={LOW}", "--bot", f"b={LOW}", "--max-boards", value,
                     cwd=tmp_path)  # fmt: skip
        assert done.returncode == 2 and done.stdout == "", done.stderr
        assert done.stderr == f"arena: error: --max-boards {value}: give 1 to 100000 boards\n"
    assert list(tmp_path.iterdir()) == []
    assert MAX_SPRT_BOARDS == MAX_BOARDS  # what --help says is what is refused


def test_sprt_short_of_sample_bots_asks_for_a_filler(tmp_path: Path) -> None:
    # A sample bot whose name A or B took sits out, so 6 seats are one short; it asked for
    # more --bot flags, which arena sprt takes only twice.
    done = invoke(
        "sprt", "--bot", f"random={LOW}", "--bot", f"b={LOW}", "--players", "6",
        "--db", str(tmp_path / "s.db"),
    )  # fmt: skip
    assert done.exit_code == 2 and done.stdout == ""
    assert done.stderr == (
        "arena: error: 5 bots (random, b, lowcard, heuristic, montecarlo) for 6-player tables "
        "(a sample bot sits out when its name is taken): give 1 more with --filler "
        "NAME=COMMAND, or play --players 5\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_usage_errors_are_one_line(tmp_path: Path) -> None:
    usage = (
        # Not the validator's words ("Invalid value for '--players': Input should be a valid
        # integer, unable to parse string as an integer"), but the other refusals'.
        (("run", "--players", "abc"), "arena: error: --players: give a whole number (see"),
        (("sprt", "--elo0", "abc"), "arena: error: --elo0: give a number (see"),
        (("run", "--bogus"), "No such option: --bogus"),
        (("ratings", "--db"), "Option '--db' requires an argument."),
        # In words, and the command's own help, not "(see arena --help)".
        (("replay", "1", "--json=yes"), "--json takes no value: give --json alone (see arena "
         "replay --help)"),
    )  # fmt: skip
    groups: tuple[tuple[str, ...], ...] = ((), ("bots",), ("admin",))
    *refused, top, bots, admin = arenas(tmp_path, [*(args for args, _ in usage), *groups])
    for done, (_, says) in zip(refused, usage, strict=True):
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr.count("\n") == 1 and done.stderr.startswith("arena: error: ")
        assert says in done.stderr and "--help)" in done.stderr
    # A command group with nothing after it prints its help and exits 0, as `arena` does.
    for group, helped in zip(groups, (top, bots, admin), strict=True):
        assert helped.returncode == 0, helped.stderr
        assert " ".join(("Usage: arena", *group)) in helped.stdout and helped.stderr == ""
    twice = invoke("sprt", "--bot", f"old={LOW}", "--bot", f"new={HEUR}", "--filler", f"old={LOW}")
    assert twice.exit_code == 2 and twice.stderr == (
        "arena: error: the name 'old' is given twice (--bot and --filler); A, B and the fillers "
        "need names of their own\n"
    )


@pytest.mark.skipif(sys.prefix == sys.base_prefix, reason="needs arena installed in a venv")
def test_python_in_a_bot_command_is_the_venvs_without_activating_it(tmp_path: Path) -> None:
    # As a newcomer runs it: .venv/bin/arena, the venv not activated, the README's `python ...`.
    bots = [f"{n}=python {ROOT / 'sample_bots' / 'lowcard.py'}" for n in ("a", "b", "c")]
    done = subprocess.run(
        [*BASE, "run", *(f"--bot={b}" for b in bots), "--players", "3", "--boards", "1"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        env={**os.environ, "PATH": os.defpath, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    assert "3 of 3 games in arena.db" in done.stdout


def test_sprt_fills_the_table_with_sample_bots_when_no_filler_is_given(tmp_path: Path) -> None:
    args = ["sprt", "--bot", f"low={LOW}", "--bot", f"h={HASH}", "--max-boards", "1"]
    done = arena(*args, "--move-time", "200", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("SPRT h (B) against low (A) at low, h, random, lowcard:")
    # One board cannot decide at the default elo0 0, elo1 20 (it said "the cap of 1 boards").
    last = done.stdout.splitlines()[-1]
    assert last == "no decision: stopped at the cap of 1 board (--max-boards)"
    # The test is open-ended: no total is stored (it stored this start's --max-boards x seats).
    with Store.open(tmp_path / "arena-sprt.db", create=False) as store:
        assert [(r.kind, r.total) for r in store.runs()] == [("sprt", None)]


MEMORY_CAP_BYTES = 4 << 30
"""The address space the huge-concurrency run may take: room for a run, not for a runaway."""


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["run", *three_bots(f"a={LOW}", "--boards", "1")],
            "3 of 3 games in arena.db (3 played now",
        ),
        (
            [
                "sprt",
                "--bot",
                f"a={LOW}",
                "--bot",
                f"b={LOW}",
                "--players",
                "3",
                "--max-boards",
                "1",
            ],
            "no decision: stopped at the cap of 1 board (--max-boards)",
        ),
    ],
    ids=["run", "sprt"],
)
def test_a_concurrency_past_the_tables_plays_them_all_at_once(
    tmp_path: Path, args: list[str], says: str
) -> None:
    # --concurrency has no ceiling, and each worker was a trio task started before the first
    # table: 10**18 of them ate memory without end (Ctrl-C unheard) and never played a game.
    # arena sprt also started as many processes of each bot.
    args = [*args, "--concurrency", str(10**18)]

    def cap_memory() -> None:
        # Kept from eating a shared machine's memory if the run runs away again.
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP_BYTES, MEMORY_CAP_BYTES))

    proc = subprocess.Popen(
        [*BASE, *args],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=cap_memory,
    )
    try:
        out, err = proc.communicate(timeout=CLI_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
            # Its bots run in sessions of their own: their pids are in their logs.
            for log in (tmp_path / "arena-out" / "logs").glob("*.log"):
                for pid in re.findall(r"started process \d+ \(pid (\d+)\)", log.read_text()):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(int(pid), signal.SIGKILL)
    assert proc.returncode == 0, err
    assert says in out


def test_demo_plays_the_sample_bots_and_rates_them(tmp_path: Path) -> None:
    done = arena("demo", "--boards", "1", "--move-time", "100", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "4 of 4 games in arena-demo.db" in done.stdout
    for bot in ("random", "lowcard", "heuristic", "montecarlo"):
        assert bot in done.stdout
    assert "Ratings, 4-seat tables" in done.stdout and "Faults per bot" in done.stdout


def test_demo_for_more_seats_than_sample_bots_says_what_to_run_instead(tmp_path: Path) -> None:
    """The demo has four sample bots and no --bot flag: --players 5 was told to give more --bot
    flags, which the demo refuses as no such option."""
    for players in ("5", "6"):
        done = arena("demo", "--players", players, cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1, done.stderr
        assert done.stderr.startswith(f"arena: error: --players {players}: the demo's 4 sample")
        assert f"give `arena run` {players} or more --bot NAME=COMMAND" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_bots_are_told_the_grace_of_the_run(tmp_path: Path) -> None:
    """Welcome.reconnect_grace_ms is the run's --grace (the tables hold seats that long), which
    the SDK logs on connecting: it said the referee's default, 5000 ms, whatever --grace."""
    bots = [arg for name in ("a", "b", "c", "d") for arg in ("--bot", f"{name}={LOW}")]
    done = arena("run", *bots, "--boards", "1", "--grace", "30s", "--db", "g.db", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    log = (tmp_path / "g-out" / "logs" / "a.log").read_text()
    assert "take its seat back within 30000 ms" in log, log


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A real `arena run` of the four sample bots, 6 boards (24 games, a few seconds): its
    database and its standard output, the end-of-run tables."""
    where = tmp_path_factory.mktemp("sample-run")
    done = arena("run", "--boards", "6", "--move-time", "50", "--db", "s.db", cwd=where)
    assert done.returncode == 0, done.stderr
    return where / "s.db", done.stdout


def rating_rows(text: str) -> dict[str, list[str]]:
    """The first rating table in ``text`` (rich's box drawing): each bot's cells by column name
    (the first column of a name, should two share one)."""
    lines = text.splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("┃ # ┃"))
    header = [cell.strip() for cell in lines[top].strip("┃").split("┃")]
    rows: dict[str, list[str]] = {}
    for line in lines[top + 2 :]:
        if not line.startswith("│"):
            break
        cells = [cell.strip() for cell in line.strip("│").split("│")]
        rows[cells[header.index("bot")]] = [header[k] + "=" + c for k, c in enumerate(cells)]
    return rows


def cell(row: list[str], column: str) -> str:
    return next(c.partition("=")[2] for c in row if c.partition("=")[0] == column)


def test_ratings_by_the_board_bootstrap_are_its_own_and_repeat(
    sample_run: tuple[Path, str],
) -> None:
    db, _ = sample_run
    sandwich = invoke("ratings", "--db", str(db), "--format", "json")
    assert sandwich.exit_code == 0, sandwich.stderr
    # Two processes: the default seed (0) gives the same intervals run to run.
    booted = [
        arena(
            "ratings", "--db", str(db), "--format", "json", "--method", "bootstrap", cwd=db.parent
        )
        for _ in range(2)
    ]
    assert booted[0].returncode == 0, booted[0].stderr
    assert booted[0].stdout == booted[1].stdout
    (plain,), (boot,) = (json.loads(d)["fits"] for d in (sandwich.stdout, booted[0].stdout))
    assert (plain["method"], plain["bootstrap_samples"], plain["seed"]) == ("sandwich", 0, None)
    assert (boot["method"], boot["bootstrap_samples"], boot["seed"]) == ("bootstrap", 400, 0)
    by_name = {r["name"]: r for r in plain["ratings"]}
    for row in boot["ratings"]:
        assert row["elo"] == pytest.approx(by_name[row["name"]]["elo"])  # the same fit
        assert row["se"] != pytest.approx(by_name[row["name"]]["se"], abs=1e-6)  # another spread
        assert row["low"] != pytest.approx(by_name[row["name"]]["low"], abs=1e-6)
    # Another seed and sample count is another bootstrap, and the report says which.
    other = invoke(
        "ratings", "--db", str(db), "--format", "json", "--method", "bootstrap",
        "--samples", "200", "--seed", "7",
    )  # fmt: skip
    (seven,) = json.loads(other.stdout)["fits"]
    assert (seven["bootstrap_samples"], seven["seed"]) == (200, 7)
    assert [r["low"] for r in seven["ratings"]] != [r["low"] for r in boot["ratings"]]
    table = invoke("ratings", "--db", str(db), "--method", "bootstrap")
    assert "(bootstrap, 400 samples, seed 0)" in table.stdout.replace("\n", " ")
    as_csv = invoke("ratings", "--db", str(db), "--format", "csv", "--method=bootstrap")
    assert {line.rsplit(",", 1)[1] for line in as_csv.stdout.splitlines()} == {
        "method",
        "bootstrap",
    }


def test_both_plots_follow_the_interval_method(tmp_path: Path) -> None:
    """The history plot's bands were the sandwich's whatever --method; now both plots use the
    chosen method, and their titles name it (read from SVGs whose text is kept as text)."""
    db = stored_db(tmp_path, boards=3)
    (tmp_path / "matplotlibrc").write_text("svg.fonttype: none\n")
    done = subprocess.run(
        [
            *BASE,
            "ratings",
            "--db",
            str(db),
            "--method",
            "bootstrap",
            "--samples",
            "20",
            "--seed",
            "4",
            "--plot",
            "p.svg",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        env={**os.environ, "PYTHONPATH": str(ROOT), "MATPLOTLIBRC": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    for name in ("p.svg", "p-history.svg"):
        words = " ".join((tmp_path / name).read_text().split())
        assert "board bootstrap (20 samples, seed 4)" in words, name
        assert "sandwich" not in words, name


def test_a_bad_interval_method_or_bootstrap_value_is_one_line(tmp_path: Path) -> None:
    db = stored_db(tmp_path)
    for args, says in (
        (("--method", "boot"), "--method 'boot': choose one of sandwich, bootstrap (see"),
        (("--samples", "500"), "--samples 500: only the bootstrap resamples; add --method "
         "bootstrap, or leave --samples out"),
        (("--seed", "3"), "--seed 3: only the bootstrap resamples; add --method bootstrap"),
        (("--method", "bootstrap", "--samples", "1"), "--samples 1: give 2 to 100000 resamples"),
        (("--method", "bootstrap", "--seed", "-1"), "--seed -1: the bootstrap's seed is a whole "
         "number from 0 to 9223372036854775807"),
        (("--method", "bootstrap", "--samples", "many"), "--samples: give a whole number"),
    ):  # fmt: skip
        # Usage errors (a method not offered, a number that is none) are one line only as the
        # `arena` command prints them, not in typer's test runner: a process for those.
        usage = args[-1] in ("boot", "many")
        if usage:
            ran = arena("ratings", "--db", str(db), *args, cwd=tmp_path)
            code, out, err = ran.returncode, ran.stdout, ran.stderr
        else:
            done = invoke("ratings", "--db", str(db), *args)
            code, out, err = done.exit_code, done.stdout, done.stderr
        assert code == 2 and out == "", err
        assert err.count("\n") == 1 and err.startswith("arena: error: ")
        assert says in err and "Traceback" not in err, err
        if usage:
            assert "(see arena ratings --help)" in err
            assert args[1] != "boot" or "choose one of sandwich, bootstrap" in err
    # The choices are the library's methods, which the CLI mirrors to spare loading scipy.
    from arena.cli import BOOTSTRAP_SAMPLES, IntervalChoice
    from arena.ratings import DEFAULT_BOOTSTRAP_SAMPLES, IntervalMethod

    assert [m.value for m in IntervalChoice] == [m.value for m in IntervalMethod]
    assert BOOTSTRAP_SAMPLES == DEFAULT_BOOTSTRAP_SAMPLES


def test_the_rating_tables_show_both_sides_of_an_uneven_interval(
    sample_run: tuple[Path, str],
) -> None:
    """The interval reaches the fit without the prior too, so it is uneven about the Elo: the
    end-of-run table and `arena ratings` show how far it reaches down ("−") and up ("+"), not
    one side as "±" (montecarlo's −39.8/+41.7 printed as ±41.7)."""
    db, run_output = sample_run
    as_json = invoke("ratings", "--db", str(db), "--format", "json")
    (fitted,) = json.loads(as_json.stdout)["fits"]
    table = invoke("ratings", "--db", str(db))
    assert table.exit_code == 0, table.stderr
    caption = " ".join(table.stdout.split())  # wrapped, centred lines as one
    assert "−/+: from the Elo down and up to the interval's ends" in caption
    sides = []
    for output in (run_output, table.stdout):
        rows = rating_rows(output)
        assert sorted(rows) == sorted(r["name"] for r in fitted["ratings"])
        for r in fitted["ratings"]:
            # From the figures as shown: the Elo less "−" is the interval's shown low end.
            elo = round(r["elo"], 1)
            down = "∞" if r["low"] is None else f"{elo - round(r['low'], 1):.1f}"
            up = "∞" if r["high"] is None else f"{round(r['high'], 1) - elo:.1f}"
            assert (cell(rows[r["name"]], "−"), cell(rows[r["name"]], "+")) == (down, up)
            sides.append((down, up))
    # One virtual draw pulls every rating towards 0: some interval reaches further outwards.
    assert any(down != up for down, up in sides)


def test_ctrl_c_in_a_command_that_only_reads_says_only_that(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # `arena ratings` stopped during a long bootstrap said the batch's words: "every game
    # finished so far is stored: run the same command again to carry on".
    import typer

    from arena.cli import _guard

    def stopped() -> None:
        raise KeyboardInterrupt

    with pytest.raises(typer.Exit) as ended:
        _guard(stopped)
    assert ended.value.exit_code == 130
    assert capsys.readouterr().err == "arena: error: interrupted\n"


def test_the_readme_figures_of_a_6_board_demo_are_what_it_gives(tmp_path: Path) -> None:
    # They had drifted from the program as the rating maths changed (+99.8 [+52.7, +152.6] for
    # heuristic where the same games gave +74.0 [-14.4, +167.1]; with the Monte Carlo bot's
    # worlds consistent with every play since, +95.4 [+15.0, +182.4]).
    readme = " ".join((ROOT / "README.md").read_text().split())
    quoted = re.search(
        r"heuristic's `(\S+)`, `−` `(\S+)`, `\+` `(\S+)` is the interval `\[(\S+), (\S+)\]`", readme
    )
    assert quoted is not None
    played = arena("demo", "--boards", "6", cwd=tmp_path)
    assert played.returncode == 0, played.stderr
    done = arena("ratings", "--db", "arena-demo.db", "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = {r["name"]: r for r in json.loads(done.stdout)["fits"][0]["ratings"]}
    h = rows["heuristic"]
    # "−" and "+" from the figures as shown (so that the row adds up).
    elo, low, high = (round(h[k], 1) for k in ("elo", "low", "high"))
    figures = (elo, elo - low, high - elo, low, high)
    assert [float(q) for q in quoted.groups()] == [round(f, 1) for f in figures]
    elo, low, high = (round(h[k]) for k in ("elo", "low", "high"))
    label = f"`{elo:+d} −{elo - low:d}/+{high - elo:d}`"
    assert f"The plot labels each bot {label}" in readme
    m = rows["montecarlo"]
    half = m["points_high"] - m["points_mean"]
    assert f"(`{m['points_mean']:.2f} ± {half:.2f}`; fewer is better)" in readme
    pull = max(abs((r["elo"] - r["low"]) - (r["high"] - r["elo"])) for r in rows.values())
    assert f"(by up to {pull:.1f} Elo in the example below;" in readme


SIGNAL_WHILE_LOADING = """
import os, signal, sys


class CtrlCAt:
    # A Ctrl-C (or SIGTERM) at a known point of the command's start: as `typer` is imported
    # (by arena.cli, after its first lines), whenever the user's key would land there.
    def find_spec(self, name, path=None, target=None):
        if name == "typer":
            sys.meta_path.remove(self)
            os.kill(os.getpid(), getattr(signal, os.environ["ARENA_TEST_SIGNAL"]))
        return None


sys.meta_path.insert(0, CtrlCAt())
"""


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_ctrl_c_while_the_command_loads_is_one_line_and_exit_130(sig: str, tmp_path: Path) -> None:
    # A KeyboardInterrupt's traceback (SIGINT), or a silent death by the signal, 143 (SIGTERM).
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(SIGNAL_WHILE_LOADING)
    result = subprocess.run(
        [*BASE, "run", "--db", str(tmp_path / "r.db")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        env={**os.environ, "PYTHONPATH": f"{hook}{os.pathsep}{ROOT}", "ARENA_TEST_SIGNAL": sig},
    )
    assert result.stderr == "arena: interrupted\n"
    assert result.returncode == 130
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hook"]


def test_the_c_locales_output_keeps_a_file_names_bytes_and_marks_what_it_lacks() -> None:
    import codecs

    from arena.cli import _BYTES_OR_QUESTION_MARK, _bytes_or_question_mark

    codecs.register_error(_BYTES_OR_QUESTION_MARK, _bytes_or_question_mark)
    name = os.fsdecode(b"caf\xe9.db")  # a Latin-1 file name, as Python reads it there
    said = f"{name}: \u2212".encode("ascii", _BYTES_OR_QUESTION_MARK)
    assert said == b"caf\xe9.db: ?"


@pytest.mark.parametrize(
    ("encoding", "setting"),
    [
        ("ascii", {"PYTHONIOENCODING": "ascii"}),
        ("latin-1", {"PYTHONIOENCODING": "latin-1"}),
        # Python's C locale: ASCII written with "surrogateescape", which failed as "strict" did.
        ("ascii", {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": ""}),
    ],
    ids=["ascii", "latin-1", "C-locale"],
)
def test_an_output_without_the_tables_characters_gets_question_marks_not_a_traceback(
    sample_run: tuple[Path, str], encoding: str, setting: dict[str, str]
) -> None:
    # Under PYTHONIOENCODING=latin-1 (or an ASCII terminal) the tables' "−" ended a finished
    # run's report in a UnicodeEncodeError traceback, exit code 1, the ratings unprinted.
    db, _ = sample_run
    done = subprocess.run(
        [*BASE, "ratings", "--db", str(db)],
        cwd=db.parent,
        capture_output=True,
        timeout=CLI_TIMEOUT_S,
        env={**os.environ, "PYTHONPATH": str(ROOT), **setting},
    )
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    out = done.stdout.decode(encoding)
    assert "?/+: from the Elo down and up" in " ".join(out.split())  # "−/+", as "?"
    assert all(name in out for name in ("heuristic", "lowcard", "montecarlo", "random"))


def test_a_rating_table_without_a_plot_needs_no_folder_for_matplotlib(
    sample_run: tuple[Path, str], tmp_path: Path
) -> None:
    # Every rating table loaded matplotlib, which wants a writable folder of its own: with HOME
    # unwritable (a service account's, here a file) it said so in two lines on stderr, and
    # with no writable temporary folder either (a read-only container) it failed in a
    # traceback, as did every `arena run` before its first game.
    db, _ = sample_run
    home = tmp_path / "home"
    home.write_text("")
    env = {k: v for k, v in os.environ.items() if k != "MPLCONFIGDIR"}
    done = subprocess.run(
        [*BASE, "ratings", "--db", str(db), "--format", "json"],
        cwd=db.parent,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        env={
            **env,
            "PYTHONPATH": str(ROOT),
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home),
            "XDG_CACHE_HOME": str(home),
        },
    )
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert json.loads(done.stdout)["fits"][0]["ratings"]


def test_a_bot_script_without_its_interpreter_line_is_refused_saying_what_to_do(
    tmp_path: Path,
) -> None:
    script = tmp_path / "bot.py"
    script.write_text("print('never runs')\n")
    script.chmod(0o755)
    args = ["--bot", "a=./bot.py", "--bot", f"b={LOW}", "--bot", f"c={LOW}", "--players", "3"]
    done = arena("run", *args, "--boards", "1", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "arena: error: bot 'a': cannot run './bot.py': Exec format error (the system cannot run "
        "the file itself: give a script a #! line, e.g. #!/usr/bin/env python3, or start it "
        "with its interpreter: python FILE)"
    )
    assert not (tmp_path / "arena.db").exists()


def test_a_bot_script_whose_interpreter_is_missing_is_refused_naming_the_interpreter(
    tmp_path: Path,
) -> None:
    # "No such file or directory" alone sent the user to the script, which is there.
    from arena.config import start_failure

    script = tmp_path / "bot.sh"
    script.write_text("#!/nonexistent/interp -u\necho never\n")
    script.chmod(0o755)
    with pytest.raises(OSError) as raised:
        subprocess.Popen([str(script)])
    assert start_failure(raised.value) == (
        "No such file or directory (the interpreter its #! line names, '/nonexistent/interp', "
        "does not exist: fix that line, e.g. #!/usr/bin/env python3, or start it with its "
        "interpreter)"
    )
    missing = OSError(errno.ENOENT, "No such file or directory", str(tmp_path / "gone"))
    assert start_failure(missing) == "No such file or directory"


@pytest.mark.parametrize("interpreter", ["/bin/sh", "/usr/bin/env sh"])
def test_a_bot_script_with_windows_line_endings_is_refused_saying_so(
    tmp_path: Path, interpreter: str
) -> None:
    # "/bin/sh" (which exists) was named as missing, the CR stripped; through env, only env's
    # own last line ("use -[v]S to pass options in shebang lines") was quoted.
    script = tmp_path / "bot.sh"
    script.write_bytes(f"#!{interpreter}\r\nexec {LOW}\r\n".encode())
    script.chmod(0o755)
    args = ["--bot", "a=./bot.sh", "--bot", f"b={LOW}", "--bot", f"c={LOW}", "--players", "3"]
    done = arena("run", *args, "--boards", "1", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("arena: error: bot 'a': "), last
    assert (
        "its #! line ends in a carriage return: the file has Windows line endings (CRLF); "
        "convert it to Unix ones (LF), e.g. with dos2unix FILE or sed -i 's/\\r$//' FILE"
    ) in last, last
    assert "'/bin/sh', does not exist" not in last


def test_two_runs_started_at_once_with_one_out_folder_cannot_both_mark_it(
    tmp_path: Path,
) -> None:
    # Both passed the start's check (no mark yet), and the second's replays overwrote the
    # first's: the mark is now made whole and linked in place only if none is there.
    from arena.director.run import OUT_MARK, check_out, mark_out

    out = tmp_path / "shared"
    out.mkdir()
    first, second = tmp_path / "one.db", tmp_path / "two.db"
    first.write_bytes(b"")
    second.write_bytes(b"")
    check_out(out, "run-1", first)
    check_out(out, "run-2", second)  # at once: neither sees a mark yet
    mark_out(out, "run-1", first)
    with pytest.raises(ConfigError, match="holds the replays and logs of another run"):
        mark_out(out, "run-2", second)
    assert json.loads((out / OUT_MARK).read_text())["db"] == str(first.resolve())
    mark_out(out, "run-1", first)  # the run's own mark again: fine
    assert sorted(p.name for p in out.iterdir()) == [OUT_MARK]
