"""What a bot is shown when it must decide: one self-contained, frozen :class:`DecisionView`.

The same view is built from a referee's ``DecisionRequest`` (over the network) and from the rules
engine (:func:`arena.client.play_local`), so a bot cannot tell the two apart. Everything in it is
public knowledge or this seat's own, so a bot that remembers nothing between calls plays well.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum

from arena.cards import Card, Suit, cards_from_mask, mask_of
from arena.engine import Trick
from arena.errors import ConfigError
from arena.rules import PassDirection, Rules

__all__ = [
    "DecisionKind",
    "DecisionView",
    "decision_rng",
    "highest",
    "lowest",
    "position_key",
    "voids_shown",
]


class DecisionKind(Enum):
    """What the bot must decide."""

    PASS = "pass"
    """Choose :attr:`DecisionView.pass_count` cards to pass."""
    PLAY = "play"
    """Choose one of :attr:`DecisionView.legal` to play to the current trick."""


@dataclass(frozen=True, slots=True)
class DecisionView:
    """Everything a seat may know at the moment it must decide (hand, legal cards, public state)."""

    kind: DecisionKind
    """What to decide."""
    seat: int
    """The seat this bot plays (0..players-1; play moves from seat s to seat s+1)."""
    hand: tuple[Card, ...]
    """The cards this seat holds now, in index order (clubs, diamonds, hearts, spades; by rank)."""
    legal: tuple[Card, ...]
    """The legal choices, in index order: the legal plays, or for a pass the whole hand."""
    rules: Rules
    """The rules of the game."""
    players: int
    """Seats at the table."""
    dealer: int
    """The dealer of this hand."""
    hand_number: int
    """The hand's number within the game, from 0."""
    seat_names: tuple[str, ...]
    """The bots' names, indexed by seat."""
    pass_direction: PassDirection
    """This hand's pass direction (HOLD when no cards are passed)."""
    pass_count: int
    """For a pass: how many cards to pass. 0 for a play."""
    pass_to: int
    """The seat that receives (or received) this seat's pass; this seat on a hold hand."""
    passed: tuple[Card, ...]
    """The cards this seat passed this hand (empty while passing and on a hold hand)."""
    received: tuple[Card, ...]
    """The cards this seat received in the pass (empty while passing and on a hold hand)."""
    received_from: int
    """The seat that passed to this seat; this seat on a hold hand."""
    trick: Trick | None
    """The trick being played (no winner yet; no cards when this seat leads); None for a pass."""
    tricks: tuple[Trick, ...]
    """The completed tricks of this hand, in order, each with its winner."""
    points_taken: tuple[int, ...]
    """Points taken so far this hand, per seat, before any moon adjustment."""
    totals: tuple[int, ...]
    """Game totals before this hand, per seat."""
    cards_in_hand: tuple[int, ...]
    """Cards still held, per seat."""
    hearts_broken: bool
    """Whether hearts may now be led (a penalty card that breaks them has been played)."""
    voids: tuple[frozenset[Suit], ...]
    """Per seat, the suits it has shown it lacks by not following them this hand."""
    forfeited: tuple[bool, ...]
    """Per seat, whether the referee's fallback now plays it (always False in local play)."""
    game_id: str
    """The game's identifier (GameStarted.game_id; ``"local"`` in local play)."""
    max_hands: int | None
    """The most hands the game plays: it ends after that many even if no total has reached
    ``rules.target`` (``arena run`` and the ladder play one-hand games by default; a game to
    the target plays at most ``rules.max_hands``). None only from an older referee that sent no
    limit. See :attr:`last_hand`."""
    move_ms: int | None
    """This move's own time in milliseconds, before the time bank is drawn on (None: no clock).
    Over the network it is what was left when the referee sent the request, so a little less
    than the table's move time. See :meth:`time_left`."""
    bank_ms: int | None
    """This seat's time bank left for the game in milliseconds (None: no clock). An answer slower
    than :attr:`move_ms` draws the excess from it."""
    deadline_ms: int | None
    """The hard limit in milliseconds: no answer within it is a TIMEOUT fault. It is
    :attr:`move_ms` plus :attr:`bank_ms` (the protocol's DecisionRequest.move_deadline_ms);
    None with no clock."""
    received_at: float
    """When the request arrived, on :func:`time.monotonic`; see :meth:`time_left`."""
    kitty: tuple[Card, ...] = ()
    """The kitty's cards, in index order, once the first trick has taken them: its ``TrickWon``
    event shows them to every seat. Empty before that, and under rules without a kitty."""

    # ---- the current trick --------------------------------------------------------------------

    @property
    def trick_number(self) -> int:
        """The number of the trick being played (0 for the first; 0 for a pass)."""
        return len(self.tricks)

    @property
    def trick_cards(self) -> tuple[Card, ...]:
        """The cards played to the current trick so far, the leader's first (empty for a pass)."""
        return self.trick.cards if self.trick is not None else ()

    @property
    def leading(self) -> bool:
        """Whether this seat leads the current trick."""
        return self.kind is DecisionKind.PLAY and not self.trick_cards

    @property
    def last_to_play(self) -> bool:
        """Whether this seat plays the last card of the current trick."""
        return self.kind is DecisionKind.PLAY and len(self.trick_cards) == self.players - 1

    @property
    def lead_suit(self) -> Suit | None:
        """The suit led to the current trick, or None if nothing has been led."""
        cards = self.trick_cards
        return cards[0].suit if cards else None

    @property
    def last_hand(self) -> bool:
        """Whether this hand is the game's last by the hand limit (a target may end it sooner).

        What it scores is all that counts: e.g. a moon shot cannot be answered later.
        """
        return self.max_hands is not None and self.hand_number + 1 >= self.max_hands

    @property
    def first_trick(self) -> bool:
        """Whether the current trick is the hand's first (penalty cards are usually barred)."""
        return self.kind is DecisionKind.PLAY and not self.tricks

    def winning(self) -> tuple[int, Card] | None:
        """The seat winning the current trick so far and its card, or None if nothing is led."""
        trick = self.trick
        if trick is None or not trick.cards:
            return None
        lead = trick.cards[0].suit
        best = 0
        for pos, card in enumerate(trick.cards):
            if card.suit is lead and card.rank > trick.cards[best].rank:
                best = pos
        return trick.seat_of(best, self.players), trick.cards[best]

    def trick_points(self) -> int:
        """The points in the current trick so far."""
        return sum(self.rules.card_points(c) for c in self.trick_cards)

    # ---- what has been seen -------------------------------------------------------------------

    @property
    def played(self) -> tuple[Card, ...]:
        """Every card played this hand (completed tricks and the current one), in index order."""
        mask = 0
        for t in self.tricks:
            mask |= mask_of(t.cards)
        mask |= mask_of(self.trick_cards)
        return tuple(cards_from_mask(mask))

    @property
    def unseen(self) -> tuple[Card, ...]:
        """Cards in play this seat has not seen: not held, not played, not in the shown kitty."""
        # The kitty counts as seen once shown: a search that dealt it to the other seats would
        # give them cards that every seat knows lie in no hand.
        seen = mask_of(self.hand) | mask_of(self.played) | mask_of(self.kitty)
        deck = mask_of(self.rules.cards_in_deck)
        return tuple(cards_from_mask(deck & ~seen))

    def time_left(self, *, include_bank: bool = False) -> float | None:
        """Seconds left before the time bank is touched (None when there is no clock; 0.0, never
        less, once it has run out).

        With ``include_bank``: seconds left before a TIMEOUT fault, the whole bank spent. Budget
        a search on the first; the second is for a bot that means to draw on its bank.
        """
        allowed = self.deadline_ms if include_bank else self.move_ms
        if allowed is None:
            return None
        # Not below 0: a request that waited while the bot was busy came back negative, and
        # time.sleep(view.time_left() - margin) raised ValueError.
        return max(0.0, self.received_at + allowed / 1000 - time.monotonic())


