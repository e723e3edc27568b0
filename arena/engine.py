"""The rules engine: one hand of Hearts (:class:`Hand`) and a game of hands (:class:`Game`).

Pure and deterministic: no I/O, no clock, no unseeded randomness. A deal comes in as data,
either a seed (:meth:`Hand.deal`) or explicit hands (:meth:`Hand.from_hands`). Every legality
question has one answer, given by :meth:`Hand.check_play` / :meth:`Hand.check_pass`;
:meth:`Hand.play` and :meth:`Hand.pass_cards` refuse an illegal move with an
:class:`~arena.errors.IllegalMoveError` naming the seat, the cards and the rule broken.

Inside, a set of cards is an ``int`` bit mask over :attr:`Card.index`, so legality is a handful of
bit operations and :meth:`Hand.copy` is cheap enough for search. For search there is a fast path
that skips the checks: :meth:`Hand.legal_mask`, :meth:`Hand.play_index`, :meth:`Hand.pass_mask`,
:meth:`Hand.playout`, and :meth:`Hand.from_view` to rebuild a hand from what one seat knows.
The seeded deal and the random playout run in :mod:`arena._kernel`, plain loops over ints and
lists that setup.py compiles with mypyc at install when it can (:data:`COMPILED` says whether
they run compiled here); every class and function of this module is Python either way.

The phases are explicit (:class:`Phase`); a future decision kind (a bid, a discard) is a new phase
with its own check and apply pair, and a different deck is a different
:attr:`Rules.cards_in_deck <arena.rules.Rules.cards_in_deck>` (indexes above 51 are free).

Seats are numbered 0..players-1 clockwise: seat ``s + 1`` sits to the left of seat ``s``.

>>> from arena.engine import Hand
>>> from arena.rules import Rules
>>> hand = Hand.deal(Rules(), seed=7)
>>> hand.phase, hand.pass_direction
(<Phase.PASS: 'pass'>, <PassDirection.LEFT: 'left'>)
>>> for seat in hand.seats_to_pass:
...     hand.pass_cards(seat, hand.hand(seat)[-3:])
>>> hand.legal_plays()
[Card.parse('2C')]
"""

from __future__ import annotations

import numbers
import operator
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from fractions import Fraction
from math import floor
from typing import Any

from arena import _kernel
from arena.cards import (
    _MASK_END,
    CARDS,
    JACK_OF_DIAMONDS,
    QUEEN_OF_SPADES,
    RANKS_PER_SUIT,
    Card,
    Suit,
    _not_a_mask,
    cards_from_mask,
)
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
from arena.rules import (
    FirstLead,
    GameEnd,
    MoonRule,
    PassDirection,
    Rules,
    Settling,
    rules_example,
)
from arena.table import MAX_SEED

__all__ = [
    "COMPILED",
    "Game",
    "Hand",
    "HandResult",
    "Phase",
    "SeatView",
    "Trick",
    "deal_order",
    "mask_indexes",
    "pick_index",
    "settle_hand",
]

_SUIT_MASK = _kernel.SUIT_MASK
_HEARTS = _kernel.HEARTS
_NOT_HEARTS = _kernel.NOT_HEARTS
_CLUBS = _kernel.CLUBS
_QS = QUEEN_OF_SPADES.bit
_JD = JACK_OF_DIAMONDS.bit
_HEARTS_SHIFT = RANKS_PER_SUIT * Suit.HEARTS
_SUIT_OF = _kernel.SUIT_OF
_SUIT_MASK_OF = tuple(_SUIT_MASK[s] for s in _SUIT_OF)


def _spot_sums() -> tuple[int, ...]:
    """The pips of every set of hearts (13 bits -> sum of pips 2..14), so that scoring is one
    lookup: each set's sum is its lowest card's pips plus the sum of the rest, made already (a
    sum per set took 15 ms of every import: every bot process's start)."""
    sums = [0] * (1 << RANKS_PER_SUIT)
    for m in range(1, len(sums)):
        low = m & -m
        sums[m] = sums[m ^ low] + low.bit_length() + 1  # rank r is bit r, its pips r + 2
    return tuple(sums)


_SPOT_SUM = _spot_sums()
_OPEN_FREE = _kernel.OPEN_FREE
_OPEN_LOWEST_CLUB = _kernel.OPEN_LOWEST_CLUB
_OPEN_ANY_CLUB = _kernel.OPEN_ANY_CLUB
_NEXT_SEAT = {n: tuple((s + 1) % n for s in range(n)) for n in range(1, 8)}
"""The seat to the left of each seat, by table size."""
_NEVER = _kernel.NEVER
_BITS = _kernel.BITS

COMPILED = _kernel.COMPILED
"""Whether the engine's inner loops run compiled (mypyc, built at install by setup.py) in this
process, or as Python source. Both make exactly the same deals and moves; see :mod:`arena._kernel`
for when the compiled build is used."""


class Phase(Enum):
    """What a hand is waiting for."""

    PASS = "pass"
    """Every seat that has not yet passed chooses cards to pass (simultaneously)."""
    PLAY = "play"
    """The seat :attr:`Hand.to_move` plays a card to the current trick."""
    OVER = "over"
    """Every trick has been played; :meth:`Hand.result` is final."""


_OPENING = {
    FirstLead.LOWEST_CLUB: _OPEN_LOWEST_CLUB,
    FirstLead.ANY_CLUB: _OPEN_ANY_CLUB,
    FirstLead.LEFT_OF_DEALER: _OPEN_FREE,
}

# Enum members looked up on their class cost a metaclass call each time: bound once here.
_PASS = Phase.PASS
_PLAY = Phase.PLAY
_OVER = Phase.OVER
_HOLD = PassDirection.HOLD
_MOON_OFF = MoonRule.OFF
_MOON_ADD = MoonRule.ADD
_MOON_SUBTRACT = MoonRule.SUBTRACT
_MOON_BEST = MoonRule.BEST


@dataclass(frozen=True, slots=True)
class Trick:
    """One trick: who led, the cards in the order played, and who won it (None while open)."""

    number: int
    """The trick's position in the hand, from 0."""
    leader: int
    """The seat that led."""
    cards: tuple[Card, ...]
    """The cards played, the leader's first."""
    winner: int | None
    """The seat that took the trick, or None if it is still being played."""

    @property
    def lead_suit(self) -> Suit | None:
        """The suit led, or None for an empty trick."""
        return self.cards[0].suit if self.cards else None

    def seat_of(self, position: int, players: int) -> int:
        """The seat that played the card at ``position`` in :attr:`cards`."""
        return (self.leader + position) % players


@dataclass(frozen=True, slots=True)
class HandResult:
    """The score of a finished hand."""

    points: tuple[int, ...]
    """Points per seat after the moon, sun and no-tricks rules (what is added to the totals)."""
    taken_points: tuple[int, ...]
    """Points per seat from the cards taken, before the moon rule."""
    hearts_taken: tuple[int, ...]
    """Hearts taken per seat (counted one each, whatever their spot value)."""
    tricks_won: tuple[int, ...]
    """Tricks taken per seat."""
    moon: int | None
    """The seat that shot the moon (took every penalty card), or None (always None if the moon
    rule is off)."""
    sun: bool
    """Whether the shooter also took every trick and the sun rule doubled the moon."""
    moon_rule: MoonRule | None
    """How the moon was scored (ADD or SUBTRACT; BEST resolves to one of them), or None."""


