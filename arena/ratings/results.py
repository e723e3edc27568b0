"""The input of the rating maths: table results, and the same results as columns of numbers.

A :class:`TableResult` is one hand (or one whole game) at one table: who sat where, and the points
each seat took. :class:`TableArrays` holds many results of one table size as numpy arrays, so that
the fit never loops in Python over results; :meth:`TableArrays.from_results` converts once.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np
from numpy.typing import NDArray

from arena.errors import ArenaError
from arena.rules import MAX_PLAYERS, MIN_PLAYERS

__all__ = ["NO_MOON", "RatingsError", "TableArrays", "TableResult", "table_sizes"]

NO_MOON = -1
"""The value of :attr:`TableArrays.moon` for a result where nobody shot the moon."""
NO_PLACING = 0
"""The value of :attr:`TableArrays.placings` for a result that is not a full game."""
FORFEIT_GAP = 1e9
"""Added to a forfeited seat's points to rank it: below every seat that did not forfeit (no
table's points come near it), and by points among the forfeited."""
_FLAGS = (bool, np.bool_, numbers.Integral)
"""What a forfeit flag may be (0 and 1 too)."""
_PLAIN: dict[type | tuple[type, ...], frozenset[type]] = {
    str: frozenset((str,)),
    numbers.Real: frozenset((float, int)),
    numbers.Integral: frozenset((int,)),
    _FLAGS: frozenset((bool, int)),
}
"""The types taken at once for each kind of :meth:`TableResult.__post_init__`'s checks."""


class RatingsError(ArenaError, ValueError):
    """Results that cannot be rated as asked: none, a disconnected graph, a bad anchor."""


