"""A bot that plays a pseudo-random legal card drawn from a hash of what it sees.

Unlike a bot seeded once per process, it answers the same position the same way whichever of its
pool's processes is asked, and whatever that process played before: the resume tests compare whole
runs exactly, so every bot in them must be repeatable decision by decision.
"""

import random
from collections.abc import Sequence

from arena.cards import Card
from arena.client import Bot, DecisionView, run


def _rng(view: DecisionView) -> random.Random:
    key = (
        f"{view.seat_names}/{view.hand_number}/{view.seat}/{view.hand}/"
        f"{view.tricks}/{view.trick}/{view.totals}"
    )
    return random.Random(key)


class HashBot(Bot):
    """Uniform among the legal cards, from a generator seeded by the position."""

    def choose_pass(self, view: DecisionView) -> Sequence[Card]:
        return _rng(view).sample(view.hand, view.pass_count)

    def choose_play(self, view: DecisionView) -> Card:
        return _rng(view).choice(view.legal)


if __name__ == "__main__":
    run(HashBot())
