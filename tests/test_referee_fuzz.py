"""A fuzzed bot against a real referee: whatever one seat's bot sends, the referee must play on.

One table of four seats on a real referee (127.0.0.1, port 0): three well-behaved bot processes
(``tests/bots/raw_bot.py --mode good``) and one seat played by :class:`FuzzBot`, an in-process raw
gRPC client whose stream carries bytes, so that it can send protobuf messages and garbage alike.
Hypothesis chooses what the fuzzed bot sends at each request it gets (:class:`Plan`): second
Hellos, empty PlayRequests, Decisions with wrong, old, future, zero or huge request ids (its own
earlier requests' and other seats'), passes with duplicate cards, too few or too many cards,
cards not held, things that are not cards, the other decision kind, a Decision with no choice,
garbage bytes, answers sent twice, legal answers in every spelling the protocol allows and in
protobuf encodings no library writes, silence; and what it does to its stream: a Goodbye
(closing its side or not), a bare half-close, a message over the referee's size limit or over
four times it, a cancelled stream (the test ``..._leaves_mid_game_...``), or, staying, a flood
or a reconnect on a second stream naming the live session (``..._stays_...``).

What must hold (:func:`check_example`), for every plan:

* the referee never fails: its loop answers after every game, nothing on its thread logs an
  error, the table's record comes back within a guard time, as a NORMAL game of all its hands;
* the record is right: every hand replays through :class:`arena.engine.Game` from the seed (the
  deal, the passes, each card legal, each trick's winner, the points, the moon), the decisions
  are the cards the tricks hold, the totals and placings follow, and a spectator saw the same;
* the three good seats are untouched: no fault, no late reply, and every card they passed or
  played is the one their bot chooses (no answer of the fuzzed bot was ever taken for theirs);
* the fuzzed seat is judged as the protocol guide says (an independent model of it,
  :func:`judge`): each answer it gave is accepted or refused with the documented fault kind,
  each stray message is counted with the documented kind, no fault lacks a cause, and its seat
  ends forfeited exactly when its faults pass the allowance;
* the fuzzed bot is told precisely: every FaultNotice it gets, on all its streams, is one of
  the record's faults, in order, with the documented form (kind, request id, what it sent, the
  substitute, the counts), no event is told twice, its GameEnded is the record's, and each of
  its streams ends in one of the documented ways (a Shutdown then OK, or a documented status).

No assertion depends on how long anything took: where a slow machine could change what the
referee saw (an answer arriving after its deadline), the check accepts either outcome, as the
protocol does; the only bound on time is :data:`GUARD_S`, for a stall. Clocks are short (300 ms
a move) so that a silent plan costs little. The examples are derandomized: every run, CI's or
not, plays the same ones.

The regression tests at the end are defects the fuzzing found, each minimised to one plain test.
"""

from __future__ import annotations

import asyncio
import enum
import itertools
import logging
import queue
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import grpc
import pytest
from conftest import BOT_READY_MS, BotProcesses, on_referee_loop
from google.protobuf.message import DecodeError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena.cards import CARDS
from arena.engine import Game, Phase
from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb
from arena.proto.hearts.v1 import events_pb2 as ev_pb
from arena.proto.hearts.v1 import spectator_service_pb2 as spec_pb
from arena.proto.hearts.v1 import spectator_service_pb2_grpc as spec_grpc
from arena.referee import RefereeConfig, RefereeThread, TokenAccounts, wire
from arena.referee.game import TableRun
from arena.referee.session import Ending, Session
from arena.referee.spectators import TableFeed
from arena.rules import Rules
from arena.table import (
    Clocks,
    Decision,
    FaultKind,
    FaultPolicy,
    GameRecord,
    TableSpec,
    Termination,
)

PLAY_METHOD = "/hearts.v1.BotService/Play"
GOOD = ("good0", "good1", "good2")
FUZZ = "fuzz"
GUARD_S = 30.0
"""The longest a table (or the fuzzed bot's stream) may take before the test calls it a stall:
about fifty times what the slowest plan needs, so that only a stall reaches it."""
CLOCKS = Clocks(move_ms=300, bank_ms=200, handshake_ms=30_000)
GRACE_MS = 200
"""The table's reconnection grace: a bot that half-closed or cancelled its stream is forfeited
after this, without slowing the test down."""
WARN_MS = 100
"""The bank below which a seat is warned (under CLOCKS' 200 ms bank, so that it can happen)."""
MAX_BYTES = RefereeConfig().max_message_bytes
"""The referee's message limit (its default, 64 KiB)."""
U64_MAX = (1 << 64) - 1
RANKS = "23456789TJQKA"
SUITS = "CDHS"
CODES = tuple(str(c) for c in CARDS)
CARD_SPACE = " \t\r\n"
"""What the guide allows around a card's code."""
BOT_KINDS = {
    "game_started",
    "hand_started",
    "cards_dealt",
    "cards_received",
    "card_played",
    "trick_won",
    "hand_ended",
    "game_ended",
    "fault_notice",
    "seat_faulted",
    "time_warning",
}
"""The event kinds a bot may receive (HandRevealed is for spectators only)."""
DOCUMENTED_FAULTS = {
    ev_pb.FAULT_KIND_TIMEOUT,
    ev_pb.FAULT_KIND_ILLEGAL_CARD,
    ev_pb.FAULT_KIND_CARD_NOT_HELD,
    ev_pb.FAULT_KIND_MALFORMED,
    ev_pb.FAULT_KIND_WRONG_REQUEST_ID,
    ev_pb.FAULT_KIND_DISCONNECT,
    ev_pb.FAULT_KIND_WRONG_PASS,
    ev_pb.FAULT_KIND_PROTOCOL,
}
FAULT_OF_PROTO = {ev_pb.FaultKind.Value("FAULT_KIND_" + k.name): k for k in FaultKind}
TERMINATION_OF_PROTO = {ev_pb.Termination.Value("TERMINATION_" + t.name): t for t in Termination}
"""The record's Termination of each proto value."""
NOT_CARDS = (
    "",
    " ",
    "1S",
    "0S",
    "11S",
    "10",
    "1OH",
    "Q",
    "QSS",
    "Q S",
    "SQ",
    "Q♠",
    "queen of spades",
    "Qſ",
    "ＱＳ",
    "\u00a0QS",
    "\x0bQS",
    "QS\x00",
    "ZZ",
    "T",
)
"""Texts that look like cards to someone, and are not cards by the guide (nor by the engine's
Card.parse, which once took "ſ" for "s" and any Unicode space)."""


# ---- what the fuzzed bot sends: the plan hypothesis draws ------------------------------------


class Say(enum.Enum):
    """One kind of message the fuzzed bot can send in answer to a request."""

    GOOD = "good"
    """The legal answer, cards spelt as the referee spells them."""
    SPELLED = "spelled"
    """A legal answer in another spelling the guide allows (lower case, "10", spaces around)."""
    HELLO = "hello"
    """A second Hello (its fields vary: they must not matter)."""
    EMPTY = "empty"
    """A PlayRequest with nothing set (zero bytes on the wire)."""
    NO_CHOICE = "no-choice"
    """A Decision for the open request that chooses nothing."""
    OTHER_KIND = "other-kind"
    """A pass answering a play request, or a play answering a pass request."""
    WRONG_ID = "wrong-id"
    """A legal answer with the request id moved by ``pick`` (negative: an earlier request, this
    seat's or another seat's; positive: one not made yet). This and the other answers with a
    wrong id play ``text`` instead, if it is set."""
    ZERO_ID = "zero-id"
    """A legal answer with request id 0 (proto3 leaves it out of the bytes)."""
    MAX_ID = "max-id"
    """A legal answer with the largest uint64 as its request id."""
    OLD_ID = "old-id"
    """A legal answer to an earlier request of this seat (its id, the ``pick``-th from the end)."""
    NOT_HELD = "not-held"
    """A card the seat does not hold (in a pass: one of the cards)."""
    ILLEGAL = "illegal"
    """A held card the rules forbid now (a pass has none: then a card not held)."""
    NOT_A_CARD = "not-a-card"
    """``text`` where a card should be (in a pass: one of the cards)."""
    DUPLICATE = "duplicate"
    """A pass naming one card twice (the right number of cards)."""
    TOO_FEW = "too-few"
    """A pass of fewer distinct held cards than asked (``pick`` chooses how many)."""
    TOO_MANY = "too-many"
    """A pass of more distinct held cards than asked."""
    GARBAGE = "garbage"
    """``data``, bytes that are not a PlayRequest."""
    ODD_ENCODING = "odd-encoding"
    """The legal answer in bytes no protobuf library writes, which protobuf reads as that
    answer all the same (``pick`` chooses: an overlong varint, one past 64 bits, fields out of
    order, an unknown field, the Decision in two parts, the request id twice)."""


