"""Driving one bot process through scripted games, and judging every answer it gives.

:class:`Checker` owns the bot process and its current stream: it (re)starts the bot, checks each
Hello, sends requests and waits for the answers with the deadline the request announces.
:class:`ScriptedGame` plays one game of one hand with the rules engine: the other seats play by a
fixed, simple policy, the bot's seat is asked whenever it has a decision, and every message the
bot receives is built the way the referee builds it (:mod:`arena.referee.wire`). Each is a game
as ``arena run`` plays by default: ``max_hands`` 1, and its one hand is hand 0, dealt by seat 0,
so that its numbers, totals and ``GameEnded.hands_played`` are those a real game sends.

Whatever the bot does wrong ends the scenario with :class:`CheckFailedError`, whose message is the
exact reason ("played 3D on a club lead while holding 5C 9C").
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from arena.cards import Card, Suit
from arena.checkbot.process import BotCommandError, BotProcess, BotStartError
from arena.checkbot.server import (
    MAX_MESSAGE_BYTES,
    Garbage,
    ScriptedStream,
    ScriptServer,
    StreamEnded,
)
from arena.config import crlf_note
from arena.engine import Hand, Phase
from arena.errors import ArenaError, Violation
from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb
from arena.proto.hearts.v1 import events_pb2 as ev_pb
from arena.proto.hearts.v1 import game_pb2 as game_pb
from arena.referee import wire
from arena.rules import PassDirection, Rules
from arena.table import Clocks

__all__ = [
    "CheckFailedError",
    "CheckOptions",
    "Checker",
    "NoStreamError",
    "ScriptError",
    "ScriptedGame",
    "cannot_start",
]

PROTOCOL_VERSION = 1
MAX_NAME_CHARS = 64
MS = 1000.0
SERVER_VERSION = "arena-check-bot/1"
AFTER_START = "after it started"
"""Why :meth:`Checker.accept` waits, when the bot's process has just been started."""
HAND_NUMBER = 0
"""The number of every scripted hand: the first of its game, as hands are numbered from 0."""
FIRST_DEALER = 0
"""The dealer of a game's first hand at the referee (``Game(rules, seed)`` deals from seat 0)."""
MAX_HANDS = 1
"""GameStarted.max_hands of a scripted game: one hand, as ``arena run`` plays by default."""
SDK_LIBRARY = "arena-python/"
"""How the Python SDK names itself in Hello.client_library."""
SDK_GAME_OVER = "game {} over: "
"""What the Python SDK logs once the bot's hooks are done with a game's end (the game's id)."""
EXIT_SHOW_S = 2.0
"""How long a check waits, once a bot's stream has ended mid-request, for its process to exit,
so that the failure can name the exit and its last output (only a failing check waits)."""
SETTLE_S = 5.0
"""How long a check waits, after its game's end, for a Python SDK bot to say it is done with
it: a bound for a bot whose logging hides the line, not a verdict."""
SETTLE_POLL_S = 0.02
STRAY_S = 0.2
"""How long a check listens, once its game is over, for a second answer to one of its requests
from a bot not on the Python SDK (which answers once): a bot that answers every request twice
passed a check run alone, and in a full run failed the next check for it."""


class CheckFailedError(ArenaError):
    """The bot broke the protocol or the rules; the message is the exact reason."""


class NoStreamError(CheckFailedError):
    """The bot opened no stream in time (it may have exited: see the message)."""


class ScriptError(ArenaError):
    """A scenario did not reach the situation it was written for (a bug of the checker)."""


def cannot_start(error: NoStreamError) -> BotStartError:
    """The usage error for a bot whose first process exited before it ever opened a stream.

    Its command is wrong, as ``arena run`` (exit 2) would say too, and no scenario can judge it.
    """
    return BotStartError(f"the bot's command cannot start: {error}")


@dataclass(frozen=True)
class CheckOptions:
    """How the checker runs the bot."""

    name: str = "bot"
    """ARENA_BOT_NAME given to the bot."""
    clocks: Clocks = field(default_factory=Clocks)
    """Move time and time bank announced and enforced (the handshake time too)."""
    start_timeout_s: float = 20.0
    """How long the bot may take to start and open its stream."""
    grace_ms: int = 5000
    """Welcome.reconnect_grace_ms: how long the bot may take to come back after a drop."""
    exit_timeout_s: float = 5.0
    """How long the bot may take to exit after a Shutdown or a refusal."""


def suit_word(suit: Suit) -> str:
    """'club', 'diamond', 'heart' or 'spade'."""
    return suit.name.lower().rstrip("s")


def show(cards: Sequence[Card]) -> str:
    """Cards as codes separated by spaces ('-' for none)."""
    return " ".join(str(c) for c in cards) or "-"


