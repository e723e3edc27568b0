"""A bot that plays its lowest legal card and passes its highest cards.

Run it against a referee with ``python sample_bots/lowcard.py`` and the environment variables
``ARENA_ADDRESS``, ``ARENA_TOKEN`` and ``ARENA_BOT_NAME``.
"""

from collections.abc import Sequence

from arena.cards import Card
from arena.client import Bot, DecisionView, lowest, run


class LowCardBot(Bot):
    """Always the lowest-ranked legal card; gives away the highest-ranked cards."""

    def choose_pass(self, view: DecisionView) -> Sequence[Card]:
        by_rank = sorted(view.hand, key=lambda c: (c.rank, c.suit), reverse=True)
        return by_rank[: view.pass_count]

    def choose_play(self, view: DecisionView) -> Card:
        return lowest(view.legal)


if __name__ == "__main__":
    run(LowCardBot())
