"""The competition: lobby -> ladder (or event) -> referee tables -> ledger -> standings.

One :class:`Competition` lives in the referee's asyncio loop and owns the coarse work there: it
decides which tables start (pure functions of :mod:`arena.server.matchmaking`), hands each to the
referee as one call (``play_table(spec) -> GameRecord``), commits the record through the ledger's
writer thread, updates the live rating that matchmaking uses, and republishes the full fit with
intervals (computed in a worker thread) at most every ``fit_interval``. It never touches a single
decision's path, and nothing it does blocks the loop: SQLite and the fit run in threads.

The referee is reached through :class:`TableHost`, the few calls the competition needs; the lobby
itself (who is connected, sessions waiting) is the referee's.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import logging
import math
import os
import random
import re
import signal
import sqlite3
import threading
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from enum import Enum
from http import HTTPStatus
from itertools import combinations
from multiprocessing import get_context
from typing import Any, Protocol, TypeVar

from arena.director.schedule import board_rules
from arena.ratings import RatingsError, fit
from arena.ratings.results import TableResult
from arena.ratings.sprt import count_text
from arena.referee.accounts import MAX_NOTE_LENGTH
from arena.rules import Rules
from arena.server.accounts import (
    BAN_NOTE,
    Account,
    AccountError,
    AccountsBusy,
    AccountStatus,
    AccountStore,
    check_note,
    told_note,
)
from arena.server.config import STOP_SIGNALS, ServerConfig
from arena.server.ledger import (
    BotTally,
    Ledger,
    LedgerDB,
    LedgerReader,
    interrupted_record,
    is_rated,
    read_only,
    read_rated_results,
    table_result,
)
from arena.server.matchmaking import (
    Candidate,
    OwedBoard,
    PlannedTable,
    event_schedule,
    plan_event,
    plan_ladder,
    prune_owed,
    rotate,
)
from arena.server.webapp import AdminError, NotFoundError
from arena.store import cannot_write, is_busy
from arena.table import GameRecord, TableSpec, Termination

__all__ = [
    "Competition",
    "LadderState",
    "LiveRatings",
    "SessionInfo",
    "TableHost",
]

log = logging.getLogger("arena.server")

_T = TypeVar("_T")

DB_TIMEOUT_S = 10.0
PR_SET_PDEATHSIG = 1
"""Linux prctl option: a signal for this process when its parent ends."""
PARENT_CHECK_S = 1.0
"""Elsewhere, how often the fit's worker looks whether the server is still there."""
STATUS_TTL_S = 1.0
"""Longest time the ladder trusts its copy of the account statuses."""
_BARRED = {
    AccountStatus.BANNED: "this bot is banned (arena bots ban): it plays no more games here",
    AccountStatus.REVOKED: "this bot's token was revoked (arena bots revoke): it plays no more "
    "games here until the organiser gives it a new one",
}
"""What a waiting session of a bot the organiser barred from the offline CLI is told (with the
organiser's reason, if one was given: see :func:`_barred_note`)."""
REPLACED_NOTE = (
    "this bot's token was replaced (arena bots add --new-token): connect with the new one"
)
"""What a waiting session opened with a bot's old token is told."""
EVENT_LOOK_S = 5.0
"""How often an event's ladder looks again with nothing else to wake it (see _event_clock)."""
_LEFT_BEFORE_START = re.compile(
    r"(?:^|\()([A-Za-z0-9][A-Za-z0-9_.\-]*) left \(Goodbye\) before its game started"
)
"""The referee's reason for a game interrupted by a seated bot's Goodbye before it was told of
its game (bot names have no spaces or parentheses)."""
RECENT_TTL_S = 2.0
"""How long an answer of /api/games is served again while no game is stored (a board whose
owed rotations are dropped without a game stored is shown done within that)."""
RECENT_CACHED = 64
"""Queries of /api/games whose answers are kept (all are dropped past that: the queries vary)."""
ADMIN_WRITE_WAIT_S = 20.0
"""How long a pause or resume waits to be stored before it is answered 503 (within the 30 s
an `arena admin` command waits for its answer)."""
FORM_RETRY_S = 5.0
"""How soon the ladder tries again to form tables after an error (a database it cannot write)."""
KICK_SPARED_S = 10.0
"""How long after an organiser's kick a bot found gone as its table forms is taken for the
kick's doing, not its own leaving: it is told to come back within a second or so."""
STANDINGS_TTL_S = 1.0
"""Longest time the page's standings are served from the last computation."""
RECENT_FINISHED = 50
"""Finished tables remembered in memory for the health figures."""
CRASH_REASON = "the referee failed while hosting this table ({error}); it is not rated"
WITHHELD_REASON = (
    "board {board} is still being played: another seat rotation of it is running or still to be"
    " dealt, so its seed and its cards (the deal, passes, tricks, decisions, and the cards in"
    " faults and late replies) are withheld until every rotation is done"
)
"""Why a game's seed and cards are null in the API (``withheld``)."""


def _barred_note(status: AccountStatus, note: str) -> str:
    """What a barred bot's waiting session is told: why it may not play, with the organiser's
    reason (cut to what a kick may say), as `arena admin ban` tells it; the note a ban without
    one stores says nothing more."""
    why = _BARRED[status]
    if not note or note == BAN_NOTE:
        return why
    lead = f"{why} (the organiser's reason: "
    room = MAX_NOTE_LENGTH - len(lead) - 1
    said = note if len(note) <= room else note[: room - 1] + "…"
    return f"{lead}{said})"


@dataclass(frozen=True)
class SessionInfo:
    """One connected session, as the lobby lists it."""

    session_id: str
    """The referee's id for it (kick takes this)."""
    bot: str
    """Its bot."""
    table_id: str | None
    """The table it plays at now, or None while it waits in the lobby."""
    peer: str = ""
    """The client's address."""


class TableHost(Protocol):
    """What the competition needs from the referee."""

    def idle(self) -> Mapping[str, int]:
        """Sessions waiting in the lobby, per bot (cheap: called whenever the lobby changes)."""
        ...

    def sessions(self) -> Sequence[SessionInfo]:
        """Every authenticated session now (for the page and the admin)."""
        ...

    async def play_table(self, spec: TableSpec) -> GameRecord:
        """Play one table with the bots' idle sessions and return its record; the sessions are
        taken from the lobby in the call's first step when they are all there."""
        ...

    def kick(self, session_id: str, reason: str, *, for_good: bool = False) -> bool:
        """End one session (False if there is none with that id); ``for_good``: its bot may
        not reconnect (else it may, after a pause)."""
        ...

    def kick_bot(self, bot: str, reason: str) -> int:
        """End every session of a bot; returns how many."""
        ...

    def dismiss_idle(self, message: str) -> int:
        """Tell every waiting session there are no more games (they close); returns how many."""
        ...

    def replaced(self, tokens: Mapping[str, bytes]) -> Sequence[str]:
        """The ids of the waiting sessions of the bots in ``tokens`` opened with a token other
        than theirs there (its digest)."""
        ...


class LadderState(Enum):
    """What the ladder (or event) is doing."""

    RUNNING = "running"
    PAUSED = "paused"
    WAITING = "waiting for the event's start"
    OVER = "over"
    DRAINING = "draining"


