"""The end of a run: the rating table and crosstable, then the faults per bot.

The ratings come from :func:`arena.ratings.report.render_ratings` (one Bradley-Terry fit per table
size with board-clustered intervals). When a fit is impossible (too few games, bots that never
met), the table falls back to mean points with a naive 95% interval, and says so.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from arena.director.bots import log_errors, log_path
from arena.ratings import RatingsError, TableResult
from arena.ratings.report import print_uncut, render_ratings
from arena.store import BotFaults, Store, load_results

__all__ = ["faults_table", "log_error_notes", "mean_interval", "points_table", "print_summary"]

Z_95 = 1.96


def mean_interval(values: Sequence[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95% normal interval (infinite for one value)."""
    n = len(values)
    if n == 0:
        return math.nan, math.nan
    mean = sum(values) / n
    if n == 1:
        return mean, math.inf
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, Z_95 * math.sqrt(var / n)


def points_table(results: Sequence[TableResult]) -> Table:
    """Mean points per result (a hand, or a game) per bot, with a naive 95% interval."""
    points: dict[str, list[float]] = defaultdict(list)
    for r in results:
        for bot, p in zip(r.players, r.points, strict=True):
            points[bot].append(p)
    full_games = any(r.placings is not None for r in results)
    unit = "game" if full_games else "hand"
    table = Table(title=f"Mean points per {unit} (lower is better; naive 95% interval)")
    table.add_column("bot")
    table.add_column(f"{unit}s", justify="right")
    table.add_column(f"pts/{unit}", justify="right")
    table.add_column("95%", justify="right")
    rows = sorted((mean_interval(v), bot, len(v)) for bot, v in points.items())
    for (mean, half), bot, n in rows:
        table.add_row(bot, str(n), f"{mean:.2f}", f"±{half:.2f}")
    return table


def faults_table(rows: Sequence[BotFaults]) -> Table:
    """Faults, forfeits and process crashes per bot."""
    table = Table(title="Faults per bot")
    table.add_column("bot")
    table.add_column("games", justify="right")
    table.add_column("faults", justify="right")
    table.add_column("by kind")
    table.add_column("forfeits", justify="right")
    table.add_column("crashes", justify="right")
    for row in rows:
        kinds = ", ".join(f"{kind} {n}" for kind, n in row.faults) or "-"
        table.add_row(
            row.bot,
            str(row.games),
            str(row.total_faults),
            kinds,
            str(row.forfeits),
            str(row.exits),
        )
    return table


def log_error_notes(out: Path, bots: Sequence[str]) -> list[str]:
    """One line per bot whose log has error lines in the latest run, pointing at the log.

    The faults table cannot show these: when a Python bot's code raises, the SDK answers for it,
    legally, and the referee sees nothing wrong.
    """
    notes = []
    for bot in bots:
        path = log_path(out, bot)
        found = log_errors(path)
        if not found.errors:
            continue
        plural = "s" if found.errors != 1 else ""
        why = (
            f" (the SDK answered {found.answered} decision{'s' if found.answered != 1 else ''} "
            "for its code)"
            if found.answered
            else ""
        )
        notes.append(f"bot {bot!r}: its log has {found.errors} error{plural}{why}: see {path}")
    return notes


def print_faults(
    console: Console, db: Path, run_id: str, out: Path | None, *, only_if_any: bool = False
) -> None:
    """Print the faults table of a stored run (``only_if_any``: only if a bot faulted, forfeited
    or crashed) and, given the run's ``out`` folder, the bots whose logs hold errors."""
    with Store.open(db, create=False) as store:
        rows = store.bot_faults(run_id)
    if not only_if_any or any(row.total_faults or row.forfeits or row.exits for row in rows):
        # Uncut, as the rating table: fitted to an 80-column terminal, a 64-character name was
        # cut to 27 ("Lxxxx…"), and two names alike that far were one.
        print_uncut(console, faults_table(rows))
    if out is not None:
        for note in log_error_notes(out, [row.bot for row in rows]):
            console.print(note, markup=False, highlight=False, soft_wrap=True)  # grep-able


def print_summary(console: Console, db: Path, run_id: str, out: Path | None = None) -> None:
    """Print the ratings, the crosstable and the faults of a stored run (and, given the run's
    ``out`` folder, the bots whose logs hold errors)."""
    results = load_results(db, run_id)
    if not results:
        console.print("no game stored yet")
        return
    try:
        render_ratings(results, with_crosstable=True, console=console)
    except RatingsError as e:
        console.print(f"no Elo fit: {e}", markup=False)
        print_uncut(console, points_table(results))
    print_faults(console, db, run_id, out)
