"""The public Python API as README.md documents it ("Hosting tables from Python", "The rules
engine as a library", "The store", "A bot in Python"), given what a newcomer gets wrong: each
mistake is one ConfigError (or StoreError) saying what to give, raised before anything is done,
never a bare TypeError or AttributeError from deep inside."""

from __future__ import annotations

import logging
import random
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import BOT_READY_MS, EXIT_WAIT_S, RAW_BOT, BotProcesses, on_referee_loop

from arena import Card, Game, Hand, Rules
from arena.client import Bot, DecisionView, decision_rng, play_local
from arena.errors import ConfigError
from arena.referee import (
    BotIdentity,
    Referee,
    RefereeConfig,
    RefereeThread,
    Standing,
    TokenAccounts,
    serve,
)
from arena.referee.accounts import token_key
from arena.referee.config import MAX_MS
from arena.store import Store, StoreError, load_results
from arena.table import TableSpec

SEATS = ("a", "b", "c", "d")


@pytest.mark.parametrize(
    ("call", "says"),
    [
        (lambda r, sid: r.kick(sid, 5), r"^kick: reason must be a string"),
        (lambda r, sid: r.kick(sid, "x", may_reconnect="no"), r"^kick: may_reconnect must be"),
        (
            lambda r, sid: r.kick(sid, "x", reconnect_after_ms=-5),
            rf"^kick: reconnect_after_ms must be a whole number from 0 to {MAX_MS}",
        ),
        (
            lambda r, sid: r.kick(sid, "x", reconnect_after_ms="5"),
            r"^kick: reconnect_after_ms must be",
        ),
        (lambda r, sid: r.kick_bot("a", 5, forfeit=True), r"^kick_bot: reason must be a string"),
        (lambda r, sid: r.kick_bot("a", "x", forfeit=1), r"^kick_bot: forfeit must be True"),
        (lambda r, sid: r.kick_bot(None, "x"), r"^kick_bot: bot must be a bot's name"),
        (
            lambda r, sid: r.forfeit_token(token_key("t"), None),
            r"^forfeit_token: reason must be a string",
        ),
    ],
)
def test_kicking_with_a_value_the_shutdown_cannot_carry_is_refused_before_it_acts(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses, call: object, says: str
) -> None:
    # Before: protobuf's bare TypeError ("bad argument type for built-in operation") or
    # ValueError ("Value out of range: -5"); forfeit_token(key, None) ended the sessions with
    # no reason, and kick_bot(forfeit=True) raised only once it had forfeited the bot's seats.
    thread = referee[0]
    proc = bots.start("a")
    bots.ready("a")
    [session] = thread.call(lambda r: r.sessions())
    with pytest.raises(ConfigError, match=says):
        thread.call(lambda r: call(r, session.session_id))  # type: ignore[operator]
    assert [s.session_id for s in thread.call(lambda r: r.sessions())] == [session.session_id]
    assert thread.call(lambda r: r.kick(session.session_id, "bye", may_reconnect=False))
    out, _ = proc.communicate(timeout=EXIT_WAIT_S)
    assert "KICKED" in out, out


def test_a_bot_identity_with_its_status_as_text_is_named_in_the_referee_log(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    # Before: "accounts.lookup returned ...(name='a', status='active', note=''): it must return
    # an Identity (... e.g. arena.referee.BotIdentity(name))", with no word of which field was
    # wrong. (BotIdentity itself now refuses a status as text where it is made.)
    @dataclass(frozen=True)
    class TextIdentity:  # a store's own identity class, with the status as text
        name: str
        status: str
        note: str = ""

    class TextStatus:
        def lookup(self, token: str) -> TextIdentity:
            return TextIdentity("a", status="active")

    caplog.set_level(logging.ERROR, logger="arena.referee")
    thread = RefereeThread(RefereeConfig(), TextStatus())  # type: ignore[arg-type]  # the mistake
    thread.start("127.0.0.1:0")
    procs = BotProcesses(thread, TokenAccounts(), tmp_path)
    try:
        proc = procs.start("a", token="any")
        out, _ = proc.communicate(timeout=EXIT_WAIT_S)
    finally:
        procs.kill_all()
        thread.stop(0)
    assert "INTERNAL" in out, out
    [line] = [r.getMessage() for r in caplog.records if "accounts.lookup" in r.getMessage()]
    assert "and its status is 'active', not an enum" in line, line
    assert "arena.referee.Standing.ACTIVE" in line, line


def test_a_referee_thread_refuses_what_it_cannot_run_where_it_is_given() -> None:
    # Before: submit(dict) gave a future that held the error until someone asked for its
    # result (and a bad wait_ms the same).
    thread = RefereeThread(RefereeConfig(), {"tok": "a"})
    thread.start("127.0.0.1:0")
    try:
        with pytest.raises(ConfigError, match=r"^submit takes a TableSpec .*got dict"):
            thread.submit({"table_id": "t"})  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match=r"^wait_ms must be a number of milliseconds"):
            thread.submit(TableSpec("t", Rules(), 1, SEATS, "1"), wait_ms="5")  # type: ignore[arg-type]
        assert thread.wait_for_bots([], BOT_READY_MS)  # still serving
        # Before: call() handed back the coroutine object, never awaited (and true in an assert).
        with pytest.raises(ConfigError, match=r"^call\(\) runs a plain function .*wait_for_bots"):
            _ = thread.call(lambda referee: referee.wait_for_bots(["a"], 0))
        assert thread.call(lambda referee: referee.sessions()) == []
    finally:
        thread.stop(0)


