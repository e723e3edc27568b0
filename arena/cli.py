"""The `arena` command line: a thin typer layer over the library; no logic lives here.

Bad input (a flag, a file, a bot command, a port, a database) is one line on stderr and exit
code 2; a run stopped by Ctrl-C or SIGTERM exits with 130 after saying what is stored (and how to
resume, if anything is left); any command whose output's reader has gone (a closed pipe) stops
without a word, exit code 141.
"""

# ruff: noqa: E402 (the libraries are imported under a Ctrl-C guard set up before them)
from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import re
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final, NoReturn, TextIO, TypeVar, cast, get_args


def _interrupted_while_loading(signum: int, frame: object) -> None:
    # A Ctrl-C or SIGTERM before the command runs (its libraries take a moment to load, then
    # its flags are read) is not a crash: one line and 130, as during the command, instead of a
    # KeyboardInterrupt's traceback (or, for SIGTERM, a silent death by the signal, 143).
    # Ended at once, not raised: nothing is made yet, and an exception raised into an import's
    # lock callback was printed as "Exception ignored" and dropped, and the command went on.
    with contextlib.suppress(OSError):
        os.write(2, b"arena: interrupted\n")
    os._exit(130)


_LOADING_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM)


_HEEDING_CTRL_C: Final = frozenset({"run", "demo", "sprt"})
"""The commands that heed Ctrl-C even when it was inherited ignored (:func:`sigterm_as_ctrl_c`)."""


def _guard_loading() -> dict[signal.Signals, Any]:
    """Catch Ctrl-C and SIGTERM while the libraries load; the handlers they had before."""
    before = {sig: signal.getsignal(sig) for sig in _LOADING_SIGNALS}
    for sig, handler in before.items():
        if _heeded(sig, handler) or handler in (signal.default_int_handler, signal.SIG_DFL):
            with contextlib.suppress(ValueError):  # imported off the main thread: no guard
                signal.signal(sig, _interrupted_while_loading)
    return before


def _unguard_loading(before: dict[signal.Signals, Any]) -> None:
    """Loaded: Ctrl-C is a KeyboardInterrupt again, which each command handles (its own
    message), and SIGTERM what it was (a run sets its own handler)."""
    for sig, handler in before.items():
        if signal.getsignal(sig) is _interrupted_while_loading:
            signal.signal(sig, signal.default_int_handler if _heeded(sig, handler) else handler)


def _heeded(sig: signal.Signals, handler: object) -> bool:
    """Whether ``sig`` is a Ctrl-C inherited ignored that this command heeds all the same: a
    batch does once loaded (:func:`sigterm_as_ctrl_c`), and a script's `arena run ... &` sent
    `kill -INT` in its first 0.3 s lost it (the whole run played on)."""
    if sig is not signal.SIGINT or handler is not signal.SIG_IGN:
        return False
    words = sys.argv[1:2]
    return bool(words) and words[0] in _HEEDING_CTRL_C


_BEFORE_LOADING = _guard_loading()

from arena.director.ending import hold_at_the_last, remove_unfinished, stop_on_hangup

hold_at_the_last()  # first of the exit hooks, so that it runs last
_STARTING: dict[signal.Signals, Any] = {}
"""The handlers :func:`run_typer`'s guard replaced, put back once the command runs."""

import typer
from rich.console import Console
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption
from typer.models import DefaultPlaceholder

if TYPE_CHECKING:
    from arena.config import RunConfig

from arena import __version__
from arena._compiled import PURE_VARIABLE
from arena.errors import ArenaError, ConfigError

app = typer.Typer(
    name="arena",
    help="Hearts Arena: referee, arena runner and ratings for Hearts bots.",
    no_args_is_help=True,
    add_completion=False,
)

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130
EXIT_OUTPUT_CLOSED = 141
"""128 + SIGPIPE: what a shell reports of a program stopped by writing to a closed pipe."""
DEMO_BOARDS = 12
DEMO_DB = "arena-demo.db"
SPRT_DB = "arena-sprt.db"
DEFAULT_MAX_BOARDS = 2000
"""The sequential test's cap (kept here so that --help can show it without loading the test)."""
MAX_SPRT_BOARDS = 100_000
"""The highest cap ``arena.config.MAX_BOARDS``, kept here for --help as the default is; a test
holds the two equal."""
STANDARD_PLAYERS = 4
PIPE_WIDTH = 160
BOOTSTRAP_SAMPLES = 400
"""The bootstrap's default replicates (``arena.ratings.DEFAULT_BOOTSTRAP_SAMPLES``, kept here so
that --help can show it without loading scipy; a test holds the two equal)."""
MIN_BOOTSTRAP_SAMPLES = 2
MAX_BOOTSTRAP_SAMPLES = 100_000
"""More is hours of refits on a large database, and no better an interval."""


class IntervalChoice(StrEnum):
    """``arena ratings --method``: the values of ``arena.ratings.IntervalMethod`` (mirrored here
    so that typer can offer them as choices without loading scipy; a test holds them equal)."""

    SANDWICH = "sandwich"
    BOOTSTRAP = "bootstrap"


T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


def _version_callback(value: bool) -> None:
    if value:
        _check_engine_switch()  # eager: it runs before main(), which checks it for the rest
        stdout_or_closed()  # `arena --version >&-`: typer.echo wrote nothing, exit 0
        try:
            typer.echo(f"arena {__version__}")
        except BrokenPipeError:  # typer's own handler would exit 1
            output_closed()
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(
        False,
        "--version",
        callback=_version_callback,
        is_eager=True,
        help="Print the version and exit.",
    ),
) -> None:
    """Hearts Arena: referee, arena runner and ratings for Hearts bots."""
    _check_engine_switch()


def _check_engine_switch() -> None:
    """Refuse a value of HEARTS_ARENA_PURE_ENGINE other than 1 or 0, in one line."""
    pure = os.environ.get(PURE_VARIABLE)
    if pure not in (None, "", "0", "1"):
        # The build's guard reads only "1": any other value would silently run the compiled build.
        _fail(
            f"{PURE_VARIABLE}={pure}: set it to 1 to run the Python source of the engine and "
            "referee, or to 0 (or unset it) for the compiled build"
        )


METAVARS: Final = {
    "--bot": "NAME=COMMAND",
    "--filler": "NAME=COMMAND",
    "--rule": "NAME=VALUE",
    "--rules": "PRESET",
    # NAME, as the README and the refusals write them (`--candidate NAME`, `--anchor NAME`).
    "--candidate": "NAME",
    "--anchor": "NAME",
    "--game-to": "POINTS",
    "--move-time": "TIME",
    "--time-bank": "TIME",
    "--grace": "TIME",
    "--db": "PATH",
    "--out": "FOLDER",
    "--config": "FILE",
    "--log": "FILE",
    "--plot": "FILE",
    "--tls-cert": "FILE",
    "--tls-key": "FILE",
    "--ca": "FILE",
    "--format": "FORMAT",
    "--run": "RUN_ID",
    "--only": "CHECK",
    "--name": "NAME",
    "--host": "HOST",
    "--url": "URL",
    "--token": "TOKEN",
    "--reason": "TEXT",
}
"""What each option's value is, for --help (typer shows its Python type: ``<list[str]>``)."""
_TYPE_METAVARS: Final = {"<int>": "N", "<float>": "NUMBER", "<str>": "TEXT", "<path>": "PATH"}


def _plain_metavar(param: Any) -> None:
    """Give an option of ours a metavar that says what to type, and a flag none (typer 0.29
    shows ``<bool>`` beside every flag, ``--help`` included)."""
    if isinstance(param, TyperArgument):
        # Its name says what it is (NAME, GAME, COMMAND...); the type column would add <str>.
        param.display_type_rich = _no_type  # type: ignore[method-assign]
        if param.metavar is None and param.name:
            # Else the usage line read "arena replay [OPTIONS] {game}" (typer 0.29), where the
            # README and every other tool write GAME.
            param.metavar = param.name.upper()
        return
    if not isinstance(param, TyperOption) or param.metavar is not None:
        return
    if param.is_flag or param.count:
        param.metavar = ""
        return
    shown = param.display_type_rich(None)  # type: ignore[arg-type]  # no context is read
    named = METAVARS.get(param.opts[0])
    if named is None and shown is not None and shown.startswith("<") and "|" in shown:
        named = shown.strip("<>")  # a choice: its values
    param.metavar = named or _TYPE_METAVARS.get(str(shown), None)


