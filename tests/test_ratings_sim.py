"""Simulated tournaments and SPRT runs with known truth: do the 95% intervals and the test's error
rates mean what they say?

The simulator (arena.ratings.simulate) gives head-to-head pairs that follow Bradley-Terry exactly,
with deal luck shared by the rotations of a board, so the true ratings are the ones put in. The
coverage is pooled over every bot (and, separately, every pairwise difference) of every repetition;
its Monte Carlo standard error at these sizes is about 0.2 to 0.4 percentage points, so the
[93%, 97%] window is five or more standard errors wide on each side of 95%. To show that the check
can fail, the naive (independent pairs) intervals must fall outside the window in the same runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from arena.ratings import fit
from arena.ratings.simulate import simulate_board_scores, simulate_tables
from arena.ratings.sprt import Sprt, SprtDecision

TRUE_ELO = np.array([-150.0, -90.0, -30.0, 30.0, 90.0, 150.0])
Z95 = 1.959963984540054
COVERAGE_WINDOW = (0.93, 0.97)


@dataclass(frozen=True)
class Coverage:
    rating: float
    """Share of per-bot 95% intervals (mean anchored) that hold the true rating."""
    difference: float
    """Share of pairwise-difference 95% intervals that hold the true difference."""
    naive_rating: float
    naive_difference: float
    ordered: float
    """Share of repetitions whose point estimates put the bots in their true order."""


def measure_coverage(
    reps: int, boards: int, table_size: int, deal_luck: float, seed: int
) -> Coverage:
    """Coverage of the intervals the fit reports (its rows' low/high and diff_interval), and of
    the naive ones (independent pairs, normal) for comparison."""
    rng = np.random.default_rng(seed)
    truth = TRUE_ELO - TRUE_ELO.mean()
    i, j = np.triu_indices(TRUE_ELO.size, 1)
    hits = np.zeros(4)
    ordered = 0
    for _ in range(reps):
        f = fit(
            simulate_tables(TRUE_ELO, boards, seed=rng, table_size=table_size, deal_luck=deal_luck)
        )
        rows = {r.name: r for r in f.rows()}
        low = np.array([rows[name].low for name in f.names])
        high = np.array([rows[name].high for name in f.names])
        hits[0] += np.count_nonzero((low <= truth) & (truth <= high)) / truth.size
        diffs = [f.diff_interval(f.names[a], f.names[b]) for a, b in zip(i, j, strict=True)]
        true_diff = truth[i] - truth[j]
        hits[1] += sum(d.low <= t <= d.high for d, t in zip(diffs, true_diff, strict=True)) / i.size
        naive = f.naive_cov
        se = np.sqrt(np.diag(naive))
        diff_se = np.sqrt(naive[i, i] + naive[j, j] - 2 * naive[i, j])
        hits[2] += np.count_nonzero(np.abs(f.elo - truth) <= Z95 * se) / truth.size
        diff = f.elo[i] - f.elo[j]
        hits[3] += np.count_nonzero(np.abs(diff - true_diff) <= Z95 * diff_se) / i.size
        ordered += bool(np.all(np.diff(f.elo) > 0))
    share = hits / reps
    rating, difference, naive_rating, naive_difference = (round(float(x), 4) for x in share)
    return Coverage(rating, difference, naive_rating, naive_difference, ordered / reps)


def inside(share: float) -> bool:
    return COVERAGE_WINDOW[0] <= share <= COVERAGE_WINDOW[1]


@pytest.mark.slow
def test_clustered_intervals_cover_the_truth_at_four_seat_tables() -> None:
    found = measure_coverage(reps=1500, boards=200, table_size=4, deal_luck=0.5, seed=20240501)
    print(f"\n4 seats, deal luck 0.5, 1500 tournaments of 200 boards: {found}")
    assert inside(found.rating), found
    assert inside(found.difference), found
    assert found.ordered == 1.0, found


@pytest.mark.slow
@pytest.mark.parametrize(
    ("table_size", "deal_luck", "naive_too"),
    [(3, 0.9, "wide"), (6, 0.0, "narrow")],
)
def test_clustered_intervals_hold_where_naive_ones_fail(
    table_size: int, deal_luck: float, naive_too: str
) -> None:
    found = measure_coverage(
        reps=600, boards=300, table_size=table_size, deal_luck=deal_luck, seed=table_size
    )
    print(f"\n{table_size} seats, deal luck {deal_luck}, 600 tournaments of 300 boards: {found}")
    assert inside(found.rating) and inside(found.difference), found
    # Shared deal luck cancels across rotations (naive too wide); pairs of one table move
    # together (naive too narrow). Either way independent-pair errors miss the window.
    if naive_too == "wide":
        assert found.naive_rating > COVERAGE_WINDOW[1], found
    else:
        assert found.naive_rating < COVERAGE_WINDOW[0], found
    assert found.ordered == 1.0, found


def test_reported_intervals_cover_at_few_boards_with_sparse_participation() -> None:
    """Four of six bots per board, five boards: each bot plays about three, and its interval
    rests on those (t with its boards - 1 degrees of freedom). Measured with 600 tournaments
    (/tmp/auditA/cov_sparse.py): 88 % before per-bot degrees of freedom, 97 % after."""
    rng = np.random.default_rng(5)
    truth = TRUE_ELO - TRUE_ELO.mean()
    hits = rated = unknown = 0
    for _ in range(150):
        f = fit(simulate_tables(TRUE_ELO, 5, seed=rng))
        seen = truth[[int(name[3:]) for name in f.names]]
        seen = seen - seen.mean()
        for row in f.rows():
            k = f.index(row.name)
            if np.isnan(row.low):
                assert f.bots[k].boards == 1  # no interval only without a second board
                unknown += 1
                continue
            rated += 1
            hits += row.low <= seen[k] <= row.high
    assert hits / rated >= 0.93, (hits, rated, unknown)


SPRT_RUNS = 1000
SPRT_CAP = 2500
"""Boards per run at most; the runs here need about 300 on average and 1,600 at the most."""


def sprt_accepts_h1(true_elo: float, seed: int) -> tuple[float, float]:
    """Share of runs accepting H1, and share stopped at the cap, for B stronger by ``true_elo``."""
    rng = np.random.default_rng(seed)
    accepted = capped = 0
    for _ in range(SPRT_RUNS):
        test = Sprt(elo0=0.0, elo1=20.0, alpha=0.05, beta=0.05)
        decision = SprtDecision.CONTINUE
        for score in simulate_board_scores(true_elo, SPRT_CAP, seed=rng).tolist():
            decision = test.update(score)
            if decision is not SprtDecision.CONTINUE:
                break
        accepted += decision is SprtDecision.ACCEPT_H1
        capped += decision is SprtDecision.CONTINUE
    return accepted / SPRT_RUNS, capped / SPRT_RUNS


@pytest.mark.slow
def test_sprt_error_rates_are_near_nominal() -> None:
    # Standard error of a rate near 0.05 over 1000 runs is 0.007: the window is about 3.5 of them.
    false_h1, capped0 = sprt_accepts_h1(0.0, seed=1)
    true_h1, capped1 = sprt_accepts_h1(20.0, seed=2)
    print(f"\nSPRT [0, 20] at 0 Elo: alpha = {false_h1:.3f}; at 20 Elo: beta = {1 - true_h1:.3f}")
    assert 0.025 <= false_h1 <= 0.075
    assert 0.025 <= 1.0 - true_h1 - capped1 <= 0.075
    assert capped0 <= 0.005 and capped1 <= 0.005
