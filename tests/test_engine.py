"""Known answers: scripted deals for every lead rule, the first trick, breaking hearts, passing,
the moon and the sun under each moon rule, and the errors a refused move raises."""

from __future__ import annotations

import copy
import dataclasses
import math
import random
from collections.abc import Callable

import pytest

from arena.cards import CARDS, Card, cards_from_mask, parse_cards
from arena.engine import _SPOT_SUM, Game, Hand, Phase, Trick, deal_order
from arena.errors import (
    CardParseError,
    ConfigError,
    DealError,
    IllegalMoveError,
    RulesError,
    SeatError,
    StateError,
    Violation,
)
from arena.rules import FirstLead, GameEnd, MoonRule, PassDirection, Rules, preset


def fill(rules: Rules, partial: list[str]) -> list[list[Card]]:
    """Hands holding at least the given cards; the rest of the deck goes round in index order."""
    hands = [parse_cards(p) for p in partial]
    used = {c for h in hands for c in h}
    rest = [c for c in rules.cards_in_deck if c not in used]
    for hand in hands:
        while len(hand) < rules.hand_size:
            hand.append(rest.pop(0))
    return hands


def cards(text: str) -> list[Card]:
    """Cards from text, in index order (as the engine lists them)."""
    return sorted(parse_cards(text))


def play_all(hand: Hand, text: str) -> None:
    """Play the cards in order, each for the seat to move (so each must be legal)."""
    for code in text.split():
        hand.play(code)


# ---- the opening lead --------------------------------------------------------------------------


def test_the_holder_of_the_two_of_clubs_must_lead_it() -> None:
    rules = Rules()
    hand = Hand.from_hands(rules, fill(rules, ["3C AC", "", "2C KD", ""]), dealer=0)
    assert hand.phase is Phase.PLAY and hand.to_move == 2
    assert hand.legal_plays() == [Card.parse("2C")]
    with pytest.raises(IllegalMoveError) as err:
        hand.play("KD")
    assert err.value.violation is Violation.MUST_LEAD_OPENING_CARD
    assert (err.value.seat, err.value.cards) == (2, (Card.parse("KD"),))
    assert str(err.value) == (
        "seat 2 may not play KD: the first trick must be led with the lowest club in play"
    )
    with pytest.raises(IllegalMoveError, match=r"^seat 0 may not play 3C: it is not this seat"):
        hand.play("3C", seat=0)
    assert hand.play("2C") is None and hand.to_move == 3


def test_without_the_two_the_lowest_club_in_play_leads() -> None:
    five = Rules(players=5)  # 2C and 2D are out
    hand = Hand.from_hands(five, fill(five, ["", "", "", "3C", ""]))
    assert hand.to_move == 3 and hand.legal_plays() == [Card.parse("3C")]
    # With a kitty, the two of clubs may lie in it: then the three leads.
    three = Rules(players=3, kitty=True)
    deck = [c for c in three.cards_in_deck if str(c) != "2C"]
    hands = [deck[0:17], deck[17:34], deck[34:51]]
    hand = Hand.from_hands(three, hands, kitty=["2C"])
    assert hand.to_move == 0 and hand.legal_plays() == [Card.parse("3C")]


def test_any_club_lead_lets_the_holder_choose_a_club() -> None:
    rules = Rules(first_lead=FirstLead.ANY_CLUB)
    hand = Hand.from_hands(rules, fill(rules, ["", "2C 9C KC AD", "", ""]))
    assert hand.to_move == 1
    assert hand.legal_plays() == [c for c in hand.hand(1) if c.suit.letter == "C"]
    with pytest.raises(IllegalMoveError) as err:
        hand.play("AD")
    assert err.value.violation is Violation.MUST_LEAD_CLUB
    assert str(err.value) == "seat 1 may not play AD: the first trick must be led with a club"
    hand.play("KC")
    assert hand.current_trick == Trick(0, 1, (Card.parse("KC"),), None)


def test_left_of_dealer_leads_anything_but_a_penalty_card() -> None:
    rules = Rules(first_lead=FirstLead.LEFT_OF_DEALER)
    hands = fill(rules, ["", "", "", "QS AH KH 5D 7S"])
    hand = Hand.from_hands(rules, hands, dealer=2)
    assert hand.to_move == 3
    legal = hand.legal_plays()
    assert legal == [c for c in hand.hand(3) if not rules.is_penalty(c)]
    with pytest.raises(IllegalMoveError) as err:
        hand.play("QS")
    assert err.value.violation is Violation.PENALTY_ON_FIRST_TRICK
    with pytest.raises(IllegalMoveError) as err:
        hand.play("AH")
    assert err.value.violation is Violation.HEARTS_NOT_BROKEN


def test_left_of_dealer_holding_only_hearts_leads_one_on_the_first_trick() -> None:
    rules = Rules(first_lead=FirstLead.LEFT_OF_DEALER)
    hearts = " ".join(f"{r}H" for r in "23456789TJQKA")
    hand = Hand.from_hands(rules, fill(rules, [hearts, "", "", ""]), dealer=3)
    assert hand.to_move == 0 and hand.legal_plays() == cards(hearts)


# ---- the first trick ---------------------------------------------------------------------------


def test_no_penalty_card_on_the_first_trick_unless_the_hand_holds_nothing_else() -> None:
    rules = Rules()
    only_penalty = " ".join(f"{r}H" for r in "23456789TJQK") + " QS"
    hands = fill(rules, ["2C", only_penalty, "AH 5D", ""])
    hand = Hand.from_hands(rules, hands)
    hand.play("2C")
    # Seat 1 has no club and nothing but penalty cards: any of them will do.
    assert hand.to_move == 1 and hand.legal_plays() == cards(only_penalty)
    hand.play("QS")
    assert hand.hearts_broken  # the queen breaks hearts, even on the first trick
    # Seat 2 has no club either, but a diamond: the heart must wait.
    seat2 = hand.hand(2)
    assert not any(c.suit.letter == "C" for c in seat2)
    assert hand.legal_plays() == [c for c in seat2 if not rules.is_penalty(c)]
    with pytest.raises(IllegalMoveError) as err:
        hand.play("AH")
    assert err.value.violation is Violation.PENALTY_ON_FIRST_TRICK
    assert str(err.value) == (
        "seat 2 may not play AH: no penalty card may be played on the first trick"
    )


def test_penalty_cards_may_go_on_the_first_trick_when_the_rules_allow() -> None:
    rules = preset("black-lady")
    hands = fill(rules, ["2C", "", "AH 5D QS", ""])
    hand = Hand.from_hands(rules, hands)
    hand.play("2C")
    hand.play(hand.legal_plays()[0])
    assert hand.to_move == 2 and hand.legal_plays() == hand.hand(2)


