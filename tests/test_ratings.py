"""The rating fit: known answers, anchoring, refusals, and the covariance against a plain loop."""

from __future__ import annotations

import math
import subprocess
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from conftest import run_at_once
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from scipy import stats  # type: ignore[import-untyped]

import arena.ratings.elo as elo_module
from arena.errors import ArenaError
from arena.ratings import (
    ELO_PER_NAT,
    IntervalMethod,
    RatingFit,
    RatingsError,
    TableArrays,
    TableResult,
    fit,
    fit_by_table_size,
    rating_history,
)
from arena.ratings.simulate import simulate_tables

SEAT_POINTS = (0.0, 5.0, 8.0, 13.0)


def rotations(board: str, bots: Sequence[str], seat_points: Sequence[float]) -> list[TableResult]:
    """Every seat rotation of one deal whose points depend only on the seat."""
    k = len(bots)
    return [
        TableResult(board, tuple(bots[(s + r) % k] for s in range(k)), tuple(seat_points))
        for r in range(k)
    ]


def two_bot_results(wins: int, losses: int) -> list[TableResult]:
    """3-seat tables A, B, B: A beats both B seats ``wins`` times and loses to both ``losses``."""
    won = [TableResult(f"w{i}", ("A", "B", "B"), (0.0, 5.0, 5.0)) for i in range(wins)]
    lost = [TableResult(f"l{i}", ("A", "B", "B"), (9.0, 5.0, 5.0)) for i in range(losses)]
    return won + lost


def test_two_bots_at_75_percent_are_191_elo_apart() -> None:
    results = two_bot_results(wins=300, losses=100)
    exact = fit(results, prior_draws=1e-9, anchor="B")
    assert exact.elo[exact.index("A")] == pytest.approx(400 * math.log10(3), abs=1e-3)
    # With the prior, the closed form of two bots: p = (wins + d/2) / (pairs + d).
    p = (600 + 0.5) / (800 + 1)
    shrunk = fit(results, anchor="B")
    assert shrunk.diff_interval("A", "B").estimate == pytest.approx(
        400 * math.log10(p / (1 - p)), abs=1e-4
    )
    assert shrunk.diff_interval("A", "B").estimate == pytest.approx(190.6, abs=0.1)


def test_two_bots_naive_variance_is_the_binomial_one() -> None:
    results = two_bot_results(wins=300, losses=100)
    f = fit(results, prior_draws=1e-9)
    p = 0.75
    naive = math.sqrt(1.0 / (800 * p * (1 - p))) * ELO_PER_NAT
    i, j = f.index("A"), f.index("B")
    assert math.sqrt(
        f.naive_cov[i, i] + f.naive_cov[j, j] - 2 * f.naive_cov[i, j]
    ) == pytest.approx(naive, rel=1e-6)
    # Both pairs of a table always go the same way: the clustered variance counts 400 outcomes.
    assert f.diff_interval("A", "B").se == pytest.approx(naive * math.sqrt(2 * 400 / 399), rel=1e-5)


def test_symmetric_results_rate_everyone_zero() -> None:
    bots = ("north", "east", "south", "west")
    results = [r for b in range(10) for r in rotations(f"d{b}", bots, SEAT_POINTS)]
    results += rotations("tied", bots, (3.0, 3.0, 3.0, 3.0))
    f = fit(results)
    assert np.allclose(f.elo, 0.0, atol=1e-6)
    assert np.allclose(f.los()[~np.eye(4, dtype=bool)], 0.5, atol=1e-6)
    # Seat luck cancels exactly within each board, so the clustered variance is zero.
    assert np.allclose(f.cov, 0.0, atol=1e-9)
    assert (f.naive_se() > 10.0).all()


def test_anchor_holds_the_named_bot_at_zero_and_moves_nothing_else() -> None:
    arrays = simulate_tables([0.0, 60.0, 120.0, 180.0, 240.0], 60, seed=3)
    mean = fit(arrays)
    anchored = fit(arrays, anchor="bot02")
    k = anchored.index("bot02")
    assert anchored.elo[k] == 0.0
    assert anchored.se()[k] == 0.0
    assert np.allclose(anchored.elo, mean.elo - mean.elo[k])
    assert mean.elo.sum() == pytest.approx(0.0, abs=1e-9)
    for a, b in (("bot00", "bot04"), ("bot01", "bot03")):
        assert anchored.diff_interval(a, b).se == pytest.approx(mean.diff_interval(a, b).se)
    assert np.allclose(anchored.los(), mean.los(), equal_nan=True)


def test_an_anchor_that_did_not_play_is_refused() -> None:
    with pytest.raises(RatingsError, match="'nobody' did not play at 4-seat tables"):
        fit(simulate_tables([0.0] * 4, 5, seed=1), anchor="nobody")


