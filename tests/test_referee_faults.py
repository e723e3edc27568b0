"""Misbehaving bots: each fault is recorded with its reason, the game completes, and a table
playing at the same time is unharmed.

Every case runs two tables at once on one referee: table A seats a misbehaving bot process with
three well-behaved ones on short clocks; table B seats four well-behaved bots on calm clocks and
must end exactly as it would alone (no fault, every seat normal). The clocks are what is tested
here, not the machine's speed: no assertion depends on how long anything took.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from conftest import BOT_READY_MS, BotProcesses, recorded_messages, recorded_so_far

from arena.engine import Hand
from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb
from arena.proto.hearts.v1 import events_pb2 as ev_pb
from arena.proto.hearts.v1 import spectator_service_pb2 as spec_pb
from arena.proto.hearts.v1 import spectator_service_pb2_grpc as spec_grpc
from arena.referee import RefereeConfig, RefereeThread, TokenAccounts
from arena.referee.accounts import token_key
from arena.rules import Rules
from arena.server.competition import _LEFT_BEFORE_START
from arena.table import Clocks, FaultKind, FaultPolicy, GameRecord, TableSpec, Termination

RESULT_S = 120.0
SHORT = Clocks(move_ms=300, bank_ms=300, handshake_ms=30_000)
CALM = Clocks(move_ms=5000, bank_ms=10_000, handshake_ms=30_000)
GOOD_A = ("ga1", "ga2", "ga3")
GOOD_B = ("gb1", "gb2", "gb3", "gb4")
BAD_SEAT = 2
WARN_MS = 200
"""The bank below which a seat is warned (the short clocks' bank is 300 ms)."""


@dataclass
class Arena:
    """One referee and seven well-behaved bots shared by this module's tests."""

    referee: RefereeThread
    bots: BotProcesses


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Arena]:
    """The shared referee and its good bots; everything is stopped and killed at the end."""
    accounts = TokenAccounts()
    referee = RefereeThread(RefereeConfig(time_warning_ms=WARN_MS), accounts)
    referee.start("127.0.0.1:0")
    bots = BotProcesses(referee, accounts, tmp_path_factory.mktemp("bots"))
    try:
        for name in GOOD_A + GOOD_B:
            bots.start(name)
        assert referee.wait_for_bots(GOOD_A + GOOD_B, BOT_READY_MS)
        yield Arena(referee, bots)
    finally:
        bots.kill_all()
        referee.stop(0)


def play_beside(
    arena: Arena, bad: str, table_id: str, faults: FaultPolicy | None = None
) -> tuple[GameRecord, GameRecord]:
    """Table A (with ``bad`` in seat 2) and table B (all good) at once; both records."""
    seats = list(GOOD_A)
    seats.insert(BAD_SEAT, bad)
    a = TableSpec(
        f"{table_id}-a",
        Rules(),
        11,
        tuple(seats),
        "11",
        clocks=SHORT,
        faults=faults or FaultPolicy(grace_ms=300),
    )
    b = TableSpec(f"{table_id}-b", Rules(), 11, GOOD_B, "11", clocks=CALM)
    future_a = arena.referee.submit(a)
    future_b = arena.referee.submit(b)
    record_a, record_b = future_a.result(RESULT_S), future_b.result(RESULT_S)
    assert record_b.termination is Termination.NORMAL
    assert record_b.faults == ()
    assert record_b.seat_status == (Termination.NORMAL,) * 4
    assert record_a.termination is Termination.NORMAL
    assert all(h.complete for h in record_a.hands)
    for seat in range(4):
        if seat != BAD_SEAT:
            assert record_a.faults_of(seat) == ()
    return record_a, record_b


def start_bad(arena: Arena, name: str, mode: str, *extra: str) -> None:
    """Start a misbehaving bot and wait until it is in the lobby."""
    arena.bots.start(name, mode, *extra)
    assert arena.referee.wait_for_bots([name], BOT_READY_MS)


