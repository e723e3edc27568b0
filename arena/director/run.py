"""Run a batch: the referee in a thread, the bots in a supervised pool, the tables in trio.

:func:`run_batch` is `arena run`. In order, so that bad input costs nothing and leaves nothing:

1. the configuration is already valid (:func:`arena.config.build_config`); the schedule is built;
2. the database is checked: writable, and holding this run or none (another run is refused);
3. the referee starts on 127.0.0.1 (a port in use is refused), then every bot process starts and
   must connect (a command that fails or exits at once is refused, with its last words);
4. only then is the run recorded in the database (created if new) and the output folder kept;
5. ``concurrency`` workers take tables from the schedule, skipping those already stored, and hand
   each to the referee; each finished game is written (replay file, then one database
   transaction) under a shielded scope, so that a game whose result came back is never half-kept.

A bot process that dies during a game loses that game at once, as an engine crash does in
cutechess or fastchess: its restart gets a new token and could never take the seat back, so the
director has the referee forfeit the seat when the pool sees the exit (``Referee.forfeit_token``)
instead of letting the table wait out the reconnect grace.

Stopping: Ctrl-C or SIGTERM stops handing out tables, stops the referee (the games in play are
interrupted and not stored; they are played again on resume) and the bots, and returns with
``interrupted`` set. A game that ends in the referee's grace with a seat its bot left (a stop that
reached the bots too: systemd's, a shutdown's) is not stored either. A progress stream whose
reader has gone (``arena run 2>&1 | head -1``) stops the run the same way, with
``output_closed`` set instead: the finished games are kept.
A kill -9 loses only the games not yet committed. Running the same command again resumes: the
schedule is the same, the stored games are skipped.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import math
import os
import shutil
import signal
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import CancelledError, Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import trio

from arena.config import RunConfig, identity_hash
from arena.director.bots import Accounts, BotExit, BotPool, LogWriteError, log_path
from arena.director.progress import Standings
from arena.director.schedule import ScheduledTable, schedule
from arena.errors import ArenaError, ConfigError
from arena.openfiles import check_open_files
from arena.store import (
    SPRT_FORMAT,
    Store,
    check_writable,
    database_locked,
    holds_anothers,
    is_busy,
    not_made,
    write_replay,
)
from arena.table import FaultKind, GameRecord, TableSpec, Termination

__all__ = [
    "BATCH",
    "STARTUP_TIMEOUT_S",
    "Reporter",
    "RunOutcome",
    "StoreWriteError",
    "Table",
    "first_arena_error",
    "open_run_store",
    "play_tables",
    "run_batch",
]

BATCH = "batch"
"""The kind of run `arena run` stores."""
STARTUP_TIMEOUT_S = 30.0
"""How long a bot process has to connect at start-up (interpreters on a busy machine are slow)."""
LEFT_SETTLE_S = 2.0
"""How long a game its bots left (a Goodbye, a lost connection) waits before it is stored, for
a stop of the run that came with theirs (see ``_left_as_the_run_stopped``)."""
HOST = "127.0.0.1"

if TYPE_CHECKING:
    from arena.referee import Referee, RefereeConfig

T = TypeVar("T")


class Reporter(Protocol):
    """What the director tells the screen as it goes."""

    def start(self, total: int, done: int, standings: Standings, parallel: int = 1) -> None:
        """The run starts: ``done`` of ``total`` games are already stored (in ``standings``),
        ``parallel`` tables to be played at a time."""

    def game(self, record: GameRecord) -> None:
        """A game has been committed."""

    def note(self, text: str) -> None:
        """Something worth a line (a bot crashed and was restarted)."""

    def stop(self) -> None:
        """The run has ended (finished or interrupted)."""

    @property
    def closed(self) -> bool:
        """Whether the output's reader has gone (a closed pipe): the run then stops."""


