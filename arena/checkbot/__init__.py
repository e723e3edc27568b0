"""`arena check-bot -- COMMAND...`: put a bot through scripted situations, say what it gets wrong.

Like fastchess's ``--compliance`` for chess engines: before a bot loses games for a protocol
mistake, its author can run it here and read, for each situation, PASS or FAIL with the exact
reason ("FAIL following suit: played 3D on a club lead while holding 5C 9C").

The checker starts the bot's command as a process with ``ARENA_ADDRESS``, ``ARENA_TOKEN`` and
``ARENA_BOT_NAME`` pointing at a scripted BotService on 127.0.0.1 (:mod:`arena.checkbot.server`)
and drives it through the scenarios of :mod:`arena.checkbot.scenarios`: the handshake, each pass
direction and a hold hand, the first trick, following suit, a void, hearts not broken, a time
warning, a dropped stream, a whole hand, the end of the session and a refused token. The
messages are built by the referee's own encoders (:mod:`arena.referee.wire`) from the rules
engine's state, so a bot sees what a real referee would send.

Exit codes: 0 every check passed, 1 some failed, 2 a usage error (e.g. the command is not found).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from arena.checkbot.driver import Checker, CheckFailedError, CheckOptions, ScriptError
from arena.checkbot.process import BotCommandError, resolve
from arena.checkbot.scenarios import SCENARIOS, Scenario
from arena.checkbot.server import ScriptServer
from arena.errors import ConfigError
from arena.table import Clocks

__all__ = [
    "BotCommandError",
    "CheckOptions",
    "CheckReport",
    "CheckResult",
    "Verdict",
    "check_bot",
    "register",
    "run_check",
]

SCENARIO_TIMEOUT_S = 120.0
"""A scenario that runs longer than this is stuck (each is a few decisions at most)."""
EXIT_FAILED = 1
EXIT_USAGE = 2


class Verdict(Enum):
    """How one scenario went."""

    PASS = "PASS"
    FAIL = "FAIL"
    SKIP = "SKIP"
    """Not run, because the handshake failed and nothing after it can be judged."""


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one scenario."""

    scenario: str
    """The scenario's name."""
    verdict: Verdict
    """PASS or FAIL."""
    detail: str
    """On PASS what the bot did; on FAIL the exact reason."""
    elapsed_ms: float
    """How long the scenario took."""

    def line(self) -> str:
        """'PASS name: detail' or 'FAIL name: reason'."""
        return f"{self.verdict.value} {self.scenario}: {self.detail}"


@dataclass(frozen=True)
class CheckReport:
    """Every scenario's result, in order."""

    command: tuple[str, ...]
    """The bot's command, as run."""
    results: tuple[CheckResult, ...]
    """One result per scenario run."""
    log: Path
    """The bot's combined stdout and stderr."""

    @property
    def passed(self) -> bool:
        """Whether every scenario passed."""
        return all(r.verdict is Verdict.PASS for r in self.results)

    @property
    def failures(self) -> tuple[CheckResult, ...]:
        """The scenarios that failed or could not run."""
        return tuple(r for r in self.results if r.verdict is not Verdict.PASS)


def select(only: Sequence[str]) -> tuple[Scenario, ...]:
    """The scenarios named in ``only`` (all if empty); :class:`ConfigError` for an unknown name."""
    if not only:
        return SCENARIOS
    names = {s.name for s in SCENARIOS}
    unknown = [n for n in only if n not in names]
    if unknown:
        known = ", ".join(s.name for s in SCENARIOS)
        raise ConfigError(f"unknown scenario(s) {', '.join(unknown)}; known: {known}")
    return tuple(s for s in SCENARIOS if s.name in only)


async def check_bot(
    command: Sequence[str],
    options: CheckOptions | None = None,
    *,
    only: Sequence[str] = (),
    log: Path | None = None,
    on_result: Callable[[CheckResult], None] | None = None,
) -> CheckReport:
    """Run the scenarios against the bot ``command``; the report (``on_result`` sees each result).

    Raises :class:`BotCommandError` if the command cannot be started at all.
    """
    opts = options or CheckOptions()
    resolve(command)  # fail before anything starts, as a usage error
    scenarios = select(only)
    if log is None:
        handle, name = tempfile.mkstemp(prefix="check-bot-", suffix=".log")
        os.close(handle)
        log = Path(name)
    server = ScriptServer()
    await server.start()
    checker = Checker(command, opts, server, log)
    results: list[CheckResult] = []
    try:
        handshake_failed = False
        for scenario in scenarios:
            if handshake_failed:
                result = CheckResult(scenario.name, Verdict.SKIP, "not run: no handshake", 0.0)
            else:
                result = await _run_one(checker, scenario)
                handshake_failed = scenario.name == "handshake" and result.verdict is Verdict.FAIL
            results.append(result)
            if on_result is not None:
                on_result(result)
    finally:
        await checker.stop()
        await server.stop()
    return CheckReport(tuple(command), tuple(results), log)


