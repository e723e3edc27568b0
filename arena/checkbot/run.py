"""Running the scenarios against a bot command, and the report: the library side of check-bot."""

from __future__ import annotations

import asyncio
import os
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from arena.checkbot.driver import Checker, CheckFailedError, CheckOptions, ScriptError
from arena.checkbot.process import BotCommandError, BotStartError, resolve
from arena.checkbot.scenarios import SCENARIOS, Scenario
from arena.checkbot.server import ScriptServer
from arena.errors import ConfigError

__all__ = [
    "BotCommandError",
    "BotStartError",
    "CheckOptions",
    "CheckReport",
    "CheckResult",
    "Verdict",
    "check_bot",
    "run_check",
    "select",
]

SCENARIO_TIMEOUT_S = 120.0
"""A scenario that runs longer than this is stuck (each is a few decisions at most)."""


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
        # Quoted: an empty --only "" read "unknown scenario(s) ; known: ...".
        said = ", ".join(repr(n) for n in unknown)
        raise ConfigError(f"unknown scenario(s) {said}; known: {known}")
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

    Raises :class:`BotCommandError` if the command cannot be started at all: not found, not
    executable, or it exits before it opens its first stream (:class:`BotStartError`).
    """
    opts = options or CheckOptions()
    resolve(command)  # fail before anything starts, as a usage error
    scenarios = select(only)
    temporary = log is None
    if log is None:
        try:
            handle, name = tempfile.mkstemp(prefix="check-bot-", suffix=".log")
        except OSError as e:  # no writable temporary folder (a read-only container): a traceback
            raise ConfigError(
                f"no temporary folder to keep the bot's output in ({e.strerror or e}): give "
                "--log FILE, or set TMPDIR to a writable folder"
            ) from None
        os.close(handle)
        log = Path(name)
    try:
        return await _check(command, opts, scenarios, log, on_result)
    except BaseException:
        # Nothing names a log of ours once the check fails to run (a bot that cannot start is
        # quoted in the error itself), so it would only be left behind in the temp folder.
        if temporary:
            log.unlink(missing_ok=True)
        raise


async def _check(
    command: Sequence[str],
    opts: CheckOptions,
    scenarios: Sequence[Scenario],
    log: Path,
    on_result: Callable[[CheckResult], None] | None,
) -> CheckReport:
    """:func:`check_bot` once its options, scenarios and log are settled."""
    server = ScriptServer()
    await server.start()
    checker = Checker(command, opts, server, log)
    results: list[CheckResult] = []
    try:
        handshake_failed = False
        told: set[str] = set()
        for scenario in scenarios:
            if handshake_failed:
                result = CheckResult(scenario.name, Verdict.SKIP, "not run: no handshake", 0.0)
            else:
                logged = _log_size(checker.log)
                result = await _run_one(checker, scenario)
                handshake_failed = scenario.name == "handshake" and result.verdict is Verdict.FAIL
                # Each process of the bot warns again: the first scenario that saw it says so.
                slips = [s for s in _sdk_slips(checker.log, logged) if s not in told]
                told.update(slips)
                if slips:
                    result = _with_slips(result, slips)
            results.append(result)
            if on_result is not None:
                on_result(result)
    finally:
        await checker.stop()
        await server.stop()
    return CheckReport(tuple(command), tuple(results), log)


SDK_ANSWERED = ("choose_play raised", "choose_pass raised")
"""What the Python SDK logs when the bot's decision code raised and it answered for the bot."""
SDK_SKIPPED = ("hook raised",)
"""What the Python SDK logs when one of the bot's event hooks raised and it skipped the event."""
SDK_SLIPS = (
    "which the SDK never calls",
    "overrides neither choose_play nor choose_pass",
    "with async def",
)
"""What the Python SDK warns of at start when a bot's class looks miswritten: a method named like
one of the SDK's that it never calls (``play`` for ``choose_play``), no decision overridden, or a
method written ``async def`` (never awaited: its code never runs). Such a bot plays the base
class's defaults (or, for an async hook, skips it), which pass every scenario."""
SLIP_START = "bot class "
"""Where the SDK's warning of a slip begins, whatever the logging format before it."""
_LOG_PREFIX = re.compile(r"^\d{4}-\d\d-\d\d [\d:,.]+ \S+ [A-Z]+ ")
"""The timestamp, logger and level the SDK's default logging puts before each line."""
_NOT_THE_EXCEPTION = ("Traceback (most recent call last)", "During handling", "The above exception")


