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
engine's state, each scenario a one-hand game played from its hand 0, so a bot sees what a real
referee would send (but for the time warning's low bank, which it is given rather than spends).

Exit codes: 0 every check passed, 1 some failed, 2 a usage error: the command is not found, or
it exits before it opens its first stream (as ``arena run`` refuses such a command); 130 stopped
by Ctrl-C or SIGTERM (the bot is stopped too).
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Annotated

import typer

__all__ = ["register"]

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def _same_file(path: Path, word: str) -> bool:
    """Whether the command's ``word`` names the file at ``path``."""
    try:
        return Path(word).is_file() and Path(word).samefile(path)
    except (OSError, ValueError):  # not a path at all (a flag, a NUL)
        return False


def _unwritable(log: Path, command: list[str]) -> str:
    """Why the bot's output cannot go to ``log`` ('' when it can): checked before the bot
    starts, so that a bad path is one line, not a traceback mid-check."""
    if log.is_dir():
        return f"--log {log}: is a folder; give a file"
    if not log.parent.is_dir():
        return f"--log {log}: folder {log.parent} does not exist"
    if log.is_file() and any(_same_file(log, word) for word in command):
        # `--log bot.py -- python bot.py` appended the check's lines to the bot's own source.
        return f"--log {log}: is a file of the bot's command; give the log a file of its own"
    try:
        with log.open("ab"):
            pass
    except OSError as e:
        return f"--log {log}: cannot write it ({e.strerror})"
    return ""


def _stop_on_sigterm() -> None:
    """From here on a SIGTERM stops the check as Ctrl-C does: the bot is stopped too, exit 130.

    As a SIGINT when SIGINT is handled (asyncio then cancels the check, which stops the bot);
    else as a KeyboardInterrupt raised at once. A command started in the background by a shell
    script inherits SIGINT ignored: a SIGTERM turned into a SIGINT was ignored with it, and the
    check ran on to its end with its bot.
    """
    from arena.checkbot.process import interrupt_now
    from arena.director.ending import stop_on_hangup

    def on_sigterm(signum: int, frame: object) -> None:
        if signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, signal.SIG_DFL, None):
            if interrupt_now():  # else raised once the bot being started is in hand
                raise KeyboardInterrupt
            return
        signal.raise_signal(signal.SIGINT)

    signal.signal(signal.SIGTERM, on_sigterm)
    stop_on_hangup(on_sigterm)  # it killed the check and left its bot running


def register(app: typer.Typer) -> None:
    """Add the ``check-bot`` command to the ``arena`` CLI."""

    @app.command(
        "check-bot",
        # No help-and-exit-0 for a bare `arena check-bot`: nothing was checked, and a CI line
        # whose bot command came out empty must fail, as `arena check-bot --` does.
        context_settings={"allow_interspersed_args": False},
    )
    def check_bot_command(
        command: Annotated[
            list[str] | None,
            typer.Argument(metavar="-- COMMAND [ARGS]...", help="The bot's command, after '--'."),
        ] = None,
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
        # Imported here so that `arena` starts fast for every other command (grpc is heavy).
        from arena.checkbot.driver import MAX_NAME_CHARS, CheckOptions
        from arena.checkbot.run import CheckResult, Verdict, run_check
        from arena.checkbot.scenarios import SCENARIOS
        from arena.cli import stdout_or_closed
        from arena.config import MAX_DURATION_MS, is_utf8
        from arena.errors import ConfigError
        from arena.table import Clocks
        from arena.text import terminal_line

        stdout_or_closed()  # `>&-`: every verdict was lost, with exit 0
        if list_:
            for scenario in SCENARIOS:
                typer.echo(f"{scenario.name:20} {scenario.about}")
            raise typer.Exit()
        if not command:
            typer.echo(
                "arena: error: give the bot's command after '--', e.g. "
                "arena check-bot -- python sample_bots/heuristic.py",
                err=True,
            )
            raise typer.Exit(EXIT_USAGE)
        problem = ""
        if not name:  # the SDK would exit at once, asking for ARENA_BOT_NAME
            problem = "--name '': give the bot a name, or leave --name out (bot)"
        elif len(name) > MAX_NAME_CHARS:  # else the bot's Hello is blamed for the flag's name
            problem = (
                f"--name is {len(name)} characters long; a bot's name (Hello.bot_name) is at "
                f"most {MAX_NAME_CHARS}"
            )
        elif not is_utf8(name):  # the bot would be blamed, "the bot's command cannot start"
            problem = f"--name {name!r}: not UTF-8 text (it holds bytes of another encoding)"
        elif move_ms < 1:
            problem = f"--move-ms {move_ms}: give each move at least 1 ms"
        elif bank_ms < 0:
            problem = f"--bank-ms {bank_ms}: give a time bank of 0 ms or more"
        elif max(move_ms, bank_ms) > MAX_DURATION_MS:
            flag = "--move-ms" if move_ms > MAX_DURATION_MS else "--bank-ms"
            problem = f"{flag} {max(move_ms, bank_ms)}: at most a day ({MAX_DURATION_MS} ms)"
        elif not 0 < start_timeout <= MAX_DURATION_MS / 1000:
            problem = (
                f"--start-timeout {start_timeout:g}: give the bot more than 0 s and at most a "
                f"day ({MAX_DURATION_MS // 1000} s) to start"
            )
        elif log is not None:
            problem = _unwritable(log, command)
        if problem:
            typer.echo(f"arena: error: {problem}", err=True)
            raise typer.Exit(EXIT_USAGE)
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
                # The detail quotes the bot (its exception, its Hello): as one line, its control
                # characters escaped, so that a bot can neither retitle the terminal nor split
                # the line a check is given.
                + f" {result.scenario}: {terminal_line(result.detail)}"
            )

        # A SIGTERM stops the check as Ctrl-C does, so the bot's process is stopped too (the
        # default action killed the checker alone and left the bot running).
        _stop_on_sigterm()
        try:
            report = run_check(command, options, only=only or (), log=log, on_result=show)
        except ConfigError as e:
            typer.echo(f"arena: error: {e}", err=True)
            raise typer.Exit(EXIT_USAGE) from None
        except KeyboardInterrupt:
            typer.echo("arena: error: check-bot interrupted; the bot was stopped", err=True)
            raise typer.Exit(EXIT_INTERRUPTED) from None
        failed = len(report.failures)
        total = len(report.results)
        summary = f"check-bot: {total - failed} of {total} checks passed"
        if failed:
            typer.echo(f"{summary}; {failed} did not. The bot's output is in {report.log}")
            raise typer.Exit(EXIT_FAILED)
        if log is None:
            # The temp file named only when something fails: each passing run left one behind.
            report.log.unlink(missing_ok=True)
        typer.echo(f"{summary}.")
