"""`arena sprt` as a newcomer meets it: its start line, header, status line, a resumed test and a
Ctrl-C after the decision. Real referee, real bot processes, real SQLite files."""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_arena_cli import closed_pipe_runs, full_output_runs
from test_arena_resume import bot_pids

from arena.config import build_config
from arena.director.progress import PlainReporter, Standings
from arena.director.sprt import run_sprt
from arena.ratings.sprt import Sprt

ROOT = Path(__file__).resolve().parent.parent
PY = shlex.quote(sys.executable)
LOW = f"{PY} {shlex.quote(str(ROOT / 'sample_bots' / 'lowcard.py'))}"
HASH = f"{PY} {shlex.quote(str(ROOT / 'tests' / 'arena_bots' / 'hashbot.py'))}"
GATE = f"{PY} {shlex.quote(str(ROOT / 'tests' / 'arena_bots' / 'gatebot.py'))}"
ILLEGAL = f"{PY} {shlex.quote(str(ROOT / 'tests' / 'bots' / 'raw_bot.py'))} --mode illegal"
ARENA = Path(sys.executable).with_name("arena")
BASE = [str(ARENA)] if ARENA.exists() else [sys.executable, "-m", "arena.cli"]
TIMEOUT_S = 240
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def arena_sprt(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`arena sprt ARGS` in ``cwd``, stdout and stderr apart."""
    return subprocess.run(
        [*BASE, "sprt", *args], cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S, env=ENV
    )


@pytest.fixture(scope="module")
def one_board(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    """A test of one board (it cannot decide at the defaults), --elo0 given as -0."""
    cwd = tmp_path_factory.mktemp("sprt")
    done = arena_sprt(
        cwd, "--bot", f"low={LOW}", "--bot", f"hash={HASH}", "--elo0", "-0", "--max-boards", "1"
    )
    assert done.returncode == 0, done.stderr
    return done


def test_the_start_line_says_the_games_are_a_cap(
    one_board: subprocess.CompletedProcess[str],
) -> None:
    # It said "4 games to play of 4" (with the default cap: "8000 games to play of 8000"), as if
    # the test played them all; it stops when it decides.
    assert "arena sprt: up to 4 games (stops when the test decides)\n" in one_board.stderr
    assert "games to play" not in one_board.stderr
    progress = [line for line in one_board.stderr.splitlines() if " of at most 4, " in line]
    assert progress and all("/s, at most " in line for line in progress)


def test_a_resumed_start_line_says_the_cap_too() -> None:
    out = io.StringIO()
    PlainReporter(out, "arena sprt", stops_when="the test decides").start(8000, 20, Standings(()))
    assert out.getvalue() == (
        "arena sprt: up to 7980 more games, 20 already stored (resuming); it stops when the "
        "test decides\n"
    )
    run = io.StringIO()  # arena run's line is as it was
    PlainReporter(run).start(12, 4, Standings(()))
    assert run.getvalue() == "arena: 8 games to play of 12, 4 already stored (resuming)\n"


def test_elo0_given_as_minus_zero_is_shown_as_zero(
    one_board: subprocess.CompletedProcess[str],
) -> None:
    # The header said "H0 elo -0".
    header = one_board.stdout.splitlines()[0]
    assert header.startswith("SPRT hash (B) against low (A) at low, hash, random, lowcard: ")
    assert header.endswith(": H0 elo 0, H1 elo 20, alpha 0.05, beta 0.05"), header


def test_the_status_line_writes_an_open_bound_as_the_ratings_do(
    one_board: subprocess.CompletedProcess[str],
) -> None:
    # After one board the interval is open on one side at least: it said "[-141.4, +inf]".
    status, verdict = one_board.stdout.splitlines()[-2:]
    assert status.startswith("boards 1  score ") and "∞" in status and "inf" not in status
    assert verdict == "no decision: stopped at the cap of 1 board (--max-boards)"


class _Said(PlainReporter):
    """Plain progress that keeps its start calls and notes in order, as "start" and the text."""

    def __init__(self) -> None:
        super().__init__(io.StringIO(), "arena sprt")
        self.said: list[str] = []

    def start(self, total: int, done: int, standings: Standings, parallel: int = 1) -> None:
        """Keep the call."""
        self.said.append("start")
        super().start(total, done, standings, parallel)

    def note(self, text: str) -> None:
        """Keep the line."""
        self.said.append(text)
        super().note(text)


def test_a_resumed_test_says_where_it_stands_after_its_start(tmp_path: Path) -> None:
    # The stored boards' status came before the games started, so before the command's header
    # (printed at the start) and its "up to N more games ... (resuming)" line.
    config = build_config(
        bots=[f"low={LOW}", f"hash={HASH}"] + [f"h{k}={HASH}" for k in (1, 2)],
        concurrency=2,
        db=tmp_path / "s.db",
    )

    def play(max_boards: int) -> tuple[Sprt, list[str]]:
        test = Sprt(0.0, 5.0)  # far from deciding in two boards
        reporter = _Said()
        run_sprt(
            config,
            test,
            max_boards=max_boards,
            reporter=reporter,
            on_board=lambda t: reporter.note(t.status),
        )
        return test, reporter.said

    first, _ = play(1)
    resumed, said = play(2)
    assert resumed.boards == 2
    assert said[0] == "start" and said[1] == first.status and said[-1] == resumed.status


@contextlib.contextmanager
def _stopped_at_the_end(proc: subprocess.Popen[str], out: Path) -> Iterator[None]:
    """Leave no process behind, whatever the test asserted."""
    try:
        yield
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        for pid in bot_pids(out):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_a_ctrl_c_after_the_decision_prints_the_verdict(tmp_path: Path) -> None:
    # B forfeits every game (an illegal card every move), so the test decides at board 1; gate
    # holds every game of a later board until a gate file that never comes, so games are in
    # play at the decision. A Ctrl-C then, while they finish, said "interrupted after 1 boards;
    # run the same command again to resume", with no verdict, of a test that had decided.
    args = [
        "--bot", f"low={LOW}", "--bot", f"bad={ILLEGAL}", "--filler", f"gate={GATE}",
        "--filler", f"hash={HASH}", "--elo0", "0", "--elo1", "200", "--alpha", "0.3", "--beta",
        "0.3", "--concurrency", "4", "--move-time", "10m",
    ]  # fmt: skip
    proc = subprocess.Popen(
        [*BASE, "sprt", *args],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**ENV, "ARENA_TEST_GATE": str(tmp_path / "gate")},
    )
    with _stopped_at_the_end(proc, tmp_path / "arena-sprt-out"):
        assert proc.stderr is not None
        seen = []
        for line in proc.stderr:
            seen.append(line)
            if line.startswith("arena sprt: H0 accepted after 1 board: "):
                break
        else:
            raise AssertionError("".join(seen))
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=TIMEOUT_S)
    assert proc.returncode == 130, err
    assert out.splitlines()[-1].startswith(
        "H0 accepted: the test favours elo0 = 0 over elo1 = 200;"
    )
    assert "to resume" not in err, err  # the stop's first line said to resume, too
    assert err.splitlines()[-1] == (
        "arena: error: interrupted after the decision (taken after 1 board), while the games in "
        "play were finishing (the test does not count them); the decision above stands, and "
        "nothing is left to play (the same command prints it again)"
    )
    again = arena_sprt(tmp_path, *args)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[-1] == out.splitlines()[-1]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_an_output_that_fails_at_the_start_line_is_one_line_or_a_quiet_141(tmp_path: Path) -> None:
    # The start line is written by a task of the run, and trio wraps its error: `arena sprt >
    # /dev/full` and `arena sprt | head -0` were tracebacks of 70 lines, where every other
    # command says one line (a full disk, exit 1) or nothing (a closed pipe, exit 141).
    def sprt(db: str) -> list[str]:
        return ["sprt", "--bot", f"low={LOW}", "--bot", f"hash={HASH}", "--db", db]

    (full,) = full_output_runs(tmp_path, [sprt("full.db")])
    assert (full.returncode, full.stderr) == (
        1,
        "arena: error: cannot write the output: No space left on device\n",
    )
    (closed,) = closed_pipe_runs(tmp_path, [sprt("closed.db")])
    assert (closed.returncode, closed.stderr) == (141, "")
