"""Differential test of the rules engine against an independent one: OpenSpiel's Hearts.

OpenSpiel (``pyspiel.load_game("hearts", {...})``, open_spiel/games/hearts/hearts.cc) plays the
four-player game with eight boolean options. Each maps to one of our :class:`Rules` fields
(:func:`our_rules`), so every one of its 256 parameter sets is a rule set we can express. For
many seeded hands both engines get the same deal (our ``Hand.deal``, fed to OpenSpiel's chance
nodes) and the same random passes and plays, and at every decision they must agree on whose turn
it is and which cards are legal; after every trick on its winner and the points taken so far,
and whether hearts are broken; at the end on each seat's points.

How OpenSpiel's game is laid out (hearts.h / hearts.cc):

- a card is the action ``rank * 4 + suit`` (ranks 2..A as 0..12, suits C D H S as 0..3), and
  prints as ours do ("QS");
- seats are N E S W = 0 1 2 3, and both play and "Left" go from seat ``s`` to ``s + 1``: our
  numbering (seat ``s + 1`` sits to the left of seat ``s``), seat for seat;
- the first chance node is the pass direction, the number of seats to the left that receive
  (0 no pass, 1 left, 2 across, 3 right): our ``PassDirection.offset(4)``. With
  ``pass_cards=false`` only 0 is offered;
- then 52 chance nodes deal the cards, the ``k``-th to seat ``k % 4``;
- then seats pass one card per action, N's three first, then E, S, W (ours pass all at once);
- its returns are ``26 - points`` (to make a reward of a penalty), so points are
  ``26 - return``; ``state.points(p)`` gives them directly.

One deliberate difference of rules is mapped explicitly rather than compared away: OpenSpiel
gives its avoid-all-tricks bonus (-5) only when nobody shot the moon (hearts.cc, ComputeScore:
``if (avoid_all_tricks_bonus_ && !moon_shot)``); ours scores ``no_tricks_bonus`` for every player
who takes no trick (README, Rules options: "points for a player who takes no trick"), moon or
not (see :func:`as_openspiel_scores`).

Needs open-spiel (``pip install -e ".[dev]"`` installs it); without it these tests are skipped,
except under CI=true, where they fail: CI must run the comparison.
"""

from __future__ import annotations

import itertools
import os
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from arena import Card, FirstLead, Hand, HandResult, PassDirection, Phase, Rules, Suit, preset
from arena.cards import CARDS, QUEEN_OF_SPADES

OpenSpiel = Any
"""pyspiel ships no type stubs: its module, games and states are Any in this file."""

PLAYERS = 4
HAND_SIZE = 13
PASS_COUNT = 3
TOTAL_POSITIVE_POINTS = 26
"""hearts.h kTotalPositivePoints: OpenSpiel's return is this minus the points."""
HANDS_PER_SET = 300
"""Hands compared for the standard game and each single-option change from it."""
HANDS_PER_COMBINATION = 8
"""Hands compared for each of OpenSpiel's 256 parameter sets (two of each pass direction)."""
RICH_HANDS_PER_COMBINATION = 4
"""Hearts-rich deals (:func:`hearts_rich_deal`) compared for each of the 256 parameter sets."""
SEED = 20_240_601

PARAMETERS = (
    "pass_cards",
    "no_pts_on_first_trick",
    "can_lead_any_club",
    "jd_bonus",
    "avoid_all_tricks_bonus",
    "must_break_hearts",
    "qs_breaks_hearts",
    "can_lead_hearts_instead_of_qs",
)
"""OpenSpiel's hearts parameters, every one of which :func:`our_rules` maps."""


def require_pyspiel() -> OpenSpiel:
    """The pyspiel module, or skip (fail under CI=true) saying what to install."""
    try:
        import pyspiel
    except ImportError:
        reason = (
            "OpenSpiel is needed for the differential engine test: "
            'pip install -e ".[dev]" installs it (open-spiel)'
        )
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason} (CI=true: the engine must be checked against OpenSpiel)")
        pytest.skip(reason)
    return pyspiel


