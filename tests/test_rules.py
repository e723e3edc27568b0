"""The rules value: defaults, presets, option parsing, and refusal of bad combinations."""

from __future__ import annotations

import json
from typing import Any

import pytest

from arena.cards import Card, parse_cards
from arena.errors import CardParseError, ConfigError, RulesError
from arena.rules import (
    DEFAULT_PASS_CYCLES,
    DEFAULT_REMOVED_CARDS,
    PRESETS,
    FirstLead,
    GameEnd,
    MoonRule,
    PassDirection,
    Rules,
    Settling,
    preset,
)


def test_the_defaults_are_the_standard_game() -> None:
    r = Rules()
    assert (r.players, r.hand_size, r.kitty_size, r.removed) == (4, 13, 0, ())
    assert r.pass_count == 3
    assert r.cycle == (
        PassDirection.LEFT,
        PassDirection.RIGHT,
        PassDirection.ACROSS,
        PassDirection.HOLD,
    )
    assert r.first_lead is FirstLead.LOWEST_CLUB
    assert not r.penalty_on_first_trick
    assert r.queen_breaks_hearts and r.must_break_hearts and not r.lead_hearts_with_queen
    assert (r.queen_penalty, r.jack_of_diamonds, r.spot_hearts) == (13, 0, False)
    assert (r.moon, r.moon_value, r.sun, r.no_tricks_bonus) == (MoonRule.ADD, 26, False, 0)
    assert (r.target, r.game_end, r.settling) == (100, GameEnd.REACH, Settling.POINTS)
    assert preset("standard") == r


@pytest.mark.parametrize(
    ("players", "removed", "hand_size", "kitty_hand_size", "kitty_size"),
    [
        (3, "2D", 17, 17, 1),
        (4, "", 13, 13, 0),
        (5, "2C 2D", 10, 10, 2),
        (6, "2C 3C 2D 3D", 8, 8, 4),
    ],
)
def test_each_table_size_trims_the_deck_or_deals_a_kitty(
    players: int, removed: str, hand_size: int, kitty_hand_size: int, kitty_size: int
) -> None:
    r = Rules(players=players)
    assert r.removed == tuple(parse_cards(removed)) == DEFAULT_REMOVED_CARDS[players]
    assert r.hand_size == hand_size == r.tricks_per_hand
    assert len(r.cards_in_deck) == players * hand_size
    k = Rules(players=players, kitty=True)
    assert (k.removed, k.hand_size, k.kitty_size) == ((), kitty_hand_size, kitty_size)
    assert len(k.cards_in_deck) == 52
    assert r.cycle == DEFAULT_PASS_CYCLES[players]
    # The default cycles never name a direction the table does not have.
    for direction in r.cycle:
        assert 0 <= direction.offset(players) < players


def test_removed_cards_can_be_chosen() -> None:
    r = Rules(players=3, removed_cards=(Card.parse("2S"),))
    assert r.removed == (Card.parse("2S"),)
    assert Card.parse("2S") not in r.cards_in_deck and Card.parse("2D") in r.cards_in_deck
    # Foster's six-handed game discards the four deuces, the two of hearts among them.
    deuces = tuple(parse_cards("2C 2D 2H 2S"))
    six = Rules(players=6, removed_cards=deuces)
    assert six.moon_value == 25 and six.hand_size == 8
    assert Rules(players=6, removed_cards=deuces, spot_hearts=True).moon_value == 102 + 13


def test_pass_direction_cycles_hand_by_hand() -> None:
    r = Rules()
    assert [r.pass_direction(k).value for k in range(6)] == [
        "left",
        "right",
        "across",
        "hold",
        "left",
        "right",
    ]
    assert {Rules(pass_count=0).pass_direction(k) for k in range(8)} == {PassDirection.HOLD}
    five = Rules(players=5)
    assert [d.offset(5) for d in five.cycle] == [1, 4, 2, 3, 0]
    assert PassDirection.ACROSS.offset(6) == 3 and PassDirection.RIGHT.offset(3) == 2


