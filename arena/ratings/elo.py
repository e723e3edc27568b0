"""Bradley-Terry ratings on the Elo scale from the head-to-head pairs of multiplayer tables.

The method (DESIGN.md, "Ratings"):

* Each result of a table with k seats gives k(k-1)/2 head-to-head pairs: fewer points scores 1,
  equal points 0.5 each; a seat whose bot forfeited loses to every seat that did not.  A bot met
  by itself (two seats, one program) gives no pair.
* Model: P(a beats b) = 1 / (1 + exp(-(t_a - t_b))), a draw counting as half a win and half a loss.
  The ratings maximise this pairwise (composite) log-likelihood over the whole tournament at once.
  It depends on the data only through the per-pair totals, so the fit aggregates with numpy first
  and hands scipy a problem the size of the number of bots.
* Prior: ``prior_draws`` virtual draws between every two bots that met (as BayesElo does). An
  unbeaten bot then gets a large but finite rating, and because the prior only involves
  differences it leaves the scale's origin free: anchoring is pure post-processing.
* Anchor: the named bot at 0, or the mean of all bots at 0. Elo = t * 400 / ln 10.
* Uncertainty: the pairs of one board (every seat rotation of one deal) share the deal, so they
  are dependent, and the inverse Hessian of the composite likelihood (kept as the *naive*
  covariance, for comparison) is not their covariance. The default is the cluster-robust sandwich
  H^-1 (sum over boards c of g_c g_c^T) H^-1 with g_c the score summed over board c and the usual
  G/(G-1) small-sample factor; ``method="bootstrap"`` instead resamples whole boards (seeded) and
  refits. Intervals are estimate +/- t * standard error, for ratings and differences alike,
  widened as below (so not always centred on the estimate).
* Degrees of freedom: a bot's variance is estimated from the boards *it* played (its score sums
  over other boards are zero), so its t quantile has that many boards minus one degrees of
  freedom, and a difference takes the smaller of the two bots'. A bot seen on one board has no
  interval (NaN), as the whole fit has none with one board in total.
* Separation: a bot that won every pair it played (or a group of bots that never conceded a
  point to the rest) has an infinite maximum-likelihood rating; only the prior keeps the estimate
  finite, and the board sums of its residuals, and so the sandwich, shrink to zero. Its interval
  is therefore open on that side (+inf, or -inf for one that never scored), by the comparison
  graph: ``a - b`` is bounded above only if a chain of pairs in which each bot scored against the
  next leads from b to a (a tie is half a point each way: it bounds, as the likelihood does).
* Too little spread: a bot whose pairs show none (no pair won, or none lost; a tie is neither,
  so a bot that only tied counts), or fewer than MIN_MINORITY points on its rarer side, gets at
  least the model-based (naive) variance along its own rating, as does every group open in the
  sense above: there its residuals say little. And as one virtual draw pulls a bot that rarely
  loses towards 0 by more than its error, every interval also reaches the estimate without the
  prior (when that is finite). Measured coverage: README, "Ratings".
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray
from scipy import optimize, sparse, special  # type: ignore[import-untyped]
from scipy.sparse import csgraph  # type: ignore[import-untyped]

from arena.ratings.results import (
    NO_MOON,
    NO_PLACING,
    RatingsError,
    TableArrays,
    TableResult,
    checked_results,
)

__all__ = [
    "DEFAULT_BOOTSTRAP_SAMPLES",
    "DEFAULT_CHECKPOINTS",
    "DEFAULT_CONFIDENCE",
    "DEFAULT_PRIOR_DRAWS",
    "ELO_PER_NAT",
    "BotRating",
    "BotStats",
    "Interval",
    "IntervalMethod",
    "RatingFit",
    "RatingHistory",
    "fit",
    "fit_by_table_size",
    "rating_history",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

ELO_PER_NAT: Final = 400.0 / math.log(10.0)
"""Elo points per unit of the logistic model's log-odds: 400 Elo is odds of 10 to 1."""
DEFAULT_PRIOR_DRAWS: Final = 1.0
"""Virtual draws between every two bots that met; one draw is negligible beside real play."""
DEFAULT_CONFIDENCE: Final = 0.95
DEFAULT_BOOTSTRAP_SAMPLES: Final = 400
DEFAULT_CHECKPOINTS: Final = 15
"""Growing prefixes refitted for a history of the ratings."""
DENSE_CELLS: Final = 1 << 24
"""Board-by-bot sums are held densely up to this many cells (128 MiB), sparse beyond."""
BOOTSTRAP_BATCH: Final = 32
"""Bootstrap replicates whose pair totals come from one sparse product."""
GRADIENT_TOLERANCE: Final = 1e-10
"""Target gradient of the mean log-likelihood per pair."""
NOISE_ELO: Final = 1e-6
"""Rating differences and spreads below this are floating-point noise, not information."""
MIN_MINORITY: Final = 10.0
"""Below this many points on a bot's rarer side (wins or losses) its variance is at least the
naive one: the usual rule of thumb for a normal interval on a proportion (n p and n (1 - p) at
least 10)."""
FLOOR_SWEEPS: Final = 200
"""Sweeps at most when lifting flat groups' variances to the naive ones (a few suffice)."""
FLOOR_TOLERANCE: Final = 1e-9
CONVERGED_GRADIENT: Final = 1e-7
"""Largest gradient accepted as converged: ratings exact to well below a hundredth of an Elo."""


class IntervalMethod(StrEnum):
    """How the covariance of the ratings is estimated."""

    SANDWICH = "sandwich"
    """Cluster-robust sandwich, clustered by board."""
    BOOTSTRAP = "bootstrap"
    """Resample whole boards with replacement and refit."""


@dataclass(frozen=True, slots=True)
class Interval:
    """An estimate with its standard error and a two-sided confidence interval.

    The interval need not be centred on the estimate: it reaches the fit without the prior too
    (see the module notes), so ``estimate - low`` and ``high - estimate`` may differ."""

    estimate: float
    se: float
    """Standard error."""
    low: float
    high: float

    @property
    def half_width(self) -> float:
        """Half the interval's width (not the distance to either end when it is uneven)."""
        return (self.high - self.low) / 2.0