class Checker:
    """The bot under test: its process, its current stream, and the questions put to it."""

    def __init__(
        self, command: Sequence[str], options: CheckOptions, server: ScriptServer, log: Path
    ) -> None:
        """Prepare to check ``command``; nothing starts until :meth:`connect`."""
        self.command = list(command)
        self.options = options
        self.server = server
        self.log = log
        self.token = secrets.token_hex(16)
        """The token the bot is given, fresh for each check."""
        self.process: BotProcess | None = None
        self.stream: ScriptedStream | None = None
        self.hello: bot_pb.Hello | None = None
        self.starts = 0
        """How many times the bot's process was started."""
        self.session_id = ""
        """The session_id of the last Welcome sent (a reconnect names it in resume_session_id)."""
        self.games = 0
        """How many scripted games have been started (the count in their game ids)."""
        self.extra_streams: list[ScriptedStream] = []
        """Streams the bot opened beside its live one, set aside (see :meth:`set_aside_extra`)."""
        self._next_id = 0
        self._closed_ids: set[int] = set()
        self._answered_ids: set[int] = set()
        """Requests the bot answered: a second answer to one fails the check it comes in."""
        self.says_game_over: bool | None = None
        """Whether the bot's output says when it is done with a game (the SDK's default
        logging does); None until a game's end has been waited for."""
        self._loop = asyncio.get_running_loop()

    # ---- the process ------------------------------------------------------------------------

    def new_process(self, token: str) -> BotProcess:
        """A process of the bot's command with the arena environment (not started)."""
        env = {
            "ARENA_ADDRESS": self.server.address,
            "ARENA_TOKEN": token,
            "ARENA_BOT_NAME": self.options.name,
        }
        return BotProcess(self.command, env, self.log)

    async def start(self) -> None:
        """Start (or restart) the bot's process."""
        if self.process is not None:
            await self.process.stop()
        self.process = self.new_process(self.token)
        self.starts += 1
        try:
            await self.process.start()
        except BotCommandError as e:
            if self.starts == 1:  # the command cannot start at all: a usage error, as in arena run
                raise BotStartError(f"the bot's command cannot start: {e}") from None
            raise

    async def stop(self) -> None:
        """Stop the bot's process and close its streams."""
        if self.stream is not None:
            self.stream.close()
            self.stream = None
        for extra in self.extra_streams:
            extra.close()
        self.extra_streams.clear()
        if self.process is not None:
            await self.process.stop()

    def exit_note(self) -> str:
        """How the bot's process ended, if it has (for failure reasons)."""
        return "" if self.process is None else self.process.exit_note()

    def log_size(self) -> int:
        """How many bytes the bot's output log holds now."""
        try:
            return self.log.stat().st_size
        except OSError:
            return 0

    async def settle(self, game_id: str, since: int) -> None:
        """Wait until a Python SDK bot says it is done with the game ``game_id``, whose end
        was sent when its log held ``since`` bytes (at most :data:`SETTLE_S`).

        The check is judged on what the bot logs, and the SDK logs a hook's error as it runs
        the hook: judged at once, an error in ``on_game_end`` was charged to the next check,
        and with ``--only`` to none (the bot was stopped before it read the game's end).
        """
        process = self.process
        hello = self.hello
        if (
            process is None
            or hello is None
            or not hello.client_library.startswith(SDK_LIBRARY)
            or self.says_game_over is False
        ):
            return
        said = SDK_GAME_OVER.format(game_id).encode()
        until = self._loop.time() + SETTLE_S
        while True:
            try:
                with self.log.open("rb") as f:
                    f.seek(since)
                    if said in f.read():
                        self.says_game_over = True
                        return
            except OSError:
                return
            if process.returncode is not None or self._loop.time() >= until:
                break
            await asyncio.sleep(SETTLE_POLL_S)
        if self.says_game_over is None:
            # Its logging hides the line (the author set logging up): do not wait each game.
            self.says_game_over = False

    async def second_answers(self) -> list[int]:
        """The requests the bot has answered a second time since its last answer was read (at
        least :data:`STRAY_S` later for a bot not on the SDK), taken out of what it sent."""
        stream = self.stream
        if stream is None or stream.ended is not None:
            return []
        if self.hello is None or not self.hello.client_library.startswith(SDK_LIBRARY):
            await asyncio.sleep(STRAY_S)
        kept, twice = [], []
        while not stream.inbox.empty():
            got = stream.inbox.get_nowait()
            item = got.item
            if (
                isinstance(item, bot_pb.PlayRequest)
                and item.WhichOneof("kind") == "decision"
                and item.decision.request_id in self._answered_ids
            ):
                twice.append(item.decision.request_id)
            else:
                kept.append(got)
        for got in kept:  # the rest, in order, for the next check
            stream.inbox.put_nowait(got)
        return twice

    # ---- streams and the handshake --------------------------------------------------------

    @property
    def decide_forced(self) -> bool:
        """Whether the bot asked to be asked about forced moves."""
        return self.hello is not None and self.hello.decide_forced_moves

    async def connect(self) -> ScriptedStream:
        """A live, welcomed stream: the current one, a new one the bot opens, or a restart's."""
        previous = self.stream
        if previous is not None and previous.is_open:
            return previous
        self.stream = None
        process = self.process
        back = None
        if previous is not None and previous.left and process is not None:
            # The bot left its session (a Goodbye, or the end of its side of the stream), which
            # the checker ended as the referee does: it may come back, or exit as a bot that
            # left may. This check waits for either as for an exit after a Shutdown, then takes
            # a fresh process, rather than wait out --start-timeout and fail for that.
            back = await self.next_stream_or_exit(self.options.exit_timeout_s, process)
            if back is None:
                await process.stop()
        if back is not None:
            why = "after it left"
        elif process is None or process.returncode is not None:
            await self.start()
            why = AFTER_START
        else:
            why = "after its stream ended"
        try:
            stream = await self.accept(self.options.start_timeout_s, why, stream=back)
        except CheckFailedError as e:
            if self.process is not None and self.process.returncode is None:
                # A live process that does not come back: give the next scenario a fresh one.
                await self.process.stop()
            elif isinstance(e, NoStreamError) and self.starts == 1 and why == AFTER_START:
                raise cannot_start(e) from None
            raise
        self.welcome(stream)
        return stream

    def welcome(
        self,
        stream: ScriptedStream,
        *,
        resumed: bool = False,
        events: Sequence[ev_pb.Event] = (),
        request: bot_pb.DecisionRequest | None = None,
    ) -> None:
        """Send the Welcome (with the replayed events and the open request, on a resume)."""
        assert self.hello is not None
        self.session_id = f"check-{self.starts}-{secrets.token_hex(4)}"
        response = bot_pb.PlayResponse(
            welcome=bot_pb.Welcome(
                session_id=self.session_id,
                protocol_version=PROTOCOL_VERSION,
                server_version=SERVER_VERSION,
                message="arena check-bot: a compliance check, not a real game",
                decide_forced_moves=self.hello.decide_forced_moves,
                reconnect_grace_ms=self.options.grace_ms,
                max_message_bytes=MAX_MESSAGE_BYTES,
                resumed=resumed,
                bot_name=self.hello.bot_name,
            ),
        )
        stream.send(response)
        # Then the replay and the open request, in a message of their own, as the referee sends
        # them: "on a reconnection the Welcome comes alone" (bot_service.proto), and a bot that
        # relied on it failed here though it played on at a real referee.
        if events or request is not None:
            rest = bot_pb.PlayResponse(events=events)
            if request is not None:
                rest.request.CopyFrom(request)
            stream.send(rest)
        self.stream = stream

    async def accept(
        self,
        timeout_s: float,
        why: str,
        *,
        token: str | None = None,
        stream: ScriptedStream | None = None,
    ) -> ScriptedStream:
        """Wait for the bot's next stream (or take ``stream``, already opened) and check its
        Hello (against ``token``, default ours).

        A stream refused for a bad Hello is closed with the status the referee would use.
        """
        process = self.process
        if stream is None:
            stream = await self.next_stream_or_exit(timeout_s, process)
        if stream is None:
            raise self.no_stream(process, timeout_s, why)
        handshake_s = self.options.clocks.handshake_ms / MS
        got = await stream.receive(handshake_s)
        if got is None:
            stream.close(grpc.StatusCode.DEADLINE_EXCEEDED, "no Hello within the handshake time")
            raise CheckFailedError(
                f"opened a stream but sent no Hello within {self.options.clocks.handshake_ms} ms"
            )
        item = got.item
        if isinstance(item, StreamEnded):
            raise CheckFailedError(f"{item.reason} before sending its Hello{self.exit_note()}")
        if isinstance(item, Garbage):
            stream.close(grpc.StatusCode.INVALID_ARGUMENT, "the first message is not a Hello")
            raise CheckFailedError(
                f"sent {item.size} bytes that are not a PlayRequest ({item.error}) instead of Hello"
            )
        kind = item.WhichOneof("kind")
        if kind != "hello":
            stream.close(grpc.StatusCode.INVALID_ARGUMENT, "the first message is not a Hello")
            raise CheckFailedError(
                f"the first message of the stream was a {kind or 'PlayRequest with nothing set'}, "
                "not a Hello"
            )
        hello = item.hello
        if hello.protocol_version != PROTOCOL_VERSION:
            stream.close(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"protocol version {hello.protocol_version} is not spoken here; speak 1",
            )
            raise CheckFailedError(
                f"Hello.protocol_version is {hello.protocol_version}; this protocol (hearts.v1) "
                f"is version {PROTOCOL_VERSION}"
            )
        if not 1 <= len(hello.bot_name) <= MAX_NAME_CHARS:
            stream.close(grpc.StatusCode.INVALID_ARGUMENT, "Hello.bot_name must be 1-64 chars")
            raise CheckFailedError(
                f"Hello.bot_name is {len(hello.bot_name)} characters long; it must be 1 to "
                f"{MAX_NAME_CHARS} (ARENA_BOT_NAME is {self.options.name!r})"
            )
        expected = self.token if token is None else token
        if not secrets.compare_digest(hello.token.encode(), expected.encode()):
            stream.close(grpc.StatusCode.UNAUTHENTICATED, "unknown token")
            raise CheckFailedError(
                f"Hello.token is not the ARENA_TOKEN it was given (it sent {len(hello.token)} "
                f"characters; ARENA_TOKEN has {len(expected)})"
            )
        self.hello = hello
        return stream

    def set_aside_extra(self) -> int:
        """Set aside the streams the bot has opened beside its live one (how many).

        A token may hold several sessions, and check-bot plays one: a stream opened while the
        bot's session was live is not the reconnect or the new stream a check then waits for,
        and was taken for it (a stream that had sent only its Hello, asked to play on).
        """
        extra = self.server.pending_streams()
        self.extra_streams.extend(extra)
        return len(extra)

    def forced_note(self, request: bot_pb.DecisionRequest) -> str:
        """Why a forced move went unanswered may matter: the bot asked for those ('' if not)."""
        play = request.kind == bot_pb.DECISION_KIND_PLAY
        if not (self.decide_forced and play and len(request.legal_cards) == 1):
            return ""
        return (
            f": a forced move (its one legal card was {request.legal_cards[0]}), which it asked "
            "to be asked in Hello.decide_forced_moves, so it must answer it too"
        )

    def beside_note(self) -> str:
        """Why an answer may have gone missing when the bot has streams open beside the one
        asked ('' when it has none)."""
        others = self.server.waiting + sum(1 for s in self.extra_streams if s.ended is None)
        if not others:
            return ""
        return (
            f" (it has {others} other stream(s) open beside the one asked, which check-bot "
            "leaves unanswered: it plays one session per bot process, on the first stream "
            "that said Hello)"
        )

    def no_stream(self, process: BotProcess | None, timeout_s: float, why: str) -> NoStreamError:
        """The failure of a bot that opened no stream ``why`` (e.g. :data:`AFTER_START`)."""
        address = self.server.address
        if process is None or process.returncode is None:
            # Its own words often say why (e.g. it connects to an address of its own).
            tail = process.tail(1) if process is not None else ""
            return NoStreamError(
                f"no stream opened to ARENA_ADDRESS={address} within {timeout_s:g} s {why}"
                + (f" (its last output: {tail})" if tail else "")
            )
        # Say when it exited: "within the timeout" would hide that it quit at once.
        tail = process.tail()
        # The shell's "cannot run" codes, env's among them: a script with Windows line endings.
        crlf = crlf_note(process.command[0]) if process.returncode in (126, 127) else ""
        opened = "a stream" if why == AFTER_START else "a new stream"
        return NoStreamError(
            f"the bot {process.ending()} after {process.ran_s:.1f} s without opening {opened} "
            f"to ARENA_ADDRESS={address}"
            + ("" if why == AFTER_START else f" {why}")
            + (f" (its last output: {tail})" if tail else " (it printed nothing)")
            + crlf
        )

    async def next_stream_or_exit(
        self, timeout_s: float, process: BotProcess | None
    ) -> ScriptedStream | None:
        """The next stream, or None at the timeout or as soon as the process exits."""
        arrival = asyncio.ensure_future(self.server.next_stream(timeout_s))
        waiters: set[asyncio.Future[object]] = {arrival}  # type: ignore[arg-type]
        if process is not None:
            waiters.add(asyncio.ensure_future(process.wait(timeout_s)))
        done, pending = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        for future in pending:
            future.cancel()
        if arrival in done:
            return arrival.result()
        arrival.cancel()
        # The process exited; a stream it opened just before still counts.
        streams = self.server.pending_streams()
        return streams[0] if streams else None

    # ---- questions ------------------------------------------------------------------------

    def next_request_id(self) -> int:
        """A fresh request id (never 0, unique in the check)."""
        self._next_id += 1
        return self._next_id

    def next_game_id(self, table: str) -> str:
        """A fresh game id for the scripted table ``table``, in the referee's form."""
        # GameStarted.game_id is documented as "g<referee's count>-<table id>".
        self.games += 1
        return f"g{self.games}-{table}"

    async def ask(
        self, request: bot_pb.DecisionRequest, events: Sequence[ev_pb.Event], what: str
    ) -> tuple[bot_pb.Decision, float]:
        """Send ``events`` and ``request``; the bot's Decision and how long it took (ms)."""
        stream = await self.connect()
        response = bot_pb.PlayResponse(events=events)
        response.request.CopyFrom(request)
        stream.send(response)
        return await self.answer(stream, request, what)

    async def answer(
        self, stream: ScriptedStream, request: bot_pb.DecisionRequest, what: str
    ) -> tuple[bot_pb.Decision, float]:
        """Wait for the Decision answering ``request`` (already sent) within its deadline."""
        rid = request.request_id
        sent = self._loop.time()
        deadline = sent + request.move_deadline_ms / MS
        try:
            while True:
                got = await stream.receive(deadline - self._loop.time())
                if got is None:
                    raise CheckFailedError(
                        f"no answer to {what} within its move_deadline_ms of "
                        f"{request.move_deadline_ms} ms{self.exit_note()}{self.beside_note()}"
                        + self.forced_note(request)
                    )
                item = got.item
                if isinstance(item, StreamEnded):
                    if self.process is not None:
                        # Let an exit show, for a better reason (0.2 s was too short for a
                        # Python bot's exit on a loaded machine: the reason came without it).
                        await self.process.wait(EXIT_SHOW_S)
                    raise CheckFailedError(f"{item.reason} while {what} was open{self.exit_note()}")
                if isinstance(item, Garbage):
                    raise CheckFailedError(
                        f"answered {what} with {item.size} bytes that are not a PlayRequest "
                        f"({item.error})"
                    )
                kind = item.WhichOneof("kind")
                if kind == "hello":
                    raise CheckFailedError(
                        f"sent a second Hello on its stream while {what} was open"
                    )
                if kind == "goodbye":
                    # As the referee ends a session whose bot said Goodbye (the bot may be
                    # waiting for that to exit).
                    stream.leave(
                        bot_pb.Shutdown(
                            reason=bot_pb.SHUTDOWN_REASON_GOODBYE,
                            message=f"goodbye ({item.goodbye.reason})"
                            if item.goodbye.reason
                            else "goodbye",
                            may_reconnect=True,
                        )
                    )
                    raise CheckFailedError(
                        f"said Goodbye ({item.goodbye.reason or 'no reason'}) while {what} was open"
                    )
                if kind is None:
                    named = wire.unknown_kind(item) if item.ByteSize() else "an empty PlayRequest"
                    raise CheckFailedError(f"answered {what} with {named}")
                decision = item.decision
                if decision.request_id != rid:
                    if decision.request_id in self._answered_ids:
                        # The referee counts it as a PROTOCOL fault; skipped here as if late,
                        # a bot answering every request twice passed every check.
                        raise CheckFailedError(
                            f"answered request_id {decision.request_id} a second time (while "
                            f"{what} was open): send exactly one Decision per DecisionRequest; "
                            "the referee counts a second answer as a fault"
                        )
                    if decision.request_id in self._closed_ids:
                        continue  # a late answer to a request that timed out: the referee drops it
                    raise CheckFailedError(
                        f"answered request_id {decision.request_id}, but the open request is "
                        f"{rid} ({what}): echo DecisionRequest.request_id"
                    )
                self._answered_ids.add(rid)
                return decision, (got.at - sent) * MS
        finally:
            self._closed_ids.add(rid)


