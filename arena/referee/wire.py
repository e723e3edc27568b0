"""From the engine's values to hearts.v1 messages, and the tolerant decoding of bot messages.

Every message a bot receives is built here, from what its seat may know: a seat's view comes from
:meth:`arena.engine.Hand.view`-level facts (its own hand, its own pass) plus public facts (cards
played, tricks, totals). Nothing here reads another seat's cards except :func:`hand_revealed_bytes`,
which is for spectators once a hand is over.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from google.protobuf.descriptor import Descriptor
from google.protobuf.message import DecodeError

from arena import _compiled
from arena.cards import CARD_PADDING, CARDS, Card, Rank
from arena.engine import Hand, HandResult, Phase, Trick, mask_indexes
from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb
from arena.proto.hearts.v1 import events_pb2 as ev_pb
from arena.proto.hearts.v1 import game_pb2 as game_pb
from arena.rules import PassDirection, Rules
from arena.table import Clocks, FaultKind, Termination

__all__ = [
    "CARD_OF",
    "CODES",
    "Malformed",
    "Play",
    "RequestDecoder",
    "card_played",
    "cards_in_hand_field",
    "cards_of",
    "changing_state",
    "codes_of_mask",
    "constant_state",
    "current_trick_field",
    "decision_request",
    "decode_request",
    "encode_response",
    "event_entry",
    "fault_kind",
    "game_id_field",
    "kitty_state",
    "pass_direction",
    "read_play",
    "request_changing",
    "request_fixed",
    "request_response",
    "response_bytes",
    "rules_message",
    "seat_state",
    "state_bytes",
    "termination",
    "trick_entry",
    "trick_message",
    "trick_state",
    "unknown_kind",
]


@dataclass(frozen=True, slots=True)
class Malformed:
    """Bytes from a bot that are not a PlayRequest (kept so the fault can say what arrived)."""

    size: int
    """How many bytes arrived."""
    error: str
    """What the protobuf decoder said."""


@dataclass(frozen=True, slots=True)
class Oversized:
    """Bytes from a bot over the referee's message limit (not parsed)."""

    size: int
    """How many bytes arrived."""


# The module's values are Final throughout: compiled, a Final is a C static, where any other
# module-level name is looked up in the module's dict on every use.

_parse_request: Final = bot_pb.PlayRequest.FromString


def unknown_kind(message: bot_pb.PlayRequest) -> str:
    """A PlayRequest with no kind this referee knows but fields in it, as text (a kind a later
    revision of the protocol may add, which "empty" would misname)."""
    return (
        f"a PlayRequest of no kind this referee knows ({message.ByteSize()} bytes of fields it "
        "does not read: a later revision's?)"
    )


def decode_request(data: bytes) -> bot_pb.PlayRequest | Malformed:
    """Parse a PlayRequest; bad bytes become a :class:`Malformed` value, never an exception.

    A decoding exception inside gRPC would kill the stream; as a value, the table can count a
    MALFORMED fault, play a substitute and keep the bot in its game.
    """
    try:
        return _parse_request(data)
    except DecodeError as e:
        return Malformed(len(data), str(e) or "not a PlayRequest")


class Play:
    """A bot's answer to a play request, read straight from its bytes: a PlayRequest holding
    only a Decision with a request id and a canonical card, in the encoding every protobuf
    library writes for it (fields in order, nothing else).

    Nearly every message a bot sends is one of these. Reading the few bytes here, and the two
    values off a compiled object, costs a fraction of parsing the message into protobuf objects
    and reading it through them. Only a match of the open request is judged from these two
    values (the card is then one the request listed); anything else is judged on
    :meth:`full`, the message as protobuf parses it, which these bytes always equal.
    """

    __slots__ = ("card", "data", "request_id")

    def __init__(self, request_id: int, card: Card, data: bytes) -> None:
        self.request_id = request_id
        self.card = card
        self.data = data

    def full(self) -> bot_pb.PlayRequest:
        """The message, parsed by protobuf."""
        return _parse_request(self.data)


_CARD_OF_BYTES: Final[dict[int, Card]] = {ord(str(c)[0]) << 8 | ord(str(c)[1]): c for c in CARDS}
"""The cards by the two bytes of their canonical code, as one int."""

# PlayRequest{decision{request_id: N, play_card{card: "QS"}}}, field by field: the key of
# PlayRequest.decision (2, length-delimited) and its length; Decision.request_id's key (1,
# varint) and the varint; Decision.play_card's key (3, length-delimited), its length (4);
# PlayCard.card's key (1, length-delimited), its length (2) and the two letters.
_DECISION_KEY: Final = 0x12
_ID_KEY: Final = 0x08
_PLAY_KEY: Final = 0x1A
_CARD_KEY: Final = 0x0A
_PLAY_TAIL: Final = 6
"""The bytes after the request id: play_card's key and length, card's key and length, code."""


