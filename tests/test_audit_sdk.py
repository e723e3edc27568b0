"""A newcomer's slips with the Python SDK, as README "A bot in Python" leads one to write a bot.

Each test runs what an author would: a real bot process against a real referee on loopback
(port 0), or ``play_local`` in-process. Every process a test starts is stopped at its end.
"""

from __future__ import annotations

import gc
import warnings
from pathlib import Path

import pytest
from test_client_e2e import Procs
from test_client_newcomer import bot_env_at, run_script

from arena.cards import Card
from arena.client import Bot, BotDefinitionWarning, ClientSettings, DecisionView, play_local
from arena.client.events import TrickWon
from arena.errors import CardParseError, ConfigError
from arena.referee import RefereeConfig, RefereeThread, TokenAccounts
from arena.rules import Rules
from arena.table import Clocks, FaultKind, TableSpec

LOBBY_WAIT_MS = 30_000
GAME_TIMEOUT_S = 120.0
"""A guard against a hang, not a measure: each of these ends in well under a second."""


# ---- async def methods --------------------------------------------------------------------------

ASYNC_BOT = """
import asyncio
from arena.client import Bot, run, lowest


class AsyncBot(Bot):
    '''Written as an asyncio programmer would: every method async def.'''

    async def choose_pass(self, view):
        return list(view.hand[: view.pass_count])

    async def choose_play(self, view):
        await asyncio.sleep(0)
        return lowest(view.legal)

    async def on_trick(self, event):
        print("trick", event.trick.number)


run(AsyncBot())
"""

PLAIN_BOT = """
from arena.client import Bot, run, lowest


class Plain(Bot):
    def choose_play(self, view):
        return lowest(view.legal)


run(Plain())
"""


def test_async_def_methods_are_named_at_start_and_in_each_answer_over_the_network(
    procs: Procs, tmp_path: Path
) -> None:
    # Before: no word at start; each answer "choose_play returned a coroutine (<coroutine
    # object ...>), not a Card", a MALFORMED fault, and Python's "was never awaited" warnings;
    # the async hook never ran, and nothing said so.
    (tmp_path / "async_bot.py").write_text(ASYNC_BOT)
    (tmp_path / "plain.py").write_text(PLAIN_BOT)
    names = ("asyncbot", "p1", "p2", "p3")
    accounts, tokens = TokenAccounts.issue_for(names)
    referee = RefereeThread(RefereeConfig(), accounts)
    port = referee.start("127.0.0.1:0")
    try:
        for name in names:
            script = tmp_path / ("async_bot.py" if name == "asyncbot" else "plain.py")
            procs.start(script, f"127.0.0.1:{port}", tokens[name], name)
        assert referee.wait_for_bots(names, LOBBY_WAIT_MS), referee.idle()
        spec = TableSpec("async", Rules(), seed=7, seats=names, board="7", clocks=Clocks())
        record = referee.submit(spec).result(GAME_TIMEOUT_S)
    finally:
        referee.stop(0, finished=True)
    assert any(f.seat == 0 and f.kind is FaultKind.MALFORMED for f in record.faults)
    procs.stop_all()
    log = procs.stderr("asyncbot")
    for method in ("choose_pass", "choose_play", "on_trick"):
        assert f"bot class AsyncBot defines {method}() with async def" in log, log
    assert "choose_pass returned a coroutine, not a list of cards: choose_pass is async def" in log
    assert "choose_play returned a coroutine, not a Card: choose_play is async def" in log
    assert "asyncio.run(" in log, log
    assert "never awaited" not in log, log


class AsyncPlay(Bot):
    """choose_play written async def."""

    async def choose_play(self, view: DecisionView) -> Card:  # type: ignore[override]
        return view.legal[0]


class AsyncHook(Bot):
    """Plays as the base class; its trick hook is async def."""

    tricks = 0

    def choose_play(self, view: DecisionView) -> Card:
        return view.legal[0]

    async def on_trick(self, event: TrickWon) -> None:  # type: ignore[override]
        self.tricks += 1


