"""A power user's batches and tests, from an audit: a schedule too large to make is refused before
anything starts, an SPRT whose hypotheses cannot be told apart is refused, and a run refused for
another's rules says the default as the default."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_arena_cli import LOW, arena, arenas

from arena.ratings.sprt import Sprt, SprtError


def test_a_schedule_past_a_million_tables_is_one_line_and_nothing_is_made(tmp_path: Path) -> None:
    # 8 bots with --boards 100000 (28 million tables) built the schedule for minutes, taking
    # gigabytes, with nothing printed; a machine's memory would have run out first.
    eight = [flag for i in range(8) for flag in ("--bot", f"b{i}={LOW}")]
    six = [flag for i in range(6) for flag in ("--bot", f"b{i}={LOW}")]
    many, players, gauntlet, fits = arenas(
        tmp_path,
        [
            ["run", *eight, "--boards", "100000"],
            ["run", *six, "--players", "3", "--boards", "100000"],
            ["run", *eight, "--format", "gauntlet", "--candidate", "b0", "--boards", "100000"],
            ["run", *eight, "--boards", "3571", "--port", "99999"],
        ],
    )
    assert (many.returncode, many.stdout) == (2, ""), many.stderr
    assert many.stderr == (
        "arena: error: --boards 100000: 28,000,000 tables (70 groups of 4 bots x 100,000 boards "
        "x 4 rotations); a run plays at most 1,000,000: give --boards 3571 or fewer, or fewer "
        "bots\n"
    )
    assert players.stderr.startswith("arena: error: --boards 100000: 6,000,000 tables (20 groups")
    assert gauntlet.stderr.startswith("arena: error: --boards 100000: 14,000,000 tables (35 groups")
    # 3571 boards of 70 groups is 999,880 tables: taken (refused for its port instead).
    assert fits.stderr.startswith("arena: error: --port 99999"), fits.stderr
    assert list(tmp_path.iterdir()) == []


def test_an_sprt_whose_hypotheses_score_alike_is_refused(tmp_path: Path) -> None:
    # elo1 = elo0 + 1e-300 passed "elo0 below elo1": the expected scores were equal, the LLR 0
    # after any number of boards, and the test could never decide.
    with pytest.raises(SprtError, match=r"^elo0 \(0\) and elo1 \(1e-300\) are too close: "):
        Sprt(elo0=0, elo1=1e-300)
    Sprt(elo0=0, elo1=1e-9)  # apart in their scores: a test (a slow one)
    done = arena(
        "sprt", "--bot", f"a={LOW}", "--bot", f"b={LOW}", "--elo0", "0", "--elo1", "1e-300",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("arena: error: elo0 (0.0) and elo1 (1e-300) are too close")
    assert list(tmp_path.iterdir()) == []


def test_a_run_refused_for_another_runs_rules_names_the_default_as_the_default(
    tmp_path: Path,
) -> None:
    # It said "--rule pass_cycle=hold,hold, not pass_cycle=none": a word nobody typed.
    four = [flag for i in range(4) for flag in ("--bot", f"b{i}={LOW}")]
    held = arena("run", *four, "--boards", "1", "--rule", "pass_cycle=hold,hold", cwd=tmp_path)
    assert held.returncode == 0, held.stderr
    plain = arena("run", *four, "--boards", "1", cwd=tmp_path)
    assert plain.returncode == 2
    assert "(--rule pass_cycle=hold,hold, not the default pass_cycle)" in plain.stderr
    assert "none" not in plain.stderr


def test_sprt_figures_are_said_with_the_digits_that_tell_them_apart(tmp_path: Path) -> None:
    # Six digits said "--elo1 2000: give ... from -2000 to 2000" of 2000.001, "--elo0 20 --elo1
    # 20: give --elo0 below --elo1", and hypotheses a hair apart as "[-2000, -2000]".
    over, equal = arenas(
        tmp_path,
        [
            ["sprt", "--bot", f"a={LOW}", "--bot", f"b={LOW}", "--elo1", "2000.001"],
            ["sprt", "--bot", f"a={LOW}", "--bot", f"b={LOW}", "--elo0", "20.0000001",
             "--elo1", "20.00000001"],
        ],
    )  # fmt: skip
    assert over.stderr.startswith("arena: error: --elo1 2000.001: give a finite Elo difference")
    assert equal.stderr.startswith("arena: error: --elo0 20.0000001 --elo1 20.00000001: give")
    close = Sprt(elo0=-2000, elo1=-1999.9999999999998)
    assert "[-2000, -1999.9999999999998]" in close.status
    assert "[0, 20]" in Sprt().status  # six digits where they are enough
