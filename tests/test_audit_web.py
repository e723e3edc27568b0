"""The leaderboard page as a newcomer meets it, in headless Chromium against a real server.

Two ways of driving Chromium: ``browse`` (test_server_browser's: one load, the DOM dumped once
the page's timers have run in virtual time) for what one load shows, and :class:`Browser`
below (the DevTools protocol over a pipe) for a page that stays open while the server stops,
comes back, or finishes a board. Without Chromium the tests are skipped with a message saying
what to install, except under CI=true, where they fail.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_server_browser import browse, standing, stub_page
from test_server_browser import chromium as chromium  # the fixture: skips, or fails under CI
from test_server_support import ServerProcess

WAIT_S = 120.0
"""A deadline only against a hang (a condition the page never reaches); never a measured time."""
SAMPLES = {"alice": "lowcard", "bob": "random_bot", "carol": "heuristic", "dave": "lowcard"}


def _pipe_ends(read_end: int, write_end: int) -> None:
    """In the child: the pipe Chromium reads commands from as fd 3, and answers on as fd 4."""
    read_copy, write_copy = os.dup(read_end), os.dup(write_end)
    os.dup2(read_copy, 3)
    os.dup2(write_copy, 4)


class Browser:
    """Headless Chromium with one page, driven over ``--remote-debugging-pipe``: navigate,
    evaluate, and the page's uncaught exceptions and console errors as they come."""

    def __init__(self, chromium: str, profile: Path, width: int = 1280) -> None:
        to_chromium, commands = os.pipe()
        answers, from_chromium = os.pipe()
        self.proc = subprocess.Popen(
            [
                chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", f"--user-data-dir={profile}", f"--window-size={width},1000",
                "--remote-debugging-pipe", "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=False,
            preexec_fn=lambda: _pipe_ends(to_chromium, from_chromium),
        )  # fmt: skip
        os.close(to_chromium)
        os.close(from_chromium)
        self._out = os.fdopen(commands, "wb")
        self._in = os.fdopen(answers, "rb")
        self._next = 0
        self._answers: dict[int, dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        self._cv = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        pages = [t for t in self.call("Target.getTargets")["targetInfos"] if t["type"] == "page"]
        self.session = self.call(
            "Target.attachToTarget", targetId=pages[0]["targetId"], flatten=True
        )["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self.call(f"{domain}.enable", page=True)

    def _read(self) -> None:
        buffered = b""
        while chunk := self._in.read1(65536):
            buffered += chunk
            while b"\0" in buffered:
                message, buffered = buffered.split(b"\0", 1)
                parsed = json.loads(message)
                with self._cv:
                    if "id" in parsed:
                        self._answers[parsed["id"]] = parsed
                    else:
                        self.events.append(parsed)
                    self._cv.notify_all()

    def call(self, method: str, page: bool = False, **params: Any) -> dict[str, Any]:
        """One protocol command (to the page's session if ``page``); its result."""
        self._next += 1
        number = self._next
        message: dict[str, Any] = {"id": number, "method": method, "params": params}
        if page:
            message["sessionId"] = self.session
        self._out.write(json.dumps(message).encode() + b"\0")
        self._out.flush()
        with self._cv:
            assert self._cv.wait_for(lambda: number in self._answers, WAIT_S), method
            answer = self._answers.pop(number)
        assert "error" not in answer, answer
        result: dict[str, Any] = answer["result"]
        return result

    def eval(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page."""
        done = self.call("Runtime.evaluate", page=True, expression=expression, returnByValue=True)
        return done["result"].get("value")

    def go(self, url: str) -> None:
        """Load ``url``."""
        self.call("Page.navigate", page=True, url=url)

    def text(self, element_id: str) -> str:
        """An element's text."""
        return str(self.eval(f"document.getElementById({element_id!r}).textContent"))

    def wait_text(self, element_id: str, pattern: str) -> str:
        """Poll until an element's text matches ``pattern``; that text."""
        deadline = time.monotonic() + WAIT_S
        while not re.search(pattern, text := self.text(element_id)):
            assert time.monotonic() < deadline, f"#{element_id} never matched {pattern!r}: {text!r}"
            time.sleep(0.1)
        return text

    def wait_value(self, expression: str, expected: Any) -> None:
        """Poll until a JavaScript expression's value is ``expected``."""
        deadline = time.monotonic() + WAIT_S
        while (value := self.eval(expression)) != expected:
            assert time.monotonic() < deadline, f"{expression} stayed {value!r}, not {expected!r}"
            time.sleep(0.1)

    def errors(self) -> list[str]:
        """Uncaught exceptions and the page's console errors; not the browser's network log
        (a request to a stopped server, a 404 the page asked for and explains)."""
        out = []
        for event in self.events:
            params = event.get("params", {})
            if event["method"] == "Runtime.exceptionThrown":
                out.append(json.dumps(params["exceptionDetails"])[:500])
            elif (
                event["method"] == "Log.entryAdded"
                and params["entry"]["level"] == "error"
                and params["entry"]["source"] != "network"
            ):
                out.append(params["entry"]["text"])
            elif event["method"] == "Runtime.consoleAPICalled" and params["type"] == "error":
                out.append(json.dumps(params["args"])[:500])
        return out

    def close(self) -> None:
        """Stop Chromium."""
        self.proc.kill()
        self.proc.wait(timeout=30)
        self._out.close()


@pytest.fixture
def browser(chromium: str, tmp_path: Path) -> Iterator[Browser]:
    opened = Browser(chromium, tmp_path / "cdp-profile")
    yield opened
    opened.close()


HANG_S = 400.0
"""How long the ladder may take to play the games a test needs before it is deemed stuck."""


@pytest.fixture
def ladder(tmp_path: Path) -> Iterator[tuple[ServerProcess, str]]:
    """A server whose four sample bots have played some games, the ladder paused; and the
    admin token."""
    process = ServerProcess(
        tmp_path / "comp.db",
        'name = "Audit Cup"\nmove_time = "300ms"\ntime_bank = "0s"\nfit_interval = "100ms"\n',
    )
    tokens = {name: process.add_bot(name) for name in SAMPLES}
    admin = process.admin_token()
    process.start()
    try:
        for name, sample in SAMPLES.items():
            process.bot(name, tokens[name], sample=sample)
        # A deadline against a hang only: a loaded CI host once took over 120 s for these.
        process.wait_for(lambda: process.get("/api/health")["games"] >= 8, HANG_S)
        yield process, admin
    finally:
        process.close()


def admin(process: ServerProcess, token: str, action: str) -> None:
    done = process.cli("admin", action, "--url", process.url, "--token", token)
    assert done.returncode == 0, done.stderr


def test_a_server_that_stops_is_said_and_the_page_recovers(
    browser: Browser, ladder: tuple[ServerProcess, str]
) -> None:
    """The server stops while the page is open: the header said "unreachable" beside the last
    answer's counts ("4 sessions · 1 table playing"), with nothing saying the rest had stopped
    updating; and a replay asked for meanwhile read "Game N: not found" over the last game's
    deal, for good. Now both say the server is not answering, and the replay loads once it is
    back."""
    process, token = ladder
    admin(process, token, "pause")
    process.wait_for(lambda: process.get("/api/lobby")["tables"] == [])
    done = [g["game"] for g in process.get("/api/games?limit=100")["games"] if not g["withheld"]]
    first, second = done[:2]
    browser.go(f"{process.url}/#game/{first}")
    browser.wait_text("replay-title", f"^Replay of game {first} ")
    browser.wait_text("counts", "^4 sessions")

    assert process.terminate() == 0, process.errors
    counts = browser.wait_text("counts", "not answering")
    assert "as it last showed them" in counts and "sessions" not in counts
    assert browser.text("state") == "unreachable"
    browser.eval(f"location.hash = '#game/{second}'")
    browser.wait_text("replay-title", f"^Game {second}: not loaded yet$")
    assert "not answering" in browser.text("replay-meta")
    # The first game's deal and controls are gone, not left under the new title.
    assert browser.eval("document.getElementById('replay-table').hidden") is True
    assert browser.eval("document.querySelector('#replay-section .controls').hidden") is True
    # Paging meanwhile: each click's failed fetch was an uncaught error (browser.errors below).
    browser.eval("document.getElementById('older').click()")
    browser.eval("document.getElementById('newest').click()")
    browser.wait_text("counts", "not answering")

    process.start(same_ports=True)  # the page open in the browser keeps its address
    browser.wait_text("replay-title", f"^Replay of game {second} ")
    browser.wait_text("counts", "sessions")
    assert browser.text("step-label") == "Deal"
    assert browser.eval("document.getElementById('replay-table').hidden") is False
    assert browser.errors() == []


def test_a_withheld_replay_shows_its_cards_once_the_board_is_done(
    browser: Browser, ladder: tuple[ServerProcess, str]
) -> None:
    """A replay opened while another rotation of its board is owed reads "cards withheld"; it
    stayed so once the board was done, until the page was reloaded."""
    process, token = ladder
    # Pause until a board is left owed (a pause between two boards leaves none: go on a bit).
    withheld: list[int] = []
    for _ in range(100):  # a bound only against a ladder that never leaves a board owed
        admin(process, token, "pause")
        process.wait_for(lambda: process.get("/api/lobby")["tables"] == [])
        games = process.get("/api/games?limit=20")["games"]
        withheld = [g["game"] for g in games if g["withheld"]]
        if withheld:
            break
        admin(process, token, "resume")
    assert withheld, "every pause fell between two boards"
    browser.go(f"{process.url}/#game/{withheld[0]}")
    browser.wait_text("step-label", "^cards withheld$")
    assert "still being played" in browser.text("replay-trick")

    admin(process, token, "resume")
    browser.wait_text("step-label", "^Deal$")
    cards = browser.eval("document.querySelectorAll('#replay-table .card').length")
    assert cards == 52
    assert browser.errors() == []


def test_older_games_are_reached_page_by_page(
    browser: Browser, ladder: tuple[ServerProcess, str]
) -> None:
    """The page listed the newest 25 games and no more: an older game's replay could be reached
    only by typing its number. "Older games" pages back with the API's ``before``."""
    process, token = ladder
    process.wait_for(lambda: process.get("/api/health")["games"] >= 60, HANG_S)
    admin(process, token, "pause")
    process.wait_for(lambda: process.get("/api/lobby")["tables"] == [])
    newest = [g["game"] for g in process.get("/api/games?limit=25")["games"]]
    older = [g["game"] for g in process.get(f"/api/games?limit=25&before={newest[-1]}")["games"]]
    rows = "[...document.querySelectorAll('#games tbody tr')].map((r) => Number(r.dataset.game))"
    browser.go(process.url + "/")
    browser.wait_value(rows, newest)
    assert browser.text("games-title") == "Recent games"
    assert browser.eval("document.getElementById('newest').hidden") is True
    # As drawn (innerText follows the style): the headers' capitals made μ±σ read "Μ±Σ".
    assert "LIVE μ±σ" in browser.eval("document.querySelector('#standings thead').innerText")

    browser.eval("document.getElementById('older').click()")
    browser.wait_value(rows, older)
    assert browser.text("games-title") == f"Games before game {newest[-1]}"
    browser.eval("document.getElementById('newest').click()")
    browser.wait_value(rows, newest)
    assert browser.text("games-title") == "Recent games"
    assert browser.errors() == []


def test_a_game_still_at_its_table_says_so_and_shows_once_it_ends(
    browser: Browser, tmp_path: Path
) -> None:
    """#game/N of a game being played (its number is in /api/lobby) read "not found" for good;
    now it says the game is being played, and its replay shows once it ends."""
    process = ServerProcess(tmp_path / "live.db", 'move_time = "60s"\ngrace = "0s"\n')
    try:
        tokens = {name: process.add_bot(name) for name in ("low1", "low2", "low3", "stuck")}
        process.start()
        for name in ("low1", "low2", "low3"):
            process.bot(name, tokens[name], "low")
        # Holds its table (a 60 s clock) until the test kills it: then the fallback plays on.
        stuck = process.bot("stuck", tokens["stuck"], "hang", "2")
        process.wait_for(lambda: process.get("/api/lobby")["tables"] != [])
        number = process.get("/api/lobby")["tables"][0]["game"]
        browser.go(f"{process.url}/#game/{number}")
        browser.wait_text("replay-title", f"^Game {number} is being played$")
        assert "once it ends" in browser.text("replay-meta")
        stuck.kill()
        browser.wait_text("replay-title", f"^Replay of game {number} ")
        assert browser.errors() == [], browser.errors()
    finally:
        process.close()


@pytest.fixture
def quiet(tmp_path: Path) -> Iterator[ServerProcess]:
    """A server with one bot account and no game played."""
    process = ServerProcess(tmp_path / "quiet.db", 'name = "Quiet Cup"\n')
    process.add_bot("alice")
    process.start()
    yield process
    process.close()


def tbody(dom: str, table: str) -> str:
    return dom.split(f'id="{table}"')[1].split("<tbody>")[1].split("</tbody>")[0]


def test_empty_lists_and_bad_addresses_say_so(
    chromium: str, quiet: ServerProcess, tmp_path: Path
) -> None:
    """What a newcomer's first look shows: an empty games table said nothing (it read as a page
    still loading), #game/abc showed the standings as if nothing was asked, and #bot/50% (a
    stray %) threw before the first refresh, leaving every table empty for good."""
    profile = tmp_path / "profile"
    dom = browse(chromium, profile, "--dump-dom", quiet.url + "/").stdout
    assert "No finished game yet" in tbody(dom, "games")
    assert 'data-bot="alice"' in tbody(dom, "standings")

    mine = browse(chromium, profile, "--dump-dom", quiet.url + "/#bot/alice").stdout
    assert "alice has no finished game yet" in tbody(mine, "games")

    text = browse(chromium, profile, "--dump-dom", quiet.url + "/#game/abc").stdout
    assert '<h2 id="replay-title">No game abc</h2>' in text
    assert "#game/NUMBER" in text
    assert 'data-bot="alice"' in tbody(text, "standings")

    unknown = browse(chromium, profile, "--dump-dom", quiet.url + "/#game/424242").stdout
    assert '<h2 id="replay-title">No game 424242 yet</h2>' in unknown

    stray = browse(chromium, profile, "--dump-dom", quiet.url + "/#bot/50%").stdout
    assert "Quiet Cup" in stray and "No bot named 50%" in stray
    assert 'data-bot="alice"' in tbody(stray, "standings")


def test_no_bots_and_a_rating_just_below_zero(chromium: str, tmp_path: Path) -> None:
    """Against canned answers (test_server_browser's stub): no account at all says how to add
    one, and an Elo of -0.3 reads 0, not "-0"."""
    api = {
        "/api/health": {"name": "Stub Cup", "status": "ok", "ladder": "running", "sessions": 0,
                        "tables": 0, "games": 0, "event": None},
        "/api/standings": {"fit": {"message": "no rated games yet"}, "bots": []},
        "/api/games": {"games": []},
    }  # fmt: skip
    empty = browse(
        chromium, tmp_path / "profile", "--allow-file-access-from-files", "--dump-dom",
        stub_page(tmp_path, api).as_uri(),
    ).stdout  # fmt: skip
    assert "No bots yet" in tbody(empty, "standings") and "arena bots add" in empty

    api["/api/standings"] = {
        "fit": {"message": "Elo"},
        "bots": [standing("near", 1, -0.3, 10.0, -20.4, 19.6)],
    }
    near = browse(
        chromium, tmp_path / "profile", "--allow-file-access-from-files", "--dump-dom",
        stub_page(tmp_path, api).as_uri(),
    ).stdout  # fmt: skip
    row = tbody(near, "standings")
    assert '<td class="num">0</td>' in row and ">-0<" not in row, row
