"""How `arena check-bot` reads the cards a bot sends: by the referee's rule, with its words.

A real bot process (tests/checkbot_bots/spelling_bot.py) plays correctly but spells each card its
own way. Every spelling the protocol lists passes; one that the engine's Card.parse once took
but the referee refuses (a no-break space, a vertical tab, "ſ" for "s") fails, naming the text
sent and the accepted form. The same bot at a real referee shows that this is the referee's
judgement: the spellings check-bot passes play without a fault, the others fault as malformed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import BotProcesses

from arena.cards import CARDS
from arena.checkbot.run import CheckReport, Verdict, run_check
from arena.referee import RefereeThread, TokenAccounts
from arena.referee.wire import CARD_FORM, card_spelled
from arena.rules import Rules
from arena.table import Clocks, FaultKind, GameRecord, TableSpec

SPELLING_BOT = Path(__file__).resolve().parent / "checkbot_bots" / "spelling_bot.py"
SCENARIOS = ["pass left", "following suit", "whole hand"]
# What the bot sends for the first cards these scenarios ask of it (its pass gives TS QS AS,
# its first play follows clubs with 5C), in each spelling.
SENT = {
    "lower": ("ts", "5c"),
    "ten": ("10S", "5C"),
    "padded": (" TS\t\r\n", " 5C\t\r\n"),
    "nbsp": ("\xa0TS", "\xa05C"),
    "vtab": ("TS\v", "5C\v"),
    "long-s": ("Tſ", "5C"),
}
TAKEN = ["lower", "ten", "padded"]
REFUSED = ["nbsp", "vtab", "long-s"]
RESULT_S = 120.0
GOOD = ("n1", "n2", "n3")
EXIT_S = 10.0


def spelling_bot(spelling: str) -> list[str]:
    """The command of the spelling bot."""
    return [sys.executable, str(SPELLING_BOT), spelling]


def details(report: CheckReport) -> dict[str, tuple[Verdict, str]]:
    """Scenario name -> (verdict, detail)."""
    return {r.scenario: (r.verdict, r.detail) for r in report.results}


def test_the_spellings_are_sorted_by_the_referees_own_rule() -> None:
    # The premise of the tests below, on the referee's function itself: what it takes is taken.
    for spelling, texts in SENT.items():
        for text in texts:
            taken = card_spelled(text) is not None
            assert taken == (spelling in TAKEN or text == "5C"), (spelling, text)


@pytest.mark.parametrize("spelling", TAKEN)
def test_a_spelling_the_protocol_lists_passes(spelling: str, tmp_path: Path) -> None:
    report = run_check(spelling_bot(spelling), only=SCENARIOS, log=tmp_path / "log")
    assert report.passed, "\n".join(r.line() for r in report.failures)


@pytest.mark.parametrize("spelling", REFUSED)
def test_a_spelling_the_referee_refuses_fails_naming_it_and_the_form(
    spelling: str, tmp_path: Path
) -> None:
    report = run_check(spelling_bot(spelling), only=SCENARIOS, log=tmp_path / "log")
    got = details(report)
    passed, played = SENT[spelling]
    assert got["pass left"] == (
        Verdict.FAIL,
        f"passed {passed!r}, which is not a card: {CARD_FORM}",
    )
    if spelling == "long-s":
        # Only a spade is misspelled: the club it follows with is sent as the referee wrote it.
        assert got["following suit"][0] is Verdict.PASS
    else:
        assert got["following suit"] == (
            Verdict.FAIL,
            f"trick 0: played {played!r}, which is not a card: {CARD_FORM}",
        )
    assert got["whole hand"][0] is Verdict.FAIL
    assert got["whole hand"][1].endswith(f", which is not a card: {CARD_FORM}")
    assert not report.passed


def play_at_referee(referee: RefereeThread, bots: BotProcesses, spelling: str) -> GameRecord:
    """One game of the spelling bot (seat 0) with three good bots at a real referee."""
    for name in GOOD:
        bots.start(name)
    env = {
        **os.environ,
        "ARENA_ADDRESS": bots.address,
        "ARENA_TOKEN": bots.token(spelling),
        "ARENA_BOT_NAME": spelling,
    }
    proc = subprocess.Popen(
        spelling_bot(spelling), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        bots.ready(*GOOD, spelling)
        clocks = Clocks(move_ms=2000, bank_ms=2000, handshake_ms=30_000)
        spec = TableSpec(spelling, Rules(), 7, (spelling, *GOOD), "7", clocks=clocks)
        return referee.submit(spec).result(RESULT_S)
    finally:
        # It reconnects for ever, as a bot should: it is stopped here, not by the referee.
        proc.kill()
        proc.wait(EXIT_S)


@pytest.mark.parametrize("spelling", ["ten", "nbsp"])
def test_the_referee_judges_the_same_spellings_alike(
    spelling: str, referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses
) -> None:
    record = play_at_referee(referee[0], bots, spelling)
    faults = record.faults_of(0)
    if spelling in TAKEN:
        assert faults == ()
        return
    assert faults and {f.kind for f in faults} == {FaultKind.MALFORMED}
    # The referee's detail names the text sent and the same accepted form as check-bot's
    # failure (the deal is not check-bot's, so which card is not known here).
    sent = {repr(f"\xa0{card}") for card in CARDS}
    for fault in faults:
        assert fault.detail.endswith(f": {CARD_FORM}")
        assert any(text in fault.detail for text in sent), fault.detail
