"""`arena check-bot` on real bot processes: every sample bot passes, broken bots fail for the
right reason, and the command's exit codes say which.

The broken bots (tests/checkbot_bots/broken_bot.py) each have one deliberate flaw; the same
script with no flaw (mode ``good``) passes the same scenarios, so a failure is the flaw's.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from arena.checkbot import _stop_on_sigterm, register
from arena.checkbot.driver import CheckOptions
from arena.checkbot.process import BotProcess
from arena.checkbot.run import BotCommandError, CheckReport, Verdict, run_check
from arena.checkbot.scenarios import SCENARIOS
from arena.table import Clocks

ROOT = Path(__file__).resolve().parent.parent
BROKEN = ROOT / "tests" / "checkbot_bots" / "broken_bot.py"
PYTHON_SAMPLES = sorted(p.name for p in (ROOT / "sample_bots").glob("*.py") if p.stem != "__init__")
# Short waits where a bot is expected NOT to act: they bound the test's length, not a verdict.
QUICK = CheckOptions(exit_timeout_s=1.0)
PATIENT = CheckOptions(exit_timeout_s=30.0)


def broken(mode: str) -> list[str]:
    """The command of the broken bot in ``mode``."""
    return [sys.executable, str(BROKEN), mode]


def details(report: CheckReport) -> dict[str, tuple[Verdict, str]]:
    """Scenario name -> (verdict, detail)."""
    return {r.scenario: (r.verdict, r.detail) for r in report.results}


def failed_as(report: CheckReport, check: str, reason: str) -> None:
    """Assert that ``check`` failed for a reason that matches the pattern ``reason`` whole."""
    verdict, detail = details(report)[check]
    assert verdict is Verdict.FAIL, detail
    assert re.fullmatch(reason, detail), detail


def check_source(tmp_path: Path, source: str, only: list[str]) -> CheckReport:
    """Check the scenarios ``only`` of the bot whose script is ``source``."""
    script = tmp_path / "bot.py"
    script.write_text(source)
    return run_check([sys.executable, str(script)], only=only, log=tmp_path / "log")


def test_python_samples_are_found() -> None:
    assert {"lowcard.py", "heuristic.py", "montecarlo.py"} <= set(PYTHON_SAMPLES)


@pytest.mark.parametrize("sample", PYTHON_SAMPLES)
def test_every_python_sample_bot_passes(sample: str, tmp_path: Path) -> None:
    # Patience where the bot is expected to act: a refused bot's exit includes the interpreter's
    # teardown, which a loaded machine once stretched past check-bot's default 5 s.
    report = run_check(
        [sys.executable, str(ROOT / "sample_bots" / sample)], PATIENT, log=tmp_path / "log"
    )
    assert [r.scenario for r in report.results] == [s.name for s in SCENARIOS]
    assert report.passed, "\n".join(r.line() for r in report.failures)
    # How long it took to exit is part of the verdict (a slow exit shows before it fails).
    refused = details(report)["refused token"][1]
    assert re.match(r"exited with code 2, \d+ ms after UNAUTHENTICATED; its last line: ", refused)


@pytest.mark.parametrize("mode", ["good", "asks-forced"])
def test_the_flawless_raw_bot_passes_everything(mode: str, tmp_path: Path) -> None:
    # Patient for the same reason as the samples: a loaded CI host once took over 5 s to end
    # this bot after it had printed its refusal.
    report = run_check(broken(mode), PATIENT, log=tmp_path / "log")
    assert report.passed, "\n".join(r.line() for r in report.failures)
    first_lead = {r.scenario: r.detail for r in report.results}["first trick lead"]
    if mode == "asks-forced":
        assert first_lead == "led 2C to the first trick when asked"
    else:
        assert first_lead.startswith("the 2C was played for it (a forced move")


def test_a_bot_that_ignores_the_suit_led_fails_with_the_cards_named(tmp_path: Path) -> None:
    only = ["following suit", "first trick penalty", "hearts not broken", "void"]
    report = run_check(broken("ignores-suit"), only=only, log=tmp_path / "log")
    assert details(report) == {
        "following suit": (Verdict.FAIL, "trick 0: played 2H on a club lead while holding 5C 9C"),
        "first trick penalty": (
            Verdict.FAIL,
            "trick 0: played 2H on the first trick while holding 4D 8D 3S 7S: no penalty card "
            "(a heart or the QS) on the first trick unless the hand holds nothing else",
        ),
        "hearts not broken": (
            Verdict.FAIL,
            "trick 1: led 2H while hearts are not broken, holding KD AD 9S KS AS: hearts may "
            "not be led until a heart or the QS has been played",
        ),
        # Void in the suit led, any card is legal: the flaw does not show here.
        "void": (Verdict.PASS, "void in clubs at trick 1, discarded 2H"),
    }
    assert not report.passed


def test_a_bot_playing_its_first_card_not_a_legal_one_fails_following_suit(
    tmp_path: Path,
) -> None:
    # Its hand's first card is a club; "following suit" led only clubs, and it passed.
    report = run_check(broken("first-in-hand"), only=["following suit"], log=tmp_path / "log")
    assert details(report) == {
        "following suit": (
            Verdict.FAIL,
            "trick 1: played 9C on a diamond lead while holding 3D 6D TD",
        )
    }
    good = run_check(broken("good"), only=["following suit"], log=tmp_path / "log")
    assert details(good) == {
        "following suit": (
            Verdict.PASS,
            "followed the club lead (2C) with 5C, and the diamond lead at trick 1 (7D QD 2D) "
            "with 3D",
        )
    }


def test_an_answer_of_a_kind_of_a_later_revision_is_named(tmp_path: Path) -> None:
    # It was "answered ... with an empty PlayRequest", though a field was set.
    report = run_check(broken("later-kind"), only=["following suit"], log=tmp_path / "log")
    failed_as(
        report,
        "following suit",
        r"answered the play request at trick 0 with a PlayRequest of no kind this referee "
        r"knows \(4 bytes of fields it does not read: a later revision's\?\)",
    )


RAISER = """
from arena.client import Bot, run

