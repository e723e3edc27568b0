"""Audit of `arena run`, `arena ratings`, `arena sprt`, `arena replay` and `arena demo` against
what README.md promises, run as a user would: real processes, real SQLite files.

Signals land at known points, not after guessed delays: as the command first looks for a module
(a ``sitecustomize`` hook on its path), where a user's Ctrl-C or SIGTERM would land while it loads.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from test_arena_interrupt import BASE, TIMEOUT_S, signalled

ROOT = Path(__file__).resolve().parent.parent
PY = shlex.quote(sys.executable)
LOW = f"{PY} {shlex.quote(str(ROOT / 'sample_bots' / 'lowcard.py'))}"


@pytest.mark.parametrize(
    ("sig", "at", "args"),
    [
        # `arena ratings` loads numpy, scipy and matplotlib in the command (a second or more):
        # a Ctrl-C there ended in exit 130 without a word (typer's), a SIGTERM in 143.
        ("SIGINT", "arena.ratings.report", ["ratings", "--db", "r.db"]),
        ("SIGTERM", "arena.ratings.report", ["ratings", "--db", "r.db"]),
        ("SIGTERM", "matplotlib", ["ratings", "--db", "r.db", "--plot", "elo.png"]),
        ("SIGINT", "matplotlib.figure:__set_name__", ["ratings", "--plot", "elo.png"]),
        ("SIGTERM", "arena.director.replay", ["replay", "0", "--db", "r.db"]),
        # `arena sprt` loads the director (trio, the referee) and the test before its bots start.
        ("SIGINT", "arena.director.sprt", ["sprt", "--bot", f"a={LOW}", "--bot", f"b={LOW}"]),
        ("SIGTERM", "arena.director.sprt", ["sprt", "--bot", f"a={LOW}", "--bot", f"b={LOW}"]),
    ],
    ids=[
        "ratings-int",
        "ratings-term",
        "ratings-plot-term",
        "ratings-plot-set-name",
        "replay-term",
        "sprt-int",
        "sprt-term",
    ],
)
def test_a_signal_while_a_command_loads_is_one_line_and_exit_130(
    tmp_path: Path, sig: str, at: str, args: list[str]
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    done = signalled(work, sig, at, *args, hook=tmp_path / "hook")
    assert done.returncode == 130, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "interrupted" in lines[0], done.stderr
    assert list(work.iterdir()) == []  # the sequential test made no database


def test_demo_help_says_the_seats_the_demo_takes(tmp_path: Path) -> None:
    # It said "Seats per table, 3 to 6", the help of `arena run`, where the demo refuses 5 and 6
    # (README: `--players` (3 or 4: four bots)).
    shown = subprocess.run(
        [*BASE, "demo", "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert shown.returncode == 0, shown.stderr
    line = next(w for w in shown.stdout.splitlines() if "--players" in w)
    assert "3 or 4" in line and "3 to 6" not in line
    refused = subprocess.run(
        [*BASE, "demo", "--players", "5", "--db", "d.db"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert refused.returncode == 2
    assert "3 or 4 seats" in refused.stderr
    assert list(tmp_path.iterdir()) == []
