"""Statistics for the benchmark scripts: how far a median of noisy runs can be trusted."""

from __future__ import annotations

from collections.abc import Sequence

from scipy.stats import binom

__all__ = ["median_interval"]


def median_interval(values: Sequence[float], level: float = 0.95) -> tuple[float, float] | None:
    """A distribution-free confidence interval for the median of ``values`` (None: too few).

    The bounds are order statistics: the true median lies below the k-th smallest of n values
    with the probability that a Binomial(n, 1/2) count is k or more, whatever the values'
    distribution. So the interval [k-th smallest, k-th largest] covers the median with
    probability at least ``level`` for the largest such k. It needs no assumption about how the
    machine's noise is shaped, only that the runs are independent of one another.
    """
    n = len(values)
    # binom.ppf(q) is the smallest k with P(X <= k) >= q, so P(X <= k - 1) < q: the interval
    # misses the median with probability 2 P(X <= k - 1) < 1 - level, and k + 1 would not.
    k = int(binom.ppf((1 - level) / 2, n, 0.5))
    if k < 1:
        return None
    ordered = sorted(values)
    return ordered[k - 1], ordered[n - k]
