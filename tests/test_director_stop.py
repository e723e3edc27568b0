"""A run that stops on its own (a bot that keeps dying) treats the games in play as Ctrl-C does.

Real referee, real processes. The crash loop raises in the bot pool; the other bots must not be
stopped while the referee still holds their seats, or their leaving (a Goodbye on SIGTERM) is
recorded as their fault and forfeit in a game that is then stored and rated.
"""

from __future__ import annotations

import io
import shlex
import sqlite3
import sys
from pathlib import Path

import pytest

from arena.config import build_config
from arena.director.bots import BotCrashLoopError, BotStartError
from arena.director.progress import PlainReporter
from arena.director.run import run_batch

ROOT = Path(__file__).resolve().parent.parent

DIES_AT_ITS_FIRST_PLAY = '''
"""Passes its first cards, then dies at its first play, in every process."""
import os
from arena.client import Bot, run


class Dies(Bot):
    def choose_pass(self, view):
        return list(view.hand)[: view.pass_count]

    def choose_play(self, view):
        os._exit(5)


run(Dies())
'''


def command(path: Path) -> str:
    """The command line of a Python bot."""
    return shlex.join([sys.executable, str(path)])


def test_a_crash_loop_does_not_charge_the_other_bots_with_the_game_in_play(
    tmp_path: Path,
) -> None:
    dies = tmp_path / "dies.py"
    dies.write_text(DIES_AT_ITS_FIRST_PLAY)
    low = command(ROOT / "sample_bots" / "lowcard.py")
    config = build_config(
        bots=[f"dies={command(dies)}", f"low={low}", f"low2={low}"],
        players=3,
        boards=3,
        # Full games: the game in play when the fourth process dies has hands left to play,
        # so the other bots are still seated in it when the run gives up.
        game_to=100,
        concurrency=1,
        db=tmp_path / "c.db",
    )
    with pytest.raises(BotCrashLoopError, match="exited 4 times in a row"):
        run_batch(config, PlainReporter(io.StringIO()))
    db = sqlite3.connect(config.db)
    try:
        charged = db.execute(
            "SELECT game, bot, status, faults FROM seats "
            "WHERE bot != 'dies' AND (status != 'normal' OR faults != 0)"
        ).fetchall()
        left = db.execute("SELECT game, bot, kind FROM faults WHERE bot != 'dies'").fetchall()
        games = db.execute("SELECT count(*) FROM games").fetchone()[0]
    finally:
        db.close()
    assert games >= 3  # the first three games, each lost by the dying bot alone
    assert charged == [] and left == []


NEVER_CONNECTS = "sh -c 'echo waiting for a licence server >&2; exec sleep 600'"


def test_a_bot_that_never_connects_is_refused_with_its_words_not_a_removed_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The wait for a first connection, shortened; the refusal is the same at any length. Every
    # bot is silent, so that whichever the refusal names, it is one that never connected.
    monkeypatch.setattr("arena.director.run.STARTUP_TIMEOUT_S", 0.5)
    config = build_config(
        bots=[f"{name}={NEVER_CONNECTS}" for name in ("a", "b", "c")],
        players=3,
        boards=1,
        db=tmp_path / "c.db",
    )
    with pytest.raises(BotStartError) as refused:
        run_batch(config, PlainReporter(io.StringIO()))
    message = str(refused.value)
    assert "did not connect within 0.5 s" in message
    # A failed start leaves nothing behind, so the message cannot send the user to its log;
    # it quotes the log instead (empty if the shell had not spoken yet on a loaded machine).
    assert not config.out.exists() and not config.db.exists()
    assert str(config.out) not in message
    assert "waiting for a licence server" in message or "it wrote nothing" in message
