"""`arena check-bot` numbers its scripted games as a real referee numbers a game.

A bot that records every message it receives (tests/checkbot_bots/recording_bot.py) is run
through every check-bot scenario, and its transcript is held to what the protocol guide, the
.proto comments and the referee (arena/referee/game.py) say: a game's hands are numbered from 0,
each message of a hand carries that hand's number, hand n is dealt by seat n % players with
``rules.pass_cycle[n % len]`` as its pass, the totals start at 0, and ``GameEnded.hands_played``
counts the hands played to their end (so a game stopped during hand n played n). The same checks
are run on what a real referee sends, a whole game and an interrupted one, so that they are the
referee's behaviour and not this test's idea of it; and check-bot's whole hand is compared,
message for message, with the same deal played at a real referee.
"""

from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conftest import BotProcesses
from google.protobuf.json_format import MessageToDict

from arena.checkbot.driver import CheckOptions
from arena.checkbot.run import run_check
from arena.checkbot.scenarios import SCENARIOS
from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb
from arena.proto.hearts.v1 import events_pb2 as ev_pb
from arena.referee import RefereeThread, TokenAccounts
from arena.rules import Rules
from arena.table import Clocks, TableSpec

# Patience where the bot is expected to act: a loaded host can take over check-bot's default 5 s
# to end a refused bot (the interpreter's teardown).
PATIENT = CheckOptions(exit_timeout_s=30.0)

RECORDING_BOT = Path(__file__).resolve().parent / "checkbot_bots" / "recording_bot.py"
HAND_NUMBERED = ("cards_dealt", "cards_received", "card_played", "trick_won", "hand_ended")
"""The events of a hand, each carrying its hand_number (faults are not expected here)."""
GAME_ID = re.compile(r"g\d+-.+")
"""GameStarted.game_id as the .proto documents it: "g<referee's count>-<table id>"."""
OTHERS = ("n1", "n2", "n3")
WHOLE_HAND_SEED = 14
"""The seed of check-bot's whole-hand deal (arena/checkbot/scenarios.py's whole_hand)."""
WHOLE_HAND_SEAT = 3
"""The bot's seat in check-bot's whole hand."""
UNTIMED = ("request_id", "move_deadline_ms", "time_bank_ms")
"""The fields of a request that depend on timing and on the referee's count of requests."""
RESULT_S = 120.0
RECORD_S = 30.0
EXIT_S = 10.0
SEED = 7


@dataclass
class GameSeen:
    """One game as a bot saw it: its start, what came in between (events and requests, in
    order; a resume's repeated GameStarted left out) and its end."""

    started: ev_pb.GameStarted
    items: list[ev_pb.Event | bot_pb.DecisionRequest] = field(default_factory=list)
    ended: ev_pb.GameEnded | None = None


def recording_bot(record: Path, *stall: str) -> list[str]:
    """The command of the recording bot writing to ``record``."""
    return [sys.executable, str(RECORDING_BOT), str(record), *stall]


def read_record(record: Path) -> list[bot_pb.PlayResponse]:
    """Every message the bot wrote down so far (a line not yet ended is left for later)."""
    text = record.read_text() if record.exists() else ""
    lines = text.split("\n")[:-1]
    return [bot_pb.PlayResponse.FromString(base64.b64decode(line)) for line in lines]


def wait_for_record(
    record: Path, done: Callable[[list[bot_pb.PlayResponse]], bool]
) -> list[bot_pb.PlayResponse]:
    """The record once ``done`` holds for it (the bot writes it down after the referee sent it)."""
    deadline = time.monotonic() + RECORD_S
    while True:
        messages = read_record(record)
        if done(messages):
            return messages
        assert time.monotonic() < deadline, f"the record never got there: {len(messages)} lines"
        time.sleep(0.01)


def game_over(messages: list[bot_pb.PlayResponse]) -> bool:
    """Whether the bot has received a GameEnded."""
    return any(e.HasField("game_ended") for m in messages for e in m.events)


def games_of(messages: list[bot_pb.PlayResponse]) -> list[GameSeen]:
    """The games in a bot's transcript, in order."""
    games: list[GameSeen] = []
    for message in messages:
        current = games[-1] if games and games[-1].ended is None else None
        for event in message.events:
            kind = event.WhichOneof("kind")
            if kind == "game_started":
                if current is not None and current.started.game_id == event.game_started.game_id:
                    continue  # told again on a resume
                current = GameSeen(event.game_started)
                games.append(current)
            elif current is None:
                raise AssertionError(f"a {kind} event outside any game")
            elif kind == "game_ended":
                current.ended = event.game_ended
                current = None
            else:
                current.items.append(event)
        if message.HasField("request"):
            assert current is not None, "a request outside any game"
            current.items.append(message.request)
    return games


