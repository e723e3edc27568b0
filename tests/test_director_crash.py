"""A bot process that dies mid-game loses that game at once, and its restart plays on.

Real referee, real processes. The grace and the move time are ten minutes, so a table that waited
for the dead process (the behaviour before the director told the referee: until the grace or the
move's deadline, whichever came first) would outlast the test's timeout; the record's contents,
not a clock, show that the seat was forfeited at once.
"""

from __future__ import annotations

import io
import shlex
import sqlite3
import sys
from pathlib import Path

import pytest

from arena.config import build_config
from arena.director.progress import PlainReporter
from arena.director.run import run_batch
from arena.store import Store
from arena.table import FaultKind

ROOT = Path(__file__).resolve().parent.parent
LONG = "10m"
"""The grace and the move time: far past the suite's timeout (the honest bots answer at once)."""


def command(path: Path) -> str:
    """The command line of a Python bot."""
    return shlex.join([sys.executable, str(path)])


@pytest.mark.parametrize(
    ("by_signal", "how", "said"),
    [
        ("0", "code 3", "exit code 3"),
        ("1", "signal SIGKILL", "signal SIGKILL"),
    ],
)
def test_a_crash_forfeits_the_seat_at_once_and_the_restart_plays_the_next_games(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, by_signal: str, how: str, said: str
) -> None:
    monkeypatch.setenv("ARENA_TEST_CRASH_MARKER", str(tmp_path / "crashed-once"))
    monkeypatch.setenv("ARENA_TEST_CRASH_AT", "3")
    monkeypatch.setenv("ARENA_TEST_CRASH_SIGNAL", by_signal)
    config = build_config(
        bots=[
            f"low={command(ROOT / 'sample_bots' / 'lowcard.py')}",
            f"crash={command(ROOT / 'tests' / 'arena_bots' / 'crashbot.py')}",
            f"heur={command(ROOT / 'sample_bots' / 'heuristic.py')}",
            f"hash={command(ROOT / 'tests' / 'arena_bots' / 'hashbot.py')}",
        ],
        boards=1,
        concurrency=1,
        move_time=LONG,
        grace=LONG,
        db=tmp_path / "c.db",
    )
    out = io.StringIO()
    outcome = run_batch(config, PlainReporter(out))
    assert not outcome.interrupted
    assert (outcome.stored, outcome.played) == (4, 4)
    [gone] = outcome.exits
    assert gone.bot == "crash" and gone.how == how
    progress = out.getvalue()
    assert f"bot crash (process 0) exited with {how}" in progress
    assert f"forfeited at once, its process having exited with {how}" in progress

    log = tmp_path / "c-out" / "logs" / "crash.log"
    db = sqlite3.connect(config.db)
    try:
        seats = db.execute(
            "SELECT game, seat, status, crashed FROM seats WHERE bot = 'crash' ORDER BY game"
        ).fetchall()
        [(game, seat, status, _)] = [row for row in seats if row[3]]
        # The dead process's game is lost by forfeit; its restart played the others unhurt.
        assert status == "disconnect"
        assert [row[2] for row in seats if row[0] != game] == ["normal"] * 3
        termination, reason = db.execute(
            "SELECT termination, reason FROM games WHERE game = ?", (game,)
        ).fetchone()
        assert termination == "normal"  # the game itself was played to its end
        assert f"seat {seat} (crash) forfeited: its process exited with {how} (see {log})" in reason
        assert f"bot crash in seat {seat} crashed ({said})" in reason
        assert "grace" not in reason
        [(exit_code,)] = db.execute("SELECT exit_code FROM crashes").fetchall()
        assert exit_code == gone.exit_code
        # It died with its request open: the fault says what the fallback played in its place
        # (the record had nothing there, and that move no fault, where the grace's end had both).
        [(kind, substitute)] = db.execute(
            "SELECT kind, substitute FROM faults WHERE game = ? AND seat = ?", (game, seat)
        ).fetchall()
        assert kind == "disconnect" and len(substitute.split()) == 1, substitute
    finally:
        db.close()
    with Store.open(config.db, create=False) as store:
        record = dict(store.records(config.run_id))[game]
        faulted = [d for d in record.decisions if d.seat == seat and d.fault is not None]
        assert [(d.fault, d.cards, d.fallback) for d in faulted] == [
            (FaultKind.DISCONNECT, (substitute,), True)
        ]
        faults = {row.bot: row for row in store.bot_faults(config.run_id)}
    assert faults["crash"].exits == 1 and faults["crash"].crashed_games == 1
    assert faults["crash"].forfeits == 1
    assert "exited with" in log.read_text()
