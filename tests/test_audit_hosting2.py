"""Hosting, audited again as a newcomer meets it: a kick's reason has a ban's limit (in Python, in
the admin API and in ``arena admin kick``), a token lookup given a number says what it takes, and
a bot refused with PERMISSION_DENIED is told what to do, however long the reason it is given."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import BotProcesses, on_referee_loop
from test_audit_admin import post
from test_audit_serve import one_error
from test_referee_security import status_of
from test_server_support import ServerProcess

from arena.errors import ConfigError
from arena.referee import Referee, RefereeConfig, RefereeThread, TokenAccounts
from arena.referee.accounts import MAX_NOTE_LENGTH, token_key
from arena.server.accounts import AccountStore
from arena.server.competition import EventAccounts

ADVICE = "stop, and ask the organiser; retrying gets the same answer until they let it play"
"""What every PERMISSION_DENIED ends with."""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path / "comp.db")
    yield process
    process.close()


def test_a_kick_reason_is_no_longer_than_a_bans_in_python() -> None:
    # Referee.kick and kick_bot took a reason of any length, where a ban's is capped (it is told
    # to the bot): a kick of an unknown session answered False, as if the reason were fine.
    too_long = "r" * (MAX_NOTE_LENGTH + 1)

    async def body() -> None:
        referee = Referee(RefereeConfig(), {})
        await referee.start("127.0.0.1:0")
        try:
            with pytest.raises(
                ConfigError,
                match=rf"^kick: the reason is {MAX_NOTE_LENGTH + 1} characters long: give at "
                rf"most {MAX_NOTE_LENGTH} ",
            ):
                referee.kick("no-such-session", too_long)
            with pytest.raises(ConfigError, match=r"^kick_bot: the reason is .* give at most"):
                referee.kick_bot("a", too_long, forfeit=True)
            assert referee.kick("no-such-session", "r" * MAX_NOTE_LENGTH) is False
            assert referee.kick_bot("a", "r" * MAX_NOTE_LENGTH) == 0
            # A crashed bot's forfeit is the director's, with its log's path: not capped.
            assert referee.forfeit_token(token_key("t"), too_long) == []
        finally:
            await referee.stop(0)

    on_referee_loop(body)


def test_a_kick_reason_is_no_longer_than_a_bans_in_the_admin_api_and_cli(
    server: ServerProcess,
) -> None:
    # `arena admin kick --reason` and POST /api/admin/kick sent any reason on to the bot.
    token = server.add_bot("alice")
    admin = server.admin_token()
    server.start()
    server.bot("alice", token, sample="random_bot")
    server.wait_for(lambda: bool(server.get("/api/lobby")["sessions"]))
    [session] = [s["id"] for s in server.get("/api/lobby")["sessions"]]
    too_long = "r" * (MAX_NOTE_LENGTH + 1)
    base = ("--url", server.url, "--token", admin)
    # Refused before it is sent (exit 2), so also with the server down (it was exit 1 then,
    # "cannot reach", which a script retries).
    for url in (server.url, "http://127.0.0.1:1"):
        done = server.cli("admin", "kick", session, "--reason", too_long, "--url", url)
        assert done.returncode == 2, done.stderr
        assert one_error(done).startswith(
            f"arena: error: --reason: the reason is {MAX_NOTE_LENGTH + 1} characters long: give "
            f"at most {MAX_NOTE_LENGTH} "
        ), done.stderr
    status, answer = post(
        server, "kick", json.dumps({"session": session, "reason": too_long}).encode(), admin
    )
    assert status == 400, answer
    assert answer["error"].startswith(f"the reason is {MAX_NOTE_LENGTH + 1} characters long")
    assert [s["id"] for s in server.get("/api/lobby")["sessions"]] == [session]  # not kicked
    longest = server.cli("admin", "kick", session, "--reason", "r" * MAX_NOTE_LENGTH, *base)
    assert longest.returncode == 0, longest.stderr
    assert json.loads(longest.stdout) == {"kicked": session}
    # A ban without a new reason keeps the old one, which may be longer (kept before there was
    # a limit): its sessions are still ended, with the reason cut, not a 500.
    server.wait_for(
        lambda: [s["id"] for s in server.get("/api/lobby")["sessions"]] not in ([], [session])
    )  # the kicked bot is back
    with contextlib.closing(sqlite3.connect(server.db)) as db, db:
        db.execute("UPDATE server_bots SET note = ? WHERE name = 'alice'", ["r" * 20_000])
    status, answer = post(server, "ban", b'{"bot": "alice"}', admin)
    assert (status, answer) == (200, {"banned": "alice", "sessions_ended": 1}), answer


@pytest.mark.parametrize("token", [5, b"a-secret-token", None])
def test_a_token_lookup_says_it_takes_text(token: object) -> None:
    # lookup(5) raised AttributeError ('int' object has no attribute 'encode'); bytes the same.
    accounts = TokenAccounts({"a-secret-token": "alice"})
    with pytest.raises(ConfigError, match=r"^lookup takes the token as text \(a str, ") as caught:
        accounts.lookup(token)  # type: ignore[arg-type]
    assert "secret" not in str(caught.value)  # a token is never shown
    assert accounts.lookup("a-secret-token") is not None
    assert accounts.lookup("") is None


def test_a_bot_denied_is_told_what_to_do_however_long_the_reason(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses
) -> None:
    # The status said only "(banned: ...)", and a reason a store kept longer than a ban's was
    # sent whole: the bot's gRPC dropped the metadata as RESOURCE_EXHAUSTED, and the bot, never
    # told it was refused, would retry for ever.
    bots.token("cheat")
    referee[1].ban("cheat", "🂡" * (20 * MAX_NOTE_LENGTH))
    status = status_of(bots, bots.start("cheat"))
    assert status == (
        f"PERMISSION_DENIED bot 'cheat' may not play now (banned: "
        f"{'🂡' * (MAX_NOTE_LENGTH - 1)}…): {ADVICE}"
    )


def test_a_bot_not_entered_in_an_event_is_told_what_to_do_once(tmp_path: Path) -> None:
    # Its note said "ask the organiser" itself: with the referee's advice it would say it twice.
    store = AccountStore(tmp_path / "accounts.db")
    thread = RefereeThread(RefereeConfig(), EventAccounts(store, ["alice"]))
    thread.start("127.0.0.1:0")
    bots = BotProcesses(thread, TokenAccounts(), tmp_path)
    try:
        status = status_of(bots, bots.start("bob", token=store.add("bob")))
    finally:
        bots.kill_all()
        thread.stop(0)
        store.close()
    assert status == (
        "PERMISSION_DENIED bot 'bob' may not play now (not-entered: this bot is not entered in "
        f"the event): {ADVICE}"
    )


LOOPS_KEPT = """
import asyncio, gc
from arena.referee import RefereeConfig, RefereeThread, TokenAccounts

for _ in range(4):
    accounts, _tokens = TokenAccounts.issue_for(["a"])
    referee = RefereeThread(RefereeConfig(), accounts)
    referee.start("127.0.0.1:0")
    assert referee.stop(0, timeout_s=60)
del referee
gc.collect()
print(sum(isinstance(o, asyncio.AbstractEventLoop) for o in gc.get_objects()))
"""


def test_a_process_that_hosts_referee_after_referee_keeps_none_of_the_stopped_ones() -> None:
    # A stopped referee and gRPC's server held each other through gRPC's own server object,
    # a cycle the collector cannot see: neither was freed, and gRPC kept each event loop a
    # referee had run on (about 255 KB a referee: 2.5 GB for 10,000 in one process). In a
    # process of its own: a referee another test keeps running would keep gRPC's hold.
    done = subprocess.run(
        [sys.executable, "-c", LOOPS_KEPT], capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) <= 1, done.stdout  # gRPC may keep the last loop it ran on
