"""Hearts Arena: a bot-versus-bot competition harness for the card game Hearts.

The rules engine is importable without any network code::

    from arena import Card, Rules, Hand, Game, preset
"""

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


def __getattr__(name: str) -> str:
    """``__version__`` on first use: importing importlib.metadata cost every bot process (the
    SDK imports this package) about 20 ms at start, for a string most never read."""
    if name != "__version__":
        raise AttributeError(f"module 'arena' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        value = version("hearts-arena")
    except PackageNotFoundError:  # running from a source tree that was never installed
        value = "0.0.0+unknown"
    globals()["__version__"] = value
    return value


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