def hand_numbers(game: GameSeen) -> list[int]:
    """The hand_number of each HandStarted of a game, in order."""
    return [
        i.hand_started.hand_number
        for i in game.items
        if isinstance(i, ev_pb.Event) and i.HasField("hand_started")
    ]


def problems(game: GameSeen) -> list[str]:
    """Where a game's messages break the protocol's numbering and counting (none: [])."""
    started = game.started
    gid = started.game_id
    found: list[str] = []
    if not GAME_ID.fullmatch(gid):
        found.append(f"{gid}: game_id is not g<count>-<table id>")
    players = started.rules.players
    cycle = list(started.rules.pass_cycle)
    number: int | None = None
    dealer = 0
    ended: set[int] = set()
    totals = [0] * players
    before = list(totals)
    for item in game.items:
        if isinstance(item, bot_pb.DecisionRequest):
            where = f"{gid} request {item.request_id}"
            if item.hand_number != number or item.state.hand_number != number:
                found.append(
                    f"{where}: hand_number {item.hand_number} (state {item.state.hand_number}) "
                    f"in hand {number}"
                )
            if item.state.max_hands != started.max_hands:
                found.append(f"{where}: state.max_hands {item.state.max_hands}")
            if item.state.dealer != dealer:
                found.append(f"{where}: state.dealer {item.state.dealer}, HandStarted {dealer}")
            if list(item.state.game_totals) != before:
                found.append(f"{where}: state.game_totals {list(item.state.game_totals)}, {before}")
            continue
        kind = item.WhichOneof("kind")
        if kind == "hand_started":
            hand = item.hand_started
            expected = 0 if number is None else number + 1
            if hand.hand_number != expected and hand.hand_number != number:  # == on a resume
                found.append(f"{gid}: HandStarted.hand_number {hand.hand_number}, not {expected}")
            if hand.hand_number != number:
                before = list(totals)
            number = hand.hand_number
            dealer = hand.dealer
            # The referee deals hand n from seat n % players (Game(rules, seed): first dealer 0).
            if hand.dealer != number % players:
                found.append(f"{gid}: hand {number} dealt by seat {hand.dealer}")
            if hand.pass_direction != cycle[number % len(cycle)]:
                found.append(f"{gid}: hand {number} passes unlike rules.pass_cycle {cycle}")
            if number >= started.max_hands:
                found.append(f"{gid}: hand {number} in a game of max_hands {started.max_hands}")
        elif kind in HAND_NUMBERED:
            told = getattr(item, kind).hand_number
            if told != number:
                found.append(f"{gid}: {kind}.hand_number {told} in hand {number}")
            if kind == "hand_ended":
                ended.add(told)
                totals = list(item.hand_ended.game_totals)
    end = game.ended
    if end is None:
        return [*found, f"{gid}: no GameEnded"]
    # Hands are numbered from 0, so a game in hand n has played n hands before it.
    played = 0 if number is None else number + (number in ended)
    if end.hands_played != played:
        found.append(f"{gid}: GameEnded.hands_played {end.hands_played}, played {played}")
    if list(end.game_totals) != totals:
        found.append(f"{gid}: GameEnded.game_totals {list(end.game_totals)}, {totals}")
    if any(s != ev_pb.TERMINATION_NORMAL for s in end.seat_status):
        found.append(f"{gid}: a seat forfeited, which none of these games expects")
    placings = [1 + sum(1 for other in totals if other < mine) for mine in totals]
    if list(end.placings) != placings:
        found.append(f"{gid}: GameEnded.placings {list(end.placings)} for totals {totals}")
    over = played == started.max_hands or max(totals) >= started.rules.target
    if (end.termination == ev_pb.TERMINATION_NORMAL) != over:
        name = ev_pb.Termination.Name(end.termination)
        found.append(f"{gid}: {name} after {played} of {started.max_hands} hands")
    return found


def test_check_bot_numbers_and_counts_its_hands_as_a_referee_does(tmp_path: Path) -> None:
    record = tmp_path / "record"
    report = run_check(recording_bot(record), PATIENT, log=tmp_path / "log")
    assert report.passed, "\n".join(r.line() for r in report.failures)
    games = games_of(read_record(record))
    scripted = [s.name for s in SCENARIOS if s.uses_game]
    assert len(games) == len(scripted)
    assert [p for game in games for p in problems(game)] == []
    # Spelled out: one-hand games, as `arena run` plays them, each hand 0 of its game; only the
    # whole hand is played to its end, the other scenarios stop their game during hand 0.
    assert [g.started.max_hands for g in games] == [1] * len(games)
    assert [hand_numbers(g)[:1] for g in games] == [[0]] * len(games)
    ends = [g.ended for g in games]
    assert [e.hands_played if e else None for e in ends] == [
        1 if name == "whole hand" else 0 for name in scripted
    ]
    assert [e.termination if e else None for e in ends] == [
        ev_pb.TERMINATION_NORMAL if name == "whole hand" else ev_pb.TERMINATION_INTERRUPTED
        for name in scripted
    ]