@dataclass(frozen=True, slots=True)
class SeatView:
    """What one seat may know: its own cards, its own passes, and everything played in public."""

    seat: int
    """The seat this view belongs to."""
    players: int
    """Seats at the table."""
    dealer: int
    """The dealer of this hand."""
    phase: Phase
    """What the hand is waiting for."""
    to_move: int | None
    """The seat to play (None in the pass phase or when the hand is over)."""
    hand: tuple[Card, ...]
    """The seat's cards now."""
    legal: tuple[Card, ...]
    """The seat's legal plays if it is this seat's turn to play, else empty."""
    pass_direction: PassDirection
    """This hand's pass direction."""
    pass_count: int
    """Cards to pass this hand (0 when holding)."""
    passed: tuple[Card, ...] | None
    """The cards this seat passed, once passed."""
    received: tuple[Card, ...] | None
    """The cards this seat received, once every seat has passed."""
    tricks: tuple[Trick, ...]
    """The completed tricks of this hand."""
    current: Trick | None
    """The trick being played (possibly empty), or None when the hand is not in play."""
    hearts_broken: bool
    """Whether a card that breaks hearts has been played."""
    points_taken: tuple[int, ...]
    """Points per seat from cards taken so far (before the moon rule)."""
    voids: tuple[frozenset[Suit], ...]
    """Per seat, the suits it has shown it does not hold (by not following)."""
    cards_held: tuple[int, ...]
    """Per seat, how many cards it holds now (public: everyone sees the others' hands shrink)."""
    kitty: tuple[Card, ...] = ()
    """The kitty's cards once the first trick has taken them (public then); empty before that,
    and without a kitty (as the SDK's view, and for :meth:`Hand.from_view`'s ``kitty``)."""


def deal_order(rules: Rules, seed: int, hand_number: int = 0) -> list[Card]:
    """The cards of hand ``hand_number`` of a game seeded ``seed``, in the order dealt.

    Seat 0 gets the first :attr:`Rules.hand_size <arena.rules.Rules.hand_size>` cards, seat 1
    the next, and so on; what is left is the kitty.
    """
    check_rules(rules)
    seed, hand_number = check_seed(seed), _whole("hand_number", hand_number)
    # As Hand.deal refuses it: the kernel would deal a hand -1 that no game ever plays.
    _check_hand_number(hand_number)
    return [CARDS[i] for i in _shuffled(_deck_indexes(rules), seed, hand_number)]


def _check_hand_number(hand_number: int) -> None:
    """Refuse a negative hand number (a :class:`ConfigError`): a game's hands count from 0."""
    if hand_number < 0:
        raise ConfigError(f"hand_number counts from 0, got {hand_number}")


def _check_seat(name: str, seat: object, players: int) -> int:
    """``seat`` as an ``int``, or a :class:`SeatError` if the argument ``name`` is not a seat of
    ``players``.

    Not a RulesError: a seat given to a deal or a game is no field of the rules, and
    ``rules.players: ...`` would send the user to the wrong place.
    """
    # What is no seat number ("1", 1.5, None) is refused as it is for the moves: compared as it
    # is, it raised a bare TypeError, or 1.5 became the dealer.
    index = _seat_number(seat, name)
    if not 0 <= index < players:
        raise SeatError(
            f"{name} {index} is not a seat at this table: its seats are 0 to {players - 1}"
        )
    return index


def _seat_number(seat: object, name: str = "seat") -> int:
    """``seat`` as an ``int``, or a :class:`SeatError` naming the argument ``name`` for what is
    no seat number at all ("3", 1.5): compared with the seats as it is, text would be judged
    "not your turn" or raise a bare TypeError."""
    if type(seat) is int:
        return seat
    try:
        return operator.index(seat)  # type: ignore[arg-type]  # checked by the call itself
    except TypeError:
        raise SeatError(
            f"{name} must be a seat number (0 for the first seat), got {seat!r}"
        ) from None


def _whole(name: str, value: int) -> int:
    """``value`` as a plain ``int``, or a :class:`ConfigError` naming ``name``.

    A deal hashes the seed's digits: an int subclass (``True``) or an integer type of another
    library (numpy's) must give the digits of its ``int``, in the compiled kernel (which takes
    only an ``int``) and in the Python source (which would format whatever it was given) alike.
    """
    if type(value) is int:
        return value
    try:
        return operator.index(value)
    except TypeError:
        raise ConfigError(f"{name} must be a whole number, got {value!r}") from None


def check_seed(value: int) -> int:
    """A game's seed as a plain ``int`` from 0 to :data:`MAX_SEED`, or a :class:`ConfigError`."""
    seed = _whole("seed", value)
    if not 0 <= seed <= MAX_SEED:
        # As a table refuses it: -1 or 2**63 dealt a game no referee would deal, and 10**5000
        # was a bare ValueError from the deal's formatting of its digits (which printing it here
        # would be too: Python caps the digits it converts).
        shown = f"{seed}" if seed.bit_length() <= 256 else f"a number of {seed.bit_length()} bits"
        raise ConfigError(
            f"seed must be a whole number from 0 to {MAX_SEED} (2**63 - 1), as a table's, "
            f"got {shown}"
        )
    return seed


def check_rules(rules: object) -> None:
    """Refuse rules that are not a :class:`Rules` (a preset's name, a dict) at once, with the fix,
    rather than with an AttributeError from deep inside the deal (``play_local`` asks too)."""
    if not isinstance(rules, Rules):
        raise ConfigError(
            f"rules must be a Rules, e.g. {rules_example(rules)} from arena, got {rules!r:.80}"
        )


def _shuffled(deck: tuple[int, ...], seed: int, hand_number: int) -> list[int]:
    """The card indexes of ``deck`` in the order fixed by the seed and the hand number."""
    return [deck[i] for i in _kernel.deal_positions(len(deck), seed, hand_number)]


def mask_indexes(mask: int) -> list[int]:
    """The card indexes in a bit mask, lowest first (for drivers that work on indexes)."""
    if 0 <= mask < _MASK_END:
        return _kernel.indexes(mask)
    raise _not_a_mask(mask)


def pick_index(mask: int, draw: float) -> int:
    """The index of the card of ``mask`` chosen by ``draw`` in [0, 1) (uniform for a uniform draw).

    The card at position ``int(draw * count)`` in index order: with ``random.random()`` as the
    draw this is a uniformly random legal play, ``hand.play_index(pick_index(hand.legal_mask(),
    rng.random()))``.
    """
    if mask == 0:
        raise CardParseError("pick_index needs a card mask with a card in it, got 0")
    if not 0 < mask < _MASK_END:
        raise _not_a_mask(mask)
    if not 0.0 <= draw < 1.0:  # NaN too
        raise ValueError(f"pick_index's draw must be in [0, 1), got {draw!r}")
    for _ in range(floor(draw * mask.bit_count())):
        mask &= mask - 1
    return (mask & -mask).bit_length() - 1


def _cards(cards: Iterable[Card | str] | str) -> tuple[Card, ...]:
    """Cards from cards or codes (one string of codes split on spaces or commas, like
    parse_cards)."""
    if isinstance(cards, Card):  # one card where a list belongs: a pass of one card
        return (cards,)
    items = _words(cards) if isinstance(cards, str) else cards
    try:
        return tuple(c if isinstance(c, Card) else Card.parse(c) for c in items)
    except TypeError:  # not a collection at all (None, a number)
        raise _not_cards(cards) from None


