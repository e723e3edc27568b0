"""The competition's persistence: finished games in the arena store, running tables on the side.

Crash safety comes from the order of writes, each one a transaction of SQLite in WAL mode with
``synchronous=FULL``:

1. before a table starts, its spec goes into ``server_running`` (with the ladder's state: the next
   board and the boards still owed, so that duplicate play survives a restart);
2. when it ends, :meth:`arena.store.Store.save_game` commits the whole record;
3. then, in one transaction, its ``server_running`` row goes and the live ratings it changed are
   written (so a game's live update is applied exactly when its mark is cleared). This third
   commit rides with the next table's first one (or a flush), which halves the synchronous
   commits per table; until then the game is simply "committed but still marked".

After a crash, :meth:`LedgerDB.recover` finds every table still marked running: one whose record
was committed gets its live update applied and loses its mark; any other is committed as
INTERRUPTED (not rated) with the reason. Nothing finished is lost, nothing is counted twice.

All methods of :class:`LedgerDB` run in one worker thread (SQLite blocks); :class:`Ledger` is the
asyncio face that sends them there, so the referee's loop never waits on the disk. Reads for the
web page use a second connection in a second thread, so that a page never waits behind a commit.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from arena.errors import ConfigError
from arena.ratings.results import TableResult
from arena.rules import Rules
from arena.server.config import ServerConfig
from arena.store import (
    COMPETITION_KINDS,
    Store,
    cannot_write,
    config_differences,
    is_busy,
    is_full,
    lock_database,
    result_of,
    results_where,
    rollback,
    unlock_database,
)
from arena.table import GameRecord, TableSpec, Termination

__all__ = [
    "BUSY_RETRY_DELAYS_S",
    "BUSY_WARNING",
    "INTERRUPTED_REASON",
    "BotTally",
    "Ledger",
    "LedgerDB",
    "interrupted_record",
    "is_rated",
    "read_only",
    "read_rated_results",
    "table_result",
]

INTERRUPTED_REASON = (
    "the server stopped (a crash or a kill, or a stop while the database refused the result) "
    "before this game's result was stored; it is not rated"
)
_BUSY_TIMEOUT_S = 10.0
BUSY_RETRY_DELAYS_S = (1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 30.0, 30.0, 30.0)
"""The waits before each new attempt at a write that found the database locked by another
program: with each attempt's own busy timeout, about four minutes in all before it is given up."""
FULL_RETRY_S = 10.0
"""How often a write that found the disk full is tried again."""
FULL_POLL_S = 0.1
"""How often a write waiting for room looks whether to give up (a drain) meanwhile."""
FULL_ERROR = (
    "the database's disk is full: results cannot be stored, so no table starts; the server"
    " keeps what it has and tries again: make room on that disk"
)
UNWRITABLE_ERROR = (
    "the database cannot be written (a read-only file or folder, a disk error, a file size"
    " limit): results cannot be stored, so no table starts; the server keeps what it has and"
    " tries again: make the file writable, or fix the disk"
)
"""The error line each time a write finds the database unwritable for another reason than a
full disk (it was raised at once: the game's record lost, the ladder retrying in silence)."""
BUSY_WARNING = (
    "the database is locked by another program (a sqlite3 shell or a backup in a write"
    " transaction?): the server waits and tries again; end that program's transaction (COMMIT"
    " or ROLLBACK, or quit it) so that the results are stored"
)
"""The warning each time a write of the server's finds the database locked."""
SECRET_BYTES = 32
"""Random bytes in a competition's secret (written as hex)."""
FLUSH_EVERY = 32
"""Finished tables whose running marks may wait for the next commit of the ledger's own."""
_T = TypeVar("_T")

log = logging.getLogger("arena.server")

