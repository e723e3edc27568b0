"""The competition server's commands: ``arena serve``, ``arena bots ...``, ``arena admin ...``.

A thin typer layer: every command parses its flags, calls the library and prints the outcome;
a bad input is one line on standard error and exit code 2. Wire it into the main CLI with
``register(app)``.
"""

from __future__ import annotations

import contextlib
import errno
import http.client
import ipaddress
import json
import logging
import os
import re
import shlex
import signal
import socket
import sqlite3
import ssl
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

import typer
from rich.table import Table
from rich.text import Text

from arena.config import check_port
from arena.errors import ArenaError
from arena.openfiles import check_serve_open_files
from arena.pem import NO_CERTIFICATE_BLOCK
from arena.referee.loop import run as run_loop
from arena.server.accounts import (
    AccountError,
    AccountsBusy,
    AccountStatus,
    AccountStore,
    check_not_a_batch,
    check_note,
    read_accounts,
)
from arena.server.config import STOP_SIGNALS, load_server_config
from arena.store import StoreError, cannot_write
from arena.text import terminal_line, terminal_safe

__all__ = ["DEFAULT_DB", "DEFAULT_WEB_URL", "register"]

DEFAULT_DB = Path("comp.db")
DEFAULT_PORT = 50051
DEFAULT_WEB_PORT = 8080
DEFAULT_WEB_URL = f"http://127.0.0.1:{DEFAULT_WEB_PORT}"
ADMIN_TOKEN_ENV = "ARENA_ADMIN_TOKEN"
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
HTTP_TIMEOUT_S = 30.0
URL_FORM = "http://HOST:PORT (https:// if the server was started with --tls-cert)"

_DB = typer.Option(DEFAULT_DB, "--db", help="The competition database (SQLite).")


def _fail(message: str, code: int = EXIT_BAD_INPUT) -> typer.Exit:
    # One line, its control characters escaped: it may quote what a server answered.
    typer.echo(f"arena: error: {terminal_line(message)}", err=True)
    return typer.Exit(code)


class _OutputError(ArenaError):
    """Standard output cannot be written (a full disk): not bad input."""


def _say(text: Any, done: str = "") -> None:
    """Print ``text`` (a string or a rich renderable) on standard output. A closed pipe stops
    the command quietly, exit 141, as every command's does; another failure to write (a full
    disk, ``> /dev/full``) is one line, exit 1, saying whether the change was made (``done``)
    rather than a traceback."""
    # Not at the top: arena.cli imports this module.
    from arena.cli import PipeConsole, is_output_failure, output_failed

    if sys.stdout is None:
        # Started with standard output closed (`>&-`): typer.echo wrote nowhere, then flush()
        # was an AttributeError's traceback, exit 1, for a change that was made.
        output_failed(OSError(errno.EBADF, "it is closed"), done)
    try:
        if isinstance(text, str):
            typer.echo(text)
            sys.stdout.flush()
        else:
            PipeConsole().print(text)
    except BrokenPipeError:
        raise
    except OSError as e:
        if not is_output_failure(e):
            raise
        output_failed(e, done)


def _check_db(db: Path, *, create: bool) -> bool:
    """Whether ``db`` is still to be made; one line and exit 2 if it cannot be used (a missing
    file is such an error unless ``create``)."""
    if db.is_dir():
        raise _fail(f"--db {db}: is a folder, not a database file")
    if not db.parent.is_dir():
        raise _fail(f"--db {db}: folder {db.parent} does not exist")
    if db.exists():
        return False
    if not create:
        raise _fail(
            f"--db {db}: no such database; give the right path, or start one with "
            f"`arena bots add NAME --db {shlex.quote(str(db))}`"
        )
    return True


def _refused(db: Path, e: ArenaError) -> typer.Exit:
    """One line for a change the account store refused: exit 2 for bad input, 1 for a database
    another program keeps locked (nothing wrong with the command: it may be run again)."""
    if isinstance(e, AccountsBusy):
        typer.echo(f"arena: error: --db {db}: {e}", err=True)
        return typer.Exit(EXIT_FAILED)
    return _fail(str(e))


def _stop_quietly_until_serving() -> None:
    """A Ctrl-C or SIGTERM from here until the server's own handlers take over (as it makes the
    database) ends the start at once with exit code 0, as one a moment later does: the server
    was stopped before it served, and nothing is made yet. (While the server's modules loaded,
    a Ctrl-C said "arena: interrupted", exit 130, and a SIGTERM killed the process, 143.)"""

    def stop(signum: int, frame: object) -> None:
        # Not an exception raised into whatever runs then (an import): the process just ends.
        os._exit(0)

    for sig in STOP_SIGNALS:
        if signal.getsignal(sig) in (signal.default_int_handler, signal.SIG_DFL):
            signal.signal(sig, stop)  # an inherited "ignore" (a script's `&`) is kept


