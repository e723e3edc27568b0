"""The store: every finished game in one SQLite file, committed whole, so that a run can resume.

One database holds one run (a batch or a sequential test); its identity is the hash of its
configuration (:attr:`arena.config.RunConfig.run_id`). A finished game goes in with one
transaction: the whole :class:`~arena.table.GameRecord` as JSON, and beside it the rows that
queries and the ratings want (seats, hands, faults). The file is in WAL mode with
``synchronous=FULL``: a game whose commit returned survives a crash or a power cut, and a game
whose commit did not return is not there at all. The schema is :data:`SCHEMA` (documented in the
README); :data:`SCHEMA_VERSION` is kept in the ``meta`` table.

Replays are written beside the database, one JSON-lines file per game (:func:`write_replay`),
atomically (a temporary file renamed), so that a replay is either whole or absent.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.errors import ArenaError, ConfigError
from arena.table import GameRecord, Termination

if TYPE_CHECKING:
    from arena.ratings.results import TableResult

__all__ = [
    "SCHEMA",
    "SCHEMA_VERSION",
    "BotFaults",
    "RunRow",
    "Store",
    "StoreError",
    "check_writable",
    "config_differences",
    "is_busy",
    "is_full",
    "load_results",
    "replay_lines",
    "write_replay",
]

SCHEMA_VERSION = 1
SERVER_TABLE_PREFIX = "server_"
"""The competition server keeps its own tables beside these, named with this prefix."""
_BUSY_TIMEOUT_MS = 10_000

SCHEMA = """\
-- Hearts Arena store, schema version 1. One database holds one run.
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,          -- 'schema_version'
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    run_id     TEXT PRIMARY KEY,     -- hash of the configuration that decides the games
    kind       TEXT NOT NULL,        -- 'batch' (arena run) or 'sprt' (arena sprt)
    config     TEXT NOT NULL,        -- that configuration as JSON (bots, rules, boards, seed, ...)
    total      INTEGER,              -- tables scheduled; NULL when open-ended (sprt)
    created_at REAL NOT NULL,        -- wall clock, seconds since the epoch
    updated_at REAL NOT NULL         -- last game committed
);
CREATE TABLE IF NOT EXISTS games (
    run_id      TEXT NOT NULL REFERENCES runs(run_id),
    game        INTEGER NOT NULL,    -- position in the run's schedule (0, 1, ...)
    table_id    TEXT NOT NULL,       -- e.g. 'b3-g2-r1': board 3, group 2, rotation 1
    board       TEXT NOT NULL,       -- the deal's cluster key, shared by every rotation
    seed        INTEGER NOT NULL,    -- the deal's seed
    hands       INTEGER NOT NULL,    -- hands dealt (a game stopped early counts its last one)
    full_game   INTEGER NOT NULL,    -- 1 when played to a target (--game-to), 0 for single hands
    termination TEXT NOT NULL,       -- 'normal', or how the game stopped early
    reason      TEXT NOT NULL,       -- one human-readable line
    started_at  REAL NOT NULL,
    finished_at REAL NOT NULL,
    record      TEXT NOT NULL,       -- the whole GameRecord as JSON: spec, hands, decisions, faults
    PRIMARY KEY (run_id, game),
    UNIQUE (run_id, table_id)
);
CREATE TABLE IF NOT EXISTS seats (
    run_id  TEXT NOT NULL,
    game    INTEGER NOT NULL,
    seat    INTEGER NOT NULL,        -- 0 .. players-1
    bot     TEXT NOT NULL,
    points  INTEGER NOT NULL,        -- total over the game's hands; lower is better
    placing INTEGER NOT NULL,        -- 1 = best; equal totals share the better place
    status  TEXT NOT NULL,           -- 'normal', or the forfeit: 'timeout', 'illegal', ...
    faults  INTEGER NOT NULL,        -- faults this seat committed
    crashed INTEGER NOT NULL,        -- 1 when the bot's process died during this game
    PRIMARY KEY (run_id, game, seat),
    FOREIGN KEY (run_id, game) REFERENCES games(run_id, game)
);
CREATE INDEX IF NOT EXISTS seats_by_bot ON seats(run_id, bot);
CREATE TABLE IF NOT EXISTS hands (
    run_id         TEXT NOT NULL,
    game           INTEGER NOT NULL,
    number         INTEGER NOT NULL, -- hand number within the game (from 0)
    dealer         INTEGER NOT NULL,
    pass_direction TEXT NOT NULL,    -- 'left', 'right', 'across', 'hold', ...
    points         TEXT NOT NULL,    -- JSON list: points per seat for this hand, after the moon
    moon           INTEGER,          -- seat that shot the moon, or NULL
    sun            INTEGER NOT NULL, -- 1 if the moon shot took every trick (and the rules count it)
    complete       INTEGER NOT NULL, -- 0 if the hand stopped before its last trick
    PRIMARY KEY (run_id, game, number),
    FOREIGN KEY (run_id, game) REFERENCES games(run_id, game)
);
CREATE TABLE IF NOT EXISTS faults (
    run_id     TEXT NOT NULL,
    game       INTEGER NOT NULL,
    seq        INTEGER NOT NULL,     -- order within the game
    hand       INTEGER NOT NULL,
    trick      INTEGER NOT NULL,     -- -1 during the pass
    seat       INTEGER NOT NULL,
    bot        TEXT NOT NULL,
    kind       TEXT NOT NULL,        -- 'timeout', 'illegal-card', 'card-not-held', 'malformed', ...
    detail     TEXT NOT NULL,        -- one human sentence
    sent       TEXT NOT NULL,        -- what the bot sent ('' if nothing)
    substitute TEXT NOT NULL,        -- the card(s) played instead, space-separated
    at_ms      REAL NOT NULL,        -- since the table started
    PRIMARY KEY (run_id, game, seq),
    FOREIGN KEY (run_id, game) REFERENCES games(run_id, game)
);
CREATE TABLE IF NOT EXISTS crashes (
    run_id    TEXT NOT NULL,
    bot       TEXT NOT NULL,
    at        REAL NOT NULL,         -- wall clock when the process was seen to exit
    exit_code INTEGER NOT NULL,      -- negative: killed by that signal
    stderr    TEXT NOT NULL          -- the last lines the process wrote to stderr
);
"""
"""The database schema (SQLite)."""


class StoreError(ArenaError):
    """A database that cannot be used: unreadable, of another schema, or holding another run."""


@dataclass(frozen=True)
class BotFaults:
    """One bot's misbehaviour over a run."""

    bot: str
    """The bot's name."""
    games: int
    """Games it sat in."""
    hands: int
    """Hands it played."""
    faults: tuple[tuple[str, int], ...]
    """Faults by kind ('timeout', 'illegal-card', ...), most frequent first."""
    forfeits: int
    """Games it lost by forfeit."""
    crashed_games: int
    """Games during which its process died."""
    exits: int
    """Times one of its processes died unexpectedly (restarts)."""

    @property
    def total_faults(self) -> int:
        """Faults of every kind."""
        return sum(n for _, n in self.faults)


