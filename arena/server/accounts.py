"""Bot accounts of a competition server: names, secret tokens stored only as hashes, bans.

A token is made by :func:`secrets.token_urlsafe` and shown once, when the bot is added; the
database keeps only its SHA-256 (a salt or a slow hash buys nothing for 256 random bits). A token
identifies its bot: :meth:`AccountStore.lookup` goes from a token to a name, and nothing goes the
other way. The accounts live in the competition's SQLite file beside the games, in tables of their
own (``server_bots``, ``server_admin``), so that ``arena bots add`` can run while the server does.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from arena.config import name_fault
from arena.errors import ArenaError, ConfigError
from arena.referee.accounts import MAX_NOTE_LENGTH  # the referee's: it tells the reason to the bot
from arena.store import (
    StoreError,
    cannot_write,
    check_ours,
    check_regular,
    check_write_access,
    is_busy,
    open_for_reading,
    peek,
    rollback,
    unreadable,
)

__all__ = [
    "BAN_NOTE",
    "MAX_NAME_LENGTH",
    "MAX_NOTE_LENGTH",
    "TOKEN_BYTES",
    "Account",
    "AccountError",
    "AccountStatus",
    "AccountStore",
    "AccountsBusy",
    "Change",
    "Identity",
    "hash_token",
]

TOKEN_BYTES = 32
"""Random bytes in a token (256 bits; 43 URL-safe characters)."""
MAX_NAME_LENGTH = 64
"""Longest bot name, as the protocol allows in Hello.bot_name."""
BAN_NOTE = "banned by the organiser"
"""A ban's reason when none was ever given."""
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")
_BUSY_TIMEOUT_S = 10.0
_ADMIN = "admin"

SCHEMA = """
CREATE TABLE IF NOT EXISTS server_bots (
    name TEXT PRIMARY KEY,
    token_hash BLOB UNIQUE,          -- sha256 of the token; NULL once revoked
    status TEXT NOT NULL,            -- AccountStatus value
    note TEXT NOT NULL DEFAULT '',   -- why banned or revoked
    created_at REAL NOT NULL,
    changed_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS server_retired_tokens (
    token_hash BLOB PRIMARY KEY,     -- sha256 of a token no longer valid
    name TEXT NOT NULL,              -- the bot it was
    how TEXT NOT NULL,               -- 'revoked' (bots revoke) or 'replaced' (bots add --new-token)
    retired_at REAL NOT NULL,
    note TEXT NOT NULL DEFAULT ''    -- a revocation's reason, told to the token even once the bot
);                                   -- has a new one
CREATE TABLE IF NOT EXISTS server_admin (
    role TEXT PRIMARY KEY,
    token_hash BLOB NOT NULL,
    created_at REAL NOT NULL
);
"""


class AccountError(ArenaError, ValueError):
    """A bot name that is malformed, taken or unknown, or an account change that cannot be made."""


class AccountsBusy(AccountError):
    """Another program holds the database's write lock for longer than the busy timeout."""


class AccountStatus(Enum):
    """Whether a bot may play."""

    ACTIVE = "active"
    """May connect and play."""
    BANNED = "banned"
    """Its token is known but refused (PERMISSION_DENIED); its results stay in the standings."""
    REVOKED = "revoked"
    """Its token is forgotten (UNAUTHENTICATED); ``bots add --new-token`` issues another."""


@dataclass(frozen=True)
class Account:
    """One bot account as listed (never with its token)."""

    name: str
    """The bot's name, as shown in standings."""
    status: AccountStatus
    """Whether it may play."""
    note: str
    """Why it was banned or revoked ("" if not)."""
    created_at: float
    """When it was added, wall clock."""


@dataclass(frozen=True)
class Change:
    """What a ban or a revoke did to an account."""

    status: AccountStatus
    """Its status now."""
    note: str
    """Its reason now."""
    already: bool
    """Whether it was so before (banned; or its token revoked), so that at most its reason
    changed: a second revoke said "token revoked" as if the first had not been made."""
    note_changed: bool
    """Whether its reason changed."""


