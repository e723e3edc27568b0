"""The bot pool: real processes that connect over loopback, crash, restart, and are stopped.

A small TCP server stands in for the referee's handshake (it reads a token line and asks the
accounts, exactly as the referee does at Hello); the pool under test is the real one.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from pathlib import Path

import pytest
import trio
from test_arena_interrupt import alive

from arena.config import BotSpec
from arena.director.bots import (
    Accounts,
    BotCrashLoopError,
    BotExit,
    BotPool,
    BotStartError,
    last_words,
    log_path,
)
from arena.errors import ConfigError
from arena.referee.accounts import token_key

BOT = r"""
import os, socket, sys
mode = sys.argv[1]
if mode == "exit-now":
    print("no luck", file=sys.stderr, flush=True)
    sys.exit(4)
if mode == "escapes":  # a title, a bell and a clear screen, which arena's line must not carry
    print("ok\x1b]0;PWNED\x07\x1b[2J\x00 end", file=sys.stderr, flush=True)
    sys.exit(4)
if mode == "crash-as-node":
    print(NODE_CRASH, file=sys.stderr, flush=True)
    sys.exit(1)
host, port = os.environ["ARENA_ADDRESS"].rsplit(":", 1)
print("I am", os.environ["ARENA_BOT_NAME"], file=sys.stderr, flush=True)
s = socket.create_connection((host, int(port)))
s.sendall(os.environ["ARENA_TOKEN"].encode() + b"\n")
if mode == "die-once":
    marker = sys.argv[2]
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        pass
    else:
        s.recv(1)  # the server's ack: the token has been looked up
        try:
            raise RuntimeError("model file missing")
        except RuntimeError:
            import traceback
            traceback.print_exc()
        print("dying", file=sys.stderr, flush=True)
        os._exit(3)
if mode == "always-die":
    s.recv(1)
    os._exit(5)
while s.recv(100):
    pass
"""

START_TIMEOUT_S = 30.0


NODE_CRASH = """node:internal/modules/cjs/loader:1228
  throw err;
  ^

Error: Cannot find module '@grpc/grpc-js'
Require stack:
- /tmp/x/sample_bots/js/bot.js
    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)
    at Module._load (node:internal/modules/cjs/loader:1051:27)
{
  code: 'MODULE_NOT_FOUND',
  requireStack: [ '/tmp/x/sample_bots/js/bot.js' ]
}

Node.js v20.20.2"""
"""What Node.js prints when a bot's module is missing (its `npm ci` was not run)."""


def bot(name: str, *args: str) -> BotSpec:
    argv = (sys.executable, "-c", f"NODE_CRASH = {NODE_CRASH!r}\n{BOT}", *args)
    return BotSpec(name, argv, f"python -c BOT {' '.join(args)}")


class Handshakes:
    """A loopback server that identifies each connection's token with the accounts."""

    def __init__(self, accounts: Accounts) -> None:
        self.accounts = accounts
        self.names: list[str] = []
        self.keys: list[bytes] = []
        """The digest of each connection's token, in order."""
        self._arrived = trio.Event()

    async def wait_for(self, count: int) -> None:
        """Until ``count`` handshakes have been made."""
        while len(self.names) < count:
            await self._arrived.wait()

    async def handle(self, stream: trio.SocketStream) -> None:
        data = b""
        while not data.endswith(b"\n"):
            chunk = await stream.receive_some(100)
            if not chunk:
                return
            data += chunk
        token = data.decode().strip()
        who = self.accounts.lookup(token)
        self.names.append(who.name if who is not None else "?")
        self.keys.append(token_key(token))
        self._arrived.set()
        self._arrived = trio.Event()
        # A bot killed at the end resets its connection: that is its way of leaving here.
        with contextlib.suppress(trio.BrokenResourceError):
            await stream.send_all(b"k")
            while await stream.receive_some(100):
                pass


async def serve(nursery: trio.Nursery, handshakes: Handshakes) -> str:
    listeners = await nursery.start(
        functools.partial(trio.serve_tcp, handshakes.handle, 0, host="127.0.0.1")
    )
    port = listeners[0].socket.getsockname()[1]
    return f"127.0.0.1:{port}"


def test_every_process_connects_with_its_own_token_and_all_stop(tmp_path: Path) -> None:
    accounts = Accounts()
    handshakes = Handshakes(accounts)
    pids: list[int] = []

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            address = await serve(nursery, handshakes)
            pool = BotPool(
                (bot("alpha", "stay"), bot("beta", "stay")),
                {"alpha": 2, "beta": 1},
                accounts,
                address,
                tmp_path,
                START_TIMEOUT_S,
            )
            async with trio.open_nursery() as inner:
                await inner.start(pool.run)
                assert sorted(handshakes.names) == ["alpha", "alpha", "beta"]
                for line in log_path(tmp_path, "alpha").read_text().splitlines():
                    if "started process" in line:
                        pids.append(int(line.split("pid ")[1].rstrip(")")))
                assert len(pids) == 2 and all(alive(p) for p in pids)
                inner.cancel_scope.cancel()
            nursery.cancel_scope.cancel()

    trio.run(main)
    assert not any(alive(p) for p in pids)
    log = log_path(tmp_path, "beta").read_text()
    assert "I am beta" in log and "started process 0" in log


