"""ARENA_TLS is 1 or 0: another value is refused in one line by the Python SDK and the Node.js
sample bot alike, against a real referee on loopback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from test_js_bot import JS_BOT, require_node

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