@dataclass(frozen=True)
class Identity:
    """What a token says: whose it is and whether that bot may play."""

    name: str
    """The bot the token belongs to."""
    status: AccountStatus
    """ACTIVE, BANNED, or REVOKED for a token revoked or replaced."""
    note: str
    """Why banned or revoked ("" if not, or if no reason was given)."""


def hash_token(token: str) -> bytes:
    """The stored form of a token."""
    return hashlib.sha256(token.encode("utf-8")).digest()


def new_token() -> str:
    """A fresh secret token."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def check_name(name: str) -> str:
    """The name, if it is a valid bot name; else an :class:`AccountError` saying why."""
    if not 1 <= len(name) <= MAX_NAME_LENGTH or not _NAME.fullmatch(name):
        # Which character is wrong, as arena run says it: "letters" alone read as allowing 'é'.
        fault = (name_fault(name) if name else " is empty") or " is not allowed"
        raise AccountError(
            f"bot name {name!r}{fault}: use 1 to {MAX_NAME_LENGTH} ASCII letters, digits, '_', "
            "'.' or '-', starting with a letter or digit"
        )
    return name


def check_note(note: str | None) -> str | None:
    """The reason, if it is short enough to keep (and tell a bot); else an
    :class:`AccountError` saying so."""
    if note is not None and len(note) > MAX_NOTE_LENGTH:
        raise AccountError(
            f"the reason is {len(note)} characters long: give at most {MAX_NOTE_LENGTH} (a ban's "
            "or a kick's reason is told to the bot, and a refusal carries no more)"
        )
    return note


def told_note(note: str) -> str:
    """A reason kept before there was a limit, cut to what the bot can be told."""
    return note if len(note) <= MAX_NOTE_LENGTH else note[: MAX_NOTE_LENGTH - 1] + "…"


def _same_but_case(conn: sqlite3.Connection, name: str) -> list[str]:
    """The other accounts whose names equal ``name`` apart from case (names are ASCII, which
    NOCASE folds)."""
    rows = conn.execute(
        "SELECT name FROM server_bots WHERE name = ? COLLATE NOCASE AND name != ? ORDER BY name",
        (name, name),
    ).fetchall()
    return [str(row[0]) for row in rows]


def _unknown(conn: sqlite3.Connection, name: str) -> AccountError:
    """The error for a name no account has, naming one that differs only in case."""
    near = _same_but_case(conn, name)
    hint = f" (names are exact: did you mean {' or '.join(map(repr, near))}?)" if near else ""
    return AccountError(f"no bot named {name!r}{hint}; `arena bots list` shows them")


def connect(db: Path | str) -> sqlite3.Connection:
    """A connection to the competition database in WAL mode, with the account tables made."""
    check_regular(Path(db))
    check_write_access(Path(db))
    try:
        conn = sqlite3.connect(str(db), timeout=_BUSY_TIMEOUT_S, isolation_level=None)
    except sqlite3.DatabaseError as e:
        raise StoreError(unreadable(db, e)) from None
    try:
        check_ours(conn, db, create=True)
    except StoreError:
        conn.close()
        raise
    except sqlite3.DatabaseError as e:  # not SQLite at all, or nowhere to make it
        conn.close()
        raise StoreError(unreadable(db, e)) from None
    try:
        # The first writes: an empty file (`touch comp.db`) where nothing may be written
        # (a read-only file or folder) was a traceback here.
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        if not _has_tables(conn):
            # One transaction: an `arena run` that claimed this file after the command looked
            # (check_not_a_batch) is seen here, and its batch gets no accounts' tables. Only to
            # make them: a competition's own file is not locked for every command.
            conn.execute("BEGIN IMMEDIATE")
            try:
                _refuse_a_batch(conn, db)
                for statement in _statements(SCHEMA):
                    conn.execute(statement)
                conn.execute("COMMIT")
            except BaseException:
                rollback(conn)
                raise
    except ConfigError:
        conn.close()
        raise
    except sqlite3.DatabaseError as e:
        conn.close()
        raise StoreError(unreadable(db, e)) from None
    columns = {row[1] for row in conn.execute("PRAGMA table_info(server_retired_tokens)")}
    if "note" not in columns:  # made before a revocation's reason was kept with its token
        conn.execute("ALTER TABLE server_retired_tokens ADD COLUMN note TEXT NOT NULL DEFAULT ''")
    return conn


_TABLES = ("server_bots", "server_retired_tokens", "server_admin")
"""The tables :data:`SCHEMA` makes."""


def _has_tables(conn: sqlite3.Connection) -> bool:
    """Whether the database has every table of :data:`SCHEMA` already."""
    marks = ", ".join("?" * len(_TABLES))
    query = f"SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN ({marks})"
    return bool(conn.execute(query, _TABLES).fetchone()[0] == len(_TABLES))


def _statements(script: str) -> Iterator[str]:
    """The statements of an SQL script, one by one (``executescript`` commits first, so it
    cannot run in a transaction of ours)."""
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            yield statement
            statement = ""


def _accounts(conn: sqlite3.Connection) -> list[Account]:
    """Every account in ``conn``'s database, by name."""
    rows = conn.execute(
        "SELECT name, status, note, created_at FROM server_bots ORDER BY name"
    ).fetchall()
    return [Account(r[0], AccountStatus(r[1]), r[2], r[3]) for r in rows]