@dataclass(frozen=True)
class RunOutcome:
    """What a call of :func:`run_batch` did."""

    run_id: str
    """The run's identity."""
    total: int
    """Games in the schedule."""
    stored: int
    """Games in the database now."""
    played: int
    """Games played and stored by this call."""
    interrupted: bool
    """Stopped by a signal: before the schedule was done, or after (``stored`` equal to
    ``total``: while the bots were being stopped at the end)."""
    elapsed_s: float
    """Wall time of this call."""
    exits: tuple[BotExit, ...]
    """Bot processes that died unexpectedly during this call."""
    output_closed: bool = False
    """Stopped because the progress output's reader had gone (a closed pipe)."""
    after_stop: int = 0
    """Of ``played``, the games stored after ``on_record`` asked to stop: they were in play
    then, and were finished rather than thrown away (a sequential test's after its decision)."""


class StoreWriteError(ArenaError):
    """The database or the output folder refused a write the run needs (a full disk): the run
    stops, bots and referee stopped as on Ctrl-C, and what was stored stays for the resume."""


@dataclass(frozen=True)
class Table:
    """A table to play and where its result goes in the store."""

    index: int
    """Key in the store (the schedule index)."""
    scheduled: ScheduledTable
    """The table."""


def first_arena_error(error: BaseException) -> ArenaError | None:
    """The first :class:`ArenaError` inside ``error`` (trio wraps errors in exception groups)."""
    if isinstance(error, ArenaError):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = first_arena_error(inner)
            if found is not None:
                return found
    return None


def interrupted(error: BaseException) -> bool:
    """Whether ``error`` is, or holds, a KeyboardInterrupt (a Ctrl-C trio did not handle)."""
    if isinstance(error, KeyboardInterrupt):
        return True
    if isinstance(error, BaseExceptionGroup):
        return any(interrupted(inner) for inner in error.exceptions)
    return False


def open_run_store(db: Path, run_id: str, kind: str, identity: dict[str, Any]) -> Store | None:
    """Open an existing database and make sure it holds this run or none (refuse another);
    None when there is no database yet, or an empty file (made only once the bots are up)."""
    check_writable(db)
    if not_made(db):
        # Made once the bots are up, so that a failed start leaves an empty file empty, not a
        # run's schema in it.
        return None
    store = Store.open(db)
    try:
        for other in store.runs():
            if other.run_id != run_id:
                store.claim(run_id, kind, identity, None)  # raises, naming the differences
    except BaseException:
        store.close()
        raise
    return store


def outermost_missing(path: Path) -> Path | None:
    """The outermost folder of ``path`` (itself included) that does not exist yet, if any: what
    a failed start removes, so that it leaves no empty parent of ``--out`` behind either."""
    missing = None
    for folder in (path, *path.parents):
        if folder.exists():
            break
        missing = folder
    return missing


OUT_MARK = ".arena-run.json"
"""The file in an output folder that names the run whose replays and logs it holds."""


def check_out(out: Path, run_id: str, db: Path) -> None:
    """Refuse an output folder that holds another run's replays and logs (its mark says so):
    replays are named by game number, and a second run's overwrote the first's. The same
    configuration stored in another database is another run too."""
    try:
        mark = json.loads((out / OUT_MARK).read_text())
    except (OSError, ValueError):
        return  # no mark (a new folder, or one an older version made): nothing to go by
    if not isinstance(mark, dict):
        return
    if mark.get("run_id") in (None, run_id) and not _another_database(mark.get("db"), db):
        return
    raise ConfigError(
        f"--out {out}: holds the replays and logs of another run (its database: "
        f"{mark.get('db', 'unknown')}), which this one would overwrite; give this run its own "
        "--out"
    )


def _another_database(marked: object, db: Path) -> bool:
    """Whether an output folder's mark names a database other than ``db`` that is still there
    (the same configuration run again under another --db wrote its replays over the first's;
    a database moved or renamed since is taken to be this one)."""
    if not isinstance(marked, str):
        return False
    try:
        return not os.path.samefile(marked, db)
    except OSError:  # one of the two is not there: the marked one gone, or this one not made
        return Path(marked).exists()


