"""`recorded_views`: the views of a stored game, rebuilt from its record, are the ones its bots
were shown by the real referee, and the README's recipe for asking a bot a recorded decision
again runs as written against a real `arena run` database."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_arena_cli import arena
from test_arena_run import run, suite_bot
from test_client_readme import EXAMPLE, README, SECTION, _python_blocks

from arena.cards import Card
from arena.client import DecisionView, decision_rng, position_key, recorded_views
from arena.config import build_config
from arena.errors import ConfigError
from arena.store import Store
from arena.table import FaultKind, GameRecord

LOGGERS = ("ann", "bob", "cat")
VARYING = ("game_id", "move_ms", "bank_ms", "deadline_ms", "received_at")
"""The fields of a live view that a record cannot give exactly (compared apart)."""

RECIPE = """\
from arena.client import recorded_views
from arena.store import Store
from duck import DuckBot

with Store.open("arena.db", create=False) as store:
    _, _, record = store.find_game("g25-b3-g2-r1")  # the game id in the bot's log
seat = record.spec.seats.index("duck")
for decision, view in recorded_views(record, seat):
    if decision.request_id == 31:  # the request the log's line names
        print("played", *decision.cards, "and now plays", DuckBot().choose_play(view))
"""


def fields(view: DecisionView) -> dict[str, str]:
    """The view's fields as text, the varying ones left out, as tests/arena_bots/viewlog_bot.py
    logs them (not imported from there: mypy would see the file under two module names)."""
    return {
        name: repr(getattr(view, name)) for name in view.__dataclass_fields__ if name not in VARYING
    }


def _run_logged(
    folder: Path, bots: list[str], **settings: Any
) -> tuple[list[GameRecord], list[Any]]:
    """An `arena run` of ``bots`` (the view loggers among them log to ``folder/views``): the
    stored records and every view the loggers logged."""
    views = folder / "views"
    views.mkdir()
    os.environ["ARENA_TEST_VIEWS"] = str(views)  # the bots inherit it
    try:
        config = build_config(bots=bots, boards=1, concurrency=2, db=folder / "r.db", **settings)
        run(config)
    finally:
        del os.environ["ARENA_TEST_VIEWS"]
    with Store.open(config.db, create=False) as store:
        records = [r for _, r in store.records(config.run_id)]
    logged = [json.loads(line) for f in views.iterdir() for line in f.read_text().splitlines()]
    return records, logged


LOGGING = [f"{name}={suite_bot('arena_bots/viewlog_bot.py')}" for name in LOGGERS]
"""Three view loggers (the batch plays two of them beside its two faulty bots)."""


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[GameRecord], list[Any]]:
    """Two view-logging random bots, one that plays illegal cards and one that passes no card
    (each forfeited at its second fault, the latter in a pass, after which the pass requests
    already sent showed no forfeit), in games of several hands: the stored records and every
    view the bots logged."""
    bots = [
        *LOGGING[:2],
        f"bad={suite_bot('bots/raw_bot.py', '--mode', 'illegal')}",
        f"nopass={suite_bot('bots/raw_bot.py', '--mode', 'emptypass')}",
    ]
    folder = tmp_path_factory.mktemp("recorded")
    return _run_logged(folder, bots, game_to=40, move_time="5s", max_faults=1)


def _decision(table_id: str, shown: dict[str, str]) -> tuple[str, ...]:
    """What names a decision within a run: its table, and the seat's position there."""
    return (table_id, *(shown[k] for k in ("seat", "hand", "tricks", "trick", "kind")))