@pytest.mark.parametrize(
    ("mode", "words"),
    [
        ("exit-now", "with code 4: no luck"),
        # Node.js ends with its version: the line that says why comes before its stack.
        ("crash-as-node", "with code 1: Error: Cannot find module '@grpc/grpc-js'"),
        # Written as they came, they retitled the window and cleared the user's terminal.
        ("escapes", "with code 4: ok\\x1b]0;PWNED\\x07\\x1b[2J\\x00 end"),
    ],
)
def test_a_bot_that_exits_at_once_is_one_line_with_its_last_words(
    tmp_path: Path, mode: str, words: str
) -> None:
    accounts = Accounts()

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            address = await serve(nursery, Handshakes(accounts))
            pool = BotPool(
                (bot("fine", "stay"), bot("grumpy", mode)),
                {"fine": 1, "grumpy": 1},
                accounts,
                address,
                tmp_path,
                START_TIMEOUT_S,
            )
            await nursery.start(pool.run)

    with pytest.raises(BaseExceptionGroup) as caught:
        trio.run(main)
    errors = caught.value.subgroup(BotStartError)
    assert errors is not None
    [error] = _leaves(errors)
    assert isinstance(error, ConfigError)
    assert str(error) == (
        f"bot 'grumpy': 'python -c BOT {mode}' exited before it connected, {words}"
    )


def test_a_missing_program_is_one_line(tmp_path: Path) -> None:
    accounts = Accounts()

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            pool = BotPool(
                (BotSpec("ghost", (str(tmp_path / "nothing-here"),), "nothing-here"),),
                {"ghost": 1},
                accounts,
                "127.0.0.1:1",
                tmp_path,
                START_TIMEOUT_S,
            )
            await nursery.start(pool.run)

    with pytest.raises(BaseExceptionGroup) as caught:
        trio.run(main)
    [error] = _leaves(caught.value)
    assert "bot 'ghost': cannot run 'nothing-here'" in str(error)


def test_a_crashed_process_is_restarted_and_reported(tmp_path: Path) -> None:
    accounts = Accounts()
    handshakes = Handshakes(accounts)
    exits: list[BotExit] = []
    marker = tmp_path / "died"

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            address = await serve(nursery, handshakes)

            def on_exit(gone: BotExit) -> None:
                exits.append(gone)

            pool = BotPool(
                (bot("phoenix", "die-once", str(marker)),),
                {"phoenix": 1},
                accounts,
                address,
                tmp_path,
                START_TIMEOUT_S,
                on_exit=on_exit,
            )

            async with trio.open_nursery() as inner:
                await inner.start(pool.run)
                await handshakes.wait_for(2)  # the restarted process says hello again
                inner.cancel_scope.cancel()
            nursery.cancel_scope.cancel()

    trio.run(main)
    assert handshakes.names == ["phoenix", "phoenix"]
    [gone] = exits
    assert (gone.bot, gone.slot, gone.exit_code) == ("phoenix", 0, 3)
    # The exit names the dead process's token (how the director finds its seat to forfeit); the
    # restarted process has another, so it can never take that seat back.
    assert gone.key == handshakes.keys[0] != handshakes.keys[1]
    assert gone.how == "code 3"
    assert gone.stderr.splitlines()[-1] == "dying"
    # The note quotes the error, not whatever line came last.
    assert gone.describe() == (
        "bot phoenix (process 0) exited with code 3; "
        "its last error: RuntimeError: model file missing"
    )
    assert "exited with code 3" in log_path(tmp_path, "phoenix").read_text()


def test_a_bot_that_keeps_dying_stops_the_run(tmp_path: Path) -> None:
    accounts = Accounts()
    exits: list[BotExit] = []

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            address = await serve(nursery, Handshakes(accounts))
            pool = BotPool(
                (bot("doomed", "always-die"),),
                {"doomed": 1},
                accounts,
                address,
                tmp_path,
                START_TIMEOUT_S,
                on_exit=exits.append,
            )
            await nursery.start(pool.run)

    with pytest.raises(BaseExceptionGroup) as caught:
        trio.run(main)
    [error] = _leaves(caught.value)
    assert isinstance(error, BotCrashLoopError)
    assert str(error).startswith(
        "bot 'doomed' exited 4 times in a row without finishing a game "
        "(last: code 5; its log's last line: I am doomed)"
    )
    # The run notes each exit with "restarting it": not the last, after which none starts.
    assert [gone.restarting for gone in exits] == [True, True, True, False]


def test_tokens_are_fresh_and_revocable() -> None:
    accounts = Accounts()
    heard: list[str] = []
    one = accounts.issue("a", lambda: heard.append("one"))
    two = accounts.issue("a")
    assert one != two and len(one) >= 32
    identity = accounts.lookup(one)
    assert identity is not None and identity.name == "a" and identity.status.value == "active"
    assert accounts.lookup(one) is not None
    assert heard == ["one"]  # told once, at the first hello
    accounts.revoke(one)
    assert accounts.lookup(one) is None and one not in accounts
    assert two in accounts and accounts.lookup("guess") is None


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


def test_a_log_several_processes_share_is_quoted_as_theirs() -> None:
    # Every exit of a bot with several processes quoted "its last error", which another process
    # may have written (an exception its SDK survived): an exit code 3 blamed on it.
    tail = "Traceback (most recent call last):\nRuntimeError: boom\nflaky: crashing\n"
    assert last_words(tail) == "its last error: RuntimeError: boom"
    assert last_words(tail, 3) == (
        "the last error in the log its 3 processes share: RuntimeError: boom"
    )
    assert last_words("flaky: crashing\n", 2) == (
        "the last line of the log its 2 processes share: flaky: crashing"
    )
    assert last_words("", 2) == "it wrote nothing"