def _per_seat(hands: object) -> list[Any]:
    """``hands`` as a list of per-seat hands, or a :class:`CardParseError` for what is no list
    at all (None, a number), which ``for`` would refuse only with a bare TypeError."""
    # One string would be read letter by letter, a hand per letter.
    if isinstance(hands, str) or not isinstance(hands, Iterable):
        raise CardParseError(
            f"expected hands: one list of cards (or one string of codes) per seat, got {hands!r}"
        )
    return list(hands)


def _not_cards(given: object) -> CardParseError:
    """The error for what is no collection of cards at all (None, a number)."""
    return CardParseError(
        f"expected cards: a list of cards or codes, or one string like '2C 3C QS', got {given!r}"
    )


class Hand:
    """One deal of Hearts, from the pass to the last trick.

    Attributes: ``rules`` (the :class:`~arena.rules.Rules` in force), ``dealer`` (the dealer's
    seat), ``pass_direction`` (this hand's :class:`~arena.rules.PassDirection`) and ``phase``
    (the :class:`Phase`: what the hand waits for). Start one with :meth:`deal` (from a seed) or
    :meth:`from_hands` (from explicit hands).
    """

    __slots__ = (
        "_best",
        "_best_seat",
        "_breakers",
        "_dealt",
        "_hands",
        "_hearts_broken",
        "_history",
        "_kitty",
        "_lead",
        "_lead_free",
        "_leader",
        "_lowest_club",
        "_n",
        "_opening",
        "_passed",
        "_queen_lead",
        "_received",
        "_restrict",
        "_taken",
        "_trick",
        "_tricks_total",
        "_tricks_won",
        "_turn",
        "_voids",
        "dealer",
        "pass_direction",
        "phase",
        "rules",
    )

    rules: Rules
    dealer: int
    pass_direction: PassDirection
    phase: Phase

    def __init__(
        self,
        rules: Rules,
        hands: Sequence[Iterable[Card | str] | str],
        *,
        dealer: int = 0,
        pass_direction: PassDirection | str = PassDirection.HOLD,
        kitty: Iterable[Card | str] | str = (),
    ) -> None:
        """Start a hand from explicit hands (one list of cards per seat, seat 0 first; a hand may
        be one string of codes, "2C 3C QS", as in :meth:`from_hands`)."""
        check_rules(rules)
        masks = [_to_mask(h) for h in _per_seat(hands)]
        kitty_mask = _to_mask(kitty)
        dealer = _check_seat("dealer", dealer, rules.players)
        _check_deal(rules, masks, kitty_mask, dealer)
        if isinstance(pass_direction, PassDirection):
            direction = pass_direction
        else:
            try:
                direction = PassDirection(pass_direction)
            except ValueError:
                choices = ", ".join(d.value for d in PassDirection)
                raise RulesError(
                    "pass_cycle", f"unknown direction {pass_direction!r}: expected one of {choices}"
                ) from None
        n = rules.players
        if rules.pass_count == 0:
            direction = PassDirection.HOLD
        if direction is PassDirection.ACROSS and n % 2:
            raise RulesError("pass_cycle", f"'across' does not exist with {n} players")
        if direction in (PassDirection.LEFT_2, PassDirection.RIGHT_2) and n < 5:
            raise RulesError("pass_cycle", f"'{direction.value}' needs 5 or more players")
        self._setup(rules, masks, kitty_mask, dealer, direction)

    def _setup(
        self, rules: Rules, masks: list[int], kitty: int, dealer: int, direction: PassDirection
    ) -> None:
        n = rules.players
        self.rules = rules
        self.dealer = dealer
        self.pass_direction = direction
        self._n = n
        self._tricks_total = rules.hand_size
        self._dealt = tuple(masks)
        self._hands = masks
        self._kitty = kitty
        self._passed: list[int | None] = [None] * n
        self._received: list[int | None] = [None] * n
        self._taken = [0] * n
        self._tricks_won = [0] * n
        self._voids = [0] * n
        # (leader, card indexes in playing order, winner) per completed trick; never mutated.
        self._history: list[tuple[int, Sequence[int], int]] = []
        self._trick: list[int] = []
        self._lead = 0
        self._best = -1
        self._best_seat = 0
        self._leader = 0
        self._turn = 0
        self._lowest_club = -1
        self._breakers = rules.breaking_mask
        self._hearts_broken = False
        self._lead_free = not rules.must_break_hearts
        # A leader holding only hearts and the scoring queen may lead a heart, if the rules say so.
        self._queen_lead = (
            _QS if rules.lead_hearts_with_queen and rules.queen_penalty > 0 else _NEVER
        )
        self._restrict = 0 if rules.penalty_on_first_trick else rules.penalty_mask
        self._opening = _OPENING[rules.first_lead]
        if direction is _HOLD:
            self._start_play()
        else:
            self.phase = _PASS

    # ---- construction ---------------------------------------------------------------------

    @classmethod
    def deal(
        cls, rules: Rules, seed: int, *, hand_number: int = 0, dealer: int | None = None
    ) -> Hand:
        """Deal hand ``hand_number`` of a game from a seed (pass direction from the cycle)."""
        check_rules(rules)
        n = rules.players
        seed, hand_number = check_seed(seed), _whole("hand_number", hand_number)
        _check_hand_number(hand_number)
        if dealer is not None:
            dealer = _check_seat("dealer", dealer, n)
        size = rules.hand_size
        masks, kitty = _kernel.deal_masks(_deck_bits(rules), seed, hand_number, n, size)
        hand = cls.__new__(cls)
        hand._setup(
            rules,
            masks,
            kitty,
            hand_number % n if dealer is None else dealer,
            rules.pass_direction(hand_number),
        )
        return hand

    @classmethod
    def from_hands(
        cls,
        rules: Rules,
        hands: Sequence[Iterable[Card | str] | str],
        *,
        dealer: int = 0,
        pass_direction: PassDirection | str = PassDirection.HOLD,
        kitty: Iterable[Card | str] | str = (),
    ) -> Hand:
        """Start a hand from explicit hands; each hand may be a string like "2C 3C QS"."""
        parsed = [_words(h) if isinstance(h, str) else h for h in _per_seat(hands)]
        k = _words(kitty) if isinstance(kitty, str) else kitty
        return cls(rules, parsed, dealer=dealer, pass_direction=pass_direction, kitty=k)

    @classmethod
    def from_view(
        cls,
        rules: Rules,
        view: SeatView,
        hands: Sequence[Iterable[Card | str] | str],
        *,
        kitty: Iterable[Card | str] | str = (),
    ) -> Hand:
        """A hand consistent with ``view`` in which each seat holds ``hands[seat]`` now.

        For search by sampling (determinization): guess the cards the viewer cannot see, give
        every seat's current cards (the viewer's own must match the view) and the kitty, and
        get a hand in the same position, with the tricks so far replayed. In the play phase the
        other seats' passes are unknown, so :meth:`dealt` is their holding after the pass.
        Raises :class:`~arena.errors.DealError` (a RulesError) or
        :class:`~arena.errors.IllegalMoveError` if the guess contradicts the view (wrong cards,
        or a void the replay breaks).
        """
        check_rules(rules)
        if not isinstance(view, SeatView):  # read field by field below: an AttributeError
            raise ConfigError(
                f"view must be a SeatView, as hand.view(seat) gives, got {view!r:.80}"
            )
        n = rules.players
        if view.players != n:
            raise DealError("view", f"the view has {view.players} seats, the rules {n}")
        # A view made by hand with seat 7 was an IndexError; seat -1 read another seat's hand.
        _check_seat("view.seat", view.seat, n)
        masks = [_to_mask(h) for h in _per_seat(hands)]
        if len(masks) != n:  # len(masks): hands may be a generator, read once
            raise DealError("hands", f"{n} players but {len(masks)} hands were given")
        if masks[view.seat] != _to_mask(view.hand):
            raise DealError(
                "hands", f"hands[{view.seat}] is not the viewer's hand {_show_cards(view.hand)}"
            )
        kitty_mask = _to_mask(kitty)
        hand = cls.__new__(cls)
        if view.phase is _PASS:
            _check_deal(rules, masks, kitty_mask, view.dealer)
            hand._setup(rules, masks, kitty_mask, view.dealer, view.pass_direction)
            if view.passed is not None:
                hand.pass_cards(view.seat, view.passed)
            return hand
        played = list(view.tricks)
        if view.current is not None:
            played.append(view.current)
        gone = 0
        for trick in played:
            for card in trick.cards:
                gone |= card.bit
        for seat, mask in enumerate(masks):
            if mask & gone:
                # Dropped silently as the replay put it back: a sampler's slip went unseen.
                raise DealError(
                    "hands",
                    f"hands[{seat}] holds {_show_cards(cards_from_mask(mask & gone))}, played "
                    "already in this hand",
                )
        holdings = masks.copy()
        for trick in played:
            for pos, card in enumerate(trick.cards):
                holdings[trick.seat_of(pos, n)] |= card.bit
        _check_deal(rules, holdings, kitty_mask, view.dealer, masks)
        hand._setup(rules, holdings, kitty_mask, view.dealer, PassDirection.HOLD)
        hand.pass_direction = view.pass_direction
        if view.passed is not None and view.received is not None:
            passed, received = _to_mask(view.passed), _to_mask(view.received)
            hand._passed[view.seat] = passed
            hand._received[view.seat] = received
            dealt = list(hand._dealt)
            dealt[view.seat] = (dealt[view.seat] & ~received) | passed
            hand._dealt = tuple(dealt)
        for trick in played:
            for pos, card in enumerate(trick.cards):
                seat = trick.seat_of(pos, n)
                if seat != hand._turn or not hand.legal_mask() & card.bit:
                    why = hand.check_play(seat, card) or Violation.NOT_YOUR_TURN
                    raise IllegalMoveError(seat, (card,), why)
                hand.play_index(card.index)
        return hand

    def __copy__(self) -> Hand:
        """``copy.copy(hand)`` is :meth:`copy`: a shallow copy shared the hand's lists, and
        playing it out changed the original."""
        return self.copy()

    def copy(self) -> Hand:
        """An independent copy of this hand's state (cheap; for search)."""
        new = Hand.__new__(Hand)
        new.rules = self.rules
        new.dealer = self.dealer
        new.pass_direction = self.pass_direction
        new.phase = self.phase
        new._n = self._n
        new._tricks_total = self._tricks_total
        new._dealt = self._dealt
        new._hands = self._hands.copy()
        new._kitty = self._kitty
        new._passed = self._passed.copy()
        new._received = self._received.copy()
        new._taken = self._taken.copy()
        new._tricks_won = self._tricks_won.copy()
        new._voids = self._voids.copy()
        new._history = self._history.copy()
        new._trick = self._trick.copy()
        new._lead = self._lead
        new._best = self._best
        new._best_seat = self._best_seat
        new._leader = self._leader
        new._turn = self._turn
        new._lowest_club = self._lowest_club
        new._breakers = self._breakers
        new._hearts_broken = self._hearts_broken
        new._lead_free = self._lead_free
        new._queen_lead = self._queen_lead
        new._restrict = self._restrict
        new._opening = self._opening
        return new

    # ---- state ----------------------------------------------------------------------------

    @property
    def players(self) -> int:
        """Seats at the table."""
        return self._n

    @property
    def to_move(self) -> int | None:
        """The seat to play now, or None in the pass phase and once the hand is over."""
        return self._turn if self.phase is _PLAY else None

    @property
    def seats_to_pass(self) -> tuple[int, ...]:
        """The seats that still have to pass (empty outside the pass phase)."""
        if self.phase is not _PASS:
            return ()
        return tuple(s for s, p in enumerate(self._passed) if p is None)

    @property
    def is_over(self) -> bool:
        """Whether every trick has been played."""
        return self.phase is _OVER

    @property
    def hearts_broken(self) -> bool:
        """Whether a card that breaks hearts has been played."""
        return self._hearts_broken

    @property
    def leader(self) -> int:
        """The seat that led the trick being played, or the winner of the trick just completed.

        That winner leads the next trick, or took the last one of a hand that is over. 0 while
        passing.
        """
        return self._leader

    @property
    def trick_number(self) -> int:
        """The number of the trick being played (0 for the first; the trick count once over)."""
        return len(self._history)

    def _seat(self, seat: int) -> int:
        """``seat`` itself, if it is at the table (a :class:`SeatError` if not)."""
        # Checked where a caller names a seat: a negative number would index from the end of
        # the per-seat lists and quietly answer for another seat.
        index = _seat_number(seat)
        if not 0 <= index < self._n:
            raise SeatError(
                f"there is no seat {seat} at this table: its seats are 0 to {self._n - 1}"
            )
        return index

    def hand(self, seat: int) -> list[Card]:
        """The cards ``seat`` holds now, in index order."""
        return cards_from_mask(self._hands[self._seat(seat)])

    def hand_mask(self, seat: int) -> int:
        """The cards ``seat`` holds now, as a bit mask."""
        if type(seat) is int and 0 <= seat < self._n:  # _seat's check inline: a referee asks
            return self._hands[seat]  # for every request
        return self._hands[self._seat(seat)]

    def dealt(self, seat: int) -> list[Card]:
        """The cards dealt to ``seat``, before the pass."""
        return cards_from_mask(self._dealt[self._seat(seat)])

    def dealt_mask(self, seat: int) -> int:
        """The cards dealt to ``seat``, as a bit mask."""
        return self._dealt[self._seat(seat)]

    @property
    def kitty(self) -> list[Card]:
        """The kitty's cards (empty unless the rules deal one)."""
        return cards_from_mask(self._kitty)

    def passed(self, seat: int) -> list[Card] | None:
        """The cards ``seat`` passed, or None if it has not passed (or nobody passes)."""
        p = self._passed[self._seat(seat)]
        return None if p is None else cards_from_mask(p)

    def received(self, seat: int) -> list[Card] | None:
        """The cards ``seat`` received, once every seat has passed."""
        r = self._received[self._seat(seat)]
        return None if r is None else cards_from_mask(r)

    def passed_mask(self, seat: int) -> int:
        """The cards ``seat`` passed, as a bit mask (0 until it passes, and when nobody does)."""
        return self._passed[self._seat(seat)] or 0

    def received_mask(self, seat: int) -> int:
        """The cards ``seat`` received, as a bit mask (0 until every seat has passed)."""
        return self._received[self._seat(seat)] or 0

    def pass_target(self, seat: int) -> int:
        """The seat that receives ``seat``'s pass this hand."""
        return (self._seat(seat) + self.pass_direction.offset(self._n)) % self._n

    @property
    def tricks(self) -> tuple[Trick, ...]:
        """The completed tricks, in order."""
        return tuple(self._trick_value(i) for i in range(len(self._history)))

    @property
    def current_trick(self) -> Trick | None:
        """The trick being played (possibly with no card yet), or None outside the play phase."""
        if self.phase is not _PLAY:
            return None
        cards = tuple(CARDS[c] for c in self._trick)
        return Trick(len(self._history), self._leader, cards, None)

    def points_taken(self) -> tuple[int, ...]:
        """Points per seat from the cards taken so far, before the moon rule."""
        return tuple(self._scores()[0])

    def _scores(self) -> tuple[list[int], list[int], int | None]:
        """Points and hearts per seat from the cards taken, and who holds every moon card."""
        rules = self.rules
        queen = rules.queen_penalty
        jack = rules.jack_of_diamonds
        spot = rules.spot_hearts
        moon = rules.moon_mask
        points = []
        hearts = []
        holder = None
        for seat, m in enumerate(self._taken):
            suit = m & _HEARTS
            count = suit.bit_count()
            hearts.append(count)
            p = _SPOT_SUM[suit >> _HEARTS_SHIFT] if spot else count
            if m & _QS:
                p += queen
            if m & _JD:
                p += jack
            points.append(p)
            if m & moon == moon and holder is None:
                holder = seat
        return points, hearts, holder

    def taken(self, seat: int) -> list[Card]:
        """The cards ``seat`` has taken in tricks (and the kitty, if it won the first trick)."""
        return cards_from_mask(self._taken[self._seat(seat)])

    def taken_mask(self, seat: int) -> int:
        """The cards ``seat`` has taken, as a bit mask."""
        return self._taken[self._seat(seat)]

    def voids(self, seat: int) -> frozenset[Suit]:
        """The suits ``seat`` has shown it does not hold."""
        v = self._voids[self._seat(seat)]
        return frozenset(Suit(s) for s in range(4) if v >> s & 1)

    # ---- legality -------------------------------------------------------------------------

    def legal_mask(self) -> int:
        """The legal plays of the seat to move, as a bit mask (0 outside the play phase)."""
        if self.phase is not _PLAY:
            return 0
        return self._legal_holding(self._hands[self._turn])

    def legal_mask_holding(self, held: int) -> int:
        """The legal plays of the seat to move if it held the cards of bit mask ``held`` (0
        outside the play phase): what a card it plays shows of its hand, for a search that
        guesses the hidden cards (a card that would have made the play illegal is not held).
        The first lead under the lowest-club rule is the deal's lowest club, whatever ``held``."""
        if self.phase is not _PLAY:
            return 0
        return self._legal_holding(held)

    def _legal_holding(self, held: int) -> int:
        """The legal plays of the seat to move, holding ``held``, in the play phase."""
        lead = self._lead
        if lead:
            options = held & lead or held
        elif self._opening:
            if self._opening == _OPEN_LOWEST_CLUB:
                return 1 << self._lowest_club
            return held & _CLUBS
        elif self._lead_free:
            options = held
        else:
            # Hearts wait to be broken unless the leader holds nothing else (or, if the rules
            # allow it, nothing else but the queen of spades).
            non_hearts = held & _NOT_HEARTS
            options = non_hearts if non_hearts and non_hearts != self._queen_lead else held
        restrict = self._restrict
        if restrict and options & ~restrict:
            # No penalty card on the first trick while the seat has a choice without one.
            return options & ~restrict
        return options

    def legal_plays(self) -> list[Card]:
        """The legal plays of the seat to move, in index order (empty outside the play phase)."""
        return cards_from_mask(self.legal_mask())

    def check_play(self, seat: int, card: Card | str) -> Violation | None:
        """Why ``seat`` may not play ``card`` now, or None if it may."""
        if not isinstance(card, Card):
            card = Card.parse(card)
        seat = _seat_number(seat)
        if self.phase is _OVER:
            return Violation.HAND_OVER
        if self.phase is not _PLAY:
            return Violation.WRONG_PHASE
        if seat != self._turn:
            return Violation.NOT_YOUR_TURN
        bit = card.bit
        if not self._hands[seat] & bit:
            return Violation.CARD_NOT_HELD
        if self.legal_mask() & bit:
            return None
        return self._explain(seat, bit)

    def _explain(self, seat: int, bit: int) -> Violation:
        """The rule an illegal play of a held card breaks (mirrors :meth:`legal_mask`)."""
        held = self._hands[seat]
        lead = self._lead
        if lead:
            if held & lead and not bit & lead:
                return Violation.MUST_FOLLOW_SUIT
            return Violation.PENALTY_ON_FIRST_TRICK
        if self._opening == _OPEN_LOWEST_CLUB:
            return Violation.MUST_LEAD_OPENING_CARD
        if self._opening == _OPEN_ANY_CLUB:
            return Violation.MUST_LEAD_CLUB
        if not self._lead_free and bit & _HEARTS and held & _NOT_HEARTS:
            if held & _NOT_HEARTS == _QS and self.rules.queen_penalty > 0:
                return Violation.MUST_LEAD_QUEEN
            return Violation.HEARTS_NOT_BROKEN
        return Violation.PENALTY_ON_FIRST_TRICK

    def check_pass(self, seat: int, cards: Iterable[Card | str] | str) -> Violation | None:
        """Why ``seat`` may not pass ``cards`` now, or None if it may.

        ``cards`` are cards, or codes: a list or one string, ``"5C 6C 8C"``.
        """
        chosen = _cards(cards)
        mask = 0
        duplicate = False
        for c in chosen:
            duplicate = duplicate or bool(mask & c.bit)
            mask |= c.bit
        why = self._check_pass_state(seat)
        if why is not None:
            return why
        if duplicate:
            return Violation.DUPLICATE_CARD
        return self._check_pass_cards(seat, mask, len(chosen))

    def _check_pass_state(self, seat: int) -> Violation | None:
        seat = _seat_number(seat)
        if self.phase is _OVER:
            return Violation.HAND_OVER
        if self.phase is not _PASS:
            return Violation.WRONG_PHASE
        if not 0 <= seat < self._n:
            return Violation.NOT_YOUR_TURN
        if self._passed[seat] is not None:
            return Violation.ALREADY_PASSED
        return None

    def _check_pass_cards(self, seat: int, mask: int, count: int) -> Violation | None:
        if count != self.rules.pass_count:
            return Violation.WRONG_PASS_COUNT
        if mask & ~self._hands[seat]:
            return Violation.CARD_NOT_HELD
        return None

    # ---- moves ----------------------------------------------------------------------------

    def pass_cards(self, seat: int, cards: Iterable[Card | str] | str) -> None:
        """Record ``seat``'s pass; once every seat has passed, the cards move and play starts.

        ``cards`` are cards, or codes: a list or one string, ``"5C 6C 8C"``.
        """
        seat = _seat_number(seat)  # True or numpy's 1 named as seat 1 in a refusal
        chosen = _cards(cards)
        why = self.check_pass(seat, chosen)
        if why is not None:
            raise IllegalMoveError(seat, chosen, why, kind="pass", detail=self._pass_detail(why))
        self._record_pass(seat, _to_mask(chosen))

    def pass_mask(self, seat: int, mask: int) -> None:
        """Record ``seat``'s pass of the cards in ``mask`` (checked; the fast path for drivers)."""
        seat = _seat_number(seat)
        if type(mask) is not int and (isinstance(mask, bool) or not isinstance(mask, int)):
            # '3' or None was a TypeError from the comparison, 1.5 an AttributeError.
            raise ConfigError(f"pass_mask takes a bit mask of the cards (an int), got {mask!r:.40}")
        if not 0 <= mask < 1 << len(CARDS):
            # Said "may not pass nothing", as if the mask held no card.
            what = "is negative" if mask < 0 else f"has bit {mask.bit_length() - 1} set"
            raise IllegalMoveError(
                seat,
                (),
                Violation.CARD_NOT_HELD,
                kind="pass",
                detail=f"the mask {what}: only bits 0 to {len(CARDS) - 1} are cards",
            )
        why = self._check_pass_state(seat) or self._check_pass_cards(seat, mask, mask.bit_count())
        if why is not None:
            cards = tuple(cards_from_mask(mask))
            raise IllegalMoveError(seat, cards, why, kind="pass", detail=self._pass_detail(why))
        self._record_pass(seat, mask)

    def _pass_detail(self, why: Violation) -> str:
        """What a wrong pass should have been, for its error (the count the rules ask for)."""
        if why in (Violation.WRONG_PASS_COUNT, Violation.DUPLICATE_CARD):
            return f"pass {self.rules.pass_count} distinct cards"
        return ""

    def _record_pass(self, seat: int, mask: int) -> None:
        self._passed[seat] = mask
        if None not in self._passed:
            self._exchange()

    def play(self, card: Card | str, seat: int | None = None) -> Trick | None:
        """Play ``card`` for the seat to move (``seat``, if given, must be that seat).

        Returns the completed trick when this card ends one, else None.
        """
        c = card if isinstance(card, Card) else Card.parse(card)
        s = self._turn if seat is None else _seat_number(seat)
        why = self.check_play(s, c)
        if why is not None:
            detail = ""
            if why is Violation.WRONG_PHASE:  # still passing: say who holds up the play
                if seat is None:  # no seat is to move yet: the card's holder tried it, not seat 0
                    s = next((i for i in range(self.players) if self._hands[i] & c.bit), s)
                waiting = " ".join(str(w) for w in self.seats_to_pass)
                detail = f"the cards are being passed; seats still to pass: {waiting}"
            raise IllegalMoveError(s, (c,), why, detail=detail)
        if self.play_index(c.index):
            return self._trick_value(len(self._history) - 1)
        return None

    def playout(self, rng: random.Random) -> None:
        """Finish the hand with uniformly random legal moves (the missing passes, then plays).

        For Monte Carlo search: copy the hand, play it out, read :meth:`result`. Each pass is
        built card by card and each play chosen with :func:`pick_index` from one
        ``rng.random()`` draw, so a driver doing the same through :meth:`legal_mask` and
        :meth:`play_index` makes exactly the same moves (the tests hold the two together).
        """
        if not isinstance(rng, random.Random):
            # Read as it was, None or a seed failed with "'NoneType' object has no attribute
            # 'random'"; the random module itself drew from the unseeded global state, and an
            # object whose random() strayed outside [0, 1) failed mid-hand with an IndexError.
            raise ConfigError(
                f"playout takes a random.Random as rng, e.g. random.Random(1), got {rng!r:.80}"
            )
        draw = rng.random
        if self.phase is _PASS:
            self._random_passes(draw)
        # A trick already begun is finished move by move; the loop below starts at a lead.
        while self._trick:
            self.play_index(pick_index(self.legal_mask(), draw()))
        if self.phase is not _PLAY:
            return
        # A random playout is the inner loop of a search: the kernel plays the tricks over plain
        # lists and ints, where calls and attribute lookups would cost more than the rules.
        history = self._history
        self._turn, self._lead_free, broken = _kernel.play_tricks(
            self._hands,
            history,
            self._taken,
            self._tricks_won,
            self._voids,
            self._leader,
            self._tricks_total - len(history),
            self._opening,
            self._lowest_club,
            self._restrict,
            self._lead_free,
            self._queen_lead,
            self._breakers,
            0 if history else self._kitty,
            draw,
        )
        self._leader = self._turn
        self._hands = [0] * self._n
        self._hearts_broken = self._hearts_broken or broken
        self._opening = _OPEN_FREE
        self._restrict = 0
        self.phase = _OVER

    def _random_passes(self, draw: Callable[[], float]) -> None:
        """Choose a uniformly random pass for every seat that has not passed, then exchange."""
        _kernel.random_passes(self._hands, self._passed, self.rules.pass_count, draw)
        self._exchange()

    def play_index(self, index: int) -> bool:
        """Play the card at bit ``index`` for the seat to move; True if it ended a trick.

        The fast path for search: the card must come from :meth:`legal_mask`; nothing is
        checked, and an illegal index corrupts the hand.
        """
        seat = self._turn
        bit = 1 << index
        self._hands[seat] ^= bit
        trick = self._trick
        trick.append(index)
        lead = self._lead
        if not lead:
            self._lead = _SUIT_MASK_OF[index]
            self._best = index
            self._best_seat = seat
            self._opening = _OPEN_FREE
        elif bit & lead:
            if index > self._best:
                self._best = index
                self._best_seat = seat
        else:
            self._voids[seat] |= 1 << _SUIT_OF[self._best]
        if bit & self._breakers and not self._hearts_broken:
            self._hearts_broken = True
            self._lead_free = True
        if len(trick) < self._n:
            self._turn = _NEXT_SEAT[self._n][seat]
            return False
        winner = self._best_seat
        taken = sum(map(_BITS.__getitem__, trick))
        if not self._history:
            taken |= self._kitty
            self._restrict = 0
        self._taken[winner] |= taken
        self._tricks_won[winner] += 1
        self._history.append((self._leader, tuple(trick), winner))
        self._trick = []
        self._lead = 0
        self._leader = self._turn = winner
        if len(self._history) == self._tricks_total:
            self.phase = _OVER
        return True

    def _exchange(self) -> None:
        n = self._n
        hands = self._hands
        received = self._received
        offset = self.pass_direction.offset(n)
        for seat, cards in enumerate(self._passed):
            hands[seat] &= ~(cards or 0)
        for seat, cards in enumerate(self._passed):
            target = (seat + offset) % n
            hands[target] |= cards or 0
            received[target] = cards or 0
        self._start_play()

    def _start_play(self) -> None:
        self.phase = _PLAY
        if self._opening == _OPEN_FREE:
            self._leader = self._turn = (self.dealer + 1) % self._n
            return
        hands = self._hands
        clubs = sum(hands) & _CLUBS  # the hands are disjoint: their sum is their union
        low = clubs & -clubs
        self._lowest_club = low.bit_length() - 1
        for seat, held in enumerate(hands):
            if held & low:
                self._leader = self._turn = seat
                break

    def _trick_value(self, number: int) -> Trick:
        leader, cards, winner = self._history[number]
        return Trick(number, leader, tuple(CARDS[c] for c in cards), winner)

    def _mask_points(self, mask: int) -> int:
        rules = self.rules
        hearts = mask & _HEARTS
        points = _SPOT_SUM[hearts >> _HEARTS_SHIFT] if rules.spot_hearts else hearts.bit_count()
        if mask & _QS:
            points += rules.queen_penalty
        if mask & _JD:
            points += rules.jack_of_diamonds
        return points

    # ---- scoring --------------------------------------------------------------------------

    @property
    def moon_shooter(self) -> int | None:
        """The seat that has taken every penalty card in play, or None (not yet, or nobody)."""
        need = self.rules.moon_mask
        for s, m in enumerate(self._taken):
            if m & need == need:
                return s
        return None

    def result(self, totals: Sequence[int] | None = None) -> HandResult:
        """The hand's score; ``totals`` (game totals before this hand) resolve MoonRule.BEST."""
        if self.phase is not _OVER:
            raise StateError(
                f"the hand is not over ({len(self._history)} of {self._tricks_total} tricks "
                "played): there is no result yet"
            )
        if totals is not None:
            totals = _seat_totals(totals, self._n)
        rules = self.rules
        taken, hearts, shooter = self._scores()
        sun = False
        applied: MoonRule | None = None
        if shooter is None or rules.moon is _MOON_OFF:
            shooter = None
            points = self._with_bonus(taken.copy())
        else:
            sun = rules.sun and self._tricks_won[shooter] == self._tricks_total
            value = rules.moon_value * (2 if sun else 1)
            applied = rules.moon
            if applied is _MOON_BEST:
                add = self._moon_points(shooter, value, _MOON_ADD)
                sub = self._moon_points(shooter, value, _MOON_SUBTRACT)
                before = list(totals) if totals is not None else [0] * self._n
                better_sub = _moon_outcome(rules, shooter, before, sub) > _moon_outcome(
                    rules, shooter, before, add
                )
                applied, points = (_MOON_SUBTRACT, sub) if better_sub else (_MOON_ADD, add)
            else:
                points = self._moon_points(shooter, value, applied)
        return HandResult(
            points=tuple(points),
            taken_points=tuple(taken),
            hearts_taken=tuple(hearts),
            tricks_won=tuple(self._tricks_won),
            moon=shooter,
            sun=sun,
            moon_rule=applied,
        )

    def _moon_points(self, shooter: int, value: int, rule: MoonRule) -> list[int]:
        """Points per seat when ``shooter`` shot a moon worth ``value`` scored by ``rule``."""
        penalty = self.rules.penalty_mask
        points = []
        for s, m in enumerate(self._taken):
            # Cards outside the moon (the jack of diamonds) still score for whoever took them.
            own = self._mask_points(m & ~penalty)
            if s == shooter:
                points.append(own - (value if rule is _MOON_SUBTRACT else 0))
            else:
                points.append(own + (value if rule is _MOON_ADD else 0))
        return self._with_bonus(points)

    def _with_bonus(self, points: list[int]) -> list[int]:
        bonus = self.rules.no_tricks_bonus
        if bonus:
            for s, won in enumerate(self._tricks_won):
                if not won:
                    points[s] += bonus
        return points

    def view(self, seat: int) -> SeatView:
        """Everything ``seat`` may know now, and nothing more."""
        seat = self._seat(seat)  # the plain int: True or a numpy integer is not SeatView.seat
        passed = self._passed[seat]
        received = self._received[seat]
        my_turn = self.phase is _PLAY and self._turn == seat
        passing = self.pass_direction is not PassDirection.HOLD
        return SeatView(
            seat=seat,
            players=self._n,
            dealer=self.dealer,
            phase=self.phase,
            to_move=self.to_move,
            hand=tuple(cards_from_mask(self._hands[seat])),
            legal=tuple(self.legal_plays()) if my_turn else (),
            pass_direction=self.pass_direction,
            pass_count=self.rules.pass_count if passing else 0,
            passed=None if passed is None else tuple(cards_from_mask(passed)),
            received=None if received is None else tuple(cards_from_mask(received)),
            tricks=self.tricks,
            current=self.current_trick,
            hearts_broken=self._hearts_broken,
            points_taken=self.points_taken(),
            voids=tuple(self.voids(s) for s in range(self._n)),
            cards_held=tuple(m.bit_count() for m in self._hands),
            kitty=tuple(cards_from_mask(self._kitty)) if self._history else (),
        )

    def __repr__(self) -> str:
        return (
            f"<Hand {self.phase.value} dealer={self.dealer} pass={self.pass_direction.value} "
            f"trick={self.trick_number} to_move={self.to_move}>"
        )