def _compare(records: list[GameRecord], logged: list[Any]) -> tuple[int, int]:
    """Check every view the loggers logged against the one rebuilt from the record, and every
    answer of theirs against what their generator draws from it; (views compared, of them
    views showing a forfeited seat)."""
    live = {}
    for entry in logged:
        key = _decision(entry["game_id"].split("-", 1)[1], entry["fields"])
        assert key not in live
        live[key] = entry
    matched = 0
    forfeits_seen = 0
    for record in records:
        for decision, view in recorded_views(record):
            name = record.spec.seats[decision.seat]
            assert view.game_id == record.spec.table_id
            assert view.move_ms == record.spec.clocks.move_ms
            # A bot's own answer, as its generator draws it from the rebuilt view.
            if name in LOGGERS and not decision.fallback:
                rng = decision_rng(name, view)
                if view.kind.value == "pass":
                    assert sorted(decision.cards) == sorted(
                        str(c) for c in rng.sample(view.hand, view.pass_count)
                    )
                else:
                    assert decision.cards == (str(rng.choice(view.legal)),)
            if name not in LOGGERS or decision.request_id == 0:
                continue  # not asked: a forced move or the fallback's
            built = fields(view)
            entry = live.pop(_decision(record.spec.table_id, built))
            assert entry["fields"] == built, position_key(view)
            assert entry["game_id"].endswith("-" + record.spec.table_id)
            assert 0 < entry["move_ms"] <= view.move_ms
            assert view.bank_ms is not None and abs(entry["bank_ms"] - view.bank_ms) <= 5
            forfeits_seen += any(view.forfeited)
            matched += 1
    assert not live  # every view logged was rebuilt
    return matched, forfeits_seen


def test_every_view_a_bot_was_shown_is_rebuilt_from_the_record(
    batch: tuple[list[GameRecord], list[Any]],
) -> None:
    records, logged = batch
    for record in records:
        assert len(record.hands) > 1  # games of several hands: totals and hand numbers move
        seats = record.spec.seats
        assert record.forfeits == tuple(sorted((seats.index("bad"), seats.index("nopass"))))
    matched, forfeits_seen = _compare(records, logged)
    assert matched > 100 and forfeits_seen > 10


def test_one_absence_is_one_fault_in_the_views_as_at_the_referee(tmp_path: Path) -> None:
    # A bot away for many of its moves: the record holds a disconnect fault for each, the
    # referee counts the absence once; the rebuilt views showed the seat forfeited where the
    # other bots saw it playing.
    away = suite_bot("bots/raw_bot.py", "--mode", "reconnect", "--delay-ms", "3000")
    records, logged = _run_logged(
        tmp_path,
        [*LOGGING, f"away={away}"],
        move_time="200ms",
        time_bank="1s",
        grace="20s",
        max_faults=1,
    )
    missed = [f for r in records for f in r.faults if f.kind is FaultKind.DISCONNECT]
    assert len(missed) > 2  # more than max_faults + 1: counted each, the seat was forfeited
    assert all(r.forfeits == () for r in records)
    matched, forfeits_seen = _compare(records, logged)
    assert matched > 20 and forfeits_seen == 0


def test_the_views_of_one_seat_and_from_plain_data_are_the_same(
    batch: tuple[list[GameRecord], list[Any]],
) -> None:
    record = batch[0][0]
    every = [(d, v) for d, v in recorded_views(record) if d.seat == 2]
    from_data = list(recorded_views(json.loads(json.dumps(record.to_dict())), 2))
    strip = [(d, dataclasses.replace(v, received_at=0.0)) for d, v in every]
    assert strip == [(d, dataclasses.replace(v, received_at=0.0)) for d, v in from_data]
    assert len(every) == sum(d.seat == 2 for d in record.decisions)


def test_a_record_that_does_not_follow_from_its_deal_is_named(
    batch: tuple[list[GameRecord], list[Any]],
) -> None:
    record = batch[0][0]
    data = record.to_dict()
    plays = [i for i, d in enumerate(data["decisions"]) if d["kind"] == "play"]
    held = {d["cards"][0] for d in data["decisions"][plays[0] : plays[0] + 4]}
    other = next(c for c in (str(Card.parse(x)) for x in ("2C", "3C", "4D", "AS")) if c not in held)
    data["decisions"][plays[1]]["cards"] = [other]
    with pytest.raises(ConfigError, match=rf"^the record's decision {plays[1]} \(seat \d, hand 0"):
        list(recorded_views(data))
    data = record.to_dict()
    data["decisions"][plays[0]]["hand"] = 1
    with pytest.raises(ConfigError, match=r"is not in hand 0, where play stands"):
        list(recorded_views(data))