def test_points_per_card() -> None:
    r = Rules()
    assert r.card_points(Card.parse("QS")) == 13 and r.card_points(Card.parse("AH")) == 1
    assert r.card_points(Card.parse("JD")) == 0 and r.card_points(Card.parse("KS")) == 0
    assert r.is_penalty(Card.parse("QS")) and r.is_penalty(Card.parse("2H"))
    assert not r.is_penalty(Card.parse("JD"))
    spot = preset("spot")
    assert [spot.card_points(c) for c in parse_cards("2H TH JH QH KH AH QS")] == [
        2,
        10,
        11,
        12,
        13,
        14,
        25,
    ]
    assert spot.moon_value == 104 + 25
    assert Rules(spot_hearts=True, queen_penalty=0).moon_value == 104
    assert preset("omnibus").card_points(Card.parse("JD")) == -10
    assert preset("omnibus").moon_value == 26  # the jack is not part of the moon
    old = preset("old")
    assert old.card_points(Card.parse("QS")) == 0 and not old.is_penalty(Card.parse("QS"))
    assert old.moon_value == 13
    assert Rules(moon_points=30).moon_value == 30


def test_every_preset_is_valid_and_round_trips_through_json() -> None:
    assert {"standard", "omnibus", "spot"} <= set(PRESETS)
    for name, rules in PRESETS.items():
        data = json.loads(json.dumps(rules.to_dict()))
        assert Rules.from_dict(data) == rules, name
        assert hash(Rules.from_dict(data)) == hash(rules)
        assert preset(name) is rules
    custom = Rules.from_dict(
        {"players": 5, "kitty": True, "pass_cycle": ["left", "left2"], "moon": "best", "sun": True}
    )
    assert Rules.from_dict(json.loads(json.dumps(custom.to_dict()))) == custom
    trimmed = Rules.from_dict({"players": 3, "removed_cards": "2S"})
    assert Rules.from_dict(json.loads(json.dumps(trimmed.to_dict()))) == trimmed


def test_the_historical_presets_are_fosters_game() -> None:
    for name in ("old", "sweepstakes", "howell"):
        r = preset(name)
        assert r.pass_count == 0 and r.first_lead is FirstLead.LEFT_OF_DEALER, name
        assert not r.must_break_hearts and r.penalty_on_first_trick, name
        assert r.queen_penalty == 0 and r.moon is MoonRule.OFF, name
    assert preset("sweepstakes").settling is Settling.SWEEPSTAKES
    assert preset("howell").settling is Settling.HOWELL
    assert preset("spot-settling").settling is Settling.SPOT


def test_options_parse_from_name_value_strings() -> None:
    r = Rules().with_options(
        [
            "moon=best",
            "players=5",
            "pass-cycle=left,left2,hold",
            "kitty=yes",
            "sun=true",
            "no_tricks_bonus=-5",
            "first_lead=any-club",
            "moon_points=none",
        ]
    )
    assert r.moon is MoonRule.BEST and r.players == 5 and r.kitty and r.sun
    assert r.cycle == (PassDirection.LEFT, PassDirection.LEFT_2, PassDirection.HOLD)
    assert r.no_tricks_bonus == -5 and r.first_lead is FirstLead.ANY_CLUB
    assert Rules().with_options({"removed_cards": "2D", "players": "3"}).removed == (
        Card.parse("2D"),
    )
    assert Rules.from_dict({"moon": "best"}) == Rules(moon=MoonRule.BEST)
    assert Rules().replace(target=50).target == 50


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"players": 2}, "players"),
        ({"players": 7}, "players"),
        ({"players": "4"}, "players"),
        ({"players": True}, "players"),
        ({"pass_count": -1}, "pass_count"),
        ({"pass_count": 13}, "pass_count"),
        ({"players": 6, "pass_count": 8}, "pass_count"),
        ({"pass_cycle": ()}, "pass_cycle"),
        ({"players": 3, "pass_cycle": ("left", "across")}, "pass_cycle"),
        ({"players": 5, "pass_cycle": ("across",)}, "pass_cycle"),
        ({"pass_cycle": ("left2",)}, "pass_cycle"),
        ({"pass_cycle": ("sideways",)}, "pass_cycle"),
        ({"first_lead": "dealer"}, "first_lead"),
        ({"moon": "sometimes"}, "moon"),
        ({"game_end": "never"}, "game_end"),
        ({"settling": "cash"}, "settling"),
        ({"removed_cards": ("2D",)}, "removed_cards"),
        ({"removed_cards": ("2D", "2D", "2C", "2S")}, "removed_cards"),
        ({"removed_cards": ("XX",)}, "removed_cards"),
        ({"players": 3, "kitty": True, "removed_cards": ("2D",)}, "removed_cards"),
        ({"removed_cards": ("QS", "2C", "2D", "2S")}, "removed_cards"),
        ({"jack_of_diamonds": -10, "removed_cards": ("JD", "2C", "2D", "2S")}, "removed_cards"),
        ({"players": 3, "removed_cards": tuple(f"{r}H" for r in "23456789TJQKA")}, "removed_cards"),
        ({"queen_penalty": -13}, "queen_penalty"),
        ({"jack_of_diamonds": 1.5}, "jack_of_diamonds"),
        ({"no_tricks_bonus": "five"}, "no_tricks_bonus"),
        ({"target": 0}, "target"),
        ({"moon_points": 0}, "moon_points"),
        ({"moon_points": True}, "moon_points"),
        ({"moon": "off", "moon_points": 26}, "moon_points"),
        ({"settling": "spot"}, "settling"),
        ({"moon": "off", "sun": True}, "sun"),
        ({"kitty": "no"}, "kitty"),
        (
            {
                "players": 3,
                "removed_cards": tuple(f"{r}C" for r in "23456789TJQKA"),
                "pass_count": 0,
            },
            "first_lead",
        ),
    ],
)
def test_bad_or_contradictory_rules_are_refused_naming_the_field(
    changes: dict[str, Any], field: str
) -> None:
    with pytest.raises(RulesError) as err:
        Rules(**changes)
    assert err.value.field == field
    assert str(err.value).startswith(f"rules.{field}: ")


