"""The :class:`Bot` base class: override two methods, optionally listen to events.

A minimal bot::

    from arena.client import Bot, run

    class MyBot(Bot):
        def choose_play(self, view):
            return view.legal[0]

    if __name__ == "__main__":
        run(MyBot())
"""

from __future__ import annotations

from collections.abc import Sequence

from arena.cards import Card
from arena.client.events import (
    CardPlayed,
    CardsDealt,
    CardsReceived,
    Event,
    FaultNotice,
    GameEnded,
    GameStarted,
    HandEnded,
    HandStarted,
    SeatFaulted,
    TimeWarning,
    TrickWon,
)
from arena.client.view import DecisionView, highest, lowest

__all__ = ["Bot", "default_pass", "default_play", "dispatch_event"]


class Bot:
    """A Hearts bot. Override :meth:`choose_pass` and :meth:`choose_play`; the hooks are optional.

    The defaults play legally: pass the highest cards, play the lowest legal card. The same
    instance is used for every game of a session, one decision at a time (never concurrently).
    """

    def choose_pass(self, view: DecisionView) -> Sequence[Card]:
        """The cards to pass: exactly ``view.pass_count`` distinct cards of ``view.hand``."""
        return default_pass(view)

    def choose_play(self, view: DecisionView) -> Card:
        """The card to play: one of ``view.legal``."""
        return default_play(view)

    # ---- optional event hooks -----------------------------------------------------------------

    def on_game_start(self, event: GameStarted) -> None:
        """A game begins (seat, names, rules, clocks)."""

    def on_hand_start(self, event: HandStarted) -> None:
        """A hand begins (dealer, pass direction)."""

    def on_cards_dealt(self, event: CardsDealt) -> None:
        """This seat's cards for the hand, before the pass."""

    def on_cards_received(self, event: CardsReceived) -> None:
        """The pass is complete: the cards given and got."""

    def on_card_played(self, event: CardPlayed) -> None:
        """A seat played a card (this seat's own cards included)."""

    def on_trick(self, event: TrickWon) -> None:
        """A trick is complete and taken."""

    def on_hand_end(self, event: HandEnded) -> None:
        """A hand is over and scored."""

    def on_game_end(self, event: GameEnded) -> None:
        """The game is over."""

    def on_fault(self, event: FaultNotice) -> None:
        """The referee counted a fault against this bot (the SDK also logs it to stderr)."""

    def on_seat_fault(self, event: SeatFaulted) -> None:
        """Another seat made a fault."""

    def on_time_warning(self, event: TimeWarning) -> None:
        """This seat's time bank is running low."""


def default_pass(view: DecisionView) -> list[Card]:
    """The base class's pass: the ``pass_count`` highest-ranked cards of the hand."""
    rest = list(view.hand)
    chosen: list[Card] = []
    for _ in range(view.pass_count):
        card = highest(rest)
        rest.remove(card)
        chosen.append(card)
    return chosen


def default_play(view: DecisionView) -> Card:
    """The base class's play: the lowest-ranked legal card."""
    return lowest(view.legal)


def dispatch_event(bot: Bot, event: Event) -> None:
    """Call the hook of ``bot`` that matches the event's type."""
    match event:
        case GameStarted():
            bot.on_game_start(event)
        case HandStarted():
            bot.on_hand_start(event)
        case CardsDealt():
            bot.on_cards_dealt(event)
        case CardsReceived():
            bot.on_cards_received(event)
        case CardPlayed():
            bot.on_card_played(event)
        case TrickWon():
            bot.on_trick(event)
        case HandEnded():
            bot.on_hand_end(event)
        case GameEnded():
            bot.on_game_end(event)
        case FaultNotice():
            bot.on_fault(event)
        case SeatFaulted():
            bot.on_seat_fault(event)
        case TimeWarning():
            bot.on_time_warning(event)