def _no_type(ctx: Any) -> None:
    """No type column for an argument (see :func:`_plain_metavar`)."""
    return None


class _PlainHelp:
    """Help that shows what each option takes in words (see :func:`_plain_metavar`)."""

    def get_params(self, ctx: Any) -> list[Any]:
        """The command's parameters, the help option included, with plain metavars."""
        params: list[Any] = super().get_params(ctx)  # type: ignore[misc]
        for param in params:
            _plain_metavar(param)
        return params


class PlainGroup(_PlainHelp, TyperGroup):
    """A group of commands whose help shows what each option takes in words."""


class OnceCommand(_PlainHelp, TyperCommand):
    """A command that refuses a single-valued option given twice (click keeps the last one
    silently, so ``--players 3 --players 5`` would play 5 without a word)."""

    # ctx is the click Context typer vendors (typer.Context is a subclass of it, not its base).
    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """Check for repeated options, then parse as click does."""
        interspersed = bool(ctx.allow_interspersed_args)
        repeated = _repeated_option(self, args, interspersed)
        if repeated:
            typer.echo(
                f"arena: error: {repeated} is given more than once: give it once "
                f"(see {ctx.command_path} --help)",
                err=True,
            )
            raise typer.Exit(EXIT_BAD_INPUT)
        empty = _empty_path(self, args, interspersed)
        if empty:
            typer.echo(f"arena: error: {empty}", err=True)
            raise typer.Exit(EXIT_BAD_INPUT)
        try:
            result: list[str] = super().parse_args(ctx, args)
        except Exception as e:
            if getattr(e, "ctx", False) is None:
                # Raised by the parser without its command: the line said "(see arena --help)"
                # for `arena replay 1 --json=yes`, not the command's own help.
                e.ctx = ctx  # type: ignore[attr-defined]
            raise
        return result

    def invoke(self, ctx: Any) -> Any:
        """Run the command; a closed output (``arena ratings | head -1``) stops it quietly, a
        full one (``> /dev/full``) with one line."""
        # The flags are read: from here each command handles Ctrl-C and SIGTERM its own way.
        _unguard_loading(_STARTING)
        try:
            result = super().invoke(ctx)
            _flush_output()
            return result
        except BrokenPipeError:
            output_closed()
        except BaseExceptionGroup as group:
            # A task of a run wrote it (arena sprt's header), and trio wrapped its error: a
            # traceback of 70 lines where the command's own write said one.
            failure = _first_leaf(group, _is_output_error)
            if not isinstance(failure, OSError):
                raise
            if isinstance(failure, BrokenPipeError):
                output_closed()
            output_failed(failure)
        except OSError as e:
            if is_output_failure(e):
                output_failed(e)
            if e.filename is None or e.errno not in PATH_ERRNOS:
                raise
            # A path given that the system cannot look up at all (a name too long, a loop of
            # links, a folder on the way that may not be searched): Path.exists() and is_dir()
            # raise these where a command's own checks expect True or False.
            _fail(f"{e.filename}: {e.strerror}; give another path", EXIT_BAD_INPUT)


def _empty_path(command: TyperCommand, args: list[str], interspersed: bool) -> str:
    """What is wrong with the first path option of ``command`` given an empty value ('' if
    none): click reads ``--db ""`` as ``.``, the current folder, which would then be refused as
    "a folder, not a database file", or used."""
    for name, value in _option_words(command, args, interspersed):
        option = _options(command).get(name)
        if value is None or value.strip() or option is None or not _takes_path(option):
            continue
        default = option.default
        instead = f"leave {name} out" + (f" for the default ({default})" if default else "")
        # Spaces alone too: `--db " "` made a database named by a space, unseen in `ls`.
        what = "an empty path" if value == "" else "a path of spaces alone"
        return f"{name} {value!r}: {what} was given; give a file name, or {instead}"
    return ""


def _takes_path(option: TyperOption) -> bool:
    """Whether typer turns the option's value into a :class:`Path` (its annotation names one)."""
    annotation = getattr(getattr(option, "type_descriptor", None), "annotation", None)
    return Path in (annotation, *get_args(annotation))


def _options(command: TyperCommand) -> dict[str, TyperOption]:
    """The options of ``command`` by each of their names (``--strict`` and ``--no-strict``)."""
    return {
        name: p
        for p in command.params
        if isinstance(p, TyperOption)
        for name in (*p.opts, *p.secondary_opts)
    }


def _option_words(
    command: TyperCommand, args: list[str], interspersed: bool
) -> Iterator[tuple[str, str | None]]:
    """The option names in ``args`` as click will read them, each with its value (None for a
    flag or a missing value); arguments are skipped."""
    options = _options(command)
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            return
        name, equals, inline = word.partition("=") if word.startswith("--") else (word, "", "")
        option = options.get(name)
        if option is not None:
            if option.is_flag:
                yield name, None
            elif equals:
                yield name, inline
            else:
                i += 1  # its value, whatever it looks like
                yield name, args[i] if i < len(args) else None
        elif not word.startswith("-") and not interspersed:
            return  # the rest are arguments (a bot's command)
        i += 1


def _repeated_option(command: TyperCommand, args: list[str], interspersed: bool) -> str:
    """The first single-valued option of ``command`` given twice in ``args`` ("" if none)."""
    by_name = {
        name: p
        for p in command.params
        if isinstance(p, TyperOption) and not p.multiple and not p.count
        for name in (*p.opts, *p.secondary_opts)
    }
    seen: dict[str, str] = {}
    for name, _ in _option_words(command, args, interspersed):
        option = by_name.get(name)
        if option is None or option.name is None:
            continue
        if option.name in seen:
            first = seen[option.name]
            return name if first == name else f"{first}/{name}"
        seen[option.name] = name
    return ""


def _once_everywhere(application: typer.Typer) -> None:
    """Make every command of ``application`` (and of its sub-apps) an :class:`OnceCommand`,
    and every group a :class:`PlainGroup`."""
    if isinstance(application.info.cls, DefaultPlaceholder):  # no class of its own
        application.info.cls = PlainGroup
    for info in application.registered_commands:
        if info.cls in (None, TyperCommand):  # a command of a class of its own keeps it
            info.cls = OnceCommand
    for group in application.registered_groups:
        if group.typer_instance is not None:
            _once_everywhere(group.typer_instance)


class PipeConsole(Console):
    """A console that lets a closed pipe's error through, to stop the command as any other
    output does (rich's own exits 1, and points stdout at /dev/null even when it writes stderr)."""

    def on_broken_pipe(self) -> None:
        """Raise a BrokenPipeError for the command to stop on (:func:`output_closed`)."""
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, "the output's reader has gone")


def stdout_or_closed() -> TextIO:
    """Standard output; with none at all (started with ``>&-``), stop as on a closed pipe
    (typer.echo writes nothing then: a command printed nothing and exited 0)."""
    if sys.stdout is None:
        output_closed()
    return sys.stdout


def _console() -> Console:
    # Piped output is not cut to 80 columns: the rating table has many.
    return PipeConsole() if stdout_or_closed().isatty() else PipeConsole(width=PIPE_WIDTH)


def output_closed() -> NoReturn:
    """Stop quietly, exit code 141: the reader of our output has gone (``arena run | head -1``).

    What a Unix tool does on a closed pipe (SIGPIPE kills it; the shell says 141), with no word
    (there is no one to read it) and no traceback. What is still buffered for the closed stream
    goes to /dev/null, or flushing it at exit would fail and complain again.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        # Not a file (a test's capture), or no stream at all (`>&-`): nothing to redirect.
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(devnull, stream.fileno())
    os.close(devnull)
    raise typer.Exit(EXIT_OUTPUT_CLOSED)


def _progress() -> TextIO:
    """Where a run's progress goes (stderr); with none (`2>&-`), stop as on a closed pipe before
    anything is made (the run exited 1, a traceback hidden with the stream it would go to)."""
    if sys.stderr is None:
        output_closed()
    return sys.stderr


OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EFBIG})
"""Errors of a write to a full or failing output (``arena ratings > /dev/full``)."""


PATH_ERRNOS = frozenset({errno.ENAMETOOLONG, errno.ELOOP, errno.EACCES})
"""The errors of a path the system cannot look up (as opposed to one that does not exist)."""


def is_output_failure(error: OSError) -> bool:
    """Whether ``error`` is our standard output failing (no file named: not a file we opened)."""
    return error.filename is None and error.errno in OUTPUT_ERRNOS


def _is_output_error(error: BaseException) -> bool:
    """Whether ``error`` is our standard output failing: a closed pipe or a full disk."""
    return isinstance(error, BrokenPipeError) or (
        isinstance(error, OSError) and is_output_failure(error)
    )


def _first_leaf(
    group: BaseExceptionGroup[BaseException], wanted: Callable[[BaseException], bool]
) -> BaseException | None:
    """The first exception inside ``group``, however deep, that ``wanted`` picks (None if none):
    trio wraps what a run's tasks raise."""
    found, _ = group.split(wanted)
    error: BaseException | None = found
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


