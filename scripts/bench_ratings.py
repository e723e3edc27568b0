"""Time the published rating fit on a synthetic database of hand results.

Usage: .venv/bin/python scripts/bench_ratings.py [--hands 1000000] [--bots 16] [--bootstrap 100]
                                                 [--repeats 3]

The results come from arena.ratings.simulate (4-seat tables, every board in all four rotations).
Our figure is the time to rate them with board-clustered intervals; the anchor, measured in the
same run on the same data, is the least work any such fit must do: numpy aggregating the
head-to-head pair totals once, plus scipy's optimiser on that aggregated problem. Their ratio is
what our fit costs beyond that floor (a second pass for the intervals, statistics per bot).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import TypeVar

import numpy as np
from bench_args import at_least
from numpy.typing import NDArray
from scipy import optimize, special  # type: ignore[import-untyped]

from arena.ratings import TableArrays, fit
from arena.ratings.simulate import simulate_tables

T = TypeVar("T")
SEATS = 4


def timed(action: Callable[[], T], repeats: int = 1) -> tuple[T, float]:
    """Run ``action`` ``repeats`` times; its value and its best wall time in seconds (the best,
    as timeit does: other processes on the machine only ever add time)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        value = action()
        best = min(best, time.perf_counter() - start)
    return value, best


def anchor_aggregate(arrays: TableArrays) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Head-to-head points and counts per ordered pair of bots, in as few numpy calls as we can."""
    n = len(arrays.names)
    i, j = np.triu_indices(SEATS, 1)
    a, b = arrays.players[:, i].ravel(), arrays.players[:, j].ravel()
    s = (0.5 * (1.0 + np.sign(arrays.points[:, j] - arrays.points[:, i]))).ravel()
    score = np.bincount(a * n + b, s, n * n) + np.bincount(b * n + a, 1.0 - s, n * n)
    count = np.bincount(a * n + b, minlength=n * n) + np.bincount(b * n + a, minlength=n * n)
    return score.reshape(n, n).astype(np.float64), count.reshape(n, n).astype(np.float64)


def anchor_optimise(score: NDArray[np.float64], count: NDArray[np.float64]) -> NDArray[np.float64]:
    """Bradley-Terry strengths from the pair totals with scipy's L-BFGS-B (first bot at 0)."""
    n = score.shape[0]
    lo, hi = np.nonzero(np.triu(count, 1))
    w, m = score[lo, hi] + 0.5, count[lo, hi] + 1.0

    def loss(x: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        t = np.concatenate(([0.0], x))
        d = t[lo] - t[hi]
        r = (m * special.expit(d) - w) / m.sum()
        value = np.sum(w * np.logaddexp(0.0, -d) + (m - w) * np.logaddexp(0.0, d)) / m.sum()
        gradient = (np.bincount(lo, r, n) - np.bincount(hi, r, n))[1:].astype(np.float64)
        return float(value), gradient

    found = optimize.minimize(loss, np.zeros(n - 1), jac=True, method="L-BFGS-B")
    return np.concatenate(([0.0], found.x))


def main() -> None:
    """Generate, time, print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--hands", type=at_least(1000), default=1_000_000, help="hand results to rate"
    )
    parser.add_argument("--bots", type=at_least(4), default=16, help="bots (4 seats a table)")
    parser.add_argument(
        "--bootstrap", type=at_least(0), default=100, help="bootstrap samples, 2 or more (0: skip)"
    )
    # numpy's generator takes no negative seed: -1 was a ValueError traceback after the parse.
    parser.add_argument("--seed", type=at_least(0), default=1, help="0 or more")
    parser.add_argument("--repeats", type=at_least(1), default=3, help="best of this many timings")
    args = parser.parse_args()
    if args.bootstrap == 1:
        parser.error("argument --bootstrap: 1: give 0 (skip) or 2 or more")
    boards = args.hands // SEATS
    elo = np.linspace(-200.0, 200.0, args.bots)
    arrays, generate = timed(lambda: simulate_tables(elo, boards, seed=args.seed))
    results, build = timed(arrays.to_results)
    hands = len(arrays)
    print(f"{hands:,} hand results: {SEATS}-seat tables, {args.bots} bots, {boards:,} boards")
    print(f"  setup: simulate {generate:.2f} s, build TableResult objects {build:.2f} s")

    converted, convert = timed(lambda: TableArrays.from_results(results), args.repeats)
    sandwich, ours = timed(lambda: fit(converted), args.repeats)
    (score, count), aggregate = timed(lambda: anchor_aggregate(converted), args.repeats)
    strengths, optimise = timed(lambda: anchor_optimise(score, count), args.repeats)
    anchor = aggregate + optimise
    # The two fits must agree, or the anchor measured a different problem.
    gap = np.abs((strengths - strengths.mean()) * 400 / np.log(10) - sandwich.elo).max()

    print("ours")
    print(f"  TableResult objects -> arrays          {convert:7.2f} s")
    print(f"  fit + sandwich intervals (arrays in)   {ours:7.2f} s")
    if args.bootstrap:
        _, boot = timed(
            lambda: fit(converted, method="bootstrap", bootstrap_samples=args.bootstrap)
        )
        print(f"  fit + board bootstrap, {args.bootstrap:4d} samples   {boot:7.2f} s")
    print("anchor (same data, same run)")
    print(f"  numpy: aggregate pair totals           {aggregate:7.2f} s")
    print(f"  scipy: L-BFGS-B on the totals          {optimise:7.3f} s")
    print(
        f"ratio: fit with intervals / anchor = {ours:.2f} s / {anchor:.2f} s = {ours / anchor:.2f}x"
    )
    print(f"ratio: objects to intervals / anchor = {(convert + ours) / anchor:.2f}x")
    print(f"largest rating gap between our fit and the anchor's: {gap:.3f} Elo")
    print(f"widest 95% interval: +/- {1.96 * sandwich.se().max():.2f} Elo")


if __name__ == "__main__":
    main()