def _reason_given(reason: str | None) -> str | None:
    """``--reason`` as given; refused in one line if empty or spaces alone, as every empty value
    is (it was read as no reason: the earlier one stayed, or the default was told)."""
    if reason is not None and not reason.strip():
        raise _fail(
            f"--reason {reason!r}: an empty reason was given; give one, or leave --reason out"
        )
    try:
        # Here, not only at the server: a server down made it exit 1 ("cannot reach"), which a
        # script retries, for a reason no server would ever take.
        return check_note(reason)
    except AccountError as e:
        raise _fail(f"--reason: {e}") from None


def _new_db_text(db: Path) -> str:
    """The notice of a database being started at ``db``."""
    return f"--db {db}: no such database yet; starting a new one there"


def _say_new_db(db: Path) -> None:
    """Say on stderr that ``db`` is being started: a mistyped path would otherwise go unseen
    (accounts added where no server looks, or a server running an empty competition)."""
    typer.echo(_new_db_text(db), err=True)


def _accounts(db: Path, *, create: bool = False, announce: bool = True) -> AccountStore:
    """The account store in ``db``; a missing file is an error unless ``create`` (adding);
    ``announce``: say so when it is made (else the caller does, once it is kept)."""
    new = _check_db(db, create=create)
    try:
        # An account in a batch run's database (arena.db for comp.db, say) could never be used:
        # arena serve refuses that database.
        check_not_a_batch(db)
        store = AccountStore(db)
    except (StoreError, ArenaError) as e:
        raise _fail(str(e)) from None
    if new and announce:
        _say_new_db(db)
    return store


