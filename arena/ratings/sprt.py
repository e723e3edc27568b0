"""A sequential probability ratio test on board scores: "is B stronger than A by elo1, or by elo0?".

Each board is one deal played in every seat rotation with A, B and fillers at the table; its score
in [0, 1] is B's share of the head-to-head points against A over those rotations. Under the
Bradley-Terry model of :mod:`arena.ratings.elo` its expectation is the logistic score
s(elo) = 1 / (1 + 10^(-elo / 400)) of B's advantage.

The test is the normal approximation of the generalized SPRT: after n boards with mean score m and
variance v,

    LLR = n (s1 - s0) (2 m - s0 - s1) / (2 v),        s0 = s(elo0), s1 = s(elo1),

the log-likelihood ratio of two normals with means s1 and s0 and the empirical variance. fastchess
(model "logistic") computes the exact GSPRT instead: the log-likelihood ratio of the most likely
distributions of its pentanomial outcomes with means s1 and s0 (Van den Bergh). The two agree when
elo1 - elo0 is small (the defaults 0 and 20); with a wide gap this approximation is the bolder one
(on a real run with elo0 0 and elo1 150: LLR 3.34 here, 2.68 from the exact form over the board
scores seen; simulated error rates stayed within alpha and beta). The test stops at Wald's
bounds: log(beta / (1 - alpha)) accepts H0, log((1 - beta) / alpha) accepts H1.
Board scores take few values, so a short run can show no spread at all; the variance is therefore
shrunk towards the largest a score can have (1/4), with the weight of one board, which only makes
the first few boards more cautious and fades as boards accumulate.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Final

from scipy import special  # type: ignore[import-untyped]

from arena.ratings.results import RatingsError, TableResult

__all__ = [
    "MAX_ELO",
    "Sprt",
    "SprtBounds",
    "SprtDecision",
    "SprtError",
    "board_score",
    "elo_to_score",
    "score_to_elo",
]

PRIOR_VARIANCE: Final = 0.25
"""The largest variance of a score in [0, 1]: the cautious guess before boards show the spread."""
PRIOR_VARIANCE_BOARDS: Final = 1.0
"""How many boards the guess weighs."""
ELO_INTERVAL_CONFIDENCE: Final = 0.95
MAX_ELO: Final = 2000.0
"""The largest Elo difference a hypothesis may name: past it the expected score is 0 or 1 to
within 1e-5, and the test could never tell the hypotheses apart (nor compute them, far past it)."""


class SprtError(RatingsError):
    """A test set up with impossible parameters, or given a score outside [0, 1]."""


class SprtDecision(Enum):
    """Where the test stands; the value is how a report says it."""

    CONTINUE = "continue"
    ACCEPT_H0 = "H0 accepted"
    ACCEPT_H1 = "H1 accepted"


@dataclass(frozen=True, slots=True)
class SprtBounds:
    """Wald's stopping bounds on the log-likelihood ratio."""

    lower: float
    """At or below: accept H0 (the results favour elo0 over elo1)."""
    upper: float
    """At or above: accept H1 (the results favour elo1 over elo0)."""


def _unsigned_zero(x: float) -> float:
    """``x`` with -0.0 made 0.0, so that a report never shows "-0.0" (adding 0.0 does that)."""
    return x + 0.0


def number_text(x: float) -> str:
    """``x`` as given: six digits (``:g``) when they read back as ``x``, else every digit needed.

    Six alone showed --elo1 2000.001 as "2000" (refused as out of range), and two hypotheses a
    hair apart as "[-2000, -2000]"."""
    x = _unsigned_zero(x)
    short = f"{x:g}"
    return short if float(short) == x else repr(x)


def _beyond(elo: float, a: str, side: str) -> str:
    """What B's advantage lies beyond: "stronger than A by more than 5 Elo" (side "more", above
    ``elo``), "at most 20 Elo stronger than A" (side "less", below ``elo``), and so on."""
    if side == "more":
        if elo == 0.0:
            return f"stronger than {a}"
        if elo > 0.0:
            return f"stronger than {a} by more than {elo:g} Elo"
        return f"no more than {-elo:g} Elo weaker than {a}"
    if elo == 0.0:
        return f"not stronger than {a}"
    if elo > 0.0:
        return f"at most {elo:g} Elo stronger than {a}"
    return f"weaker than {a} by more than {-elo:g} Elo"


def elo_text(elo: float, digits: int = 1) -> str:
    """A signed Elo figure ("+12.0"), an infinite one as "+∞" or "-∞" (as the ratings tables)."""
    if math.isinf(elo):
        return "+∞" if elo > 0 else "-∞"
    # Rounded first: a rating a rounding error below the anchor's (-3.9e-14) read "-0.0".
    return f"{round(elo, digits) + 0.0:+.{digits}f}"