def comparable(game: GameSeen) -> list[dict[str, Any]]:
    """A game's messages, oldest first, without the fields that two tables of one deal cannot
    share: the game id, request ids and the clocks as they run."""
    items: list[dict[str, Any]] = []
    for message in (game.started, *game.items, game.ended):
        assert message is not None, "a game without its end"
        item = MessageToDict(message, preserving_proto_field_name=True)
        item.pop("game_id", None)
        for name in UNTIMED if isinstance(message, bot_pb.DecisionRequest) else ():
            item.pop(name, None)
        items.append({type(message).__name__: item})
    return items


def start_recording(
    bots: BotProcesses, record: Path, name: str, *stall: str
) -> subprocess.Popen[bytes]:
    """One recording bot at the referee (not yet waited for)."""
    env = {
        **os.environ,
        "ARENA_ADDRESS": bots.address,
        "ARENA_TOKEN": bots.token(name),
        "ARENA_BOT_NAME": name,
    }
    return subprocess.Popen(
        recording_bot(record, *stall), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )


def test_check_bots_whole_hand_is_the_referees_game_message_for_message(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses, tmp_path: Path
) -> None:
    # The same deal at a referee, four recording bots playing as check-bot's other seats do,
    # under the seat names check-bot gives: the bot's seat sees the same events and requests.
    record = tmp_path / "check-bot"
    options = CheckOptions(name="bot")
    report = run_check(
        recording_bot(record), options, only=["whole hand", "shutdown"], log=tmp_path / "log"
    )
    assert report.passed, "\n".join(r.line() for r in report.failures)
    (scripted,) = games_of(read_record(record))
    names = [f"check-seat-{s}" for s in range(4)]
    names[WHOLE_HAND_SEAT] = options.name
    records = {name: tmp_path / f"at-referee-{name}" for name in names}
    procs = [start_recording(bots, records[name], name) for name in names]
    try:
        bots.ready(*names)
        spec = TableSpec("whole", Rules(), WHOLE_HAND_SEED, tuple(names), "14")
        referee[0].submit(spec).result(RESULT_S)
        (real,) = games_of(wait_for_record(records[options.name], game_over))
    finally:
        for proc in procs:
            stop(proc)
    assert comparable(scripted) == comparable(real)


def start_at_referee(
    bots: BotProcesses, record: Path, name: str, *stall: str
) -> subprocess.Popen[bytes]:
    """The recording bot and three good bots, waiting in the referee's lobby."""
    for other in OTHERS:
        bots.start(other)
    proc = start_recording(bots, record, name, *stall)
    try:
        bots.ready(*OTHERS, name)
    except BaseException:
        stop(proc)
        raise
    return proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop the recording bot (it reconnects for ever, as a bot should)."""
    proc.kill()
    proc.communicate(timeout=EXIT_S)


def test_the_same_checks_hold_for_a_real_referees_game(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses, tmp_path: Path
) -> None:
    # Two hands, so that the numbering, the dealer and the pass cycle are seen to move on.
    record = tmp_path / "record"
    proc = start_at_referee(bots, record, "rec")
    try:
        spec = TableSpec("numbering", Rules(), SEED, ("rec", *OTHERS), "7", hands=2)
        referee[0].submit(spec).result(RESULT_S)
        (game,) = games_of(wait_for_record(record, game_over))
    finally:
        stop(proc)
    assert problems(game) == []
    assert game.ended is not None and game.ended.hands_played == 2
    assert hand_numbers(game) == [0, 1]


def test_the_same_checks_hold_for_a_game_the_referee_interrupts(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses, tmp_path: Path
) -> None:
    # The bot never answers in hand 1, and the referee stops there: hand 0 was played, hand 1
    # was not, so hands_played is 1 (where check-bot once sent 0 for a game it stopped in hand 3).
    record = tmp_path / "record"
    proc = start_at_referee(bots, record, "rec", "1")
    try:
        clocks = Clocks(move_ms=60_000, bank_ms=0, handshake_ms=30_000)
        spec = TableSpec(
            "interrupted", Rules(), SEED, ("rec", *OTHERS), "7", hands=2, clocks=clocks
        )
        referee[0].submit(spec)

        def stalled(messages: list[bot_pb.PlayResponse]) -> bool:
            return any(m.HasField("request") and m.request.hand_number == 1 for m in messages)

        wait_for_record(record, stalled)
        referee[0].stop(0)
        (game,) = games_of(wait_for_record(record, game_over))
    finally:
        stop(proc)
    assert problems(game) == []
    assert game.ended is not None
    assert game.ended.termination == ev_pb.TERMINATION_INTERRUPTED
    assert game.ended.hands_played == 1