def _host_problem(host: str) -> str:
    """Why ``--host`` cannot be listened on ("" if it can): not an address, or not this
    machine's. Tried before starting, because gRPC's own failure comes with log lines of its own
    and names neither the flag nor the reason."""
    if not host.strip():  # "--host : not an address ..." read as a stray colon
        return (
            f"--host {host!r}: no address was given; give one of this machine's addresses, e.g. "
            "127.0.0.1 or 0.0.0.0 (all)"
        )
    try:
        infos = socket.getaddrinfo(host, 0, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as e:
        return (
            f"--host {host}: not an address or name this machine can resolve "
            f"({e.strerror or e}); give one of its addresses, e.g. 127.0.0.1 or 0.0.0.0 (all)"
        )
    except UnicodeError:
        # Python's IDNA encoding refuses a name before any lookup (a label over 63 characters,
        # a character no host name may hold): that was a traceback.
        return (
            f"--host {host!r}: not an address or a host name (too long a label, or a character "
            "no host name holds); give one of this machine's addresses, e.g. 127.0.0.1 or "
            "0.0.0.0 (all)"
        )
    for family, kind, proto, _, address in infos:
        with socket.socket(family, kind, proto) as probe:
            try:
                probe.bind(address)
            except OSError as e:
                return (
                    f"--host {host}: not an address of this machine ({e.strerror or e}); give "
                    "one of its addresses, e.g. 127.0.0.1 or 0.0.0.0 (all)"
                )
    return ""


def _cannot_bind(host: str, port: int) -> str:
    """Why ``host:port`` cannot be listened on now ("" if it can, or for port 0); the host is
    known to be this machine's."""
    if port == 0:
        return ""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    for family, kind, proto, _, address in infos:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers do
            try:
                probe.bind(address)
            except OSError as e:
                return e.strerror or str(e)
    return ""


def _check_log_apart(log_file: Path, db: Path, others: dict[str, Path | None]) -> None:
    """Refuse a --log that is the database (or a file kept beside it) or another input: the log's
    lines were appended to the database, which then wrote over them (to the settings, which the
    next start could not read)."""
    from arena.config import sidecars
    from arena.store import database_lock

    log_at = log_file.resolve()
    db_at = db.resolve()
    # Its lock file too: the running server's pid, which another start reads.
    if log_at == db_at or log_at in (*sidecars(db_at), database_lock(db)):
        raise _fail(
            f"--log {log_file}: is the --db {db} (or SQLite's file beside it); give the "
            "log a file of its own"
        )
    for flag, path in others.items():
        if path is not None and path.resolve() == log_at:
            raise _fail(f"--log {log_file}: is the {flag} file; give the log a file of its own")


def serve_command(
    db: Path = _DB,
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Address to listen on (0.0.0.0 for bots on other machines)."
    ),
    port: int = typer.Option(DEFAULT_PORT, "--port", help="Port for the bots (gRPC); 0 picks one."),
    web_port: int = typer.Option(
        DEFAULT_WEB_PORT, "--web-port", help="Port for the leaderboard page; 0 picks one."
    ),
    tls_cert: Annotated[
        Path | None, typer.Option("--tls-cert", help="PEM certificate chain.")
    ] = None,
    tls_key: Annotated[Path | None, typer.Option("--tls-key", help="PEM private key.")] = None,
    config: Annotated[
        Path | None, typer.Option("--config", help="Competition settings (TOML).")
    ] = None,
    log_file: Annotated[
        Path | None,
        typer.Option("--log", help="Write the JSON-lines log here (default: standard error)."),
    ] = None,
) -> None:
    """Run the competition: bots connect with their tokens, a ladder plays, a page shows it."""
    _stop_quietly_until_serving()
    from arena.server.app import Ports, host_port, serve
    from arena.server.logs import EXIT_LOG_GONE, setup_logging

    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]  # an IPv6 address as URLs write it: [::1]
    bad_host = _host_problem(host)
    if bad_host:
        raise _fail(bad_host)
    if port == web_port != 0:
        # Each probe alone finds the port free; the second listener then failed after the
        # first had started, with the referee's log lines before the refusal.
        raise _fail(
            f"--web-port {web_port}: the same port as --port; give the page a port of its "
            "own (0: any free one)"
        )
    for flag, value in (("--port", port), ("--web-port", web_port)):
        try:
            check_port(flag, value)
        except ArenaError as e:
            raise _fail(str(e)) from None
        busy = _cannot_bind(host, value)
        if busy:
            raise _fail(
                f"{flag} {value}: cannot listen on {host}:{value} ({busy}); "
                "pick another port (0: any free one)"
            )
    for flag, path, holds in (
        ("--tls-cert", tls_cert, "certificate chain"),
        ("--tls-key", tls_key, "private key"),
    ):
        # Named by its flag: the referee's own check said "TLS: cannot read cert.pem: No such
        # file or directory", with neither the flag nor what the file should be.
        if path is not None and not path.is_file():
            # /dev/null exists: "no such file" of it sent the reader looking for a typo.
            what = (
                "is a folder"
                if path.is_dir()
                else "not a regular file"
                if path.exists()
                else "no such file"
            )
            raise _fail(f"{flag} {path}: {what}; give the server's {holds} (a PEM file)")
    try:
        settings = load_server_config(config)
        # As servers do: under the usual 1,024, a thousand idle connections to the bots' port
        # took every descriptor, and neither a new bot nor the page (nor `arena admin`) could
        # connect. Checked before anything is made: too few for the server's own start ended
        # in a segmentation fault, or in an error that blamed the database.
        check_serve_open_files()
    except (ArenaError, OSError) as e:
        raise _fail(str(e)) from None
    if sys.stdout is None or (log_file is None and sys.stderr is None):
        # Started with no output for the banner (`>&-`), or none for the log: as a closed pipe,
        # quietly, exit 141, before anything is made. (It served on, to fail at the banner with
        # a traceback; or the event loop aborted as it closed a socket given descriptor 1.)
        from arena.cli import output_closed

        output_closed()
    if log_file is not None:
        inputs = {"--tls-cert": tls_cert, "--tls-key": tls_key, "--config": config}
        _check_log_apart(log_file, db, inputs)
    try:
        log_handler = setup_logging(log_file)
    except OSError as e:
        raise _fail(
            f"--log {log_file}: {e.strerror or e}; give a file in a folder that exists"
        ) from None
    new_db = _check_db(db, create=True)
    banner_closed: list[bool] = []  # the banner's (or notice's) reader had gone: as a closed pipe

    def ready(ports: Ports) -> None:
        scheme = "https" if tls_cert else "http"
        shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
        try:
            # Said once the database is made, so that a refusal (a bad certificate) is not
            # preceded by a promise; still before the banner, where a mistyped --db would pass.
            if new_db and log_file is None:
                # The server's log is JSON lines on stderr: the notice is one of them (a plain
                # line among them stopped `arena serve 2>&1 >/dev/null | jq`, and the server).
                logging.getLogger("arena.server").info(_new_db_text(db), extra={"db": str(db)})
            elif new_db:
                _say_new_db(db)
            typer.echo(
                f"serving {settings.name!r}: bots connect to {host_port(shown, ports.bots)}; "
                f"leaderboard at {scheme}://{host_port(shown, ports.web)}/",
            )
            sys.stdout.flush()
        except BrokenPipeError:
            banner_closed.append(True)
            raise
        except OSError as e:
            from arena.cli import output_failure_text

            raise _OutputError(output_failure_text(e, "the server stopped")) from None

    try:
        code = run_loop(
            serve(
                db,
                settings,
                host=host,
                port=port,
                web_port=web_port,
                tls_cert=tls_cert,
                tls_key=tls_key,
                ready=ready,
                log_handler=log_handler,
            )
        )
    except _OutputError as e:
        typer.echo(f"arena: error: {e}", err=True)
        raise typer.Exit(EXIT_FAILED) from None
    except sqlite3.OperationalError as e:
        said = cannot_write(e)
        if said is None:
            raise
        # A restart on a full disk (recovering the tables a crash left) was a traceback.
        typer.echo(f"arena: error: --db {db}: {said}, then start the server again", err=True)
        raise typer.Exit(EXIT_FAILED) from None
    except (ArenaError, OSError) as e:
        if banner_closed:
            # `arena serve | head -0`: quietly, exit 141, as every command on a closed output
            # (it said "arena: error: [Errno 32] Broken pipe", exit 2).
            raise BrokenPipeError(errno.EPIPE, "the output's reader has gone") from None
        raise _fail(str(e)) from None
    finally:
        # The server has stopped: only the exit is left. A Ctrl-C or SIGTERM pressed twice to
        # stop it, the second landing now, must not turn a clean stop into a death by signal.
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
    failure = log_handler.failure
    if code == EXIT_LOG_GONE and failure is not None and not isinstance(failure, BrokenPipeError):
        # Not a closed pipe: the log could not be written (a full disk). A failure, exit 1, as
        # any command's output that cannot be written; said on stderr if it is not the log.
        where = f"--log {log_file}" if log_file is not None else "standard error"
        with contextlib.suppress(OSError):
            typer.echo(
                f"arena: error: {where}: cannot write the log "
                f"({failure.strerror or failure}), so the server stopped; free some space or "
                "give --log a file where there is room",
                err=True,
            )
        raise typer.Exit(EXIT_FAILED)
    if code == EXIT_LOG_GONE and log_file is not None:
        # Standard error may still be read: say why the server stopped. (The log on standard
        # error gone, there is no one to tell.)
        with contextlib.suppress(OSError):
            typer.echo(
                f"arena: error: --log {log_file}: its reader has gone (a closed pipe), so the "
                "server stopped; log to a plain file and follow it with `tail -f` to keep "
                "serving whatever reads it",
                err=True,
            )
    raise typer.Exit(code)


