"""The fallback player: what the referee plays in a seat's place.

It plays after a fault (the substitute) and for a forfeited seat for the rest of the game. It
must be deterministic, so that a record can be replayed and the same faults give the same game,
and it must always be legal, so it only ever chooses among the cards the engine offers. It plays
the lowest cards, which is easy to explain in a fault notice; it is not meant to play well.
"""

from __future__ import annotations

from collections.abc import Sequence

from arena.cards import Card

__all__ = ["fallback_pass", "fallback_play"]


def _low_first(card: Card) -> tuple[int, int]:
    return (int(card.rank), int(card.suit))


def fallback_play(legal: Sequence[Card]) -> Card:
    """The lowest legal card by rank (clubs, diamonds, hearts, spades break ties)."""
    if not legal:
        raise ValueError("the fallback player was asked to play with no legal card")
    return min(legal, key=_low_first)


def fallback_pass(hand: Sequence[Card], count: int) -> tuple[Card, ...]:
    """The ``count`` lowest cards of the hand by rank, in card order."""
    if len(hand) < count:
        raise ValueError(f"cannot pass {count} cards from a hand of {len(hand)}")
    chosen = sorted(hand, key=_low_first)[:count]
    return tuple(sorted(chosen))