@dataclass(frozen=True)
class RunRow:
    """One run as stored."""

    run_id: str
    """The hash of the run's configuration."""
    kind: str
    """'batch' or 'sprt'."""
    config: dict[str, Any]
    """The configuration (the run's identity) as plain data."""
    total: int | None
    """Tables scheduled, or None when open-ended."""
    created_at: float
    """When the run was first started."""
    updated_at: float
    """When its last game was committed."""


def lookup_failure(path: Path) -> str | None:
    """Why the system cannot look ``path`` up at all (a name too long, a folder on the way that
    may not be searched, a loop of links), or None if it can (whether or not it exists).

    Asked before ``Path.exists()`` and ``is_dir()``, which raise on these: a traceback, not a
    line saying which path.
    """
    try:
        path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        return e.strerror or str(e)
    return None


def peek(db: Path, sql: str) -> list[tuple[Any, ...]] | None:
    """The rows of ``sql`` read from ``db`` read-only and raw, or None if SQLite cannot read it
    (what else is wrong with the file, the store says as it opens it): for a command that must
    tell another command's database from its own before touching it. It makes no file beside
    ``db`` and removes none."""
    # Reading a WAL database makes its side files (-wal, -shm). Removing them after the look, as
    # this did, removed a writer's own when one opened the database meanwhile: its committed
    # games were gone at its next kill -9 (the store audit lost 45 of 120). With no side file
    # there, nobody has the database open and the file holds it whole: it is read as immutable,
    # which makes none; side files that are there are another's and are left as they are.
    unused = not any(Path(f"{db}{suffix}").exists() for suffix in ("-wal", "-shm"))
    mode = "mode=ro&immutable=1" if unused else "mode=ro"
    try:
        connection = sqlite3.connect(f"{db.resolve().as_uri()}?{mode}", uri=True)
        try:
            return connection.execute(sql).fetchall()
        finally:
            connection.close()
    except sqlite3.Error:
        return None


def is_competition(db: Path) -> bool:
    """Whether ``db`` holds `arena serve`'s own tables (its bot accounts), looked at with
    :func:`peek` (False if SQLite cannot read it)."""
    tables = peek(db, "SELECT name FROM sqlite_master WHERE type = 'table'") or ()
    return any(str(name).startswith(SERVER_TABLE_PREFIX) for (name,) in tables)


def holds_anothers(db: Path) -> bool:
    """Whether the database ``db``, made by a command that claimed no run in it, holds what
    another command wrote there meanwhile (bot accounts, a run): a failed start removes the
    file it made only when it does not. One that cannot be read is the start's own, half made
    (a disk that refused its first pages)."""
    # No runs table (or an unreadable file): peek says None.
    return is_competition(db) or bool(peek(db, "SELECT 1 FROM runs LIMIT 1"))


def has_server_tables(db: sqlite3.Connection) -> bool:
    """Whether the database holds `arena serve`'s own tables (its bot accounts)."""
    row = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND substr(name, 1, ?) = ?",
        (len(SERVER_TABLE_PREFIX), SERVER_TABLE_PREFIX),
    ).fetchone()
    return row is not None


def holds_a_competition(db: Path) -> str:
    """What to say of a competition's database given to a batch run."""
    return (
        f"--db {db}: holds arena serve's competition (its bot accounts), not a batch run; "
        "give the run a database of its own (a new file)"
    )


def check_write_access(path: Path) -> None:
    """Refuse (a :class:`StoreError`), before SQLite opens it for writing, a database file or
    side file (``-wal``, ``-shm``) this user may not write: SQLite would open the file
    read-only, make side files as read-only as it, and fail on the first write."""
    if path.is_file() and not os.access(path, os.W_OK):
        raise StoreError(
            f"{path}: cannot write the database (it is read-only to this user); make the file "
            "and its folder writable and try again"
        )
    sides = [Path(f"{path}{end}") for end in ("-wal", "-shm")]
    locked = [side.name for side in sides if side.is_file() and not os.access(side, os.W_OK)]
    if locked:
        # The advice to make the file writable was wrong here: the file was, its side files not
        # (left by another user's program, or by a command run on the file while it was not).
        raise StoreError(
            f"{path}: cannot write the database: {' and '.join(locked)} beside it "
            f"{'is' if len(locked) == 1 else 'are'} read-only to this user; make "
            f"{'it' if len(locked) == 1 else 'them'} writable and try again (not removed: a "
            "-wal file holds the last games)"
        )


def check_regular(path: Path) -> None:
    """Refuse, before SQLite touches it, an existing path that is not a regular file (a device
    such as /dev/null: SQLite would make a journal beside it, then fail)."""
    if path.exists() and not path.is_file():
        what = "a folder" if path.is_dir() else "not a regular file"
        raise StoreError(f"{path}: {what}, not a database file")


def is_busy(error: BaseException) -> bool:
    """Whether an error is SQLite's "database is locked": another connection held the lock past
    the busy timeout (the write may succeed when tried again)."""
    code = getattr(error, "sqlite_errorcode", None)
    if not isinstance(error, sqlite3.OperationalError) or code is None:
        return False
    # The extended codes (SQLITE_BUSY_SNAPSHOT, ...) keep the primary code in the low byte.
    return (code & 0xFF) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def is_full(error: BaseException) -> bool:
    """Whether an error is SQLite's "database or disk is full" (the write may succeed once
    space is freed)."""
    code = getattr(error, "sqlite_errorcode", None)
    if not isinstance(error, sqlite3.OperationalError) or code is None:
        return False
    return bool((code & 0xFF) == sqlite3.SQLITE_FULL)


def cannot_write(error: BaseException, done: str = "") -> str | None:
    """What to say of a write the database refused for its disk or permissions (a full disk, a
    file over a size limit, a read-only file): the error, ``done`` (what that left), and what to
    do; None for another error."""
    name = getattr(error, "sqlite_errorname", "")
    if not isinstance(error, sqlite3.DatabaseError):
        return None
    if name.startswith("SQLITE_READONLY"):
        # Not "not a Hearts Arena database": a good one on a read-only file or mount.
        fix = "make the file and its folder writable"
    elif name.startswith(("SQLITE_FULL", "SQLITE_IOERR")) and "READ" not in name:
        fix = "make room (or fix the disk)"
    else:
        return None
    return f"cannot write the database ({error}){done}; {fix}"


def rollback(db: sqlite3.Connection) -> None:
    """Roll back the open transaction, if SQLite has not already: on a full disk it has, and a
    ROLLBACK then raised "no transaction is active", which hid the error that mattered."""
    if db.in_transaction:
        db.execute("ROLLBACK")


_DAMAGED_RECOVER = "a backup, or `sqlite3 FILE .recover`, may save its games"
_DAMAGED_ADVICE = f"the database is damaged (or was edited by hand); {_DAMAGED_RECOVER}"