bots_app = typer.Typer(
    help="Bot accounts: add (prints a token once), list, revoke, ban.", no_args_is_help=True
)


@bots_app.command("add")
def bots_add(
    name: str = typer.Argument(
        ..., help="The bot's name, as shown in standings (no two may differ only in case)."
    ),
    db: Path = _DB,
    new_token: bool = typer.Option(
        False, "--new-token", help="Give an existing bot a new token (the old one stops working)."
    ),
) -> None:
    """Add a bot and print its token (shown only this once; the database keeps a hash)."""
    _issue(
        db,
        lambda a, show: a.add(name, new_token_for_existing=new_token, deliver=show),
        f"bot {name!r}: its " + ("new token" if new_token else "token"),
        "the old token still works" if new_token else "the bot was not added",
    )
    typer.echo(
        f"bot {name!r}: give its author the token above; it is shown only now "
        "(set it as ARENA_TOKEN for the bot)",
        err=True,
    )


def _issue(
    db: Path, make: Callable[[AccountStore, Callable[[str], None]], str], what: str, undone: str
) -> None:
    """Make a token with ``make``, printing it on standard output before the change is
    committed. If it cannot be written, the change is rolled back (and a database made only for
    it removed) and one line says so (``what`` could not be written, so ``undone``), exit 1: a
    token that never reached anyone would lock its bot out, or end the old token for nothing."""
    new = _check_db(db, create=True)
    accounts = _accounts(db, create=True, announce=False)
    failed: OSError | None = None
    refused: ArenaError | None = None
    try:
        make(accounts, _write_token)
    except ArenaError as e:
        refused = e
    except OSError as e:
        failed = e
    finally:
        accounts.close()
    if new and (failed or refused):  # e.g. a new token for a bot in a mistyped --db
        for path in (db, *(db.with_name(db.name + end) for end in ("-wal", "-shm"))):
            path.unlink(missing_ok=True)
    if refused is not None:
        raise _refused(db, refused)
    if failed is not None:
        # Whatever is still buffered for the dead output would fail again at exit, with a
        # traceback-like complaint: it goes nowhere instead.
        if sys.stdout is not None:
            with contextlib.suppress(OSError, ValueError):  # not a file: nothing to redirect
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
                os.close(devnull)
        why = failed.strerror or str(failed)
        typer.echo(
            f"arena: error: {what} could not be written to standard output ({why}), so {undone}",
            err=True,
        )
        raise typer.Exit(EXIT_FAILED)
    if new:
        _say_new_db(db)


def _write_token(token: str) -> None:
    """Print a token and make sure it left the process (a closed or full output raises)."""
    if sys.stdout is None:  # started with standard output closed (`>&-`)
        raise OSError(errno.EBADF, "it is closed")
    sys.stdout.write(token + "\n")
    sys.stdout.flush()