def read_play(data: bytes) -> Play | None:
    """The answer in ``data`` if it is a play in the canonical encoding (:class:`Play`), else
    None (to be parsed by protobuf)."""
    n = len(data)
    if n < 10 or n > 19 or data[0] != _DECISION_KEY or data[1] != n - 2 or data[2] != _ID_KEY:
        return None
    value = 0
    shift = 0
    i = 3
    while True:
        b = data[i]
        value |= (b & 0x7F) << shift
        i += 1
        if b < 0x80:
            break
        shift += 7
        if i >= n - _PLAY_TAIL:
            return None
    if (
        i != n - _PLAY_TAIL
        or data[i] != _PLAY_KEY
        or data[i + 1] != 4
        or data[i + 2] != _CARD_KEY
        or data[i + 3] != 2
    ):
        return None
    card = _CARD_OF_BYTES.get(data[i + 4] << 8 | data[i + 5])
    if card is None:
        return None
    return Play(value, card, data)


class RequestDecoder:
    """The Play stream's request deserializer for gRPC: a message over ``limit`` bytes becomes
    an :class:`Oversized` value (not parsed), a canonical play a :class:`Play`, anything else
    goes through :func:`decode_request`. A compiled class rather than a closure: gRPC calls it
    for every message a bot sends."""

    __slots__ = ("limit",)

    def __init__(self, limit: int) -> None:
        self.limit = limit

    def __call__(self, data: bytes) -> bot_pb.PlayRequest | Play | Malformed | Oversized:
        """Decode one message."""
        if len(data) > self.limit:
            return Oversized(len(data))
        play = read_play(data)
        if play is not None:
            return play
        return decode_request(data)


def encode_response(message: bot_pb.PlayResponse | bytes) -> bytes:
    """Serialise a PlayResponse (bytes pass through: pre-serialised responses)."""
    if isinstance(message, bytes):
        return message
    return message.SerializeToString()


def cards_of(cards: Iterable[Card]) -> list[str]:
    """Card codes, in the order given."""
    return [CODES[c.index] for c in cards]


CODES: Final[tuple[str, ...]] = tuple(str(c) for c in CARDS)
"""Card codes by :attr:`Card.index`."""


def codes_of_mask(mask: int) -> tuple[str, ...]:
    """The codes of the cards in a bit mask, in index order."""
    return tuple([CODES[i] for i in mask_indexes(mask)])


CARD_OF: Final[dict[str, Card]] = {str(c): c for c in CARDS}
"""Cards by their exact two-character code (what a well-behaved bot sends; anything else goes
through :func:`card_spelled`)."""


def _spellings() -> dict[str, Card]:
    out: dict[str, Card] = {}
    for card in CARDS:
        ranks = {card.rank.letter, card.rank.letter.lower()}
        if card.rank is Rank.TEN:
            ranks |= {"10"}
        for rank in ranks:
            for suit in (card.suit.letter, card.suit.letter.lower()):
                out[rank + suit] = card
    return out


CARD_SPELLINGS: Final[dict[str, Card]] = _spellings()
"""Every spelling of a card that an answer may use, as the .proto and the protocol guide list
them: the code the referee sends ("QS", "TH"), each letter in either case ("qs", "Qs", "th"),
and "10" for the ten ("10H", "10h"). A closed list, so that what a bot may send is said in full
(:meth:`Card.parse` takes the same, the padding :data:`arena.cards.CARD_PADDING` around it)."""
CARD_FORM: Final = "expected rank then suit, like 'QS', 'TH' or '2C'"
"""How a refusal says what a card looks like."""


def card_spelled(text: str) -> Card | None:
    """The card an answer names in one of :data:`CARD_SPELLINGS`, or None (not a card)."""
    return CARD_SPELLINGS.get(text.strip(CARD_PADDING))


# ---- pre-serialised messages ---------------------------------------------------------------------
#
# A message a bot receives is mostly parts that do not change from one request to the next (the
# rules, the seat names, the tricks already taken) or that every seat receives alike (a card
# played). Protobuf's encoding of a message is the concatenation of the encodings of its fields,
# so such parts are serialised once and joined as bytes: a length-delimited field is its key,
# the payload's length as a varint, and the payload. The bots parse the same messages as if they
# had been built whole.

_MASK64: Final = (1 << 64) - 1


def _encode_varint(value: int) -> bytes:
    value &= _MASK64  # a negative int32 is sent as its 64-bit two's complement, as protobuf does
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_SMALL_VARINTS: Final = tuple(_encode_varint(v) for v in range(1 << 14))
"""Varints of the values that occur on every request (lengths, seats, counts, ids up to 16383),
encoded once."""


