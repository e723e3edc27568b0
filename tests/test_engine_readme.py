"""The README's example of the rules engine as a library, run as a doctest so it cannot rot.

README_EXAMPLE is the fenced block of the README section "The rules engine as a library", word
for word; if you change one, change the other.
"""

from __future__ import annotations

import doctest

import arena.engine

README_EXAMPLE = """
>>> import random
>>> from arena.engine import Game, Hand
>>> from arena.rules import Rules, preset
>>> rules = preset("omnibus").with_options(["moon=best", "sun=true"])
>>> hand = Hand.deal(rules, seed=42)  # hand 0 of a game: pass left
>>> hand.phase, hand.pass_direction.value
(<Phase.PASS: 'pass'>, 'left')
>>> for seat in hand.seats_to_pass:
...     hand.pass_cards(seat, hand.hand(seat)[-3:])  # each passes its three highest cards
>>> hand.to_move, hand.legal_plays()
(3, [Card.parse('2C')])
>>> from arena.errors import IllegalMoveError
>>> try:
...     hand.play("QS")
... except IllegalMoveError as err:
...     print(err)  # err.seat, err.cards and err.violation carry the same as data
seat 3 may not play QS: the first trick must be led with the lowest club in play
>>> sim = hand.copy()  # cheap, and independent of the original
>>> sim.playout(random.Random(1))  # random legal moves to the end: Monte Carlo search
>>> sim.result().points
(-9, 0, 8, 17)
>>> while not hand.is_over:
...     trick = hand.play(hand.legal_plays()[0])  # or choose each card: here the lowest legal
>>> hand.result().points  # seat 2 took the jack of diamonds (-10)
(0, 14, -2, 4)
>>> game = Game(Rules(), seed=7)  # a whole game to 100, every deal from the seed
>>> rng = random.Random(7)
>>> while not game.is_over:
...     game.hand.playout(rng)
...     result = game.finish_hand()
>>> len(game.results), game.totals, game.winners
(11, [58, 60, 104, 64], (0,))
"""


def test_the_readme_example_runs_as_shown() -> None:
    parser = doctest.DocTestParser()
    test = parser.get_doctest(README_EXAMPLE, {}, "README", "README.md", 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
    assert runner.summarize(verbose=False).attempted > 10


def test_the_engine_module_docstring_example_runs() -> None:
    failed, attempted = doctest.testmod(arena.engine)
    assert failed == 0 and attempted > 0
