"""The referee's small parts: pre-serialised messages, the fallback player, token accounts."""

from __future__ import annotations

import pytest

from arena.cards import parse_cards
from arena.engine import Hand
from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb
from arena.proto.hearts.v1 import events_pb2 as ev_pb
from arena.proto.hearts.v1 import game_pb2 as game_pb
from arena.referee import TokenAccounts, fallback_pass, fallback_play, wire
from arena.referee.accounts import Standing
from arena.rules import Rules


def test_pre_serialised_parts_parse_as_the_whole_message() -> None:
    rules = wire.rules_message(Rules())
    names = ["a", "b", "c", "d"]
    trick = game_pb.Trick(trick_number=0, leader=1, cards=["2C", "3C", "4C", "5C"], winner=3)
    variable = game_pb.PublicState(dealer=2, hand_number=5, hand_points=[0, 1, 0, 13])
    request = bot_pb.DecisionRequest(request_id=7, hand=["QS", "AH"], legal_cards=["QS"])
    events = [
        ev_pb.Event(card_played=ev_pb.CardPlayed(seat=1, card="QS")),
        ev_pb.Event(trick_won=ev_pb.TrickWon(winner=2, cards=["2C", "QS", "3C", "4C"])),
    ]
    state = wire.state_bytes(
        variable, wire.constant_state(rules, names), [wire.trick_entry(trick)] * 2
    )
    joined = wire.response_bytes(
        [wire.event_entry(e) for e in events], wire.request_bytes(request, state)
    )
    whole = bot_pb.PlayResponse(events=events, request=request)
    whole.request.state.CopyFrom(variable)
    whole.request.state.players = 4
    whole.request.state.seat_names.extend(names)
    whole.request.state.rules.CopyFrom(rules)
    whole.request.state.completed_tricks.extend([trick, trick])
    assert bot_pb.PlayResponse.FromString(joined) == whole
    assert bot_pb.PlayResponse.FromString(wire.response_bytes([])) == bot_pb.PlayResponse()


def test_codes_follow_the_card_order() -> None:
    cards = parse_cards("QS 2C AH TD")
    mask = sum(c.bit for c in cards)
    assert wire.codes(mask) == ["2C", "TD", "AH", "QS"]


def test_malformed_bytes_become_a_value() -> None:
    bad = wire.decode_request(b"\xff\xff\xff\xff")
    assert isinstance(bad, wire.Malformed) and bad.size == 4
    good = bot_pb.PlayRequest(goodbye=bot_pb.Goodbye(reason="done"))
    assert wire.decode_request(good.SerializeToString()) == good


def test_the_fallback_plays_the_lowest_legal_cards() -> None:
    assert str(fallback_play(parse_cards("KH 3S 3D AC"))) == "3D"
    hand = Hand.from_hands(
        Rules(),
        [
            "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC",
            "2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD",
            "2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH",
            "2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS AS",
        ],
        pass_direction="left",
    )
    assert [str(c) for c in fallback_pass(hand.hand(3), 3)] == ["2S", "3S", "4S"]
    assert hand.check_pass(3, fallback_pass(hand.hand(3), 3)) is None
    with pytest.raises(ValueError, match="no legal card"):
        fallback_play([])


def test_token_accounts_know_only_their_tokens() -> None:
    accounts, tokens = TokenAccounts.issue_for(["alice", "bob"])
    second = accounts.issue("alice")  # a pool of processes, one name
    alice = accounts.lookup(tokens["alice"])
    assert alice is not None and alice.name == "alice" and alice.status is Standing.ACTIVE
    again = accounts.lookup(second)
    assert again is not None and again.name == "alice"
    assert accounts.lookup("") is None
    assert accounts.lookup(tokens["alice"] + "x") is None
    accounts.ban("bob", "cheating")
    bob = accounts.lookup(tokens["bob"])
    assert bob is not None and bob.status is Standing.BANNED and bob.note == "cheating"
    assert accounts.names == frozenset({"alice", "bob"})
    with pytest.raises(ValueError, match="empty token"):
        accounts.add("", "carol")