def test_following_suit_comes_before_the_first_trick_rule() -> None:
    # A spade led on the first trick (left of dealer): the queen is refused while another spade
    # is held, and allowed when she is the only one.
    rules = Rules(first_lead=FirstLead.LEFT_OF_DEALER)
    hand = Hand.from_hands(rules, fill(rules, ["3S", "QS 9S", "QH", "2S"]), dealer=3)
    hand.play("3S")
    assert hand.legal_plays() == [Card.parse("9S")]
    with pytest.raises(IllegalMoveError) as err:
        hand.play("QS")
    assert err.value.violation is Violation.PENALTY_ON_FIRST_TRICK
    with pytest.raises(IllegalMoveError) as err:
        hand.play(hand.hand(1)[0])  # a club: seat 1 holds spades and must follow
    assert err.value.violation is Violation.MUST_FOLLOW_SUIT
    assert str(err.value).endswith("the seat holds the suit led and must follow it")
    hand2 = Hand.from_hands(rules, fill(rules, ["3S", "QS", "", "2S"]), dealer=3)
    hand2.play("3S")
    assert hand2.legal_plays() == [Card.parse("QS")]


# ---- breaking hearts ---------------------------------------------------------------------------


def _after_first_trick(rules: Rules, partial: list[str], first: str) -> Hand:
    hand = Hand.from_hands(rules, fill(rules, partial))
    play_all(hand, first)
    return hand


def test_hearts_may_not_be_led_until_broken() -> None:
    rules = Rules()
    # Seat 1 wins the clubs trick and leads next, holding hearts and diamonds.
    hand = _after_first_trick(rules, ["2C", "AC 2H 3H 4D", "3C", "4C"], "2C AC 3C 4C")
    assert hand.to_move == 1 and not hand.hearts_broken
    assert all(c.suit.letter != "H" for c in hand.legal_plays())
    with pytest.raises(IllegalMoveError) as err:
        hand.play("2H")
    assert err.value.violation is Violation.HEARTS_NOT_BROKEN
    assert str(err.value) == (
        "seat 1 may not play 2H: hearts may not be led until hearts are broken"
    )


def test_a_heart_discarded_breaks_hearts() -> None:
    rules = Rules()
    # Trick 1 clubs (seat 1 wins); seat 1 leads a diamond, seat 2 has none and throws a heart.
    partial = [
        "2C 5D",
        "AC 2D 2H",
        "3C 5H 6H 7H 8H 9H TH JH QH KH AH 3H 4H",
        "4C 3D",
    ]
    hand = _after_first_trick(rules, partial, "2C AC 3C 4C")
    play_all(hand, "2D KH 3D 5D")
    assert hand.hearts_broken
    winner = hand.tricks[-1].winner
    assert winner is not None
    assert hand.to_move == winner
    hand2 = _after_first_trick(rules, partial, "2C AC 3C 4C")
    hand2.play("2D")
    assert not hand2.hearts_broken


@pytest.mark.parametrize("queen_breaks", [True, False])
def test_the_queen_of_spades_breaks_hearts_when_the_rules_say_so(queen_breaks: bool) -> None:
    rules = Rules(queen_breaks_hearts=queen_breaks)
    partial = ["2C 2S 3H", "AC AS 2H", "3C QS", "4C KS"]
    hand = _after_first_trick(rules, partial, "2C AC 3C 4C")
    play_all(hand, "AS QS KS 2S")  # seat 1 leads the ace, seat 2 drops the queen on it
    assert hand.hearts_broken is queen_breaks
    assert hand.to_move == 1
    assert any(c.suit.letter == "H" for c in hand.hand(1))
    assert any(c.suit.letter == "H" for c in hand.legal_plays()) is queen_breaks


def test_a_leader_holding_only_hearts_may_lead_one_before_they_break() -> None:
    rules = Rules()
    hearts = " ".join(f"{r}H" for r in "23456789TJQK")
    hand = _after_first_trick(rules, ["2C", "AC " + hearts, "3C", "4C"], "2C AC 3C 4C")
    assert not hand.hearts_broken
    assert hand.legal_plays() == hand.hand(1) == cards(hearts)


@pytest.mark.parametrize("may_lead_heart", [False, True])
def test_a_leader_holding_only_hearts_and_the_queen(may_lead_heart: bool) -> None:
    rules = Rules(lead_hearts_with_queen=may_lead_heart)
    hearts = " ".join(f"{r}H" for r in "23456789TJQ")
    hand = _after_first_trick(rules, ["2C", "AC QS " + hearts, "3C", "4C"], "2C AC 3C 4C")
    assert hand.to_move == 1 and not hand.hearts_broken
    if may_lead_heart:
        assert hand.legal_plays() == hand.hand(1)
        hand.play("2H")
    else:
        assert hand.legal_plays() == [Card.parse("QS")]
        with pytest.raises(IllegalMoveError) as err:
            hand.play("2H")
        assert err.value.violation is Violation.MUST_LEAD_QUEEN
        assert str(err.value) == (
            "seat 1 may not play 2H: hearts are not broken: holding only hearts and the queen "
            "of spades, lead the queen"
        )


@pytest.mark.parametrize("may_lead_heart", [False, True])
def test_in_the_old_game_the_queen_is_just_a_spade(may_lead_heart: bool) -> None:
    # lead_hearts_with_queen frees a leader of a scoring queen only (README, game.proto).
    rules = Rules(queen_penalty=0, queen_breaks_hearts=False, lead_hearts_with_queen=may_lead_heart)
    hearts = " ".join(f"{r}H" for r in "23456789TJQ")
    hand = _after_first_trick(rules, ["2C", "AC QS " + hearts, "3C", "4C"], "2C AC 3C 4C")
    assert hand.legal_plays() == [Card.parse("QS")]
    with pytest.raises(IllegalMoveError) as err:
        hand.play("2H")
    assert err.value.violation is Violation.HEARTS_NOT_BROKEN
    # ...and she may go on the first trick.
    hand2 = Hand.from_hands(rules, fill(rules, ["2C", "QS 5D", "", ""]))
    hand2.play("2C")
    assert Card.parse("QS") in hand2.legal_plays()


def test_without_the_breaking_rule_hearts_lead_any_time() -> None:
    rules = Rules(must_break_hearts=False)
    hand = _after_first_trick(rules, ["2C", "AC 2H 3D", "3C", "4C"], "2C AC 3C 4C")
    assert not hand.hearts_broken
    assert hand.legal_plays() == hand.hand(1)
    hand.play("2H")
    assert hand.hearts_broken


# ---- refusals outside the rules of play --------------------------------------------------------