@dataclass(frozen=True, slots=True)
class BotStats:
    """What a bot did, beside its rating."""

    name: str
    tables: int
    """Results (hands or games) it sat in, one per seat it took."""
    boards: int
    """Distinct boards it played."""
    pairs: int
    """Head-to-head pairs it was part of."""
    score: float
    """Its share of head-to-head points: (wins + draws / 2) / pairs."""
    points_mean: float
    """Mean points it took per result (lower is better)."""
    points_se: float
    """Standard error of ``points_mean``, clustered by board; NaN with fewer than two boards."""
    points_low: float
    points_high: float
    games: int
    """Results that were full games with placings."""
    placings: tuple[int, ...]
    """How often it finished 1st, 2nd, ... among ``games``."""
    mean_placing: float | None
    """Mean place among ``games``; None without games."""
    moons: int
    """Times it shot the moon."""
    faults: int
    """Faults recorded against it."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping (NaN becomes None)."""
        return {
            "name": self.name,
            "tables": self.tables,
            "boards": self.boards,
            "pairs": self.pairs,
            "score": _json_float(self.score),
            "points_mean": _json_float(self.points_mean),
            "points_se": _json_float(self.points_se),
            "points_low": _json_float(self.points_low),
            "points_high": _json_float(self.points_high),
            "games": self.games,
            "placings": list(self.placings),
            "mean_placing": _json_float(self.mean_placing),
            "moons": self.moons,
            "faults": self.faults,
        }


