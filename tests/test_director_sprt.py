"""`arena sprt` and the games in play at its decision: finished and stored, never counted.

Real referee, real processes. B forfeits every game (illegal cards, strict), so the test decides
at the first board; a filler holds every game of a later board until the reporter sees the
decision, so those games are in play when it comes, whatever the machine's speed.
"""

from __future__ import annotations

import io
import shlex
import sys
from pathlib import Path

import pytest

from arena.config import build_config
from arena.director.progress import PlainReporter
from arena.director.sprt import _note_uncounted, board_score, run_sprt
from arena.ratings.sprt import Sprt, SprtDecision
from arena.store import Store

ROOT = Path(__file__).resolve().parent.parent
PLAYERS = 4
CONCURRENCY = 4


def command(*words: str | Path) -> str:
    """A Python bot's command line."""
    return shlex.join([sys.executable, *(str(w) for w in words)])


class GateReporter(PlainReporter):
    """Plain progress that opens the gate file when the test's status line says it decided."""

    def __init__(self, stream: io.StringIO, gate: Path) -> None:
        super().__init__(stream, "arena sprt")
        self.gate = gate

    def note(self, text: str) -> None:
        """Print the line; a decided status opens the gate."""
        super().note(text)
        if "LLR" in text and text.endswith("accepted"):
            self.gate.touch()


def new_test() -> Sprt:
    """A test that a board scored 0 decides (H0) at once."""
    return Sprt(elo0=0.0, elo1=200.0, alpha=0.3, beta=0.3)


def test_games_in_play_at_the_decision_are_stored_but_not_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = tmp_path / "gate"
    monkeypatch.setenv("ARENA_TEST_GATE", str(gate))
    config = build_config(
        bots=[
            f"low={command(ROOT / 'sample_bots' / 'lowcard.py')}",
            f"bad={command(ROOT / 'tests' / 'bots' / 'raw_bot.py', '--mode', 'illegal')}",
            f"gate={command(ROOT / 'tests' / 'arena_bots' / 'gatebot.py')}",
            f"hash={command(ROOT / 'tests' / 'arena_bots' / 'hashbot.py')}",
        ],
        players=PLAYERS,
        concurrency=CONCURRENCY,
        move_time="10m",  # the held games wait for the gate, not for a clock
        strict=True,
        db=tmp_path / "s.db",
    )
    out = io.StringIO()
    reporter = GateReporter(out, gate)
    statuses: list[str] = []

    def on_board(test: Sprt) -> None:
        # As the command does: each board's status is a progress line.
        statuses.append(test.status)
        reporter.note(test.status)

    test = new_test()
    outcome = run_sprt(config, test, max_boards=100, reporter=reporter, on_board=on_board)
    assert outcome.decision is SprtDecision.ACCEPT_H0 and outcome.boards == 1
    assert outcome.run is not None and not outcome.run.interrupted
    # The figures are those of the decision: fed once, never again.
    assert statuses == [outcome.status] and test.boards == 1
    # Every game of a later board was held until the decision, so each was in play then.
    assert 1 <= outcome.after_decision <= CONCURRENCY
    assert outcome.uncounted == outcome.after_decision == outcome.run.after_stop
    assert outcome.run.played == PLAYERS + outcome.after_decision

    with Store.open(config.db, create=False) as store:
        [run] = store.runs()  # the test's own run (its identity adds the kind to the config's)
        records = dict(store.records(run.run_id))
    assert len(records) == PLAYERS + outcome.uncounted
    assert all(index >= PLAYERS for index in sorted(records)[PLAYERS:])
    first = [records[i] for i in range(PLAYERS)]
    again = new_test()
    again.update(board_score(first, "low", "bad"))
    assert again.status == outcome.status

    progress = out.getvalue()
    assert (
        "H0 accepted after 1 board: no new game starts; the games in play are finished" in progress
    )
    n = outcome.uncounted
    left_out = (
        "1 more stored game of later boards (it finished after the decision) is"
        if n == 1
        else f"{n} more stored games of later boards ({n} of them finished after the decision) are"
    )
    assert f"the test counted 1 board ({PLAYERS} games); {left_out} not counted by it" in progress

    # Run again: the stored boards decide the same at once; nothing is played, the same games
    # are said to be left out, none of them after a decision of this call.
    out2 = io.StringIO()
    resumed = run_sprt(
        config, new_test(), max_boards=100, reporter=PlainReporter(out2), on_board=print
    )
    assert resumed.run is None and resumed.status == outcome.status
    assert (resumed.uncounted, resumed.after_decision) == (outcome.uncounted, 0)
    assert f"{n} more stored game" in out2.getvalue() and "finished after" not in out2.getvalue()


@pytest.mark.parametrize(
    ("uncounted", "after", "said"),
    [
        (1, 1, "1 more stored game of later boards (it finished after the decision) is"),
        (1, 0, "1 more stored game of later boards is"),
        (3, 2, "3 more stored games of later boards (2 of them finished after the decision) are"),
    ],
)
def test_the_closing_line_agrees_with_its_count(uncounted: int, after: int, said: str) -> None:
    # "1 more stored game ... (1 of them finished after the decision) are not counted" was
    # printed for a single game left out.
    out = io.StringIO()
    _note_uncounted(PlainReporter(out), new_test(), PLAYERS, uncounted, after)
    assert f"the test counted 0 boards (0 games); {said} not counted by it" in out.getvalue()