def public_faults(arena: Arena, record: GameRecord) -> list[ev_pb.SeatFaulted]:
    """The bad seat's SeatFaulted events, as the table and its spectators saw them."""
    with grpc.insecure_channel(f"127.0.0.1:{arena.referee.port}") as channel:
        watch = spec_grpc.SpectatorServiceStub(channel).Watch(
            spec_pb.WatchRequest(table_id=record.spec.table_id, from_start=True), timeout=RESULT_S
        )
        events = [e.seat_faulted for r in watch for e in r.events if e.HasField("seat_faulted")]
    return [e for e in events if e.seat == BAD_SEAT]


def kinds(record: GameRecord) -> set[FaultKind]:
    """The kinds of fault the bad seat made."""
    return {f.kind for f in record.faults_of(BAD_SEAT)}


def test_a_silent_bot_times_out_and_is_forfeited(arena: Arena, tmp_path: Path) -> None:
    log = tmp_path / "silent.b64"
    start_bad(arena, "silent", "silent", f"--record={log}")
    record, _ = play_beside(arena, "silent", "silent")
    assert kinds(record) == {FaultKind.TIMEOUT}
    assert len(record.faults_of(BAD_SEAT)) == 4
    assert record.seat_status[BAD_SEAT] is Termination.TIMEOUT
    assert record.placings[BAD_SEAT] == 4
    first = record.faults_of(BAD_SEAT)[0]
    assert first.trick == -1 and len(first.substitute) == 3  # the pass was substituted
    assert "600 ms (300 ms move time + 300 ms time bank left)" in first.detail
    assert "forfeited: 4 faults (timeout x4) with 3 allowed" in record.reason
    # The bot is told each fault, exactly, with what was played instead, and warned of its bank.
    events = [e for m in _messages(log) for e in m.events]
    notices = [e.fault_notice for e in events if e.HasField("fault_notice")]
    assert [tuple(n.substitute_cards) for n in notices] == [
        f.substitute for f in record.faults_of(BAD_SEAT)
    ]
    assert notices[0].kind == ev_pb.FAULT_KIND_TIMEOUT and notices[0].faults_allowed == 3
    assert [n.forfeited for n in notices] == [False, False, False, True]
    assert "played instead" in notices[0].message
    warnings = [e.time_warning for e in events if e.HasField("time_warning")]
    assert warnings
    # The field and the words give one figure (the words rounded where the field truncated).
    assert all(w.message.startswith(f"{w.time_bank_ms} ms of time bank") for w in warnings)
    others = [
        e.seat_faulted for m in _messages(log) for e in m.events if e.HasField("seat_faulted")
    ]
    assert not any(o.seat == BAD_SEAT for o in others)  # its own faults come as FaultNotice


def _messages(log: Path) -> list[bot_pb.PlayResponse]:
    return recorded_messages(log, RESULT_S)


def test_a_slow_bot_times_out_and_its_late_answers_are_dropped(arena: Arena) -> None:
    # The bot answers every other request only once the next one comes: late by construction,
    # and read by the table before the answer that follows it (a bot answering after a delay
    # could see its seat forfeited, and its stream no longer read, before its first late answer
    # arrived on a loaded machine).
    start_bad(arena, "slow", "late")
    record, _ = play_beside(arena, "slow", "slow")
    assert kinds(record) == {FaultKind.TIMEOUT}
    assert record.seat_status[BAD_SEAT] is Termination.TIMEOUT
    assert record.late and all(x.seat == BAD_SEAT for x in record.late)
    timed_out = {d.request_id for d in record.decisions if d.fault is FaultKind.TIMEOUT}
    assert {x.request_id for x in record.late} <= timed_out
    # The request it held when its seat was forfeited is answered in its next game: late there
    # too, not an answer with a wrong request id.
    again, _ = play_beside(arena, "slow", "slow-again")
    assert kinds(again) == {FaultKind.TIMEOUT}
    timed_out |= {d.request_id for d in again.decisions if d.fault is FaultKind.TIMEOUT}
    assert {x.request_id for x in again.late} <= timed_out