def mark_out(out: Path, run_id: str, db: Path) -> None:
    """Mark ``out`` as the output folder of the run ``run_id`` stored in ``db`` (again, if the
    database was moved since)."""
    mark = out / OUT_MARK
    text = json.dumps({"run_id": run_id, "db": str(db.resolve())}) + "\n"
    # Made whole under a name of its own, then linked in place only if no mark is there: two
    # runs started at once with one --out both passed check_out, and the second's replays
    # overwrote the first's. The one that links second finds the other's mark and is refused.
    draft = out / f"{OUT_MARK}.{os.getpid()}"
    draft.write_text(text)
    try:
        os.link(draft, mark)
        return
    except FileExistsError:
        pass
    finally:
        draft.unlink()
    check_out(out, run_id, db)
    if mark.read_text() != text:
        mark.write_text(text)  # this run's, its database moved since


def write_missing_replays(store: Store, run_id: str, out: Path) -> None:
    """Write the replay of every stored game of the run that has none under ``out``."""
    for game, record in list(store.replays_missing(run_id, out)):
        write_replay(out, game, record)


def check_port(port: int) -> None:
    """Refuse a port that is taken, before anything starts (one line, exit code 2)."""
    if port == 0:
        return
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # As gRPC binds: a port whose last connections wait out TIME_WAIT (the run just
        # stopped, and is resumed) is free to listen on; without this it was refused for a
        # minute after a Ctrl-C, though nothing listened there.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError as e:
            raise ConfigError(f"--port {port}: {HOST}:{port} is not free ({e.strerror})") from None


def run_batch(config: RunConfig, reporter: Reporter) -> RunOutcome:
    """Play every table of the configuration's schedule not yet stored (see the module doc)."""
    tables = schedule(config)
    check_writable(config.db)
    with database_locked(config.db, "arena run"):
        store = open_run_store(config.db, config.run_id, BATCH, config.identity())
        try:
            done = store.finished(config.run_id) if store is not None else set()
        except BaseException:
            if store is not None:
                store.close()
            raise
        todo = [Table(t.index, t) for t in tables if t.index not in done]
        return play_tables(
            config,
            todo,
            total=len(tables),
            done=len(done),
            store=store,
            kind=BATCH,
            reporter=reporter,
        )


def play_tables(
    config: RunConfig,
    todo: Iterable[Table],
    *,
    total: int | None,
    done: int,
    store: Store | None,
    kind: str,
    reporter: Reporter,
    per_bot: dict[str, int] | None = None,
    on_record: Callable[[Table, GameRecord], bool] | None = None,
    identity: dict[str, Any] | None = None,
) -> RunOutcome:
    """Start the referee and the bots, play ``todo`` with ``config.concurrency`` workers, store
    every game; ``on_record`` may return True to stop handing out tables (a sequential test).
    ``identity`` replaces the configuration's own (a sequential test adds its kind to it)."""
    if total is not None:
        # No more tables at once than are left to play: --concurrency has no ceiling, and each of
        # its units was a worker (and a process slot of every bot) made before the first game.
        at_once = min(config.concurrency, max(1, total - done))
        config = dataclasses.replace(config, concurrency=at_once)
    todo_list = todo
    if per_bot is not None:
        per_bot = {name: min(n, config.concurrency) for name, n in per_bot.items()}
    else:
        todo_list = list(todo)
        per_bot = {
            b.name: min(
                config.concurrency, sum(1 for t in todo_list if b.name in t.scheduled.spec.seats)
            )
            for b in config.bots
        }
    made_out = outermost_missing(config.out)  # with the parents made for it, if any
    db_existed = config.db.exists()
    started = time.monotonic()
    director = _Director(
        config,
        identity if identity is not None else config.identity(),
        store,
        kind,
        total,
        reporter,
        on_record,
    )
    try:
        check_out(config.out, director.run_id, config.db)
        if isinstance(todo_list, list) and not todo_list:
            if store is not None:
                write_missing_replays(store, director.run_id, config.out)
                mark_out(config.out, director.run_id, config.db)
            reporter.start(total or done, done, director.standings())
            reporter.stop()
            director.check_output()
            return director.outcome(done, started)
        check_port(config.port)
        check_open_files(sum(per_bot.values()))
        try:
            trio.run(director.main, todo_list, per_bot, done)
        except BaseException as e:
            error = first_arena_error(e)
            if isinstance(error, LogWriteError):
                raise director.cannot_log(error) from None
            if error is not None and error is not e:
                raise error from None
            if interrupted(e) and not isinstance(e, KeyboardInterrupt):
                # A Ctrl-C before the signal watcher is up, or a second one while stopping.
                raise KeyboardInterrupt from None
            raise
        return director.outcome(done, started)
    except BaseException:
        if not director.claimed:
            # Nothing was played: leave nothing behind that this call created.
            if director.store is not None and not db_existed:
                director.store.close()
                director.store = None
            if not db_existed and not holds_anothers(config.db):
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{config.db}{suffix}").unlink(missing_ok=True)
            if made_out is not None:
                shutil.rmtree(made_out, ignore_errors=True)
        raise
    finally:
        if director.store is not None:
            director.store.close()


