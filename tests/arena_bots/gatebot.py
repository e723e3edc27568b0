"""A bot that plays its lowest card, but in a game of any board after the first only once a gate
file exists: the games of later boards are held in play until a test opens the gate.

The gate is the file named by ``ARENA_TEST_GATE``; without the variable it never waits. A board is
told by the game id (``g7-b1-r2``: board 1, rotation 2), as the referee names the tables of a
sequential test.

With ``ARENA_TEST_HOLD_START`` naming a file, the process does not connect at all until that file
exists, and says it waits by making the file's name + ``.waiting``: a run is held while its bots
start, for a test to stop it there.
"""

import os
import time
from collections.abc import Sequence

from arena.cards import Card
from arena.client import Bot, DecisionView, lowest, run

POLL_S = 0.01
GIVE_UP_S = 300.0
"""The longest a game is held: a test that failed before opening the gate must not leave this
process waiting forever (its wait blocks the SDK, which would otherwise see the referee go)."""


class GateBot(Bot):
    """Lowest legal card; on a board after the first, not before the gate file exists."""

    def __init__(self) -> None:
        self.gate = os.environ.get("ARENA_TEST_GATE")

    def _wait(self, view: DecisionView) -> None:
        if self.gate and "-b0-" not in view.game_id:
            until = time.monotonic() + GIVE_UP_S
            while not os.path.exists(self.gate) and time.monotonic() < until:
                time.sleep(POLL_S)

    def choose_pass(self, view: DecisionView) -> Sequence[Card]:
        self._wait(view)
        return sorted(view.hand, key=lambda c: (c.rank, c.suit))[-view.pass_count :]

    def choose_play(self, view: DecisionView) -> Card:
        self._wait(view)
        return lowest(view.legal)


def _hold_start() -> None:
    """Wait for ``ARENA_TEST_HOLD_START``'s file, if the variable is set (see the docstring)."""
    hold = os.environ.get("ARENA_TEST_HOLD_START")
    if not hold:
        return
    with open(f"{hold}.waiting", "w"):
        pass
    until = time.monotonic() + GIVE_UP_S
    while not os.path.exists(hold) and time.monotonic() < until:
        time.sleep(POLL_S)


if __name__ == "__main__":
    _hold_start()
    run(GateBot())