def _seat_totals(totals: object, players: int) -> list[int]:
    """``totals`` as a list of one whole number per seat, or a :class:`SeatError` saying why not.

    Checked whatever the moon rule: read only by MoonRule.BEST, a bad list would otherwise pass
    unseen under the other rules and fail with a bare TypeError from the sum under BEST.
    """
    if isinstance(totals, str | bytes) or not isinstance(totals, Iterable):
        raise SeatError(
            f"totals: expected one whole number per seat ({players}), e.g. game.totals, "
            f"got {totals!r:.80}"
        )
    given = list(totals)
    if len(given) != players:
        raise SeatError(f"totals: {len(given)} given for a table of {players} seats (one per seat)")
    try:
        return [t if type(t) is int else operator.index(t) for t in given]
    except TypeError:
        raise SeatError(
            f"totals: expected whole numbers, one per seat, got {given!r:.80}"
        ) from None


def _moon_outcome(rules: Rules, shooter: int, before: Sequence[int], points: Sequence[int]) -> int:
    """How a moon scoring leaves the shooter: 2 wins the game, 1 plays on, 0 loses the game."""
    after = [t + p for t, p in zip(before, points, strict=True)]
    if not _reached(rules, after):
        return 1
    return 2 if after[shooter] == min(after) else 0


