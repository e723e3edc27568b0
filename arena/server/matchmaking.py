"""Matchmaking for the ladder and the fixed event, as pure functions over the lobby's state.

The ladder's question, every time a session becomes idle or a table ends: which tables can start
now? :func:`plan_ladder` answers it from the idle sessions per bot, each bot's games and rating,
and the duplicate boards still owed. Fairness first: the idle bot with the fewest games is seated
first; then, if a board it has already played part of is owed by a group that is all idle, that
board's next seat rotation is dealt (duplicate play, as in duplicate bridge); otherwise a new group
forms around it from the idle bots closest in rating, with a nudge towards bots with few games (at
most one rating scale) and bots it has met least, leaving out bots whose own owed board is ready
to deal (when the bots mix, a group that still has to take one deals that board first). A new
board is dealt in as many rotations at once as the group's idle sessions allow; the rest are owed
(:class:`OwedBoard`) and dealt later, when the group is idle again.

Bots mix: a new group that would be the very group of its anchor's last table is held (not
seated) while some other bot is at a table, since that bot will soon be free to make another
group; the caller lets it sit down again (``may_repeat``) after a bounded wait. Without this, a
table's bots, the only ones idle when it ends, sat down together again and again: one soak's 12
bots played 36,768 games in 30 distinct foursomes, and 9 pairs never met.

The fixed event is a schedule made once (:func:`event_schedule`: every combination of entrants,
every board in every rotation) and played as the entrants' sessions allow (:func:`plan_event`).

A board's deal seed is a keyed hash of its public name (:func:`board_seed`) under the
competition's secret, which the database keeps and nothing serves: the name (``SEED:INDEX``, which
the lobby and the games list show) says nothing of the cards.

Nothing here reads a clock, does I/O or draws unseeded randomness: the caller passes a seed.
"""

from __future__ import annotations

import hashlib
import hmac
import random
from collections.abc import Collection, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, replace
from enum import Enum
from functools import partial
from itertools import combinations

from arena.errors import ConfigError

__all__ = [
    "DEFAULT_GAMES_SCALE",
    "DEFAULT_MEETINGS_SCALE",
    "DEFAULT_RATING_SCALE",
    "MAX_GAMES_COST",
    "Candidate",
    "EventFormat",
    "OwedBoard",
    "Plan",
    "PlannedTable",
    "board_name",
    "board_seed",
    "event_schedule",
    "plan_event",
    "plan_ladder",
    "prune_owed",
    "rotate",
]

DEFAULT_RATING_SCALE = 25.0 / 3.0
"""A rating difference that costs as much as :data:`DEFAULT_GAMES_SCALE` games (one OpenSkill
sigma at the start)."""
DEFAULT_GAMES_SCALE = 10.0
"""Games more than the least-played idle bot that cost as much as one rating scale."""
MAX_GAMES_COST = 1.0
"""The most that having played more games than the least-played idle bot costs (in rating
scales): a nudge, not a wall."""
DEFAULT_MEETINGS_SCALE = 8.0
"""Games together more than with the least-met idle bot that cost as much as one rating scale
(two boards of four rotations)."""
_SET_ASIDE = 1e6
"""The cost of a bot whose own owed board could be dealt now: chosen only when nothing else is."""
MAX_OWED_AGE = 2000
"""Boards older than this (in boards dealt since) are no longer owed: their group is gone."""
MAX_OWED = 500
"""The most boards owed at once (the oldest go first)."""
JITTER = 0.25
"""Random cost added per candidate, in rating scales, so that equal bots do not always meet the
same opponents."""
_SEED_MASK = (1 << 63) - 1


@dataclass(frozen=True)
class Candidate:
    """One bot as matchmaking sees it."""

    name: str
    """The bot's name."""
    idle: int
    """Its sessions waiting in the lobby now."""
    games: int
    """Games it has played or is playing (fewer means seated sooner)."""
    rating: float = 0.0
    """Its live rating (for closeness only; any unit, with ``rating_scale`` to match)."""


@dataclass(frozen=True)
class OwedBoard:
    """A board dealt in some rotations to a group that still owes the others."""

    board: str
    """The board's id (the ratings' cluster key)."""
    seed: int
    """The deal's seed."""
    group: tuple[str, ...]
    """The bots in rotation 0's seat order."""
    rotations: tuple[int, ...]
    """Rotations not dealt yet, ascending."""
    created: int = 0
    """The board's index when it was made (older boards are dealt first; also its number, which
    sets the pass direction of a one-hand table)."""


