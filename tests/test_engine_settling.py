"""Settling across deals, checked against the worked examples of the rule books."""

from __future__ import annotations

from fractions import Fraction

import pytest

from arena.engine import HandResult, settle_hand
from arena.errors import ConfigError
from arena.rules import Rules, Settling, preset


def counters(*values: int | Fraction) -> tuple[Fraction, ...]:
    """Counters as the settling returns them."""
    return tuple(Fraction(v) for v in values)


def result(hearts: tuple[int, ...], points: tuple[int, ...] | None = None) -> HandResult:
    """A finished hand's result with the given hearts taken (and points, default the hearts)."""
    pts = points if points is not None else hearts
    return HandResult(
        points=pts,
        taken_points=pts,
        hearts_taken=hearts,
        tricks_won=(1,) * len(hearts),
        moon=None,
        sun=False,
        moon_rule=None,
    )


def test_howells_settling_worked_example() -> None:
    # Foster: A takes 3 hearts, B and C 5 each, D none. Each pays three counters a heart:
    # A 9, B 15, C 15; each takes one out per heart not held: D 13, A 10, B 8, C 8.
    hearts = (3, 5, 5, 0)
    pays = tuple(3 * h for h in hearts)
    takes_out = tuple(13 - h for h in hearts)
    assert pays == (9, 15, 15, 0) and takes_out == (10, 8, 8, 13)
    won, pool = settle_hand(preset("howell"), result(hearts))
    assert won == tuple(Fraction(t - p) for t, p in zip(takes_out, pays, strict=True))
    assert won == counters(1, -7, -7, 13)
    assert pool == 0 and sum(won) == 0


def test_howells_settling_at_other_table_sizes_pays_players_minus_one() -> None:
    three = preset("howell").replace(players=3)
    won, _ = settle_hand(three, result((13, 0, 0)))
    assert won == counters(-26, 13, 13)
    six = preset("howell").replace(players=6)
    won, _ = settle_hand(six, result((1, 2, 3, 4, 3, 0)))
    assert won == tuple(Fraction((13 - h) - 5 * h) for h in (1, 2, 3, 4, 3, 0))
    assert sum(won) == 0


def test_spot_settling_worked_examples() -> None:
    rules = preset("spot-settling")
    # A 8, B 24, C 18, D 54: B pays A 16, C pays 10, D pays 46.
    won, pool = settle_hand(rules, result((1, 4, 3, 5), (8, 24, 18, 54)))
    assert won == counters(16 + 10 + 46, -16, -10, -46)
    assert pool == 0
    # A and B on 8 each, C 32, D 56: C pays 24 and D 48, split between A and B.
    won, _ = settle_hand(rules, result((1, 1, 5, 6), (8, 8, 32, 56)))
    assert won == counters(36, 36, -24, -48)
    # An odd sum between two lowest is split exactly.
    won, _ = settle_hand(rules, result((1, 1, 5, 6), (8, 8, 33, 56)))
    assert won == counters(Fraction(73, 2), Fraction(73, 2), -25, -48)


def test_sweepstakes_one_clean_player_wins_the_pool() -> None:
    rules = preset("sweepstakes")
    won, pool = settle_hand(rules, result((0, 5, 4, 4)))
    assert won == counters(13, -5, -4, -4) and pool == 0


def test_sweepstakes_two_clean_players_split_and_an_odd_counter_stays() -> None:
    rules = preset("sweepstakes")
    won, pool = settle_hand(rules, result((0, 0, 6, 7)))
    assert won == counters(6, 6, -6, -7) and pool == 1
    won, pool = settle_hand(rules, result((0, 0, 6, 8)), pool=Fraction(1))
    assert won == counters(7, 7, -6, -8) and pool == 1


@pytest.mark.parametrize("hearts", [(1, 5, 4, 3), (13, 0, 0, 0)])
def test_sweepstakes_otherwise_the_pool_is_a_jack_carried_to_the_next_deal(
    hearts: tuple[int, ...],
) -> None:
    rules = preset("sweepstakes")
    won, pool = settle_hand(rules, result(hearts))
    assert won == counters(*(-h for h in hearts)) and pool == 13
    # The next deal's lone clean player takes both pools.
    won, pool = settle_hand(rules, result((0, 6, 4, 3)), pool=pool)
    assert won == counters(26, -6, -4, -3) and pool == 0


def test_points_settling_moves_no_counters() -> None:
    won, pool = settle_hand(Rules(), result((3, 5, 5, 0)), pool=Fraction(2))
    assert won == counters(0, 0, 0, 0) and pool == 2
    assert Rules().settling is Settling.POINTS


@pytest.mark.parametrize(
    ("rules", "given", "pool", "said"),
    [
        # A 3-seat result under 4-seat rules came back as 3 counters, quietly wrong.
        (preset("howell"), result((13, 0, 0)), 0, "a 3-seat hand's, the rules a 4-seat"),
        (preset("howell").replace(players=3), result((3, 5, 5, 0)), 0, "4-seat hand's"),
        # A float pool (NaN too) came back as a float; text was a bare TypeError.
        (preset("sweepstakes"), result((3, 5, 5, 0)), 1.5, "pool must be a Fraction"),
        (preset("sweepstakes"), result((3, 5, 5, 0)), float("nan"), "got nan"),
        (preset("sweepstakes"), result((3, 5, 5, 0)), "3", "got '3'"),
        # These were AttributeErrors from inside.
        ("howell", result((3, 5, 5, 0)), 0, "rules must be a Rules"),
        (preset("howell"), None, 0, "result must be a HandResult"),
    ],
)
def test_settling_refuses_what_it_cannot_settle(
    rules: object, given: object, pool: object, said: str
) -> None:
    with pytest.raises(ConfigError, match=said):
        settle_hand(rules, given, pool)  # type: ignore[arg-type]


def test_a_whole_number_pool_is_taken_as_a_fraction() -> None:
    won, pool = settle_hand(preset("sweepstakes"), result((3, 5, 4, 1)), 2)  # nobody clean
    assert won == counters(-3, -5, -4, -1) and pool == Fraction(15) and type(pool) is Fraction