def unreadable(path: Path | str, error: sqlite3.DatabaseError) -> str:
    """What to say of a file SQLite could not use: not there to be made, held by another
    program, damaged, or not a database."""
    if isinstance(error, sqlite3.OperationalError) and "unable to open" in str(error):
        folder = Path(path).parent
        if Path(path).is_file() and not _writable(folder):
            # The file is there: what failed is the journal SQLite makes beside it.
            return (
                f"{path}: cannot write the database: its folder {folder} is read-only (SQLite "
                "keeps a journal beside the file); make the folder writable, or move the "
                "database to one that is"
            )
        if not Path(path).exists() and folder.is_dir() and not _writable(folder):
            return (
                f"{path}: cannot create a database there: its folder {folder} is read-only; "
                "give a path in a folder you can write"
            )
        return f"{path}: cannot open or create a database there ({error})"
    name = getattr(error, "sqlite_errorname", "")
    if is_busy(error):
        # Not "not a database": another program holds it locked past the busy timeout.
        return (
            f"{path}: the database is locked by another program ({error}, for "
            f"{_BUSY_TIMEOUT_MS // 1000} s); try again once it lets go"
        )
    said = cannot_write(error)
    if said is not None:
        # The file may well be the arena's: the disk or the file refused a write.
        return f"{path}: {said} and try again"
    if name.startswith("SQLITE_CORRUPT"):
        return f"{path}: the database is damaged ({error}); {_DAMAGED_RECOVER}"
    return f"{path}: not a Hearts Arena database ({error})"


def _writable(folder: Path) -> bool:
    """Whether files can be made in ``folder``: the mode bits, and a read-only mount (which
    the bits, and root, do not show)."""
    if not os.access(folder, os.W_OK):
        return False
    try:
        return not os.statvfs(folder).f_flag & os.ST_RDONLY
    except OSError:
        return True


def not_made(path: Path) -> bool:
    """Whether no database is at ``path`` yet: no file, or an empty one (``touch``ed for a run),
    which SQLite reads as an empty database and a run makes its own once its bots are up."""
    return not path.exists() or path.stat().st_size == 0