@dataclass(frozen=True, slots=True)
class TableResult:
    """One hand or one game at one table, as the ratings see it."""

    board: str
    """Identity of the deal; every seat rotation of one deal shares it (the cluster key)."""
    players: tuple[str, ...]
    """Bot name per seat (3 to 6 seats)."""
    points: tuple[float, ...]
    """Points per seat for the hand or game; lower is better."""
    placings: tuple[int, ...] | None = None
    """For full games: place per seat, 1 = winner, ties share a place; None for a single hand."""
    moon: int | None = None
    """The seat that shot the moon, if any (a single hand)."""
    faults: tuple[int, ...] | None = None
    """Faults (timeouts, illegal answers) per seat, if recorded."""
    moons: tuple[int, ...] | None = None
    """Moons shot per seat over the hands of a game, if counted (instead of ``moon``)."""
    forfeits: tuple[bool, ...] | None = None
    """Seats whose bot forfeited (too many faults, a disconnect past the grace period, a crash):
    such a seat loses to every seat that did not, whatever the points; None: nobody did."""
    ranking: tuple[int, ...] | None = None
    """Place per seat (1 best, ties share) where the game ranks its seats otherwise than by the
    points (settling rules rank by the counters won); when given it decides the pairs."""

    def standing(self) -> tuple[float, ...]:
        """The key the seats are ranked by, lower better: the ranking if given, else the points,
        a forfeit after them."""
        if self.ranking is not None:
            return tuple(float(r) for r in self.ranking)
        if self.forfeits is None:
            return self.points
        return tuple(p + FORFEIT_GAP * f for p, f in zip(self.points, self.forfeits, strict=True))

    def __post_init__(self) -> None:
        if isinstance(self.players, str):  # "abcd" was rated as four bots a, b, c and d
            raise RatingsError(
                f"board {self.board!r}: players must be the bots' names, one per seat, got the "
                f"text {self.players!r:.60}"
            )
        # Checked before they are used: None, numbers or text in them failed later with a bare
        # TypeError (in len(), a comparison or numpy). A bot at two seats is allowed: the
        # referee seats two sessions of one bot where a table asks for it; it makes no pair.
        _check_row(self.board, "players", self.players, str, "the bots' names")
        _check_row(self.board, "points", self.points, numbers.Real, "numbers")
        seats = len(self.players)
        for field, value in (
            ("placings", self.placings),
            ("ranking", self.ranking),
            ("faults", self.faults),
            ("moons", self.moons),
        ):
            if value is not None:
                _check_row(self.board, field, value, numbers.Integral, "whole numbers")
        if self.forfeits is not None:
            _check_row(self.board, "forfeits", self.forfeits, _FLAGS, "flags (True or False)")
        if self.moon is not None and (
            isinstance(self.moon, bool) or not isinstance(self.moon, numbers.Integral)
        ):
            raise RatingsError(
                f"board {self.board!r}: moon must be a seat number or None, not {self.moon!r:.40}"
            )
        if not MIN_PLAYERS <= seats <= MAX_PLAYERS:
            raise RatingsError(
                f"board {self.board!r}: {seats} seats {self.players!r}; "
                f"a table has {MIN_PLAYERS} to {MAX_PLAYERS}"
            )
        if len(self.points) != seats:
            raise RatingsError(
                f"board {self.board!r}: {len(self.points)} points {self.points!r} "
                f"for {seats} seats {self.players!r}"
            )
        if not all(math.isfinite(p) for p in self.points):
            raise RatingsError(f"board {self.board!r}: points {self.points!r} are not all finite")
        if self.placings is not None and (
            len(self.placings) != seats or not all(1 <= p <= seats for p in self.placings)
        ):
            raise RatingsError(
                f"board {self.board!r}: placings {self.placings!r} must be {seats} places "
                f"between 1 and {seats}"
            )
        if self.ranking is not None and (
            len(self.ranking) != seats or not all(1 <= r <= seats for r in self.ranking)
        ):
            raise RatingsError(
                f"board {self.board!r}: ranking {self.ranking!r} must be {seats} places "
                f"between 1 and {seats}"
            )
        if self.forfeits is not None and len(self.forfeits) != seats:
            raise RatingsError(
                f"board {self.board!r}: forfeits {self.forfeits!r} must be {seats} flags"
            )
        if self.moons is not None and (
            self.moon is not None or len(self.moons) != seats or not all(m >= 0 for m in self.moons)
        ):
            raise RatingsError(
                f"board {self.board!r}: moons {self.moons!r} must be {seats} counts >= 0 "
                "(and no single moon beside them)"
            )
        if self.moon is not None and not 0 <= self.moon < seats:
            raise RatingsError(
                f"board {self.board!r}: moon seat {self.moon} is not a seat of {seats}"
            )
        if self.faults is not None and (
            len(self.faults) != seats or not all(f >= 0 for f in self.faults)
        ):
            raise RatingsError(
                f"board {self.board!r}: faults {self.faults!r} must be {seats} counts >= 0"
            )


def _check_row(
    board: str, field: str, values: object, kind: type | tuple[type, ...], what: str
) -> None:
    """Raise RatingsError unless ``values`` is a sequence of ``kind``, one per seat (a bool is
    no number here, except where ``kind`` is :data:`_FLAGS`)."""
    # Plain tuples of plain values at once: an ABC's isinstance costs a microsecond a value.
    if type(values) is tuple and _PLAIN[kind].issuperset(map(type, values)):
        return
    if isinstance(values, Sequence | np.ndarray) and not isinstance(values, str):
        flags = kind is _FLAGS
        if all(
            isinstance(v, kind) and (flags or not isinstance(v, bool | np.bool_)) for v in values
        ):
            return
    raise RatingsError(f"board {board!r}: {field} must be {what}, one per seat, not {values!r:.60}")


def checked_results(results: object) -> list[TableResult]:
    """``results`` as a list, refused with a RatingsError unless it holds only TableResults (a
    dict or None among them was an AttributeError on ``.players``)."""
    if not isinstance(results, Iterable) or isinstance(results, str | bytes):
        raise RatingsError(f"results must be a list of TableResult, got {results!r:.60}")
    listed = list(results)
    for r in listed:
        if not isinstance(r, TableResult):
            raise RatingsError(f"results must be TableResult objects, got {r!r:.60}")
    return listed


