"""The table API's plain data: validation and a JSON round trip of every value."""

from __future__ import annotations

import json

import pytest

from arena.errors import ConfigError, RulesError
from arena.rules import Rules
from arena.table import (
    Clocks,
    Decision,
    Fault,
    FaultKind,
    FaultPolicy,
    GameRecord,
    HandRecord,
    LateReply,
    TableSpec,
    Termination,
    TrickRecord,
)


def _spec() -> TableSpec:
    return TableSpec(
        table_id="t1",
        rules=Rules().with_options(["moon=best", "target=50"]),
        seed=42,
        seats=("a", "b", "c", "d"),
        board="42",
        hands=None,
        clocks=Clocks(move_ms=200, bank_ms=1000, handshake_ms=300),
        faults=FaultPolicy(max_faults=2, strict=True, grace_ms=100),
    )


def test_spec_round_trips_through_json() -> None:
    spec = _spec()
    again = TableSpec.from_dict(json.loads(json.dumps(spec.to_dict())))
    assert again == spec


def test_record_round_trips_through_json() -> None:
    record = GameRecord(
        spec=_spec(),
        hands=(
            HandRecord(
                number=0,
                dealer=0,
                pass_direction="left",
                dealt=(("2C", "3C"), ("4C",), ("5C",), ("6C",)),
                passes=(("2C",), (), (), ()),
                tricks=(TrickRecord(0, ("2C", "3C", "4C", "5C"), 3),),
                points=(0, 0, 0, 26),
                moon=None,
                sun=False,
            ),
        ),
        decisions=(
            Decision(0, 1, "play", 7, ("3C",), 1.5, False, FaultKind.TIMEOUT),
            Decision(0, 2, "play", 0, ("4C",), 0.0, True),
            Decision(0, 3, "play", 9, ("5C",), 0.5, False, None, True),
        ),
        faults=(Fault(0, 0, 1, "b", FaultKind.TIMEOUT, "no answer", "", ("3C",), 12.5),),
        totals=(0, 0, 0, 26),
        placings=(1, 1, 1, 4),
        termination=Termination.NORMAL,
        seat_status=(
            Termination.NORMAL,
            Termination.TIMEOUT,
            Termination.NORMAL,
            Termination.NORMAL,
        ),
        reason="played 1 hand",
        started_at=1.0,
        finished_at=2.0,
        late=(LateReply(0, 1, "b", 7, "play 3C", 40.0),),
    )
    again = GameRecord.from_dict(json.loads(json.dumps(record.to_dict())))
    assert again == record
    assert again.forfeits == (1,)
    assert again.faults_of(1) == record.faults
    # A corrupt value raised a bare ValueError ("'exploded' is not a valid Termination").
    with pytest.raises(ConfigError, match=r"^not a valid game record .*'exploded'"):
        GameRecord.from_dict({**record.to_dict(), "termination": "exploded"})
    # Per-seat lists that do not fit the table were read as they were.
    with pytest.raises(ConfigError, match=r"^not a valid game record: 1 totals for a table of 4"):
        GameRecord.from_dict({**record.to_dict(), "totals": [1]})
    # The records inside say which field they lack (a bare KeyError: 'number').
    for part, name in ((HandRecord, "hand record"), (TrickRecord, "trick record")):
        with pytest.raises(ConfigError, match=rf"^not a whole {name} .*: no field"):
            part.from_dict({})
    broken = record.to_dict()
    del broken["hands"][0]["number"]
    with pytest.raises(ConfigError, match=r"^not a whole hand record .*: no field 'number'"):
        GameRecord.from_dict(broken)


@pytest.mark.parametrize("data", [None, "x", ["table_id"]])
def test_what_is_no_mapping_is_refused_as_no_record(data: object) -> None:
    with pytest.raises(ConfigError, match=r"^not a table spec .*: expected a mapping"):
        TableSpec.from_dict(data)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"^not a game record .*: expected a mapping"):
        GameRecord.from_dict(data)  # type: ignore[arg-type]
    with pytest.raises(RulesError, match="expected a mapping of rule names to values"):
        Rules.from_dict(data)  # type: ignore[arg-type]


