"""Hearts Arena: a bot-versus-bot competition harness for the card game Hearts.

The rules engine is importable without any network code::

    from arena import Card, Rules, Hand, Game, preset
"""

from importlib.metadata import PackageNotFoundError, version

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

try:
    __version__ = version("hearts-arena")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

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