def check_writable(path: Path | str) -> None:
    """Raise :class:`ConfigError` (one line) unless a database can be created or written at
    ``path``; creates nothing."""
    path = Path(path)  # a str as Store.open takes one (it was an AttributeError: no is_dir)
    if path.is_dir():
        raise ConfigError(f"--db {path}: is a folder, not a database file")
    if path.exists() and not path.is_file():
        raise ConfigError(f"--db {path}: not a regular file; give a database file")
    if path.exists():
        if not os.access(path, os.R_OK | os.W_OK):
            raise ConfigError(f"--db {path}: the database is not writable (check its permissions)")
        if not _sqlite_or_empty(path):
            # It passed, and the run then failed on opening it.
            raise ConfigError(
                f"--db {path}: not a database (an SQLite file); give a new file, or the database "
                "a run made"
            )
        return
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise ConfigError(f"--db {path}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError(f"--db {path}: cannot create a database in {parent} (not writable)")


def _sqlite_or_empty(path: Path) -> bool:
    """Whether the file is empty (SQLite makes a database of it) or starts as SQLite's do."""
    try:
        with path.open("rb") as f:
            head = f.read(len(_SQLITE_HEADER))
    except OSError:
        return True  # said by the open that follows, in its own words
    return head in (b"", _SQLITE_HEADER)


_SQLITE_HEADER = b"SQLite format 3\x00"


def lock_database(path: Path, command: str) -> int:
    """Hold ``PATH.lock`` exclusively (a file descriptor for :func:`unlock_database`): one
    writer per database.

    Two runs or servers on one database would play the same tables or hand out the same game
    numbers and overwrite each other's replays; SQLite's own locks only keep each write whole.
    The lock goes with the process, so a killed one leaves nothing to clean up but the file.
    """
    lock_path = database_lock(path)
    try:
        links = os.stat(path).st_nlink
    except OSError:
        links = 1  # not made yet (or unreadable: said where it is opened)
    if links > 1:
        # Under another name the lock is another file, and SQLite keeps a journal per name:
        # two writers, each with its own -wal, corrupt the database (SQLite's "How To Corrupt").
        raise ConfigError(
            f"--db {path}: the database file has {links} names (hard links); one writer per "
            "file cannot be ensured, and SQLite could corrupt it: give it one name (copy it "
            "rather than link it)"
        )
    while True:
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise ConfigError(
                f"--db {path}: cannot make its lock file {lock_path} ({e.strerror})"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "process"
            os.close(fd)
            raise ConfigError(
                f"--db {path}: another {holder} is using this database; wait for it or stop "
                f"it first, or give this {command} its own --db"
            ) from None
        # The holder before us may have removed the file after we opened it: then our lock is
        # on a file no one else will open, and we try again with the path as it is now.
        try:
            same = os.stat(lock_path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{command} (pid {os.getpid()})".encode(), 0)
    except OSError as e:
        # A full disk: said as the database's folder, not as our output (the CLI's reading of a
        # bare ENOSPC), and no empty lock file left behind.
        unlock_database(path, fd)
        raise ConfigError(
            f"--db {path}: cannot write its lock file {lock_path} ({e.strerror}); make room "
            "(or fix the disk) and try again"
        ) from None
    return fd


def database_lock(path: Path) -> Path:
    """The lock file of the database at ``path``: beside the file it is, links followed (two
    runs given a database and a link to it played together, and one ended in a traceback)."""
    real = Path(os.path.realpath(path))
    return real.with_name(real.name + ".lock")


def unlock_database(path: Path, fd: int) -> None:
    """Let go of :func:`lock_database`'s lock and remove the file (while still holding it)."""
    try:
        database_lock(path).unlink(missing_ok=True)
    finally:
        os.close(fd)


@contextmanager
def database_locked(path: Path, command: str) -> Iterator[None]:
    """:func:`lock_database` for the length of a ``with`` block."""
    fd = lock_database(path, command)
    try:
        yield
    finally:
        unlock_database(path, fd)


def check_ours(db: sqlite3.Connection, path: Path | str, *, create: bool) -> None:
    """Refuse, before anything is written, a database that is not the arena's: another program's
    (tables of its own), or an empty file when none is to be made (a :class:`StoreError`)."""
    # Looked at before WAL mode or any schema: a file given by mistake must stay as it was.
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    # The competition server's own tables (server_*) may come first: `arena bots add`.
    others = {t for t in tables if not t.startswith(SERVER_TABLE_PREFIX)}
    if "meta" not in tables and (others or not (create or tables)):
        held = f"it holds other tables: {', '.join(sorted(others))}" if others else "empty"
        raise StoreError(f"{path}: not a Hearts Arena database ({held})")
    if "meta" not in tables and not create:  # read "no such table: meta" as not the arena's
        raise StoreError(
            f"{path}: no game stored yet: it holds only the competition server's accounts "
            "(games are stored once arena serve plays them)"
        )


_CANNOT_WRITE_BESIDE = ("SQLITE_READONLY", "SQLITE_CANTOPEN")
"""The SQLite errors of a reader that may not write the file or its folder: reading a WAL
database needs its ``-shm`` (and ``-wal``) file, made beside it on the first read."""


def _readable(db: sqlite3.Connection, path: Path) -> sqlite3.Connection:
    """A connection that can read the database at ``path``: ``db`` when it can, else, for a
    file or folder this process may not write (a results file given read-only, a read-only
    mount), a read-only one; a :class:`StoreError` naming what to do when none can."""
    # A file this process may not write is opened read-only by SQLite, which then makes -wal
    # and -shm files beside it that it cannot remove: such a file goes to the read-only ways.
    if os.access(path, os.W_OK):
        try:
            db.execute("SELECT name FROM sqlite_master LIMIT 1").fetchall()
            return db
        except sqlite3.OperationalError as e:
            if not getattr(e, "sqlite_errorname", "").startswith(_CANNOT_WRITE_BESIDE):
                raise
    db.close()
    uri = path.resolve().as_uri()
    timeout = _BUSY_TIMEOUT_MS / 1000
    wal = path.with_name(path.name + "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        # Games committed but not yet copied into the file: only a WAL reader sees them, and it
        # needs the -shm file (read-only will do when it is there, e.g. a run of another user).
        try:
            db = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=timeout, isolation_level=None)
            db.execute("SELECT name FROM sqlite_master LIMIT 1").fetchall()
            return db
        except sqlite3.OperationalError:
            db.close()
        raise StoreError(
            f"{path}: cannot read it here: its last games are in {wal.name}, which SQLite "
            f"reads only by making {path.name}-shm beside it, and this user may not write "
            f"there; copy {path.name} and {wal.name} to a folder you can write and read the copy"
        ) from None
    # No write-ahead log: the file holds every game and no writer has it open (one would have a
    # -wal file). Immutable, SQLite reads it as it is and makes nothing beside it.
    return sqlite3.connect(f"{uri}?immutable=1", uri=True, timeout=timeout, isolation_level=None)


def _connect(path: Path) -> sqlite3.Connection:
    """A connection to the database at ``path``; a :class:`StoreError` if SQLite cannot open it."""
    try:
        # check_same_thread is off because the director commits from a worker thread; the
        # single writer task guarantees one user at a time.
        return sqlite3.connect(
            path, timeout=_BUSY_TIMEOUT_MS / 1000, check_same_thread=False, isolation_level=None
        )
    except sqlite3.Error as e:
        raise StoreError(f"{path}: cannot open the database: {e}") from None


def open_for_reading(path: Path, *, games: bool = False) -> sqlite3.Connection:
    """A connection that reads the existing database at ``path`` and writes nothing there (a
    read-only one where the file or its folder may not be written); a :class:`StoreError` with
    one line when it cannot be read (``games``: or holds no game table yet)."""
    db = _connect(path)
    with _closed_on_error(db, path):
        db = _readable(db, path)
    with _closed_on_error(db, path):  # the read-only connection, if it took the place of db
        check_ours(db, path, create=not games)
    return db


@contextmanager
def _closed_on_error(db: sqlite3.Connection, path: Path) -> Iterator[None]:
    """Close ``db`` if the block fails; a database error said in one line (:class:`StoreError`)."""
    try:
        yield
    except StoreError:
        db.close()
        raise
    except sqlite3.DatabaseError as e:
        db.close()
        raise StoreError(unreadable(path, e)) from None


class Store:
    """An open database. Not thread-safe: one task at a time (the director has one writer)."""

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self._db = connection
        self.path = path
        """Where the database lives."""

    @classmethod
    def open(cls, path: Path | str, *, create: bool = True) -> Store:
        """Open (and with ``create``, create) the database at ``path``; a bad file is a
        :class:`StoreError` with one line."""
        if not isinstance(path, str | os.PathLike):  # Path(None): a bare TypeError
            raise StoreError(
                f"the database must be given as a file path (a str or a pathlib.Path), "
                f"got {path!r:.60}"
            )
        path = Path(path)
        why = lookup_failure(path)
        if why is not None:
            raise StoreError(f"{path}: cannot look it up: {why}")
        if not create and not path.exists():
            raise StoreError(f"{path}: no such database")
        check_regular(path)
        if create:
            check_write_access(path)
        db = _connect(path) if create else open_for_reading(path, games=True)
        with _closed_on_error(db, path):
            if create:
                check_ours(db, path, create=True)
                # Only a writer sets them: a reader leaves the file as it found it (WAL is
                # stored in the file; turning a copied rollback-mode database into WAL is a
                # write to a file it was only asked to read).
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=FULL")
            db.execute("PRAGMA foreign_keys=ON")
            if create:
                # executescript commits whatever is open first, so the script brings its own
                # transaction: the schema goes in whole or not at all.
                db.executescript(
                    f"BEGIN IMMEDIATE;\n{SCHEMA}\nINSERT OR IGNORE INTO meta(key, value) "
                    f"VALUES ('schema_version', '{SCHEMA_VERSION}');\nCOMMIT;"
                )
            row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None or int(row[0]) != SCHEMA_VERSION:
            db.close()
            found = "none" if row is None else row[0]
            raise StoreError(
                f"{path}: schema version {found}, this arena reads version {SCHEMA_VERSION}"
            )
        return cls(db, path)

    def close(self) -> None:
        """Close the database."""
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- runs -----------------------------------------------------------------------------

    def runs(self) -> list[RunRow]:
        """Every run in the database, oldest first."""
        rows = self._db.execute(
            "SELECT run_id, kind, config, total, created_at, updated_at FROM runs "
            "ORDER BY created_at"
        ).fetchall()
        return [RunRow(r[0], r[1], json.loads(r[2]), r[3], r[4], r[5]) for r in rows]

    def has_run(self, run_id: str) -> bool:
        """Whether the database holds run ``run_id`` (recorded as a run, or a game of it)."""
        query = "SELECT 1 FROM runs WHERE run_id = ? UNION ALL SELECT 1 FROM games WHERE run_id = ?"
        return self._db.execute(query + " LIMIT 1", (run_id, run_id)).fetchone() is not None

    def forget_unplayed(self, run_id: str, *, unless_rows_in: str | None = None) -> bool:
        """Remove run ``run_id`` if it holds no game, nor (if given and present) a row of table
        ``unless_rows_in`` (a server's tables begun); whether it was removed."""
        with _transaction(self._db):
            query = "SELECT 1 FROM games WHERE run_id = ? LIMIT 1"
            if self._db.execute(query, (run_id,)).fetchone():
                return False
            if unless_rows_in is not None and self._has_rows(unless_rows_in):
                return False
            return self._db.execute("DELETE FROM runs WHERE run_id = ?", (run_id,)).rowcount > 0

    def _has_rows(self, table: str) -> bool:
        """Whether the database has a table named ``table`` holding a row."""
        query = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
        if self._db.execute(query, (table,)).fetchone() is None:
            return False
        return self._db.execute(f'SELECT 1 FROM "{table}" LIMIT 1').fetchone() is not None

    def claim(self, run_id: str, kind: str, config: Mapping[str, Any], total: int | None) -> bool:
        """Record the run (or find it, to resume); refuse a database that holds another run.

        Returns True when the run is new. Raises :class:`ConfigError` naming what differs.
        """
        for other in self.runs():
            if other.run_id == run_id:
                return False
            played = self._db.execute(
                "SELECT 1 FROM games WHERE run_id = ? LIMIT 1", (other.run_id,)
            ).fetchone()
            # "Keeps that run's games" misled where it stopped (a kill) before its first game.
            keeps = (
                f"this one keeps that run's games; delete {self.path} only if you no longer need "
                "them"
                if played is not None
                else f"that run stopped before its first game: delete {self.path} to start anew"
            )
            raise ConfigError(
                f"{self.path} holds another run "
                f"({_differences(other.kind, other.config, kind, config)}); "
                f"use another --db ({keeps})"
            )
        now = time.time()
        with _transaction(self._db):
            if kind not in COMPETITION_KINDS and has_server_tables(self._db):
                # Checked as the run is written, not only as its settings were read: `arena bots
                # add` in between (as the bots started) made a competition of the batch's file.
                raise ConfigError(holds_a_competition(self.path))
            self._db.execute(
                "INSERT INTO runs(run_id, kind, config, total, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (run_id, kind, json.dumps(dict(config), sort_keys=True), total, now, now),
            )
        return True

    # ---- games ----------------------------------------------------------------------------

    def finished(self, run_id: str) -> set[int]:
        """The schedule indexes of the games already stored for the run."""
        rows = self._db.execute("SELECT game FROM games WHERE run_id = ?", (run_id,))
        return {r[0] for r in rows}

    def save_game(
        self, run_id: str, game: int, record: GameRecord, crashed: Sequence[int] = ()
    ) -> None:
        """Commit one finished game, whole, in one transaction (``crashed``: seats whose bot
        process died during it). A game already stored, or of a run not claimed here, is a
        :class:`StoreError`."""
        _check_game_index(game)
        if not isinstance(record, GameRecord):
            # A dict (record.to_dict()) failed with "'dict' object has no attribute 'spec'".
            raise StoreError(
                f"game {game}: save_game takes a GameRecord (GameRecord.from_dict for its dict "
                f"form), got {type(record).__name__}"
            )
        seats = len(record.spec.seats)
        wrong = [s for s in crashed if type(s) is not int or not 0 <= s < seats]
        if wrong:
            # Taken and ignored: no seat of the game was marked crashed.
            raise StoreError(
                f"game {game} ({record.spec.table_id}): crashed names seats {wrong!r}; give "
                f"seat numbers 0 to {seats - 1}"
            )
        try:
            self._save_game(run_id, game, record, crashed)
        except sqlite3.IntegrityError as e:
            # The constraints' own words ("FOREIGN KEY constraint failed") named no game or run.
            if "UNIQUE" in str(e):
                why = "is already stored"
            elif "FOREIGN KEY" in str(e):
                why = f"is of a run {self.path} does not hold: claim the run (Store.claim) first"
            else:
                why = f"breaks the database's constraints ({e})"
            raise StoreError(
                f"game {game} ({record.spec.table_id}) of run {run_id!r} {why}"
            ) from None

    def _save_game(
        self, run_id: str, game: int, record: GameRecord, crashed: Sequence[int]
    ) -> None:
        spec = record.spec
        rid = run_id
        with _transaction(self._db):
            self._db.execute(
                "INSERT INTO games(run_id, game, table_id, board, seed, hands, full_game, "
                "termination, reason, started_at, finished_at, record) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    rid,
                    game,
                    spec.table_id,
                    spec.board,
                    spec.seed,
                    len(record.hands),
                    int(spec.hands is None),
                    record.termination.value,
                    record.reason,
                    record.started_at,
                    record.finished_at,
                    json.dumps(record.to_dict(), separators=(",", ":")),
                ),
            )
            fault_counts = [0] * len(spec.seats)
            for f in record.faults:
                fault_counts[f.seat] += 1
            self._db.executemany(
                "INSERT INTO seats(run_id, game, seat, bot, points, placing, status, faults, "
                "crashed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        rid,
                        game,
                        s,
                        bot,
                        record.totals[s],
                        record.placings[s],
                        record.seat_status[s].value,
                        fault_counts[s],
                        int(s in crashed),
                    )
                    for s, bot in enumerate(spec.seats)
                ],
            )
            self._db.executemany(
                "INSERT INTO hands(run_id, game, number, dealer, pass_direction, points, moon, "
                "sun, complete) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        rid,
                        game,
                        h.number,
                        h.dealer,
                        h.pass_direction,
                        json.dumps(list(h.points)),
                        h.moon,
                        int(h.sun),
                        int(h.complete),
                    )
                    for h in record.hands
                ],
            )
            self._db.executemany(
                "INSERT INTO faults(run_id, game, seq, hand, trick, seat, bot, kind, detail, "
                "sent, substitute, at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        rid,
                        game,
                        i,
                        f.hand,
                        f.trick,
                        f.seat,
                        f.bot,
                        f.kind.value,
                        f.detail,
                        f.sent,
                        " ".join(f.substitute),
                        f.at_ms,
                    )
                    for i, f in enumerate(record.faults)
                ],
            )
            self._db.execute(
                "UPDATE runs SET updated_at = ? WHERE run_id = ?", (record.finished_at, rid)
            )

    def save_crash(self, run_id: str, bot: str, at: float, exit_code: int, stderr: str) -> None:
        """Record that a bot's process died unexpectedly."""
        with _transaction(self._db):
            self._db.execute(
                "INSERT INTO crashes(run_id, bot, at, exit_code, stderr) VALUES (?, ?, ?, ?, ?)",
                (run_id, bot, at, exit_code, stderr),
            )

    def replays_missing(self, run_id: str, out: Path | str) -> Iterator[tuple[int, GameRecord]]:
        """The stored games of the run whose replay file is not under ``out`` (a run stopped
        between a game's commit and its replay, or resumed with another ``--out``)."""
        folder = Path(out) / "replays"  # a str as write_replay takes one (it was a TypeError)
        have = {p.name for p in folder.glob("*.jsonl")} if folder.is_dir() else set()
        rows = self._db.execute(
            "SELECT game, table_id FROM games WHERE run_id = ? ORDER BY game", (run_id,)
        ).fetchall()
        for game, table_id in rows:
            if f"{game:06d}-{table_id}.jsonl" not in have:
                (text,) = self._db.execute(
                    "SELECT record FROM games WHERE run_id = ? AND game = ?", (run_id, game)
                ).fetchone()
                yield game, self._record(game, text)

    def records(self, run_id: str | None = None) -> Iterator[tuple[int, GameRecord]]:
        """The stored games (schedule index, record), in schedule order."""
        sql = "SELECT game, record FROM games"
        args: tuple[str, ...] = ()
        if run_id is not None:
            sql += " WHERE run_id = ?"
            args = (run_id,)
        for game, text in self._db.execute(sql + " ORDER BY run_id, game", args):
            yield game, self._record(game, text)

    def _record(self, game: int, text: str) -> GameRecord:
        """Game ``game``'s stored record, read back (a record that is not JSON, which only a
        hand edit or a failing disk makes, is said in one line, not a JSONDecodeError)."""
        try:
            data = json.loads(text)
        except ValueError as e:
            raise StoreError(
                f"{self.path}: game {game}'s record is not JSON ({e}): {_DAMAGED_ADVICE}"
            ) from None
        return GameRecord.from_dict(data)

    def find_game(self, key: str | int) -> tuple[str, int, GameRecord]:
        """The game named by its table id (``b3-g2-r1``), the game id its bots saw
        (``g25-b3-g2-r1``: the referee's count, then the table id) or its number in the
        schedule (an int, or its digits)."""
        if isinstance(key, int) and not isinstance(key, bool) and key >= 0:
            key = str(key)  # a number was an AttributeError (no strip)
        if not isinstance(key, str):
            raise StoreError(f"a game is named by its table id or number, got {key!r:.40}")
        rows = self._db.execute(
            "SELECT run_id, game, record FROM games WHERE table_id = ?", (key,)
        ).fetchall()
        if not rows and key.strip() != key:  # pasted with a space, as a number or a log id is
            rows = self._db.execute(
                "SELECT run_id, game, record FROM games WHERE table_id = ?", (key.strip(),)
            ).fetchall()
        seen = re.fullmatch(r"g[0-9]+-(.+)", key.strip())
        if not rows and seen is not None:
            rows = self._db.execute(
                "SELECT run_id, game, record FROM games WHERE table_id = ?", (seen[1],)
            ).fetchall()
        if not rows and re.fullmatch(r"[0-9]{1,18}", key.strip()):  # fits SQLite's integers
            rows = self._db.execute(
                "SELECT run_id, game, record FROM games WHERE game = ?", (int(key),)
            ).fetchall()
        if not rows:
            raise StoreError(
                f"{self.path}: no game {key!r}; {self._game_hint()}{self._unfinished_hint()}"
            )
        row = rows[0]
        return row[0], row[1], self._record(row[1], row[2])

    def _game_hint(self) -> str:
        """What a game may be named by in this database, from its first and last games."""
        first, last = self._db.execute("SELECT MIN(game), MAX(game) FROM games").fetchone()
        if first is None:
            return "it holds no game yet"
        ids = [
            row[0]
            for number in (first, last)
            for row in self._db.execute(
                "SELECT table_id FROM games WHERE game = ? ORDER BY run_id LIMIT 1", (number,)
            )
        ]
        return (
            f"give a table id ({ids[0]} to {ids[-1]}), the game id in the bots' logs "
            f"(gN-{ids[0]}) or a game number ({first} to {last})"
        )

    def _unfinished_hint(self) -> str:
        """Said of a game not found where a run stopped short: it may be one not played yet
        (a number inside the hint's range, its games stored with a gap, read as a typo)."""
        short = self._db.execute(
            "SELECT r.run_id, r.total, COUNT(g.game) FROM runs r LEFT JOIN games g USING (run_id)"
            " WHERE r.total IS NOT NULL GROUP BY r.run_id HAVING COUNT(g.game) < r.total"
            " ORDER BY r.created_at LIMIT 1"
        ).fetchone()
        if short is None:
            return ""
        run_id, total, stored = short
        return (
            f"; run {run_id} stopped with {stored} of {total} games stored: one not stored yet "
            "is played when the same `arena run` command resumes it"
        )

    def bot_totals(self, run_id: str) -> list[tuple[str, int, int, int]]:
        """Per bot: hands played, points taken and faults, over the run's stored games."""
        return list(
            self._db.execute(
                "SELECT s.bot, SUM(g.hands), SUM(s.points), SUM(s.faults) FROM seats s "
                "JOIN games g ON g.run_id = s.run_id AND g.game = s.game "
                "WHERE s.run_id = ? GROUP BY s.bot ORDER BY s.bot",
                (run_id,),
            )
        )

    def bot_faults(self, run_id: str) -> list[BotFaults]:
        """Per bot, faults by kind, forfeits and crashes over the run, by name."""
        seats = self._db.execute(
            "SELECT s.bot, COUNT(*), SUM(g.hands), SUM(s.status != 'normal'), SUM(s.crashed) "
            "FROM seats s JOIN games g ON g.run_id = s.run_id AND g.game = s.game "
            "WHERE s.run_id = ? GROUP BY s.bot",
            (run_id,),
        ).fetchall()
        kinds: dict[str, list[tuple[str, int]]] = {}
        for bot, kind, count in self._db.execute(
            "SELECT bot, kind, COUNT(*) FROM faults WHERE run_id = ? GROUP BY bot, kind "
            "ORDER BY COUNT(*) DESC, kind",
            (run_id,),
        ):
            kinds.setdefault(bot, []).append((kind, count))
        exits = dict(
            self._db.execute(
                "SELECT bot, COUNT(*) FROM crashes WHERE run_id = ? GROUP BY bot", (run_id,)
            ).fetchall()
        )
        return [
            BotFaults(
                bot, games, hands, tuple(kinds.get(bot, ())), forfeits, crashed, exits.get(bot, 0)
            )
            for bot, games, hands, forfeits, crashed in sorted(seats)
        ]

    def crashes(self, run_id: str) -> list[tuple[str, float, int, str]]:
        """The bot process crashes of a run: (bot, when, exit code, last stderr lines)."""
        return list(
            self._db.execute(
                "SELECT bot, at, exit_code, stderr FROM crashes WHERE run_id = ? ORDER BY at",
                (run_id,),
            )
        )


@contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    # Explicit BEGIN IMMEDIATE: the connection is in autocommit mode, so that nothing is ever
    # left open between games.
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        rollback(db)
        raise


Describe = Callable[[str, Any, Any], str | None]
"""How a differing value is said: (dotted key, stored value, wanted value) -> words, or None to
leave it out."""


SPRT_FORMAT = "sprt"
"""The format an `arena sprt` test stores in its identity (:mod:`arena.director.sprt`)."""
COMPETITION_KINDS = ("ladder", "event")
"""The kinds of run `arena serve` stores (:attr:`arena.server.config.ServerConfig.kind`)."""
_FLAGS = {
    "boards": "--boards",
    "game_to": "--game-to",
    "seed": "--seed",
    "format": "--format",
    "candidate": "--candidate",
    "rules.players": "--players",
    "faults.max_faults": "--max-faults",
}
"""The flag of each value of a batch's identity that one flag sets as it is stored."""
_MS_FLAGS = {
    "clocks.move_ms": "--move-time",
    "clocks.bank_ms": "--time-bank",
    "faults.grace_ms": "--grace",
}
"""The flags of the durations, stored in milliseconds."""


def _word(value: Any) -> str:
    """A stored value as a flag takes it (true, none, 1,2 ...)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "none"
    if isinstance(value, list):
        return ",".join(_word(v) for v in value)
    return str(value)


def _strict_flag(strict: Any) -> str:
    """The flag that sets the fault policy ``strict`` (as stored)."""
    return "--strict" if strict else "--no-strict"


def _say(key: str, stored: Any, wanted: Any) -> str | None:
    """A differing value of a batch's identity in the terms of the flags that set it."""
    if key in _MS_FLAGS:
        return f"{_MS_FLAGS[key]} {_word(stored)}ms, not {_word(wanted)}ms"
    if key == "game_to" and None in (stored, wanted):
        return f"{'single hands' if stored is None else f'--game-to {stored}'}, not " + (
            "single hands" if wanted is None else f"--game-to {wanted}"
        )
    if key == "faults.strict":
        # The flags' words: "--strict false, not true" is no flag anyone could give.
        return f"{_strict_flag(stored)}, not {_strict_flag(wanted)}"
    if key in _FLAGS:
        return f"{_FLAGS[key]} {_word(stored)}, not {_word(wanted)}"
    if key.startswith("rules."):
        name = key.removeprefix("rules.")
        # An unset option (stored as null) is its default: "pass_cycle=none" named a word the
        # user never typed.
        said = [
            f"the default {name}" if v is None else f"{name}={_word(v)}" for v in (stored, wanted)
        ]
        return f"{'--rule ' if stored is not None else ''}{said[0]}, not {said[1]}"
    return f"{key} {stored!r}, not {wanted!r}"