@bots_app.command("list")
def bots_list(
    db: Path = _DB,
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """List the bots (never their tokens)."""
    _check_db(db, create=False)
    try:
        # Read only: a database in a folder this user may not write is listed (as `arena
        # ratings` reads it), and listing makes nothing beside it.
        check_not_a_batch(db)
        rows = read_accounts(db)
    except (StoreError, ArenaError) as e:
        raise _fail(str(e)) from None
    if as_json:
        _say(
            json.dumps(
                [
                    {
                        "name": a.name,
                        "status": a.status.value,
                        "note": a.note,
                        "created_at": a.created_at,
                    }
                    for a in rows
                ]
            )
        )
        return
    # The path on a line of its own, as text: a title, centred over the table, was wrapped at
    # its spaces (even under COLUMNS=200), and the path could not be copied.
    _say(f"bots in {terminal_safe(str(db))}")
    table = Table()
    # Folded, never cut: a 64-character name cut to fit 80 columns ("Lxxx…") could be another's.
    table.add_column("bot", overflow="fold")
    table.add_column("status")
    table.add_column("note", overflow="fold")
    for a in rows:
        # As text, not markup: a reason with square brackets ("[/x] cheating") was a rich
        # MarkupError traceback, and "[bold]" vanished into styling. Its control characters
        # escaped, as a bot's output is: "\x1b]0;...\x07" retitled the terminal.
        table.add_row(Text(a.name), a.status.value, Text(terminal_safe(a.note)))
    _say(table)


@bots_app.command("revoke")
def bots_revoke(
    name: str = typer.Argument(..., help="The bot."),
    db: Path = _DB,
    reason: Annotated[
        str | None,
        typer.Option("--reason", help="Why (kept with the account; without it, any earlier one)."),
    ] = None,
) -> None:
    """Forget a bot's token: it no longer identifies anyone (its results stay)."""
    _reason_given(reason)

    def revoke(accounts: AccountStore) -> str:
        change = accounts.revoke(name, reason)
        banned = " (it stays banned)" if change.status is AccountStatus.BANNED else ""
        if not change.already:
            return f"bot {name!r}: token revoked{banned}"
        # Exit 0 as for a second ban: the token is gone, as asked; but nothing was revoked now.
        already = f"bot {name!r}: its token was already revoked{banned}"
        if change.note_changed:
            return f"{already}; reason now {change.note!r}"
        return (
            f"{already}, so nothing changed; to give it a new one: "
            f"`arena bots add {name} --new-token --db {shlex.quote(str(db))}`"
        )

    _account_change(db, revoke, "")


@bots_app.command("ban")
def bots_ban(
    name: str = typer.Argument(..., help="The bot."),
    db: Path = _DB,
    reason: Annotated[
        str | None,
        typer.Option(
            "--reason",
            help="Why (shown to the bot when refused; without it, any earlier reason stays).",
        ),
    ] = None,
) -> None:
    """Refuse a bot from its next connection on (`arena admin ban` also ends live sessions)."""
    _reason_given(reason)

    def ban(accounts: AccountStore) -> str:
        change = accounts.ban(name, reason)
        if not change.already:
            return f"bot {name!r}: banned"
        if change.note_changed:
            return f"bot {name!r}: already banned; reason now {change.note!r}"
        return f"bot {name!r}: already banned (reason {change.note!r}), so nothing changed"

    _account_change(db, ban, "")


@bots_app.command("unban")
def bots_unban(name: str = typer.Argument(..., help="The bot."), db: Path = _DB) -> None:
    """Let a banned bot play again."""
    _account_change(db, lambda a: _unbanned(name, db, a.unban(name)), "")


def _unbanned(name: str, db: Path, status: AccountStatus) -> str:
    """What an unban did: a bot whose token was revoked before the ban still has none."""
    if status is AccountStatus.REVOKED:
        return (
            f"bot {name!r}: unbanned, but its token was revoked: give it a new one with "
            f"`arena bots add {name} --new-token --db {shlex.quote(str(db))}`"
        )
    return f"bot {name!r}: may play again"


def _account_change(db: Path, change: Callable[[AccountStore], str | None], done: str) -> None:
    """Make ``change``; say ``done``, or what ``change`` returned instead."""
    accounts = _accounts(db)
    try:
        said = change(accounts)
    except ArenaError as e:
        raise _refused(db, e) from None
    finally:
        accounts.close()
    _say(said or done, "the change is made")


admin_app = typer.Typer(
    help="Organiser actions on a running server (pause, kick, ban, ...).", no_args_is_help=True
)

_URL = typer.Option(DEFAULT_WEB_URL, "--url", help="The server's leaderboard address.")
_Token = Annotated[
    str | None,
    typer.Option(
        "--token", envvar=ADMIN_TOKEN_ENV, help=f"The admin token (or ${ADMIN_TOKEN_ENV})."
    ),
]
_Ca = Annotated[Path | None, typer.Option("--ca", help="PEM file to trust for an https --url.")]


@admin_app.command("token")
def admin_token(db: Path = _DB) -> None:
    """Make a new admin token (the old one stops working) and print it, shown only now."""
    _issue(
        db,
        lambda a, show: a.new_admin_token(deliver=show),
        "a new admin token",
        "the admin token was not changed",
    )
    typer.echo(f"admin token above: shown only now; use it as ${ADMIN_TOKEN_ENV}", err=True)


def _trusting(ca: Path) -> ssl.SSLContext:
    """A client TLS context that trusts the certificate(s) in ``ca``; one line if it cannot."""
    try:
        return ssl.create_default_context(cafile=str(ca))
    except FileNotFoundError:
        raise _fail(f"--ca {ca}: no such file; give the server's certificate (PEM)") from None
    except ssl.SSLError:
        raise _fail(
            f"--ca {ca}: not a PEM certificate ({NO_CERTIFICATE_BLOCK}); give the server's "
            "certificate"
        ) from None
    except OSError as e:
        raise _fail(
            f"--ca {ca}: cannot read it ({e.strerror or e}); give the server's certificate"
        ) from None


_NETLOC = re.compile(r"(?P<host>\[[^\[\]]*\]|[^\[\]:]*)(?::(?P<port>.*))?")
"""``HOST[:PORT]``, an IPv6 host in brackets; the port is checked apart, to name it."""


def _admin_url(url: str) -> str:
    """``--url`` checked before anything is sent (``http(s)://HOST[:PORT]``), without
    a trailing slash; one line naming what is wrong, and exit 2, if it is not such an address.

    Checked here, on the text as written, because urllib reports each of these differently, some
    with a traceback (``http://[::1:8080``), and urlsplit lets some through that then go astray:
    an empty ``?`` or ``#`` took the admin path into it (POST / answered 405), and a ``user@``
    was looked up as part of the host name.
    """

    def bad(why: str) -> typer.Exit:
        return _fail(f"--url {url}: {why}; give the leaderboard's address as {URL_FORM}")

    if any(c.isspace() or not c.isprintable() for c in url):
        raise bad("has a space or a control character in it")
    if "://" not in url:
        if re.fullmatch(r"(\[[0-9A-Fa-f:.]+\]|[\w.-]+):\d+/?", url):  # HOST:PORT
            raise bad(f"no http:// or https:// in front (e.g. http://{url.rstrip('/')})")
        raise bad("not a URL")
    scheme, _, rest = url.partition("://")
    if scheme.lower() not in ("http", "https"):
        raise bad(f"{scheme}:// is not http:// or https://")
    netloc = re.split(r"[/?#]", rest, maxsplit=1)[0]
    tail = rest[len(netloc) :]
    if "?" in tail or "#" in tail:
        raise bad("the address takes no ?query or #fragment")
    if tail.strip("/"):
        # The admin paths (/api/admin/...) are added to it: a path here would be sent doubled.
        raise bad(f"the address takes no path ({tail})")
    if "@" in netloc:
        raise bad(
            f"the address takes no user@ part (give the admin token with --token or "
            f"${ADMIN_TOKEN_ENV})"
        )
    parts = _NETLOC.fullmatch(netloc)
    if parts is None:
        raise bad("an IPv6 address goes in brackets, with the port after them: http://[::1]:8080")
    host, port = parts["host"], parts["port"]
    if host.strip("[]") == "":
        if port is not None and ":" in port:  # an IPv6 address without its brackets
            raise bad("an IPv6 address goes in brackets: http://[::1]:8080")
        raise bad("no host")
    if host.startswith("["):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            raise bad(f"{host} is not an IPv6 address") from None
    else:
        try:
            # What the socket module does to a name before the lookup, done here: its
            # UnicodeError (a label over 63 characters, an empty one) was a traceback.
            host.encode("idna")
        except UnicodeError:
            raise bad(
                f"{host!r} is not a host name (a label over 63 characters, an empty one, or a "
                "character no host name holds)"
            ) from None
    if port == "":
        raise bad("no port after the ':'")
    if port is not None and not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
        raise bad(f"port {port!r} is not a number from 1 to 65535")
    return f"{scheme}://{netloc}"


_NOT_TLS = frozenset(
    {"WRONG_VERSION_NUMBER", "UNEXPECTED_EOF_WHILE_READING", "RECORD_LAYER_FAILURE"}
)
"""OpenSSL's reasons for a handshake answered in plain text (or hung up on): no TLS there."""


def _tls_speaks(url: str, ca: Path | None, *, verify: bool = True) -> str | None:
    """What the port of ``url`` speaks over TLS: "h2" (the bots' gRPC port of a server started
    with --tls-cert), "" (TLS, not HTTP/2: the leaderboard's), or None (no TLS handshake there).
    Asked only once a request there has failed; ``verify`` False only asks what the port speaks
    (no request is sent)."""
    parts = urlsplit(url)
    context = _trusting(ca) if ca is not None else ssl.create_default_context()
    if not verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    try:
        with (
            socket.create_connection((parts.hostname, parts.port or 443), HTTP_TIMEOUT_S) as raw,
            context.wrap_socket(raw, server_hostname=parts.hostname) as tls,
        ):
            return tls.selected_alpn_protocol() or ""
    except OSError:
        return None


_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes((0, 0, 0, 4, 0, 0, 0, 0, 0))
"""HTTP/2's client preface and an empty SETTINGS frame (RFC 9113 3.4)."""
_SETTINGS = 4
"""The type of an HTTP/2 SETTINGS frame, in the fourth byte of its header."""


def _plain_h2(url: str) -> bool:
    """Whether the port of ``url`` speaks HTTP/2 without TLS (the bots' gRPC port of a server
    started without --tls-cert): it answers the HTTP/2 preface with a SETTINGS frame."""
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname, parts.port or 443), HTTP_TIMEOUT_S) as raw:
            raw.sendall(_H2_PREFACE)
            header = b""
            while len(header) < 4 and (more := raw.recv(9 - len(header))):
                header += more
    except OSError:
        return False
    return len(header) >= 4 and header[3] == _SETTINGS


