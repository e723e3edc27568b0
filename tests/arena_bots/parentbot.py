"""A bot that starts a helper process of its own, as a bot driving an engine does, then plays its
lowest card.

The helper ignores SIGTERM (as the children of a bot that ignores it do) and sleeps for
``HELPER_S`` seconds; it writes its pid, a line each, to the file ``ARENA_TEST_HELPERS`` names.
Without the variable it starts no helper.
"""

import os
import subprocess
import sys

from arena.cards import Card
from arena.client import Bot, DecisionView, lowest, run

HELPER_S = 120
HELPER = (
    f"import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep({HELPER_S})"
)


class LowBot(Bot):
    """Lowest legal card (the helper is in how its process starts)."""

    def choose_play(self, view: DecisionView) -> Card:
        return lowest(view.legal)


if __name__ == "__main__":
    helpers = os.environ.get("ARENA_TEST_HELPERS")
    if helpers:
        helper = subprocess.Popen([sys.executable, "-c", HELPER])
        with open(helpers, "a") as f:
            f.write(f"{helper.pid}\n")
    run(LowBot())