def test_a_disconnected_graph_is_refused_naming_the_groups() -> None:
    results = [r for b in range(3) for r in rotations(f"x{b}", ("a", "b", "c"), (1, 2, 3))]
    results += [r for b in range(3) for r in rotations(f"y{b}", ("d", "e", "f"), (1, 2, 3))]
    with pytest.raises(RatingsError, match=r"not connected.*\{a, b, c\} \| \{d, e, f\}") as err:
        fit(results)
    assert isinstance(err.value, ArenaError)


def test_no_results_and_no_pairs_are_refused() -> None:
    with pytest.raises(RatingsError, match="no results"):
        fit([])
    with pytest.raises(RatingsError, match="no head-to-head pairs"):
        fit([TableResult("solo", ("me", "me", "me"), (1.0, 2.0, 3.0))])


def test_an_unbeaten_bot_stays_finite_and_without_prior_is_refused() -> None:
    results = [r for b in range(20) for r in rotations(f"d{b}", ("a", "b", "c"), (5, 6, 7))]
    results += [TableResult(f"e{i}", ("champ", "a", "b"), (0.0, 4.0, 9.0)) for i in range(30)]
    f = fit(results)
    champ = f.interval("champ")
    assert math.isfinite(champ.estimate) and math.isfinite(champ.se)
    assert champ.estimate > 300.0
    with pytest.raises(RatingsError, match="infinite"):
        fit(results, prior_draws=0.0)


def test_table_sizes_are_kept_apart() -> None:
    three = [r for b in range(4) for r in rotations(f"t{b}", ("a", "b", "c"), (1, 2, 3))]
    four = [r for b in range(4) for r in rotations(f"f{b}", ("a", "b", "c", "d"), SEAT_POINTS)]
    with pytest.raises(RatingsError, match=r"mix table sizes \(3, 4\)"):
        fit(three + four)
    by_size = fit_by_table_size(three + four)
    assert sorted(by_size) == [3, 4]
    assert by_size[3].names == ("a", "b", "c")
    assert by_size[4].names == ("a", "b", "c", "d")
    assert fit(three + four, table_size=3).results == len(three)


def test_bad_results_are_refused_with_the_input() -> None:
    with pytest.raises(RatingsError, match="2 seats"):
        TableResult("b", ("a", "b"), (1.0, 2.0))
    with pytest.raises(RatingsError, match="3 points"):
        TableResult("b", ("a", "b", "c", "d"), (1.0, 2.0, 3.0))
    with pytest.raises(RatingsError, match="placings"):
        TableResult("b", ("a", "b", "c"), (1.0, 2.0, 3.0), placings=(1, 2, 4))
    with pytest.raises(RatingsError, match="moon seat 3"):
        TableResult("b", ("a", "b", "c"), (1.0, 2.0, 3.0), moon=3)
    with pytest.raises(RatingsError, match="forfeits"):
        TableResult("b", ("a", "b", "c"), (1.0, 2.0, 3.0), forfeits=(True, False))
    with pytest.raises(RatingsError, match="moons"):
        TableResult("b", ("a", "b", "c"), (1.0, 2.0, 3.0), moon=1, moons=(0, 1, 0))
    with pytest.raises(RatingsError, match="not all finite"):
        TableResult("b", ("a", "b", "c"), (1.0, math.nan, 3.0))
    with pytest.raises(RatingsError, match="prior_draws"):
        fit(two_bot_results(3, 1), prior_draws=-1.0)


HALF: Any = (1.5, 1, 2)
"""Placings with a place of 1.5 (accepted before)."""


@pytest.mark.parametrize(
    ("make", "said"),
    [
        # Each of these was a bare TypeError or AttributeError from len(), a comparison or numpy.
        (lambda: TableResult("b", None, (1, 2, 3)), "players must be the bots' names"),  # type: ignore[arg-type]
        (lambda: TableResult("b", ("a", 2, "c"), (1, 2, 3)), r"players .* \('a', 2, 'c'\)"),  # type: ignore[arg-type]
        (lambda: TableResult("b", ("a", "b", "c"), ("1", "2", "3")), "points must be numbers"),  # type: ignore[arg-type]
        (lambda: TableResult("b", ("a", "b", "c"), None), "points must be numbers"),  # type: ignore[arg-type]
        (lambda: TableResult("b", ("a", "b", "c"), (1, 2, 3), moon="1"), "moon must be a seat"),  # type: ignore[arg-type]
        (lambda: fit([{"board": "x"}]), "must be TableResult objects"),  # type: ignore[list-item]
        (lambda: fit([None]), "must be TableResult objects, got None"),  # type: ignore[list-item]
        (lambda: fit_by_table_size(None), "results must be a list of TableResult"),  # type: ignore[arg-type]
        # Accepted before: a place of 1.5.
        (lambda: TableResult("b", ("a", "b", "c"), (1, 2, 3), placings=HALF), "placings"),
    ],
)
def test_results_of_the_wrong_kind_are_refused_in_one_line(
    make: Callable[[], object], said: str
) -> None:
    with pytest.raises(RatingsError, match=said):
        make()