def _reached(rules: Rules, totals: Sequence[int]) -> bool:
    if rules.game_end is GameEnd.REACH:
        return max(totals) >= rules.target
    return max(totals) > rules.target


_DECKS: dict[int, tuple[tuple[int, ...], list[int]]] = {}
"""Per deck in play (by its mask), the card indexes and the one-card masks, in deck order."""


def _deck(rules: Rules) -> tuple[tuple[int, ...], list[int]]:
    mask = rules.deck_mask
    found = _DECKS.get(mask)
    if found is None:
        indexes = tuple(mask_indexes(mask))
        # A list, not a tuple, for the deal's map(bits.__getitem__, ...): see _kernel.BITS.
        found = _DECKS[mask] = (indexes, [1 << i for i in indexes])
    return found


def _deck_indexes(rules: Rules) -> tuple[int, ...]:
    return _deck(rules)[0]


def _deck_bits(rules: Rules) -> list[int]:
    return _deck(rules)[1]


def _check_deal(
    rules: Rules, masks: Sequence[int], kitty: int, dealer: int, given: Sequence[int] = ()
) -> None:
    """Refuse hands that are not a deal of the deck in play under ``rules`` (``given``: the
    hands as given, when ``masks`` adds the cards each seat has played to them)."""
    n = rules.players
    if len(masks) != n:
        raise DealError("hands", f"{n} players but {len(masks)} hands were given")
    _check_seat("dealer", dealer, n)
    seen = 0
    for seat, m in enumerate(masks):
        if m.bit_count() != rules.hand_size:
            # The hands given are at fault, not the rules: say what was given.
            held = m.bit_count()
            if given:
                now = given[seat].bit_count()
                what = f"hands[{seat}] has {now} cards, and {held - now} played: {held}"
            else:
                what = f"hands[{seat}] has {held} cards"
            raise DealError(
                "hands",
                f"{what}, where {n} players are dealt {rules.hand_size} each (the hands given "
                "do not fit the rules)",
            )
        if seen & m:
            raise DealError(
                "hands",
                f"{_show(seen & m)} dealt twice (in hands[{seat}] and an earlier hand given)",
            )
        seen |= m
    if kitty.bit_count() != rules.kitty_size or seen & kitty:
        size = rules.kitty_size
        raise DealError(
            "kitty",
            f"the kitty must hold {size} card{'' if size == 1 else 's'} not in any hand, "
            f"got {_show(kitty)}",
        )
    deck = rules.deck_mask
    if (seen | kitty) != deck:
        raise DealError(
            "hands",
            "the hands do not hold the deck in play (missing "
            f"{_show(deck & ~seen & ~kitty)}, extra {_show((seen | kitty) & ~deck)})",
        )