def _log_size(log: Path) -> int:
    try:
        return log.stat().st_size
    except OSError:
        return 0


_FRAME = '  File "'
"""How a traceback's frame begins (the lines indented under it are its code and markers)."""
_GROUP_HEADER = re.compile(r"^[\s|+-]*\| ([A-Za-z_][\w.]*Group: .*)$")
"""The header of an exception group's traceback ("  | ExceptionGroup: several (2 ...)")."""


def _exception_after(lines: Sequence[str]) -> str:
    """The exception ("ValueError: oops") of the traceback that starts ``lines``, or '': the
    text after its last frame, a message of several lines whole (indented ones too), or an
    exception group's header."""
    found: list[str] = []
    in_frame = False
    group = ""
    for line in lines:
        if _LOG_PREFIX.match(line):
            break  # the next log record: the traceback is over
        if not line.strip() or line.startswith(_NOT_THE_EXCEPTION):
            continue
        header = _GROUP_HEADER.match(line)
        if header and not group:
            group = header[1]
        if line.startswith(_FRAME):
            in_frame = True
        elif line[0].isspace() and (in_frame or not found):
            continue  # a frame's code line and markers, or a group's own lines
        elif in_frame or not found:
            found = [line.strip()]  # the exception a chain ends with is the last one
            in_frame = False
        else:
            found.append(line.strip())
    return "\n".join(found) or group


def _sdk_covered(log: Path, since: int) -> str:
    """Why the scenario fails if the bot logged since ``since`` that the SDK covered for its
    code (answered for a decision, or skipped an event), with the exception raised; else ''."""
    try:
        with log.open("rb") as f:
            f.seek(since)
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        answered = any(m in line for m in SDK_ANSWERED)
        if not answered and not any(m in line for m in SDK_SKIPPED):
            continue
        said = _LOG_PREFIX.sub("", line.strip())
        raised = _exception_after(lines[i + 1 :])
        what = f"raised {raised}" if raised else "raised"
        if answered:
            return f"the bot's code {what} and the SDK answered for it: {said}"
        return f"the bot's code {what} in an event hook and the SDK skipped the event: {said}"
    return ""


def _sdk_slips(log: Path, since: int) -> list[str]:
    """The SDK's warnings of a miswritten bot class logged since ``since``, in order, once each."""
    try:
        with log.open("rb") as f:
            f.seek(since)
            text = f.read().decode(errors="replace")
    except OSError:
        return []
    slips = [
        line[line.find(SLIP_START) :].strip()
        for line in text.splitlines()
        if SLIP_START in line and any(m in line for m in SDK_SLIPS)
    ]
    return list(dict.fromkeys(slips))


def _with_slips(result: CheckResult, slips: Sequence[str]) -> CheckResult:
    """``result`` failed for the SDK's warnings ``slips`` too (its own reason first)."""
    said = "the SDK warned that " + "; and that ".join(slips)
    detail = said if result.verdict is Verdict.PASS else f"{result.detail}; and {said}"
    return CheckResult(result.scenario, Verdict.FAIL, detail, result.elapsed_ms)


async def _run_one(checker: Checker, scenario: Scenario) -> CheckResult:
    started = time.monotonic()
    logged = _log_size(checker.log)
    try:
        async with asyncio.timeout(SCENARIO_TIMEOUT_S):
            note = await scenario.run(checker)
        verdict, detail = Verdict.PASS, note
        # The SDK answers with a fallback when the bot's code raises: legal, but not the bot's.
        covered = _sdk_covered(checker.log, logged)
        if covered:
            verdict, detail = Verdict.FAIL, covered
    except CheckFailedError as e:
        verdict, detail = Verdict.FAIL, str(e)
    except TimeoutError:
        verdict = Verdict.FAIL
        detail = f"the scenario did not finish within {SCENARIO_TIMEOUT_S:g} s"
    except BotStartError:
        raise  # nothing can be checked: the command's fault, reported as a usage error
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
