"""The README's `arena serve` section, claim by claim, against a real server process on loopback
with the sample bots: the claims an earlier audit found broken (each test failed before its fix).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_server_support import ServerProcess

ENTRANTS = ("a", "b", "c", "d")


@pytest.fixture
def event(tmp_path: Path) -> Iterator[ServerProcess]:
    """A server for a four-entrant event of one board (four tables), not started yet."""
    process = ServerProcess(
        tmp_path / "comp.db",
        '[event]\nentrants = ["a", "b", "c", "d"]\nboards = 1\n',
    )
    yield process
    process.close()


def admin_post(server: ServerProcess, action: str, token: str) -> dict[str, object]:
    """POST /api/admin/ACTION with no body; the JSON answer."""
    request = urllib.request.Request(
        f"{server.url}/api/admin/{action}",
        data=b"",
        method="POST",
        headers={"Authorization": f"Bearer {token}"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        answer: dict[str, object] = json.loads(response.read())
        return answer


def test_a_bot_arriving_at_a_paused_event_that_is_over_is_sent_home(
    event: ServerProcess,
) -> None:
    """README: once the event is over, the bots waiting are told there are no more games (the
    SDK exits 0). A pause hid "over": a bot arriving then waited in the lobby for ever."""
    tokens = {name: event.add_bot(name) for name in ENTRANTS}
    admin = event.admin_token()
    event.start()
    bots = [event.bot(name, tokens[name], sample="lowcard") for name in ENTRANTS]
    assert [bot.wait(timeout=120) for bot in bots] == [0, 0, 0, 0]
    assert event.get("/api/health")["ladder"] == "over"
    # Pausing forms no tables, and there are none to form: the event stays over.
    assert admin_post(event, "pause", admin) == {"ladder": "over"}
    assert event.get("/api/health")["ladder"] == "over"
    late = event.bot("a", tokens["a"], sample="lowcard")
    assert late.wait(timeout=120) == 0
    assert late.stderr is not None and b"no more games" in late.stderr.read()
    assert event.get("/api/lobby")["sessions"] == []
    assert event.terminate() == 0


def test_games_of_a_bot_named_in_another_case_say_the_right_name(tmp_path: Path) -> None:
    """README: names are exact, and a wrong case is answered with the right one; /api/games
    answered `?bot=ALICE` with a bare 404 "no bot named 'ALICE'", which the page's filter and a
    script's author could only guess from."""
    server = ServerProcess(tmp_path / "comp.db")
    try:
        server.add_bot("alice")
        server.start()
        with pytest.raises(urllib.error.HTTPError) as refused:
            server.get("/api/games?bot=ALICE")
        assert refused.value.code == 404
        assert json.loads(refused.value.read()) == {
            "error": "no bot named 'ALICE' (names are exact: did you mean 'alice'?): "
            "/api/standings lists the bots"
        }
        with pytest.raises(urllib.error.HTTPError) as unknown:
            server.get("/api/games?bot=zed")
        assert unknown.value.code == 404
        assert json.loads(unknown.value.read()) == {
            "error": "no bot named 'zed': /api/standings lists the bots"
        }
        assert server.get("/api/games?bot=alice") == {"games": []}
        assert server.terminate() == 0
    finally:
        server.close()