@pytest.fixture(scope="module")
def spiel() -> OpenSpiel:
    """The pyspiel module (or the test is skipped, or fails under CI)."""
    return require_pyspiel()


def our_rules(params: Mapping[str, bool]) -> Rules:
    """Our rules for one of OpenSpiel's hearts parameter sets (hearts.cc's parameter list)."""
    return Rules(
        # pass_cards=false: only the "No Pass" chance outcome; ours: no passing at all.
        pass_count=PASS_COUNT if params["pass_cards"] else 0,
        # "Cannot play hearts or QS on first trick" (when the seat has another card).
        penalty_on_first_trick=not params["no_pts_on_first_trick"],
        first_lead=FirstLead.ANY_CLUB if params["can_lead_any_club"] else FirstLead.LOWEST_CLUB,
        # kPointsForJD = -10; not needed to shoot the moon, in both engines.
        jack_of_diamonds=-10 if params["jd_bonus"] else 0,
        # kAvoidAllTricksBonus = -5 (but see as_openspiel_scores for a moon hand).
        no_tricks_bonus=-5 if params["avoid_all_tricks_bonus"] else 0,
        must_break_hearts=params["must_break_hearts"],
        queen_breaks_hearts=params["qs_breaks_hearts"],
        lead_hearts_with_queen=params["can_lead_hearts_instead_of_qs"],
    )


def card_action(card: Card) -> int:
    """OpenSpiel's action for a card: ``rank * 4 + suit`` (hearts.h ``Card``)."""
    return int(card.rank) * 4 + int(card.suit)


ACTION_CARD = {card_action(c): c for c in CARDS}


def cards_of(actions: list[int]) -> list[Card]:
    """OpenSpiel actions as our cards, in our index order."""
    return sorted(ACTION_CARD[a] for a in actions)


def as_openspiel_scores(result: HandResult, rules: Rules) -> list[int]:
    """Our hand's points as OpenSpiel scores them: the same, but for the no-tricks bonus on a moon.

    hearts.cc ComputeScore adds its avoid-all-tricks bonus only ``if (avoid_all_tricks_bonus_ &&
    !moon_shot)``; ours gives ``no_tricks_bonus`` to every player who took no trick (README,
    Rules options), a moon hand included. A documented difference of variants, so it is taken
    back here, only for the seats it concerns, and nowhere else.
    """
    points = list(result.points)
    if result.moon is not None and rules.no_tricks_bonus:
        for seat, won in enumerate(result.tricks_won):
            if won == 0:
                points[seat] -= rules.no_tricks_bonus
    return points


@dataclass
class Tally:
    """What the comparison covered: so that a rule it checks is known to have come up."""

    hands: int = 0
    decisions: int = 0
    """Decisions whose legal cards and seat were compared (one per card passed or played)."""
    moons: int = 0
    moon_bonus_differences: int = 0
    """Moon hands where a seat took no trick under the no-tricks bonus (as_openspiel_scores)."""
    situations: dict[str, int] = field(default_factory=dict)

    def saw(self, situation: str) -> None:
        """Count one occurrence of a rule-relevant situation."""
        self.situations[situation] = self.situations.get(situation, 0) + 1


def _situation(hand: Hand, rules: Rules, tally: Tally) -> None:
    """Note which special rule, if any, decides the legal cards at this decision."""
    seat = hand.to_move
    assert seat is not None
    held = hand.hand(seat)
    trick = hand.current_trick
    assert trick is not None
    if hand.trick_number == 0 and not trick.cards:
        tally.saw("first lead")
        return
    if trick.cards:
        lead = trick.cards[0].suit
        if hand.trick_number == 0 and not any(c.suit is lead for c in held):
            tally.saw("first trick, void in clubs")
            if all(rules.is_penalty(c) for c in held):
                free = "free" if rules.penalty_on_first_trick else "restricted"
                tally.saw(f"first trick, only penalty cards ({free})")
        return
    if hand.hearts_broken or not rules.must_break_hearts:
        return
    non_hearts = [c for c in held if c.suit is not Suit.HEARTS]
    if not non_hearts:
        tally.saw("lead before hearts are broken, only hearts")
    elif non_hearts == [QUEEN_OF_SPADES]:
        may = "may lead a heart" if rules.lead_hearts_with_queen else "must lead QS"
        tally.saw(f"lead before hearts are broken, only hearts and QS ({may})")


