"""The referee's direct read of a bot's play (wire.read_play) against protobuf's own parse.

The referee judges the common answer (a play in the canonical encoding) from two values read
straight off its bytes; these tests hold that reading to what protobuf makes of the same bytes,
and check that every other encoding is left to protobuf.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arena.cards import CARDS
from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb
from arena.referee import wire

LIMIT = 1 << 20


def play_bytes(request_id: int, card: str) -> bytes:
    """A play as a protobuf library writes it."""
    decision = bot_pb.Decision(request_id=request_id, play_card=bot_pb.PlayCard(card=card))
    return bot_pb.PlayRequest(decision=decision).SerializeToString()


@given(
    request_id=st.integers(min_value=1, max_value=(1 << 64) - 1),
    card=st.sampled_from(CARDS),
)
def test_a_canonical_play_reads_as_protobuf_parses_it(request_id: int, card: object) -> None:
    data = play_bytes(request_id, str(card))
    play = wire.RequestDecoder(LIMIT)(data)
    assert isinstance(play, wire.Play)
    parsed = bot_pb.PlayRequest.FromString(data)
    assert play.request_id == parsed.decision.request_id == request_id
    assert str(play.card) == parsed.decision.play_card.card
    assert play.full() == parsed


@pytest.mark.parametrize(
    ("what", "data"),
    [
        ("request id 0 (left out of the bytes)", play_bytes(0, "QS")),
        ("a lower-case card", play_bytes(5, "qs")),
        ("a ten spelt 10", play_bytes(5, "10H")),
        ("not a card", play_bytes(5, "ZZ")),
        ("an empty card", play_bytes(5, "")),
        (
            "a pass",
            bot_pb.PlayRequest(
                decision=bot_pb.Decision(request_id=5, pass_cards=bot_pb.PassCards(cards=["QS"]))
            ).SerializeToString(),
        ),
        ("a Hello", bot_pb.PlayRequest(hello=bot_pb.Hello(bot_name="x")).SerializeToString()),
        ("fields out of order", b"\x12\x08" + b"\x1a\x04\x0a\x02QS" + b"\x08\x05"),
        ("an unknown field after", b"\x12\x0a" + b"\x08\x05\x1a\x04\x0a\x02QS" + b"\x20\x01"),
        ("a second decision after", play_bytes(5, "QS") + play_bytes(6, "AS")),
        ("a truncated message", play_bytes(5, "QS")[:-1]),
        ("one byte", b"\x12"),
        ("nothing", b""),
    ],
)
def test_anything_else_is_left_to_protobuf(what: str, data: bytes) -> None:
    assert wire.read_play(data) is None, what
    decoded = wire.RequestDecoder(LIMIT)(data)
    assert not isinstance(decoded, wire.Play)
    try:
        expected: object = bot_pb.PlayRequest.FromString(data)
    except Exception:  # protobuf refuses it: the decoder says so as a value
        assert isinstance(decoded, wire.Malformed), what
    else:
        assert decoded == expected, what


@st.composite
def near_plays(draw: st.DrawFn) -> bytes:
    """A canonical play with one byte changed, inserted or removed."""
    data = bytearray(play_bytes(draw(st.integers(1, 1 << 40)), str(draw(st.sampled_from(CARDS)))))
    at = draw(st.integers(0, len(data)))
    how = draw(st.sampled_from(["change", "insert", "remove"]))
    byte = draw(st.integers(0, 255))
    if how == "insert":
        data.insert(at, byte)
    elif at < len(data):
        if how == "change":
            data[at] = byte
        else:
            del data[at]
    return bytes(data)


@given(near_plays())
def test_bytes_read_as_a_play_parse_to_that_same_play(data: bytes) -> None:
    play = wire.read_play(data)
    if play is None:
        return
    parsed = bot_pb.PlayRequest.FromString(data)
    assert parsed.decision.request_id == play.request_id
    assert parsed.decision.play_card.card == str(play.card)
    assert parsed == bot_pb.PlayRequest(
        decision=bot_pb.Decision(
            request_id=play.request_id, play_card=bot_pb.PlayCard(card=str(play.card))
        )
    )