@pytest.mark.parametrize(
    ("given", "suggests"),
    [
        ("moon=best", r"Rules\(\)\.with_options\(\['moon=best'\]\)"),
        ("Omnibus", r"Rules\(\) or preset\('omnibus'\)"),
        ("omnibus", r"Rules\(\) or preset\('omnibus'\)"),
    ],
)
def test_rules_given_as_text_get_an_example_that_works(given: str, suggests: str) -> None:
    # Before: "e.g. Rules() or preset('moon=best')", a call that raises RulesError itself.
    for make in (
        lambda: Hand.deal(given, seed=1),  # type: ignore[arg-type]
        lambda: Game(given, 1),  # type: ignore[arg-type]
        lambda: play_local([Bot(), Bot(), Bot(), Bot()], rules=given, hands=1),  # type: ignore[arg-type]
    ):
        with pytest.raises(ConfigError, match=r"rules must be a Rules, e\.g\. ") as err:
            make()
        assert re.search(suggests, str(err.value)), str(err.value)
    assert Rules().with_options(["moon=best"]) == Rules.from_dict({"moon": "best"})


@pytest.mark.parametrize("path", [None, 5, b"arena.db"])
def test_load_results_refuses_what_is_no_path_in_one_line(path: object) -> None:
    # Before: a bare TypeError from pathlib ("expected str, bytes or os.PathLike object").
    with pytest.raises(StoreError, match=r"^the database must be given as a file path"):
        load_results(path)  # type: ignore[arg-type]


def test_load_results_refuses_a_run_that_is_no_run_id(tmp_path: Path) -> None:
    # Before: run=5 matched no run and gave [] ("no games"), saying nothing of the mistake.
    db = tmp_path / "arena.db"
    with Store.open(db):
        pass
    assert load_results(db) == []
    with pytest.raises(StoreError, match=r"^run must be a run id \(a string\)"):
        load_results(db, run=5)  # type: ignore[arg-type]


def test_load_results_refuses_a_run_the_database_does_not_hold(tmp_path: Path) -> None:
    # Before: an unknown (mistyped) run id gave [], read as "no games yet".
    db = tmp_path / "arena.db"
    with Store.open(db) as store:
        store.claim("r1", "round-robin", {"bots": ["a"]}, 4)
    assert load_results(db, run="r1") == []  # known, no game stored yet
    with pytest.raises(StoreError, match=r"holds no run 'bogus'; its runs: r1$"):
        load_results(db, run="bogus")
    empty = tmp_path / "empty.db"
    with Store.open(empty):
        pass
    with pytest.raises(StoreError, match=r"holds no run 'r1'; it holds no run$"):
        load_results(empty, run="r1")


def test_decision_rng_with_its_arguments_swapped_says_so() -> None:
    # Before: AttributeError "'str' object has no attribute 'tricks'" from deep inside.
    class Swapped(Bot):
        def choose_play(self, view: DecisionView) -> Card:
            rng = decision_rng(view, "my-seed")  # type: ignore[arg-type]
            return view.legal[rng.randrange(len(view.legal))]

    with pytest.raises(ConfigError, match=r"^decision_rng\(seed, view\) takes the DecisionView"):
        play_local([Swapped(), Bot(), Bot(), Bot()], seed=1, hands=1)

    class Right(Bot):
        def choose_play(self, view: DecisionView) -> Card:
            rng = decision_rng("my-seed", view)
            return view.legal[rng.randrange(len(view.legal))]

    first = play_local([Right(), Bot(), Bot(), Bot()], seed=1, hands=1)
    assert play_local([Right(), Bot(), Bot(), Bot()], seed=1, hands=1) == first


