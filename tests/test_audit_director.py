"""The local match runner at its edges: a bot log that cannot be written (a full disk), and a
Ctrl-C or SIGTERM that lands as Python exits, once a command's output is complete.

The full disk is RLIMIT_FSIZE, as in ``test_audit_resume``: a log file made as large as the
limit refuses every further write (EFBIG, "File too large"), the director's and the bots' alike,
while the database and the replays, far below it, are written as usual. A signal as Python exits
is sent by the process to itself from a ``sitecustomize`` hook at a known point of the exit: as
the command returns (``arena.cli:_flush_output``), as Python joins the threads left
(``threading._shutdown``), and in the last of the exit hooks (``atexit``).
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest
from test_arena_interrupt import BASE, LOW, ROOT, SIGNAL_AT, alive, signalled
from test_arena_resume import PY, bot_pids, kill_orphans
from test_audit_results import damage_games_table
from test_audit_resume import limited
from typer.testing import CliRunner

from arena.cli import app

TIMEOUT_S = 120
LIMIT = 50_000_000
"""The largest file the run may write: far above its database and replays."""
GATE = f"{PY} {shlex.quote(str(ROOT / 'tests' / 'arena_bots' / 'gatebot.py'))}"
RUN = ["run", "--bot", f"a={GATE}", "--bot", f"b={LOW}", "--bot", f"c={LOW}"]
TWO_BOARDS = ["--players", "3", "--boards", "2", "--concurrency", "1"]
"""Six games, one table at a time; the gate bot holds the second board's until the gate opens."""


