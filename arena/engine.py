"""The rules engine: one hand of Hearts (:class:`Hand`) and a game of hands (:class:`Game`).

Pure and deterministic: no I/O, no clock, no unseeded randomness. A deal comes in as data,
either a seed (:meth:`Hand.deal`) or explicit hands (:meth:`Hand.from_hands`). Every legality
question has one answer, given by :meth:`Hand.check_play` / :meth:`Hand.check_pass`;
:meth:`Hand.play` and :meth:`Hand.pass_cards` refuse an illegal move with an
:class:`~arena.errors.IllegalMoveError`
naming the seat, the cards and the rule broken.

Inside, a set of cards is an ``int`` bit mask over :attr:`Card.index`, so legality is a handful of
bit operations and :meth:`Hand.copy` is cheap enough for search. The phases are explicit
(:class:`Phase`); a future decision kind (a bid, a discard) is a new phase with its own check and
apply pair, and a different deck is a different :attr:`Rules.cards_in_deck`.

Seats are numbered 0..players-1 clockwise: seat ``s + 1`` sits to the left of seat ``s``.
"""

from __future__ import annotations

import functools
import hashlib
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from fractions import Fraction

from arena.cards import (
    CARDS,
    JACK_OF_DIAMONDS,
    QUEEN_OF_SPADES,
    RANKS_PER_SUIT,
    Card,
    Suit,
    cards_from_mask,
)
from arena.errors import IllegalMoveError, RulesError, Violation
from arena.rules import FirstLead, GameEnd, MoonRule, PassDirection, Rules, Settling

__all__ = [
    "Game",
    "Hand",
    "HandResult",
    "Phase",
    "SeatView",
    "Trick",
    "deal_seed",
    "settle_hand",
]

