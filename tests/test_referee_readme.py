"""The README's example of hosting a table from Python, run as written so it cannot rot.

The example is read from the README section "Hosting tables from Python" itself and run as a
script from the repository's root, with real sample bot processes on loopback.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

from arena.table import Termination

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
SECTION = "## Hosting tables from Python"
RUN_S = 300


def readme_example() -> str:
    """The first ```python block of the README's referee section, as written there."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index(SECTION) :]
    start = section.index("```python\n") + len("```python\n")
    return section[start : section.index("```", start)]


def test_the_readme_example_plays_a_hand_and_prints_its_record() -> None:
    done = subprocess.run(
        [sys.executable, "-c", readme_example()],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=RUN_S,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 4, done.stdout
    termination, tuples = lines[0].split(" ", 1)
    assert termination == "normal"
    totals, placings = tuples.split(") (")
    points = ast.literal_eval(totals + ")")
    assert len(points) == 4 and sum(points) in (26, 78)  # 26 points a hand, or a moon shot
    places = ast.literal_eval("(" + placings)
    assert len(places) == 4 and min(places) == 1 and max(places) <= 4
    decisions, _, faults = lines[1].partition(" decisions, ")
    # One hand: 4 passes and 52 plays, forced ones included; no bot misbehaved.
    assert int(decisions) == 56 and faults == "0 faults"
    seat, kind = lines[2].split()[:2]
    assert kind == "pass" and seat in "0123"
    assert lines[3].startswith("(") and lines[3].count("'") == 26  # 13 quoted cards


def test_the_readme_names_the_game_and_seat_endings_the_record_can_hold() -> None:
    # A forfeit never ends the game (the fallback plays the seat on): the game's termination is
    # normal, interrupted or crash, and the forfeit kinds are the seats' statuses.
    text = README.read_text(encoding="utf-8")
    section = text[text.index(SECTION) :]
    item = section[section.index("- The `GameRecord`:") :]
    item = item[: item.index("\n- ")]
    game, _, rest = item.partition("`seat_status`")
    game_words = set(re.findall(r"`([a-z]+)`", game[game.index("`termination`") :]))
    seat_words = set(re.findall(r"`([a-z]+)`", rest[: rest.index(")")]))
    assert game_words - {"termination", "reason", "totals", "placings"} == {
        t.value for t in Termination if not t.is_forfeit
    }
    assert seat_words == {t.value for t in Termination if t.is_forfeit} | {"normal"}