def test_a_bad_value_in_a_spec_is_refused_in_one_line() -> None:
    # int("abc") raised a bare ValueError out of from_dict.
    with pytest.raises(ConfigError, match=r"^table 't1': seed must be a whole number, got 'abc'$"):
        TableSpec.from_dict({**_spec().to_dict(), "seed": "abc"})


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("seed", 7.9),
        ("seed", True),
        ("seed", " 7"),
        ("seed", "\u0667"),
        ("table_id", 5),
        ("board", 3),
    ],
)
def test_a_spec_read_back_checks_its_values_as_one_made_by_hand(field: str, value: object) -> None:
    # int() and str() made each of these a valid spec: a seed of 7.9 dealt the cards of seed 7.
    with pytest.raises(ConfigError, match=rf"\b{field}\b.*, got "):
        TableSpec.from_dict({**_spec().to_dict(), field: value})


def test_bad_values_are_refused_with_the_field_named() -> None:
    with pytest.raises(ConfigError, match="move_ms"):
        Clocks(move_ms=-1)
    with pytest.raises(ConfigError, match="3 seats"):
        TableSpec("t", Rules(), 1, ("a", "b", "c"), "1")
    with pytest.raises(ConfigError, match="hands"):
        TableSpec("t", Rules(), 1, ("a", "b", "c", "d"), "1", hands=0)
    with pytest.raises(ConfigError, match="unknown field"):
        Clocks.from_dict({"move": 3})
    seats = ("a", "b", "c", "d")
    with pytest.raises(
        ConfigError, match=r"rules must be a Rules, e.g. Rules\(\) or preset\('standard'\)"
    ):
        TableSpec("t", "standard", 1, seats, "1")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="seed must be a whole number, got '7'"):
        TableSpec("t", Rules(), "7", seats, "1")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="board must be a string, got 1"):
        TableSpec("t", Rules(), 1, seats, 1)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="a table needs a table_id"):
        TableSpec("", Rules(), 1, seats, "1")
    # One string is not four one-letter bots, and the clocks and policy are checked here rather
    # than failing later on the referee's thread.
    with pytest.raises(ConfigError, match=r"seats must be a list of bot names.*'abcd'"):
        TableSpec("t", Rules(), 1, "abcd", "1")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"seats must be a list of bot names.*None"):
        TableSpec("t", Rules(), 1, None, "1")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"clocks must be a Clocks.*\{'move_ms': 500\}"):
        TableSpec("t", Rules(), 1, seats, "1", clocks={"move_ms": 500})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"faults must be a FaultPolicy.*got None"):
        TableSpec("t", Rules(), 1, seats, "1", faults=None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("data", "missing"),
    [({}, "spec"), ({"spec": {}}, "table_id"), ({"spec": _spec().to_dict()}, "hands")],
)
def test_a_partial_game_record_is_refused_with_the_missing_field(
    data: dict[str, object], missing: str
) -> None:
    with pytest.raises(ConfigError, match=f"not a whole game record .*: no field '{missing}'"):
        GameRecord.from_dict(data)


@pytest.mark.parametrize(("data", "missing"), [({}, "table_id"), ({"table_id": "t"}, "rules")])
def test_a_partial_table_spec_is_refused_with_the_missing_field(
    data: dict[str, object], missing: str
) -> None:
    with pytest.raises(ConfigError, match=f"not a whole table spec .*: no field '{missing}'"):
        TableSpec.from_dict(data)


def test_a_spec_read_back_refuses_seats_given_as_one_string() -> None:
    with pytest.raises(ConfigError, match="seats must be a list of bot names"):
        TableSpec.from_dict({**_spec().to_dict(), "seats": "abcd"})


def test_strict_policy_allows_no_fault() -> None:
    assert FaultPolicy(max_faults=5, strict=True).faults_allowed == 0
    assert FaultPolicy(max_faults=5).faults_allowed == 5