def table_sizes(results: Iterable[TableResult]) -> tuple[int, ...]:
    """The distinct table sizes among ``results``, ascending."""
    return _sizes(checked_results(results))


def _sizes(results: Iterable[TableResult]) -> tuple[int, ...]:
    return tuple(sorted({len(r.players) for r in results}))


@dataclass(frozen=True, slots=True, eq=False)
class TableArrays:
    """Results of one table size as arrays; row ``t`` is the ``t``-th result in the given order."""

    names: tuple[str, ...]
    """Bot names, sorted; a bot's code is its index here."""
    board_names: tuple[str, ...]
    """Board names; a board's code is its index here."""
    board: NDArray[np.int64]
    """Board code per result, shape (results,)."""
    players: NDArray[np.int64]
    """Bot code per seat, shape (results, seats)."""
    points: NDArray[np.float64]
    """Points per seat, shape (results, seats); lower is better."""
    placings: NDArray[np.int64]
    """Place per seat for full games, :data:`NO_PLACING` where the result is a single hand."""
    moon: NDArray[np.int64]
    """Seat that shot the moon per result, :data:`NO_MOON` for none."""
    moons: NDArray[np.int64]
    """Moons shot per seat over a game's hands, shape (results, seats); 0 where not counted."""
    forfeits: NDArray[np.bool_]
    """Whether the seat's bot forfeited, shape (results, seats)."""
    faults: NDArray[np.int64]
    """Faults per seat, 0 where not recorded."""
    ranking: NDArray[np.float64] | None = None
    """:attr:`TableResult.ranking` per seat, shape (results, seats), NaN in the rows without
    one; None when no result has one."""

    def __post_init__(self) -> None:
        rows, seats = self.players.shape
        if self.ranking is not None and self.ranking.shape != (rows, seats):
            raise RatingsError(f"ranking has shape {self.ranking.shape}, players {(rows, seats)}")
        for field, array in (
            ("points", self.points),
            ("placings", self.placings),
            ("faults", self.faults),
            ("moons", self.moons),
            ("forfeits", self.forfeits),
        ):
            if array.shape != (rows, seats):
                raise RatingsError(f"{field} has shape {array.shape}, players {(rows, seats)}")
        for field, array in (("board", self.board), ("moon", self.moon)):
            if array.shape != (rows,):
                raise RatingsError(f"{field} has shape {array.shape}, expected {(rows,)}")
        if not MIN_PLAYERS <= seats <= MAX_PLAYERS:
            raise RatingsError(f"{seats} seats; a table has {MIN_PLAYERS} to {MAX_PLAYERS}")
        if rows and not (self.players.min() >= 0 and self.players.max() < len(self.names)):
            raise RatingsError(f"player codes must index the {len(self.names)} names")
        if rows and not (self.board.min() >= 0 and self.board.max() < len(self.board_names)):
            raise RatingsError(f"board codes must index the {len(self.board_names)} board names")

    def __len__(self) -> int:
        return int(self.players.shape[0])

    def standing(self) -> NDArray[np.float64]:
        """Per seat, the key seats are ranked by (lower better): :meth:`TableResult.standing`."""
        by_points = self.points + FORFEIT_GAP * self.forfeits
        if self.ranking is None:
            return by_points
        return np.where(np.isnan(self.ranking), by_points, self.ranking)

    @property
    def table_size(self) -> int:
        """Seats per table."""
        return int(self.players.shape[1])

    def prefix(self, count: int) -> TableArrays:
        """The first ``count`` results (views, not copies); names and boards keep their codes."""
        if count < 0:  # a slice would take all but the last -count, not "the first count"
            raise RatingsError(f"prefix takes a count of 0 or more results, not {count}")
        return TableArrays(
            names=self.names,
            board_names=self.board_names,
            board=self.board[:count],
            players=self.players[:count],
            points=self.points[:count],
            placings=self.placings[:count],
            moon=self.moon[:count],
            faults=self.faults[:count],
            moons=self.moons[:count],
            forfeits=self.forfeits[:count],
            ranking=None if self.ranking is None else self.ranking[:count],
        )

    @classmethod
    def from_results(
        cls, results: Sequence[TableResult], table_size: int | None = None
    ) -> TableArrays:
        """Convert results to arrays, keeping only ``table_size`` seats (all, if only one size)."""
        results = checked_results(results)
        if table_size is None:
            sizes = _sizes(results)  # checked just above
            if len(sizes) > 1:
                raise RatingsError(
                    f"results mix table sizes {sizes}; ratings are kept apart per table size: "
                    "choose one (table_size=N) or use fit_by_table_size"
                )
            table_size = sizes[0] if sizes else MIN_PLAYERS
        else:
            results = [r for r in results if len(r.players) == table_size]
        seats = table_size
        rows = len(results)
        cells = rows * seats
        flat_players = [p for r in results for p in r.players]
        names = tuple(sorted(set(flat_players)))
        code = {name: i for i, name in enumerate(names)}
        boards: dict[str, int] = {}
        board = np.fromiter(
            (boards.setdefault(r.board, len(boards)) for r in results), np.int64, rows
        )
        no_seats = (0,) * seats
        ranking = None
        if any(r.ranking is not None for r in results):
            unranked = (math.nan,) * seats
            ranking = np.fromiter(
                chain.from_iterable(r.ranking or unranked for r in results), np.float64, cells
            ).reshape(rows, seats)
        return cls(
            names=names,
            board_names=tuple(boards),
            board=board,
            players=np.fromiter(map(code.__getitem__, flat_players), np.int64, cells).reshape(
                rows, seats
            ),
            points=np.fromiter(
                chain.from_iterable(r.points for r in results), np.float64, cells
            ).reshape(rows, seats),
            placings=np.fromiter(
                chain.from_iterable(r.placings or no_seats for r in results), np.int64, cells
            ).reshape(rows, seats),
            moon=np.fromiter(
                (NO_MOON if r.moon is None else r.moon for r in results), np.int64, rows
            ),
            faults=np.fromiter(
                chain.from_iterable(r.faults or no_seats for r in results), np.int64, cells
            ).reshape(rows, seats),
            moons=np.fromiter(
                chain.from_iterable(r.moons or no_seats for r in results), np.int64, cells
            ).reshape(rows, seats),
            forfeits=np.fromiter(
                chain.from_iterable(r.forfeits or no_seats for r in results), np.bool_, cells
            ).reshape(rows, seats),
            ranking=ranking,
        )

    def to_results(self) -> list[TableResult]:
        """The results as :class:`TableResult` values (the inverse of :meth:`from_results`)."""
        names, boards = self.names, self.board_names
        full_game: list[bool] = (self.placings != NO_PLACING).all(axis=1).tolist()
        faulted: list[bool] = np.any(self.faults != 0, axis=1).tolist()
        counted: list[bool] = np.any(self.moons != 0, axis=1).tolist()
        lost: list[bool] = np.any(self.forfeits, axis=1).tolist()
        ranked = (
            [None] * len(self)
            if self.ranking is None
            else [
                None if math.isnan(row[0]) else tuple(int(r) for r in row)
                for row in self.ranking.tolist()
            ]
        )
        return [
            TableResult(
                board=boards[board],
                players=tuple(names[p] for p in players),
                points=tuple(points),
                placings=tuple(placings) if game else None,
                moon=None if moon == NO_MOON else moon,
                faults=tuple(faults) if fault else None,
                moons=tuple(moons) if count else None,
                forfeits=tuple(forfeits) if forfeit else None,
                ranking=rank,
            )
            for (
                board,
                players,
                points,
                placings,
                moon,
                faults,
                moons,
                forfeits,
                game,
                fault,
                count,
                forfeit,
                rank,
            ) in zip(
                self.board.tolist(),
                self.players.tolist(),
                self.points.tolist(),
                self.placings.tolist(),
                self.moon.tolist(),
                self.faults.tolist(),
                self.moons.tolist(),
                self.forfeits.tolist(),
                full_game,
                faulted,
                counted,
                lost,
                ranked,
                strict=True,
            )
        ]