_LOW_HALVES: Final = tuple(bytes((v & 0x7F | 0x80, v >> 7 | 0x80)) for v in range(1 << 14))
"""The first two bytes of a three-byte varint, by the value's low 14 bits."""


def _varint(value: int) -> bytes:
    if 0 <= value < 1 << 14:
        return _SMALL_VARINTS[value]
    if 0 <= value < 1 << 21:
        # Three bytes: request ids past 16383, and deadlines and banks in milliseconds (a
        # request carries three such values; the general loop costs several times as much,
        # and bytes() of a tuple of the three twice as much).
        return _LOW_HALVES[value & 0x3FFF] + _SMALL_VARINTS[value >> 14]
    return _encode_varint(value)


def _key(descriptor: Descriptor, name: str) -> bytes:
    """The key of a length-delimited field (wire type 2)."""
    return _varint(descriptor.fields_by_name[name].number << 3 | 2)


def _tag(descriptor: Descriptor, name: str) -> bytes:
    """The key of a varint field (wire type 0)."""
    return _varint(descriptor.fields_by_name[name].number << 3)


_EVENTS: Final = _key(bot_pb.PlayResponse.DESCRIPTOR, "events")
_REQUEST: Final = _key(bot_pb.PlayResponse.DESCRIPTOR, "request")
_STATE: Final = _key(bot_pb.DecisionRequest.DESCRIPTOR, "state")
_TRICKS: Final = _key(game_pb.PublicState.DESCRIPTOR, "completed_tricks")


def _field(key: bytes, payload: bytes) -> bytes:
    return key + _varint(len(payload)) + payload


def event_entry(event: ev_pb.Event | bytes) -> bytes:
    """An event (or a serialised one), encoded as one entry of PlayResponse.events."""
    return _field(_EVENTS, event if isinstance(event, bytes) else event.SerializeToString())


def trick_entry(trick: game_pb.Trick) -> bytes:
    """A completed trick, encoded as one entry of PublicState.completed_tricks."""
    return _field(_TRICKS, trick.SerializeToString())


def constant_state(
    rules: game_pb.Rules, seat_names: Sequence[str], max_hands: int | None = None
) -> bytes:
    """The fields of PublicState that stay the same for a whole game (``max_hands`` None: no
    limit but the target)."""
    return game_pb.PublicState(
        players=len(seat_names), seat_names=seat_names, rules=rules, max_hands=max_hands or 0
    ).SerializeToString()


def state_bytes(variable: bytes, constant: bytes, tricks: Sequence[bytes]) -> bytes:
    """A PublicState: the fields that change, the constant ones, the completed tricks."""
    return variable + constant + b"".join(tricks)


def response_bytes(events: Sequence[bytes], request: bytes | None = None) -> bytes:
    """A PlayResponse carrying event entries and, optionally, a request."""
    if request is None:
        return b"".join(events)
    return request_response(list(events), request)


def request_response(events: list[bytes], request: bytes) -> bytes:
    """:func:`response_bytes` of the events and a request, joined at once: a table's message
    for every decision. It takes ``events`` over (the request's parts are added to it)."""
    events.append(_REQUEST)
    events.append(_varint(len(request)))
    events.append(request)
    return b"".join(events)


# ---- the decision request, encoded field by field -------------------------------------------
#
# A request is built for every decision, so its fields are written straight into bytes rather
# than through a message object (building and serialising a DecisionRequest and its PublicState
# cost more than the rest of a decision's handling). The fields follow the .proto's numbers;
# tests/test_referee_units.py checks that what the bots parse equals the message built whole.

_DR: Final = bot_pb.DecisionRequest.DESCRIPTOR
_PS: Final = game_pb.PublicState.DESCRIPTOR
_TR: Final = game_pb.Trick.DESCRIPTOR
_R_ID: Final = _tag(_DR, "request_id")
_R_KIND: Final = _tag(_DR, "kind")
_R_HAND_NO: Final = _tag(_DR, "hand_number")
_R_TRICK: Final = _tag(_DR, "trick_number")
_R_SEAT: Final = _tag(_DR, "your_seat")
_R_PASS_COUNT: Final = _tag(_DR, "pass_count")
_R_PASS_DIR: Final = _tag(_DR, "pass_direction")
_R_PASS_TO: Final = _tag(_DR, "pass_to_seat")
_R_DEADLINE: Final = _tag(_DR, "move_deadline_ms")
_R_BANK: Final = _tag(_DR, "time_bank_ms")
_R_GAME: Final = _key(_DR, "game_id")
_S_POINTS: Final = _key(_PS, "hand_points")
_S_IN_HAND: Final = _key(_PS, "cards_in_hand")
_S_FORFEITED: Final = _key(_PS, "forfeited")
_S_BROKEN: Final = _tag(_PS, "hearts_broken")
_S_FIRST: Final = _tag(_PS, "first_trick")
_S_CURRENT: Final = _key(_PS, "current_trick")
_T_NUMBER: Final = _tag(_TR, "trick_number")
_T_LEADER: Final = _tag(_TR, "leader")


