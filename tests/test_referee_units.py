"""The referee's small parts: pre-serialised messages, the fallback player, token accounts."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import threading
import warnings
from collections.abc import Callable, Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.cards import CARDS, Card, cards_from_mask, parse_cards
from arena.engine import Hand, Phase
from arena.errors import ConfigError
from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb
from arena.proto.hearts.v1 import events_pb2 as ev_pb
from arena.proto.hearts.v1 import game_pb2 as game_pb
from arena.referee import (
    Referee,
    RefereeConfig,
    RefereeThread,
    TokenAccounts,
    fallback_pass,
    fallback_play,
    wire,
)
from arena.referee.accounts import BotIdentity, Standing, token_key
from arena.referee.config import TlsConfig
from arena.rules import PRESETS, PassDirection, Rules, preset
from arena.table import TableSpec


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_the_rules_message_sends_the_pass_cycle_in_force(name: str) -> None:
    rules = preset(name)
    sent = [PassDirection[game_pb.PassDirection.Name(d).removeprefix("PASS_DIRECTION_")]
            for d in wire.rules_message(rules).pass_cycle]  # fmt: skip
    # hand n passes pass_cycle[n % len(pass_cycle)], as game.proto says: a hold hand every hand
    # when nothing is passed.
    assert [sent[n % len(sent)] for n in range(12)] == [rules.pass_direction(n) for n in range(12)]


def test_pre_serialised_parts_parse_as_the_whole_message() -> None:
    rules = wire.rules_message(Rules())
    names = ["a", "b", "c", "d"]
    trick = game_pb.Trick(trick_number=0, leader=1, cards=["2C", "3C", "4C", "5C"], winner=3)
    events = [
        ev_pb.Event(card_played=ev_pb.CardPlayed(seat=1, card="QS")),
        ev_pb.Event(trick_won=ev_pb.TrickWon(winner=2, cards=["2C", "QS", "3C", "4C"])),
    ]
    variable = wire.changing_state(
        hand_points=[0, 1, 0, 13],
        cards_in_hand=[12, 12, 11, 12],
        hearts_broken=True,
        first_trick=False,
        forfeited=[False] * 4,
        current_trick=wire.current_trick_field(1, 3, [_index("AS")]),
    )
    state = wire.state_bytes(
        variable, wire.constant_state(rules, names), [wire.trick_entry(trick)] * 2
    )
    request = wire.decision_request(
        kind=bot_pb.DECISION_KIND_PLAY,
        request_id=7,
        game_id=wire.game_id_field("g"),
        hand_number=0,
        trick_number=1,
        seat=0,
        held=_mask("QS AH"),
        legal=_mask("QS"),
        deadline_ms=900,
        bank_ms=0,
        state=state,
    )
    joined = wire.response_bytes([wire.event_entry(e) for e in events], request)
    whole = bot_pb.PlayResponse(
        events=events,
        request=bot_pb.DecisionRequest(
            request_id=7,
            kind=bot_pb.DECISION_KIND_PLAY,
            game_id="g",
            trick_number=1,
            hand=["AH", "QS"],
            legal_cards=["QS"],
            move_deadline_ms=900,
            state=game_pb.PublicState(
                players=4,
                seat_names=names,
                rules=rules,
                completed_tricks=[trick, trick],
                current_trick=game_pb.Trick(trick_number=1, leader=3, cards=["AS"]),
                hand_points=[0, 1, 0, 13],
                cards_in_hand=[12, 12, 11, 12],
                hearts_broken=True,
                forfeited=[False] * 4,
            ),
        ),
    )
    assert bot_pb.PlayResponse.FromString(joined) == whole
    assert bot_pb.PlayResponse.FromString(wire.response_bytes([])) == bot_pb.PlayResponse()


def _index(code: str) -> int:
    return parse_cards(code)[0].index


def _mask(codes: str) -> int:
    return sum(c.bit for c in parse_cards(codes))


def _codes(mask: int) -> list[str]:
    return [str(c) for c in cards_from_mask(mask)]


_U32 = st.integers(0, 2**32 - 1)
_SEAT = st.integers(0, 5)
_MASKS = st.integers(0, 2**52 - 1)


@settings(max_examples=300, deadline=None)
@given(
    request_id=st.integers(0, 2**64 - 1),
    hand_number=_U32,
    trick_number=_U32,
    seat=_SEAT,
    held=_MASKS,
    legal=_MASKS,
    deadline_ms=_U32,
    bank_ms=_U32,
    points=st.lists(st.integers(-(2**31), 2**31 - 1), max_size=6),
    in_hand=st.lists(st.integers(0, 13), max_size=6),
    flags=st.tuples(st.booleans(), st.booleans(), st.booleans()),
    forfeited=st.lists(st.booleans(), max_size=6),
    trick=st.tuples(_U32, _SEAT, st.lists(st.integers(0, 51), max_size=6)),
)
def test_hand_encoded_play_requests_parse_as_built_ones(
    request_id: int,
    hand_number: int,
    trick_number: int,
    seat: int,
    held: int,
    legal: int,
    deadline_ms: int,
    bank_ms: int,
    points: list[int],
    in_hand: list[int],
    flags: tuple[bool, bool, bool],
    forfeited: list[bool],
    trick: tuple[int, int, list[int]],
) -> None:
    broken, first, in_play = flags
    number, leader, cards = trick
    current = wire.current_trick_field(number, leader, cards) if in_play else b""
    variable = wire.changing_state(
        hand_points=points,
        cards_in_hand=in_hand,
        hearts_broken=broken,
        first_trick=first,
        forfeited=forfeited,
        current_trick=current,
    )
    encoded = wire.decision_request(
        kind=bot_pb.DECISION_KIND_PLAY,
        request_id=request_id,
        game_id=wire.game_id_field("t0-g\u00e9"),
        hand_number=hand_number,
        trick_number=trick_number,
        seat=seat,
        held=held,
        legal=legal,
        deadline_ms=deadline_ms,
        bank_ms=bank_ms,
        state=variable,
    )
    state = game_pb.PublicState(
        hand_points=points,
        cards_in_hand=in_hand,
        hearts_broken=broken,
        first_trick=first,
        forfeited=forfeited,
    )
    if in_play:
        state.current_trick.CopyFrom(
            game_pb.Trick(trick_number=number, leader=leader, cards=[wire.CODES[c] for c in cards])
        )
    built = bot_pb.DecisionRequest(
        request_id=request_id,
        kind=bot_pb.DECISION_KIND_PLAY,
        game_id="t0-g\u00e9",
        hand_number=hand_number,
        trick_number=trick_number,
        your_seat=seat,
        hand=_codes(held),
        legal_cards=_codes(legal),
        move_deadline_ms=deadline_ms,
        time_bank_ms=bank_ms,
        state=state,
    )
    parsed = bot_pb.DecisionRequest.FromString(encoded)
    assert parsed == built
    assert parsed.state.HasField("current_trick") == in_play


@settings(max_examples=100, deadline=None)
@given(number=_U32, trick=_U32, seat=_SEAT, card=st.sampled_from(CARDS))
def test_hand_encoded_card_played_events_parse_as_built_ones(
    number: int, trick: int, seat: int, card: Card
) -> None:
    built = ev_pb.Event(
        card_played=ev_pb.CardPlayed(
            hand_number=number, trick_number=trick, seat=seat, card=str(card)
        )
    )
    assert ev_pb.Event.FromString(wire.card_played(number, trick, seat, card)) == built


@settings(max_examples=100, deadline=None)
@given(
    number=_U32,
    trick=_U32,
    leader=_SEAT,
    cards=st.lists(st.integers(0, 51), max_size=6),
    winner=_SEAT,
    points=st.integers(-(2**31), 2**31 - 1),
    kitty=st.lists(st.integers(0, 51), max_size=4),
)
def test_hand_encoded_taken_tricks_parse_as_built_ones(
    number: int,
    trick: int,
    leader: int,
    cards: list[int],
    winner: int,
    points: int,
    kitty: list[int],
) -> None:
    entry, won = wire.trick_taken(number, trick, leader, cards, winner, points, kitty)
    codes = [wire.CODES[c] for c in cards]
    built = game_pb.Trick(
        trick_number=trick, leader=leader, cards=codes, winner=winner, points=points
    )
    parsed = game_pb.PublicState.FromString(entry).completed_tricks
    assert list(parsed) == [built]
    assert parsed[0].HasField("winner")  # present even for seat 0
    assert ev_pb.Event.FromString(won) == ev_pb.Event(
        trick_won=ev_pb.TrickWon(
            hand_number=number,
            trick_number=trick,
            leader=leader,
            cards=codes,
            winner=winner,
            points=points,
            kitty_cards=[wire.CODES[c] for c in kitty],
        )
    )


@settings(max_examples=100, deadline=None)
@given(
    request_id=st.integers(1, 2**64 - 1),
    seat=_SEAT,
    held=_MASKS,
    count=st.integers(0, 4),
    direction=st.sampled_from(list(PassDirection)),
    pass_to=_SEAT,
    times=st.tuples(_U32, _U32),
)
def test_hand_encoded_pass_requests_parse_as_built_ones(
    request_id: int,
    seat: int,
    held: int,
    count: int,
    direction: PassDirection,
    pass_to: int,
    times: tuple[int, int],
) -> None:
    encoded = wire.decision_request(
        kind=bot_pb.DECISION_KIND_PASS,
        request_id=request_id,
        game_id=wire.game_id_field("g"),
        hand_number=3,
        trick_number=0,
        seat=seat,
        held=held,
        legal=held,
        pass_count=count,
        direction=direction,
        pass_to=pass_to,
        deadline_ms=times[0],
        bank_ms=times[1],
        state=b"",
    )
    built = bot_pb.DecisionRequest(
        request_id=request_id,
        kind=bot_pb.DECISION_KIND_PASS,
        game_id="g",
        hand_number=3,
        your_seat=seat,
        hand=_codes(held),
        legal_cards=_codes(held),
        pass_count=count,
        pass_direction=wire.pass_direction(direction),
        pass_to_seat=pass_to,
        move_deadline_ms=times[0],
        time_bank_ms=times[1],
        state=game_pb.PublicState(),
    )
    assert bot_pb.DecisionRequest.FromString(encoded) == built


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
    with pytest.raises(ConfigError, match=r"^a token is a non-empty string, got ''"):
        accounts.add("", "carol")
    # A number for a token failed on its missing .encode; "" named no bot; a string of names
    # made one bot per letter.
    with pytest.raises(ConfigError, match=r"^a token is a non-empty string, got 5"):
        accounts.add(5, "carol")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"^a bot's name is a non-empty string, got ''$"):
        accounts.add("t0ken", "")
    with pytest.raises(ConfigError, match=r"got the string 'abc'$"):
        TokenAccounts.issue_for("abc")


def test_a_banned_bot_stays_banned_with_a_token_added_after_the_ban() -> None:
    accounts, _ = TokenAccounts.issue_for(["bob"])
    accounts.ban("bob", "cheating")
    for token in (accounts.issue("bob"), "bobs-own-token"):
        accounts.add(token, "bob")
        bob = accounts.lookup(token)
        assert bob == BotIdentity("bob", Standing.BANNED, "cheating")
    carol = accounts.issue("carol")
    assert accounts.lookup(carol) == BotIdentity("carol")


@settings(max_examples=500)
@given(
    st.one_of(
        st.integers(0, (1 << 14) - 1),
        st.integers(1 << 14, (1 << 21) + 1000),
        st.integers(0, (1 << 64) - 1),
    )
)
def test_varints_are_protobufs_own(value: int) -> None:
    # The referee's table, its three-byte shortcut and its general loop agree with protobuf
    # (Decision.request_id is a uint64, field 1: its key is one byte).
    serialised = bot_pb.Decision(request_id=value).SerializeToString()
    expected = serialised[1:] if value else b"\x00"  # proto3 leaves a zero out
    assert wire._varint(value) == expected
    assert wire._encode_varint(value) == expected


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(sorted(PRESETS)),
    players=st.sampled_from([3, 4, 5, 6]),
    seed=st.integers(0, 2**32),
    hand_number=st.integers(0, 7),
    passed=st.booleans(),
    kitty=st.booleans(),
)
def test_hand_encoded_hand_events_are_the_built_ones(
    name: str, players: int, seed: int, hand_number: int, passed: bool, kitty: bool
) -> None:
    # CardsDealt, CardsReceived and HandRevealed, encoded directly, byte for byte as the
    # messages serialise, with or without a pass made, for every preset and table size, the odd
    # cards removed or dealt as a kitty.
    rules = dataclasses.replace(preset(name), players=players)
    if kitty:
        rules = dataclasses.replace(rules, kitty=True, removed_cards=None)
    hand = Hand.deal(rules, seed, hand_number=hand_number)
    assert bool(hand.kitty) == (kitty and 52 % players != 0)
    if passed and hand.phase is Phase.PASS:
        for s in hand.seats_to_pass:
            hand.pass_cards(s, fallback_pass(hand.hand(s), rules.pass_count))
    for s in range(players):
        assert wire.cards_dealt_entry(hand, 9, s) == wire.event_entry(wire.cards_dealt(hand, 9, s))
        assert wire.cards_received_entry(hand, 9, s) == wire.event_entry(
            wire.cards_received(hand, 9, s)
        )

    def seat_cards(cards: Callable[[int], Iterable[Card]]) -> list[ev_pb.SeatCards]:
        return [ev_pb.SeatCards(seat=s, cards=[str(c) for c in cards(s)]) for s in range(players)]

    for number in (0, 9):
        revealed = ev_pb.Event(
            hand_revealed=ev_pb.HandRevealed(
                hand_number=number,
                dealt=seat_cards(hand.dealt),
                passed=seat_cards(lambda s: hand.passed(s) or ()),
                kitty=[str(c) for c in hand.kitty],
            )
        )
        assert wire.hand_revealed_bytes(hand, number) == revealed.SerializeToString()


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(sorted(PRESETS)),
    players=st.sampled_from([3, 4, 5, 6]),
    seed=st.integers(0, 2**32),
    hand_number=st.integers(0, 7),
    passed=st.booleans(),
    totals=st.lists(st.integers(-300, 300), min_size=6, max_size=6),
)
def test_a_seat_state_part_is_the_built_one(
    name: str, players: int, seed: int, hand_number: int, passed: bool, totals: list[int]
) -> None:
    # The per-hand part of a seat's PublicState, encoded directly, byte for byte as the message
    # built field by field serialises: before and after the exchange, on a hold hand, with
    # negative totals (ten-byte varints).
    rules = dataclasses.replace(preset(name), players=players)
    hand = Hand.deal(rules, seed, hand_number=hand_number)
    if passed and hand.phase is Phase.PASS:
        for s in hand.seats_to_pass:
            hand.pass_cards(s, fallback_pass(hand.hand(s), rules.pass_count))
    exchanged = hand.phase is not Phase.PASS and hand.pass_direction is not PassDirection.HOLD
    for s in range(players):
        built = game_pb.PublicState(
            dealer=hand.dealer,
            hand_number=hand_number,
            game_totals=totals[:players],
            pass_direction=wire.pass_direction(hand.pass_direction),
            passed_to_seat=hand.pass_target(s),
            received_from_seat=wire.source_of_pass(hand, s),
        )
        if exchanged:
            built.passed_cards.extend(str(c) for c in hand.passed(s) or ())
            built.received_cards.extend(str(c) for c in hand.received(s) or ())
        part = wire.seat_state(hand, hand_number, s, totals[:players])
        assert part == built.SerializeToString()


@pytest.mark.parametrize("accounts", [["alice", "bob"], "a-token"])
def test_accounts_without_a_lookup_are_refused_when_the_referee_is_made(accounts: object) -> None:
    # Taken as they were, every bot was refused at its handshake as an INTERNAL error.
    with pytest.raises(ConfigError, match=r"accounts must be a mapping .* lookup\(token\) method"):
        Referee(RefereeConfig(), accounts)  # type: ignore[arg-type]
    # A RefereeThread refuses them where they are given too, as Referee(...) does: it did only
    # at start(), far from the mistake.
    with pytest.raises(ConfigError, match=r"accounts must be a mapping .* lookup\(token\) method"):
        RefereeThread(RefereeConfig(), accounts)  # type: ignore[arg-type]


def test_a_port_past_65535_is_refused_not_wrapped() -> None:
    # gRPC took 127.0.0.1:99999 as port 34463 (99999 - 65536) and listened there.
    thread = RefereeThread(RefereeConfig(), TokenAccounts())
    with pytest.raises(ConfigError, match=r"cannot listen on '127.0.0.1:99999': a port is 0"):
        thread.start("127.0.0.1:99999")
    thread.stop(0)


@pytest.mark.parametrize(
    ("address", "said"),
    [
        # Both were "the port is in use or the address is not this machine's".
        ("http://127.0.0.1:0", "give HOST:PORT without a scheme, e.g. 127.0.0.1:50051"),
        ("::1:0", "an IPv6 address goes in brackets, e.g. [::1]:50051"),
    ],
)
def test_a_url_or_a_bare_ipv6_address_to_listen_on_is_named(address: str, said: str) -> None:
    thread = RefereeThread(RefereeConfig(), TokenAccounts())
    with pytest.raises(ConfigError) as refused:
        thread.start(address)
    assert str(refused.value).startswith(f"referee: cannot listen on {address!r}: {said}")
    thread.stop(0)
    # In brackets, it listens.
    thread = RefereeThread(RefereeConfig(), TokenAccounts())
    assert thread.start("[::1]:0") > 0
    thread.stop(0)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"tls": "cert.pem"}, "referee.tls must be a TlsConfig (TlsConfig.from_files(cert, key))"),
        ({"address": 50051}, "referee.address must be a string, got 50051"),
        ({"welcome_message": None}, "referee.welcome_message must be a string, got None"),
        ({"options": "grpc.x=1"}, "referee.options must be (name, value) pairs"),
        ({"options": (("grpc.x", 1, 2),)}, "referee.options must be (name, value) pairs"),
        ({"handshake_ms": 0}, "referee.handshake_ms must be a whole number >= 1, got 0"),
        # Each says the right least value and names the one field: -1 was told ">= 0", and 0
        # then ">= 1" (or all three fields' values in one line).
        ({"handshake_ms": -1}, "referee.handshake_ms must be a whole number >= 1, got -1"),
        ({"inbox_limit": -1}, "referee.inbox_limit must be a whole number >= 1, got -1"),
        ({"inbox_limit": 0}, "referee.inbox_limit must be a whole number >= 1, got 0"),
        ({"max_message_bytes": -5}, "referee.max_message_bytes must be a whole number >= 1024"),
        ({"max_message_bytes": 1023}, "referee.max_message_bytes must be a whole number >= 1024"),
        (
            {"max_sessions_per_token": 0},
            "referee.max_sessions_per_token must be a whole number >= 1",
        ),
        ({"grace_ms": -1}, "referee.grace_ms must be a whole number >= 0, got -1"),
    ],
)
def test_settings_of_the_wrong_type_are_refused_when_made(
    changes: dict[str, object], message: str
) -> None:
    # A TLS setting given as a path, or an address as a number, failed only once the referee
    # started, with an AttributeError from deep inside it.
    with pytest.raises(ConfigError) as err:
        RefereeConfig(**changes)  # type: ignore[arg-type]
    assert str(err.value).startswith(message)


def test_tls_given_as_pem_bytes_is_refused_without_showing_the_key() -> None:
    # The tuple's repr put the whole private key in the error (and so in tracebacks and logs).
    key = b"-----BEGIN PRIVATE KEY-----\nSECRETKEYMATERIAL\n-----END PRIVATE KEY-----\n"
    for pem in ((b"cert", key), {"cert": b"cert", "key": key}):
        with pytest.raises(ConfigError) as err:
            RefereeConfig(tls=pem)  # type: ignore[arg-type]
        assert "SECRETKEYMATERIAL" not in str(err.value)
        assert str(err.value).endswith(f"got a value of type {type(pem).__name__}")


def test_an_address_that_is_not_a_string_is_refused_in_one_line() -> None:
    thread = RefereeThread(RefereeConfig(), TokenAccounts())
    with pytest.raises(
        ConfigError, match=r"^referee: the address to listen on is HOST:PORT, got 5$"
    ):
        thread.start(5)  # type: ignore[arg-type]
    thread.stop(0)


def test_a_table_or_bot_list_of_the_wrong_kind_is_refused_in_one_line() -> None:
    # wait_for_bots("b0") waited its whole timeout for bots "b" and "0" and said False;
    # submit(spec.to_dict()) failed with "'dict' object has no attribute 'table_id'".
    thread = RefereeThread(RefereeConfig(), TokenAccounts())
    thread.start("127.0.0.1:0")
    try:
        with pytest.raises(ConfigError, match=r"got the string 'b0': give \['b0'\]$"):
            thread.wait_for_bots("b0", 60_000)
        assert thread.wait_for_bots([], 10)
        spec = TableSpec("t", Rules(), 1, ("a", "b", "c", "d"), "1")
        with pytest.raises(ConfigError, match=r"takes a TableSpec \(TableSpec.from_dict .*dict"):
            thread.submit(spec.to_dict()).result(30)  # type: ignore[arg-type]
    finally:
        thread.stop(0)


def _call_while_it_stops() -> tuple[RefereeThread, list[object], bool, list[str]]:
    """A referee asked for its port over and over from another thread while it stops: the
    referee, the answers, whether the asking thread is still stuck, the warnings raised."""
    thread = RefereeThread(RefereeConfig(), TokenAccounts())
    thread.start("127.0.0.1:0")
    done = threading.Event()
    answers: list[object] = []

    def ask() -> None:
        while not done.is_set():
            try:
                answers.append(thread.call(lambda referee: referee.port))
            except ConfigError as e:
                answers.append(e)

    asker = threading.Thread(target=ask, daemon=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asker.start()
        thread.stop(0)
        done.set()
        asker.join(10)
        gc.collect()
    return thread, answers, asker.is_alive(), [str(w.message) for w in caught]


def test_calls_made_as_the_referee_stops_neither_hang_nor_leave_a_coroutine_behind() -> None:
    # A call handed to the loop as it stopped waited for ever (its coroutine never ran), or
    # its coroutine warned "never awaited" at exit (arena run printed that after its last line).
    for _ in range(30):
        thread, answers, stuck, warned = _call_while_it_stops()
        assert not stuck, "a call made as the referee stopped never returned"
        assert not [w for w in warned if "never awaited" in w], warned
        assert all(a == thread.port or isinstance(a, ConfigError) for a in answers), answers


@pytest.mark.parametrize("config", [{}, {"handshake_ms": 100}, "fast"])
def test_a_config_that_is_no_referee_config_is_refused_when_made(config: object) -> None:
    # RefereeThread({"handshake_ms": 100}).start() raised AttributeError ('dict' object has no
    # attribute 'max_message_bytes'); an empty dict was silently taken for the default.
    says = r"^referee: config must be a RefereeConfig, e\.g\. RefereeConfig\(handshake_ms=5000\)"
    with pytest.raises(ConfigError, match=says):
        Referee(config, TokenAccounts())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=says):
        RefereeThread(config, TokenAccounts())  # type: ignore[arg-type]


def test_calls_given_the_wrong_kind_of_value_are_refused_in_one_line() -> None:
    # wait_for_bots(None, ...) said True at once (no bots needed); a timeout or a wait_ms given
    # as text raised a bare TypeError; forfeit_token(token) (not its digest) forfeited nothing
    # and said nothing.
    thread = RefereeThread(RefereeConfig(), TokenAccounts({"tok": "a"}))
    thread.start("127.0.0.1:0")
    try:
        with pytest.raises(ConfigError, match=r"^bots must be a list of bot names .*got None$"):
            thread.wait_for_bots(None, 10)  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match=r"got 'a': '2'$"):
            thread.wait_for_bots({"a": "2"}, 10)
        with pytest.raises(ConfigError, match=r"timeout_ms must be a number of milliseconds"):
            thread.wait_for_bots(["a"], "10")  # type: ignore[arg-type]
        spec = TableSpec("t", Rules(), 1, ("a", "b", "c", "d"), "1")
        with pytest.raises(ConfigError, match=r"^wait_ms must be a number of milliseconds"):
            thread.submit(spec, wait_ms="5").result(30)  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match=r"takes the token's digest, token_key\(token\)"):
            thread.call(lambda referee: referee.forfeit_token("tok", "gone"))  # type: ignore[arg-type]
        assert thread.call(lambda referee: referee.forfeit_token(token_key("tok"), "gone")) == []
        # Numbers below zero were taken as no wait at all, and a count of 0 sessions as there:
        # wait_for_bots({"a": -1}) said True for a bot that never connected.
        with pytest.raises(ConfigError, match=r"^wait_for_bots: timeout_ms must be 0 or more"):
            thread.wait_for_bots(["a"], -1)
        for count in (0, -1):
            with pytest.raises(ConfigError, match=r"bot 'a': wait for 1 or more sessions, got"):
                thread.wait_for_bots({"a": count}, 10)
        with pytest.raises(ConfigError, match=r"^wait_ms must be 0 or more milliseconds, got -1"):
            thread.submit(spec, wait_ms=-1)
        with pytest.raises(ConfigError, match=r"^stop: grace_ms must be 0 or more milliseconds"):
            thread.stop(-1)
        # A number for the message was protobuf's bare TypeError.
        with pytest.raises(ConfigError, match=r"^dismiss_idle: message must be a string, got 5"):
            thread.call(lambda referee: referee.dismiss_idle(5))  # type: ignore[arg-type]
    finally:
        thread.stop(0)


@pytest.mark.parametrize("address", ["127.0.0.1", "localhost", "[::1]", "127.0.0.1:http"])
def test_an_address_without_a_port_is_refused_not_served_on_443(address: str) -> None:
    # gRPC took a bare host as port 443, where no bot had been told to connect.
    thread = RefereeThread(RefereeConfig(), TokenAccounts())
    with pytest.raises(ConfigError, match=r": give HOST:PORT, e\.g\. 127\.0\.0\.1:50051"):
        thread.start(address)
    thread.stop(0)


def test_a_stopped_referee_refuses_a_table_instead_of_recording_it_unplayed() -> None:
    # Answered at once with an "interrupted before it started" record, a host looping on
    # play_table after the stop spun for ever without letting the loop run.
    async def after_stop() -> str:
        referee = Referee(RefereeConfig(), TokenAccounts())
        await referee.start("127.0.0.1:0")
        await referee.stop(0)
        spec = TableSpec("late", Rules(), 1, ("a", "b", "c", "d"), "1")
        with pytest.raises(ConfigError) as refused:
            await referee.play_table(spec)
        return str(refused.value)

    assert asyncio.run(after_stop()) == (
        "play_table: the referee has stopped, so table 'late' cannot start: check "
        "referee.stopping before starting a table"
    )


def test_accounts_and_tls_paths_of_the_wrong_kind_are_refused_in_one_line() -> None:
    # TokenAccounts(["tok"]) had no attribute 'items'; issue_for(None) and
    # TlsConfig.from_files(None, None) raised bare TypeErrors.
    with pytest.raises(ConfigError, match=r"^tokens must be a mapping of token to bot name"):
        TokenAccounts(["tok"])  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"^names must be a list of bot names, got None$"):
        TokenAccounts.issue_for(None)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"^TLS: a PEM file's path is needed, got None$"):
        TlsConfig.from_files(None, None)  # type: ignore[arg-type]


def test_an_account_answer_with_an_empty_name_is_of_the_wrong_kind() -> None:
    # A custom store's identity named "" was welcomed, and its session could never be seated.
    from arena.referee.server import _identity_problem

    named = dataclasses.make_dataclass("Named", ["name", "status", "note"])
    assert _identity_problem(named("", Standing.ACTIVE, "")) == "its name is empty"
    assert _identity_problem(named("a", Standing.ACTIVE, "")) is None