class Raiser(Bot):
    def choose_play(self, view):
        raise ValueError("oops")

run(Raiser())
"""


def test_a_bot_whose_code_raises_fails_though_the_sdk_answered_for_it(tmp_path: Path) -> None:
    report = check_source(tmp_path, RAISER, ["following suit", "pass left"])
    failed_as(
        report,
        "following suit",
        r"the bot's code raised ValueError: oops and the SDK answered for it: "
        r"choose_play raised \(game \S+, hand \d, trick \d, request \d+\); playing \w\w "
        r"instead",
    )
    assert details(report)["pass left"][0] is Verdict.FAIL  # it plays after passing


ESCAPER = """
from arena.client import Bot, run

class Escaper(Bot):
    def choose_play(self, view):
        raise RuntimeError("boom \\x1b]0;retitled\\x07\\nnext line")

run(Escaper())
"""


def _traceback_of(error: BaseException) -> list[str]:
    try:
        raise error
    except BaseException:
        return traceback.format_exc().splitlines()


def test_the_exception_quoted_is_the_whole_message_of_the_last_one_raised() -> None:
    # A message line indented as a frame's code is ("header\n  indented detail\nfooter") was
    # quoted as "footer", and an exception group as nothing at all.
    from arena.checkbot.run import _exception_after

    cases = {
        "ValueError: oops": ValueError("oops"),
        "ValueError: header\nindented detail\nfooter": ValueError(
            "header\n  indented detail\nfooter"
        ),
        "ExceptionGroup: several (2 sub-exceptions)": ExceptionGroup(
            "several", [ValueError(1), TypeError(2)]
        ),
    }
    for quoted, error in cases.items():
        assert _exception_after(_traceback_of(error)) == quoted
    try:
        try:
            raise ValueError("first")
        except ValueError as e:
            raise RuntimeError("second") from e
    except RuntimeError:
        chained = traceback.format_exc().splitlines()
    assert _exception_after(chained) == "RuntimeError: second"


def test_what_a_bot_said_is_printed_on_its_checks_line_with_control_characters_escaped(
    tmp_path: Path,
) -> None:
    # A bot's exception went to the terminal as it was: its escape sequences retitled the
    # window, and the line break in its message split the check's line; the exception was
    # told by its message's last line alone ("raised next line").
    script = tmp_path / "bot.py"
    script.write_text(ESCAPER)
    done = CliRunner().invoke(
        checkbot_app(),
        ["check-bot", "--only", "following suit", "--", sys.executable, str(script)],
    )
    assert done.exit_code == 1, done.output
    assert "\x1b" not in done.output and "\x07" not in done.output, done.output
    assert done.output.splitlines()[0].startswith(
        r"FAIL following suit: the bot's code raised RuntimeError: boom \x1b]0;retitled\x07"
        r"\nnext line and the SDK answered for it: choose_play raised"
    ), done.output


SLIPS = """
import sys
import time
from arena.client import Bot, run

class Slips(Bot):
    def choose_pass(self, view):
        return [view.hand[0]] * 3

    def on_card_played(self, event):
        raise KeyError("seen")

run(Slips())
"""


def test_a_raising_hook_and_a_repeated_card_are_told_as_they_are(tmp_path: Path) -> None:
    report = check_source(tmp_path, SLIPS, ["pass left", "hold"])
    # A raising hook: the SDK skipped an event, it did not answer for the bot.
    assert details(report)["hold"] == (
        Verdict.FAIL,
        "the bot's code raised KeyError: 'seen' in an event hook and the SDK skipped the event: "
        "the bot's on_card_played hook raised; event skipped",
    )
    verdict, detail = details(report)["pass left"]
    assert verdict is Verdict.FAIL
    assert re.fullmatch(r"passed (\w\w) three times \(\1 \1 \1\)", detail), detail


HOOKED = """
import sys
from arena.client import Bot, highest, run