def test_refusals_name_the_seat_the_card_and_the_rule() -> None:
    rules = Rules()
    hand = Hand.deal(rules, seed=1)  # hand 0 passes left
    assert hand.phase is Phase.PASS and hand.seats_to_pass == (0, 1, 2, 3)
    held = hand.hand(0)
    with pytest.raises(IllegalMoveError) as err:
        hand.play(held[0])
    assert err.value.violation is Violation.WRONG_PHASE
    assert "the cards are being passed; seats still to pass: 0 1 2 3" in str(err.value)
    # No seat is to move yet: the card's holder is named (it was always seat 0).
    theirs = hand.hand(2)[0]
    with pytest.raises(IllegalMoveError, match=f"^seat 2 may not play {theirs}: it is not the"):
        hand.play(theirs)
    not_held = next(c for c in CARDS if c not in held)
    assert hand.check_pass(0, [held[0], held[1], not_held]) is Violation.CARD_NOT_HELD
    assert hand.check_pass(0, held[:2]) is Violation.WRONG_PASS_COUNT
    assert hand.check_pass(0, [held[0], held[0], held[1]]) is Violation.DUPLICATE_CARD
    assert hand.check_pass(7, held[:3]) is Violation.NOT_YOUR_TURN
    with pytest.raises(IllegalMoveError) as err:
        hand.pass_cards(0, held[:2])
    assert str(err.value) == (
        f"seat 0 may not pass {held[0]} {held[1]}: the wrong number of cards was passed "
        "(pass 3 distinct cards)"
    )
    hand.pass_cards(0, [str(c) for c in held[:3]])
    assert hand.check_pass(0, held[3:6]) is Violation.ALREADY_PASSED
    assert list(hand.seats_to_pass) == [1, 2, 3]
    with pytest.raises(IllegalMoveError) as err:
        hand.pass_mask(1, hand.hand_mask(0) & -hand.hand_mask(0))
    assert err.value.violation is Violation.WRONG_PASS_COUNT
    assert str(err.value).endswith("(pass 3 distinct cards)")
    # A seat given as True is seat 1 in the refusal too ("seat True may not pass ...").
    with pytest.raises(IllegalMoveError, match=r"^seat 1 may not pass") as err:
        hand.pass_cards(True, hand.hand(0)[:3])
    assert err.value.seat == 1 and type(err.value.seat) is int
    for seat in (1, 2, 3):
        hand.pass_cards(seat, hand.hand(seat)[:3])
    assert hand.to_move is not None  # the exchange is done and play has begun
    assert hand.check_pass(1, hand.hand(1)[:3]) is Violation.WRONG_PHASE
    seat = hand.to_move
    assert seat is not None
    other = (seat + 1) % 4
    assert hand.check_play(other, hand.hand(other)[0]) is Violation.NOT_YOUR_TURN
    assert hand.check_play(seat, hand.hand(other)[0]) is Violation.CARD_NOT_HELD
    with pytest.raises(IllegalMoveError, match="the card is not in the seat's hand"):
        hand.play(hand.hand(other)[0])
    hand.playout(random.Random(3))
    assert hand.is_over and hand.to_move is None and hand.legal_mask() == 0
    assert hand.check_play(0, CARDS[0]) is Violation.HAND_OVER
    assert hand.check_pass(0, CARDS[:3]) is Violation.HAND_OVER


def test_a_hand_that_is_not_over_has_no_result() -> None:
    hand = Hand.deal(Rules(), seed=2, hand_number=3)  # a hold hand: play starts at once
    assert hand.phase is Phase.PLAY
    with pytest.raises(StateError, match="not over"):
        hand.result()


@pytest.mark.parametrize(
    "ask",
    [
        "hand",
        "hand_mask",
        "dealt",
        "dealt_mask",
        "passed",
        "received",
        "passed_mask",
        "received_mask",
        "pass_target",
        "taken",
        "taken_mask",
        "voids",
        "view",
    ],
)
@pytest.mark.parametrize("seat", [-1, 4, 9])
def test_a_seat_not_at_the_table_is_refused_by_name(ask: str, seat: int) -> None:
    hand = Hand.deal(Rules(), seed=2)
    # -1 used to answer for seat 3 (a list index from the end); 4 and up with a bare IndexError.
    with pytest.raises(
        SeatError, match=f"there is no seat {seat} at this table: its seats are 0 to 3"
    ):
        getattr(hand, ask)(seat)


@pytest.mark.parametrize("seat", ["1", 1.5, None])
def test_what_is_no_seat_number_is_refused_everywhere_with_a_seat_error(seat: object) -> None:
    # Text was judged as a move ("not your turn", even for the seat to move) or failed with a
    # bare TypeError from a comparison; 1.0 with "list indices must be integers".
    hand = Hand.deal(Rules(), seed=2)
    passing = hand.copy()
    for seat_to_pass in hand.seats_to_pass:
        hand.pass_cards(seat_to_pass, hand.hand(seat_to_pass)[:3])
    asks: list[Callable[[], object]] = [
        lambda: hand.hand(seat),  # type: ignore[arg-type]
        lambda: hand.hand_mask(seat),  # type: ignore[arg-type]
        lambda: hand.view(seat),  # type: ignore[arg-type]
        lambda: hand.check_play(seat, "2C"),  # type: ignore[arg-type]
        lambda: passing.check_pass(seat, passing.hand(0)[:3]),  # type: ignore[arg-type]
        lambda: passing.pass_cards(seat, passing.hand(0)[:3]),  # type: ignore[arg-type]
    ]
    if seat is not None:  # play(card, seat=None) is the seat to move's play
        asks.append(lambda: hand.play("2C", seat=seat))  # type: ignore[arg-type]
    for ask in asks:
        with pytest.raises(SeatError, match=f"seat must be a seat number .*, got {seat!r}$"):
            ask()
    assert hand.check_play(9, "2C") is Violation.NOT_YOUR_TURN  # a number: judged as a move
    to_move = hand.to_move
    assert to_move is not None
    assert hand.play(hand.legal_plays()[0], seat=to_move) is None  # the right seat still plays


def test_what_is_no_card_is_refused_as_cards_are() -> None:
    hand = Hand.deal(Rules(), seed=2)
    # check_play(seat, None) raised AttributeError ('NoneType' has no 'bit'), pass_cards(0,
    # None) "not iterable"; one Card for a whole pass, "'Card' object is not iterable".
    with pytest.raises(CardParseError, match="cannot parse card None"):
        hand.check_play(0, None)  # type: ignore[arg-type]
    for bad in (None, 5):
        with pytest.raises(CardParseError, match=f"expected cards: .*, got {bad!r}$"):
            hand.check_pass(0, bad)  # type: ignore[arg-type]
        with pytest.raises(CardParseError, match=f"expected cards: .*, got {bad!r}$"):
            hand.pass_cards(0, bad)  # type: ignore[arg-type]
        with pytest.raises(CardParseError, match=f"expected cards: .*, got {bad!r}$"):
            Hand.from_hands(Rules(), [bad] * 4)  # type: ignore[list-item]
    one = hand.hand(0)[0]
    assert hand.check_pass(0, one) is Violation.WRONG_PASS_COUNT  # type: ignore[arg-type]
    with pytest.raises(IllegalMoveError, match=f"may not pass {one}: .*pass 3 distinct cards"):
        hand.pass_cards(0, one)  # type: ignore[arg-type]


