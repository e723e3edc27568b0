"""Reports: the rich tables, JSON and CSV say what the fit says; the plots are real PNG files."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
from pathlib import Path

import numpy as np
import pytest
from matplotlib import image, rc_context
from matplotlib.figure import Figure
from matplotlib.text import Text
from rich.console import Console

import arena.ratings.report as report_module
from arena.ratings import RatingsError, TableResult, fit
from arena.ratings.elo import RatingHistory, rating_history
from arena.ratings.report import (
    ReportFormat,
    crosstable,
    error_text,
    history_figure,
    history_path,
    interval_text,
    los_table,
    plot_history,
    plot_ratings,
    ratings_table,
    render_ratings,
    result_unit,
    to_csv,
    to_json,
)
from arena.ratings.simulate import simulate_tables

MAX_BOOTSTRAP_SEED = 2**63 - 1
"""The largest seed ``arena ratings --seed`` takes."""
report_figure = report_module._figure

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def text_of(*renderables: object) -> str:
    console = Console(width=200, record=True, file=io.StringIO())
    for r in renderables:
        console.print(r)
    return console.export_text()


@pytest.fixture(scope="module")
def tournament() -> list[TableResult]:
    return simulate_tables([-100.0, 0.0, 50.0, 150.0], 60, seed=12).to_results()


def test_results_of_several_hands_without_placings_are_games_not_hands(
    tournament: list[TableResult],
) -> None:
    # A server's `hands = 3` stores each table as one result of three hands, with the moons
    # counted and no placings: the table said "pts/hand" and "hands" of its points per table.
    games = [dataclasses.replace(r, moon=None, moons=(0,) * len(r.players)) for r in tournament]
    for results, unit in ((tournament, "hand"), (games, "game"), (tournament + games, "result")):
        assert result_unit(results) == unit
        console = Console(width=200, record=True, file=io.StringIO())
        render_ratings(results, console=console)
        header = next(line for line in console.export_text().splitlines() if "pts/" in line)
        assert f"pts/{unit}" in header and f" {unit}s " in header, header


def test_ratings_table_lists_bots_best_first(tournament: list[TableResult]) -> None:
    f = fit(tournament)
    text = text_of(ratings_table(f))
    positions = [text.index(f" {row.name} ") for row in f.rows()]
    assert positions == sorted(positions)
    best = f.rows()[0]
    assert f"{best.elo:+.1f}" in text and f"[{best.low:+.1f}, {best.high:+.1f}]" in text
    assert "240 results on 60 boards; mean = 0" in text.replace("\n", " ")


def test_the_caption_says_1_board_not_1_boards() -> None:
    one = fit(simulate_tables([-100.0, 0.0, 50.0, 150.0], 1, seed=12).to_results())
    text = text_of(ratings_table(one)).replace("\n", " ")
    assert "4 results on 1 board; mean = 0" in text


def test_points_are_per_hand_or_per_game_as_the_results_are() -> None:
    seats = ("A", "B", "C", "D")
    hands = [TableResult(f"h{i}", seats, (0.0, 5.0, 8.0, 13.0)) for i in range(4)]
    games = [
        TableResult(f"g{i}", seats, (30.0, 50.0, 80.0, 101.0), placings=(1, 2, 3, 4))
        for i in range(4)
    ]
    by_hand = text_of(ratings_table(fit(hands)))
    assert "pts/hand" in by_hand and "pts/game" not in by_hand
    by_game = text_of(ratings_table(fit(games)))
    assert "pts/game" in by_game and "pts/hand" not in by_game and "games" in by_game
    assert "pts/result" in text_of(ratings_table(fit(hands + games)))


def test_one_board_claims_no_interval_and_no_superiority() -> None:
    seats = ("A", "B", "C", "D")
    rotations = [seats[r:] + seats[:r] for r in range(4)]
    one = [TableResult("b0", s, (0.0, 5.0, 8.0, 13.0)) for s in rotations]
    f = fit(one)
    assert all(math.isnan(r.low) and math.isnan(r.high) for r in f.rows())
    assert np.isnan(f.los()[~np.eye(4, dtype=bool)]).all()
    text = text_of(ratings_table(f))
    assert ">99.9%" not in text and "nan" not in text and "[" not in text
    two = one + [TableResult("b1", s, (13.0, 0.0, 5.0, 8.0)) for s in rotations]
    assert all(math.isfinite(r.high - r.low) for r in fit(two).rows())


def test_crosstable_and_los_tables() -> None:
    results = [TableResult(f"w{i}", ("A", "B", "B"), (0.0, 5.0, 5.0)) for i in range(300)]
    results += [TableResult(f"l{i}", ("A", "B", "B"), (9.0, 5.0, 5.0)) for i in range(100)]
    f = fit(results)
    cross = text_of(crosstable(f))
    assert "75.0% (800)" in cross and "25.0% (800)" in cross
    assert ">99.9%" in text_of(los_table(f)) and "<0.1%" in text_of(los_table(f))


def test_json_and_csv_carry_the_fit(tournament: list[TableResult]) -> None:
    f = fit(tournament, anchor="bot00")
    document = json.loads(to_json(f))
    (only,) = document["fits"]
    assert only["anchor"] == "bot00" and only["table_size"] == 4
    assert [r["name"] for r in only["ratings"]] == [r.name for r in f.rows()]
    assert only["ratings"][0]["elo"] == pytest.approx(f.rows()[0].elo)
    assert only["los"]["bot03"]["bot00"] == pytest.approx(f.los_between("bot03", "bot00"))
    assert only["crosstable"]["bot01"]["bot02"]["pairs"] == int(f.pair_count[1, 2])
    rows = list(csv.DictReader(io.StringIO(to_csv(f))))
    assert [r["name"] for r in rows] == [r.name for r in f.rows()]
    assert float(rows[-1]["elo"]) == pytest.approx(f.rows()[-1].elo)
    assert rows[0]["table_size"] == "4" and rows[0]["placings"] == "0 0 0 0"


def test_plots_are_png_images(tournament: list[TableResult], tmp_path: Path) -> None:
    f = fit(tournament)
    ratings = plot_ratings(f, tmp_path / "elo.png")
    history = plot_history(rating_history(tournament, checkpoints=8), tmp_path / "hist.png")
    for path in (ratings, history):
        assert path.read_bytes().startswith(PNG_SIGNATURE)
        height, width, _ = image.imread(path).shape
        assert width >= 1000 and height >= 400


def test_render_ratings_keeps_table_sizes_apart(tmp_path: Path) -> None:
    three = simulate_tables([0.0, 50.0, 100.0], 12, seed=1, table_size=3).to_results()
    four = simulate_tables([0.0, 50.0, 100.0, 150.0], 12, seed=2).to_results()
    out = io.StringIO()
    fits = render_ratings(
        three + four, fmt=ReportFormat.JSON, plot=tmp_path / "r.png", console=Console(file=out)
    )
    assert sorted(fits) == [3, 4]
    assert [d["table_size"] for d in json.loads(out.getvalue())["fits"]] == [3, 4]
    for name in ("r-3p.png", "r-3p-history.png", "r-4p.png", "r-4p-history.png"):
        assert (tmp_path / name).read_bytes().startswith(PNG_SIGNATURE)


def test_render_ratings_text_with_crosstable_and_los(tournament: list[TableResult]) -> None:
    console = Console(width=200, record=True, file=io.StringIO())
    render_ratings(tournament, with_crosstable=True, with_los=True, console=console)
    text = console.export_text()
    assert "Ratings, 4-seat tables" in text
    assert "Crosstable, 4-seat tables" in text
    assert "Likelihood of superiority, 4-seat tables" in text


def test_an_80_column_terminal_gets_every_figure_whole(tournament: list[TableResult]) -> None:
    # Fitted to 80 columns, rich cut every cell to "+1…" and the names to "mo…": the figures
    # were lost. The lines may run past the console now, for the terminal to wrap.
    narrow = Console(width=80, record=True, file=io.StringIO())
    fits = render_ratings(tournament, with_crosstable=True, with_los=True, console=narrow)
    text = narrow.export_text()
    assert "…" not in text
    wide = Console(width=200, record=True, file=io.StringIO())
    render_ratings(tournament, with_crosstable=True, with_los=True, console=wide)
    assert text == wide.export_text()  # the same table as where it fits, line for line
    for row in fits[4].rows():
        assert f"{row.elo:+.1f}" in text and f"[{row.low:+.1f}, {row.high:+.1f}]" in text


def test_history_path_sits_beside_the_plot() -> None:
    assert history_path("out/elo.png") == Path("out/elo-history.png")


def _a_wins_every_pair() -> list[TableResult]:
    """Four boards in every rotation where A takes no point: it wins every pair."""
    results = []
    for b in range(4):
        for r in range(4):
            seats = tuple("ABCD"[(s - r) % 4] for s in range(4))
            points = {"A": 0.0, "B": 3.0 + b, "C": 9.0 - b, "D": 7.0 + (b % 2)}
            results.append(TableResult(f"d{b}", seats, tuple(points[x] for x in seats)))
    return results


def test_open_unknown_and_anchored_intervals_print_as_such(tmp_path: Path) -> None:
    # A takes no point in any hand: it won every pair (score exactly 100 %), and nothing bounds
    # its rating above. E sits at one table only (one board): no interval.
    results = _a_wins_every_pair()
    results.append(TableResult("e0", ("E", "B", "C", "D"), (5.0, 4.0, 6.0, 8.0)))
    f = fit(results, anchor="B")
    text = text_of(ratings_table(f)).replace("\n", " ")
    a = next(r for r in f.rows() if r.name == "A")
    assert a.high == math.inf and f"[{a.low:+.1f}, +∞)" in text
    assert "100%" in text  # A's score: every pair won, exactly
    assert "anchor" in text and "[+0.0, +0.0]" not in text
    # " " joins the caption's wrapped lines, which rich centres with spaces: compare words.
    words = " ".join(text.split())
    assert "∞: A won every pair, so the results bound its rating from below only" in words
    e = next(r for r in f.rows() if r.name == "E")
    assert math.isnan(e.low) and math.isnan(e.se)
    document = json.loads(to_json(f))
    rows = {r["name"]: r for r in document["fits"][0]["ratings"]}
    assert rows["A"]["high"] is None and rows["A"]["se"] is not None
    assert rows["E"]["low"] is None and rows["E"]["se"] is None
    csv_rows = {r["name"]: r for r in csv.DictReader(io.StringIO(to_csv(f)))}
    assert csv_rows["A"]["high"] == "" and csv_rows["A"]["low"] != ""
    assert plot_ratings(f, tmp_path / "open.png").read_bytes().startswith(PNG_SIGNATURE)
    history = rating_history(results, checkpoints=4, anchor="B")
    assert np.isposinf(history.high[-1][history.names.index("A")])
    assert plot_history(history, tmp_path / "h.png").read_bytes().startswith(PNG_SIGNATURE)
    mean = text_of(ratings_table(fit(results))).replace("\n", " ")
    assert "(-∞, " in mean  # with the mean at 0, the others move with A's unbounded rating


def test_render_ratings_takes_the_bootstrap_and_says_so(tournament: list[TableResult]) -> None:
    reports = []
    for _ in range(2):
        out = io.StringIO()
        render_ratings(
            tournament,
            fmt=ReportFormat.CSV,
            method="bootstrap",
            bootstrap_samples=50,
            seed=3,
            console=Console(file=out),
        )
        reports.append(out.getvalue())
    assert reports[0] == reports[1]  # seeded: the same intervals each time
    rows = list(csv.DictReader(io.StringIO(reports[0])))
    assert {r["method"] for r in rows} == {"bootstrap"}
    assert list(rows[0])[-1] == "method"  # added last: the other columns keep their places
    sandwich = {r.name: r for r in fit(tournament).rows()}
    assert all(float(r["low"]) != pytest.approx(sandwich[r["name"]].low) for r in rows)
    console = Console(width=200, record=True, file=io.StringIO())
    render_ratings(tournament, method="bootstrap", bootstrap_samples=50, seed=3, console=console)
    assert "(bootstrap, 50 samples, seed 3)" in console.export_text().replace("\n", " ")


def test_the_table_shows_how_far_an_uneven_interval_reaches_each_way(
    tournament: list[TableResult],
) -> None:
    # The interval also reaches the fit without the prior, which lies further from 0: the
    # interval is uneven about the Elo, and one "±" would hide its shorter or longer side.
    f = fit(tournament)
    rows = f.rows()
    cells = [interval_text(r, f.anchor) for r in rows]
    # Each from the figures as shown, so that the row adds up: the Elo less "−" is the shown
    # interval's low end, plus "+" its high end (each rounded on its own, two rows of five
    # missed by 0.1).
    assert all(
        (down, up)
        == (f"{round(r.elo, 1) - round(r.low, 1):.1f}", f"{round(r.high, 1) - round(r.elo, 1):.1f}")
        for r, (down, up, _) in zip(rows, cells, strict=True)
    )
    for r, (down, up, interval) in zip(rows, cells, strict=True):
        low, high = (float(end) for end in interval.strip("[]").split(", "))
        assert f"{float(f'{r.elo:+.1f}') - float(down):+.1f}" == f"{low:+.1f}", (r, interval)
        assert f"{float(f'{r.elo:+.1f}') + float(up):+.1f}" == f"{high:+.1f}", (r, interval)
    assert all(r.elo - r.low < r.high - r.elo for r in rows if r.elo > 0)
    assert all(r.elo - r.low > r.high - r.elo for r in rows if r.elo < 0)
    table = text_of(ratings_table(f)).splitlines()
    lines = {line.split("│")[2].strip(): " ".join(line.split()) for line in table if "│" in line}
    for r, (down, up, interval) in zip(rows, cells, strict=True):
        assert f"│ {r.elo:+.1f} │ {down} │ {up} │ {interval} │" in lines[r.name]
    assert (error_text("4", "6"), error_text("5", "5")) == ("−4/+6", "± 5")


def test_an_open_side_reaches_infinitely_far_and_the_anchor_not_at_all() -> None:
    results = _a_wins_every_pair()
    f = fit(results, anchor="B")
    rows = {r.name: r for r in f.rows()}
    down, up, interval = interval_text(rows["A"], "B")
    a = rows["A"]
    assert up == "∞" and down == f"{round(a.elo, 1) - round(a.low, 1):.1f}"
    assert interval.endswith("+∞)")
    assert interval_text(rows["B"], "B") == ("", "", "anchor")


def svg_text(path: Path) -> str:
    """The words of an SVG written with its text as text (svg.fonttype none), not as paths."""
    return " ".join(path.read_text().split())


def test_the_history_follows_the_interval_method(
    tournament: list[TableResult], tmp_path: Path
) -> None:
    """The history plot's bands are found as the ratings' are (they were always the sandwich's,
    beside a bootstrap table), and its title says how."""
    few = tournament[:80]
    booted = rating_history(few, checkpoints=4, method="bootstrap", bootstrap_samples=40, seed=3)
    assert (booted.method.value, booted.bootstrap_samples, booted.seed) == ("bootstrap", 40, 3)
    whole = fit(few, method="bootstrap", bootstrap_samples=40, seed=3)
    # The last point is the whole fit, bootstrapped alike: the same interval as the table's.
    for k, name in enumerate(booted.names):
        interval = whole.interval(name)
        assert (booted.low[-1, k], booted.high[-1, k]) == pytest.approx(
            (interval.low, interval.high)
        )
    sandwich = rating_history(few, checkpoints=4)
    assert (sandwich.method.value, sandwich.bootstrap_samples, sandwich.seed) == (
        "sandwich",
        0,
        None,
    )
    assert not np.allclose(sandwich.low[-1], booted.low[-1])
    with rc_context({"svg.fonttype": "none"}):
        plot_history(booted, tmp_path / "b.svg")
        plot_history(sandwich, tmp_path / "s.svg")
        render_ratings(
            few,
            fmt=ReportFormat.CSV,
            plot=tmp_path / "r.svg",
            method="bootstrap",
            bootstrap_samples=40,
            seed=3,
            checkpoints=3,
            console=Console(file=io.StringIO()),
        )
    assert "bands: 95% intervals, board bootstrap (40 samples, seed 3)" in svg_text(
        tmp_path / "b.svg"
    )
    assert "bands: 95% intervals, board-clustered sandwich" in svg_text(tmp_path / "s.svg")
    for name in ("r.svg", "r-history.svg"):
        assert "board bootstrap (40 samples, seed 3)" in svg_text(tmp_path / name)
    with pytest.raises(RatingsError, match="bootstrap_samples must be at least 2"):
        rating_history(few, method="bootstrap", bootstrap_samples=1)


def test_the_los_caption_names_the_interval_method(tournament: list[TableResult]) -> None:
    booted = fit(tournament, method="bootstrap", bootstrap_samples=20, seed=1)
    assert "(bootstrap, 20 samples, seed 1)" in text_of(los_table(booted)).replace("\n", " ")
    assert "(sandwich)" in text_of(los_table(fit(tournament))).replace("\n", " ")


def _drawn_history_title(
    history: RatingHistory, path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Figure, Text]:
    """Plot ``history`` and return the (figure, title) it drew, the figure kept by a wrapper."""
    drawn: list[Figure] = []

    def keep(height: float) -> Figure:
        fig = report_figure(height)
        drawn.append(fig)
        return fig

    monkeypatch.setattr(report_module, "_figure", keep)
    plot_history(history, path)
    (fig,) = drawn
    (ax,) = fig.axes
    return fig, ax.title


@pytest.mark.parametrize("method", ["sandwich", "bootstrap"])
def test_the_history_title_fits_in_the_figure_when_a_band_is_open(
    method: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An open band's note (and the bootstrap's largest seed) made the title's second line wider
    than the figure: both ends were cut off, so the plot no longer said why a band ran to the
    edge. Every line of the title now lies inside the figure."""
    results = _a_wins_every_pair()
    history = rating_history(
        results, checkpoints=4, method=method, bootstrap_samples=20, seed=MAX_BOOTSTRAP_SEED
    )
    assert np.isinf(history.high).any()
    fig, title = _drawn_history_title(history, tmp_path / "h.png", monkeypatch)
    box = title.get_window_extent()
    assert box.x0 >= 0.0 and box.x1 <= fig.bbox.width
    words = " ".join(title.get_text().split())
    assert "a band to the edge is open (a bot won or lost every pair)" in words


