"""Seeded simulated tournaments with known strengths, for tests, benchmarks and demonstrations.

The model makes the truth exact. In every table a seat's *utility* is the bot's strength plus a
standard Gumbel draw, and the seats are ranked by utility (fewest points = highest utility): a
Plackett-Luce ranking, whose head-to-head pairs follow Bradley-Terry exactly,
P(a beats b) = 1 / (1 + exp(-(t_a - t_b))). So the true Elo differences are the ones put in.

Deal luck makes the pairs of one board dependent, as in duplicate Hearts: a board is played in
every seat rotation, and a seat's Gumbel draw comes from a normal variable that shares a part
(``deal_luck``, a correlation) with the same seat in the other rotations, through the Gumbel
quantile function. Within one table the seats stay independent, so the margins above still hold.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Final, NoReturn

import numpy as np
from numpy.typing import NDArray
from scipy import special  # type: ignore[import-untyped]

from arena.ratings.elo import DEFAULT_BOOTSTRAP_SAMPLES, ELO_PER_NAT, IntervalMethod, fit
from arena.ratings.results import NO_MOON, RatingsError, TableArrays
from arena.rules import MAX_PLAYERS, MIN_PLAYERS

__all__ = [
    "DEFAULT_DEAL_LUCK",
    "POINTS_SCALE",
    "interval_coverage",
    "simulate_board_scores",
    "simulate_tables",
]

DEFAULT_DEAL_LUCK: Final = 0.5
"""Correlation of one seat's luck across the rotations of a board."""
POINTS_SCALE: Final = 6.5
"""Points per unit of utility: simulated points then spread roughly like a hand's 0 to 26."""
POINTS_OFFSET: Final = POINTS_SCALE * (1.0 + float(np.euler_gamma))
"""Centres an average bot's points on 6.5, a quarter of a hand's 26 (a Gumbel's mean is gamma)."""


def _gumbel_luck(
    rng: np.random.Generator, boards: int, seats: int, rotations: int, deal_luck: float
) -> NDArray[np.float64]:
    """``[board, rotation, seat]`` standard Gumbel draws, correlated across rotations."""
    if not 0.0 <= deal_luck < 1.0:
        raise RatingsError(f"deal_luck must lie in [0, 1), not {deal_luck}")
    shared = rng.standard_normal((boards, 1, seats))
    own = rng.standard_normal((boards, rotations, seats))
    z = math.sqrt(deal_luck) * shared + math.sqrt(1.0 - deal_luck) * own
    # Gumbel quantile of the normal's probability, computed in log space to stay finite.
    gumbel: NDArray[np.float64] = -np.log(-special.log_ndtr(z))
    return gumbel


def simulate_tables(
    elo: Sequence[float] | NDArray[np.float64],
    boards: int,
    *,
    seed: int | np.random.Generator = 0,
    table_size: int = 4,
    deal_luck: float = DEFAULT_DEAL_LUCK,
    names: Sequence[str] | None = None,
) -> TableArrays:
    """``boards`` boards, each played in every rotation by ``table_size`` bots drawn at random."""
    rng = np.random.default_rng(seed)
    n = len(elo)
    if n < table_size:
        raise RatingsError(f"{n} bots cannot fill a {table_size}-seat table")
    names = tuple(names) if names is not None else tuple(f"bot{i:02d}" for i in range(n))
    if list(names) != sorted(names) or len(set(names)) != n:
        raise RatingsError(f"names must be distinct and sorted: {names}")
    strength = np.asarray(elo, dtype=np.float64) / ELO_PER_NAT
    seats = rotations = table_size
    lineup = np.argsort(rng.random((boards, n)), axis=1)[:, :seats]  # distinct bots per board
    shift = (np.arange(seats)[None, :] + np.arange(rotations)[:, None]) % seats
    players = lineup[:, shift]  # [board, rotation, seat]
    utility = strength[players] + _gumbel_luck(rng, boards, seats, rotations, deal_luck)
    points = POINTS_OFFSET - POINTS_SCALE * utility
    rows = boards * rotations
    return TableArrays(
        names=names,
        board_names=tuple(f"deal{b}" for b in range(boards)),
        board=np.repeat(np.arange(boards, dtype=np.int64), rotations),
        players=players.reshape(rows, seats).astype(np.int64),
        points=points.reshape(rows, seats),
        placings=np.zeros((rows, seats), dtype=np.int64),
        moon=np.full(rows, NO_MOON, dtype=np.int64),
        faults=np.zeros((rows, seats), dtype=np.int64),
        moons=np.zeros((rows, seats), dtype=np.int64),
        forfeits=np.zeros((rows, seats), dtype=np.bool_),
    )


def simulate_board_scores(
    elo_difference: float,
    boards: int,
    *,
    seed: int | np.random.Generator = 0,
    table_size: int = 4,
    deal_luck: float = DEFAULT_DEAL_LUCK,
) -> NDArray[np.float64]:
    """Board scores of B against A (B stronger by ``elo_difference``) at tables with equal fillers:
    B's head-to-head share against A over every rotation, whose expectation is the logistic of
    the difference."""
    rng = np.random.default_rng(seed)
    seats = rotations = table_size
    strength = np.zeros(seats)
    strength[1] = elo_difference / ELO_PER_NAT  # seat 0 starts as A, seat 1 as B, fillers at 0
    shift = (np.arange(seats)[None, :] + np.arange(rotations)[:, None]) % seats
    who = np.argsort(shift, axis=1)  # who[r, bot] = the seat that bot takes in rotation r
    utility = strength[None, None, :] + np.take_along_axis(
        _gumbel_luck(rng, boards, seats, rotations, deal_luck), who[None, :, :], axis=2
    )
    b_wins = utility[:, :, 1] > utility[:, :, 0]
    scores: NDArray[np.float64] = b_wins.mean(axis=1)
    return scores