class Hooked(Bot):
    def choose_play(self, view):
        print(f"asked {view.game_id} hand {sorted(map(str, view.hand))}", file=sys.stderr)
        return highest(view.legal)

    def on_fault(self, event):
        print(f"on_fault {event.kind.value} {event.request_id} {event.substitute[0]} "
              f"{event.faults}/{event.faults_allowed} {event.forfeited}", file=sys.stderr)

    def on_seat_fault(self, event):
        print(f"on_seat_fault seat {event.seat} {event.kind.value}", file=sys.stderr)

run(Hooked())
"""


def test_the_fault_notices_reach_the_bot_s_hooks_and_it_plays_on(tmp_path: Path) -> None:
    report = check_source(tmp_path, HOOKED, ["fault notices"])
    verdict, detail = details(report)["fault notices"]
    assert verdict is Verdict.PASS, detail
    said = re.fullmatch(
        r"played (\w\w); told of seat 1's fault, then, away past its move time, of its own "
        r"\((\w\w) played in its place\), played (\w\w)",
        detail,
    )
    assert said is not None, detail
    log = (tmp_path / "log").read_text()
    assert "on_seat_fault seat 1 timeout" in log
    assert f"on_fault disconnect 0 {said[2]} 1/3 False" in log
    assert re.search(r"FAULT DISCONNECT in game g\d+-check-fault hand 0 \(request 0\)", log), log
    # The hand each request showed: the card played in the bot's place gone from the second,
    # from which the bot played.
    hands = re.findall(r"asked \S+ hand \[(.*)\]", log)
    assert len(hands) == 2
    assert f"'{said[2]}'" in hands[0] and f"'{said[2]}'" not in hands[1]
    assert f"'{said[3]}'" in hands[1] and f"'{said[1]}'" not in hands[1]


def test_a_bot_that_gives_up_when_told_of_its_fault_fails_that_check(tmp_path: Path) -> None:
    report = run_check(broken("dies-on-fault"), only=["fault notices"], log=tmp_path / "log")
    failed_as(
        report,
        "fault notices",
        # Which end saw the stream end first is a race of the bot's exit.
        r"(the bot closed its side of the stream|the stream ended) while the play request sent "
        r"with the FaultNotice was open \(the bot exited with code 4; its last output: "
        r"broken_bot: told of a fault; giving up\)",
    )


GAME_END_RAISER = """
from arena.client import Bot, lowest, run

class Raiser(Bot):
    games = 0

    def choose_play(self, view):
        return lowest(view.legal)

    def on_game_end(self, event):
        self.games += 1
        if self.games == 1:
            raise RuntimeError(f"cannot file {event.game_id}")

run(Raiser())
"""


@pytest.mark.parametrize("only", [["hold"], ["hold", "void"]])
def test_an_error_in_on_game_end_is_charged_to_its_own_check(
    only: list[str], tmp_path: Path
) -> None:
    # Judged before the bot had read its game's end, the first check passed, and the error
    # failed the next one (or, run alone, none: the bot was stopped first).
    report = check_source(tmp_path, GAME_END_RAISER, only)
    failed_as(
        report,
        "hold",
        r"the bot's code raised RuntimeError: cannot file g1-check-hold in an event hook and "
        r"the SDK skipped the event: the bot's on_game_end hook raised; event skipped",
    )
    if "void" in only:
        assert details(report)["void"][0] is Verdict.PASS, details(report)["void"]


MISNAMED = """
from arena.client import Bot, lowest, run

class Misnamed(Bot):
    def play(self, view):
        return lowest(view.legal)

run(Misnamed())
"""


def test_a_bot_class_the_sdk_warns_of_fails_once_and_the_rest_still_run(tmp_path: Path) -> None:
    # Its moves are the base class's, legal in every scenario: only the SDK's warning tells.
    report = check_source(tmp_path, MISNAMED, ["handshake", "following suit", "refused token"])
    verdict, detail = details(report)["handshake"]
    assert verdict is Verdict.FAIL
    assert detail == (
        "the SDK warned that bot class Misnamed defines play(), which the SDK never calls: did "
        "you mean choose_play()? (Bot's own choose_play runs instead); and that bot class "
        "Misnamed overrides neither choose_play nor choose_pass: it plays the base class's "
        "defaults (the lowest legal card; passes its highest cards)"
    )
    # Said once, though the refused token's fresh process warns again.
    assert details(report)["following suit"][0] is Verdict.PASS
    assert details(report)["refused token"][0] is Verdict.PASS


ASYNC_HOOK = """
from arena.client import Bot, lowest, run

