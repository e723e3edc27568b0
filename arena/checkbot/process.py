"""The bot under test as a process: started with exec, its output kept in a log, always stopped.

The bot gets its own process group, so that stopping it also stops what it started (a shell
wrapper, ``npx``, a language runtime's helpers) and a Ctrl-C at the checker's terminal reaches
the checker, which then stops the bot itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from arena.config import (
    ERROR_SCAN_LINES,
    bot_environment,
    bot_path,
    command_problem,
    is_error_line,
    is_path,
    shortened,
    start_failure,
)
from arena.errors import ConfigError
from arena.text import terminal_safe

__all__ = ["BotCommandError", "BotProcess", "BotStartError"]

TERMINATE_GRACE_S = 2.0
"""How long the bot has to exit after SIGTERM before it is killed."""
TAIL_LINES = 3


class _Starting:
    """Whether a bot process is being started now, and whether a stop came meanwhile.

    check-bot's SIGTERM handler raises KeyboardInterrupt at once when SIGINT is ignored (see
    ``arena.checkbot._stop_on_sigterm``). Raised while asyncio starts the process, after the fork
    and before the process object is handed back, it lost the process: asyncio re-raises a
    KeyboardInterrupt there without closing it, the check then had nothing to stop, and the bot
    ran on after "the bot was stopped". So the handler leaves the stop to :meth:`BotProcess.start`
    while a start is under way.
    """

    active = False
    pending = False


STARTING = _Starting()


def interrupt_now() -> bool:
    """Whether a stop signal may raise KeyboardInterrupt now; else it is noted, and raised as
    soon as the bot process being started is in hand."""
    if STARTING.active:
        STARTING.pending = True
        return False
    return True


class BotCommandError(ConfigError):
    """The bot's command cannot be started (not found, not executable)."""


class BotStartError(BotCommandError):
    """The bot's command exited before it opened its first stream: it cannot start (as
    ``arena run`` refuses such a command too), so there is nothing to check."""


def resolve(command: Sequence[str]) -> list[str]:
    """The command with its program found on PATH; :class:`BotCommandError` if it cannot run."""
    if not command:
        raise BotCommandError("no bot command given: arena check-bot -- COMMAND [ARGS...]")
    program = command[0]
    problem = command_problem(program)
    if problem is not None:
        words = program.split()
        if len(command) == 1 and len(words) > 1 and command_problem(words[0]) is None:
            # `arena run --bot NAME="python bot.py"` takes one string; after `--` each word is
            # its own argument, and the quoted string is looked up as one program's name.
            problem += (
                ": give the program and its arguments as separate words after '--', unquoted "
                f"(arena check-bot -- {program})"
            )
        raise BotCommandError(f"bot {problem}")
    if is_path(program):
        return list(command)
    found = shutil.which(program, path=bot_path())
    assert found is not None  # command_problem looked it up
    return [found, *command[1:]]


class BotProcess:
    """One run of the bot's command."""

    def __init__(self, command: Sequence[str], env: Mapping[str, str], log: Path) -> None:
        """Prepare to run ``command`` with ``env`` added to this environment, output to ``log``."""
        self.command = resolve(command)
        # The PATH `arena run` gives its bots: `python` is the one arena runs in, SDK included,
        # whether or not the user activated the virtual environment.
        self._env = bot_environment(**env)
        self.log = log
        self._process: asyncio.subprocess.Process | None = None
        self._log_from = 0
        """Where this run's output starts in the log (earlier runs of the command came first)."""
        self._started_at = 0.0
        self._exited_at: float | None = None

    async def start(self) -> None:
        """Start the process (its stdout and stderr are appended to the log)."""
        with self.log.open("ab") as out:
            self._log_from = out.tell()
            self._started_at = time.monotonic()
            STARTING.active, STARTING.pending = True, False
            try:
                self._process = await asyncio.create_subprocess_exec(
                    *self.command,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=out,
                    stderr=asyncio.subprocess.STDOUT,
                    env=self._env,
                    start_new_session=True,
                )
            except OSError as e:
                why = start_failure(e)
                raise BotCommandError(f"cannot start {self.command[0]}: {why}") from None
            finally:
                STARTING.active = False
            if STARTING.pending:  # a stop came while it started: now that it can be stopped
                STARTING.pending = False
                raise KeyboardInterrupt

    @property
    def pid(self) -> int | None:
        """The process id, once started."""
        return None if self._process is None else self._process.pid

    @property
    def returncode(self) -> int | None:
        """The exit code once it has exited (negative: killed by that signal), else None."""
        return None if self._process is None else self._process.returncode

    async def wait(self, timeout_s: float) -> int | None:
        """Wait up to ``timeout_s`` for the process to exit; its exit code, or None."""
        if self._process is None:
            return None
        try:
            async with asyncio.timeout(max(0.0, timeout_s)):
                code = await self._process.wait()
        except TimeoutError:
            return None
        if self._exited_at is None:
            self._exited_at = time.monotonic()
        return code

    @property
    def ran_s(self) -> float:
        """Seconds from the start to the exit (to now while it runs; its exit is seen when
        :meth:`wait` returns)."""
        end = self._exited_at if self._exited_at is not None else time.monotonic()
        return end - self._started_at

    async def stop(self) -> None:
        """SIGTERM the process group, then SIGKILL it if it lingers."""
        process = self._process
        if process is None:
            return
        if process.returncode is None:
            self._signal(signal.SIGTERM)
            if await self.wait(TERMINATE_GRACE_S) is None:
                self._signal(signal.SIGKILL)
                await process.wait()
        # Children it left behind in its group go too.
        self._signal(signal.SIGKILL)

    def _signal(self, sig: signal.Signals) -> None:
        if self._process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, sig)

    def ending(self) -> str:
        """'exited with code N' or 'was killed by signal N' ('' while it runs)."""
        code = self.returncode
        if code is None:
            return ""
        return f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"

    def exit_note(self) -> str:
        """' (the bot exited with code N; its last lines: ...)' if it has exited, else ''."""
        how = self.ending()
        if not how:
            return ""
        tail = self.tail()
        return f" (the bot {how}" + (f"; its last output: {tail})" if tail else ")")

    def tail(self, lines: int = TAIL_LINES) -> str:
        """The last non-empty lines of this run's output, joined with ' | '."""
        try:
            with self.log.open("rb") as log:
                log.seek(self._log_from)
                text = log.read().decode(errors="replace")
        except OSError:
            return ""
        kept = [
            shortened(terminal_safe(line.strip())) for line in text.splitlines() if line.strip()
        ]
        shown = kept[-lines:]
        # The cause, if it came earlier: Node.js ends a crash with its stack and its version.
        errors = [line for line in kept[-ERROR_SCAN_LINES:-lines] if is_error_line(line)]
        if errors and not any(is_error_line(line) for line in shown):
            shown = [errors[-1], "...", *shown]
        return " | ".join(shown)