def test_an_illegal_card_is_refused_with_the_rule_named(arena: Arena) -> None:
    start_bad(arena, "illegal", "illegal")
    record, _ = play_beside(arena, "illegal", "illegal")
    assert kinds(record) == {FaultKind.ILLEGAL_CARD}
    assert record.seat_status[BAD_SEAT] is Termination.ILLEGAL
    fault = record.faults_of(BAD_SEAT)[0]
    assert "may not be played" in fault.detail and fault.sent.startswith("play ")
    decision = next(d for d in record.decisions if d.fault is FaultKind.ILLEGAL_CARD)
    assert decision.cards == fault.substitute and decision.fallback


def test_a_card_not_held_is_refused(arena: Arena) -> None:
    start_bad(arena, "notheld", "notheld")
    record, _ = play_beside(arena, "notheld", "notheld")
    assert kinds(record) == {FaultKind.CARD_NOT_HELD}
    assert record.seat_status[BAD_SEAT] is Termination.ILLEGAL
    # The pass's refusal names the card, as a play's does ("names a card not in the hand" left
    # the author to find it among three).
    passed = next(f for f in record.faults_of(BAD_SEAT) if f.trick == -1)
    missing = passed.detail.split()[3]  # "the pass of XX YY ZZ ...": the bot's missing card first
    assert passed.detail.endswith(f"names a card not in the hand ({missing})"), passed.detail


def test_a_seat_cut_off_for_an_oversized_answer_says_why_in_the_record(arena: Arena) -> None:
    # The record said only "not connected ...": nothing of the message over the limit that had
    # ended the bot's session (the bot itself was told, in the stream's status).
    start_bad(arena, "hugeanswer", "hugeanswer")
    record, _ = play_beside(arena, "hugeanswer", "hugeanswer")
    assert kinds(record) == {FaultKind.DISCONNECT}
    assert record.seat_status[BAD_SEAT] is Termination.DISCONNECT
    for fault in record.faults_of(BAD_SEAT):
        assert re.search(
            r"\(its session ended: a message of 200\d{3} bytes is over this referee's limit of "
            r"65536 bytes \(Welcome.max_message_bytes\): send smaller messages\)$",
            fault.detail,
        ), fault.detail


def test_an_empty_pass_is_refused_saying_so(arena: Arena) -> None:
    start_bad(arena, "emptypass", "emptypass")
    record, _ = play_beside(arena, "emptypass", "emptypass")
    assert kinds(record) == {FaultKind.WRONG_PASS}
    (fault,) = record.faults_of(BAD_SEAT)
    # The count given beside the count asked ("(3 distinct cards)" alone read as what was sent).
    assert fault.detail == (
        "an empty pass is wrong: the wrong number of cards was passed "
        "(0 given; pass 3 distinct cards)"
    )
    assert len(fault.substitute) == 3  # the fallback passed for it


def test_garbage_bytes_are_a_malformed_fault_not_a_dead_stream(arena: Arena) -> None:
    start_bad(arena, "garbage", "garbage")
    record, _ = play_beside(arena, "garbage", "garbage")
    assert kinds(record) == {FaultKind.MALFORMED}
    assert record.seat_status[BAD_SEAT] is Termination.ILLEGAL
    assert "undecodable bytes" in record.faults_of(BAD_SEAT)[0].sent
    assert "garbage" in arena.referee.idle()  # the session survived its garbage


