"""Exceptions, named by the reason. A shallow tree::

    ArenaError
    ├── CardParseError        text that is not a card ("QX", "1S")
    ├── RulesError            a rules option out of range or contradicting another (names the field)
    │   └── DealError         hands, a kitty or a view given to the engine that do not fit the rules
    ├── IllegalMoveError      a pass or play the rules forbid (names the seat, the cards, the rule)
    ├── StateError            a call the state does not allow (scoring an unfinished hand...)
    ├── SeatError             a seat number that is not at the table (or a list not one per seat)
    └── ConfigError           a user's bad flag or configuration (one line, says how to fix it)

Each message carries the bad input and the state it met, so that it can be shown as it is.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arena.cards import Card

__all__ = [
    "ArenaError",
    "CardParseError",
    "ConfigError",
    "DealError",
    "IllegalMoveError",
    "RulesError",
    "SeatError",
    "StateError",
    "Violation",
]


class ArenaError(Exception):
    """Base of every error Hearts Arena raises on purpose."""

    def __reduce__(self) -> tuple[Any, ...]:
        # Exception's own pickling calls the class with the message alone, which the errors that
        # take their parts (RulesError, IllegalMoveError...) refuse: unpickled in a process pool,
        # an IllegalMoveError raised in a worker broke the whole pool.
        return (_rebuilt, (type(self), self.args, self.__dict__))


def _rebuilt(cls: type[ArenaError], args: tuple[Any, ...], state: dict[str, Any]) -> ArenaError:
    """An unpickled error: its message and attributes, without calling its constructor."""
    error = cls.__new__(cls, *args)
    error.__dict__.update(state)
    return error


class CardParseError(ArenaError, ValueError):
    """Text that does not name a card, suit or rank (or a number that is no card mask)."""


class RulesError(ArenaError, ValueError):
    """A rules value that is out of range or contradicts itself."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"rules.{field}: {message}")
        self.field = field
        """The name of the offending :class:`~arena.rules.Rules` field."""


class DealError(RulesError):
    """Hands, a kitty or a view given to the engine that do not fit the rules (the cards given
    are at fault, not the rules; a RulesError, so that code catching those catches it too)."""

    def __init__(self, given: str, message: str) -> None:
        ArenaError.__init__(self, f"{given}: {message}")
        self.field = given
        """What was given that does not fit: "hands", "kitty" or "view"."""


class ConfigError(ArenaError, ValueError):
    """A user's bad flag or configuration; the message says what is wrong and how to fix it."""


class Violation(Enum):
    """Which rule a refused move broke. The value is a short human-readable statement."""

    WRONG_PHASE = "it is not the time for that kind of move"
    NOT_YOUR_TURN = "it is not this seat's turn"
    CARD_NOT_HELD = "the card is not in the seat's hand"
    DUPLICATE_CARD = "the same card was given twice"
    WRONG_PASS_COUNT = "the wrong number of cards was passed"
    ALREADY_PASSED = "this seat has already passed"
    MUST_LEAD_OPENING_CARD = "the first trick must be led with the lowest club in play"
    MUST_LEAD_CLUB = "the first trick must be led with a club"
    MUST_FOLLOW_SUIT = "the seat holds the suit led and must follow it"
    PENALTY_ON_FIRST_TRICK = "no penalty card may be played on the first trick"
    HEARTS_NOT_BROKEN = "hearts may not be led until hearts are broken"
    MUST_LEAD_QUEEN = (
        "hearts are not broken: holding only hearts and the queen of spades, lead the queen"
    )
    HAND_OVER = "the hand is over"


class IllegalMoveError(ArenaError, ValueError):
    """A pass or play the rules forbid. Carries the seat, the cards and the rule broken."""

    def __init__(
        self,
        seat: int,
        cards: tuple[Card, ...],
        violation: Violation,
        *,
        kind: str = "play",
        detail: str = "",
    ) -> None:
        shown = " ".join(str(c) for c in cards) or "nothing"
        more = f" ({detail})" if detail else ""
        super().__init__(f"seat {seat} may not {kind} {shown}: {violation.value}{more}")
        self.kind = kind
        """What was tried: "play" or "pass"."""
        self.seat = seat
        """The seat that tried the move."""
        self.cards = cards
        """The card (or cards, for a pass) it tried."""
        self.violation = violation
        """The rule it broke."""


class StateError(ArenaError, RuntimeError):
    """A call the hand or game cannot answer in its present state (scoring an unfinished hand,
    finishing a hand twice); the message says what the state is."""


class SeatError(ArenaError, IndexError):
    """A seat number that is not at the table, or per-seat values for another number of seats."""