def hearts_rich_deal(rng: random.Random) -> list[list[Card]]:
    """A deal where one seat holds the queen of spades and 9 to 12 hearts.

    It reaches the situations random deals seldom do (about one hand in 300): a lead before
    hearts are broken with nothing but hearts and the queen (``can_lead_hearts_instead_of_qs``),
    a first trick where a seat void in clubs holds only penalty cards.
    """
    hearts = [c for c in CARDS if c.suit is Suit.HEARTS]
    others = [c for c in CARDS if c.suit is not Suit.HEARTS and c != QUEEN_OF_SPADES]
    rng.shuffle(hearts)
    rng.shuffle(others)
    count = rng.randint(9, 12)
    rich = [QUEEN_OF_SPADES, *hearts[:count], *others[: HAND_SIZE - 1 - count]]
    rest = hearts[count:] + others[HAND_SIZE - 1 - count :]
    rng.shuffle(rest)
    hands = [rest[i * HAND_SIZE : (i + 1) * HAND_SIZE] for i in range(PLAYERS - 1)]
    hands.insert(rng.randrange(PLAYERS), rich)
    return hands


def compare_hand(game: OpenSpiel, rules: Rules, seed: int, hand_number: int, tally: Tally) -> None:
    """Deal hand ``hand_number`` from ``seed`` and play it in both engines (see compare_play)."""
    ours = Hand.deal(rules, seed, hand_number=hand_number)
    where = (
        f"params={dict(game.get_parameters())} Hand.deal(rules, {seed}, hand_number={hand_number})"
    )
    compare_play(game, ours, random.Random(seed * 1_000 + hand_number), where, tally)