def _words(text: str) -> list[str]:
    """The card codes of one string, split on spaces or commas (as parse_cards reads them)."""
    return text.replace(",", " ").split()


def _to_mask(cards: Iterable[Card | str] | str) -> int:
    if isinstance(cards, str):  # one string of codes, not a sequence of one-letter ones
        cards = _words(cards)
    m = 0
    try:
        for c in cards:
            card = c if isinstance(c, Card) else Card.parse(c)
            m |= card.bit
    except TypeError:  # not a collection at all (None, a number)
        raise _not_cards(cards) from None
    return m


def _show(mask: int) -> str:
    return _show_cards(cards_from_mask(mask))


def _show_cards(cards: Iterable[Card]) -> str:
    return " ".join(str(c) for c in cards) or "nothing"


# ---- settling ---------------------------------------------------------------------------------


def settle_hand(
    rules: Rules, result: HandResult, pool: Fraction | int = Fraction(0)
) -> tuple[tuple[Fraction, ...], Fraction]:
    """Counters each seat wins (+) or pays (-) for one hand, and the pool carried to the next.

    Under :attr:`Settling.POINTS` nothing changes hands (the totals are the score). The counters
    of every settling sum to zero, together with the change in the pool. ``pool`` is a Fraction
    or a whole number; a ConfigError for a result of another table size than the rules'.
    """
    check_rules(rules)
    n = rules.players
    # Checked here: a result of another table size was settled with the wrong count of seats,
    # quietly, and a float pool (NaN too) came back as a float.
    if not isinstance(result, HandResult):
        raise ConfigError(f"result must be a HandResult (Game.finish_hand's), got {result!r:.80}")
    if len(result.points) != n or len(result.hearts_taken) != n:
        raise ConfigError(
            f"result is a {len(result.points)}-seat hand's, the rules a {n}-seat table's: "
            "settle a hand under the rules it was played with"
        )
    if isinstance(pool, bool) or not isinstance(pool, numbers.Rational):
        raise ConfigError(f"pool must be a Fraction or a whole number, got {pool!r:.40}")
    pool = Fraction(pool)
    zero = Fraction(0)
    if rules.settling is Settling.POINTS:
        return tuple([zero] * n), pool
    if rules.settling is Settling.HOWELL:
        # Each pays (n - 1) per heart taken, and takes one back per heart in play not taken.
        hearts = result.hearts_taken
        total = sum(hearts)
        return tuple(Fraction((total - h) - (n - 1) * h) for h in hearts), pool
    if rules.settling is Settling.SWEEPSTAKES:
        # One counter per heart into the pool. A lone clean player takes it all; two clean
        # players split it, any odd counter staying for the next pool; otherwise (nobody clean,
        # more than two, or one player took every heart) the pool is a jack and is carried.
        paid = [Fraction(h) for h in result.hearts_taken]
        pot = pool + sum(paid)
        clean = [s for s in range(n) if result.hearts_taken[s] == 0]
        won = [zero] * n
        # Every seat but one clean is one player with every heart: a jack, whatever the table
        # size (at three players that is two clean players, who would otherwise split it).
        if len(clean) in (1, 2) and len(clean) < n - 1:
            share = Fraction(int(pot) // len(clean))
            for s in clean:
                won[s] = share
            pot -= share * len(clean)
        return tuple(won[s] - paid[s] for s in range(n)), pot
    # Spot settling: each player pays the hand's lowest scorer the difference; equal lowest
    # scorers share the takings.
    pts = result.points
    low = min(pts)
    lows = [s for s in range(n) if pts[s] == low]
    excess = sum((Fraction(p - low) for p in pts), zero)
    return tuple(
        excess / len(lows) if s in lows else -Fraction(pts[s] - low) for s in range(n)
    ), pool


# ---- game -------------------------------------------------------------------------------------


class Game:
    """A game of hands: deals from one seed, rotates the dealer left, runs to the target (or to
    :attr:`Rules.max_hands` hands, if no total reaches it first).

    Attributes: ``hand`` (the :class:`Hand` being played; the last once over), ``hand_number``
    (its number, from 0), ``totals`` (points per seat), ``results`` (each finished hand's
    :class:`HandResult`), ``balances`` (counters won or paid per seat under a settling rule) and
    ``pool`` (counters carried in the sweepstakes pool); ``rules``, ``seed`` and
    ``first_dealer`` as given.
    """

    def __init__(self, rules: Rules | None = None, seed: int = 0, *, first_dealer: int = 0) -> None:
        """Start a game; hand ``k`` is ``Hand.deal(rules, seed, hand_number=k, dealer=...)``."""
        self.rules = rules if rules is not None else Rules()
        """The rules in force."""
        check_rules(self.rules)
        seed = check_seed(seed)
        first_dealer = _check_seat("first_dealer", first_dealer, self.rules.players)
        self.seed = seed
        """The game's seed; every deal derives from it."""
        self.first_dealer = first_dealer
        """The dealer of the first hand."""
        self.totals: list[int] = [0] * self.rules.players
        """Running points per seat."""
        self.balances: list[Fraction] = [Fraction(0)] * self.rules.players
        """Counters won (+) or paid (-) per seat under the settling rule."""
        self.pool = Fraction(0)
        """Counters left in the sweepstakes pool (a jack carried to the next deal)."""
        self.results: list[HandResult] = []
        """Every finished hand's result, in order."""
        self.hand_number = 0
        """The number of the current hand (0 for the first)."""
        self.hand = self._deal(0)
        """The hand being played (the last one, once the game is over)."""

    def _deal(self, number: int) -> Hand:
        return Hand.deal(
            self.rules,
            self.seed,
            hand_number=number,
            dealer=(self.first_dealer + number) % self.rules.players,
        )

    @property
    def is_over(self) -> bool:
        """Whether the game has ended: the last hand is scored and a total met the target, or
        the game has played :attr:`Rules.max_hands` hands."""
        return len(self.results) > self.hand_number and self._ended()

    @property
    def at_hand_limit(self) -> bool:
        """Whether the game ended at :attr:`Rules.max_hands` hands with no total at the target."""
        return self.is_over and not _reached(self.rules, self.totals)

    def _ended(self) -> bool:
        return _reached(self.rules, self.totals) or len(self.results) >= self.rules.max_hands

    def finish_hand(self) -> HandResult:
        """Score the finished hand into the totals; deal the next one unless the game is over."""
        if len(self.results) > self.hand_number:
            raise StateError(f"the game is over after {len(self.results)} hands")
        if not self.hand.is_over:
            raise StateError(
                f"hand {self.hand_number} is not over ({self.hand.trick_number} of "
                f"{self.rules.tricks_per_hand} tricks played)"
            )
        result = self.hand.result(self.totals)
        self.results.append(result)
        for s, p in enumerate(result.points):
            self.totals[s] += p
        if self.rules.settling is not Settling.POINTS:  # else nothing changes hands
            won, self.pool = settle_hand(self.rules, result, self.pool)
            for s, w in enumerate(won):
                self.balances[s] += w
        if not self._ended():
            self.hand_number += 1
            self.hand = self._deal(self.hand_number)
        return result

    @property
    def placings(self) -> tuple[int, ...]:
        """Place per seat (1 is best; equal scores share the better place)."""
        if self.rules.settling is Settling.POINTS:
            keys: list[Fraction] = [Fraction(t) for t in self.totals]
        else:
            keys = [-b for b in self.balances]
        return tuple(1 + sum(1 for other in keys if other < k) for k in keys)

    @property
    def winners(self) -> tuple[int, ...]:
        """The seats in first place (more than one when tied)."""
        return tuple(s for s, p in enumerate(self.placings) if p == 1)
