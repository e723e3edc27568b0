"""Audit of the rules options (README "Rules options") as a user gives them to `arena run`: real
processes, real SQLite files. A rules value the game cannot be played under is one line on
stderr that says what is wrong and how to fix it, exit code 2, and no database.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from test_arena_interrupt import BASE, TIMEOUT_S
from test_audit_accounts import serve_with_config

from arena.errors import RulesError
from arena.rules import Rules

ROOT = Path(__file__).resolve().parent.parent
LOW = f"{shlex.quote(sys.executable)} {shlex.quote(str(ROOT / 'sample_bots' / 'lowcard.py'))}"
ALL_CLUBS = "2C,3C,4C,5C,6C,7C,8C,9C,TC,JC,QC,KC,AC"


def _arena_run(work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`arena run` of four lowcard bots in ``work``, with ``args`` added."""
    bots = [arg for name in "abcd" for arg in ("--bot", f"{name}={LOW}")]
    return subprocess.run(
        [*BASE, "run", *bots, "--boards", "1", "--db", "v.db", "--concurrency", "1", *args],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def _one_line_refusal(done: subprocess.CompletedProcess[str], work: Path) -> str:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("arena: error: "), done.stderr
    assert list(work.iterdir()) == []  # no database, no output folder
    return lines[0]


@pytest.mark.parametrize(
    "args",
    [
        # Before: accepted; the game's totals fell by up to 2,000,000 a hand, and after about
        # 4900 hands the referee failed the table with "ValueError: Value out of range" (int32
        # game_totals) and a traceback, exit 1.
        [
            "--players",
            "6",
            "--bot",
            f"e={LOW}",
            "--bot",
            f"f={LOW}",
            "--rule",
            "queen_penalty=0",
            "--rule",
            "jack_of_diamonds=-1000000",
            "--rule",
            "no_tricks_bonus=-1000000",
            "--game-to",
            "1000000",
        ],
        ["--rule", "moon=subtract", "--rule", "moon_points=1000000", "--rule", "target=5000"],
    ],
    ids=["jack-and-no-tricks", "moon-subtract"],
)
def test_totals_the_protocol_cannot_carry_are_refused_at_once(
    tmp_path: Path, args: list[str]
) -> None:
    line = _one_line_refusal(_arena_run(tmp_path, *args), tmp_path)
    assert "rules.target:" in line and "-2147483648" in line, line
    assert "give a target of at most" in line, line  # and how to fix it


def test_the_bound_on_totals_leaves_every_usual_game_alone() -> None:
    # The largest target that is safe is accepted; one more is refused, naming the field.
    assert Rules(jack_of_diamonds=-1_000_000, target=2147).target == 2147
    with pytest.raises(RulesError, match=r"^rules\.target: .*at most 2147"):
        Rules(jack_of_diamonds=-1_000_000, target=2148)
    # Positive points never overflow: a total at the target ends the game.
    Rules(queen_penalty=1_000_000, jack_of_diamonds=1_000_000, target=1_000_000, sun=True)
    Rules(players=6, jack_of_diamonds=-10, no_tricks_bonus=-5, target=1_000_000)


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        # Before: each said "must be within -1000000 to 1000000", a range these cannot take.
        ("target", 2**31 - 1, "must be at most 1000000, got 2147483647"),
        ("queen_penalty", 1_000_001, "must be at most 1000000, got 1000001"),
        ("moon_points", 1_000_001, "must be at most 1000000, got 1000001"),
        # These two may be negative: both ends are said.
        ("jack_of_diamonds", -1_000_001, "must be within -1000000 to 1000000, got -1000001"),
        ("no_tricks_bonus", 1_000_001, "must be within -1000000 to 1000000, got 1000001"),
    ],
)
def test_a_point_value_past_the_bound_says_the_range_its_field_takes(
    field: str, value: int, said: str
) -> None:
    with pytest.raises(RulesError) as refused:
        Rules.from_dict({field: value})
    assert str(refused.value) == f"rules.{field}: {said}"
    Rules.from_dict({field: 1_000_000})  # the bound itself is taken


@pytest.mark.parametrize(
    ("args", "fix"),
    [
        # Before: "rules.first_lead: the club lead needs clubs in play", and no way out said.
        (
            ["--players", "3", "--rule", f"removed_cards={ALL_CLUBS}"],
            "give first_lead=left-of-dealer",
        ),
        # Before: "leaves 51 cards, which do not divide among 4 players", and no more.
        (["--rule", "removed_cards=QS"], "remove 3 more or 1 fewer"),
        # Before: "... who scores 13 (queen_penalty)".
        (
            ["--players", "3", "--rule", "removed_cards=QS"],
            "keep her, or give queen_penalty=0",
        ),
        (
            ["--players", "3", "--rules", "omnibus", "--rule", "removed_cards=JD"],
            "keep him, or give jack_of_diamonds=0",
        ),
    ],
    ids=["no-clubs", "indivisible", "queen-removed", "jack-removed"],
)
def test_a_refused_deck_says_how_to_fix_it(tmp_path: Path, args: list[str], fix: str) -> None:
    line = _one_line_refusal(_arena_run(tmp_path, *args), tmp_path)
    assert line.endswith(fix), line


def test_the_server_names_game_to_when_its_target_overflows_the_totals(tmp_path: Path) -> None:
    # The same refusal from `arena serve`'s config: it came without the "server config:
    # game_to = ..." that every other line of a bad config starts with.
    done = serve_with_config(tmp_path, "game_to = 1000000\n[rule]\njack_of_diamonds = -1000000\n")
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("arena: error: server config: game_to = 1000000: rules.target: ")
    assert "give a target of at most 2147" in lines[0], lines[0]
    assert not (tmp_path / "comp.db").exists()
