"""Bot processes: started with exec, supervised, restarted when they crash, logged per bot.

Each bot gets a pool of processes, enough for every table that may run at once (a process plays
one table at a time). A process learns where to connect and who it is from its environment:
``ARENA_ADDRESS``, ``ARENA_TOKEN`` (fresh and random for each process of each run, so that a
process of an earlier run can never take a seat) and ``ARENA_BOT_NAME``. Its stdout and stderr go
to one log file per bot, ``logs/NAME.log`` under the output folder, between lines the director
writes when it starts a process, when it sees one exit and when a game of the bot is over. A log
that refuses a write (a full disk) stops the run (:class:`LogWriteError`).

The referee asks :class:`Accounts` who a token belongs to when a bot says Hello; that is how the
pool knows a process has connected. A process that exits before it connects, at start-up, is bad
input (:class:`BotStartError`); one that dies during the run is restarted, and a bot whose
restarts keep dying before they connect stops the run (:class:`BotCrashLoopError`). A restarted
process gets a new token, so it never takes back a seat of the dead one: the director forfeits
that seat at once instead (:attr:`BotExit.key` says which seats were the dead process's).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
import subprocess
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import trio

from arena.config import (
    ERROR_SCAN_LINES,
    BotSpec,
    bot_environment,
    crlf_note,
    is_error_line,
    shortened,
    start_failure,
)
from arena.errors import ArenaError, ConfigError
from arena.referee.accounts import BotIdentity, token_key
from arena.text import terminal_safe

ORPHAN_GIVE_UP_S = 15
"""Seconds a bot keeps retrying an unreachable referee (it inherits ARENA_GIVE_UP_S)."""

__all__ = [
    "Accounts",
    "BotCrashLoopError",
    "BotExit",
    "BotPool",
    "BotStartError",
    "LogErrors",
    "LogWriteError",
    "cause_line",
    "last_words",
    "log_errors",
    "log_path",
]

TOKEN_BYTES = 24
STDERR_TAIL_BYTES = 1 << 20
"""How much of the end of a bot's log is searched for its last error line: a long line after it
(a debug dump of 20 kB) pushed it out of a window of 4 kB, and a piece of the dump was quoted."""
STDERR_TAIL_LINES = 3
TERMINATE_GRACE_S = 2.0
"""How long a bot has to exit after SIGTERM before it is killed."""
MAX_STRIKES = 4
"""Exits of a bot's processes in a row, with no game of it finished well in between, after which
the bot (and the run) is given up: a bot that dies in every game would only burn the schedule."""
RESTART_BACKOFF_S = (0.1, 0.3, 1.0)


class BotStartError(ConfigError):
    """A bot that cannot start: its command fails, exits at once, or never connects."""


class BotCrashLoopError(ArenaError):
    """A bot that crashed and whose restarts keep dying before they connect."""


class LogWriteError(ArenaError):
    """A bot's log file refused a write (a full disk): the run stops, as when the database
    refuses one. The director says it in the run's words (what is stored, how to resume)."""

    def __init__(self, bot: str, path: Path, error: OSError) -> None:
        self.bot = bot
        self.path = path
        self.error = error
        super().__init__(f"cannot write the log of bot {bot} ({path}): {error.strerror or error}")


@dataclass(frozen=True)
class BotExit:
    """A bot process that exited while the run needed it."""

    bot: str
    """The bot's name."""
    slot: int
    """Which process of the bot's pool (from 0)."""
    pid: int
    """Its process id."""
    exit_code: int
    """Its exit code; negative: killed by that signal."""
    at: float
    """Wall clock when the exit was seen."""
    stderr: str
    """The last lines of the bot's log."""
    said: str = ""
    """What the log tells of the exit, labelled as what it is (see :func:`last_words`)."""
    key: bytes = field(default=b"", repr=False)
    """The digest of the process's token: the referee knows the process's seats by it (the
    token itself is revoked and never kept)."""
    restarting: bool = True
    """Whether a new process takes its place (not after too many exits in a row)."""

    def describe(self) -> str:
        """'bot NAME (process N) exited with code C; its last error: ...' for the run's notes."""
        said = f"; {self.said}" if self.said else ""
        return f"bot {self.bot} (process {self.slot}) exited with {self.how}{said}"

    @property
    def how(self) -> str:
        """How it exited: 'code 3', or 'signal SIGKILL'."""
        return _exit_text(self.exit_code)


