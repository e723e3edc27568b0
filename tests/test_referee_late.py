"""Late answers are dropped and recorded, always: after the seat is forfeited, and after the game
has ended (in the session's next game's record), never as new faults of a forfeited seat.

Real bot processes on a loopback referee: three well-behaved raw bots and one
``tests/bots/resume_bot.py --mode forfeit-late``, which answers its first request with a wrong
request id (strict mode: the seat is forfeited at that first fault, with the request still open),
then with the right answer and another wrong id, and sends the right answer once more when its
game has ended. Nothing here depends on how long anything took.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import BOTS_DIR, BotProcesses

from arena.referee import RefereeConfig, RefereeThread, TokenAccounts
from arena.referee.game import LATE_RECORDED
from arena.rules import Rules
from arena.table import Clocks, FaultKind, FaultPolicy, GameRecord, TableSpec, Termination

RESUME_BOT = BOTS_DIR / "resume_bot.py"
RESULT_S = 120.0
CALM = Clocks(move_ms=10_000, bank_ms=20_000, handshake_ms=30_000)
GOOD = ("g1", "g2", "g3")
LATE_SEAT = 2
WRONG_ID_OFFSET = 1_000_000
BURST = 600
"""As in tests/bots/resume_bot.py."""


@pytest.fixture
def arena(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BotProcesses]:
    """A referee, three good bots and the late bot (by default in the forfeit-late mode), all
    waiting in the lobby."""
    mode = getattr(request, "param", "forfeit-late")
    accounts = TokenAccounts()
    # Room for the burst in the inbox: the test is of the record, not of the flood limit.
    referee = RefereeThread(RefereeConfig(inbox_limit=4 * BURST), accounts)
    referee.start("127.0.0.1:0")
    bots = BotProcesses(referee, accounts, tmp_path)
    try:
        for name in GOOD:
            bots.start(name)
        bots.procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    str(RESUME_BOT),
                    f"--address={bots.address}",
                    f"--token={bots.token('late')}",
                    "--name=late",
                    f"--mode={mode}",
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
        bots.ready(*GOOD, "late")
        yield bots
    finally:
        bots.kill_all()
        referee.stop(0)


def play(bots: BotProcesses, table_id: str, faults: FaultPolicy, hands: int = 1) -> GameRecord:
    """A game of ``hands`` hands with the late bot in seat 2; its record."""
    seats = list(GOOD)
    seats.insert(LATE_SEAT, "late")
    spec = TableSpec(
        table_id, Rules(), 3, tuple(seats), "3", hands=hands, clocks=CALM, faults=faults
    )
    record = bots.referee.submit(spec).result(RESULT_S)
    assert record.termination is Termination.NORMAL
    assert all(h.complete for h in record.hands)
    assert all(f.seat == LATE_SEAT for f in record.faults)
    assert all(x.seat == LATE_SEAT and x.bot == "late" for x in record.late)
    return record


def test_a_forfeited_bots_late_answers_are_recorded_not_faulted(arena: BotProcesses) -> None:
    record = play(arena, "forfeit", FaultPolicy(strict=True))
    # One fault, the wrong request id, which forfeits the seat with its pass request open.
    (fault,) = record.faults_of(LATE_SEAT)
    assert fault.kind is FaultKind.WRONG_REQUEST_ID
    assert record.seat_status[LATE_SEAT] is Termination.ILLEGAL
    (passed,) = [d for d in record.decisions if d.seat == LATE_SEAT and d.kind == "pass"]
    assert passed.fallback
    first = passed.request_id
    # What the bot sent after the forfeit: the answer to the request given up on, and another
    # wrong id; both dropped and recorded as late replies, neither counted as a fault.
    assert [x.request_id for x in record.late] == [first, first + 2 * WRONG_ID_OFFSET]
    assert record.late[0].sent.startswith("pass [") and f"(request {first})" in record.late[0].sent
    assert all(x.late_ms >= 0 and x.hand == 0 for x in record.late)

    # The answer it sent again once that game had ended reached the referee between games: it
    # is recorded in its next game's record, as late, and is no fault there either.
    again = play(arena, "after", FaultPolicy())
    assert [x.request_id for x in again.late] == [first]
    assert again.faults == ()
    assert again.seat_status == (Termination.NORMAL,) * 4


@pytest.mark.parametrize("arena", ["echo-earlier"], indirect=True)
def test_an_answer_to_an_earlier_games_request_is_late_not_a_fault(arena: BotProcesses) -> None:
    # An answer echoing a request of the bot's last game, read while its next game's request was
    # open, was a WRONG_REQUEST_ID fault there: a forfeited bot's burst of answers to its last
    # request spilled into its next games and forfeited them too.
    first = play(arena, "first", FaultPolicy())
    assert first.faults == () and first.late == ()
    last_id = max(d.request_id for d in first.decisions if d.seat == LATE_SEAT)
    second = play(arena, "second", FaultPolicy(strict=True))
    assert second.faults == ()
    assert second.seat_status == (Termination.NORMAL,) * 4
    assert [x.request_id for x in second.late] == [last_id]


@pytest.mark.parametrize("arena", ["forfeit-burst"], indirect=True)
def test_a_games_record_keeps_a_bounded_number_of_late_replies(
    arena: BotProcesses, caplog: pytest.LogCaptureFixture
) -> None:
    # Every late reply was kept: a forfeited bot answering all game long made a record of 400 KB.
    # Several hands, so that more than the cap of the burst reaches the referee within the game
    # (one hand on a loaded CI host read only 51 of it; the rest came after, between games).
    with caplog.at_level("WARNING", logger="arena.referee"):
        record = play(arena, "burst", FaultPolicy(strict=True), hands=6)
    assert record.seat_status[LATE_SEAT] is Termination.ILLEGAL
    assert len(record.late) == LATE_RECORDED
    (counted,) = [
        r.getMessage() for r in caplog.records if "late replies, of which" in r.getMessage()
    ]
    # Those that came in the game (the rest came after it, between games) are counted in the log.
    seen = re.fullmatch(r".*\(late\): (\d+) late replies, of which the record keeps 64", counted)
    assert seen is not None and LATE_RECORDED < int(seen[1]) <= BURST, counted