@pytest.mark.parametrize(
    ("record", "seat", "said"),
    [
        ("b1-g0-r0", None, r"takes a GameRecord or its to_dict\(\) data, got 'b1-g0-r0'"),
        (None, 4, r"seat must be a seat number from 0 to 3 or None, got 4"),
        (None, True, r"seat must be a seat number from 0 to 3 or None, got True"),
    ],
)
def test_bad_arguments_are_refused_where_the_call_is(
    batch: tuple[list[GameRecord], list[Any]], record: object, seat: object, said: str
) -> None:
    given = batch[0][0] if record is None else record
    with pytest.raises(ConfigError, match=said):
        recorded_views(given, seat)  # type: ignore[arg-type]


def test_the_readme_recipe_asks_a_bot_a_recorded_decision_again(tmp_path: Path) -> None:
    text = README.read_text(encoding="utf-8")
    section = text[text.index(SECTION) + len(SECTION) :]
    assert RECIPE in _python_blocks(section[: section.index("\n## ")])
    (tmp_path / "duck.py").write_text(EXAMPLE)
    bots = [f"duck={shlex.quote(sys.executable)} duck.py"]
    bots += [f"{b}={suite_bot('../sample_bots/' + b + '.py')}" for b in ("lowcard", "heuristic")]
    bots.append(f"rnd={suite_bot('../sample_bots/random_bot.py')}")
    done = arena("run", "--boards", "1", *(a for b in bots for a in ("--bot", b)), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with Store.open(tmp_path / "arena.db", create=False) as store:
        _, _, record = store.find_game("2")
    seat = record.spec.seats.index("duck")
    asked = [d for d in record.decisions if d.seat == seat and d.kind == "play" and d.request_id]
    assert len(asked) >= 2
    for decision in (asked[0], asked[-1]):
        game_id = f"g3-{record.spec.table_id}"  # as the bot's log names it: the count, the table
        script = RECIPE.replace("g25-b3-g2-r1", game_id).replace(
            "== 31:", f"== {decision.request_id}:"
        )
        (tmp_path / "recipe.py").write_text(script)
        out = subprocess.run(
            [sys.executable, "recipe.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 0, out.stderr
        card = decision.cards[0]
        assert out.stdout == f"played {card} and now plays {card}\n"
        assert re.fullmatch(r"[2-9TJQKA][CDHS]", card)


def test_the_bank_shown_is_what_the_recorded_times_left(
    batch: tuple[list[GameRecord], list[Any]],
) -> None:
    record = batch[0][0]
    data = record.to_dict()
    clocks = data["spec"]["clocks"]
    seat = record.spec.seats.index("ann")
    asked = [
        i
        for i, d in enumerate(data["decisions"])
        if d["seat"] == seat and d["request_id"] and not d["forced"]
    ]
    data["decisions"][asked[0]]["elapsed_ms"] = clocks["move_ms"] + 1500.4  # 1,500.4 ms over
    data["decisions"][asked[1]]["elapsed_ms"] = clocks["move_ms"] - 1  # within: no draw
    data["decisions"][asked[2]]["elapsed_ms"] = clocks["move_ms"] + 10**9  # past it: all gone
    seen = [v.bank_ms for d, v in recorded_views(data, seat) if d.request_id and not d.forced]
    full = clocks["bank_ms"]
    assert seen[:4] == [full, full - 1501, full - 1501, 0]
    assert full > 1501


def test_a_record_whose_cards_are_withheld_is_refused_saying_so(
    batch: tuple[list[GameRecord], list[Any]],
) -> None:
    # A competition server's /api/games/N while the board's other rotations are to play: its
    # seed and cards are kept back, and "seed must be a whole number, got None" read as damage.
    data = batch[0][0].to_dict()
    reason = "board 1:5 is still being played at other tables; its cards are shown once it is done"
    data.update(withheld=reason, spec={**data["spec"], "seed": None}, hands=[], decisions=[])
    with pytest.raises(ConfigError, match=r"^the record's cards are withheld \(board 1:5 is still"):
        list(recorded_views(data))
    data["withheld"] = None  # a finished board's record says so: read as any record
    with pytest.raises(ConfigError, match=r"seed must be a whole number, got None"):
        list(recorded_views(data))