SCHEMA = """
CREATE TABLE IF NOT EXISTS server_running (
    game       INTEGER PRIMARY KEY,  -- the game number the table will be stored under
    spec       TEXT NOT NULL,        -- its TableSpec as JSON
    started_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS server_state (
    key   TEXT PRIMARY KEY,          -- 'next_board', 'owed', 'paused', 'given_up'
    value TEXT NOT NULL              -- JSON
);
CREATE TABLE IF NOT EXISTS server_secret (
    id     INTEGER PRIMARY KEY CHECK (id = 0),
    secret TEXT NOT NULL             -- keys the board seeds (matchmaking.board_seed); never served
);
CREATE TABLE IF NOT EXISTS server_live (
    bot   TEXT PRIMARY KEY,          -- the live (matchmaking) rating, OpenSkill mu and sigma
    mu    REAL NOT NULL,
    sigma REAL NOT NULL
);
"""


def read_only(path: Path | str, timeout_s: float = _BUSY_TIMEOUT_S) -> sqlite3.Connection:
    """A read-only connection to the database at ``path``.

    Through a ``file:`` URI made by :meth:`Path.as_uri`, which escapes the path: written into the
    URI as it is, a ``#``, ``?`` or ``%`` in the file's name cuts the name short or changes it
    (``a#b.db`` opened an empty ``a`` beside it, and ``x%41y.db`` failed to open).
    """
    uri = f"{Path(path).resolve().as_uri()}?mode=ro"
    return sqlite3.connect(uri, uri=True, timeout=timeout_s, check_same_thread=False)


def is_rated(record: GameRecord) -> bool:
    """Whether a game counts in the ratings: it was played to its end (forfeits included)."""
    return record.termination is Termination.NORMAL


def table_result(record: GameRecord) -> TableResult:
    """A finished game as the ratings see it (as :func:`read_rated_results` reads it back)."""
    return result_of(record)


def interrupted_record(spec: TableSpec, started_at: float, now: float, reason: str) -> GameRecord:
    """The record of a table that never reported: no hands, no points, not rated."""
    seats = len(spec.seats)
    return GameRecord(
        spec=spec,
        hands=(),
        decisions=(),
        faults=(),
        totals=(0,) * seats,
        placings=(1,) * seats,
        termination=Termination.INTERRUPTED,
        # The seats' own ends: none forfeited (as in a game a stop interrupted, where a crash
        # recovered said "interrupted" for each seat).
        seat_status=(Termination.NORMAL,) * seats,
        reason=reason,
        started_at=started_at,
        finished_at=now,
    )


@dataclass
class BotTally:
    """What a bot has done so far (mutable: updated as games arrive)."""

    games: int = 0
    """Rated games."""
    hands: int = 0
    """Hands in those games."""
    points: int = 0
    """Points taken in them."""
    faults: int = 0
    """Faults committed in any game."""
    forfeits: int = 0
    """Rated games it lost by forfeit."""
    interrupted: int = 0
    """Games it sat in that were interrupted (not rated)."""
    last_game: int | None = None
    """Its latest game's number (None before its first)."""

    def saw(self, game: int) -> None:
        """Note that the bot sat in game number ``game`` (rated or not)."""
        self.last_game = game if self.last_game is None else max(self.last_game, game)

    def add(self, record: GameRecord, seat: int, game: int) -> None:
        """Count one game of this bot's."""
        self.faults += sum(1 for f in record.faults if f.seat == seat)
        self.saw(game)
        if not is_rated(record):
            self.interrupted += 1
            return
        self.games += 1
        self.hands += len(record.hands)
        self.points += record.totals[seat]
        self.forfeits += int(record.seat_status[seat].is_forfeit)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "games": self.games,
            "hands": self.hands,
            "points": self.points,
            "points_per_hand": self.points / self.hands if self.hands else None,
            "faults": self.faults,
            "forfeits": self.forfeits,
            "interrupted": self.interrupted,
            "last_game": self.last_game,
        }


def read_rated_results(
    db: sqlite3.Connection, run_id: str, after: int = -1
) -> list[tuple[int, TableResult]]:
    """Every rated game of a run numbered above ``after``, as rating input, in game order."""
    condition = "run_id = ? AND termination = 'normal' AND game > ?"
    return [(game, r) for _, game, r in results_where(db, condition, (run_id, after))]


