"""The sample bots, written with the client SDK (arena.client), play whole games on the referee."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import BOT_READY_MS, BotProcesses

from arena.referee import RefereeThread, TokenAccounts
from arena.rules import Rules
from arena.table import Clocks, TableSpec, Termination

SAMPLE_BOTS = Path(__file__).resolve().parent.parent / "sample_bots"
RESULT_S = 120.0
CALM = Clocks(move_ms=10_000, bank_ms=30_000, handshake_ms=30_000)


def test_sample_bots_play_a_full_game(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses
) -> None:
    seats = {"random": "random_bot.py", "low": "lowcard.py", "smart": "heuristic.py"}
    procs = []
    for name, script in {**seats, "low2": "lowcard.py"}.items():
        env = {
            **os.environ,
            "ARENA_ADDRESS": bots.address,
            "ARENA_TOKEN": bots.token(name),
            "ARENA_BOT_NAME": name,
        }
        proc = subprocess.Popen(
            [sys.executable, str(SAMPLE_BOTS / script)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        bots.procs.append(proc)  # killed with the others at the end
        procs.append(proc)
    names = ("random", "low", "smart", "low2")
    assert referee[0].wait_for_bots(names, BOT_READY_MS), referee[0].idle()
    spec = TableSpec("sdk", Rules(), 21, names, "21", hands=None, clocks=CALM)
    record = referee[0].submit(spec).result(RESULT_S)
    assert record.termination is Termination.NORMAL
    assert record.faults == ()
    assert max(record.totals) >= 100
    referee[0].stop(0, finished=True)  # no more games: the SDK's bots exit cleanly
    for proc in procs:
        _, err = proc.communicate(timeout=RESULT_S)
        assert proc.returncode == 0, err
