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

# First: it sets gRPC's log level, which grpc reads once as it is imported.
from arena.referee import _grpc_log  # noqa: F401
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