def test_a_wrong_request_id_is_dropped_and_counted(arena: Arena) -> None:
    start_bad(arena, "wrongid", "wrongid")
    record, _ = play_beside(arena, "wrongid", "wrongid")
    assert FaultKind.WRONG_REQUEST_ID in kinds(record)
    wrong = [f for f in record.faults_of(BAD_SEAT) if f.kind is FaultKind.WRONG_REQUEST_ID]
    assert all(f.substitute == () for f in wrong)  # dropped; the request stayed open
    assert kinds(record) <= {FaultKind.WRONG_REQUEST_ID, FaultKind.TIMEOUT}
    assert record.seat_status[BAD_SEAT].is_forfeit


def test_answers_that_name_no_card_never_pass_for_a_play(arena: Arena) -> None:
    # The muddled bot answers a play with a pass, then with a Decision that chooses nothing,
    # then with a second Hello before the right answer: each carries the open request's id or
    # no Decision at all, and none may be taken for a card.
    start_bad(arena, "muddled", "muddled", "--decide-forced")
    record, _ = play_beside(arena, "muddled", "muddled")
    faults = record.faults_of(BAD_SEAT)
    assert [f.kind for f in faults[:3]] == [
        FaultKind.PROTOCOL,
        FaultKind.MALFORMED,
        FaultKind.PROTOCOL,
    ]
    wrong_kind, no_choice, hello = faults[:3]
    assert "sets pass_cards but request" in wrong_kind.detail and "play_card" in wrong_kind.detail
    assert "sets no choice" in no_choice.detail
    assert wrong_kind.substitute and no_choice.substitute  # refused: the fallback played
    assert "a second Hello arrived while request" in hello.detail
    assert hello.substitute == ()  # dropped: the request stayed open, and was then answered
    assert record.seat_status[BAD_SEAT].is_forfeit  # the fourth fault


def test_a_kind_of_a_later_revision_is_named_and_leaves_the_request_open(arena: Arena) -> None:
    # It was told "an empty PlayRequest arrived while request N was open": a field was set.
    start_bad(arena, "ahead", "laterkind")
    record, _ = play_beside(arena, "ahead", "ahead")
    faults = record.faults_of(BAD_SEAT)
    assert faults and {f.kind for f in faults} == {FaultKind.PROTOCOL}
    first = faults[0]
    assert first.sent == (
        "a PlayRequest of no kind this referee knows (4 bytes of fields it does not read: "
        "a later revision's?)"
    )
    assert f"{first.sent} arrived while request" in first.detail
    assert first.substitute == ()  # dropped: the request stayed open, and was then answered
    assert record.seat_status[BAD_SEAT].is_forfeit  # past the faults allowed


def test_a_choice_of_a_later_revision_is_named_as_one(arena: Arena) -> None:
    # It was told "the Decision sets no choice": it set one, of a field this referee cannot read.
    start_bad(arena, "chooser", "laterchoice")
    record, _ = play_beside(arena, "chooser", "chooser")
    first = record.faults_of(BAD_SEAT)[0]
    assert first.kind is FaultKind.MALFORMED and first.substitute  # refused: the fallback played
    assert first.detail == (
        "the Decision sets no choice this referee knows (4 bytes of fields it does not read: a "
        "later revision's?)"
    )


def test_a_crash_mid_hand_is_a_disconnect_then_a_forfeit(arena: Arena) -> None:
    start_bad(arena, "crash", "crash")
    # A grace of a few moves (300 ms each, the bank at most 300 ms more): moves missed within
    # it, then the forfeit past it.
    record, _ = play_beside(arena, "crash", "crash", FaultPolicy(grace_ms=1500))
    assert kinds(record) == {FaultKind.DISCONNECT}
    assert len(record.faults_of(BAD_SEAT)) > 1
    assert record.seat_status[BAD_SEAT] is Termination.DISCONNECT
    detail = record.faults_of(BAD_SEAT)[-1].detail
    assert "grace period" in detail
    # Its stream was cut, not half-closed: it read "the bot closed its side of the stream",
    # the end gRPC shows first, before it cancels the stream of a process that died.
    assert detail.endswith(
        "(its session ended: its stream was cut (cancelled, or its process or connection "
        "ended, or gRPC refused a message of over 4 times this referee's limit))"
    ), detail
    assert all(h.complete for h in record.hands)
    told = public_faults(arena, record)
    assert told[-1].forfeited
    # One absence, one fault: the forfeit past the grace period counted it again (2), as
    # neither the README nor FaultNotice.faults has it.
    assert [f.faults for f in told] == [1] * len(told), [f.faults for f in told]


