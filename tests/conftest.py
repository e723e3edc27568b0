"""Shared fixtures: a running referee on 127.0.0.1:0 and bot processes that are always killed.

The referee runs in a :class:`~arena.referee.RefereeThread`, so tests are plain synchronous
functions that submit tables and wait for records; the bots are real processes
(``tests/bots/raw_bot.py``) speaking raw gRPC.
"""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb
from arena.referee import RefereeConfig, RefereeThread, TokenAccounts
from arena.referee.loop import run as run_loop

if TYPE_CHECKING:
    from test_client_e2e import Procs

BOTS_DIR = Path(__file__).parent / "bots"
RAW_BOT = BOTS_DIR / "raw_bot.py"
BOT_READY_MS = 30_000
"""How long a test waits for freshly started bot processes to say Hello (a slow machine)."""
EXIT_WAIT_S = 30.0

# A suite started in the background (`command &` in a script, `nohup`) inherits SIGINT or SIGHUP
# ignored, and so would every command a test starts (arena keeps an inherited ignore, as a
# background job should): the tests that stop a command with either saw it run on. Each test
# process (xdist's workers load this file too) takes them back as a terminal gives them.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)

# Property tests explore new random examples on every local run; under CI they draw the same
# examples every time, so that a green main stays green (a failure found locally is replayed
# from .hypothesis/ and should become an explicit @example).
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI") == "true":
    settings.load_profile("ci")


def run_at_once(
    starters: Iterable[Callable[[], subprocess.Popen[str]]], timeout: float
) -> list[subprocess.CompletedProcess[str]]:
    """Start a process with each of ``starters``, all before waiting for any (for commands that
    are refused or only read, whose time is mostly the start); their outcomes in order. Every
    process started is killed if a start or a wait fails."""
    procs: list[subprocess.Popen[str]] = []
    try:
        for start in starters:
            procs.append(start())
        done = []
        for proc in procs:
            out, err = proc.communicate(timeout=timeout)
            done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
        return done
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()


def on_referee_loop(body: Callable[[], Awaitable[None]]) -> None:
    """Run ``body`` to its end on the event loop the referee runs on (uvloop where installed)."""

    async def main() -> None:
        await body()

    run_loop(main())


class BotProcesses:
    """Starts raw-gRPC bot processes against one referee and kills every one of them at the end."""

    def __init__(self, referee: RefereeThread, accounts: TokenAccounts, tmp: Path) -> None:
        self.referee = referee
        self.accounts = accounts
        self.tmp = tmp
        self.address = f"127.0.0.1:{referee.port}"
        self.procs: list[subprocess.Popen[str]] = []
        self.tokens: dict[str, str] = {}

    def token(self, name: str) -> str:
        """The token of bot ``name`` (issued on first use)."""
        if name not in self.tokens:
            self.tokens[name] = self.accounts.issue(name)
        return self.tokens[name]

    def start(
        self, name: str, mode: str = "good", *extra: str, token: str | None = None
    ) -> subprocess.Popen[str]:
        """Start one bot process (it connects and waits in the lobby)."""
        tok = self.token(name) if token is None else token
        proc = subprocess.Popen(
            [
                sys.executable,
                str(RAW_BOT),
                f"--address={self.address}",
                f"--token={tok}",
                f"--name={name}",
                f"--mode={mode}",
                *extra,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.procs.append(proc)
        return proc

    def ready(self, *names: str) -> None:
        """Wait until these bots (one session per occurrence) wait in the lobby."""
        assert self.referee.wait_for_bots(list(names), BOT_READY_MS), (
            f"bots {names} did not connect; idle: {self.referee.idle()}"
        )

    def output(self, proc: subprocess.Popen[str]) -> str:
        """Everything a bot process printed, once it has exited."""
        out, _ = proc.communicate(timeout=EXIT_WAIT_S)
        return out

    def kill_all(self) -> None:
        """Kill every process started (idempotent)."""
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()
        self.procs.clear()


@pytest.fixture(autouse=True)
def _check_bot_logs_kept_here(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed check keeps the bot's log in the temp folder (the CLI prints its path): in the
    check-bot tests that is the test's own folder, in this process and in the `arena` processes
    it starts, so that each suite run does not leave a dozen logs in /tmp."""
    if not any(part in request.module.__name__ for part in ("checkbot", "js_bot")):
        return
    folder = request.getfixturevalue("tmp_path")
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.setenv("TMPDIR", str(folder))


@pytest.fixture
def referee() -> Iterator[tuple[RefereeThread, TokenAccounts]]:
    """A referee on 127.0.0.1 (a free port), stopped at the end."""
    accounts = TokenAccounts()
    thread = RefereeThread(RefereeConfig(), accounts)
    thread.start("127.0.0.1:0")
    try:
        yield thread, accounts
    finally:
        thread.stop(0)


@pytest.fixture
def bots(referee: tuple[RefereeThread, TokenAccounts], tmp_path: Path) -> Iterator[BotProcesses]:
    """A factory of bot processes for the ``referee`` fixture; all are killed at the end."""
    procs = BotProcesses(referee[0], referee[1], tmp_path)
    try:
        yield procs
    finally:
        procs.kill_all()


def recorded_so_far(log: Path) -> list[bot_pb.PlayResponse]:
    """What a bot run with ``--record`` (tests/bots/raw_bot.py) has written down so far, in
    order: whole lines only (what follows the last newline is still being written)."""
    lines = (log.read_text() if log.exists() else "").split("\n")[:-1]
    return [bot_pb.PlayResponse.FromString(base64.b64decode(line)) for line in lines]


def run_script(root: Path, script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``root/script`` (a generator under scripts/) with this Python in ``root``; never
    raises for its exit code."""
    return subprocess.run(
        [sys.executable, str(root / script), *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def recorded_messages(log: Path, timeout_s: float) -> list[bot_pb.PlayResponse]:
    """What a bot run with ``--record`` (tests/bots/raw_bot.py) received, in order, up to the
    end of its game.

    The referee's record is back as soon as the game's last message is sent, so the bot may
    still be writing that message down: the log is read again until it holds the end of the
    game, and a line without its newline yet (half written) is left for the next read.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        messages = recorded_so_far(log)
        if any(e.HasField("game_ended") for m in messages for e in m.events):
            return messages
        assert time.monotonic() < deadline, "the bot never got the end of its game"
        time.sleep(0.01)


@pytest.fixture
def procs(tmp_path: Path) -> Iterator[Procs]:
    """Bot processes (test_client_e2e's ``Procs``), always stopped at the end of the test."""
    from test_client_e2e import Procs  # here: that module imports this one

    p = Procs(tmp_path)
    try:
        yield p
    finally:
        p.stop_all()
