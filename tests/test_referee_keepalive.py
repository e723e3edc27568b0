"""A bot that freezes (a stopped process, a machine gone) is noticed by the referee's keepalive
pings within ``RefereeConfig.keepalive_ms`` and its half again, not gRPC's default ping wait."""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path

import pytest
from conftest import BOT_READY_MS, BotProcesses

from arena.referee import RefereeConfig, RefereeThread, TokenAccounts
from arena.rules import Rules
from arena.table import Clocks, FaultKind, FaultPolicy, TableSpec, Termination

KEEPALIVE_MS = 1000
NOTICED_S = 30.0
"""Far past the keepalive's 1.5 s, far short of gRPC's own ping wait (60 s), which the referee
left in force: a frozen bot held its table for the keepalive time and a minute more."""


def test_a_frozen_bot_is_noticed_by_the_keepalive(tmp_path: Path) -> None:
    accounts = TokenAccounts()
    referee = RefereeThread(RefereeConfig(keepalive_ms=KEEPALIVE_MS), accounts)
    referee.start("127.0.0.1:0")
    bots = BotProcesses(referee, accounts, tmp_path)
    frozen = None
    try:
        for name in ("k1", "k2", "k3"):
            bots.start(name)
        bots.start("icy", "silent")
        frozen = bots.procs[-1]
        assert referee.wait_for_bots(["k1", "k2", "k3", "icy"], BOT_READY_MS)
        # Clocks that never run out: only the lost connection can end the seat's turn.
        endless = Clocks(move_ms=600_000, bank_ms=0, handshake_ms=30_000)
        spec = TableSpec(
            "frozen", Rules(), 5, ("k1", "k2", "icy", "k3"), "5", clocks=endless,
            faults=FaultPolicy(grace_ms=0),
        )  # fmt: skip
        future = referee.submit(spec)
        seated_by = time.monotonic() + NOTICED_S
        while "icy" in referee.call(lambda r: r.idle()):  # until the table has taken it
            assert time.monotonic() < seated_by, "the table never seated the bot"
            time.sleep(0.02)
        os.kill(frozen.pid, signal.SIGSTOP)
        try:
            record = future.result(NOTICED_S)
        except FutureTimeout:
            pytest.fail(f"a frozen bot still held its table {NOTICED_S:.0f} s on")
        assert record.seat_status[2] is Termination.DISCONNECT
        assert {f.kind for f in record.faults_of(2)} == {FaultKind.DISCONNECT}
        assert all(h.complete for h in record.hands)
    finally:
        if frozen is not None and frozen.poll() is None:
            os.kill(frozen.pid, signal.SIGCONT)
        bots.kill_all()
        referee.stop(0)