def voids_shown(tricks: Iterable[Trick], players: int) -> tuple[frozenset[Suit], ...]:
    """Per seat, the suits it has shown it lacks: it played another suit to a trick of that suit."""
    voids: list[set[Suit]] = [set() for _ in range(players)]
    for trick in tricks:
        if not trick.cards:
            continue
        lead = trick.cards[0].suit
        for pos, card in enumerate(trick.cards):
            if card.suit is not lead:
                voids[trick.seat_of(pos, players)].add(lead)
    return tuple(frozenset(v) for v in voids)


def lowest(cards: Sequence[Card | str]) -> Card:
    """The lowest-ranked card (ties broken by suit order clubs, diamonds, hearts, spades), of
    Card objects or codes such as "QS"."""
    return min(_check_cards("lowest", cards), key=lambda c: (c.rank, c.suit))


def highest(cards: Sequence[Card | str]) -> Card:
    """The highest-ranked card (ties broken by suit order: spades before hearts before ...), of
    Card objects or codes such as "QS"."""
    return max(_check_cards("highest", cards), key=lambda c: (c.rank, c.suit))


def _check_cards(call: str, cards: Sequence[Card | str]) -> list[Card]:
    """The cards, codes parsed; a ConfigError naming ``call`` for no cards, or for one string of
    several codes: min()'s "arg is an empty sequence", or "'str' object has no attribute 'rank'"
    for "AS KS", named neither."""
    if isinstance(cards, str):
        raise ConfigError(
            f"{call}(cards) takes a list of cards (Card objects, e.g. view.legal, or codes), "
            f"not the text {cards!r:.40} (parse_cards turns text into cards)"
        )
    if not cards:
        raise ConfigError(f"{call}(cards) of no cards: there is no {call} card")
    return [c if isinstance(c, Card) else Card.parse(c) for c in cards]