class LiveRatings:
    """The live rating for matchmaking: OpenSkill Plackett-Luce, updated game by game.

    Updated in the ledger's writer thread, as each game is stored (so that it counts exactly
    the games the database holds), and read in the loop: hence the lock.
    """

    def __init__(self, saved: Mapping[str, tuple[float, float]] | None = None) -> None:
        from openskill.models import PlackettLuce

        self._model = PlackettLuce()
        self._ratings: dict[str, Any] = {}
        self._lock = threading.Lock()
        for name, (mu, sigma) in (saved or {}).items():
            self._ratings[name] = self._model.rating(mu=mu, sigma=sigma, name=name)

    def update(self, result: TableResult) -> dict[str, tuple[float, float]]:
        """Apply one table (fewer points is better); returns the changed bots' (mu, sigma)."""
        with self._lock:
            teams = [[self._get(name)] for name in result.players]
            # OpenSkill ranks by score, higher better; points are better low.
            new = self._model.rate(teams, scores=[-p for p in result.points])
            changed = {}
            for name, (rating,) in zip(result.players, new, strict=True):
                self._ratings[name] = rating
                changed[name] = (float(rating.mu), float(rating.sigma))
            return changed

    def counter(self, record: GameRecord) -> Callable[[], dict[str, tuple[float, float]]]:
        """What counts ``record`` (if rated) when called; for :meth:`LedgerDB.finish`, which
        calls it once the game is stored."""
        return lambda: self.update(table_result(record)) if is_rated(record) else {}

    def _get(self, name: str) -> Any:
        if name not in self._ratings:
            self._ratings[name] = self._model.rating(name=name)
        return self._ratings[name]

    def get(self, name: str) -> tuple[float, float] | None:
        """A bot's (mu, sigma), or None before its first game."""
        with self._lock:
            rating = self._ratings.get(name)
        return None if rating is None else (float(rating.mu), float(rating.sigma))

    def mu(self, name: str) -> float:
        """A bot's mu (the model's starting mu before its first game)."""
        with self._lock:
            rating = self._ratings.get(name)
        return float(rating.mu if rating is not None else self._model.mu)


@dataclass
class _Running:
    game: int
    spec: TableSpec
    started_at: float
    task: asyncio.Task[None] | None = None
    launched: bool = False
    """Whether play_table has had its first step, in which it takes the sessions."""
    ended: bool = False
    """Whether its game is over (its sessions are back in the lobby) while it is being stored."""


@dataclass
class _Published:
    status: str = "waiting"
    message: str = "no rated games yet"
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    results: int = 0
    boards: int = 0
    at: float = 0.0


def compute_fit(results: Sequence[TableResult], seed: int) -> _Published:
    """The published ratings from rated results (run in a worker thread)."""
    now = time.time()
    if not results:
        return _Published(at=now)
    try:
        rating = fit(results, seed=seed)
    except RatingsError as e:
        return _Published("error", f"no fit yet: {e}", {}, len(results), 0, now)
    rows = {}
    for row in rating.rows():
        rows[row.name] = {
            "rank": row.rank,
            "elo": row.elo,
            "se": row.se,
            "low": row.low,
            "high": row.high,
            "los_next": row.los_next,
            "score": row.stats.score,
        }
    message = (
        f"Elo with {round(rating.confidence * 100)}% intervals ({rating.method.value}, "
        f"clustered by board), mean at 0, from {count_text(rating.results, 'result')} on "
        f"{count_text(rating.boards, 'board')}; "
        f"refitted {time.strftime('%H:%M:%S', time.gmtime(now))}Z"
    )
    return _Published("ok", message, rows, rating.results, rating.boards, now)


def die_with_parent(parent: int) -> None:
    """Make this worker process end when the server does, even by kill -9 (else an orphan would
    hold the server's output pipes open and compute fits for nobody), and only then."""
    # A Ctrl-C in the organiser's terminal reaches the whole process group, and a service
    # manager's stop may SIGTERM every process of the server: the worker died of it (printing
    # a KeyboardInterrupt traceback under the server's log) while the server was still draining.
    # The server stops its worker itself when it closes.
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        # Not Linux: a watcher thread notices the parent's end instead.
        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(PARENT_CHECK_S)
            os._exit(0)

        threading.Thread(target=watch, daemon=True).start()
    if os.getppid() != parent:  # the server ended before the line above took effect
        os._exit(0)


def fit_published(path: str, run_id: str, seed: int) -> _Published:
    """The published ratings from the rated games in the database (run in a worker process)."""
    db = read_only(path, DB_TIMEOUT_S)
    try:
        results = [r for _, r in read_rated_results(db, run_id)]
    finally:
        db.close()
    return compute_fit(results, seed)


class EventAccounts:
    """The account lookup during a fixed event: only entrants may play."""

    def __init__(self, accounts: AccountStore, entrants: Sequence[str]) -> None:
        self._accounts = accounts
        self._entrants = frozenset(entrants)

    def lookup(self, token: str) -> Any:
        """The identity, refused (not entered) for a bot outside the event."""
        identity = self._accounts.lookup(token)
        # A banned bot, or a token revoked, is refused as such, entered or not.
        if (
            identity is None
            or identity.name in self._entrants
            or identity.status is not AccountStatus.ACTIVE
        ):
            return identity
        return _NotEntered(identity.name)


class _NotEnteredStatus(Enum):
    NOT_ENTERED = "not-entered"


@dataclass(frozen=True)
class _NotEntered:
    name: str
    status: _NotEnteredStatus = _NotEnteredStatus.NOT_ENTERED
    # What to do is the referee's to add, as to every PERMISSION_DENIED.
    note: str = "this bot is not entered in the event"


INTERRUPTED_RECORDED = (
    "table interrupted by the last stop recorded (a crash or a kill, or its result refused by "
    "the database as the server stopped)"
)
UNSTORED_AT_STOP = (
    "a game played to its end cannot be stored as the server stops (the database still refuses "
    "the write): the next start records it as interrupted, not rated"
)


