"""A bot that searches: it guesses the hidden cards many times and plays each guess out.

For each legal card it deals the cards it has not seen to the other seats at random, but
consistently with what it has seen (how many cards each holds, the suits each has shown it lacks,
the cards it passed), plays the card, finishes the hand with the engine and a fast greedy policy,
and keeps the card with the best average score (its own points minus the others' mean, so that a
moon counts). The number of playouts is fixed by its budget and scaled down when the game's move
time is short (it never plans to draw on its time bank, which is kept for slow moments); a move
time too short for one playout per legal card gets its lowest card, the queen of spades last.
Nothing depends on the wall clock or on earlier decisions, so each answer is a function of its
seed, the request and the game's move time: the move time as the game set it
(``GameStarted.move_ms``), not the milliseconds left that the request gives (``view.move_ms``),
which differ by one from run to run as the referee rounds them, and made the same game differ at
short move times.

Run it against a referee with ``python sample_bots/montecarlo.py`` and the environment variables
``ARENA_ADDRESS``, ``ARENA_TOKEN`` and ``ARENA_BOT_NAME`` (``ARENA_BOT_SEED`` sets its seed).
"""

import os
from collections.abc import Sequence

from arena.cards import QUEEN_OF_SPADES, Card, Rank, Suit
from arena.client import (
    Bot,
    DecisionView,
    GameStarted,
    decision_rng,
    playout,
    run,
    sample_world,
)

PLAYOUTS = 400
"""Playouts per decision when the move time allows (a few milliseconds each on a laptop core)."""
PLAYOUTS_PER_SECOND_ALLOWED = 800
"""Playouts per second of move time: a playout costs up to 0.3 ms on one core, so the search
spends at most about a quarter of the move's own time and leaves the bank alone."""
SAFE_SPADES = 4
"""Spades below the queen that make holding her (and her guards) safe."""


class MonteCarloBot(Bot):
    """Samples the unseen cards consistently, rolls out each legal card, keeps the best."""

    def __init__(self, seed: str | None = None, playouts: int = PLAYOUTS) -> None:
        self.seed = seed if seed is not None else os.environ.get("ARENA_BOT_SEED", "montecarlo")
        self.playouts = playouts
        self.move_ms: int | None = None
        """The game's move time (None: no game started yet, or none set)."""

    def on_game_start(self, event: GameStarted) -> None:
        self.move_ms = event.move_ms

    def choose_pass(self, view: DecisionView) -> Sequence[Card]:
        # Passing is judged by rule of thumb: the queen and her top guards unless the spades are
        # long, then the highest cards, hearts first.
        low_spades = sum(1 for c in view.hand if c.suit is Suit.SPADES and c.rank < Rank.QUEEN)

        def urgency(card: Card) -> float:
            exposed = card.suit is Suit.SPADES and card.rank >= Rank.QUEEN
            danger = exposed and low_spades < SAFE_SPADES and view.rules.queen_penalty > 0
            return card.rank + 20 * danger + 2 * (card.suit is Suit.HEARTS)

        return sorted(view.hand, key=urgency, reverse=True)[: view.pass_count]

    def choose_play(self, view: DecisionView) -> Card:
        legal = view.legal
        if len(legal) == 1:
            return legal[0]
        budget = self.playouts
        # The game's move time where it is known: the time left that the request gives varies
        # by a millisecond between runs of the same game.
        move_ms = self.move_ms if self.move_ms is not None else view.move_ms
        if move_ms is not None:
            budget = min(budget, move_ms * PLAYOUTS_PER_SECOND_ALLOWED // 1000)
        if budget < len(legal):
            # Not one playout per card in the time: a search would overrun the move (and forfeit
            # the game once the bank is gone), so the cheapest safe guess instead.
            return min(legal, key=_lowest_but_the_queen)
        samples = budget // len(legal)
        # One generator per decision, keyed by the position: the same view gets the same answer
        # in any process, whatever that process searched before.
        rng = decision_rng(self.seed, view)
        totals = view.totals
        score = dict.fromkeys(legal, 0.0)
        for _ in range(samples):
            world = sample_world(view, rng)
            for card in legal:
                hand = world.copy()
                hand.play(card)
                points = playout(hand, totals).points
                others = (sum(points) - points[view.seat]) / (view.players - 1)
                score[card] += points[view.seat] - others
        # Ties (common when the choice cannot matter) go to the lowest card, never the queen.
        return min(legal, key=lambda c: (score[c], *_lowest_but_the_queen(c)))


def _lowest_but_the_queen(card: Card) -> tuple[bool, int]:
    """A sort key: the lowest card first, the queen of spades last."""
    return card == QUEEN_OF_SPADES, card.rank


if __name__ == "__main__":
    run(MonteCarloBot())
