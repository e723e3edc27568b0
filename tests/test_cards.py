"""Cards print and parse as two characters, index into bit masks, and stay interned."""

from __future__ import annotations

import copy
import operator
import pickle

import pytest

from arena.cards import (
    CARDS,
    JACK_OF_DIAMONDS,
    QUEEN_OF_SPADES,
    TWO_OF_CLUBS,
    Card,
    Rank,
    Suit,
    cards_from_mask,
    mask_of,
    parse_cards,
)
from arena.errors import CardParseError


def test_every_card_round_trips_through_its_two_character_name() -> None:
    names = [str(c) for c in CARDS]
    assert len(set(names)) == 52
    assert names[:3] == ["2C", "3C", "4C"]
    assert names[-1] == "AS"
    for card in CARDS:
        assert Card.parse(str(card)) is card
        assert Card.parse(str(card).lower()) is card


def test_named_cards() -> None:
    assert str(QUEEN_OF_SPADES) == "QS"
    assert str(TWO_OF_CLUBS) == "2C"
    assert str(JACK_OF_DIAMONDS) == "JD"
    assert Card.parse("TH") == Card(Suit.HEARTS, Rank.TEN)
    assert Card.parse("10H") is Card.parse("TH")
    assert Card.parse(" qs ") is QUEEN_OF_SPADES


@pytest.mark.parametrize("text", ["QX", "1S", "", "Q", "QSS", "11H", "ZZ", "H2"])
def test_bad_card_text_is_refused_with_the_text_in_the_message(text: str) -> None:
    with pytest.raises(CardParseError) as err:
        Card.parse(text)
    assert repr(text) in str(err.value)


def test_index_and_bit_follow_suit_then_rank() -> None:
    for i, card in enumerate(CARDS):
        assert card.index == i == int(card.suit) * 13 + int(card.rank)
        assert card.bit == 1 << i
        assert Card.from_index(i) is card
    assert sorted(CARDS, reverse=True)[0] is Card.parse("AS")
    assert Card.parse("2D") > Card.parse("AC")
    assert Card.parse("3H") >= Card.parse("3H") and Card.parse("3H") <= Card.parse("4H")
    # A card is ordered against cards only: a code string is a plain TypeError, not a
    # comparison with str.index.
    for compare in (operator.lt, operator.le, operator.gt, operator.ge):
        with pytest.raises(TypeError, match="not supported between instances of 'Card' and 'str'"):
            compare(Card.parse("2C"), "QS")


@pytest.mark.parametrize("index", [-1, 52, 99])
def test_an_index_past_the_deck_is_refused(index: int) -> None:
    with pytest.raises(
        CardParseError, match=f"there is no card at index {index}: cards are 0 to 51"
    ):
        Card.from_index(index)


@pytest.mark.parametrize("index", ["3", None, 1.0, True])
def test_what_is_no_index_is_refused_as_a_card_error(index: object) -> None:
    # "3" and None raised a bare TypeError from the comparison; True was the 3 of clubs.
    with pytest.raises(CardParseError, match="cards are 0 to 51"):
        Card.from_index(index)  # type: ignore[arg-type]


def test_an_integer_of_another_type_is_an_index() -> None:
    class Index:  # as a numpy integer is: an int by __index__, not by type
        def __index__(self) -> int:
            return 50

    assert Card.from_index(Index()) == Card.parse("KS")  # type: ignore[arg-type]


@pytest.mark.parametrize("given", [None, 5])
def test_parse_cards_refuses_what_is_no_text_nor_list(given: object) -> None:
    # list() said only "'NoneType' object is not iterable" (a TypeError).
    with pytest.raises(CardParseError, match="give a string like '2C 3C QS' or a list of codes"):
        parse_cards(given)  # type: ignore[arg-type]


def test_cards_stay_interned_through_pickle_and_deepcopy() -> None:
    for card in (QUEEN_OF_SPADES, TWO_OF_CLUBS, Card.parse("7D")):
        assert pickle.loads(pickle.dumps(card)) is card
        assert copy.deepcopy(card) is card
        assert hash(Card(card.suit, card.rank)) == hash(card)


