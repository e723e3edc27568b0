"""Rating maths: pure functions over stored table results; no I/O, no gRPC, no processes.

* :mod:`arena.ratings.results`: :class:`TableResult` (the input) and its columnar form.
* :mod:`arena.ratings.elo`: the published Bradley-Terry/Elo fit with board-clustered intervals.
* :mod:`arena.ratings.report`: rich tables, JSON, CSV and plots of a fit.
* :mod:`arena.ratings.sprt`: the sequential test "is B stronger than A" on board scores.
* :mod:`arena.ratings.live`: an incremental OpenSkill rating for live ladders, apart from the fit.
* :mod:`arena.ratings.simulate`: seeded tournaments with known strengths, for tests and benches.

The report module imports matplotlib, so it is not imported here; import it where it is used.
"""

from arena.ratings.elo import (
    DEFAULT_BOOTSTRAP_SAMPLES,
    DEFAULT_CHECKPOINTS,
    DEFAULT_CONFIDENCE,
    DEFAULT_PRIOR_DRAWS,
    ELO_PER_NAT,
    BotRating,
    BotStats,
    Interval,
    IntervalMethod,
    RatingFit,
    RatingHistory,
    fit,
    fit_by_table_size,
    rating_history,
)
from arena.ratings.live import LiveRating, LiveRatings
from arena.ratings.results import RatingsError, TableArrays, TableResult, table_sizes
from arena.ratings.sprt import Sprt, SprtBounds, SprtDecision, SprtError, board_score

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
    "LiveRating",
    "LiveRatings",
    "RatingFit",
    "RatingHistory",
    "RatingsError",
    "Sprt",
    "SprtBounds",
    "SprtDecision",
    "SprtError",
    "TableArrays",
    "TableResult",
    "board_score",
    "fit",
    "fit_by_table_size",
    "rating_history",
    "table_sizes",
]
