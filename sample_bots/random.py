"""A bot that passes and plays at random, repeatably.

Run it against a referee with ``python sample_bots/random.py`` and the environment variables
``ARENA_ADDRESS``, ``ARENA_TOKEN`` and ``ARENA_BOT_NAME``. Its generator is seeded from
``ARENA_BOT_SEED`` if set, else from the bot's name, so the same requests get the same answers.
"""

import sys
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path, and there this file's name would
# hide the standard library's random module from every import (the rules engine's too).
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import os  # noqa: E402
import random  # noqa: E402
from collections.abc import Sequence  # noqa: E402

from arena.cards import Card  # noqa: E402
from arena.client import Bot, DecisionView, run  # noqa: E402


class RandomBot(Bot):
    """Chooses uniformly among the legal cards, from a seeded generator."""

    def __init__(self, seed: str | None = None) -> None:
        if seed is None:
            seed = os.environ.get("ARENA_BOT_SEED") or os.environ.get("ARENA_BOT_NAME", "random")
        self.rng = random.Random(seed)

    def choose_pass(self, view: DecisionView) -> Sequence[Card]:
        return self.rng.sample(view.hand, view.pass_count)

    def choose_play(self, view: DecisionView) -> Card:
        return self.rng.choice(view.legal)


if __name__ == "__main__":
    run(RandomBot())