@pytest.mark.parametrize("make", [Game, Hand.deal, deal_order])
def test_rules_that_are_no_rules_are_refused_with_the_fix(make: Callable[..., object]) -> None:
    # Game("omnibus", seed=1) failed with "'str' object has no attribute 'players'".
    with pytest.raises(ConfigError, match=r"rules must be a Rules, e.g. .*preset\('omnibus'\)"):
        make("omnibus", 1)
    with pytest.raises(ConfigError, match="hand_number counts from 0, got -1"):
        Hand.deal(Rules(), 1, hand_number=-1)


def test_totals_for_another_number_of_seats_are_refused() -> None:
    for moon in (MoonRule.ADD, MoonRule.BEST):
        hand = Hand.deal(Rules(moon=moon), seed=2)
        hand.playout(random.Random(1))
        with pytest.raises(SeatError, match="totals: 2 given for a table of 4 seats"):
            hand.result([1, 2])
        assert len(hand.result([0, 0, 0, 0]).points) == 4


@pytest.mark.parametrize(
    ("hands", "field"),
    [
        (["2C"] * 4, "hands"),
        ([" ".join(str(c) for c in CARDS[i * 13 : i * 13 + 13]) for i in range(3)], "hands"),
    ],
)
def test_explicit_hands_must_be_a_deal_of_the_deck(hands: list[str], field: str) -> None:
    with pytest.raises(DealError) as err:
        Hand.from_hands(Rules(), hands)
    assert err.value.field == field
    assert isinstance(err.value, RulesError)  # what callers catching RulesError still catch


def test_hands_that_do_not_fit_say_so_not_that_the_rules_are_wrong() -> None:
    good = [" ".join(str(c) for c in CARDS[i * 13 : i * 13 + 13]) for i in range(4)]
    # Said "rules.removed_cards: ... dealt twice" (and "rules.players: hands[0] is not the
    # viewer's hand"), sending the user to the rules, which were fine.
    with pytest.raises(DealError, match=r"^hands: 2C .* AC dealt twice \(in hands\[1\]") as err:
        Hand.from_hands(Rules(), [good[0], good[0], good[2], good[3]])
    assert err.value.field == "hands"
    hand = Hand.deal(Rules(), 5, hand_number=3)
    for _ in range(6):
        hand.play(hand.legal_plays()[0])
    swapped = [hand.hand(1), hand.hand(0), hand.hand(2), hand.hand(3)]
    with pytest.raises(DealError, match=r"^hands: hands\[0\] is not the viewer's hand") as err:
        Hand.from_view(Rules(), hand.view(0), swapped)
    assert err.value.field == "hands"


def test_cards_given_as_text_may_be_separated_by_commas_everywhere() -> None:
    rules = Rules()
    spaced = [" ".join(str(c) for c in CARDS[i * 13 : i * 13 + 13]) for i in range(4)]
    commas = [text.replace(" ", ",") for text in spaced]
    # parse_cards and Hand(...) read "2C,3C"; from_hands, pass_cards and check_pass refused it.
    from_commas, from_spaces = Hand.from_hands(rules, commas), Hand.from_hands(rules, spaced)
    assert [from_commas.hand(s) for s in range(4)] == [from_spaces.hand(s) for s in range(4)]
    hand = Hand.deal(rules, 1)
    three = ", ".join(str(c) for c in hand.hand(0)[:3])
    assert hand.check_pass(0, three) is None
    hand.pass_cards(0, three)
    assert [str(c) for c in hand.passed(0) or ()] == three.split(", ")
    played = Hand.deal(rules, 5, hand_number=3)
    for _ in range(6):
        played.play(played.legal_plays()[0])
    guess = [",".join(str(c) for c in played.hand(s)) for s in range(4)]
    rebuilt = Hand.from_view(rules, played.view(0), guess)
    assert rebuilt.view(0) == played.view(0)


def test_a_pass_mask_beyond_the_deck_names_the_bit() -> None:
    hand = Hand.deal(Rules(), 1)
    # Said "seat 1 may not pass nothing: the card is not in the seat's hand".
    with pytest.raises(IllegalMoveError, match=r"the mask has bit 60 set: only bits 0 to 51"):
        hand.pass_mask(1, 1 << 60)
    with pytest.raises(IllegalMoveError, match=r"the mask is negative: only bits 0 to 51"):
        hand.pass_mask(1, -1)


def test_explicit_hands_refuse_duplicates_missing_cards_and_bad_directions() -> None:
    rules = Rules()
    good = [" ".join(str(c) for c in CARDS[i * 13 : i * 13 + 13]) for i in range(4)]
    dup = [good[0], good[0], good[2], good[3]]
    with pytest.raises(RulesError, match="dealt twice"):
        Hand.from_hands(rules, dup)
    three = Rules(players=3)  # the two of diamonds is out
    deck = list(three.cards_in_deck)
    hands = [deck[0:17], deck[17:34], deck[34:51]]
    hands[0][0] = Card.parse("2D")
    with pytest.raises(RulesError, match=r"missing 2C, extra 2D\)$"):
        Hand.from_hands(three, hands)
    with pytest.raises(RulesError, match="'across' does not exist"):
        Hand.from_hands(
            Rules(players=3), fill(Rules(players=3), ["", "", ""]), pass_direction="across"
        )
    with pytest.raises(RulesError, match="unknown direction 'up'"):
        Hand.from_hands(rules, good, pass_direction="up")
    with pytest.raises(
        SeatError, match=r"^dealer 4 is not a seat at this table: its seats are 0 to 3$"
    ):
        Hand.from_hands(rules, good, dealer=4)
    with_kitty = Rules(players=3, kitty=True)
    deck = list(with_kitty.cards_in_deck)
    with pytest.raises(RulesError, match="kitty must hold 1 card not in any hand, got nothing"):
        Hand.from_hands(with_kitty, [deck[0:17], deck[17:34], deck[34:51]])
    with pytest.raises(RulesError, match="kitty must hold 1 card not in any hand, got 2C") as err:
        Hand.from_hands(with_kitty, [deck[0:17], deck[17:34], deck[34:51]], kitty=[deck[0]])
    assert err.value.field == "kitty"
    with pytest.raises(RulesError, match="kitty must hold 0 cards not in any hand, got AS"):
        Hand.from_hands(rules, good, kitty="AS")


