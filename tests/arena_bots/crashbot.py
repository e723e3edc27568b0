"""A bot that dies once in the middle of a hand, then (restarted) plays its lowest card.

The first process to reach its ``ARENA_TEST_CRASH_AT``-th play (default 5) creates the file named
by ``ARENA_TEST_CRASH_MARKER`` and exits with code 3 without a word to the referee, or with
``ARENA_TEST_CRASH_SIGNAL=1`` kills itself with SIGKILL (an end by a signal, not a code); every
later process sees the file and plays on. Without the marker variable it never crashes.
"""

import os
import signal
import sys
from collections.abc import Sequence

from arena.cards import Card
from arena.client import Bot, DecisionView, lowest, run

CRASH_EXIT_CODE = 3


class CrashOnceBot(Bot):
    """Lowest legal card; the first process of a run dies at its N-th play."""

    def __init__(self) -> None:
        self.marker = os.environ.get("ARENA_TEST_CRASH_MARKER")
        self.crash_at = int(os.environ.get("ARENA_TEST_CRASH_AT", "5"))
        self.plays = 0

    def choose_pass(self, view: DecisionView) -> Sequence[Card]:
        return sorted(view.hand, key=lambda c: (c.rank, c.suit))[-view.pass_count :]

    def choose_play(self, view: DecisionView) -> Card:
        self.plays += 1
        if self.marker and self.plays >= self.crash_at:
            try:
                fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                pass  # another process already crashed: play on
            else:
                os.close(fd)
                print("crashbot: crashing on purpose", file=sys.stderr, flush=True)
                if os.environ.get("ARENA_TEST_CRASH_SIGNAL") == "1":
                    os.kill(os.getpid(), signal.SIGKILL)
                os._exit(CRASH_EXIT_CODE)
        return lowest(view.legal)


if __name__ == "__main__":
    run(CrashOnceBot())
