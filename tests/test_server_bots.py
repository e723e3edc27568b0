"""Tiny bots for the server tests, run as processes: ``python tests/test_server_bots.py KIND``.

* ``low``: the lowest legal card, the highest cards passed (like sample_bots/lowcard.py).
* ``hang N``: plays like ``low`` for N decisions, then never answers again (holds its table open
  until the move clock runs out, so that a test can kill the server mid-game for certain).

No tests here; pytest only imports this file.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence

from arena.cards import Card
from arena.client import Bot, DecisionView, lowest, run


class Low(Bot):
    """The lowest legal card."""

    def choose_play(self, view: DecisionView) -> Card:
        return lowest(view.legal)


class Hang(Low):
    """Answers ``limit`` decisions, then blocks forever."""

    def __init__(self, limit: int) -> None:
        self.left = limit

    def _tick(self) -> None:
        self.left -= 1
        if self.left < 0:
            threading.Event().wait()

    def choose_pass(self, view: DecisionView) -> Sequence[Card]:
        self._tick()
        return super().choose_pass(view)

    def choose_play(self, view: DecisionView) -> Card:
        self._tick()
        return super().choose_play(view)


if __name__ == "__main__":
    kind = sys.argv[1]
    run(Hang(int(sys.argv[2])) if kind == "hang" else Low())
