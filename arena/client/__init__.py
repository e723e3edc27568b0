"""The Python client SDK: write a Hearts bot as one small class, run it with one call.

::

    from arena.cards import Card
    from arena.client import Bot, DecisionView, lowest, run

    class LowBot(Bot):
        \"\"\"Plays its lowest legal card.\"\"\"

        def choose_play(self, view: DecisionView) -> Card:
            return lowest(view.legal)

    if __name__ == "__main__":
        run(LowBot())  # address, token and name from ARENA_ADDRESS, ARENA_TOKEN, ARENA_BOT_NAME

:func:`play_local` plays the same classes against each other in-process, with no network.
:func:`sample_world` and :func:`playout` help a bot search with the rules engine;
:func:`decision_rng` gives a bot randomness that replays: one generator per decision, seeded from
the bot's seed and the position, never from what the process did before.
"""

import os

# gRPC's C core reads its log level once, when grpc is first imported (this package's modules
# import it through arena.table), and by default writes INFO lines on stderr: a failed TLS
# handshake put one before the SDK's own one-line error. A level the author sets is kept.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

from arena.client.bot import Bot, BotDefinitionWarning, default_pass, default_play
from arena.client.events import (
    CardPlayed,
    CardsDealt,
    CardsReceived,
    Event,
    FaultKind,
    FaultNotice,
    GameEnded,
    GameStarted,
    HandEnded,
    HandStarted,
    SeatFaulted,
    Termination,
    TimeWarning,
    TrickWon,
)
from arena.client.local import LocalResult, play_local, recorded_views, view_of
from arena.client.remote import (
    ClientSettings,
    GaveUp,
    Refused,
    Removed,
    SessionEnd,
    run,
    serve,
)
from arena.client.simulate import playout, sample_world
from arena.client.view import (
    DecisionKind,
    DecisionView,
    decision_rng,
    highest,
    lowest,
    position_key,
    voids_shown,
)
from arena.client.wire import PROTOCOL_VERSION

__all__ = [
    "PROTOCOL_VERSION",
    "Bot",
    "BotDefinitionWarning",
    "CardPlayed",
    "CardsDealt",
    "CardsReceived",
    "ClientSettings",
    "DecisionKind",
    "DecisionView",
    "Event",
    "FaultKind",
    "FaultNotice",
    "GameEnded",
    "GameStarted",
    "GaveUp",
    "HandEnded",
    "HandStarted",
    "LocalResult",
    "Refused",
    "Removed",
    "SeatFaulted",
    "SessionEnd",
    "Termination",
    "TimeWarning",
    "TrickWon",
    "decision_rng",
    "default_pass",
    "default_play",
    "highest",
    "lowest",
    "play_local",
    "playout",
    "position_key",
    "recorded_views",
    "run",
    "sample_world",
    "serve",
    "view_of",
    "voids_shown",
]