def _uint(tag: bytes, value: int) -> bytes:
    """A varint field; proto3 leaves a zero out."""
    return tag + _varint(value) if value else b""


_UINTS_CACHED: Final = 256


def _uint_table(tag: bytes) -> tuple[bytes, ...]:
    """:func:`_uint`'s fields of the values below 256, for :func:`_small`."""
    return tuple(_uint(tag, v) for v in range(_UINTS_CACHED))


def _small(table: tuple[bytes, ...], tag: bytes, value: int) -> bytes:
    """``_uint(tag, value)``, from ``table`` (:func:`_uint_table` of ``tag``) for the small values
    that hand, trick and seat numbers are: a lookup instead of a concatenation."""
    return table[value] if 0 <= value < _UINTS_CACHED else _uint(tag, value)


def _packed(key: bytes, values: Iterable[int]) -> bytes:
    """A packed repeated varint field; an empty list is left out."""
    payload = b"".join([_varint(v) for v in values])
    return key + _varint(len(payload)) + payload if payload else b""


def _card_entries(key: bytes) -> tuple[bytes, ...]:
    """The entries of a repeated (or single) card field for each card, by card index."""
    return tuple(key + _varint(len(code)) + code.encode() for code in CODES)


_CHUNK: Final = 13
_CHUNK_BITS: Final = (1 << _CHUNK) - 1


class _CardField:
    """One repeated card field (``repeated string``): its entries by card index, and the
    entries of a bit mask in index order.

    A mask is encoded a suit-sized chunk of bits at a time, each chunk's bytes cached: a hand
    changes by one card per trick, so the same chunks come back on request after request. The
    caches are lists indexed by the chunk's bits (a dict would box each chunk's int to hash it).
    """

    __slots__ = ("_chunks", "entries")

    def __init__(self, key: bytes) -> None:
        self.entries = _card_entries(key)
        self._chunks: list[list[bytes | None]] = [
            [None] * (1 << _CHUNK) for _ in range(0, len(CODES), _CHUNK)
        ]

    def of_mask(self, mask: int) -> bytes:
        """The entries of the cards in ``mask``, in index order."""
        out = b""
        chunk = 0
        while mask:
            bits = mask & _CHUNK_BITS
            if bits:
                cache = self._chunks[chunk]
                piece = cache[bits]
                if piece is None:
                    piece = cache[bits] = self._encode(chunk, bits)
                out += piece
            mask >>= _CHUNK
            chunk += 1
        return out

    def _encode(self, chunk: int, bits: int) -> bytes:
        out = []
        base = chunk * _CHUNK
        while bits:
            low = bits & -bits
            out.append(self.entries[base + low.bit_length() - 1])
            bits ^= low
        return b"".join(out)


_R_HAND_CARDS: Final = _CardField(_key(_DR, "hand"))
_R_LEGAL_CARDS: Final = _CardField(_key(_DR, "legal_cards"))
_T_CARDS: Final = _card_entries(_key(_TR, "cards"))
_R_TRICKS: Final = _uint_table(_R_TRICK)
_T_NUMBERS: Final = _uint_table(_T_NUMBER)
_T_LEADERS: Final = _uint_table(_T_LEADER)


def game_id_field(game_id: str) -> bytes:
    """DecisionRequest.game_id, encoded once per game."""
    return _field(_R_GAME, game_id.encode())


def request_fixed(
    *,
    kind: bot_pb.DecisionKind.ValueType,
    game_id: bytes,
    hand_number: int,
    seat: int,
    pass_count: int = 0,
    direction: PassDirection | None = None,
    pass_to: int = 0,
) -> bytes:
    """The fields of a DecisionRequest that stay the same for a seat's decisions of one kind
    in one hand: ``game_id`` from :func:`game_id_field`; the pass fields only for a pass."""
    return b"".join(
        (
            _uint(_R_KIND, kind),
            game_id,
            _uint(_R_HAND_NO, hand_number),
            _uint(_R_SEAT, seat),
            _uint(_R_PASS_COUNT, pass_count),
            b"" if direction is None else _uint(_R_PASS_DIR, pass_direction(direction)),
            _uint(_R_PASS_TO, pass_to),
        )
    )


