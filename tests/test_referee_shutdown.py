"""Stopping a referee: games in play finish within the grace or are recorded INTERRUPTED, and
every bot's stream closes with a status."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import BOT_READY_MS, RAW_BOT, BotProcesses

from arena.referee import RefereeThread, TokenAccounts
from arena.rules import Rules
from arena.table import Clocks, GameRecord, TableSpec, Termination

REFEREE_MAIN = Path(__file__).parent / "bots" / "referee_main.py"
REFEREE_LOOP = Path(__file__).parent / "bots" / "referee_loop.py"
RESULT_S = 120.0
CALM = Clocks(move_ms=5000, bank_ms=10_000, handshake_ms=30_000)
ENDLESS = Rules(target=1_000_000)
"""A game nobody finishes during a test: it can only end by being stopped."""


def _line(proc: subprocess.Popen[str], prefix: str) -> str:
    """Read the process's stdout up to a line starting with ``prefix``; that line."""
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith(prefix):
            return line.strip()
    raise AssertionError(f"the process ended without printing {prefix!r}")


def test_sigterm_interrupts_a_game_records_it_and_closes_every_stream(tmp_path: Path) -> None:
    names = ("r1", "r2", "r3", "r4")
    tokens = {f"token-{n}": n for n in names}
    spec = TableSpec("endless", ENDLESS, 9, names, "9", hands=None, clocks=CALM)
    (tmp_path / "tokens.json").write_text(json.dumps(tokens))
    (tmp_path / "spec.json").write_text(json.dumps(spec.to_dict()))
    out = tmp_path / "record.json"
    procs: list[subprocess.Popen[str]] = []
    try:
        referee = subprocess.Popen(
            [
                sys.executable,
                str(REFEREE_MAIN),
                str(tmp_path / "tokens.json"),
                str(tmp_path / "spec.json"),
                str(out),
                "0",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        procs.append(referee)
        port = int(_line(referee, "PORT").split()[1])
        for n in names:
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        str(RAW_BOT),
                        f"--address=127.0.0.1:{port}",
                        f"--token=token-{n}",
                        f"--name={n}",
                    ],
                    stdout=subprocess.PIPE,
                    text=True,
                )
            )
        _line(referee, "PLAYING")
        referee.send_signal(signal.SIGTERM)
        assert referee.wait(RESULT_S) == 0
        record = GameRecord.from_dict(json.loads(out.read_text()))
        assert record.termination is Termination.INTERRUPTED
        assert record.reason.startswith("interrupted (the referee is stopping)")
        assert record.hands and not record.hands[-1].complete
        for bot in procs[1:]:
            printed, _ = bot.communicate(timeout=RESULT_S)
            assert "SHUTDOWN SHUTDOWN_REASON_SERVER_SHUTDOWN" in printed
            assert "STATUS OK" in printed
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.communicate()


def test_stopping_with_a_grace_lets_the_game_in_play_finish(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses
) -> None:
    names = ("w1", "w2", "w3", "w4")
    for n in names:
        bots.start(n, "slow", "--delay-ms=10")
    assert referee[0].wait_for_bots(names, BOT_READY_MS)
    future = referee[0].submit(TableSpec("graced", Rules(), 4, names, "4", clocks=CALM))
    while referee[0].idle():  # the table has taken its bots: the game is under way
        time.sleep(0.01)
    referee[0].stop(grace_ms=int(RESULT_S * 1000))
    record = future.result(RESULT_S)
    assert record.termination is Termination.NORMAL
    assert len(record.hands) == 1 and record.hands[0].complete


def test_a_later_stop_cuts_a_stop_under_way_short_and_says_whether_it_stopped(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses
) -> None:
    # stop(grace, timeout_s) returned None with the referee still stopping, and a later
    # stop(0) waited out the whole of the first one's grace (ten minutes here) all the same.
    names = ("h1", "h2", "h3", "h4")
    procs = [bots.start(n, "slow", "--delay-ms=10") for n in names]
    bots.ready(*names)
    future = referee[0].submit(
        TableSpec("hurried", ENDLESS, 5, names, "5", hands=None, clocks=CALM)
    )
    while referee[0].idle():  # the table has taken its bots: the game is under way
        time.sleep(0.01)
    assert referee[0].stop(grace_ms=600_000, timeout_s=0.5) is False
    assert not future.done()
    started = time.monotonic()
    assert referee[0].stop(0, finished=True) is True
    assert time.monotonic() - started < 60.0  # not the first stop's ten minutes
    record = future.result(RESULT_S)
    assert record.termination is Termination.INTERRUPTED
    for proc in procs:  # the later stop's finished=True is what the bots are told
        assert "SHUTDOWN SHUTDOWN_REASON_NO_MORE_GAMES" in bots.output(proc)
    assert referee[0].stop(0) is True  # stopped: nothing left to wait for


def test_a_bot_that_never_closes_its_side_still_gets_its_shutdown_and_an_ok_status(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses
) -> None:
    # The referee waits a moment for a bot to close its side after the Shutdown, then closes
    # the stream itself; gRPC's own stop must not cancel the stream before that (UNAVAILABLE).
    names = ("k1", "k2", "k3")
    procs = [bots.start(n, "good", "--keep-open") for n in names]
    bots.ready(*names)
    referee[0].stop(0)
    for proc in procs:
        printed = bots.output(proc)
        assert "SHUTDOWN SHUTDOWN_REASON_SERVER_SHUTDOWN" in printed
        assert "STATUS OK" in printed, printed


@pytest.mark.parametrize("mode", ["sleep", "loop"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_serve_forever_whatever_its_main_awaits(
    tmp_path: Path, mode: str, sig: signal.Signals
) -> None:
    # serve_forever waited for main without end: a main asleep kept the process up through every
    # signal, and a main looping on play_table got "interrupted before it started" records at
    # once, by the hundred thousand, never letting the loop run (only SIGKILL ended it).
    records = tmp_path / "records.txt"
    host = subprocess.Popen(
        [sys.executable, str(REFEREE_LOOP), mode, str(records)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _line(host, "STARTED")
        host.send_signal(sig)
        _, errors = host.communicate(timeout=RESULT_S)
    finally:
        if host.poll() is None:
            host.kill()
            host.communicate()
    assert host.returncode == 0, errors
    assert "Traceback" not in errors, errors
    if mode == "loop":
        # The table waiting for its bots when the signal came, and at most the one main asked
        # for as the referee stopped; then main was cancelled.
        reasons = records.read_text().splitlines()
        assert 1 <= len(reasons) <= 2, reasons[:5]
        assert all(r.startswith("interrupted before it started") for r in reasons), reasons
