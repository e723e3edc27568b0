"""`arena check-bot` against bots that leave their stream, send what is too big, or are given a
flag or a command the way a newcomer might: each gets one true reason, fast, per check.

The bots are real processes speaking raw hearts.v1 (the SDK would not make these mistakes),
written by the tests into their temporary folder.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from test_checkbot import checkbot_app
from typer.testing import CliRunner

from arena.checkbot.driver import CheckOptions
from arena.checkbot.run import CheckReport, Verdict, run_check
from arena.table import Clocks

ROOT = Path(__file__).resolve().parent.parent
# Patience where the bot is expected to act (exit once its stream has ended): a bound on the
# test's length, not a verdict.
PATIENT = CheckOptions(exit_timeout_s=60.0)
GOOD = [sys.executable, str(ROOT / "tests" / "checkbot_bots" / "broken_bot.py"), "good"]

LEAVER = '''
"""A raw bot that, at its first request, leaves in the way its MODE says, and waits for the
referee to end the stream (as a client must, to learn how it ended); then it exits 0. In the
mode ignore-forced it asks to decide its forced moves, answers the others, and not those."""
import os
import queue
import sys

import grpc

from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb
from arena.proto.hearts.v1 import bot_service_pb2_grpc as bot_grpc

MODE = sys.argv[1]
outbox = queue.Queue()
outbox.put(
    bot_pb.PlayRequest(
        hello=bot_pb.Hello(
            bot_name=os.environ["ARENA_BOT_NAME"],
            token=os.environ["ARENA_TOKEN"],
            protocol_version=1,
            decide_forced_moves=MODE == "ignore-forced",
        )
    )
)


def requests():
    while (item := outbox.get()) is not None:
        yield item


def answer(request):
    decision = bot_pb.Decision(request_id=request.request_id)
    if request.kind == bot_pb.DECISION_KIND_PASS:
        decision.pass_cards.cards.extend(list(request.hand)[-request.pass_count :])
    elif MODE == "ignore-forced":
        if len(request.legal_cards) == 1:
            return None
        decision.play_card.card = request.legal_cards[0]
    else:
        decision.play_card.card = "X" * 100_000  # far over Welcome.max_message_bytes
    return bot_pb.PlayRequest(decision=decision)


with grpc.insecure_channel(os.environ["ARENA_ADDRESS"]) as channel:
    try:
        for response in bot_grpc.BotServiceStub(channel).Play(requests()):
            if response.HasField("shutdown"):
                print("SHUTDOWN", bot_pb.ShutdownReason.Name(response.shutdown.reason), flush=True)
            if not response.HasField("request"):
                continue
            if MODE == "goodbye":
                outbox.put(bot_pb.PlayRequest(goodbye=bot_pb.Goodbye(reason="bored")))
                outbox.put(None)
            elif MODE == "half-close":
                outbox.put(None)
            elif (reply := answer(response.request)) is not None:
                outbox.put(reply)
        print("STATUS OK", flush=True)
    except grpc.RpcError as e:
        print("STATUS", e.code().name, flush=True)
        outbox.put(None)
'''


def leaver(tmp_path: Path, mode: str) -> list[str]:
    """The command of the bot that leaves in ``mode``."""
    script = tmp_path / "leaver.py"
    script.write_text(LEAVER)
    return [sys.executable, str(script), mode]


def details(report: CheckReport) -> dict[str, tuple[Verdict, str]]:
    """Scenario name -> (verdict, detail)."""
    return {r.scenario: (r.verdict, r.detail) for r in report.results}


def test_a_bot_that_says_goodbye_is_told_so_in_each_check(tmp_path: Path) -> None:
    # The checker never ended a stream whose bot said Goodbye: the bot waited for its end, and
    # the next check waited out --start-timeout (20 s) for a stream, then failed for that.
    log = tmp_path / "log"
    report = run_check(
        leaver(tmp_path, "goodbye"), PATIENT, only=["pass left", "pass right"], log=log
    )
    assert details(report) == {
        "pass left": (
            Verdict.FAIL,
            "said Goodbye (bored) while the pass request (left, 3 cards) was open",
        ),
        "pass right": (
            Verdict.FAIL,
            "said Goodbye (bored) while the pass request (right, 3 cards) was open",
        ),
    }
    # Ended as the referee ends a session after a Goodbye: a Shutdown saying so, then OK (the
    # first process saw it before the second check; the second may be stopped first).
    said = log.read_text()
    assert said.startswith("SHUTDOWN SHUTDOWN_REASON_GOODBYE\nSTATUS OK\n"), said


def test_a_bot_that_closes_its_side_gets_the_stream_ended(tmp_path: Path) -> None:
    log = tmp_path / "log"
    report = run_check(
        leaver(tmp_path, "half-close"), PATIENT, only=["pass left", "pass right"], log=log
    )
    for direction in ("left", "right"):
        verdict, detail = details(report)[f"pass {direction}"]
        assert verdict is Verdict.FAIL
        # Whether its exit shows in time to be quoted is the bot's race, not the verdict.
        assert re.fullmatch(
            "the bot closed its side of the stream while the pass request "
            rf"\({direction}, 3 cards\) was open"
            r"( \(the bot exited with code 0; its last output: STATUS OK\))?",
            detail,
        ), detail
    assert log.read_text().startswith("STATUS OK\n")


def test_a_message_over_the_announced_limit_ends_the_stream(tmp_path: Path) -> None:
    # Welcome.max_message_bytes said 65536, and the checker took 100 KB as a card text (a
    # 100 KB "not a card" reason line), where the referee ends the stream.
    log = tmp_path / "log"
    report = run_check(leaver(tmp_path, "big"), only=["following suit"], log=log)
    verdict, detail = details(report)["following suit"]
    assert verdict is Verdict.FAIL
    assert re.fullmatch(
        r"the bot sent a message of \d{6} bytes, over Welcome\.max_message_bytes \(65536; the "
        r"referee ends the stream with RESOURCE_EXHAUSTED\) while the play request at trick 0 "
        r"was open( \(the bot exited with code 0; its last output: STATUS RESOURCE_EXHAUSTED\))?",
        detail,
    ), detail
    assert "STATUS RESOURCE_EXHAUSTED" in log.read_text()


TWICE = '''
"""A raw bot that, once welcomed, opens a second stream on the same connection that says Hello
and then nothing (a token may hold several sessions), and plays correctly on its first: it
reconnects when that breaks (naming the broken session) and exits 0 after a Shutdown."""
import os
import queue
import sys
import threading

import grpc

from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb
from arena.proto.hearts.v1 import bot_service_pb2_grpc as bot_grpc


def hello(resume=""):
    return bot_pb.PlayRequest(
        hello=bot_pb.Hello(
            bot_name=os.environ["ARENA_BOT_NAME"],
            token=os.environ["ARENA_TOKEN"],
            protocol_version=1,
            resume_session_id=resume,
        )
    )


def idle(stub):
    def requests():
        yield hello()
        threading.Event().wait()

    try:
        for _ in stub.Play(requests()):
            pass
    except grpc.RpcError:
        pass


def answer(request):
    decision = bot_pb.Decision(request_id=request.request_id)
    if request.kind == bot_pb.DECISION_KIND_PASS:
        decision.pass_cards.cards.extend(list(request.hand)[-request.pass_count :])
    else:
        decision.play_card.card = request.legal_cards[0]
    return bot_pb.PlayRequest(decision=decision)


with grpc.insecure_channel(os.environ["ARENA_ADDRESS"]) as channel:
    stub = bot_grpc.BotServiceStub(channel)
    session, second = "", False
    while True:
        outbox = queue.Queue()
        outbox.put(hello(session))

        def requests():
            while (item := outbox.get()) is not None:
                yield item

        try:
            for response in stub.Play(requests()):
                if response.HasField("welcome"):
                    session = response.welcome.session_id
                    if not second:
                        second = True
                        threading.Thread(target=idle, args=(stub,), daemon=True).start()
                if response.HasField("request"):
                    outbox.put(answer(response.request))
                if response.HasField("shutdown"):
                    outbox.put(None)
                    sys.exit(0)
        except grpc.RpcError as e:
            outbox.put(None)
            if e.code() is grpc.StatusCode.UNAUTHENTICATED:
                sys.exit(2)
'''


def test_a_stream_opened_beside_the_session_is_not_taken_for_its_reconnect(
    tmp_path: Path,
) -> None:
    # The idle stream, opened long before the drop, was taken for the reconnect and asked to
    # play: "no answer to the play request sent on resume"; then the whole hand failed on it,
    # and the shutdown counted it as a stream opened after the Shutdown.
    script = tmp_path / "twice.py"
    script.write_text(TWICE)
    report = run_check(
        [sys.executable, str(script)],
        PATIENT,
        only=["pass left", "reconnect", "whole hand", "shutdown"],
        log=tmp_path / "log",
    )
    assert report.passed, "\n".join(r.line() for r in report.failures)
    reconnect = details(report)["reconnect"][1]
    assert reconnect.endswith(
        "; the 1 other stream(s) it had opened beside its session were set aside"
    ), reconnect


def test_a_check_run_alone_knows_the_bot_decides_its_forced_moves(tmp_path: Path) -> None:
    # Run alone, the check played the bot's forced 2C for it before it had said Hello, as for a
    # bot that leaves its forced moves to the referee (run after the handshake, it asked).
    report = run_check([*GOOD[:-1], "asks-forced"], only=["first trick lead"], log=tmp_path / "l")
    assert details(report) == {
        "first trick lead": (Verdict.PASS, "led 2C to the first trick when asked")
    }


def test_a_forced_move_left_unanswered_is_named(tmp_path: Path) -> None:
    # The deadline only bounds the wait: this bot never answers its forced moves.
    options = CheckOptions(clocks=Clocks(move_ms=200, bank_ms=0))
    report = run_check(
        leaver(tmp_path, "ignore-forced"), options, only=["first trick lead"], log=tmp_path / "l"
    )
    assert details(report) == {
        "first trick lead": (
            Verdict.FAIL,
            "no answer to the play request at trick 0 within its move_deadline_ms of 200 ms: a "
            "forced move (its one legal card was 2C), which it asked to be asked in "
            "Hello.decide_forced_moves, so it must answer it too",
        )
    }


def test_a_name_too_long_for_a_hello_is_a_usage_error() -> None:
    # It was passed on to the bot, whose Hello then failed the handshake for the flag's name.
    runner = CliRunner()
    done = runner.invoke(
        checkbot_app(), ["check-bot", "--only", "handshake", "--name", "n" * 65, "--", *GOOD]
    )
    assert done.exit_code == 2, done.output
    assert done.output == (
        "arena: error: --name is 65 characters long; a bot's name (Hello.bot_name) is at most 64\n"
    )


def test_a_command_quoted_as_one_word_is_told_how_to_give_it() -> None:
    # `arena run --bot x="python bot.py"` takes one string; check-bot takes words after `--`.
    runner = CliRunner()
    bot = "python sample_bots/lowcard.py"
    done = runner.invoke(checkbot_app(), ["check-bot", "--", bot])
    assert done.exit_code == 2, done.output
    assert done.output == (
        f"arena: error: bot command {bot!r} does not exist: give the program and its "
        f"arguments as separate words after '--', unquoted (arena check-bot -- {bot})\n"
    )