def _flush_output() -> None:
    # Here, not at exit, so that a failure is the command's to say (sys.stdout is None when the
    # process was started with no standard output at all: `arena ... >&-`).
    if sys.stdout is not None:
        sys.stdout.flush()


def output_failure_text(error: OSError, done: str = "") -> str:
    """The one line for an output that cannot be written; ``done``: what was done all the same
    (a change made, the server stopped)."""
    return f"cannot write the output: {error.strerror or error}" + (f"; {done}" if done else "")


def output_failed(error: OSError, done: str = "") -> NoReturn:
    """Stop with one line (:func:`output_failure_text`) and exit code 1: our output cannot be
    written (a full disk).

    What is still buffered for it goes to /dev/null, or flushing it at exit would fail again.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    with contextlib.suppress(OSError, ValueError, AttributeError):
        os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    with contextlib.suppress(OSError):
        print(f"arena: error: {output_failure_text(error, done)}", file=sys.stderr)
    raise SystemExit(EXIT_FAILED)


def _fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    typer.echo(f"arena: error: {message}", err=True)
    raise typer.Exit(code)


def _guard(
    action: Callable[[], T],
    db: Path | None = None,
    run_id: str | None = None,
    *,
    interrupted: Callable[[], str] | None = None,
) -> T:
    """Run ``action``; an arena error becomes one line and an exit code, never a traceback
    (``db``: the database a run writes, to say on Ctrl-C whether it holds anything; None for a
    command that only reads, which says only that it was interrupted; ``run_id``: the run, to
    say whether any of its games is left to play; ``interrupted``: the words instead)."""
    try:
        return action()
    except ArenaError as e:
        _fail(str(e), EXIT_BAD_INPUT if _is_bad_input(e) else EXIT_FAILED)
    except KeyboardInterrupt:
        said = interrupted() if interrupted is not None else _interrupted_text(db, run_id)
        _fail(said, EXIT_INTERRUPTED)


def _reading(db: Path, action: Callable[[], T]) -> T:
    """Run ``action``, which reads ``db``: a SQLite error on the way (a database damaged, or
    locked since it was opened) is the store's one line (:func:`arena.store.unreadable`)."""
    import sqlite3

    from arena.store import StoreError, unreadable

    try:
        return action()
    except sqlite3.DatabaseError as e:
        raise StoreError(unreadable(db, e)) from None
    except BaseExceptionGroup as group:
        # Raised inside a run's trio tasks (its replays written as it resumes), the error
        # comes wrapped: a damaged database there was a traceback of an ExceptionGroup.
        from arena.director.run import interrupted

        error = _first_leaf(group, lambda e: isinstance(e, sqlite3.DatabaseError))
        if not isinstance(error, sqlite3.DatabaseError) or interrupted(group):
            raise
        raise StoreError(unreadable(db, error)) from None


NOTHING_MADE_TEXT: Final = "interrupted before any game was played; nothing was made"


def _interrupted_text(db: Path | None, run_id: str | None = None) -> str:
    """What a command stopped by Ctrl-C says (see :func:`_guard`)."""
    from arena.store import not_made

    if db is None:  # a command that reads (ratings, replay): nothing to carry on
        return "interrupted"
    if not_made(db):
        # Stopped while the run loaded or its bots started: a run makes its database only once
        # they are up (in the empty file given, if one was).
        return NOTHING_MADE_TEXT
    stored, total = _stored_of(db, run_id) if run_id is not None else (None, None)
    if total is not None and stored is not None and stored >= total:
        return _all_stored_text(total, db)
    if total is not None and stored is not None:
        # As a run stopped after its start says it (a stop while a resumed run started its
        # bots said only "every game finished so far is stored").
        return (
            f"interrupted: {stored} of {total} games stored in {db}; run the same command again "
            "to resume"
        )
    return (
        "interrupted; every game finished so far is stored: run the same command again to carry on"
    )


def _loading_text(db: Path | None, run_id: str | None = None) -> str:
    """What a run or a test stopped as it reads its flags and loads says: before the flags name
    its database, nothing can have been made (it said only "interrupted", the readers' line)."""
    if db is None:
        return NOTHING_MADE_TEXT
    return _interrupted_text(db, run_id)


def _stored_of(db: Path, run_id: str) -> tuple[int | None, int | None]:
    """The games of the run ``run_id`` that ``db`` holds, and the run's total (None for either
    where it cannot say: no such run yet, or an open-ended one, a sequential test's)."""
    import sqlite3

    from arena.store import Store

    try:
        with Store.open(db, create=False) as store:
            run = next((r for r in store.runs() if r.run_id == run_id), None)
            if run is None or run.total is None:
                return None, None
            return len(store.finished(run_id)), run.total
    except (ArenaError, OSError, sqlite3.Error, KeyboardInterrupt):
        # Asked only to choose the words of an interruption: a database that cannot be read
        # now, or a second Ctrl-C, gets the general ones rather than a traceback.
        return None, None


def _all_stored_text(total: int, db: Path) -> str:
    """What a run stopped after its last game was stored says: not to resume, there is nothing
    left; where its results are."""
    import shlex

    return (
        f"interrupted: all {total} games are stored in {db}, nothing is left to play; see the "
        f"results with arena ratings --db {shlex.quote(str(db))}"
    )


