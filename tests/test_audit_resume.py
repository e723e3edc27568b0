"""A full disk under a run: one line saying what was kept and how to carry on, not a traceback
(nor "not a Hearts Arena database", nor "cannot write the output"); the same command resumes.

The disk is filled with RLIMIT_FSIZE (per process, no mount needed): a write past it fails with
EFBIG, which SQLite reports as an I/O error, as a full disk gives ENOSPC and SQLITE_FULL.
"""

from __future__ import annotations

import io
import os
import re
import resource
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from test_arena_interrupt import alive
from test_arena_resume import ROOT, TOTAL, bot_pids, command, kill_orphans

from arena.config import build_config
from arena.director.progress import PlainReporter
from arena.director.sprt import SprtOutcome, board_score, run_sprt
from arena.ratings.sprt import Sprt
from arena.store import Store

TIMEOUT_S = 240


def limited(size: int) -> None:
    """In the child: files may grow to ``size`` bytes at most (Python ignores SIGXFSZ)."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, resource.RLIM_INFINITY))


def run(db: Path, size: int | None) -> subprocess.CompletedProcess[str]:
    """The resume test's `arena run` (deterministic bots), with its files limited to ``size``."""
    return subprocess.run(
        command(db, 2),
        cwd=db.parent,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        preexec_fn=None if size is None else (lambda: limited(size)),
    )


def sprt_command(path: Path) -> str:
    """A Python bot's command line."""
    return shlex.join([sys.executable, str(path)])


def test_a_full_disk_stops_the_run_in_one_line_and_the_same_command_resumes(
    tmp_path: Path,
) -> None:
    db = tmp_path / "arena.db"
    out = tmp_path / "arena-out"
    try:
        # Room for the schema and a few games: the write-ahead log outgrows it.
        full = run(db, 400_000)
        assert "Traceback" not in full.stderr, full.stderr
        said = full.stderr.strip().splitlines()[-1]
        match = re.fullmatch(
            r"arena: error: cannot store game b\d+-g\d+-r\d+: disk I/O error; (\d+) games of "
            r"the run are stored in .*arena\.db: make room \(or fix the disk\) and run the same "
            r"command again to resume",
            said,
        )
        assert match, said
        assert full.returncode == 1
        # The bots were stopped as on Ctrl-C, and the lock let go.
        assert not any(alive(pid) for pid in bot_pids(out))
        assert not db.with_name("arena.db.lock").exists()
        with sqlite3.connect(db) as check:
            assert check.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            stored = check.execute("SELECT COUNT(*) FROM games").fetchone()[0]
        assert stored == int(match[1]) < TOTAL

        resumed = run(db, None)
        assert resumed.returncode == 0, resumed.stderr
        assert f"{TOTAL - stored} games to play of {TOTAL}, {stored} already" in resumed.stderr
    finally:
        kill_orphans(out)
    with Store.open(db, create=False) as store:
        assert [game for game, _ in store.records()] == list(range(TOTAL))  # each once
    assert len(list((out / "replays").glob("*.jsonl"))) == TOTAL


@pytest.mark.parametrize(
    ("size", "said"),
    [
        # Before: "cannot write the output: File too large", as if stdout were full.
        (0, r"--db .*arena\.db: cannot write its lock file .*arena\.db\.lock \(File too large\)"),
        # Before: "not a Hearts Arena database (disk I/O error)", of a file the run was making.
        (8192, r".*arena\.db: cannot write the database \(disk I/O error\)"),
    ],
)
def test_no_room_for_a_new_database_says_so_and_leaves_nothing(
    tmp_path: Path, size: int, said: str
) -> None:
    db = tmp_path / "arena.db"
    try:
        done = run(db, size)
    finally:
        kill_orphans(tmp_path / "arena-out")
    assert done.returncode == 2
    line = done.stderr.strip().splitlines()[-1]
    assert re.fullmatch(
        f"arena: error: {said}; make room \\(or fix the disk\\) and try again", line
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no database, lock or --out left


def test_a_resumed_sprt_says_where_the_stored_boards_leave_it_once(tmp_path: Path) -> None:
    # Before: a resumed test printed a status line for every stored board again (thousands of
    # lines, before its header, for a long test), as if it were playing them now.
    config = build_config(
        bots=[
            f"low={sprt_command(ROOT / 'sample_bots' / 'lowcard.py')}",
            f"heur={sprt_command(ROOT / 'sample_bots' / 'heuristic.py')}",
            f"h1={sprt_command(ROOT / 'tests' / 'arena_bots' / 'hashbot.py')}",
            f"h2={sprt_command(ROOT / 'tests' / 'arena_bots' / 'hashbot.py')}",
        ],
        concurrency=2,
        move_time="5s",
        db=tmp_path / "s.db",
    )

    def play(max_boards: int) -> tuple[SprtOutcome, list[str]]:
        statuses: list[str] = []
        test = Sprt(elo0=0.0, elo1=5.0)  # far from deciding in a few boards
        reporter = PlainReporter(io.StringIO(), "arena sprt")
        outcome = run_sprt(
            config,
            test,
            max_boards=max_boards,
            reporter=reporter,
            on_board=lambda t: statuses.append(t.status),
        )
        return outcome, statuses

    first, said = play(2)
    assert first.capped and said[-1] == first.status and len(said) == 2
    again, said = play(2)  # nothing left to play: the stored boards' figures, once
    assert again.run is None and said == [first.status]
    resumed, said = play(4)  # the stored two boards in one line, then each board played
    assert said[0] == first.status and len(said) == 3 and said[-1] == resumed.status

    with Store.open(config.db, create=False) as store:
        records = dict(store.records())
    unbroken = Sprt(elo0=0.0, elo1=5.0)
    for board in range(4):
        unbroken.update(board_score([records[board * 4 + r] for r in range(4)], "low", "heur"))
    assert resumed.status == unbroken.status