RUN_STARTS = "a run starts"
"""The note that opens a run's part of a bot's log (the log is appended to, run after run)."""
_RUN_MARK = f": {RUN_STARTS}\n".encode()
_ERROR_WORD = re.compile(rb"\bERROR\b")
SDK_ANSWERED = (b"choose_play raised", b"choose_pass raised")
"""What the Python SDK logs (at level ERROR) when the bot's code raised and it answered for it."""


@dataclass(frozen=True)
class LogErrors:
    """The error lines of a bot's log in the latest run."""

    errors: int
    """Lines with the word ERROR (any bot's logging, in any language, at that level)."""
    answered: int
    """Of those, the decisions the Python SDK answered because the bot's code raised."""


def log_errors(path: Path) -> LogErrors:
    """Count the error lines of a bot's log since the latest run began (nothing if unreadable).

    One read of the file; a line counts if it holds the word ERROR, as the Python SDK's log
    lines of that level do (README: how another language's bot gets the same count).
    """
    try:
        data = path.read_bytes()
    except OSError:
        return LogErrors(0, 0)
    start = data.rfind(_RUN_MARK)
    part = data[start + len(_RUN_MARK) :] if start >= 0 else data
    errors = answered = 0
    for line in part.splitlines():
        if _ERROR_WORD.search(line):
            errors += 1
            answered += any(m in line for m in SDK_ANSWERED)
    return LogErrors(errors, answered)


def cause_line(log_tail: str) -> tuple[str, bool] | None:
    """The line of a bot's output that best says why it ended: its last error line if there is
    one (an INFO line is no cause of a crash, and Node.js ends a crash with its version), else
    its last line; with whether it is an error line (None if it wrote nothing)."""
    lines = [x.strip() for x in log_tail.splitlines() if x.strip()]
    errors = [x for x in lines if is_error_line(x)]
    if errors:
        return shortened(errors[-1]), True
    return (shortened(lines[-1]), False) if lines else None


def last_words(log_tail: str, processes: int = 1) -> str:
    """What a note of a bot's exit quotes of its log (:func:`cause_line`), the last line said to
    be only that. A log that ``processes`` processes of the bot share is said to be theirs: its
    last error may be another process's, which the SDK survived."""
    cause = cause_line(log_tail)
    if cause is None:
        return "it wrote nothing"
    line, error = cause
    if processes > 1:
        shared = f"the log its {processes} processes share"
        return (
            f"the last error in {shared}: {line}" if error else f"the last line of {shared}: {line}"
        )
    return f"its last error: {line}" if error else f"its log's last line: {line}"


def log_path(out: Path, bot: str) -> Path:
    """The log file of a bot's processes under the output folder."""
    return out / "logs" / f"{bot}.log"