@dataclass(frozen=True)
class _GameDone:
    """A finished game on its way to the store."""

    table: Table
    record: GameRecord
    crashed: tuple[int, ...]


class _Director:
    """The state of one call of :func:`play_tables` (one trio run)."""

    def __init__(
        self,
        config: RunConfig,
        identity: dict[str, Any],
        store: Store | None,
        kind: str,
        total: int | None,
        reporter: Reporter,
        on_record: Callable[[Table, GameRecord], bool] | None,
    ) -> None:
        self.config = config
        self.identity = identity
        self.run_id = identity_hash(identity)
        self.store = store
        self.kind = kind
        self.total = total
        self.reporter = reporter
        self.on_record = on_record
        self.claimed = False
        self.played = 0
        self._done = 0
        """Games of the run already stored when this call started."""
        self._unplayed: int | None = None
        """Games of the schedule not yet finished (None: an open-ended run, a sequential test)."""
        self.interrupted = False
        self.output_closed = False
        self._output_gone: trio.Event | None = None
        # Set to stop handing out tables (Ctrl-C, a closed output, a decided test, a pool that
        # gives up); made in the trio run.
        self._halt: trio.Event | None = None
        self.exits: list[BotExit] = []
        self._referee_stopped = False
        # Everything the database gets goes through one writer task, in order: the games and the
        # bot crashes share one connection, and a transaction must never interleave with another.
        self._writes, self._to_write = trio.open_memory_channel[_GameDone | BotExit](math.inf)
        self._pool: BotPool | None = None
        self._referee: _RefereeLike | None = None
        self._nursery: trio.Nursery | None = None
        # Written on the referee's loop while a table runs, read by its worker once the table's
        # record is back: table id -> seat -> the exit that forfeited it.
        self._crash_lock = threading.Lock()
        self._crash_seats: dict[str, dict[int, BotExit]] = {}
        self.stopped = False
        """Whether ``on_record`` has asked to stop."""
        self.after_stop = 0
        """Games stored after that: they were in play when it asked."""

    def outcome(self, done: int, started: float) -> RunOutcome:
        """What was done."""
        return RunOutcome(
            run_id=self.run_id,
            total=self.total if self.total is not None else done + self.played,
            stored=done + self.played,
            played=self.played,
            interrupted=self.interrupted,
            elapsed_s=time.monotonic() - started,
            exits=tuple(self.exits),
            output_closed=self.output_closed,
            after_stop=self.after_stop,
        )

    async def main(self, todo: Iterable[Table], per_bot: dict[str, int], done: int) -> None:
        """The whole run, inside trio."""
        from arena.referee import RefereeThread  # the referee brings grpc; load it only to play

        self._unplayed = None if self.total is None else self.total - done
        self._done = done
        accounts = Accounts()
        referee = RefereeThread(_referee_config(self.config), accounts)
        try:
            port = await trio.to_thread.run_sync(referee.start)
        except Exception as e:
            raise ConfigError(
                f"--port {self.config.port}: the referee cannot listen on "
                f"{HOST}:{self.config.port}: {e}"
            ) from None
        pool = BotPool(
            self.config.bots,
            per_bot,
            accounts,
            f"{HOST}:{port}",
            self.config.out,
            STARTUP_TIMEOUT_S,
            on_exit=self._bot_exited,
            before_stop=self._stop_referee_first,
        )
        self._pool = pool
        self._referee = referee
        self._output_gone = trio.Event()
        self._halt = trio.Event()
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                await nursery.start(pool.run)
                await trio.to_thread.run_sync(self._claim)
                self.reporter.start(
                    self.total or 0, done, self.standings(), self.config.concurrency
                )
                self.check_output()
                stop = self._halt
                nursery.start_soon(self._watch_signals, stop, referee, pool)
                nursery.start_soon(self._watch_output, stop, referee, pool)
                async with trio.open_nursery() as writing:
                    writing.start_soon(self._writer, stop)
                    try:
                        await self._play(iter(todo), referee, stop)
                    finally:
                        # The writer stores what is queued, then ends.
                        self._writes.close()
                # A batch played to its end tells the bots there are no more games, so that
                # they leave at once (exit 0) instead of waiting to reconnect.
                await self._stop_referee(referee, pool, finished=not stop.is_set())
                nursery.cancel_scope.cancel()
        finally:
            self.reporter.stop()
            with trio.CancelScope(shield=True):
                await self._stop_referee(referee, pool)  # once only; here after an error

    async def _stop_referee(
        self, referee: _RefereeLike, pool: BotPool, *, finished: bool = False
    ) -> None:
        # The bots lose their referee: from now on their exits are no crashes.
        pool.begin_stop()
        if not self._referee_stopped:
            self._referee_stopped = True
            await trio.to_thread.run_sync(functools.partial(referee.stop, finished=finished))

    async def _stop_referee_first(self) -> None:
        # However the pool ends (a crash loop raises in it), the referee stops before the bots:
        # the games in play get its shutdown grace, or are interrupted and played again on
        # resume, as on Ctrl-C. Bots stopped under a running table would each leave it (Goodbye
        # on SIGTERM), and that game would be stored with their seats forfeited, as their fault.
        if self._halt is not None:
            self._halt.set()  # no worker hands the stopped referee another table
        if self._referee is not None and self._pool is not None:
            await self._stop_referee(self._referee, self._pool)

    def standings(self) -> Standings:
        """The standings of the games already stored."""
        standings = Standings(self.config.bot_names)
        if self.store is not None:
            for bot, hands, points, faults in self.store.bot_totals(self.run_id):
                standings.add_totals(bot, hands, points, faults)
            for misbehaviour in self.store.bot_faults(self.run_id):
                standings.add_forfeits(misbehaviour.bot, misbehaviour.forfeits)
        return standings

    def _claim(self) -> None:
        if self.store is None:
            self.config.db.parent.mkdir(parents=True, exist_ok=True)
            self.store = Store.open(self.config.db)
        # A sequential test is open-ended (NULL, as the schema says): its total here is only this
        # start's --max-boards, which is not part of the run and may differ at the next start.
        total = None if self.kind == SPRT_FORMAT else self.total
        try:
            self.store.claim(self.run_id, self.kind, self.identity, total)
        except sqlite3.OperationalError as e:
            raise self._cannot_write(f"record the run in {self.config.db}", e) from None
        self.claimed = True
        try:
            self.config.out.mkdir(parents=True, exist_ok=True)
            mark_out(self.config.out, self.run_id, self.config.db)
            write_missing_replays(self.store, self.run_id, self.config.out)
        except OSError as e:
            raise self._cannot_write(f"write the replays under {self.config.out}", e) from None

    def _cannot_write(self, what: str, error: Exception, stored: int = 0) -> StoreWriteError:
        """The one line of a write the run cannot do (a full disk): what, why, what is kept and
        how to carry on. A traceback said none of it, and a full disk is no bad input."""
        why = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        # The fix to name: a database another program holds locked (a sqlite3 shell in a write,
        # a backup) needs letting go, not room on the disk.
        if isinstance(error, sqlite3.DatabaseError) and is_busy(error):
            why = f"the database is locked by another program ({why})"
            fix = "once it lets go,"
        else:
            fix = "make room (or fix the disk) and"
        if not self.claimed:
            return StoreWriteError(
                f"cannot {what}: {why}; nothing was stored: {fix} run the command again"
            )
        games = self._done + self.played + stored
        kept = f"{games} game{'' if games == 1 else 's'} of the run {'is' if games == 1 else 'are'}"
        return StoreWriteError(
            f"cannot {what}: {why}; {kept} stored in {self.config.db}: {fix} run the same "
            "command again to resume"
        )

    def cannot_log(self, error: LogWriteError) -> ArenaError:
        """The one line of a bot's log that refused a write (a full disk), as the database's."""
        if not self.claimed:
            # A failed start, which leaves nothing it made: as a database with no room for it.
            why = error.error.strerror or error.error
            return ConfigError(
                f"--out {self.config.out}: cannot write the log of bot {error.bot}, "
                f"{error.path} ({why}); make room (or fix the disk) and try again"
            )
        return self._cannot_write(f"write the log of bot {error.bot} ({error.path})", error.error)

    def check_output(self) -> None:
        """After the reporter was told something: if its reader has gone, stop the run."""
        if self.reporter.closed and not self.output_closed:
            self.output_closed = True
            if self._output_gone is not None:
                self._output_gone.set()

    async def _watch_output(self, stop: trio.Event, referee: _RefereeLike, pool: BotPool) -> None:
        # As _watch_signals, quietly: a closed pipe is how a Unix reader says it has seen enough.
        assert self._output_gone is not None
        await self._output_gone.wait()
        stop.set()
        await self._stop_referee(referee, pool)

    def _bot_exited(self, gone: BotExit) -> None:
        self.exits.append(gone)
        # Not "restarting it" after the exit that ends the run (too many in a row): the run's
        # error line follows at once, and no process was started.
        self.reporter.note(
            f"{gone.describe()}; {'restarting it' if gone.restarting else 'not restarted'}"
        )
        self.check_output()
        with contextlib.suppress(trio.ClosedResourceError):  # after the last game: not kept
            self._writes.send_nowait(gone)
        if self._nursery is not None and gone.key:
            self._nursery.start_soon(self._forfeit_crashed, gone)

    async def _forfeit_crashed(self, gone: BotExit) -> None:
        """Have the referee forfeit at once the seat the dead process held, if any."""
        referee = self._referee
        assert referee is not None
        log = log_path(self.config.out, gone.bot)
        reason = (
            f"its process exited with {gone.how} (see {log}): a bot that crashes loses the "
            "game at once; a new process plays its next games"
        )

        def forfeit(ref: Referee) -> list[tuple[str, int]]:
            hits = ref.forfeit_token(gone.key, reason)
            # Kept before the tables can end (they end on this same loop), so that a worker
            # that gets a record back always finds its crash here.
            with self._crash_lock:
                for table_id, seat in hits:
                    self._crash_seats.setdefault(table_id, {})[seat] = gone
            return hits

        try:
            # abandon_on_cancel: a referee that stops under the call must not hang the run's end.
            hits = await trio.to_thread.run_sync(referee.call, forfeit, abandon_on_cancel=True)
        except (ConfigError, RuntimeError, CancelledError):
            # The referee stopped before or during the call (its thread gone, its loop closed,
            # the call cancelled by its end): the games in play were interrupted, not stored.
            return
        for table_id, seat in hits:
            self.reporter.note(
                f"table {table_id}: seat {seat} ({gone.bot}) forfeited at once, "
                f"its process having exited with {gone.how}"
            )
        self.check_output()

    async def _watch_signals(self, stop: trio.Event, referee: _RefereeLike, pool: BotPool) -> None:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _ in signals:
                self.interrupted = True
                if self._unplayed == 0:
                    # After the last game (the referee and the bots being stopped): there is
                    # nothing to resume, and saying so would send the user to an empty rerun.
                    self.reporter.note("stopping: every game has been played; nothing to resume")
                elif self.stopped:
                    # A sequential test decided: nothing to resume either (it said to).
                    self.reporter.note(
                        "stopping: the test is decided; the games in play get the referee's "
                        "shutdown grace to finish"
                    )
                else:
                    self.reporter.note(
                        "stopping: games in play get the referee's shutdown grace to finish; "
                        "run the same command again to resume"
                    )
                stop.set()
                # Stopping the referee answers every table in play: finished within the grace,
                # or INTERRUPTED (not stored, played again on resume). The workers then return.
                await self._stop_referee(referee, pool)
                return

    async def _play(self, todo: Iterator[Table], referee: _RefereeLike, stop: trio.Event) -> None:
        async with trio.open_nursery() as workers:
            for _ in range(self.config.concurrency):
                workers.start_soon(self._worker, todo, referee, stop)

    async def _worker(self, todo: Iterator[Table], referee: _RefereeLike, stop: trio.Event) -> None:
        # Workers share one iterator: trio runs one task at a time, so next() needs no lock.
        while not stop.is_set():
            table = next(todo, None)
            if table is None:
                return
            try:
                record = await _wait_future(referee.submit(table.scheduled.spec))
            except (ConfigError, CancelledError):
                return  # the referee stopped before the table started: played on resume
            crashed = self._crashed_seats(record)
            if record.termination is Termination.INTERRUPTED:
                continue  # played again on resume
            if await self._left_as_the_run_stopped(record, crashed, stop):
                continue  # played again on resume, as a game the stop interrupted
            if crashed:
                record = _with_crash_reason(record, crashed)
            assert self._pool is not None
            # Raises, and the game is not stored, if a log of its bots cannot be written: their
            # output may have failed during it, and a bot's code with it.
            self._pool.game_over(record.spec.seats, record.spec.table_id)
            for seat, bot in enumerate(record.spec.seats):
                if record.seat_status[seat] is Termination.NORMAL:
                    self._pool.game_finished(bot)
            # Queued, not awaited: the next table starts while this one is being committed.
            self._writes.send_nowait(_GameDone(table, record, tuple(sorted(crashed))))
            if self._unplayed is not None:
                self._unplayed -= 1  # the writer stores what is queued, also once stopped

    async def _writer(self, stop: trio.Event) -> None:
        async with self._to_write:
            async for item in self._to_write:
                with trio.CancelScope(shield=True):
                    await trio.to_thread.run_sync(self._write, item)
                if isinstance(item, _GameDone):
                    self.played += 1
                    self.reporter.game(item.record)
                    if self.stopped:
                        self.after_stop += 1
                    elif self.on_record is not None and self.on_record(item.table, item.record):
                        self.stopped = True
                        stop.set()
                    self.check_output()

    def _write(self, item: _GameDone | BotExit) -> None:
        assert self.store is not None
        if isinstance(item, BotExit):
            try:
                self.store.save_crash(self.run_id, item.bot, item.at, item.exit_code, item.stderr)
            except sqlite3.OperationalError as e:
                raise self._cannot_write(f"store a crash of bot {item.bot}", e) from None
            return
        # The database first: a replay file then always has its game stored. A stop between the
        # two leaves a stored game without a replay, which the next start writes (_claim).
        table_id = item.record.spec.table_id
        try:
            self.store.save_game(self.run_id, item.table.index, item.record, item.crashed)
        except sqlite3.OperationalError as e:
            # A full disk or a failing one (a bug's StoreError is no disk fault). Rolled
            # back whole (the store's transaction): the game is played again on resume.
            raise self._cannot_write(f"store game {table_id}", e) from None
        try:
            write_replay(self.config.out, item.table.index, item.record)
        except OSError as e:
            # The game is stored; the resume writes its replay (_claim).
            raise self._cannot_write(f"write the replay of game {table_id}", e, 1) from None

    async def _left_as_the_run_stopped(
        self, record: GameRecord, crashed: dict[int, BotExit], stop: trio.Event
    ) -> bool:
        """Whether a game that ended with a seat forfeited for leaving (a Goodbye, a lost
        connection), not for a crash seen before, ended as the run is stopped by a signal or a
        closed output. A stop that reaches the bots too (systemd's stop or a shutdown signal
        every process of the run at once) makes them leave the games given the referee's grace:
        such a game says nothing of the bots, and kept, a resumed run differed from an unbroken
        one."""
        if not any(
            status is Termination.DISCONNECT and seat not in crashed
            for seat, status in enumerate(record.seat_status)
        ):
            return False
        # The run's own signal may come a moment after the bots' (a loaded machine, or a kill
        # that lists the bots first): the fallback finished such a game within that moment, and
        # it was kept. Bots leave a game rarely otherwise, so waiting for the stop costs little.
        with trio.move_on_after(LEFT_SETTLE_S):
            await stop.wait()
        return self.interrupted or self.output_closed

    def _crashed_seats(self, record: GameRecord) -> dict[int, BotExit]:
        """Seats whose bot process died while the table ran (the referee was told of it, see
        ``Referee.forfeit_token``), with the exit; a seat the game had already let go unhurt (its
        last card played) is not counted."""
        with self._crash_lock:
            known = self._crash_seats.pop(record.spec.table_id, {})
        return {
            s: gone
            for s, gone in known.items()
            if record.seat_status[s] is not Termination.NORMAL
            or any(f.kind is FaultKind.DISCONNECT for f in record.faults_of(s))
        }


