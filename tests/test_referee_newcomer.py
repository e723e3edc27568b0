"""Hosting tables from Python with bad input: the referee says what is wrong and keeps going.

A real referee on loopback (port 0) and real bot processes; every process is stopped at the end.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.errors import ConfigError
from arena.referee import Referee, RefereeConfig, RefereeThread, TokenAccounts
from arena.referee.loop import run as run_loop
from arena.rules import Rules
from arena.table import TableSpec, Termination

ROOT = Path(__file__).resolve().parent.parent
LOBBY_WAIT_MS = 30_000
GAME_TIMEOUT_S = 120.0
EXIT_WAIT_S = 30.0
NAMES = ("lowcard", "random_bot", "heuristic", "lowcard2")

STUCK = """
import os, time
from pathlib import Path
from arena.client import Bot, run

GO = Path(os.environ["GO_FILE"])


class Stuck(Bot):
    '''Holds its first decision until told to go: the game is surely running meanwhile.'''

    def choose_play(self, view):
        while not GO.exists():
            time.sleep(0.01)
        return super().choose_play(view)

    def choose_pass(self, view):
        while not GO.exists():
            time.sleep(0.01)
        return super().choose_pass(view)


run(Stuck())
"""


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Bot processes, each stopped at the end of the test."""
    running: list[subprocess.Popen[bytes]] = []
    try:
        yield running
    finally:
        for proc in running:
            if proc.poll() is None:
                proc.kill()
            proc.wait()


def test_a_bad_grace_is_refused_and_the_referee_still_stops_cleanly(
    procs: list[subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    # stop("5") with a game running raised a TypeError on the referee's thread: stop() returned
    # at once, the game's future was cancelled, and the bots were never told (they kept
    # retrying for ARENA_GIVE_UP_S).
    accounts, tokens = TokenAccounts.issue_for(NAMES)
    referee = RefereeThread(RefereeConfig(), accounts)
    port = referee.start("127.0.0.1:0")
    try:
        script = tmp_path / "stuck.py"
        script.write_text(STUCK)
        go = tmp_path / "go"
        for name in NAMES:
            env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
            env.update(
                ARENA_ADDRESS=f"127.0.0.1:{port}",
                ARENA_TOKEN=tokens[name],
                ARENA_BOT_NAME=name,
                GO_FILE=str(go),
            )
            procs.append(
                subprocess.Popen(
                    [sys.executable, str(script)],
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        assert referee.wait_for_bots(NAMES, LOBBY_WAIT_MS), referee.idle()
        future = referee.submit(TableSpec("t", Rules(), seed=1, seats=NAMES, board="1"))
        with pytest.raises(ConfigError, match="grace_ms must be a number of milliseconds"):
            referee.stop("5")  # type: ignore[arg-type]
        go.touch()
        record = future.result(GAME_TIMEOUT_S)
        assert record.termination is Termination.NORMAL, record.reason
    finally:
        referee.stop(0, finished=True)
    assert [proc.wait(EXIT_WAIT_S) for proc in procs] == [0] * len(NAMES)


def test_the_async_referee_refuses_a_bad_grace_before_it_stops_anything() -> None:
    async def main() -> None:
        referee = Referee(RefereeConfig(), {})
        await referee.start("127.0.0.1:0")
        try:
            with pytest.raises(ConfigError, match="grace_ms must be a number of milliseconds"):
                await referee.stop("5")  # type: ignore[arg-type]
        finally:
            await referee.stop(0)

    run_loop(main())
