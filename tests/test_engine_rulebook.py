"""The engine against the rule books on scripted corner cases, and the checked entry points
against bad input (each test here failed before the fix it names)."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from arena.engine import Hand, HandResult, settle_hand
from arena.errors import ConfigError, SeatError
from arena.rules import MoonRule, Rules, preset
from arena.table import Clocks, FaultPolicy


def _counters(*values: int) -> tuple[Fraction, ...]:
    """Counters per seat, as :func:`settle_hand` gives them."""
    return tuple(Fraction(v) for v in values)


def _result(hearts: tuple[int, ...]) -> HandResult:
    """A hand's result in which each seat took ``hearts[seat]`` hearts (Foster's game: 1 each)."""
    return HandResult(
        points=hearts,
        taken_points=hearts,
        hearts_taken=hearts,
        tricks_won=tuple(1 for _ in hearts),
        moon=None,
        sun=False,
        moon_rule=None,
    )


# ---- sweepstakes: one player with every heart is a jack -----------------------------------------


def test_sweepstakes_one_player_with_every_heart_at_three_players_is_a_jack() -> None:
    # "If every player takes one or more hearts or if one has taken all thirteen, the pool is
    # designated a Jack and is carried forward." At three players that leaves two clean players,
    # who split the pool (and the jack carried in) before the fix: (-13, +9, +9).
    rules = preset("sweepstakes").replace(players=3)
    won, pool = settle_hand(rules, _result((13, 0, 0)), Fraction(5))
    assert won == _counters(-13, 0, 0)
    assert pool == 18
    # The jack grows until one player alone is clean, and then goes to that player.
    won, pool = settle_hand(rules, _result((0, 13, 0)), pool)
    assert won == _counters(0, -13, 0) and pool == 31
    won, pool = settle_hand(rules, _result((6, 7, 0)), pool)
    assert won == _counters(-6, -7, 44) and pool == 0


def test_sweepstakes_two_clean_players_with_the_hearts_shared_still_split() -> None:
    won, pool = settle_hand(preset("sweepstakes"), _result((6, 7, 0, 0)), Fraction(0))
    assert won == _counters(-6, -7, 6, 6) and pool == 1


def test_sweepstakes_the_same_at_four_players_one_with_every_heart() -> None:
    won, pool = settle_hand(preset("sweepstakes"), _result((13, 0, 0, 0)), Fraction(5))
    assert won == _counters(-13, 0, 0, 0) and pool == 18


def test_howell_settling_matches_fosters_worked_example() -> None:
    # Foster: A takes 3 hearts, B and C 5 each, D none. A pays 9 and takes 10 back, B and C pay
    # 15 and take 8, D takes 13.
    won, pool = settle_hand(preset("howell"), _result((3, 5, 5, 0)))
    assert won == _counters(1, -7, -7, 13) and pool == 0


# ---- hand.result(totals): a bad totals list is a SeatError, under every moon rule ---------------


def _played(rules: Rules) -> Hand:
    hand = Hand.deal(rules, seed=2)
    hand.playout(random.Random(1))
    return hand


@pytest.mark.parametrize("moon", [MoonRule.ADD, MoonRule.BEST])
@pytest.mark.parametrize(
    ("totals", "message"),
    [
        (5, r"totals: expected one whole number per seat \(4\), e\.g\. game\.totals, got 5"),
        ("abcd", r"totals: expected one whole number per seat \(4\).*got 'abcd'"),
        ([1, 2, 3, "x"], r"totals: expected whole numbers, one per seat, got \[1, 2, 3, 'x'\]"),
        ([1.5, 0, 0, 0], r"totals: expected whole numbers"),
        ([1, 2], r"totals: 2 given for a table of 4 seats"),
    ],
)
def test_result_refuses_totals_that_are_not_one_whole_number_per_seat(
    moon: MoonRule, totals: object, message: str
) -> None:
    # result(5) raised "object of type 'int' has no len()"; a list holding text passed unseen
    # unless a moon was scored under BEST, where it raised a bare TypeError from the sum.
    hand = _played(Rules(moon=moon))
    with pytest.raises(SeatError, match=message):
        hand.result(totals)  # type: ignore[arg-type]


def test_result_takes_totals_as_a_list_or_a_tuple() -> None:
    hand = _played(Rules(moon=MoonRule.BEST))
    assert hand.result([0, 0, 0, 0]) == hand.result((0, 0, 0, 0)) == hand.result()


# ---- the table's clocks and fault policy from plain data ----------------------------------------


@pytest.mark.parametrize("data", [None, [1], "max_faults", 3])
def test_clocks_and_fault_policy_from_what_is_no_mapping_say_so(data: object) -> None:
    # Clocks.from_dict(None) and FaultPolicy.from_dict([1]) raised a bare TypeError; a string
    # was read letter by letter as unknown fields.
    with pytest.raises(ConfigError, match=r"^clocks: expected a mapping of fields \(move_ms, "):
        Clocks.from_dict(data)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"^faults: expected a mapping of fields \(max_faults, "):
        FaultPolicy.from_dict(data)  # type: ignore[arg-type]


def test_clocks_with_a_field_name_that_is_no_text_names_it() -> None:
    with pytest.raises(ConfigError, match=r"clocks: unknown field\(s\) 1; known: move_ms"):
        Clocks.from_dict({1: 2})  # type: ignore[dict-item]
    assert Clocks.from_dict({"move_ms": 5}) == Clocks(move_ms=5)
    assert FaultPolicy.from_dict(FaultPolicy(strict=True).to_dict()) == FaultPolicy(strict=True)