def test_the_same_refusals_come_from_option_strings() -> None:
    with pytest.raises(RulesError, match=r"^rules\.players: must be 3 to 6, got 9"):
        Rules().with_options(["players=9"])
    with pytest.raises(RulesError, match=r"^rules\.sun: "):
        Rules().with_options(["moon=off", "sun=on"])
    with pytest.raises(RulesError, match=r"^rules\.colour: unknown rule"):
        Rules().with_options(["colour=red"])
    with pytest.raises(RulesError, match=r"^rules\.target: must be a whole number"):
        Rules().with_options(["target=lots"])
    with pytest.raises(RulesError, match=r"^rules\.moon: expected NAME=VALUE"):
        Rules().with_options(["moon"])
    with pytest.raises(RulesError, match=r"^rules\.sun: must be true or false"):
        Rules().with_options(["sun=maybe"])
    with pytest.raises(RulesError, match=r"^rules\.colour: unknown rule"):
        Rules.from_dict({"colour": "red"})
    with pytest.raises(RulesError, match=r"^rules\.preset: unknown preset 'bridge'"):
        preset("bridge")
    with pytest.raises(RulesError, match=r"^rules\.preset: unknown preset \['x'\]"):
        preset(["x"])  # type: ignore[arg-type]  # was a TypeError: unhashable type
    with pytest.raises(RulesError, match=r"expected options: .*, got None$"):
        Rules().with_options(None)  # type: ignore[arg-type]
    # Legal once the contradiction is resolved in the same breath.
    assert Rules().with_options(["moon=off", "moon_points=none"]).moon is MoonRule.OFF


def test_options_from_a_toml_table_take_plain_values() -> None:
    # A [rule] table in a config file gives booleans, numbers and lists, not strings.
    rules = Rules().with_options(
        {"sun": True, "moon": "best", "pass-count": 2, "pass_cycle": ["left", "hold"]}
    )
    assert rules.sun is True
    assert rules.moon is MoonRule.BEST
    assert rules.pass_count == 2
    assert rules.pass_cycle == (PassDirection.LEFT, PassDirection.HOLD)
    assert Rules().with_options({"kitty": False, "moon_points": "default"}) == Rules()
    with pytest.raises(RulesError, match=r"rules\.colour: unknown rule"):
        Rules().with_options({"colour": "red"})


