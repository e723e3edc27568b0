"""Ctrl-C and SIGTERM at the edges of `arena run`: while it loads, and after its last game is
stored. Each is one line and exit code 130, and says what there is: nothing made, or every game
stored and where to see the results (not "run the same command again": there is nothing to resume).

The signals land at known points, not after guessed delays: as the command first looks for a
module or calls a function (a ``sitecustomize`` hook on its path), or while a bot that ignores
SIGTERM holds the run's stop after the last game (``tests/arena_bots/lingerbot.py``).
"""

from __future__ import annotations

import os
import shlex
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_arena_cli import stored_db
from test_arena_resume import bot_pids

ROOT = Path(__file__).resolve().parent.parent
PY = shlex.quote(sys.executable)
LOW = f"{PY} {shlex.quote(str(ROOT / 'sample_bots' / 'lowcard.py'))}"
LINGER = f"{PY} {shlex.quote(str(ROOT / 'tests' / 'arena_bots' / 'lingerbot.py'))}"
ARENA = Path(sys.executable).with_name("arena")
BASE = [str(ARENA)] if ARENA.exists() else [sys.executable, "-m", "arena.cli"]
TIMEOUT_S = 120
THREE = ["--players", "3", "--boards", "1", "--concurrency", "1"]
"""Three seats, one board: three games (its rotations), one table at a time."""
NOTHING_MADE = "arena: error: interrupted before any game was played; nothing was made\n"
ALL_STORED = (
    "arena: error: interrupted: all 3 games are stored in arena.db, nothing is left to play; "
    "see the results with arena ratings --db arena.db"
)

SIGNAL_AT = """
import importlib.util, os, signal, sys

SIG = getattr(signal, os.environ["ARENA_TEST_SIGNAL"])
MODULE, _, FUNCTION = os.environ["ARENA_TEST_AT"].partition(":")


class InSetName:
    # Python calls __set_name__ as it makes a class (matplotlib's axes have many, as it loads).
    def __set_name__(self, owner, name):
        os.kill(os.getpid(), SIG)


class SignalAt:
    # The signal, as the user's key would land there, when the command first looks for MODULE
    # (still loading it); with a FUNCTION, when it first calls MODULE.FUNCTION; or with
    # __set_name__, when a class is made then.
    def find_spec(self, name, path=None, target=None):
        if name != MODULE:
            return None
        sys.meta_path.remove(self)
        if FUNCTION == "__set_name__":
            type("Loading", (), {"descriptor": InSetName()})
            return None
        if not FUNCTION:
            os.kill(os.getpid(), SIG)
            return None
        spec = importlib.util.find_spec(name)
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            called = getattr(module, FUNCTION)

            def signalled(*args, **kwargs):
                os.kill(os.getpid(), SIG)
                return called(*args, **kwargs)

            setattr(module, FUNCTION, signalled)

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, SignalAt())
"""


def signalled_run(
    cwd: Path, sig: str, at: str, *args: str, hook: Path
) -> subprocess.CompletedProcess[str]:
    """`arena run ARGS` in ``cwd``, sent ``sig`` at ``at`` (see :func:`signalled`)."""
    return signalled(cwd, sig, at, "run", *args, hook=hook)


