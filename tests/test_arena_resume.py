"""Resume: a run stopped by Ctrl-C, then killed with SIGKILL, then run again to the end, stores
exactly the games of a run that was never stopped: none lost, none played twice, same results."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from arena.store import Store, load_results
from arena.table import GameRecord

ROOT = Path(__file__).resolve().parent.parent
PY = shlex.quote(sys.executable)
ARENA = Path(sys.executable).with_name("arena")
PROGRESS = re.compile(r"^arena: (\d+)/(\d+) games")
TOTAL = 5 * 4 * 4  # five groups of four bots, four boards, four rotations


def command(db: Path, concurrency: int) -> list[str]:
    """The `arena run` of this test: deterministic bots only (every one repeatable per decision)."""
    low = f"{PY} {shlex.quote(str(ROOT / 'sample_bots' / 'lowcard.py'))}"
    heur = f"{PY} {shlex.quote(str(ROOT / 'sample_bots' / 'heuristic.py'))}"
    hashbot = f"{PY} {shlex.quote(str(ROOT / 'tests' / 'arena_bots' / 'hashbot.py'))}"
    base = [str(ARENA)] if ARENA.exists() else [sys.executable, "-m", "arena.cli"]
    return [
        *base, "run", "--bot", f"low={low}", "--bot", f"heur={heur}", "--bot", f"h1={hashbot}",
        "--bot", f"h2={hashbot}", "--bot", f"h3={hashbot}", "--boards", "4", "--seed", "11",
        "--concurrency", str(concurrency), "--move-time", "5s", "--db", str(db),
    ]  # fmt: skip


def start(db: Path, concurrency: int) -> subprocess.Popen[str]:
    """Start the run; its progress lines come on stderr (plain: not a terminal)."""
    return subprocess.Popen(
        command(db, concurrency),
        cwd=db.parent,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def wait_for_progress(proc: subprocess.Popen[str], at_least: int) -> tuple[int, list[str]]:
    """Read progress lines until ``at_least`` games are stored; (games stored, lines read)."""
    assert proc.stderr is not None
    lines = []
    for line in proc.stderr:
        lines.append(line)
        match = PROGRESS.match(line)
        if match and int(match[1]) >= at_least:
            return int(match[1]), lines
    raise AssertionError(f"the run ended before {at_least} games: {''.join(lines)}")


def bot_pids(out: Path) -> list[int]:
    """Every bot process the runs started, from the director's notes in the bot logs."""
    pids = []
    for log in (out / "logs").glob("*.log"):
        pids += [int(p) for p in re.findall(r"started process \d+ \(pid (\d+)\)", log.read_text())]
    return pids


def kill_orphans(out: Path) -> None:
    """A director killed with SIGKILL cannot stop its bots: the test does it for it."""
    for pid in bot_pids(out):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def same_game(a: GameRecord, b: GameRecord) -> bool:
    """Equal in everything but timing (the passes, made at once, are recorded as they arrive)."""
    return (
        a.spec == b.spec
        and a.hands == b.hands
        and a.totals == b.totals
        and a.placings == b.placings
        and a.seat_status == b.seat_status
        and a.faults == b.faults
        and sorted((d.hand, d.seat, d.kind, d.cards) for d in a.decisions)
        == sorted((d.hand, d.seat, d.kind, d.cards) for d in b.decisions)
    )


def test_interrupted_and_killed_runs_resume_to_the_results_of_an_unbroken_run(
    tmp_path: Path,
) -> None:
    (tmp_path / "ref").mkdir()
    (tmp_path / "broken").mkdir()
    reference_db = tmp_path / "ref" / "arena.db"
    db = tmp_path / "broken" / "arena.db"
    out = tmp_path / "broken" / "arena-out"
    # The unbroken run plays beside the broken ones (its own folder, database and ports): the
    # two only meet in the comparison at the end.
    reference = start(reference_db, 1)
    try:
        # 1. Ctrl-C: the director stops handing out tables, lets the referee finish or interrupt
        #    the games in play, stops the bots, and says how to resume.
        first = start(db, 2)
        seen, _ = wait_for_progress(first, 10)
        assert seen < TOTAL
        first.send_signal(signal.SIGINT)
        _, rest = first.communicate(timeout=120)
        assert first.returncode == 130, rest
        said = rest.strip().splitlines()[-1]
        match = re.fullmatch(
            r"arena: error: interrupted: (\d+) of 80 games stored in .*arena\.db; "
            r"run the same command again to resume",
            said,
        )
        assert match, said
        after_interrupt = int(match[1])
        assert seen <= after_interrupt < TOTAL
        assert not any(_alive(pid) for pid in bot_pids(out))  # every bot was stopped

        # 2. SIGKILL in the middle of the resumed run: no goodbye at all.
        second = start(db, 2)
        seen, lines = wait_for_progress(second, after_interrupt + 10)
        assert f"{TOTAL - after_interrupt} games to play of {TOTAL}, {after_interrupt} " in lines[0]
        assert seen < TOTAL
        second.kill()
        second.wait(timeout=60)
        kill_orphans(out)
        check = sqlite3.connect(db)
        assert check.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        after_kill = check.execute("SELECT COUNT(*) FROM games").fetchone()[0]
        check.close()
        assert seen <= after_kill < TOTAL

        # 3. The same command again, to the end.
        third = start(db, 2)
        _, rest = third.communicate(timeout=240)
        assert third.returncode == 0, rest
        assert f"{TOTAL - after_kill} games to play of {TOTAL}, {after_kill} already stored" in rest
        _, said = reference.communicate(timeout=240)
        assert reference.returncode == 0, said
    finally:
        for proc in ("reference", "first", "second", "third"):
            running = locals().get(proc)
            if isinstance(running, subprocess.Popen) and running.poll() is None:
                running.kill()
                running.wait()
        kill_orphans(out)
        kill_orphans(reference_db.parent / "arena-out")

    assert load_results(db) == load_results(reference_db)
    with Store.open(reference_db, create=False) as a, Store.open(db, create=False) as b:
        expected = list(a.records())
        got = list(b.records())
    assert [i for i, _ in got] == list(range(TOTAL))  # each game once, none missing
    assert all(same_game(x, y) for (_, x), (_, y) in zip(expected, got, strict=True))
    replays = sorted(p.name for p in (out / "replays").iterdir())
    assert len(replays) == TOTAL and not [p for p in replays if p.endswith(".tmp")]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
