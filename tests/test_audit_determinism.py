"""Determinism and resume equivalence, as a user meets them: `arena run` and `arena sprt` stopped
by a stop that reaches every process of the run (systemd's stop, a machine shutting down), then
run again, end as an unbroken run does; and every game of a run plays again the same in-process
(`play_local`) from its seed and the same bots. Real processes, real SQLite files.

The stop: SIGTERM to arena and to every bot process at once, while the games of the second board
are held in play by the gate bot (``tests/arena_bots/gatebot.py``), whose gate opens only after
the signals are sent: those games end in the referee's shutdown grace, the bots having left.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import io
import os
import shlex
import signal
import sqlite3
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import pytest
from test_arena_interrupt import BASE, ROOT, alive
from test_arena_resume import PY, bot_pids, kill_orphans, same_game
from test_audit_director import finish

from arena.cards import Card
from arena.client import Bot, DecisionView, play_local
from arena.director.progress import PlainReporter, Standings
from arena.store import Store
from arena.table import GameRecord

TIMEOUT_S = 120
SAMPLES = ROOT / "sample_bots"
GATE = f"{PY} {shlex.quote(str(ROOT / 'tests' / 'arena_bots' / 'gatebot.py'))}"
LOW = f"{PY} {shlex.quote(str(SAMPLES / 'lowcard.py'))}"
HEUR = f"{PY} {shlex.quote(str(SAMPLES / 'heuristic.py'))}"
HASH = f"{PY} {shlex.quote(str(ROOT / 'tests' / 'arena_bots' / 'hashbot.py'))}"
RAND = f"{PY} {shlex.quote(str(SAMPLES / 'random_bot.py'))}"
COMMANDS = {
    # Two boards of four rotations, two tables at a time: board 0 is played, board 1 is held.
    "run": [
        "run", "--bot", f"gate={GATE}", "--bot", f"low={LOW}", "--bot", f"heur={HEUR}",
        "--bot", f"hash={HASH}", "--boards", "2", "--concurrency", "2", "--seed", "3",
    ],
    # Two boards cannot decide between these bounds: the test counts both, then stops at the cap.
    "sprt": [
        "sprt", "--bot", f"low={LOW}", "--bot", f"heur={HEUR}", "--filler", f"gate={GATE}",
        "--filler", f"hash={HASH}", "--elo0", "0", "--elo1", "5", "--max-boards", "2",
        "--concurrency", "2", "--seed", "3",
    ],
}  # fmt: skip
BOARD_0 = {
    "run": "arena: 4/8 games",
    "sprt": "arena sprt: 4 games of at most 8",
}
"""The progress line that says board 0 is stored (the gate bot holds board 1)."""
REPLAYED = {"run": "b1-g0-r2", "sprt": "b1-r2"}
"""A game of the second board, the one the stop came in."""


def start(
    cwd: Path, args: list[str], gate: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """`arena ARGS` in ``cwd`` (database and output there), the gate bot waiting for ``gate``
    (``env``: more of the environment)."""
    return subprocess.Popen(
        [*BASE, *args, "--db", "arena.db"],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "ARENA_TEST_GATE": str(gate), **(env or {})},
    )


def until_line(proc: subprocess.Popen[str], prefix: str) -> None:
    """Read ``proc``'s standard error up to a line that starts with ``prefix``."""
    assert proc.stderr is not None
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if line.startswith(prefix):
            return
    raise AssertionError(f"it ended before a line {prefix!r}: {''.join(lines)}")