async def _run_one(checker: Checker, scenario: Scenario) -> CheckResult:
    started = time.monotonic()
    try:
        async with asyncio.timeout(SCENARIO_TIMEOUT_S):
            note = await scenario.run(checker)
        verdict, detail = Verdict.PASS, note
    except CheckFailedError as e:
        verdict, detail = Verdict.FAIL, str(e)
    except TimeoutError:
        verdict = Verdict.FAIL
        detail = f"the scenario did not finish within {SCENARIO_TIMEOUT_S:g} s"
    except BotCommandError as e:
        verdict, detail = Verdict.FAIL, str(e)
    except ScriptError as e:  # never the bot's fault: say so
        verdict, detail = Verdict.FAIL, f"checker bug, please report it: {e}"
    return CheckResult(scenario.name, verdict, detail, (time.monotonic() - started) * 1000)


def run_check(
    command: Sequence[str],
    options: CheckOptions | None = None,
    *,
    only: Sequence[str] = (),
    log: Path | None = None,
    on_result: Callable[[CheckResult], None] | None = None,
) -> CheckReport:
    """:func:`check_bot` in a fresh event loop (for callers without one)."""
    return asyncio.run(check_bot(command, options, only=only, log=log, on_result=on_result))


def register(app: typer.Typer) -> None:
    """Add the ``check-bot`` command to the ``arena`` CLI."""

    @app.command(
        "check-bot",
        context_settings={"allow_interspersed_args": False},
        no_args_is_help=True,
    )
    def check_bot_command(
        command: Annotated[
            list[str],
            typer.Argument(metavar="-- COMMAND [ARGS]...", help="The bot's command, after '--'."),
        ],
        name: Annotated[str, typer.Option(help="ARENA_BOT_NAME given to the bot.")] = "bot",
        move_ms: Annotated[int, typer.Option(help="Move time per decision (ms).")] = 1000,
        bank_ms: Annotated[int, typer.Option(help="Time bank per game (ms).")] = 10000,
        start_timeout: Annotated[
            float, typer.Option(help="Seconds the bot may take to start and connect.")
        ] = 20.0,
        only: Annotated[
            list[str] | None,
            typer.Option(help="Run only this scenario (repeatable); see --list."),
        ] = None,
        log: Annotated[
            Path | None, typer.Option(help="Keep the bot's stdout and stderr in this file.")
        ] = None,
        list_: Annotated[bool, typer.Option("--list", help="List the scenarios and exit.")] = False,
    ) -> None:
        """Check that a bot speaks the protocol: scripted situations, PASS/FAIL with the reason."""
        if list_:
            for scenario in SCENARIOS:
                doc = (scenario.run.__doc__ or "").strip().splitlines()
                typer.echo(f"{scenario.name:20} {doc[0] if doc else ''}")
            raise typer.Exit()
        options = CheckOptions(
            name=name,
            clocks=Clocks(move_ms=move_ms, bank_ms=bank_ms),
            start_timeout_s=start_timeout,
        )

        def show(result: CheckResult) -> None:
            colour = {
                Verdict.PASS: typer.colors.GREEN,
                Verdict.FAIL: typer.colors.RED,
                Verdict.SKIP: typer.colors.YELLOW,
            }[result.verdict]
            typer.echo(
                typer.style(result.verdict.value, fg=colour, bold=True)
                + f" {result.scenario}: {result.detail}"
            )

        try:
            report = run_check(command, options, only=only or (), log=log, on_result=show)
        except ConfigError as e:
            typer.echo(f"arena check-bot: {e}", err=True)
            raise typer.Exit(EXIT_USAGE) from None
        failed = len(report.failures)
        total = len(report.results)
        summary = f"check-bot: {total - failed} of {total} checks passed"
        if failed:
            typer.echo(f"{summary}; {failed} did not. The bot's output is in {report.log}")
            raise typer.Exit(EXIT_FAILED)
        typer.echo(f"{summary}.")