def _differences(
    stored_kind: str, stored: Mapping[str, Any], wanted_kind: str, wanted: Mapping[str, Any]
) -> str:
    """What the stored run's configuration has that the wanted one has not, value by value."""
    served = [k in COMPETITION_KINDS for k in (stored_kind, wanted_kind)]
    if served[0] != served[1]:
        # A competition's settings are another command's: which command, no more.
        return (
            "arena serve's competition, not an arena run or sprt test"
            if served[0]
            else "an arena run or sprt test, not arena serve's competition"
        )
    kinds = [c.get("format") == SPRT_FORMAT for c in (stored, wanted)]
    if kinds[0] != kinds[1]:
        # The two commands share few settings (an sprt test plays boards until it decides).
        return (
            "an arena sprt test, not an arena run" if kinds[0] else "an arena run, not an sprt test"
        )
    if stored.get("game_to") != wanted.get("game_to"):
        # --game-to sets the rules' target: said once, as the flag.
        stored, wanted = _without_target(stored), _without_target(wanted)
    return "; ".join(config_differences(stored, wanted)) or "another configuration"


def _without_target(identity: Mapping[str, Any]) -> dict[str, Any]:
    rules = identity.get("rules")
    if not isinstance(rules, dict):
        return dict(identity)
    return {**identity, "rules": {k: v for k, v in rules.items() if k != "target"}}


