"""A bot that passes and plays at random, repeatably.

(Not named random.py: in this folder that name would hide the standard library's random module
from every sample bot run as a script, since a script's folder comes first on sys.path.)

Run it against a referee with ``python sample_bots/random_bot.py`` and the environment variables
``ARENA_ADDRESS``, ``ARENA_TOKEN`` and ``ARENA_BOT_NAME``. Its seed is ``ARENA_BOT_SEED`` if set,
else the bot's name. Each decision draws from its own generator, seeded from that seed and the
position (:func:`arena.client.decision_rng`), so the same request gets the same answer in any
process, whatever that process played before: a game replays from its seed and the bots' seeds.
"""

import os
from collections.abc import Sequence

from arena.cards import Card
from arena.client import Bot, DecisionView, decision_rng, run


class RandomBot(Bot):
    """Chooses uniformly among the legal cards, from a generator seeded per decision."""

    def __init__(self, seed: str | None = None) -> None:
        if seed is None:
            seed = os.environ.get("ARENA_BOT_SEED") or os.environ.get("ARENA_BOT_NAME", "random")
        self.seed = seed

    def choose_pass(self, view: DecisionView) -> Sequence[Card]:
        return decision_rng(self.seed, view).sample(view.hand, view.pass_count)

    def choose_play(self, view: DecisionView) -> Card:
        return decision_rng(self.seed, view).choice(view.legal)


if __name__ == "__main__":
    run(RandomBot())