@dataclass(frozen=True, slots=True)
class BotRating:
    """One row of the rating list: a bot's rating, its interval and its summary statistics."""

    rank: int
    """1 for the highest rating."""
    name: str
    elo: float
    se: float
    """Standard error of ``elo`` (relative to the anchor) from the fit's covariance; NaN when the
    bot played fewer than two boards (nothing is known of its spread), 0 for the anchor."""
    low: float
    """Lower bound of the interval: -inf when nothing in the results bounds it (the bot never
    scored a point, see the module notes), NaN when unknown (fewer than two boards)."""
    high: float
    """Upper bound: +inf when nothing bounds it (the bot never conceded a point), NaN when
    unknown."""
    naive_se: float
    """The standard error that treats every pair as independent; for comparison only."""
    los_next: float | None
    """Likelihood of superiority over the next bot in the list; None for the last."""
    stats: BotStats

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready flat mapping (NaN and infinities become None): a None bound with a
        number for ``se`` is open on that side; None for ``se`` too means unknown."""
        row: dict[str, Any] = {
            "rank": self.rank,
            "name": self.name,
            "elo": _json_float(self.elo),
            "se": _json_float(self.se),
            "low": _json_float(self.low),
            "high": _json_float(self.high),
            "naive_se": _json_float(self.naive_se),
            "los_next": _json_float(self.los_next),
        }
        row.update((k, v) for k, v in self.stats.to_dict().items() if k != "name")
        return row


@dataclass(frozen=True, slots=True, eq=False)
class RatingFit:
    """The published ratings of one table size, with everything needed to report on them."""

    names: tuple[str, ...]
    """Bot names, sorted; arrays below are indexed in this order."""
    table_size: int
    anchor: str | None
    """The bot held at 0, or None when the mean is 0."""
    method: IntervalMethod
    confidence: float
    prior_draws: float
    elo: FloatArray
    """Rating per bot."""
    cov: FloatArray
    """Covariance of ``elo`` (Elo squared), by ``method``."""
    naive_cov: FloatArray
    """Inverse Hessian covariance, as if every pair were independent (Elo squared)."""
    pair_score: FloatArray
    """``pair_score[a, b]``: head-to-head points of a against b (prior excluded)."""
    pair_count: FloatArray
    """``pair_count[a, b]``: head-to-head pairs between a and b."""
    bots: tuple[BotStats, ...]
    """Summary statistics per bot, in ``names`` order."""
    results: int
    boards: int
    bootstrap_samples: int
    """Replicates behind ``cov`` for the bootstrap; 0 for the sandwich."""
    seed: int | None
    """Seed of the bootstrap; None for the sandwich."""
    unshrunk: FloatArray | None = None
    """The ratings without the prior (maximum likelihood), anchored alike, when they are finite
    (no separation): every interval also reaches the rating the results alone give, as the prior
    pulls an estimate towards 0 by more than its error when a bot rarely loses (or wins). None
    with separation (the open bounds stand for the infinite estimate) or without a prior."""
    reach: BoolArray | None = None
    """``reach[a, b]``: a chain of pairs, each bot scoring a point or half against the next, leads
    from a to b, so the results bound ``elo[b] - elo[a]`` from above; None when every bot reaches
    every other (no separation)."""

    def __post_init__(self) -> None:
        for array in (self.elo, self.cov, self.naive_cov, self.pair_score, self.pair_count):
            array.setflags(write=False)
        for extra in (self.reach, self.unshrunk):
            if extra is not None:
                extra.setflags(write=False)

    @property
    def z(self) -> float:
        """The quantile of the two-sided ``confidence`` over the whole fit: Student's t with one
        degree of freedom fewer than the boards; NaN with fewer than two boards. Each bot's
        interval uses its own boards instead (see :meth:`interval`)."""
        return self._quantile(self.boards - 1)

    def _quantile(self, df: float) -> float:
        if df < 1:
            return math.nan
        return float(special.stdtrit(df, 0.5 + self.confidence / 2.0))  # Student's t quantile

    def _boards(self) -> FloatArray:
        return np.array([b.boards for b in self.bots], dtype=np.float64)

    def _reaches(self) -> BoolArray:
        if self.reach is None:
            return np.ones((len(self.names), len(self.names)), dtype=np.bool_)
        return self.reach

    def index(self, name: str) -> int:
        """Position of ``name`` in :attr:`names`."""
        try:
            return self.names.index(name)
        except ValueError:
            raise RatingsError(f"no bot {name!r} among {self.names}") from None

    def se(self) -> FloatArray:
        """Standard errors of :attr:`elo`."""
        return np.sqrt(np.clip(np.diag(self.cov), 0.0, None))

    def naive_se(self) -> FloatArray:
        """Standard errors of :attr:`elo` if the pairs were independent (they are not)."""
        return np.sqrt(np.clip(np.diag(self.naive_cov), 0.0, None))

    def interval(self, name: str) -> Interval:
        """The rating of ``name`` with its interval (t with that bot's boards - 1 degrees of
        freedom; open where the results do not bound it; exactly 0 for the anchor)."""
        return self._rating_interval(self.index(name))

    def _rating_interval(self, i: int) -> Interval:
        boards, reach = self._boards(), self._reaches()
        if self.anchor is None:
            df = boards[i] - 1.0
            # The mean moves with every bot: bounded only if every bot's difference is.
            up_open, down_open = not reach[:, i].all(), not reach[i, :].all()
        else:
            k = self.index(self.anchor)
            if i == k:
                return Interval(0.0, 0.0, 0.0, 0.0)  # 0 by definition, not by measurement
            df = min(boards[i], boards[k]) - 1.0
            up_open, down_open = not reach[k, i], not reach[i, k]
        return self._interval(
            float(self.elo[i]),
            float(self.cov[i, i]),
            df,
            up_open=up_open,
            down_open=down_open,
            unshrunk=float(self._unshrunk()[i]),
        )

    def diff_interval(self, a: str, b: str) -> Interval:
        """The rating difference ``a - b`` with its own interval (using the covariance; t with
        the smaller of the two bots' boards - 1 degrees of freedom; open where not bounded)."""
        i, j = self.index(a), self.index(b)
        if i == j:
            return Interval(0.0, 0.0, 0.0, 0.0)
        var = self.cov[i, i] + self.cov[j, j] - 2.0 * self.cov[i, j]
        boards, reach = self._boards(), self._reaches()
        free = self._unshrunk()
        return self._interval(
            float(self.elo[i] - self.elo[j]),
            float(var),
            min(boards[i], boards[j]) - 1.0,
            up_open=not reach[j, i],
            down_open=not reach[i, j],
            unshrunk=float(free[i] - free[j]),
        )

    def los(self) -> FloatArray:
        """``los()[a, b]``: P(rating a > rating b), t approximation with the smaller of the two
        bots' boards - 1 degrees of freedom; NaN on the diagonal, where either bot played one
        board, and where the results bound the difference on neither side."""
        diff = self.elo[:, None] - self.elo[None, :]
        var = np.diag(self.cov)[:, None] + np.diag(self.cov)[None, :] - 2.0 * self.cov
        sd = np.sqrt(np.clip(var, 0.0, None))
        boards, reach = self._boards(), self._reaches()
        df = np.minimum(boards[:, None], boards[None, :]) - 1.0
        # A difference known exactly (no spread at all) is certain, or a tie if it is only noise.
        sure = np.where(np.abs(diff) <= NOISE_ELO, 0.5, (diff > 0).astype(np.float64))
        with np.errstate(divide="ignore", invalid="ignore"):
            spread = special.stdtr(np.maximum(df, 1.0), diff / sd)  # Student's t CDF
            los: FloatArray = np.where(sd > NOISE_ELO, spread, sure)
        # Fewer than two boards: nothing is known of the spread; no chain either way: nothing
        # but the prior orders the two.
        los[np.isnan(var) | (df < 1.0) | ~(reach | reach.T)] = np.nan
        np.fill_diagonal(los, np.nan)
        return los

    def los_between(self, a: str, b: str) -> float:
        """P(rating of ``a`` > rating of ``b``)."""
        return float(self.los()[self.index(a), self.index(b)])

    def rows(self) -> tuple[BotRating, ...]:
        """The rating list, best first (ties broken by name)."""
        order = sorted(range(len(self.names)), key=lambda i: (-self.elo[i], self.names[i]))
        naive, los = self.naive_se(), self.los()
        rows = []
        for rank, i in enumerate(order, start=1):
            nxt = order[rank] if rank < len(order) else None
            interval = self._rating_interval(i)
            rows.append(
                BotRating(
                    rank=rank,
                    name=self.names[i],
                    elo=float(self.elo[i]),
                    se=interval.se,
                    low=interval.low,
                    high=interval.high,
                    naive_se=float(naive[i]),
                    los_next=None if nxt is None else float(los[i, nxt]),
                    stats=self.bots[i],
                )
            )
        return tuple(rows)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping: the rating list, covariance, LOS and crosstable."""
        los = self.los()
        names = self.names
        return {
            "table_size": self.table_size,
            "anchor": self.anchor,
            "method": self.method.value,
            "confidence": self.confidence,
            "prior_draws": self.prior_draws,
            "results": self.results,
            "boards": self.boards,
            "bootstrap_samples": self.bootstrap_samples,
            "seed": self.seed,
            "ratings": [row.to_dict() for row in self.rows()],
            "names": list(names),
            "covariance": [[_json_float(x) for x in row] for row in self.cov],
            "los": {
                a: {b: _json_float(los[i, j]) for j, b in enumerate(names) if i != j}
                for i, a in enumerate(names)
            },
            "crosstable": {
                a: {
                    b: {"score": float(self.pair_score[i, j]), "pairs": int(self.pair_count[i, j])}
                    for j, b in enumerate(names)
                    if self.pair_count[i, j] > 0
                }
                for i, a in enumerate(names)
            },
        }

    def _unshrunk(self) -> FloatArray:
        return self.elo if self.unshrunk is None else self.unshrunk

    def _interval(
        self,
        estimate: float,
        var: float,
        df: float,
        *,
        up_open: bool,
        down_open: bool,
        unshrunk: float,
    ) -> Interval:
        q = self._quantile(df)
        if math.isnan(q) or math.isnan(var):
            return Interval(estimate, math.nan, math.nan, math.nan)
        se = math.sqrt(max(var, 0.0))
        # The interval spans the estimate and the one without the prior, plus the error.
        return Interval(
            estimate,
            se,
            -math.inf if down_open else min(estimate, unshrunk) - q * se,
            math.inf if up_open else max(estimate, unshrunk) + q * se,
        )


@dataclass(frozen=True, slots=True, eq=False)
class RatingHistory:
    """Ratings refitted on growing prefixes of the results, in their given order."""

    names: tuple[str, ...]
    results: tuple[int, ...]
    """Number of results in each prefix."""
    elo: FloatArray
    """``elo[t, i]``: rating of bot i after ``results[t]`` results; NaN before it played."""
    low: FloatArray
    """Interval bounds as :meth:`RatingFit.interval` gives them: NaN when unknown, infinite when
    open."""
    high: FloatArray
    anchor: str | None
    method: IntervalMethod = IntervalMethod.SANDWICH
    """How every prefix's intervals were found, as :attr:`RatingFit.method`."""
    bootstrap_samples: int = 0
    """Replicates per prefix for the bootstrap; 0 for the sandwich."""
    seed: int | None = None
    """Seed of every prefix's bootstrap; None for the sandwich."""
    confidence: float = DEFAULT_CONFIDENCE


_MAX_SEED: Final = 2**63 - 1
"""The largest bootstrap seed (the command line's ``--seed`` takes the same range)."""


def _whole(value: object) -> bool:
    """Whether ``value`` is a whole number (not a bool, a float or None)."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def _interval_options(
    method: IntervalMethod | str, bootstrap_samples: int, seed: int
) -> IntervalMethod:
    """The interval method, its bootstrap's samples and seed checked (one RatingsError each):
    a seed of None drew fresh entropy (intervals that never repeat, stored as no seed at all),
    and a negative or fractional one failed inside numpy."""
    try:
        chosen = IntervalMethod(method)
    except ValueError:
        names = ", ".join(repr(m.value) for m in IntervalMethod)
        raise RatingsError(f"method must be one of {names}, not {method!r}") from None
    if chosen is IntervalMethod.BOOTSTRAP:
        if not _whole(bootstrap_samples):
            raise RatingsError(
                f"bootstrap_samples must be a whole number, not {bootstrap_samples!r}"
            )
        if bootstrap_samples < 2:
            raise RatingsError(f"bootstrap_samples must be at least 2, not {bootstrap_samples}")
        if not _whole(seed) or not 0 <= seed <= _MAX_SEED:
            raise RatingsError(f"seed must be a whole number from 0 to {_MAX_SEED}, not {seed!r}")
    return chosen


def fit(
    results: Sequence[TableResult] | TableArrays,
    *,
    anchor: str | None = None,
    prior_draws: float = DEFAULT_PRIOR_DRAWS,
    table_size: int | None = None,
    method: IntervalMethod | str = IntervalMethod.SANDWICH,
    bootstrap_samples: int = DEFAULT_BOOTSTRAP_SAMPLES,
    seed: int = 0,
    confidence: float = DEFAULT_CONFIDENCE,
) -> RatingFit:
    """Fit Elo ratings with intervals clustered by board, for one table size."""
    method = _interval_options(method, bootstrap_samples, seed)
    # Text or None in these failed deep in numpy or a comparison, with a bare TypeError.
    if not isinstance(results, TableArrays | Sequence) or isinstance(results, str):
        raise RatingsError(f"results must be a list of TableResult, got {results!r:.60}")
    for name, value in (("prior_draws", prior_draws), ("confidence", confidence)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise RatingsError(f"{name} must be a number, not {value!r:.40}")
    if table_size is not None and (
        isinstance(table_size, bool) or not isinstance(table_size, numbers.Integral)
    ):
        raise RatingsError(f"table_size must be a whole number of seats, not {table_size!r:.40}")
    if not (math.isfinite(prior_draws) and prior_draws >= 0.0):
        raise RatingsError(f"prior_draws must be a finite number >= 0, not {prior_draws}")
    if not 0.0 < confidence < 1.0:
        raise RatingsError(f"confidence must lie strictly between 0 and 1, not {confidence}")
    if isinstance(results, TableArrays):
        arrays = results
        if table_size is not None and table_size != arrays.table_size:
            raise RatingsError(
                f"table_size={table_size} but the arrays hold {arrays.table_size}-seat tables"
            )
    else:
        arrays = TableArrays.from_results(results, table_size)
    if len(arrays) == 0:
        size = "" if table_size is None else f" at {table_size}-seat tables"
        raise RatingsError(f"no results to rate{size}")
    return _fit_arrays(arrays, anchor, prior_draws, method, bootstrap_samples, seed, confidence)


def fit_by_table_size(
    results: Sequence[TableResult],
    *,
    anchor: str | None = None,
    prior_draws: float = DEFAULT_PRIOR_DRAWS,
    method: IntervalMethod | str = IntervalMethod.SANDWICH,
    bootstrap_samples: int = DEFAULT_BOOTSTRAP_SAMPLES,
    seed: int = 0,
    confidence: float = DEFAULT_CONFIDENCE,
) -> dict[int, RatingFit]:
    """One :func:`fit` per table size present, keyed by seats, with the same options each."""
    by_size: dict[int, list[TableResult]] = {}
    for result in checked_results(results):
        by_size.setdefault(len(result.players), []).append(result)
    if not by_size:
        raise RatingsError("no results to rate")
    return {
        size: fit(
            by_size[size],
            anchor=anchor,
            prior_draws=prior_draws,
            method=method,
            bootstrap_samples=bootstrap_samples,
            seed=seed,
            confidence=confidence,
        )
        for size in sorted(by_size)
    }


def rating_history(
    results: Sequence[TableResult] | TableArrays,
    *,
    checkpoints: int = DEFAULT_CHECKPOINTS,
    anchor: str | None = None,
    prior_draws: float = DEFAULT_PRIOR_DRAWS,
    table_size: int | None = None,
    method: IntervalMethod | str = IntervalMethod.SANDWICH,
    bootstrap_samples: int = DEFAULT_BOOTSTRAP_SAMPLES,
    seed: int = 0,
    confidence: float = DEFAULT_CONFIDENCE,
) -> RatingHistory:
    """Refit on ``checkpoints`` growing prefixes, each with its intervals by ``method`` (the
    bootstrap with the same samples and seed for every prefix, so the last point is the whole
    fit's); prefixes that cannot be rated yet (a disconnected graph, the anchor not yet seen)
    are left out."""
    # Checked here: every prefix's fit would refuse them, and be skipped as not yet rateable.
    method = _interval_options(method, bootstrap_samples, seed)
    if not _whole(checkpoints):
        raise RatingsError(f"checkpoints must be a whole number, not {checkpoints!r}")
    if checkpoints < 1:
        raise RatingsError(f"checkpoints must be at least 1, not {checkpoints}")
    arrays = (
        results
        if isinstance(results, TableArrays)
        else TableArrays.from_results(results, table_size)
    )
    total = len(arrays)
    if total == 0:
        raise RatingsError("no results to rate")
    sizes = np.unique(np.linspace(total / checkpoints, total, checkpoints).round().astype(int))
    names = arrays.names
    kept: list[int] = []
    elo, low, high = [], [], []
    refused: RatingsError | None = None
    for size in sizes[sizes > 0]:
        try:
            step = fit(
                arrays.prefix(int(size)),
                anchor=anchor,
                prior_draws=prior_draws,
                method=method,
                bootstrap_samples=bootstrap_samples,
                seed=seed,
                confidence=confidence,
            )
        except RatingsError as e:
            refused = e  # the last prefix's reason is the whole results'
            continue
        row = np.full((3, len(names)), np.nan)
        for k, name in enumerate(step.names):
            interval = step.interval(name)
            row[:, names.index(name)] = (step.elo[k], interval.low, interval.high)
        kept.append(int(size))
        elo.append(row[0])
        low.append(row[1])
        high.append(row[2])
    if not kept:
        # With why (an anchor that never played, say), as fit says it: "see fit for why" was all.
        raise RatingsError(f"no prefix of the results could be rated: {refused}")
    bootstrap = method is IntervalMethod.BOOTSTRAP
    return RatingHistory(
        names,
        tuple(kept),
        np.array(elo),
        np.array(low),
        np.array(high),
        anchor,
        method=method,
        bootstrap_samples=bootstrap_samples if bootstrap else 0,
        seed=seed if bootstrap else None,
        confidence=confidence,
    )


# --- the fit ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class _Pairs:
    """Head-to-head totals per pair of bots that met (``lo < hi`` in compact codes)."""

    lo: IntArray
    hi: IntArray
    score: FloatArray
    """Points of ``lo`` against ``hi``."""
    count: FloatArray


def _fit_arrays(
    arrays: TableArrays,
    anchor: str | None,
    prior_draws: float,
    method: IntervalMethod,
    bootstrap_samples: int,
    seed: int,
    confidence: float,
) -> RatingFit:
    names, players = _compact(arrays)
    n = len(names)
    if anchor is not None and anchor not in names:
        raise RatingsError(
            f"anchor {anchor!r} did not play at {arrays.table_size}-seat tables; "
            f"give one of the bots there: {', '.join(names)}"
        )
    board, n_boards = _compact_boards(arrays.board)
    standing = arrays.standing()  # the points, with a forfeited seat ranked last
    score, count = _pair_totals(players, standing, n)
    _check_connected(names, count, score, prior_draws)
    pairs = _pair_list(score, count)
    prior = _with_prior(pairs, prior_draws)
    theta = _solve(prior, n)
    hessian = _hessian(prior, theta, n)[1:, 1:]
    bread = np.asarray(np.linalg.inv(hessian), dtype=np.float64)
    if method is IntervalMethod.SANDWICH:
        meat = _board_scores(players, standing, board, n_boards, theta, n)[1:, 1:]
        meat *= n_boards / max(n_boards - 1, 1)
        cov_free = bread @ meat @ bread
    else:
        cov_free = _bootstrap_cov(
            players, standing, board, n_boards, pairs, prior_draws, n, bootstrap_samples, seed
        )[1:, 1:]
    cov_full, naive_full = _pad(cov_free), _pad(bread)
    reach = _reach(score)
    unshrunk = _unshrunk(pairs, n) if prior_draws > 0.0 and reach.all() else None
    if n_boards < 2:
        # One board is one cluster: its spread cannot be estimated (the clustered sum is zero
        # at the fit), and an interval of width zero would claim certainty from a single deal.
        cov_full = np.full_like(cov_full, np.nan)
    else:
        directions = _flat_directions(reach, _no_spread(players, standing, score, count, n))
        cov_full = _floor_variance(cov_full, naive_full, directions)
    to_anchor = _anchor_matrix(names, anchor)
    elo_scale = ELO_PER_NAT**2
    return RatingFit(
        names=names,
        table_size=arrays.table_size,
        anchor=anchor,
        method=method,
        confidence=confidence,
        prior_draws=prior_draws,
        elo=ELO_PER_NAT * (to_anchor @ theta),
        unshrunk=None if unshrunk is None else ELO_PER_NAT * (to_anchor @ unshrunk),
        cov=elo_scale * _anchored(to_anchor, cov_full),
        naive_cov=elo_scale * _anchored(to_anchor, naive_full),
        pair_score=score,
        pair_count=count,
        bots=_bot_stats(names, players, arrays, board, n_boards, score, count, confidence),
        results=len(arrays),
        boards=n_boards,
        bootstrap_samples=bootstrap_samples if method is IntervalMethod.BOOTSTRAP else 0,
        seed=seed if method is IntervalMethod.BOOTSTRAP else None,
        reach=None if reach.all() else reach,
    )


def _compact(arrays: TableArrays) -> tuple[tuple[str, ...], IntArray]:
    """The bots that played, and the players array recoded 0..n-1 in the same sorted order."""
    seen = np.bincount(arrays.players.ravel(), minlength=len(arrays.names)) > 0
    code = np.cumsum(seen) - 1
    names = tuple(name for name, s in zip(arrays.names, seen, strict=True) if s)
    return names, code[arrays.players]


def _compact_boards(board: IntArray) -> tuple[IntArray, int]:
    """Board codes recoded 0..G-1 over the boards present, and G."""
    seen = np.bincount(board) > 0 if board.size else np.zeros(0, dtype=bool)
    code = np.cumsum(seen) - 1
    return code[board], int(seen.sum())


def _seat_pairs(players: IntArray, points: FloatArray) -> Iterator[tuple[int, int, FloatArray]]:
    """For each two seats i < j (at most 15): i, j and seat i's head-to-head points against j.

    Looping over seat pairs rather than results keeps every operation a numpy one over all rows.
    """
    for i, j in zip(*np.triu_indices(players.shape[1], 1), strict=True):
        yield int(i), int(j), 0.5 * (1.0 + np.sign(points[:, j] - points[:, i]))


def _pair_totals(players: IntArray, points: FloatArray, n: int) -> tuple[FloatArray, FloatArray]:
    """Dense (n, n) head-to-head points and pair counts over all results."""
    score = np.zeros(n * n)
    count = np.zeros(n * n)
    for i, j, s in _seat_pairs(players, points):
        met = players[:, i] != players[:, j]
        a, b, s = players[met, i], players[met, j], s[met]
        ab, ba = a * n + b, b * n + a
        score += np.bincount(ab, s, n * n) + np.bincount(ba, 1.0 - s, n * n)
        count += np.bincount(ab, minlength=n * n) + np.bincount(ba, minlength=n * n)
    return score.reshape(n, n), count.reshape(n, n)


def _board_sums(
    board: IntArray, bot: IntArray, values: FloatArray, n_boards: int, n: int
) -> FloatArray | sparse.csr_matrix:
    """``[c, a]``: the sum of ``values`` over board c's entries for bot a; dense when that is
    small enough, as bincount is several times faster than building a sparse matrix."""
    if n_boards * n <= DENSE_CELLS:
        dense = np.bincount(board * n + bot, values, n_boards * n)
        return np.asarray(dense, dtype=np.float64).reshape(n_boards, n)
    return sparse.coo_matrix((values, (board, bot)), shape=(n_boards, n)).tocsr()


def _square(matrix: FloatArray | sparse.csr_matrix) -> FloatArray | sparse.csr_matrix:
    return matrix * matrix if isinstance(matrix, np.ndarray) else matrix.multiply(matrix)


def _dense_array(matrix: FloatArray | sparse.csr_matrix) -> FloatArray:
    return np.asarray(matrix if isinstance(matrix, np.ndarray) else matrix.toarray(), np.float64)


def _column_sums(matrix: FloatArray | sparse.csr_matrix) -> FloatArray:
    return np.asarray(matrix.sum(axis=0), dtype=np.float64).ravel()


def _pair_list(score: FloatArray, count: FloatArray) -> _Pairs:
    lo, hi = np.nonzero(np.triu(count, 1))
    return _Pairs(lo.astype(np.int64), hi.astype(np.int64), score[lo, hi], count[lo, hi])


def _with_prior(pairs: _Pairs, prior_draws: float) -> _Pairs:
    return _Pairs(pairs.lo, pairs.hi, pairs.score + prior_draws / 2.0, pairs.count + prior_draws)


def _check_connected(
    names: tuple[str, ...], count: FloatArray, score: FloatArray, prior_draws: float
) -> None:
    """Refuse a comparison graph in pieces, or (with no prior) one where the MLE is infinite."""
    if len(names) < 2 or not count.any():
        raise RatingsError(f"no head-to-head pairs between different bots among {names}")
    pieces, label = csgraph.connected_components(sparse.csr_matrix(count > 0), directed=False)
    if pieces > 1:
        groups = " | ".join(
            "{" + ", ".join(n for n, g in zip(names, label, strict=True) if g == k) + "}"
            for k in range(pieces)
        )
        raise RatingsError(
            f"the comparison graph is not connected ({pieces} groups: {groups}); "
            "ratings across groups are undefined: play games between them or rate them apart"
        )
    if prior_draws == 0.0:
        # Without a prior the maximum likelihood exists only if every group of bots also scored
        # something against the rest (the "beats or draws" graph is strongly connected).
        pieces, label = csgraph.connected_components(
            sparse.csr_matrix(score > 0), directed=True, connection="strong"
        )
        if pieces > 1:
            raise RatingsError(
                f"with prior_draws=0 some ratings are infinite ({pieces} groups never all "
                "scored against each other); use prior_draws > 0"
            )


def _solve(pairs: _Pairs, n: int) -> FloatArray:
    """Maximum likelihood log-strengths with the first bot at 0 (scipy's trust-region Newton)."""
    lo, hi, w, m = pairs.lo, pairs.hi, pairs.score, pairs.count
    per_pair = 1.0 / m.sum()  # the objective is a mean over pairs, so the tolerance is absolute

    def full(x: FloatArray) -> FloatArray:
        return np.concatenate(([0.0], x))

    def loss(x: FloatArray) -> float:
        d = (t := full(x))[lo] - t[hi]
        return float(per_pair * np.sum(w * np.logaddexp(0.0, -d) + (m - w) * np.logaddexp(0.0, d)))

    def gradient(x: FloatArray) -> FloatArray:
        t = full(x)
        r = m * special.expit(t[lo] - t[hi]) - w
        g: FloatArray = per_pair * (np.bincount(lo, r, n) - np.bincount(hi, r, n))[1:]
        return g

    def hessian(x: FloatArray) -> FloatArray:
        h: FloatArray = per_pair * _hessian(pairs, full(x), n)[1:, 1:]
        return h

    found = optimize.minimize(
        loss,
        np.zeros(n - 1),
        jac=gradient,
        hess=hessian,
        method="trust-exact",
        options={"gtol": GRADIENT_TOLERANCE},
    )
    # trust-exact also stops when floating point can no longer confirm an improvement; the
    # gradient then says whether that happened at the optimum.
    if not (found.success or np.abs(found.jac).max(initial=0.0) <= CONVERGED_GRADIENT):
        raise RatingsError(f"the rating fit did not converge: {found.message}")
    return full(np.asarray(found.x, dtype=np.float64))


def _unshrunk(pairs: _Pairs, n: int) -> FloatArray | None:
    """The maximum likelihood without the prior, finite without separation; None if the solver
    cannot confirm it (near separation in floating point), when the intervals rest on the
    variance floor alone rather than failing the whole fit."""
    try:
        return _solve(pairs, n)
    except RatingsError:
        return None


def _hessian(pairs: _Pairs, theta: FloatArray, n: int) -> FloatArray:
    """Hessian of the negative log-likelihood in the n log-strengths."""
    lo, hi = pairs.lo, pairs.hi
    p = special.expit(theta[lo] - theta[hi])
    h = pairs.count * p * (1.0 - p)
    flat = (
        np.bincount(lo * n + lo, h, n * n)
        + np.bincount(hi * n + hi, h, n * n)
        - np.bincount(lo * n + hi, h, n * n)
        - np.bincount(hi * n + lo, h, n * n)
    )
    return np.asarray(flat, dtype=np.float64).reshape(n, n)


def _board_scores(
    players: IntArray,
    points: FloatArray,
    board: IntArray,
    n_boards: int,
    theta: FloatArray,
    n: int,
) -> FloatArray:
    """The sandwich's meat: sum over boards of the outer product of the board's score vector."""
    expected = special.expit(theta[:, None] - theta[None, :])
    residual = np.zeros(players.shape)  # per seat: the score's gradient for the bot sitting there
    for i, j, s in _seat_pairs(players, points):
        a, b = players[:, i], players[:, j]
        r = np.where(a == b, 0.0, s - expected[a, b])  # a bot against itself is no pair
        residual[:, i] += r
        residual[:, j] -= r
    seats = players.shape[1]
    per_board = _board_sums(np.repeat(board, seats), players.ravel(), residual.ravel(), n_boards, n)
    return _dense_array(per_board.T @ per_board)


def _bootstrap_cov(
    players: IntArray,
    points: FloatArray,
    board: IntArray,
    n_boards: int,
    pairs: _Pairs,
    prior_draws: float,
    n: int,
    samples: int,
    seed: int,
) -> FloatArray:
    """Covariance of log-strengths (first bot at 0) over refits on boards drawn with replacement."""
    column = np.full(n * n, -1, dtype=np.int64)
    column[pairs.lo * n + pairs.hi] = np.arange(pairs.lo.size)
    entries: list[tuple[IntArray, IntArray, FloatArray]] = []
    for i, j, s in _seat_pairs(players, points):
        a, b = players[:, i], players[:, j]
        met = a != b
        a, b, s = a[met], b[met], s[met]
        key = np.minimum(a, b) * n + np.maximum(a, b)
        entries.append((board[met], column[key], np.where(a < b, s, 1.0 - s)))
    brd_all, col_all, s_all = (np.concatenate(part) for part in zip(*entries, strict=True))
    # Sparse whatever the size: a board meets only a few of the pairs of bots.
    shape = (n_boards, pairs.lo.size)
    board_score = sparse.coo_matrix((s_all, (brd_all, col_all)), shape=shape).tocsc()
    board_count = sparse.coo_matrix((np.ones_like(s_all), (brd_all, col_all)), shape=shape).tocsc()
    rng = np.random.default_rng(seed)
    thetas = np.empty((samples, n))
    for start in range(0, samples, BOOTSTRAP_BATCH):
        batch = min(BOOTSTRAP_BATCH, samples - start)
        draws = np.stack(
            [
                np.bincount(rng.integers(0, n_boards, n_boards), minlength=n_boards)
                for _ in range(batch)
            ],
            axis=1,
        ).astype(np.float64)
        scores = np.asarray(board_score.T @ draws)
        counts = np.asarray(board_count.T @ draws)
        for k in range(batch):
            replicate = _Pairs(pairs.lo, pairs.hi, scores[:, k], counts[:, k])
            if prior_draws == 0.0:
                _check_connected(
                    tuple(map(str, range(n))),
                    _dense(replicate, n, replicate.count),
                    _dense(replicate, n, replicate.score, replicate.count - replicate.score),
                    0.0,
                )
            thetas[start + k] = _solve(_with_prior(replicate, prior_draws), n)
    return np.asarray(np.cov(thetas, rowvar=False), dtype=np.float64)


def _dense(pairs: _Pairs, n: int, upper: FloatArray, lower: FloatArray | None = None) -> FloatArray:
    out = np.zeros((n, n))
    out[pairs.lo, pairs.hi] = upper
    out[pairs.hi, pairs.lo] = upper if lower is None else lower
    return out


def _anchor_matrix(names: tuple[str, ...], anchor: str | None) -> FloatArray:
    """Linear map from log-strengths to anchored ones: minus the mean, or minus the anchor's."""
    n = len(names)
    if anchor is None:
        centre: FloatArray = np.eye(n) - np.full((n, n), 1.0 / n)
        return centre
    shift = np.zeros((n, n))
    shift[:, names.index(anchor)] = 1.0
    return np.eye(n) - shift


def _pad(cov_free: FloatArray) -> FloatArray:
    """The covariance of all n log-strengths from that of the free ones (the first bot at 0)."""
    n = cov_free.shape[0] + 1
    full = np.zeros((n, n))
    full[1:, 1:] = cov_free
    return full


def _anchored(to_anchor: FloatArray, full: FloatArray) -> FloatArray:
    """Covariance of anchored strengths from that of all n log-strengths."""
    cov: FloatArray = to_anchor @ full @ to_anchor.T
    return (cov + cov.T) / 2.0


def _reach(score: FloatArray) -> BoolArray:
    """``[a, b]``: a chain of pairs leads from a to b, each bot scoring against the next.

    Moving a group of bots up together raises the likelihood (without the prior) for ever when
    nobody outside it ever scored against it; ``b - a`` is bounded above exactly when some chain
    leads from a to b (the graph's reachability), as the groups are then tied to each other.
    """
    n = score.shape[0]
    scored = sparse.csr_matrix(score > 0)
    pieces, _ = csgraph.connected_components(scored, directed=True, connection="strong")
    if pieces == 1:  # the usual case: everyone reaches everyone
        return np.ones((n, n), dtype=np.bool_)
    hops = csgraph.shortest_path(scored, directed=True, unweighted=True)
    reach: BoolArray = np.isfinite(hops)
    return reach


def _no_spread(
    players: IntArray, points: FloatArray, score: FloatArray, count: FloatArray, n: int
) -> BoolArray:
    """Bots whose residuals cannot show their spread: no pair won or none lost (a tie is
    neither), or fewer than MIN_MINORITY points on the rarer side (wins or losses, a tie half
    of each), where the sandwich rests on a handful of boards and the prior moves the estimate."""
    won = np.zeros(n)
    lost = np.zeros(n)
    for i, j, s in _seat_pairs(players, points):
        met = players[:, i] != players[:, j]
        a, b, s = players[met, i], players[met, j], s[met]
        won += np.bincount(a, s == 1.0, n) + np.bincount(b, s == 0.0, n)
        lost += np.bincount(a, s == 0.0, n) + np.bincount(b, s == 1.0, n)
    points_for = score.sum(axis=1)
    rarer = np.minimum(points_for, count.sum(axis=1) - points_for)
    flat: BoolArray = (won == 0) | (lost == 0) | (rarer < MIN_MINORITY)
    return flat


def _flat_directions(reach: BoolArray, no_spread: BoolArray) -> list[BoolArray]:
    """Groups of bots (as masks) along whose joint rating the residuals say nothing: each bot
    without spread, and each group that nobody outside it reaches (an open side)."""
    n = reach.shape[0]
    groups = {tuple(np.eye(n, dtype=np.bool_)[i]) for i in np.flatnonzero(no_spread)}
    if not reach.all():
        for i in range(n):
            above = reach[:, i]  # every bot with a chain to i: none outside ever scored on them
            if not above.all():
                groups.add(tuple(bool(x) for x in above))
    return [np.array(g, dtype=np.bool_) for g in sorted(groups)]


def _floor_variance(cov: FloatArray, naive: FloatArray, groups: list[BoolArray]) -> FloatArray:
    """Add variance along each group's joint rating until the group's contrast (its mean minus
    the others') has at least its naive variance: there, the board sums of the residuals are
    near zero because the group won or lost everything, not because its rating is known."""
    n = cov.shape[0]
    kept = [g for g in groups if 0 < int(g.sum()) < n]
    if not kept:
        return cov
    u = np.array(kept, dtype=np.float64)  # [group, bot]
    size = u.sum(axis=1, keepdims=True)
    contrast = u / size - (1.0 - u) / (n - size)  # contrast[g] @ u[g] == 1
    missing = np.einsum("gi,ij,gj->g", contrast, naive - cov, contrast)
    # Variance added along group h raises group g's contrast by (contrast[g] @ u[h])^2 of it:
    # the least additions that lift every contrast to its naive variance solve a small linear
    # complementarity problem; projected Gauss-Seidel finds them, in any order of the groups.
    lift = (contrast @ u.T) ** 2
    added = np.zeros(len(kept))
    for _ in range(FLOOR_SWEEPS):
        before = added.copy()
        for g in range(len(kept)):
            added[g] = max(0.0, missing[g] - (lift[g] @ added - added[g]))
        if np.abs(added - before).max() <= FLOOR_TOLERANCE * max(1.0, float(added.max())):
            break
    out: FloatArray = cov + u.T @ (added[:, None] * u)
    return out


def _bot_stats(
    names: tuple[str, ...],
    players: IntArray,
    arrays: TableArrays,
    board: IntArray,
    n_boards: int,
    score: FloatArray,
    count: FloatArray,
    confidence: float,
) -> tuple[BotStats, ...]:
    """Points per result with a board-clustered interval, placings, moons and faults per bot."""
    n, seats = len(names), players.shape[1]
    who = players.ravel()
    pts = arrays.points.ravel()
    where = np.repeat(board, seats)
    tables = np.bincount(who, minlength=n)
    mean = np.bincount(who, pts, n) / tables
    per_board = _board_sums(where, who, pts - mean[who], n_boards, n)
    squares = _column_sums(_square(per_board))
    played = _column_sums(_board_sums(where, who, np.ones_like(pts), n_boards, n) > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        se = np.sqrt(played / (played - 1.0) * squares) / tables
        t = special.stdtrit(played - 1.0, 0.5 + confidence / 2.0)
    place = arrays.placings.ravel()
    full_game = place != NO_PLACING
    placings = np.bincount(
        who[full_game] * seats + place[full_game] - 1, minlength=n * seats
    ).reshape(n, seats)
    games = placings.sum(axis=1)
    shot = arrays.moon != NO_MOON
    moons = np.bincount(players[np.nonzero(shot)[0], arrays.moon[shot]], minlength=n)
    moons += np.bincount(who, arrays.moons.ravel().astype(np.float64), n).astype(np.int64)
    faults = np.bincount(who, arrays.faults.ravel().astype(np.float64), n)
    pair_total = count.sum(axis=1)
    pair_points = score.sum(axis=1)
    rows = []
    for k, name in enumerate(names):
        ok = played[k] > 1
        rows.append(
            BotStats(
                name=name,
                tables=int(tables[k]),
                boards=int(played[k]),
                pairs=int(pair_total[k]),
                score=float(pair_points[k] / pair_total[k]) if pair_total[k] else math.nan,
                points_mean=float(mean[k]),
                points_se=float(se[k]) if ok else math.nan,
                points_low=float(mean[k] - t[k] * se[k]) if ok else math.nan,
                points_high=float(mean[k] + t[k] * se[k]) if ok else math.nan,
                games=int(games[k]),
                placings=tuple(int(c) for c in placings[k]),
                mean_placing=(
                    float(placings[k] @ np.arange(1, seats + 1) / games[k]) if games[k] else None
                ),
                moons=int(moons[k]),
                faults=int(faults[k]),
            )
        )
    return tuple(rows)


def _json_float(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)
