"""Tools for bots that search: guess the hidden cards, then play the hand out with the engine.

:func:`sample_world` deals the cards this seat has not seen to the other seats, consistently with
everything the view shows (how many cards each holds, the cards each seat's plays show it cannot
hold under the rules: the suits it has shown it lacks, and more, such as anything but hearts for a
seat that led a heart before hearts broke; the cards this seat passed, the kitty once the first
trick has shown it), and returns an engine
:class:`~arena.engine.Hand` at exactly the position of the view. :func:`playout` finishes such a
hand quickly with a simple greedy policy (duck under the winner, shed the queen and high hearts
when void), which is a far better guess at how real players continue than random cards, at a few
microseconds per card.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence

from arena.cards import QUEEN_OF_SPADES, RANKS_PER_SUIT, Card, Suit, mask_of
from arena.client.view import DecisionKind, DecisionView
from arena.engine import Hand, HandResult
from arena.errors import ConfigError
from arena.rules import FirstLead, PassDirection

__all__ = ["playout", "sample_world"]

_SUIT_BITS = (1 << RANKS_PER_SUIT) - 1
_ALL = (1 << (4 * RANKS_PER_SUIT)) - 1
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
    return _sample(view, rng, _ruled_out(view))


def _sample(
    view: DecisionView, rng: random.Random, ruled_out: Sequence[int], plays: int | None = None
) -> Hand:
    """A world of ``view`` in which no seat holds a card of its ``ruled_out`` mask, at the
    view's position (after its first ``plays`` cards played, if given)."""
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
    allowed = [_ALL & ~_suits_mask(view.voids[s]) & ~ruled_out[s] for s in range(n)] + [_ALL]
    hidden = _deal(pool, capacity, allowed, rng)
    if capacity[n] and view.tricks:
        # The kitty went to the first trick's winner, and its points count in that seat's
        # points_taken: deal again until the kitty guessed has those points.
        target = _kitty_points(view, forced[n])
        for _ in range(KITTY_ATTEMPTS):
            if sum(rules.card_points(c) for c in hidden[n]) == target:
                break
            hidden = _deal(pool, capacity, allowed, rng)
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
    for card in sequence[:plays]:
        hand.play_index(card.index)
    return hand


_last_ruled_out: tuple[DecisionView | None, tuple[int, ...]] = (None, ())
"""The last view and its seats' cards ruled out: a search samples many worlds of one view."""


