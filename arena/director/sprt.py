"""`arena sprt`: play duplicate boards of A against B (with fillers) until the test decides.

Every board is one deal played in every seat rotation of the same table (A, B and the fillers).
Its score is B's share of the head-to-head points against A over those rotations (fewer points
wins, equal is half), fed to :class:`arena.ratings.sprt.Sprt` in board order (boards finished out
of order wait for the ones before them), so that the same games always give the same decision.
The games are stored like a batch's and the test resumes the same way: the stored boards are fed
again first, and a test already decided is only reported.

At the decision no new game starts, and the test is never fed again: its decision and figures are
those of that moment. The games already in play (boards after the deciding one, at most
``--concurrency``) are played to their end and stored, as fair games for `arena ratings`, and are
reported as such: a line at the decision, a line at the end with how many stored games the test
did not count and how many of them finished after the decision (:class:`SprtOutcome`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from arena.config import MAX_BOARDS, SAMPLE_BOTS, BotSpec, RunConfig, identity_hash, sample_bot
from arena.director.progress import StartHooks
from arena.director.run import RunOutcome, Table, open_run_store, play_tables
from arena.director.schedule import sprt_tables
from arena.errors import ConfigError
from arena.ratings.sprt import Sprt, SprtDecision, count_text
from arena.ratings.sprt import board_score as ratings_board_score
from arena.rules import MAX_PLAYERS
from arena.store import SPRT_FORMAT, Store, check_writable, database_locked, result_of
from arena.table import GameRecord

__all__ = [
    "DEFAULT_MAX_BOARDS",
    "SPRT",
    "SprtOutcome",
    "board_score",
    "check_max_boards",
    "run_sprt",
    "sprt_bots",
    "sprt_games_stored",
]

SPRT = SPRT_FORMAT
"""The kind of run `arena sprt` stores."""
DEFAULT_MAX_BOARDS = 2000


@dataclass(frozen=True)
class SprtOutcome:
    """How a sequential test ended."""

    decision: SprtDecision
    """H0 or H1 accepted, or CONTINUE when it stopped at the cap or was interrupted."""
    status: str
    """The test's last status line (boards, score, Elo, LLR and bounds)."""
    boards: int
    """Boards fed to the test."""
    capped: bool
    """Stopped at ``--max-boards`` without a decision."""
    run: RunOutcome | None
    """What the games part did (None when the stored games had already decided)."""
    uncounted: int = 0
    """Stored games of the run that the test did not count: boards after the deciding one (or a
    board the cap left out), finished before the decision out of board order, or after it."""
    after_decision: int = 0
    """Of ``uncounted``, the games this call finished and stored after the decision: they were
    in play when it came."""
    run_id: str = ""
    """The run's id in the database (its games, faults and ratings)."""


def sprt_bots(a: str, b: str, fillers: Sequence[str], players: int) -> tuple[str | BotSpec, ...]:
    """The bots of the test's table: A, B, the fillers given (flags), then sample bots as needed."""
    from arena.config import parse_bot

    names = [
        parse_bot(a).name,
        parse_bot(b).name,
        *(parse_bot(f, "--filler").name for f in fillers),
    ]
    for k, name in enumerate(names):
        if name in names[:k]:
            # Said here in the sprt's own terms: the run's check would call every one a --bot.
            given = ("--bot" if n < 2 else "--filler" for n in range(k + 1) if names[n] == name)
            raise ConfigError(
                f"the name {name!r} is given twice ({' and '.join(given)}); "
                "A, B and the fillers need names of their own"
            )
    if len(names) > players:
        raise ConfigError(
            f"{len(names) - 2} filler(s) for a {players}-player table: give at most {players - 2}"
        )
    flags: list[str | BotSpec] = [a, b, *fillers]
    for sample in SAMPLE_BOTS:
        if len(flags) >= players:
            break
        if sample not in names:
            # The spec itself, not a NAME=COMMAND flag: its label (what the run's identity
            # hashes) is relative to the checkout, its command is not.
            flags.append(sample_bot(sample))
            names.append(sample)
    if len(flags) < players <= MAX_PLAYERS:  # a number of seats out of range: the run says so
        # A sample bot whose name A, B or a filler took sits out, so the samples may not fill a
        # 6-seat table; said here, as the run's check would ask for more --bot flags, which
        # arena sprt takes exactly twice.
        missing = players - len(flags)
        raise ConfigError(
            f"{len(flags)} bots ({', '.join(names)}) for {players}-player tables (a sample bot "
            f"sits out when its name is taken): give {missing} more with --filler "
            f"NAME=COMMAND, or play --players {len(flags)}"
        )
    return tuple(flags)


def board_score(records: Sequence[GameRecord], a: str, b: str) -> float:
    """B's share of the head-to-head points against A over one board's rotations (as the
    ratings count a pair: fewer points wins, equal is half, a forfeited seat loses)."""
    return ratings_board_score([result_of(r) for r in records], a, b)


def sprt_games_stored(config: RunConfig) -> int:
    """Games of this test's run already in its database (0 when there is none yet)."""
    if not config.db.exists():
        return 0
    with Store.open(config.db, create=False) as store:
        return len(store.finished(identity_hash(_identity(config))))


def _identity(config: RunConfig) -> dict[str, Any]:
    identity = config.identity()
    identity["format"] = SPRT
    return identity