# ---- passing -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("players", "direction", "offset"),
    [
        (4, PassDirection.LEFT, 1),
        (4, PassDirection.RIGHT, 3),
        (4, PassDirection.ACROSS, 2),
        (3, PassDirection.LEFT, 1),
        (3, PassDirection.RIGHT, 2),
        (5, PassDirection.LEFT_2, 2),
        (5, PassDirection.RIGHT_2, 3),
        (6, PassDirection.ACROSS, 3),
    ],
)
def test_passes_go_to_the_right_seat(players: int, direction: PassDirection, offset: int) -> None:
    rules = Rules(players=players)
    deck = list(rules.cards_in_deck)
    size = rules.hand_size
    hands = [deck[s * size : (s + 1) * size] for s in range(players)]
    hand = Hand.from_hands(rules, hands, pass_direction=direction)
    for seat in range(players):
        assert hand.pass_target(seat) == (seat + offset) % players
        hand.pass_cards(seat, hand.hand(seat)[:3])
    for seat in range(players):
        giver = (seat - offset) % players
        assert hand.received(seat) == hands[giver][:3]
        assert hand.passed(seat) == hands[seat][:3]
        assert hand.dealt(seat) == hands[seat]
        assert hand.hand(seat) == sorted(hands[seat][3:] + hands[giver][:3])


def test_a_hold_hand_and_a_no_passing_game_skip_the_pass() -> None:
    hold = Hand.from_hands(Rules(), fill(Rules(), ["", "", "", ""]), pass_direction="hold")
    assert hold.phase is Phase.PLAY and hold.seats_to_pass == ()
    assert hold.passed(0) is None and hold.received(0) is None
    never = Rules(pass_count=0)
    assert Hand.deal(never, seed=5).phase is Phase.PLAY
    left = Hand.from_hands(never, fill(never, ["", "", "", ""]), pass_direction="left")
    assert left.pass_direction is PassDirection.HOLD and left.phase is Phase.PLAY


# ---- the moon and the sun ----------------------------------------------------------------------

# Seat 0 takes every heart and the queen but lets seat 2 win the first (clean) trick.
MOON_DEAL = [
    "2C 3S 4S 5S 6S 7S 8S 9S TS JS QS KS AS",
    "2D 3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH",
    "2S 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC",
    "2H 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD",
]
MOON_PLAY = " ".join(
    [
        "2C 2D AC 3D",  # seat 0 leads (left of dealer 3); seat 2 wins a trick with no points
        "2S 4D 3S 3H",  # seat 2 leads its only spade; seat 0 takes over for good
        *(
            f"{s}S {h}H {c}C {d}D"
            for s, h, c, d in zip(
                "456789TJQK", "456789TJQK", "3456789TJQ", "56789TJQKA", strict=True
            )
        ),
        "AS AH KC 2H",
    ]
)


def swap(play: str, a: str, b: str) -> str:
    """The play with cards ``a`` and ``b`` (of the same seat) played in each other's place."""
    return " ".join({a: b, b: a}.get(code, code) for code in play.split())


# Seat 0 holds every spade and takes every trick.
SUN_DEAL = [
    " ".join(f"{r}S" for r in "23456789TJQKA"),
    " ".join(f"{r}H" for r in "23456789TJQKA"),
    " ".join(f"{r}C" for r in "23456789TJQKA"),
    " ".join(f"{r}D" for r in "23456789TJQKA"),
]
SUN_PLAY = " ".join(f"{r}S {r}H {r}C {r}D" for r in "23456789TJKAQ")  # the queen goes last


def _moon_hand(rules: Rules, deal: list[str] = MOON_DEAL, play: str = MOON_PLAY) -> Hand:
    hand = Hand.from_hands(rules.replace(first_lead=FirstLead.LEFT_OF_DEALER), deal, dealer=3)
    play_all(hand, play)
    assert hand.is_over
    return hand


def test_the_moon_deal_is_a_moon_without_the_sun() -> None:
    hand = _moon_hand(Rules())
    result = hand.result()
    assert result.tricks_won == (12, 0, 1, 0)
    assert result.taken_points == (26, 0, 0, 0)
    assert result.hearts_taken == (13, 0, 0, 0)
    assert (result.moon, result.sun, result.moon_rule) == (0, False, MoonRule.ADD)
    assert result.points == (0, 26, 26, 26)
    assert hand.tricks[0] == Trick(0, 0, tuple(parse_cards("2C 2D AC 3D")), 2)


@pytest.mark.parametrize(
    ("moon", "points", "applied"),
    [
        ("off", (26, 0, 0, 0), None),
        ("add", (0, 26, 26, 26), MoonRule.ADD),
        ("subtract", (-26, 0, 0, 0), MoonRule.SUBTRACT),
        ("best", (0, 26, 26, 26), MoonRule.ADD),
    ],
)
def test_each_moon_rule(moon: str, points: tuple[int, ...], applied: MoonRule | None) -> None:
    result = _moon_hand(Rules().with_options([f"moon={moon}"])).result()
    assert result.points == points
    assert result.moon_rule is applied
    assert result.moon == (None if moon == "off" else 0)


@pytest.mark.parametrize(
    ("totals", "applied", "after"),
    [
        # Adding would end the game with the shooter behind seat 2: subtract instead.
        ((90, 80, 10, 50), MoonRule.SUBTRACT, (64, 80, 10, 50)),
        # Adding ends the game with the shooter lowest: add, and win.
        ((10, 80, 85, 90), MoonRule.ADD, (10, 106, 111, 116)),
        # Adding ends nothing: add (the default).
        ((10, 20, 30, 40), MoonRule.ADD, (10, 46, 56, 66)),
        # Adding ends the game in a tie for lowest with the shooter: still a (shared) win.
        ((40, 80, 14, 50), MoonRule.ADD, (40, 106, 40, 76)),
    ],
)
def test_best_moon_subtracts_when_adding_would_lose_the_game(
    totals: tuple[int, ...], applied: MoonRule, after: tuple[int, ...]
) -> None:
    result = _moon_hand(Rules(moon=MoonRule.BEST)).result(totals)
    assert result.moon_rule is applied
    assert tuple(t + p for t, p in zip(totals, result.points, strict=True)) == after