def arena(
    work: Path, *args: str, size: int | None = None, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """`arena ARGS` in ``work``, its files (and its bots') limited to ``size`` bytes."""
    return subprocess.Popen(
        [*BASE, *args],
        cwd=work,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        preexec_fn=None if size is None else (lambda: limited(size)),
    )


def finish(proc: subprocess.Popen[str]) -> tuple[str, str]:
    """Its output and error output to the end (killed if a test failed on the way)."""
    try:
        return proc.communicate(timeout=TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def first_board(run: subprocess.Popen[str]) -> list[str]:
    """Read a gated run's error output until its first board is stored (the second is held
    until the gate opens); the lines read."""
    assert run.stderr is not None
    lines = []
    for line in run.stderr:
        lines.append(line)
        if line.startswith("arena: 3/6 games"):
            return lines
    raise AssertionError(f"the run ended before its first board: {''.join(lines)}")


def stored(db: Path) -> int:
    """Games in the database (which is whole)."""
    with sqlite3.connect(db) as check:
        assert check.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        count: int = check.execute("SELECT COUNT(*) FROM games").fetchone()[0]
    return count


def test_a_bot_log_with_no_room_at_the_start_is_one_line_and_leaves_no_database(
    tmp_path: Path,
) -> None:
    # It was a traceback (OSError: [Errno 27] File too large, from BotPool._note).
    logs = tmp_path / "arena-out" / "logs"
    logs.mkdir(parents=True)
    (logs / "b.log").touch()
    os.truncate(logs / "b.log", LIMIT)  # the disk is full
    try:
        _, err = finish(arena(tmp_path, *RUN, *TWO_BOARDS, size=LIMIT))
    finally:
        kill_orphans(tmp_path / "arena-out")
    assert "Traceback" not in err, err
    assert err.strip().splitlines()[-1] == (
        "arena: error: --out arena-out: cannot write the log of bot b, arena-out/logs/b.log "
        "(File too large); make room (or fix the disk) and try again"
    )
    assert not (tmp_path / "arena.db").exists() and not (tmp_path / "arena.db.lock").exists()
    assert not any(alive(pid) for pid in bot_pids(tmp_path / "arena-out"))


def test_a_bot_log_that_fills_during_the_run_stops_it_and_the_same_command_resumes(
    tmp_path: Path,
) -> None:
    # The run went on to its end (exit 0) with the bot's output and the director's notes lost:
    # only the director's notes raised (a traceback), and a bot that plays on writes none.
    gate = tmp_path / "gate"
    env = {"ARENA_TEST_GATE": str(gate)}
    db, out = tmp_path / "arena.db", tmp_path / "arena-out"
    run = arena(tmp_path, *RUN, *TWO_BOARDS, size=LIMIT, env=env)
    try:
        lines = first_board(run)
        os.truncate(out / "logs" / "b.log", LIMIT)  # the disk is full
        gate.touch()
        _, rest = finish(run)
        said = "".join(lines) + rest
        assert "Traceback" not in said, said
        assert run.returncode == 1, said
        assert rest.strip().splitlines()[-1] == (
            "arena: error: cannot write the log of bot b (arena-out/logs/b.log): File too large; "
            "3 games of the run are stored in arena.db: make room (or fix the disk) and run the "
            "same command again to resume"
        )
        # The game that ended as the log failed is not kept: its bots' output was lost in it.
        assert stored(db) == 3 and len(list((out / "replays").glob("*.jsonl"))) == 3
        assert not any(alive(pid) for pid in bot_pids(out))
        assert not db.with_name("arena.db.lock").exists()

        os.truncate(out / "logs" / "b.log", 0)  # room made
        resumed = arena(tmp_path, *RUN, *TWO_BOARDS, env=env)
        _, said = finish(resumed)
        assert resumed.returncode == 0, said
        assert "3 games to play of 6, 3 already stored (resuming)" in said
    finally:
        kill_orphans(out)
    assert stored(db) == 6
    assert re.search(r"--- arena .*: game b1-g0-r2 over", (out / "logs" / "b.log").read_text())


def test_a_database_another_program_locks_during_the_run_is_named_as_locked(
    tmp_path: Path,
) -> None:
    # Told "make room (or fix the disk)", as for a full disk, when a sqlite3 shell held the
    # write lock past the busy timeout (10 s) while the run stored a game.
    gate = tmp_path / "gate"
    env = {"ARENA_TEST_GATE": str(gate)}
    db, out = tmp_path / "arena.db", tmp_path / "arena-out"
    run = arena(tmp_path, *RUN, *TWO_BOARDS, env=env)
    try:
        lines = first_board(run)
        holder = sqlite3.connect(db, isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")  # another program's write, left open
            gate.touch()
            _, rest = finish(run)
        finally:
            holder.close()
        said = "".join(lines) + rest
        assert "Traceback" not in said, said
        assert run.returncode == 1, said
        last = rest.strip().splitlines()[-1]
        assert last.startswith("arena: error: cannot "), last
        assert last.endswith(
            ": the database is locked by another program (database is locked); 3 games of the "
            "run are stored in arena.db: once it lets go, run the same command again to resume"
        ), last
    finally:
        kill_orphans(out)
    assert stored(db) == 3


def test_resuming_on_a_damaged_database_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    # The run's start reads well (schema, meta), its games not: resuming ended in a traceback
    # of sqlite3.DatabaseError (or of an ExceptionGroup, from the replays written on resuming).
    lows = ["run", "--bot", f"a={LOW}", "--bot", f"b={LOW}", "--bot", f"c={LOW}"]
    args = [*lows, "--players", "3", "--boards", "1"]
    first = arena(tmp_path, *args)
    _, said = finish(first)
    assert first.returncode == 0, said
    db = tmp_path / "arena.db"
    damage_games_table(db)
    again = arena(tmp_path, *args)
    _, said = finish(again)
    assert "Traceback" not in said, said
    assert again.returncode == 2, said
    assert said.strip().splitlines()[-1] == (
        "arena: error: arena.db: the database is damaged (database disk image is malformed); "
        "a backup, or `sqlite3 FILE .recover`, may save its games"
    )


EXITING = (
    SIGNAL_AT
    + """
import atexit, threading

AT = os.environ["ARENA_TEST_AT"]
if AT == "exit:threads":  # as Python exits, while it joins the threads left
    joining = threading._shutdown

    def _shutdown():
        os.kill(os.getpid(), SIG)
        joining()

    threading._shutdown = _shutdown
elif AT == "exit:hooks":  # an exit hook registered as the command's output is complete
    import arena.director.ending as ending

    until = ending.until_exit

    def until_exit(*args, **kwargs):
        atexit.register(lambda: os.kill(os.getpid(), SIG))
        return until(*args, **kwargs)

    ending.until_exit = until_exit
elif AT == "exit:last":  # registered first: the last of the exit hooks, after the command's
    atexit.register(lambda: os.kill(os.getpid(), SIG))
"""
)
MOMENTS = ["arena.cli:_flush_output", "exit:threads", "exit:hooks"]
"""As the command returns; as Python joins the threads left; in its exit hooks (no module of
those names is looked for: the hook of ``SIGNAL_AT`` never fires for them)."""


def exiting(work: Path, sig: str, at: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`arena ARGS` in ``work``, sent ``sig`` at ``at``: one of ``MOMENTS``."""
    return signalled(work, sig, at, *args, hook=work.parent / "hook", sender=EXITING)


THREE = ["--bot", f"a={LOW}", "--bot", f"b={LOW}", "--bot", f"c={LOW}", "--players", "3"]
ONE_BOARD = [*THREE, "--boards", "1", "--concurrency", "1"]


@pytest.fixture(scope="module")
def rated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A folder with a finished run's arena.db (three games), and its ratings left alone."""
    work = tmp_path_factory.mktemp("rated")
    for args in (["run", *ONE_BOARD], ["ratings"]):
        done = subprocess.run(
            [*BASE, *args],
            cwd=work,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert done.returncode == 0, done.stderr
    return work, done.stdout


@pytest.mark.parametrize(
    ("sig", "at"),
    [("SIGINT", at) for at in MOMENTS] + [("SIGTERM", "exit:threads")],
)
def test_a_signal_as_ratings_exits_is_one_line_and_exit_130(
    rated: tuple[Path, str], sig: str, at: str
) -> None:
    # As Python joined its threads or ran its exit hooks: a KeyboardInterrupt's traceback
    # ("Exception ignored in ...") and exit code 0; SIGTERM a silent death (143). As the command
    # returned: "arena: interrupted", as if the table might be cut short.
    work, table = rated
    done = exiting(work, sig, at, "ratings")
    assert "Traceback" not in done.stderr, done.stderr
    assert (done.returncode, done.stderr) == (
        130,
        "arena: error: interrupted while exiting; its output is complete\n",
    )
    assert done.stdout == table


def test_a_signal_during_the_ratings_table_is_one_line_and_exit_130(
    rated: tuple[Path, str],
) -> None:
    # Unchanged: the table is cut short, and says so.
    done = exiting(rated[0], "SIGINT", "arena.ratings.report:render_ratings", "ratings")
    assert (done.returncode, done.stderr) == (130, "arena: error: interrupted\n")


@pytest.mark.parametrize(("sig", "at"), [("SIGINT", "exit:threads"), ("SIGTERM", "exit:hooks")])
def test_a_signal_as_a_finished_run_exits_says_every_game_is_stored(
    tmp_path: Path, sig: str, at: str
) -> None:
    # A traceback and exit code 0, after the summary had been printed.
    work = tmp_path / "work"
    work.mkdir()
    done = exiting(work, sig, at, "run", *ONE_BOARD)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 130, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "arena: error: interrupted: all 3 games are stored in arena.db, nothing is left to play; "
        "see the results with arena ratings --db arena.db"
    )
    assert "Faults per bot" in done.stdout
    assert not any(alive(pid) for pid in bot_pids(work / "arena-out"))


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_a_signal_after_the_last_exit_hook_leaves_the_commands_exit_code(
    tmp_path: Path, sig: str
) -> None:
    # After its exit hooks Python puts the default actions back and tears its modules down: a
    # signal there killed the finished command without a word (-2, -15), even with its Ctrl-C
    # blocked (a signal to the process went to one of gRPC's threads). It is dropped now.
    work = tmp_path / "work"
    work.mkdir()
    done = exiting(work, sig, "exit:last", "run", *ONE_BOARD)
    assert (done.returncode, "Traceback" in done.stderr) == (0, False), done.stderr
    assert "interrupted" not in done.stderr and "Faults per bot" in done.stdout


def test_ratings_in_process_gives_its_caller_its_own_signals_back(
    rated: tuple[Path, str],
) -> None:
    # The exit handler is for the `arena` process alone: a program that calls the command (a
    # test's CliRunner) keeps its Ctrl-C a KeyboardInterrupt.
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    done = CliRunner().invoke(app, ["ratings", "--db", str(rated[0] / "arena.db")])
    assert done.exit_code == 0, done.output
    assert {sig: signal.getsignal(sig) for sig in before} == before