def run_sprt(
    config: RunConfig,
    test: Sprt,
    *,
    max_boards: int,
    reporter: Any,
    on_board: Callable[[Sprt], None],
) -> SprtOutcome:
    """Play boards of ``config.bots`` (A first, B second) until ``test`` decides or the cap."""
    check_max_boards(max_boards)
    check_writable(config.db)
    with database_locked(config.db, "arena sprt"):
        return _run_sprt(config, test, max_boards, reporter, on_board)


def check_max_boards(max_boards: int) -> None:
    """Refuse a cap of boards below 1 or above :data:`MAX_BOARDS` (a run's most boards)."""
    if max_boards < 1:
        raise ConfigError(f"--max-boards {max_boards}: play at least 1 board")
    if max_boards > MAX_BOARDS:
        # Past SQLite's integers the first stored game failed with a traceback; a run of
        # batches takes no more boards either.
        raise ConfigError(f"--max-boards {max_boards}: give 1 to {MAX_BOARDS} boards")


def _run_sprt(
    config: RunConfig,
    test: Sprt,
    max_boards: int,
    reporter: Any,
    on_board: Callable[[Sprt], None],
) -> SprtOutcome:
    a, b = config.bot_names[0], config.bot_names[1]
    seats = config.bot_names
    k = config.players
    identity = _identity(config)
    run_id = identity_hash(identity)
    store = open_run_store(config.db, run_id, SPRT, identity)
    stored: dict[int, GameRecord] = {}
    if store is not None:
        try:
            stored = dict(store.records(run_id))
        except BaseException:
            store.close()
            raise
    boards: dict[int, list[GameRecord]] = {}
    next_board = 0
    replaying = True

    def feed(index: int, record: GameRecord) -> bool:
        # Boards are fed in order: the decision must not depend on which table finished first.
        nonlocal next_board
        boards.setdefault(index // k, []).append(record)
        while (
            test.decision is SprtDecision.CONTINUE
            and next_board < max_boards
            and len(boards.get(next_board, ())) == k
        ):
            test.update(board_score(boards[next_board], a, b))
            next_board += 1
            if replaying:
                continue  # said once, below: a resumed test repeated its every status line
            on_board(test)
            if test.decision is not SprtDecision.CONTINUE:
                reporter.note(
                    f"{test.decision.value} after {count_text(next_board, 'board')}: no new game "
                    "starts; the games in play are finished and stored, not counted by the test"
                )
        return test.decision is not SprtDecision.CONTINUE or next_board >= max_boards

    for index in sorted(stored):
        feed(index, stored[index])
    replaying = False
    finished = test.decision is not SprtDecision.CONTINUE or next_board >= max_boards
    if finished:
        if test.boards:
            on_board(test)  # where the stored boards leave the test, once
        if store is not None:
            store.close()
        uncounted = len(stored) - test.boards * k
        _note_uncounted(reporter, test, k, uncounted, 0)
        return SprtOutcome(
            test.decision, test.status, test.boards, _capped(test), None, uncounted, 0, run_id
        )

    def todo() -> Iterator[Table]:
        for table in sprt_tables(
            seats,
            config.rules,
            config.seed,
            config.clocks,
            config.faults,
            hands=None if config.game_to is not None else 1,
        ):
            if table.board >= max_boards:
                return
            if table.index not in stored:
                yield Table(table.index, table)

    outcome = play_tables(
        config,
        todo(),
        total=max_boards * k,
        done=len(stored),
        store=store,
        kind=SPRT,
        # Where the stored boards leave the test, once, as the games start: said at once, it came
        # before the command's header and the run's first line, which the games' start prints.
        reporter=StartHooks(reporter, after=lambda: on_board(test)) if test.boards else reporter,
        per_bot=dict.fromkeys(seats, config.concurrency),
        on_record=lambda table, record: feed(table.index, record),
        identity=identity,
    )
    uncounted = after = 0
    if test.decision is not SprtDecision.CONTINUE or test.boards >= max_boards:
        # Every board up to the last counted one is whole (they are fed in order), so the rest
        # of what is stored is what the test left out.
        uncounted = len(stored) + outcome.played - test.boards * k
        after = outcome.after_stop
        _note_uncounted(reporter, test, k, uncounted, after)
    return SprtOutcome(
        test.decision,
        test.status,
        test.boards,
        _capped(test, max_boards),
        outcome,
        uncounted,
        after,
        run_id,
    )


def _note_uncounted(reporter: Any, test: Sprt, k: int, uncounted: int, after: int) -> None:
    """The closing line on the games stored beyond what the test counted, if any."""
    if uncounted <= 0:
        return
    one = uncounted == 1
    when = ""
    if after:
        when = (
            " (it finished after the decision)"
            if one
            else f" ({after} of them finished after the decision)"
        )
    reporter.note(
        f"the test counted {_boards(test.boards)} ({test.boards * k} games); {uncounted} more "
        f"stored {'game' if one else 'games'} of later boards{when} "
        f"{'is' if one else 'are'} not counted by it"
    )


def _boards(n: int) -> str:
    return f"{n} board" if n == 1 else f"{n} boards"


def _capped(test: Sprt, max_boards: int | None = None) -> bool:
    return test.decision is SprtDecision.CONTINUE and (
        max_boards is None or test.boards >= max_boards
    )
