"""Tools for bots that search: guess the hidden cards, then play the hand out with the engine.

:func:`sample_world` deals the cards this seat has not seen to the other seats, consistently with
everything the view shows (how many cards each holds, the suits each has shown it lacks, the
cards this seat passed, the kitty once the first trick has shown it), and returns an engine
:class:`~arena.engine.Hand` at exactly the position of the view. :func:`playout` finishes such a
hand quickly with a simple greedy policy (duck under the winner, shed the queen and high hearts
when void), which is a far better guess at how real players continue than random cards, at a few
microseconds per card.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from arena.cards import QUEEN_OF_SPADES, RANKS_PER_SUIT, Card, Suit, mask_of
from arena.client.view import DecisionKind, DecisionView
from arena.engine import Hand, HandResult
from arena.errors import ConfigError
from arena.rules import FirstLead, PassDirection

__all__ = ["playout", "sample_world"]

SAMPLE_ATTEMPTS = 50
"""Greedy deals tried before giving up on the void constraints (they are nearly always met)."""

_SUIT_BITS = (1 << RANKS_PER_SUIT) - 1
_QS_INDEX = QUEEN_OF_SPADES.index
_HEARTS_SHIFT = int(Suit.HEARTS) * RANKS_PER_SUIT


def sample_world(view: DecisionView, rng: random.Random) -> Hand:
    """An engine hand at the view's position, the unseen cards dealt at random but consistently."""
    if not isinstance(view, DecisionView):
        raise ConfigError(f"sample_world takes a DecisionView, got {view!r}")
    if not isinstance(rng, random.Random):
        # Checked here: None or a seed failed deep inside, on a missing shuffle().
        raise ConfigError(
            f"sample_world takes a random.Random as rng, e.g. decision_rng(seed, view), got {rng!r}"
        )
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
    # Cards whose holder is known: bins 0..n-1 are the seats, bin n the kitty (once the first
    # trick's TrickWon has shown it, all of it).
    forced: list[list[Card]] = [[] for _ in range(n + 1)]
    forced[n] = list(view.kitty)
    if view.pass_to != me:
        forced[view.pass_to] = [c for c in view.passed if not played & c.bit]
    # Once play has begun, the first trick's leader held the lowest club in the hands: that
    # holds from the first lead on, and when this seat is about to lead the first trick too
    # (nothing played yet). Skipped then, the clubs below this seat's lowest could be dealt to
    # another seat, which then led instead (a world where this seat was not to move).
    if view.kind is DecisionKind.PLAY and rules.first_lead is not FirstLead.LEFT_OF_DEALER:
        _place_opening_club(view, played_by, forced, rng)
    forced_mask = mask_of(c for f in forced for c in f)
    pool = [c for c in view.unseen if not forced_mask & c.bit]
    capacity = [0 if s == me else view.cards_in_hand[s] - len(forced[s]) for s in range(n)]
    # The kitty's room left to guess: all of it before the first trick shows it, none after
    # (unless the view lacks it: a referee older than PublicState.kitty_cards).
    capacity.append(rules.kitty_size - len(forced[n]))
    voids = [sum(1 << suit for suit in view.voids[s]) for s in range(n)] + [0]
    hidden = _deal(pool, capacity, voids, rng)
    if capacity[n] and view.tricks:
        # The kitty went to the first trick's winner, and its points count in that seat's
        # points_taken: deal again until the kitty guessed has those points.
        target = _kitty_points(view, forced[n])
        for _ in range(KITTY_ATTEMPTS):
            if sum(rules.card_points(c) for c in hidden[n]) == target:
                break
            hidden = _deal(pool, capacity, voids, rng)
    holdings: list[list[Card]] = []
    for s in range(n):
        cards = list(view.hand) if s == me else hidden[s] + forced[s]
        # Play starts from the holdings after the pass, so the hand is rebuilt from them.
        holdings.append(cards + (played_by[s] if view.kind is DecisionKind.PLAY else []))
    kitty = hidden[n] + forced[n]
    if view.kind is DecisionKind.PASS:
        return Hand(
            rules, holdings, dealer=view.dealer, pass_direction=view.pass_direction, kitty=kitty
        )
    hand = Hand(rules, holdings, dealer=view.dealer, pass_direction=PassDirection.HOLD, kitty=kitty)
    for card in sequence:
        hand.play_index(card.index)
    return hand


KITTY_ATTEMPTS = 500
"""Deals tried for a kitty whose points match what the view shows (a handful usually do)."""


def _kitty_points(view: DecisionView, known: Sequence[Card]) -> int:
    """The points of the kitty's unknown cards, as the first trick's winner's points show them."""
    rules = view.rules
    winner = view.tricks[0].winner
    assert winner is not None
    from_tricks = sum(
        rules.card_points(c) for t in view.tricks if t.winner == winner for c in t.cards
    )
    return view.points_taken[winner] - from_tricks - sum(rules.card_points(c) for c in known)