class Eager(Bot):
    def choose_play(self, view):
        return lowest(view.legal)

    async def on_trick(self, event):
        self.tricks = getattr(self, "tricks", 0) + 1

run(Eager())
"""


def test_an_async_def_hook_the_sdk_warns_of_fails_the_handshake(tmp_path: Path) -> None:
    # Its hook never runs (the SDK never awaits it) and its moves are legal: every scenario
    # passed, and only the SDK's warning at start tells.
    report = check_source(tmp_path, ASYNC_HOOK, ["handshake", "following suit"])
    verdict, detail = details(report)["handshake"]
    assert verdict is Verdict.FAIL
    assert detail.startswith(
        "the SDK warned that bot class Eager defines on_trick() with async def: the SDK calls"
    ), detail
    assert details(report)["following suit"][0] is Verdict.PASS


HARD_CODED = """
import time
print("cannot connect to 127.0.0.1:50051", flush=True)  # as a bot with its own address says
time.sleep(60)
"""


def test_a_bot_that_opens_no_stream_is_quoted(tmp_path: Path) -> None:
    script = tmp_path / "hard.py"
    script.write_text(HARD_CODED)
    options = CheckOptions(start_timeout_s=5.0)
    report = run_check([sys.executable, str(script)], options, only=["handshake"])
    verdict, detail = details(report)["handshake"]
    assert verdict is Verdict.FAIL
    assert detail.endswith(
        "within 5 s after it started (its last output: cannot connect to 127.0.0.1:50051)"
    ), detail


def test_a_short_pass_fails_each_pass_direction(tmp_path: Path) -> None:
    only = ["pass left", "pass right", "pass across", "hold"]
    report = run_check(broken("short-pass"), only=only, log=tmp_path / "log")
    got = details(report)
    assert got["pass left"] == (Verdict.FAIL, "passed 2 cards (QS AS); the pass is exactly 3")
    assert got["pass right"] == (Verdict.FAIL, "passed 2 cards (7S AS); the pass is exactly 3")
    assert got["pass across"] == (Verdict.FAIL, "passed 2 cards (9H TS); the pass is exactly 3")
    assert got["hold"][0] is Verdict.PASS  # no pass on a hold hand: nothing to get wrong


@pytest.mark.parametrize("mode", ["good", "no-resume"])
def test_the_reconnect_says_whether_the_bot_named_its_broken_session(
    mode: str, tmp_path: Path
) -> None:
    report = run_check(broken(mode), only=["reconnect"], log=tmp_path / "log")
    verdict, detail = details(report)["reconnect"]
    assert verdict is Verdict.PASS, detail  # the field is optional in hearts.v1
    if mode == "good":
        assert "(naming the broken session in Hello.resume_session_id)" in detail
    else:
        assert "without Hello.resume_session_id: set it to the last Welcome.session_id" in detail


def test_the_reconnect_sends_its_welcome_alone_as_the_referee_does(tmp_path: Path) -> None:
    # The Welcome came with the replay and the request in one message, which the contract says
    # a referee never does on a reconnection: a bot relying on it failed here, not at a referee.
    report = run_check(broken("welcome-alone"), only=["reconnect"], log=tmp_path / "log")
    verdict, detail = details(report)["reconnect"]
    assert verdict is Verdict.PASS, detail


def test_a_bot_answering_every_request_twice_fails(tmp_path: Path) -> None:
    # It passed every check (the second answers were skipped as late), and forfeited every game
    # at a referee, which counts a second answer as a fault.
    report = run_check(broken("twice"), only=["pass left", "pass right"], log=tmp_path / "log")
    failed = [r.detail for r in report.failures]
    assert len(failed) == 2 and all(" a second time" in d for d in failed), failed
    assert "send exactly one Decision per DecisionRequest" in failed[0]
    # A check whose last answer came twice: it passed run alone (the second answer came after
    # it was judged), and in a full run the next check failed for it.
    for only in (["hold"], ["hold", "void"]):
        report = run_check(broken("twice"), only=only, log=tmp_path / "log")
        said = details(report)
        assert said["hold"][0] is Verdict.FAIL and re.fullmatch(
            r"answered request_id \d+ a second time: send exactly one Decision per "
            r"DecisionRequest; the referee counts a second answer as a fault",
            said["hold"][1],
        ), said
        if "void" in said:  # failed for its own second answers, not hold's
            assert said["void"][0] is Verdict.FAIL


def test_a_reconnect_naming_another_session_fails_the_reconnect(tmp_path: Path) -> None:
    only = ["reconnect", "whole hand"]
    report = run_check(broken("wrong-resume"), only=only, log=tmp_path / "log")
    verdict, detail = details(report)["reconnect"]
    assert verdict is Verdict.FAIL
    assert "the reconnect's Hello.resume_session_id is 'never-was', not the session_id" in detail
    # Its new stream was left without a Welcome, so the bot waited on it and the next check
    # failed too ("no stream opened ... after its stream ended"), for the checker's own doing.
    assert details(report)["whole hand"][0] is Verdict.PASS, details(report)["whole hand"]


def test_a_bot_that_does_not_reconnect_fails_the_reconnect(tmp_path: Path) -> None:
    only = ["reconnect", "whole hand"]
    report = run_check(broken("no-reconnect"), only=only, log=tmp_path / "log")
    verdict, detail = details(report)["reconnect"]
    assert verdict is Verdict.FAIL
    assert detail == (
        "did not reconnect within Welcome.reconnect_grace_ms (5000 ms) after the checker "
        "dropped its stream with UNAVAILABLE (the bot exited with code 1; its last output: "
        "broken_bot: stream broke (UNAVAILABLE); giving up)"
    )
    # The checker restarts the bot, so the next scenario is judged on its own.
    assert details(report)["whole hand"][0] is Verdict.PASS


def test_a_bot_alive_but_not_back_fails_the_reconnect_only(tmp_path: Path) -> None:
    only = ["reconnect", "whole hand"]
    report = run_check(broken("idles-after-break"), only=only, log=tmp_path / "log")
    assert details(report)["reconnect"] == (
        Verdict.FAIL,
        "did not reconnect within Welcome.reconnect_grace_ms (5000 ms) after the checker "
        "dropped its stream with UNAVAILABLE",
    )
    # Stopped and started afresh, rather than waited for (20 s) and failed a second time.
    assert details(report)["whole hand"][0] is Verdict.PASS, details(report)["whole hand"]


def test_a_bot_that_retries_a_refused_token_fails(tmp_path: Path) -> None:
    report = run_check(
        broken("retries-refusal"), QUICK, only=["refused token"], log=tmp_path / "log"
    )
    verdict, detail = details(report)["refused token"]
    assert verdict is Verdict.FAIL
    assert detail.startswith("still running 1 s after UNAUTHENTICATED (it tried again ")
    assert "times; its last output: broken_bot: refused; trying again" in detail
    assert detail.endswith("a refused token must end the bot, retrying cannot help")


def test_a_bot_that_never_answers_times_out(tmp_path: Path) -> None:
    # `sleep` never speaks gRPC: no stream at all within the start timeout.
    options = CheckOptions(start_timeout_s=0.5)
    report = run_check(["sleep", "30"], options, log=tmp_path / "log")
    first, *rest = report.results
    assert first.verdict is Verdict.FAIL
    assert first.detail.startswith("no stream opened to ARENA_ADDRESS=127.0.0.1:")
    assert first.detail.endswith("within 0.5 s after it started")
    assert {r.verdict for r in rest} == {Verdict.SKIP}


EXITS_AT_ONCE = "import sys; print('cannot find my model', file=sys.stderr); sys.exit(3)"


def test_a_command_that_exits_at_once_cannot_start(tmp_path: Path) -> None:
    # As `arena run` refuses it: exit 2 and one line that says how and when it ended, not a
    # list of failed checks that blame the protocol or a timeout that never ran out.
    command = [sys.executable, "-c", EXITS_AT_ONCE]
    for only in ([], ["refused token"]):  # the first process, whichever scenario starts it
        with pytest.raises(BotCommandError) as refused:  # as for a command not found
            run_check(command, only=only, log=tmp_path / "log")
        said = str(refused.value)
        assert re.fullmatch(
            r"the bot's command cannot start: the bot exited with code 3 after \d+\.\d s "
            r"without opening a stream to ARENA_ADDRESS=127\.0\.0\.1:\d+ "
            r"\(its last output: cannot find my model\)",
            said,
        ), said
    done = CliRunner().invoke(checkbot_app(), ["check-bot", "--", *command])
    assert done.exit_code == 2
    assert done.output.startswith("arena: error: the bot's command cannot start: ")
    assert done.output.count("\n") == 1 and "within" not in done.output


def test_a_bot_s_control_characters_are_quoted_as_escapes(tmp_path: Path) -> None:
    # Written as they came, a bot's output retitled the window, rang the bell and cleared the
    # screen of the user's terminal inside arena's own line.
    command = [
        sys.executable,
        "-c",
        r"import sys; print('ok\x1b]0;PWNED\x07\x1b[2J\x00 end', file=sys.stderr); sys.exit(3)",
    ]
    with pytest.raises(BotCommandError) as refused:
        run_check(command, log=tmp_path / "log")
    said = str(refused.value)
    assert said.endswith(r"(its last output: ok\x1b]0;PWNED\x07\x1b[2J\x00 end)"), said
    assert said.isprintable()


def test_a_crash_that_ends_with_a_stack_quotes_its_error_line(tmp_path: Path) -> None:
    # Node.js prints its error, then a stack, then its version: the last three lines alone
    # ("at evalScript (...) | ... | Node.js v20.20.2") never said what went wrong.
    crash = (
        "import sys; print('Error: no config file', *(f'    at frame{i}' for i in range(8)),"
        " 'Node.js v20.20.2', sep='\\n', file=sys.stderr); sys.exit(1)"
    )
    with pytest.raises(BotCommandError) as refused:
        run_check([sys.executable, "-c", crash], log=tmp_path / "log")
    assert str(refused.value).endswith(
        "(its last output: Error: no config file | ... | at frame6 | at frame7 | Node.js v20.20.2)"
    ), str(refused.value)


def test_no_temporary_folder_for_the_bots_output_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # In a read-only container (no writable TMPDIR, /tmp or /var/tmp) the check without --log
    # ended in a traceback: FileNotFoundError, "No usable temporary directory found".
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))
    bot = [sys.executable, str(ROOT / "sample_bots" / "lowcard.py")]
    done = CliRunner().invoke(checkbot_app(), ["check-bot", "--only", "handshake", "--", *bot])
    assert done.exit_code == 2, done.output
    assert done.output == (
        "arena: error: no temporary folder to keep the bot's output in (No such file or "
        "directory): give --log FILE, or set TMPDIR to a writable folder\n"
    )
    kept = tmp_path / "kept.log"
    logged = CliRunner().invoke(
        checkbot_app(), ["check-bot", "--only", "handshake", "--log", str(kept), "--", *bot]
    )
    assert logged.exit_code == 0, logged.output


def test_a_bot_that_never_connects_fails_the_handshake_and_skips_the_rest(tmp_path: Path) -> None:
    script = tmp_path / "mute.py"
    script.write_text("import time\nprint('loading my model', flush=True)\ntime.sleep(120)\n")
    command = [sys.executable, str(script)]
    done = CliRunner().invoke(
        checkbot_app(),
        [
            "check-bot",
            "--start-timeout",
            "1",
            "--only",
            "handshake",
            "--only",
            "hold",
            "--",
            *command,
        ],
    )
    assert done.exit_code == 1, done.output
    lines = done.output.splitlines()
    assert re.fullmatch(
        r"FAIL handshake: no stream opened to ARENA_ADDRESS=127\.0\.0\.1:\d+ within 1 s after "
        r"it started \(its last output: loading my model\)",
        lines[0],
    ), lines
    assert lines[1] == "SKIP hold: not run: no handshake"


def test_a_script_without_its_interpreter_line_cannot_start_and_says_what_to_do(
    tmp_path: Path,
) -> None:
    # Executable but with no #! line: "Exec format error", failed as the handshake check (exit
    # 1, fourteen SKIPs), where arena run refuses the command (exit 2).
    script = tmp_path / "bot.py"
    script.write_text("print('never runs')\n")
    script.chmod(0o755)
    done = CliRunner().invoke(checkbot_app(), ["check-bot", "--", str(script)])
    assert done.exit_code == 2, done.output
    assert done.output == (
        f"arena: error: the bot's command cannot start: cannot start {script}: Exec format error "
        "(the system cannot run the file itself: give a script a #! line, e.g. "
        "#!/usr/bin/env python3, or start it with its interpreter: python FILE)\n"
    )


@pytest.mark.parametrize("interpreter", ["/bin/sh", "/usr/bin/env python3"])
def test_a_script_with_windows_line_endings_cannot_start_and_says_so(
    tmp_path: Path, interpreter: str
) -> None:
    # Through env, only env's own lines were quoted ("use -[v]S to pass options in shebang
    # lines"), as arena run did before it named the carriage return.
    script = tmp_path / "bot"
    script.write_bytes(f"#!{interpreter}\r\nprint(1)\r\n".encode())
    script.chmod(0o755)
    done = CliRunner().invoke(checkbot_app(), ["check-bot", "--", str(script)])
    assert done.exit_code == 2, done.output
    assert (
        done.output.count("\n") == 1
        and ("its #! line ends in a carriage return: the file has Windows line endings (CRLF)")
        in done.output
    ), done.output


def test_a_bot_that_dies_after_a_long_line_is_quoted_within_bounds(tmp_path: Path) -> None:
    # Its 20 kB debug line was quoted whole in the one line check-bot says (2 MB for 2 MB).
    script = tmp_path / "dumper.py"
    script.write_text(
        'import sys\nprint("RuntimeError: no weights", file=sys.stderr)\n'
        'print("z" * 20000, file=sys.stderr)\nsys.exit(1)\n'
    )
    done = CliRunner().invoke(checkbot_app(), ["check-bot", "--", sys.executable, str(script)])
    assert done.exit_code == 2, done.output
    assert "RuntimeError: no weights" in done.output and len(done.output) < 2000, done.output


def checkbot_app() -> typer.Typer:
    """The arena CLI, reduced to check-bot (for typer's CliRunner)."""
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """The arena CLI, reduced to check-bot."""

    register(app)
    return app


def test_cli_exit_codes_and_lines(tmp_path: Path) -> None:
    runner = CliRunner()
    app = checkbot_app()
    missing = runner.invoke(app, ["check-bot", "--", "no-such-bot-command-xyz"])
    assert missing.exit_code == 2
    assert "bot command 'no-such-bot-command-xyz' is not found on PATH" in missing.output
    # As `arena run` says it: which of the three it is, and what to do.
    script = tmp_path / "bot.py"
    script.write_text("print('hi')\n")
    for program, says in (
        (str(tmp_path), "is a folder: give the program inside it"),
        (str(script), "is not executable: chmod +x it, or start it with its interpreter"),
        (str(tmp_path / "nothing"), "does not exist"),
    ):
        refused = runner.invoke(app, ["check-bot", "--", program])
        assert refused.exit_code == 2, refused.output
        assert f"bot command '{program}' {says}" in refused.output, refused.output

    unknown = runner.invoke(app, ["check-bot", "--only", "nonsense", "--", sys.executable])
    assert unknown.exit_code == 2
    assert "unknown scenario(s) 'nonsense'; known: handshake, pass left" in unknown.output
    empty = runner.invoke(app, ["check-bot", "--only", "", "--", sys.executable])
    assert empty.exit_code == 2
    assert "unknown scenario(s) ''; known: handshake" in empty.output

    failing = runner.invoke(
        app,
        [
            "check-bot",
            "--only",
            "following suit",
            "--log",
            str(tmp_path / "log"),
            "--",
            *broken("ignores-suit"),
        ],
    )
    assert failing.exit_code == 1
    assert "FAIL following suit: trick 0: played 2H on a club lead while holding 5C 9C" in (
        failing.output
    )
    assert "check-bot: 0 of 1 checks passed; 1 did not." in failing.output

    passing = runner.invoke(app, ["check-bot", "--only", "following suit", "--", *broken("good")])
    assert passing.exit_code == 0, passing.output
    assert passing.output.splitlines()[-1] == "check-bot: 1 of 1 checks passed."

    listing = runner.invoke(app, ["check-bot", "--list"])
    assert listing.exit_code == 0
    lines = listing.output.splitlines()
    assert [line.split()[0] for line in lines][:2] == ["handshake", "pass"]
    assert len(lines) == len(SCENARIOS)
    for line, scenario in zip(lines, SCENARIOS, strict=True):
        assert line.startswith(scenario.name) and len(line.split()) > len(scenario.name.split())
    assert "Asked to pass left" in lines[1]

    for flags, says in (
        (["--move-ms", "-5"], "--move-ms -5: give each move at least 1 ms"),
        (["--start-timeout", "-1"], "--start-timeout -1: give the bot more than 0 s"),
        (["--start-timeout", "86401"], "--start-timeout 86401: give the bot more than 0 s and"),
        (["--log", "/no/such/folder/x.log"], "folder /no/such/folder does not exist"),
        (["--log", str(tmp_path)], f"--log {tmp_path}: is a folder; give a file"),
        (["--log", "/proc/x.log"], "--log /proc/x.log: cannot write it"),
        (["--move-ms", "99999999999"], "--move-ms 99999999999: at most a day (86400000 ms)"),
        (["--bank-ms", "99999999999"], "--bank-ms 99999999999: at most a day (86400000 ms)"),
        # The check's lines went to the end of the bot's own source file.
        (["--log", str(BROKEN)], f"--log {BROKEN}: is a file of the bot's command; give the"),
    ):
        source = BROKEN.read_bytes()
        refused = runner.invoke(app, ["check-bot", *flags, "--", *broken("good")])
        assert refused.exit_code == 2 and says in refused.output, refused.output
        assert BROKEN.read_bytes() == source

    # Nothing to check is an error, not the help with exit code 0 (a CI line whose bot command
    # came out empty passed).
    for nothing in (["--only", "void"], [], ["--"]):
        missing = runner.invoke(app, ["check-bot", *nothing])
        assert missing.exit_code == 2, (nothing, missing.output)
        assert "give the bot's command after '--'" in missing.output


def test_the_cli_keeps_its_temporary_log_only_when_it_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without --log the bot's output goes to a temp file, named only when a check fails: every
    # passing run, and every bot that could not start, left one behind in the temp folder.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    runner, app = CliRunner(), checkbot_app()
    passing = runner.invoke(app, ["check-bot", "--only", "following suit", "--", *broken("good")])
    assert passing.exit_code == 0, passing.output
    exited = runner.invoke(app, ["check-bot", "--", sys.executable, "-c", EXITS_AT_ONCE])
    assert exited.exit_code == 2, exited.output
    assert list(tmp_path.glob("check-bot-*.log")) == []
    failing = runner.invoke(
        app, ["check-bot", "--only", "following suit", "--", *broken("ignores-suit")]
    )
    assert failing.exit_code == 1, failing.output
    kept = list(tmp_path.glob("check-bot-*.log"))
    assert len(kept) == 1 and f"The bot's output is in {kept[0]}" in failing.output


def test_clocks_are_announced_as_given(tmp_path: Path) -> None:
    options = CheckOptions(clocks=Clocks(move_ms=700, bank_ms=200))
    report = run_check(broken("good"), options, only=["time warning"], log=tmp_path / "log")
    verdict, detail = details(report)["time warning"]
    assert verdict is Verdict.PASS
    assert detail.endswith("(deadline 1000 ms)")  # 700 ms of move time + the 300 ms bank left


def test_python_is_the_arena_environments_without_activating_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As `arena run` does: `python` in a bot command is the one arena runs in (with the SDK),
    # even when the user never activated the virtual environment (its bin is not on PATH).
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    command = ["python", str(ROOT / "sample_bots" / "lowcard.py")]
    report = run_check(command, only=["handshake"], log=tmp_path / "log")
    assert report.passed, "\n".join(r.line() for r in report.failures)


def _bot_running(marker: str) -> bool:
    """Whether the bot process carrying ``marker`` runs (the checker's own command line holds
    the marker too, after check-bot)."""
    ps = subprocess.run(["ps", "-ww", "-eo", "args"], capture_output=True, text=True, check=True)
    return any(marker in line and "check-bot" not in line for line in ps.stdout.splitlines())


def _ignore_sigint() -> None:
    _hangup_default()
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _hangup_default() -> None:
    """SIGHUP as a terminal's command has it (a test suite started under `nohup` ignores it,
    and check-bot keeps an inherited ignore)."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


@pytest.mark.parametrize(
    ("stop", "sigint_ignored"),
    [
        (signal.SIGINT, False),
        (signal.SIGTERM, False),
        (signal.SIGTERM, True),
        (signal.SIGHUP, False),
    ],
    # A command a shell script starts in the background inherits SIGINT ignored: a SIGTERM
    # turned into a SIGINT was ignored with it, and the check ran on with its bot.
    ids=["SIGINT", "SIGTERM", "SIGTERM-with-SIGINT-ignored", "SIGHUP"],
)
def test_a_stopped_check_stops_its_bot_and_says_so(
    tmp_path: Path, stop: signal.Signals, sigint_ignored: bool
) -> None:
    marker = f"checkbot-stop-{stop.name}-{sigint_ignored}-{os.getpid()}"
    bot = [sys.executable, "-c", f"import time; time.sleep(120)  # {marker}"]
    arena = Path(sys.executable).with_name("arena")
    check = subprocess.Popen(
        [str(arena), "check-bot", "--log", str(tmp_path / "log"), "--", *bot],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_ignore_sigint if sigint_ignored else _hangup_default,
    )
    try:
        deadline = time.monotonic() + 60
        while not _bot_running(marker):
            assert check.poll() is None and time.monotonic() < deadline, "the bot never started"
            time.sleep(0.05)
        check.send_signal(stop)
        _, said = check.communicate(timeout=60)
    finally:
        if check.poll() is None:
            check.kill()
            check.wait()
    assert check.returncode == 130, said
    assert (
        said.strip().splitlines()[-1] == "arena: error: check-bot interrupted; the bot was stopped"
    )
    assert not _bot_running(marker)


def test_a_stop_while_the_bot_starts_still_stops_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A SIGTERM (SIGINT ignored: raised as KeyboardInterrupt at once) that came after the fork
    and before asyncio handed back the process lost it: nothing was left to stop, and the bot ran
    on after "the bot was stopped" (seen once in a full-suite run of the test above)."""
    real = asyncio.create_subprocess_exec

    async def signalled_as_it_starts(*args: Any, **kwargs: Any) -> Any:
        process = await real(*args, **kwargs)
        signal.raise_signal(signal.SIGTERM)  # the process runs; its object is not handed back yet
        return process

    marker = f"checkbot-start-window-{os.getpid()}"
    bot = BotProcess(
        [sys.executable, "-c", f"import time; time.sleep(120)  # {marker}"], {}, tmp_path / "log"
    )

    async def start_then_stop() -> None:
        try:
            await bot.start()
        finally:
            await bot.stop()

    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    monkeypatch.setattr(asyncio, "create_subprocess_exec", signalled_as_it_starts)
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _stop_on_sigterm()
        with pytest.raises(KeyboardInterrupt):
            asyncio.run(start_then_stop())
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    assert bot.pid is not None and bot.returncode is not None  # in hand, and stopped
    assert not _bot_running(marker)