def test_a_token_whose_bot_is_gone_for_good_is_forfeited_at_once(arena: Arena) -> None:
    # A silent bot on clocks and a grace far past the suite's timeout: only forfeit_token can
    # end its turn, so a finished game shows the seat was let go at once, not by a clock.
    start_bad(arena, "gone", "silent")
    seats = list(GOOD_A)
    seats.insert(BAD_SEAT, "gone")
    endless = Clocks(move_ms=600_000, bank_ms=0, handshake_ms=30_000)
    spec = TableSpec(
        "gone-a", Rules(), 11, tuple(seats), "11", clocks=endless,
        faults=FaultPolicy(grace_ms=600_000),
    )  # fmt: skip
    future = arena.referee.submit(spec)
    key = token_key(arena.bots.token("gone"))
    reason = "its process exited with code 3"
    deadline = time.monotonic() + RESULT_S
    # Until the table has taken it from the lobby (forfeit_token would end it there instead).
    while "gone" in arena.referee.call(lambda referee: referee.idle()):
        assert time.monotonic() < deadline, "the table never seated the bot"
        time.sleep(0.02)
    hits = arena.referee.call(lambda referee: referee.forfeit_token(key, reason))
    assert hits == [("gone-a", BAD_SEAT)]
    record = future.result(RESULT_S)
    assert record.termination is Termination.NORMAL
    assert all(h.complete for h in record.hands)
    assert record.seat_status[BAD_SEAT] is Termination.DISCONNECT
    [fault] = record.faults_of(BAD_SEAT)
    assert fault.kind is FaultKind.DISCONNECT and fault.detail == reason
    assert reason in record.reason
    assert public_faults(arena, record)[0].forfeited  # the table was told
    # Its sessions were ended too: nothing of that token is left to seat anywhere.
    assert arena.referee.call(lambda referee: referee.forfeit_token(key, reason)) == []
    assert "gone" not in arena.referee.call(lambda referee: referee.idle())


def test_a_goodbye_mid_game_forfeits_at_once(arena: Arena) -> None:
    arena.bots.start("leaver", "goodbye")
    proc = arena.bots.procs[-1]
    assert arena.referee.wait_for_bots(["leaver"], BOT_READY_MS)
    record, _ = play_beside(arena, "leaver", "leaver", FaultPolicy(grace_ms=60_000))
    assert kinds(record) == {FaultKind.DISCONNECT}
    assert record.seat_status[BAD_SEAT] is Termination.DISCONNECT
    said = "its bot left the game (Goodbye): the seat is forfeited"
    assert record.faults_of(BAD_SEAT)[0].detail == said and said in record.reason
    assert public_faults(arena, record)[0].forfeited  # the table is told the seat is forfeited
    out = arena.bots.output(proc)
    assert "SHUTDOWN SHUTDOWN_REASON_GOODBYE" in out and "STATUS OK" in out