def read_accounts(db: Path) -> list[Account]:
    """Every account in the competition database ``db``, by name, read without writing there
    (a database in a read-only folder or file is listed as ``arena ratings`` reads it)."""
    conn = open_for_reading(db)
    try:
        _refuse_a_batch(conn, db)  # a damaged batch's file, which check_not_a_batch cannot read
        has_accounts = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'server_bots'"
        ).fetchone()
        return _accounts(conn) if has_accounts else []
    except sqlite3.DatabaseError as e:
        raise StoreError(unreadable(db, e)) from None
    finally:
        conn.close()


def _retire(conn: sqlite3.Connection, name: str, how: str, now: float, note: str = "") -> None:
    """Keep the digest of bot ``name``'s token (if it has one) as retired: revoked (``note``:
    why) or replaced."""
    conn.execute(
        "INSERT OR REPLACE INTO server_retired_tokens (token_hash, name, how, retired_at, note)"
        " SELECT token_hash, name, ?, ?, ? FROM server_bots"
        " WHERE name = ? AND token_hash IS NOT NULL",
        (how, now, note, name),
    )


class AccountStore:
    """The bot accounts in one SQLite file; each method is one short transaction."""

    def __init__(self, db: Path | str) -> None:
        self._db = str(db)
        self._conn = connect(db)
        self._owner = threading.get_ident()
        # The referee looks tokens up, and the server runs admin actions, in worker threads (never
        # on the event loop); a SQLite connection belongs to the thread that uses it, so each
        # other thread gets a connection of its own.
        self._local = threading.local()
        self._others: list[sqlite3.Connection] = []
        self._others_lock = threading.Lock()

    def close(self) -> None:
        """Close the connections (this thread's and those opened for other threads)."""
        self._conn.close()
        with self._others_lock:
            others, self._others = self._others, []
        for conn in others:
            conn.close()

    def _connection(self) -> sqlite3.Connection:
        """The calling thread's connection."""
        if threading.get_ident() == self._owner:
            return self._conn
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(
                self._db, timeout=_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            self._local.conn = conn
            with self._others_lock:
                self._others.append(conn)
        return conn

    def add(
        self,
        name: str,
        *,
        new_token_for_existing: bool = False,
        deliver: Callable[[str], None] | None = None,
    ) -> str:
        """Add a bot (or give an existing one a new token) and return its token, shown only now.

        A new token for a bot that does not exist is refused, as is adding one that does, or
        one whose name equals another's apart from case.

        ``deliver`` is handed the token before the change is committed: if it raises (the token
        could not be shown), the change is rolled back and the error propagates, so that no
        account is left with a token nobody has."""
        conn = self._connection()
        check_name(name)
        token = new_token()
        digest = hash_token(token)
        now = time.time()
        with _transaction(conn, gives_token=True):
            row = conn.execute("SELECT status FROM server_bots WHERE name = ?", (name,)).fetchone()
            near = _same_but_case(conn, name) if row is None else []
            if row is None and new_token_for_existing:
                # A mistyped name must not become a new account with a token nobody asked for.
                hint = f"did you mean {' or '.join(map(repr, near))}? " if near else ""
                raise AccountError(
                    f"there is no bot {name!r} to give a new token ({hint}`arena bots list` "
                    "shows the bots); to add it, leave out --new-token"
                )
            if near:
                # `Foo` beside `foo`: two bots that standings, logs and people tell apart only by
                # case. Exact names stay exact (a database that has both keeps working).
                taken = (
                    f"bot {near[0]!r} already exists"
                    if len(near) == 1
                    else f"bots {' and '.join(map(repr, near))} already exist"
                )
                raise AccountError(
                    f"{taken}, and {name!r} differs only in case; choose a name that differs in "
                    f"more than case (or, to replace {near[0]!r}'s token, add {near[0]!r} with "
                    "--new-token)"
                )
            if row is None:
                conn.execute(
                    "INSERT INTO server_bots (name, token_hash, status, note, created_at,"
                    " changed_at) VALUES (?, ?, ?, '', ?, ?)",
                    (name, digest, AccountStatus.ACTIVE.value, now, now),
                )
            elif not new_token_for_existing:
                raise AccountError(
                    f"bot {name!r} already exists ({row[0]}); to replace its token "
                    "(the old one stops working) add it again with --new-token"
                )
            else:
                # A new token lifts a revocation but never a ban: unbanning is a separate act.
                status = AccountStatus(row[0])
                if status is AccountStatus.REVOKED:
                    status = AccountStatus.ACTIVE
                _retire(conn, name, "replaced", now)
                conn.execute(
                    "UPDATE server_bots SET token_hash = ?, status = ?, changed_at = ?,"
                    " note = CASE WHEN ? = 'active' THEN '' ELSE note END WHERE name = ?",
                    (digest, status.value, now, status.value, name),
                )
            # Inside the transaction, so that a token that never reached anyone is rolled back.
            # The write lock is held meanwhile: a line into a terminal or an empty pipe.
            if deliver is not None:
                deliver(token)
        return token

    def revoke(self, name: str, note: str | None = None) -> Change:
        """Revoke a bot's token: it may not play with it from now on, and is told so (its
        digest is kept apart) (``note``: why; None keeps the note the account has). A banned bot
        stays banned; what changed."""
        # Made revoked, a banned bot lost its ban: the new token `bots add --new-token` gives a
        # revoked bot made it active, with no unban.
        check_note(note)
        conn = self._connection()
        with _transaction(conn):
            status, old_note, token_hash = self._row(conn, name)
            if status is not AccountStatus.BANNED:
                status = AccountStatus.REVOKED
            new_note = old_note if note is None else note
            now = time.time()
            _retire(conn, name, "revoked", now, new_note)
            conn.execute(
                "UPDATE server_bots SET status = ?, note = ?, changed_at = ?, token_hash = NULL"
                " WHERE name = ?",
                (status.value, new_note, now, name),
            )
        return Change(status, new_note, token_hash is None, new_note != old_note)

    def ban(self, name: str, note: str | None = None) -> Change:
        """Refuse a bot's token (its results stay; ``note``: why; None keeps the note the
        account has, so that a second ban without a reason does not wipe the first's; with no
        note at all, :data:`BAN_NOTE`); what changed."""
        check_note(note)
        conn = self._connection()
        with _transaction(conn):
            status, old_note, _ = self._row(conn, name)
            # Without a note, else the refused bot heard only "(banned)", and `bots list` showed
            # no reason.
            new_note = note or old_note or BAN_NOTE
            conn.execute(
                "UPDATE server_bots SET status = ?, note = ?, changed_at = ? WHERE name = ?",
                (AccountStatus.BANNED.value, new_note, time.time(), name),
            )
        already = status is AccountStatus.BANNED
        return Change(AccountStatus.BANNED, new_note, already, new_note != old_note)

    def unban(self, name: str) -> AccountStatus:
        """Let a banned bot play again; its status now: ACTIVE, or REVOKED for a bot whose token
        was revoked before the ban (it has none to play with until it is given a new one)."""
        conn = self._connection()
        with _transaction(conn):
            status, _, token_hash = self._row(conn, name)
            if status is not AccountStatus.BANNED:
                raise AccountError(f"bot {name!r} is not banned (it is {status.value})")
            # Unbanned as "active", a revoked bot was listed as one that may play, with no token
            # that could (and `bots add` then called it active, not revoked).
            now = AccountStatus.ACTIVE if token_hash else AccountStatus.REVOKED
            conn.execute(
                "UPDATE server_bots SET status = ?, note = '', changed_at = ? WHERE name = ?",
                (now.value, time.time(), name),
            )
        return now

    def _row(self, conn: sqlite3.Connection, name: str) -> tuple[AccountStatus, str, bytes | None]:
        """(status, note, token hash) of a bot, or an :class:`AccountError` naming none."""
        row = conn.execute(
            "SELECT status, note, token_hash FROM server_bots WHERE name = ?", (name,)
        ).fetchone()
        if row is None:
            raise _unknown(conn, name)
        return AccountStatus(row[0]), str(row[1]), None if row[2] is None else bytes(row[2])

    def get(self, name: str) -> Account:
        """One account by name."""
        conn = self._connection()
        row = conn.execute(
            "SELECT name, status, note, created_at FROM server_bots WHERE name = ?", (name,)
        ).fetchone()
        if row is None:
            raise _unknown(conn, name)
        return Account(row[0], AccountStatus(row[1]), row[2], row[3])

    def accounts(self) -> list[Account]:
        """Every account, by name."""
        return _accounts(self._connection())

    def token_digests(self) -> dict[str, bytes | None]:
        """Each bot's token as stored (its digest; None once revoked), by name: a session that
        said another token (replaced with ``bots add --new-token``) may not play on."""
        rows = self._connection().execute("SELECT name, token_hash FROM server_bots").fetchall()
        return {name: None if digest is None else bytes(digest) for name, digest in rows}

    def lookup(self, token: str) -> Identity | None:
        """Who a token belongs to (a revoked or replaced one's bot as REVOKED, or as BANNED if
        banned), or None when it was never any bot's."""
        if not token:
            return None
        digest = hash_token(token)
        row = (
            self._connection()
            .execute(
                "SELECT name, status, note, token_hash FROM server_bots WHERE token_hash = ?",
                (digest,),
            )
            .fetchone()
        )
        # The index finds the row by the hash; the final comparison is constant-time anyway, so
        # that no code path compares secret material byte by byte.
        if row is None or not hmac.compare_digest(bytes(row[3]), digest):
            return self._retired(digest)
        # A longer note (kept before there was a limit) is cut to what a refusal can carry.
        return Identity(row[0], AccountStatus(row[1]), told_note(row[2]))

    def _retired(self, digest: bytes) -> Identity | None:
        """The identity of a token revoked or replaced (refused, saying so), None if it never
        was one: told as an unknown token, its bot's author could not tell a revocation from a
        typing mistake."""
        row = (
            self._connection()
            .execute(
                "SELECT r.name, r.how, r.token_hash, b.status, b.note, r.note"
                " FROM server_retired_tokens r JOIN server_bots b ON b.name = r.name"
                " WHERE r.token_hash = ?",
                (digest,),
            )
            .fetchone()
        )
        if row is None or not hmac.compare_digest(bytes(row[2]), digest):
            return None
        name, how, _, value, note, reason = row
        status = AccountStatus(value)
        if status is AccountStatus.BANNED:
            return Identity(name, status, told_note(note))
        if how == "replaced":
            told = "this token was replaced by a new one; use the token the organiser gave last"
        elif status is AccountStatus.REVOKED:  # the latest reason (a second revoke may give one)
            told = note
        else:  # the bot has a new token since: its reason, and where to look
            told = f"{reason}; the bot has a new token since" if reason else ""
        return Identity(name, AccountStatus.REVOKED, told_note(told))

    def new_admin_token(self, deliver: Callable[[str], None] | None = None) -> str:
        """Make (or replace) the admin token and return it, shown only now (``deliver``: as in
        :meth:`add`; if it raises, the old admin token stays)."""
        conn = self._connection()
        token = new_token()
        with _transaction(conn, gives_token=True):
            conn.execute(
                "INSERT OR REPLACE INTO server_admin (role, token_hash, created_at)"
                " VALUES (?, ?, ?)",
                (_ADMIN, hash_token(token), time.time()),
            )
            if deliver is not None:
                deliver(token)
        return token

    def check_admin(self, token: str) -> bool:
        """Whether a token is the admin token (False when none was made)."""
        conn = self._connection()
        row = conn.execute(
            "SELECT token_hash FROM server_admin WHERE role = ?", (_ADMIN,)
        ).fetchone()
        if row is None or not token:
            return False
        return hmac.compare_digest(bytes(row[0]), hash_token(token))


class _transaction:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on error (the connection is in autocommit mode)."""

    def __init__(self, conn: sqlite3.Connection, *, gives_token: bool = False) -> None:
        self._conn = conn
        self._gives_token = gives_token

    def __enter__(self) -> None:
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as e:
            if is_busy(e):
                # A traceback ("database is locked") said nothing of what to do.
                raise AccountsBusy(
                    f"the database is locked by another program (waited {_BUSY_TIMEOUT_S:g} s "
                    "for it to finish writing): try again; if it stays locked, end what holds it "
                    "open in a transaction (a sqlite3 shell, a backup)"
                ) from None
            raise _unwritable(e, self._gives_token) from None

    def __exit__(self, kind: object, value: object, tb: object) -> None:
        if kind is None:
            try:
                self._conn.execute("COMMIT")
                return
            except sqlite3.OperationalError as e:
                rollback(self._conn)
                raise _unwritable(e, self._gives_token) from None
        rollback(self._conn)
        if isinstance(value, sqlite3.OperationalError):
            raise _unwritable(value, self._gives_token) from None


def _unwritable(error: sqlite3.OperationalError, gives_token: bool = False) -> Exception:
    """One line for a change the database could not take (a full disk, a read-only file), as
    :class:`AccountsBusy` (nothing wrong with the command: exit 1); another error as it is.
    Each was a traceback, and `bots add` had printed a token it never stored."""
    token = " (a token printed was not stored)" if gives_token else ""
    said = cannot_write(error, f", so nothing changed{token}")
    if said is None:
        return error
    return AccountsBusy(f"{said}, then run the command again")


_OTHER_KINDS = {"batch": "a batch run (arena run)", "sprt": "a sequential test (arena sprt)"}
"""What a database of each kind of the other commands holds, in words."""


def check_not_a_batch(db: Path) -> None:
    """Refuse, in one short line, a database that ``arena run`` or ``arena sprt`` made: the
    ledger would otherwise list every setting of that run as differing from the competition's."""
    check_regular(db)  # /dev/null was listed as a competition of no bots
    if not db.is_file():
        return
    # A database of accounts alone has no runs yet.
    _refuse_kinds(db, [row[0] for row in peek(db, "SELECT kind FROM runs") or ()])


def _refuse_kinds(db: Path | str, kinds: list[Any]) -> None:
    """Refuse the database ``db`` if one of its runs' ``kinds`` is another command's."""
    for kind in kinds:
        if kind in _OTHER_KINDS:
            raise ConfigError(
                f"--db {db}: holds {_OTHER_KINDS[kind]}, not a competition; give the "
                "competition's database, or a new file to start one"
            )


def _refuse_a_batch(conn: sqlite3.Connection, db: Path | str) -> None:
    """:func:`check_not_a_batch` on an open connection (in the transaction that makes the
    accounts' tables, so that a batch's run written meanwhile cannot slip between the two)."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'runs'").fetchone() is not None:
        _refuse_kinds(db, [row[0] for row in conn.execute("SELECT kind FROM runs")])