def _place_opening_club(
    view: DecisionView,
    played_by: Sequence[Sequence[Card]],
    forced: list[list[Card]],
    rng: random.Random,
) -> None:
    """Put the clubs below the opening lead where the club-lead rules say they must be.

    The first trick's leader (this seat, when it is about to lead it) held the lowest club dealt
    to a hand after the pass, and any club below that one lay in the kitty. The unseen clubs
    below the lowest club known to be in a hand therefore went to the kitty, except, when any
    club may be led, the lowest of them that did not, which was the leader's (and must be, if
    that known club is another seat's).
    """
    rules = view.rules
    n = view.players
    first = view.tricks[0] if view.tricks else view.trick
    assert first is not None  # a play view: its first trick is done or being played
    leader = first.leader
    owner = {c: s for s in range(n) for c in played_by[s]}
    owner.update(dict.fromkeys(view.hand, view.seat))
    for seat in range(n):
        owner.update(dict.fromkeys(forced[seat], seat))  # e.g. the cards this seat passed
    shown_kitty = set(view.kitty)
    below: list[Card] = []  # unseen clubs below the lowest club seen in a hand
    stop_owner = leader
    for club in (c for c in rules.cards_in_deck if c.suit is Suit.CLUBS):
        if club in shown_kitty:
            continue  # placed already (forced[n]), and in no hand: it neither stops nor counts
        if club in owner:
            stop_owner = owner[club]
            break
        below.append(club)
    if rules.first_lead is FirstLead.LOWEST_CLUB or leader == view.seat:
        forced[n].extend(below)  # below the leader's lowest club, so in no hand
        return
    kitty_room = rules.kitty_size - len(forced[n])
    leader_room = view.cards_in_hand[leader] - len(forced[leader])
    if Suit.CLUBS in view.voids[leader]:
        leader_room = 0  # it has shown that it holds no club any more
    for k, club in enumerate(below):
        # If the lowest club seen is another seat's, one of these must be the leader's.
        must = stop_owner != leader and k == len(below) - 1
        if not must and kitty_room > 0 and rng.randrange(kitty_room + leader_room) < kitty_room:
            forced[n].append(club)
            kitty_room -= 1
            continue
        forced[leader].append(club)
        return


def _deal(
    pool: Sequence[Card], capacity: Sequence[int], voids: Sequence[int], rng: random.Random
) -> list[list[Card]]:
    """Deal ``pool`` into bins of the given sizes, no card into a bin void in its suit.

    ``voids[b]`` is a bit set of suits. The cards of a suit some bin lacks go first, each to a
    bin that may hold it, chosen with odds in proportion to the room left there; the others then
    fill the room left in a random order, which is the same distribution and much cheaper.
    """
    bins = range(len(capacity))
    eligible = [[b for b in bins if not voids[b] >> suit & 1] for suit in range(4)]
    constrained = [c for c in pool if len(eligible[c.suit]) < len(capacity)]
    free = [c for c in pool if len(eligible[c.suit]) == len(capacity)]
    for _ in range(SAMPLE_ATTEMPTS):
        rng.shuffle(constrained)
        # The most constrained suits first, so that the last cards rarely find every bin full.
        constrained.sort(key=lambda c: len(eligible[c.suit]))
        left = list(capacity)
        out: list[list[Card]] = [[] for _ in bins]
        for card in constrained:
            options = eligible[card.suit]
            total = sum(left[b] for b in options)
            if total == 0:
                break
            pick = int(rng.random() * total)
            for b in options:
                pick -= left[b]
                if pick < 0:
                    break
            out[b].append(card)
            left[b] -= 1
        else:
            rng.shuffle(free)
            start = 0
            for b in bins:
                out[b].extend(free[start : start + left[b]])
                start += left[b]
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
    """Play ``hand`` to its end with a fast greedy policy; its result (``totals`` for the moon).

    A hand still in its pass phase (a pass view's :func:`sample_world`) is played from the pass:
    each seat yet to pass passes its highest-ranked cards.
    """
    if not isinstance(hand, Hand):
        raise ConfigError(
            f"playout takes an engine Hand, e.g. sample_world(view, rng), got {hand!r}"
        )
    # Without the passes the play never began: the legal mask was empty, and the engine raised
    # "negative shift count" on the card it was asked to play.
    for seat in hand.seats_to_pass:
        hand.pass_mask(seat, _highest_cards(hand.hand_mask(seat), hand.rules.pass_count))
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


def _highest_cards(mask: int, count: int) -> int:
    """The ``count`` highest-ranked cards of ``mask`` (on a tie of ranks, the first suit's)."""
    chosen = 0
    for _ in range(count):
        chosen |= 1 << _highest_rank(mask & ~chosen)
    return chosen


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