def test_a_one_board_plot_keeps_each_no_interval_label_clear_of_the_names() -> None:
    # The label went left of its marker, and the worst bot's marker sits at the axis's left
    # end: "no interval (one board)" ran into that bot's name.
    from arena.ratings.report import ratings_figure

    seats = ("A", "B", "C", "D")
    points = {"A": 0.0, "B": 5.0, "C": 8.0, "D": 13.0}
    one = [
        TableResult("b0", s, tuple(points[x] for x in s))
        for s in (seats[r:] + seats[:r] for r in range(4))
    ]
    figure = ratings_figure(fit(one))
    (ax,) = figure.axes
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    labels = [t for t in ax.texts if t.get_text() == "no interval (one board)"]
    assert len(labels) == 4
    names = [t.get_window_extent(renderer) for t in ax.get_yticklabels()]
    plot = ax.get_window_extent(renderer)
    for label in labels:
        box = label.get_window_extent(renderer)
        # Inside the plot's own area, left of which the names stand.
        assert plot.x0 <= box.x0 and box.x1 <= plot.x1, (box, plot)
        assert not any(box.overlaps(name) for name in names), box


def test_a_rating_a_rounding_error_from_zero_reads_plus_zero() -> None:
    # A and B take the same points at every table; anchored at B, A's Elo came out -4e-15 and
    # its interval [-3e-6, +3e-6]: the table read "-0.0" and "[-0.0, +0.0]".
    results = []
    for b in range(6):
        points = {"A": 3.0 + b, "B": 3.0 + b, "C": 9.0 - b, "D": 7.0}
        for r in range(4):
            seats = tuple("ABCD"[(s - r) % 4] for s in range(4))
            results.append(TableResult(f"d{b}", seats, tuple(points[x] for x in seats)))
    f = fit(results, anchor="B")
    assert -1e-9 < f.interval("A").estimate < 0.0  # the rounding error the figures hide
    text = text_of(ratings_table(f))
    assert "-0.0" not in text and "[+0.0, +0.0]" in text
    from arena.ratings.sprt import elo_text

    assert elo_text(-0.0) == "+0.0" and elo_text(-0.06) == "-0.1" and elo_text(-math.inf) == "-∞"