def test_best_moon_counts_the_jack_and_the_bonus_when_judging() -> None:
    # The jack went to seat 2 (-10) and seats 1 and 3 took no trick (-5 each). Adding gives
    # (0, 21, 16, 21): from (79, 75, 60, 80) that is (79, 96, 76, 101), over and lost, so subtract.
    rules = Rules(moon=MoonRule.BEST, jack_of_diamonds=-10, no_tricks_bonus=-5)
    hand = _moon_hand(rules, play=swap(MOON_PLAY, "3D", "JD"))
    assert hand.result().taken_points == (26, 0, -10, 0)
    result = hand.result((79, 75, 60, 80))
    assert result.moon_rule is MoonRule.SUBTRACT
    assert result.points == (-26, -5, -10, -5)


def test_the_omnibus_jack_is_not_needed_for_the_moon_and_scores_apart() -> None:
    omnibus = preset("omnibus")
    result = _moon_hand(omnibus, play=swap(MOON_PLAY, "3D", "JD")).result()
    assert result.moon == 0 and result.taken_points == (26, 0, -10, 0)
    assert result.points == (0, 26, 16, 26)
    # When the shooter takes the jack too, it still counts for the shooter.
    result = _moon_hand(omnibus).result()
    assert result.taken_points == (16, 0, 0, 0)
    assert result.points == (-10, 26, 26, 26)


def test_the_no_tricks_bonus_applies_on_top_of_the_moon() -> None:
    result = _moon_hand(Rules(no_tricks_bonus=-5)).result()
    assert result.points == (0, 21, 26, 21)


def test_the_spot_table_sums_the_pips_of_every_set_of_hearts() -> None:
    # Built incrementally (the lowest card plus the set without it), as its definition says.
    assert len(_SPOT_SUM) == 1 << 13
    for hearts in range(1 << 13):
        assert _SPOT_SUM[hearts] == sum(r + 2 for r in range(13) if hearts >> r & 1), hearts


def test_spot_hearts_moon_is_worth_every_spot_and_the_queen() -> None:
    result = _moon_hand(preset("spot")).result()
    assert result.taken_points == (104 + 25, 0, 0, 0)
    assert result.points == (0, 129, 129, 129)
    result = _moon_hand(preset("spot").replace(moon_points=150)).result()
    assert result.points == (0, 150, 150, 150)


def test_in_the_old_game_the_moon_needs_only_the_hearts() -> None:
    # The queen goes to seat 2 on the first trick (she is a plain spade); seat 0 takes every heart.
    deal = [
        "2C 3S 4S 5S 6S 7S 8S 9S TS JS KS AS AH",
        "2D 2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH",
        "2S 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC",
        "QS 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD",
    ]
    play = "2C 2D AC QS 2S 3D 3S 2H " + " ".join(
        f"{s}S {h}H {c}C {d}D"
        for s, h, c, d in zip("456789TJKA", "3456789TJQ", "3456789TJQ", "456789TJQK", strict=True)
    )
    play += " AH KH KC AD"
    rules = Rules(queen_penalty=0, queen_breaks_hearts=False)
    result = _moon_hand(rules, deal, play).result()
    assert result.moon == 0 and result.hearts_taken == (13, 0, 0, 0)
    assert result.points == (0, 13, 13, 13)


@pytest.mark.parametrize(
    ("options", "points", "sun"),
    [
        ([], (0, 26, 26, 26), False),
        (["sun=true"], (0, 52, 52, 52), True),
        (["sun=true", "moon=subtract"], (-52, 0, 0, 0), True),
        (["sun=true", "no_tricks_bonus=-5"], (0, 47, 47, 47), True),
    ],
)
def test_shooting_the_sun_doubles_the_moon(
    options: list[str], points: tuple[int, ...], sun: bool
) -> None:
    result = _moon_hand(Rules().with_options(options), SUN_DEAL, SUN_PLAY).result()
    assert result.tricks_won == (13, 0, 0, 0)
    assert (result.moon, result.sun, result.points) == (0, sun, points)


def test_the_moon_deal_without_the_sun_is_not_doubled() -> None:
    result = _moon_hand(Rules(sun=True)).result()
    assert (result.sun, result.points) == (False, (0, 26, 26, 26))


def test_the_kitty_goes_to_the_winner_of_the_first_trick() -> None:
    rules = Rules(players=3, kitty=True, pass_count=0)
    deck = [c for c in rules.cards_in_deck if str(c) != "QS"]
    hands = [deck[0:17], deck[17:34], deck[34:51]]
    hand = Hand.from_hands(rules, hands, kitty="QS")
    assert hand.kitty == [Card.parse("QS")] and hand.to_move == 0
    first = hand.play(hand.legal_plays()[0])
    while first is None:
        first = hand.play(hand.legal_plays()[0])
    assert first.winner is not None
    assert Card.parse("QS") in hand.taken(first.winner)
    assert hand.points_taken()[first.winner] == 13
    assert cards_from_mask(hand.taken_mask(first.winner)) == sorted(
        [*first.cards, Card.parse("QS")]
    )


# ---- the game ----------------------------------------------------------------------------------


def _random_game(rules: Rules, seed: int, play_seed: int) -> Game:
    game = Game(rules, seed)
    rng = random.Random(play_seed)
    while not game.is_over:
        game.hand.playout(rng)
        game.finish_hand()
    return game


def test_a_game_deals_from_its_seed_rotates_the_dealer_and_ends_at_the_target() -> None:
    rules = Rules()
    game = Game(rules, seed=11, first_dealer=2)
    rng = random.Random(5)
    totals = [0, 0, 0, 0]
    while not game.is_over:
        k = game.hand_number
        expected = Hand.deal(rules, 11, hand_number=k, dealer=(2 + k) % 4)
        assert game.hand.dealer == (2 + k) % 4
        assert [game.hand.dealt(s) for s in range(4)] == [expected.dealt(s) for s in range(4)]
        assert game.hand.pass_direction is rules.pass_direction(k)
        with pytest.raises(StateError, match=f"hand {k} is not over"):
            game.finish_hand()
        game.hand.playout(rng)
        result = game.finish_hand()
        totals = [t + p for t, p in zip(totals, result.points, strict=True)]
        assert game.totals == totals
    assert max(game.totals) >= 100
    assert len(game.results) == game.hand_number + 1
    with pytest.raises(StateError, match="the game is over"):
        game.finish_hand()
    low = min(game.totals)
    assert game.winners == tuple(s for s in range(4) if game.totals[s] == low)
    assert all(p >= 1 for p in game.placings) and 1 in game.placings


@pytest.mark.parametrize("end", [GameEnd.REACH, GameEnd.PASS])
def test_the_game_ends_on_reaching_or_on_passing_the_target(end: GameEnd) -> None:
    probe = Game(Rules(), seed=3)
    probe.hand.playout(random.Random(8))
    top = max(probe.hand.result().points)
    assert top > 0
    exact = Game(Rules(target=top, game_end=end), seed=3)
    exact.hand.playout(random.Random(8))
    exact.finish_hand()
    assert exact.is_over is (end is GameEnd.REACH)
    below = Game(Rules(target=top - 1, game_end=end), seed=3)
    below.hand.playout(random.Random(8))
    below.finish_hand()
    assert below.is_over


