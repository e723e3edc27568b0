"""The schedule of a run: which bots meet at which table, on which deal, in which seats.

A *board* is one deal (or, with ``--game-to``, one sequence of deals): its seed derives from the
run's seed and the board's number, and it is the same for every group of bots, so that the whole
tournament is played on the same cards. Each board is played by each group of bots in every
seat rotation: the cards stay with the seat numbers and the bots move round the table, so that
over a board's rotations every bot has held every hand.

A single hand is always the first of its game, so on its own it would always pass left; a board of
single hands therefore takes the pass direction of its number in the rules' cycle (board 0 left,
1 right, 2 across, 3 hold, ...), written into the table's rules, so that a batch of hands meets
every direction as often as a game does. Full games (``--game-to``) cycle by themselves.

The order is board-major (board 0 for every group and rotation, then board 1, ...), so that a run
stopped half way has played every group about equally. A table's index in the schedule is its
identity in the store: the same configuration always yields the same schedule.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import combinations

from arena.config import Format, RunConfig
from arena.errors import ConfigError
from arena.rules import PassDirection, Rules
from arena.table import Clocks, FaultPolicy, TableSpec

__all__ = [
    "ScheduledTable",
    "board_id",
    "board_rules",
    "board_seed",
    "groups",
    "rotation",
    "schedule",
    "sprt_tables",
]

SEED_BITS = 63
"""Board seeds are non-negative and fit a signed 64-bit integer (SQLite, protobuf int64)."""


@dataclass(frozen=True)
class ScheduledTable:
    """One table of the schedule."""

    index: int
    """Position in the schedule: the table's key in the store."""
    board: int
    """The board number (from 0)."""
    group: int
    """Which group of bots (an index into :func:`groups`)."""
    rotation: int
    """Seat rotation (0 to players - 1)."""
    spec: TableSpec
    """What the referee plays."""


def board_seed(run_seed: int, board: int) -> int:
    """The seed of board ``board`` of a run seeded ``run_seed`` (a stable hash, any machine)."""
    digest = hashlib.sha256(f"hearts-arena/board/{run_seed}/{board}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> (64 - SEED_BITS)


def board_id(run_seed: int, board: int) -> str:
    """The board's cluster key for the ratings: every group and rotation of it shares it."""
    return f"{run_seed}:{board}"


def rotation(group: Sequence[str], shift: int) -> tuple[str, ...]:
    """The seats of ``group`` in rotation ``shift``: seat ``s`` gets ``group[(s - shift) % k]``,
    so each rotation moves every bot one seat to the left."""
    k = len(group)
    return tuple(group[(s - shift) % k] for s in range(k))


def groups(config: RunConfig) -> tuple[tuple[str, ...], ...]:
    """The groups of bots that meet, in a fixed order."""
    names = config.bot_names
    k = config.players
    if config.format is Format.ROUND_ROBIN:
        return tuple(combinations(names, k))
    candidate = config.candidate
    if candidate is None:
        raise ConfigError("a gauntlet needs a candidate")
    others = [n for n in names if n != candidate]
    return tuple((candidate, *rest) for rest in combinations(others, k - 1))


def _spec(
    table_id: str,
    rules: Rules,
    seed: int,
    seats: tuple[str, ...],
    board: str,
    hands: int | None,
    clocks: Clocks,
    faults: FaultPolicy,
    tables_per_board: int,
) -> TableSpec:
    return TableSpec(
        table_id=table_id,
        rules=rules,
        seed=seed,
        seats=seats,
        board=board,
        hands=hands,
        clocks=clocks,
        faults=faults,
        # Spectators need no login: a bot watching one table of a board it also plays (another
        # rotation, or another group on the same cards) would see its own deal played out.
        watchable=tables_per_board == 1,
    )


def schedule(config: RunConfig) -> list[ScheduledTable]:
    """Every table of the run, in the order they are dealt out."""
    tables: list[ScheduledTable] = []
    hands = None if config.game_to is not None else 1
    all_groups = groups(config)
    per_board = len(all_groups) * config.players
    for board in range(config.boards):
        seed = board_seed(config.seed, board)
        rules = config.rules if hands is None else board_rules(config.rules, board)
        key = board_id(config.seed, board)
        for g, group in enumerate(all_groups):
            for r in range(config.players):
                tables.append(
                    ScheduledTable(
                        index=len(tables),
                        board=board,
                        group=g,
                        rotation=r,
                        spec=_spec(
                            f"b{board}-g{g}-r{r}",
                            rules,
                            seed,
                            rotation(group, r),
                            key,
                            hands,
                            config.clocks,
                            config.faults,
                            per_board,
                        ),
                    )
                )
    return tables


def board_rules(rules: Rules, board: int) -> Rules:
    """The rules of a single-hand board: the pass direction of its number in the cycle."""
    if rules.pass_count == 0 or len(rules.cycle) == 1:
        return rules
    return _passing(rules, rules.pass_direction(board))


@functools.lru_cache(maxsize=64)
def _passing(rules: Rules, direction: PassDirection) -> Rules:
    """``rules`` passing ``direction`` at every hand: one object per direction, shared by every
    board that passes that way. A Rules per board, held by the schedule for the whole run,
    grew by its cached properties (about 1.5 KB) as the board was played: a batch's memory
    rose with every board it played, by about 150 MB over --boards 100000."""
    return rules.replace(pass_cycle=(direction,))


def sprt_tables(
    seats: Sequence[str],
    rules: Rules,
    run_seed: int,
    clocks: Clocks,
    faults: FaultPolicy,
    hands: int | None = 1,
    first_board: int = 0,
) -> Iterator[ScheduledTable]:
    """An endless schedule for a sequential test: board after board of one group, every rotation."""
    group = tuple(seats)
    k = len(group)
    board = first_board
    while True:
        seed = board_seed(run_seed, board)
        board_rules_ = rules if hands is None else board_rules(rules, board)
        for r in range(k):
            yield ScheduledTable(
                index=board * k + r,
                board=board,
                group=0,
                rotation=r,
                spec=_spec(
                    f"b{board}-r{r}",
                    board_rules_,
                    seed,
                    rotation(group, r),
                    board_id(run_seed, board),
                    hands,
                    clocks,
                    faults,
                    k,
                ),
            )
        board += 1