def test_numpy_numbers_and_flags_are_results_too() -> None:
    points: Any = np.array([1.0, 2.0, 3.0])
    faults: Any = (np.int64(1), 0, 0)
    forfeits: Any = (np.bool_(False), True, 0)
    row = TableResult("b", ("a", "b", "c"), points, faults=faults, forfeits=forfeits)
    assert row.standing()[1] > 1e8 and fit([row] * 3).rows()


@pytest.mark.parametrize(
    ("options", "said"),
    [
        # A seed of None drew fresh entropy: intervals that never repeated, stored as no seed.
        ({"seed": None}, "seed must be a whole number from 0 to 9223372036854775807, not None"),
        # These failed inside numpy (ValueError, TypeError) or in a range() deep in the fit.
        ({"seed": -1}, "seed must be a whole number from 0 to 9223372036854775807, not -1"),
        ({"seed": 1.5}, "seed must be a whole number from 0 to 9223372036854775807, not 1.5"),
        ({"seed": 2**63}, f"seed must be a whole number from 0 to {2**63 - 1}, not {2**63}"),
        ({"bootstrap_samples": 2.5}, "bootstrap_samples must be a whole number, not 2.5"),
        ({"bootstrap_samples": 1}, "bootstrap_samples must be at least 2, not 1"),
    ],
)
def test_bad_bootstrap_options_are_refused_in_the_fit_and_the_history(
    options: dict[str, object], said: str
) -> None:
    results = rotations("d", ("a", "b", "c", "d"), SEAT_POINTS) * 2
    for call in (fit, rating_history):
        with pytest.raises(RatingsError) as refused:
            call(results, method="bootstrap", **options)  # type: ignore[arg-type]
        assert str(refused.value) == said
    # The sandwich draws nothing: a seed is no matter to it.
    assert fit(results, seed=None).seed is None  # type: ignore[arg-type]


def test_an_unknown_method_or_a_fractional_checkpoint_count_is_refused() -> None:
    results = rotations("d", ("a", "b", "c", "d"), SEAT_POINTS) * 2
    # It was Python's own ValueError from the enum, naming neither choice.
    with pytest.raises(RatingsError, match=r"^method must be one of 'sandwich', 'bootstrap', "):
        fit(results, method="boot")
    with pytest.raises(RatingsError, match=r"^checkpoints must be a whole number, not 2\.5$"):
        rating_history(results, checkpoints=2.5)  # type: ignore[arg-type]


def test_arrays_round_trip_through_table_results() -> None:
    arrays = simulate_tables([0.0, 50.0, 100.0, 150.0, 200.0], 30, seed=5)
    results = arrays.to_results()
    first, second = results[0], results[1]
    results[0] = TableResult(first.board, first.players, first.points, moons=(0, 2, 0, 1))
    results[1] = TableResult(
        second.board, second.players, second.points, forfeits=(False, True, False, False)
    )
    arrays = TableArrays.from_results(results)
    assert arrays.to_results() == results
    again = TableArrays.from_results(results)
    assert again.to_results() == results
    assert np.array_equal(fit(again).cov, fit(arrays).cov)


def reference_fit_cov(
    results: Sequence[TableResult], f: RatingFit
) -> tuple[np.ndarray, np.ndarray]:
    """The sandwich and naive covariances written as plain loops over every pair of every table."""
    n = len(f.names)
    code = {name: i for i, name in enumerate(f.names)}
    theta = f.elo / ELO_PER_NAT
    per_board: dict[str, np.ndarray] = defaultdict(lambda: np.zeros(n))
    count = np.zeros((n, n))
    for r in results:
        for i in range(len(r.players)):
            for j in range(i + 1, len(r.players)):
                a, b = code[r.players[i]], code[r.players[j]]
                if a == b:
                    continue
                s = 1.0 if r.points[i] < r.points[j] else 0.5 if r.points[i] == r.points[j] else 0.0
                p = 1.0 / (1.0 + math.exp(-(theta[a] - theta[b])))
                per_board[r.board][a] += s - p
                per_board[r.board][b] -= s - p
                count[a, b] += 1
                count[b, a] += 1
    hessian = np.zeros((n, n))
    for a in range(n):
        for b in range(n):
            if a != b and count[a, b]:
                p = 1.0 / (1.0 + math.exp(-(theta[a] - theta[b])))
                h = (count[a, b] + f.prior_draws) * p * (1 - p)
                hessian[a, a] += h
                hessian[a, b] -= h
    boards = len(per_board)
    meat = np.zeros((n, n))
    for g in per_board.values():
        meat += np.outer(g, g) * boards / (boards - 1)
    bread = np.linalg.inv(hessian[1:, 1:])
    centre = np.eye(n) - 1.0 / n
    sandwich, naive = np.zeros((n, n)), np.zeros((n, n))
    sandwich[1:, 1:] = bread @ meat[1:, 1:] @ bread
    naive[1:, 1:] = bread
    scale = ELO_PER_NAT**2
    return scale * centre @ sandwich @ centre.T, scale * centre @ naive @ centre.T


