"""The Node.js sample bot: whole games through the real referee beside Python bots, and a clean
`arena check-bot` run.

It needs Node.js, npm and its dependencies (`npm ci` in sample_bots/js, which scripts/test.sh
runs). Without them these tests are skipped with a message saying what to install, except in CI
(CI=true), where a missing Node.js is a failure: CI must prove the promise of bots in any language.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from arena.checkbot.run import run_check
from arena.referee import Referee
from arena.rules import Rules
from arena.table import GameRecord, TableSpec, Termination

ROOT = Path(__file__).resolve().parent.parent
JS_DIR = ROOT / "sample_bots" / "js"
JS_BOT = JS_DIR / "bot.js"
LOBBY_WAIT_MS = 30_000
SEED = 7
EXIT_WAIT_S = 10.0
RUN_TIMEOUT_S = 120.0
PYTHON_BOTS = {
    "lowcard": ROOT / "sample_bots" / "lowcard.py",
    "heuristic": ROOT / "sample_bots" / "heuristic.py",
    "random": ROOT / "sample_bots" / "random_bot.py",
}


def require_node() -> str:
    """The node executable, or skip (fail under CI=true) saying what to install."""
    node, npm = shutil.which("node"), shutil.which("npm")
    reason = ""
    if node is None or npm is None:
        reason = "Node.js and npm are needed: install Node.js 18 or newer (with npm)"
    elif not (JS_DIR / "node_modules" / "@grpc" / "grpc-js").is_dir():
        reason = "the JS bot's dependencies are missing: run `npm ci` in sample_bots/js"
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason} (CI=true: the Node.js bot must be tested)")
        pytest.skip(reason)
    assert node is not None
    return node


async def play_tables(node: str, log_dir: Path) -> tuple[list[GameRecord], list[int | None]]:
    """Two full games, the JS bot in two different seats; the records and the bots' exit codes."""
    commands = {"js": [node, str(JS_BOT)]} | {
        name: [sys.executable, str(path)] for name, path in PYTHON_BOTS.items()
    }
    tokens = {name: secrets.token_hex(16) for name in commands}
    referee = Referee(accounts={token: name for name, token in tokens.items()})
    port = await referee.start("127.0.0.1:0")
    processes = []
    for name, command in commands.items():
        env = {
            **os.environ,
            "ARENA_ADDRESS": f"127.0.0.1:{port}",
            "ARENA_TOKEN": tokens[name],
            "ARENA_BOT_NAME": name,
        }
        with (log_dir / f"{name}.log").open("wb") as log:
            processes.append(
                await asyncio.create_subprocess_exec(
                    *command, env=env, stdout=log, stderr=asyncio.subprocess.STDOUT
                )
            )
    try:
        assert await referee.wait_for_bots(list(commands), LOBBY_WAIT_MS), "bots did not connect"
        records = []
        rotations = (
            ("js", "lowcard", "heuristic", "random"),
            ("heuristic", "random", "js", "lowcard"),
        )
        for i, seats in enumerate(rotations):
            spec = TableSpec(
                table_id=f"js-{i}",
                rules=Rules(),
                seed=SEED,
                seats=seats,
                board=str(SEED),
                hands=None,
            )
            records.append(await referee.play_table(spec))
    finally:
        # As the arena director does: SIGTERM each bot, then stop the referee.
        codes: list[int | None] = []
        for process in processes:
            if process.returncode is None:
                process.terminate()
            try:
                async with asyncio.timeout(EXIT_WAIT_S):
                    codes.append(await process.wait())
            except TimeoutError:
                process.kill()
                await process.wait()
                codes.append(None)
        await referee.stop()
    return records, codes


def test_js_bot_plays_whole_games_beside_python_bots(tmp_path: Path) -> None:
    node = require_node()
    records, codes = asyncio.run(play_tables(node, tmp_path))
    for record in records:
        js = record.spec.seats.index("js")
        assert record.termination is Termination.NORMAL, record.reason
        assert record.seat_status == (Termination.NORMAL,) * 4, record.reason
        assert record.faults == (), record.faults
        assert max(record.totals) >= record.spec.rules.target  # a whole game, not one hand
        asked = [d for d in record.decisions if d.seat == js and not d.forced]
        assert len(asked) >= len(record.hands) * 5  # it decided, hand after hand
        assert all(d.fault is None for d in asked)
    js_log = (tmp_path / "js.log").read_text()
    assert "FAULT" not in js_log
    assert "connected to 127.0.0.1:" in js_log
    # On SIGTERM the JS bot says Goodbye and exits with code 0.
    assert codes[0] == 0, (codes, js_log)


def test_js_bot_passes_check_bot(tmp_path: Path) -> None:
    node = require_node()
    report = run_check([node, str(JS_BOT)], log=tmp_path / "log")
    assert report.passed, "\n".join(r.line() for r in report.failures)
    assert len(report.results) == 15


def test_js_bot_runs_under_arena_run_beside_python_bots(tmp_path: Path) -> None:
    node = require_node()
    arena = Path(sys.executable).with_name("arena")
    python = sys.executable
    bots = [f"js={node} {JS_BOT}"] + [
        f"{name}={python} {path}" for name, path in PYTHON_BOTS.items()
    ]
    command = [str(arena), "run", "--boards", "1", "--db", str(tmp_path / "run.db")]
    for bot in bots:
        command += ["--bot", bot]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 of 4 games" in done.stdout, done.stdout
    js_log = (tmp_path / "run-out" / "logs" / "js.log").read_text()
    assert "connected to 127.0.0.1:" in js_log
    assert "FAULT" not in js_log