def sigterm_as_ctrl_c() -> None:
    """From here on a SIGTERM (or SIGHUP) stops the command as Ctrl-C does (stored games kept,
    bots stopped, exit 130), also before a run's own signal watcher is up, where it would kill
    the process outright (143, without a word) and leave the bots running."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        # Inherited ignored (a script's `arena run ... &`): a SIGTERM turned into a SIGINT would
        # be ignored with it, and the bots would inherit the ignoring. A running batch heeds
        # Ctrl-C anyway (its signal watcher), so it is heeded from the start.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda signum, frame: signal.raise_signal(signal.SIGINT))
    stop_on_hangup(lambda signum, frame: signal.raise_signal(signal.SIGINT))


def _exit_at_once(said: Callable[[], str]) -> Callable[[int, object], None]:
    """A Ctrl-C and SIGTERM handler that ends the process at once: the line ``said()``, 130."""

    def stop(signum: int, frame: object) -> None:
        # Not an exception raised into the code running then (an import): Python 3.11 turns one
        # raised in a __set_name__ into a RuntimeError (a traceback, exit 1, as matplotlib
        # loads) and prints and drops one raised in a __del__, and the command would go on.
        try:
            line = said()
        except Exception:  # e.g. the store's module half imported at that moment: still a line
            line = "interrupted"
        remove_unfinished()  # a plot being drawn: os._exit runs no finally that would
        with contextlib.suppress(OSError):  # stderr closed (`2>&-`): the exit code says it
            os.write(2, f"arena: error: {line}\n".encode())
        os._exit(EXIT_INTERRUPTED)

    return stop


def _to_the_end(
    said: Callable[[], str] = lambda: "interrupted while exiting; its output is complete",
    before: dict[signal.Signals, Any] | None = None,
) -> None:
    """Once a command's output is complete: a Ctrl-C or SIGTERM as Python exits (its threads,
    the exit hooks) was a traceback and exit code 0; from here on it is one line and 130."""
    from arena.director.ending import until_exit

    until_exit(_exit_at_once(said), before)


def _reads_only(command: F) -> F:
    """Have a command that only reads (ratings, replay) end at once on Ctrl-C or SIGTERM, with
    one line and exit code 130, and its usual handlers back once it returns (in the `arena`
    process, one that says its output is complete, to the process's end)."""

    @functools.wraps(command)
    def reading(*args: Any, **kwargs: Any) -> Any:
        # Left alone, a Ctrl-C while it loads scipy or matplotlib (a second or more) ended in
        # typer's exit 130 without a word, and a SIGTERM in a silent death by the signal (143).
        # It has nothing to undo (its output is only printed), so the process just ends.
        stop = _exit_at_once(lambda: "interrupted")
        before = {sig: signal.getsignal(sig) for sig in _LOADING_SIGNALS}
        for sig, handler in before.items():
            # An inherited ignore is kept (a script's `arena ratings ... &`): it was replaced,
            # and a Ctrl-C meant for the script ended the ratings, exit 130.
            if handler is not signal.SIG_IGN:
                signal.signal(sig, stop)
        try:
            result = command(*args, **kwargs)
        finally:
            for sig, handler in before.items():
                signal.signal(sig, handler)
        _to_the_end(before=before)
        return result

    return cast(F, reading)


@contextlib.contextmanager
def _run_loading(said: Callable[[], str]) -> Iterator[None]:
    """While a run reads its flags and loads the director, Ctrl-C and SIGTERM end the process at
    once: the line ``said()``, exit code 130 (nothing is made yet, nothing to undo). Loaded, a
    SIGTERM is a Ctrl-C (:func:`sigterm_as_ctrl_c`) and a Ctrl-C a KeyboardInterrupt, which the
    run handles; refused (bad input), the handlers are put back as they were."""
    stop = _exit_at_once(said)
    before = {sig: signal.signal(sig, stop) for sig in _LOADING_SIGNALS}
    try:
        yield
    except BaseException:
        for sig, handler in before.items():
            signal.signal(sig, handler)
        raise
    # SIGTERM first, while a Ctrl-C still ends the process: no moment without a handler. An
    # inherited "ignore" of Ctrl-C is dropped, as sigterm_as_ctrl_c says why.
    sigterm_as_ctrl_c()
    ctrl_c = before[signal.SIGINT]
    ignored = ctrl_c is None or ctrl_c is signal.SIG_IGN
    signal.signal(signal.SIGINT, signal.default_int_handler if ignored else ctrl_c)


def _is_bad_input(error: ArenaError) -> bool:
    from arena.store import StoreError

    if isinstance(error, ConfigError | StoreError):
        return True
    # The ratings load scipy: when they are not loaded, the error cannot be theirs.
    ratings = sys.modules.get("arena.ratings.results")
    return ratings is not None and isinstance(error, ratings.RatingsError)


# ---- options shared by `run`, `demo` and `sprt` ------------------------------------------------

Players = Annotated[
    int | None, typer.Option("--players", help="Seats per table, 3 to 6 (default: 4).")
]
RulesPreset = Annotated[
    str | None,
    typer.Option("--rules", help="Rules preset (standard, omnibus, spot, ...; default: standard)."),
]
RuleOptions = Annotated[
    list[str] | None,
    typer.Option("--rule", help="A rules option NAME=VALUE (repeatable), e.g. --rule moon=best."),
]
GameTo = Annotated[
    int | None,
    typer.Option("--game-to", help="Play full games to POINTS instead of single hands."),
]
Concurrency = Annotated[
    int | None,
    typer.Option("--concurrency", help="Tables played at once (default: the number of cores)."),
]
Seed = Annotated[
    int | None,
    typer.Option(
        "--seed", help="The run's seed, 0 to 2**63 - 1; it fixes every deal (default: 1)."
    ),
]
MoveTime = Annotated[
    str | None,
    typer.Option(
        "--move-time",
        help="Time per move: milliseconds (1000), or with a unit (500ms, 1.5s) (default: 1000).",
    ),
]
TimeBank = Annotated[
    str | None,
    typer.Option(
        "--time-bank",
        help="Reserve per game, spent past the move time: ms, or with a unit (default: 10s).",
    ),
]
Out = Annotated[
    str | None,  # text, not a Path: typer reads an empty --out "" as "." (the current folder)
    typer.Option(
        "--out", help="Folder for replays and bot logs (default: the database's name + -out)."
    ),
]
ConfigFile = Annotated[
    Path | None, typer.Option("--config", help="A TOML file with any of these settings.")
]
Port = Annotated[
    int | None,
    typer.Option("--port", help="The referee's port on 127.0.0.1 (default: any free one)."),
]
MaxFaults = Annotated[
    int | None,
    typer.Option(
        "--max-faults",
        help="Faults a bot may make in a game before its seat is forfeited (default: 3).",
    ),
]
Strict = Annotated[
    bool | None,
    typer.Option(
        "--strict/--no-strict",
        help=(
            "Forfeit a seat at its first fault (default: off; either flag overrides a config "
            "file's strict)."
        ),
    ),
]
Grace = Annotated[
    str | None,
    typer.Option(
        "--grace",
        help="How long a disconnected bot may take to reconnect before forfeiting (default: 5s).",
    ),
]


def _do_run(
    *,
    bots: list[str],
    players: int | None,
    rules: str | None,
    rule: list[str],
    format: str | None,
    candidate: str | None,
    boards: int | None,
    game_to: int | None,
    concurrency: int | None,
    seed: int | None,
    move_time: str | None,
    time_bank: str | None,
    db: str | Path | None,
    out: str | None,
    config: Path | None,
    port: int | None,
    max_faults: int | None = None,
    strict: bool | None = None,
    grace: str | None = None,
) -> None:
    # A Ctrl-C (or SIGTERM) is said in one line wherever it lands: while the flags are read and
    # the director loaded (trio, the referee, numpy, scipy: seconds), by _run_loading; then by
    # the guards, and between them by the except below. A KeyboardInterrupt that left the
    # command would reach typer, which ends it with 130 and no word.
    database: Path | None = None  # the database, once the flags name it
    run_id: str | None = None
    try:
        with _run_loading(lambda: _loading_text(database, run_id)):
            from arena.config import build_config, load_toml

            settings = _guard(
                lambda: build_config(
                    load_toml(config) if config is not None else None,
                    bots=bots,
                    players=players,
                    rules=rules,
                    rule=rule,
                    format=format,
                    candidate=candidate,
                    boards=boards,
                    game_to=game_to,
                    concurrency=concurrency,
                    seed=seed,
                    move_time=move_time,
                    time_bank=time_bank,
                    db=db,
                    out=out,
                    port=port,
                    max_faults=max_faults,
                    strict=strict,
                    grace=grace,
                )
            )
            database, run_id = settings.db, settings.run_id
            # Imported once the flags are good: the ratings bring numpy, scipy and matplotlib.
            from arena.director.progress import make_reporter
            from arena.director.run import run_batch
            from arena.director.summary import print_summary

        outcome = _guard(
            lambda: _reading(settings.db, lambda: run_batch(settings, make_reporter(_progress()))),
            database,
            run_id,
        )
        if outcome.output_closed:  # stopped as by Ctrl-C; the same command resumes
            output_closed()
        if outcome.interrupted and outcome.stored >= outcome.total:
            # Stopped after the last game was stored (while the bots stopped): nothing to resume.
            _fail(_all_stored_text(outcome.total, settings.db), EXIT_INTERRUPTED)
        if outcome.interrupted:
            _fail(
                f"interrupted: {outcome.stored} of {outcome.total} games stored in {settings.db}; "
                "run the same command again to resume",
                EXIT_INTERRUPTED,
            )
        console = _console()
        console.print(
            f"run {outcome.run_id}: {outcome.stored} of {outcome.total} games in {settings.db} "
            f"({outcome.played} played now in {outcome.elapsed_s:.1f} s); replays and logs in "
            f"{settings.out}",
            markup=False,
            highlight=False,
        )
        _guard(
            lambda: _reading(
                settings.db,
                lambda: print_summary(console, settings.db, outcome.run_id, settings.out),
            ),
            database,
            run_id,
        )
        # The same line as during the summary.
        _to_the_end(lambda: _all_stored_text(outcome.total, settings.db))
    except KeyboardInterrupt:
        # Between the guarded steps: the same words as in them.
        _fail(_interrupted_text(database, run_id), EXIT_INTERRUPTED)


@app.command()
def run(
    bot: Annotated[
        list[str] | None,
        typer.Option(
            "--bot", help="A bot NAME=COMMAND (repeatable); with none, the sample bots play."
        ),
    ] = None,
    players: Players = None,
    rules: RulesPreset = None,
    rule: RuleOptions = None,
    format: Annotated[
        str | None,
        typer.Option(
            "--format", help="round-robin (every group of bots) or gauntlet (with --candidate)."
        ),
    ] = None,
    candidate: Annotated[
        str | None,
        typer.Option("--candidate", help="The gauntlet's bot: it meets every group of the others."),
    ] = None,
    boards: Annotated[
        int | None,
        typer.Option(
            "--boards", help="Deals per group of bots, each in every seat rotation (default: 10)."
        ),
    ] = None,
    game_to: GameTo = None,
    concurrency: Concurrency = None,
    seed: Seed = None,
    move_time: MoveTime = None,
    time_bank: TimeBank = None,
    db: Annotated[
        str | None, typer.Option("--db", help="SQLite database (default: arena.db).")
    ] = None,
    out: Out = None,
    config: ConfigFile = None,
    port: Port = None,
    max_faults: MaxFaults = None,
    strict: Strict = None,
    grace: Grace = None,
) -> None:
    """Play a batch of bot processes; resumable: run the same command again to carry on."""
    _do_run(
        bots=bot or [],
        players=players,
        rules=rules,
        rule=rule or [],
        format=format,
        candidate=candidate,
        boards=boards,
        game_to=game_to,
        concurrency=concurrency,
        seed=seed,
        move_time=move_time,
        time_bank=time_bank,
        db=db,
        out=out,
        config=config,
        port=port,
        max_faults=max_faults,
        strict=strict,
        grace=grace,
    )


@app.command()
def demo(
    boards: Annotated[
        int, typer.Option("--boards", help="Deals, each in every seat rotation.")
    ] = DEMO_BOARDS,
    # Its own help: the four sample bots fill 3 or 4 seats, not the 3 to 6 of `arena run`.
    players: Annotated[
        int | None,
        typer.Option(
            "--players", help="Seats per table, 3 or 4 (the four sample bots; default: 4)."
        ),
    ] = None,
    rules: RulesPreset = None,
    rule: RuleOptions = None,
    game_to: GameTo = None,
    concurrency: Concurrency = None,
    seed: Seed = None,
    move_time: MoveTime = None,
    time_bank: TimeBank = None,
    db: Annotated[Path, typer.Option("--db", help="SQLite database.")] = Path(DEMO_DB),
    out: Out = None,
    port: Port = None,
) -> None:
    """A quick round robin of the four sample bots, then their ratings (an `arena run`)."""
    from arena.config import SAMPLE_BOTS
    from arena.rules import MAX_PLAYERS

    if players is not None and len(SAMPLE_BOTS) < players <= MAX_PLAYERS:
        # build_config's advice, more --bot flags, is no flag of the demo's.
        _fail(
            f"--players {players}: the demo's {len(SAMPLE_BOTS)} sample bots fill 3 or "
            f"{len(SAMPLE_BOTS)} seats; for {players}, give `arena run` {players} or more "
            "--bot NAME=COMMAND (a sample bot may come twice under two names)"
        )
    _do_run(
        bots=[],
        players=players,
        rules=rules,
        rule=rule or [],
        format=None,
        candidate=None,
        boards=boards,
        game_to=game_to,
        concurrency=concurrency,
        seed=seed,
        move_time=move_time,
        time_bank=time_bank,
        db=db,
        out=out,
        config=None,
        port=port,
    )


@app.command()
@_reads_only
def replay(
    game: Annotated[
        str,
        typer.Argument(
            help="A table id (b3-g2-r1), the game id in the bots' logs (g25-b3-g2-r1), or a "
            "game number."
        ),
    ],
    db: Annotated[Path, typer.Option("--db", help="SQLite database.")] = Path("arena.db"),
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the JSON-lines replay instead.")
    ] = False,
) -> None:
    """Print a stored game trick by trick: the deal, the passes, every card and fault."""
    from arena.director.replay import replay_text
    from arena.store import Store, lookup_failure, replay_lines
    from arena.table import GameRecord
    from arena.text import terminal_line

    def load() -> tuple[int, GameRecord]:
        # The store's words ("x.db: no such database") said no way out; a path that cannot be
        # looked up at all (exists() raises) is left to the store, which says why.
        if lookup_failure(db) is None and not db.exists():
            raise ConfigError(_no_database(db))
        with Store.open(db, create=False) as store:
            _, number, record = store.find_game(game)
        return number, record

    number, record = _guard(lambda: _reading(db, load))
    stdout_or_closed()
    if as_json:
        for line in replay_lines(record):
            typer.echo(json.dumps(line, separators=(",", ":")))
        return
    for text in replay_text(record, number):
        # A fault's detail may quote an organiser's ban reason (any text): its control
        # characters and line breaks escaped, as a bot's are.
        typer.echo(terminal_line(text))