def _codes(cards: Iterable[Card]) -> str:
    return "".join(map(str, cards))


def position_key(view: DecisionView) -> str:
    """A text that names the decision's position: equal views give equal keys in any process.

    It holds what the referee's deal and the bots' answers fix (seat, hand number, dealer, the
    cards held, passed and received, every trick with its leader, the scores), and nothing that
    varies from one run of the same game to the next: no request id, no game id (a referee's game
    ids count the games of its process), no clock readings, no forfeits (a forfeit can come from a
    timeout).
    """
    _check_view("position_key", view)
    tricks = "/".join(
        f"{t.leader}:{_codes(t.cards)}" for t in (*view.tricks, view.trick) if t is not None
    )
    return "|".join(
        (
            view.kind.value,
            f"s{view.seat}of{view.players}",
            f"h{view.hand_number}d{view.dealer}{view.pass_direction.name}",
            _codes(view.hand),
            _codes(view.passed),
            _codes(view.received),
            tricks,
            ",".join(map(str, view.points_taken)),
            ",".join(map(str, view.totals)),
        )
    )


def decision_rng(seed: str | int, view: DecisionView) -> random.Random:
    """A generator for one decision, seeded from the bot's seed and the view's position.

    The seed is a string or an integer (``7`` and ``"7"`` give the same generator); anything
    else is a :class:`ConfigError`.

    A bot that draws its randomness here answers the same request the same way in any process,
    whatever it was asked before, so a game replays from its seed and a resumed run equals an
    unbroken one. (A generator seeded once per process would depend on which games that process
    happened to play first.)
    """
    _check_view("decision_rng(seed, view)", view)
    # Only these: another object's text may hold its memory address (a random.Random given by
    # mistake), so its draws changed from process to process; 7.0 drew unlike 7.
    if not isinstance(seed, str | int) or isinstance(seed, bool):
        raise ConfigError(
            f"decision_rng(seed, view) takes the bot's seed as a string or an integer, "
            f"got {type(seed).__name__} {seed!r:.60}"
        )
    return random.Random(f"{seed}|{position_key(view)}")


def _check_view(call: str, view: object) -> None:
    """A ConfigError for what is not a view (the two arguments of decision_rng swapped, say),
    instead of an AttributeError on a missing ``tricks``."""
    if not isinstance(view, DecisionView):
        raise ConfigError(
            f"{call} takes the DecisionView given to choose_play or choose_pass, "
            f"got {type(view).__name__} {view!r:.60}"
        )