def _ruled_out(view: DecisionView) -> tuple[int, ...]:
    """Each seat's cards (bit masks) that it cannot hold now, since holding one would have made
    one of its plays illegal: a card of the suit led when it played another (a void), anything
    but hearts when it led a heart before hearts broke, anything but penalty cards when it
    played one on the first trick, and so on, as the rules of the view say (the engine's own
    rules answer, so every variant is covered; the first lead is :func:`_place_opening_club`'s).
    """
    global _last_ruled_out
    last = _last_ruled_out
    if last[0] is view:
        return last[1]
    n = view.players
    out = [0] * n
    tricks = (*view.tricks, *((view.trick,) if view.trick is not None else ()))
    sequence = [(t.seat_of(pos, n), card) for t in tricks for pos, card in enumerate(t.cards)]
    # The first lead under a club rule follows from the deal, which a replay cannot know.
    start = 0 if view.rules.first_lead is FirstLead.LEFT_OF_DEALER else 1
    if view.kind is DecisionKind.PLAY and len(sequence) > start:
        # Any world of the view will do to replay the plays: where the trick stands, whether
        # hearts are broken and which trick it is follow from the cards played alone. Its own
        # generator, so that the caller's draws never depend on what was kept from before.
        hand = _sample(view, random.Random(0), out, plays=start)
        # A seat's holding at each play, as far as known: what it plays from then on, and the
        # cards passed to it (by this seat).
        holding = [0] * n
        for seat, card in sequence[start:]:
            holding[seat] |= card.bit
        if view.pass_to != view.seat:
            holding[view.pass_to] |= mask_of(view.passed) & ~mask_of(c for _, c in sequence[:start])
        hidden = mask_of(view.unseen) & ~mask_of(view.kitty)
        for seat, card in sequence[start:]:
            if seat != view.seat:
                held = holding[seat]
                maybe = hidden & ~held & ~out[seat]
                if not hand.legal_mask_holding(held | maybe) & card.bit:
                    # Some card would have made this play illegal (no card adds a choice): find
                    # which, one at a time.
                    rest = maybe
                    while rest:
                        bit = rest & -rest
                        rest ^= bit
                        if not hand.legal_mask_holding(held | bit) & card.bit:
                            out[seat] |= bit
            holding[seat] &= ~card.bit
            hand.play_index(card.index)
    found = tuple(out)
    _last_ruled_out = (view, found)
    return found


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
    pool: Sequence[Card], capacity: Sequence[int], allowed: Sequence[int], rng: random.Random
) -> list[list[Card]]:
    """Deal ``pool`` into bins of the given sizes, no card into a bin whose ``allowed`` mask
    lacks it.

    The cards some bin may not hold go first, the most constrained first, each to a bin that
    may hold it, chosen with odds in proportion to the room left there; when every such bin is
    full, cards already dealt move along to make room (an augmenting path), so a deal is found
    whenever one exists. The others then fill the room left in a random order, which is the same
    distribution and much cheaper.
    """
    bins = [b for b in range(len(capacity)) if capacity[b]]
    everywhere = _ALL
    for b in bins:
        everywhere &= allowed[b]
    constrained = [c for c in pool if not everywhere & c.bit]
    free = [c for c in pool if everywhere & c.bit]
    rng.shuffle(constrained)
    options = {c: [b for b in bins if allowed[b] & c.bit] for c in constrained}
    constrained.sort(key=lambda c: len(options[c]))
    left = list(capacity)
    out: list[list[Card]] = [[] for _ in capacity]
    for card in constrained:
        eligible = options[card]
        total = sum(left[b] for b in eligible)
        if total:
            pick = int(rng.random() * total)
            for b in eligible:
                pick -= left[b]
                if pick < 0:
                    break
            out[b].append(card)
            left[b] -= 1
        elif not _make_room(card, eligible, out, left, allowed):
            free.append(card)  # no deal holds it (a view that contradicts itself): anywhere
    rng.shuffle(free)
    start = 0
    for b, room in enumerate(left):
        out[b].extend(free[start : start + room])
        start += room
    return out


def _make_room(
    card: Card,
    eligible: Sequence[int],
    out: list[list[Card]],
    left: list[int],
    allowed: Sequence[int],
) -> bool:
    """Put ``card`` into a full bin of ``eligible``, moving cards along a chain of bins that may
    hold them to one with room; False if no chain reaches one (no deal has room for it)."""
    came_from: dict[int, tuple[int, Card] | None] = dict.fromkeys(eligible)
    frontier = list(eligible)
    while frontier:
        following: list[int] = []
        for b in frontier:
            for moved in out[b]:
                for to in range(len(out)):
                    if to in came_from or not left[to] or not allowed[to] & moved.bit:
                        continue
                    came_from[to] = (b, moved)
                    # Room found: move each card of the chain one bin on, then place ``card``.
                    while (step := came_from[to]) is not None:
                        source, shifted = step
                        out[source].remove(shifted)
                        out[to].append(shifted)
                        left[to] -= 1
                        left[source] += 1
                        to = source
                    out[to].append(card)
                    left[to] -= 1
                    return True
                for to in range(len(out)):
                    if to not in came_from and allowed[to] & moved.bit and not left[to]:
                        came_from[to] = (b, moved)
                        following.append(to)
        frontier = following
    return False


def _suits_mask(suits: Iterable[Suit]) -> int:
    """The bit mask of every card of ``suits``."""
    mask = 0
    for suit in suits:
        mask |= _SUIT_BITS << int(suit) * RANKS_PER_SUIT
    return mask


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