_SUIT_MASK = tuple(((1 << RANKS_PER_SUIT) - 1) << (RANKS_PER_SUIT * s) for s in range(4))
_HEARTS = _SUIT_MASK[Suit.HEARTS]
_CLUBS = _SUIT_MASK[Suit.CLUBS]
_QS = QUEEN_OF_SPADES.bit
_JD = JACK_OF_DIAMONDS.bit
_SUIT_OF = tuple(i // RANKS_PER_SUIT for i in range(len(CARDS)))


class Phase(Enum):
    """What a hand is waiting for."""

    PASS = "pass"
    """Every seat that has not yet passed chooses cards to pass (simultaneously)."""
    PLAY = "play"
    """The seat :attr:`Hand.to_move` plays a card to the current trick."""
    OVER = "over"
    """Every trick has been played; :meth:`Hand.result` is final."""


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
    """Points per seat after the moon, sun and bonus rules (what is added to the totals)."""
    taken_points: tuple[int, ...]
    """Points per seat from the cards taken, before the moon rule."""
    hearts_taken: tuple[int, ...]
    """Hearts taken per seat (counted one each, whatever their spot value)."""
    tricks_won: tuple[int, ...]
    """Tricks taken per seat."""
    moon: int | None
    """The seat that shot the moon (took every penalty card), or None."""
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
    """Whether hearts may now be led."""
    points_taken: tuple[int, ...]
    """Points per seat from cards taken so far (before the moon rule)."""
    voids: tuple[frozenset[Suit], ...]
    """Per seat, the suits it has shown it does not hold (by not following)."""


def deal_seed(seed: int, hand_number: int) -> int:
    """The seed of hand ``hand_number`` of a game seeded ``seed`` (a stable hash, any machine)."""
    digest = hashlib.sha256(f"hearts-arena/deal/{seed}/{hand_number}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


class Hand:
    """One deal of Hearts, from the pass to the last trick."""

    __slots__ = (
        "_dealt",
        "_hands",
        "_hearts_broken",
        "_kitty",
        "_leader",
        "_lowest_club",
        "_passed",
        "_received",
        "_taken",
        "_trick",
        "_tricks",
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
        hands: Sequence[Iterable[Card | str]],
        *,
        dealer: int = 0,
        pass_direction: PassDirection | str = PassDirection.HOLD,
        kitty: Iterable[Card | str] = (),
    ) -> None:
        """Start a hand from explicit hands (one list of cards per seat, seat 0 first)."""
        n = rules.players
        if len(hands) != n:
            raise RulesError("players", f"{n} players but {len(hands)} hands were given")
        if not 0 <= dealer < n:
            raise RulesError("players", f"dealer {dealer} is not a seat of {n}")
        masks = [_to_mask(h) for h in hands]
        kitty_mask = _to_mask(kitty)
        seen = 0
        for seat, m in enumerate(masks):
            if m.bit_count() != rules.hand_size:
                raise RulesError(
                    "players",
                    f"seat {seat} holds {m.bit_count()} cards, expected {rules.hand_size}",
                )
            if seen & m:
                raise RulesError("removed_cards", f"{_show(seen & m)} dealt twice")
            seen |= m
        if kitty_mask.bit_count() != rules.kitty_size or seen & kitty_mask:
            raise RulesError(
                "kitty", f"the kitty must hold {rules.kitty_size} cards not in any hand"
            )
        deck = _to_mask(rules.cards_in_deck)
        if (seen | kitty_mask) != deck:
            raise RulesError(
                "removed_cards",
                "the hands do not hold the deck in play (missing "
                f"{_show(deck & ~seen & ~kitty_mask)}, extra {_show((seen | kitty_mask) & ~deck)})",
            )
        direction = PassDirection(pass_direction)
        if rules.pass_count == 0:
            direction = PassDirection.HOLD
        if direction is PassDirection.ACROSS and n % 2:
            raise RulesError("pass_cycle", f"'across' does not exist with {n} players")
        self.rules = rules
        self.dealer = dealer
        self.pass_direction = direction
        self._dealt = tuple(masks)
        self._hands = masks
        self._kitty = kitty_mask
        self._passed: list[int | None] = [None] * n
        self._received: list[int | None] = [None] * n
        self._taken = [0] * n
        self._tricks_won = [0] * n
        self._tricks: list[tuple[int, tuple[int, ...], int]] = []
        self._trick: list[int] = []
        self._leader = 0
        self._turn = 0
        self._hearts_broken = False
        self._voids = [0] * n
        self._lowest_club = -1
        if direction is PassDirection.HOLD:
            self._start_play()
        else:
            self.phase = Phase.PASS

    # ---- construction ---------------------------------------------------------------------

    @classmethod
    def deal(
        cls, rules: Rules, seed: int, *, hand_number: int = 0, dealer: int | None = None
    ) -> Hand:
        """Deal hand ``hand_number`` of a game from a seed (pass direction from the cycle)."""
        rng = random.Random(deal_seed(seed, hand_number))
        deck = [c.index for c in rules.cards_in_deck]
        rng.shuffle(deck)
        size = rules.hand_size
        hands = [[CARDS[i] for i in deck[s * size : (s + 1) * size]] for s in range(rules.players)]
        kitty = [CARDS[i] for i in deck[rules.players * size :]]
        if dealer is None:
            dealer = hand_number % rules.players
        return cls(
            rules,
            hands,
            dealer=dealer,
            pass_direction=rules.pass_direction(hand_number),
            kitty=kitty,
        )

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
        parsed = [h.split() if isinstance(h, str) else h for h in hands]
        k = kitty.split() if isinstance(kitty, str) else kitty
        return cls(rules, parsed, dealer=dealer, pass_direction=pass_direction, kitty=k)

    def copy(self) -> Hand:
        """An independent copy of this hand's state (cheap; for search)."""
        new = Hand.__new__(Hand)
        new.rules = self.rules
        new.dealer = self.dealer
        new.pass_direction = self.pass_direction
        new.phase = self.phase
        new._dealt = self._dealt
        new._hands = self._hands.copy()
        new._kitty = self._kitty
        new._passed = self._passed.copy()
        new._received = self._received.copy()
        new._taken = self._taken.copy()
        new._tricks_won = self._tricks_won.copy()
        new._tricks = self._tricks.copy()
        new._trick = self._trick.copy()
        new._leader = self._leader
        new._turn = self._turn
        new._hearts_broken = self._hearts_broken
        new._voids = self._voids.copy()
        new._lowest_club = self._lowest_club
        return new

    # ---- state ----------------------------------------------------------------------------

    @property
    def players(self) -> int:
        """Seats at the table."""
        return self.rules.players

    @property
    def to_move(self) -> int | None:
        """The seat to play now, or None in the pass phase and once the hand is over."""
        return self._turn if self.phase is Phase.PLAY else None

    @property
    def seats_to_pass(self) -> tuple[int, ...]:
        """The seats that still have to pass (empty outside the pass phase)."""
        if self.phase is not Phase.PASS:
            return ()
        return tuple(s for s, p in enumerate(self._passed) if p is None)

    @property
    def is_over(self) -> bool:
        """Whether every trick has been played."""
        return self.phase is Phase.OVER

    @property
    def hearts_broken(self) -> bool:
        """Whether a penalty card that breaks hearts has been played."""
        return self._hearts_broken

    @property
    def trick_number(self) -> int:
        """The number of the trick being played (0 for the first)."""
        return len(self._tricks)

    def hand(self, seat: int) -> list[Card]:
        """The cards ``seat`` holds now, in index order."""
        return cards_from_mask(self._hands[seat])

    def hand_mask(self, seat: int) -> int:
        """The cards ``seat`` holds now, as a bit mask."""
        return self._hands[seat]

    def dealt(self, seat: int) -> list[Card]:
        """The cards dealt to ``seat``, before the pass."""
        return cards_from_mask(self._dealt[seat])

    @property
    def kitty(self) -> list[Card]:
        """The kitty's cards (empty unless the rules deal one)."""
        return cards_from_mask(self._kitty)

    def passed(self, seat: int) -> list[Card] | None:
        """The cards ``seat`` passed, or None if it has not passed (or nobody passes)."""
        p = self._passed[seat]
        return None if p is None else cards_from_mask(p)

    def received(self, seat: int) -> list[Card] | None:
        """The cards ``seat`` received, once every seat has passed."""
        r = self._received[seat]
        return None if r is None else cards_from_mask(r)

    def pass_target(self, seat: int) -> int:
        """The seat that receives ``seat``'s pass this hand."""
        return (seat + self.pass_direction.offset(self.players)) % self.players

    @property
    def tricks(self) -> tuple[Trick, ...]:
        """The completed tricks, in order."""
        return tuple(
            Trick(i, leader, tuple(CARDS[c] for c in cards), winner)
            for i, (leader, cards, winner) in enumerate(self._tricks)
        )

    @property
    def current_trick(self) -> Trick | None:
        """The trick being played (possibly with no card yet), or None outside the play phase."""
        if self.phase is not Phase.PLAY:
            return None
        return Trick(len(self._tricks), self._leader, tuple(CARDS[c] for c in self._trick), None)

    def points_taken(self) -> tuple[int, ...]:
        """Points per seat from the cards taken so far, before the moon rule."""
        return tuple(self._mask_points(m) for m in self._taken)

    def taken(self, seat: int) -> list[Card]:
        """The cards ``seat`` has taken in tricks (and the kitty, if it won the first trick)."""
        return cards_from_mask(self._taken[seat])

    def voids(self, seat: int) -> frozenset[Suit]:
        """The suits ``seat`` has shown it does not hold."""
        v = self._voids[seat]
        return frozenset(Suit(s) for s in range(4) if v >> s & 1)

    # ---- legality -------------------------------------------------------------------------

    def legal_mask(self) -> int:
        """The legal plays of the seat to move, as a bit mask (0 outside the play phase)."""
        if self.phase is not Phase.PLAY:
            return 0
        rules = self.rules
        held = self._hands[self._turn]
        first = not self._tricks
        if self._trick:
            follow = held & _SUIT_MASK[_SUIT_OF[self._trick[0]]]
            options = follow or held
        elif first and rules.first_lead is FirstLead.LOWEST_CLUB:
            return 1 << self._lowest_club
        elif first and rules.first_lead is FirstLead.ANY_CLUB:
            return held & _CLUBS
        else:
            options = held
            if rules.must_break_hearts and not self._hearts_broken:
                non_hearts = held & ~_HEARTS
                # A hand of nothing but hearts may lead one; so may a hand of hearts and the
                # (scoring) queen when the rules allow it. Otherwise hearts wait to be broken.
                only_penalty = non_hearts == _QS and rules.queen_penalty > 0
                if non_hearts and not (only_penalty and rules.lead_hearts_with_queen):
                    options = non_hearts
        if first and not rules.penalty_on_first_trick:
            clean = options & ~self._penalty_mask
            if clean:
                return clean
            # Only penalty cards in the way: a hand of nothing else may play them.
        return options

    def legal_plays(self) -> list[Card]:
        """The legal plays of the seat to move, in index order (empty outside the play phase)."""
        return cards_from_mask(self.legal_mask())

    def check_play(self, seat: int, card: Card) -> Violation | None:
        """Why ``seat`` may not play ``card`` now, or None if it may."""
        if self.phase is Phase.OVER:
            return Violation.HAND_OVER
        if self.phase is not Phase.PLAY:
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
        rules = self.rules
        held = self._hands[seat]
        if self._trick and held & _SUIT_MASK[_SUIT_OF[self._trick[0]]]:
            return Violation.MUST_FOLLOW_SUIT
        if not self._tricks and not self._trick:
            if rules.first_lead is FirstLead.LOWEST_CLUB:
                return Violation.MUST_LEAD_OPENING_CARD
            if rules.first_lead is FirstLead.ANY_CLUB:
                return Violation.MUST_LEAD_CLUB
        if not self._tricks and bit & self._penalty_mask:
            return Violation.PENALTY_ON_FIRST_TRICK
        if held & ~_HEARTS == _QS and bit & _HEARTS and self.rules.queen_penalty > 0:
            return Violation.MUST_LEAD_QUEEN
        return Violation.HEARTS_NOT_BROKEN

    def check_pass(self, seat: int, cards: Sequence[Card]) -> Violation | None:
        """Why ``seat`` may not pass ``cards`` now, or None if it may."""
        if self.phase is Phase.OVER:
            return Violation.HAND_OVER
        if self.phase is not Phase.PASS:
            return Violation.WRONG_PHASE
        if not 0 <= seat < self.players:
            return Violation.NOT_YOUR_TURN
        if self._passed[seat] is not None:
            return Violation.ALREADY_PASSED
        mask = 0
        for c in cards:
            if mask & c.bit:
                return Violation.DUPLICATE_CARD
            mask |= c.bit
        if len(cards) != self.rules.pass_count:
            return Violation.WRONG_PASS_COUNT
        if mask & ~self._hands[seat]:
            return Violation.CARD_NOT_HELD
        return None

    # ---- moves ----------------------------------------------------------------------------

    def pass_cards(self, seat: int, cards: Iterable[Card | str]) -> None:
        """Record ``seat``'s pass; once every seat has passed, the cards move and play starts."""
        chosen = tuple(c if isinstance(c, Card) else Card.parse(c) for c in cards)
        why = self.check_pass(seat, chosen)
        if why is not None:
            raise IllegalMoveError(seat, chosen, why)
        self._passed[seat] = _to_mask(chosen)
        if all(p is not None for p in self._passed):
            self._exchange()

    def play(self, card: Card | str, seat: int | None = None) -> Trick | None:
        """Play ``card`` for the seat to move (``seat``, if given, must be that seat).

        Returns the completed trick when this card ends one, else None.
        """
        c = card if isinstance(card, Card) else Card.parse(card)
        s = self._turn if seat is None else seat
        if self.phase is Phase.PLAY and seat is None:
            bit = c.bit
            if not self.legal_mask() & bit:
                raise IllegalMoveError(s, (c,), self.check_play(s, c) or Violation.WRONG_PHASE)
        else:
            why = self.check_play(s, c)
            if why is not None:
                raise IllegalMoveError(s, (c,), why)
        return self._apply_play(c.index)

    def play_index(self, index: int) -> bool:
        """Fast path for search: play the legal card at bit ``index``; True if it ended a trick."""
        return self._apply_play(index) is not None

    def _apply_play(self, index: int) -> Trick | None:
        seat = self._turn
        bit = 1 << index
        self._hands[seat] ^= bit
        trick = self._trick
        if trick and _SUIT_OF[index] != _SUIT_OF[trick[0]]:
            self._voids[seat] |= 1 << _SUIT_OF[trick[0]]
        trick.append(index)
        if bit & self._breakers:
            self._hearts_broken = True
        n = self.rules.players
        if len(trick) < n:
            self._turn = (seat + 1) % n
            return None
        lead_suit = _SUIT_OF[trick[0]]
        best = 0
        for pos in range(1, n):
            c = trick[pos]
            if _SUIT_OF[c] == lead_suit and c > trick[best]:
                best = pos
        winner = (self._leader + best) % n
        taken = 0
        for c in trick:
            taken |= 1 << c
        if not self._tricks and self._kitty:
            taken |= self._kitty
        self._taken[winner] |= taken
        self._tricks_won[winner] += 1
        done = (self._leader, tuple(trick), winner)
        self._tricks.append(done)
        self._trick = []
        self._leader = winner
        self._turn = winner
        if len(self._tricks) == self.rules.tricks_per_hand:
            self.phase = Phase.OVER
        return Trick(len(self._tricks) - 1, done[0], tuple(CARDS[c] for c in done[1]), winner)

    def _exchange(self) -> None:
        n = self.players
        passed = [p or 0 for p in self._passed]
        for s in range(n):
            self._hands[s] &= ~passed[s]
        for s in range(n):
            target = self.pass_target(s)
            self._hands[target] |= passed[s]
            self._received[target] = passed[s]
        self._start_play()

    def _start_play(self) -> None:
        self.phase = Phase.PLAY
        rules = self.rules
        if rules.first_lead is FirstLead.LEFT_OF_DEALER:
            self._leader = self._turn = (self.dealer + 1) % rules.players
            return
        all_clubs = 0
        for m in self._hands:
            all_clubs |= m & _CLUBS
        low = all_clubs & -all_clubs
        self._lowest_club = low.bit_length() - 1
        self._leader = next(s for s, m in enumerate(self._hands) if m & low)
        self._turn = self._leader

    @property
    def _penalty_mask(self) -> int:
        return _HEARTS | (_QS if self.rules.queen_penalty > 0 else 0)

    @property
    def _breakers(self) -> int:
        if self.rules.queen_breaks_hearts and self.rules.queen_penalty > 0:
            return _HEARTS | _QS
        return _HEARTS

    def _mask_points(self, mask: int) -> int:
        rules = self.rules
        if rules.spot_hearts:
            hearts = sum(CARDS[i].rank.pips for i in _indexes(mask & _HEARTS))
        else:
            hearts = (mask & _HEARTS).bit_count()
        return (
            hearts
            + (rules.queen_penalty if mask & _QS else 0)
            + (rules.jack_of_diamonds if mask & _JD else 0)
        )

    # ---- scoring --------------------------------------------------------------------------

    @property
    def moon_shooter(self) -> int | None:
        """The seat that took every penalty card in play (so far, or in the finished hand)."""
        penalty = self._penalty_mask & _deck_mask(self.rules)
        for s, m in enumerate(self._taken):
            if m & penalty == penalty:
                return s
        return None

    def result(self, totals: Sequence[int] | None = None) -> HandResult:
        """The hand's score; ``totals`` (game totals before this hand) resolve MoonRule.BEST."""
        if self.phase is not Phase.OVER:
            raise IllegalMoveError(-1, (), Violation.WRONG_PHASE)
        rules = self.rules
        n = rules.players
        taken = self.points_taken()
        points = list(taken)
        shooter = self.moon_shooter if rules.moon is not MoonRule.OFF else None
        sun = False
        applied: MoonRule | None = None
        if shooter is not None:
            sun = rules.sun and self._tricks_won[shooter] == rules.tricks_per_hand
            value = rules.moon_value * (2 if sun else 1)
            # The jack of diamonds and other non-penalty scores stay with whoever took them.
            other = self._mask_points(self._taken[shooter] & ~self._penalty_mask)
            applied = rules.moon
            if applied is MoonRule.BEST:
                applied = _best_moon(rules, shooter, value, other, totals)
            for s in range(n):
                if s == shooter:
                    points[s] = other - (value if applied is MoonRule.SUBTRACT else 0)
                else:
                    own = self._mask_points(self._taken[s])
                    points[s] = own + (value if applied is MoonRule.ADD else 0)
        if rules.no_tricks_bonus:
            for s in range(n):
                if self._tricks_won[s] == 0:
                    points[s] += rules.no_tricks_bonus
        return HandResult(
            points=tuple(points),
            taken_points=taken,
            hearts_taken=tuple((m & _HEARTS).bit_count() for m in self._taken),
            tricks_won=tuple(self._tricks_won),
            moon=shooter,
            sun=sun,
            moon_rule=applied,
        )

    def view(self, seat: int) -> SeatView:
        """Everything ``seat`` may know now, and nothing more."""
        passed = self._passed[seat]
        received = self._received[seat]
        my_turn = self.phase is Phase.PLAY and self._turn == seat
        return SeatView(
            seat=seat,
            players=self.players,
            dealer=self.dealer,
            phase=self.phase,
            to_move=self.to_move,
            hand=tuple(cards_from_mask(self._hands[seat])),
            legal=tuple(self.legal_plays()) if my_turn else (),
            pass_direction=self.pass_direction,
            pass_count=0 if self.pass_direction is PassDirection.HOLD else self.rules.pass_count,
            passed=None if passed is None else tuple(cards_from_mask(passed)),
            received=None if received is None else tuple(cards_from_mask(received)),
            tricks=self.tricks,
            current=self.current_trick,
            hearts_broken=self._hearts_broken,
            points_taken=self.points_taken(),
            voids=tuple(self.voids(s) for s in range(self.players)),
        )

    def __repr__(self) -> str:
        return (
            f"<Hand {self.phase.value} dealer={self.dealer} pass={self.pass_direction.value} "
            f"trick={self.trick_number} to_move={self.to_move}>"
        )


def _best_moon(
    rules: Rules, shooter: int, value: int, other: int, totals: Sequence[int] | None
) -> MoonRule:
    """ADD unless adding would end the game with the shooter not (jointly) lowest."""
    if totals is None:
        return MoonRule.ADD
    after_add = [t + (other if s == shooter else value) for s, t in enumerate(totals)]
    if _reached(rules, after_add) and after_add[shooter] > min(after_add):
        return MoonRule.SUBTRACT
    return MoonRule.ADD


def _reached(rules: Rules, totals: Sequence[int]) -> bool:
    if rules.game_end is GameEnd.REACH:
        return max(totals) >= rules.target
    return max(totals) > rules.target


@functools.lru_cache(maxsize=64)
def _deck_mask(rules: Rules) -> int:
    return _to_mask(rules.cards_in_deck)


def _to_mask(cards: Iterable[Card | str]) -> int:
    m = 0
    for c in cards:
        card = c if isinstance(c, Card) else Card.parse(c)
        m |= card.bit
    return m


def _indexes(mask: int) -> Iterable[int]:
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def _show(mask: int) -> str:
    return " ".join(str(c) for c in cards_from_mask(mask)) or "nothing"


# ---- settling ---------------------------------------------------------------------------------


def settle_hand(
    rules: Rules, result: HandResult, pool: Fraction = Fraction(0)
) -> tuple[tuple[Fraction, ...], Fraction]:
    """Counters each seat wins (+) or pays (-) for one hand, and the pool carried to the next.

    Under :attr:`Settling.POINTS` nothing changes hands (the totals are the score). The counters
    of every settling sum to zero, together with the change in the pool.
    """
    n = rules.players
    zero = Fraction(0)
    if rules.settling is Settling.POINTS:
        return tuple([zero] * n), pool
    if rules.settling is Settling.HOWELL:
        hearts = result.hearts_taken
        total = sum(hearts)
        # Each pays (n-1) per heart taken and collects one for each heart another player took.
        return tuple(Fraction(total - h - (n - 1) * h) for h in hearts), pool
    if rules.settling is Settling.SWEEPSTAKES:
        paid = [Fraction(h) for h in result.hearts_taken]
        pot = pool + sum(paid)
        clean = [s for s in range(n) if result.hearts_taken[s] == 0]
        won = [zero] * n
        if len(clean) in (1, 2):
            share = pot / len(clean)
            for s in clean:
                won[s] = share
            pot = zero
        return tuple(won[s] - paid[s] for s in range(n)), pot
    # Spot settling: the lowest scorer(s) collect from each other player the excess.
    pts = result.points
    low = min(pts)
    lows = [s for s in range(n) if pts[s] == low]
    excess = sum((Fraction(p - low) for p in pts), Fraction(0))
    return tuple(
        excess / len(lows) if s in lows else -Fraction(pts[s] - low) for s in range(n)
    ), pool


# ---- game -------------------------------------------------------------------------------------


class Game:
    """A game of hands: deals from one seed, rotates the dealer left, runs to the target."""

    def __init__(self, rules: Rules | None = None, seed: int = 0, *, first_dealer: int = 0) -> None:
        """Start a game; hand ``k`` is dealt from ``deal_seed(seed, k)``."""
        self.rules = rules if rules is not None else Rules()
        """The rules in force."""
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
        """Whether the game has ended."""
        return bool(self.results) and self.hand.is_over and _reached(self.rules, self.totals)

    def finish_hand(self) -> HandResult:
        """Score the finished hand into the totals; deal the next one unless the game is over."""
        if not self.hand.is_over:
            raise IllegalMoveError(-1, (), Violation.WRONG_PHASE)
        result = self.hand.result(self.totals)
        self.results.append(result)
        for s, p in enumerate(result.points):
            self.totals[s] += p
        won, self.pool = settle_hand(self.rules, result, self.pool)
        for s, w in enumerate(won):
            self.balances[s] += w
        if not _reached(self.rules, self.totals):
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