def test_covariances_match_a_plain_loop() -> None:
    results = simulate_tables([0.0, 40.0, 80.0, 120.0, 160.0, 200.0], 40, seed=11).to_results()
    # Some ties and a bot at two seats, which must be skipped as a pair.
    results += [TableResult("odd", ("bot00", "bot01", "bot01", "bot05"), (3.0, 3.0, 1.0, 3.0))]
    f = fit(results)
    sandwich, naive = reference_fit_cov(results, f)
    assert np.allclose(f.cov, sandwich, rtol=1e-7, atol=1e-9)
    assert np.allclose(f.naive_cov, naive, rtol=1e-7, atol=1e-9)


def test_sparse_board_sums_match_dense_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    arrays = simulate_tables([0.0, 40.0, 80.0, 120.0, 160.0], 25, seed=2)
    dense = fit(arrays, method="bootstrap", bootstrap_samples=20)
    dense_sandwich = fit(arrays)
    monkeypatch.setattr(elo_module, "DENSE_CELLS", 0)  # what a database of many bots would take
    sparse = fit(arrays, method="bootstrap", bootstrap_samples=20)
    assert np.allclose(dense.elo, sparse.elo)
    assert np.allclose(dense.cov, sparse.cov)
    assert np.allclose(dense_sandwich.cov, fit(arrays).cov)
    assert dense_sandwich.bots == fit(arrays).bots


def test_sandwich_and_board_bootstrap_agree() -> None:
    arrays = simulate_tables([-100.0, -40.0, 0.0, 30.0, 60.0, 120.0], 300, seed=8)
    sandwich = fit(arrays)
    bootstrap = fit(arrays, method=IntervalMethod.BOOTSTRAP, bootstrap_samples=400, seed=1)
    assert np.array_equal(sandwich.elo, bootstrap.elo)
    ratio = bootstrap.se() / sandwich.se()
    assert ((ratio > 0.85) & (ratio < 1.15)).all(), ratio
    again = fit(arrays, method="bootstrap", bootstrap_samples=400, seed=1)
    assert np.array_equal(again.cov, bootstrap.cov)
    assert bootstrap.bootstrap_samples == 400 and sandwich.bootstrap_samples == 0


def test_a_forfeited_seat_loses_every_pair_whatever_its_points() -> None:
    # a took the fewest points but forfeited: it loses to b and c; b and c go by points.
    forfeited = TableResult("d1", ("a", "b", "c"), (0.0, 7.0, 19.0), forfeits=(True, False, False))
    f = fit([forfeited], prior_draws=1.0)
    assert f.pair_score[f.index("a"), f.index("b")] == 0.0
    assert f.pair_score[f.index("a"), f.index("c")] == 0.0
    assert f.pair_score[f.index("b"), f.index("c")] == 1.0
    assert [r.name for r in f.rows()] == ["b", "c", "a"]
    assert f.bots[f.index("a")].points_mean == 0.0  # the points themselves stay as taken
    # Two seats that both forfeited are compared by their points.
    both = TableResult("d1", ("a", "b", "c"), (0.0, 7.0, 19.0), forfeits=(True, True, False))
    c, a, b = both.standing()[2], both.standing()[0], both.standing()[1]
    assert c < a < b