@pytest.mark.parametrize(
    ("given", "players"),
    [
        ({"moon_points": 26}, 4),
        ({"removed_cards": []}, 4),
        ({"pass_cycle": "left,right,across,hold"}, 4),
        ({"pass_cycle": "left,right,hold"}, 3),
        ({"removed_cards": []}, 3),
    ],
)
def test_a_value_equal_to_the_table_size_default_is_the_default(
    given: dict[str, object], players: int
) -> None:
    # The same games: the same rules, so the same run (a database made without the option
    # resumes with it).
    kitty = {"kitty": True} if players == 3 and "removed_cards" in given else {}
    rules = Rules(players=players, **kitty, **given)  # type: ignore[arg-type]
    assert rules == Rules(players=players, **kitty)  # type: ignore[arg-type]
    assert rules.to_dict() == Rules(players=players, **kitty).to_dict()  # type: ignore[arg-type]
    from arena.config import build_config

    bots = ["a=true", "b=true", "c=true", "d=true"][:players]
    options = [f"{k}={v if not isinstance(v, list) else ''}" for k, v in given.items()]
    if kitty:
        options.append("kitty=true")
    assert (
        build_config(bots=bots, players=players, rule=options).run_id
        == build_config(bots=bots, players=players, rule=options[len(given) :]).run_id
    )


def test_a_value_other_than_the_default_is_kept() -> None:
    assert Rules(moon_points=25).moon_points == 25
    assert Rules(spot_hearts=True, moon_points=26).moon_points == 26  # spot's moon is 104 + 13
    assert (
        Rules(players=3, removed_cards=(Card.parse("2D"),)).removed_cards is None
    )  # 3 players' default
    assert Rules(players=3, removed_cards=(Card.parse("2C"),)).removed_cards == (Card.parse("2C"),)


def test_option_text_given_alone_or_malformed_is_read_or_refused_by_what_is_wrong() -> None:
    # A lone string used to be read letter by letter: "rules.m: expected NAME=VALUE, got 'm'".
    assert Rules().with_options("moon=best") == Rules(moon=MoonRule.BEST)
    with pytest.raises(RulesError, match=r"^rules\.\?: expected NAME=VALUE, got '=3'"):
        Rules().with_options(["=3"])
    with pytest.raises(RulesError, match=r"^rules\.\?: expected NAME=VALUE text, got 3"):
        Rules().with_options([3])  # type: ignore[list-item]


def test_a_pass_cycle_that_is_not_a_list_is_refused_naming_the_field() -> None:
    with pytest.raises(RulesError, match=r"^rules\.pass_cycle: expected a list of directions"):
        Rules(pass_cycle=5)  # type: ignore[arg-type]


def test_removed_cards_that_are_not_a_list_are_refused_naming_the_field() -> None:
    # It read "rules.removed_cards: 'int' object is not iterable".
    with pytest.raises(
        RulesError, match=r"^rules\.removed_cards: expected a list of cards, got 5$"
    ):
        Rules(removed_cards=5)  # type: ignore[arg-type]


def test_every_option_type_and_the_violation_are_importable_from_arena() -> None:
    # The fields are typed as enums: code checked by mypy must name FirstLead.ANY_CLUB, not
    # "any-club", so each enum a field takes is exported beside Rules (as err.violation's is).
    import dataclasses
    import enum
    import typing

    import arena
    from arena.errors import Violation

    hints = typing.get_type_hints(Rules)
    wanted: set[type[enum.Enum]] = {Violation}
    for f in dataclasses.fields(Rules):
        for t in (hints[f.name], *typing.get_args(hints[f.name])):
            for inner in (t, *typing.get_args(t)):
                if isinstance(inner, type) and issubclass(inner, enum.Enum):
                    wanted.add(inner)
    assert {FirstLead, GameEnd, MoonRule, PassDirection, Settling} <= wanted
    for kind in wanted:
        assert getattr(arena, kind.__name__) is kind and kind.__name__ in arena.__all__


def test_options_given_as_their_enums_in_a_mapping_are_read_as_their_values() -> None:
    # with_options({"moon": MoonRule.BEST}) was refused: "unknown value 'MoonRule.BEST'".
    r = Rules().with_options({"moon": MoonRule.BEST, "pass_cycle": [PassDirection.LEFT]})
    assert r.moon is MoonRule.BEST and r.cycle == (PassDirection.LEFT,)


def test_options_that_are_no_list_at_all_are_a_rules_error() -> None:
    # with_options(5) said only "'int' object is not iterable".
    with pytest.raises(RulesError, match=r"expected options: NAME=VALUE texts or a mapping, got 5"):
        Rules().with_options(5)  # type: ignore[arg-type]


