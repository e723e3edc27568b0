"""A bot that passes and plays at random, repeatably.

(Not named random.py: in this folder that name would hide the standard library's random module
from every sample bot run as a script, since a script's folder comes first on sys.path.)

Run it against a referee with ``python sample_bots/random_bot.py`` and the environment variables
``ARENA_ADDRESS``, ``ARENA_TOKEN`` and ``ARENA_BOT_NAME``. Its generator is seeded from
``ARENA_BOT_SEED`` if set, else from the bot's name, so the same requests get the same answers.
"""

import os
import random
from collections.abc import Sequence

from arena.cards import Card
from arena.client import Bot, DecisionView, run


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