def test_bot_statistics() -> None:
    results = [
        TableResult("d1", ("a", "b", "c"), (0.0, 10.0, 16.0), placings=(1, 2, 3), faults=(0, 2, 0)),
        TableResult("d1", ("b", "c", "a"), (26.0, 0.0, 0.0), placings=(3, 1, 1), moon=None),
        TableResult("d2", ("c", "a", "b"), (0.0, 26.0, 26.0), moon=0),
        TableResult("d3", ("a", "b", "c"), (4.0, 4.0, 18.0)),
    ]
    f = fit(results)
    a, b, c = (f.bots[f.index(x)] for x in "abc")
    assert (a.tables, a.boards, a.games, a.placings, a.mean_placing) == (4, 3, 2, (2, 0, 0), 1.0)
    assert (b.placings, b.mean_placing, b.faults, c.moons, a.moons) == ((0, 1, 1), 2.5, 2, 1, 0)
    over_a_game = TableResult("d4", ("a", "b", "c"), (30.0, 40.0, 50.0), moons=(2, 0, 1))
    g = fit([*results, over_a_game])
    assert tuple(g.bots[g.index(x)].moons for x in "abc") == (2, 0, 2)
    assert c.mean_placing == 2.0 and c.games == 2
    assert a.points_mean == pytest.approx(30.0 / 4)
    # Clustered by board: a's deviations summed per board are -15 (d1, two hands), 18.5, -3.5.
    se = math.sqrt(3 / 2 * (15.0**2 + 18.5**2 + 3.5**2)) / 4
    assert a.points_se == pytest.approx(se)
    assert a.pairs == 8 and a.score == pytest.approx((2 + 1.5 + 0.5 + 1.5) / 8)
    row = {r.name: r for r in f.rows()}["a"].to_dict()
    assert row["placings"] == [2, 0, 0] and row["moons"] == 0 and row["tables"] == 4


def test_rows_are_ranked_with_los_to_the_next() -> None:
    f = fit(simulate_tables([0.0, 100.0, 200.0, 300.0], 80, seed=4))
    rows = f.rows()
    assert [r.name for r in rows] == ["bot03", "bot02", "bot01", "bot00"]
    assert [r.rank for r in rows] == [1, 2, 3, 4]
    assert rows[0].los_next == pytest.approx(f.los_between("bot03", "bot02"))
    assert rows[-1].los_next is None
    assert all(r.low < r.elo < r.high for r in rows)


def test_history_ends_at_the_full_fit() -> None:
    arrays = simulate_tables([0.0, 100.0, 200.0, 300.0, 400.0], 50, seed=6)
    history = rating_history(arrays, checkpoints=10)
    assert history.results[-1] == len(arrays)
    assert list(history.results) == sorted(set(history.results))
    assert np.allclose(history.elo[-1], fit(arrays).elo)
    assert (history.low[-1] < history.elo[-1]).all()


@st.composite
def tournaments(draw: st.DrawFn) -> list[TableResult]:
    seats = draw(st.integers(3, 5))
    bots = [f"b{i}" for i in range(seats + draw(st.integers(0, 2)))]
    boards = draw(st.integers(4, 12))
    results = []
    for board in range(boards):
        lineup = draw(st.permutations(bots))[:seats]
        for rotation in range(draw(st.integers(1, seats))):
            points = tuple(
                float(x) for x in draw(st.lists(st.integers(0, 3), min_size=seats, max_size=seats))
            )
            players = tuple(lineup[(s + rotation) % seats] for s in range(seats))
            results.append(TableResult(f"d{board}", players, points))
    return results


def fit_or_reject(results: list[TableResult], **options: object) -> RatingFit:
    try:
        return fit(results, **options)  # type: ignore[arg-type]
    except RatingsError as err:
        assume("not connected" not in str(err))
        raise


PROPERTY_SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@PROPERTY_SETTINGS
@given(tournaments())
def test_reversed_points_reverse_the_ratings(results: list[TableResult]) -> None:
    f = fit_or_reject(results)
    flipped = [TableResult(r.board, r.players, tuple(-p for p in r.points)) for r in results]
    g = fit(flipped)
    assert np.allclose(g.elo, -f.elo, atol=1e-6)
    # A badly determined fit has variances in the thousands; its small entries are differences
    # of large ones, so they agree to the matrix's scale, not to their own.
    assert np.allclose(g.cov, f.cov, atol=1e-7 * max(1.0, float(np.abs(f.cov).max())))


@PROPERTY_SETTINGS
@given(tournaments(), st.randoms(use_true_random=False))
def test_order_and_names_do_not_matter(results: list[TableResult], rnd: object) -> None:
    f = fit_or_reject(results)
    shuffled = list(results)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    renamed = [TableResult(r.board, tuple("z" + p for p in r.players), r.points) for r in shuffled]
    g = fit(renamed)
    for name in f.names:
        assert g.interval("z" + name).estimate == pytest.approx(f.interval(name).estimate, abs=1e-6)
        assert g.interval("z" + name).se == pytest.approx(
            f.interval(name).se, abs=1e-6, nan_ok=True
        )


