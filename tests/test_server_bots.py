"""Tiny bots for the server tests, run as processes: ``python tests/test_server_bots.py KIND``.

* ``low``: the lowest legal card, the highest cards passed (like sample_bots/lowcard.py).
* ``hang N``: plays like ``low`` for N decisions, then never answers again (holds its table open
  until the move clock runs out, so that a test can kill the server mid-game for certain).
* ``hang-game N``: plays like ``low`` until its N-th game starts, then never answers again (a
  count of decisions would say which game only for certain deals: the forced moves, played
  without asking the bot, differ from deal to deal, and a server's deals are secret).
* ``slow N SECONDS``: plays like ``low`` but takes SECONDS over every N-th decision (a timeout
  fault when that is past the move clock).

No tests here; pytest only imports this file.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Sequence

from arena.cards import Card
from arena.client import Bot, DecisionView, GameStarted, lowest, run


class Low(Bot):
    """The lowest legal card."""

    def choose_play(self, view: DecisionView) -> Card:
        return lowest(view.legal)


class Ticking(Low):
    """Plays like Low, calling :meth:`_tick` before every decision."""

    def _tick(self) -> None:
        """What happens before each decision (the subclasses' behaviour)."""

    def choose_pass(self, view: DecisionView) -> Sequence[Card]:
        self._tick()
        return super().choose_pass(view)

    def choose_play(self, view: DecisionView) -> Card:
        self._tick()
        return super().choose_play(view)


class Hang(Ticking):
    """Answers ``limit`` decisions, then blocks forever."""

    def __init__(self, limit: int) -> None:
        self.left = limit

    def _tick(self) -> None:
        self.left -= 1
        if self.left < 0:
            threading.Event().wait()


class HangInGame(Ticking):
    """Answers every decision of its first ``game - 1`` games, then blocks forever."""

    def __init__(self, game: int) -> None:
        self.game = game
        self.started = 0

    def on_game_start(self, event: GameStarted) -> None:
        self.started += 1

    def _tick(self) -> None:
        if self.started >= self.game:
            threading.Event().wait()


class Slow(Ticking):
    """Every ``every``-th decision takes ``seconds``."""

    def __init__(self, every: int, seconds: float) -> None:
        self.every = every
        self.seconds = seconds
        self.count = 0

    def _tick(self) -> None:
        self.count += 1
        if self.count % self.every == 0:
            time.sleep(self.seconds)


if __name__ == "__main__":
    kind = sys.argv[1]
    if kind == "hang":
        run(Hang(int(sys.argv[2])))
    elif kind == "hang-game":
        run(HangInGame(int(sys.argv[2])))
    elif kind == "slow":
        run(Slow(int(sys.argv[2]), float(sys.argv[3])))
    else:
        run(Low())