@app.command()
@_reads_only
def ratings(
    db: Annotated[Path, typer.Option("--db", help="SQLite database.")] = Path("arena.db"),
    format: Annotated[
        str, typer.Option("--format", help="table, json or csv (text: the same as table).")
    ] = "table",
    crosstable: Annotated[bool, typer.Option("--crosstable", help="Add the crosstable.")] = False,
    los: Annotated[
        bool, typer.Option("--los", help="Add the likelihood-of-superiority matrix.")
    ] = False,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            help="Write the ratings plot to FILE (.png, .svg, .pdf or another format matplotlib "
            "writes) and the history to FILE-history in the same format.",
        ),
    ] = None,
    anchor: Annotated[
        str | None, typer.Option("--anchor", help="The bot rated 0 (default: the mean is 0).")
    ] = None,
    run_id: Annotated[
        str | None, typer.Option("--run", help="Only this run of the database.")
    ] = None,
    method: Annotated[
        IntervalChoice,
        typer.Option(
            "--method",
            help="How the intervals are found, in the table, JSON, CSV and both plots: sandwich "
            "(the cluster-robust covariance) or bootstrap (resample whole boards and refit; with "
            "--plot, again at each of the history's 15 points).",
        ),
    ] = IntervalChoice.SANDWICH,
    samples: Annotated[
        int | None,
        typer.Option(
            "--samples",
            help=f"The bootstrap's resamples, {MIN_BOOTSTRAP_SAMPLES} to "
            f"{MAX_BOOTSTRAP_SAMPLES} (default: {BOOTSTRAP_SAMPLES}).",
        ),
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option(
            "--seed",
            help="The bootstrap's seed, 0 to 2**63 - 1; the same seed gives the same intervals "
            "(default: 0).",
        ),
    ] = None,
) -> None:
    """Rate the bots of a database: Elo with intervals clustered by board."""
    from arena.config import MAX_SEED
    from arena.store import Store, load_results

    formats = {"table": "text", "text": "text", "json": "json", "csv": "csv"}
    if run_id == "":  # would rate every run, as if --run were not given
        _fail("--run '': give a run id (a run's summary line shows it), or leave --run out")
    if anchor == "":
        _fail("--anchor '': give a bot's name, or leave --anchor out (the mean is then 0)")
    if format not in formats:
        _fail(f"--format {format!r}: choose one of table, json, csv")
    if formats[format] == "csv" and (crosstable or los):
        # A CSV file is one table, the ratings; JSON holds the crosstable and LOS matrix always.
        _fail(
            "--crosstable and --los add tables to the table view: with --format csv give neither "
            "(--format json holds both)"
        )
    bootstrap = method is IntervalChoice.BOOTSTRAP
    for flag, given in (("--samples", samples), ("--seed", seed)):
        if given is not None and not bootstrap:
            _fail(
                f"{flag} {given}: only the bootstrap resamples; add --method bootstrap, "
                f"or leave {flag} out"
            )
    if samples is not None and not MIN_BOOTSTRAP_SAMPLES <= samples <= MAX_BOOTSTRAP_SAMPLES:
        _fail(
            f"--samples {samples}: give {MIN_BOOTSTRAP_SAMPLES} to {MAX_BOOTSTRAP_SAMPLES} "
            f"resamples (default: {BOOTSTRAP_SAMPLES})"
        )
    if seed is not None and not 0 <= seed <= MAX_SEED:
        _fail(f"--seed {seed}: the bootstrap's seed is a whole number from 0 to {MAX_SEED}")
    if plot is not None:
        _check_plot(plot, db)
    # Imported once the flags are good: the ratings bring numpy, scipy and matplotlib.
    from arena.ratings.report import plot_paths, render_ratings

    def rate() -> None:
        if not db.exists():
            raise ConfigError(_no_database(db))
        if run_id is not None:
            with Store.open(db, create=False) as store:
                if not store.has_run(run_id):
                    _no_such_run(db, run_id, [r.run_id for r in store.runs()])
        results = load_results(db, run_id)
        if not results:
            with Store.open(db, create=False) as store:
                stored = sum(
                    len(store.finished(r.run_id))
                    for r in store.runs()
                    if run_id in (None, r.run_id)
                )
            if stored:
                # Kept, but not results (see load_results): "no game stored" would be untrue.
                where = f"--run {run_id}" if run_id is not None else f"--db {db}"
                raise ConfigError(
                    f"{where}: none of its {stored} stored game(s) can be rated: each was "
                    "interrupted (or its referee failed), so its scores say nothing about the bots"
                )
        if not results and run_id is not None:
            with Store.open(db, create=False) as store:
                _no_such_run(db, run_id, [r.run_id for r in store.runs() if r.run_id != run_id])
        if not results:
            with Store.open(db, create=False) as store:
                runs = store.runs()
            if runs:  # stopped before its first game (a kill): the same command plays it
                command = "arena sprt" if runs[0].kind == "sprt" else "arena run"
                raise ConfigError(
                    f"--db {db}: no game stored yet: its run {runs[0].run_id} stopped before "
                    f"its first game; run the same {command} command again to play it"
                )
            raise ConfigError(f"--db {db}: no game stored")
        sizes = {len(r.players) for r in results}
        if plot is not None and len(sizes) > 1:
            # Named per table size (NAME-4p.png): known only now, and still before the report,
            # which was printed before a file of them was refused.
            _check_plot_files(plot, plot_paths(plot, sizes), db)
        try:
            render_ratings(
                results,
                fmt=formats[format],
                with_crosstable=crosstable,
                with_los=los,
                plot=plot,
                anchor=anchor,
                method=method.value,
                bootstrap_samples=BOOTSTRAP_SAMPLES if samples is None else samples,
                seed=0 if seed is None else seed,
                console=_console(),
            )
        except OSError as e:  # a file named per table size (NAME-4p.png) that was not checked
            if e.filename is None:  # the output, not the plot's file: see OnceCommand.invoke
                raise
            raise ConfigError(
                f"--plot {plot}: cannot write {e.filename} ({e.strerror}); give another file"
            ) from None

    _guard(lambda: _reading(db, rate))


