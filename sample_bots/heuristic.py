"""A bot that plays by the rules of thumb of a careful human player.

Passing, it gives away the queen of spades and her top guards unless its spades are long, voids a
short side suit, and sheds high cards. Playing, it ducks under the card winning the trick, wins
cheaply only when last and the trick is clean, dumps the queen and high hearts when void, and
stops a moon: when one other player holds every point taken so far, it takes a heart itself
(where the rules have a moon).

Run it against a referee with ``python sample_bots/heuristic.py`` and the environment variables
``ARENA_ADDRESS``, ``ARENA_TOKEN`` and ``ARENA_BOT_NAME``.
"""

from collections.abc import Sequence

from arena.cards import QUEEN_OF_SPADES, Card, Rank, Suit
from arena.client import Bot, DecisionView, highest, lowest, run
from arena.rules import MoonRule

SAFE_SPADES = 4
"""Spades below the queen that make holding her (and her guards) safe."""
MOON_ALARM = 0.5
"""The share of the moon's points that one player must hold, alone, before we spoil the moon."""


class HeuristicBot(Bot):
    """Ducks, sheds the queen and high hearts when void, voids short suits, stops moons."""

    def choose_pass(self, view: DecisionView) -> Sequence[Card]:
        hand = view.hand
        queen_counts = view.rules.queen_penalty > 0
        low_spades = sum(1 for c in hand if c.suit is Suit.SPADES and c.rank < Rank.QUEEN)
        spades_safe = low_spades >= SAFE_SPADES
        side = [s for s in (Suit.CLUBS, Suit.DIAMONDS) if any(c.suit is s for c in hand)]
        # Void the shortest side suit that fits in the pass.
        short = min(side, key=lambda s: sum(1 for c in hand if c.suit is s), default=None)
        short_len = sum(1 for c in hand if c.suit is short)

        def urgency(card: Card) -> float:
            score = float(card.rank)
            if card.suit is Suit.HEARTS:
                score += 2
            if card.suit is Suit.SPADES and queen_counts:
                if card == QUEEN_OF_SPADES or card.rank > Rank.QUEEN:
                    score += -10 if spades_safe else 30
                else:
                    score -= 10  # low spades guard against the queen
            if card.suit is short and short_len <= view.pass_count:
                score += 15
            return score - 40 * (view.rules.card_points(card) < 0)  # keep a bonus card

        return sorted(hand, key=urgency, reverse=True)[: view.pass_count]

    def choose_play(self, view: DecisionView) -> Card:
        legal = view.legal
        rules = view.rules
        taken = view.points_taken
        scorers = [s for s, p in enumerate(taken) if p > 0]
        shooter = None
        alone = len(scorers) == 1 and scorers[0] != view.seat
        # No alarm where no moon can be shot (moon off: the old, sweepstakes and howell
        # presets): it spoiled moons that could not happen, 0.38 points a hand dearer.
        moon = rules.moon is not MoonRule.OFF
        if moon and alone and taken[scorers[0]] >= MOON_ALARM * rules.moon_value:
            shooter = scorers[0]
        queen_out = QUEEN_OF_SPADES not in view.played and QUEEN_OF_SPADES not in view.hand
        safe = [c for c in legal if not rules.is_penalty(c)]
        winning = view.winning()
        if winning is None:  # leading
            hearts = [c for c in legal if c.suit is Suit.HEARTS]
            if shooter is not None and hearts:
                return highest(hearts)  # take a heart before the shooter does
            quiet = [
                c
                for c in legal
                if c.suit is not Suit.HEARTS
                and not (c.suit is Suit.SPADES and (c.rank >= Rank.QUEEN or not queen_out))
            ]
            return lowest(quiet or legal)
        winner, top = winning
        following = legal[0].suit is view.lead_suit
        if not following:  # void: discard
            if shooter is not None and winner == shooter:
                return highest(safe or legal)  # give the shooter nothing
            if QUEEN_OF_SPADES in legal and rules.queen_penalty > 0:
                return QUEEN_OF_SPADES
            guards = [c for c in legal if c.suit is Suit.SPADES and c.rank > Rank.QUEEN]
            if queen_out and guards:
                return highest(guards)
            hearts = [c for c in legal if c.suit is Suit.HEARTS]
            return highest(hearts or legal)
        if shooter is not None and view.trick_points() > 0:
            above = [c for c in legal if c.rank > top.rank]
            if above:
                return highest(above)  # take the points: the moon is spoiled
        under = [c for c in legal if c.rank < top.rank]
        if under:
            return highest(under)
        no_queen = [c for c in legal if c != QUEEN_OF_SPADES] or legal
        if view.last_to_play:
            return highest(no_queen)
        return lowest(no_queen)


if __name__ == "__main__":
    run(HeuristicBot())