def request_changing(
    fixed: bytes,
    *,
    request_id: int,
    trick_number: int,
    held: int,
    legal: int,
    deadline_ms: int,
    bank_ms: int,
    state: bytes,
) -> bytes:
    """A DecisionRequest: the ``fixed`` part from :func:`request_fixed`, then the fields that
    change from one request to the next (cards as bit masks, zeros left out as proto3 does)."""
    # One join, not a chain of concatenations (each a new bytes object): a request is built for
    # every decision. A zero is left out, tag and all.
    return b"".join(
        (
            _R_ID if request_id else b"",
            _varint(request_id) if request_id else b"",
            fixed,
            _small(_R_TRICKS, _R_TRICK, trick_number),
            _R_HAND_CARDS.of_mask(held),
            _R_LEGAL_CARDS.of_mask(legal),
            _R_DEADLINE if deadline_ms else b"",
            _varint(deadline_ms) if deadline_ms else b"",
            _R_BANK if bank_ms else b"",
            _varint(bank_ms) if bank_ms else b"",
            _STATE,
            _varint(len(state)),
            state,
        )
    )


def decision_request(
    *,
    kind: bot_pb.DecisionKind.ValueType,
    request_id: int,
    game_id: bytes,
    hand_number: int,
    trick_number: int,
    seat: int,
    held: int,
    legal: int,
    deadline_ms: int,
    bank_ms: int,
    state: bytes,
    pass_count: int = 0,
    direction: PassDirection | None = None,
    pass_to: int = 0,
) -> bytes:
    """A whole DecisionRequest: :func:`request_fixed`'s fields and :func:`request_changing`'s."""
    fixed = request_fixed(
        kind=kind,
        game_id=game_id,
        hand_number=hand_number,
        seat=seat,
        pass_count=pass_count,
        direction=direction,
        pass_to=pass_to,
    )
    return request_changing(
        fixed,
        request_id=request_id,
        trick_number=trick_number,
        held=held,
        legal=legal,
        deadline_ms=deadline_ms,
        bank_ms=bank_ms,
        state=state,
    )


def current_trick_field(number: int, leader: int, cards: Sequence[int]) -> bytes:
    """PublicState.current_trick: the trick being played (cards as indexes, in play order)."""
    parts = [
        _S_CURRENT,
        b"",  # the length, below
        _small(_T_NUMBERS, _T_NUMBER, number),
        _small(_T_LEADERS, _T_LEADER, leader),
    ]
    for c in cards:
        parts.append(_T_CARDS[c])
    size = 0
    for part in parts:
        size += len(part)
    parts[1] = _varint(size - len(_S_CURRENT))
    return b"".join(parts)


def trick_state(
    *,
    hand_points: Sequence[int],
    hearts_broken: bool,
    first_trick: bool,
    forfeited: Sequence[bool],
) -> bytes:
    """The PublicState fields that change at most a few times a trick."""
    return b"".join(
        (
            _packed(_S_POINTS, hand_points),
            _uint(_S_BROKEN, hearts_broken),
            _uint(_S_FIRST, first_trick),
            _packed(_S_FORFEITED, forfeited),
        )
    )


def cards_in_hand_field(counts: Sequence[int]) -> bytes:
    """PublicState.cards_in_hand."""
    return _packed(_S_IN_HAND, counts)


_S_DEALER: Final = _tag(_PS, "dealer")
_S_HAND_NO: Final = _tag(_PS, "hand_number")
_S_TOTALS: Final = _key(_PS, "game_totals")
_S_PASS_DIR: Final = _tag(_PS, "pass_direction")
_S_PASSED: Final = _card_entries(_key(_PS, "passed_cards"))
_S_PASSED_TO: Final = _tag(_PS, "passed_to_seat")
_S_RECEIVED: Final = _card_entries(_key(_PS, "received_cards"))
_S_RECEIVED_FROM: Final = _tag(_PS, "received_from_seat")
_S_KITTY: Final = _card_entries(_key(_PS, "kitty_cards"))
_PHASE_PASS: Final = Phase.PASS
_HOLD: Final = PassDirection.HOLD


def kitty_state(kitty: Sequence[int]) -> bytes:
    """PublicState.kitty_cards: the kitty (cards by index), once the first trick has shown it."""
    return b"".join([_S_KITTY[i] for i in kitty])


def seat_state(hand: Hand, number: int, seat: int, totals: Sequence[int]) -> bytes:
    """The PublicState fields that stay the same for a phase of a hand: the dealer, the hand's
    number, the game totals and the seat's own pass (its cards once the exchange is made), in
    field order, as the message serialises (once per seat and phase of a hand)."""
    direction = hand.pass_direction
    exchanged = hand.phase is not _PHASE_PASS and direction is not _HOLD
    return b"".join(
        (
            _uint(_S_DEALER, hand.dealer),
            _uint(_S_HAND_NO, number),
            _packed(_S_TOTALS, totals),
            _uint(_S_PASS_DIR, pass_direction(direction)),
            _mask_entries(_S_PASSED, hand.passed_mask(seat)) if exchanged else b"",
            _uint(_S_PASSED_TO, hand.pass_target(seat)),
            _mask_entries(_S_RECEIVED, hand.received_mask(seat)) if exchanged else b"",
            _uint(_S_RECEIVED_FROM, source_of_pass(hand, seat)),
        )
    )