def _no_such_run(db: Path, run_id: str, known: list[str]) -> NoReturn:
    """Refuse ``--run`` naming a run with no game in the database, naming its runs."""
    raise ConfigError(
        f"--run {run_id}: no game stored for that run in {db}; "
        + (f"its runs: {', '.join(known)}" if known else "leave --run out")
    )


def _no_database(db: Path) -> str:
    """The line for a ``--db`` of ``arena ratings`` or ``arena replay`` that does not exist: the
    databases beside it, as a newcomer's `arena demo` stores its games in arena-demo.db, and a
    bare `arena ratings` then looked for arena.db."""
    try:
        found = sorted(p.name for p in db.parent.glob("*.db") if p.is_file())
    except OSError:
        found = []
    where = "this folder" if db.parent == Path() else str(db.parent)
    shown = ", ".join(found[:5]) + (", ..." if len(found) > 5 else "")
    return f"--db {db}: no such database; give --db the database a run stored its games in" + (
        f" ({where} has {shown})" if found else f" (none in {where}: arena run --db PATH makes one)"
    )


OPAQUE_PLOTS = frozenset({"eps", "ps"})
"""Plot formats matplotlib writes without transparency (PostScript): refused."""


def _check_plot(plot: Path, db: Path) -> None:
    """Refuse a plot file that cannot be written, or that is the database ``db`` read, before
    the ratings are fitted and printed."""
    from matplotlib.figure import Figure

    from arena.ratings.report import history_path, missing_program

    kinds = {
        k: v for k, v in Figure().canvas.get_supported_filetypes().items() if k not in OPAQUE_PLOTS
    }
    kind = plot.suffix.lstrip(".").lower()
    if kind in OPAQUE_PLOTS:
        # matplotlib writes them, drawing each see-through interval band of the history opaque:
        # the last drawn hid the others, and the lines under it.
        _fail(
            f"--plot {plot}: PostScript has no transparency, and the history's interval bands "
            "would hide each other; give a file ending in .pdf or .svg (vector), or .png"
        )
    if kind not in kinds:
        _fail(
            f"--plot {plot}: give a file ending in .png, .svg or .pdf ({', '.join(sorted(kinds))})"
        )
    program = missing_program(kind)
    if program is not None:  # else a traceback once the report is printed and the plot drawn
        _fail(
            f"--plot {plot}: matplotlib writes .{kind} with {program} (LaTeX), which is not "
            "installed; install it, or give a file ending in .png, .svg or .pdf"
        )
    folder = plot.parent
    existing = next((p for p in (folder, *folder.parents) if p.exists()), folder)
    if existing.exists() and not existing.is_dir():
        _fail(f"--plot {plot}: {existing} is a file, not a folder; give a file in a folder")
    if existing != folder:
        _fail(f"--plot {plot}: folder {folder} does not exist; make it first or give another")
    _check_plot_files(plot, [plot, history_path(plot)], db)


def _check_plot_files(plot: Path, paths: Sequence[Path], db: Path) -> None:
    """Refuse ``--plot``'s files (``paths``) if one cannot be written or is the database."""
    for path in paths:
        # "Only read": a database named like a plot (`--db r.pdf --plot r.pdf`) was overwritten.
        if path.resolve() == db.resolve():
            kind = "history plot" if path.stem.endswith("-history") else "plot"
            what = "the plot" if path == plot else f"its {kind} {path}"
            _fail(
                f"--plot {plot}: {what} would overwrite the database --db {db}; give another file"
            )
        why = _cannot_write(path)
        if why:
            _fail(f"--plot {plot}: cannot write {path} ({why}); give a file you can write")


def _cannot_write(path: Path) -> str:
    """Why ``path`` cannot be written as a file ("" if it can), found by trying."""
    if path.is_dir():
        return "it is a folder"
    existed = path.exists()
    try:
        with path.open("ab"):
            pass
    except OSError as e:
        return e.strerror or str(e)
    if not existed:
        # The file the try made: a dangling link's target, not the link (the link stays, as
        # the plot is written through it).
        Path(os.path.realpath(path)).unlink(missing_ok=True)
    return ""