def test_a_goodbye_before_the_bot_is_told_of_its_game_interrupts_it(
    arena: Arena, tmp_path: Path
) -> None:
    # No passing, so that one seat is asked at a time. The first seat asked (after the forced
    # moves, played without a message) is a silent bot, recorded, so that the test sees the game
    # under way; the leaver, next in turn, has been sent nothing yet when it says Goodbye.
    rules = Rules(pass_count=0)
    seed = 5
    hand = Hand.deal(rules, seed=seed, hand_number=0)
    while len(hand.legal_plays()) == 1:
        hand.play(hand.legal_plays()[0])
    first = hand.to_move
    assert first is not None
    asked, cue = tmp_path / "asked.b64", tmp_path / "leave"
    start_bad(arena, "mum", "silent", f"--record={asked}")
    start_bad(arena, "quitter", "good", f"--leave-when={cue}")
    proc = arena.bots.procs[-1]
    seats = ["", "", "", ""]
    seats[first], seats[(first + 1) % 4] = "mum", "quitter"
    others = iter(GOOD_A)
    seats = [s or next(others) for s in seats]
    future = arena.referee.submit(TableSpec("quit", rules, seed, tuple(seats), "5", clocks=CALM))
    deadline = time.monotonic() + RESULT_S
    # A request, not just any message: the Welcome is recorded too, before the table forms,
    # and a cue given then let a loaded machine see the Goodbye before the table seated the
    # leaver (the game then waited out its grace and played on, not interrupted).
    while not any(m.HasField("request") for m in recorded_so_far(asked)):
        assert time.monotonic() < deadline, "the first seat to decide was never asked"
        time.sleep(0.01)
    cue.touch()
    record = future.result(RESULT_S)
    assert record.termination is Termination.INTERRUPTED
    assert "quitter left (Goodbye) before its game started" in record.reason
    # As the competition server reads it, to keep such a bot from its next table for a while.
    left = _LEFT_BEFORE_START.search(record.reason)
    assert left is not None and left.group(1) == "quitter"
    assert not record.faults and all(s is Termination.NORMAL for s in record.seat_status)
    out = arena.bots.output(proc)
    assert "SHUTDOWN SHUTDOWN_REASON_GOODBYE" in out and "STATUS OK" in out
    # The bots are told so: the hand cut short is not one played.
    (ended,) = [
        e.game_ended for m in _messages(asked) for e in m.events if e.HasField("game_ended")
    ]
    assert ended.termination == ev_pb.TERMINATION_INTERRUPTED
    assert ended.hands_played == 0 and "after 0 hands played" in ended.message


def test_a_bot_that_drops_and_comes_back_takes_its_seat_back(arena: Arena, tmp_path: Path) -> None:
    log = tmp_path / "back.b64"
    start_bad(arena, "back", "reconnect", "--delay-ms=50", f"--record={log}")
    record, _ = play_beside(arena, "back", "back", FaultPolicy(grace_ms=30_000))
    assert record.seat_status[BAD_SEAT] is Termination.NORMAL
    assert kinds(record) <= {FaultKind.DISCONNECT}
    messages = _messages(log)
    welcomes = [m.welcome for m in messages if m.HasField("welcome")]
    assert [w.resumed for w in welcomes] == [False, True]
    assert welcomes[1].reconnect_grace_ms == 30_000  # the table's grace, not the default
    resumed_at = next(i for i, m in enumerate(messages) if m.welcome.resumed)
    # The state is resent: the game and the hand start again for the new session.
    replay = [e.WhichOneof("kind") for e in messages[resumed_at + 1].events]
    assert replay[:3] == ["game_started", "hand_started", "cards_dealt"]
    assert messages[resumed_at + 1].HasField("request")
    plays = [d for d in record.decisions if d.seat == BAD_SEAT and not d.forced]
    assert not any(d.fallback for d in plays)


