"""Soak audit: what a long batch or a long-running referee keeps must not grow with the games.

Counts, not timings: objects shared or not, descriptors, threads and tasks before and after a
number of games, with a slack far below the number of games (a leak of one thing per game shows).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from arena.config import build_config
from arena.director.schedule import schedule
from arena.referee import RefereeConfig, RefereeThread, TokenAccounts
from arena.rules import Rules
from arena.table import Clocks, FaultPolicy, TableSpec, Termination

RAW_BOT = Path(__file__).parent / "bots" / "raw_bot.py"
READY_MS = 30_000
WARM_UP = 4
"""Games before the first count: gRPC and the loop make their threads and caches lazily."""
GAMES = 20
SLACK = 3
"""What may differ between two counts anyway: a crashed session whose stream is still being
closed, a worker thread of a pool not yet idle."""


def test_a_batch_schedule_shares_one_rules_per_pass_direction(tmp_path: Path) -> None:
    # Each board had a Rules of its own, held by the schedule for the whole run; playing the
    # board filled its cached properties (about 1.5 KB), so a batch grew with every board.
    config = build_config(
        bots=["a=true", "b=true", "c=true", "d=true"], boards=40, db=tmp_path / "s.db"
    )
    tables = schedule(config)
    cycle = config.rules.cycle
    assert len({id(t.spec.rules) for t in tables}) == len(cycle)
    for t in tables:
        assert t.spec.rules.cycle == (cycle[t.board % len(cycle)],)


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _start(port: int, name: str, token: str, mode: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            str(RAW_BOT),
            f"--address=127.0.0.1:{port}",
            f"--token={token}",
            f"--name={name}",
            f"--mode={mode}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _tasks(referee: RefereeThread) -> int:
    return referee.call(lambda _: len(asyncio.all_tasks()))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc")
def test_a_referee_keeps_no_descriptor_thread_or_task_per_game_with_a_crashing_bot() -> None:
    names = ["a", "b", "c", "crash"]
    accounts, tokens = TokenAccounts.issue_for(names)
    referee = RefereeThread(RefereeConfig(), accounts)
    port = referee.start("127.0.0.1:0")
    procs = [_start(port, n, tokens[n], "good") for n in names[:3]]
    crash = _start(port, "crash", tokens["crash"], "crash")
    try:
        counts: list[tuple[int, int, int, int]] = []
        for game in range(WARM_UP + GAMES):
            assert referee.wait_for_bots(names, READY_MS), referee.idle()
            if game in (WARM_UP, WARM_UP + GAMES - 1):
                sessions = referee.call(lambda r: len(r.sessions()))
                counts.append((_fds(), threading.active_count(), _tasks(referee), sessions))
            spec = TableSpec(
                f"t{game}",
                Rules(),
                seed=game,
                seats=tuple(names),
                board=str(game),
                clocks=Clocks(move_ms=5000, bank_ms=5000, handshake_ms=READY_MS),
                faults=FaultPolicy(grace_ms=0),
            )
            record = referee.submit(spec).result(timeout=60)
            assert record.seat_status[3] is Termination.DISCONNECT
            # The crashing bot died in the game; a new process of it comes for the next. Waited
            # for: its stream may end (the referee records the disconnect) a moment before the
            # process has exited, and a poll() then found it alive and started none.
            crash.wait(60)
            crash = _start(port, "crash", tokens["crash"], "crash")
        (fds0, threads0, tasks0, sessions0), (fds1, threads1, tasks1, sessions1) = counts
        assert sessions0 == sessions1 == len(names)
        assert fds1 <= fds0 + SLACK, (fds0, fds1)
        assert threads1 <= threads0 + SLACK, (threads0, threads1)
        assert tasks1 <= tasks0 + SLACK, (tasks0, tasks1)
    finally:
        referee.stop(0, finished=True)
        for p in [*procs, crash]:
            if p.poll() is None:
                p.kill()
            p.wait()