@app.command()
def sprt(
    bot: Annotated[
        list[str] | None,
        typer.Option(
            "--bot", help="NAME=COMMAND, exactly twice: A (the base) then B (the challenger)."
        ),
    ] = None,
    filler: Annotated[
        list[str] | None,
        typer.Option(
            "--filler",
            help="NAME=COMMAND of a bot filling a seat (repeatable); sample bots fill the rest.",
        ),
    ] = None,
    elo0: Annotated[
        float,
        typer.Option("--elo0", help="B's Elo advantage under H0, -2000 to 2000, below --elo1."),
    ] = 0.0,
    elo1: Annotated[
        float,
        typer.Option("--elo1", help="B's Elo advantage under H1, -2000 to 2000, above --elo0."),
    ] = 20.0,
    alpha: Annotated[
        float,
        typer.Option(
            "--alpha",
            help="Chance of accepting H1 when H0 holds, above 0 and below 1 "
            "(with --beta: a sum below 1).",
        ),
    ] = 0.05,
    beta: Annotated[
        float,
        typer.Option(
            "--beta",
            help="Chance of accepting H0 when H1 holds, above 0 and below 1 "
            "(with --alpha: a sum below 1).",
        ),
    ] = 0.05,
    max_boards: Annotated[
        int,
        typer.Option(
            "--max-boards", help=f"Stop undecided after this many boards, 1 to {MAX_SPRT_BOARDS}."
        ),
    ] = DEFAULT_MAX_BOARDS,
    players: Players = None,
    rules: RulesPreset = None,
    rule: RuleOptions = None,
    game_to: GameTo = None,
    concurrency: Concurrency = None,
    seed: Seed = None,
    move_time: MoveTime = None,
    time_bank: TimeBank = None,
    db: Annotated[Path, typer.Option("--db", help="SQLite database.")] = Path(SPRT_DB),
    out: Out = None,
    port: Port = None,
) -> None:
    """Is B stronger than A? Duplicate boards until a sequential probability ratio test decides."""
    # As a run: a Ctrl-C or SIGTERM while it reads its flags and loads the director (trio, the
    # referee, scipy: a second or more) ended in exit 130 without a word, or 143.
    database: Path | None = None  # the database, once the flags name it
    try:
        with _run_loading(lambda: _loading_text(database)):
            from arena.config import build_config
            from arena.director.progress import StartHooks, make_reporter
            from arena.director.sprt import check_max_boards, run_sprt, sprt_bots
            from arena.ratings.sprt import MAX_ELO, Sprt, SprtDecision, count_text, number_text

            for flag, value in (("--elo0", elo0), ("--elo1", elo1)):
                if not -MAX_ELO <= value <= MAX_ELO:  # inf would print "accepted ... by inf Elo"
                    _fail(
                        f"{flag} {number_text(value)}: give a finite Elo difference from "
                        f"{-MAX_ELO:g} to {MAX_ELO:g}, e.g. {flag} {0 if flag == '--elo0' else 20}"
                    )
            if not elo0 < elo1:
                _fail(
                    f"--elo0 {number_text(elo0)} --elo1 {number_text(elo1)}: give --elo0 below "
                    "--elo1, e.g. --elo0 0 --elo1 20"
                )
            for flag, p in (("--alpha", alpha), ("--beta", beta)):
                if not 0 < p < 1:  # nan too
                    _fail(
                        f"{flag} {number_text(p)}: a chance of error, above 0 and below 1, "
                        f"e.g. {flag} 0.05"
                    )
            if not alpha + beta < 1:
                _fail(
                    f"--alpha {number_text(alpha)} --beta {number_text(beta)}: their sum must be "
                    "below 1, e.g. 0.05 each"
                )
            _guard(lambda: check_max_boards(max_boards))
            pair = bot or []
            if len(pair) != 2:
                _fail(
                    f"--bot is given {len(pair)} time(s): give it twice, A=COMMAND then B=COMMAND"
                )
            k = players if players is not None else STANDARD_PLAYERS
            flags = _guard(lambda: sprt_bots(pair[0], pair[1], filler or [], k))
            settings = _guard(
                lambda: build_config(
                    bots=list(flags),
                    players=players,
                    rules=rules,
                    rule=rule or [],
                    game_to=game_to,
                    concurrency=concurrency,
                    seed=seed,
                    move_time=move_time,
                    time_bank=time_bank,
                    db=db,
                    out=out,
                    port=port,
                )
            )
            database = settings.db
        # -0 is 0: the header said "H0 elo -0" (adding 0.0 makes -0.0 0.0, as the status does).
        elo0, elo1 = elo0 + 0.0, elo1 + 0.0
        test = _guard(lambda: Sprt(elo0=elo0, elo1=elo1, alpha=alpha, beta=beta))
        a, b = settings.bot_names[:2]
        console = _console()
        headed = False

        def header() -> None:
            # Once the games start (its bots are up), or at the end for a test decided before this
            # call: a refusal before that (another run in the database, a bot that cannot start)
            # is its one line alone.
            nonlocal headed
            if not headed:
                headed = True
                console.print(
                    f"SPRT {b} (B) against {a} (A) at {', '.join(settings.bot_names)}: "
                    f"H0 elo {number_text(elo0)}, H1 elo {number_text(elo1)}, "
                    f"alpha {number_text(alpha)}, beta {number_text(beta)}",
                    markup=False,
                    highlight=False,
                )

        # (SIGTERM is a Ctrl-C from here on: _run_loading set it so once loaded.)
        # --max-boards is a cap: its games are not what the test will play.
        inner = make_reporter(_progress(), label="arena sprt", stops_when="the test decides")
        reporter = StartHooks(inner, before=header)
        outcome = _guard(
            lambda: run_sprt(
                settings,
                test,
                max_boards=max_boards,
                reporter=reporter,
                on_board=lambda t: reporter.note(t.status),
            ),
            settings.db,
            interrupted=lambda: _sprt_interrupted_text(settings, max_boards),
        )
        if outcome.run is not None and outcome.run.output_closed:
            output_closed()
        header()  # a test decided before this call plays nothing, so nothing started
        if outcome.run_id and settings.db.exists():
            # A verdict may owe to faults (timeouts, illegal cards, the SDK answering for a bot
            # whose code raised) rather than play: it said nothing of them. Before the test's
            # last two lines, which stay last.
            from arena.director.summary import print_faults

            print_faults(console, settings.db, outcome.run_id, settings.out, only_if_any=True)
        console.print(outcome.status, markup=False, highlight=False, soft_wrap=True)
        if outcome.run is not None and outcome.run.interrupted:
            if outcome.decision is not SprtDecision.CONTINUE:
                # Stopped while the games in play at the decision were finishing: the decision is
                # final all the same, and there is nothing to resume (it said to resume, and no
                # verdict).
                console.print(test.verdict(a, b), markup=False, highlight=False, soft_wrap=True)
                _fail(
                    "interrupted after the decision (taken after "
                    f"{count_text(outcome.boards, 'board')}), while the games in play were "
                    "finishing (the test does not count them); the decision above stands, and "
                    "nothing is left to play (the same command prints it again)",
                    EXIT_INTERRUPTED,
                )
            n = outcome.boards
            if n >= max_boards:
                # Stopped as the bots stopped, after the cap's last board was stored: there is
                # nothing to resume (it said to, beside the run's own "nothing to resume").
                console.print(
                    f"no decision: stopped at the cap of {count_text(max_boards, 'board')} "
                    "(--max-boards)",
                    markup=False,
                    highlight=False,
                    soft_wrap=True,
                )
                _fail(_sprt_all_played_text(max_boards), EXIT_INTERRUPTED)
            _fail(
                f"interrupted after {count_text(n, 'board')}; run the same command again to resume",
                EXIT_INTERRUPTED,
            )
        if outcome.decision is SprtDecision.CONTINUE:
            cap = f"{max_boards} board" if max_boards == 1 else f"{max_boards} boards"
            verdict = f"no decision: stopped at the cap of {cap} (--max-boards)"
        else:
            verdict = test.verdict(a, b)
        console.print(verdict, markup=False, highlight=False, soft_wrap=True)
        _to_the_end()
    except KeyboardInterrupt:
        # Between the guarded steps: the same words as in them.
        _fail(_interrupted_text(database), EXIT_INTERRUPTED)


def _sprt_interrupted_text(settings: RunConfig, max_boards: int) -> str:
    """What an `arena sprt` stopped by Ctrl-C outside its run's own handling says: after the
    cap's last game was stored (as its bots stopped), that nothing is left (it said to carry
    on, beside the run's "nothing to resume")."""
    import sqlite3

    from arena.director.sprt import sprt_games_stored

    try:
        stored = sprt_games_stored(settings)
    except (ArenaError, OSError, sqlite3.Error, KeyboardInterrupt):
        return _interrupted_text(settings.db)
    if stored >= max_boards * settings.players:
        return _sprt_all_played_text(max_boards)
    return _interrupted_text(settings.db)


def _sprt_all_played_text(max_boards: int) -> str:
    """What an `arena sprt` stopped after the last game of its cap was stored says."""
    from arena.ratings.sprt import count_text  # loaded by then: sprt has read its flags

    return (
        f"interrupted after the last of the {count_text(max_boards, 'board')} (--max-boards) "
        "was stored; nothing is left to play (the same command prints the result again)"
    )


def _register_other_commands() -> None:
    """The competition server's commands (serve, bots, admin) and check-bot live with their
    packages; they add themselves here."""
    from arena.checkbot import register as register_checkbot
    from arena.server.cli import register as register_server

    register_server(app)
    register_checkbot(app)
    _once_everywhere(app)