def test_decision_rng_takes_an_integer_seed_as_its_string() -> None:
    # It was typed `seed: str`, so mypy --strict refused `decision_rng(7, view)`, which runs.
    views: list[DecisionView] = []

    class Keep(Bot):
        def choose_play(self, view: DecisionView) -> Card:
            views.append(view)
            return view.legal[0]

    play_local([Keep(), Bot(), Bot(), Bot()], seed=1, hands=1)
    for view in views:
        drawn = decision_rng(7, view).random()
        assert drawn == decision_rng("7", view).random()
        assert drawn != decision_rng(8, view).random()
    # Any other seed is refused: a random.Random's text holds its address (draws that changed
    # from process to process), and 7.0 drew unlike 7.
    for seed in (random.Random(1), None, 7.0, True):
        with pytest.raises(ConfigError, match=r"takes the bot's seed as a string or an integer"):
            decision_rng(seed, views[0])  # type: ignore[arg-type]


@pytest.mark.parametrize("fails", [True, False], ids=["main fails", "main returns"])
def test_serve_stops_its_referee_once_main_ends_and_tells_the_bots_why(fails: bool) -> None:
    # Before: an ExceptionGroup ("unhandled errors in a TaskGroup") instead of the ValueError,
    # and the referee was never stopped: its bots got no Shutdown and waited on it. A main that
    # returned had its bots told "shutting down", and they went on retrying for minutes.
    procs: list[subprocess.Popen[str]] = []

    def ready(port: int) -> None:
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    str(RAW_BOT),
                    f"--address=127.0.0.1:{port}",
                    "--token=tok",
                    "--name=a",
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )

    async def main(referee: Referee) -> None:
        assert await referee.wait_for_bots(["a"], BOT_READY_MS)
        if fails:
            raise ValueError("main failed")

    async def body() -> None:
        if not fails:
            assert (
                await serve(RefereeConfig(), {"tok": "a"}, "127.0.0.1:0", main=main, ready=ready)
                == 0
            )
            return
        with pytest.raises(ValueError, match=r"^main failed$"):
            await serve(RefereeConfig(), {"tok": "a"}, "127.0.0.1:0", main=main, ready=ready)

    try:
        on_referee_loop(body)
        [proc] = procs
        out, _ = proc.communicate(timeout=EXIT_WAIT_S)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    told = "SERVER_SHUTDOWN" if fails else "NO_MORE_GAMES"
    assert f"SHUTDOWN SHUTDOWN_REASON_{told}" in out, out
    assert out.splitlines()[-1].startswith("STATUS OK"), out


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ({"ready": 5}, r"^serve: ready must be a function or None, got 5$"),
        ({"main": 5}, r"^serve: main must be a function or None, got 5$"),
        ({"main": lambda referee: None}, r"^serve: main must be an async function .* None$"),
    ],
)
def test_serve_refuses_a_main_or_ready_it_cannot_call(given: dict[str, object], says: str) -> None:
    # Before: a bare TypeError ("'int' object is not callable"), main's inside an ExceptionGroup.
    async def body() -> None:
        with pytest.raises(ConfigError, match=says):
            await serve(RefereeConfig(), {}, "127.0.0.1:0", **given)  # type: ignore[arg-type]

    on_referee_loop(body)


def test_a_bot_identity_is_checked_where_it_is_made() -> None:
    # A BotIdentity with its status as text passed, and every bot was refused at the handshake.
    with pytest.raises(ConfigError, match=r"^BotIdentity.status must be a Standing .*'active'"):
        BotIdentity("a", status="active")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"^BotIdentity.name must be a non-empty string"):
        BotIdentity("")
    with pytest.raises(ConfigError, match=r"^BotIdentity.note must be a string"):
        BotIdentity("a", Standing.BANNED, None)  # type: ignore[arg-type]
    assert BotIdentity("a", Standing.BANNED, "why").status is Standing.BANNED


def test_issue_for_refuses_a_name_given_twice() -> None:
    # It issued two tokens for "a" and handed back only the second.
    with pytest.raises(ConfigError, match=r"^names lists 'a' more than once: give each bot once"):
        TokenAccounts.issue_for(["a", "b", "a"])
    accounts, tokens = TokenAccounts.issue_for(iter(["a", "b"]))  # any iterable, once
    assert sorted(tokens) == ["a", "b"] and accounts.names == {"a", "b"}