def _check_same_competition(
    store: Store, run_id: str, identity: Mapping[str, Any], path: Path
) -> None:
    """Refuse a database that holds another competition, saying what differs in the config's
    own words, unless that one never started a table (then it is replaced). (The store's
    refusal says to delete the file: here it holds the accounts and every game played so
    far.)"""
    for other in store.runs():
        if other.run_id != run_id and other.kind in COMPETITION_KINDS:
            stored, wanted = _game_length_in_words(other.config, identity)
            words = config_differences(stored, wanted, _in_config_words)
            differs = "; ".join(words) or "another configuration"
            if store.forget_unplayed(other.run_id, unless_rows_in="server_running"):
                # No table of it ever started: the organiser is still setting it up (an
                # entrant's name mended, as the start's warning asks), and nothing is lost.
                log.warning(
                    "the database's competition never started a table: this config replaces it",
                    extra={"was": differs},
                )
                continue
            raise ConfigError(
                f"--db {path}: holds another competition ({differs}); a competition keeps its "
                "table size, rules, hands per table, seed and event: set them back in "
                "--config, or give a new --db to start another competition"
            )


def _game_length_in_words(
    stored: Mapping[str, Any], wanted: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both identities with ``hands`` written as the config file sets a table's length
    (``hands = N`` or ``game_to = POINTS``), where either plays whole games: the identity keeps
    whole games as ``hands`` null and the target among the rules, so a change of length said
    "hands 1, not null" and a change of game_to "[rule] target 100, not 200"."""
    if stored.get("hands") is not None and wanted.get("hands") is not None:
        return dict(stored), dict(wanted)

    def length(identity: Mapping[str, Any]) -> dict[str, Any]:
        rules = identity.get("rules")
        rules = dict(rules) if isinstance(rules, Mapping) else {}
        target = rules.pop("target", None)
        hands = identity.get("hands")
        said = f"hands = {hands}" if hands is not None else f"game_to = {target}"
        return {**identity, "rules": rules, "hands": said}

    return length(stored), length(wanted)


def _in_config_words(key: str, stored: Any, wanted: Any) -> str | None:
    """A differing value of a competition's identity as the server's config file writes it."""
    if key == "kind":  # it follows from the event
        return None
    if key == "hands" and isinstance(stored, str) and isinstance(wanted, str):
        return f"{stored}, not {wanted}"  # already in the file's words (_game_length_in_words)
    if key == "event" and (stored is None or wanted is None):
        return "a ladder, not an [event]" if stored is None else "an [event], not a ladder"
    name = {"rules.players": "players", "event": "[event]"}.get(key, key)
    if name.startswith("rules."):
        name = f"[rule] {name.removeprefix('rules.')}"
    return f"{name} {_shown(stored)}, not {_shown(wanted)}"


def _shown(value: Any) -> str:
    if value is None:  # TOML has no null: the file left the key out ("null" is JSON's word)
        return "unset"
    return json.dumps(value) if not isinstance(value, str) else repr(value)


class LedgerDB:
    """The database side; every method runs in the one writer thread."""

    def __init__(self, path: Path, config: ServerConfig, total: int | None = None) -> None:
        self.path = path
        self.run_id = config.run_id
        self._lock = lock_database(path, "arena serve")
        # Looked at under the lock: no other server can make it meanwhile.
        self.made = not path.exists()
        """Whether this start made the database (:meth:`close` may then remove it)."""
        store: Store | None = None
        conn: sqlite3.Connection | None = None
        try:
            self.store = store = Store.open(path)
            _check_same_competition(store, self.run_id, config.identity(), path)
            store.claim(self.run_id, config.kind, config.identity(), total)
            self._db = conn = sqlite3.connect(
                path, timeout=_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.executescript(SCHEMA)
            self._pending: list[tuple[int, dict[str, tuple[float, float]]]] = []
            self.secret, self.secret_made = self._secret()
        except BaseException:
            # A database this start made is no use half made: the next start would take it for
            # one that exists (and say nothing of starting a new one).
            try:
                for opened in (conn, store):
                    if opened is not None:
                        opened.close()
                self._discard()
            finally:
                unlock_database(self.path, self._lock)
            raise

    def _secret(self) -> tuple[str, bool]:
        """The competition's secret, made (and kept) at the first start; and whether it was made
        now. A database of an older server has none: it gets one at its first start here, and
        only the boards dealt from then on are keyed by it (the older ones' seeds were public)."""
        made = self._db.execute(
            "INSERT OR IGNORE INTO server_secret (id, secret) VALUES (0, ?)",
            (secrets.token_hex(SECRET_BYTES),),
        ).rowcount
        row = self._db.execute("SELECT secret FROM server_secret WHERE id = 0").fetchone()
        return str(row[0]), made == 1

    def close(self, *, discard: bool = False) -> None:
        """Flush, then close both connections and let another server have the database;
        ``discard``: remove it if this start made it (a start that failed)."""
        try:
            if not (discard and self.made):  # nothing to keep in a file about to go
                try:
                    self.flush()
                except sqlite3.OperationalError as e:
                    if not is_busy(e) and cannot_write(e) is None:
                        raise
                    # The games are stored; only their running marks stay, and the next start
                    # clears them as it does after a crash (recover): nothing is lost. (A full
                    # disk here ended a drained server in exit 1 and a start's error line.)
                    why = (
                        "the database is locked by another program"
                        if is_busy(e)
                        else f"the database cannot be written ({e})"
                    )
                    log.warning(
                        f"{why}: the running marks of the last games stay until the next "
                        "start, which clears them",
                        extra={"games": [game for game, _ in self._pending]},
                    )
            self._db.close()
            self.store.close()
            if discard:
                self._discard()
        finally:
            # Last: the files go while no other server can start on them.
            unlock_database(self.path, self._lock)

    def _discard(self) -> None:
        """Remove the database (closed) if this start made it."""
        if self.made:
            for end in ("", "-wal", "-shm", "-journal"):
                self.path.with_name(self.path.name + end).unlink(missing_ok=True)

    # ---- start-up ---------------------------------------------------------------------------

    def recover(
        self, now: float
    ) -> tuple[list[tuple[int, GameRecord]], list[tuple[int, GameRecord]]]:
        """Deal with the tables a crash left marked running.

        Returns (interrupted, committed): the tables now committed as interrupted (their marks
        cleared), and the tables whose record had been committed but whose mark, and with it the
        live-rating update, had not; pass each of those to :meth:`finish` with its update.
        """
        rows = self._db.execute(
            "SELECT game, spec, started_at FROM server_running ORDER BY game"
        ).fetchall()
        stored = self.store.finished(self.run_id)
        # When the server stopped is not known: the last game it committed is the latest sign of
        # life (the restart's own time made a game cut off a day before "finish" at the restart).
        alive = self._db.execute(
            "SELECT MAX(finished_at) FROM games WHERE run_id = ?", (self.run_id,)
        ).fetchone()[0]
        interrupted = []
        committed = []
        for game, spec_text, started_at in rows:
            if game in stored:
                text = self._db.execute(
                    "SELECT record FROM games WHERE run_id = ? AND game = ?", (self.run_id, game)
                ).fetchone()[0]
                committed.append((game, GameRecord.from_dict(json.loads(text))))
                continue
            spec = TableSpec.from_dict(json.loads(spec_text))
            last_seen = min(now, max(started_at, alive or started_at))
            record = interrupted_record(spec, started_at, last_seen, INTERRUPTED_REASON)
            self.store.save_game(self.run_id, game, record)
            self._db.execute("DELETE FROM server_running WHERE game = ?", (game,))
            interrupted.append((game, record))
        return interrupted, committed

    def next_game(self) -> int:
        """The number the next table gets."""
        row = self._db.execute(
            "SELECT MAX(m) FROM (SELECT MAX(game) AS m FROM games WHERE run_id = ?"
            " UNION ALL SELECT MAX(game) FROM server_running)",
            (self.run_id,),
        ).fetchone()
        return 0 if row[0] is None else int(row[0]) + 1

    def state(self) -> dict[str, Any]:
        """The saved ladder state (key -> JSON value)."""
        return {
            k: json.loads(v) for k, v in self._db.execute("SELECT key, value FROM server_state")
        }

    def live(self) -> dict[str, tuple[float, float]]:
        """The saved live ratings."""
        return {
            b: (mu, s) for b, mu, s in self._db.execute("SELECT bot, mu, sigma FROM server_live")
        }

    def rated_results(self, after: int = -1) -> list[tuple[int, TableResult]]:
        """Every rated game numbered above ``after``, as rating input, in game order."""
        return read_rated_results(self._db, self.run_id, after)

    def rated_count(self) -> int:
        """How many games are rated."""
        row = self._db.execute(
            "SELECT COUNT(*) FROM games WHERE run_id = ? AND termination = 'normal'",
            (self.run_id,),
        ).fetchone()
        return int(row[0])

    def tallies(self) -> dict[str, BotTally]:
        """Every bot's tally, from the stored games."""
        tallies: dict[str, BotTally] = {}
        for bot, termination, hands, points, status, faults, game in self._db.execute(
            "SELECT s.bot, g.termination, g.hands, s.points, s.status, s.faults, g.game"
            " FROM seats s JOIN games g ON g.run_id = s.run_id AND g.game = s.game"
            " WHERE s.run_id = ?",
            (self.run_id,),
        ):
            t = tallies.setdefault(bot, BotTally())
            t.faults += faults
            t.saw(game)
            if termination != Termination.NORMAL.value:
                t.interrupted += 1
                continue
            t.games += 1
            t.hands += hands
            t.points += points
            t.forfeits += int(Termination(status).is_forfeit)
        return tallies

    def dealt_boards(self, boards: Sequence[str]) -> dict[str, tuple[int, Rules]]:
        """The seed and the rules a stored rotation of each of ``boards`` was dealt with (boards
        with none stored are left out), so that the rotations still to come deal the same."""
        rows = self._db.execute(
            "SELECT board, seed, json_extract(record, '$.spec.rules') FROM games"
            " WHERE run_id = ? AND board IN (SELECT value FROM json_each(?)) GROUP BY board",
            (self.run_id, json.dumps(list(boards))),
        )
        return {
            board: (int(seed), Rules.from_dict(json.loads(rules))) for board, seed, rules in rows
        }

    def finished_tables(self) -> list[tuple[int, str, str]]:
        """(game, table id, termination) of every stored game."""
        return list(
            self._db.execute(
                "SELECT game, table_id, termination FROM games WHERE run_id = ? ORDER BY game",
                (self.run_id,),
            )
        )

    def tables_seated(self) -> list[tuple[int, tuple[str, ...]]]:
        """(game, its bots in seat order) of every stored game, oldest first."""
        tables: dict[int, list[str]] = {}
        for game, bot in self._db.execute(
            "SELECT game, bot FROM seats WHERE run_id = ? ORDER BY game, seat", (self.run_id,)
        ):
            tables.setdefault(game, []).append(bot)
        return [(game, tuple(bots)) for game, bots in tables.items()]

    # ---- while serving ----------------------------------------------------------------------

    def begin(
        self, tables: Sequence[tuple[int, TableSpec]], state: Mapping[str, Any], now: float
    ) -> None:
        """Mark tables as running, with the ladder state that goes with them, in one commit (which
        also carries the finished tables' pending mark clearances)."""

        def mark() -> None:
            self._db.executemany(
                "INSERT INTO server_running (game, spec, started_at) VALUES (?, ?, ?)",
                [(g, json.dumps(s.to_dict(), separators=(",", ":")), now) for g, s in tables],
            )
            self._put_state(state)

        self._commit(mark)

    def finish(
        self,
        game: int,
        record: GameRecord,
        count: Callable[[], Mapping[str, tuple[float, float]]],
    ) -> None:
        """Commit a table's record; its running mark is cleared, with the live ratings it changed,
        in a later commit (the next :meth:`begin` or :meth:`flush`).

        ``count``: counts the game in the live ratings and returns those it changed; called here
        once the game is stored (so that a game whose store is given up, on a database locked
        for minutes, is never counted in them: a restart would not count it either).

        Why later: it saves a synchronous commit per table, and a crash in between is harmless,
        since :meth:`recover` treats a committed game that is still marked exactly so.

        Safe to call again for the same game after it raised (a locked database): a game stored
        is not stored again, nor counted, nor its mark queued twice. A locked database makes it
        raise only while the game is not stored.
        """
        stored = self._db.execute(
            "SELECT 1 FROM games WHERE run_id = ? AND game = ?", (self.run_id, game)
        ).fetchone()
        if stored is None:
            self.store.save_game(self.run_id, game, record)
        # Once only: a call that stored the game may have raised in its flush below (an error
        # other than a lock), and a caller may try the whole call again.
        if all(pending != game for pending, _ in self._pending):
            self._pending.append((game, dict(count())))
        if len(self._pending) >= FLUSH_EVERY:
            try:
                self.flush()
            except sqlite3.OperationalError as e:
                if not is_busy(e):
                    raise
                # The game is stored and counted: its mark's clearance waits for the next commit
                # (a raise here had the caller give up a game that is stored).
                log.warning(BUSY_WARNING, extra={"game": game, "waiting": "clearing running marks"})

    def put_state(self, state: Mapping[str, Any]) -> None:
        """Commit ladder state on its own (an admin pause, which a restart keeps)."""
        self._commit(lambda: self._put_state(state))

    def flush(self) -> None:
        """Commit the pending mark clearances and live ratings."""
        if self._pending:
            self._commit(lambda: None)

    def _commit(self, work: Callable[[], object]) -> None:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            work()
            # In finishing order, so that each bot ends with its latest live rating.
            for game, live in self._pending:
                self._db.execute("DELETE FROM server_running WHERE game = ?", (game,))
                self._db.executemany(
                    "INSERT OR REPLACE INTO server_live (bot, mu, sigma) VALUES (?, ?, ?)",
                    [(bot, mu, sigma) for bot, (mu, sigma) in live.items()],
                )
            self._db.execute("COMMIT")
        except BaseException:
            rollback(self._db)
            raise
        self._pending.clear()

    def _put_state(self, state: Mapping[str, Any]) -> None:
        self._db.executemany(
            "INSERT OR REPLACE INTO server_state (key, value) VALUES (?, ?)",
            [(k, json.dumps(v, separators=(",", ":"))) for k, v in state.items()],
        )


class LedgerReader:
    """Read-only queries for the page; every method runs in the one reader thread."""

    def __init__(self, path: Path, run_id: str) -> None:
        self.run_id = run_id
        self._db = read_only(path)

    def close(self) -> None:
        """Close the connection."""
        self._db.close()

    def recent(
        self, limit: int, before: int | None = None, bot: str | None = None
    ) -> list[dict[str, Any]]:
        """The latest games (newest first), optionally before a game number or of one bot."""
        sql = (
            "SELECT g.game, g.table_id, g.board, g.seed, g.hands, g.termination, g.reason,"
            " g.started_at, g.finished_at FROM games g WHERE g.run_id = ?"
        )
        args: list[Any] = [self.run_id]
        if before is not None:
            sql += " AND g.game < ?"
            args.append(before)
        if bot is not None:
            # The bot's games as a list first: as an EXISTS per game, SQLite read every seat of
            # the bot (its index) for each game it looked at, 12 s for 500 of a bot's games in
            # a 36,768-game database, holding up every other game list meanwhile; now 8 ms.
            sql += " AND g.game IN (SELECT game FROM seats WHERE run_id = ? AND bot = ?)"
            args += [self.run_id, bot]
        sql += " ORDER BY g.game DESC LIMIT ?"
        args.append(limit)
        games = self._db.execute(sql, args).fetchall()
        if not games:
            return []
        numbers = [g[0] for g in games]
        seats: dict[int, list[dict[str, Any]]] = {n: [] for n in numbers}
        marks = ",".join("?" * len(numbers))
        for game, bot_name, points, placing, status, faults in self._db.execute(
            "SELECT game, bot, points, placing, status, faults FROM seats"
            f" WHERE run_id = ? AND game IN ({marks}) ORDER BY game, seat",
            [self.run_id, *numbers],
        ):
            seats[game].append(
                {
                    "bot": bot_name,
                    "points": points,
                    "placing": placing,
                    "status": status,
                    "faults": faults,
                }
            )
        return [
            {
                "game": g[0],
                "table_id": g[1],
                "board": g[2],
                "seed": g[3],
                "hands": g[4],
                "termination": g[5],
                "reason": g[6],
                "started_at": g[7],
                "finished_at": g[8],
                "rated": g[5] == Termination.NORMAL.value,
                "seats": seats[g[0]],
            }
            for g in games
        ]

    def record_json(self, game: int) -> str | None:
        """The stored record of one game as its JSON text, or None."""
        row = self._db.execute(
            "SELECT record FROM games WHERE run_id = ? AND game = ?", (self.run_id, game)
        ).fetchone()
        return None if row is None else str(row[0])

    def count(self) -> int:
        """Games stored."""
        row = self._db.execute("SELECT COUNT(*) FROM games WHERE run_id = ?", (self.run_id,))
        return int(row.fetchone()[0])


class Ledger:
    """The asyncio face of the ledger: writes in one thread, reads in another."""

    def __init__(self, db: LedgerDB, reader: LedgerReader) -> None:
        self.db = db
        self.reader = reader
        self.failing: str | None = None
        """Why writes fail now and are tried again (a full disk, a file that cannot be
        written), None while they succeed."""
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="ledger-write")
        self._reads = ThreadPoolExecutor(1, thread_name_prefix="ledger-read")
        self._refused: sqlite3.OperationalError | None = None
        """The disk's (or file's) refusal of the writer thread's last ungated write, None once
        a write succeeds; read and set in that thread alone."""

    @classmethod
    def open(cls, path: Path, config: ServerConfig, total: int | None = None) -> Ledger:
        """Open (creating) the competition database; synchronous, for start-up."""
        db = LedgerDB(path, config, total)
        try:
            reader = LedgerReader(path, db.run_id)
        except BaseException:
            db.close(discard=True)  # and with it the database's lock, which would stay behind
            raise
        return cls(db, reader)

    async def write(self, call: Callable[..., _T], *args: Any, gated: bool = False) -> _T:
        """Run ``call(db, *args)`` in the writer thread; ``gated``: not after a write the disk
        refused (its error is raised instead) until one succeeds."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._writer, self._tracked, call, gated, args)

    def submit(self, call: Callable[..., _T], *args: Any) -> asyncio.Future[_T]:
        """:meth:`write`, handed to the writer thread now rather than when awaited: it is done
        before the ledger closes, even if nothing waits for it."""
        loop = asyncio.get_running_loop()
        return loop.run_in_executor(self._writer, self._tracked, call, False, args)

    def _tracked(self, call: Callable[..., _T], gated: bool, args: tuple[Any, ...]) -> _T:
        # In the writer thread, in the order the writes were handed to it: a table's start
        # queued behind a game's record that the full disk refused was small enough to fit,
        # and one more table played a game that could not be stored either.
        if gated and self._refused is not None:
            raise self._refused
        try:
            result = call(self.db, *args)
        except sqlite3.OperationalError as e:
            # A gated write's own refusal does not bar its next attempt (which nothing else
            # would clear: the ladder stalled for good once room was made).
            if not gated and cannot_write(e) is not None:
                self._refused = e
            raise
        self._refused = None
        return result

    async def write_patiently(
        self,
        what: str,
        call: Callable[..., _T],
        *args: Any,
        give_up: Callable[[], bool] = lambda: False,
        fields: Mapping[str, Any] | None = None,
        give_up_full: Callable[[], bool] | None = None,
        gated: bool = False,
    ) -> _T:
        """:meth:`write`, tried again after each of :data:`BUSY_RETRY_DELAYS_S` while another
        program keeps the database locked (each time with a warning saying so: ``what`` is
        waiting, and ``fields`` go in the log line); the last error is raised when they are
        used up, or as soon as ``give_up()`` holds. On a full disk it is tried again every
        :data:`FULL_RETRY_S` for as long as it takes (:attr:`failing` says so meanwhile), until
        ``give_up_full()`` holds (default: ``give_up``), and so on a database that cannot be
        written for another reason (a read-only file, a disk error). Any other error is raised
        at once.

        ``call`` must be safe to run again after it raised (as :meth:`LedgerDB.begin` and
        :meth:`LedgerDB.finish` are: each transaction is rolled back when it fails). ``gated``:
        as :meth:`write`'s (a write that must wait while an earlier one waits for room).
        """
        extra = dict(fields or {})
        stop_full = give_up if give_up_full is None else give_up_full
        waited: str | None = None  # what the disk or file refused, while that lasts
        attempt = 0
        delays = iter(BUSY_RETRY_DELAYS_S)
        while True:
            attempt += 1
            try:
                result = await self.write(call, *args, gated=gated)
            except sqlite3.OperationalError as e:
                if cannot_write(e) is not None and not stop_full():
                    # A game played to its end was dropped (its table recorded, at the next
                    # start, as stopped by a crash) and the ladder stalled for good: the records
                    # wait here until space is freed (or the file mended), and nothing new
                    # starts meanwhile.
                    self.failing = f"cannot store: {e}"
                    waited = "full" if is_full(e) else "unwritable"
                    log.error(
                        FULL_ERROR if is_full(e) else UNWRITABLE_ERROR,
                        extra={
                            **extra,
                            "waiting": what,
                            "error": str(e),
                            "retry_in_s": FULL_RETRY_S,
                        },
                    )
                    # Not one sleep: a drain (give_up_full) waited it out, up to 10 s.
                    until = time.monotonic() + FULL_RETRY_S
                    while time.monotonic() < until and not stop_full():
                        await asyncio.sleep(min(FULL_POLL_S, until - time.monotonic()))
                    continue
                delay = next(delays, None)
                if not is_busy(e) or delay is None or give_up():
                    raise
                log.warning(
                    BUSY_WARNING,
                    extra={
                        **extra,
                        "waiting": what,
                        "attempt": attempt,
                        "attempts": len(BUSY_RETRY_DELAYS_S) + 1,
                        "retry_in_s": delay,
                    },
                )
                await asyncio.sleep(delay)
                continue
            if waited is not None:
                self.failing = None
                said = (
                    "the database's disk has room again"
                    if waited == "full"
                    else "the database can be written again"
                )
                log.info(said, extra={**extra, "done": what})
            elif attempt > 1:
                log.info("the database is free again", extra={**extra, "done": what})
            return result

    async def read(self, call: Callable[..., _T], *args: Any) -> _T:
        """Run ``call(reader, *args)`` in the reader thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._reads, call, self.reader, *args)

    def close(self, *, discard: bool = False) -> None:
        """Finish pending writes, then close; ``discard``: remove the database if this start
        made it (a start that failed: it holds nothing but what the start wrote)."""
        self._writer.shutdown(wait=True)
        self._reads.shutdown(wait=True)
        self.reader.close()  # before the database may go
        self.db.close(discard=discard)


def now() -> float:
    """Wall-clock seconds (for records' display times)."""
    return time.time()