def config_differences(
    stored: Mapping[str, Any], wanted: Mapping[str, Any], say: Describe = _say, prefix: str = ""
) -> list[str]:
    """Each value of a stored configuration that the wanted one does not have, in words
    (nested tables by dotted key; ``say`` words each value, the server's in its config's terms)."""
    parts = []
    for k in sorted(set(stored) | set(wanted)):
        a, b = stored.get(k), wanted.get(k)
        if a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            parts += config_differences(a, b, say, f"{prefix}{k}.")
        elif k == "bots" and isinstance(a, list) and isinstance(b, list):
            parts += _bots_differing(a, b)
        else:
            said = say(prefix + k, a, b)
            if said is not None:
                parts.append(said)
    return parts


def _bots_differing(stored: list[Any], wanted: list[Any]) -> list[str]:
    def names(bots: list[Any]) -> str:
        return ", ".join(str(b.get("name")) for b in bots if isinstance(b, dict))

    def commands(bots: list[Any]) -> dict[str, Any]:
        return {str(b.get("name")): b.get("command") for b in bots if isinstance(b, dict)}

    before, after = commands(stored), commands(wanted)
    if before.keys() != after.keys():
        return [f"bots {names(stored)}, not {names(wanted)}"]
    changed = [f"bot {n} {before[n]!r}, not {after[n]!r}" for n in before if before[n] != after[n]]
    # The same bots with the same commands: only the order (which decides the seats) differs.
    return changed or [f"bots in the order {names(stored)}, not {names(wanted)}"]


def load_results(db_path: Path | str, run: str | None = None) -> list[TableResult]:
    """Every stored game of the database (or of one run) as rating input, in schedule order.

    A single-hand table gives one result with its moon; a game of several hands gives one
    result with its totals, the moons shot per seat and, played to a target, the placings. A
    seat whose bot forfeited is marked so (it loses every pair against a seat that did not). A
    game cut short by a stopped referee (INTERRUPTED) or a failed one (CRASH) is kept in the
    database but is not a result: its scores say nothing about the bots. A ``run`` the
    database does not hold raises :class:`StoreError` naming the runs it does hold.
    """
    if run is not None and not isinstance(run, str):  # matched no run: [] said nothing
        raise StoreError(f"run must be a run id (a string) or None (every run), got {run!r:.60}")
    condition = "termination NOT IN (?, ?)" + (" AND run_id = ?" if run is not None else "")
    args = (
        Termination.INTERRUPTED.value,
        Termination.CRASH.value,
        *((run,) if run is not None else ()),
    )
    with Store.open(db_path, create=False) as store:
        if run is not None and not store.has_run(run):
            known = [r.run_id for r in store.runs()]
            raise StoreError(
                f"{store.path} holds no run {run!r}"
                + (f"; its runs: {', '.join(known)}" if known else "; it holds no run")
            )
        return [r for _, _, r in results_where(store._db, condition, args)]