def _grpc_over_tls(url: str, ca: Path | None) -> bool:
    """Whether ``url`` (https) is a TLS port that speaks HTTP/2 only: the bots' gRPC port of a
    server started with --tls-cert."""
    return _tls_speaks(url, ca) == "h2"


_HOST_MISMATCH = frozenset({62, 64})
"""OpenSSL's verify codes X509_V_ERR_HOSTNAME_MISMATCH and X509_V_ERR_IP_ADDRESS_MISMATCH."""
_OUT_OF_DATE = frozenset({9, 10})
"""OpenSSL's verify codes X509_V_ERR_CERT_NOT_YET_VALID and X509_V_ERR_CERT_HAS_EXPIRED."""


def _untrusted(url: str, reason: ssl.SSLCertVerificationError, ca: Path | None) -> str:
    """Why the server's certificate was refused, with what to change: every refusal said "give
    its certificate with --ca FILE", also to one who had, when the certificate was for another
    host name than the URL's or out of date (a server serving for weeks outlives its own)."""
    host = urlsplit(url).hostname
    if reason.verify_code in _HOST_MISMATCH:
        return (
            f"the server at {url} has a certificate made out for another host than {host} "
            f"({reason.verify_message}); give --url a host name the certificate holds"
        )
    if reason.verify_code in _OUT_OF_DATE:
        return (
            f"the server at {url} has a certificate out of date ({reason.verify_message}); "
            "the server needs a new one (arena serve --tls-cert)"
        )
    if ca is not None:
        return (
            f"the server at {url} has a certificate that --ca {ca} does not vouch for "
            f"({reason.verify_message}); give the certificate the server was started with "
            "(or the CA that signed it)"
        )
    return (
        f"the server at {url} has a certificate this machine does not trust "
        f"({reason.verify_message}); give its certificate with --ca FILE"
    )


