"""What a bot is told as it happens: one small frozen value per kind of event.

They mirror the protocol's events (``proto/hearts/v1/events.proto``) with Python types: cards
are :class:`~arena.cards.Card`, directions and rules are the engine's values. A :class:`Bot`
receives each one through its matching ``on_...`` hook; local play
(:func:`arena.client.play_local`) sends the same events in the same order as a referee does.
"""

from __future__ import annotations

from dataclasses import dataclass

from arena.cards import Card
from arena.engine import Trick
from arena.rules import PassDirection, Rules
from arena.table import FaultKind, Termination

__all__ = [
    "CardPlayed",
    "CardsDealt",
    "CardsReceived",
    "Event",
    "FaultKind",
    "FaultNotice",
    "GameEnded",
    "GameStarted",
    "HandEnded",
    "HandStarted",
    "SeatFaulted",
    "Termination",
    "TimeWarning",
    "TrickWon",
]


@dataclass(frozen=True, slots=True)
class GameStarted:
    """A game begins at this bot's table."""

    game_id: str
    """The game's identifier on the referee (``"local"`` in local play)."""
    seat: int
    """The seat this bot plays."""
    seat_names: tuple[str, ...]
    """The bots' names, indexed by seat."""
    rules: Rules
    """The rules of the game."""
    move_ms: int | None
    """Time allowed per decision before the bank is drawn on (None: no clock)."""
    bank_ms: int | None
    """Each seat's time bank for the game (None: no clock)."""
    max_hands: int | None = None
    """The most hands the game plays: it ends after that many even if no total has reached
    ``rules.target`` (``arena run`` and the ladder play one-hand games by default; a game to
    the target plays at most ``rules.max_hands``). None only from an older referee that sent no
    limit."""


@dataclass(frozen=True, slots=True)
class HandStarted:
    """A hand begins (no cards yet: see :class:`CardsDealt`)."""

    hand_number: int
    """The hand's number within the game, from 0."""
    dealer: int
    """The dealer's seat."""
    pass_direction: PassDirection | None
    """This hand's pass direction (HOLD when no cards are passed); None for one of a newer
    protocol, which this event does not say the seats of (the pass request does)."""
    pass_count: int
    """Cards each seat passes this hand (0 on a hold hand)."""


@dataclass(frozen=True, slots=True)
class CardsDealt:
    """The cards dealt to this seat, before any pass."""

    hand_number: int
    """The hand's number within the game, from 0."""
    cards: tuple[Card, ...]
    """This seat's cards as dealt, in index order."""


@dataclass(frozen=True, slots=True)
class CardsReceived:
    """The pass is complete: what this seat gave and got."""

    hand_number: int
    """The hand's number within the game, from 0."""
    from_seat: int
    """The seat that passed to this seat."""
    cards: tuple[Card, ...]
    """The cards received."""
    passed_to: int
    """The seat that received this seat's cards."""
    passed: tuple[Card, ...]
    """The cards this seat passed (the referee's substitute if the bot's pass was a fault)."""


@dataclass(frozen=True, slots=True)
class CardPlayed:
    """A seat (any seat, this one included) played a card."""

    hand_number: int
    """The hand's number within the game, from 0."""
    trick_number: int
    """The trick's number within the hand, from 0."""
    seat: int
    """The seat that played."""
    card: Card
    """The card played."""


@dataclass(frozen=True, slots=True)
class TrickWon:
    """A trick is complete and taken."""

    hand_number: int
    """The hand's number within the game, from 0."""
    trick: Trick
    """The trick, with its leader, its cards in play order and its winner."""
    points: int
    """Points the trick was worth to its winner, kitty included."""
    kitty: tuple[Card, ...]
    """The kitty's cards, on the trick that takes the kitty (empty otherwise)."""


@dataclass(frozen=True, slots=True)
class HandEnded:
    """A hand is over and scored."""

    hand_number: int
    """The hand's number within the game, from 0."""
    points_taken: tuple[int, ...]
    """Points taken in tricks, per seat, before any moon adjustment."""
    scores: tuple[int, ...]
    """What the hand adds to each seat's total, after the moon and bonuses."""
    totals: tuple[int, ...]
    """Game totals after this hand, per seat."""
    moon: int | None
    """The seat that shot the moon, or None."""
    sun: bool
    """Whether the moon shooter also shot the sun (where the rules count it)."""


@dataclass(frozen=True, slots=True)
class GameEnded:
    """The game is over."""

    game_id: str
    """The game's identifier."""
    termination: Termination | None
    """How the game ended: NORMAL, INTERRUPTED or CRASH (None: a value newer than this SDK)."""
    seat_status: tuple[Termination | None, ...]
    """How each seat's part ended, per seat: NORMAL, or the forfeit that ended it."""
    totals: tuple[int, ...]
    """Final totals, per seat."""
    placings: tuple[int, ...]
    """Place per seat, 1 for the best (ties share the better place)."""
    hands_played: int
    """The number of hands played."""
    message: str
    """One human-readable line saying how the game ended."""


@dataclass(frozen=True, slots=True)
class FaultNotice:
    """A fault by this bot, with everything needed to fix it."""

    kind: FaultKind | None
    """What was wrong (None: a kind newer than this SDK; read :attr:`message`)."""
    game_id: str
    """The game in which it happened."""
    hand_number: int
    """The hand's number within the game, from 0."""
    request_id: int
    """The request concerned (0 if none)."""
    answer: str
    """What the bot sent, as text (empty for a timeout or a disconnect)."""
    substitute: tuple[Card, ...]
    """What the referee played in this seat's place (empty if nothing)."""
    message: str
    """The referee's explanation: which rule, which deadline, what to do."""
    faults: int
    """This seat's faults so far in the game, this one included."""
    faults_allowed: int
    """Faults the seat may commit in one game; one more forfeits it (0 in strict mode)."""
    forfeited: bool
    """Whether the seat is now forfeited and played by the referee's fallback."""


@dataclass(frozen=True, slots=True)
class SeatFaulted:
    """Another seat made a fault (a public notice that names no card)."""

    seat: int
    """The seat that made the fault."""
    kind: FaultKind | None
    """What was wrong (None: a kind newer than this SDK)."""
    hand_number: int
    """The hand's number within the game, from 0."""
    faults: int
    """That seat's faults so far in the game."""
    faults_allowed: int
    """Faults a seat may commit in one game; one more forfeits it (0 in strict mode)."""
    forfeited: bool
    """Whether that seat is now played by the referee's fallback."""


@dataclass(frozen=True, slots=True)
class TimeWarning:
    """This seat's time bank is running low."""

    bank_ms: int
    """The time bank left, in milliseconds."""
    message: str
    """The referee's note."""


Event = (
    GameStarted
    | HandStarted
    | CardsDealt
    | CardsReceived
    | CardPlayed
    | TrickWon
    | HandEnded
    | GameEnded
    | FaultNotice
    | SeatFaulted
    | TimeWarning
)
"""Any event a bot can receive."""