def test_play_local_says_an_async_def_decision_is_async_def() -> None:
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        with pytest.raises(CardParseError, match=r"choose_play is async def; .*asyncio\.run"):
            play_local([AsyncPlay(), Bot(), Bot(), Bot()], seed=3, hands=1)
        gc.collect()  # a coroutine left unclosed warns "never awaited" when it is freed
    said = [str(w.message) for w in warned]
    assert any(
        issubclass(w.category, BotDefinitionWarning) and "choose_play() with async def" in m
        for w, m in zip(warned, said, strict=True)
    ), said
    assert not [m for m in said if "never awaited" in m], said


def test_an_async_def_hook_is_warned_of_once_and_leaves_no_never_awaited_noise() -> None:
    bot = AsyncHook()
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        play_local([bot, Bot(), Bot(), Bot()], seed=3, hands=1)
        gc.collect()
    said = [str(w.message) for w in warned]
    assert [m for m in said if "on_trick() with async def" in m] != [], said
    assert not [m for m in said if "never awaited" in m], said
    assert bot.tricks == 0  # it never ran: which is what the warning says


class OneCardList(Bot):
    """Returns its card in a list, as choose_pass's answer is."""

    def choose_play(self, view: DecisionView) -> Card:
        return [view.legal[0]]  # type: ignore[return-value]


def test_a_play_answered_as_a_list_of_one_card_says_to_return_the_card_itself() -> None:
    with pytest.raises(CardParseError, match=r"not a Card: return the card itself, \w\w, not a"):
        play_local([OneCardList(), Bot(), Bot(), Bot()], seed=3, hands=1)


# ---- addresses gRPC can never use ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "says"),
    [
        # Told "an IPv6 address goes in brackets, [localhost:50051]:50051".
        ("localhost:50051:50051", "with one colon, before the port"),
        ("127.0.0.1:50051,127.0.0.1:50052", "with one colon, before the port"),
        # Retried for ten minutes as gRPC's "Unparsable name".
        ("[zz]:50051", "only an IPv6 address goes in brackets, and 'zz' is not one"),
        ("[127.0.0.1]:50051", "only an IPv6 address goes in brackets"),
    ],
)
def test_an_address_that_is_no_host_and_port_is_refused_saying_why(address: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says) as caught:
        ClientSettings.resolve(address, "t", "n")
    assert "an IPv6 address goes in brackets, [" not in str(caught.value)


@pytest.mark.parametrize("address", ["[::1]:50051", "[fe80::1%eth0]:50051", "::1:50051"])
def test_ipv6_addresses_keep_their_own_rule(address: str) -> None:
    if address.startswith("["):
        assert ClientSettings.resolve(address, "t", "n").address == address
    else:
        with pytest.raises(ConfigError, match=r"an IPv6 address goes in brackets, \[::1\]:50051"):
            ClientSettings.resolve(address, "t", "n")


def test_a_host_grpc_cannot_read_as_a_name_exits_2_at_once_not_after_ten_minutes(
    tmp_path: Path,
) -> None:
    # Before: "cannot connect to bot@127.0.0.1:1 (UNAVAILABLE: ... Misformatted domain name);
    # retrying in 0.4 s", for ARENA_GIVE_UP_S (600 s by default), then exit 1.
    script = tmp_path / "plain.py"
    script.write_text(PLAIN_BOT)
    done = run_script(script, bot_env_at("bot@127.0.0.1:1", "t", "n", ARENA_GIVE_UP_S="600"))
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "not a valid host name; set ARENA_ADDRESS" in done.stderr, done.stderr


# ---- a token pasted with its line break ---------------------------------------------------------


def test_a_refused_token_with_a_line_break_around_it_says_so(tmp_path: Path) -> None:
    # A CRLF .env file leaves "\r" at the end of the token: the referee says "unknown token",
    # and the author was sent to compare characters that look the same.
    script = tmp_path / "plain.py"
    script.write_text(PLAIN_BOT)
    accounts, tokens = TokenAccounts.issue_for(["plain"])
    referee = RefereeThread(RefereeConfig(), accounts)
    port = referee.start("127.0.0.1:0")
    try:
        env = bot_env_at(f"127.0.0.1:{port}", tokens["plain"] + "\r", "plain")
        done = run_script(script, env)
    finally:
        referee.stop(0, finished=True)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "refused the token (UNAUTHENTICATED)" in done.stderr, done.stderr
    assert "begins or ends with a space or a line break: remove it" in done.stderr, done.stderr
    assert tokens["plain"] not in done.stderr  # a secret stays out of the log