class ScriptedGame:
    """One game of one hand, the bot in one seat; the other seats play the lowest legal card."""

    def __init__(
        self,
        checker: Checker,
        table: str,
        hand: Hand,
        seat: int,
        *,
        bank_ms: int | None = None,
        clocks: Clocks | None = None,
    ) -> None:
        """Set up the game at the scripted table ``table`` (nothing is sent until :meth:`deal`).

        ``clocks`` are the game's (the check's own by default), ``bank_ms`` the bank it starts
        with (the clocks' by default).

        ``hand`` is the game's first hand: :class:`ScriptError` unless it is dealt as the
        referee deals hand 0 under its rules (by seat 0, passing ``rules.pass_cycle[0]``).
        """
        expected = hand.rules.pass_direction(HAND_NUMBER)
        if hand.dealer != FIRST_DEALER or hand.pass_direction is not expected:
            raise ScriptError(
                f"{table}: hand 0 is dealt by seat {FIRST_DEALER} and passes {expected.value} "
                f"under its rules, not by seat {hand.dealer} passing {hand.pass_direction.value}"
            )
        self.checker = checker
        self.game_id = checker.next_game_id(table)
        self.hand = hand
        self.rules: Rules = hand.rules
        self.seat = seat
        self.number = HAND_NUMBER
        n = hand.players
        self.names = [checker.options.name if s == seat else f"check-seat-{s}" for s in range(n)]
        self.totals = [0] * n
        self.clocks = checker.options.clocks if clocks is None else clocks
        self.bank_ms = float(self.clocks.bank_ms if bank_ms is None else bank_ms)
        self.pending: list[ev_pb.Event] = []
        """Events the bot has not been sent yet."""
        self.tricks: list[game_pb.Trick] = []
        self.decisions = 0
        self.slowest_ms = 0.0
        self.own_plays: dict[Card, int] = {}
        """The bot's own cards played so far, with their trick numbers."""
        self._rules_msg = wire.rules_message(self.rules)

    # ---- messages ---------------------------------------------------------------------------

    @property
    def max_hands(self) -> int:
        """The game's hand limit as announced: it ends after the one hand scripted."""
        return MAX_HANDS

    def game_started(self) -> ev_pb.Event:
        """GameStarted for the bot's seat."""
        return ev_pb.Event(
            game_started=ev_pb.GameStarted(
                game_id=self.game_id,
                seat_names=self.names,
                your_seat=self.seat,
                rules=self._rules_msg,
                clock=wire.clock_settings(self.clocks),
                max_hands=self.max_hands,
            )
        )

    def replay(self) -> list[ev_pb.Event]:
        """The events that bring a reconnected bot up to date (as the referee sends them)."""
        hand = self.hand
        events = [
            self.game_started(),
            wire.hand_started(hand, self.number),
            wire.cards_dealt(hand, self.number, self.seat),
        ]
        if hand.phase is not Phase.PASS and hand.pass_direction is not PassDirection.HOLD:
            events.append(wire.cards_received(hand, self.number, self.seat))
        return events

    def deal(self) -> None:
        """Queue the start of the game and of the hand, and the bot's cards."""
        self.pending += [
            self.game_started(),
            wire.hand_started(self.hand, self.number),
            wire.cards_dealt(self.hand, self.number, self.seat),
        ]

    def state(self) -> game_pb.PublicState:
        """The public state for the bot's seat (the referee's PublicState)."""
        hand = self.hand
        n = hand.players
        state = game_pb.PublicState(
            players=n,
            dealer=hand.dealer,
            seat_names=self.names,
            hand_number=self.number,
            max_hands=self.max_hands,
            completed_tricks=self.tricks,
            hand_points=hand.points_taken(),
            game_totals=self.totals,
            cards_in_hand=[hand.hand_mask(s).bit_count() for s in range(n)],
            hearts_broken=hand.hearts_broken,
            first_trick=hand.phase is Phase.PLAY and hand.trick_number == 0,
            pass_direction=wire.pass_direction(hand.pass_direction),
            passed_to_seat=hand.pass_target(self.seat),
            received_from_seat=wire.source_of_pass(hand, self.seat),
            forfeited=[False] * n,
            rules=self._rules_msg,
        )
        if hand.phase is not Phase.PASS and hand.pass_direction is not PassDirection.HOLD:
            state.passed_cards.extend(wire.cards_of(hand.passed(self.seat) or ()))
            state.received_cards.extend(wire.cards_of(hand.received(self.seat) or ()))
        current = hand.current_trick
        if current is not None:
            state.current_trick.CopyFrom(wire.trick_message(self.rules, current))
        return state

    def request(self, kind: str) -> bot_pb.DecisionRequest:
        """A decision request for the bot's seat now, with a fresh id and the clocks."""
        hand = self.hand
        held = wire.cards_of(hand.hand(self.seat))
        request = bot_pb.DecisionRequest(
            request_id=self.checker.next_request_id(),
            game_id=self.game_id,
            hand_number=self.number,
            your_seat=self.seat,
            hand=held,
            move_deadline_ms=int(self.clocks.move_ms + self.bank_ms),
            time_bank_ms=int(self.bank_ms),
            state=self.state(),
        )
        if kind == "pass":
            request.kind = bot_pb.DECISION_KIND_PASS
            request.legal_cards.extend(held)
            request.pass_count = self.rules.pass_count
            request.pass_direction = wire.pass_direction(hand.pass_direction)
            request.pass_to_seat = hand.pass_target(self.seat)
        else:
            request.kind = bot_pb.DECISION_KIND_PLAY
            request.trick_number = hand.trick_number
            request.legal_cards.extend(wire.cards_of(hand.legal_plays()))
        return request

    def take_pending(self) -> list[ev_pb.Event]:
        """The queued events, emptying the queue."""
        events, self.pending = self.pending, []
        return events

    async def ask(self, request: bot_pb.DecisionRequest, what: str) -> bot_pb.Decision:
        """Ask the bot, charging its time bank as the referee does."""
        decision, elapsed = await self.checker.ask(request, self.take_pending(), what)
        self.charge(elapsed)
        return decision

    def charge(self, elapsed_ms: float) -> None:
        """Count one answer's time: the part beyond the move time comes out of the bank."""
        self.decisions += 1
        self.slowest_ms = max(self.slowest_ms, elapsed_ms)
        self.bank_ms = max(0.0, self.bank_ms - max(0.0, elapsed_ms - self.clocks.move_ms))

    # ---- the pass -----------------------------------------------------------------------------

    async def pass_phase(self) -> tuple[Card, ...] | None:
        """Ask the bot for its pass (judged), pass for the others, exchange; None on a hold."""
        hand = self.hand
        if hand.phase is not Phase.PASS:
            return None
        direction = hand.pass_direction.name.lower()
        what = f"the pass request ({direction}, {self.rules.pass_count} cards)"
        decision = await self.ask(self.request("pass"), what)
        chosen = self.judge_pass(decision)
        hand.pass_cards(self.seat, chosen)
        for s in hand.seats_to_pass:
            if s != self.seat:
                hand.pass_cards(s, hand.hand(s)[-self.rules.pass_count :])
        self.pending.append(wire.cards_received(hand, self.number, self.seat))
        return chosen

    def judge_pass(self, decision: bot_pb.Decision) -> tuple[Card, ...]:
        """The bot's pass, or :class:`CheckFailedError` with what is wrong with it."""
        choice = decision.WhichOneof("choice")
        if choice is None:
            raise CheckFailedError("answered the pass request with a Decision that sets no choice")
        if choice != "pass_cards":
            raise CheckFailedError(
                f"answered the pass request with play_card {decision.play_card.card!r}; "
                "a pass request needs pass_cards"
            )
        cards = []
        for text in decision.pass_cards.cards:
            # The referee's own rule, not Card.parse (which takes more): a spelling passed here
            # must not fault in a real game.
            card = wire.card_spelled(text)
            if card is None:
                raise CheckFailedError(f"passed {text!r}, which is not a card: {wire.CARD_FORM}")
            cards.append(card)
        held = self.hand.hand(self.seat)
        count = self.rules.pass_count
        if len(cards) != count:
            raise CheckFailedError(
                f"passed {len(cards)} card{'' if len(cards) == 1 else 's'} ({show(cards)}); "
                f"the pass is exactly {count}"
            )
        for i, card in enumerate(cards):
            if card in cards[:i]:
                times = cards.count(card)
                said = {2: "twice", 3: "three times"}.get(times, f"{times} times")
                raise CheckFailedError(f"passed {card} {said} ({show(cards)})")
            if card not in held:
                raise CheckFailedError(f"passed {card}, which is not in its hand {show(held)}")
        why = self.hand.check_pass(self.seat, cards)
        if why is not None:
            raise CheckFailedError(f"passed {show(cards)}: {why.value}")
        return tuple(cards)

    # ---- the play -----------------------------------------------------------------------------

    def apply(self, seat: int, card: Card) -> None:
        """Play a card for a seat and queue the public events it causes."""
        hand = self.hand
        trick_number = hand.trick_number
        if seat == self.seat:
            self.own_plays[card] = trick_number
        done = hand.play(card, seat)
        self.pending.append(
            ev_pb.Event.FromString(wire.card_played(self.number, trick_number, seat, card))
        )
        if done is not None:
            self.tricks.append(wire.trick_message(self.rules, done))
            self.pending.append(wire.trick_won(self.rules, self.number, done, ()))

    def bot_must_decide(self) -> bool:
        """Whether the bot is to play and has a real choice (or asked about forced moves)."""
        hand = self.hand
        if hand.phase is not Phase.PLAY or hand.to_move != self.seat:
            return False
        return self.checker.decide_forced or len(hand.legal_plays()) > 1

    def advance(self) -> None:
        """Play the other seats (and the bot's forced moves) until the bot decides or the end."""
        hand = self.hand
        while hand.phase is Phase.PLAY and not self.bot_must_decide():
            seat = hand.to_move
            assert seat is not None
            self.apply(seat, hand.legal_plays()[0])

    async def bot_play(self) -> Card:
        """Ask the bot for its card at this point, judge it and play it."""
        hand = self.hand
        if not self.bot_must_decide():
            raise ScriptError(f"{self.game_id}: the bot has no decision to make now")
        what = f"the play request at trick {hand.trick_number}"
        decision = await self.ask(self.request("play"), what)
        card = self.judge_play(decision, f"trick {hand.trick_number}")
        self.apply(self.seat, card)
        return card

    def judge_play(self, decision: bot_pb.Decision, label: str = "") -> Card:
        """The bot's card, or :class:`CheckFailedError` saying exactly why it may not play it."""
        at = f"{label}: " if label else ""
        choice = decision.WhichOneof("choice")
        if choice is None:
            raise CheckFailedError(
                f"{at}answered a play request with a Decision that sets no choice"
            )
        if choice != "play_card":
            raise CheckFailedError(
                f"{at}answered a play request with pass_cards "
                f"{show_text(decision.pass_cards.cards)}; a play request needs play_card"
            )
        text = decision.play_card.card
        card = wire.card_spelled(text)  # as the referee reads it (see judge_pass)
        if card is None:
            raise CheckFailedError(f"{at}played {text!r}, which is not a card: {wire.CARD_FORM}")
        why = self.hand.check_play(self.seat, card)
        if why is not None:
            raise CheckFailedError(at + self.explain(card, why))
        return card

    def explain(self, card: Card, why: Violation) -> str:
        """The reason a play is refused, naming the cards that show it."""
        hand = self.hand
        held = hand.hand(self.seat)
        legal = hand.legal_plays()
        trick = hand.current_trick
        if why is Violation.CARD_NOT_HELD:
            passed = hand.passed(self.seat) or ()
            if card in passed:
                to = hand.pass_target(self.seat)
                return f"played {card}, which it passed to seat {to} (it holds {show(held)})"
            if card in self.own_plays:
                return (
                    f"played {card}, which it already played in trick {self.own_plays[card]} "
                    f"(it holds {show(held)})"
                )
            return f"played {card}, which is not in its hand {show(held)}"
        if why is Violation.MUST_FOLLOW_SUIT and trick is not None and trick.lead_suit is not None:
            lead = trick.lead_suit
            same = [c for c in held if c.suit is lead]
            return f"played {card} on a {suit_word(lead)} lead while holding {show(same)}"
        if why is Violation.PENALTY_ON_FIRST_TRICK:
            return (
                f"played {card} on the first trick while holding {show(legal)}: no penalty card "
                "(a heart or the QS) on the first trick unless the hand holds nothing else"
            )
        if why is Violation.MUST_LEAD_OPENING_CARD:
            return f"led {card} to the first trick; {show(legal)} must lead it"
        if why is Violation.MUST_LEAD_CLUB:
            return f"led {card} to the first trick; it must be a club ({show(legal)})"
        if why is Violation.HEARTS_NOT_BROKEN:
            return (
                f"led {card} while hearts are not broken, holding {show(legal)}: hearts may not "
                "be led until a heart or the QS has been played"
            )
        return f"played {card}: {why.value} (legal: {show(legal)})"

    async def play_out(self) -> None:
        """Play the rest of the hand, asking the bot at each of its decisions."""
        while self.hand.phase is Phase.PLAY:
            self.advance()
            if self.hand.phase is Phase.PLAY:
                await self.bot_play()

    # ---- the end ------------------------------------------------------------------------------

    def end(self) -> bool:
        """Send the end of the game: scored if the hand is over, else interrupted (whether it
        was sent: not to a stream that has ended)."""
        hand = self.hand
        n = hand.players
        stream = self.checker.stream
        events = self.take_pending()
        # As the referee's GameEnded: hands_played counts the hands played to their end. Hands
        # are numbered from 0, so self.number hands came before this one (none: it is hand 0),
        # and this one counts only if it was played out; the totals are those of those hands.
        played = self.number
        if hand.phase is Phase.OVER:
            result = hand.result(self.totals)
            self.totals = [t + p for t, p in zip(self.totals, result.points, strict=True)]
            events.append(wire.hand_ended(self.number, result, self.totals))
            played += 1
            termination = ev_pb.TERMINATION_NORMAL
            message = f"{played} hand{'' if played == 1 else 's'} played"
        else:
            termination = ev_pb.TERMINATION_INTERRUPTED
            message = (
                "interrupted (check-bot: this scenario is over; the game stops here) after "
                f"{played} hand{'' if played == 1 else 's'} played"
            )
        events.append(
            ev_pb.Event(
                game_ended=ev_pb.GameEnded(
                    game_id=self.game_id,
                    termination=termination,
                    seat_status=[ev_pb.TERMINATION_NORMAL] * n,
                    game_totals=self.totals,
                    # The referee's placings: 1 + the seats with a lower total (no forfeits here).
                    placings=[1 + sum(1 for o in self.totals if o < t) for t in self.totals],
                    hands_played=played,
                    message=message,
                )
            )
        )
        if stream is None or stream.ended is not None:
            return False
        stream.send(bot_pb.PlayResponse(events=events))
        return True


def show_text(texts: Sequence[str]) -> str:
    """Strings as sent, separated by spaces."""
    return " ".join(repr(t) for t in texts) or "(none)"