def test_a_short_history_has_whole_result_ticks_and_says_it_has_no_bands() -> None:
    # Four results on one board: ticks fell on halves, printed 0, 0, 1, 2, 2, 3, 4, and the
    # title promised bands of 95% intervals that no prefix had.
    seats = ("A", "B", "C", "D")
    one = [TableResult("b0", seats[r:] + seats[:r], (0.0, 5.0, 8.0, 13.0)) for r in range(4)]
    fig = history_figure(rating_history(one))
    fig.canvas.draw()
    (ax,) = fig.axes
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks), ticks
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert len(labels) == len(set(labels)), labels
    assert "no bands" in ax.get_title() and "95%" not in ax.get_title()


def test_a_history_without_bands_runs_no_bootstrap_for_them(
    tournament: list[TableResult], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Above 8 bots the history plot draws no bands, yet each of its points was bootstrapped
    # (5.9 s for the report, 13.1 s with its plot, for nothing drawn). The real function runs;
    # the wrapper only notes how it was asked.
    asked: list[str] = []

    def noted(*args: object, **kwargs: object) -> RatingHistory:
        asked.append(str(kwargs["method"]))
        return rating_history(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(report_module, "rating_history", noted)
    nine = simulate_tables([-200.0 + 50 * k for k in range(9)], 40, seed=5).to_results()
    for results, name in ((nine, "nine"), (tournament[:80], "four")):
        with rc_context({"svg.fonttype": "none"}):
            render_ratings(
                results,
                fmt=ReportFormat.CSV,
                plot=tmp_path / f"{name}.svg",
                method="bootstrap",
                bootstrap_samples=20,
                seed=3,
                checkpoints=3,
                console=Console(file=io.StringIO()),
            )
    assert asked == ["sandwich", "bootstrap"]
    assert "intervals omitted above 8 bots" in svg_text(tmp_path / "nine-history.svg")
    assert "board bootstrap (20 samples, seed 3)" in svg_text(tmp_path / "four-history.svg")