STRAYS = (Say.HELLO, Say.EMPTY, Say.WRONG_ID, Say.ZERO_ID, Say.MAX_ID, Say.OLD_ID)
"""Messages that answer no request: the open request stays open."""


class End(enum.Enum):
    """What the fuzzed bot does to its stream after a step: leave in the middle of its game in
    one of several ways, or stay in odd ways (a reconnect, a flood)."""

    GOODBYE = "goodbye"
    """Goodbye, then close its side of the stream."""
    GOODBYE_OPEN = "goodbye-open"
    """Goodbye, then more messages (a legal answer, garbage) without closing its side."""
    HALF_CLOSE = "half-close"
    """Close its side of the stream without a word."""
    OVERSIZED = "oversized"
    """A message over the referee's size limit (the referee refuses it, naming its limit)."""
    HUGE = "huge"
    """A message over four times the limit (gRPC refuses it itself)."""
    CANCEL = "cancel"
    """Cancel the stream (a crash, as the referee sees it)."""
    RESUME = "resume"
    """A second Hello on a new stream, naming this session in resume_session_id (a reconnect
    while the old stream still looks alive): the bot plays on on the new stream."""
    FLOOD = "flood"
    """More answers to a request that never was than the referee's inbox takes, at once: the
    bot plays on (if the referee reads them as fast as they come, they are faults; else its
    stream is cut off with RESOURCE_EXHAUSTED)."""


LEAVING = {End.GOODBYE, End.GOODBYE_OPEN, End.HALF_CLOSE, End.OVERSIZED, End.HUGE, End.CANCEL}
FLOOD_MESSAGES = 300
"""A flood: several times the referee's inbox (64 messages unread)."""


@dataclass(frozen=True)
class Msg:
    """One message of a step: what to say, and how (``pick``, ``text`` and ``data`` pick the
    cards, the id, the spelling or the bytes, as :func:`build` reads them for that kind)."""

    say: Say
    pick: int = 0
    text: str = ""
    data: bytes = b""


@dataclass(frozen=True)
class Step:
    """What the fuzzed bot sends in answer to one request, in order: messages while the request
    is open (strays only, which leave it open), the answer (None: silence), then messages after
    it (strays, or the answer's kind again for this request: a second answer)."""

    before: tuple[Msg, ...] = ()
    answer: Msg | None = Msg(Say.GOOD)
    after: tuple[Msg, ...] = ()


@dataclass(frozen=True)
class Plan:
    """One example: the table, and what the fuzzed seat does at its requests: it answers the
    first ``start`` well, then one per step, then well again. ``end`` comes after the messages
    of step ``end_at`` (or of the last step)."""

    seat: int
    seed: int
    hands: int
    max_faults: int
    strict: bool
    decide_forced: bool
    start: int
    steps: tuple[Step, ...]
    end: End | None = None
    end_at: int = 0


def _msgs(says: Sequence[Say], *, future: bool) -> st.SearchStrategy[Msg]:
    """Messages of the given kinds, with their parameters (``future``: a WRONG_ID may name a
    request not made yet; only while the request is open, since such an id could be this seat's
    next request, which a message arriving late would then answer)."""
    offsets = st.integers(-8, 8).filter(bool) if future else st.integers(-8, -1)
    garbage = st.binary(min_size=1, max_size=40).map(_not_protobuf)
    # Short texts: how long a text the referee echoes back is the subject of a regression test
    # of its own (below), which long texts here would only find again.
    texts = st.one_of(st.sampled_from(NOT_CARDS), st.text(max_size=5))
    return st.one_of(
        *(
            st.builds(
                Msg,
                st.just(s),
                offsets if s is Say.WRONG_ID else st.integers(0, 12),
                texts if s is Say.NOT_A_CARD else st.just(""),
                garbage if s is Say.GARBAGE else st.just(b""),
            )
            for s in says
        )
    )


def _not_protobuf(data: bytes) -> bytes:
    """``data``, made unparseable if it happens to parse: a tag of field 0 with wire type 7 (no
    such wire type) in front. Random bytes parse surprisingly often (b"\\x1a\\x00" is a Goodbye),
    and a garbage message must be garbage."""
    try:
        bot_pb.PlayRequest.FromString(data)
    except DecodeError:
        return data
    return b"\x07" + data


ANSWERS = [s for s in Say if s not in STRAYS]
AGAIN = [s for s in ANSWERS if s is not Say.GARBAGE]
"""What may follow the answer: garbage is left out, as it would be judged as the answer to the
seat's next request if it arrived once that was open (which timing decides)."""

steps = st.builds(
    Step,
    before=st.lists(_msgs(STRAYS, future=True), max_size=3).map(tuple),
    answer=st.one_of(_msgs(ANSWERS, future=False), st.just(Msg(Say.GOOD)), st.none()),
    after=st.lists(_msgs([*STRAYS, *AGAIN], future=False), max_size=2).map(tuple),
)

ALLOWANCES = st.sampled_from([0, 1, 3, 8, 1000])
"""FaultPolicy.max_faults: from a forfeit at the first fault to more than any plan makes (so
that every step of the plan is played)."""
STARTS = st.one_of(st.just(0), st.integers(1, 16))
"""Requests answered well before the plan's steps: 0 starts at the pass (which every seat is
asked at once), others in the play of the first hand or the pass of the second."""

plans = st.builds(
    Plan,
    seat=st.integers(0, 3),
    seed=st.integers(0, 10_000),
    hands=st.integers(1, 2),
    max_faults=ALLOWANCES,
    strict=st.sampled_from([False, False, False, True]),  # strict: forfeited at the first fault
    decide_forced=st.booleans(),
    start=STARTS,
    steps=st.lists(steps, min_size=1, max_size=6).map(tuple),
    end=st.one_of(st.none(), st.sampled_from([End.RESUME, End.FLOOD])),
    end_at=st.integers(0, 5),
)
"""Plans that stay to the end of the game (reconnecting on the way, or flooding, at times)."""

leaving_plans = st.builds(
    Plan,
    seat=st.integers(0, 3),
    seed=st.integers(0, 10_000),
    hands=st.just(1),
    max_faults=ALLOWANCES,
    strict=st.just(False),
    decide_forced=st.booleans(),
    start=STARTS,
    steps=st.lists(steps, min_size=1, max_size=3).map(tuple),
    end=st.sampled_from([e for e in End if e in LEAVING]),
    end_at=st.integers(0, 3),
)
"""Plans that leave in the middle of the game."""


# ---- building the bytes ----------------------------------------------------------------------


