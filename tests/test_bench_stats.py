"""The benchmarks' confidence interval for a median (scripts/bench_stats.py)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

from bench_stats import median_interval


def test_fifteen_pairs_give_the_fourth_smallest_to_the_fourth_largest() -> None:
    # 1 - 2 P(Binomial(15, 1/2) <= 3) = 96.5%; the 5th would give 88.2%, under 95%.
    assert median_interval([float(v) for v in range(15, 0, -1)]) == (4.0, 12.0)


def test_too_few_values_have_no_interval() -> None:
    # Five values: even the whole range covers the median only 1 - 2/32 = 93.75% of the time.
    assert median_interval([1.0, 2.0, 3.0, 4.0, 5.0]) is None
    assert median_interval([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]) == (1.0, 6.0)


def test_the_interval_covers_a_skewed_distributions_median_at_least_95_percent() -> None:
    rng = np.random.default_rng(20261204)
    true_median = math.log(2)  # of the standard exponential, far from symmetric
    for n in (15, 45):
        trials = 2000
        covered = 0
        for _ in range(trials):
            bounds = median_interval(list(rng.exponential(size=n)))
            assert bounds is not None
            covered += bounds[0] <= true_median <= bounds[1]
        # Exact coverage is 96.5% (n=15) and 96.4% (n=45); 2000 trials put the estimate
        # within about 0.8 points of it (two standard errors).
        assert covered / trials >= 0.95, (n, covered / trials)