def compare_play(game: OpenSpiel, ours: Hand, rng: random.Random, where: str, tally: Tally) -> None:
    """Play ``ours`` and OpenSpiel's hearts from the same deal with the same random choices
    from ``rng``, asserting at every decision that they agree."""
    rules = ours.rules
    moves: list[str] = []

    def context() -> str:
        return f"{where}, moves so far: {' '.join(moves) or '(none)'}"

    state = game.new_initial_state()
    # The pass direction: OpenSpiel's chance outcome is the number of seats to the left that
    # receive (hearts.cc ApplyPassAction: to ``(player + pass_dir_) % 4``), our offset.
    direction = ours.pass_direction.offset(PLAYERS)
    assert direction in [a for a, _ in state.chance_outcomes()], where
    state.apply_action(direction)
    # The deal: OpenSpiel gives the k-th card dealt to seat k % 4 (ApplyDealAction).
    dealt = [ours.dealt(seat) for seat in range(PLAYERS)]
    for i in range(HAND_SIZE):
        for seat in range(PLAYERS):
            assert state.is_chance_node(), where
            state.apply_action(card_action(dealt[seat][i]))
    assert not state.is_chance_node(), where

    while ours.phase is Phase.PASS:
        seat = state.current_player()
        # OpenSpiel passes seat by seat from N; ours are simultaneous: its seat must be one
        # of ours still to pass, and the first of them.
        assert seat == min(ours.seats_to_pass), context()
        chosen: list[Card] = []
        for _ in range(PASS_COUNT):
            assert state.current_player() == seat, context()
            legal = cards_of(state.legal_actions())
            assert legal == sorted(set(ours.hand(seat)) - set(chosen)), context()
            card = rng.choice(legal)
            chosen.append(card)
            state.apply_action(card_action(card))
            tally.decisions += 1
        assert ours.check_pass(seat, chosen) is None, context()
        ours.pass_cards(seat, chosen)
        moves.append(f"{seat}:pass[{' '.join(map(str, chosen))}]")
    struct = state.to_struct()
    for seat in range(PLAYERS):
        assert sorted(struct.hands[seat]) == sorted(map(str, ours.hand(seat))), context()

    while not ours.is_over:
        mover = ours.to_move
        assert state.current_player() == mover, context()
        # OpenSpiel starts with hearts broken when they need no breaking (its constructor:
        # hearts_broken_(!must_break_hearts)); ours counts a breaking card played.
        assert state.hearts_broken() == (ours.hearts_broken or not rules.must_break_hearts), (
            context()
        )
        legal = ours.legal_plays()
        assert cards_of(state.legal_actions()) == legal, context()
        _situation(ours, rules, tally)
        card = rng.choice(legal)
        moves.append(f"{mover}:{card}")
        trick = ours.play(card)
        state.apply_action(card_action(card))
        tally.decisions += 1
        if trick is not None and not ours.is_over:
            # The winner of a trick leads the next: OpenSpiel's player to move.
            assert state.current_player() == trick.winner, context()
            taken = [state.points(p) for p in range(PLAYERS)]
            assert taken == list(ours.points_taken()), context()

    assert state.is_terminal(), context()
    # The whole play as OpenSpiel recorded it: each trick's leader (the previous winner) and
    # cards. The last trick's winner shows only in the points: OpenSpiel exposes no more.
    os_tricks = state.to_struct().tricks
    assert len(os_tricks) == len(ours.tricks) == HAND_SIZE, context()
    for os_trick, trick in zip(os_tricks, ours.tricks, strict=True):
        assert [card for _, card in os_trick] == [str(c) for c in trick.cards], context()
        assert os_trick[0][0] == "NESW"[trick.leader], context()

    result = ours.result()
    expected = as_openspiel_scores(result, rules)
    assert [state.points(p) for p in range(PLAYERS)] == expected, context()
    assert state.returns() == [TOTAL_POSITIVE_POINTS - p for p in expected], context()
    tally.hands += 1
    if result.moon is not None:
        tally.moons += 1
        if expected != list(result.points):
            tally.moon_bonus_differences += 1


def openspiel_game(spiel: OpenSpiel, params: Mapping[str, bool]) -> OpenSpiel:
    """OpenSpiel's hearts with these parameters."""
    return spiel.load_game("hearts", dict(params))


def defaults(spiel: OpenSpiel) -> dict[str, bool]:
    """OpenSpiel's default hearts parameters."""
    return dict(spiel.load_game("hearts").get_parameters())


def test_every_openspiel_parameter_is_mapped_and_its_defaults_are_our_standard_game(
    spiel: OpenSpiel,
) -> None:
    """The mapping covers OpenSpiel's whole parameter list; the usual presets are its sets."""
    standard = defaults(spiel)
    assert sorted(standard) == sorted(PARAMETERS)
    assert our_rules(standard) == Rules() == preset("standard")
    assert our_rules({**standard, "jd_bonus": True}) == preset("omnibus")
    assert our_rules({**standard, "no_pts_on_first_trick": False}) == preset("black-lady")


def test_cards_and_pass_directions_are_encoded_as_openspiel_names_them(spiel: OpenSpiel) -> None:
    """Our card <-> action and direction <-> chance outcome maps, against OpenSpiel's names."""
    state = spiel.load_game("hearts").new_initial_state()
    names = {d: state.action_to_string(state.current_player(), d) for d in range(PLAYERS)}
    offsets = {d.value: d.offset(PLAYERS) for d in Rules().cycle}
    assert names == {
        offsets["hold"]: "No Pass",
        offsets["left"]: "Left",
        offsets["across"]: "Across",
        offsets["right"]: "Right",
    }
    assert PassDirection.LEFT.offset(PLAYERS) == 1
    state.apply_action(0)
    assert sorted(ACTION_CARD) == list(range(len(CARDS)))
    for action, card in ACTION_CARD.items():
        assert state.action_to_string(state.current_player(), action) == str(card)


