"""The deal of a seed is pinned: a change in dealing (on any machine, in any version) fails here.

Tables are replayed, and boards compared across runs and machines, by their seed alone; if these
fail, every stored board id means a different deal. Change the dealing only on purpose, and then
update the pins and say so loudly.
"""

from __future__ import annotations

import random

import pytest

from arena.cards import parse_cards
from arena.engine import Game, Hand, deal_order
from arena.errors import ConfigError
from arena.rules import PassDirection, Rules


def test_the_standard_deal_of_seed_2024_is_pinned() -> None:
    hand = Hand.deal(Rules(), 2024)
    assert [" ".join(str(c) for c in hand.dealt(s)) for s in range(4)] == [
        "7C QC AC 5D 7D 3H 6H 8H KH AH 5S TS KS",
        "4C 8C 9C 2D 3D 8D 2H 7H TH QH 4S 8S 9S",
        "5C TC JC KC 4D 6D 9D JD AD 4H 6S 7S QS",
        "2C 3C 6C TD QD KD 5H 9H JH 2S 3S JS AS",
    ]
    assert deal_order(Rules(), 2024)[:13] == parse_cards("TS 7D 7C 6H 5D KH KS 8H AC 3H 5S AH QC")
    assert (hand.dealer, hand.pass_direction) == (0, PassDirection.LEFT)


def test_a_three_handed_deal_with_a_kitty_is_pinned() -> None:
    hand = Hand.deal(Rules(players=3, kitty=True), 7, hand_number=5)
    assert [" ".join(str(c) for c in hand.dealt(s)) for s in range(3)] == [
        "2C 9C TC 4D 8D 2H 6H 7H 8H 9H KH AH 2S 6S 7S QS KS",
        "3C 5C 6C 8C JC QC KC 2D 6D 7D TD JD QH 3S 5S 9S JS",
        "4C 7C 3D 5D 9D QD KD AD 3H 4H 5H TH JH 4S 8S TS AS",
    ]
    assert hand.kitty == parse_cards("AC")
    assert (hand.dealer, hand.pass_direction) == (2, PassDirection.HOLD)


def test_a_seeded_random_playout_is_pinned() -> None:
    # Also pins Hand.playout's use of the random stream (Python's Mersenne Twister is portable).
    hand = Hand.deal(Rules(), 2024)
    hand.playout(random.Random(1))
    assert hand.result().points == (13, 4, 2, 7)
    assert hand.tricks[0].cards == tuple(parse_cards("2C 4C JC TC"))


class _Seed:
    """An integer type that is not an int (as numpy's are): it has only ``__index__``."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value


def test_a_seed_deals_as_its_int_whatever_its_integer_type() -> None:
    # The compiled kernel refused an integer type other than int, and the Python source hashed
    # str(True) for True: the deal of a seed must not depend on its type or on the build.
    rules = Rules()
    deal = Hand.deal(rules, 7, hand_number=2).dealt(0)
    assert Hand.deal(rules, _Seed(7), hand_number=_Seed(2)).dealt(0) == deal  # type: ignore[arg-type]
    assert Game(rules, _Seed(7)).seed == 7  # type: ignore[arg-type]
    assert deal_order(rules, _Seed(1)) == deal_order(rules, 1)  # type: ignore[arg-type]
    assert Hand.deal(rules, True).dealt(0) == Hand.deal(rules, 1).dealt(0)
    for bad in ("7", 7.0, None):
        with pytest.raises(ConfigError, match=f"seed must be a whole number, got {bad!r}"):
            Hand.deal(rules, bad)  # type: ignore[arg-type]
