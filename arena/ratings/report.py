"""Reports of a rating fit: rich tables, JSON, CSV and PNG plots.

:func:`render_ratings` is what ``arena ratings`` calls: results in, report out. The other
functions build one piece each, for callers that want only that piece.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import shutil
import textwrap
from collections.abc import Collection, Mapping, Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from arena.director.ending import UNFINISHED
from arena.ratings.elo import (
    DEFAULT_BOOTSTRAP_SAMPLES,
    DEFAULT_CHECKPOINTS,
    DEFAULT_PRIOR_DRAWS,
    BotRating,
    IntervalMethod,
    RatingFit,
    RatingHistory,
    fit_by_table_size,
    rating_history,
)
from arena.ratings.results import TableResult
from arena.ratings.sprt import count_text, elo_interval_text, elo_text

if TYPE_CHECKING:
    # matplotlib is imported where a plot is drawn: loaded for every rating table, it wanted a
    # writable config folder (HOME, or a temporary one) and said so on stderr, or failed.
    from matplotlib.figure import Figure

__all__ = [
    "ReportFormat",
    "crosstable",
    "error_text",
    "history_figure",
    "history_path",
    "interval_text",
    "los_table",
    "missing_program",
    "plot_history",
    "plot_paths",
    "plot_ratings",
    "print_uncut",
    "ratings_figure",
    "ratings_table",
    "render_ratings",
    "result_unit",
    "to_csv",
    "to_json",
]

PLOT_DPI: Final = 150
PLOT_WIDTH_INCHES: Final = 8.0
ROW_HEIGHT_INCHES: Final = 0.38
"""Height per bot in the ratings plot, so that labels never collide."""
MIN_PLOT_HEIGHT_INCHES: Final = 3.0
HISTORY_HEIGHT_INCHES: Final = 5.0
MIN_AXES_INCHES: Final = 4.5
"""Narrowest plotting area: long names (tick labels, the legend) widen the figure past this."""
WIDEN_SLACK_INCHES: Final = 0.02
"""Overflow below this (a pixel or two at the plots' dpi) is not worth another layout."""
HISTORY_TITLE_CHARS: Final = 70
"""Longest line of the history plot's title: about 6.5 inches at its 11-point font, inside the
figure from wherever the axes (narrowed by the legend) centre it."""
UNCUT_WIDTH: Final = 100_000
"""A width no rating table reaches, to measure a table's natural width against."""
MAX_HISTORY_BANDS: Final = 8
"""More bots than this and overlapping interval bands turn the history plot to mud."""
LOS_CERTAIN: Final = 0.999
"""Above this (or below one minus it) a LOS prints as >99.9% (<0.1%): more digits would lie."""
INTERVAL_COLOUR: Final = "#1f4e79"
ANCHOR_COLOUR: Final = "#8c8c8c"


class ReportFormat(StrEnum):
    """How ``arena ratings`` prints its report."""

    TEXT = "text"
    JSON = "json"
    CSV = "csv"


def _size_label(fit: RatingFit) -> str:
    return f"{fit.table_size}-seat tables"


def _percent(p: float | None, *, counted: bool = False) -> str:
    """A share as a percentage; ``counted`` for a share of counted outcomes (a score), whose
    0 and 1 are exact: "0%" and "100%", where a probability near the ends is clipped."""
    if p is None or not math.isfinite(p):
        return "-"
    if counted and p in (0.0, 1.0):
        return f"{100.0 * p:.0f}%"
    if p > LOS_CERTAIN:
        return ">99.9%"
    if p < 1.0 - LOS_CERTAIN:
        return "<0.1%"
    return f"{100.0 * p:.1f}%"


def _method_text(fit: RatingFit | RatingHistory) -> str:
    if fit.method is IntervalMethod.BOOTSTRAP:
        # The seed too: with it the same database gives the same intervals.
        return f"board bootstrap ({fit.bootstrap_samples} samples, seed {fit.seed})"
    return "board-clustered sandwich"


def _method_caption(fit: RatingFit | RatingHistory) -> str:
    if fit.method is IntervalMethod.BOOTSTRAP:
        return f"bootstrap, {fit.bootstrap_samples} samples, seed {fit.seed}"
    return fit.method.value


def _anchor_text(fit: RatingFit) -> str:
    return f"{fit.anchor} = 0" if fit.anchor is not None else "mean = 0"


def _swept(fit: RatingFit) -> tuple[list[str], list[str]]:
    """The bots that won every pair they played, and those that lost every one (ties neither),
    best first."""
    points, pairs = fit.pair_score.sum(axis=1), fit.pair_count.sum(axis=1)
    order = [fit.index(r.name) for r in fit.rows()]
    won = [fit.names[i] for i in order if pairs[i] and points[i] == pairs[i]]
    lost = [fit.names[i] for i in order if pairs[i] and points[i] == 0.0]
    return won, lost


def open_note(fit: RatingFit) -> str:
    """Why some interval is open (``""`` if none is): which bots won or lost every pair, and
    what that does to the others' intervals under the anchor."""
    if fit.reach is None:
        return ""
    won, lost = _swept(fit)
    said = []
    for names, verb, side, other in (
        (won, "won", "below", "above"),
        (lost, "lost", "above", "below"),
    ):
        if fit.anchor in names:
            # The anchor is 0, no interval: what is open is the others' side away from it.
            said.append(
                f"{fit.anchor}, the anchor, {verb} every pair, so the results bound the others' "
                f"ratings from {other} only"
            )
            names = [n for n in names if n != fit.anchor]
        if names:
            said.append(
                f"{', '.join(names)} {verb} every pair, so the results bound "
                f"{'its rating' if len(names) == 1 else 'their ratings'} from {side} only"
            )
    # A group that never conceded a point to the rest, none of its bots unbeaten on its own.
    why = "; ".join(said) or "a group of bots never conceded a point to the rest"
    if fit.anchor is not None:
        return f"∞: {why}"
    return (
        f"∞: {why}; with the mean at 0 the other ratings move with "
        f"{'it' if len(won) + len(lost) == 1 else 'them'}, so they are open on the other side "
        "(--anchor NAME gives two-sided intervals between the others)"
    )


def _shows_open(fit: RatingFit) -> bool:
    """Whether the table shows an open side (∞), for its caption to say why: not where the
    results leave one open but every interval is unknown yet (one board: "-" throughout)."""
    return fit.reach is not None and any(
        math.isinf(r.low) or math.isinf(r.high) for r in fit.rows() if r.name != fit.anchor
    )


def interval_text(row: BotRating, anchor: str | None, digits: int = 1) -> tuple[str, str, str]:
    """The "−", "+" and interval cells of a row: how far the interval reaches below and above
    the Elo (the two differ where the interval is stretched to the fit without the prior, see
    :mod:`arena.ratings.elo`), and the interval itself. "anchor" for the anchor, "-" when
    unknown (fewer than two boards), an open side as ∞ (the results do not bound that side)."""
    if row.name == anchor:
        return "", "", "anchor"
    if math.isnan(row.low) or math.isnan(row.high):
        return "-", "-", "-"
    # From the figures as shown, so that the row adds up: each rounded on its own, the Elo
    # less the "−" missed the interval's shown end by 0.1 in two rows of five.
    elo = round(row.elo, digits)
    minus = f"{elo - round(row.low, digits):.{digits}f}" if math.isfinite(row.low) else "∞"
    plus = f"{round(row.high, digits) - elo:.{digits}f}" if math.isfinite(row.high) else "∞"
    # An infinite bound is not a member of the interval: "(-∞, +12.0]", "[+3.0, +∞)"; written
    # as arena sprt's status line writes its interval.
    return minus, plus, elo_interval_text(row.low, row.high, digits)


def error_text(minus: str, plus: str) -> str:
    """An error for a label: "± 5" when both sides read alike, "−4/+6" when not (one side
    alone would hide the other)."""
    return f"± {plus}" if minus == plus else f"−{minus}/+{plus}"


def result_unit(results: Sequence[TableResult]) -> str:
    """What each result is: "hand" (a table of one hand), "game" (of several hands: to a
    target, or a server's ``hands = N``), or "result" when both are among ``results``."""
    several = {r.placings is not None or r.moons is not None for r in results}
    if several == {True}:
        return "game"
    return "result" if True in several else "hand"


def ratings_table(fit: RatingFit, unit: str | None = None) -> Table:
    """The rating list: rank, bot, Elo, how far its interval reaches down and up, the interval,
    LOS over the next, points per result with their interval, score, results, boards, (games,
    place,) moons, faults; the caption says what each less obvious column is. ``unit`` names a
    result (:func:`result_unit` of the results fitted); without it, a result with no placings
    is taken for a hand."""
    pct = round(100 * fit.confidence)
    with_games = any(b.games for b in fit.bots)
    # A result is a hand, or a whole game (--game-to): the points are per result. Without the
    # results, a game of N hands with no placings (a server's `hands = 3`) read as one hand.
    if unit is None:
        if not with_games:
            unit = "hand"
        elif all(b.games == b.tables for b in fit.bots):
            unit = "game"
        else:
            unit = "result"  # a database holding both
    table = Table(
        title=f"Ratings, {_size_label(fit)}",
        caption=(
            f"{count_text(fit.results, 'result')} on {count_text(fit.boards, 'board')}; "
            f"{_anchor_text(fit)}; "
            f"{pct}% intervals clustered by board ({_method_caption(fit)}); "
            "−/+: from the Elo down and up to the interval's ends; "
            "LOS = likelihood of superiority over the next bot; "
            f"pts/{unit}: mean points (fewer is better) ± the half-width of their {pct}% "
            "interval; score: share of head-to-head pairs won, a tie as half"
            + ("; place: mean place in full games" if with_games else "")
            + (f"; {open_note(fit)}" if _shows_open(fit) else "")
        ),
        header_style="bold",
    )
    table.add_column("#", justify="right")
    table.add_column("bot")
    table.add_column("Elo", justify="right")
    # Both sides, as BayesElo prints them: the interval need not be centred on the Elo.
    table.add_column("−", justify="right")
    table.add_column("+", justify="right")
    table.add_column(f"{pct}% interval", justify="right")
    table.add_column("LOS", justify="right")
    # The points' interval in the same cell: a column of its own headed "±" read as the Elo's.
    table.add_column(f"pts/{unit}", justify="right")
    table.add_column("score", justify="right")
    table.add_column(f"{unit}s", justify="right")
    table.add_column("boards", justify="right")
    if with_games and unit != "game":
        table.add_column("games", justify="right")
    if with_games:
        table.add_column("place", justify="right")
    table.add_column("moons", justify="right")
    table.add_column("faults", justify="right")
    for row in fit.rows():
        s = row.stats
        half = (s.points_high - s.points_low) / 2.0
        cells = [
            str(row.rank),
            row.name,
            elo_text(row.elo),
            *interval_text(row, fit.anchor),
            _percent(row.los_next),
            f"{s.points_mean:.2f} ± {half:.2f}" if math.isfinite(half) else f"{s.points_mean:.2f}",
            _percent(s.score, counted=True),
            str(s.tables),
            str(s.boards),
        ]
        if with_games and unit != "game":
            cells.append(str(s.games))
        if with_games:
            cells.append("-" if s.mean_placing is None else f"{s.mean_placing:.2f}")
        cells += [str(s.moons), str(s.faults)]
        table.add_row(*cells, style="red" if s.faults else None)
    return table


def crosstable(fit: RatingFit) -> Table:
    """Head-to-head score of each row bot against each column bot, with the number of pairs."""
    order = [fit.index(row.name) for row in fit.rows()]
    table = Table(
        title=f"Crosstable, {_size_label(fit)}",
        caption="row bot's head-to-head score against the column bot (pairs)",
        header_style="bold",
    )
    table.add_column("bot")
    for j in order:
        table.add_column(fit.names[j], justify="right")
    for i in order:
        cells = [fit.names[i]]
        for j in order:
            n = fit.pair_count[i, j]
            cells.append(
                "" if i == j or n == 0 else f"{100 * fit.pair_score[i, j] / n:.1f}% ({int(n)})"
            )
        table.add_row(*cells)
    return table


def los_table(fit: RatingFit) -> Table:
    """P(row bot is stronger than column bot) for every two bots."""
    order = [fit.index(row.name) for row in fit.rows()]
    los = fit.los()
    table = Table(
        title=f"Likelihood of superiority, {_size_label(fit)}",
        caption=(
            "P(row bot's rating > column bot's rating), from the covariance clustered by board "
            f"({_method_caption(fit)})"
        ),
        header_style="bold",
    )
    table.add_column("bot")
    for j in order:
        table.add_column(fit.names[j], justify="right")
    for i in order:
        table.add_row(fit.names[i], *("" if i == j else _percent(los[i, j]) for j in order))
    return table


def _as_fits(fits: RatingFit | Mapping[int, RatingFit]) -> list[RatingFit]:
    return [fits] if isinstance(fits, RatingFit) else [fits[k] for k in sorted(fits)]


def to_json(fits: RatingFit | Mapping[int, RatingFit]) -> str:
    """A JSON document: ``{"fits": [fit.to_dict(), ...]}``, one per table size."""
    return json.dumps({"fits": [f.to_dict() for f in _as_fits(fits)]}, indent=2, allow_nan=False)


def to_csv(fits: RatingFit | Mapping[int, RatingFit]) -> str:
    """The rating list as CSV, one row per bot and table size; placings as counts "n1 n2 ...",
    and the interval method (sandwich or bootstrap) in the last column."""
    rows: list[dict[str, Any]] = []
    for f in _as_fits(fits):
        for row in f.rows():
            # The method last: the columns before it are as they were before it was added.
            flat = {"table_size": f.table_size, **row.to_dict(), "method": f.method.value}
            flat["placings"] = " ".join(str(c) for c in flat["placings"])
            rows.append(flat)
    out = io.StringIO()
    if rows:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return out.getvalue()


def plot_ratings(fit: RatingFit, path: str | Path) -> Path:
    """Write a PNG of every bot's Elo with its interval, best at the top."""
    out = Path(path)
    ratings_figure(fit).savefig(out)
    return out


def ratings_figure(fit: RatingFit) -> Figure:
    """The figure :func:`plot_ratings` writes, wide enough for every bot's name and its title."""
    rows = fit.rows()
    n = len(rows)
    height = max(MIN_PLOT_HEIGHT_INCHES, 1.4 + ROW_HEIGHT_INCHES * n)
    fig = _figure(height)
    ax = fig.subplots()
    y = np.arange(n)[::-1]
    elo = np.array([r.elo for r in rows])
    low = np.array([r.low for r in rows])
    high = np.array([r.high for r in rows])
    ax.axvline(0.0, color=ANCHOR_COLOUR, linewidth=1.0, linestyle="--", zorder=1)
    # The axis spans what is known: estimates and finite bounds. An open side (an infinite
    # bound) runs to the edge with an arrow; an unknown interval (NaN) draws no bar.
    known = np.concatenate([elo, low[np.isfinite(low)], high[np.isfinite(high)]])
    left, right = float(known.min()), float(known.max())
    span = max(right - left, 1.0)
    edge_low, edge_high = left - 0.05 * span, right + 0.22 * span
    rated = np.array([r.name != fit.anchor for r in rows]) & ~(np.isnan(low) | np.isnan(high))
    shown_low = np.where(np.isinf(low), edge_low, low)
    shown_high = np.where(np.isinf(high), edge_high, high)
    ax.errorbar(
        elo[rated],
        y[rated],
        xerr=np.vstack([elo - shown_low, shown_high - elo])[:, rated],
        fmt="o",
        color=INTERVAL_COLOUR,
        ecolor=INTERVAL_COLOUR,
        elinewidth=2.0,
        capsize=4.0,
        markersize=6.0,
        zorder=3,
    )
    for side, marker in ((np.isneginf(low), "<"), (np.isposinf(high), ">")):
        open_side = rated & side
        if open_side.any():
            edge = edge_low if marker == "<" else edge_high
            ax.plot(
                np.full(int(open_side.sum()), edge), y[open_side], marker, color=INTERVAL_COLOUR
            )
    unrated = ~rated  # the anchor (0 by definition) and bots without an interval: a marker
    if unrated.any():
        ax.plot(elo[unrated], y[unrated], "D", color=INTERVAL_COLOUR, fillstyle="none", zorder=3)
    won, lost = _swept(fit)
    for yi, r, at in zip(y, rows, np.where(np.isfinite(high), high, elo), strict=True):
        minus, plus, interval = interval_text(r, fit.anchor, digits=0)
        label = interval if plus in ("", "-") else f"{r.elo:+.0f} {error_text(minus, plus)}"
        # An open side is no distance ("−∞/+116" reads as a number): say what is known instead.
        if math.isinf(r.high) and math.isfinite(r.low):
            label = f"{r.elo:+.0f}, at least {r.low:+.0f}"
        elif math.isinf(r.low) and math.isfinite(r.high):
            label = f"{r.elo:+.0f}, at most {r.high:+.0f}"
        elif math.isinf(r.low) and math.isinf(r.high):
            label = f"{r.elo:+.0f}, unbounded both ways"
        if r.name in won or r.name in lost:
            label += f" ({'won' if r.name in won else 'lost'} every pair)"
        x = min(float(at), edge_high)
        right = math.isfinite(r.high)
        if interval == "-":
            label = "no interval (one board)"
            # Beside its marker, on the side with room: left of a marker near the axis's left
            # end, it ran into the bot's name.
            right = x - edge_low < 0.6 * (edge_high - edge_low)
        ax.annotate(
            label,
            (x, yi),
            xytext=(7, 0) if right else (-7, 8),
            textcoords="offset points",
            va="center",
            ha="left" if right else "right",
            fontsize=8,
            color="#333333",
        )
    ax.set_xlim(edge_low, edge_high)
    ax.set_yticks(y, [f"{r.rank}. {r.name}" for r in rows])
    ax.set_ylim(-0.7, n - 0.3)
    pct = round(100 * fit.confidence)
    ax.set_xlabel(f"Elo ({_anchor_text(fit)}), {pct}% interval clustered by board")
    ax.set_title(
        f"Ratings, {_size_label(fit)}\n"
        f"{count_text(fit.results, 'result')} on {count_text(fit.boards, 'board')}; "
        f"{_method_text(fit)}",
        fontsize=11,
    )
    _tidy(ax)
    ax.grid(axis="y", visible=False)
    _widen_to_fit(fig, ax)
    return fig


def plot_history(history: RatingHistory, path: str | Path, *, title: str = "") -> Path:
    """Write a PNG of the ratings as results accumulate, with their intervals as bands (when
    there are few enough bots for bands to stay readable)."""
    out = Path(path)
    history_figure(history, title=title).savefig(out)
    return out


def history_figure(history: RatingHistory, *, title: str = "") -> Figure:
    """The figure :func:`plot_history` writes, wide enough for its legend of names."""
    from matplotlib import colormaps, ticker

    fig = _figure(HISTORY_HEIGHT_INCHES)
    ax = fig.subplots()
    x = np.asarray(history.results)
    final = history.elo[-1]
    order = sorted(
        range(len(history.names)),
        key=lambda i: (-(final[i] if math.isfinite(final[i]) else -math.inf), history.names[i]),
    )
    colours = colormaps["tab10" if len(order) <= 10 else "tab20"]
    bands = len(order) <= MAX_HISTORY_BANDS
    values = np.concatenate([history.elo, history.low, history.high]).ravel()
    finite = values[np.isfinite(values)]
    lowest, highest = float(finite.min(initial=0.0)), float(finite.max(initial=0.0))
    margin = 0.1 * max(highest - lowest, 1.0)
    limits = (lowest - margin, highest + margin)  # an open side fills to here
    for k, i in enumerate(order):
        colour = colours(k % colours.N)
        if bands:
            # An open side fills to the plot's edge; an unknown interval leaves a gap.
            ax.fill_between(
                x,
                np.clip(history.low[:, i], *limits),
                np.clip(history.high[:, i], *limits),
                color=colour,
                alpha=0.15,
            )
        ax.plot(
            x,
            history.elo[:, i],
            color=colour,
            linewidth=1.8,
            marker="o",
            markersize=3,
            label=history.names[i],
        )
    ax.axhline(0.0, color=ANCHOR_COLOUR, linewidth=1.0, linestyle="--")
    if np.isinf(values).any():
        ax.set_ylim(*limits)
    ax.set_xlabel("results rated")
    ax.set_ylabel("Elo (" + (f"{history.anchor} = 0" if history.anchor else "mean = 0") + ")")
    ax.set_xlim(0, float(x[-1]) * 1.02)
    # Whole results only: with a few, ticks fell on halves, printed rounded (0, 0, 1, 2, 2, 3).
    ax.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
    ax.xaxis.set_major_formatter(ticker.StrMethodFormatter("{x:,.0f}"))
    # The method named whatever it is: the history is read beside the ratings plot and table.
    if not bands:
        about_bands = f"intervals omitted above {MAX_HISTORY_BANDS} bots"
    elif np.isnan(history.low).all():
        # Every prefix on one board: no interval to draw, and a title promising bands misled.
        about_bands = "no bands: an interval needs results on two boards or more"
    else:
        about_bands = (
            f"bands: {round(100 * history.confidence)}% intervals, {_method_text(history)}"
        )
    lines = [title or "Ratings as results accumulate", about_bands]
    if bands and np.isinf(values).any():
        lines.append("a band to the edge is open (a bot won or lost every pair)")
    # Lines of their own, wrapped: the legend narrows the axes the title is centred on, and one
    # long line (the open bands' note, a bootstrap's 19-digit seed) ran off both sides.
    ax.set_title("\n".join(textwrap.fill(line, HISTORY_TITLE_CHARS) for line in lines), fontsize=11)
    ax.legend(
        loc="center left",
        bbox_to_anchor=(1.01, 0.5),
        frameon=False,
        fontsize=8,
        title="final order",
        title_fontsize=8,
    )
    _tidy(ax)
    _widen_to_fit(fig, ax)
    return fig


def _widen_to_fit(fig: Figure, ax: Any) -> None:
    """Widen ``fig`` until no text runs off it and the axes keep :data:`MIN_AXES_INCHES`.

    A bot's name may be 64 characters: as a tick label or in the legend it took half the fixed
    width, and the title and the axis label, centred on the narrowed axes, ran off the right
    edge ("board-clustered san"), cut in the file.
    """
    for _ in range(8):  # each round at least halves what is left; a few are plenty
        fig.canvas.draw()  # lays the figure out (constrained), so the extents are final
        box = fig.get_tightbbox()  # in inches, every artist's text included
        width = fig.get_figwidth()
        # The title and axis label are centred on the axes: widening by d moves their right end
        # by only d / 2, hence twice the overflow.
        over = 2 * (max(0.0, -box.x0) + max(0.0, box.x1 - width))
        narrow = max(0.0, MIN_AXES_INCHES - ax.get_position().width * width)
        grow = max(over, narrow)
        if grow < WIDEN_SLACK_INCHES:
            return
        fig.set_figwidth(width + grow)


def _figure(height: float) -> Figure:
    # The Agg canvas, attached explicitly: no pyplot, no global backend, no display needed.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(PLOT_WIDTH_INCHES, height), dpi=PLOT_DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _tidy(ax: Any) -> None:
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.grid(True, color="#e6e6e6", linewidth=0.8, zorder=0)
    ax.set_axisbelow(True)


def missing_program(kind: str) -> str | None:
    """The program that a plot format needs and that is not installed (``None`` if none is
    missing): matplotlib writes .pgf by typesetting its text with LaTeX (``pgf.texsystem``,
    xelatex by default), and without it fails only once the plot is drawn, after the report."""
    if kind.lower() != "pgf":
        return None
    from matplotlib import rcParams

    program = str(rcParams["pgf.texsystem"])
    return None if shutil.which(program) else program


def history_path(path: str | Path) -> Path:
    """Where the history plot goes beside the ratings plot at ``path``: ``NAME-history.png``."""
    p = Path(path)
    return p.with_name(f"{p.stem}-history{p.suffix or '.png'}")


def _sized_path(path: Path, size: int, many: bool) -> Path:
    return path.with_name(f"{path.stem}-{size}p{path.suffix or '.png'}") if many else path


def plot_paths(path: str | Path, sizes: Collection[int]) -> list[Path]:
    """The files :func:`render_ratings` writes for ``plot=path`` when the results have these
    table sizes: the ratings plot and its history beside it, per size when they are several
    (``NAME-4p.png``, ``NAME-4p-history.png``)."""
    p = Path(path)
    sized = [_sized_path(p, size, len(sizes) > 1) for size in sorted(sizes)]
    return [q for one in sized for q in (one, history_path(one))]


def print_uncut(console: Console, table: Table) -> None:
    """Print ``table`` with every cell whole, wider than the console if it must be."""
    natural = Measurement.get(console, console.options.update_width(UNCUT_WIDTH), table).maximum
    if natural <= console.width:
        console.print(table)
        return
    # Fitted to a narrower console (an 80-column terminal) rich cuts every cell ("+1…", "mo…"),
    # and the figures are what the table is for: its lines are left longer than the console,
    # for the terminal to wrap.
    table.width = natural
    console.print(table, crop=False)


def render_ratings(
    results: Sequence[TableResult],
    *,
    fmt: ReportFormat | str = ReportFormat.TEXT,
    with_crosstable: bool = False,
    with_los: bool = False,
    plot: str | Path | None = None,
    anchor: str | None = None,
    method: IntervalMethod | str = IntervalMethod.SANDWICH,
    bootstrap_samples: int = DEFAULT_BOOTSTRAP_SAMPLES,
    seed: int = 0,
    prior_draws: float = DEFAULT_PRIOR_DRAWS,
    checkpoints: int = DEFAULT_CHECKPOINTS,
    console: Console | None = None,
) -> dict[int, RatingFit]:
    """Fit each table size apart and print the report: rich tables (with the crosstable and LOS
    matrix if asked), or JSON, or CSV; with ``plot``, write the ratings plot there and the
    history plot beside it (``NAME-history.png``; ``NAME-4p.png`` etc. when sizes are mixed).
    ``method``, ``bootstrap_samples`` and ``seed`` choose the intervals, as :func:`fit` takes
    them, of the table and of both plots (the history's bands too: a bootstrap there costs one
    per checkpoint)."""
    fmt = ReportFormat(fmt)
    console = console if console is not None else Console()
    fits = fit_by_table_size(
        results,
        anchor=anchor,
        method=method,
        bootstrap_samples=bootstrap_samples,
        seed=seed,
        prior_draws=prior_draws,
    )
    if fmt is ReportFormat.JSON:
        console.file.write(to_json(fits) + "\n")
    elif fmt is ReportFormat.CSV:
        console.file.write(to_csv(fits))
    else:
        for size, f in fits.items():
            unit = result_unit([r for r in results if len(r.players) == size])
            print_uncut(console, ratings_table(f, unit))
            if with_crosstable:
                print_uncut(console, crosstable(f))
            if with_los:
                print_uncut(console, los_table(f))
    if plot is not None:
        _write_plots(
            fits,
            results,
            Path(plot),
            anchor=anchor,
            method=method,
            bootstrap_samples=bootstrap_samples,
            seed=seed,
            prior_draws=prior_draws,
            checkpoints=checkpoints,
        )
    return fits


def _write_plots(
    fits: Mapping[int, RatingFit],
    results: Sequence[TableResult],
    plot: Path,
    *,
    anchor: str | None,
    method: IntervalMethod | str,
    bootstrap_samples: int,
    seed: int,
    prior_draws: float,
    checkpoints: int,
) -> None:
    """Write the ratings and history plots of each fit, all or none: each is drawn into a
    temporary file beside its place and renamed there once every one is drawn, so that a plot
    that cannot be written (a full disk) leaves no cut-off file and no half of the set. An
    :class:`OSError` names the file that could not be written."""
    many = len(fits) > 1
    staged: list[tuple[Path, Path]] = []  # (drawn into, its place)
    final = plot
    try:
        for size, f in fits.items():
            final = _sized_path(plot, size, many)
            plot_ratings(f, _stage(final, staged))
            sized = [r for r in results if len(r.players) == size]
            # Above MAX_HISTORY_BANDS bots the plot draws no bands: the cheap intervals then,
            # not 15 bootstraps for nothing (they doubled a bootstrapped report's time).
            drawn = len(f.names) <= MAX_HISTORY_BANDS
            history = rating_history(
                sized,
                checkpoints=checkpoints,
                anchor=anchor,
                prior_draws=prior_draws,
                method=method if drawn else IntervalMethod.SANDWICH,
                bootstrap_samples=bootstrap_samples,
                seed=seed,
            )
            final = history_path(final)
            plot_history(
                history,
                _stage(final, staged),
                title=f"Ratings as results accumulate, {_size_label(f)}",
            )
        for temporary, place in staged:
            final = place
            temporary.replace(place)
    except OSError as e:
        # Named, so that it reads as the plot's failure, not as our output's (a full disk).
        raise OSError(e.errno, e.strerror or str(e), str(final)) from e
    finally:
        for temporary, _ in staged:
            temporary.unlink(missing_ok=True)
            UNFINISHED.discard(str(temporary))


def _stage(place: Path, staged: list[tuple[Path, Path]]) -> Path:
    """Where to draw the plot bound for ``place`` (recorded in ``staged``): a hidden file in the
    folder of the file it is to replace (a link's target: the link stays), with its ending, which
    tells matplotlib the format; ``place`` itself when that is no regular file."""
    real = Path(os.path.realpath(place))
    if real.exists() and not real.is_file():
        return place  # a device or the like: written in place, nothing to rename over it
    temporary = real.with_name(f".{real.stem}.{os.getpid()}.tmp{real.suffix}")
    staged.append((temporary, real))
    # A Ctrl-C in `arena ratings --plot` ends the process at once: it deletes these first.
    UNFINISHED.add(str(temporary))
    return temporary