def signalled(
    cwd: Path,
    sig: str,
    at: str,
    *args: str,
    hook: Path,
    sender: str = SIGNAL_AT,
    sigint_ignored: bool = False,
) -> subprocess.CompletedProcess[str]:
    """`arena ARGS` in ``cwd``, sent ``sig`` at ``at``: ``module``, ``module:function`` or
    ``module:__set_name__`` (see ``SIGNAL_AT``), or what ``sender`` (a sitecustomize module
    that reads ``ARENA_TEST_SIGNAL`` and ``ARENA_TEST_AT``) takes ``at`` to mean; started with
    SIGINT ignored (as a script's `command &`) if ``sigint_ignored``."""
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(sender)
    return subprocess.run(
        [*BASE, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
        if sigint_ignored
        else None,
        env={
            **os.environ,
            "PYTHONPATH": f"{hook}{os.pathsep}{ROOT}",
            "ARENA_TEST_SIGNAL": sig,
            "ARENA_TEST_AT": at,
        },
    )


def alive(pid: int) -> bool:
    """Whether a process ``pid`` is there, and not a zombie waiting for its parent."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def wait_lingering(command: subprocess.Popen[str], log: Path) -> None:
    """Wait until the lingering bot whose log is ``log`` says it lingers (``command`` then
    holds in its stop, the bots' grace before a SIGKILL)."""
    deadline = time.monotonic() + TIMEOUT_S
    while not log.exists() or "lingering" not in log.read_text():
        assert command.poll() is None and time.monotonic() < deadline, "the bot never lingered"
        time.sleep(0.02)


@pytest.mark.parametrize("when", ["at-the-last-game", "while-the-bots-stop"])
def test_a_signal_after_the_last_game_is_stored_says_every_game_is_stored(
    tmp_path: Path, when: str
) -> None:
    # It said "interrupted: 3 of 3 games stored in arena.db; run the same command again to
    # resume" (or "...: run the same command again to carry on"): there was nothing to resume.
    run = subprocess.Popen(
        [*BASE, "run", "--bot", f"a={LOW}", "--bot", f"b={LOW}", "--bot", f"c={LINGER}", *THREE],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert run.stderr is not None
        lines = []
        for line in run.stderr:
            lines.append(line)
            if line.startswith("arena: 3/3 games"):
                break
        else:
            raise AssertionError(f"the run ended before its last game: {''.join(lines)}")
        if when == "while-the-bots-stop":
            # The lingering bot holds the run in its stop (the bots' grace before a SIGKILL).
            wait_lingering(run, tmp_path / "arena-out" / "logs" / "c.log")
        run.send_signal(signal.SIGINT)
        _, rest = run.communicate(timeout=TIMEOUT_S)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    said = "".join(lines) + rest
    assert run.returncode == 130, said
    assert rest.strip().splitlines()[-1] == ALL_STORED
    assert "run the same command again" not in said and "Traceback" not in said
    assert not any(alive(pid) for pid in bot_pids(tmp_path / "arena-out"))


def test_a_signal_as_an_sprt_at_its_cap_stops_its_bots_says_nothing_is_left(
    tmp_path: Path,
) -> None:
    # Two lines that disagreed: "stopping: every game has been played; nothing to resume", then
    # "interrupted after 1 board; run the same command again to resume" (which played nothing).
    sprt = subprocess.Popen(
        [*BASE, "sprt", "--bot", f"a={LOW}", "--bot", f"b={LINGER}", "--max-boards", "1"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        wait_lingering(sprt, tmp_path / "arena-sprt-out" / "logs" / "b.log")
        sprt.send_signal(signal.SIGINT)
        _, err = sprt.communicate(timeout=TIMEOUT_S)
    finally:
        if sprt.poll() is None:
            sprt.kill()
            sprt.communicate()
    assert sprt.returncode == 130, err
    assert "run the same command again" not in err and "Traceback" not in err, err
    assert err.strip().splitlines()[-1] == (
        "arena: error: interrupted after the last of the 1 board (--max-boards) was stored; "
        "nothing is left to play (the same command prints the result again)"
    )
    assert not any(alive(pid) for pid in bot_pids(tmp_path / "arena-sprt-out"))


def test_a_signal_during_the_closing_report_says_every_game_is_stored(tmp_path: Path) -> None:
    # It said only "interrupted".
    work = tmp_path / "work"
    work.mkdir()
    args = ["--bot", f"a={LOW}", "--bot", f"b={LOW}", "--bot", f"c={LOW}", *THREE]
    hook = tmp_path / "hook"
    done = signalled_run(work, "SIGINT", "arena.director.summary:print_summary", *args, hook=hook)
    assert done.returncode == 130, done.stderr
    assert done.stderr.strip().splitlines()[-1] == ALL_STORED
    assert "Traceback" not in done.stderr
    # The same command on the finished run, stopped while it loads: the same, not "carry on".
    again = signalled_run(work, "SIGINT", "arena.director.run", *args, hook=hook)
    assert (again.returncode, again.stderr) == (130, ALL_STORED + "\n")


@pytest.mark.parametrize(
    ("sig", "at", "command", "said"),
    [
        # The rules engine and its errors: `import arena` loaded them before the guard was set
        # (a KeyboardInterrupt's traceback through arena/engine.py, or for SIGTERM a silent
        # death by the signal).
        ("SIGINT", "arena.engine", ["run", *THREE], NOTHING_MADE),
        ("SIGTERM", "arena.errors", ["run", *THREE], "arena: interrupted\n"),
        # typer loads these as it starts the command, before anything handles a Ctrl-C: its
        # help's console (a traceback), pydantic (exit 130 without a word).
        ("SIGINT", "typer.rich_utils", ["run", *THREE], "arena: interrupted\n"),
        ("SIGINT", "pydantic", ["run", *THREE], "arena: interrupted\n"),
        # The run command loads the director (trio, the referee) and the summary (numpy, scipy,
        # matplotlib) for a second or two: exit 130 without a word (typer's handling of a
        # Ctrl-C), or for SIGTERM a silent death by the signal (143).
        ("SIGINT", "arena.director.run", ["run", *THREE], NOTHING_MADE),
        ("SIGINT", "scipy", ["run", *THREE], NOTHING_MADE),
        ("SIGTERM", "arena.director.progress", ["run", *THREE], NOTHING_MADE),
        # Python 3.11 turns a KeyboardInterrupt raised in a __set_name__ into a RuntimeError.
        ("SIGINT", "arena.director.summary:__set_name__", ["run", *THREE], NOTHING_MADE),
        # typer builds the command and reads its flags after the loading guard was lifted and
        # before the command handles a signal: a Ctrl-C there was a KeyboardInterrupt's
        # traceback, a SIGTERM a silent death by the signal (143).
        *(
            (sig, at, command, "arena: interrupted\n")
            for sig, at in (
                ("SIGINT", "typer.main:get_command"),
                ("SIGTERM", "typer.main:get_command"),
                ("SIGTERM", "arena.cli:_repeated_option"),
            )
            for command in (["ratings", "--db", "none.db"], ["run", *THREE])
        ),
        # Before the flags named the database, a run or a test said only "interrupted", the
        # readers' line, where the README promises it says what there is.
        (
            "SIGTERM",
            "arena.ratings.sprt",
            ["sprt", "--bot", "a=true", "--bot", "b=true"],
            NOTHING_MADE,
        ),
        ("SIGTERM", "arena.config:build_config", ["run", *THREE], NOTHING_MADE),
    ],
)
def test_a_signal_while_arena_starts_is_one_line_and_exit_130(
    tmp_path: Path, sig: str, at: str, command: list[str], said: str
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    done = signalled(work, sig, at, *command, hook=tmp_path / "hook")
    assert (done.returncode, done.stderr) == (130, said)
    assert list(work.iterdir()) == []


@pytest.mark.parametrize(
    ("at", "said"),
    [
        ("arena.engine", NOTHING_MADE),
        ("typer.rich_utils", "arena: interrupted\n"),
        ("typer.main:get_command", "arena: interrupted\n"),
        ("arena.director.run", NOTHING_MADE),
    ],
)
def test_a_ctrl_c_inherited_ignored_stops_a_loading_run_as_a_loaded_one(
    tmp_path: Path, at: str, said: str
) -> None:
    # A script's `arena run ... &` ignores SIGINT; a loaded run heeds it all the same, but one
    # sent in its first 0.3 s (while Python loads it) was lost, and the whole run played on.
    work = tmp_path / "work"
    work.mkdir()
    done = signalled(work, "SIGINT", at, "run", *THREE, hook=tmp_path / "hook", sigint_ignored=True)
    assert (done.returncode, done.stderr) == (130, said)
    assert list(work.iterdir()) == []


TORN_DOWN = """
import os, signal, sys, time

from arena.cli import entry  # this process is then the `arena` command
from arena.director.ending import until_exit


class Late:
    def __del__(self):
        # As Python tears its modules down, after the exit hooks: the signals' default actions
        # are back by then.
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.3)
        os.write(1, b"torn down\\n")


keep = Late()
until_exit(lambda signum, frame: os._exit(130))  # as a command whose output is complete
sys.exit(3)
"""


def test_a_signal_as_python_tears_down_leaves_the_commands_exit_code(tmp_path: Path) -> None:
    # A Ctrl-C in the second or so Python takes to tear down scipy and matplotlib killed the
    # finished command by the signal, without a word; it is ignored now.
    script = tmp_path / "late.py"
    script.write_text(TORN_DOWN)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert (done.returncode, done.stdout, done.stderr) == (3, "torn down\n", "")


def test_a_ctrl_c_while_the_plots_are_drawn_leaves_no_file(tmp_path: Path) -> None:
    # `arena ratings --plot` ends at once on Ctrl-C (os._exit, which runs no `finally`): the
    # ratings plot drawn into its hidden temporary file, the history next, was left behind as
    # `.p.PID.tmp.png`, one more at every Ctrl-C.
    db = stored_db(tmp_path)
    plots = tmp_path / "plots"
    plots.mkdir()
    done = signalled(
        tmp_path,
        "SIGINT",
        "arena.ratings.elo:rating_history",  # the ratings plot is drawn by then, not renamed
        *("ratings", "--db", str(db), "--plot", str(plots / "p.png")),
        hook=tmp_path / "hook",
    )
    assert (done.returncode, done.stderr) == (130, "arena: error: interrupted\n")
    assert list(plots.iterdir()) == []


SLOWPOKE = """
import time
from arena.client import Bot, run

class Slowpoke(Bot):
    '''Takes 50 ms over each card: a one-hand game lasts seconds.'''

    def choose_play(self, view):
        time.sleep(0.05)
        return super().choose_play(view)

run(Slowpoke())
"""


@pytest.mark.parametrize("gap_s", [0.0, 0.3])
def test_a_stop_that_reaches_the_bots_first_keeps_no_game_they_left(
    tmp_path: Path, gap_s: float
) -> None:
    # SIGTERM to the bots, then to arena a moment later (a loaded machine's systemd stop, or a
    # kill listing the bots first): the bots say Goodbye, the fallback ends their game, and
    # that game, which says nothing of the bots, was kept when arena's signal came late.
    script = tmp_path / "slowpoke.py"
    script.write_text(SLOWPOKE)
    bots = [a for name in "abcd" for a in ("--bot", f"{name}={PY} {shlex.quote(str(script))}")]
    proc = subprocess.Popen(
        [*BASE, "run", *bots, "--boards", "2", "--concurrency", "2"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        logs = [tmp_path / "arena-out" / "logs" / f"{name}.log" for name in "abcd"]
        deadline = time.monotonic() + TIMEOUT_S
        while not all(p.exists() and p.read_text().count("connected to") >= 2 for p in logs):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr
            time.sleep(0.05)
        time.sleep(1.0)  # two games in play, a second in: each lasts seconds
        for pid in bot_pids(tmp_path / "arena-out"):
            os.kill(pid, signal.SIGTERM)
        time.sleep(gap_s)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "run the same command again to resume" in err, err
    db = sqlite3.connect(tmp_path / "arena.db")
    try:
        left = db.execute("SELECT COUNT(*) FROM seats WHERE status != 'normal'").fetchone()[0]
        stored = db.execute("SELECT COUNT(*) FROM games").fetchone()[0]
    finally:
        db.close()
    assert left == 0, (stored, err)