def changing_state(
    *,
    hand_points: Sequence[int],
    cards_in_hand: Sequence[int],
    hearts_broken: bool,
    first_trick: bool,
    forfeited: Sequence[bool],
    current_trick: bytes,
) -> bytes:
    """The PublicState fields that change within a hand (``current_trick`` may be empty)."""
    trick = trick_state(
        hand_points=hand_points,
        hearts_broken=hearts_broken,
        first_trick=first_trick,
        forfeited=forfeited,
    )
    return current_trick + trick + cards_in_hand_field(cards_in_hand)


_PASS_DIRECTIONS: Final = {
    d: game_pb.PassDirection.Value("PASS_DIRECTION_" + d.name) for d in PassDirection
}


def pass_direction(direction: PassDirection) -> game_pb.PassDirection.ValueType:
    """The proto value of a pass direction."""
    return _PASS_DIRECTIONS[direction]


def fault_kind(kind: FaultKind) -> ev_pb.FaultKind.ValueType:
    """The proto value of a fault kind."""
    return ev_pb.FaultKind.Value("FAULT_KIND_" + kind.name)


def termination(value: Termination) -> ev_pb.Termination.ValueType:
    """The proto value of a termination."""
    return ev_pb.Termination.Value("TERMINATION_" + value.name)


def rules_message(rules: Rules) -> game_pb.Rules:
    """The rules as sent to bots, every list resolved, with the complete rules as JSON."""
    return game_pb.Rules(
        players=rules.players,
        removed_cards=cards_of(rules.removed),
        kitty=rules.kitty,
        pass_count=rules.pass_count,
        # With nothing passed every hand is a hold hand: the cycle in force is that one.
        pass_cycle=[pass_direction(d) for d in (rules.cycle if rules.pass_count else (_HOLD,))],
        first_lead=game_pb.FirstLead.Value("FIRST_LEAD_" + rules.first_lead.name),
        penalty_on_first_trick=rules.penalty_on_first_trick,
        queen_breaks_hearts=rules.queen_breaks_hearts,
        must_break_hearts=rules.must_break_hearts,
        lead_hearts_with_queen=rules.lead_hearts_with_queen,
        queen_penalty=rules.queen_penalty,
        jack_of_diamonds=rules.jack_of_diamonds,
        spot_hearts=rules.spot_hearts,
        moon=game_pb.MoonRule.Value("MOON_RULE_" + rules.moon.name),
        moon_points=rules.moon_value,
        sun=rules.sun,
        no_tricks_bonus=rules.no_tricks_bonus,
        target=rules.target,
        game_end=game_pb.GameEnd.Value("GAME_END_" + rules.game_end.name),
        settling=game_pb.Settling.Value("SETTLING_" + rules.settling.name),
        hand_size=rules.hand_size,
        kitty_size=rules.kitty_size,
        rules_json=json.dumps(rules.to_dict(), sort_keys=True),
    )


def trick_points(rules: Rules, cards: Sequence[Card], kitty: Sequence[Card] = ()) -> int:
    """Points a trick is worth to its winner (with the kitty, on the trick that takes it)."""
    return sum(rules.card_points(c) for c in cards) + sum(rules.card_points(c) for c in kitty)


def trick_message(rules: Rules, trick: Trick, kitty: Sequence[Card] = ()) -> game_pb.Trick:
    """A completed or in-progress trick."""
    message = game_pb.Trick(
        trick_number=trick.number, leader=trick.leader, cards=cards_of(trick.cards)
    )
    if trick.winner is not None:
        message.winner = trick.winner
        message.points = trick_points(rules, trick.cards, kitty)
    return message


def clock_settings(clocks: Clocks) -> ev_pb.ClockSettings:
    """The clocks of a game, as announced in GameStarted."""
    return ev_pb.ClockSettings(move_time_ms=clocks.move_ms, time_bank_ms=clocks.bank_ms)


def hand_started(hand: Hand, number: int) -> ev_pb.Event:
    """The public start of a hand (no cards)."""
    count = 0 if hand.pass_direction is PassDirection.HOLD else hand.rules.pass_count
    return ev_pb.Event(
        hand_started=ev_pb.HandStarted(
            hand_number=number,
            dealer=hand.dealer,
            pass_direction=pass_direction(hand.pass_direction),
            pass_count=count,
        )
    )


def cards_dealt(hand: Hand, number: int, seat: int) -> ev_pb.Event:
    """One seat's own deal (private)."""
    return ev_pb.Event(
        cards_dealt=ev_pb.CardsDealt(hand_number=number, cards=cards_of(hand.dealt(seat)))
    )


