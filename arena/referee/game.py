"""One table's game, from the first deal to the record: clocks, faults, fallback, reconnection.

A :class:`TableRun` owns a :class:`~arena.engine.Game` and one :class:`Seat` per player. It asks
each seat's bot for its decisions over the bot's session, judges every answer with the engine,
and writes down everything: the deal, each decision with its timing, each fault with what was
played instead, and the result. It never trusts a bot: an answer is a message to be checked, and
every way it can be wrong has a :class:`~arena.table.FaultKind` and one place below that handles
it (:meth:`TableRun._judge`).

Clocks run on the event loop's monotonic clock. A decision falls due when the referee needs it;
the bot then has ``move_ms`` plus whatever is left of its bank, counted from that moment, and
the part of a decision beyond ``move_ms`` is drawn from the bank. If the seat's bot is away (its
stream broke), its clock runs all the same while the referee waits for it to come back; it comes
back by opening a new session with the same token within the grace period.

Events for a bot are queued per seat and ride with the next message the bot gets (its next
request, or the end of the game), so a decision costs one message each way. A seat with a
single legal card plays it without a round trip unless its bot asked to decide forced moves.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from enum import Enum
from typing import Any, Final

from arena import _compiled
from arena.cards import CARDS, Card, mask_of
from arena.engine import Game, Hand, Phase
from arena.errors import Violation
from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb
from arena.proto.hearts.v1 import events_pb2 as ev_pb
from arena.proto.hearts.v1 import spectator_service_pb2 as spec_pb
from arena.referee import wire
from arena.referee.config import RefereeConfig
from arena.referee.fallback import fallback_pass, fallback_play
from arena.referee.session import (
    Closed,
    Expired,
    Inbound,
    Session,
    SessionLostError,
    Wake,
)
from arena.referee.spectators import TableFeed
from arena.table import (
    Decision,
    Fault,
    FaultKind,
    GameRecord,
    HandRecord,
    LateReply,
    TableSpec,
    Termination,
    TrickRecord,
)

__all__ = ["Seat", "TableRun"]

log = logging.getLogger("arena.referee")

# The module's constants are Final, and so are the few imported values the per-decision path
# uses: compiled, a Final is a C static, where any other module-level name is looked up in the
# module's dict on every use.

EXPIRED_REMEMBERED: Final = 16
"""Timed-out request ids a seat remembers, to tell a late answer from a wrong one."""
LATE_RECORDED: Final = 64
"""The late replies a game's record keeps per seat; the rest are counted in the log: a forfeited
bot sending answers all game long made a record of 400 KB (2,620 late replies)."""
MS: Final = 1000.0
ALARM_EARLY_S: Final = 0.001
"""How early a timer may fire and still count as on time: an event loop's timers may round to
the millisecond (uvloop's do), as ``asyncio.timeout()`` would fire just as early."""

_PASS: Final = "pass"
_PLAY: Final = "play"

_new_object: Final = object.__new__
_set_attribute: Final = object.__setattr__
_CARDS: Final = CARDS
_CODES: Final = wire.CODES
_PHASE_PASS: Final = Phase.PASS
_PHASE_PLAY: Final = Phase.PLAY
_monotonic: Final = time.monotonic
"""The referee's clock (see :data:`arena.referee.session.Inbound`)."""
_current_task: Final = asyncio.current_task
_Decision: Final = Decision
_TrickRecord: Final = TrickRecord


class _Interrupted(Exception):
    """The table is being stopped: unwinds the game from the next safe point."""


class _Outcome(Enum):
    """Why waiting for an answer stopped without a usable answer."""

    TIMEOUT = "timeout"
    LOST = "lost"
    FORFEITED = "forfeited"
    INTERRUPTED = "interrupted"


class _Refused:
    """An answer that was read and refused: a fault, and a substitute is played."""

    __slots__ = ("detail", "kind", "sent")

    def __init__(self, kind: FaultKind, detail: str, sent: str) -> None:
        self.kind = kind
        self.detail = detail
        self.sent = sent


class _Accepted:
    """A legal answer."""

    __slots__ = ("at", "cards")

    def __init__(self, cards: tuple[Card, ...], at: float) -> None:
        self.cards = cards
        self.at = at


class _Alarm:
    """A seat's deadline timer: one timer left in place across requests, moved only when a
    deadline comes sooner than it.

    ``asyncio.timeout()`` makes and cancels a timer for every request, which under uvloop cost
    8 % of the referee's instructions per round trip (counted in process). A seat's deadlines
    only move later within a game (what a decision draws from the bank, the clock has already
    passed), and they lie seconds away while a decision takes about a millisecond, so the timer
    set for one request usually fires while a later one is open, finds it not yet due and
    re-arms for it.

    When the open request's deadline passes, the alarm puts an :class:`Expired` marker in the
    session's inbox, which the waiting table reads like any message (nothing is cancelled). A
    request still being written at its deadline is :attr:`overdue`: the table records the timeout
    once the write is done; only a write still not done ``write_s`` later (a bot that does not
    read its stream can hold up a write) makes the alarm cancel the table's task, as
    ``asyncio.timeout()`` would, and :meth:`claim` then tells that cancellation from anyone
    else's. (Cancelling at the deadline itself ended the session of every bot at a table of 1 ms
    moves and no bank: a write can take longer than that on a busy loop.)
    """

    __slots__ = (
        "_cancelling",
        "_due",
        "_fires_at",
        "_handle",
        "_request_id",
        "_session",
        "_task",
        "cancelled",
        "overdue",
        "sending",
        "task",
        "write_s",
    )

    def __init__(self) -> None:
        self._handle: asyncio.TimerHandle | None = None
        self._fires_at = 0.0
        """When the timer is set to fire (``time.monotonic()``); meaningless without a handle."""
        self._due = 0.0
        self._session: Session | None = None
        """The session of the open request; None when no request is open."""
        self._request_id = 0
        self._task: asyncio.Task[object] | None = None
        self._cancelling = 0
        self.sending = False
        """Whether the open request is being written (the alarm then cancels the task)."""
        self.cancelled = False
        """Whether the alarm cancelled the task (see :meth:`claim`)."""
        self.overdue = False
        """Whether the open request's deadline passed while it was being written."""
        self.write_s = 0.0
        """How long past the deadline a request may still be being written before the alarm
        cancels the write (the referee's ``write_timeout_ms``)."""
        self.task: asyncio.Task[object] | None = None
        """The task that makes the seat's requests, set by the table (asking asyncio for the
        current task at every request costs two Python calls); None: the current task."""

    def set(self, due: float, session: Session, request_id: int) -> None:
        """Watch request ``request_id`` on ``session``, due at ``due`` (``time.monotonic()``)."""
        self._due = due
        self._session = session
        self._request_id = request_id
        task = self.task or _current_task()
        assert task is not None
        self._task = task
        self._cancelling = task.cancelling()
        self.sending = False
        self.cancelled = False
        self.overdue = False
        if self._handle is None or self._fires_at > due:
            self._arm(due)

    def watches(self, session: Session) -> bool:
        """Whether a request is open on ``session`` (the table is reading its inbox)."""
        return self._session is session

    def clear(self) -> None:
        """No request is open any more (the timer stays, and finds nothing due if it fires)."""
        self._session = None
        self._task = None
        self.sending = False

    def claim(self) -> bool:
        """After a CancelledError: whether it was the alarm's (then undone: a timeout)."""
        if not self.cancelled or self._task is None:
            return False
        self.cancelled = False
        return self._task.uncancel() <= self._cancelling

    def stop(self) -> None:
        """Cancel the timer (the game is over)."""
        self.clear()
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _arm(self, due: float) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._fires_at = due
        self._handle = asyncio.get_running_loop().call_later(
            max(0.0, due - _monotonic()), self._ring
        )

    def _ring(self) -> None:
        self._handle = None
        session = self._session
        if session is None:
            return
        now = _monotonic()
        if self._due - now > ALARM_EARLY_S:  # set for an earlier request: wait for this one
            self._arm(self._due)
            return
        if self.sending and self._task is not None:
            if not self.overdue:  # due while written: the write gets write_s more
                self.overdue = True
                self._due = now + self.write_s
                self._arm(self._due)
                return
            self.cancelled = True
            self._task.cancel()
        else:
            session.inbox.put_nowait((now, Expired(self._request_id)))


class Seat:
    """One seat's part in the game: who plays it, over which session, its clock and faults."""

    def __init__(self, index: int, bot: str, bank_ms: int) -> None:
        """A seat for bot ``bot`` with a full time bank and no session yet."""
        self.index = index
        self.bot = bot
        self.session: Session | None = None
        """The session playing the seat now; None while away."""
        self.key: bytes | None = None
        """The token digest of the seat's bot: only a session with this key may take it back."""
        self.away_since: float | None = None
        """When the seat lost its session (``time.monotonic()``), or None while connected."""
        self.lost: Session | None = None
        """Its last session, ended (None while connected): why it ended, for the disconnect
        faults, is read from it when they are told."""
        self.forfeit: Termination | None = None
        """Set once the seat is forfeited; the fallback plays it from then on."""
        self.forfeit_reason = ""
        self.forfeit_at = 0.0
        """When the seat was forfeited (``time.monotonic()``): from then on nothing its bot sends
        answers anything, and each Decision it sends is a late reply (late since its request's
        deadline, or else since the forfeit)."""
        self.faults: list[FaultKind] = []
        self.bank_ms = float(bank_ms)
        self.pending: list[bytes] = []
        """Events not yet sent to the seat's bot (pre-encoded PlayResponse.events entries)."""
        self.expired: dict[int, float] = {}
        """Request ids that timed out, with their deadlines (late answers are dropped, not
        faults); the oldest are forgotten past :data:`EXPIRED_REMEMBERED`. The seat's session's
        own (:attr:`Session.expired`) while it has one, so that it outlives the game."""
        self.earlier = 0
        """The last request id its session was sent before this game: an answer echoing one up
        to it belongs to an earlier game (a late reply here, never this game's fault)."""
        self.late_noted = 0
        """Late replies of its bot seen in this game (the record keeps :data:`LATE_RECORDED`)."""
        self.returned: asyncio.Event | None = None
        """Set when a session takes the seat back while a decision waits for it."""
        self.alarm = _Alarm()
        """The seat's deadline timer."""
        self.warned = False
        """Whether the seat got its TimeWarning."""
        self.told = False
        """Whether the seat's bot has been sent anything of this game (GameStarted comes first)."""
        self.said_goodbye = False
        """Whether the seat is away because its bot said Goodbye (no grace period then)."""
        self.away_counted = False
        """Whether the seat's present absence already counts as a fault: the moves it misses
        within the grace period are recorded, but count once, so that a bot that comes back in
        time keeps its seat (at 300 ms a move, 3 faults allowed, a 2 s grace had forfeited it)."""
        self.deciding = False
        """Whether a decision of the seat is open (asked, or waiting for its bot's return)."""
        self.gone: str | None = None
        """The reason of a forfeit at once (its bot gone for good) that came while a decision
        was open: the decision records the fault, with the fallback's cards played instead."""


class TableRun:
    """Plays one :class:`~arena.table.TableSpec` with the given sessions and records it."""

    def __init__(
        self,
        spec: TableSpec,
        sessions: Sequence[Session | None],
        *,
        game_id: str,
        config: RefereeConfig,
        request_ids: Iterator[int],
        feed: TableFeed,
    ) -> None:
        """Seat the sessions (None for a bot that is not there) for the spec's game."""
        self.spec = spec
        self.rules = spec.rules
        self.game_id = game_id
        self.config = config
        self.feed = feed
        self._ids = request_ids
        self.seats = [Seat(i, name, spec.clocks.bank_ms) for i, name in enumerate(spec.seats)]
        for seat in self.seats:
            seat.alarm.write_s = config.write_timeout_ms / MS
        self._t0 = _monotonic()
        for seat, session in zip(self.seats, sessions, strict=True):
            if session is None or session.closed:
                seat.away_since = self._t0
                continue
            seat.session = session
            seat.key = session.key
            seat.expired = session.expired  # answers to an earlier game's requests are late too
            seat.earlier = session.last_request_id
            session.owner = self
        self.game = Game(spec.rules, spec.seed)
        self._rules_msg = wire.rules_message(spec.rules)
        self._card_points = [spec.rules.card_points(c) for c in _CARDS]
        """What each card scores for the seat that takes it, by index."""
        # The most hands this game plays: the spec's count, within the rules' limit of a game to
        # the target (which a game to the target also stops at).
        limit = spec.rules.max_hands
        self._max_hands = limit if spec.hands is None else min(spec.hands, limit)
        self._state_constant = wire.constant_state(self._rules_msg, spec.seats, self._max_hands)
        # The parts of a request, each encoded once and kept for as long as it holds: see
        # _request and _state.
        self._tricks = b""
        """The hand's completed tricks, as PublicState.completed_tricks entries."""
        self._kitty = b""
        """PublicState.kitty_cards, once the hand's first trick has taken the kitty."""
        self._received_told = False
        """Whether this hand's CardsReceived has been queued for the seats: the exchange is made
        as the last pass is read, a moment before the table wakes to queue it."""
        self._current: list[int] = []
        """The cards of the trick being played (indexes, in play order)."""
        self._current_leader = 0
        self._trick_log: list[tuple[int, list[int], int]] = []
        """The hand's completed tricks, for its record: leader, cards (indexes, in play order),
        winner (the engine would build them again as Trick objects)."""
        self._hand_points = [0 for _ in self.seats]
        """The points each seat has taken this hand (the engine's points_taken(), kept as the
        tricks are scored rather than counted again from the cards taken)."""
        # Keyed by ints packed from (hand, seat, phase): a tuple key costs an allocation and a
        # hash of its items on every request.
        self._seat_states: dict[int, bytes] = {}
        self._fixed: dict[int, bytes] = {}
        self._game_id_field = wire.game_id_field(game_id)
        self._trick_key = -1
        self._trick_part = b""
        self._players = len(self.seats)
        self._hand_size = spec.rules.hand_size
        self._broken = False
        """Whether hearts are broken in the hand being played (the engine's hearts_broken, asked
        again only after a card that can break them)."""
        self._breakers = spec.rules.breaking_mask
        self._forfeits = 0
        """How many seats are forfeited (part of the state's cache key)."""
        self.hands: list[HandRecord] = []
        self.decisions: list[Decision] = []
        self._unrecorded: list[
            tuple[int, int, str, int, tuple[Card, ...], float, bool, FaultKind | None, bool]
        ] = []
        """Decisions taken and not yet in :attr:`decisions` (see :meth:`_record_decisions`)."""
        self.faults: list[Fault] = []
        self.late: list[LateReply] = []
        self._over = False
        """Whether the game's record is made: no seat can be taken back from then on."""
        self._stopped_play = False
        """Whether play has stopped (what the bots sent last is being read)."""
        self._interrupting = False
        self._interrupt_reason = ""
        self.task: asyncio.Task[GameRecord] | None = None
        """The task running :meth:`run` (set by whoever starts it)."""
        self._task: asyncio.Task[object] | None = None
        """The task running :meth:`run`, as :meth:`run` found it."""
        for seat in self.seats:
            if seat.session is not None:
                self._settle(seat, seat.session)

    # ---- the game ---------------------------------------------------------------------------

    async def run(self) -> GameRecord:
        """Play the game to its end (or until interrupted) and return its record."""
        started_at = time.time()
        termination = Termination.NORMAL
        failure = ""
        self.feed.game_id = self.game_id
        self.feed.status = spec_pb.TABLE_STATUS_PLAYING
        self._task = _current_task()
        for seat in self.seats:
            seat.alarm.task = self._task
        try:
            self._announce_game()
            while True:
                await self._play_hand()
                if self.game.is_over:
                    break
                if self.spec.hands is not None and len(self.hands) >= self.spec.hands:
                    break
        except _Interrupted:
            termination = Termination.INTERRUPTED
            self._record_partial_hand()
        except asyncio.CancelledError:
            self._release()
            raise
        except Exception as e:
            log.exception("table %s failed", self.spec.table_id)
            termination = Termination.CRASH
            failure = f"{type(e).__name__}: {e}"
            self._record_partial_hand()
        finally:
            for seat in self.seats:
                seat.alarm.stop()
        try:
            self._collect_stragglers()
        except Exception:
            # Bookkeeping of messages that changed nothing: it must not cost the game's record.
            log.exception("table %s: reading what its bots sent last failed", self.spec.table_id)
        self._over = True
        record = self._record(termination, failure, started_at)
        await self._announce_end(record)
        return record

    def interrupt(self, reason: str) -> None:
        """Stop the game at its next safe point; it is recorded INTERRUPTED (the referee stops).

        The game is not cancelled: cancelling a write in flight would leave that bot's stream
        unusable (and its Shutdown undelivered). Waits for answers and for reconnections are
        woken instead, and the game unwinds from there.
        """
        if self._interrupting:
            return
        self._interrupting = True
        self._interrupt_reason = reason
        now = _monotonic()
        for seat in self.seats:
            if seat.session is not None:
                seat.session.inbox.put_nowait((now, Wake()))
            if seat.returned is not None:
                seat.returned.set()

    def live_sessions(self) -> list[Session]:
        """The sessions still open at the table (to return to the lobby after the game)."""
        return [s.session for s in self.seats if s.session is not None and not s.session.closed]

    def _release(self) -> None:
        for seat in self.seats:
            if seat.session is not None and seat.session.owner is self:
                seat.session.owner = None

    def _announce_game(self) -> None:
        settings = wire.clock_settings(self.spec.clocks)
        public = ev_pb.GameStarted(
            game_id=self.game_id,
            seat_names=list(self.spec.seats),
            rules=self._rules_msg,
            clock=settings,
            max_hands=self._max_hands,
        )
        for seat in self.seats:
            seat.pending.append(wire.event_entry(self._game_started(seat.index)))
        self.feed.publish(ev_pb.Event(game_started=public))

    def _game_started(self, seat: int) -> ev_pb.Event:
        return ev_pb.Event(
            game_started=ev_pb.GameStarted(
                game_id=self.game_id,
                seat_names=list(self.spec.seats),
                your_seat=seat,
                rules=self._rules_msg,
                clock=wire.clock_settings(self.spec.clocks),
                max_hands=self._max_hands,
            )
        )

    async def _play_hand(self) -> None:
        game = self.game
        hand = game.hand
        number = game.hand_number
        self._trick_log = []
        self._hand_points = [0 for _ in self.seats]
        self._tricks = b""
        self._kitty = b""
        self._received_told = False
        self._broken = hand.hearts_broken
        self._current = []
        self.feed.hand_number = number
        self._broadcast(wire.hand_started(hand, number))
        for seat in self.seats:
            seat.pending.append(wire.cards_dealt_entry(hand, number, seat.index))
        if hand.phase is _PHASE_PASS:
            async with asyncio.TaskGroup() as tg:
                for s in hand.seats_to_pass:
                    tg.create_task(self._pass_seat(hand, number, s))
            if self._interrupting:
                raise _Interrupted
            for seat in self.seats:
                seat.pending.append(wire.cards_received_entry(hand, number, seat.index))
            self._received_told = True
        while hand.phase is _PHASE_PLAY:
            await self._play_turn(hand, number)
        result = game.finish_hand()
        self.hands.append(self._hand_record(hand, number, result.points, result.moon, result.sun))
        self.feed.totals = list(game.totals)
        self._broadcast(wire.hand_ended(number, result, game.totals))
        self.feed.publish(wire.hand_revealed_bytes(hand, number))

    async def _pass_seat(self, hand: Hand, number: int, seat: int) -> None:
        alarm = self.seats[seat].alarm
        alarm.task = _current_task()  # each pass is its own task
        try:
            cards = await self._decide(hand, number, seat, _PASS)
        except _Interrupted:
            return  # the other seats unwind on their own; the game stops after the pass
        finally:
            alarm.task = self._task
        # Judged already (or the fallback's): the engine's checked pass_mask checks it once more.
        hand.pass_mask(seat, mask_of(cards))

    async def _play_turn(self, hand: Hand, number: int) -> None:
        seat_index = hand.to_move
        assert seat_index is not None
        seat = self.seats[seat_index]
        legal = hand.legal_mask()
        asks_forced = seat.session is not None and seat.session.decide_forced
        if legal & (legal - 1) == 0 and not (asks_forced and seat.forfeit is None):
            card = _CARDS[legal.bit_length() - 1]
            self._unrecorded.append((number, seat_index, _PLAY, 0, (card,), 0.0, True, None, False))
        else:
            (card,) = await self._decide(hand, number, seat_index, _PLAY, legal)
        trick_number = len(self._trick_log)  # the engine's trick_number
        index = card.index
        # Every card here is legal (judged against the legal mask, the fallback's or the only
        # one), so the engine's unchecked fast path plays it.
        completed = hand.play_index(index)
        if self._breakers >> index & 1 and not self._broken:
            self._broken = hand.hearts_broken
        # Held from spectators until the trick ends (TableFeed.publish says why).
        self._broadcast(wire.card_played(number, trick_number, seat_index, card), hold=True)
        cards = self._current
        if not cards:
            self._current_leader = seat_index
        cards.append(index)
        if not completed:
            return
        self._current = []
        kitty = [c.index for c in hand.kitty] if trick_number == 0 else []
        points = 0
        for c in cards + kitty:
            points += self._card_points[c]
        winner = hand.leader
        self._trick_log.append((self._current_leader, cards, winner))
        self._hand_points[winner] += points
        entry, won = wire.trick_taken(
            number, trick_number, self._current_leader, cards, winner, points, kitty
        )
        self._tricks += entry
        if kitty:  # shown to every seat by this TrickWon: the later requests carry it too
            self._kitty = wire.kitty_state(kitty)
        self._broadcast(won)

    # ---- one decision -----------------------------------------------------------------------

    async def _decide(
        self, hand: Hand, number: int, index: int, kind: str, legal: int = 0
    ) -> tuple[Card, ...]:
        """Get a decision from the seat's bot, or a substitute; record it either way (``legal``:
        the legal plays' mask, for a play)."""
        seat = self.seats[index]
        clocks = self.spec.clocks
        due = _monotonic()
        allowed_ms = clocks.move_ms + seat.bank_ms
        deadline = due + allowed_ms / MS
        request_id = 0
        fault: FaultKind | None = None
        seat.deciding = True
        try:
            while True:
                if self._interrupting:
                    raise _Interrupted
                if seat.forfeit is not None:
                    forfeited = seat.session
                    if forfeited is not None and not forfeited.inbox.empty():
                        self._after_forfeit(seat, forfeited)
                    cards = self._fallback(hand, index, kind)
                    if seat.gone is not None:
                        # Its bot gone for good as this decision was open: the fault says what
                        # the fallback played in its place, as the grace period's end does.
                        fault = FaultKind.DISCONNECT
                        self._fault(hand, number, index, fault, seat.gone, "", cards, 0)
                        seat.gone = None
                    self._decided(hand, number, index, kind, request_id, cards, due, fault, True)
                    return cards
                session = seat.session
                if session is None:
                    fault = await self._await_return(hand, number, index, kind, deadline)
                    if fault is None:
                        continue
                    cards = self._fallback(hand, index, kind)
                    self._decided(hand, number, index, kind, request_id, cards, due, fault, True)
                    return cards
                if session.closed:  # it ended before the table could hear of it
                    self.session_lost(session)
                    continue
                if not self._drain(seat, session, number, hand):
                    continue
                request_id = next(self._ids)
                session.last_request_id = request_id
                request = self._request(hand, number, index, kind, request_id, deadline, legal)
                outcome = await self._exchange(
                    seat, session, request, request_id, deadline, hand, kind, legal
                )
                if outcome in (_Outcome.LOST, _Outcome.FORFEITED, _Outcome.INTERRUPTED):
                    self._abandon(seat, request_id, deadline)
                    continue
                if isinstance(outcome, _Accepted):
                    self._charge(seat, (outcome.at - due) * MS)
                    self._decided(hand, number, index, kind, request_id, outcome.cards, due, fault)
                    return outcome.cards
                cards = self._fallback(hand, index, kind)
                if outcome is _Outcome.TIMEOUT:
                    bank = seat.bank_ms
                    self._charge(seat, allowed_ms)  # the whole bank: it ran out
                    fault = FaultKind.TIMEOUT
                    detail = (
                        f"no answer to request {request_id} within {allowed_ms:.0f} ms "
                        f"({clocks.move_ms} ms move time + {bank:.0f} ms time bank left)"
                    )
                    self._fault(hand, number, index, fault, detail, "", cards, request_id)
                else:
                    self._charge(seat, (_monotonic() - due) * MS)
                    fault = outcome.kind
                    self._fault(
                        hand, number, index, fault, outcome.detail, outcome.sent, cards, request_id
                    )
                self._decided(hand, number, index, kind, request_id, cards, due, fault, True)
                return cards
        finally:
            seat.deciding = False
            if seat.gone is not None:  # answered (or stopped) before it could see the forfeit
                self._fault(hand, number, index, FaultKind.DISCONNECT, seat.gone, "", (), 0)
                seat.gone = None

    async def _await_return(
        self, hand: Hand, number: int, index: int, kind: str, deadline: float
    ) -> FaultKind | None:
        """Wait for an away seat's bot to come back; None if it did, else the fault recorded."""
        seat = self.seats[index]
        assert seat.away_since is not None
        grace_end = seat.away_since + self.spec.faults.grace_ms / MS
        until = min(deadline, grace_end)
        if _monotonic() < until:
            seat.returned = asyncio.Event()
            try:
                async with asyncio.timeout(until - _monotonic()):
                    await seat.returned.wait()
            except TimeoutError:
                pass
            finally:
                seat.returned = None
        if seat.session is not None or seat.forfeit is not None or self._interrupting:
            return None
        cards = self._fallback(hand, index, kind)
        if _monotonic() >= grace_end:
            if seat.said_goodbye:
                detail = "its bot left the game (Goodbye): the seat is forfeited"
            else:
                away_ms = (_monotonic() - seat.away_since) * MS
                detail = (
                    f"not connected for {away_ms:.0f} ms, past the grace period of "
                    f"{self.spec.faults.grace_ms} ms: the seat is forfeited{_ended(seat)}"
                )
            # Forfeited first, so that the fault's notices say so (SeatFaulted.forfeited).
            self._forfeit(seat, Termination.DISCONNECT, detail)
            # One absence, one fault: counted here only if no missed move counted it before.
            counted = not seat.away_counted
            seat.away_counted = True
            self._fault(
                hand, number, index, FaultKind.DISCONNECT, detail, "", cards, 0, counted=counted
            )
        else:
            detail = (
                "not connected when the seat had to decide, and not back before the deadline"
                + _ended(seat)
            )
            counted = not seat.away_counted
            if not counted:
                detail += (
                    " (this absence counts as one fault: the seat is held until the grace period "
                    f"of {self.spec.faults.grace_ms} ms ends)"
                )
            seat.away_counted = True
            self._charge(seat, self.spec.clocks.move_ms + seat.bank_ms)
            self._fault(
                hand, number, index, FaultKind.DISCONNECT, detail, "", cards, 0, counted=counted
            )
        return FaultKind.DISCONNECT

    async def _exchange(
        self,
        seat: Seat,
        session: Session,
        request: bytes,
        request_id: int,
        deadline: float,
        hand: Hand,
        kind: str,
        legal: int,
    ) -> _Accepted | _Refused | _Outcome:
        """Send the request with the seat's pending events and wait for the answer."""
        events, seat.pending = seat.pending, []
        message = wire.request_response(events, request)
        alarm = seat.alarm
        alarm.set(deadline, session, request_id)
        try:
            alarm.sending = True
            await session.send(message)
            alarm.sending = False
            if alarm.overdue:
                # Its deadline passed while it was written: a timeout, read first, so that
                # _expire judges the answers already in by when they came, as the alarm's
                # marker in order of arrival would have.
                session.inbox.put_back((_monotonic(), Expired(request_id)))
            seat.told = True
            # The bot is deciding now: the records of earlier decisions are made meanwhile.
            self._record_decisions()
            while True:
                item = await session.inbox.get()
                verdict = self._judge(seat, item, request_id, hand, kind, legal)
                if verdict is _Outcome.TIMEOUT:
                    break
                if verdict is not None:
                    return verdict
                if seat.pending and seat.session is session:
                    # A fault the request outlives (a wrong request id, a second Hello): told
                    # now, while the bot can still answer it, not with the timeout it ends in.
                    # Not once the seat is another session's: its pending events start with the
                    # replay that session's first message must carry (a message read from the
                    # old one before its end took them to the old stream).
                    await self._tell_now(seat, session, request_id)
        except asyncio.CancelledError:
            if not alarm.claim():
                raise
        except SessionLostError:
            return _Outcome.LOST
        finally:
            alarm.clear()
        return self._expire(seat, session, request_id, deadline, hand, kind, legal)

    async def _tell_now(self, seat: Seat, session: Session, request_id: int) -> None:
        """Send the seat's pending events while its request ``request_id`` stays open, timed by
        the request's alarm as the request's own write is."""
        events, seat.pending = seat.pending, []
        alarm = seat.alarm
        overdue = alarm.overdue
        alarm.sending = True
        await session.send(wire.response_bytes(events))
        alarm.sending = False
        if alarm.overdue and not overdue:  # its deadline passed meanwhile: as in _exchange
            session.inbox.put_back((_monotonic(), Expired(request_id)))

    def _expire(
        self,
        seat: Seat,
        session: Session,
        request_id: int,
        deadline: float,
        hand: Hand,
        kind: str,
        legal: int,
    ) -> _Accepted | _Refused | _Outcome:
        """The request's deadline has passed: an answer that arrived in time still counts."""
        self._remember_expired(seat, request_id, deadline)
        # An answer that arrived in time but was not yet read still counts.
        inbox = session.inbox
        while not inbox.empty():
            item = inbox.get_nowait()
            if item[0] > deadline:
                # This and what follows (the inbox is in order of arrival) came with no request
                # open: left where they are, for what reads the seat's inbox next (_drain
                # before its next request, _after_forfeit, _collect_stragglers), which notes a
                # late answer and counts anything else, after this request's timeout.
                inbox.put_back(item)
                break
            verdict = self._judge(seat, item, request_id, hand, kind, legal)
            if verdict is not None and verdict is not _Outcome.TIMEOUT:
                return verdict
        return _Outcome.TIMEOUT

    def _judge(
        self, seat: Seat, item: Inbound, request_id: int, hand: Hand, kind: str, legal: int
    ) -> _Accepted | _Refused | _Outcome | None:
        """What one message from the bot means for the open request (None: keep waiting);
        ``legal``: the mask of the legal plays the request offered (for a play)."""
        at, message = item
        if isinstance(message, wire.Play):
            # The common case first: an answer to the open request naming one of the legal
            # cards it listed, read without protobuf (wire.Play); anything else is judged on
            # the message protobuf parses.
            if kind == _PLAY and message.request_id == request_id:
                named = message.card
                if legal >> named.index & 1:
                    return _Accepted((named,), at)
            message = message.full()
        if isinstance(message, Closed):
            return _Outcome.LOST
        if isinstance(message, Wake):
            return _Outcome.INTERRUPTED if self._interrupting else None
        if isinstance(message, Expired):
            return _Outcome.TIMEOUT if message.request_id == request_id else None
        if isinstance(message, wire.Malformed):
            return _Refused(
                FaultKind.MALFORMED,
                f"the message ({message.size} bytes) is not a PlayRequest: {message.error}",
                _not_a_decision(message),
            )
        decision = message.decision
        if kind == _PLAY and decision.request_id == request_id:
            # The common case first, with no text built for a record it will not need: an answer
            # to the open request (whose id is never 0, so the message sets its Decision) naming
            # one of the legal cards the request listed (so the choice it sets is play_card).
            played = wire.CARD_OF.get(decision.play_card.card)
            if played is not None and legal >> played.index & 1:
                return _Accepted((played,), at)
        which = message.WhichOneof("kind")
        if which != "decision":
            what = _not_a_decision(message)
            return self._stray(
                seat,
                hand,
                request_id,
                f"{what} arrived while request {request_id} was open",
                FaultKind.PROTOCOL,
                what,  # FaultNotice.your_answer: empty only for a timeout or a disconnect
            )
        if decision.request_id != request_id:
            if _late(seat, decision.request_id):
                self._note_late(seat, decision, at)
                return None
            return self._stray(
                seat,
                hand,
                request_id,
                f"an answer to request {decision.request_id}, but the open request is "
                # Not only "echo the id": the same id arrives for a second answer to a request
                # already answered, whose fix is to answer once.
                f"{request_id}: answer each DecisionRequest once, echoing its request_id",
                FaultKind.WRONG_REQUEST_ID,
                _describe(decision),
            )
        choice = decision.WhichOneof("choice")
        index = seat.index
        if kind == _PASS and choice == "pass_cards":
            # Likewise for a pass: as many distinct cards as asked, all held (any other pass is
            # refused below, with its reason).
            chosen: list[Card] = []
            mask = 0
            for text in decision.pass_cards.cards:
                card = wire.CARD_OF.get(text)
                if card is None or mask & card.bit:
                    break
                mask |= card.bit
                chosen.append(card)
            else:
                if len(chosen) == self.rules.pass_count and not mask & ~hand.hand_mask(index):
                    return _Accepted(tuple(chosen), at)
        sent = _describe(decision)
        if choice is None:
            unread = decision.ByteSize() - _request_id_size(decision.request_id)
            if unread > 0:
                # "Sets no choice" misnamed a choice a later revision may add (as unknown_kind
                # names a PlayRequest's).
                unknown = (
                    f"the Decision sets no choice this referee knows ({unread} bytes of fields "
                    "it does not read: a later revision's?)"
                )
                return _Refused(FaultKind.MALFORMED, unknown, sent)
            return _Refused(FaultKind.MALFORMED, "the Decision sets no choice", sent)
        if (choice == "pass_cards") != (kind == _PASS):
            wanted = "pass_cards" if kind == _PASS else "play_card"
            return _Refused(
                FaultKind.PROTOCOL,
                f"the Decision sets {choice} but request {request_id} asked for {wanted}",
                sent,
            )
        if kind == _PLAY:
            text = decision.play_card.card
            card = wire.card_spelled(text)
            if card is None:
                return _Refused(
                    FaultKind.MALFORMED, f"{_quoted(text)} is not a card: {wire.CARD_FORM}", sent
                )
            why = hand.check_play(index, card)
            if why is None:
                return _Accepted((card,), at)
            if why is Violation.CARD_NOT_HELD:
                return _Refused(FaultKind.CARD_NOT_HELD, f"{card} is not in the seat's hand", sent)
            return _Refused(FaultKind.ILLEGAL_CARD, f"{card} may not be played: {why.value}", sent)
        passed: list[Card] = []
        for t in decision.pass_cards.cards:
            spelled = wire.card_spelled(t)
            if spelled is None:
                return _Refused(
                    FaultKind.MALFORMED,
                    f"the pass names something not a card: cannot parse card {_quoted(t)}: "
                    f"{wire.CARD_FORM}",
                    sent,
                )
            passed.append(spelled)
        cards = tuple(passed)
        why = hand.check_pass(index, cards)
        if why is None:
            return _Accepted(cards, at)
        # "the pass of 2C 2C" / "an empty pass": the message reads as a sentence either way.
        # Cut as the echo of the answer is: a pass of 15,000 cards made a 45 kB notice.
        shown = f"the pass of {_listed(cards, str, ' ')}" if cards else "an empty pass"
        if why is Violation.CARD_NOT_HELD:
            # Which card, as a play's refusal says: "names a card not in the hand" left the bot's
            # author to find it among three.
            held = hand.hand_mask(index)
            absent = [c for c in cards if not held & c.bit]
            which_card = f" ({absent[0]})" if absent else ""
            return _Refused(
                FaultKind.CARD_NOT_HELD, f"{shown} names a card not in the hand{which_card}", sent
            )
        if why in (Violation.DUPLICATE_CARD, Violation.WRONG_PASS_COUNT):
            return _Refused(
                FaultKind.WRONG_PASS,
                f"{shown} is wrong: {why.value} ({len(cards)} given; pass "
                f"{self.rules.pass_count} distinct cards)",
                sent,
            )
        return _Refused(FaultKind.ILLEGAL_CARD, f"{shown} is refused: {why.value}", sent)

    def _stray(
        self,
        seat: Seat,
        hand: Hand,
        request_id: int,
        detail: str,
        kind: FaultKind = FaultKind.PROTOCOL,
        sent: str = "",
    ) -> _Outcome | None:
        """A message that answers nothing while request ``request_id`` is open: a fault, the
        request stays open (unless forfeited). The notice names the open request, the one the
        bot should have answered (the id the message echoed is in its detail)."""
        number = self.game.hand_number
        self._fault(hand, number, seat.index, kind, detail, sent, (), request_id)
        return _Outcome.FORFEITED if seat.forfeit is not None else None

    def _abandon(self, seat: Seat, request_id: int, deadline: float) -> None:
        """Remember a request the table gave up on unanswered (its session ended, the seat was
        forfeited, the game is stopping) as timed out then: an answer to it that still comes
        (on a new session of the seat, or after the forfeit) is late, not a wrong request id."""
        self._remember_expired(seat, request_id, min(deadline, _monotonic()))

    def _remember_expired(self, seat: Seat, request_id: int, deadline: float) -> None:
        seat.expired[request_id] = deadline
        while len(seat.expired) > EXPIRED_REMEMBERED:
            del seat.expired[next(iter(seat.expired))]

    def _note_late(
        self, seat: Seat, decision: bot_pb.Decision, at: float, since: float | None = None
    ) -> None:
        """Record a late reply; ``since``: when the request ended, if the seat does not
        remember it (a forfeited seat's answer to a request that had not timed out)."""
        seat.late_noted += 1
        if seat.late_noted > LATE_RECORDED:
            if seat.late_noted == LATE_RECORDED + 1:
                log.warning(
                    "game %s seat %d (%s): more than %d late replies; the record keeps the "
                    "first %d, the game's end logs how many there were",
                    self.game_id,
                    seat.index,
                    seat.bot,
                    LATE_RECORDED,
                    LATE_RECORDED,
                )
            return
        ended = seat.expired.get(decision.request_id, at if since is None else since)
        self.late.append(
            LateReply(
                hand=self._hand_number(),
                seat=seat.index,
                bot=seat.bot,
                request_id=decision.request_id,
                sent=_describe(decision),
                late_ms=max(0.0, (at - ended) * MS),
            )
        )

    def _stale(self, seat: Seat, item: Inbound, hand: Hand) -> str | None:
        """Judge a message that answers no open request: a late answer is noted and dropped;
        anything else is returned, described, to be counted as a fault."""
        at, message = item
        if isinstance(message, Closed | Wake | Expired):
            return None
        decision = _decision_in(message)
        if decision is None:
            return _not_a_decision(message)
        if _late(seat, decision.request_id):
            self._note_late(seat, decision, at)
            return None
        return _describe(decision)

    def _after_forfeit(self, seat: Seat, session: Session) -> None:
        """Read what a forfeited seat's bot sent: no request of this game is open for it any
        more, so each Decision is a late reply (dropped and noted, never a fault: a forfeited
        seat counts no more faults); anything else is dropped."""
        inbox = session.inbox
        while not inbox.empty():
            at, message = inbox.get_nowait()
            decision = _decision_in(message)
            if decision is not None:
                self._note_late(seat, decision, at, seat.forfeit_at)

    def _collect_stragglers(self) -> None:
        """At the end of the game, read what the seats' bots sent that no request read: each
        is recorded as it would have been before a next request (a late answer noted, any other
        answer a fault, or after a forfeit a late reply), rather than dropped unseen later."""
        self._stopped_play = True
        for seat in self.seats:
            if seat.session is not None:
                self._read_unread(seat, seat.session)

    def _read_unread(self, seat: Seat, session: Session) -> None:
        """Record what the seat's session sent that no request has read, with no request open
        (at the end of the game, or as the session ends)."""
        if session.inbox.empty():
            return
        if seat.forfeit is not None:
            self._after_forfeit(seat, session)
            return
        self._drain(seat, session, self._hand_number(), self.game.hand)

    def _hand_number(self) -> int:
        """The hand a record made now belongs to: once play has stopped, the game's hand
        number may be that of a next hand never dealt, so the last one played."""
        if self._stopped_play and self.hands:
            return self.hands[-1].number
        return self.game.hand_number

    def _settle(self, seat: Seat, session: Session) -> None:
        """Empty the inbox of a session sitting down at this table (or back at it): nothing was
        asked of it here yet, so an answer in it is late (to a request that timed out in its
        last game, or one given up when its stream broke), noted in this game's record, as the
        last game's is made already; anything else answers nothing and is dropped (and logged).
        A Closed marker stays: the session has ended meanwhile, and the table must hear of it."""
        inbox = session.inbox
        closed: list[Inbound] = []
        while not inbox.empty():
            item = inbox.get_nowait()
            at, message = item
            if isinstance(message, Closed):
                closed.append(item)
                continue
            if isinstance(message, Wake | Expired):
                continue
            decision = _decision_in(message)
            if decision is None:
                # Logged as a Decision sent then is: a second Hello there went unseen.
                log.info(
                    "table %s seat %d (%s): dropped %s sent before it sat down",
                    self.spec.table_id,
                    seat.index,
                    seat.bot,
                    _not_a_decision(message),
                )
                continue
            if decision.request_id in seat.expired:
                self._note_late(seat, decision, at)
                continue
            log.info(
                "table %s seat %d (%s): dropped an answer sent before it sat down: %s",
                self.spec.table_id,
                seat.index,
                seat.bot,
                _describe(decision),
            )
        for item in closed:
            inbox.put_nowait(item)

    def _drain(self, seat: Seat, session: Session, number: int, hand: Hand) -> bool:
        """Before a new request: drop what arrived with no request open (late answers, extras);
        whether the seat is still its bot's to play (the faults may have forfeited it).

        The caller must not test ``seat.forfeit`` itself: mypy keeps it narrowed to None from
        the caller's earlier test across this call, and the compiled build then fails on the
        Termination it finds (a TypeError that ended the table)."""
        if not seat.told:
            # Nothing of this game has reached the bot yet (its events go with its first
            # request): what it sent since sitting down was sent between games as far as it
            # knew, dropped and logged as at sitting down. A second Hello sent just after a
            # Welcome was a fault in a game formed at that instant.
            self._settle(seat, session)
            return seat.forfeit is None and seat.session is session
        strays: list[str] = []
        garbled: wire.Malformed | None = None
        while not session.inbox.empty():
            item = session.inbox.get_nowait()
            stray = self._stale(seat, item, hand)
            if stray is not None:
                strays.append(stray)
                if garbled is None and isinstance(item[1], wire.Malformed):
                    garbled = item[1]
        if garbled is not None:
            # Bytes that are not a PlayRequest are malformed wherever they come: the fault says
            # so, as it does while a request is open, rather than blaming a second answer.
            detail = (
                f"{len(strays)} message(s) arrived with no request open, among them "
                f"{garbled.size} bytes that are not a PlayRequest: {garbled.error}"
            )
            sent = _not_a_decision(garbled)
            self._fault(hand, number, seat.index, FaultKind.MALFORMED, detail, sent, (), 0)
        elif strays:
            detail = (
                f"{len(strays)} message(s) arrived with no request open (the first: "
                f"{strays[0]}; a second answer to one request, say): send one Decision per request"
            )
            self._fault(hand, number, seat.index, FaultKind.PROTOCOL, detail, strays[0], (), 0)
        return seat.forfeit is None and seat.session is session

    def _request(
        self,
        hand: Hand,
        number: int,
        index: int,
        kind: str,
        request_id: int,
        deadline: float,
        legal: int,
    ) -> bytes:
        """The self-contained request (serialised): hand, legal choices, public state, clocks."""
        seat = self.seats[index]
        left_ms = max(0, int((deadline - _monotonic()) * MS))
        passing = kind == _PASS
        held = hand.hand_mask(index)
        key = number << 8 | index << 1 | passing
        fixed = self._fixed.get(key)
        if fixed is None:
            if len(self._fixed) > 2 * len(self.seats):
                self._fixed.clear()  # older hands' parts
            self._fixed[key] = fixed = wire.request_fixed(
                kind=bot_pb.DECISION_KIND_PASS if passing else bot_pb.DECISION_KIND_PLAY,
                game_id=self._game_id_field,
                hand_number=number,
                seat=index,
                pass_count=self.rules.pass_count if passing else 0,
                direction=hand.pass_direction if passing else None,
                pass_to=hand.pass_target(index) if passing else 0,
            )
        trick_number = len(self._trick_log)  # the engine's trick_number (0 while passing)
        return wire.request_changing(
            fixed,
            request_id=request_id,
            trick_number=trick_number,
            held=held,
            legal=held if passing else legal,
            deadline_ms=left_ms,
            # No more bank than time left: a request sent again (to a bot back from a
            # disconnect) past the move time had its whole bank beside a shorter deadline.
            bank_ms=min(int(seat.bank_ms), left_ms),
            state=self._state(hand, number, index, trick_number),
        )

    def _state(self, hand: Hand, number: int, index: int, trick_number: int) -> bytes:
        """Everything public about the hand and the game, plus this seat's own pass."""
        playing = hand.phase is _PHASE_PLAY
        cards = self._current
        # The seat asked to play with no card on the table leads the trick; none while passing.
        leader: int | None = self._current_leader if cards else (index if playing else None)
        current = b""
        if leader is not None:
            current = wire.current_trick_field(trick_number, leader, cards)
        # Points, hearts broken and forfeits change a few times a hand at most.
        broken = self._broken
        key = (number << 8 | trick_number) << 10 | playing << 9 | broken << 8 | self._forfeits
        if key != self._trick_key:
            self._trick_key = key
            self._trick_part = wire.trick_state(
                hand_points=self._hand_points,
                hearts_broken=broken,
                first_trick=playing and trick_number == 0,
                forfeited=[s.forfeit is not None for s in self.seats],
            )
        in_hand = _cards_in_hand(self._players, self._hand_size, trick_number, len(cards), leader)
        seat_state = self._seat_state(hand, number, index)
        return b"".join((current, self._trick_part, in_hand, seat_state, self._tricks, self._kitty))

    def _seat_state(self, hand: Hand, number: int, index: int) -> bytes:
        """The parts of a seat's PublicState fixed for a phase of a hand (serialised, cached)."""
        key = number << 8 | index << 1 | (hand.phase is _PHASE_PASS)
        cached = self._seat_states.get(key)
        if cached is not None:
            return cached
        if len(self._seat_states) > 4 * len(self.seats):
            self._seat_states.clear()  # older hands' parts
        part = wire.seat_state(hand, number, index, self.game.totals)
        self._seat_states[key] = cached = part + self._state_constant
        return cached

    # ---- clocks, faults, forfeits -----------------------------------------------------------

    def _charge(self, seat: Seat, elapsed_ms: float) -> None:
        """Draw the part of a decision beyond the move time from the seat's bank."""
        over = elapsed_ms - self.spec.clocks.move_ms
        if over > 0:
            seat.bank_ms = max(0.0, seat.bank_ms - over)
        if (
            not seat.warned
            and seat.bank_ms < self.config.time_warning_ms < self.spec.clocks.bank_ms
        ):
            seat.warned = True
            left = int(seat.bank_ms)  # one figure for the field and the words (947, not 948)
            seat.pending.append(
                wire.event_entry(
                    ev_pb.Event(
                        time_warning=ev_pb.TimeWarning(
                            time_bank_ms=left,
                            message=f"{left} ms of time bank left for this game",
                        )
                    )
                )
            )

    def _fallback(self, hand: Hand, index: int, kind: str) -> tuple[Card, ...]:
        if kind == _PASS:
            return fallback_pass(hand.hand(index), self.rules.pass_count)
        return (fallback_play(hand.legal_plays()),)

    def _decided(
        self,
        hand: Hand,
        number: int,
        index: int,
        kind: str,
        request_id: int,
        cards: tuple[Card, ...],
        due: float,
        fault: FaultKind | None,
        fallback: bool = False,
    ) -> None:
        elapsed_ms = (_monotonic() - due) * MS
        self._unrecorded.append(
            (number, index, kind, request_id, cards, elapsed_ms, False, fault, fallback)
        )

    def _record_decisions(self) -> None:
        """Turn the decisions taken since the last call into records (:attr:`decisions`).

        Kept apart from taking them: it runs while a bot decides, off the path from one bot's
        answer to the next bot's request.
        """
        for (
            number,
            index,
            kind,
            request_id,
            cards,
            elapsed,
            forced,
            fault,
            fallback,
        ) in self._unrecorded:
            # What Decision(...) makes, without its generated __init__, which sets each field of
            # the frozen dataclass through a Python-level object.__setattr__ call: that cost
            # about 18k instructions a decision, 7% of the referee's work per round trip.
            record = _new_object(_Decision)
            _set_attribute(
                record,
                "__dict__",
                {
                    "hand": number,
                    "seat": index,
                    "kind": kind,
                    "request_id": request_id,
                    "cards": (
                        (_CODES[cards[0].index],)
                        if len(cards) == 1
                        else tuple(wire.cards_of(cards))
                    ),
                    "elapsed_ms": elapsed,
                    "forced": forced,
                    "fault": fault,
                    "fallback": fallback,
                },
            )
            self.decisions.append(record)
        self._unrecorded.clear()

    def _fault(
        self,
        hand: Hand,
        number: int,
        index: int,
        kind: FaultKind,
        detail: str,
        sent: str,
        substitute: Sequence[Card],
        request_id: int,
        *,
        counted: bool = True,
    ) -> None:
        """Record a fault, tell the seat and the table, and forfeit past the allowance (a fault
        not ``counted`` is recorded and told, but not counted towards it)."""
        seat = self.seats[index]
        if counted:
            seat.faults.append(kind)
        trick = hand.trick_number if hand.phase is _PHASE_PLAY else -1
        codes = tuple(str(c) for c in substitute)
        self.faults.append(
            Fault(
                hand=number,
                trick=trick,
                seat=index,
                bot=seat.bot,
                kind=kind,
                detail=detail,
                sent=sent,
                substitute=codes,
                at_ms=(_monotonic() - self._t0) * MS,
            )
        )
        policy = self.spec.faults
        allowed = policy.faults_allowed
        if seat.forfeit is None and len(seat.faults) > allowed:
            kinds = Counter(f.value for f in seat.faults)
            why = ", ".join(f"{k} x{v}" for k, v in kinds.items())
            self._forfeit(
                seat,
                kind.termination if len(kinds) == 1 else Termination.FORFEIT,
                f"{len(seat.faults)} fault{'' if len(seat.faults) == 1 else 's'} ({why}) "
                f"with {allowed} allowed" + (" (strict mode)" if policy.strict else ""),
            )
        if substitute:
            detail = f"{detail}; played instead: {' '.join(codes)}"
        log.info(
            "table %s seat %d (%s) fault %s: %s",
            self.spec.table_id,
            index,
            seat.bot,
            kind.value,
            detail,
        )
        notice = ev_pb.Event(
            fault_notice=ev_pb.FaultNotice(
                kind=wire.fault_kind(kind),
                game_id=self.game_id,
                hand_number=number,
                request_id=request_id,
                your_answer=sent,
                substitute_cards=codes,
                message=detail,
                faults=len(seat.faults),
                faults_allowed=allowed,
                forfeited=seat.forfeit is not None,
            )
        )
        seat.pending.append(wire.event_entry(notice))
        public = ev_pb.Event(
            seat_faulted=ev_pb.SeatFaulted(
                seat=index,
                kind=wire.fault_kind(kind),
                hand_number=number,
                faults=len(seat.faults),
                faults_allowed=allowed,
                forfeited=seat.forfeit is not None,
            )
        )
        payload = public.SerializeToString()
        entry = wire.event_entry(payload)
        for other in self.seats:
            if other is not seat:
                other.pending.append(entry)
        self.feed.publish(payload)

    def _forfeit(self, seat: Seat, termination: Termination, reason: str) -> None:
        if seat.forfeit is not None:
            return
        seat.forfeit = termination
        self._forfeits += 1
        seat.forfeit_reason = reason
        seat.forfeit_at = _monotonic()
        log.info(
            "table %s seat %d (%s) forfeited: %s", self.spec.table_id, seat.index, seat.bot, reason
        )

    # ---- sessions coming and going ----------------------------------------------------------

    def session_lost(self, session: Session) -> None:
        """A seated session ended: its seat is away (at once past grace, after a Goodbye).

        A Goodbye before the bot was sent anything of this game left between games, as far as
        the bot could know (the table may have been formed as it said goodbye): the game does not
        go on without it, and is recorded as interrupted, a game nobody played, rather than as
        its forfeit.
        """
        for seat in self.seats:
            if seat.session is session:
                seat.session = None
                now = _monotonic()
                goodbye = session.said_goodbye
                seat.away_since = now - (self.spec.faults.grace_ms / MS if goodbye else 0.0)
                seat.said_goodbye = goodbye
                seat.away_counted = False
                seat.lost = session  # its reason read when told: a cut is known a moment later
                if not self._over and not seat.alarm.watches(session):
                    # No request is open on it, so nothing would read its inbox again: what it
                    # sent last (a late answer, say) is recorded now. (With a request open, the
                    # table reads on, in order, to the end marker.)
                    self._read_unread(seat, session)
                if goodbye and not seat.told:
                    self.interrupt(f"{seat.bot} left (Goodbye) before its game started")

    def forfeit_gone(self, key: bytes, reason: str) -> list[int]:
        """Forfeit at once (a disconnect, with ``reason``) the seats held by the token whose
        digest is ``key``, its bot gone for good; the seats' indexes."""
        # Not left to the grace: a bot whose process has exited can never come back for its seat.
        hits = []
        for seat in self.seats:
            if seat.key != key:
                continue
            hits.append(seat.index)
            if seat.forfeit is None and not self._over:
                self._forfeit(seat, Termination.DISCONNECT, reason)
                if seat.deciding:
                    # Recorded by the open decision, which moves to the fallback at once: with
                    # the cards played in the bot's place.
                    seat.gone = reason
                else:
                    # Recorded and told as the grace's end is: the table learns the seat is
                    # forfeited (SeatFaulted), and the record holds the disconnect with its
                    # reason.
                    game = self.game
                    self._fault(
                        game.hand,
                        game.hand_number,
                        seat.index,
                        FaultKind.DISCONNECT,
                        reason,
                        "",
                        (),
                        0,
                    )
            if seat.returned is not None:
                seat.returned.set()  # a decision waiting for the seat's return plays on
        return hits

    def claimable(self, key: bytes, bot: str) -> Seat | None:
        """The seat a new session with this token may take back, if any."""
        now = _monotonic()
        grace = self.spec.faults.grace_ms / MS
        if self._over:
            return None
        for seat in self.seats:
            if seat.session is not None or seat.forfeit is not None or seat.away_since is None:
                continue
            if now - seat.away_since > grace:
                continue
            if seat.key == key or (seat.key is None and seat.bot == bot):
                return seat
        return None

    def seat_of(self, session: Session) -> Seat | None:
        """The seat a session plays, if any."""
        return next((s for s in self.seats if s.session is session), None)

    def resume(self, seat: Seat, session: Session) -> bool:
        """Give a seat back to its bot's new session, with the state replayed; False if too late."""
        if seat.session is not None or seat.forfeit is not None or self._over:
            return False
        seat.session = session
        seat.key = session.key
        session.expired.update(seat.expired)
        seat.expired = session.expired
        seat.earlier = max(seat.earlier, session.last_request_id)
        self._settle(seat, session)
        seat.away_since = None
        seat.said_goodbye = False
        seat.lost = None
        session.owner = self
        seat.pending = self._replay(seat) + seat.pending
        if seat.returned is not None:
            seat.returned.set()
        return True

    def _replay(self, seat: Seat) -> list[bytes]:
        """The events a returning bot gets before those it missed (``seat.pending``), so that
        the whole tells the game's story once, in order: the game's start, and the current
        hand's start, deal and pass unless the missed events hold them already (a bot that
        never heard of its game, or one away since an earlier hand, missed them; putting them
        first again would tell them twice, and out of order)."""
        missed = bot_pb.PlayResponse.FromString(wire.response_bytes(seat.pending)).events
        hand = self.game.hand
        number = self.game.hand_number

        def has(kind: str, of_hand: bool = True) -> bool:
            return any(
                e.WhichOneof("kind") == kind
                and (not of_hand or getattr(e, kind).hand_number == number)
                for e in missed
            )

        replay: list[bytes] = []
        if not has("game_started", of_hand=False):
            replay.append(wire.event_entry(self._game_started(seat.index)))
        if not has("hand_started"):
            replay.append(wire.event_entry(wire.hand_started(hand, number)))
            replay.append(wire.cards_dealt_entry(hand, number, seat.index))
            # Only once the table has queued it: between the exchange and that moment, the
            # queue will get it after this replay, and the bot would be told it twice.
            if self._received_told and not has("cards_received"):
                replay.append(wire.cards_received_entry(hand, number, seat.index))
        return replay

    # ---- events -----------------------------------------------------------------------------

    def _broadcast(self, event: ev_pb.Event | bytes, hold: bool = False) -> None:
        """A public event (or a serialised one): every seat gets it with its next message,
        spectators now (``hold``: with the next event not held)."""
        if not isinstance(event, bytes):
            event = event.SerializeToString()
        entry = wire.event_entry(event)
        for seat in self.seats:
            seat.pending.append(entry)
        self.feed.publish(event, hold)

    async def _announce_end(self, record: GameRecord) -> None:
        ended = ev_pb.Event(
            game_ended=ev_pb.GameEnded(
                game_id=self.game_id,
                termination=wire.termination(record.termination),
                seat_status=[wire.termination(t) for t in record.seat_status],
                game_totals=list(record.totals),
                placings=list(record.placings),
                hands_played=sum(1 for h in record.hands if h.complete),
                message=record.reason,
            )
        )
        payload = ended.SerializeToString()
        self.feed.publish(payload)
        self.feed.totals = list(record.totals)
        self.feed.close()
        timeout = self.config.write_timeout_ms / MS

        last = wire.event_entry(payload)

        async def flush(seat: Seat, session: Session) -> None:
            events, seat.pending = [*seat.pending, last], []
            try:
                async with asyncio.timeout(timeout):
                    await session.send(wire.response_bytes(events))
            except (TimeoutError, SessionLostError):
                pass

        async with asyncio.TaskGroup() as tg:
            for seat in self.seats:
                if seat.session is not None and not seat.session.closed:
                    tg.create_task(flush(seat, seat.session))
        self._release()

    # ---- the record -------------------------------------------------------------------------

    def _hand_record(
        self,
        hand: Hand,
        number: int,
        points: Sequence[int],
        moon: int | None,
        sun: bool,
        complete: bool = True,
    ) -> HandRecord:
        n = hand.players
        codes = wire.CODES
        tricks = []
        for leader, cards, winner in self._trick_log:
            # As for decisions (_record_decisions): the frozen dataclass's __init__ costs more
            # than the rest of a trick's record.
            trick = _new_object(_TrickRecord)
            _set_attribute(
                trick,
                "__dict__",
                {"leader": leader, "cards": tuple([codes[c] for c in cards]), "winner": winner},
            )
            tricks.append(trick)
        return HandRecord(
            number=number,
            dealer=hand.dealer,
            pass_direction=hand.pass_direction.value,
            dealt=tuple([wire.codes_of_mask(hand.dealt_mask(s)) for s in range(n)]),
            passes=tuple([wire.codes_of_mask(hand.passed_mask(s)) for s in range(n)]),
            tricks=tuple(tricks),
            points=tuple(points),
            moon=moon,
            sun=sun,
            complete=complete,
            kitty=tuple([codes[c.index] for c in hand.kitty]),
        )

    def _record_partial_hand(self) -> None:
        """Record the hand cut short by an interruption or a failure (it has always started)."""
        number = self.game.hand_number
        if any(h.number == number for h in self.hands):
            return
        hand = self.game.hand
        self.hands.append(
            self._hand_record(hand, number, [0] * hand.players, None, False, complete=False)
        )

    def _record(self, termination: Termination, failure: str, started_at: float) -> GameRecord:
        self._record_decisions()
        totals = tuple(self.game.totals)
        base = self.game.placings
        forfeited = [s.forfeit is not None for s in self.seats]
        keys = [(forfeited[s], base[s]) for s in range(len(self.seats))]
        placings = tuple(1 + sum(1 for k in keys if k < keys[s]) for s in range(len(keys)))
        status = tuple(s.forfeit or Termination.NORMAL for s in self.seats)
        played = sum(1 for h in self.hands if h.complete)
        words = f"{played} hand{'s' if played != 1 else ''} played"
        if termination is Termination.NORMAL:
            target = self.rules.target
            if self.spec.hands is None and self.game.at_hand_limit:
                reason = f"{words}, no total at {target}: the most hands a game to {target} plays"
            else:
                # A table of N hands also ends when a total reaches the target: say so ("1 hand
                # played" read as if the hand count had ended it).
                reached = self.game.is_over and not self.game.at_hand_limit
                reason = words + (f" to {target}" if reached else "")
        elif termination is Termination.INTERRUPTED:
            reason = f"interrupted ({self._interrupt_reason}) after {words}"
        else:
            reason = f"the referee failed after {words}: {failure}"
        for s in self.seats:
            if s.forfeit is not None:
                reason += f"; seat {s.index} ({s.bot}) forfeited: {s.forfeit_reason}"
            if s.late_noted > LATE_RECORDED:
                log.warning(
                    "game %s seat %d (%s): %d late replies, of which the record keeps %d",
                    self.game_id,
                    s.index,
                    s.bot,
                    s.late_noted,
                    LATE_RECORDED,
                )
        return GameRecord(
            spec=self.spec,
            hands=tuple(self.hands),
            decisions=tuple(self.decisions),
            faults=tuple(self.faults),
            totals=totals,
            placings=placings,
            termination=termination,
            seat_status=status,
            reason=reason,
            started_at=started_at,
            finished_at=time.time(),
            late=tuple(self.late),
        )


def _ended(seat: Seat) -> str:
    """Why the seat's session ended, for a disconnect fault's detail ('' if unknown): a session
    cut for a message over the limit left only "not connected" in the record."""
    why = seat.lost.close_reason if seat.lost is not None else ""
    return f" (its session ended: {why})" if why else ""


def _late(seat: Seat, request_id: int) -> bool:
    """Whether an answer echoing ``request_id`` is late: to a request that timed out (or was given
    up on), or to one of an earlier game (which a fault of this game must not punish)."""
    return request_id in seat.expired or 0 < request_id <= seat.earlier


def _decision_in(message: object) -> bot_pb.Decision | None:
    """The Decision a bot's message carries, if it is one (a fast-read play in full)."""
    if isinstance(message, wire.Play):
        message = message.full()
    if isinstance(message, bot_pb.PlayRequest) and message.HasField("decision"):
        return message.decision
    return None


def _not_a_decision(message: object) -> str:
    """What a bot's message that carries no Decision was, as text for the record and for
    FaultNotice.your_answer."""
    if isinstance(message, wire.Malformed):
        return f"{message.size} undecodable bytes"
    if isinstance(message, bot_pb.PlayRequest):
        if message.HasField("hello"):
            return "a second Hello"
        if message.ByteSize():  # a kind a later revision adds: not "empty"
            return wire.unknown_kind(message)
    return "an empty PlayRequest"


_IN_HAND: Final[dict[int, bytes]] = {}
"""PublicState.cards_in_hand fields by (players, hand size, trick, cards on the table, leader),
packed into an int a byte each (a tuple key costs an allocation and a hash per request)."""


def _cards_in_hand(players: int, size: int, trick: int, played: int, leader: int | None) -> bytes:
    """The seats' card counts (a serialised field): the same every hand of a game, as its rules
    deal the same number each time; a seat holds one less for each trick completed, and one less
    again once it has played to the trick on the table (the ``played`` seats from ``leader`` on).
    """
    key = (
        players << 32 | size << 24 | trick << 16 | played << 8 | (255 if leader is None else leader)
    )
    field = _IN_HAND.get(key)
    if field is None:
        if len(_IN_HAND) > 4096:  # only a server running many variants gets here
            _IN_HAND.clear()
        first = 0 if leader is None else leader
        counts = [size - trick - ((s - first) % players < played) for s in range(players)]
        _IN_HAND[key] = field = wire.cards_in_hand_field(counts)
    return field


_ECHO_CHARS = 16
"""The most characters of a bot's card text echoed back (a card is two or three)."""
_ECHO_CARDS = 16
"""The most cards of a bot's pass echoed back (a pass is three, or a few more)."""


def _quoted(text: str) -> str:
    """A bot's card text as echoed in a fault: quoted, and cut if long. Echoed whole, a text of
    control characters (four each, quoted) filled a notice past what a bot's gRPC receives by
    default, and the record with it."""
    if len(text) <= _ECHO_CHARS:
        return repr(text)
    return f"{text[:_ECHO_CHARS]!r}... ({len(text)} characters)"


def _listed(items: Sequence[Any], show: Callable[[Any], str], separator: str) -> str:
    """The first :data:`_ECHO_CARDS` of a pass's cards (or card texts), each ``show``-n, then
    how many there were if more: a notice stays small whatever the bot sent."""
    listed = separator.join([show(item) for item in items[:_ECHO_CARDS]])
    if len(items) > _ECHO_CARDS:
        listed += f"{separator}... ({len(items)} cards)"
    return listed


def _request_id_size(request_id: int) -> int:
    """The bytes a Decision of ``request_id`` alone takes."""
    return int(bot_pb.Decision(request_id=request_id).ByteSize())


def _describe(decision: bot_pb.Decision) -> str:
    """What a Decision said, as text for the record (long card texts and passes cut)."""
    choice = decision.WhichOneof("choice")
    if choice == "play_card":
        return f"play {_quoted(decision.play_card.card)} (request {decision.request_id})"
    if choice == "pass_cards":
        shown = _listed(decision.pass_cards.cards, _quoted, ", ")
        return f"pass [{shown}] (request {decision.request_id})"
    return f"no choice (request {decision.request_id})"


# ---- the compiled build (setup.py compiles this module with mypyc; see arena._compiled) ------

_BUILT_FROM = ""
COMPILED, BUILD = _compiled.guard(globals(), _BUILT_FROM)