@PROPERTY_SETTINGS
@given(tournaments())
def test_los_is_complementary_and_anchors_agree(results: list[TableResult]) -> None:
    f = fit_or_reject(results)
    los = f.los()
    off = ~np.eye(len(f.names), dtype=bool)
    # NaN (a bot with one board, or a difference bounded on neither side) is NaN both ways.
    assert np.array_equal(np.isnan(los), np.isnan(los.T))
    known = off & ~np.isnan(los)
    assert np.allclose((los + los.T)[known], 1.0)
    anchored = fit(results, anchor=f.names[-1])
    a, b = f.names[0], f.names[1]
    assert anchored.diff_interval(a, b).estimate == pytest.approx(
        f.diff_interval(a, b).estimate, abs=1e-6
    )
    assert anchored.diff_interval(a, b).se == pytest.approx(
        f.diff_interval(a, b).se, abs=1e-6, nan_ok=True
    )
    assert anchored.elo[-1] == 0.0


# --- honest intervals where the sandwich alone is not (each case of the ratings audit) ----------


def one_sided(boards: int, seed: int) -> list[TableResult]:
    """Four bots in every rotation; A takes no point in any hand, the others take 1 to 25."""
    rng = np.random.default_rng(seed)
    results = []
    for b in range(boards):
        for r in range(4):
            seats = tuple("ABCD"[(s - r) % 4] for s in range(4))
            points = {"A": 0.0, **{x: float(rng.integers(1, 26)) for x in "BCD"}}
            results.append(TableResult(f"d{b}", seats, tuple(points[x] for x in seats)))
    return results


def test_an_unbeaten_bot_has_no_upper_bound_and_the_rest_stay_measured() -> None:
    f = fit(one_sided(20, seed=1))
    a = f.interval("A")
    assert a.high == math.inf and math.isfinite(a.low) and a.low < a.estimate
    assert a.se >= f.naive_se()[f.index("A")] * (1 - 1e-9)  # no longer the vanishing sandwich
    # With the mean at 0 every other rating moves with A's, so it is open below.
    assert all(f.interval(x).low == -math.inf and math.isfinite(f.interval(x).high) for x in "BCD")
    # Differences among the others, and ratings against one of them, stay two-sided.
    assert all(map(math.isfinite, (f.diff_interval("B", "C").low, f.diff_interval("B", "C").high)))
    ab = f.diff_interval("A", "B")
    assert ab.high == math.inf and 0.0 < ab.low < ab.estimate
    assert 0.99 < f.los_between("A", "B") < 1.0
    anchored = fit(one_sided(20, seed=1), anchor="B")
    assert math.isfinite(anchored.interval("C").low) and math.isfinite(anchored.interval("C").high)
    assert anchored.interval("A").high == math.inf
    assert anchored.interval("B") == anchored.interval("B").__class__(0.0, 0.0, 0.0, 0.0)
    row = next(r for r in f.rows() if r.name == "A").to_dict()
    assert row["high"] is None and row["se"] is not None and row["low"] is not None


def test_a_winless_bot_has_no_lower_bound() -> None:
    flipped = [
        TableResult(r.board, r.players, tuple(26.0 - p for p in r.points))
        for r in one_sided(5, seed=2)
    ]
    f = fit(flipped)
    assert f.interval("A").low == -math.inf and math.isfinite(f.interval("A").high)
    assert f.diff_interval("B", "A").high == math.inf


def test_a_group_that_never_conceded_a_point_is_open_above() -> None:
    # A and B split their pairs, and both beat C and D every time: the pair {A, B} is separated.
    results = []
    for b in range(6):
        for r in range(4):
            seats = tuple("ABCD"[(s - r) % 4] for s in range(4))
            points = {"A": 1.0 + b % 2, "B": 2.0 - b % 2, "C": 10.0 + b % 3, "D": 11.0 - b % 3}
            results.append(TableResult(f"d{b}", seats, tuple(points[x] for x in seats)))
    f = fit(results)
    assert f.diff_interval("A", "C").high == math.inf
    assert f.diff_interval("B", "D").high == math.inf
    ab = f.diff_interval("A", "B")
    assert math.isfinite(ab.low) and math.isfinite(ab.high)


def test_near_separation_reaches_the_estimate_without_the_prior() -> None:
    # A loses two pairs in 240 (one hand): the MLE exists, and the prior pulls A far below it.
    results = one_sided(20, seed=3)
    first = results[0]
    worse = {"A": 26.0, "B": 1.0, "C": 1.0, "D": 27.0}
    results[0] = TableResult(first.board, first.players, tuple(worse[x] for x in first.players))
    f = fit(results)
    assert f.reach is None and f.unshrunk is not None
    k = f.index("A")
    assert f.unshrunk[k] > f.elo[k] + 50.0
    assert f.interval("A").high > f.unshrunk[k]


