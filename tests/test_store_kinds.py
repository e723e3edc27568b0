"""A database's kind (a batch's, a competition's) as two commands on it at once see it: the look
before opening (``peek``) touches no file a writer uses, and each kind refuses the other in the
same transaction that writes its own tables, whatever came between the look and the write."""

from __future__ import annotations

import random
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arena.config import build_config
from arena.errors import ConfigError
from arena.server.accounts import (
    _TABLES,
    SCHEMA,
    AccountStore,
    check_not_a_batch,
    read_accounts,
)
from arena.store import Store, StoreError, peek

TABLES = "SELECT name FROM sqlite_master WHERE type = 'table'"


def sides(db: Path) -> list[str]:
    """The side files beside ``db``."""
    return sorted(p.name for p in db.parent.iterdir() if p.name != db.name)


@pytest.fixture
def batch(tmp_path: Path) -> Iterator[tuple[Path, Any]]:
    """A batch's database with its run claimed, closed; and its config."""
    db = tmp_path / "arena.db"
    config = build_config(bots=["a=true", "b=true", "c=true", "d=true"], db=db)
    with Store.open(db) as store:
        store.claim(config.run_id, "batch", config.identity(), 40)
    yield db, config


def test_a_look_at_a_closed_database_makes_no_side_file(batch: tuple[Path, Any]) -> None:
    db, _ = batch
    assert sides(db) == []
    assert ("runs",) in (peek(db, TABLES) or ())
    assert sides(db) == []


def test_a_look_as_a_writer_opens_the_database_leaves_its_files_and_its_games(
    batch: tuple[Path, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The look noted the side files missing, read the database (which made them), and removed
    # them as it ended: a writer that had opened the database meanwhile lost its -wal and -shm,
    # and the games it committed there were gone at its kill -9 (45 of 120 in the audit).
    db, _ = batch
    connect = sqlite3.connect
    writers: list[sqlite3.Connection] = []

    def look_then_a_writer(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        looking: sqlite3.Connection = connect(*args, **kwargs)
        writer = connect(db, isolation_level=None)  # as Store.open makes it, a game committed
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute("CREATE TABLE played (game INTEGER)")
        writer.execute("INSERT INTO played VALUES (1)")
        writers.append(writer)
        return looking

    monkeypatch.setattr(sqlite3, "connect", look_then_a_writer)
    assert ("runs",) in (peek(db, TABLES) or ())
    monkeypatch.setattr(sqlite3, "connect", connect)
    try:
        assert "arena.db-wal" in sides(db)
        fresh = connect(db)  # another program, while the writer still runs
        try:
            assert fresh.execute("SELECT game FROM played").fetchall() == [(1,)]
        finally:
            fresh.close()
    finally:
        for writer in writers:
            writer.close()


def test_accounts_are_refused_by_a_batch_claimed_after_the_command_looked(
    batch: tuple[Path, Any], tmp_path: Path
) -> None:
    # `arena bots add` looked (no run yet: the batch's bots were starting), then the run claimed
    # the file: the accounts went in beside the batch.
    db = tmp_path / "late.db"
    check_not_a_batch(db)  # nothing there yet
    _, config = batch
    with Store.open(db) as store:
        store.claim(config.run_id, "batch", config.identity(), 40)
    with pytest.raises(ConfigError, match="holds a batch run"):
        AccountStore(db)
    with sqlite3.connect(db) as conn:
        assert not [n for (n,) in conn.execute(TABLES) if n.startswith("server_")]
    conn.close()


def test_a_batch_is_refused_by_accounts_added_after_it_looked(tmp_path: Path) -> None:
    # The run checked for a competition as it read its settings; `arena bots add` came as its
    # bots started; the run then claimed the file, a competition's, for its batch.
    db = tmp_path / "comp.db"
    config = build_config(bots=["a=true", "b=true", "c=true", "d=true"], db=db)
    AccountStore(db).close()
    with Store.open(db) as store:
        with pytest.raises(ConfigError) as refused:
            store.claim(config.run_id, "batch", config.identity(), 40)
        assert str(refused.value) == (
            f"--db {db}: holds arena serve's competition (its bot accounts), not a batch run; "
            "give the run a database of its own (a new file)"
        )
        assert store.runs() == []
    assert read_accounts(db) == []  # still a competition's, of no bot yet


def test_a_device_is_not_a_competition(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="not a regular file, not a database file"):
        check_not_a_batch(Path("/dev/null"))


def test_a_damaged_batch_gets_no_accounts_and_lists_none(batch: tuple[Path, Any]) -> None:
    # The look cannot read a damaged file, so it let it through: `arena bots list` showed an
    # empty competition and `arena bots add` wrote accounts into the batch's file.
    db, _ = batch
    data = bytearray(db.read_bytes())
    page = 4096
    assert len(data) > 5 * page
    data[2 * page : 5 * page] = random.Random(7).randbytes(3 * page)
    db.write_bytes(bytes(data))
    before = db.read_bytes()
    check_not_a_batch(db)  # cannot tell: the opening says the rest
    for attempt in (lambda: read_accounts(db), lambda: AccountStore(db).close()):
        with pytest.raises((StoreError, ConfigError)):
            attempt()
    assert db.read_bytes() == before


def test_the_accounts_tables_named_are_the_ones_their_schema_makes() -> None:
    # connect() makes the tables only when one is missing, by this list.
    assert sorted(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", SCHEMA)) == sorted(_TABLES)