def interval_coverage(
    elo: Sequence[float] | NDArray[np.float64],
    boards: int,
    reps: int,
    *,
    seed: int = 0,
    table_size: int = 4,
    deal_luck: float = DEFAULT_DEAL_LUCK,
    method: IntervalMethod | str = IntervalMethod.SANDWICH,
    bootstrap_samples: int = DEFAULT_BOOTSTRAP_SAMPLES,
) -> tuple[float, int]:
    """Share of reported rating intervals (mean at 0) that hold the truth over ``reps`` simulated
    tournaments, and how many rows had no interval (a bot on one board), which are left out.
    ``method`` and ``bootstrap_samples`` go to :func:`fit` (the bootstrap's own seed is fit's
    default, so the same ``seed`` draws the same tournaments for either method)."""
    rng = np.random.default_rng(seed)
    truth = np.asarray(elo, dtype=np.float64)
    hits = rated = unknown = 0
    for _ in range(reps):
        f = fit(
            simulate_tables(truth, boards, seed=rng, table_size=table_size, deal_luck=deal_luck),
            method=method,
            bootstrap_samples=bootstrap_samples,
        )
        seen = truth[[int(name[3:]) for name in f.names]]
        seen = seen - seen.mean()
        for k, name in enumerate(f.names):
            interval = f.interval(name)
            if math.isnan(interval.low):
                unknown += 1
                continue
            rated += 1
            hits += interval.low <= seen[k] <= interval.high
    return hits / max(rated, 1), unknown


def _refuse(message: str) -> NoReturn:
    """One line on stderr and exit code 2, as the ``arena`` command does."""
    print(f"python -m arena.ratings.simulate: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m arena.ratings.simulate``: print the coverage of the reported intervals."""
    import argparse  # only the command line needs it

    parser = argparse.ArgumentParser(
        prog="python -m arena.ratings.simulate",
        description="Coverage of the reported 95% rating intervals in simulated tournaments.",
    )
    parser.add_argument(
        "--elo",
        type=float,
        nargs="+",
        default=[-150, -90, -30, 30, 90, 150],
        help="the bots' true Elo ratings, one per bot (default: six from -150 to 150)",
    )
    parser.add_argument("--boards", type=int, default=10, help="boards per tournament")
    parser.add_argument("--reps", type=int, default=300, help="tournaments simulated")
    parser.add_argument("--seats", type=int, default=4, help="seats per table, 3 to 6")
    parser.add_argument(
        "--deal-luck",
        type=float,
        default=DEFAULT_DEAL_LUCK,
        help="correlation of a seat's luck across the rotations of a board, 0 to below 1",
    )
    parser.add_argument("--seed", type=int, default=0, help="the simulation's seed")
    parser.add_argument(
        "--method",
        choices=[m.value for m in IntervalMethod],
        default=IntervalMethod.SANDWICH.value,
        help="how the intervals are found, as arena ratings --method (default: sandwich)",
    )
    parser.add_argument(
        "--samples",
        type=int,
        default=DEFAULT_BOOTSTRAP_SAMPLES,
        help=f"the bootstrap's resamples (default: {DEFAULT_BOOTSTRAP_SAMPLES})",
    )
    args = parser.parse_args(argv)
    # Refused here in one line each: deep inside the fit they were tracebacks (or a division).
    if not MIN_PLAYERS <= args.seats <= MAX_PLAYERS:
        _refuse(f"--seats {args.seats}: a table has {MIN_PLAYERS} to {MAX_PLAYERS} seats")
    if len(args.elo) < args.seats:
        _refuse(
            f"--elo gives {len(args.elo)} bot(s) for {args.seats}-seat tables: give at least "
            f"{args.seats} ratings, or fewer --seats"
        )
    if not all(math.isfinite(e) for e in args.elo):
        _refuse("--elo: give finite ratings")
    for flag, value in (("--boards", args.boards), ("--reps", args.reps)):
        if value < 1:
            _refuse(f"{flag} {value}: give 1 or more")
    if args.samples < 2:
        _refuse(f"--samples {args.samples}: give 2 or more")
    if not 0.0 <= args.deal_luck < 1.0:
        _refuse(f"--deal-luck {args.deal_luck:g}: give a correlation from 0 to below 1")
    share, unknown = interval_coverage(
        args.elo,
        args.boards,
        args.reps,
        seed=args.seed,
        table_size=args.seats,
        deal_luck=args.deal_luck,
        method=args.method,
        bootstrap_samples=args.samples,
    )
    by = f", bootstrap of {args.samples} samples" if args.method == "bootstrap" else ""
    print(
        f"{args.reps} tournaments of {args.boards} boards, {len(args.elo)} bots at "
        f"{args.seats}-seat tables{by}: coverage {share:.3f} ({unknown} rows without an interval)"
    )


if __name__ == "__main__":
    main()
