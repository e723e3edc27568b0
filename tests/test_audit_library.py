"""A newcomer's audit of the library side: the SDK's search helpers, serve() with settings made by
hand, and the engine's refusals of wrong arguments.

No test here opens a port or starts a process: serve() is only ever shown settings it refuses
before connecting, or an address that refuses at once (127.0.0.1:1) with give_up_after=0.
"""

from __future__ import annotations

import random
import types

import pytest

from arena.cards import CARDS, parse_cards
from arena.client import Bot, ClientSettings, GaveUp, play_local, sample_world, serve, view_of
from arena.engine import Game, Hand
from arena.errors import ConfigError, StateError
from arena.rules import FirstLead, Rules
from arena.table import TableSpec


def _kitty_hand_led_by_seat_0() -> Hand:
    """Five players with a kitty of 2C and 3C, no pass, any club leads: seat 0 holds the 4C, the
    lowest club in a hand, so it leads the first trick."""
    kitty = parse_cards("2C 3C")
    rest = [c for c in CARDS if c not in kitty]  # index order: seat 0 gets 4C..KC
    rules = Rules(players=5, kitty=True, pass_count=0, first_lead=FirstLead.ANY_CLUB)
    hands = [rest[10 * s : 10 * (s + 1)] for s in range(5)]
    return Hand.from_hands(rules, hands, dealer=4, kitty=kitty)


def test_sample_world_keeps_the_seat_that_leads_the_first_trick_to_move() -> None:
    # Before the fix, the unseen clubs below the leader's lowest (here 2C and 3C, in the kitty)
    # were dealt to any seat when nothing was played yet: that seat then led, so the world was
    # not at the view's position and hand.play(card) raised "not in the seat's hand" (the
    # montecarlo sample bot raised so in 5-player kitty games with first_lead=any-club).
    hand = _kitty_hand_led_by_seat_0()
    assert hand.to_move == 0
    view = view_of(hand, 0)
    assert not view.trick_cards and len(view.legal) > 1
    for k in range(200):
        world = sample_world(view, random.Random(k))
        assert world.to_move == 0, (k, world.kitty)
        assert sorted(world.kitty) == parse_cards("2C 3C"), k
        for card in view.legal:
            world.copy().play(card)  # each of the view's legal cards is legal in the world


def test_the_montecarlo_way_of_searching_plays_a_kitty_game_it_leads() -> None:
    # The sample bot's own loop (sample_world, play each legal card, playout), locally, where an
    # exception from the bot propagates: it must not raise when it leads the first trick.
    class Searcher(Bot):
        def choose_play(self, view):  # type: ignore[no-untyped-def]
            rng = random.Random(7)
            for card in view.legal:
                world = sample_world(view, rng)
                world.play(card)
            return view.legal[0]

    rules = Rules(players=5, kitty=True, first_lead=FirstLead.ANY_CLUB)
    for seed in range(10):
        play_local([Searcher() for _ in range(5)], rules=rules, seed=seed, hands=1)


@pytest.mark.parametrize(
    ("changes", "told"),
    [
        ({"address": 5}, r"settings\.address must be a string"),
        ({"token": 5}, r"settings\.token must be a string, got a value of type int$"),
        # Never shown: a bot's stderr is kept in its log.
        ({"token": b"s3cr3t"}, r"settings\.token must be a string, got a value of type bytes$"),
        ({"name": None}, r"settings\.name must be a string"),
        ({"bot_version": 3}, r"settings\.bot_version must be a string"),
        ({"tls": "yes"}, r"settings\.tls must be True or False"),
        ({"decide_forced_moves": "no"}, r"settings\.decide_forced_moves must be True or False"),
        ({"tls": True, "tls_ca": "ca.pem"}, r"settings\.tls_ca must be PEM bytes or None"),
        ({"tls": True, "tls_ca": b"junk"}, r"settings\.tls_ca holds no usable certificate"),
        ({"tls_ca": b"junk"}, r"settings\.tls is False \(plain text\), but settings\.tls_ca"),
        ({"tls": True, "tls_cert": b"x"}, r"set both settings\.tls_cert and settings\.tls_key"),
        ({"address": "http://127.0.0.1:1"}, r"settings\.address .*without http://"),
        ({"address": "127.0.0.1"}, r"settings\.address '127\.0\.0\.1': expected the referee's"),
        ({"address": "::1:50051"}, r"an IPv6 address goes in brackets"),
    ],
)
def test_serve_refuses_hand_made_settings_as_resolve_would(
    changes: dict[str, object], told: str
) -> None:
    # Before: an AttributeError or TypeError from inside gRPC, or retries until give_up_after.
    fields: dict[str, object] = {"address": "127.0.0.1:1", "token": "t", "name": "n", **changes}
    settings = ClientSettings(**fields)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=told):
        serve(Bot(), settings, give_up_after=0)