@dataclass(frozen=True)
class PlannedTable:
    """A table to start now."""

    seats: tuple[str, ...]
    """Bot name per seat."""
    seed: int
    """The deal's seed."""
    board: str
    """The board's id."""
    rotation: int
    """Which cyclic shift of the board's group this is (0 to players-1)."""
    number: int
    """The board's index (in a table of one hand, its pass direction is the cycle's at this
    number, the same in every rotation)."""


@dataclass(frozen=True)
class Plan:
    """What :func:`plan_ladder` decided."""

    tables: tuple[PlannedTable, ...]
    """The tables to start, in order."""
    owed: tuple[OwedBoard, ...]
    """The boards still owed after these tables, oldest first."""
    next_board: int
    """The index the next new board gets."""
    held: tuple[frozenset[str], ...] = ()
    """New groups not formed because each is the group of its anchor's last table while other
    bots are at tables (see ``may_repeat``)."""


def board_name(seed: int, index: int) -> str:
    """The public name of a competition's ``index``-th board (the ratings' cluster key)."""
    return f"{seed}:{index}"


def board_seed(secret: str, seed: int, index: int) -> int:
    """The deal seed of a competition's ``index``-th board: HMAC-SHA256 of its public name under
    the competition's ``secret``, so that the name says nothing of the deal without the secret
    (stable across restarts: the database keeps the secret)."""
    key = secret.encode()
    digest = hmac.new(key, board_name(seed, index).encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") & _SEED_MASK


def rotate(group: Sequence[str], rotation: int) -> tuple[str, ...]:
    """The seats of a group in one rotation: bot i of the group sits at seat (i + rotation) % K."""
    k = len(group)
    seats = [""] * k
    for i, bot in enumerate(group):
        seats[(i + rotation) % k] = bot
    return tuple(seats)


def _check_players(players: int) -> None:
    if players < 2:
        raise ConfigError(f"a table needs at least 2 seats, got {players}")


def plan_ladder(
    candidates: Iterable[Candidate],
    owed: Sequence[OwedBoard],
    *,
    players: int,
    ladder_seed: int,
    secret: str,
    next_board: int,
    seed: int,
    max_tables: int | None = None,
    rating_scale: float = DEFAULT_RATING_SCALE,
    games_scale: float = DEFAULT_GAMES_SCALE,
    duplicate: bool = True,
    meetings: Mapping[frozenset[str], int] | None = None,
    meetings_scale: float = DEFAULT_MEETINGS_SCALE,
    previous: Mapping[str, frozenset[str]] | None = None,
    busy: Collection[str] = (),
    may_repeat: Collection[frozenset[str]] = (),
) -> Plan:
    """The ladder tables that can start now, with the duplicate boards still owed after them.

    ``secret`` keys the new boards' deal seeds (:func:`board_seed`); ``seed`` drives the
    tie-breaks and the jitter (pass a fresh one each call); ``max_tables`` bounds the tables
    started at once (None: as many as the lobby allows). ``meetings`` counts the games each pair
    of bots (a two-bot frozenset) has sat at together; ``previous`` gives each bot's last table
    (the set of its bots); ``busy`` names the bots at tables now. A new group equal to its
    anchor's ``previous`` table is held (:attr:`Plan.held`) while a bot outside it is busy,
    unless the group is in ``may_repeat``. With ``previous`` given, a new group that would take
    bots of a group whose owed board is ready deals that board first (else it waited for its
    whole group to be idle again, which with a bot or two left over seldom happened), unless
    that starts fewer tables now.
    """
    _check_players(players)
    plan = partial(
        _plan_ladder,
        list(candidates),
        owed,
        players=players,
        ladder_seed=ladder_seed,
        secret=secret,
        next_board=next_board,
        seed=seed,
        max_tables=max_tables,
        rating_scale=rating_scale,
        games_scale=games_scale,
        duplicate=duplicate,
        meetings=meetings or {},
        meetings_scale=meetings_scale,
        previous=previous,
        busy=busy,
        may_repeat=may_repeat,
    )
    first, dealt_first = plan(owed_first=previous is not None)
    if dealt_first:
        # Six bots of two sessions: the two left over waited while the group dealt its owed
        # rotation, and four sessions stayed idle that could have played two tables with the
        # group's spare sessions; that group was soon idle together anyway. With one bot of
        # one session left over, dealing the owed board first costs no table: another bot is
        # left over instead.
        other, _ = plan(owed_first=False)
        if len(other.tables) > len(first.tables):
            return other
    return first


def _plan_ladder(
    candidates: Sequence[Candidate],
    owed: Sequence[OwedBoard],
    *,
    players: int,
    ladder_seed: int,
    secret: str,
    next_board: int,
    seed: int,
    max_tables: int | None,
    rating_scale: float,
    games_scale: float,
    duplicate: bool,
    meetings: Mapping[frozenset[str], int],
    meetings_scale: float,
    previous: Mapping[str, frozenset[str]] | None,
    busy: Collection[str],
    may_repeat: Collection[frozenset[str]],
    owed_first: bool,
) -> tuple[Plan, bool]:
    """:func:`plan_ladder`'s plan, dealing ready owed boards before a new group takes their
    bots (``owed_first``) or not; and whether that dealt one first."""
    rng = random.Random(seed)
    idle = {c.name: c.idle for c in candidates if c.idle > 0}
    info = {c.name: c for c in candidates}
    games = {c.name: c.games for c in candidates}
    owed_list = [b for b in owed if b.rotations]
    tables: list[PlannedTable] = []
    order = {name: rng.random() for name in sorted(idle)}
    dealt_first = False
    last = previous or {}
    playing = set(busy)
    held: list[frozenset[str]] = []
    waiting: set[str] = set()  # anchors whose group was held: others may still seat them

    def room() -> bool:
        return max_tables is None or len(tables) < max_tables

    def deal(index: int) -> None:
        board = owed_list[index]
        rotation, rest = board.rotations[0], board.rotations[1:]
        seat(
            PlannedTable(
                rotate(board.group, rotation), board.seed, board.board, rotation, board.created
            )
        )
        if rest:
            owed_list[index] = replace(board, rotations=rest)
        else:
            del owed_list[index]

    def seat(table: PlannedTable) -> None:
        tables.append(table)
        playing.update(table.seats)
        for bot in table.seats:
            idle[bot] -= 1
            if idle[bot] == 0:
                del idle[bot]
            games[bot] = games.get(bot, 0) + 1

    while room() and len(idle) >= players and not waiting.issuperset(idle):
        anchor = min(
            (n for n in idle if n not in waiting), key=lambda n: (games.get(n, 0), order[n])
        )
        # Duplicate first: an owed board of the anchor's whose whole group is idle.
        index = _ready_board(owed_list, {anchor}, idle)
        if index is not None:
            deal(index)
            continue
        least = min(games.get(n, 0) for n in idle)
        least_met = min(meetings.get(frozenset((anchor, n)), 0) for n in idle if n != anchor)
        # Bots whose own owed board is ready are left to deal it, unless nobody else is idle.
        ready = {bot for b in owed_list if all(x in idle for x in b.group) for bot in b.group}
        base = info[anchor].rating if anchor in info else 0.0
        costs = {
            n: abs((info[n].rating if n in info else 0.0) - base) / rating_scale
            # At most one rating scale: a bot whose table ran slowly has fewer games, and an
            # unbounded term kept seating its tablemates with it (and with each other) only.
            + min((games.get(n, 0) - least) / games_scale, MAX_GAMES_COST)
            + (meetings.get(frozenset((anchor, n)), 0) - least_met) / meetings_scale
            + (_SET_ASIDE if n in ready else 0.0)
            + JITTER * rng.random()
            for n in sorted(idle)
            if n != anchor
        }
        others = sorted(costs, key=lambda n: (costs[n], n))
        group = [anchor, *others[: players - 1]]
        members = frozenset(group)
        index = _ready_board(owed_list, members, idle) if owed_first else None
        if index is not None:
            # It would take bots of a group whose owed board is ready, which then waited for
            # the whole group to be idle at once: with 13 bots, the one left over broke up
            # nearly every such group as its table ended, and a tenth of the boards stayed
            # owed. Deal the board; the anchor's turn comes again.
            deal(index)
            dealt_first = True
            continue
        if (
            last.get(anchor) == members
            and members not in may_repeat
            # Others at tables, or about to be (an owed board ready to deal), will be free soon.
            and not (playing | ready).issubset(members)
        ):
            # The same bots again, while others will soon be free: wait for them.
            waiting.add(anchor)
            if members not in held:
                held.append(members)
            continue
        rng.shuffle(group)
        index_new = next_board
        next_board += 1
        new_seed = board_seed(secret, ladder_seed, index_new)
        name = board_name(ladder_seed, index_new)
        rotations = list(range(players)) if duplicate else [0]
        # As many rotations at once as every bot of the group has idle sessions for.
        while rotations and room() and all(bot in idle for bot in group):
            r = rotations.pop(0)
            seat(PlannedTable(rotate(group, r), new_seed, name, r, index_new))
        if rotations:
            owed_list.append(OwedBoard(name, new_seed, tuple(group), tuple(rotations), index_new))
    return Plan(tuple(tables), tuple(owed_list), next_board, tuple(held)), dealt_first


def _ready_board(owed: Sequence[OwedBoard], bots: Set[str], idle: Collection[str]) -> int | None:
    """The index of the oldest owed board of any of ``bots`` whose whole group is idle."""
    return next(
        (
            i
            for i, b in enumerate(owed)
            if not bots.isdisjoint(b.group) and all(bot in idle for bot in b.group)
        ),
        None,
    )


def prune_owed(
    owed: Sequence[OwedBoard],
    next_board: int,
    *,
    max_age: int = MAX_OWED_AGE,
    max_count: int = MAX_OWED,
) -> tuple[OwedBoard, ...]:
    """The owed boards still worth waiting for: none older than ``max_age`` boards, at most
    ``max_count`` (the newest). A group whose bot left for good would otherwise be owed forever."""
    fresh = [b for b in owed if next_board - b.created <= max_age]
    return tuple(fresh[-max_count:]) if max_count > 0 else ()


class EventFormat(Enum):
    """How a fixed event pairs its entrants."""

    ROUND_ROBIN = "round-robin"
    """Every combination of ``players`` entrants."""
    GAUNTLET = "gauntlet"
    """The candidate against every combination of the others."""


def event_schedule(
    entrants: Sequence[str],
    *,
    players: int,
    boards: int,
    seed: int,
    format: EventFormat = EventFormat.ROUND_ROBIN,
    candidate: str | None = None,
    secret: str = "",
) -> tuple[PlannedTable, ...]:
    """Every table of a fixed event: each combination, each board, each rotation, in that order.

    ``secret`` keys the deal seeds (:func:`board_seed`): a server passes its database's; the
    empty default is only for counting or checking a schedule (its seeds follow from the names).
    """
    _check_players(players)
    names = list(dict.fromkeys(entrants))
    if len(names) != len(entrants):
        raise ConfigError(f"event entrants {list(entrants)} name a bot twice")
    if boards < 1:
        raise ConfigError(f"event boards must be at least 1, got {boards}")
    if format is EventFormat.GAUNTLET:
        if candidate is None or candidate not in names:
            raise ConfigError(
                f"a gauntlet needs its candidate among the entrants {names}, got {candidate!r}"
            )
        others = [n for n in names if n != candidate]
        if len(others) < players - 1:
            raise ConfigError(
                f"a {players}-player gauntlet needs at least {players - 1} entrants beside the"
                f" candidate, got {len(others)}"
            )
        groups = [(candidate, *c) for c in combinations(others, players - 1)]
    else:
        if len(names) < players:
            raise ConfigError(
                f"a {players}-player round robin needs at least {players} entrants, "
                f"got {len(names)}: {names}"
            )
        groups = list(combinations(names, players))
    schedule: list[PlannedTable] = []
    index = 0
    for group in groups:
        for _ in range(boards):
            name = board_name(seed, index)
            deal = board_seed(secret, seed, index)
            for r in range(players):
                schedule.append(PlannedTable(rotate(group, r), deal, name, r, index))
            index += 1
    return tuple(schedule)


def plan_event(
    remaining: Sequence[PlannedTable],
    idle: Mapping[str, int],
    *,
    max_tables: int | None = None,
) -> tuple[PlannedTable, ...]:
    """The tables of ``remaining`` (in schedule order) whose bots all have idle sessions now."""
    left = {name: count for name, count in idle.items() if count > 0}
    chosen: list[PlannedTable] = []
    for table in remaining:
        if max_tables is not None and len(chosen) >= max_tables:
            break
        if all(left.get(bot, 0) > 0 for bot in table.seats):
            chosen.append(table)
            for bot in table.seats:
                left[bot] -= 1
    return tuple(chosen)
