"""A bot that kills itself (SIGKILL) once in the middle of a hand, then plays its lowest card.

As crashbot.py, but the process ends by a signal, not an exit code: the first process to reach its
``ARENA_TEST_CRASH_AT``-th play (default 5) creates the file named by ``ARENA_TEST_CRASH_MARKER``
and kills itself; every later process sees the file and plays on.
"""

import os
import signal
import sys
from collections.abc import Sequence

from arena.cards import Card
from arena.client import Bot, DecisionView, lowest, run


class KillOnceBot(Bot):
    """Lowest legal card; the first process of a run is killed at its N-th play."""

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
                pass  # another process was already killed: play on
            else:
                os.close(fd)
                print("killbot: killing myself on purpose", file=sys.stderr, flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
        return lowest(view.legal)


if __name__ == "__main__":
    run(KillOnceBot())