def arena(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A command that only reads (`arena replay`) in ``cwd``."""
    return subprocess.run(
        [*BASE, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def records(db: Path) -> list[tuple[int, GameRecord]]:
    """The stored games, in schedule order."""
    with Store.open(db, create=False) as store:
        return list(store.records())


def forfeited_seats(db: Path) -> int:
    """Seats of stored games that ended other than normally."""
    with contextlib.closing(sqlite3.connect(db)) as check:
        row = check.execute("SELECT COUNT(*) FROM seats WHERE status != 'normal'").fetchone()
    return int(row[0])


@pytest.mark.parametrize("command", ["run", "sprt"])
def test_a_stop_that_reaches_the_bots_too_keeps_no_game_they_left(
    tmp_path: Path, command: str
) -> None:
    # Before: the games in play were stored with every seat forfeited ("its bot left the game
    # (Goodbye)"): never played again, they made the resumed run's results (and a test's boards)
    # differ from those of a run never stopped.
    args = COMMANDS[command]
    (tmp_path / "ref").mkdir()
    (tmp_path / "broken").mkdir()
    open_gate = tmp_path / "gate"
    open_gate.touch()
    reference = start(tmp_path / "ref", args, open_gate)
    gate = tmp_path / "broken" / "gate"
    broken = start(tmp_path / "broken", args, gate)
    out = tmp_path / "broken" / "arena-out"
    try:
        until_line(broken, BOARD_0[command])
        for pid in [broken.pid, *(p for p in bot_pids(out) if alive(p))]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        gate.touch()  # the held games go on, in the referee's shutdown grace
        _, rest = finish(broken)
        assert broken.returncode == 130, rest
        db = tmp_path / "broken" / "arena.db"
        assert [i for i, _ in records(db)] == [0, 1, 2, 3]  # board 0 only
        assert forfeited_seats(db) == 0

        resumed = start(tmp_path / "broken", args, gate)
        said, rest = finish(resumed)
        assert resumed.returncode == 0, rest
        expected, rest = finish(reference)
        assert reference.returncode == 0, rest
    finally:
        for proc in (reference, broken, locals().get("resumed")):
            if isinstance(proc, subprocess.Popen) and proc.poll() is None:
                proc.kill()
                proc.wait()
        kill_orphans(out)
        kill_orphans(tmp_path / "ref" / "arena-out")

    want, got = records(tmp_path / "ref" / "arena.db"), records(db)
    assert [i for i, _ in got] == [i for i, _ in want] == list(range(8))
    assert all(same_game(x, y) for (_, x), (_, y) in zip(want, got, strict=True))
    if command == "run":
        # The closing report (ratings, crosstable, faults), after its first line (the paths and
        # the time), is the unbroken run's.
        assert said.splitlines()[1:] == expected.splitlines()[1:]
    else:
        assert said.splitlines()[-2:] == expected.splitlines()[-2:]  # the status and verdict
    replays = [arena(tmp_path / d, "replay", REPLAYED[command]) for d in ("ref", "broken")]
    assert replays[0].returncode == 0 and replays[0].stdout == replays[1].stdout
    assert "disconnect" not in replays[1].stdout


def test_a_stop_while_a_resumed_run_starts_its_bots_says_how_many_games_are_stored(
    tmp_path: Path,
) -> None:
    # It said only "interrupted; every game finished so far is stored", where a stop once the
    # games had begun says how many of how many, as the README promises.
    gate, hold = tmp_path / "gate", tmp_path / "hold"
    first = start(tmp_path, COMMANDS["run"], gate)
    out = tmp_path / "arena-out"
    try:
        until_line(first, BOARD_0["run"])
        first.send_signal(signal.SIGINT)
        _, said = finish(first)
        assert first.returncode == 130, said
        stopped = "arena: error: interrupted: 4 of 8 games stored in arena.db; run the same"
        assert stopped in said
        kill_orphans(out)
        resumed = start(tmp_path, COMMANDS["run"], gate, {"ARENA_TEST_HOLD_START": str(hold)})
        waiting = Path(f"{hold}.waiting")
        until = time.monotonic() + TIMEOUT_S
        while not waiting.exists() and resumed.poll() is None and time.monotonic() < until:
            time.sleep(0.01)
        assert waiting.exists(), "the gate bot never started"
        resumed.send_signal(signal.SIGINT)
        _, said = finish(resumed)
    finally:
        hold.touch()  # a bot still held connects, finds no referee and gives up
        kill_orphans(out)
    assert resumed.returncode == 130, said
    assert said.strip().splitlines()[-1] == (
        "arena: error: interrupted: 4 of 8 games stored in arena.db; run the same command again"
        " to resume"
    ), said
    assert [i for i, _ in records(tmp_path / "arena.db")] == [0, 1, 2, 3]


@functools.cache
def _sample(name: str) -> ModuleType:
    """A sample bot's module, loaded from its file (its ``run`` is under ``__main__``)."""
    spec = importlib.util.spec_from_file_location(f"determinism_{name}", SAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Recorder(Bot):
    """Plays as ``inner`` does and notes each answer as the referee's record holds it."""

    def __init__(self, inner: Bot, seen: list[tuple[int, int, str, tuple[str, ...]]]) -> None:
        self.inner = inner
        self.seen = seen

    def choose_pass(self, view: DecisionView) -> Sequence[Card]:
        cards = self.inner.choose_pass(view)
        self.seen.append((view.hand_number, view.seat, "pass", tuple(map(str, cards))))
        return cards

    def choose_play(self, view: DecisionView) -> Card:
        card = self.inner.choose_play(view)
        self.seen.append((view.hand_number, view.seat, "play", (str(card),)))
        return card


def test_every_game_of_a_run_plays_again_the_same_in_play_local(tmp_path: Path) -> None:
    # "Every game is reproducible from its seed and the bots' answers": a bot author takes any
    # stored game (its seed, rules, seats) and the same deterministic bots, and play_local gives
    # every pass and card of it again, over whole games of several hands (dealer and passes
    # rotating, the board's passes), whichever process of the run played it.
    bots = {
        "low": lambda: _sample("lowcard").LowCardBot(),
        "heur": lambda: _sample("heuristic").HeuristicBot(),
        "r1": lambda: _sample("random_bot").RandomBot("r1"),  # seeded by its name, as in a run
        "r2": lambda: _sample("random_bot").RandomBot("r2"),
    }
    args = [
        "run", "--bot", f"low={LOW}", "--bot", f"heur={HEUR}", "--bot", f"r1={RAND}", "--bot",
        f"r2={RAND}", "--boards", "2", "--game-to", "40", "--concurrency", "2", "--db", "arena.db",
    ]  # fmt: skip
    done = subprocess.run(
        [*BASE, *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    kill_orphans(tmp_path / "arena-out")
    assert done.returncode == 0, done.stderr
    games = records(tmp_path / "arena.db")
    assert len(games) == 8 and all(len(r.hands) > 1 for _, r in games)
    for _, record in games:
        spec = record.spec
        seen: list[tuple[int, int, str, tuple[str, ...]]] = []
        local = play_local(
            [Recorder(bots[name](), seen) for name in spec.seats],
            rules=spec.rules,
            seed=spec.seed,
            hands=spec.hands,
            names=spec.seats,
            move_ms=spec.clocks.move_ms,
            bank_ms=spec.clocks.bank_ms,
        )
        asked = sorted((d.hand, d.seat, d.kind, d.cards) for d in record.decisions if not d.forced)
        assert sorted(seen) == asked, spec.table_id
        assert local.hand_points == tuple(h.points for h in record.hands), spec.table_id
        assert (local.totals, local.placings) == (record.totals, record.placings)


def test_a_resumed_run_with_one_game_left_says_game() -> None:
    # It said "1 games to play of 12" when a stop left one game of the run.
    out = io.StringIO()
    PlainReporter(out).start(12, 11, Standings(()))
    assert out.getvalue() == "arena: 1 game to play of 12, 11 already stored (resuming)\n"