def test_the_moves_missed_while_away_count_as_one_fault_within_the_grace(arena: Arena) -> None:
    # Away for 1.5 s at 300 ms a move, the seat missed about four moves, each a counted fault:
    # past max_faults it was forfeited, although its bot came back well within the grace.
    # Two faults allowed, not one: on a loaded machine the first answer after the return may
    # come past its 300 ms (a timeout, a fault of its own); four missed moves counted apart
    # would still be past the limit.
    start_bad(arena, "away1", "reconnect", "--delay-ms=1500")
    record, _ = play_beside(arena, "away1", "away1", FaultPolicy(max_faults=2, grace_ms=30_000))
    assert record.seat_status[BAD_SEAT] is Termination.NORMAL, record.reason
    faults = record.faults_of(BAD_SEAT)
    missed = [f for f in faults if f.kind is FaultKind.DISCONNECT]
    assert {f.kind for f in faults} <= {FaultKind.DISCONNECT, FaultKind.TIMEOUT}, faults
    # About 1.5 s away at 300 ms a move: more missed moves than faults allowed.
    assert len(missed) > 2, faults
    assert "counts as one fault" not in missed[0].detail
    assert all("this absence counts as one fault" in f.detail for f in missed[1:])
    plays = [d for d in record.decisions if d.seat == BAD_SEAT and not d.forced]
    assert not plays[-1].fallback  # it played its own cards again once back


def test_a_flood_is_cut_off_without_growing_memory(arena: Arena) -> None:
    before = arena.referee.call(lambda r: r.closed_sessions["RESOURCE_EXHAUSTED"])
    arena.bots.start("flood", "flood")
    assert arena.referee.wait_for_bots(["flood"], BOT_READY_MS)
    proc = arena.bots.procs[-1]
    record, _ = play_beside(arena, "flood", "flood")
    assert FaultKind.WRONG_REQUEST_ID in kinds(record)
    assert record.seat_status[BAD_SEAT].is_forfeit
    out = arena.bots.output(proc)  # the bot exits once the referee has closed its stream
    assert "STATUS" in out
    after = arena.referee.call(lambda r: r.closed_sessions["RESOURCE_EXHAUSTED"])
    assert after == before + 1


def test_strict_mode_forfeits_at_the_first_fault(arena: Arena) -> None:
    start_bad(arena, "strict", "illegal")
    record, _ = play_beside(arena, "strict", "strict", FaultPolicy(strict=True, max_faults=5))
    assert len(record.faults_of(BAD_SEAT)) == 1
    assert record.seat_status[BAD_SEAT] is Termination.ILLEGAL
    assert "forfeited: 1 fault (illegal-card x1) with 0 allowed (strict mode)" in record.reason
    later = [d for d in record.decisions if d.seat == BAD_SEAT and not d.forced]
    assert all(d.fallback for d in later[later.index(next(d for d in later if d.fault)) :])


def story(messages: list[bot_pb.PlayResponse]) -> list[tuple[str, int]]:
    """The events of the last session (from its Welcome on): kind and hand number."""
    start = max(i for i, m in enumerate(messages) if m.HasField("welcome"))
    out: list[tuple[str, int]] = []
    for m in messages[start:]:
        for e in m.events:
            kind = e.WhichOneof("kind")
            assert kind is not None
            out.append((kind, int(getattr(getattr(e, kind), "hand_number", -1))))
    return out


def watch_until(arena: Arena, table_id: str, kind: str, hand: int) -> None:
    """Block until a spectator of the table sees an event of ``kind`` for ``hand``."""
    with grpc.insecure_channel(f"127.0.0.1:{arena.referee.port}") as channel:
        watch = spec_grpc.SpectatorServiceStub(channel).Watch(
            spec_pb.WatchRequest(table_id=table_id, from_start=True), timeout=RESULT_S
        )
        for response in watch:
            for e in response.events:
                if e.WhichOneof("kind") == kind and getattr(e, kind).hand_number == hand:
                    watch.cancel()  # type: ignore[no-untyped-call]  # grpc-stubs: untyped
                    return
    raise AssertionError(f"table {table_id} ended without {kind} of hand {hand}")


