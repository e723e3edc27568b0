"""Statistics for the benchmark scripts: how far a median of noisy runs can be trusted."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["median_interval"]


def median_interval(values: Sequence[float], level: float = 0.95) -> tuple[float, float] | None:
    """A distribution-free confidence interval for the median of ``values`` (None: too few).

    The bounds are order statistics: the k-th smallest of n values lies above the true median
    when fewer than k values fall below it, which happens with the probability that a
    Binomial(n, 1/2) count is k - 1 or less, whatever the values' distribution. So the interval
    [k-th smallest, k-th largest] misses the median with probability 2 P(X <= k - 1), and k is
    the largest that keeps this under 1 - ``level``. It needs no assumption about how the
    machine's noise is shaped, only that the runs are independent of one another.
    """
    # Imported here, not with the module: the benchmarks' client processes import this module
    # too, and scipy would give each of them numpy's thread pool and tens of megabytes.
    from scipy.stats import binom  # type: ignore[import-untyped]

    n = len(values)
    # binom.ppf(q) is the smallest k with P(X <= k) >= q, so P(X <= k - 1) < q: the interval
    # misses the median with probability 2 P(X <= k - 1) < 1 - level, and k + 1 would not.
    k = int(binom.ppf((1 - level) / 2, n, 0.5))
    if k < 1:
        return None
    ordered = sorted(values)
    return ordered[k - 1], ordered[n - k]