def _load_what_typer_loads_late() -> None:
    """Load, under the guard, what typer loads only as it starts the command (its help's console;
    pydantic, to read the flags' values): a tenth of a second after the guard is lifted and before
    a command can say a Ctrl-C, which ended in a traceback or in exit 130 without a word."""
    import importlib

    late = ["typer.rich_utils"]
    if any(not word.startswith("-") for word in sys.argv[1:]):
        # A command's flags are read (pydantic); `arena --version` and `arena` alone read none
        # and need not wait for it.
        late.append("typer._adapters")
    for name in late:
        with contextlib.suppress(ImportError):  # typer 0.29's own modules, which may change
            importlib.import_module(name)


_register_other_commands()
_load_what_typer_loads_late()
_unguard_loading(_BEFORE_LOADING)


def run_typer(application: typer.Typer, prog_name: str) -> NoReturn:
    """Run a typer app, with a usage error (bad flag, missing value) on one line, exit code 2.

    Typer would draw the error in a box under the usage; its parser's exceptions are private
    types, so they are recognised by what they offer (a message and an exit code).
    """
    # Guarded again until the command runs (OnceCommand.invoke): typer builds the command and
    # reads its flags first, where a Ctrl-C was a traceback and a SIGTERM a silent 143. (The
    # guard set as this module loads is lifted at its end, for programs that only import it.)
    _STARTING.update(_guard_loading())
    command = typer.main.get_command(application)
    _help_stops_on_a_closed_pipe()
    _unencodable_as_question_marks()
    if not _current_folder_exists() and not _only_asks_for_help(command, sys.argv[1:]):
        # Every relative path (the default --db, --out, a bot's script) is read from it: a
        # command run there ended in a FileNotFoundError traceback, or in "[Errno 2]" alone.
        print(
            f"{prog_name}: error: the current folder no longer exists (it was removed after "
            "the shell went there): cd to one that does and run the command again",
            file=sys.stderr,
        )
        raise SystemExit(2)
    try:
        code = command.main(prog_name=prog_name, standalone_mode=False)
        _flush_output()  # the help's or version's
    except (typer.Abort, KeyboardInterrupt):
        print(f"{prog_name}: interrupted", file=sys.stderr)
        raise SystemExit(130) from None
    except OSError as e:
        if not is_output_failure(e):
            raise
        output_failed(e)
    except UnicodeEncodeError as e:
        # An argument in another encoding than UTF-8 (a Latin-1 terminal's "é"), which Python
        # keeps as lone surrogates: fine in a path, a traceback where it is stored as text (a
        # ban's reason, a run id, a game's key), the change not made.
        from arena.config import is_utf8

        bad = next((a for a in sys.argv[1:] if not is_utf8(a)), None)
        if bad is None or "surrogates not allowed" not in str(e.reason):
            raise
        print(
            f"{prog_name}: error: {bad!r} is not UTF-8 text (it holds bytes of another "
            "encoding); give it in UTF-8 (nothing was changed)",
            file=sys.stderr,
        )
        raise SystemExit(2) from None
    except Exception as e:
        message, exit_code = getattr(e, "format_message", None), getattr(e, "exit_code", None)
        if message is None or not isinstance(exit_code, int):
            raise
        try:
            if type(e).__name__ == "NoArgsIsHelpError":  # no arguments: the help is the answer
                print(message())
                _flush_output()
                raise SystemExit(0) from None
            where = getattr(getattr(e, "ctx", None), "command_path", None) or prog_name
            said = f"arena: error: {_in_words(e, message())} (see {where} --help)"
            print(said, file=sys.stderr)
        except BrokenPipeError:
            # `arena run --nosuch 2>&1 | true`: exit 1 (the print's own error), not 141. Out
            # of typer here, so its Exit is turned into the exit it stands for.
            try:
                output_closed()
            except typer.Exit as closed:
                raise SystemExit(closed.exit_code) from None
        raise SystemExit(exit_code) from None
    raise SystemExit(code if isinstance(code, int) else 0)


def _in_words(error: Exception, message: str) -> str:
    """A flag's bad value in the words of the other refusals, not the validator's: typer
    said "Invalid value for '--boards': Input should be a valid integer, unable to parse
    string as an integer", and "Value error, 'foo' is not one of 'sandwich', 'bootstrap'."."""
    said = getattr(error, "message", None)
    flag_valued = re.fullmatch(r"Option '(--[\w-]+)' does not take a value\.", str(said))
    if flag_valued:
        return f"{flag_valued[1]} takes no value: give {flag_valued[1]} alone"
    opts = getattr(getattr(error, "param", None), "opts", None)
    if not isinstance(said, str) or not opts:
        return message
    flag = max(opts, key=len)  # the long form, as the README and --help name it
    choices = re.fullmatch(r"Value error, ('.*') is not one of (.*)\.", said)
    if choices:
        names = choices[2].replace("'", "")
        return f"{flag} {choices[1]}: choose one of {names}"
    if said.startswith("Input should be a valid integer"):
        return f"{flag}: give a whole number"
    if said.startswith("Input should be a valid number"):
        return f"{flag}: give a number"
    return message


def _only_asks_for_help(command: Any, args: list[str]) -> bool:
    """Whether ``args`` only ask for help or the version (`arena`, `arena bots` alone print
    their help): answered wherever the command is run."""
    if {"--help", "--version"} & set(args):
        return True
    node = command
    for word in args:
        # A group's subcommands by name (typer's own click, whose types are private).
        subcommands = getattr(node, "commands", None)
        if not isinstance(subcommands, dict) or word not in subcommands:
            return False
        node = subcommands[word]
    return isinstance(getattr(node, "commands", None), dict)


def _current_folder_exists() -> bool:
    """Whether the process's current folder is still there (``git clean`` may remove it)."""
    try:
        os.getcwd()
    except FileNotFoundError:
        return False
    return True


def _unencodable_as_question_marks() -> None:
    """Write "?" for a character the output's encoding lacks: under ``PYTHONIOENCODING=latin-1``
    (or an ASCII terminal) the tables' "−", "±" and "∞" ended a finished run in a
    UnicodeEncodeError traceback, its results unprinted."""
    import codecs

    for stream in (sys.stdout, sys.stderr):
        encoding = getattr(stream, "encoding", None)
        errors = getattr(stream, "errors", None)
        # Python's C or POSIX locale (LC_ALL=C with its UTF-8 mode off) writes with
        # "surrogateescape": a "−" failed as under "strict".
        if stream is None or not encoding or errors not in ("strict", "surrogateescape"):
            continue
        with contextlib.suppress(LookupError, AttributeError, ValueError):
            if codecs.lookup(encoding).name not in ("utf-8", "utf-16", "utf-32"):
                if errors == "surrogateescape":
                    codecs.register_error(_BYTES_OR_QUESTION_MARK, _bytes_or_question_mark)
                    errors = _BYTES_OR_QUESTION_MARK
                else:
                    errors = "replace"
                stream.reconfigure(errors=errors)  # type: ignore[union-attr]


_BYTES_OR_QUESTION_MARK = "arena.bytes-or-question-mark"


def _bytes_or_question_mark(error: UnicodeError) -> tuple[str | bytes, int]:
    """As "surrogateescape" (a file name's undecodable bytes written back as they were), with
    "?" for any other character the encoding lacks."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    part = error.object[error.start : error.end]
    if all("\udc80" <= c <= "\udcff" for c in part):
        return bytes(ord(c) - 0xDC00 for c in part), error.end
    return "?" * len(part), error.end


def _help_stops_on_a_closed_pipe() -> None:
    """Have typer's help (``arena run --help | head -1``) stop with 141 as every command does:
    its rich console exits 1 on a closed pipe."""
    from typer import rich_utils

    made = rich_utils._get_rich_console
    if getattr(made, "stops_on_a_closed_pipe", False):
        return

    def console(stderr: bool = False) -> Console:
        if not stderr:
            stdout_or_closed()  # `arena run --help >&-`: rich wrote nothing, exit 0
        made_console = made(stderr)
        made_console.on_broken_pipe = output_closed  # type: ignore[method-assign]
        return made_console

    console.stops_on_a_closed_pipe = True  # type: ignore[attr-defined]
    rich_utils._get_rich_console = console


def entry() -> NoReturn:
    """The `arena` command."""
    run_typer(app, "arena")


if __name__ == "__main__":
    entry()
