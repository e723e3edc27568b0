"""Bot accounts: tokens shown once, stored only as hashes, identifying the bot; bans and revokes."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arena.cli import app
from arena.server.accounts import (
    BAN_NOTE,
    AccountError,
    AccountsBusy,
    AccountStatus,
    AccountStore,
    hash_token,
)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[AccountStore]:
    accounts = AccountStore(tmp_path / "comp.db")
    yield accounts
    accounts.close()


def test_token_identifies_its_bot_and_is_stored_only_as_a_hash(
    store: AccountStore, tmp_path: Path
) -> None:
    token = store.add("lowcard")
    other = store.add("random")
    assert token != other and len(token) >= 40
    identity = store.lookup(token)
    assert identity is not None and identity.name == "lowcard"
    assert identity.status is AccountStatus.ACTIVE
    raw = (tmp_path / "comp.db").read_bytes()
    wal = tmp_path / "comp.db-wal"
    if wal.exists():
        raw += wal.read_bytes()
    assert token.encode() not in raw
    with sqlite3.connect(tmp_path / "comp.db") as conn:
        stored = conn.execute("SELECT token_hash FROM server_bots WHERE name='lowcard'").fetchone()
    assert bytes(stored[0]) == hash_token(token)


def test_wrong_empty_or_near_tokens_identify_nobody(store: AccountStore) -> None:
    token = store.add("lowcard")
    assert store.lookup("") is None
    assert store.lookup("not-a-token") is None
    assert store.lookup(token[:-1]) is None
    assert store.lookup("lowcard") is None  # a name is not a token


def test_names_are_checked_and_unique(store: AccountStore) -> None:
    store.add("bot-1.v2_x")
    with pytest.raises(AccountError, match="already exists"):
        store.add("bot-1.v2_x")
    for bad, said in (
        ("", "is empty"),
        ("-x", "starts with '-'"),
        ("a b", "has ' '"),
        ("x" * 65, "is 65 characters long"),
        ("é", "has 'é'"),
    ):
        with pytest.raises(AccountError, match=f"^bot name {re.escape(repr(bad))} {said}: use"):
            store.add(bad)


def test_revoke_retires_the_token_and_a_new_one_can_be_issued(store: AccountStore) -> None:
    token = store.add("lowcard")
    store.revoke("lowcard", "leaked")
    # Known as revoked (refused saying so), not as a token nobody was ever given.
    revoked = store.lookup(token)
    assert revoked is not None
    assert (revoked.name, revoked.status, revoked.note) == (
        "lowcard",
        AccountStatus.REVOKED,
        "leaked",
    )
    assert store.get("lowcard").status is AccountStatus.REVOKED
    fresh = store.add("lowcard", new_token_for_existing=True)
    old = store.lookup(token)
    # The reason stays with the token (it was lost once the bot had a new one).
    assert old is not None and (old.status, old.note) == (
        AccountStatus.REVOKED,
        "leaked; the bot has a new token since",
    )
    identity = store.lookup(fresh)
    assert identity is not None and identity.status is AccountStatus.ACTIVE
    # A token replaced by a new one says so; a banned bot's old token says it is banned.
    newer = store.add("lowcard", new_token_for_existing=True)
    replaced = store.lookup(fresh)
    assert replaced is not None and replaced.status is AccountStatus.REVOKED
    assert replaced.note.startswith("this token was replaced by a new one")
    store.ban("lowcard", "cheating")
    for given in (token, fresh, newer):
        found = store.lookup(given)
        assert found is not None and (found.status, found.note) == (
            AccountStatus.BANNED,
            "cheating",
        )
    assert store.lookup("never-given") is None


def test_a_database_made_before_reasons_were_kept_with_tokens_gains_them(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as conn:  # server_retired_tokens as it was first made
        conn.execute(
            "CREATE TABLE server_retired_tokens (token_hash BLOB PRIMARY KEY, name TEXT NOT NULL,"
            " how TEXT NOT NULL, retired_at REAL NOT NULL)"
        )
    conn.close()
    store = AccountStore(db)
    try:
        token = store.add("lowcard")
        store.revoke("lowcard", "leaked")
        store.add("lowcard", new_token_for_existing=True)
        old = store.lookup(token)
        assert old is not None and old.note == "leaked; the bot has a new token since"
    finally:
        store.close()


def test_a_new_token_for_a_bot_that_does_not_exist_adds_nothing(store: AccountStore) -> None:
    store.add("lowcard")
    with pytest.raises(AccountError, match="no bot 'lowcrad' to give a new token"):
        store.add("lowcrad", new_token_for_existing=True)
    assert [bot.name for bot in store.accounts()] == ["lowcard"]


def test_ban_keeps_identity_but_marks_it_and_unban_lifts_it(store: AccountStore) -> None:
    token = store.add("flooder")
    store.ban("flooder", "flooding the referee")
    identity = store.lookup(token)
    assert identity is not None
    assert (identity.status, identity.note) == (AccountStatus.BANNED, "flooding the referee")
    # A new token does not lift a ban.
    fresh = store.add("flooder", new_token_for_existing=True)
    again = store.lookup(fresh)
    assert again is not None and again.status is AccountStatus.BANNED
    store.unban("flooder")
    assert store.get("flooder").status is AccountStatus.ACTIVE
    with pytest.raises(AccountError, match="not banned"):
        store.unban("flooder")


def test_a_ban_or_revoke_without_a_reason_keeps_the_earlier_one(
    store: AccountStore, tmp_path: Path
) -> None:
    store.add("cheat")
    store.ban("cheat", "collusion")
    store.ban("cheat")
    assert store.get("cheat").note == "collusion"
    store.revoke("cheat")
    assert store.get("cheat").note == "collusion"
    store.revoke("cheat", "token leaked")
    assert store.get("cheat").note == "token leaked"
    # So does the command: --reason left out is not an empty reason.
    db = str(tmp_path / "comp.db")
    runner = CliRunner()
    assert (
        runner.invoke(app, ["bots", "ban", "cheat", "--db", db, "--reason", "bots"]).exit_code == 0
    )
    assert runner.invoke(app, ["bots", "ban", "cheat", "--db", db]).exit_code == 0
    listed = runner.invoke(app, ["bots", "list", "--db", db, "--json"])
    assert json.loads(listed.stdout)[0]["note"] == "bots"


def test_a_ban_never_given_a_reason_keeps_the_default_one(store: AccountStore) -> None:
    # The note stayed empty: a refused bot heard only "(banned)", and the list showed no reason.
    store.add("quiet")
    store.ban("quiet")
    assert store.get("quiet").note == BAN_NOTE == "banned by the organiser"
    store.unban("quiet")
    assert store.get("quiet").note == ""  # an unban clears the reason
    store.ban("quiet", "spamming")
    assert store.get("quiet").note == "spamming"


def test_unknown_names_are_refused(store: AccountStore) -> None:
    for act in (store.revoke, store.ban):
        with pytest.raises(AccountError, match="no bot named 'ghost'"):
            act("ghost")


def test_listing_shows_every_bot_without_tokens(store: AccountStore) -> None:
    store.add("b")
    store.add("a")
    store.ban("b", "x")
    listed = store.accounts()
    assert [(a.name, a.status) for a in listed] == [
        ("a", AccountStatus.ACTIVE),
        ("b", AccountStatus.BANNED),
    ]


def test_admin_token(store: AccountStore) -> None:
    assert not store.check_admin("anything")
    token = store.new_admin_token()
    assert store.check_admin(token)
    assert not store.check_admin(token + "x")
    assert not store.check_admin("")
    replaced = store.new_admin_token()
    assert store.check_admin(replaced) and not store.check_admin(token)


def test_lookups_from_other_threads_see_the_latest_accounts(store: AccountStore) -> None:
    # The referee looks tokens up from its worker threads, while the owner thread changes them.
    token = store.add("lowcard")
    with ThreadPoolExecutor(max_workers=2) as pool:
        first = pool.submit(store.lookup, token).result()
        assert first is not None and first.name == "lowcard"
        store.ban("lowcard", "testing")
        banned = pool.submit(store.lookup, token).result()
        assert banned is not None and banned.status is AccountStatus.BANNED
        assert pool.submit(store.lookup, "not-a-token").result() is None


def test_a_token_that_cannot_be_delivered_is_rolled_back(store: AccountStore) -> None:
    """``deliver`` runs before the commit: when it fails, the account (or the new token, or the
    new admin token) is as it was, so no token exists that nobody received."""

    def closed(token: str) -> None:
        raise BrokenPipeError(32, "Broken pipe")

    with pytest.raises(BrokenPipeError):
        store.add("lowcard", deliver=closed)
    assert store.accounts() == []
    old = store.add("lowcard")
    with pytest.raises(BrokenPipeError):
        store.add("lowcard", new_token_for_existing=True, deliver=closed)
    identity = store.lookup(old)
    assert identity is not None and identity.name == "lowcard"
    admin = store.new_admin_token()
    with pytest.raises(BrokenPipeError):
        store.new_admin_token(deliver=closed)
    assert store.check_admin(admin)
    shown: list[str] = []
    token = store.add("random", deliver=shown.append)
    assert shown == [token] and store.lookup(token) is not None


def test_the_help_of_every_account_and_admin_command_is_plain_text() -> None:
    # A docstring's reST markup (``arena admin ban``) showed as it is in `arena bots --help`.
    from arena.server.cli import admin_app, bots_app

    runner = CliRunner()
    for group, commands in (("bots", bots_app), ("admin", admin_app)):
        shown = [runner.invoke(app, [group, "--help"])]
        shown += [
            runner.invoke(app, [group, str(c.name), "--help"]) for c in commands.registered_commands
        ]
        for result in shown:
            assert result.exit_code == 0, result.output
            assert "``" not in result.output, result.output


def test_a_full_disk_is_one_line_and_changes_nothing(store: AccountStore) -> None:
    # `bots add` on a full disk printed its token, then a traceback, and added nothing.
    store.add("early")
    conn = store._connection()
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")  # as SQLite sees a full disk
    names = [f"bot{i}" for i in range(200)]
    with pytest.raises(
        AccountsBusy, match=r"^cannot write the database \(database or disk is full\)"
    ):
        for name in names:  # each takes room until none is left
            store.add(name)
    conn.execute("PRAGMA max_page_count = 1073741823")
    added = {a.name for a in store.accounts()}
    assert "early" in added and len(added) < len(names) + 1
    store.add("later")  # the store works again once there is room