def spell(code: str, pick: int) -> str:
    """``code`` in one of the other spellings the guide allows, chosen by ``pick``."""
    rank, suit = code[0], code[1]
    ranks = [rank, rank.lower()] + (["10"] if rank == "T" else [])
    spelled = ranks[pick % len(ranks)] + [suit, suit.lower()][pick // len(ranks) % 2]
    pads = ["", " ", "\t", "\n ", " \r\n"]
    return pads[pick % 5] + spelled + pads[pick // 5 % 5]


def choose(cards: Sequence[str], count: int, pick: int) -> list[str]:
    """``count`` distinct cards of ``cards`` (a rotation chosen by ``pick``)."""
    start = pick % len(cards) if cards else 0
    return [*cards[start:], *cards[:start]][:count]


def decision(request_id: int, play: str | None = None, passed: Sequence[str] = ()) -> bytes:
    """A Decision as bytes: a play of ``play``, else a pass of ``passed``."""
    d = bot_pb.Decision(request_id=request_id)
    if play is not None:
        d.play_card.card = play
    else:
        d.pass_cards.cards.extend(passed)
    return bot_pb.PlayRequest(decision=d).SerializeToString()


def varint(value: int, size: int = 1) -> bytes:
    """``value`` as a protobuf varint, padded out to ``size`` bytes (an overlong encoding, which
    protobuf reads as the same value)."""
    groups = []
    while True:
        groups.append(value & 0x7F)
        value >>= 7
        if not value:
            break
    groups += [0] * (size - len(groups))
    return bytes(g | 0x80 for g in groups[:-1]) + bytes(groups[-1:])


def delimited(number: int, payload: bytes) -> bytes:
    """A length-delimited field (a message, a string)."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def odd_encoding(request: bot_pb.DecisionRequest, pick: int) -> bytes:
    """The legal answer to ``request`` in one of several encodings that protobuf reads as that
    answer although no protobuf library writes them (see :attr:`Say.ODD_ENCODING`)."""
    rid = request.request_id
    legal = list(request.legal_cards)
    if request.kind == bot_pb.DECISION_KIND_PASS:
        cards = choose(legal, request.pass_count, pick)
        choice = delimited(2, b"".join(delimited(1, c.encode()) for c in cards))
    else:
        choice = delimited(3, delimited(1, legal[pick % len(legal)].encode()))
    ident = varint(1 << 3) + varint(rid)
    variants = [
        delimited(2, varint(1 << 3) + varint(rid, 6) + choice),  # an overlong varint
        # 65 bits: the varint protobuf reads (modulo 2**64) as the id, ten bytes long, which is
        # also the longest the referee's fast reader of a play takes.
        delimited(2, varint(1 << 3) + varint(rid + (1 << 64)) + choice),
        delimited(2, choice + ident),  # the fields out of order
        delimited(2, ident + choice) + varint(15 << 3) + varint(7),  # an unknown field
        delimited(2, ident) + delimited(2, choice),  # two Decisions, merged into one
        delimited(2, varint(1 << 3) + varint(rid + 1) + ident + choice),  # the last id wins
    ]
    return variants[pick % len(variants)]


def good_answer(request: bot_pb.DecisionRequest, request_id: int, pick: int) -> bytes:
    """A legal answer to ``request`` (chosen by ``pick``), carrying ``request_id``."""
    legal = list(request.legal_cards)
    if request.kind == bot_pb.DECISION_KIND_PASS:
        return decision(request_id, passed=choose(legal, request.pass_count, pick))
    return decision(request_id, play=legal[pick % len(legal)])


def wrong_id(request: bot_pb.DecisionRequest, request_id: int, msg: Msg) -> bytes:
    """An answer to ``request`` carrying ``request_id`` (a wrong one): a legal answer, or a
    play of ``msg.text`` if it is set."""
    if msg.text:
        return decision(request_id, play=msg.text)
    return good_answer(request, request_id, msg.pick)


def build(msg: Msg, request: bot_pb.DecisionRequest, asked: Sequence[int], hello: bytes) -> bytes:
    """The bytes of ``msg`` in answer to ``request`` (``asked``: the ids of this seat's earlier
    requests; ``hello``: its own Hello, sent again)."""
    rid = request.request_id
    hand, legal = list(request.hand), list(request.legal_cards)
    passing = request.kind == bot_pb.DECISION_KIND_PASS
    count = request.pass_count
    missing = [c for c in CODES if c not in hand]
    absent = missing[msg.pick % len(missing)]
    match msg.say:
        case Say.GOOD:
            return good_answer(request, rid, msg.pick)
        case Say.SPELLED:
            if passing:
                chosen = choose(legal, count, msg.pick)
                return decision(rid, passed=[spell(c, msg.pick + i) for i, c in enumerate(chosen)])
            return decision(rid, play=spell(legal[msg.pick % len(legal)], msg.pick))
        case Say.HELLO:
            variants = [
                hello,
                bot_pb.PlayRequest(hello=bot_pb.Hello()).SerializeToString(),
                bot_pb.PlayRequest(
                    hello=bot_pb.Hello(bot_name="x", token="not a token", protocol_version=9)
                ).SerializeToString(),
            ]
            return variants[msg.pick % len(variants)]
        case Say.EMPTY:
            return b""
        case Say.NO_CHOICE:
            return bot_pb.PlayRequest(decision=bot_pb.Decision(request_id=rid)).SerializeToString()
        case Say.OTHER_KIND:
            if passing:
                return decision(rid, play=hand[msg.pick % len(hand)])
            return decision(rid, passed=choose(hand, min(3, len(hand)), msg.pick))
        case Say.WRONG_ID:
            return wrong_id(request, max(0, rid + msg.pick), msg)
        case Say.ZERO_ID:
            return wrong_id(request, 0, msg)
        case Say.MAX_ID:
            return wrong_id(request, U64_MAX, msg)
        case Say.OLD_ID:
            old = asked[-1 - msg.pick % len(asked)] if asked else max(0, rid - 1)
            return wrong_id(request, old, msg)
        case Say.NOT_HELD:
            if passing:
                return decision(rid, passed=[*choose(hand, count - 1, msg.pick), absent])
            return decision(rid, play=absent)
        case Say.ILLEGAL:
            barred = [c for c in hand if c not in legal]
            if passing or not barred:
                return build(Msg(Say.NOT_HELD, msg.pick), request, asked, hello)
            return decision(rid, play=barred[msg.pick % len(barred)])
        case Say.NOT_A_CARD:
            if passing:
                return decision(rid, passed=[*choose(hand, count - 1, msg.pick), msg.text])
            return decision(rid, play=msg.text)
        case Say.DUPLICATE:
            if not passing:
                return decision(rid, passed=[legal[0], legal[0]])
            chosen = choose(hand, count - 1, msg.pick)
            return decision(rid, passed=[*chosen, chosen[0]])
        case Say.TOO_FEW:
            return decision(rid, passed=choose(hand, msg.pick % max(1, count), msg.pick))
        case Say.TOO_MANY:
            more = count + 1 + msg.pick % max(1, len(hand) - count)
            return decision(rid, passed=choose(hand, more, msg.pick))
        case Say.GARBAGE:
            return msg.data
        case Say.ODD_ENCODING:
            return odd_encoding(request, msg.pick)
    raise AssertionError(msg)


# ---- the fuzzed bot --------------------------------------------------------------------------


@dataclass
class Asked:
    """One request the fuzzed bot got, and every message it sent before it read the next."""

    request: bot_pb.DecisionRequest
    sent: list[bytes] = field(default_factory=list)
    end: End | None = None
    """What the bot did to its stream after these messages, if anything."""


class Stream:
    """One Play stream of the fuzzed bot, over sync gRPC: a queue of byte messages that gRPC's
    own thread sends (None ends them: a half-close), and what came back, with the status.

    Sync gRPC: the referee runs grpc.aio on its own thread's event loop, and a second grpc.aio
    loop in the same process is best avoided. Every stream has a deadline of :data:`GUARD_S`,
    so that a referee that stalls fails the test instead of hanging it.
    """

    def __init__(self, channel: grpc.Channel, hello: bytes) -> None:
        """Open the stream with ``hello`` as its first message."""
        self.received: list[bot_pb.PlayResponse] = []
        self.unreadable: list[bytes] = []
        """Messages from the referee that do not parse (none may)."""
        self.status: grpc.StatusCode | None = None
        self.details = ""
        self._outbox: queue.Queue[bytes | None] = queue.Queue()
        self._closed = False
        play = channel.stream_stream(
            PLAY_METHOD, request_serializer=lambda b: b, response_deserializer=lambda b: b
        )
        self.send(hello)
        self._call = play(self._requests(), timeout=GUARD_S)
        self._responses = iter(self._call)

    def _requests(self) -> Iterator[bytes]:
        while (message := self._outbox.get()) is not None:
            yield message

    def send(self, data: bytes) -> None:
        """Send ``data`` after what was sent before (nothing once this side is closed)."""
        if not self._closed:
            self._outbox.put(data)

    def close_side(self) -> None:
        """Close this side of the stream (a half-close; it also frees gRPC's sending thread)."""
        if not self._closed:
            self._closed = True
            self._outbox.put(None)

    def next(self) -> bot_pb.PlayResponse | None:
        """The next message, or None at the end of the stream (its status is then read)."""
        try:
            raw: bytes = next(self._responses)
        except StopIteration:
            self.status = self._call.code()
            self.details = self._call.details() or ""
            return None
        except grpc.RpcError as e:
            assert isinstance(e, grpc.Call)  # a stream's error is its call
            self.status = e.code()
            self.details = e.details() or ""
            return None
        try:
            response = bot_pb.PlayResponse.FromString(raw)
        except DecodeError:
            self.unreadable.append(raw)
            response = bot_pb.PlayResponse()
        self.received.append(response)
        if response.HasField("shutdown"):
            self.close_side()  # as a bot should: the referee waits a moment for it
        return response

    def read_to_end(self) -> None:
        """Read (and keep) everything up to the end of the stream."""
        while self.next() is not None:
            pass

    def cancel(self) -> None:
        """Cancel the stream (as a crashing bot's does)."""
        self._call.cancel()  # type: ignore[no-untyped-call]  # grpc-stubs: untyped

    @property
    def notices(self) -> list[ev_pb.FaultNotice]:
        """The FaultNotices received on this stream, in order."""
        return [
            e.fault_notice for m in self.received for e in m.events if e.HasField("fault_notice")
        ]


class FuzzBot:
    """The fuzzed seat's bot: it answers each request as its plan's step says, on one stream,
    or on a second one after a reconnect (the first is then read to its end on a thread)."""

    def __init__(self, address: str, token: str, plan: Plan) -> None:
        """Open the first stream and say Hello (the Welcome is read by :meth:`welcome`)."""
        self.plan = plan
        self.token = token
        self.asked: list[Asked] = []
        self.left: End | None = None
        """How the bot left its game (one of LEAVING), or GOODBYE after the game's end."""
        self.session_id = ""
        self._channel = grpc.insecure_channel(address)
        self.streams = [Stream(self._channel, self.hello())]
        self._readers: list[threading.Thread] = []

    def hello(self, resume: str = "") -> bytes:
        """The bot's Hello (naming session ``resume`` on a reconnect)."""
        return bot_pb.PlayRequest(
            hello=bot_pb.Hello(
                bot_name=FUZZ,
                token=self.token,
                protocol_version=1,
                bot_version="fuzz",
                decide_forced_moves=self.plan.decide_forced,
                client_library="tests/test_referee_fuzz.py",
                resume_session_id=resume,
            )
        ).SerializeToString()

    @property
    def stream(self) -> Stream:
        """The stream the bot plays on now."""
        return self.streams[-1]

    @property
    def notices(self) -> list[ev_pb.FaultNotice]:
        """Every FaultNotice the bot received, on all its streams, in order."""
        return [n for stream in self.streams for n in stream.notices]

    def welcome(self) -> bot_pb.Welcome:
        """Read the Welcome of the stream opened last."""
        first = self.stream.next()
        assert first is not None and first.HasField("welcome"), (first, self.stream.details)
        self.session_id = first.welcome.session_id
        return first.welcome

    def play(self) -> None:
        """Play to the end of the stream: answer each request as the plan says, do what it
        says to the stream, and say Goodbye once the game has ended (or once a reconnect found
        no seat to take back)."""
        while (response := self.stream.next()) is not None:
            if response.HasField("request") and self.left is None:
                self._answer(response.request)
            over = any(e.HasField("game_ended") for e in response.events)
            if over and self.left is None:
                self._goodbye()

    def _goodbye(self) -> None:
        self.left = End.GOODBYE
        self.stream.send(bot_pb.PlayRequest(goodbye=bot_pb.Goodbye()).SerializeToString())
        self.stream.close_side()

    def _answer(self, request: bot_pb.DecisionRequest) -> None:
        plan = self.plan
        index = len(self.asked) - plan.start  # the step, once the plan has started
        earlier = [a.request.request_id for a in self.asked]
        asked = Asked(request)
        self.asked.append(asked)
        step = plan.steps[index] if 0 <= index < len(plan.steps) else Step()
        answer = () if step.answer is None else (step.answer,)
        hello = self.hello()
        for msg in (*step.before, *answer, *step.after):
            data = build(msg, request, earlier, hello)
            asked.sent.append(data)
            self.stream.send(data)
        if plan.end is not None and index == min(plan.end_at, len(plan.steps) - 1):
            asked.end = plan.end
            self._act(plan.end, request, asked)

    def _act(self, end: End, request: bot_pb.DecisionRequest, asked: Asked) -> None:
        stream = self.stream
        if end in LEAVING:
            self.left = end
        goodbye = bot_pb.PlayRequest(goodbye=bot_pb.Goodbye(reason="fuzz")).SerializeToString()
        if end is End.GOODBYE:
            stream.send(goodbye)
            stream.close_side()
        elif end is End.GOODBYE_OPEN:
            # Never read: the referee stops reading at the Goodbye.
            for data in (goodbye, good_answer(request, request.request_id, 0), b"\x07\x07"):
                stream.send(data)
        elif end is End.HALF_CLOSE:
            stream.close_side()
        elif end in (End.OVERSIZED, End.HUGE):
            size = MAX_BYTES + 100 if end is End.OVERSIZED else 4 * MAX_BYTES + 100
            stream.send(decision(request.request_id, play="X" * size))
        elif end is End.CANCEL:
            stream.cancel()
        elif end is End.FLOOD:
            data = good_answer(request, U64_MAX, 0)
            asked.sent.extend([data] * FLOOD_MESSAGES)
            for _ in range(FLOOD_MESSAGES):
                stream.send(data)
        else:
            # A reconnect naming the live session: the old stream is read to its end (a
            # Shutdown) on a thread, and the bot plays on on the new one.
            reader = threading.Thread(target=stream.read_to_end, daemon=True)
            reader.start()
            self._readers.append(reader)
            self.streams.append(Stream(self._channel, self.hello(resume=self.session_id)))
            welcome = self.welcome()
            if not welcome.resumed:
                # No seat to take back (it was forfeited, or the game has ended): the new
                # session waits in the lobby, for games that will not come.
                self._goodbye()

    def close(self) -> None:
        """Release gRPC's threads (blocked on the queues) and the channel."""
        for reader in self._readers:
            reader.join(GUARD_S)
        for stream in self.streams:
            stream.close_side()
            stream.cancel()
        self._channel.close()


# ---- the protocol guide's rules, as a model ---------------------------------------------------


def canonical(text: str) -> str | None:
    """The card ``text`` names in a spelling the guide allows, else None: the code, each letter
    in either case, "10" for the ten, spaces, tabs and line breaks around. Written from the
    guide, independently of the referee's table of spellings."""
    t = text.strip(CARD_SPACE)
    if len(t) == 3 and t[:2] == "10":
        rank, suit = "T", t[2]
    elif len(t) == 2:
        rank, suit = t[0], t[1]
    else:
        return None
    if rank not in RANKS + RANKS.lower() or suit not in SUITS + SUITS.lower():
        return None
    return rank.upper() + suit.upper()


@dataclass(frozen=True)
class Verdict:
    """What the guide says a message means when it arrives (for the open request, or with none
    open): the faults it may be (empty: none), whether it answers the request (accepted, or
    refused and substituted), the cards accepted, whether it is a late reply or a Goodbye."""

    kinds: frozenset[FaultKind] = frozenset()
    answers: bool = False
    cards: tuple[str, ...] = ()
    late: bool = False
    leaves: bool = False


def refused(*kinds: FaultKind) -> Verdict:
    """An answer refused: a fault, and a substitute played."""
    return Verdict(frozenset(kinds), answers=True)


def stray(kind: FaultKind) -> Verdict:
    """A message that answers nothing: a fault, and the request (if any) stays open."""
    return Verdict(frozenset({kind}))


def judge(data: bytes, request: bot_pb.DecisionRequest | None, expired: set[int]) -> Verdict:
    """The guide's verdict on ``data`` arriving while ``request`` is open (None: no request open,
    e.g. between requests); ``expired``: the seat's requests that timed out (an answer to one is
    a late reply)."""
    try:
        message = bot_pb.PlayRequest.FromString(data)
    except DecodeError:
        # "Not a card, no choice set, or a message that does not parse": it answers the open
        # request (refused), or is counted on its own with none open.
        return refused(FaultKind.MALFORMED) if request else stray(FaultKind.MALFORMED)
    which = message.WhichOneof("kind")
    if which == "goodbye":
        return Verdict(leaves=True)
    if which != "decision":  # a second Hello, or nothing set: a message out of order
        return stray(FaultKind.PROTOCOL)
    d = message.decision
    if request is None or d.request_id != request.request_id:
        if d.request_id in expired:
            return Verdict(late=True)
        return stray(FaultKind.WRONG_REQUEST_ID if request else FaultKind.PROTOCOL)
    choice = d.WhichOneof("choice")
    passing = request.kind == bot_pb.DECISION_KIND_PASS
    if choice is None:
        return refused(FaultKind.MALFORMED)
    if (choice == "pass_cards") != passing:
        return refused(FaultKind.PROTOCOL)
    hand, legal = set(request.hand), set(request.legal_cards)
    if not passing:
        card = canonical(d.play_card.card)
        if card is None:
            return refused(FaultKind.MALFORMED)
        if card not in hand:
            return refused(FaultKind.CARD_NOT_HELD)
        if card not in legal:
            return refused(FaultKind.ILLEGAL_CARD)
        return Verdict(answers=True, cards=(card,))
    named = [canonical(t) for t in d.pass_cards.cards]
    cards = [c for c in named if c is not None]
    # The guide gives no order between a pass's defects: any of its defects may be the one named.
    defects = set()
    if len(cards) < len(named):
        defects.add(FaultKind.MALFORMED)
    if any(c not in hand for c in cards):
        defects.add(FaultKind.CARD_NOT_HELD)
    if len(named) != request.pass_count or len(set(cards)) < len(cards):
        defects.add(FaultKind.WRONG_PASS)
    if defects:
        return refused(*defects)
    return Verdict(answers=True, cards=tuple(sorted(cards, key=CODES.index)))


ECHO_LIMIT = 16
"""The guide's limit on what your_answer echoes: characters of a card text, cards of a pass."""


def quoted(text: str) -> str:
    """A card text as your_answer quotes it: whole, or its first ECHO_LIMIT characters and its
    length."""
    if len(text) <= ECHO_LIMIT:
        return repr(text)
    return f"{text[:ECHO_LIMIT]!r}... ({len(text)} characters)"


def describe(data: bytes) -> str:
    """What a FaultNotice says the bot sent (``your_answer``), as the guide shows it:
    ``"play '2C' (request 7)"``, and for what is no Decision, what it was."""
    try:
        message = bot_pb.PlayRequest.FromString(data)
    except DecodeError:
        return f"{len(data)} undecodable bytes"
    if message.HasField("decision"):
        d = message.decision
        choice = d.WhichOneof("choice")
        if choice == "play_card":
            return f"play {quoted(d.play_card.card)} (request {d.request_id})"
        if choice == "pass_cards":
            cards = list(d.pass_cards.cards)
            shown = ", ".join(quoted(c) for c in cards[:ECHO_LIMIT])
            more = f", ... ({len(cards)} cards)" if len(cards) > ECHO_LIMIT else ""
            return f"pass [{shown}{more}] (request {d.request_id})"
        return f"no choice (request {d.request_id})"
    return "a second Hello" if message.HasField("hello") else "an empty PlayRequest"


# ---- the shared referee ----------------------------------------------------------------------


class ErrorLog(logging.Handler):
    """Keeps every record at ERROR or above logged on the referee's threads (a failure the
    referee caught and logged, which no record would show)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []
        self._lock_records = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        """Keep it if it was logged on a referee thread."""
        if record.threadName and record.threadName.startswith("referee"):
            with self._lock_records:
                self.records.append(record)

    def take(self) -> list[str]:
        """The lines kept so far (and forget them)."""
        with self._lock_records:
            records, self.records = self.records, []
        return [f"{r.name}: {r.getMessage()}" for r in records]


@dataclass
class Arena:
    """One referee, three good bot processes, and what the fuzzed bot needs to join them."""

    referee: RefereeThread
    bots: BotProcesses
    token: str
    errors: ErrorLog
    tables: Iterator[int] = field(default_factory=itertools.count)


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Arena]:
    """The referee on 127.0.0.1:0 and its good bots; all stopped and killed at the end."""
    accounts = TokenAccounts()
    config = RefereeConfig(time_warning_ms=WARN_MS)
    referee = RefereeThread(config, accounts)
    referee.start("127.0.0.1:0")
    errors = ErrorLog()
    logging.getLogger().addHandler(errors)
    bots = BotProcesses(referee, accounts, tmp_path_factory.mktemp("fuzz"))
    try:
        for name in GOOD:
            bots.start(name)
        assert referee.wait_for_bots(GOOD, BOT_READY_MS), "the good bots did not connect"
        yield Arena(referee, bots, accounts.issue(FUZZ), errors)
    finally:
        logging.getLogger().removeHandler(errors)
        referee.stop(0, finished=True)
        bots.kill_all()


# ---- one example -----------------------------------------------------------------------------


@dataclass
class Played:
    """What one example produced: the record, what the fuzzed bot did and got, what a spectator
    saw, and what the referee logged."""

    plan: Plan
    spec: TableSpec
    record: GameRecord
    bot: FuzzBot
    watched: list[ev_pb.Event]
    errors: list[str]


def play(arena: Arena, plan: Plan) -> Played:
    """Play one table with the fuzzed bot in seat ``plan.seat``; everything it started is
    closed again, whatever happens."""
    seats = list(GOOD)
    seats.insert(plan.seat, FUZZ)
    spec = TableSpec(
        f"fuzz-{next(arena.tables)}",
        Rules(),
        plan.seed,
        tuple(seats),
        str(plan.seed),
        hands=plan.hands,
        clocks=CLOCKS,
        faults=FaultPolicy(max_faults=plan.max_faults, strict=plan.strict, grace_ms=GRACE_MS),
    )
    address = f"127.0.0.1:{arena.referee.port}"
    bot = FuzzBot(address, arena.token, plan)
    try:
        welcome = bot.welcome()
        assert welcome.max_message_bytes == MAX_BYTES and not welcome.resumed
        # The table waits (up to the handshake clock) for all four in the lobby.
        future = arena.referee.submit(spec)
        bot.play()
        record = future.result(GUARD_S)
    finally:
        bot.close()
    # The referee's loop still answers, and the lobby holds exactly the good bots again: no
    # session lost, none left behind by the fuzzed bot. (A stream cancelled, or refused by gRPC
    # itself, is over for the bot before the referee hears of it: hence the wait.)
    deadline = time.monotonic() + GUARD_S
    while (idle := arena.referee.idle()) != dict.fromkeys(GOOD, 1):
        assert time.monotonic() < deadline, f"the lobby never settled: {idle}"
        time.sleep(0.005)
    with grpc.insecure_channel(address) as channel:
        watch = spec_grpc.SpectatorServiceStub(channel).Watch(
            spec_pb.WatchRequest(table_id=spec.table_id, from_start=True), timeout=GUARD_S
        )
        watched = [e for response in watch for e in response.events]
    return Played(plan, spec, record, bot, watched, arena.errors.take())


# ---- the checks ------------------------------------------------------------------------------


def check_example(p: Played) -> None:
    """Every property of one example (see the module's docstring)."""
    assert p.errors == [], f"the referee logged errors: {p.errors}"
    record = p.record
    assert record.termination is Termination.NORMAL, record.reason
    assert len(record.hands) == p.plan.hands and all(h.complete for h in record.hands)
    check_replay(p.spec, record, set(range(4)) - {p.plan.seat})
    check_good_seats(p)
    check_bot_told(p)
    check_judged(p)
    check_spectator(p)


def lowest(cards: Sequence[str]) -> str:
    """The good bots' play (tests/bots/raw_bot.py): the lowest card by rank, then suit."""
    return min(cards, key=lambda c: (RANKS.index(c[0]), SUITS.index(c[1])))


def check_replay(spec: TableSpec, record: GameRecord, good: set[int]) -> None:
    """The record's hands are the engine's: replayed from the seed, every deal, pass, card,
    trick and score agrees, and the decisions are the cards the tricks and passes hold. The
    ``good`` seats played exactly what their bots play (their first cards passed, their lowest
    legal card played): nothing another seat's bot sent was ever taken for theirs."""
    game = Game(spec.rules, spec.seed)
    players = spec.rules.players
    for number, kept in enumerate(record.hands):
        hand = game.hand
        assert kept.number == number and kept.dealer == hand.dealer
        assert kept.pass_direction == hand.pass_direction.value
        dealt = [tuple(sorted(str(c) for c in hand.dealt(s))) for s in range(players)]
        assert [tuple(sorted(d)) for d in kept.dealt] == dealt
        for seat in hand.seats_to_pass:
            if seat in good:
                held = sorted(hand.hand(seat), key=lambda c: c.index)
                assert kept.passes[seat] == tuple(str(c) for c in held[: spec.rules.pass_count])
            hand.pass_cards(seat, kept.passes[seat])  # raises if the pass was not legal
        plays: list[tuple[int, str]] = []
        for trick in kept.tricks:
            assert trick.leader == hand.to_move
            for i, card in enumerate(trick.cards):
                plays.append(((trick.leader + i) % players, card))
                if hand.to_move in good:
                    assert card == lowest([str(c) for c in hand.legal_plays()]), (number, card)
                hand.play(card)  # raises if the card was not legal
            assert hand.tricks[-1].winner == trick.winner
        assert hand.is_over
        result = game.finish_hand()
        assert kept.points == result.points and kept.moon == result.moon and kept.sun == result.sun
        decided = [d for d in record.decisions if d.hand == number]
        assert [(d.seat, d.cards) for d in decided if d.kind == "play"] == [
            (s, (c,)) for s, c in plays
        ]
        passes = {d.seat: tuple(sorted(d.cards)) for d in decided if d.kind == "pass"}
        assert len(passes) == len([d for d in decided if d.kind == "pass"])  # one each
        assert passes == {s: tuple(sorted(kept.passes[s])) for s in passes}
        assert set(passes) == set(range(players) if any(kept.passes) else ())
    assert record.totals == tuple(game.totals)
    forfeited = [t.is_forfeit for t in record.seat_status]
    keys = [(forfeited[s], game.placings[s]) for s in range(players)]
    assert record.placings == tuple(1 + sum(k < keys[s] for k in keys) for s in range(players))


def check_good_seats(p: Played) -> None:
    """The three good seats: no fault, no late reply, every decision their own."""
    record, seat = p.record, p.plan.seat
    for other in range(4):
        if other != seat:
            assert record.faults_of(other) == ()
            assert record.seat_status[other] is Termination.NORMAL
    assert all(x.seat == seat for x in record.late)
    assert not any(d.fallback or d.fault for d in record.decisions if d.seat != seat)


def check_bot_told(p: Played) -> None:
    """What the fuzzed bot was sent: well-formed messages about its own seat and game, each
    event once, its faults as the record has them and in order, and for each stream an end the
    guide documents."""
    bot, record, seat = p.bot, p.record, p.plan.seat
    for stream in bot.streams:
        check_stream_form(stream, seat)
    games = {
        e.game_started.game_id
        for stream in bot.streams
        for m in stream.received
        for e in m.events
        if e.HasField("game_started")
    }
    assert len(games) == 1, games
    (game_id,) = games
    requests = [m.request for st_ in bot.streams for m in st_.received if m.HasField("request")]
    ids = [r.request_id for r in requests]
    assert all(ids) and len(set(ids)) == len(ids)  # never 0, unique
    assert all(r.game_id == game_id for r in requests)
    # Each event once, across its streams: a reconnect tells again only the game's start and
    # the current hand's start, deal and pass, and never a card already told.
    cards = [
        (e.card_played.hand_number, e.card_played.trick_number, e.card_played.seat)
        for stream in bot.streams
        for m in stream.received
        for e in m.events
        if e.HasField("card_played")
    ]
    assert len(set(cards)) == len(cards), "a card was told twice"
    heard_end = any(
        e.HasField("game_ended") for st_ in bot.streams for m in st_.received for e in m.events
    )
    if heard_end and not any(a.end in LEAVING for a in bot.asked):
        # It was there to the end: every card of the game reached it, once.
        assert len(cards) == sum(len(t.cards) for h in record.hands for t in h.tricks)
    check_notices(p, game_id)
    for stream in bot.streams:
        for m in stream.received:
            for e in m.events:
                if e.HasField("game_ended"):
                    check_game_ended(e.game_ended, record, game_id)
    # A stream replaced by a reconnect naming it ends with a Shutdown saying so, and OK.
    for old in bot.streams[:-1]:
        assert old.status is grpc.StatusCode.OK, (old.status, old.details)
        assert old.received[-1].HasField("shutdown"), old.received[-1]
        reason = old.received[-1].shutdown.reason
        assert reason == bot_pb.SHUTDOWN_REASON_REPLACED_BY_NEW_SESSION
    last = bot.stream
    flooded = any(a.end is End.FLOOD for a in bot.asked)
    if bot.left is End.CANCEL:
        assert last.status is grpc.StatusCode.CANCELLED  # this side's own doing
    elif bot.left in (End.OVERSIZED, End.HUGE):
        assert last.status is grpc.StatusCode.RESOURCE_EXHAUSTED, (last.status, last.details)
        if bot.left is End.OVERSIZED:  # the referee's refusal names its limit (gRPC's, its own)
            assert str(MAX_BYTES) in last.details
    elif flooded and last.status is grpc.StatusCode.RESOURCE_EXHAUSTED:
        assert "flooding" in last.details
    else:
        # Nothing else ends a stream but the bot itself: a half-close, or a Goodbye (the plan's,
        # or the test's once the game has ended), which the referee confirms.
        assert last.status is grpc.StatusCode.OK, (bot.left, last.status, last.details)
        assert bot.left in (End.HALF_CLOSE, End.GOODBYE, End.GOODBYE_OPEN), bot.left
        final = last.received[-1]
        if bot.left is End.HALF_CLOSE:
            assert not final.HasField("shutdown")  # it ended the session itself, saying nothing
        else:
            assert final.HasField("shutdown"), final
            assert final.shutdown.reason == bot_pb.SHUTDOWN_REASON_GOODBYE
            assert final.shutdown.may_reconnect


def check_game_ended(ended: ev_pb.GameEnded, record: GameRecord, game_id: str) -> None:
    """A GameEnded (a bot's or a spectator's) says what the record says."""
    assert ended.game_id == game_id
    assert TERMINATION_OF_PROTO[ended.termination] is record.termination
    assert [TERMINATION_OF_PROTO[t] for t in ended.seat_status] == list(record.seat_status)
    assert list(ended.game_totals) == list(record.totals)
    assert list(ended.placings) == list(record.placings)
    assert ended.hands_played == sum(h.complete for h in record.hands)
    assert ended.message == record.reason


def check_stream_form(stream: Stream, seat: int) -> None:
    """One stream's messages: a Welcome first and only first, a Shutdown last if at all, events
    of the kinds a bot gets, requests for its seat, a resumed stream's replay first."""
    received = stream.received
    assert stream.unreadable == []
    assert received and received[0].HasField("welcome")
    assert not any(m.HasField("welcome") for m in received[1:])
    assert not any(m.HasField("shutdown") for m in received[:-1])
    told: list[tuple[str, int]] = []
    for m in received:
        for e in m.events:
            kind = e.WhichOneof("kind")
            assert kind in BOT_KINDS, kind
            if kind in ("game_started", "hand_started", "cards_dealt", "cards_received"):
                told.append((kind, getattr(e, kind).hand_number if kind != "game_started" else -1))
            if kind == "game_started":
                assert e.game_started.your_seat == seat
            elif kind == "seat_faulted":
                assert e.seat_faulted.seat != seat  # its own faults come as FaultNotice
            elif kind == "time_warning":
                warning = e.time_warning
                assert warning.time_bank_ms < WARN_MS
                assert warning.message.startswith(f"{warning.time_bank_ms} ms of time bank")
        if m.HasField("request"):
            r = m.request
            assert r.your_seat == seat
            assert r.kind in (bot_pb.DECISION_KIND_PASS, bot_pb.DECISION_KIND_PLAY)
            assert set(r.legal_cards) <= set(r.hand) and r.legal_cards
            if r.kind == bot_pb.DECISION_KIND_PASS:
                assert list(r.legal_cards) == list(r.hand) and r.pass_count == 3
    twice = {x for x in told if told.count(x) > 1}
    assert not twice, f"told twice on one stream: {told}"
    if received[0].welcome.resumed:
        assert received[0].welcome.reconnect_grace_ms == GRACE_MS  # the table's, not the default
        assert len(received) > 1 and received[1].events, "a resumed stream starts with a replay"
        assert received[1].events[0].HasField("game_started")


def check_notices(p: Played, game_id: str) -> None:
    """Told precisely: the FaultNotices, over all the bot's streams, are the record's faults of
    its seat, in order and word for word, with the counts the policy gives."""
    bot, record, seat = p.bot, p.record, p.plan.seat
    notices = bot.notices
    faults = record.faults_of(seat)
    assert len(notices) <= len(faults)
    allowed = p.spec.faults.faults_allowed
    forfeited = False
    for counted, (notice, fault) in enumerate(zip(notices, faults, strict=False), 1):
        assert notice.kind in DOCUMENTED_FAULTS and FAULT_OF_PROTO[notice.kind] is fault.kind
        assert notice.game_id == game_id and notice.hand_number == fault.hand
        assert notice.your_answer == fault.sent
        assert tuple(notice.substitute_cards) == fault.substitute
        played = f"; played instead: {' '.join(fault.substitute)}" if fault.substitute else ""
        assert notice.message == fault.detail + played
        assert notice.faults_allowed == allowed
        # A bot that is told of a fault is connected: it cannot be a disconnect, so every fault
        # told counts towards the allowance.
        assert fault.kind is not FaultKind.DISCONNECT
        assert notice.faults == counted
        assert notice.forfeited == (counted > allowed)
        assert not forfeited, "a fault counted after the seat was forfeited"
        forfeited = notice.forfeited
        # your_answer is empty for a timeout (or a disconnect) only.
        assert (notice.your_answer == "") == (fault.kind is FaultKind.TIMEOUT)
        if fault.kind is FaultKind.TIMEOUT:
            assert fault.substitute
    last = bot.stream
    stayed = bot.left is End.GOODBYE and not any(a.end in LEAVING for a in bot.asked)
    heard_end = any(e.HasField("game_ended") for m in last.received for e in m.events)
    if stayed and heard_end and last.status is grpc.StatusCode.OK:
        assert len(notices) == len(faults), "a fault was never told"


def decision_for(record: GameRecord, seat: int, request_id: int) -> Decision | None:
    """The seat's decision taken at request ``request_id``, if one was."""
    found = [d for d in record.decisions if d.seat == seat and d.request_id == request_id]
    assert len(found) <= 1, found
    return found[0] if found else None


def check_judged(p: Played) -> None:
    """Every message of the fuzzed bot was judged as the guide says.

    Per request (:class:`Asked`): the messages sent while it was open are judged in order by
    :func:`judge`: strays are each a fault naming the request, the first answer is accepted
    (its cards played) or refused with its documented kind. Skipped where the machine's speed
    could change what the referee saw: a request that timed out (its messages came late, and
    may have landed on the next one), the request after it, one the bot left or reconnected at.

    Per fault (:func:`check_fault_cause`): each is the verdict of a message the bot sent, in the
    context the notice gives (the open request, or none).
    """
    record, seat, bot = p.record, p.plan.seat, p.bot
    decided = {d.request_id: d for d in record.decisions if d.seat == seat}
    notices = bot.notices
    requests = {
        m.request.request_id: m.request
        for stream in bot.streams
        for m in stream.received
        if m.HasField("request")
    }
    # Requests that timed out, and those given up at a reconnect (asked again under a new id,
    # so that no decision has theirs): an answer to one is late. Request ids are the referee's
    # count, and only this table counts while it plays: the gaps between its decisions' ids are
    # requests given up, those the bot received and those it did not.
    ids = {d.request_id for d in record.decisions if d.request_id}
    expired = {r for r, d in decided.items() if d.fault is FaultKind.TIMEOUT}
    expired |= {r for r in requests if r not in ids}
    expired |= set(range(min(ids), max(ids))) - ids if ids else set()
    for notice in notices:
        check_fault_cause(notice, bot.asked, requests, expired)
    check_record_faults(record, seat, bot.asked, expired)
    complete = len(notices) == len(record.faults_of(seat))
    after_timeout = False
    for index, asked in enumerate(bot.asked):
        rid = asked.request.request_id
        d = decision_for(record, seat, rid)
        if asked.end is End.RESUME:
            continue  # answered on the old stream before it was replaced, or given up then
        assert d is not None, f"request {rid} has no decision in the record"
        assert d.kind == ("pass" if asked.request.kind == bot_pb.DECISION_KIND_PASS else "play")
        if d.fault is FaultKind.TIMEOUT or after_timeout:
            after_timeout = d.fault is FaultKind.TIMEOUT
            continue
        if asked.end in (End.CANCEL, End.HUGE) and d.fault is FaultKind.DISCONNECT:
            # A cancel drops what gRPC had not sent yet; a message over gRPC's own limit fails
            # the call, dropping what the referee's gRPC had received but not yet handed over
            # (seen once in CI: three strays and an answer sent before it never arrived).
            continue
        strays = 0
        answer: Verdict | None = None
        for data in asked.sent:
            verdict = judge(data, asked.request, {x for x in expired if x < rid})
            if verdict.answers:
                answer = verdict
                break
            if verdict.kinds:
                strays += 1
        told = [n for n in notices if n.request_id == rid and not n.substitute_cards]
        if d.fallback and d.fault is None:
            # Forfeited while the request was open (a stray was one fault too many), or before.
            assert record.seat_status[seat].is_forfeit
            continue
        if answer is None:
            # Nothing answered it: a timeout (passed over above), or the bot left meanwhile.
            assert asked.end in LEAVING and d.fault is FaultKind.DISCONNECT, (index, d)
            continue
        if answer.cards:
            assert d.fault is None and not d.fallback, (index, d, describe(asked.sent[0]))
            assert tuple(sorted(d.cards, key=CODES.index)) == answer.cards
        else:
            assert d.fault in answer.kinds and d.fallback, (index, d, answer)
        if complete:
            # Each stray sent while the request was open was counted against it (more may be:
            # a second answer to the seat's last request, arriving once this one was open).
            assert len(told) >= strays, (index, strays, told)


def check_record_faults(
    record: GameRecord, seat: int, asked: Sequence[Asked], expired: set[int]
) -> None:
    """The record's faults and late replies of the fuzzed seat hold together: a fault that
    played a substitute is a decision played by the fallback (its hand, kind and cards; in the
    pass, trick -1), and a late reply is a Decision the bot sent for a request that had timed
    out or been given up, or sent once its seat was forfeited."""
    fallbacks = [d for d in record.decisions if d.seat == seat and d.fault is not None]
    substituted = [f for f in record.faults_of(seat) if f.substitute]
    assert len(fallbacks) == len(substituted)
    for f, d in zip(substituted, fallbacks, strict=True):
        assert (f.kind, f.hand, f.substitute) == (d.fault, d.hand, d.cards) and d.fallback
        assert (f.trick == -1) == (d.kind == "pass")
    sent = {describe(data): data for a in asked for data in a.sent}
    forfeited = record.seat_status[seat].is_forfeit
    for late in record.late:
        assert late.sent in sent, f"a late reply the bot never sent: {late.sent!r}"
        message = bot_pb.PlayRequest.FromString(sent[late.sent])
        assert message.decision.request_id == late.request_id
        assert forfeited or late.request_id in expired, late


def check_fault_cause(
    notice: ev_pb.FaultNotice,
    asked: Sequence[Asked],
    requests: dict[int, bot_pb.DecisionRequest],
    expired: set[int],
) -> None:
    """One FaultNotice is the guide's verdict on a message the bot sent, judged in the context
    the notice names: a request it was sent (``request_id``), or none open (0).

    Whether an id had expired when the message was judged depends on when that was: a message
    sent in answer to request R is judged once R was asked, so every request that timed out
    before R had by then, and one after R may have too (a message that arrived late). Both are
    allowed; an id the bot named before it was ever asked for cannot have been expired then
    unless the message came that late.
    """
    kind = FAULT_OF_PROTO[notice.kind]
    if kind is FaultKind.TIMEOUT:
        return  # checked with the record's decisions
    context = requests.get(notice.request_id)
    assert notice.request_id == 0 or context is not None, notice
    verdicts = [
        judge(data, context, known)
        for a in asked
        for data in a.sent
        if describe(data) == notice.your_answer
        for known in ({x for x in expired if x < a.request.request_id}, expired)
    ]
    assert verdicts, f"no message sent reads {notice.your_answer!r}"
    substituted = bool(notice.substitute_cards)
    assert any(kind in v.kinds and v.answers == substituted and not v.late for v in verdicts), (
        notice,
        verdicts,
    )


def check_spectator(p: Played) -> None:
    """A spectator saw the record's game: its cards in order, and the fuzzed seat's faults."""
    record, seat = p.record, p.plan.seat
    played = [
        (e.card_played.hand_number, e.card_played.seat, e.card_played.card)
        for e in p.watched
        if e.HasField("card_played")
    ]
    assert played == [
        (h.number, (t.leader + i) % 4, c)
        for h in record.hands
        for t in h.tricks
        for i, c in enumerate(t.cards)
    ]
    faulted = [e.seat_faulted for e in p.watched if e.HasField("seat_faulted")]
    assert all(f.seat == seat for f in faulted)
    assert [FAULT_OF_PROTO[f.kind] for f in faulted] == [f.kind for f in record.faults]
    ended = [e.game_ended for e in p.watched if e.HasField("game_ended")]
    assert len(ended) == 1
    check_game_ended(ended[0], record, ended[0].game_id)


# ---- the properties ----------------------------------------------------------------------------

# About 60 ms an example for a bot that stays, 100 ms for one that leaves (a seat whose stream
# ended waits out the grace period): some 15 s for each test on two cores with -n 2.
FUZZ_SETTINGS = settings(
    max_examples=250,
    deadline=None,
    derandomize=True,  # the same examples on every run, CI's or not: no database needed
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@FUZZ_SETTINGS
@given(plan=plans)
def test_a_fuzzed_bot_that_stays_never_harms_the_game(arena: Arena, plan: Plan) -> None:
    check_example(play(arena, plan))


@settings(FUZZ_SETTINGS, max_examples=150)
@given(plan=leaving_plans)
def test_a_fuzzed_bot_that_leaves_mid_game_never_harms_the_game(arena: Arena, plan: Plan) -> None:
    check_example(play(arena, plan))


# ---- regressions -------------------------------------------------------------------------------

ECHO_STRAYS = 17
"""Stray answers enough for their FaultNotices to pass 4 MiB in one message (16 stay under)."""
GRPC_DEFAULT_RECEIVE = 4 * 1024 * 1024
"""The largest message a gRPC client takes unless told otherwise (every bot here, the SDK's and
the Node.js sample bot's included)."""


def test_stray_answers_with_long_card_texts_are_told_in_messages_a_bot_can_receive(
    arena: Arena,
) -> None:
    """Seventeen answers to a request that never was, each under the referee's 64 KiB limit
    and naming as its card 65,436 control characters, while the pass request is open; then
    the right answer. Each is a WRONG_REQUEST_ID fault, within the allowance: the bot must be
    told all seventeen and play on.

    Today each FaultNotice's your_answer is ``"play '\\x01\\x01...' (request N)"``, 261,782
    characters, and the seventeen come together with the bot's next request in one
    PlayResponse of about 4.45 MB, over the 4,194,304 bytes a gRPC client takes by default:
    the bot's gRPC ends its stream with RESOURCE_EXHAUSTED ("CLIENT: Received message larger
    than max"), the bot never hears of its faults, and the referee, seeing the stream gone,
    forfeits the seat as a disconnect after the grace period.
    """
    text = "\x01" * (MAX_BYTES - 100)  # the whole message stays under the referee's limit
    stray = Msg(Say.MAX_ID, text=text)
    assert len(build(stray, bot_pb.DecisionRequest(request_id=1), [], b"")) < MAX_BYTES
    plan = Plan(
        seat=0,
        seed=3,
        hands=1,
        max_faults=ECHO_STRAYS,
        strict=False,
        decide_forced=False,
        start=0,
        steps=(Step(before=(stray,) * ECHO_STRAYS),),
    )
    p = play(arena, plan)
    largest = max((m.ByteSize() for s in p.bot.streams for m in s.received), default=0)
    assert p.bot.stream.status is grpc.StatusCode.OK, p.bot.stream.details
    assert largest <= GRPC_DEFAULT_RECEIVE
    assert len(p.bot.notices) == ECHO_STRAYS
    assert p.record.seat_status[0] is Termination.NORMAL, p.record.reason
    check_example(p)


class FakeStream:
    """A bot's stream as a referee's :class:`Session` uses it, without gRPC: every request
    written to it is answered at once as the good bots answer, unless it holds its answers
    back (in :attr:`held`); every message written is kept."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.session: Session | None = None
        self.received: list[bot_pb.PlayResponse] = []
        self.hold = False
        self.held: list[bot_pb.PlayRequest] = []

    def peer(self) -> str:
        """The address a session logs."""
        return f"fake:{self.name}"

    async def write(self, message: bot_pb.PlayResponse | bytes) -> None:
        """Take one message from the referee (and answer its request, if any, soon)."""
        data = message if isinstance(message, bytes) else message.SerializeToString()
        response = bot_pb.PlayResponse.FromString(data)
        self.received.append(response)
        if not response.HasField("request"):
            return
        r = response.request
        answer = bot_pb.PlayRequest.FromString(good_answer(r, r.request_id, 0))
        if self.hold:
            self.held.append(answer)
        else:
            assert self.session is not None
            inbox = self.session.inbox
            # As an answer arrives: after the write, on a later turn of the loop.
            asyncio.get_running_loop().call_soon(inbox.put_nowait, (time.monotonic(), answer))


def fake_session(stream: FakeStream, session_id: str) -> Session:
    """A session of bot ``stream.name`` over ``stream`` (no reader: answers go straight to its
    inbox)."""
    session = Session(stream, session_id, 64, MAX_BYTES)  # type: ignore[arg-type]
    session.bot = stream.name
    stream.session = session
    return session


def fake_table(table_id: str) -> tuple[TableRun, list[FakeStream], list[Session]]:
    """A table of four bots over fake streams, its sessions seated (the run not started)."""
    names = ("a", "b", "c", "d")
    spec = TableSpec(table_id, Rules(), 5, names, "5", clocks=Clocks(5000, 5000, 5000))
    streams = [FakeStream(n) for n in names]
    sessions = [fake_session(s, f"s{i}") for i, s in enumerate(streams)]
    feed = TableFeed(table_id, names, wire.rules_message(spec.rules), 64)
    run = TableRun(
        spec,
        sessions,
        game_id=f"g1-{table_id}",
        config=RefereeConfig(),
        request_ids=itertools.count(1),
        feed=feed,
    )
    return run, streams, sessions


def test_a_seat_taken_back_as_its_pass_completes_is_told_the_pass_once() -> None:
    """The race the fuzz test hit, made exact on a table with fake streams.

    The last seat to pass answers; on that turn of the event loop its pass task records the
    pass, and the engine exchanges the cards. The table task, which queues every seat's
    CardsReceived, only runs once the pass's TaskGroup has woken it, on a later turn. Seat 0's
    bot reconnects in between, as Referee._admit does it (its old session ends, the new one
    takes the seat back): the guide promises it every event once, CardsReceived included.
    """

    async def body() -> None:
        run, streams, sessions = fake_table("race")
        streams[3].hold = True  # seat 3 passes last, when the test says
        task = asyncio.create_task(run.run())
        deadline = time.monotonic() + GUARD_S
        while run.game.hand.seats_to_pass != (3,) or not streams[3].held:
            assert time.monotonic() < deadline, "the other seats never passed"
            await asyncio.sleep(0.001)
        sessions[3].inbox.put_nowait((time.monotonic(), streams[3].held.pop()))
        streams[3].hold = False
        await asyncio.sleep(0)  # one turn of the loop: seat 3's pass task reads it and passes
        assert run.game.hand.phase is Phase.PLAY  # the pass is complete, and nobody told yet
        sessions[0].end(Ending(None, "replaced by a reconnect of the same bot"))
        back = FakeStream("a")
        assert run.resume(run.seats[0], fake_session(back, "s5"))
        record = await asyncio.wait_for(task, GUARD_S)
        assert record.termination is Termination.NORMAL
        told = [
            e.cards_received.hand_number
            for m in back.received
            for e in m.events
            if e.HasField("cards_received")
        ]
        assert told == [0], f"CardsReceived of hand 0 told {len(told)} times"

    on_referee_loop(body)


def test_what_a_bot_sends_after_sitting_down_before_its_first_request_is_not_a_fault() -> None:
    """A second Hello (or any message) sent just after a Welcome arrives once a table has taken
    the session, before the bot was sent anything of the game: sent between games, as far as
    the bot could know, so dropped and logged as at sitting down, not charged as a PROTOCOL
    fault in a game it had not heard of (an audit: 2 tries in 4 against a ladder)."""

    async def body() -> None:
        run, _, sessions = fake_table("early")
        hello = bot_pb.PlayRequest(hello=bot_pb.Hello(bot_name="x", protocol_version=1))
        for session in sessions:  # seated (the run's constructor sat them down), not told
            session.inbox.put_nowait((time.monotonic(), hello))
        record = await asyncio.wait_for(run.run(), GUARD_S)
        assert record.termination is Termination.NORMAL
        assert record.faults == (), record.faults

    on_referee_loop(body)