def results_where(
    db: sqlite3.Connection, condition: str, args: Sequence[object]
) -> list[tuple[str, int, TableResult]]:
    """(run id, game, result) of each stored game that meets ``condition`` (SQL over the games
    table's columns, with ``args``), in run and game order, as :func:`load_results` reads them."""
    games = db.execute(
        f"SELECT run_id, game, board, full_game, hands FROM games WHERE {condition}"
        " ORDER BY run_id, game",
        args,
    ).fetchall()
    # Each seat's row, its number first (checked against the table's size below).
    seats: dict[tuple[str, int], list[tuple[int, str, int, int, int, bool]]] = {}
    for rid, game, seat, bot, points, placing, faults, status in db.execute(
        "SELECT run_id, game, seat, bot, points, placing, faults, status FROM seats"
        f" JOIN games USING (run_id, game) WHERE {condition} ORDER BY seat",
        args,
    ):
        # SQLite keeps whatever a hand edit put in a column ('x' for points): a ValueError
        # traceback from the ratings, far from the row.
        if not all(type(v) is int for v in (seat, points, placing, faults)) or not isinstance(
            bot, str
        ):
            raise StoreError(
                f"game {game} of run {rid} has seat {seat!r} stored as ({bot!r}, {points!r} "
                f"points, placing {placing!r}, {faults!r} faults): {_DAMAGED_ADVICE}"
            )
        forfeit = status != Termination.NORMAL.value
        seats.setdefault((rid, game), []).append((seat, bot, points, placing, faults, forfeit))
    sizes = _table_sizes(db)
    dealt = _hands_per_table(db)
    moons: dict[tuple[str, int], list[int]] = {}
    for rid, game, moon in db.execute(
        "SELECT run_id, game, moon FROM hands JOIN games USING (run_id, game)"
        f" WHERE moon IS NOT NULL AND {condition} ORDER BY number",
        args,
    ):
        moons.setdefault((rid, game), []).append(moon)
    results = []
    for rid, game, board, full_game, hands in games:
        rows = seats.get((rid, game))
        if not rows:  # a hand edit, or a failing disk: a KeyError traceback
            raise StoreError(f"game {game} of run {rid} has no seats stored: {_DAMAGED_ADVICE}")
        numbers, bots, totals, places, faults, forfeits = zip(*rows, strict=True)
        size = sizes.get(rid, len(rows))
        if list(numbers) != list(range(size)):  # rated as a table of fewer seats
            raise StoreError(
                f"game {game} of run {rid} has seats {list(numbers)} stored, where its table has "
                f"{size} (0 to {size - 1}): {_DAMAGED_ADVICE}"
            )
        result = _result(
            board,
            bots,
            totals,
            places,
            bool(full_game),
            # A table of several hands is one, however few it played (a moon that reached
            # the target in the first of a server's `hands = 3`): not a single hand.
            max(hands, dealt.get(rid, 1)),
            moons.get((rid, game), []),
            faults,
            forfeits,
        )
        results.append((rid, game, result))
    return results


def _table_sizes(db: sqlite3.Connection) -> dict[str, int]:
    """The seats at each run's tables, as its configuration's rules say (runs whose
    configuration does not say are left out: their games are checked for gaps only)."""
    return _config_ints(db, "rules", "players")


def _hands_per_table(db: sqlite3.Connection) -> dict[str, int]:
    """The most hands each run's tables deal, where its configuration says (a server's
    ``hands = N``; a batch run's tables deal one, or play to a target)."""
    return _config_ints(db, "hands")


def _config_ints(db: sqlite3.Connection, *keys: str) -> dict[str, int]:
    """Each run's whole number at ``keys`` in its stored configuration, where it has one."""
    found = {}
    for rid, config in db.execute("SELECT run_id, config FROM runs"):
        try:
            value = json.loads(config)
            for key in keys:
                value = value[key]
        except (ValueError, TypeError, KeyError):
            continue
        if type(value) is int:
            found[rid] = value
    return found


def result_of(record: GameRecord) -> TableResult:
    """A finished game as the ratings see it, as :func:`load_results` would read it back."""
    spec = record.spec
    faults = [0] * len(spec.seats)
    for fault in record.faults:
        faults[fault.seat] += 1
    return _result(
        spec.board,
        spec.seats,
        record.totals,
        record.placings,
        spec.hands is None,
        max(len(record.hands), spec.hands or 1),
        [h.moon for h in record.hands if h.moon is not None],
        tuple(faults),
        tuple(t is not Termination.NORMAL for t in record.seat_status),
    )


def _result(
    board: str,
    players: tuple[str, ...],
    totals: Sequence[int],
    places: Sequence[int | None],
    full_game: bool,
    hands: int,
    shooters: list[int],
    faults: tuple[int, ...],
    forfeits: tuple[bool, ...],
) -> TableResult:
    """The rating input of one game, stored or just played (``places``: the game's placings,
    which a full game reports; ``hands``: the most it could deal; ``shooters``: the seat that
    shot the moon in each hand that had one)."""
    from arena.ratings.results import TableResult  # the ratings package loads scipy: only here

    # A single hand names its moon's seat; a game of several counts each seat's moons.
    single = not full_game and hands <= 1
    placings = tuple(int(p or 0) for p in places)
    return TableResult(
        board=board,
        players=players,
        points=tuple(float(t) for t in totals),
        placings=placings if full_game else None,
        ranking=_ranking(totals, placings, forfeits),
        moon=shooters[0] if shooters and single else None,
        faults=faults,
        moons=None if single else tuple(shooters.count(s) for s in range(len(players))),
        forfeits=forfeits if any(forfeits) else None,
    )


def _ranking(
    totals: Sequence[int], placings: tuple[int, ...], forfeits: tuple[bool, ...]
) -> tuple[int, ...] | None:
    """The game's placings, where they rank some pair of seats otherwise than the points (with a
    forfeit last) do: under the settling rules, where the counters won decide; else None."""
    if not all(placings):  # not recorded
        return None
    key = [(f, t) for f, t in zip(forfeits, totals, strict=True)]
    n = len(key)
    for i in range(n):
        for j in range(i + 1, n):
            by_points = (key[i] > key[j]) - (key[i] < key[j])
            by_place = (placings[i] > placings[j]) - (placings[i] < placings[j])
            if by_points != by_place:
                return placings
    return None


def replay_lines(record: GameRecord) -> list[dict[str, Any]]:
    """A game as JSON-lines events: the table, each hand, each decision, each fault, each late
    reply, the result."""
    lines: list[dict[str, Any]] = [{"event": "table", **record.spec.to_dict()}]
    lines += [{"event": "hand", **h.to_dict()} for h in record.hands]
    lines += [{"event": "decision", **d.to_dict()} for d in record.decisions]
    lines += [{"event": "fault", **f.to_dict()} for f in record.faults]
    # The record's late replies too (they were left out: a replay was not the whole record).
    lines += [{"event": "late", **x.to_dict()} for x in record.late]
    lines.append(
        {
            "event": "result",
            "totals": list(record.totals),
            "placings": list(record.placings),
            "termination": record.termination.value,
            "seat_status": [t.value for t in record.seat_status],
            "reason": record.reason,
            "started_at": record.started_at,
            "finished_at": record.finished_at,
        }
    )
    return lines


def _check_game_index(game: object) -> None:
    """A StoreError for what is no game index (a whole number from 0)."""
    if isinstance(game, bool) or not isinstance(game, int) or game < 0:
        raise StoreError(f"game must be the game's index, a whole number from 0, got {game!r}")


def replay_path(out: Path, game: int, record: GameRecord) -> Path:
    """Where the replay of schedule entry ``game`` goes under the output folder."""
    # Checked as save_game checks it: -1 made a file "-00001-...", listed before game 0.
    _check_game_index(game)
    return out / "replays" / f"{game:06d}-{record.spec.table_id}.jsonl"


def write_replay(out: Path | str, game: int, record: GameRecord) -> Path:
    """Write the game's JSON-lines replay under ``out/replays`` atomically; returns its path."""
    path = replay_path(Path(out), game, record)  # a str too (it was a TypeError: str / str)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".jsonl.tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for line in replay_lines(record):
            f.write(json.dumps(line, separators=(",", ":")))
            f.write("\n")
    tmp.replace(path)
    return path