def count_text(n: int, noun: str) -> str:
    """``n`` of ``noun``, grouped by thousands: "1 board", "1,200 boards"."""
    # Here beside elo_text, not in arena.ratings.report (matplotlib): the server's fit message
    # says its counts the same way, from a process that draws no plot.
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def elo_interval_text(low: float, high: float, digits: int = 1) -> str:
    """An Elo interval, "[-3.0, +12.0]"; an open side as ∞, outside it: "[+3.0, +∞)"."""
    # Defined here, not in arena.ratings.report (which imports matplotlib), so that the test's
    # status line shares it without that import; the ratings tables write their intervals with it.
    left = "[" if math.isfinite(low) else "("
    right = "]" if math.isfinite(high) else ")"
    return f"{left}{elo_text(low, digits)}, {elo_text(high, digits)}{right}"


def elo_to_score(elo: float) -> float:
    """Expected head-to-head score of a bot ``elo`` points stronger (logistic)."""
    return float(1.0 / (1.0 + 10.0 ** (-elo / 400.0)))


def score_to_elo(score: float) -> float:
    """Elo advantage whose expected score is ``score`` (infinite at 0 and 1)."""
    if score <= 0.0:
        return -math.inf
    if score >= 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / score - 1.0)


def board_score(results: Iterable[TableResult], a: str, b: str) -> float:
    """B's share of head-to-head points against A over ``results`` (the rotations of one board):
    fewer points wins, equal points is half, a forfeit loses (under the settling presets, the
    better place wins, as in the ratings); fillers at the table do not count."""
    points = pairs = 0.0
    for r in results:
        standing = r.standing()
        for i, x in enumerate(r.players):
            for j, y in enumerate(r.players):
                if x == b and y == a:
                    pairs += 1.0
                    points += (
                        1.0
                        if standing[i] < standing[j]
                        else 0.5
                        if standing[i] == standing[j]
                        else 0.0
                    )
    if not pairs:
        raise SprtError(f"{a!r} and {b!r} never sat at one table in these results")
    return points / pairs