def _with_crash_reason(record: GameRecord, crashed: dict[int, BotExit]) -> GameRecord:
    notes = []
    for s, gone in sorted(crashed.items()):
        how = f"exit code {gone.exit_code}" if gone.exit_code >= 0 else gone.how
        notes.append(f"bot {gone.bot} in seat {s} crashed ({how})")
    return dataclasses.replace(record, reason=f"{record.reason}; {'; '.join(notes)}")


class _RefereeLike(Protocol):
    def submit(self, spec: TableSpec) -> Future[GameRecord]: ...

    def call(self, function: Callable[[Referee], T]) -> T: ...

    def stop(self, *, finished: bool = False) -> object: ...


async def _wait_future(future: Future[T]) -> T:
    """Wait for a future of the referee's thread without blocking trio or holding a thread."""
    token = trio.lowlevel.current_trio_token()
    done = trio.Event()

    def wake(_: Future[T]) -> None:
        with contextlib.suppress(trio.RunFinishedError):  # the run ended first: nobody waits
            token.run_sync_soon(done.set)

    future.add_done_callback(wake)
    await done.wait()
    return future.result()


def _referee_config(config: RunConfig) -> RefereeConfig:
    """The referee's configuration for a local run."""
    from arena.referee import RefereeConfig

    # Welcome announces the grace the tables apply (--grace), not the referee's default.
    return RefereeConfig(address=f"{HOST}:{config.port}", grace_ms=config.faults.grace_ms)
