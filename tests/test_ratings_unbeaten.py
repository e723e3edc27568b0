"""A bot that won (or lost) every pair, in a real database, as every output of `arena ratings`
shows it: a one-sided interval said in words, never inf, nan or a traceback; and the table's
columns, each with one header and explained."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_store import play_record

from arena.config import build_config
from arena.director.schedule import schedule
from arena.store import Store
from arena.table import Termination

ARENA = Path(sys.executable).with_name("arena")
BASE = [str(ARENA)] if ARENA.exists() else [sys.executable, "-m", "arena.cli"]
TIMEOUT_S = 240
BOTS = ("a", "b", "c", "d")


def stored(db: Path, *, unbeaten: str | None = None, forfeits: str | None = None) -> Path:
    """A database of engine-played games (4 boards in every rotation) in which ``unbeaten``
    takes no point in any game (the others one more than they took), or ``forfeits`` forfeits
    every game: that bot wins, or loses, every pair it plays."""
    config = build_config(bots=[f"{b}=true" for b in BOTS], boards=4, db=db)
    with Store.open(config.db) as store:
        tables = schedule(config)
        store.claim(config.run_id, "batch", config.identity(), len(tables))
        for table in tables:
            record = play_record(table.spec)
            seats = table.spec.seats
            totals = [t + 1 for t in record.totals]
            if unbeaten is not None:
                totals[seats.index(unbeaten)] = 0
            status = [Termination.NORMAL] * len(seats)
            if forfeits is not None:
                status[seats.index(forfeits)] = Termination.TIMEOUT
            # Placings as the referee gives them: a forfeit last, then fewer points better.
            key = [(s is not Termination.NORMAL, t) for s, t in zip(status, totals, strict=True)]
            placings = tuple(1 + sum(k < mine for k in key) for mine in key)
            record = dataclasses.replace(
                record, totals=tuple(totals), seat_status=tuple(status), placings=placings
            )
            store.save_game(config.run_id, table.index, record)
    return config.db


def ratings(db: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """`arena ratings --db DB ARGS` in a process of its own: its standard output."""
    done = subprocess.run(
        [*BASE, "ratings", "--db", str(db), *args],
        cwd=db.parent,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
        env={**os.environ, **(env or {})},
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout


def table_rows(text: str) -> tuple[list[str], dict[str, dict[str, str]], str]:
    """The rating table in ``text``: its header, each bot's cells by column, and its caption
    (wrapped lines joined, words single-spaced)."""
    lines = text.splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("┃ # ┃"))
    header = [c.strip() for c in lines[top].strip("┃").split("┃")]
    rows: dict[str, dict[str, str]] = {}
    end = top + 2
    while lines[end].startswith("│"):
        cells = [c.strip() for c in lines[end].strip("│").split("│")]
        assert len(cells) == len(header), (header, cells)  # one header per column
        rows[cells[1]] = dict(zip(header, cells, strict=True))
        end += 1
    caption = " ".join(" ".join(lines[end + 1 :]).split())
    return header, rows, caption


def svg_words(path: Path) -> str:
    return " ".join(path.read_text().split())


@pytest.fixture(scope="module")
def unbeaten(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return stored(tmp_path_factory.mktemp("unbeaten") / "u.db", unbeaten="a")


def test_the_table_says_an_unbeaten_bot_is_bounded_below_only(unbeaten: Path) -> None:
    text = ratings(unbeaten)
    assert not re.search(r"\b(nan|inf)\b", text, re.IGNORECASE), text
    _, rows, caption = table_rows(text)
    assert rows["a"]["score"] == "100%" and rows["a"]["+"] == "∞"
    assert re.fullmatch(r"\[\+\d+\.\d, \+∞\)", rows["a"]["95% interval"])
    assert (
        "∞: a won every pair, so the results bound its rating from below only; with the mean at "
        "0 the other ratings move with it, so they are open on the other side (--anchor NAME "
        "gives two-sided intervals between the others)" in caption
    )
    for other in ("b", "c", "d"):  # the mean moves with a's unbounded rating
        assert re.fullmatch(r"\(-∞, [+-]\d+\.\d\]", rows[other]["95% interval"])
    _, anchored, caption = table_rows(ratings(unbeaten, "--anchor", "b"))
    assert "∞: a won every pair, so the results bound its rating from below only" in caption
    assert "mean at 0" not in caption
    for other in ("c", "d"):  # differences from b: bounded both ways
        assert re.fullmatch(r"\[[+-]\d+\.\d, [+-]\d+\.\d\]", anchored[other]["95% interval"])


def test_json_and_csv_leave_the_open_end_empty(unbeaten: Path) -> None:
    (fitted,) = json.loads(ratings(unbeaten, "--format", "json"))["fits"]  # strict JSON: no NaN
    rows = {r["name"]: r for r in fitted["ratings"]}
    assert rows["a"]["high"] is None and rows["a"]["se"] is not None
    assert isinstance(rows["a"]["low"], float) and math.isfinite(rows["a"]["elo"])
    assert all(rows[b]["low"] is None and rows[b]["high"] is not None for b in ("b", "c", "d"))
    table = {
        r["name"]: r for r in csv.DictReader(io.StringIO(ratings(unbeaten, "--format", "csv")))
    }
    assert table["a"]["high"] == "" and float(table["a"]["low"]) == pytest.approx(rows["a"]["low"])


def test_the_plots_say_at_least_and_why(unbeaten: Path, tmp_path: Path) -> None:
    # Text kept as text in the SVG (not drawn as paths), to read the labels.
    (tmp_path / "matplotlibrc").write_text("svg.fonttype: none\n")
    plot = tmp_path / "u.svg"
    ratings(unbeaten, "--plot", str(plot), env={"MATPLOTLIBRC": str(tmp_path)})
    words = svg_words(plot)
    assert re.search(r"\+\d+, at least \+\d+ \(won every pair\)", words), words
    assert re.search(r"-\d+, at most [+-]\d+<", words)
    assert "∞/" not in words and "/+∞" not in words  # an open side is no distance
    history = svg_words(tmp_path / "u-history.svg")
    assert "a band to the edge is open (a bot won or lost every pair)" in history


def test_a_bot_that_forfeits_every_game_is_bounded_above_only(tmp_path: Path) -> None:
    db = stored(tmp_path / "w.db", forfeits="d")
    _, rows, caption = table_rows(ratings(db, "--anchor", "a"))
    assert rows["d"]["score"] == "0%" and rows["d"]["−"] == "∞"
    assert re.fullmatch(r"\(-∞, -\d+\.\d\]", rows["d"]["95% interval"])
    assert caption.endswith("∞: d lost every pair, so the results bound its rating from above only")
    (tmp_path / "matplotlibrc").write_text("svg.fonttype: none\n")
    ratings(db, "--plot", str(tmp_path / "w.svg"), env={"MATPLOTLIBRC": str(tmp_path)})
    assert re.search(r"-\d+, at most -\d+ \(lost every pair\)", svg_words(tmp_path / "w.svg"))


def test_every_column_has_one_header_and_the_caption_explains_it(unbeaten: Path) -> None:
    """The points' interval was a column of its own headed "±", which read as the Elo's (the
    Elo's reach is "−" and "+"): it is now in the points' cell, as "mean ± half-width"."""
    header, rows, caption = table_rows(ratings(unbeaten))
    assert header == [
        "#", "bot", "Elo", "−", "+", "95% interval", "LOS", "pts/hand", "score", "hands",
        "boards", "moons", "faults",
    ]  # fmt: skip
    assert all(re.fullmatch(r"\d+\.\d\d ± \d+\.\d\d", row["pts/hand"]) for row in rows.values())
    for says in (
        "−/+: from the Elo down and up to the interval's ends",
        "LOS = likelihood of superiority over the next bot",
        "pts/hand: mean points (fewer is better) ± the half-width of their 95% interval",
        "score: share of head-to-head pairs won, a tie as half",
    ):
        assert says in caption, caption
