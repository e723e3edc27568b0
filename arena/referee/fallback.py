"""The fallback player: what the referee plays in a seat's place.

It plays after a fault (the substitute) and for a forfeited seat for the rest of the game. It
must be deterministic, so that a record can be replayed and the same faults give the same game,
and it must always be legal, so it only ever chooses among the cards the engine offers. It plays
the lowest cards, which is easy to explain in a fault notice; it is not meant to play well.
"""

from __future__ import annotations

from collections.abc import Sequence

from arena.cards import Card, parse_cards
from arena.errors import RulesError

__all__ = ["fallback_pass", "fallback_play"]


def _low_first(card: Card) -> tuple[int, int]:
    return (int(card.rank), int(card.suit))


def fallback_play(legal: Sequence[Card | str]) -> Card:
    """The lowest legal card by rank (clubs, diamonds, hearts, spades break ties)."""
    # Codes as the rest of the API takes them ("2H"): they were an AttributeError on .rank.
    cards = parse_cards(legal)
    if not cards:
        raise ValueError("the fallback player was asked to play with no legal card")
    return min(cards, key=_low_first)


def fallback_pass(hand: Sequence[Card | str], count: int) -> tuple[Card, ...]:
    """The ``count`` lowest cards of the hand by rank, in card order."""
    cards = parse_cards(hand)
    if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= len(cards):
        # A count of -1 passed all the cards but one (a slice's end).
        raise RulesError(
            "pass_count", f"cannot pass {count!r:.20} cards from a hand of {len(cards)}"
        )
    chosen = sorted(cards, key=_low_first)[:count]
    return tuple(sorted(chosen))
