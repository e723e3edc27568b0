"""The :class:`Bot` base class: override two methods, optionally listen to events.

A minimal bot (typed, as ``mypy --strict`` wants it)::

    from arena.cards import Card
    from arena.client import Bot, DecisionView, run

    class MyBot(Bot):
        def choose_play(self, view: DecisionView) -> Card:
            return view.legal[0]

    if __name__ == "__main__":
        run(MyBot())
"""

from __future__ import annotations

import difflib
import inspect
import warnings
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

__all__ = [
    "Bot",
    "BotDefinitionWarning",
    "api_slips",
    "default_pass",
    "default_play",
    "dispatch_event",
    "warn_slips",
]


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


NAME_SIMILARITY = 0.6
"""How alike (difflib's ratio) a method's name must be to a Bot method's to be taken for a
misspelling of it."""


def _intended(name: str, unused: Sequence[str]) -> str | None:
    """The Bot method that ``name`` was most likely meant to be, among those not overridden."""
    close = difflib.get_close_matches(name, unused, n=1, cutoff=NAME_SIMILARITY)
    if close:
        return close[0]
    # 'play' for choose_play, 'pass_cards' for choose_pass: a shared word, too short for difflib.
    words = {w for w in name.lower().split("_") if len(w) >= 4}
    shared = [api for api in unused if words & set(api.split("_")) - {"choose"}]
    # The two decisions first: a misnamed one changes the bot's play, a misnamed hook does not.
    chosen = [api for api in shared if api.startswith("choose_")] or shared
    return chosen[0] if len(chosen) == 1 else None


def api_slips(cls: type[Bot]) -> list[str]:
    """What looks wrong in a Bot subclass's methods, one message each.

    That is: names like a Bot method's that the SDK never calls ("play" for choose_play), and
    overriding neither choose_play nor choose_pass.

    The SDK calls only the methods of :class:`Bot` by their exact names, so a misspelt one is
    silently never called and the base class's default plays instead.
    """
    if cls is Bot:
        return []  # the base class itself: the documented default player, on purpose
    api = [name for name in vars(Bot) if not name.startswith("_")]
    overridden = {name for name in api if getattr(cls, name) is not getattr(Bot, name)}
    unused = [name for name in api if name not in overridden]
    own: set[str] = set()
    for klass in cls.__mro__:
        if klass is Bot:
            break
        own.update(n for n, v in vars(klass).items() if callable(v) and not n.startswith("_"))
    slips = []
    for name in sorted(own - set(api)):
        meant = _intended(name, unused)
        if meant is not None:
            slips.append(
                f"bot class {cls.__name__} defines {name}(), which the SDK never calls: did you "
                f"mean {meant}()? (Bot's own {meant} runs instead)"
            )
    for name in api:
        if name in overridden and inspect.iscoroutinefunction(getattr(cls, name)):
            # Its call only makes a coroutine: a decision answered with it was a MALFORMED fault
            # ("<coroutine object ...> is not a card"), a hook silently never ran.
            slips.append(f"bot class {cls.__name__} defines {name}() with async def: {ASYNC_FIX}")
    if "choose_play" not in overridden and "choose_pass" not in overridden:
        slips.append(
            f"bot class {cls.__name__} overrides neither choose_play nor choose_pass: it plays "
            "the base class's defaults (the lowest legal card; passes its highest cards)"
        )
    return slips


ASYNC_FIX = (
    "the SDK calls the bot's methods as plain functions and never awaits them, so its code never "
    "runs; make it a plain def and run async code inside it with asyncio.run(...)"
)
"""What to do about an ``async def`` Bot method, for the warning at start and each answer."""


class BotDefinitionWarning(UserWarning):
    """A Bot subclass looks miswritten: a misspelt method name, or no decision overridden."""


_warned: set[type[Bot]] = set()
"""The classes :func:`warn_slips` has told of already (a local loop plays thousands of games)."""


def warn_slips(cls: type[Bot]) -> None:
    """Warn (:class:`BotDefinitionWarning`) of :func:`api_slips`, once per class and process."""
    if cls in _warned:
        return
    _warned.add(cls)
    for slip in api_slips(cls):
        warnings.warn(slip, BotDefinitionWarning, stacklevel=3)


_HOOK_OF: dict[type, str] = {
    GameStarted: "on_game_start",
    HandStarted: "on_hand_start",
    CardsDealt: "on_cards_dealt",
    CardsReceived: "on_cards_received",
    CardPlayed: "on_card_played",
    TrickWon: "on_trick",
    HandEnded: "on_hand_end",
    GameEnded: "on_game_end",
    FaultNotice: "on_fault",
    SeatFaulted: "on_seat_fault",
    TimeWarning: "on_time_warning",
}
"""Each event's type -> the Bot hook that receives it."""


def listens(bot: Bot) -> list[str]:
    """The event hooks ``bot``'s class overrides (a bot that keeps state by events)."""
    return [
        name for name in _HOOK_OF.values() if getattr(type(bot), name) is not getattr(Bot, name)
    ]


def dispatch_event(bot: Bot, event: Event) -> None:
    """Call the hook of ``bot`` that matches the event's type."""
    name = _HOOK_OF.get(type(event))
    if name is None:
        return
    result: object = getattr(bot, name)(event)
    if inspect.iscoroutine(result):
        # An async def hook (warned of at start): closed, so that Python does not add a
        # "never awaited" RuntimeWarning for every event.
        result.close()