FALLING = Rules(players=6, queen_penalty=0, jack_of_diamonds=-10, no_tricks_bonus=-5)
"""Rules under which the totals fall hand after hand: a game to the target would never end."""


def test_a_game_whose_totals_fall_stops_at_the_rules_hand_limit() -> None:
    assert (Rules().max_hands, Rules(target=26).max_hands, preset("spot").max_hands) == (
        100,
        100,
        500,
    )
    game = Game(FALLING, seed=2)
    rng = random.Random(2)
    for _ in range(1000):  # bounded: without the limit this game would run for ever
        if game.is_over:
            break
        game.hand.playout(rng)
        game.finish_hand()
    assert len(game.results) == game.hand_number + 1 == FALLING.max_hands == 100
    assert max(game.totals) < FALLING.target and game.at_hand_limit
    with pytest.raises(StateError, match="the game is over after 100 hands"):
        game.finish_hand()
    low = min(game.totals)
    assert game.winners == tuple(s for s in range(6) if game.totals[s] == low)
    # A game that reaches its target is not at the limit.
    reached = _random_game(Rules(), seed=2, play_seed=2)
    assert reached.is_over and not reached.at_hand_limit


def test_placings_share_places_on_equal_scores() -> None:
    game = _random_game(Rules(target=30), seed=4, play_seed=4)
    order = sorted(game.totals)
    for seat, place in enumerate(game.placings):
        assert place == 1 + order.index(game.totals[seat])
    settled = _random_game(preset("howell").replace(target=30), seed=4, play_seed=4)
    ranks = sorted(settled.balances, reverse=True)
    for seat, place in enumerate(settled.placings):
        assert place == 1 + ranks.index(settled.balances[seat])
    assert sum(settled.balances) == 0


def test_a_game_refuses_a_first_dealer_that_is_not_a_seat() -> None:
    with pytest.raises(
        SeatError, match=r"^first_dealer 4 is not a seat at this table: its seats are 0 to 3$"
    ):
        Game(Rules(), seed=1, first_dealer=4)
    with pytest.raises(
        SeatError, match=r"^first_dealer -1 is not a seat at this table: its seats are 0 to 2$"
    ):
        Game(Rules(players=3), seed=1, first_dealer=-1)


def test_a_deal_refuses_a_dealer_or_hand_number_out_of_range() -> None:
    with pytest.raises(
        SeatError, match=r"^dealer 7 is not a seat at this table: its seats are 0 to 3$"
    ):
        Hand.deal(Rules(), 1, dealer=7)
    with pytest.raises(ValueError, match=r"^hand_number counts from 0, got -1$"):
        Hand.deal(Rules(), 1, hand_number=-1)


def test_card_codes_are_taken_wherever_cards_are() -> None:
    hand = Hand.deal(Rules(pass_count=0), 1)
    seat = hand.to_move
    assert seat is not None
    assert hand.check_play(seat, "2C") is None
    assert hand.check_play(seat, "AS") in (
        Violation.CARD_NOT_HELD,
        Violation.MUST_LEAD_OPENING_CARD,
    )
    passing = Hand.deal(Rules(), 42)
    codes = [str(c) for c in passing.hand(0)[:3]]
    assert passing.check_pass(0, codes) is None and passing.check_pass(0, " ".join(codes)) is None
    passing.pass_cards(0, " ".join(codes))  # one string of codes, as parse_cards takes
    assert passing.check_pass(0, codes) is Violation.ALREADY_PASSED


@pytest.mark.parametrize("mask", ["3", None, 1.5, True])
def test_a_pass_mask_that_is_no_int_is_refused_in_one_line(mask: object) -> None:
    # '3' and None were TypeErrors from the range check, 1.5 an AttributeError (bit_count).
    hand = Hand.deal(Rules(), 3)
    with pytest.raises(ConfigError, match=r"^pass_mask takes a bit mask of the cards \(an int\)"):
        hand.pass_mask(0, mask)  # type: ignore[arg-type]
    assert hand.passed(0) is None


def test_a_pass_mask_beyond_the_deck_is_an_illegal_move() -> None:
    hand = Hand.deal(Rules(), 42)
    with pytest.raises(IllegalMoveError) as refused:
        hand.pass_mask(0, 1 << 60)
    assert refused.value.violation is Violation.CARD_NOT_HELD


def test_help_names_every_public_attribute_of_a_hand_and_a_game() -> None:
    # Their attributes are set in code (a Game's in __init__, a Hand's in slots): help() shows
    # only what the class docstring says of them.
    import pydoc

    game = Game(Rules(), seed=1)
    shown = {
        Hand: pydoc.plain(pydoc.render_doc(Hand)),
        Game: pydoc.plain(pydoc.render_doc(Game)),
    }
    attributes = {
        Hand: [a for a in Hand.__annotations__ if not a.startswith("_")],
        Game: [a for a in vars(game) if not a.startswith("_")],
    }
    assert attributes[Hand] == ["rules", "dealer", "pass_direction", "phase"]
    for kind, names in attributes.items():
        for name in names:
            assert f"``{name}``" in shown[kind], (kind.__name__, name)


def test_the_constructor_takes_a_hand_as_one_string_of_codes_like_from_hands() -> None:
    # A string is an iterable of strings, so the type allowed it; it was read one letter at a
    # time ("cannot parse card '2'").
    hands = [" ".join(str(c) for c in CARDS[i * 13 : i * 13 + 13]) for i in range(4)]
    made = Hand(Rules(), hands, pass_direction="left")
    assert [made.hand(s) for s in range(4)] == [parse_cards(h) for h in hands]
    three = Rules(players=3, kitty=True)
    deck = [str(c) for c in three.cards_in_deck]
    with_kitty = Hand(three, [" ".join(deck[i * 17 : i * 17 + 17]) for i in range(3)], kitty="AS")
    assert with_kitty.kitty == [Card.parse("AS")]


def test_deal_order_refuses_a_negative_hand_number_as_hand_deal_does() -> None:
    # deal_order(rules, 1, -1) dealt a hand -1 that no game plays, where Hand.deal refused it.
    with pytest.raises(ConfigError, match=r"^hand_number counts from 0, got -1$"):
        deal_order(Rules(), 1, -1)