SINGLE_CHANGES = ("standard", *PARAMETERS)
"""OpenSpiel's defaults (our standard game), then each parameter changed alone from its default."""


@pytest.mark.parametrize("changed", SINGLE_CHANGES)
def test_engines_agree_hand_by_hand(spiel: OpenSpiel, changed: str) -> None:
    """Same deal, same choices: same turns, legal cards, trick winners and points, per decision."""
    params = defaults(spiel)
    if changed != "standard":
        params[changed] = not params[changed]
    rules = our_rules(params)
    game = openspiel_game(spiel, params)
    tally = Tally()
    base = SEED + 10_000 * SINGLE_CHANGES.index(changed)
    for i in range(HANDS_PER_SET):
        compare_hand(game, rules, base + i, i, tally)
    assert tally.hands == HANDS_PER_SET
    # The first lead and a first trick with a void come up in every set; were they missing,
    # the rules they test would have gone unchecked.
    assert tally.situations.get("first lead") == HANDS_PER_SET
    assert tally.situations.get("first trick, void in clubs", 0) > 0


def every_parameter_set(
    spiel: OpenSpiel,
) -> Iterator[tuple[int, dict[str, bool], Rules, OpenSpiel]]:
    """Each of OpenSpiel's parameter sets, numbered: the set, our rules and OpenSpiel's game."""
    for k, values in enumerate(itertools.product((False, True), repeat=len(PARAMETERS))):
        params = dict(zip(PARAMETERS, values, strict=True))
        yield k, params, our_rules(params), openspiel_game(spiel, params)


def test_engines_agree_under_every_openspiel_parameter_set(spiel: OpenSpiel) -> None:
    """All 256 of OpenSpiel's parameter sets, a few hands each (every pass direction)."""
    tally = Tally()
    for k, _, rules, game in every_parameter_set(spiel):
        for i in range(HANDS_PER_COMBINATION):
            compare_hand(game, rules, SEED + 1_000_000 + 100 * k + i, i, tally)
    assert tally.hands == 2 ** len(PARAMETERS) * HANDS_PER_COMBINATION
    # Moons were shot, some with a seat that took no trick under the bonus: the moon scoring,
    # and the one mapped difference of variants, were compared.
    assert tally.moons > 0
    assert tally.moon_bonus_differences > 0


def test_engines_agree_on_deals_rich_in_hearts_under_every_parameter_set(spiel: OpenSpiel) -> None:
    """The rare leads and first tricks, reached on purpose, under all 256 parameter sets."""
    tally = Tally()
    for k, params, rules, game in every_parameter_set(spiel):
        for i in range(RICH_HANDS_PER_COMBINATION):
            seed = SEED + 2_000_000 + 100 * k + i
            rng = random.Random(seed)
            hands = hearts_rich_deal(rng)
            direction = rules.pass_direction(i)
            ours = Hand.from_hands(rules, hands, pass_direction=direction)
            dealt = [" ".join(map(str, h)) for h in hands]
            where = f"params={params} Hand.from_hands(rules, {dealt}, pass_direction={direction})"
            compare_play(game, ours, rng, where, tally)
    # Each variant of each rare rule came up, so the comparison above did check it.
    for situation in (
        "first trick, only penalty cards (free)",
        "first trick, only penalty cards (restricted)",
        "lead before hearts are broken, only hearts",
        "lead before hearts are broken, only hearts and QS (may lead a heart)",
        "lead before hearts are broken, only hearts and QS (must lead QS)",
    ):
        assert tally.situations.get(situation, 0) > 0, (situation, tally.situations)
