"""The Node.js sample bot and the Python SDK alike: ARENA_TLS is 1 or 0 (another value is refused
in one line), and Ctrl-C exits 130, SIGTERM 0; serve() checks its give-up time as resolve() does;
against a real referee on loopback."""

from __future__ import annotations

import dataclasses
import http.server
import math
import os
import signal
import subprocess
import sys
import threading

import pytest
from test_js_bot import JS_BOT, require_node

from arena.client import Bot, ClientSettings, serve
from arena.errors import ConfigError
from arena.referee import RefereeConfig, RefereeThread, TokenAccounts

LOWCARD = JS_BOT.parent.parent / "lowcard.py"
EXIT_WAIT_S = 30.0
"""A bot that should exit at once but plays on, or retries, is stopped after this."""


@pytest.mark.parametrize("language", ["python", "node"])
@pytest.mark.parametrize("value", ["true", "yes", "no"])
def test_arena_tls_other_than_1_or_0_is_refused_in_one_line(language: str, value: str) -> None:
    # The Python SDK read any value but "" and "0" as on, the Node.js bot only "1": with
    # ARENA_TLS=true the first retried TLS against a plain-text referee until it gave up, the
    # second connected in plain text and played; with ARENA_TLS=no the first turned TLS on.
    command = (
        [require_node(), str(JS_BOT)] if language == "node" else [sys.executable, str(LOWCARD)]
    )
    accounts, tokens = TokenAccounts.issue_for(["b"])
    with RefereeThread(RefereeConfig(), accounts) as referee:
        port = referee.start("127.0.0.1:0")
        env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
        env |= {
            "ARENA_ADDRESS": f"127.0.0.1:{port}",
            "ARENA_TOKEN": tokens["b"],
            "ARENA_BOT_NAME": "b",
            "ARENA_GIVE_UP_S": "1",
            "ARENA_TLS": value,
        }
        try:
            done = subprocess.run(
                command, env=env, capture_output=True, text=True, timeout=EXIT_WAIT_S, check=False
            )
        except subprocess.TimeoutExpired as e:
            raise AssertionError(
                f"the bot did not refuse ARENA_TLS={value}: {e.stderr!r}"
            ) from None
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"ARENA_TLS must be 1 (connect with TLS) or 0 (plain text), got '{value}'" in lines[0]


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 0), (signal.SIGINT, 130)])
def test_the_js_bot_exits_as_the_python_sdk_on_sigterm_and_ctrl_c(
    sig: signal.Signals, code: int
) -> None:
    # The Node.js bot exited 0 on Ctrl-C, the Python SDK 130 (as the README says of run()).
    accounts, tokens = TokenAccounts.issue_for(["b"])
    with RefereeThread(RefereeConfig(), accounts) as referee:
        port = referee.start("127.0.0.1:0")
        env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
        env |= {"ARENA_ADDRESS": f"127.0.0.1:{port}", "ARENA_TOKEN": tokens["b"]}
        env["ARENA_BOT_NAME"] = "b"
        bot = subprocess.Popen(
            [require_node(), str(JS_BOT)], env=env, stderr=subprocess.PIPE, text=True
        )
        try:
            assert referee.wait_for_bots(["b"], 30_000), "the bot did not connect"
            bot.send_signal(sig)
            assert bot.wait(EXIT_WAIT_S) == code
        finally:
            bot.kill()
            _, err = bot.communicate()
    assert f"goodbye (received {sig.name})" in err, err


@pytest.mark.parametrize("given", [math.nan, -1.0])
@pytest.mark.parametrize("where", ["argument", "settings"])
def test_serve_refuses_a_give_up_time_that_is_not_0_or_more(where: str, given: float) -> None:
    # ClientSettings.resolve refused these, serve() took them as given: with the referee away,
    # NaN was slept on ("retrying in nan s", then "ValueError: Invalid value NaN"), and a
    # negative time gave up at the first failure.
    accounts, tokens = TokenAccounts.issue_for(["b"])
    with RefereeThread(RefereeConfig(), accounts) as referee:
        port = referee.start("127.0.0.1:0")
    settings = ClientSettings.resolve(f"127.0.0.1:{port}", tokens["b"], "b")  # a referee gone
    if where == "settings":
        settings = dataclasses.replace(settings, give_up_after=given)
    extra = {"give_up_after": given} if where == "argument" else {}
    with pytest.raises(ConfigError, match=r"give_up_after must be 0 or more seconds, got"):
        serve(Bot(), settings, **extra)


class _Page(http.server.BaseHTTPRequestHandler):
    """An HTTP/1 page, as the leaderboard's web port serves."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"<html></html>")

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


@pytest.mark.parametrize(
    ("language", "tls"), [("python", False), ("node", False), ("python", True), ("node", True)]
)
def test_an_http1_server_at_the_address_is_refused_at_once_naming_the_ports(
    language: str, tls: bool
) -> None:
    # A bot pointed at the leaderboard's web port instead of the bots' retried for ten minutes,
    # saying only "Failed parsing HTTP/2" (Python) or "Protocol error" (Node.js). With TLS, it
    # was told "the referee does not speak TLS on this port; unset ARENA_TLS": the wrong fix.
    command = (
        [require_node(), str(JS_BOT)] if language == "node" else [sys.executable, str(LOWCARD)]
    )
    page = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    serving = threading.Thread(target=page.serve_forever, daemon=True)
    serving.start()
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
        env |= {
            "ARENA_ADDRESS": f"127.0.0.1:{page.server_address[1]}",
            "ARENA_TOKEN": "t",
            "ARENA_BOT_NAME": "b",
        }
        if tls:
            env["ARENA_TLS"] = "1"
        try:
            done = subprocess.run(
                command, env=env, capture_output=True, text=True, timeout=EXIT_WAIT_S, check=False
            )
        except subprocess.TimeoutExpired as e:
            raise AssertionError(f"the bot kept retrying: {e.stderr!r}") from None
    finally:
        page.shutdown()
        page.server_close()
        serving.join()
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "does not speak gRPC (an HTTP/1 server: the leaderboard's web port?)" in lines[0]
    assert "set ARENA_ADDRESS to the referee's port for bots (arena serve --port)" in lines[0]