def _unreachable_code(reason: object) -> int:
    """Exit 1 where nothing answered at the address (a server down, or still starting: a script
    may try again), 2 where something else answered there or the address names no host."""
    if isinstance(reason, http.client.RemoteDisconnected):  # something answered, not HTTP/1.1
        return EXIT_BAD_INPUT
    silent = isinstance(reason, ConnectionRefusedError | TimeoutError | ConnectionResetError)
    return EXIT_FAILED if silent else EXIT_BAD_INPUT


def _unreachable(url: str, reason: object, ca: Path | None = None) -> str:
    """Why the server at ``url`` gave no answer, in one line, with what to try instead."""
    scheme, _, rest = url.partition("://")
    if isinstance(reason, ssl.SSLCertVerificationError):
        return _untrusted(url, reason, ca)
    no_tls = isinstance(reason, ssl.SSLEOFError) or (
        isinstance(reason, ssl.SSLError) and reason.reason in _NOT_TLS
    )
    hung_up = no_tls or isinstance(reason, http.client.RemoteDisconnected)
    if hung_up and scheme.lower() == "https" and _grpc_over_tls(url, ca):
        # gRPC with TLS drops an HTTP/1.1 client, in the handshake or after it, by timing: that
        # said "did not speak TLS" (try http://) or "cannot reach the server", of a server that
        # speaks TLS and was reached.
        return (
            f"the server at {url} speaks gRPC, not HTTP/1.1: if that is the bots' port "
            f"(--port), give the leaderboard's port (--web-port) instead, as {URL_FORM}"
        )
    if no_tls and scheme.lower() == "https" and _plain_h2(url):
        # "try http://" sent the organiser to the same port, refused again, for the bots'.
        return (
            f"the server at {url} speaks gRPC without TLS, not HTTPS: if that is the bots' port "
            f"(--port), give the leaderboard's port (--web-port) instead, as {URL_FORM}"
        )
    if no_tls:
        return (
            f"the server at {url} did not speak TLS (it answered in plain text or hung up): "
            f"if it was started without --tls-cert, try --url http://{rest}"
        )
    if isinstance(reason, http.client.RemoteDisconnected) and scheme.lower() == "http":
        speaks = _tls_speaks(f"https://{rest}", ca, verify=False)
        if speaks == "h2":
            # The bots' port of a TLS server: "try https://" only led to the next refusal.
            return (
                f"the server at {url} speaks gRPC over TLS, not HTTP/1.1: that is the bots' "
                f"port (--port); give the leaderboard's port (--web-port) instead, as {URL_FORM}"
            )
        if speaks is not None:  # said for sure, not "if it was started with --tls-cert"
            return (
                f"the server at {url} speaks TLS (it was started with --tls-cert): try "
                f"--url https://{rest}"
            )
        return (
            f"the server at {url} hung up without an answer: "
            f"if it was started with --tls-cert, try --url https://{rest}"
        )
    why = reason.strerror or str(reason) if isinstance(reason, OSError) else str(reason)
    # The usual case is a server not running (or another port): said with what to check, where
    # "[Errno 111] Connection refused" alone left the organiser to guess.
    return (
        f"cannot reach the server at {url} ({why}): is arena serve running there? give --url "
        'the address it printed after "leaderboard at" (its --web-port)'
    )