def test_serve_still_takes_good_hand_made_settings() -> None:
    # The control: these get as far as connecting (refused at once: nothing listens on port 1).
    with pytest.raises(GaveUp):
        serve(Bot(), ClientSettings("127.0.0.1:1", "t", "n"), give_up_after=0)


@pytest.mark.parametrize("given", [{"moon": "best"}, 5, None])
def test_rules_that_are_not_rules_get_an_example_that_works(given: object) -> None:
    # Before: "e.g. Rules() or preset({'moon': 'best'})", a call that refuses a dict.
    with pytest.raises(ConfigError, match=r"rules must be a Rules") as err:
        Hand.deal(given, seed=1)  # type: ignore[arg-type]
    assert f"preset({given!r})" not in str(err.value)
    with pytest.raises(ConfigError, match=r"rules must be a Rules") as err:
        TableSpec("t", given, 1, ("a", "b", "c", "d"), "1")  # type: ignore[arg-type]
    assert f"preset({given!r})" not in str(err.value)
    with pytest.raises(ConfigError, match=r"preset\('omnibus'\)"):
        Game("omnibus", 1)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "rng", [None, 1, "seed", random, types.SimpleNamespace(random=lambda: 1.0)]
)
def test_hand_playout_refuses_what_is_not_a_generator(rng: object) -> None:
    # Before: AttributeError "'NoneType' object has no attribute 'random'"; the random module
    # was taken (its unseeded global state), and an object whose random() gave 1.0 failed
    # mid-hand with an IndexError.
    hand = Hand.deal(Rules(), seed=1)
    with pytest.raises(ConfigError, match=r"playout takes a random\.Random as rng"):
        hand.playout(rng)  # type: ignore[arg-type]
    hand.playout(random.Random(1))
    assert hand.is_over


def test_view_of_checks_its_names_and_clocks_as_play_local_does() -> None:
    hand = Hand.deal(Rules(), seed=2)
    assert view_of(hand, 0, names=["a", "b", "c", "d"]).seat_names == ("a", "b", "c", "d")
    # Before: two names for four seats came back as two seat names, and "abcd" as four.
    with pytest.raises(ConfigError, match=r"^2 names for 4 seats$"):
        view_of(hand, 0, names=["a", "b"])
    with pytest.raises(ConfigError, match=r"names must be a list of bot names"):
        view_of(hand, 0, names="abcd")
    with pytest.raises(ConfigError, match=r"^2 names for 4 bots$"):
        play_local([Bot() for _ in range(4)], names=["a", "b"])
    # Before: a TypeError from adding the bank to it.
    with pytest.raises(
        ConfigError, match=r"^move_ms must be a whole number >= 0 or None, got 'x'$"
    ):
        view_of(hand, 0, move_ms="x")  # type: ignore[arg-type]
    # Taken before, where play_local refused it.
    with pytest.raises(ConfigError, match=r"^bank_ms must be a whole number >= 0 or None, got -1$"):
        view_of(hand, 0, bank_ms=-1)
    with pytest.raises(ConfigError, match=r"^max_hands must be a whole number >= 1 or None"):
        view_of(hand, 0, max_hands=0)


def test_view_of_refuses_what_has_no_decision() -> None:
    hand = Hand.deal(Rules(), seed=2)
    with pytest.raises(ConfigError, match=r"view_of takes an engine Hand"):
        view_of(None, 0)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"game must be the Game"):
        view_of(hand, 0, "g")  # type: ignore[arg-type]
    hand.playout(random.Random(2))
    # Before: a PASS view of an empty hand.
    with pytest.raises(StateError, match=r"the hand is over"):
        view_of(hand, 0)
    # Before: a seat with nothing to decide got a made-up view: a second PASS view after its
    # pass, or a PLAY view with no legal card (and `leading` set) when another seat was to play.
    hand = Hand.deal(Rules(), seed=2)
    hand.pass_cards(0, view_of(hand, 0).hand[:3])
    with pytest.raises(StateError, match=r"^seat 0 has passed already"):
        view_of(hand, 0)
    for seat in (1, 2, 3):
        hand.pass_cards(seat, view_of(hand, seat).hand[:3])
    mover = hand.to_move
    assert mover is not None and view_of(hand, mover).legal
    other = (mover + 1) % 4
    with pytest.raises(StateError, match=rf"^seat {other} is not to play: seat {mover} is"):
        view_of(hand, other)
