"""Tools for bots that search: guess the hidden cards, then play the hand out with the engine.

:func:`sample_world` deals the cards this seat has not seen to the other seats, consistently with
everything the view shows (how many cards each holds, the suits each has shown it lacks, the
cards this seat passed), and returns an engine :class:`~arena.engine.Hand` at exactly the
position of the view. :func:`playout` finishes such a hand quickly with a simple greedy policy
(duck under the winner, shed the queen and high hearts when void), which is a far better guess
at how real players continue than random cards, at a few microseconds per card.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from arena.cards import QUEEN_OF_SPADES, RANKS_PER_SUIT, Card, Suit, mask_of
from arena.client.view import DecisionKind, DecisionView
from arena.engine import Hand, HandResult
from arena.rules import FirstLead, PassDirection

__all__ = ["playout", "sample_world"]

SAMPLE_ATTEMPTS = 50
"""Greedy deals tried before giving up on the void constraints (they are nearly always met)."""

_SUIT_BITS = (1 << RANKS_PER_SUIT) - 1
_QS_INDEX = QUEEN_OF_SPADES.index
_HEARTS_SHIFT = int(Suit.HEARTS) * RANKS_PER_SUIT


def sample_world(view: DecisionView, rng: random.Random) -> Hand:
    """An engine hand at the view's position, the unseen cards dealt at random but consistently."""
    rules = view.rules
    n = view.players
    me = view.seat
    played_by: list[list[Card]] = [[] for _ in range(n)]
    sequence: list[Card] = []
    for trick in (*view.tricks, *((view.trick,) if view.trick is not None else ())):
        for pos, card in enumerate(trick.cards):
            played_by[trick.seat_of(pos, n)].append(card)
            sequence.append(card)
    played = mask_of(sequence)
    forced: list[list[Card]] = [[] for _ in range(n)]
    if view.pass_to != me:
        forced[view.pass_to] = [c for c in view.passed if not played & c.bit]
    if rules.first_lead is FirstLead.ANY_CLUB and sequence:
        # The first trick's leader held the lowest club in play, whatever club it led.
        first = view.tricks[0] if view.tricks else view.trick
        assert first is not None
        lowest_club = min(c for c in rules.cards_in_deck if c.suit is Suit.CLUBS)
        if not (played | mask_of(view.hand)) & lowest_club.bit and first.leader != me:
            forced[first.leader].append(lowest_club)
    forced_mask = mask_of(c for f in forced for c in f)
    pool = [c for c in view.unseen if not forced_mask & c.bit]
    # One more bin for the kitty: its cards stay unseen even after the first trick takes it.
    capacity = [0 if s == me else view.cards_in_hand[s] - len(forced[s]) for s in range(n)]
    capacity.append(rules.kitty_size)
    voids = [0] * (n + 1)
    for s in range(n):
        for suit in view.voids[s]:
            voids[s] |= _SUIT_BITS << (int(suit) * RANKS_PER_SUIT)
    hidden = _deal(pool, capacity, voids, rng)
    holdings: list[list[Card]] = []
    for s in range(n):
        cards = list(view.hand) if s == me else hidden[s] + forced[s]
        # Play starts from the holdings after the pass, so the hand is rebuilt from them.
        holdings.append(cards + (played_by[s] if view.kind is DecisionKind.PLAY else []))
    kitty = hidden[n]
    if view.kind is DecisionKind.PASS:
        return Hand(
            rules, holdings, dealer=view.dealer, pass_direction=view.pass_direction, kitty=kitty
        )
    hand = Hand(rules, holdings, dealer=view.dealer, pass_direction=PassDirection.HOLD, kitty=kitty)
    for card in sequence:
        hand.play_index(card.index)
    return hand


def _deal(
    pool: Sequence[Card], capacity: Sequence[int], voids: Sequence[int], rng: random.Random
) -> list[list[Card]]:
    """Deal ``pool`` into bins of the given sizes, no card into a bin whose voids hold it."""
    bins = range(len(capacity))
    for _ in range(SAMPLE_ATTEMPTS):
        cards = list(pool)
        rng.shuffle(cards)
        # Most constrained cards first, so that the last ones rarely find every bin full.
        cards.sort(key=lambda c: sum(1 for b in bins if voids[b] & c.bit))
        cards.reverse()
        left = list(capacity)
        out: list[list[Card]] = [[] for _ in bins]
        for card in cards:
            weights = [left[b] if not voids[b] & card.bit else 0 for b in bins]
            total = sum(weights)
            if total == 0:
                break
            pick = rng.randrange(total)
            for b in bins:
                if pick < weights[b]:
                    break
                pick -= weights[b]
            out[b].append(card)
            left[b] -= 1
        else:
            return out
    # The voids cannot be met (a view that contradicts itself): deal ignoring them.
    cards = list(pool)
    rng.shuffle(cards)
    out = []
    start = 0
    for size in capacity:
        out.append(cards[start : start + size])
        start += size
    return out


def playout(hand: Hand, totals: Sequence[int] | None = None) -> HandResult:
    """Play ``hand`` to its end with a fast greedy policy; its result (``totals`` for the moon)."""
    current = hand.current_trick
    trick = [c.index for c in current.cards] if current is not None else []
    while not hand.is_over:
        legal = hand.legal_mask()
        # A forced card (one bit) needs no thought.
        index = _greedy(hand, legal, trick) if legal & (legal - 1) else legal.bit_length() - 1
        trick.append(index)
        if hand.play_index(index):
            trick = []
    return hand.result(totals)


def _greedy(hand: Hand, legal: int, trick: list[int]) -> int:
    """Duck under the winner; win cheaply when last and clean; shed the queen and hearts."""
    if not trick:
        return _lowest_rank(legal)
    lead_suit = trick[0] // RANKS_PER_SUIT
    shift = lead_suit * RANKS_PER_SUIT
    follow = (legal >> shift) & _SUIT_BITS
    if follow:
        best = max(c for c in trick if c // RANKS_PER_SUIT == lead_suit) - shift
        under = follow & ((1 << best) - 1)
        if under:
            return shift + under.bit_length() - 1
        top = follow
        if (
            lead_suit == int(Suit.SPADES)
            and top & (1 << (_QS_INDEX - shift))
            and top != (1 << (_QS_INDEX - shift))
        ):
            top &= ~(1 << (_QS_INDEX - shift))
        if len(trick) == hand.players - 1:
            return shift + top.bit_length() - 1
        return shift + (top & -top).bit_length() - 1
    if legal >> _QS_INDEX & 1 and hand.rules.queen_penalty > 0:
        return _QS_INDEX
    hearts = (legal >> _HEARTS_SHIFT) & _SUIT_BITS
    if hearts:
        return _HEARTS_SHIFT + hearts.bit_length() - 1
    return _highest_rank(legal)


def _lowest_rank(mask: int) -> int:
    best = -1
    best_rank = RANKS_PER_SUIT
    for suit in range(4):
        sub = (mask >> (suit * RANKS_PER_SUIT)) & _SUIT_BITS
        if sub:
            rank = (sub & -sub).bit_length() - 1
            if rank < best_rank:
                best_rank, best = rank, suit * RANKS_PER_SUIT + rank
    return best


def _highest_rank(mask: int) -> int:
    best = -1
    best_rank = -1
    for suit in range(4):
        sub = (mask >> (suit * RANKS_PER_SUIT)) & _SUIT_BITS
        if sub:
            rank = sub.bit_length() - 1
            if rank > best_rank:
                best_rank, best = rank, suit * RANKS_PER_SUIT + rank
    return best