def _post(url: str, token: str | None, action: str, body: dict[str, Any], ca: Path | None) -> None:
    url = _admin_url(url)
    # A token read from a file written on Windows ends in "\r": the server strips the header's
    # spaces, so it goes without them rather than as a header http.client refuses (a traceback).
    token = token.strip() if token else token
    if not token:
        raise _fail(f"give the admin token with --token or ${ADMIN_TOKEN_ENV}")
    if not (token.isascii() and token.isprintable()):
        bad = next(c for c in token if not (c.isascii() and c.isprintable()))
        raise _fail(
            f"the admin token holds {bad!r}, which no token has: give the token "
            "`arena admin token` printed (letters, digits, '-' and '_')"
        )
    request = urllib.request.Request(
        f"{url}/api/admin/{action}",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    context = _trusting(ca) if ca is not None else None
    try:
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S, context=context) as r:
            answer = r.read().decode()
    except urllib.error.HTTPError as e:
        text = e.read().decode(errors="replace")
        try:
            detail = str(json.loads(text)["error"])
        except (ValueError, KeyError, TypeError):
            # Not the server's {"error": ...}: something else answers at that address (it
            # said only "pause: 404 ", with an empty body).
            raise _fail(
                f"{action}: the server at {url} answered {e.code} {e.reason}, not as arena serve "
                'does: give --url the address it printed after "leaderboard at" (its --web-port)'
            ) from None
        # A 5xx is the server's state, not the request (a database another program locks, a
        # full disk): exit 1, "try again", where a 4xx is the request's (exit 2).
        raise _fail(
            f"{action}: {e.code} {detail}", EXIT_FAILED if e.code >= 500 else EXIT_BAD_INPUT
        ) from None
    except http.client.InvalidURL as e:  # what _admin_url did not foresee: still one line
        raise _fail(f"--url {url}: {e}; give the leaderboard's address as {URL_FORM}") from None
    except urllib.error.URLError as e:
        # Exit 1 when nothing answers (a server down, or still starting): a script may try
        # again; exit 2 for an answer that is not the server's (TLS to a plain port...).
        raise _fail(_unreachable(url, e.reason, ca), _unreachable_code(e.reason)) from None
    except OSError as e:  # raised while reading the answer, not wrapped by urllib
        raise _fail(_unreachable(url, e, ca), _unreachable_code(e)) from None
    except http.client.HTTPException:  # an answer, but not HTTP/1.1: the bots' gRPC port, say
        raise _fail(
            f"the server at {url} did not answer in HTTP: if that is the bots' port (--port), "
            f"give the leaderboard's port (--web-port) instead, as {URL_FORM}"
        ) from None
    # Printed outside the try: a closed or full output said "cannot reach the server" (exit 2)
    # of an action the server had done.
    # The answer as it came, but for control characters (whatever answers at --url chose it).
    _say(terminal_safe(answer), f"the server did {action}")


@admin_app.command("pause")
def admin_pause(url: str = _URL, token: _Token = None, ca: _Ca = None) -> None:
    """Stop forming new tables (running ones finish)."""
    _post(url, token, "pause", {}, ca)


@admin_app.command("resume")
def admin_resume(url: str = _URL, token: _Token = None, ca: _Ca = None) -> None:
    """Form tables again."""
    _post(url, token, "resume", {}, ca)


@admin_app.command("kick")
def admin_kick(
    session: str = typer.Argument(..., help="The session id (GET /api/lobby lists them)."),
    reason: str | None = typer.Option(None, "--reason", help="Told to the bot."),
    url: str = _URL,
    token: _Token = None,
    ca: _Ca = None,
) -> None:
    """End one session (the bot may reconnect)."""
    _post(url, token, "kick", {"session": session, "reason": _reason_given(reason) or ""}, ca)


@admin_app.command("ban")
def admin_ban(
    bot: str = typer.Argument(..., help="The bot."),
    reason: str | None = typer.Option(None, "--reason", help="Told to the bot."),
    url: str = _URL,
    token: _Token = None,
    ca: _Ca = None,
) -> None:
    """Ban a bot now: its token is refused and its sessions end."""
    _post(url, token, "ban", {"bot": bot, "reason": _reason_given(reason) or ""}, ca)


@admin_app.command("unban")
def admin_unban(
    bot: str = typer.Argument(..., help="The bot."),
    url: str = _URL,
    token: _Token = None,
    ca: _Ca = None,
) -> None:
    """Lift a ban."""
    _post(url, token, "unban", {"bot": bot}, ca)


def register(app: typer.Typer) -> None:
    """Add ``serve``, ``bots`` and ``admin`` to the main ``arena`` command."""
    app.command("serve")(serve_command)
    app.add_typer(bots_app, name="bots")
    app.add_typer(admin_app, name="admin")


# A module-level guard so that `python -m arena.server.cli` works on its own during development.
if __name__ == "__main__":  # pragma: no cover
    _main = typer.Typer(no_args_is_help=True)
    register(_main)
    logging.basicConfig()
    os.environ.setdefault("COLUMNS", "100")
    from arena.cli import run_typer

    run_typer(_main, "python -m arena.server.cli")