def test_bots_that_always_tie_get_the_model_variance_not_zero() -> None:
    bots = ("A", "B", "C", "D")
    tied = [r for b in range(3) for r in rotations(f"d{b}", bots, (6.5, 6.5, 6.5, 6.5))]
    f = fit(tied)
    naive = f.naive_se()
    for k, name in enumerate(f.names):
        interval = f.interval(name)
        assert interval.se == pytest.approx(naive[k], rel=1e-6)
        assert interval.low < -100.0 and interval.high > 100.0
    # Two bots that tie each other in every hand, beside two that score: A - B is not known
    # to a millionth of an Elo.
    rng = np.random.default_rng(0)
    results = []
    for b in range(5):
        for r in range(4):
            seats = tuple("ABCD"[(s - r) % 4] for s in range(4))
            points = {"A": 0.0, "B": 0.0, "C": float(rng.integers(1, 26)), "D": 30.0}
            results.append(TableResult(f"d{b}", seats, tuple(points[x] for x in seats)))
    g = fit(results)
    ab = g.diff_interval("A", "B")
    i, j = g.index("A"), g.index("B")
    naive_ab = math.sqrt(g.naive_cov[i, i] + g.naive_cov[j, j] - 2 * g.naive_cov[i, j])
    assert ab.se >= naive_ab * (1 - 1e-6) and ab.half_width > 100.0


def newcomer_results(boards: int, seed: int) -> list[TableResult]:
    """Four regulars on 30 boards, and X (true 0) with three of them on ``boards`` boards."""
    rng = np.random.default_rng(seed)
    regulars = ["bot00", "bot01", "bot02", "bot03"]
    true = {"bot00": -100.0, "bot01": -30.0, "bot02": 30.0, "bot03": 100.0, "X": 0.0}
    results = simulate_tables([true[r] for r in regulars], 30, seed=rng).to_results()
    for b in range(boards):
        sub = sorted(rng.choice(regulars, 3, replace=False))
        table = simulate_tables([0.0] + [true[s] for s in sub], 1, seed=rng, names=["X", *sub])
        results += [TableResult(f"new{b}", r.players, r.points) for r in table.to_results()]
    return results


def test_a_bot_seen_on_one_board_has_no_interval() -> None:
    f = fit(newcomer_results(1, seed=1))
    x = f.interval("X")
    assert math.isnan(x.se) and math.isnan(x.low) and math.isnan(x.high)
    assert math.isfinite(x.estimate)
    los = f.los()
    k = f.index("X")
    assert np.isnan(los[k]).all() and np.isnan(los[:, k]).all()
    assert math.isnan(f.diff_interval("X", "bot00").low)
    row = next(r for r in f.rows() if r.name == "X").to_dict()
    assert row["se"] is None and row["low"] is None and row["high"] is None
    regular = f.interval("bot03")  # the others keep their intervals
    assert math.isfinite(regular.low) and math.isfinite(regular.high)


def test_a_bot_interval_uses_its_own_boards_for_the_degrees_of_freedom() -> None:
    f = fit(newcomer_results(3, seed=2))
    x = f.interval("X")
    k, r = f.index("X"), f.index("bot03")
    assert f.bots[k].boards == 3 and f.bots[r].boards > 20
    free = f.elo if f.unshrunk is None else f.unshrunk  # the intervals reach the prior-free fit
    q = stats.t.ppf(0.975, 2)
    assert min(x.estimate, float(free[k])) - x.low == pytest.approx(q * x.se)
    d = f.diff_interval("bot03", "X")  # the smaller of the two bots' boards
    assert d.high - max(d.estimate, float(free[r] - free[k])) == pytest.approx(q * d.se)


def coverage_of(truth: dict[str, float], fits: Sequence[RatingFit], name: str) -> float:
    hits = 0
    for f in fits:
        mean = sum(truth[n] for n in f.names) / len(f.names)
        interval = f.interval(name)
        hits += interval.low <= truth[name] - mean <= interval.high
    return hits / len(fits)


def test_a_newcomer_on_two_boards_is_covered() -> None:
    # Measured over 300 repetitions: 65 % before per-bot degrees of freedom, 100 % after.
    truth = {"bot00": -100.0, "bot01": -30.0, "bot02": 30.0, "bot03": 100.0, "X": 0.0}
    fits = [fit(newcomer_results(2, seed=100 + k)) for k in range(80)]
    assert coverage_of(truth, fits, "X") >= 0.9


def test_an_overwhelming_bot_is_covered_with_and_without_a_loss() -> None:
    # True ratings 0, 0, 0, +1000 at 5 boards: the strong bot loses a pair now and then, or never.
    # Measured over 300 repetitions: 43 % before, 95 % after (tests the prior's pull as well).
    rng = np.random.default_rng(7)
    truth = np.array([0.0, 0.0, 0.0, 1000.0])
    truth -= truth.mean()
    hits = total = 0
    for _ in range(60):
        f = fit(simulate_tables(truth, 5, seed=rng))
        for row in f.rows():
            hits += row.low <= truth[f.index(row.name)] <= row.high
            total += 1
    assert hits / total >= 0.9


