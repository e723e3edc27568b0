"""Shared helpers for the server tests (no tests here): real game records made with the engine."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import signal
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from conftest import run_at_once

from arena.engine import Hand
from arena.rules import Rules
from arena.server.competition import SessionInfo
from arena.table import (
    Decision,
    GameRecord,
    HandRecord,
    TableSpec,
    Termination,
    TrickRecord,
)


def play_record(table_id: str, seats: tuple[str, ...], seed: int, board: str = "") -> GameRecord:
    """One hand played by the engine (pass the highest cards, play the lowest legal card)."""
    rules = Rules(players=len(seats))
    spec = TableSpec(
        table_id=table_id, rules=rules, seed=seed, seats=seats, board=board or str(seed)
    )
    hand = Hand.deal(rules, seed, hand_number=0, dealer=0)
    dealt = tuple(tuple(str(c) for c in hand.dealt(s)) for s in range(len(seats)))
    decisions: list[Decision] = []
    for seat in hand.seats_to_pass:
        cards = sorted(hand.hand(seat), key=lambda c: c.index)[-rules.pass_count :]
        hand.pass_cards(seat, cards)
        decisions.append(
            Decision(0, seat, "pass", len(decisions) + 1, tuple(map(str, cards)), 1.0, False)
        )
    passes = tuple(tuple(str(c) for c in (hand.passed(s) or ())) for s in range(len(seats)))
    while not hand.is_over:
        mover = hand.to_move
        assert mover is not None
        legal = hand.legal_plays()
        card = min(legal, key=lambda c: c.index)
        decisions.append(
            Decision(0, mover, "play", len(decisions) + 1, (str(card),), 1.0, len(legal) == 1)
        )
        hand.play(card)
    result = hand.result()
    tricks = tuple(
        TrickRecord(t.leader, tuple(str(c) for c in t.cards), t.winner or 0) for t in hand.tricks
    )
    totals = result.points
    placings = tuple(1 + sum(1 for o in totals if o < t) for t in totals)
    now = time.time()
    return GameRecord(
        spec=spec,
        hands=(
            HandRecord(
                number=0,
                dealer=0,
                pass_direction=hand.pass_direction.value,
                dealt=dealt,
                passes=passes,
                tricks=tricks,
                points=totals,
                moon=result.moon,
                sun=result.sun,
            ),
        ),
        decisions=tuple(decisions),
        faults=(),
        totals=totals,
        placings=placings,
        termination=Termination.NORMAL,
        seat_status=(Termination.NORMAL,) * len(seats),
        reason="played to the end",
        started_at=now - 1,
        finished_at=now,
    )


class EngineHost:
    """A table host that plays every table in-process with the engine, for testing the
    competition's own logic (matchmaking, ledger, API) apart from the network; the end-to-end
    tests use the real referee instead."""

    def __init__(self, sessions: dict[str, int]) -> None:
        self.connected = dict(sessions)
        self.busy: dict[str, int] = {}
        self.played: list[TableSpec] = []
        self.kicked: list[str] = []
        self.gate: asyncio.Event | None = None
        self.length: Callable[[TableSpec], float] | None = None
        """How long a table takes, in seconds (none: one step of the loop)."""
        self.on_change: Callable[[], None] | None = None
        """Called as a table gives its sessions back, as the referee's lobby tells the server
        (before the game's record is back)."""
        self.tokens: dict[str, bytes] = {}
        """The digest of the token each bot's sessions connected with (none: no tokens)."""

    def idle(self) -> dict[str, int]:
        """Sessions not at a table, per bot."""
        return {
            bot: count - self.busy.get(bot, 0)
            for bot, count in self.connected.items()
            if count > self.busy.get(bot, 0)
        }

    def sessions(self) -> list[SessionInfo]:
        """One SessionInfo per connected session."""
        out = []
        for bot, count in sorted(self.connected.items()):
            playing = self.busy.get(bot, 0)
            for i in range(count):
                out.append(SessionInfo(f"{bot}#{i}", bot, "some table" if i < playing else None))
        return out

    async def play_table(self, spec: TableSpec) -> GameRecord:
        """Take a session per seat (in the first step, as the referee does), play with the
        engine, give them back."""
        for bot in spec.seats:
            self.busy[bot] = self.busy.get(bot, 0) + 1
            assert self.busy[bot] <= self.connected.get(bot, 0), f"{bot} over-booked"
        try:
            if self.gate is not None:
                await self.gate.wait()
            elif self.length is not None:
                await asyncio.sleep(self.length(spec))
            else:
                await asyncio.sleep(0)
            self.played.append(spec)
            record = play_record(spec.table_id, spec.seats, spec.seed, spec.board)
            return dataclasses.replace(record, spec=spec)
        finally:
            for bot in spec.seats:
                self.busy[bot] -= 1
            if self.on_change is not None:
                self.on_change()

    def kick(self, session_id: str, reason: str, *, for_good: bool = False) -> bool:
        """Drop one session."""
        bot, _, _ = session_id.partition("#")
        if self.connected.get(bot, 0) == 0:
            return False
        self.connected[bot] -= 1
        self.kicked.append(session_id)
        return True

    def kick_bot(self, bot: str, reason: str) -> int:
        """Drop every session of a bot."""
        count = self.connected.pop(bot, 0)
        self.kicked += [f"{bot}#{i}" for i in range(count)]
        return count

    def replaced(self, tokens: Mapping[str, bytes]) -> Sequence[str]:
        """The idle sessions of the bots in :attr:`tokens` connected with another token than
        theirs in ``tokens`` (as the referee's sessions_on_other_tokens)."""
        return [
            info.session_id
            for info in self.sessions()
            if info.table_id is None
            and info.bot in self.tokens
            and tokens.get(info.bot, self.tokens[info.bot]) != self.tokens[info.bot]
        ]

    def dismiss_idle(self, message: str) -> int:
        """Send every session home (this host has no game running between calls)."""
        count = sum(self.connected.values())
        self.connected.clear()
        return count


REPO = Path(__file__).resolve().parent.parent
BOTS = Path(__file__).resolve().parent / "test_server_bots.py"
START_TIMEOUT_S = 30.0


ARENA = (
    [str(Path(sys.executable).with_name("arena"))]
    if Path(sys.executable).with_name("arena").exists()
    else [sys.executable, "-m", "arena.cli"]
)
"""The `arena` command, as installed."""
PORTS = ("--port", "0", "--web-port", "0")
"""Both of `arena serve`'s ports ephemeral."""


def serve_piped(db: Path, *extra: str) -> subprocess.Popen[str]:
    """`arena serve --db DB` on ephemeral ports (plus ``extra`` flags), its standard output
    and error piped to the test."""
    return subprocess.Popen(
        [*ARENA, "serve", "--db", str(db), *PORTS, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )


class ServerProcess:
    """``arena serve`` as a real process on free loopback ports, with bot processes beside it."""

    def __init__(self, db: Path, config: str = "", log: Path | None = None) -> None:
        self.db = db
        self.config_path = db.with_suffix(".toml")
        self.config_path.write_text(config)
        self.log = log or db.with_suffix(".log")
        self.proc: subprocess.Popen[str] | None = None
        self.bots: list[subprocess.Popen[bytes]] = []
        self.bots_port = 0
        self.web_port = 0
        self.scheme = "http"
        self.host = "127.0.0.1"
        """The address :meth:`get` and the bots reach the server at (``[::1]`` for IPv6)."""
        self.env: dict[str, str] = {}
        """Extra environment for the bots (e.g. ARENA_TLS_CA)."""
        self.tls_context: ssl.SSLContext | None = None
        """How :meth:`get` trusts an https server."""
        self.banner = ""
        """The first line the server printed (what it serves, and where)."""
        self.errors = ""
        """What the server wrote on stderr, once it has been stopped."""

    @staticmethod
    def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run a server command (``bots add ...``) to completion (``timeout``: against a hang)."""
        return subprocess.run(
            [sys.executable, "-m", "arena.server.cli", *args],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=timeout,
            check=False,
        )

    @staticmethod
    def clis(
        *commands: tuple[str, ...], timeout: float = 60
    ) -> list[subprocess.CompletedProcess[str]]:
        """:meth:`cli` for each of ``commands``, all started at once (for commands that are
        refused, or only read, whose time is mostly the start); their outcomes in order."""

        def starter(args: tuple[str, ...]) -> Callable[[], subprocess.Popen[str]]:
            return lambda: subprocess.Popen(
                [sys.executable, "-m", "arena.server.cli", *args],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                cwd=REPO,
            )

        return run_at_once([starter(args) for args in commands], timeout)

    @staticmethod
    def cli_here(*args: str) -> str:
        """Run a server command that must succeed (``bots add ...``) in this process; its
        standard output.

        For setting up a test: the same command as :meth:`cli` runs, on the same SQLite file,
        without starting a Python that imports the rating maths each time (seconds per token on
        a loaded machine). What such a command says when it fails, as a process, is tested with
        :meth:`cli` (test_server_e2e, test_cli_tokens).
        """
        from typer.testing import CliRunner

        from arena.cli import app

        done = CliRunner().invoke(app, list(args))
        assert done.exit_code == 0 and done.exception is None, (done.stderr, done.exception)
        return done.stdout

    def add_bot(self, name: str) -> str:
        """A new bot account; its token."""
        return self.cli_here("bots", "add", name, "--db", str(self.db)).strip()

    def play_a_game(self) -> None:
        """Start the server, play one game with four low-card bots, and stop both (a competition
        that has started a table keeps its settings)."""
        tokens = {name: self.add_bot(name) for name in ("p1", "p2", "p3", "p4")}
        self.start()
        for name, token in tokens.items():
            self.bot(name, token, sample="lowcard")
        self.wait_for(lambda: int(self.get("/api/health")["games"]) >= 1)
        self.stop_bots()
        assert self.terminate() == 0, self.errors

    def admin_token(self) -> str:
        """A new admin token for this server's database."""
        return self.cli_here("admin", "token", "--db", str(self.db)).strip()

    def start(
        self,
        *extra: str,
        same_ports: bool = False,
        own_group: bool = False,
        ignoring: Sequence[signal.Signals] = (),
    ) -> None:
        """Start the server (``extra``: more ``serve`` flags) and wait for its ports.

        ``same_ports``: on the ports it had before (bots and an open page keep their address;
        free ones the first time). ``own_group``: in a process group of its own, as a
        terminal's foreground job is. ``ignoring``: signals it inherits ignored (``nohup``
        ignores SIGHUP, a script's ``&`` SIGINT).
        """

        def ignore() -> None:
            for sig in ignoring:
                signal.signal(sig, signal.SIG_IGN)

        ports = (self.bots_port, self.web_port) if same_ports else (0, 0)
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "arena.server.cli",
                "serve",
                "--db",
                str(self.db),
                "--port",
                str(ports[0]),
                "--web-port",
                str(ports[1]),
                "--config",
                str(self.config_path),
                "--log",
                str(self.log),
                *extra,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
            start_new_session=own_group,
            preexec_fn=ignore if ignoring else None,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        self.banner = line
        match = re.search(
            r"connect to ([\d.]+|\[[\w:]+\]):(\d+); "
            r"leaderboard at https?://([\d.]+|\[[\w:]+\]):(\d+)/",
            line,
        )
        if match is None:
            self.proc.kill()
            _, err = self.proc.communicate(timeout=START_TIMEOUT_S)
            raise AssertionError(f"server did not start: {line!r} {err}")
        self.bots_port, self.web_port = int(match[2]), int(match[4])
        self.scheme = "https" if "--tls-cert" in extra else "http"

    @property
    def url(self) -> str:
        """The leaderboard's address."""
        return f"{self.scheme}://{self.host}:{self.web_port}"

    def bot(
        self, name: str, token: str, *args: str, sample: str | None = None
    ) -> subprocess.Popen[bytes]:
        """Start a bot process: a sample bot (``sample="lowcard"``) or one of test_server_bots."""
        env = dict(
            os.environ,
            ARENA_ADDRESS=f"{self.host}:{self.bots_port}",
            ARENA_TOKEN=token,
            ARENA_BOT_NAME=name,
            **self.env,
        )
        command = (
            [sys.executable, str(REPO / "sample_bots" / f"{sample}.py")]
            if sample is not None
            else [sys.executable, str(BOTS), *args]
        )
        proc = subprocess.Popen(
            command, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        self.bots.append(proc)
        return proc

    def get(self, path: str) -> Any:
        """GET a JSON resource of the leaderboard."""
        with urllib.request.urlopen(
            self.url + path, timeout=30, context=self.tls_context
        ) as response:
            return json.loads(response.read())

    def wait_for(self, what: Callable[[], bool], timeout_s: float = 120.0) -> None:
        """Poll until ``what()`` holds (a deadline only against a hang; never a measured time)."""
        deadline = time.monotonic() + timeout_s
        while not what():
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(
                    f"the server exited: {self.proc.stderr.read() if self.proc.stderr else ''}"
                )
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            time.sleep(0.1)

    def stop_bots(self) -> None:
        """Kill every bot process."""
        for proc in self.bots:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=30)
        self.bots.clear()

    def terminate(self) -> int:
        """SIGTERM the server and wait for it; its exit code."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=120)
        self.errors = self.proc.communicate()[1]
        return code

    def kill(self) -> None:
        """SIGKILL the server (as a crash would stop it)."""
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(timeout=30)
        self.proc.communicate()

    def close(self) -> None:
        """Stop everything started here."""
        self.stop_bots()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        if self.proc is not None:
            self.proc.communicate()