class Competition:
    """The ladder or event of one server; create with :meth:`open`, then :meth:`start`."""

    def __init__(
        self,
        config: ServerConfig,
        ledger: Ledger,
        accounts: AccountStore,
        *,
        clock: Callable[[], float] = time.time,
        seed: int | None = None,
    ) -> None:
        self.config = config
        self.ledger = ledger
        self.accounts = accounts
        self.host: TableHost | None = None
        self._clock = clock
        self._rng = random.Random(seed)
        self._started = clock()
        self.paused = False
        self.draining = False
        self._wake = asyncio.Event()
        self._forming = asyncio.Lock()
        self._fit_dirty = asyncio.Event()
        self._running: dict[int, _Running] = {}
        self._tallies: dict[str, BotTally] = {}
        self._rated = 0
        self._fit_pool: ProcessPoolExecutor | None = None
        self._live = LiveRatings()
        self._published = _Published()
        self._owed: list[OwedBoard] = []
        self._next_board = 0
        self._next_game = 0
        self._games = 0
        self._schedule: tuple[PlannedTable, ...] = ()
        self._dealt: dict[str, tuple[int, Rules]] = {}
        """Boards begun before the start, with the seed and rules of their stored rotations."""
        self._done_slots: set[int] = set()
        self._slots_left: dict[str, int] = {}
        """Per event board, its rotations not played to the end yet."""
        self._begun: set[str] = set()
        """The event boards some rotation of which has been dealt (stored or running)."""
        self._given_up: set[str] = set()
        """Event boards begun, not finished, and shown once the event was over: never dealt
        again, even if the event reopens (an unban, a later end)."""
        self._given_up_stored: set[str] = set()
        """Those of :attr:`_given_up` committed to the database: only these are shown."""
        self._blocked: tuple[tuple[int, frozenset[str]], bool] | None = None
        """Whether every event table left seats a banned entrant, for (tables done, banned)."""
        self._tasks: set[asyncio.Task[Any]] = set()
        self._finished_recent: deque[float] = deque(maxlen=RECENT_FINISHED)
        self._recorded = asyncio.Event()
        self._listeners: list[Callable[[int, GameRecord], Awaitable[None] | None]] = []
        self._status_cache: dict[str, AccountStatus] = {}
        self._notes: dict[str, str] = {}
        """The organiser's reason for each bot's ban or revoke, read with the statuses."""
        self._tokens: dict[str, bytes] = {}
        """Each bot's token (its digest) as the accounts watcher last read them."""
        self._statuses_at = -math.inf
        self._banning: dict[str, int] = {}
        """Bots whose ban is being written (how many bans of each): seated at no new table
        meanwhile."""
        self._standings: dict[str, Any] | None = None
        self._standings_at = -math.inf
        self._meetings: Counter[frozenset[str]] = Counter()
        """Games each pair of bots has sat at together (matchmaking mixes the ladder by it)."""
        self._previous: dict[str, frozenset[str]] = {}
        """Each bot's last table (its bots), which it does not sit at again at once."""
        self._held_since: dict[frozenset[str], float] = {}
        """Groups waiting for other bots rather than sitting down together again, since when
        (monotonic seconds)."""
        self._recent: dict[
            tuple[int, int | None, str | None], tuple[int, float, list[dict[str, Any]]]
        ] = {}
        """Answers of :meth:`recent` by query, with the games stored then and until when they
        hold: a page polled as fast as a client could ask read the database each time, and four
        such clients slowed the ladder sevenfold (a new game stored makes a new answer)."""
        self._cooling: dict[str, float] = {}
        """Bots that left a table as it formed, with when (time.monotonic()) they may be seated
        again: leaving then cost nothing (an unrated game nobody played), so a bot could leave
        every table until one suited it, and keep re-forming an owed board for ever."""
        self._kicked: dict[str, float] = {}
        """Bots an organiser's kick ended a session of, with when (time.monotonic()): gone as
        a table formed, they were kept out for mix_wait (60 s), the cost of leaving on their
        own, and with four bots the ladder stopped meanwhile."""

    # ---- start-up ---------------------------------------------------------------------------

    async def load(self) -> list[tuple[int, GameRecord]]:
        """Recover from a crash and load the standings; returns the tables marked interrupted."""
        now = self._clock()
        interrupted, committed = await self.ledger.write(LedgerDB.recover, now)
        self._live = LiveRatings(await self.ledger.write(LedgerDB.live))
        for game, record in committed:
            # Committed just before a crash, its live update was not: apply it now.
            await self.ledger.write(LedgerDB.finish, game, record, self._live.counter(record))
        await self.ledger.write(LedgerDB.flush)
        state, tallies, rated, next_game, tables, seated = await self.ledger.write(_load)
        for _, bots in seated:
            self._met(bots)
        for game, record in interrupted:
            log.warning(
                # Not "by a crash" alone: a clean stop leaves a game the disk refused so too.
                INTERRUPTED_RECORDED,
                extra={"game": game, "table": record.spec.table_id, "seats": record.spec.seats},
            )
        self._tallies = tallies
        self._rated = rated
        self._next_game = next_game
        self._games = len(tables)
        self._next_board = int(state.get("next_board", 0))
        # An organiser's pause outlives a restart (a crash's, a service manager's): a ladder
        # paused to look into a bot went back to playing it at the next start, unasked.
        self.paused = bool(state.get("paused", False))
        if self.paused:
            log.warning(
                "the ladder is paused (`arena admin pause` before this start): no table starts"
                " until `arena admin resume`"
            )
        self._owed = [
            OwedBoard(o["board"], o["seed"], tuple(o["group"]), tuple(o["rotations"]), o["created"])
            for o in state.get("owed", [])
        ]
        owed_again = [record.spec.board for _, record in interrupted if self._owe_again(record)]
        if owed_again:
            # The crash cut those rotations short: dealt again, as after a stop's interruption.
            log.info("rotations owed again", extra={"boards": owed_again})
            await self.ledger.write(LedgerDB.put_state, {"owed": self._owed_state()})
        if self.config.event is not None:
            event = self.config.event
            self._schedule = event_schedule(
                event.entrants,
                players=self.config.players,
                boards=event.boards,
                seed=self.config.seed,
                format=event.format,
                candidate=event.candidate,
                secret=self.ledger.db.secret,
            )
            begun = set()
            for _, table_id, termination in tables:
                slot = _slot_of(table_id)
                if slot is not None and slot < len(self._schedule):
                    begun.add(self._schedule[slot].board)
                    if termination == Termination.NORMAL.value:
                        self._done_slots.add(slot)
            for i, t in enumerate(self._schedule):
                if i not in self._done_slots:
                    self._slots_left[t.board] = self._slots_left.get(t.board, 0) + 1
            boards = sorted(begun & set(self._slots_left))
            self._begun = begun
            self._given_up = set(state.get("given_up", []))
            self._given_up_stored = set(self._given_up)
        else:
            boards = [o.board for o in self._owed]
        # A board's rotations still to come are dealt as its stored ones were, even if a server
        # of another version began it (with other seeds, or every board passing left).
        self._dealt = await self.ledger.write(LedgerDB.dealt_boards, boards)
        if self.ledger.db.secret_made and tables:
            log.warning(
                "the database had no secret for the board seeds (an older server's): one is made"
                " and kept in it; boards dealt from now on are keyed by it, and the boards begun"
                " before are finished with their old seeds, which their names gave away",
                extra={"boards_begun": len(self._dealt)},
            )
        if self._rated:
            self._fit_dirty.set()
        return interrupted

    def attach(self, host: TableHost) -> None:
        """Connect the referee that plays the tables."""
        self.host = host

    def start(self) -> None:
        """Start the ladder and the fitter as tasks of the running loop."""
        self._spawn(self._ladder())
        self._spawn(self._fitter())
        self._spawn(self._watch_statuses())
        if self.config.event is not None:
            self._spawn(self._event_clock())
        self.poke()

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def poke(self) -> None:
        """Something changed in the lobby: look for tables to start."""
        self._wake.set()

    def on_record(self, listener: Callable[[int, GameRecord], Awaitable[None] | None]) -> None:
        """Call ``listener(game, record)`` after each record is committed (tests, benchmarks)."""
        self._listeners.append(listener)

    # ---- the ladder -------------------------------------------------------------------------

    @property
    def state(self) -> LadderState:
        """What the ladder is doing."""
        if self.draining:
            return LadderState.DRAINING
        event = self.config.event
        # An event over is over, paused or not: a pause hid it, and the bots waiting (or
        # arriving) sat in the lobby instead of being told there are no more games.
        # Every table played, it is over whatever its start says (a start moved later at a
        # restart held the bots in the lobby, "waiting for the event's start").
        played = event is not None and len(self._done_slots) == len(self._schedule)
        if event is not None and (
            played or (not self._before_start() and self._why_over() is not None)
        ):
            return LadderState.OVER
        if self.paused:
            return LadderState.PAUSED
        if event is not None and self._before_start():
            return LadderState.WAITING
        return LadderState.RUNNING

    def _before_start(self) -> bool:
        """Whether the event's start is still ahead."""
        event = self.config.event
        return event is not None and event.start is not None and self._clock() < event.start

    def _why_over(self) -> str | None:
        """Why no event table will start any more (None while some will): every table is
        played, its end has passed, every table left is of a board given up, or every table
        left seats a banned entrant (else the others waited in the lobby for ever, and that
        entrant's half-played board stayed withheld)."""
        event = self.config.event
        assert event is not None
        if len(self._done_slots) == len(self._schedule):
            return "every table is played"
        if event.end is not None and self._clock() >= event.end:
            return "its end has passed"
        if self._given_up and len(self._slots_left) == sum(
            1 for b in self._given_up if b in self._slots_left
        ):
            return "every table left is of a board given up"
        statuses = self._statuses()
        banned = frozenset(n for n in event.entrants if statuses.get(n) is AccountStatus.BANNED)
        if not banned:
            return None
        key = (len(self._done_slots), banned)
        if self._blocked is None or self._blocked[0] != key:
            # Looked at again only when a table is done or a ban changes: a schedule may be long.
            blocked = all(
                not banned.isdisjoint(t.seats)
                for i, t in enumerate(self._schedule)
                if i not in self._done_slots and t.board not in self._given_up
            )
            self._blocked = (key, blocked)
        if not self._blocked[1]:
            return None
        return f"every table left seats a banned entrant ({', '.join(sorted(banned))})"

    async def _ladder(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            # Under the lock, so that a drain never misses a batch being committed and spawned.
            async with self._forming:
                if self.host is not None and self.state is LadderState.OVER and not self._running:
                    # The event's work is done: bots waiting (or arriving) are sent home.
                    dismissed = self.host.dismiss_idle(f"no more games: {self.config.name} is over")
                    if dismissed:
                        log.info(
                            "event over: bots sent home",
                            extra={"sessions": dismissed, "why": self._why_over()},
                        )
                    continue
                if self.host is None or self.state is not LadderState.RUNNING:
                    self._held_since.clear()  # paused (or not started): nobody waits to mix
                    continue
                try:
                    await self._form_tables()
                except Exception as e:
                    if self.draining and cannot_write(e) is not None:
                        # Given up for the drain (the disk still refuses): no table starts, as
                        # the drain wants, and the log has said why already (it was a traceback).
                        continue
                    log.exception("forming tables failed")
                    # The lobby may stay as it is, so nothing else may wake the ladder: the bots
                    # waiting there waited for ever (a database locked for minutes, or a read-only
                    # file, which an organiser may mend meanwhile).
                    if is_busy(e):
                        self.poke()
                    else:
                        asyncio.get_running_loop().call_later(FORM_RETRY_S, self.poke)

    def _available(self) -> dict[str, int]:
        """Idle sessions per bot that no table of ours is about to take."""
        assert self.host is not None
        # Before the lobby is counted: a bot's session between two tables is idle only for a
        # moment, which the watcher's once a second never caught.
        self._end_replaced(self._tokens)
        idle = dict(self.host.idle())
        for running in self._running.values():
            if not running.launched:
                for bot in running.spec.seats:
                    idle[bot] = idle.get(bot, 0) - 1
        statuses = self._end_barred(self._statuses(idle))
        now = time.monotonic()
        self._cooling = {bot: until for bot, until in self._cooling.items() if until > now}
        return {
            bot: n
            for bot, n in idle.items()
            if n > 0
            and statuses.get(bot) is AccountStatus.ACTIVE
            and bot not in self._banning
            and bot not in self._cooling
        }

    def _end_barred(self, statuses: dict[str, AccountStatus]) -> dict[str, AccountStatus]:
        """End the waiting sessions of bots banned or revoked from the offline CLI (``arena bots
        ban``, ``revoke``): left in the lobby, never seated and never told, they sat there for
        good, and a small ladder stopped with nothing logged. A game in play goes on; the bot's
        reconnection is refused with the reason. The statuses acted on: ``statuses``, or
        those read again."""
        assert self.host is not None
        barred = [
            session
            for session in self.host.sessions()
            if session.table_id is None and statuses.get(session.bot) in _BARRED
        ]
        if barred:
            # Read again before a session is ended for good: ``statuses`` may be a second old,
            # older than the session's own token check. A bot that connected just after
            # `arena bots unban` was welcomed, then ended as banned (3 times in 5).
            accounts = self._read_again(self.accounts.accounts)
            if accounts is None:
                return statuses
            statuses = self._remember(accounts)
        for session in barred:
            status = statuses.get(session.bot)
            if status not in _BARRED:
                continue
            why = _barred_note(status, self._notes.get(session.bot, ""))
            # For good, as `arena admin ban` ends one: a kick that let the bot back had the SDK
            # log "reconnecting", then be refused.
            if self.host.kick(session.session_id, why, for_good=True):
                log.info(
                    "session ended: its bot may not play",
                    extra={"session": session.session_id, "bot": session.bot, "why": why},
                )
        return statuses

    def _end_replaced(self, tokens: Mapping[str, bytes]) -> None:
        """End, for good, the waiting sessions opened with a bot's old token once ``arena bots
        add --new-token`` replaced it: "the old one stops working", and a session on it played
        on, rated games under the bot's name (a leaked token's holder's too)."""
        assert self.host is not None
        replaced = self.host.replaced(tokens)
        if replaced:
            # Read again before a session is ended for good: ``tokens`` may be a second old,
            # older than the session's own token check. A bot that connected with the token
            # `arena bots add --new-token` had just given it was ended as on the old one.
            digests = self._read_again(self.accounts.token_digests)
            if digests is None:
                return
            self._tokens = {n: d for n, d in digests.items() if d is not None}
            replaced = self.host.replaced(self._tokens)
        bots = {s.session_id: s.bot for s in self.host.sessions()} if replaced else {}
        for session_id in replaced:
            if self.host.kick(session_id, REPLACED_NOTE, for_good=True):
                log.info(
                    "session ended: its token was replaced",
                    extra={"session": session_id, "bot": bots.get(session_id)},
                )

    def _read_again(self, read: Callable[[], _T]) -> _T | None:
        """``read()`` of the accounts, or None if the database cannot be read now (locked by
        another program: the next look, a second later, tries again)."""
        try:
            return read()
        except Exception as e:
            log.warning("cannot read the bots' accounts", extra={"error": str(e)})
            return None

    def _read_accounts(self) -> tuple[list[Account], dict[str, bytes | None]]:
        """The accounts and the bots' token digests, as the watcher reads them (in a thread)."""
        return self.accounts.accounts(), self.accounts.token_digests()

    async def _watch_statuses(self) -> None:
        """Read the accounts again every :data:`STATUS_TTL_S`, and act on a change: a ban or a
        revoke from the offline CLI was seen only as tables were formed, so not on a paused
        ladder (a banned bot waited in the lobby until a resume) nor in a quiet lobby."""
        failing = False
        while True:
            await asyncio.sleep(STATUS_TTL_S)
            if self.host is None:
                continue
            try:
                # One trip to the worker thread for both reads, every second. A stop waits for
                # it: cancelled, the read ran on in its thread while the store closed, and the
                # connection that thread opened was never closed (the WAL files stayed).
                read = asyncio.ensure_future(asyncio.to_thread(self._read_accounts))
                try:
                    accounts, digests = await asyncio.shield(read)
                except asyncio.CancelledError:
                    with contextlib.suppress(Exception):
                        await read
                    raise
            except Exception as e:  # a database locked by another program: try again
                if not failing:
                    log.warning("cannot read the bots' accounts", extra={"error": str(e)})
                failing = True
                continue
            failing = False
            before = self._status_cache
            statuses = self._remember(accounts)
            changed = statuses != before
            self._end_barred(statuses)
            self._tokens = {n: d for n, d in digests.items() if d is not None}
            self._end_replaced(self._tokens)
            if changed:
                self.poke()  # an unban lets tables start; a ban may end an event

    def _statuses(self, names: Iterable[str] = ()) -> dict[str, AccountStatus]:
        """Account statuses, re-read at most every STATUS_TTL_S (a ban from the offline CLI
        reaches the ladder within that), and at once for a bot in ``names`` not seen yet.

        A bot whose account was added after the last reading would otherwise be left out of
        every table formed until the lobby changes again after the TTL: with the lobby quiet
        (the new bot the one that completes a table), never.
        """
        now = time.monotonic()
        if now - self._statuses_at > STATUS_TTL_S or any(
            name not in self._status_cache for name in names
        ):
            self._remember(self.accounts.accounts())
        return self._status_cache

    def _remember(self, accounts: list[Account]) -> dict[str, AccountStatus]:
        """Keep the accounts' statuses (and the organiser's notes with them), read just now."""
        self._status_cache = {a.name: a.status for a in accounts}
        self._notes = {a.name: a.note for a in accounts}
        self._statuses_at = time.monotonic()
        return self._status_cache

    async def _form_tables(self) -> None:
        if self.ledger.failing is not None:
            # A game's record waits for room on a full disk: a table's start is a small write,
            # which may well fit where a record does not, and the ladder played on, holding
            # games it could not store. The record's commit wakes the ladder once stored.
            self._held_since.clear()
            return
        available = self._available()
        # What planning changes, put back if the tables cannot be marked running: a board owed
        # to these tables stays owed (else its rotations were never played).
        owed, next_board, next_game = self._owed, self._next_board, self._next_game
        room = None
        if self.config.max_tables is not None:
            room = max(0, self.config.max_tables - len(self._running))
            if room == 0:
                self._held_since.clear()  # none of them waits for bots: all wait for room
                return
        planned: list[tuple[PlannedTable, int | None]] = []
        if self.config.event is None:
            plan = plan_ladder(
                [
                    Candidate(bot, n, self._games_of(bot), self._live.mu(bot))
                    for bot, n in sorted(available.items())
                ],
                self._owed,
                players=self.config.players,
                ladder_seed=self.config.seed,
                secret=self.ledger.db.secret,
                next_board=self._next_board,
                seed=self._rng.getrandbits(63),
                max_tables=room,
                duplicate=self.config.duplicate,
                meetings=self._meetings,
                previous=self._previous if self.config.mix_wait_ms > 0 else None,
                busy={b for r in self._running.values() if not r.ended for b in r.spec.seats},
                may_repeat=self._may_repeat(),
            )
            self._hold(plan.held)
            planned = [(t, None) for t in plan.tables]
            self._owed = list(prune_owed(plan.owed, plan.next_board))
            self._next_board = plan.next_board
        else:
            busy = {_slot_of(r.spec.table_id) for r in self._running.values()}
            slots = {
                t: i
                for i, t in enumerate(self._schedule)
                if i not in self._done_slots and i not in busy and t.board not in self._given_up
            }
            chosen = plan_event(list(slots), available, max_tables=room)
            planned = [(t, slots[t]) for t in chosen]
        if not planned:
            return
        now = self._clock()
        batch = []
        for table, slot in planned:
            game = self._next_game
            self._next_game += 1
            table_id = f"g{game}" if slot is None else f"g{game}-e{slot}"
            seed, rules = self._dealt.get(table.board) or (table.seed, self._rules(table.number))
            spec = TableSpec(
                table_id=table_id,
                rules=rules,
                seed=seed,
                seats=table.seats,
                board=table.board,
                hands=self.config.hands,
                clocks=self.config.clocks,
                faults=self.config.faults,
                # Hidden from spectators (who need no login) when the board's deal is played in
                # other rotations too: an event's boards, a duplicate ladder's, and a board owed
                # from before duplicate was turned off.
                watchable=not (slot is not None or self.config.duplicate or table.rotation != 0),
            )
            running = _Running(game, spec, now)
            self._running[game] = running  # counted as busy before the commit below yields
            batch.append((game, spec))
        state = {"next_board": self._next_board, "owed": self._owed_state()}
        try:
            # A drain gives up waiting for a locked database: these tables would never start.
            await self.ledger.write_patiently(
                "starting tables",
                LedgerDB.begin,
                batch,
                state,
                now,
                give_up=lambda: self.draining,
                fields={"games": [game for game, _ in batch]},
                gated=True,
            )
        except BaseException:
            # Not marked running, so not started: the sessions are free again.
            for game, _ in batch:
                self._running.pop(game, None)
            self._owed, self._next_board, self._next_game = owed, next_board, next_game
            raise
        for game, spec in batch:
            if _slot_of(spec.table_id) is not None:
                self._begun.add(spec.board)
            log.info(
                "table started",
                extra={
                    "game": game,
                    "table": spec.table_id,
                    "seats": spec.seats,
                    "board": spec.board,
                },
            )
            self._running[game].task = self._spawn(self._play(game, spec))

    def _owed_state(self) -> list[dict[str, Any]]:
        """The owed boards as the database keeps them."""
        return [
            {
                "board": o.board,
                "seed": o.seed,
                "group": list(o.group),
                "rotations": list(o.rotations),
                "created": o.created,
            }
            for o in self._owed
        ]

    def _owe_again(self, record: GameRecord) -> bool:
        """Owe again the rotation of a duplicate ladder's board that a stop or a crash cut
        short (whether it did): the board was scored on the rotations played to the end only,
        and one seating short, its luck of the deal no longer cancelled out."""
        spec = record.spec
        if (
            not self.config.duplicate
            or self.config.event is not None
            or record.termination not in (Termination.INTERRUPTED, Termination.CRASH)
        ):
            return False
        for i, owed in enumerate(self._owed):
            if owed.board == spec.board:
                seatings = [rotate(owed.group, r) for r in range(len(owed.group))]
                if spec.seats not in seatings:
                    return False
                rotation = seatings.index(spec.seats)
                if rotation in owed.rotations:
                    return False
                self._owed[i] = replace(owed, rotations=tuple(sorted((*owed.rotations, rotation))))
                return True
        # The board's other rotations are all dealt: owed anew, this seating as its rotation 0.
        _, _, number = spec.board.rpartition(":")
        created = int(number) if number.isdigit() else self._next_board
        self._owed.append(OwedBoard(spec.board, spec.seed, spec.seats, (0,), created))
        return True

    def _rules(self, board: int) -> Rules:
        """The rules of the board numbered ``board``: a table of one hand passes in the direction
        of the board's number in the cycle (as `arena run` deals its boards), so that the ladder
        and the event pass every way, and every rotation of a board passes alike (duplicate);
        a table of several hands follows the cycle from its first."""
        if self.config.hands == 1:
            return board_rules(self.config.rules, board)
        return self.config.rules

    def _ended(self, game: int) -> None:
        """Note a game over, before it is stored (no await between its end and this): its bots
        are back in the lobby, and the ladder, woken by that, must see them free and this table
        as their last (else it held groups for no one and seated rematches)."""
        running = self._running[game]
        running.ended = True
        self._met(running.spec.seats)

    def _met(self, bots: Sequence[str]) -> None:
        """Count a table of ``bots`` as a meeting of each pair and as each one's last table."""
        members = frozenset(bots)
        for pair in combinations(sorted(members), 2):
            self._meetings[frozenset(pair)] += 1
        for bot in members:
            self._previous[bot] = members

    def _may_repeat(self) -> set[frozenset[str]]:
        """The held groups that have waited long enough to sit down together again."""
        now = time.monotonic()
        # A millisecond's leeway: the loop may run the timer's poke a clock tick early, and a
        # group found not quite due then would wait for whatever frees a bot next.
        wait_s = self.config.mix_wait_ms / 1000 - 0.001
        return {g for g, t in self._held_since.items() if now - t >= wait_s}

    def _hold(self, held: Sequence[frozenset[str]]) -> None:
        """Note the groups a plan held, and wake the ladder when the first of them may sit down
        together again (if nothing else frees a bot before)."""
        now = time.monotonic()
        for group in list(self._held_since):
            if group not in held:
                del self._held_since[group]
        wait_s = self.config.mix_wait_ms / 1000
        for group in held:
            if group not in self._held_since:
                self._held_since[group] = now
                asyncio.get_running_loop().call_later(wait_s, self.poke)
                log.info(
                    "bots wait for others before a rematch",
                    extra={"bots": sorted(group), "at_most_s": wait_s},
                )

    def _games_of(self, bot: str) -> int:
        tally = self._tallies.get(bot)
        played = tally.games + tally.interrupted if tally is not None else 0
        return played + sum(bot in r.spec.seats for r in self._running.values())

    async def _play(self, game: int, spec: TableSpec) -> None:
        assert self.host is not None
        started = self._clock()
        # play_table takes the sessions in this very step, so from here on the lobby's idle
        # counts no longer include them.
        self._running[game].launched = True
        idle = self.host.idle()
        gone = sorted(b for b, k in Counter(spec.seats).items() if idle.get(b, 0) < k)
        if gone:
            # Its bot left (a Goodbye, a cut) after the table was formed for it and before this
            # step: nothing of the game reached it, so as for a Goodbye that crosses a table
            # just formed, the game is interrupted, a game nobody played. The referee waited for
            # it (the handshake clock, then the grace period) and forfeited it, rated, while the
            # other bots sat and waited.
            spared = self._recently_kicked()
            kicked = [b for b in gone if b in spared]
            walked = [b for b in gone if b not in spared]
            said = [f"{', '.join(walked)} left"] if walked else []
            said += [f"{', '.join(kicked)} kicked by the organiser"] if kicked else []
            reason = f"interrupted ({'; '.join(said)} as the table formed) after 0 hands played"
            log.info(
                "table not played",
                extra={
                    "game": game,
                    "table": spec.table_id,
                    "why": reason,
                    "cooling_s": self.config.mix_wait_ms / 1000 if walked else 0,
                },
            )
            self._cool(gone)
            self._ended(game)
            await self._record(game, interrupted_record(spec, started, self._clock(), reason))
            return
        try:
            record = await self.host.play_table(spec)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            log.exception("table failed", extra={"game": game, "table": spec.table_id})
            record = interrupted_record(
                spec, started, self._clock(), CRASH_REASON.format(error=repr(e))
            )
            record = _with_termination(record, Termination.CRASH)
        if record.termination is Termination.INTERRUPTED:
            # Seated, then gone before anything of the game reached it: as unplayed as a
            # table left as it formed, and as free, so the same wait.
            left = _LEFT_BEFORE_START.search(record.reason)
            if left is not None:
                self._cool([left.group(1)])
        self._ended(game)
        await self._record(game, record)

    def _recently_kicked(self) -> set[str]:
        """The bots an organiser kicked within :data:`KICK_SPARED_S`."""
        now = time.monotonic()
        self._kicked = {b: at for b, at in self._kicked.items() if now - at < KICK_SPARED_S}
        return set(self._kicked)

    def _cool(self, bots: Iterable[str]) -> None:
        """Seat ``bots`` at no table for ``mix_wait``: each left a table before its game
        started, which costs nothing else (an unrated game nobody played)."""
        wait_s = self.config.mix_wait_ms / 1000
        kicked = self._recently_kicked()
        bots = [b for b in bots if b not in kicked]  # gone by the organiser's doing
        if wait_s <= 0 or not bots:
            return
        until = time.monotonic() + wait_s
        self._cooling.update(dict.fromkeys(bots, until))
        asyncio.get_running_loop().call_later(wait_s, self.poke)

    async def _record(self, game: int, record: GameRecord) -> None:
        rated = is_rated(record)
        # Owed before the table leaves the running ones: its board stays withheld throughout.
        if self._owe_again(record):
            log.info(
                "rotation owed again",
                extra={"game": game, "board": record.spec.board, "seats": record.spec.seats},
            )
            try:
                await self.ledger.write(LedgerDB.put_state, {"owed": self._owed_state()})
            except Exception as e:  # owed here all the same; a restart would not know it
                log.warning("the rotation owed again could not be stored", extra={"error": str(e)})
        try:
            # Not given up in a drain: a finished game is worth the wait for the database. The
            # live rating counts the game as the ledger stores it, not before: a store given up
            # after minutes of a locked database left it counted here until the next start,
            # which did not count it (and matchmaking paired by it meanwhile).
            await self.ledger.write_patiently(
                f"committing game {game}",
                LedgerDB.finish,
                game,
                record,
                self._live.counter(record),
                fields={"game": game, "table": record.spec.table_id},
                # On a full disk, tried again until space is freed, unless the server stops.
                give_up_full=lambda: self.draining,
            )
        except Exception as e:
            # The table stays marked running in the database, so a restart records it as
            # interrupted; nothing is counted here that the database does not hold.
            if self.draining and cannot_write(e) is not None:
                # Given up for the stop, the disk still refusing it: said as such (it was a
                # traceback, and the next start's record alone named a crash or a kill).
                log.error(
                    UNSTORED_AT_STOP,
                    extra={"game": game, "table": record.spec.table_id, "error": str(e)},
                )
            else:
                log.exception("committing a game failed", extra={"game": game})
            self._running.pop(game, None)
            self.poke()
            return
        self._running.pop(game, None)
        self._games += 1
        for seat, bot in enumerate(record.spec.seats):
            self._tallies.setdefault(bot, BotTally()).add(record, seat, game)
        if rated:
            self._rated += 1
            self._fit_dirty.set()
        if self.config.event is not None and is_rated(record):
            slot = _slot_of(record.spec.table_id)
            if slot is not None and slot not in self._done_slots:
                self._done_slots.add(slot)
                board = record.spec.board
                self._slots_left[board] = self._slots_left.get(board, 1) - 1
                if self._slots_left[board] <= 0:
                    del self._slots_left[board]
        self._finished_recent.append(self._clock())
        log.info(
            "table finished",
            extra={
                "game": game,
                "table": record.spec.table_id,
                "seats": record.spec.seats,
                "totals": record.totals,
                "termination": record.termination.value,
                "faults": len(record.faults),
                "rated": rated,
            },
        )
        for listener in self._listeners:
            outcome = listener(game, record)
            if outcome is not None:
                await outcome
        self._recorded.set()
        self.poke()

    async def _fitter(self) -> None:
        # The fit runs in a process of its own, reading the rated games from the database: in a
        # thread it would hold the interpreter lock for whole seconds on a large competition,
        # and every decision of every table would wait. "spawn", because gRPC does not survive
        # fork().
        interval = self.config.fit_interval_ms / 1000
        loop = asyncio.get_running_loop()
        path, run_id = str(self.ledger.db.path), self.ledger.db.run_id
        while True:
            await self._fit_dirty.wait()
            self._fit_dirty.clear()
            if self._fit_pool is None:
                self._fit_pool = ProcessPoolExecutor(
                    1,
                    mp_context=get_context("spawn"),
                    initializer=die_with_parent,
                    initargs=(os.getpid(),),
                )
            try:
                self._published = await loop.run_in_executor(
                    self._fit_pool, fit_published, path, run_id, self.config.seed
                )
            except BrokenProcessPool:
                # Its worker died (the OOM killer, a kill): the pool refuses every call from
                # then on, and the published standings stayed frozen for the rest of the
                # competition. A new worker fits them again.
                log.warning(
                    "the rating fit's worker process ended unexpectedly: starting a new one",
                    extra={"pending": self._rated - self._published.results},
                )
                self._fit_pool.shutdown(wait=False, cancel_futures=True)
                self._fit_pool = None
                self._fit_dirty.set()
            except Exception:
                log.exception("the rating fit failed")
            # Rate-limits refits: results arriving meanwhile set the flag again.
            await asyncio.sleep(interval)

    async def _event_clock(self) -> None:
        """Wake the ladder at the event's start and end, and every :data:`EVENT_LOOK_S` between:
        a ban from the offline CLI (``arena bots ban``) of an entrant that every table left
        waits for changes nothing the ladder hears of (no table ends, no bot comes or goes), and
        the event stayed open, its other entrants waiting in the lobby."""
        event = self.config.event
        assert event is not None
        moments = [m for m in (event.start, event.end) if m is not None]
        while True:
            ahead = [m - self._clock() for m in moments]
            await asyncio.sleep(max(0.0, min([EVENT_LOOK_S, *(d for d in ahead if d > 0)])))
            if any(d > 0 and m <= self._clock() for d, m in zip(ahead, moments, strict=True)):
                log.info("event clock", extra={"state": self.state.value})
            self.poke()

    # ---- stopping ---------------------------------------------------------------------------

    @property
    def running(self) -> int:
        """How many tables are in play now."""
        return len(self._running)

    async def drain(self, timeout_s: float) -> int:
        """Start no more tables; wait up to ``timeout_s`` for the running ones; returns how many
        are still running."""
        self.draining = True
        async with self._forming:
            pass  # a batch being formed now is committed and spawned before this returns
        log.info("draining", extra={"running": len(self._running), "timeout_s": timeout_s})
        tasks = [r.task for r in self._running.values() if r.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=timeout_s)
        return len(self._running)

    async def wait_recorded(self) -> None:
        """Wait until every running table's record is committed."""
        async with self._forming:
            pass  # a batch being committed now is spawned first (its tables had no task yet)
        tasks = [r.task for r in self._running.values() if r.task is not None]
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    async def close(self) -> None:
        """Cancel the background tasks and stop the fit's process (after the tables are
        recorded)."""
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._fit_pool is not None:
            self._fit_pool.shutdown(wait=True, cancel_futures=True)
            self._fit_pool = None

    # ---- what the page shows ----------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        """Liveness and load."""
        sessions = self.host.sessions() if self.host is not None else ()
        return {
            "status": (
                "draining"
                if self.draining
                else "cannot-store"
                if self.ledger.failing is not None
                else "ok"
            ),
            "error": self.ledger.failing,
            "name": self.config.name,
            "ladder": self.state.value,
            "mode": self.config.kind,
            "sessions": len(sessions),
            "tables": len(self._running),
            "games": self._games,
            "rated": self._rated,
            "uptime_s": round(self._clock() - self._started, 3),
            "event": self._event_progress(),
        }

    def _event_progress(self) -> dict[str, Any] | None:
        """An event's tables, how many are done, and its start and end (None for a ladder)."""
        event = self.config.event
        if event is None:
            return None
        return {
            "tables": len(self._schedule),
            "done": len(self._done_slots),
            # Else a bot author or organiser saw "waiting for the event's start" and no time.
            "start": event.start,
            "end": event.end,
        }

    def standings(self) -> dict[str, Any]:
        """The leaderboard: the published fit beside each bot's tally and live rating.

        Kept for STANDINGS_TTL_S (an admin action clears it), so that many viewers polling the
        page cost the loop one listing of the sessions a second, not one each.
        """
        now = time.monotonic()
        if self._standings is None or now - self._standings_at > STANDINGS_TTL_S:
            self._standings = self._compute_standings()
            self._standings_at = now
        return self._standings

    def _compute_standings(self) -> dict[str, Any]:
        sessions: dict[str, list[SessionInfo]] = {}
        if self.host is not None:
            for s in self.host.sessions():
                sessions.setdefault(s.bot, []).append(s)
        accounts = {a.name: a for a in self.accounts.accounts()}
        # An event's table is its entrants' (one without an account yet shows, status
        # "unknown"), not every account's: a bot not entered can never play in it.
        entered = set(accounts) if self.config.event is None else set(self.config.event.entrants)
        names = set(self._tallies) | entered | set(self._published.rows)
        pub = self._published
        rows = []
        for name in names:
            tally = self._tallies.get(name, BotTally())
            fitted = pub.rows.get(name, {})
            live = self._live.get(name)
            account = accounts.get(name)
            mine = sessions.get(name, [])
            rows.append(
                {
                    "name": name,
                    "rank": fitted.get("rank"),
                    "elo": fitted.get("elo"),
                    "se": fitted.get("se"),
                    "low": fitted.get("low"),
                    "high": fitted.get("high"),
                    "los_next": fitted.get("los_next"),
                    **tally.to_dict(),
                    "live_mu": None if live is None else live[0],
                    "live_sigma": None if live is None else live[1],
                    "status": account.status.value if account is not None else "unknown",
                    "sessions": len(mine),
                    "playing": sum(s.table_id is not None for s in mine),
                }
            )
        rows.sort(
            key=lambda r: (
                r["rank"] is None,
                r["rank"] or 0,
                -(r["live_mu"] or 0.0),
                r["name"],
            )
        )
        pending = self._rated - pub.results
        message = pub.message
        if pub.at == 0.0 and pending:
            # Between a start on a full database and its first fit: not "no rated games yet".
            message = f"fitting the ratings of {pending} rated games"
        return {
            "name": self.config.name,
            "updated_at": pub.at,
            "fit": {
                "status": pub.status,
                "message": message,
                "results": pub.results,
                "boards": pub.boards,
                "pending": pending,
            },
            "bots": _finite(rows),
        }

    def lobby(self) -> dict[str, Any]:
        """Sessions and running tables."""
        sessions = self.host.sessions() if self.host is not None else ()
        return {
            "ladder": self.state.value,
            # Not the peer: the page is public, and a bot author's address is not the public's
            # business (the organiser has it in the log's line for each session).
            "sessions": [{"id": s.session_id, "bot": s.bot, "table": s.table_id} for s in sessions],
            # Only tables whose start is stored (each one's task is spawned after that commit):
            # a crash records every such table as interrupted, but a table listed while its
            # start still waited for the database would have left no record at all.
            "tables": [
                {
                    "game": r.game,
                    "table_id": r.spec.table_id,
                    "board": r.spec.board,
                    "seats": list(r.spec.seats),
                    "started_at": r.started_at,
                }
                for r in sorted(self._running.values(), key=lambda r: r.game)
                # And once its seats are taken: listed before, a bot that read it here could
                # leave a table it did not like as it formed.
                if r.task is not None and r.launched
            ],
            "owed_boards": self._owed_boards(),
            # Else bots idle in the lobby with no table forming looked like a stalled ladder.
            "waiting_to_mix": sorted(sorted(group) for group in self._held_since)
            if self.state is LadderState.RUNNING
            else [],
            "event": self._event_progress(),
        }

    def _owed_boards(self) -> int:
        """Boards dealt in some rotations (played or playing) with others still to be dealt.

        An event's were never counted (the ladder's list of owed boards is the ladder's only):
        the lobby said 0 while /api/games withheld a game for its board's rotations to come.
        """
        if self.config.event is None:
            return len(self._owed)
        if self._why_over() is not None:
            return 0
        rotations = Counter(t.board for t in self._schedule)
        running = Counter(r.spec.board for r in self._running.values())
        return sum(
            1
            for board, left in self._slots_left.items()
            if left - running[board] > 0
            and rotations[board] - left + running[board] > 0
            and board not in self._given_up
        )

    async def _boards_in_play(self) -> set[str] | _EventBoards:
        """The boards some rotation of which is running or still owed (to be dealt later)."""
        boards = {r.spec.board for r in self._running.values()}
        event = self.config.event
        if event is None:
            return boards | {o.board for o in self._owed}
        if self._why_over() is not None:
            # The rotations not played by now never will be: given up for good before their
            # cards are shown. An event can reopen (an unban, a later `end` after a restart),
            # and it dealt the rest of a board whose deal it had shown.
            await self._give_up_begun(boards)
            return boards | (self._given_up - self._given_up_stored)
        return _EventBoards(boards, self._slots_left, self._given_up_stored)

    async def _give_up_begun(self, running: set[str]) -> None:
        """Give up the event's boards begun and not finished (none running), and store that."""
        begun = {b for b in self._begun if b in self._slots_left and b not in running}
        self._given_up |= begun
        if self._given_up <= self._given_up_stored:
            return
        given_up = sorted(self._given_up)
        try:
            await self.ledger.write(LedgerDB.put_state, {"given_up": given_up})
        except Exception as e:  # withheld still (not stored), and tried again at the next read
            log.warning(
                "cannot store the event boards given up; their cards stay withheld",
                extra={"error": str(e)},
            )
            return
        new = set(given_up) - self._given_up_stored
        self._given_up_stored |= set(given_up)
        log.info("event boards given up, their cards shown", extra={"boards": sorted(new)})

    async def recent(self, limit: int, before: int | None, bot: str | None) -> list[dict[str, Any]]:
        """Recent games, from the database; a bot with no account is :class:`NotFoundError`.

        A game whose board is still in play has its seed withheld (null, and ``withheld`` says
        why); ``withheld`` is null for the others.
        """
        key = (limit, before, bot)
        cached = self._recent.get(key)
        if cached is not None and cached[0] == self._games and time.monotonic() < cached[1]:
            return cached[2]
        stored = self._games
        games = await self.ledger.read(LedgerReader.recent, limit, before, bot)
        # Only an empty answer can hide a typo; a bot with games had an account when it played.
        if not games and bot is not None:
            known = await asyncio.to_thread(self.accounts.accounts)
            names = {a.name for a in known}
            if self.config.event is not None:
                # An entrant with no account yet is listed in the standings (as "unknown"):
                # its games are none yet, not a bot that does not exist.
                names |= set(self.config.event.entrants)
            if bot not in names:
                # As the commands answer a wrong case: the right name, not only "no bot".
                near = sorted(n for n in names if n.casefold() == bot.casefold())
                hint = f" (names are exact: did you mean {' or '.join(map(repr, near))}?)"
                raise NotFoundError(
                    f"no bot named {bot!r}{hint if near else ''}: /api/standings lists the bots"
                )
        # Asked after the read: a board not in play now is done (or was never dealt, and then
        # has no game in the answer), and a board is never dealt again once done.
        in_play = await self._boards_in_play()
        for game in games:
            withheld = game["board"] in in_play
            game["withheld"] = WITHHELD_REASON.format(board=game["board"]) if withheld else None
            if withheld:
                game["seed"] = None
        if len(self._recent) >= RECENT_CACHED:
            self._recent.clear()
        self._recent[key] = (stored, time.monotonic() + RECENT_TTL_S, games)
        return games

    async def game(self, number: int) -> str | None:
        """One game's stored record as JSON text, its seed and cards withheld (null, and
        ``withheld`` says why) while its board is still in play; ``withheld`` is null once the
        board is done."""
        text = await self.ledger.read(LedgerReader.record_json, number)
        if text is None:
            return None
        record: dict[str, Any] = json.loads(text)
        board = str(record["spec"]["board"])
        record["withheld"] = None
        if board in await self._boards_in_play():  # after the read, as in recent()
            withhold(record, WITHHELD_REASON.format(board=board))
        return json.dumps(record, separators=(",", ":"))

    async def check_admin(self, token: str) -> bool:
        """Whether ``token`` is the admin token (read in a worker thread, off the loop)."""
        return await asyncio.to_thread(self.accounts.check_admin, token)

    def _stored_pause(self, written: asyncio.Future[None], paused: bool) -> None:
        """Put a pause (or resume) in force once the database holds it."""
        if written.cancelled():
            return
        error = written.exception()
        if error is not None:
            log.warning(
                "the ladder's pause or resume could not be stored, so it is not in force:"
                " give it again",
                extra={"paused": paused, "error": str(error)},
            )
            return
        self.paused = paused
        self.poke()

    async def admin(self, action: str, args: Mapping[str, Any]) -> dict[str, Any]:
        """Pause, resume, kick a session, ban or unban a bot."""
        log.warning("admin action", extra={"action": action, "arguments": dict(args)})
        # An admin action may change who may play, and what the page shows.
        self._statuses_at = self._standings_at = -math.inf
        if action in ("pause", "resume"):
            paused = action == "pause"
            # Kept in the database, so that a restart (a crash's, a service manager's) keeps
            # it, and in force once stored: acknowledged before, a pause given while another
            # program held the database was lost by a crash. Handed to the writer now (a stop
            # that begins meanwhile still stores it), behind the games it is committing.
            written = self.ledger.submit(LedgerDB.put_state, {"paused": paused})
            written.add_done_callback(lambda done: self._stored_pause(done, paused))
            try:
                await asyncio.wait_for(asyncio.shield(written), ADMIN_WRITE_WAIT_S)
            except TimeoutError:
                # Answered before the client's own time runs out (it said "cannot reach the
                # server", though the pause was then done).
                raise AdminError(
                    f"{action} not stored yet: another program keeps the database locked; it "
                    "takes effect once stored (GET /api/health shows the ladder's state)",
                    HTTPStatus.SERVICE_UNAVAILABLE,
                ) from None
            except sqlite3.OperationalError as e:
                # A full disk or a disk error was a bare 500 "internal error".
                unwritable = cannot_write(e, ", so it is not in force")
                if unwritable is not None:
                    raise AdminError(
                        f"{action} not done: {unwritable}", HTTPStatus.SERVICE_UNAVAILABLE
                    ) from None
                if not is_busy(e):
                    raise
                raise AdminError(
                    f"{action} not done: the database is locked by another program ({e}); try "
                    "again once it lets go",
                    HTTPStatus.SERVICE_UNAVAILABLE,
                ) from None
            return {"ladder": self.state.value}
        if action == "kick":
            session = str(args.get("session", ""))
            reason = str(args.get("reason", ""))
            try:
                check_note(reason)  # as a ban's: else the referee's refusal was a 500
            except AccountError as e:
                raise AdminError(str(e)) from None
            bot_of = {s.session_id: s.bot for s in self.host.sessions()} if self.host else {}
            if self.host is None or not self.host.kick(session, reason):
                raise AdminError(f"no session {session!r}; GET /api/lobby lists them")
            if session in bot_of:
                self._kicked[bot_of[session]] = time.monotonic()
            return {"kicked": session}
        bot = str(args.get("bot", ""))
        try:
            if action == "ban":
                # Without a reason, an earlier one stays (as `arena bots ban` keeps it): a second
                # ban must not wipe why the first was made.
                given = str(args.get("reason", "")) or None
                # A table formed while the ban is written (a game ending meanwhile) read the bot
                # as active: it was seated, the ban ended its session just after, and its seat
                # forfeited a rated game it never played. Not seated meanwhile.
                self._banning[bot] = self._banning.get(bot, 0) + 1
                try:
                    # A write may wait for SQLite's lock (the offline CLI, say): off the loop.
                    await asyncio.to_thread(self.accounts.ban, bot, given)
                finally:
                    self._banning[bot] -= 1
                    if not self._banning[bot]:
                        del self._banning[bot]
                account = await asyncio.to_thread(self.accounts.get, bot)  # the reason kept
                # Cut as the refusal cuts it: a reason kept before there was a limit, which a
                # ban without a new one keeps, is longer than the referee takes.
                note = told_note(account.note)
                kicked = self.host.kick_bot(bot, note) if self.host is not None else 0
                # Read again now (a lookup while the ban was written may have cached "active"):
                # an event may be over, and its other entrants are then sent home.
                self._statuses_at = -math.inf
                self.poke()
                return {"banned": bot, "sessions_ended": kicked}
            if action == "unban":
                await asyncio.to_thread(self.accounts.unban, bot)
                self._statuses_at = -math.inf
                self.poke()  # an event's tables of this bot may start again
                return {"unbanned": bot}
        except AccountsBusy as e:
            # Else a 500 "internal error" (a traceback in the log) of a database that an
            # organiser's sqlite3 shell or backup held: nothing the server got wrong.
            raise AdminError(f"{action} not done: {e}", HTTPStatus.SERVICE_UNAVAILABLE) from None
        except AccountError as e:
            raise AdminError(str(e)) from None
        raise AdminError(f"no admin action {action!r}")


@dataclass(frozen=True)
class _EventBoards:
    """The boards of an event in play: those running, and those with rotations left to play
    (a view, not a copy: an event may have a great many boards)."""

    running: set[str]
    left: Mapping[str, int]
    given_up: set[str]

    def __contains__(self, board: object) -> bool:
        return board in self.running or (board in self.left and board not in self.given_up)


def withhold(record: dict[str, Any], reason: str) -> None:
    """Blank a record's seed and every card in it (JSON null), saying why in ``withheld``: what
    is left is who sat where, the points, faults' kinds and how the game ended."""
    record["withheld"] = reason
    record["spec"]["seed"] = None
    for hand in record.get("hands", ()):
        for key in ("dealt", "passes", "tricks", "kitty"):
            hand[key] = None
    record["decisions"] = None
    for fault in record.get("faults", ()):
        for key in ("detail", "sent", "substitute"):
            fault[key] = None
    for late in record.get("late", ()):
        late["sent"] = None


def _slot_of(table_id: str) -> int | None:
    """An event table's place in the schedule, from its id (``g{N}-e{slot}``)."""
    _, sep, slot = table_id.partition("-e")
    return int(slot) if sep and slot.isdigit() else None


def _with_termination(record: GameRecord, termination: Termination) -> GameRecord:
    return replace(
        record, termination=termination, seat_status=(termination,) * len(record.spec.seats)
    )


def _finite(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """NaN and infinities (an interval before enough boards) become None for JSON."""
    for row in rows:
        for key, value in row.items():
            if isinstance(value, float) and not math.isfinite(value):
                row[key] = None
    return rows


def _load(db: LedgerDB) -> tuple[Any, ...]:
    """Everything start-up needs, read in the writer thread."""
    return (
        db.state(),
        db.tallies(),
        db.rated_count(),
        db.next_game(),
        db.finished_tables(),
        db.tables_seated(),
    )