class Accounts:
    """Token to bot name for the referee; tells the pool when a token is first used.

    Thread-safe: the referee calls it from its own event loop's thread.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Keyed by the token's digest: a dictionary probe then reveals nothing about the secret.
        self._names: dict[bytes, str] = {}
        self._hello: dict[bytes, Callable[[], None]] = {}

    def issue(self, name: str, on_hello: Callable[[], None] | None = None) -> str:
        """A fresh token for bot ``name``; ``on_hello`` runs (in the referee's thread) the first
        time the token is looked up."""
        token = secrets.token_urlsafe(TOKEN_BYTES)
        key = token_key(token)
        with self._lock:
            self._names[key] = name
            if on_hello is not None:
                self._hello[key] = on_hello
        return token

    def revoke(self, token: str) -> None:
        """Forget a token (its process is gone)."""
        key = token_key(token)
        with self._lock:
            self._names.pop(key, None)
            self._hello.pop(key, None)

    def lookup(self, token: str) -> BotIdentity | None:
        """Who owns ``token`` (the referee's :class:`~arena.referee.accounts.Accounts`)."""
        key = token_key(token)
        with self._lock:
            name = self._names.get(key)
            hello = self._hello.pop(key, None)
        if hello is not None:
            hello()
        return None if name is None else BotIdentity(name)

    def __contains__(self, token: object) -> bool:
        if not isinstance(token, str):
            return False
        with self._lock:
            return token_key(token) in self._names


@dataclass
class _Slot:
    bot: BotSpec
    number: int
    process: trio.Process | None = None
    token: str = ""
    log_from: int = 0
    """Where the current process's output starts in its bot's log (appended to, run after run:
    what an earlier run or process wrote says nothing of why this one failed)."""
    connected: trio.Event = field(default_factory=trio.Event)


class BotPool:
    """The processes of every bot, each kept alive until the pool's task is cancelled."""

    def __init__(
        self,
        bots: tuple[BotSpec, ...],
        per_bot: dict[str, int],
        accounts: Accounts,
        address: str,
        out: Path,
        connect_timeout_s: float,
        on_exit: Callable[[BotExit], None] | None = None,
        before_stop: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._bots = bots
        self._per_bot = per_bot
        self._accounts = accounts
        self._address = address
        self._out = out
        self._connect_timeout_s = connect_timeout_s
        self._on_exit = on_exit
        # Awaited before the processes are stopped, however the pool ends: a pool that gives up
        # (a crash loop) must not take the other bots from tables the referee still plays.
        self._before_stop = before_stop
        self._logs: dict[str, int] = {}
        self._token = trio.lowlevel.current_trio_token()
        self._stopping = False
        self._strikes: dict[str, int] = {}

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Start every process and report started once all have connected; then supervise them
        until cancelled, and on the way out stop them all."""
        slots = [_Slot(bot, n) for bot in self._bots for n in range(self._per_bot.get(bot.name, 0))]
        try:
            (self._out / "logs").mkdir(parents=True, exist_ok=True)
        except OSError as e:
            # The flag check found the folder writable; a special file system may still refuse.
            raise ConfigError(
                f"--out {self._out}: cannot make {self._out / 'logs'}: {e.strerror or e}; "
                "give a folder you can write"
            ) from None
        try:
            for bot in self._bots:
                path = log_path(self._out, bot.name)
                try:
                    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
                except OSError as e:  # a full disk (no room for the file), or a file read-only
                    raise LogWriteError(bot.name, path, e) from None
                self._logs[bot.name] = fd
                self._note(bot.name, RUN_STARTS)
            try:
                async with trio.open_nursery() as nursery:
                    for slot in slots:
                        await self._spawn(slot)
                    async with trio.open_nursery() as starting:
                        for slot in slots:
                            starting.start_soon(self._await_first_connection, slot)
                    task_status.started()
                    for slot in slots:
                        nursery.start_soon(self._supervise, slot)
            finally:
                self._stopping = True
                with trio.CancelScope(shield=True):
                    if self._before_stop is not None:
                        await self._before_stop()
                    await self._stop_all(slots)
        finally:
            # Emptied first: a worker that gets its game back as the pool ends finds no log to
            # note it in, rather than a closed (or reused) descriptor.
            logs, self._logs = self._logs, {}
            for fd in logs.values():
                os.close(fd)

    def begin_stop(self) -> None:
        """From now on an exiting process is expected (the referee is about to go away)."""
        self._stopping = True

    # ---- one process ----------------------------------------------------------------------

    def _note(self, bot: str, text: str) -> None:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        try:
            os.write(self._logs[bot], f"--- arena {stamp}: {text}\n".encode())
        except OSError as e:
            # Not carried on without it: the bot's own output goes to the same file and fails
            # with it (a bot that dies of that would be charged with the games it loses), and
            # the crash notes the run quotes are read from it. A full disk stops the run.
            raise LogWriteError(bot, log_path(self._out, bot), e) from None

    async def _spawn(self, slot: _Slot) -> None:
        slot.connected = trio.Event()
        event = slot.connected
        token = self._token

        def hello() -> None:
            # A late Hello after the run ended has nobody to tell.
            with contextlib.suppress(trio.RunFinishedError):
                token.run_sync_soon(event.set)

        slot.token = self._accounts.issue(slot.bot.name, hello)
        env = bot_environment(
            ARENA_ADDRESS=self._address, ARENA_TOKEN=slot.token, ARENA_BOT_NAME=slot.bot.name
        )
        # If the director dies without stopping its bots (kill -9), they must not linger for
        # the SDK's default ten minutes trying to reach a referee that is gone.
        env.setdefault("ARENA_GIVE_UP_S", str(ORPHAN_GIVE_UP_S))
        log = self._logs[slot.bot.name]
        slot.log_from = os.fstat(log).st_size
        try:
            slot.process = await trio.lowlevel.open_process(
                list(slot.bot.argv),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=env,
                # Its own process group: a Ctrl-C at the terminal reaches the director alone,
                # which then stops the bots in order instead of all dying at once.
                start_new_session=True,
            )
        except OSError as e:
            self._accounts.revoke(slot.token)
            raise BotStartError(
                f"bot {slot.bot.name!r}: cannot run {slot.bot.label!r}: {start_failure(e)}"
            ) from None
        self._note(slot.bot.name, f"started process {slot.number} (pid {slot.process.pid})")

    async def _await_first_connection(self, slot: _Slot) -> None:
        process = slot.process
        assert process is not None
        exited = False
        with trio.move_on_after(self._connect_timeout_s) as scope:
            async with trio.open_nursery() as race:

                async def wait_exit() -> None:
                    nonlocal exited
                    await process.wait()
                    exited = True
                    race.cancel_scope.cancel()

                async def wait_hello() -> None:
                    await slot.connected.wait()
                    race.cancel_scope.cancel()

                race.start_soon(wait_exit)
                race.start_soon(wait_hello)
        name, label = slot.bot.name, slot.bot.label
        if slot.connected.is_set():
            return
        log = log_path(self._out, name)
        if exited:
            code = process.returncode
            assert code is not None
            self._note(name, f"process {slot.number} (pid {process.pid}) exited with code {code}")
            # Its cause rather than its last line: Node.js ends every crash with its version
            # ("Node.js v20.20.2"), which said nothing of a missing module.
            cause = cause_line(_tail(log, ERROR_SCAN_LINES, slot.log_from))
            said = f": {cause[0]}" if cause else " (it wrote nothing)"
            if code in (126, 127):  # the shell's "cannot run" codes, env's among them
                said += crlf_note(slot.bot.argv[0])
            raise BotStartError(
                f"bot {name!r}: {label!r} exited before it connected, with {_exit_text(code)}{said}"
            )
        if scope.cancelled_caught:
            # Its words, not its log's path: a failed start removes the --out folder it made.
            said = last_words(_tail(log, ERROR_SCAN_LINES, slot.log_from))
            raise BotStartError(
                f"bot {name!r}: {label!r} did not connect within {self._connect_timeout_s:g} s "
                f"({said})"
            )

    def game_over(self, bots: Iterable[str], table_id: str) -> None:
        """Note a game's end in the logs of its bots, before it is stored: also the check that
        they can still be written, as the bots' output may have failed unseen (a full disk) and
        with it a bot's code (see :class:`LogWriteError`)."""
        for bot in dict.fromkeys(bots):
            if bot in self._logs:
                self._note(bot, f"game {table_id} over")

    def game_finished(self, bot: str) -> None:
        """A game with ``bot`` ended with its seat in good standing: its crashes are forgiven."""
        self._strikes[bot] = 0

    async def _supervise(self, slot: _Slot) -> None:
        name = slot.bot.name
        while True:
            process = slot.process
            assert process is not None
            code = await process.wait()
            if self._stopping:
                return
            _signal(process, signal.SIGKILL)  # what it started itself goes with it
            key = token_key(slot.token)
            self._accounts.revoke(slot.token)
            self._note(name, f"process {slot.number} (pid {process.pid}) exited with code {code}")
            scanned = _tail(log_path(self._out, name), ERROR_SCAN_LINES, slot.log_from)
            tail = "\n".join(scanned.splitlines()[-STDERR_TAIL_LINES:])
            said = last_words(scanned, self._per_bot.get(name, 1))
            strikes = self._strikes.get(name, 0) + 1
            self._strikes[name] = strikes
            gone = BotExit(
                name,
                slot.number,
                process.pid,
                code,
                time.time(),
                tail,
                said,
                key,
                restarting=strikes < MAX_STRIKES,
            )
            if self._on_exit is not None:
                self._on_exit(gone)
            if strikes >= MAX_STRIKES:
                raise BotCrashLoopError(
                    f"bot {name!r} exited {strikes} times in a row without finishing a game "
                    f"(last: {_exit_text(code)}; {gone.said}); see {log_path(self._out, name)}"
                )
            # Back off, so that a bot that dies at once does not spin the machine.
            await trio.sleep(RESTART_BACKOFF_S[min(strikes, len(RESTART_BACKOFF_S)) - 1])
            await self._spawn(slot)
            try:
                await self._await_first_connection(slot)
            except BotStartError:
                # Counted as the next strike when the loop sees the process gone.
                if slot.process is not None and slot.process.returncode is None:
                    _signal(slot.process, signal.SIGKILL)

    # Protected from Ctrl-C: trio raises KeyboardInterrupt in whatever task runs when the
    # signal comes, and one that came as this ran left a bot that lingered past its SIGTERM
    # running after arena had exited (the main task gets the interrupt once the bots are gone).
    @trio.lowlevel.enable_ki_protection
    async def _stop_all(self, slots: list[_Slot]) -> None:
        started = [s.process for s in slots if s.process is not None]
        live = [p for p in started if p.returncode is None]
        try:
            for process in live:
                _signal(process, signal.SIGTERM)
            with trio.move_on_after(TERMINATE_GRACE_S):
                for process in live:
                    await process.wait()
        finally:
            # Every group, its leader gone or not: what a bot started itself (an engine, a
            # helper) outlived the run once the bot had exited, with init as its parent.
            for process in started:
                _signal(process, signal.SIGKILL)
        for process in live:
            await process.wait()
        for s in slots:
            if s.token:
                self._accounts.revoke(s.token)


def _signal(process: trio.Process, sig: signal.Signals) -> None:
    # The whole process group the bot was started in (its own session): a command such as
    # `sh -c '...'` or a launcher leaves its children behind when only its own pid is signalled.
    # The group outlives its leader while a member lives, and its id is not given to another
    # process until then, so it is signalled after the bot itself has exited too.
    with contextlib.suppress(ProcessLookupError, PermissionError):  # none of it is left
        os.killpg(process.pid, sig)


def _exit_text(code: int) -> str:
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"code {code}"


def _tail(path: Path, lines: int, start: int = 0) -> str:
    """The last lines a bot wrote from offset ``start`` on (the director's own notes left out)."""
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(start, size - STDERR_TAIL_BYTES))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    kept = [x for x in text.splitlines() if x.strip() and not x.startswith("--- arena ")]
    return terminal_safe("\n".join(kept[-lines:]))
