"""An incremental rating for live ladders: OpenSkill's Plackett-Luce model, one table at a time.

It moves at once after each table, which a ladder's matchmaking and leaderboard want, but it
depends on the order of play and its uncertainties ignore that the seats of one board share a deal.
So it is kept apart from the published fit (:func:`arena.ratings.fit`), which rates the whole
tournament at once with honest intervals; its numbers are on OpenSkill's scale (a new bot has
mu 25, sigma 25/3), not Elo. Updates are deterministic: the same results in the same order give the
same ratings.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from openskill.models import PlackettLuce

from arena.ratings.results import RatingsError, TableResult

__all__ = ["ORDINAL_SIGMAS", "LiveRating", "LiveRatings"]

ORDINAL_SIGMAS: Final = 3.0
"""A leaderboard ranks by mu - 3 sigma: a bot climbs by being both good and well measured."""


@dataclass(frozen=True, slots=True)
class LiveRating:
    """A bot's live rating."""

    name: str
    mu: float
    """Estimated skill."""
    sigma: float
    """Uncertainty of ``mu``."""
    tables: int
    """Tables it has been rated on."""

    @property
    def ordinal(self) -> float:
        """The conservative skill the leaderboard ranks by: mu - 3 sigma."""
        return self.mu - ORDINAL_SIGMAS * self.sigma

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping."""
        return {
            "name": self.name,
            "mu": self.mu,
            "sigma": self.sigma,
            "ordinal": self.ordinal,
            "tables": self.tables,
        }


class LiveRatings:
    """OpenSkill ratings of a ladder, updated with :meth:`update` as each table finishes."""

    def __init__(self, model: PlackettLuce | None = None) -> None:
        self._model = model if model is not None else PlackettLuce()
        self._ratings: dict[str, LiveRating] = {}

    def rating(self, name: str) -> LiveRating:
        """The bot's current rating; a bot not yet seen has the model's starting rating."""
        found = self._ratings.get(name)
        if found is None:
            return LiveRating(name, float(self._model.mu), float(self._model.sigma), 0)
        return found

    def update(self, result: TableResult) -> None:
        """Rate one table: seats ranked by points (fewest first, equal points share a rank; a
        forfeited seat after every other)."""
        if not isinstance(result, TableResult):  # None was an AttributeError on .players
            raise RatingsError(f"update takes one TableResult, got {result!r:.60}")
        if len(set(result.players)) != len(result.players):
            raise RatingsError(
                f"board {result.board!r}: a live rating needs distinct bots, not {result.players}"
            )
        before = [self.rating(name) for name in result.players]
        teams = [[self._model.rating(mu=r.mu, sigma=r.sigma, name=r.name)] for r in before]
        ranks = _ranks(result.standing())
        after = self._model.rate(teams, ranks=ranks)
        for old, (new,) in zip(before, after, strict=True):
            self._ratings[old.name] = LiveRating(
                old.name, float(new.mu), float(new.sigma), old.tables + 1
            )

    def update_many(self, results: Iterable[TableResult]) -> None:
        """Rate tables in order."""
        for result in results:
            self.update(result)

    def leaderboard(self) -> tuple[LiveRating, ...]:
        """Every rated bot, best ordinal first (ties by name)."""
        return tuple(sorted(self._ratings.values(), key=lambda r: (-r.ordinal, r.name)))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping: the leaderboard."""
        return {
            "model": "openskill.PlackettLuce",
            "ratings": [r.to_dict() for r in self.leaderboard()],
        }


def _ranks(standing: tuple[float, ...]) -> list[float]:
    """Each seat's rank, 1 for the lowest key, equal keys sharing the lowest rank among them:
    scipy.stats.rankdata(standing, method="min"), written out (importing scipy.stats for it
    alone doubled the instructions of importing the ratings: every server's and `arena run`'s
    start)."""
    return [1.0 + sum(other < mine for other in standing) for mine in standing]
