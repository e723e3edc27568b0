"""The sample bots: legal under every table size and rule variant, repeatable, and ranked.

They are loaded from their files, exactly the classes that ``python sample_bots/NAME.py`` runs,
and played in-process with :func:`arena.client.play_local` (the real engine, which refuses any
illegal card). The strength tests use duplicate deals: every board is played twice with the
bots swapped between the seats, so that the cards favour neither.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import random
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from arena.client import Bot, DecisionKind, DecisionView, play_local, view_of
from arena.engine import Hand
from arena.rules import FirstLead, MoonRule, Rules, preset

SAMPLES = Path(__file__).resolve().parent.parent / "sample_bots"
FAST_PLAYOUTS = 12
"""Montecarlo's playouts per decision where only its legality is tested (it is the slow one)."""


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"sample_bot_{name}", SAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


RandomBot = _load("random_bot").RandomBot
LowCardBot = _load("lowcard").LowCardBot
HeuristicBot = _load("heuristic").HeuristicBot
MonteCarloBot = _load("montecarlo").MonteCarloBot


def _all_four(players: int, playouts: int = FAST_PLAYOUTS) -> list[Bot]:
    makers: list[Callable[[], Bot]] = [
        lambda: MonteCarloBot("mc", playouts=playouts),
        HeuristicBot,
        LowCardBot,
        lambda: RandomBot("r"),
    ]
    return [makers[s % 4]() for s in range(players)]


# ---- legality --------------------------------------------------------------------------------

VARIANTS = {
    "standard": Rules(),
    "omnibus": preset("omnibus"),
    "spot": preset("spot"),
    "black-lady": preset("black-lady"),
    "old": preset("old"),
    "no-passing": Rules(pass_count=0),
    "any-club-best-moon": Rules(first_lead=FirstLead.ANY_CLUB, moon=MoonRule.BEST),
    "left-of-dealer": Rules(first_lead=FirstLead.LEFT_OF_DEALER, lead_hearts_with_queen=True),
}


@pytest.mark.parametrize("players", [3, 4, 5, 6])
def test_the_sample_bots_play_legally_at_every_table_size(players: int) -> None:
    for seed in range(6):
        rules = Rules(players=players, kitty=seed % 2 == 1 and players != 4)
        result = play_local(_all_four(players), rules=rules, seed=seed, hands=4)
        assert len(result.hands) == 4
        assert tuple(map(sum, zip(*result.hand_points, strict=True))) == result.totals


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_the_sample_bots_play_legally_under_every_variant(variant: str) -> None:
    rules = VARIANTS[variant]
    for seed in range(3):
        result = play_local(_all_four(4), rules=rules, seed=seed, hands=4)
        assert len(result.hands) == 4


def test_a_whole_game_with_montecarlo_at_its_default_strength() -> None:
    bots = [MonteCarloBot("mc"), HeuristicBot(), LowCardBot(), RandomBot("r")]
    result = play_local(bots, seed=1, move_ms=1000)
    assert max(result.totals) >= Rules().target


# ---- determinism -----------------------------------------------------------------------------


def test_random_and_montecarlo_repeat_themselves_given_their_seed() -> None:
    def game(seed: str) -> tuple[tuple[int, ...], ...]:
        bots = [RandomBot(seed), MonteCarloBot(seed, playouts=20), RandomBot(seed + "x"), Bot()]
        return play_local(bots, seed=4, hands=3).hand_points

    assert game("a") == game("a")
    assert game("a") != game("b")


def _open_choice(seed: int, after: int) -> DecisionView:
    """A play view with a real choice, found from ``after`` cards into a hold hand."""
    hand = Hand.deal(Rules(), seed=seed, hand_number=3)  # a hold hand: play starts at once
    for _ in range(after):
        hand.play(hand.legal_plays()[-1])
    while len(hand.legal_plays()) < 2:
        hand.play(hand.legal_plays()[-1])
    mover = hand.to_move
    assert mover is not None
    return view_of(hand, mover)


def test_montecarlo_answers_a_view_the_same_way_each_time() -> None:
    view = _open_choice(12, 9)
    assert view.kind is DecisionKind.PLAY and len(view.legal) > 1
    bot = MonteCarloBot("same", playouts=60)
    first = bot.choose_play(view)
    assert all(MonteCarloBot("same", playouts=60).choose_play(view) == first for _ in range(3))
    assert first in view.legal


def test_montecarlo_searches_less_when_the_deadline_is_short(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = sys.modules[MonteCarloBot.__module__]
    real_sample_world = module.sample_world
    worlds: list[int] = []

    def counted(view: DecisionView, rng: random.Random) -> Hand:
        worlds.append(1)
        return real_sample_world(view, rng)  # type: ignore[no-any-return]

    monkeypatch.setattr(module, "sample_world", counted)
    view = _open_choice(3, 5)
    searched = {}
    for move_ms in (1000, 50):
        worlds.clear()
        MonteCarloBot("c", playouts=400).choose_play(dataclasses.replace(view, move_ms=move_ms))
        searched[move_ms] = len(worlds)
    assert 0 < searched[50] < searched[1000]


# ---- strength --------------------------------------------------------------------------------


def _duel(
    make_a: Callable[[], Bot], make_b: Callable[[], Bot], boards: int, players: int = 4
) -> tuple[float, float]:
    """A's points per hand minus B's, and its standard error, over duplicate boards.

    Seats alternate A, B, A, B and then B, A, B, A on the same deal, so every card is played by
    each bot once; the boards are the independent units.
    """
    diffs = []
    for seed in range(boards):
        a = b = 0
        for swap in (0, 1):
            bots = [make_a() if (s + swap) % 2 == 0 else make_b() for s in range(players)]
            result = play_local(bots, seed=seed, hands=1)
            for s, points in enumerate(result.totals):
                if (s + swap) % 2 == 0:
                    a += points
                else:
                    b += points
        diffs.append((a - b) / players)
    return statistics.mean(diffs), statistics.stdev(diffs) / boards**0.5


SAFE_Z = 5.0
"""A margin this many standard errors wide does not come from noise (odds below one in a
million), so a change of deals cannot turn these tests red by chance."""


def test_heuristic_beats_random_far_beyond_noise() -> None:
    diff, se = _duel(HeuristicBot, lambda: RandomBot("r"), boards=120)
    assert diff + SAFE_Z * se < 0, (diff, se)


def test_heuristic_beats_lowcard_and_lowcard_beats_random() -> None:
    diff, se = _duel(HeuristicBot, LowCardBot, boards=150)
    assert diff + SAFE_Z * se < 0, (diff, se)
    diff, se = _duel(LowCardBot, lambda: RandomBot("r"), boards=150)
    assert diff + SAFE_Z * se < 0, (diff, se)


@pytest.mark.slow
def test_montecarlo_beats_heuristic() -> None:
    # Measured over 100 boards: 4.2 points a hand better, 8 standard errors. Thirty boards expect
    # 4.4 standard errors, so two leave room for any change of deals (under 1% to go red).
    diff, se = _duel(lambda: MonteCarloBot("mc"), HeuristicBot, boards=30)
    assert diff + 2 * se < 0, (diff, se)