def test_ranks_count_their_pips_for_spot_hearts() -> None:
    assert [r.pips for r in Rank] == list(range(2, 15))
    assert Rank.parse("a") is Rank.ACE and Rank.parse("10") is Rank.TEN
    assert [s.letter for s in Suit] == ["C", "D", "H", "S"]
    assert Suit.parse("h") is Suit.HEARTS
    assert Suit.SPADES.symbol == "♠"
    with pytest.raises(CardParseError, match="'X'"):
        Suit.parse("X")


def test_card_lists_and_masks_round_trip() -> None:
    cards = parse_cards("QS, 2C TH")
    assert [str(c) for c in cards] == ["QS", "2C", "TH"]
    assert parse_cards(["ah", "kh"]) == [Card.parse("AH"), Card.parse("KH")]
    # Card objects among the codes, as mask_of and the engine take them (a CardParseError).
    assert parse_cards([TWO_OF_CLUBS, "QS"]) == [TWO_OF_CLUBS, QUEEN_OF_SPADES]
    mask = mask_of(cards)
    assert mask == QUEEN_OF_SPADES.bit | TWO_OF_CLUBS.bit | Card.parse("TH").bit
    assert cards_from_mask(mask) == sorted(cards)
    assert cards_from_mask(0) == []
    assert cards_from_mask(mask_of(CARDS)) == list(CARDS)
    # Codes too, as the engine's moves take them: a code was read as str.index, a method
    # ("unsupported operand type(s) for <<").
    assert mask_of(["2C", "QS", CARDS[1]]) == mask_of([CARDS[0], Card.parse("QS"), CARDS[1]])
    with pytest.raises(CardParseError, match="cannot parse card 'ZZ'"):
        mask_of(["ZZ"])


def test_one_text_or_a_mask_that_is_no_number_is_named_as_such() -> None:
    # mask_of("QS") read the text letter by letter ("cannot parse card 'Q'"), and
    # cards_from_mask('3') or 1.5 was a bare TypeError from its range check.
    with pytest.raises(CardParseError, match=r"^mask_of takes a list of cards, not the text 'QS'"):
        mask_of("QS")
    for bad in ("3", 1.5, None):
        with pytest.raises(CardParseError, match=f"^not a card mask: {bad!r}"):
            cards_from_mask(bad)  # type: ignore[arg-type]
    assert cards_from_mask(operator.index(5)) == [TWO_OF_CLUBS, Card.parse("4C")]


@pytest.mark.parametrize("text", ["", "CD", "HS", "SPADES", "♠", "1"])
def test_a_suit_is_one_letter_and_nothing_else(text: str) -> None:
    # str.index used to find "" and "CD" at position 0 of "CDHS": clubs, for text that names none.
    with pytest.raises(CardParseError, match=f"unknown suit {text!r}: expected one of C, D, H, S"):
        Suit.parse(text)


@pytest.mark.parametrize("value", [None, 12, 2.0])
def test_suit_and_rank_parse_refuse_what_is_not_text_by_name(value: object) -> None:
    with pytest.raises(CardParseError, match=f"unknown suit {value!r}"):
        Suit.parse(value)  # type: ignore[arg-type]
    with pytest.raises(CardParseError, match=f"unknown rank {value!r}"):
        Rank.parse(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("suit", "rank"),
    [(Rank.QUEEN, Suit.SPADES), (3, 10), (Suit.SPADES, 10), ("S", "Q")],
    ids=["swapped", "plain-ints", "int-rank", "text"],
)
def test_card_refuses_what_is_not_a_suit_then_a_rank(suit: object, rank: object) -> None:
    # Card(Rank.QUEEN, Suit.SPADES) made a card at bit 133 printing as "SQ".
    with pytest.raises(CardParseError, match=r"Card\(suit, rank\) takes a Suit then a Rank"):
        Card(suit, rank)  # type: ignore[arg-type]
    assert Card(Suit.SPADES, Rank.QUEEN) == Card.parse("QS")
