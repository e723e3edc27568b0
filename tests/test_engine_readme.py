"""The README's example of the rules engine as a library, run as a doctest so it cannot rot.

The example is read from the README section "The rules engine as a library" itself; the claims of
the bullets under it and of the "Rules options" tables are checked one by one.
"""

from __future__ import annotations

import dataclasses
import doctest
import random
from pathlib import Path

import pytest

import arena.engine
from arena.cards import Card, mask_of, parse_cards
from arena.engine import Game, Hand, Phase
from arena.errors import RulesError, SeatError
from arena.rules import FirstLead, MoonRule, PassDirection, Rules, Settling, preset

README = Path(__file__).resolve().parent.parent / "README.md"
SECTION = "## The rules engine as a library"


def readme_example() -> str:
    """The first ```pycon block of the README's engine section, as written there."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index(SECTION) :]
    start = section.index("```pycon\n") + len("```pycon\n")
    return section[start : section.index("```", start)]


def test_the_readme_example_runs_as_shown() -> None:
    parser = doctest.DocTestParser()
    test = parser.get_doctest(readme_example(), {}, "README", str(README), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
    assert runner.summarize(verbose=False).attempted > 10


def test_the_engine_module_docstring_example_runs() -> None:
    failed, attempted = doctest.testmod(arena.engine)
    assert failed == 0 and attempted > 0


def test_the_bullets_under_the_example_hold() -> None:
    # "`Card.parse`, `str(card)`, `parse_cards("2C 3C QS")`".
    assert [str(c) for c in parse_cards("2C 3C QS")] == ["2C", "3C", "QS"]
    assert str(Card.parse("TH")) == "TH"
    # "`Hand.deal(rules, seed, hand_number=k)` or `Hand.from_hands(rules, ["2C 3C ...", ...],
    # dealer=0, pass_direction="left")`".
    dealt = Hand.deal(Rules(), 5, hand_number=1)
    hand = Hand.from_hands(
        Rules(),
        [" ".join(map(str, dealt.hand(s))) for s in range(4)],
        dealer=0,
        pass_direction="left",
    )
    assert hand.phase is Phase.PASS and hand.pass_direction is PassDirection.LEFT
    # "A seat number not at the table raises `SeatError` here and in every accessor that takes
    # a seat (`hand(seat)`, `taken(seat)`, the masks below...)".
    accessors = [
        hand.view,
        hand.hand,
        hand.taken,
        hand.hand_mask,
        hand.dealt_mask,
        hand.passed_mask,
        hand.received_mask,
        hand.taken_mask,
    ]
    for accessor in accessors:
        with pytest.raises(SeatError):
            accessor(4)
    for seat in hand.seats_to_pass:
        hand.pass_cards(seat, hand.hand(seat)[-3:])
    # "`hand.check_play(seat, card)` asks without raising".
    mover = hand.to_move
    assert mover is not None
    assert hand.check_play(mover, "QS") is not None and hand.check_play(mover, "2C") is None
    # "`Hand.from_view(rules, view, guessed_hands, kitty=())` rebuilds a full hand from a view".
    view = hand.view(mover)
    guess = [hand.hand(s) for s in range(4)]
    rebuilt = Hand.from_view(Rules(), view, guess)
    assert rebuilt.legal_plays() == hand.legal_plays()
    # The fast path: "`legal_mask()`, `play_index(i)`, ... `playout(rng)`".
    assert rebuilt.legal_mask() == mask_of(hand.legal_plays())
    rebuilt.play_index(hand.legal_plays()[0].index)
    rebuilt.playout(random.Random(3))
    assert rebuilt.is_over and sum(rebuilt.points_taken()) == 26
    # "`Game(rules, seed)`: ... `game.balances` (under a settling rule)".
    game = Game(preset("howell"), seed=3)
    game.hand.playout(random.Random(3))
    game.finish_hand()
    assert sum(game.balances) == 0


def test_the_rules_tables_defaults_and_presets_hold() -> None:
    # The "Rules options" table's defaults that depend on the number of players.
    removed = {3: ["2D"], 4: [], 5: ["2C", "2D"], 6: ["2C", "3C", "2D", "3D"]}
    kitty = {3: 1, 5: 2, 6: 4}
    cycles = {
        3: ["left", "right", "hold"],
        4: ["left", "right", "across", "hold"],
        5: ["left", "right", "left2", "right2", "hold"],
        6: ["left", "right", "across", "hold"],
    }
    for players in range(3, 7):
        rules = Rules(players=players)
        assert [str(c) for c in rules.removed] == removed[players]
        assert [d.value for d in rules.cycle] == cycles[players]
        if players != 4:
            assert Rules(players=players, kitty=True).kitty_size == kitty[players]
    assert Rules().moon_value == 26
    assert preset("spot").moon_value == 129  # spot hearts with the spot preset's Q of 25
    with pytest.raises(RulesError, match=r"rules\.sun: shooting the sun needs a moon rule"):
        Rules().with_options(["moon=off", "sun=true"])
    # The presets table, field by field against the defaults.
    old = {
        "pass_count": 0,
        "first_lead": FirstLead.LEFT_OF_DEALER,
        "penalty_on_first_trick": True,
        "must_break_hearts": False,
        "queen_penalty": 0,
        "queen_breaks_hearts": False,
        "moon": MoonRule.OFF,
    }
    spot: dict[str, object] = {"spot_hearts": True, "queen_penalty": 25, "target": 500}
    presets: dict[str, dict[str, object]] = {
        "standard": {},
        "omnibus": {"jack_of_diamonds": -10},
        "spot": spot,
        "spot-settling": {**spot, "settling": Settling.SPOT},
        "black-lady": {"penalty_on_first_trick": True},
        "old": old,
        "sweepstakes": {**old, "settling": Settling.SWEEPSTAKES},
        "howell": {**old, "settling": Settling.HOWELL},
    }
    default = Rules()
    for name, changed in presets.items():
        rules = preset(name)
        differs = {
            f.name: getattr(rules, f.name)
            for f in dataclasses.fields(rules)
            if getattr(rules, f.name) != getattr(default, f.name)
        }
        assert differs == changed, name