def test_replace_refuses_an_unknown_field_naming_it() -> None:
    # Rules().replace(moons="best") raised a bare TypeError from the dataclass's __init__.
    with pytest.raises(RulesError, match=r"^rules\.moons: unknown rule; known rules: .*moon"):
        Rules().replace(moons="best")  # type: ignore[call-arg]  # as an untyped caller may
    # A rule's spelling is taken for its enum, as the constructor takes it (typed as the enum).
    assert Rules().replace(moon="best").moon is MoonRule.BEST  # type: ignore[arg-type]


def test_replace_is_typed_with_every_field_of_rules_as_rules_types_it() -> None:
    # Rules.replace(**changes: Any) let a type checker pass replace(targt=50): its keywords are
    # typed by RuleChanges, which must name every field of Rules, with the field's own type.
    import typing

    from arena.rules import RuleChanges

    fields = typing.get_type_hints(Rules)
    assert typing.get_type_hints(RuleChanges) == fields
    assert RuleChanges.__optional_keys__ == frozenset(fields)


@pytest.mark.parametrize("text", ["left,,right", ",left", "left,", "2C,,2D"])
def test_a_list_given_as_text_with_an_empty_entry_is_refused(text: str) -> None:
    # "left,,right" was read as left, right: a direction left out played another game.
    name = "removed_cards" if text[0].isdigit() else "pass_cycle"
    with pytest.raises(RulesError, match=rf"^rules\.{name}: '{text}' has an empty entry"):
        Rules(**{name: text})  # type: ignore[arg-type]


def test_a_list_given_as_text_may_separate_its_entries_by_commas_or_spaces() -> None:
    wanted = (PassDirection.LEFT, PassDirection.RIGHT)
    for text in ("left,right", "left, right", "left right", " left , right "):
        assert Rules(pass_cycle=text).cycle == wanted  # type: ignore[arg-type]


def test_an_option_text_list_with_an_empty_entry_is_refused() -> None:
    # --rule pass_cycle=left,,right (the CLI's path) was read as left, right.
    with pytest.raises(RulesError, match=r"^rules\.pass_cycle: 'left,,right' has an empty entry"):
        Rules().with_options("pass_cycle=left,,right")
    assert Rules().with_options("pass_cycle=left, right").cycle == (
        PassDirection.LEFT,
        PassDirection.RIGHT,
    )


def test_card_points_and_is_penalty_take_a_card_or_its_code() -> None:
    # A code was an AttributeError ("'str' object has no attribute 'suit'"), though the
    # engine's moves take codes.
    rules = Rules()
    assert rules.card_points("QS") == rules.card_points(Card.parse("QS")) == 13
    assert rules.is_penalty("2H") and not rules.is_penalty("2C")
    with pytest.raises(CardParseError, match=r"^expected a card \(a Card, or a code"):
        rules.card_points(5)  # type: ignore[arg-type]
    with pytest.raises(CardParseError):
        rules.is_penalty("1S")


@pytest.mark.parametrize("number", ["1", -1, True, 1.0])
def test_pass_direction_refuses_what_is_no_hand_number(number: object) -> None:
    # "1" failed as string formatting; -1 answered the cycle's last direction.
    with pytest.raises(ConfigError, match=r"^hand_number counts from 0, got "):
        Rules().pass_direction(number)  # type: ignore[arg-type]
    assert Rules().pass_direction(3) is PassDirection.HOLD


@pytest.mark.parametrize(
    ("direction", "players", "says"),
    [
        (PassDirection.ACROSS, 3, r"^rules\.pass_cycle: 'across' does not exist at a table of 3$"),
        (PassDirection.LEFT_2, 4, r"^rules\.pass_cycle: 'left2' does not exist at a table of 4$"),
        (PassDirection.LEFT, 0, r"^rules\.players: a table has 3 to 6 players, not 0$"),
    ],
)
def test_an_offset_for_a_direction_the_table_lacks_is_refused(
    direction: PassDirection, players: int, says: str
) -> None:
    # Across at 3 seats answered 1 (left's), left2 at 4 answered 2 (across's).
    with pytest.raises(RulesError, match=says):
        direction.offset(players)
    assert [d.offset(5) for d in (PassDirection.LEFT_2, PassDirection.RIGHT_2)] == [2, 3]