def test_the_simulation_command_refuses_bad_input_in_one_line() -> None:
    # The README's coverage command: these were tracebacks from deep inside the simulation.
    refusals = (
        (["--elo", "1", "2", "3"], "--elo gives 3 bot(s) for 4-seat tables: give at least 4"),
        (["--boards", "0"], "--boards 0: give 1 or more"),
        (["--seats", "7"], "--seats 7: a table has 3 to 6 seats"),
        (["--deal-luck", "1"], "--deal-luck 1: give a correlation from 0 to below 1"),
        (["--method", "bootstrap", "--samples", "1"], "--samples 1: give 2 or more"),
    )
    small = ["--elo", "0", "0", "0", "--seats", "3", "--boards", "3", "--reps", "2"]
    runs = [
        *(args for args, _ in refusals),
        ["--elo", "0", "0", "0", "--seats", "3", "--boards", "2", "--reps", "2"],
        # The README's coverage of the bootstrap is measured by the same command.
        [*small, "--method", "bootstrap", "--samples", "20"],
    ]
    # Each command on its own: they are started together, and most of their time is the start.
    *refused, fine, booted = simulate_commands(runs)
    for done, (_, says) in zip(refused, refusals, strict=True):
        assert done.returncode == 2 and done.stdout == "", done.stderr
        assert done.stderr.startswith(f"python -m arena.ratings.simulate: error: {says}")
        assert done.stderr.count("\n") == 1, done.stderr
    assert fine.returncode == 0 and fine.stdout.startswith(
        "2 tournaments of 2 boards, 3 bots at 3-seat tables: coverage "
    ), fine.stderr
    assert booted.returncode == 0 and booted.stdout.startswith(
        "2 tournaments of 3 boards, 3 bots at 3-seat tables, bootstrap of 20 samples: coverage "
    ), booted.stderr


def simulate_commands(runs: list[list[str]]) -> list[subprocess.CompletedProcess[str]]:
    """Run ``python -m arena.ratings.simulate ARGS`` for each ARGS at once; each one's outcome."""
    command = [sys.executable, "-m", "arena.ratings.simulate"]

    def starter(args: list[str]) -> Callable[[], subprocess.Popen[str]]:
        return lambda: subprocess.Popen(
            [*command, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    return run_at_once([starter(args) for args in runs], 120)


def test_a_history_nothing_rates_says_why_and_a_negative_prefix_is_refused() -> None:
    results = rotations("d", ("a", "b", "c", "d"), SEAT_POINTS)
    # It said only "no prefix of the results could be rated (see fit for why)".
    with pytest.raises(RatingsError) as refused:
        rating_history(results, anchor="zz")
    assert str(refused.value) == (
        "no prefix of the results could be rated: anchor 'zz' did not play at 4-seat tables; "
        "give one of the bots there: a, b, c, d"
    )
    # A negative count sliced from the end: all but the last result, not "the first -1".
    arrays = TableArrays.from_results(results)
    with pytest.raises(RatingsError, match=r"^prefix takes a count of 0 or more results, not -1$"):
        arrays.prefix(-1)
    assert len(arrays.prefix(0)) == 0 and len(arrays.prefix(2)) == 2


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ({"table_size": "4"}, r"^table_size must be a whole number of seats, not '4'"),
        ({"table_size": 4.0}, r"^table_size must be a whole number of seats"),
        ({"prior_draws": "1"}, r"^prior_draws must be a number, not '1'"),
        ({"confidence": "0.9"}, r"^confidence must be a number"),
    ],
)
def test_fit_options_of_the_wrong_type_are_refused_naming_them(
    given: dict[str, object], says: str
) -> None:
    # Each was a bare TypeError from numpy or a comparison.
    results = [
        TableResult("b0", ("A", "B", "C", "D"), (0.0, 5.0, 8.0, 13.0)),
        TableResult("b1", ("B", "A", "C", "D"), (0.0, 5.0, 8.0, 13.0)),
    ]
    with pytest.raises(RatingsError, match=says):
        fit(results, **given)  # type: ignore[arg-type]
    assert fit(results, table_size=np.int64(4)).table_size == 4  # type: ignore[arg-type]
    with pytest.raises(RatingsError, match=r"^results must be a list of TableResult, got None"):
        fit(None)  # type: ignore[arg-type]


def test_a_result_whose_players_are_one_text_is_refused() -> None:
    # "abcd" was rated as four bots named a, b, c and d.
    with pytest.raises(RatingsError, match=r"players must be the bots' names, one per seat"):
        TableResult("b0", "abcd", (0.0, 5.0, 8.0, 13.0))  # type: ignore[arg-type]
