"""The referee: hosts bot sessions over gRPC (hearts.v1), plays tables, records games.

Public API::

    Referee(config, accounts)          asyncio: await start(address) -> port, await play_table(spec)
                                       -> GameRecord; sessions(), kick(), lobby_changed(), stop()
    RefereeThread(config, accounts)    a Referee on its own thread: start(), submit(spec), stop()
    RefereeConfig, TlsConfig           server settings
    TokenAccounts, Accounts            token -> bot name (constant-time), or a pluggable store
    serve(...), serve_forever(...)     a standalone referee that stops cleanly on SIGINT/SIGTERM

The plain data of a table (TableSpec in, GameRecord out) is in :mod:`arena.table`.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

# First: it sets gRPC's log level, which grpc reads once as it is imported.
from arena.referee import _grpc_log  # noqa: F401

if TYPE_CHECKING:
    from arena.referee.accounts import Accounts, BotIdentity, Identity, Standing, TokenAccounts
    from arena.referee.config import PROTOCOL_VERSIONS, RefereeConfig, TlsConfig
    from arena.referee.fallback import fallback_pass, fallback_play
    from arena.referee.server import (
        BOT_SERVICE,
        SPECTATOR_SERVICE,
        Referee,
        SessionInfo,
        serve,
        serve_forever,
    )
    from arena.referee.thread import RefereeThread

_HOMES = {
    "accounts": ("Accounts", "BotIdentity", "Identity", "Standing", "TokenAccounts"),
    "config": ("PROTOCOL_VERSIONS", "RefereeConfig", "TlsConfig"),
    "fallback": ("fallback_pass", "fallback_play"),
    "server": (
        "BOT_SERVICE",
        "SPECTATOR_SERVICE",
        "Referee",
        "SessionInfo",
        "serve",
        "serve_forever",
    ),
    "thread": ("RefereeThread",),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "BOT_SERVICE",
    "PROTOCOL_VERSIONS",
    "SPECTATOR_SERVICE",
    "Accounts",
    "BotIdentity",
    "Identity",
    "Referee",
    "RefereeConfig",
    "RefereeThread",
    "SessionInfo",
    "Standing",
    "TlsConfig",
    "TokenAccounts",
    "fallback_pass",
    "fallback_play",
    "serve",
    "serve_forever",
]


def __getattr__(name: str) -> Any:
    """A public name, imported from its module when first asked for: the SDK (every bot
    process) imports :mod:`arena.referee.wire` for the card spellings, and loading the whole
    server with it cost each bot's start about 20 ms."""
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'arena.referee' has no attribute {name!r}")
    value = getattr(import_module(f"arena.referee.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The module's names, the public ones not yet imported included."""
    return sorted({*globals(), *__all__})