def test_a_bot_arriving_after_its_game_started_hears_of_it_once(
    arena: Arena, tmp_path: Path
) -> None:
    log = tmp_path / "late.b64"
    seats = (*GOOD_A, "late")
    spec = TableSpec(
        "late", Rules(), 13, seats, "13", clocks=CALM, faults=FaultPolicy(grace_ms=60_000)
    )
    future = arena.referee.submit(spec, wait_ms=0)  # the table starts without the late bot
    watch_until(arena, "late", "hand_started", 0)
    arena.bots.start("late", "good", f"--record={log}")
    record = future.result(RESULT_S)
    assert record.seat_status == (Termination.NORMAL,) * 4
    messages = _messages(log)
    assert [m.welcome.resumed for m in messages if m.HasField("welcome")] == [True]
    told = story(messages)
    # It took its seat back within the grace period: the game's start and the deal once each.
    assert told[:3] == [("game_started", -1), ("hand_started", 0), ("cards_dealt", 0)]
    assert [k for k, _ in told].count("game_started") == 1
    assert [k for k, _ in told].count("hand_started") == 1
    assert [k for k, _ in told].count("cards_dealt") == 1


def test_a_bot_back_in_a_later_hand_hears_what_it_missed_in_order(
    arena: Arena, tmp_path: Path
) -> None:
    log, cue = tmp_path / "away.b64", tmp_path / "back"
    start_bad(arena, "away", "away", f"--record={log}", f"--back-when={cue}")
    seats = list(GOOD_A)
    seats.insert(BAD_SEAT, "away")
    spec = TableSpec(
        "away",
        Rules(),
        17,
        tuple(seats),
        "17",
        hands=2,
        clocks=SHORT,
        faults=FaultPolicy(100, grace_ms=60_000),
    )
    future = arena.referee.submit(spec)
    watch_until(arena, "away", "hand_started", 1)  # it dropped in hand 0; hand 1 is under way
    cue.touch()
    record = future.result(RESULT_S)
    assert record.seat_status[BAD_SEAT] is Termination.NORMAL
    told = story(_messages(log))
    assert told[0] == ("game_started", -1)
    # The rest of hand 0 comes before hand 1, which starts once: no event is told twice.
    numbers = [n for _, n in told[1:] if n >= 0]
    assert numbers == sorted(numbers)
    assert told.count(("hand_started", 1)) == 1
    assert told.count(("cards_dealt", 1)) == 1
    assert told.count(("cards_received", 1)) == 1
    assert ("hand_ended", 0) in told


def test_a_bot_back_after_its_game_ended_without_it_is_welcomed_unresumed(
    arena: Arena, tmp_path: Path
) -> None:
    # The protocol guide: a game that ends while the bot is away (within the grace period, the
    # fallback playing its moves as DISCONNECT faults) leaves no seat to take back: resumed
    # false, and nothing of that game.
    log, cue = tmp_path / "gone.b64", tmp_path / "back"
    # A name of its own: the module's referee still seats the other tests' "away" bot.
    start_bad(arena, "gone", "away", f"--record={log}", f"--back-when={cue}")
    seats = list(GOOD_A)
    seats.insert(BAD_SEAT, "gone")
    spec = TableSpec(
        "gone",
        Rules(),
        18,
        tuple(seats),
        "18",
        clocks=SHORT,
        faults=FaultPolicy(100, grace_ms=60_000),
    )
    record = arena.referee.submit(spec).result(RESULT_S)
    assert record.seat_status[BAD_SEAT] is Termination.NORMAL  # within the grace: no forfeit
    assert {f.kind for f in record.faults_of(BAD_SEAT)} == {FaultKind.DISCONNECT}
    told_before = len(recorded_so_far(log))
    cue.touch()
    watch_until_welcomed = time.monotonic() + RESULT_S
    while [m.welcome.resumed for m in recorded_so_far(log) if m.HasField("welcome")] == [False]:
        assert time.monotonic() < watch_until_welcomed, "the bot never came back"
        time.sleep(0.05)
    messages = recorded_so_far(log)
    assert [m.welcome.resumed for m in messages if m.HasField("welcome")] == [False, False]
    assert not any(
        e.HasField("game_ended") or e.HasField("game_started")
        for m in messages[told_before:]
        for e in m.events
    )