@pytest.mark.parametrize("dealer", ["1", 1.5, None])
def test_a_dealer_that_is_no_seat_number_is_a_seat_error_everywhere(dealer: object) -> None:
    # Hand.from_hands(dealer="1") raised a bare TypeError ('<=' between int and str) and
    # dealer=1.5 dealt a hand whose dealer was 1.5; Hand.deal and Game said ConfigError.
    rules = Rules()
    good = [" ".join(str(c) for c in CARDS[i * 13 : i * 13 + 13]) for i in range(4)]
    says = rf"^dealer must be a seat number \(0 for the first seat\), got {dealer!r}$"
    with pytest.raises(SeatError, match=says):
        Hand.from_hands(rules, good, dealer=dealer)  # type: ignore[arg-type]
    with pytest.raises(SeatError, match=says):
        Hand(rules, good, dealer=dealer)  # type: ignore[arg-type]
    if dealer is not None:  # Hand.deal's None is "the hand number's seat"
        with pytest.raises(SeatError, match=says):
            Hand.deal(rules, 1, dealer=dealer)  # type: ignore[arg-type]
        with pytest.raises(SeatError, match="^first_" + says[1:]):
            Game(rules, 1, first_dealer=dealer)  # type: ignore[arg-type]
    assert Hand.from_hands(rules, good, dealer=True).dealer == 1  # an int subclass is its int


def test_hands_or_a_view_that_are_none_are_refused_with_an_arena_error() -> None:
    # Hand.from_hands(rules, None) said "'NoneType' object is not iterable"; Hand.from_view
    # with no view said "'NoneType' object has no attribute 'players'".
    rules = Rules()
    for bad in (None, 5):
        with pytest.raises(CardParseError, match=rf"expected hands: .* per seat, got {bad!r}$"):
            Hand.from_hands(rules, bad)  # type: ignore[arg-type]
    hand = Hand.deal(rules, 3)
    view = hand.view(0)
    with pytest.raises(CardParseError, match=r"expected hands: .* per seat, got None$"):
        Hand.from_view(rules, view, None)  # type: ignore[arg-type]
    hands = [hand.hand(s) for s in range(4)]
    for bad_view in (None, {"seat": 0}):
        with pytest.raises(ConfigError, match=r"^view must be a SeatView, as hand.view\(seat\)"):
            Hand.from_view(rules, bad_view, hands)  # type: ignore[arg-type]


def test_a_view_made_by_hand_with_no_such_seat_is_refused() -> None:
    # Seat 7 was a bare IndexError; seat -1 compared the last seat's hand with the viewer's.
    rules = Rules()
    hand = Hand.deal(rules, 3)
    hands = [hand.hand(s) for s in range(4)]
    for seat in (7, -1):
        made = dataclasses.replace(hand.view(0), seat=seat)
        with pytest.raises(SeatError, match=rf"^view.seat {seat} is not a seat at this table"):
            Hand.from_view(rules, made, hands)


def test_a_view_names_its_seat_as_a_plain_int() -> None:
    # view(True) was a SeatView whose seat was True (any int-like value leaked into it).
    assert type(Hand.deal(Rules(), 3).view(True).seat) is int


def test_a_shallow_copy_of_a_hand_is_independent_too() -> None:
    # copy.copy shared the hand's lists: playing the copy out changed the original.
    hand = Hand.deal(Rules(), 5, hand_number=3)  # hold: play starts at once
    for _ in range(6):  # into the second trick: its cards are in a list the playout extends
        hand.play(hand.legal_plays()[0])
    before = (hand.trick_number, [hand.hand(s) for s in range(4)])
    twin = copy.copy(hand)
    twin.playout(random.Random(1))
    assert twin.is_over and not hand.is_over
    assert (hand.trick_number, [hand.hand(s) for s in range(4)]) == before


def test_a_seats_view_shows_the_kitty_once_the_first_trick_has_taken_it() -> None:
    # SeatView had no kitty: a bot on the engine alone could not see what the SDK's view shows.
    rules = Rules(players=3, kitty=True)
    hand = Hand.deal(rules, 4, hand_number=2)  # 3 players: hand 2 holds, play starts at once
    assert hand.view(0).kitty == ()
    while hand.trick_number == 0:
        hand.play(hand.legal_plays()[0])
    assert hand.kitty and all(hand.view(s).kitty == tuple(hand.kitty) for s in range(3))
    assert Hand.deal(Rules(), 4).view(0).kitty == ()  # no kitty dealt


@pytest.mark.parametrize("mask", [-1, -3, 1 << 52, 1 << 60])
def test_a_number_that_is_no_card_mask_is_refused(mask: int) -> None:
    # mask_indexes(-1) never returned (its list grew without end), 1 << 60 gave index 60, and
    # cards_from_mask(-1) ended in a bare IndexError.
    from arena.engine import mask_indexes, pick_index

    for call in (mask_indexes, cards_from_mask, lambda m: pick_index(m, 0.5)):
        with pytest.raises(CardParseError, match=rf"^not a card mask: {mask} "):
            call(mask)


@pytest.mark.parametrize("mask, draw", [(0, 0.5), (0b111, 1.0), (0b111, -0.1), (0b111, math.nan)])
def test_pick_index_refuses_an_empty_mask_or_a_draw_outside_0_to_1(mask: int, draw: float) -> None:
    # It answered -1, no card index, which play_index then refused as "negative shift count".
    from arena.engine import pick_index

    with pytest.raises(ValueError, match=r"pick_index"):
        pick_index(mask, draw)
    assert [pick_index(0b10110, d) for d in (0.0, 0.4, 0.99)] == [1, 2, 4]


def test_legal_mask_holding_answers_for_a_holding_the_seat_may_not_have() -> None:
    hand = Hand.from_hands(
        Rules(),
        [
            "2C 3C 4C 5C 2D 3D 4D 5D 2S 3S 4S 5S 6S",
            "AC 2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH",
            "6C 7C 8C 9C TC JC QC KC 6D 7D 8D 9D TD",
            "JD QD KD AD 7S 8S 9S TS JS QS KS AS AH",
        ],
        dealer=3,
    )
    for card in ("2C", "AC", "6C", "JD"):
        hand.play(card)
    hearts = sum(c.bit for c in parse_cards("2H 3H"))
    # Seat 1 leads, hearts unbroken: holding only hearts it may lead one; with a club, not.
    assert hand.legal_mask_holding(hearts) == hearts == hand.legal_mask() & hearts
    club = Card.parse("7C").bit
    assert hand.legal_mask_holding(hearts | club) == club
    assert hand.hand_mask(1) != hearts  # its real hand is not asked
    hand.play("2H")
    # Seat 2 must follow hearts if it can: a heart held makes its diamond illegal.
    diamond, heart = Card.parse("6D").bit, Card.parse("4H").bit
    assert hand.legal_mask_holding(diamond | heart) == heart
    assert hand.legal_mask_holding(diamond) == diamond
    passing = Hand.deal(Rules(), seed=1)
    assert passing.legal_mask_holding(diamond) == 0  # the pass: nobody plays