class Sprt:
    """The test's state: feed it board scores with :meth:`update`; stop at the first decision."""

    def __init__(
        self, elo0: float = 0.0, elo1: float = 20.0, alpha: float = 0.05, beta: float = 0.05
    ) -> None:
        for name, elo in (("elo0", elo0), ("elo1", elo1)):
            # NaN fails every comparison, so the bound refuses it too.
            if not -MAX_ELO <= elo <= MAX_ELO:
                raise SprtError(
                    f"{name} ({elo}) must be a finite Elo difference from {-MAX_ELO:g} to "
                    f"{MAX_ELO:g}"
                )
        if not elo0 < elo1:
            raise SprtError(f"elo0 ({elo0}) must be less than elo1 ({elo1})")
        if not (0.0 < alpha < 1.0 and 0.0 < beta < 1.0 and alpha + beta < 1.0):
            raise SprtError(
                f"alpha ({alpha}) and beta ({beta}) must lie in (0, 1) with a sum below 1"
            )
        self.elo0 = elo0
        """Elo advantage of B under H0."""
        self.elo1 = elo1
        """Elo advantage of B under H1."""
        self.alpha = alpha
        """Probability of accepting H1 when H0 is true."""
        self.beta = beta
        """Probability of accepting H0 when H1 is true."""
        self._s0 = elo_to_score(elo0)
        self._s1 = elo_to_score(elo1)
        if not self._s0 < self._s1:
            # elo1 = elo0 + 1e-300 passed "elo0 below elo1" with equal scores: an LLR of 0 for
            # ever, a test that could never decide.
            raise SprtError(
                f"elo0 ({elo0}) and elo1 ({elo1}) are too close: their expected scores are the "
                "same number; set them further apart"
            )
        self._bounds = SprtBounds(math.log(beta / (1.0 - alpha)), math.log((1.0 - beta) / alpha))
        self._n = 0
        self._mean = 0.0
        self._squares = 0.0  # sum of squared deviations from the running mean (Welford)

    def update(self, score: float) -> SprtDecision:
        """Add one board's score (B's head-to-head share against A) and return the decision;
        once the test has decided, it takes no more boards (:class:`SprtError`)."""
        if not isinstance(score, numbers.Real) or not 0.0 <= score <= 1.0:  # "0.5": a TypeError
            raise SprtError(f"a board score is a number in [0, 1], not {score!r:.40}")
        decided = self.decision
        if decided is not SprtDecision.CONTINUE:
            # Fed on, the LLR could fall back between the bounds: a decided test "continued".
            raise SprtError(
                # "at board 12" read as the board the store numbers 12 (b12-...), the 13th.
                f"the test has decided ({decided.value} after {count_text(self._n, 'board')}) "
                "and takes no more boards: stop at the first decision, or start a new Sprt"
            )
        self._n += 1
        delta = score - self._mean
        self._mean += delta / self._n
        self._squares += delta * (score - self._mean)
        return self.decision

    @property
    def boards(self) -> int:
        """Board scores seen."""
        return self._n

    @property
    def mean(self) -> float:
        """Mean board score (0.5 before any board)."""
        return self._mean if self._n else 0.5

    @property
    def variance(self) -> float:
        """The variance of one board score used by the test (shrunk towards 1/4, see above)."""
        return (self._squares + PRIOR_VARIANCE_BOARDS * PRIOR_VARIANCE) / (
            self._n + PRIOR_VARIANCE_BOARDS
        )

    @property
    def llr(self) -> float:
        """The log-likelihood ratio of H1 against H0."""
        s0, s1 = self._s0, self._s1
        return self._n * (s1 - s0) * (2.0 * self.mean - s0 - s1) / (2.0 * self.variance)

    @property
    def bounds(self) -> SprtBounds:
        """Wald's bounds for alpha and beta."""
        return self._bounds

    @property
    def decision(self) -> SprtDecision:
        """ACCEPT_H1 at or above the upper bound, ACCEPT_H0 at or below the lower, else CONTINUE."""
        llr = self.llr
        if llr >= self._bounds.upper:
            return SprtDecision.ACCEPT_H1
        if llr <= self._bounds.lower:
            return SprtDecision.ACCEPT_H0
        return SprtDecision.CONTINUE

    def elo(self) -> tuple[float, float, float]:
        """B's Elo advantage from the mean score, with a 95% interval: (estimate, low, high)."""
        z = float(special.ndtri(0.5 + ELO_INTERVAL_CONFIDENCE / 2.0))  # the normal quantile
        half = z * math.sqrt(self.variance / max(self._n, 1))
        return (
            score_to_elo(self.mean),
            score_to_elo(self.mean - half),
            score_to_elo(self.mean + half),
        )

    @property
    def status(self) -> str:
        """One line for a progress display: boards, score, Elo, LLR against its bounds, decision."""
        elo, low, high = (_unsigned_zero(x) for x in self.elo())
        return (
            f"boards {self._n}  score {self.mean:.3f}  "
            f"elo {elo_text(elo)} {elo_interval_text(low, high)}  "
            f"LLR {_llr_text(self.llr, self._bounds.lower, self._bounds.upper)} "
            f"({self._bounds.lower:+.2f}, {self._bounds.upper:+.2f})  "
            f"[{number_text(self.elo0)}, {number_text(self.elo1)}]  "
            f"{self.decision.value}"
        )

    def verdict(self, a: str = "A", b: str = "B") -> str:
        """What the decision says about B against A, no more: which hypothesis the test favours.

        Accepting H1 means the results favour elo1 over elo0, so B is likely stronger than A by
        more than elo0; elo1 is the gap the test was built to detect, not a measure of the gap
        (at a true gap halfway between, H1 is accepted about half the time).
        """
        e0, e1 = number_text(self.elo0), number_text(self.elo1)
        if self.decision is SprtDecision.ACCEPT_H1:
            return (
                f"H1 accepted: the test favours elo1 = {e1} over elo0 = {e0}; {b} is likely "
                f"{_beyond(self.elo0, a, 'more')} ({e1} Elo is what the test was built to "
                "detect, not a measure of the gap)"
            )
        if self.decision is SprtDecision.ACCEPT_H0:
            return (
                f"H0 accepted: the test favours elo0 = {e0} over elo1 = {e1}; {b} is likely "
                f"{_beyond(self.elo1, a, 'less')}"
            )
        return f"no decision yet after {self._n} boards"

    def __repr__(self) -> str:
        return (
            f"Sprt(elo0={self.elo0}, elo1={self.elo1}, alpha={self.alpha}, beta={self.beta}, "
            f"boards={self._n}, llr={self.llr:.3f})"
        )


def _llr_text(llr: float, lower: float, upper: float) -> str:
    """The LLR to 2 decimals, or more where 2 would read as a bound it has not reached (+2.94
    of a bound of +2.944 said the test was decided while it went on)."""
    for places in range(2, 7):
        text = f"{_unsigned_zero(llr):+.{places}f}"
        if not lower < llr < upper or text not in (
            f"{lower:+.{places}f}",
            f"{upper:+.{places}f}",
        ):
            break
    return text
