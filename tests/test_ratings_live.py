"""The live ladder rating: ranks from points, deterministic, the right bots move the right way."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest
from scipy.stats import rankdata  # type: ignore[import-untyped]

from arena.ratings import RatingsError, TableResult
from arena.ratings.live import LiveRatings, _ranks
from arena.ratings.simulate import simulate_tables


def test_the_winner_rises_and_tied_seats_move_together() -> None:
    live = LiveRatings()
    start = live.rating("a")
    live.update(TableResult("d1", ("a", "b", "c", "d"), (0.0, 13.0, 13.0, 0.0)))
    a, b, c, d = (live.rating(x) for x in "abcd")
    assert a.mu > start.mu > b.mu
    assert b.mu == pytest.approx(c.mu) and a.mu == pytest.approx(d.mu)
    assert a.sigma < start.sigma and a.tables == 1
    assert live.rating("new").tables == 0


def test_a_forfeited_seat_ranks_last_whatever_its_points() -> None:
    live = LiveRatings()
    forfeits = (True, False, False, False)
    live.update(TableResult("d1", ("a", "b", "c", "d"), (0.0, 5.0, 8.0, 13.0), forfeits=forfeits))
    a, b, c, d = (live.rating(x) for x in "abcd")
    assert b.mu > c.mu > d.mu > a.mu


def test_ladder_is_deterministic_and_finds_the_order() -> None:
    results = simulate_tables([0.0, 100.0, 200.0, 300.0, 400.0], 150, seed=9).to_results()
    first, second = LiveRatings(), LiveRatings()
    first.update_many(results)
    second.update_many(results)
    assert first.to_dict() == second.to_dict()
    board = first.leaderboard()
    assert [r.name for r in board] == ["bot04", "bot03", "bot02", "bot01", "bot00"]
    assert all(r.ordinal == pytest.approx(r.mu - 3 * r.sigma) for r in board)


def test_a_bot_in_two_seats_is_refused() -> None:
    with pytest.raises(RatingsError, match="distinct bots"):
        LiveRatings().update(TableResult("d", ("a", "a", "b"), (0.0, 1.0, 2.0)))


def test_what_is_no_table_result_is_refused_in_one_line() -> None:
    # None was an AttributeError ("'NoneType' object has no attribute 'players'").
    live = LiveRatings()
    for bad in (None, ("a", "b", "c", "d")):
        with pytest.raises(RatingsError, match=r"^update takes one TableResult, got "):
            live.update(bad)  # type: ignore[arg-type]
    assert live.leaderboard() == ()


def test_seats_are_ranked_as_scipy_ranks_them() -> None:
    # Written out instead of scipy.stats.rankdata(method="min"), whose import was half the cost
    # of importing the ratings.
    draw = random.Random(5)
    for _ in range(500):
        standing = tuple(float(draw.randint(0, 4)) for _ in range(draw.randint(3, 6)))
        assert _ranks(standing) == [float(r) for r in rankdata(standing, method="min")], standing


def test_the_ratings_and_the_cli_start_without_scipy_stats() -> None:
    # scipy.stats took half the instructions of importing the ratings (every `arena run`,
    # `arena ratings` and server start); scipy.special gives the same quantiles.
    code = (
        "import sys, arena.cli, arena.ratings.live, arena.ratings.sprt; print(sorted(sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert "'arena.ratings.elo'" in loaded and "'scipy.stats'" not in loaded
