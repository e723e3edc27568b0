"""Hearts Arena: a bot-versus-bot competition harness for the card game Hearts.

The rules engine is importable without any network code::

    from arena import Card, Rules, Hand, Game, preset
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arena.cards import Card, Rank, Suit, parse_cards
    from arena.engine import Game, Hand, HandResult, Phase, SeatView, Trick
    from arena.errors import (
        ArenaError,
        CardParseError,
        IllegalMoveError,
        RulesError,
        SeatError,
        StateError,
        Violation,
    )
    from arena.rules import FirstLead, GameEnd, MoonRule, PassDirection, Rules, Settling, preset

__version__: str
"""The installed package's version, read from its metadata when first asked for."""

_HOMES = {
    "cards": ("Card", "Rank", "Suit", "parse_cards"),
    "engine": ("Game", "Hand", "HandResult", "Phase", "SeatView", "Trick"),
    "errors": (
        "ArenaError",
        "CardParseError",
        "IllegalMoveError",
        "RulesError",
        "SeatError",
        "StateError",
        "Violation",
    ),
    "rules": ("FirstLead", "GameEnd", "MoonRule", "PassDirection", "Rules", "Settling", "preset"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module when first asked for.

    Nothing is imported with the package itself: ``arena`` (the command line) sets its Ctrl-C
    guard in :mod:`arena.cli`, after this package has loaded, and loading the engine here
    (some 60 ms) left a Ctrl-C at the start a traceback. ``__version__`` is read from the
    package's metadata on first use (importlib.metadata cost every bot process about 20 ms).
    The modules these names come from (``arena.cards``, ``arena.engine``, ...) resolve as
    attributes too, as when this package imported them.
    """
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            value: Any = version("hearts-arena")
        except PackageNotFoundError:  # running from a source tree that was never installed
            value = "0.0.0+unknown"
    elif name in _HOMES:
        value = import_module(f"arena.{name}")
    elif name in _HOME_OF:
        value = getattr(import_module(f"arena.{_HOME_OF[name]}"), name)
    else:
        raise AttributeError(f"module 'arena' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The module's names, the public ones not yet imported included."""
    return sorted({*globals(), *__all__, *_HOMES})


__all__ = [
    "ArenaError",
    "Card",
    "CardParseError",
    "FirstLead",
    "Game",
    "GameEnd",
    "Hand",
    "HandResult",
    "IllegalMoveError",
    "MoonRule",
    "PassDirection",
    "Phase",
    "Rank",
    "Rules",
    "RulesError",
    "SeatError",
    "SeatView",
    "Settling",
    "StateError",
    "Suit",
    "Trick",
    "Violation",
    "__version__",
    "parse_cards",
    "preset",
]