def source_of_pass(hand: Hand, seat: int) -> int:
    """The seat whose pass ``seat`` receives."""
    n = hand.players
    return (seat - hand.pass_direction.offset(n)) % n


def cards_received(hand: Hand, number: int, seat: int) -> ev_pb.Event:
    """One seat's own pass, given and got (private)."""
    return ev_pb.Event(
        cards_received=ev_pb.CardsReceived(
            hand_number=number,
            from_seat=source_of_pass(hand, seat),
            cards=cards_of(hand.received(seat) or ()),
            passed_to_seat=hand.pass_target(seat),
            passed_cards=cards_of(hand.passed(seat) or ()),
        )
    )


_CP: Final = ev_pb.CardPlayed.DESCRIPTOR
_CP_HAND: Final = _tag(_CP, "hand_number")
_CP_TRICK: Final = _tag(_CP, "trick_number")
_CP_SEAT: Final = _tag(_CP, "seat")
_CP_CARD: Final = _card_entries(_key(_CP, "card"))
_E_CARD_PLAYED: Final = _key(ev_pb.Event.DESCRIPTOR, "card_played")


_CP_HANDS: Final = _uint_table(_CP_HAND)
_CP_TRICKS: Final = _uint_table(_CP_TRICK)
_CP_SEATS: Final = _uint_table(_CP_SEAT)


def card_played(number: int, trick: int, seat: int, card: Card) -> bytes:
    """A card on the table (public), as a serialised Event (one per card: encoded directly)."""
    hand_field = _small(_CP_HANDS, _CP_HAND, number)
    trick_field = _small(_CP_TRICKS, _CP_TRICK, trick)
    seat_field = _small(_CP_SEATS, _CP_SEAT, seat)
    card_field = _CP_CARD[card.index]
    size = len(hand_field) + len(trick_field) + len(seat_field) + len(card_field)
    return b"".join(
        (_E_CARD_PLAYED, _varint(size), hand_field, trick_field, seat_field, card_field)
    )


# The hand's own events, encoded directly too: a table sends one CardsDealt and one CardsReceived
# per seat and publishes one HandRevealed a hand (the checker builds the first two as messages:
# cards_dealt and cards_received below).
_CD: Final = ev_pb.CardsDealt.DESCRIPTOR
_CD_HAND: Final = _tag(_CD, "hand_number")
_CD_CARDS: Final = _card_entries(_key(_CD, "cards"))
_E_CARDS_DEALT: Final = _key(ev_pb.Event.DESCRIPTOR, "cards_dealt")
_CR: Final = ev_pb.CardsReceived.DESCRIPTOR
_CR_HAND: Final = _tag(_CR, "hand_number")
_CR_FROM: Final = _tag(_CR, "from_seat")
_CR_TO: Final = _tag(_CR, "passed_to_seat")
_CR_CARDS: Final = _card_entries(_key(_CR, "cards"))
_CR_PASSED: Final = _card_entries(_key(_CR, "passed_cards"))
_E_CARDS_RECEIVED: Final = _key(ev_pb.Event.DESCRIPTOR, "cards_received")
_SC: Final = ev_pb.SeatCards.DESCRIPTOR
_SC_SEAT: Final = _tag(_SC, "seat")
_SC_CARDS: Final = _card_entries(_key(_SC, "cards"))
_HR: Final = ev_pb.HandRevealed.DESCRIPTOR
_HR_HAND: Final = _tag(_HR, "hand_number")
_HR_DEALT: Final = _key(_HR, "dealt")
_HR_PASSED: Final = _key(_HR, "passed")
_HR_KITTY: Final = _card_entries(_key(_HR, "kitty"))
_E_HAND_REVEALED: Final = _key(ev_pb.Event.DESCRIPTOR, "hand_revealed")


def _entries(table: tuple[bytes, ...], cards: Iterable[Card]) -> bytes:
    return b"".join([table[c.index] for c in cards])


def _mask_entries(table: tuple[bytes, ...], mask: int) -> bytes:
    return b"".join([table[i] for i in mask_indexes(mask)])


def cards_dealt_entry(hand: Hand, number: int, seat: int) -> bytes:
    """:func:`cards_dealt`, encoded directly as a PlayResponse.events entry."""
    body = _uint(_CD_HAND, number) + _mask_entries(_CD_CARDS, hand.dealt_mask(seat))
    return event_entry(_field(_E_CARDS_DEALT, body))


def cards_received_entry(hand: Hand, number: int, seat: int) -> bytes:
    """:func:`cards_received`, encoded directly as a PlayResponse.events entry."""
    body = b"".join(
        (
            _uint(_CR_HAND, number),
            _uint(_CR_FROM, source_of_pass(hand, seat)),
            _mask_entries(_CR_CARDS, hand.received_mask(seat)),
            _uint(_CR_TO, hand.pass_target(seat)),
            _mask_entries(_CR_PASSED, hand.passed_mask(seat)),
        )
    )
    return event_entry(_field(_E_CARDS_RECEIVED, body))


def hand_revealed_bytes(hand: Hand, number: int) -> bytes:
    """Every seat's deal and pass, for spectators once the hand is over (a serialised Event)."""
    seats = range(hand.players)
    dealt = [_uint(_SC_SEAT, s) + _mask_entries(_SC_CARDS, hand.dealt_mask(s)) for s in seats]
    passed = [_uint(_SC_SEAT, s) + _mask_entries(_SC_CARDS, hand.passed_mask(s)) for s in seats]
    body = b"".join(
        (
            _uint(_HR_HAND, number),
            *[_field(_HR_DEALT, d) for d in dealt],
            *[_field(_HR_PASSED, p) for p in passed],
            _entries(_HR_KITTY, hand.kitty),
        )
    )
    return _field(_E_HAND_REVEALED, body)


_TW: Final = ev_pb.TrickWon.DESCRIPTOR
_TW_HAND: Final = _tag(_TW, "hand_number")
_TW_TRICK: Final = _tag(_TW, "trick_number")
_TW_LEADER: Final = _tag(_TW, "leader")
_TW_WINNER: Final = _tag(_TW, "winner")
_TW_POINTS: Final = _tag(_TW, "points")
_TW_CARDS: Final = _card_entries(_key(_TW, "cards"))
_TW_KITTY: Final = _card_entries(_key(_TW, "kitty_cards"))
_E_TRICK_WON: Final = _key(ev_pb.Event.DESCRIPTOR, "trick_won")
_T_WINNER: Final = _tag(_TR, "winner")
_T_POINTS: Final = _tag(_TR, "points")
_TW_HANDS: Final = _uint_table(_TW_HAND)
_TW_TRICKS: Final = _uint_table(_TW_TRICK)
_TW_LEADERS: Final = _uint_table(_TW_LEADER)
_TW_WINNERS: Final = _uint_table(_TW_WINNER)


def trick_taken(
    number: int,
    trick_number: int,
    leader: int,
    cards: Sequence[int],
    winner: int,
    points: int,
    kitty: Sequence[int] = (),
) -> tuple[bytes, bytes]:
    """A trick just taken (cards by index), encoded directly: its PublicState.completed_tricks
    entry and its TrickWon event (serialised), the same as :func:`trick_message` and
    :func:`trick_won` build through message objects, at a fraction of the cost (once a trick)."""
    trick = [_small(_T_NUMBERS, _T_NUMBER, trick_number), _small(_T_LEADERS, _T_LEADER, leader)]
    won = [
        _small(_TW_HANDS, _TW_HAND, number),
        _small(_TW_TRICKS, _TW_TRICK, trick_number),
        _small(_TW_LEADERS, _TW_LEADER, leader),
    ]
    for c in cards:
        trick.append(_T_CARDS[c])
        won.append(_TW_CARDS[c])
    trick.append(_T_WINNER)
    trick.append(_varint(winner))
    trick.append(_uint(_T_POINTS, points))
    won.append(_small(_TW_WINNERS, _TW_WINNER, winner))
    won.append(_uint(_TW_POINTS, points))
    for c in kitty:
        won.append(_TW_KITTY[c])
    return _field(_TRICKS, b"".join(trick)), _field(_E_TRICK_WON, b"".join(won))


def trick_won(rules: Rules, number: int, trick: Trick, kitty: Sequence[Card]) -> ev_pb.Event:
    """A trick taken (public); the kitty, if any, shows on the trick that takes it."""
    return ev_pb.Event(
        trick_won=ev_pb.TrickWon(
            hand_number=number,
            trick_number=trick.number,
            leader=trick.leader,
            cards=cards_of(trick.cards),
            winner=trick.winner if trick.winner is not None else 0,
            points=trick_points(rules, trick.cards, kitty),
            kitty_cards=cards_of(kitty),
        )
    )


def hand_ended(number: int, result: HandResult, totals: Sequence[int]) -> ev_pb.Event:
    """A hand scored (public)."""
    message = ev_pb.HandEnded(
        hand_number=number,
        points_taken=list(result.taken_points),
        hand_scores=list(result.points),
        game_totals=list(totals),
        sun=result.sun,
    )
    if result.moon is not None:
        message.moon_shooter = result.moon
    return ev_pb.Event(hand_ended=message)


# ---- the compiled build (setup.py compiles this module with mypyc; see arena._compiled) ------

_BUILT_FROM = ""
COMPILED, BUILD = _compiled.guard(globals(), _BUILT_FROM)
