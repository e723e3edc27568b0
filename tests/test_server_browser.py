"""The leaderboard page in headless Chromium (Debian's ``chromium`` package), against a real server.

Chromium runs the page's JavaScript against the live JSON API; the test reads the DOM it renders
(``--dump-dom``) and takes a screenshot (kept in the test's temporary folder; set
ARENA_SCREENSHOT_DIR to keep copies). Without Chromium the test is skipped with a message saying
what to install, except under CI=true, where it fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_server_support import ServerProcess

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
INSTALL = "install Debian's chromium package (apt-get install chromium) to run the browser test"
BOTS = ("alpha", "bravo", "charlie", "delta", "echo")
SAMPLE = {"alpha": "lowcard", "bravo": "random_bot", "charlie": "heuristic"}
"""Which bots are sample bots (the others are the tests' own low-card bot)."""
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# Virtual time lets the page's fetches and timers run before the DOM is dumped, without waiting.
BUDGET_MS = "5000"


@pytest.fixture(scope="module")
def chromium() -> str:
    if CHROMIUM is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"Chromium is missing under CI=true: {INSTALL}")
        pytest.skip(f"Chromium is missing: {INSTALL}")
    return CHROMIUM


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    process = ServerProcess(
        tmp_path / "comp.db",
        'fit_interval = "100ms"\nname = "Browser Cup"\nmove_time = "300ms"\ntime_bank = "0s"\n',
    )
    tokens = {name: process.add_bot(name) for name in BOTS}
    process.start()
    for name in BOTS:
        if name in SAMPLE:
            process.bot(name, tokens[name], sample=SAMPLE[name])
        elif name == "echo":  # too slow now and then: timeout faults to show
            process.bot(name, tokens[name], "slow", "9", "0.6")
        else:
            process.bot(name, tokens[name], "low")
    process.wait_for(lambda: process.get("/api/standings")["fit"]["results"] >= 20)
    # Hold the page still while Chromium looks at it.
    admin = process.cli("admin", "token", "--db", str(process.db)).stdout.strip()
    paused = process.cli("admin", "pause", "--url", process.url, "--token", admin)
    assert paused.returncode == 0, paused.stderr
    process.wait_for(lambda: process.get("/api/lobby")["tables"] == [])
    yield process
    process.close()


def browse(chromium: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--window-size=1280,1000",
            f"--virtual-time-budget={BUDGET_MS}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_leaderboard_shows_standings_games_and_a_replay(
    chromium: str, server: ServerProcess, tmp_path: Path
) -> None:
    page = browse(
        chromium, tmp_path / "profile", "--enable-logging=stderr", "--v=0", "--dump-dom",
        server.url + "/",
    )  # fmt: skip
    dom = page.stdout
    assert "Browser Cup" in dom and "paused" in dom
    # The console: no script error, no file missing (the favicon included).
    console = [line for line in page.stderr.splitlines() if "CONSOLE" in line]
    assert not [line for line in console if "Uncaught" in line or "Failed to load" in line], console
    for name in BOTS:
        assert f'data-bot="{name}"' in dom
    ranks = re.findall(r'<tr data-bot="(\w+)"[^>]*><td class="num">(\d+)</td>', dom)
    assert sorted(int(rank) for _, rank in ranks) == [1, 2, 3, 4, 5]
    assert "clustered by board" in dom  # the fit's note
    faults = {
        name: int(count)
        for name, count in re.findall(
            r'<tr data-bot="(\w+)"[^>]*>(?:<td[^>]*>.*?</td>){7}<td class="num">(\d+)</td>', dom
        )
    }
    # The page's column is the API's; echo is past its clock every ninth move. (Whether the
    # quick bots ever fault depends on the machine's load: a 300 ms clock on a busy machine.)
    assert faults == {r["name"]: r["faults"] for r in server.get("/api/standings")["bots"]}
    assert faults["echo"] > 0, faults
    games = server.get("/api/games?limit=100")["games"]
    newest = games[0]["game"]
    assert f'data-game="{newest}"' in dom
    # The newest game whose board is done: a board still owed withholds its cards.
    shown = next(g["game"] for g in games if g["withheld"] is None)

    mine = browse(chromium, tmp_path / "profile", "--dump-dom", server.url + "/#bot/echo").stdout
    assert "Recent games of echo" in mine
    rows = mine.split('id="games"')[1].split("</table>")[0].split("<tr data-game=")[1:]
    assert rows and all(">echo</span> (" in row for row in rows)
    assert '<tr data-bot="echo" class="chosen"' in mine
    # A name no account has says so (it showed everyone's games as if it were no filter).
    nobody = browse(chromium, tmp_path / "profile", "--dump-dom", server.url + "/#bot/zed").stdout
    assert "No bot named zed" in nobody
    assert "<tr data-game=" not in nobody.split('id="games"')[1].split("</table>")[0]

    replay = browse(
        chromium, tmp_path / "profile", "--dump-dom", f"{server.url}/#game/{shown}/1/5"
    ).stdout
    assert f"Replay of game {shown}" in replay
    # Step 5: the fourth trick after a pass (deal, pass, tricks), the fifth in a hold hand.
    passing = any(server.get(f"/api/games/{shown}")["hands"][0]["passes"])
    assert ("Trick 4 of 13" if passing else "Trick 5 of 13") in replay
    body = replay.split('id="replay-table"')[1].split("</table>")[0]
    assert body.count("<tr>") == 1 + 4  # the header row and one per seat
    assert 'class="card' in body and "took the trick" in replay

    # The address numbers hands as the replay's list does, from 1: #game/N/1/0 opened the hand
    # listed as 2. A record of two hands (its one hand twice) shows which one opens and what a
    # choice in the list writes back.
    record = server.get(f"/api/games/{shown}")
    api = {
        "/api/health": server.get("/api/health"),
        "/api/standings": server.get("/api/standings"),
        "/api/games": {"games": []},
        f"/api/games/{shown}": {**record, "hands": [record["hands"][0]] * 2},
    }
    choose = (
        f"location.hash = '#game/{shown}/2/0';"
        " setTimeout(() => { const list = document.getElementById('hand-select');"
        " document.body.dataset.opened = list.value; list.value = '0';"
        " list.dispatchEvent(new Event('change'));"
        " document.body.dataset.address = location.hash; }, 500);"
    )
    dom = stub_dom(chromium, tmp_path, api, choose)
    assert 'data-opened="1"' in dom and f'data-address="#game/{shown}/1/0"' in dom, dom[-800:]

    shots = tmp_path / "shots"
    shots.mkdir()
    for name, path in (("standings", "/"), ("replay", f"/#game/{shown}/1/7")):
        target = shots / f"{name}.png"
        done = browse(chromium, tmp_path / "profile", f"--screenshot={target}", server.url + path)
        assert target.exists(), done.stderr
        data = target.read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 20_000
        keep = os.environ.get("ARENA_SCREENSHOT_DIR")
        if keep:
            shutil.copy(target, Path(keep) / target.name)


WEB = Path(__file__).resolve().parent.parent / "arena" / "server" / "web"


def standing(name: str, rank: int | None, elo: float | None, se: float | None,
             low: float | None, high: float | None) -> dict[str, object]:  # fmt: skip
    return {
        "name": name, "rank": rank, "elo": elo, "se": se, "low": low, "high": high,
        "los_next": None, "games": 3, "hands": 12, "points_per_hand": 6.5, "faults": 0,
        "forfeits": 0, "live_mu": None, "live_sigma": None, "status": "active", "sessions": 0,
        "playing": 0,
    }  # fmt: skip


def test_open_and_unknown_intervals_read_as_such(chromium: str, tmp_path: Path) -> None:
    """The page against canned API answers (a stub fetch, no server): a null bound beside a
    standard error is open (the bot won every pair), a null standard error is unknown."""
    api = {
        "/api/health": {"name": "Stub Cup", "status": "ok", "ladder": "paused", "sessions": 1,
                        "tables": 1, "games": 9, "event": None},
        "/api/standings": {"fit": {"message": "Elo with 95% intervals, clustered by board"},
                           "bots": [
                               standing("unbeaten", 1, 420.0, 80.0, 150.0, None),
                               standing("steady", 2, 10.0, 20.0, -30.0, 50.0),
                               standing("winless", 3, -300.0, 70.0, None, -90.0),
                               standing("newcomer", 4, -50.0, None, None, None),
                               standing("unrated", None, None, None, None, None),
                           ]},
        "/api/games": {"games": []},
    }  # fmt: skip
    dom = stub_dom(chromium, tmp_path, api)
    intervals = dict(
        re.findall(r'<tr data-bot="(\w+)".*?<span class="interval">([^<]*)</span>', dom)
    )
    assert intervals == {
        "unbeaten": "150 … +∞",
        "steady": "-30 … 50",
        "winless": "−∞ … -90",
        "newcomer": "–",
        "unrated": "",
    }, dom[-3000:]
    assert 'class="open-high"' in dom and 'class="open-low"' in dom
    assert "fewer than two boards" in dom
    # One of each is said in the singular ("1 tables playing" was shown).
    assert "1 session · 1 table playing · 9 games" in dom


def test_the_online_column_says_why_a_bot_cannot_play(chromium: str, tmp_path: Path) -> None:
    # A revoked bot and an event's entrant with no account showed "○ offline", as a bot that is
    # merely not connected; the README and /api/standings say `revoked` and `unknown`.
    rows = {"ready": "active", "gone": "banned", "cut": "revoked", "ghost": "unknown"}
    api = {
        "/api/health": {"name": "Stub Cup", "status": "ok", "ladder": "paused", "sessions": 0,
                        "tables": 0, "games": 0, "event": None},
        "/api/standings": {"fit": {"message": "no fit yet"},
                           "bots": [{**standing(n, None, None, None, None, None), "status": st}
                                    for n, st in rows.items()]},
        "/api/games": {"games": []},
    }  # fmt: skip
    dom = stub_dom(chromium, tmp_path, api)
    shown = dict(
        re.findall(r'<tr data-bot="(\w+)".*?<span class="(?:offline|banned)"[^>]*>([^<]*)</span>',
                   dom)
    )  # fmt: skip
    assert shown == {"ready": "○ offline", "gone": "banned", "cut": "revoked", "ghost": "unknown"}


def test_closing_a_replay_goes_back_to_the_list_it_came_from(chromium: str, tmp_path: Path) -> None:
    # A bot's games, an older page, a game opened, Close: the page showed everyone's newest
    # games again (the address emptied), the bot and the page lost.
    game = {
        "game": 7, "table_id": "g7", "board": "1:7", "finished_at": 1_800_000_000,
        "termination": "normal", "rated": True, "withheld": None, "reason": "1 hand played",
        "seats": [{"bot": n, "points": 6, "placing": 1, "status": "normal", "faults": 0}
                  for n in ("ann", "bob", "cat", "dan")],
    }  # fmt: skip
    api = {
        "/api/health": {"name": "Stub Cup", "status": "ok", "ladder": "paused", "sessions": 0,
                        "tables": 0, "games": 9, "event": None},
        "/api/standings": {"fit": {"message": "no fit yet"},
                           "bots": [standing("ann", 1, 0.0, 10.0, -20.0, 20.0)]},
        "/api/games": {"games": [game]},
    }  # fmt: skip
    steps = (
        "location.hash = '#bot/ann';"
        " setTimeout(() => { document.getElementById('older').click();"
        " setTimeout(() => { location.hash = '#game/7';"
        " setTimeout(() => { document.getElementById('close-replay').click();"
        " setTimeout(() => { document.body.dataset.back = location.hash + '|' +"
        " document.getElementById('games-title').textContent; }, 300); }, 300); }, 300); }, 300);"
    )
    dom = stub_dom(chromium, tmp_path, api, steps)
    back = re.search(r'data-back="([^"]*)"', dom)
    assert back is not None, dom[-2000:]
    assert back[1] == "#bot/ann|Games of ann before game 7"


@pytest.mark.parametrize(
    ("ladder", "said"),
    [
        ("waiting for the event's start", "No finished game yet: the event has not started;"),
        ("paused", "No finished game yet: the ladder is paused (arena admin resume"),
        ("running", "No finished game yet: a table starts once enough bots wait in the lobby"),
        ("over", "No game was played: the event is over, and no table will start."),
    ],
)
def test_no_game_yet_says_why_no_table_starts(
    chromium: str, tmp_path: Path, ladder: str, said: str
) -> None:
    # An event waiting for its start, its bots all in the lobby, said "a table starts once
    # enough bots wait in the lobby" (and a paused ladder the same).
    api = {
        "/api/health": {"name": "Stub Cup", "status": "ok", "ladder": ladder, "sessions": 4,
                        "tables": 0, "games": 0, "event": None},
        "/api/standings": {"fit": {"message": "no fit yet"}, "bots": []},
        "/api/games": {"games": []},
    }  # fmt: skip
    assert said in stub_dom(chromium, tmp_path, api)


def stub_dom(chromium: str, tmp_path: Path, api: dict[str, object], after: str = "",
             *flags: str) -> str:  # fmt: skip
    """The DOM of :func:`stub_page` once Chromium has run it (``flags``: more of Chromium's)."""
    html = stub_page(tmp_path, api, after)
    done = browse(
        chromium, tmp_path / "profile", "--allow-file-access-from-files", "--dump-dom", *flags,
        html.as_uri(),
    )  # fmt: skip
    return done.stdout


def stub_page(tmp_path: Path, api: dict[str, object], after: str = "") -> Path:
    """The page with a stub fetch that answers ``api`` (by path), and ``after``: a script run
    once the page has drawn (a timer: Chromium's virtual time runs it without waiting)."""
    stub = (
        f"const API = {json.dumps(api)};\n"
        "window.fetch = async (url) => ({ ok: true, status: 200,"
        " json: async () => API[new URL(url, 'http://stub').pathname] });\n"
    )
    page = (WEB / "index.html").read_text(encoding="utf-8")
    page = page.replace('href="/static/style.css"', f'href="{(WEB / "style.css").as_uri()}"')
    page = page.replace(
        '<script src="/static/app.js" defer></script>',
        f'<script>{stub}</script>\n<script src="{(WEB / "app.js").as_uri()}" defer></script>\n'
        f"<script>setTimeout(() => {{ {after} }}, 1000);</script>",
    )
    html = tmp_path / "index.html"
    html.write_text(page, encoding="utf-8")
    return html


@pytest.mark.parametrize("width", [1280, 375])
def test_the_longest_names_leave_every_column_in_view(
    chromium: str, tmp_path: Path, width: int
) -> None:
    """Four bots with names of the longest length `arena bots add` takes (64 characters, one
    word): every column of the standings and of the recent games stays in a 1280-pixel window.
    The names pushed the standings' numbers and the games' seats and ends out of view, behind a
    horizontal scroll; a long name is now cut short on the page, whole in its tooltip. On a
    phone (375 pixels) the standings were 1162 pixels wide, the games' seats off screen: there
    the page keeps the columns that matter and hides the others. A competition's name of one
    long word made the header, and so the whole page, scroll sideways."""
    names = [letter * 64 for letter in "WMQO"]
    title = "Spring_Hearts_Ladder_2027_Season_1_" * 4
    game = {
        "game": 7, "table_id": "g7", "board": "1:7", "finished_at": 1_800_000_000,
        "termination": "normal", "rated": True, "withheld": None, "reason": "1 hand played",
        "seats": [{"bot": n, "points": 6, "placing": i + 1, "status": "normal", "faults": 1}
                  for i, n in enumerate(names)],
    }  # fmt: skip
    api = {
        "/api/health": {"name": title, "status": "ok", "ladder": "running", "sessions": 4,
                        "tables": 1, "games": 9, "event": None},
        "/api/standings": {"fit": {"message": "Elo with 95% intervals, clustered by board"},
                           "bots": [standing(n, i + 1, 100.0 - 50 * i, 20.0, 60.0 - 50 * i,
                                             140.0 - 50 * i) for i, n in enumerate(names)]},
        "/api/games": {"games": [game]},
    }  # fmt: skip
    # Headless Chromium keeps its window 500 pixels wide at the least: past the phone rule's
    # 640 already, the page is narrowed to the phone's width itself for the measure.
    narrow = f"document.documentElement.style.width = '{width}px';" if width < 500 else ""
    measure = (
        narrow + "const fits = ['standings-section', 'games-section'].map((id) => {"
        " const s = document.getElementById(id);"
        " return `${id}:${s.scrollWidth <= s.clientWidth}`; });"
        " const page = document.documentElement;"
        " fits.push(`page:${page.scrollWidth <= page.clientWidth}`);"
        " document.body.dataset.fits = fits.join(' ');"
    )
    dom = stub_dom(chromium, tmp_path, api, measure, f"--window-size={width},1000")
    assert f'data-bot="{names[0]}"' in dom and 'data-game="7"' in dom
    fits = re.search(r'data-fits="([^"]*)"', dom)
    assert fits is not None, dom[-2000:]
    assert fits[1] == "standings-section:true games-section:true page:true"
    assert title in dom  # wrapped, not cut
    # The whole name is still there, in the tooltip.
    assert f'title="{names[0]}"' in dom


def test_a_replay_shows_the_kitty_and_counts_its_points(chromium: str, tmp_path: Path) -> None:
    # The page's replay never showed the kitty, and its running points left the kitty's out
    # until the hand's result (0 at the first trick where the winner had taken 13 with the QS).
    settings = 'players = 3\nduplicate = false\nmove_time = "300ms"\n[rule]\nkitty = true\n'
    process = ServerProcess(tmp_path / "comp.db", settings)
    tokens = {name: process.add_bot(name) for name in BOTS[:3]}
    process.start()
    try:
        for name, token in tokens.items():
            process.bot(name, token, "low")
        process.wait_for(lambda: bool(process.get("/api/games")["games"]))
        number = process.get("/api/games")["games"][-1]["game"]
        record = process.get(f"/api/games/{number}")
        hand = record["hands"][0]
        first = hand["tricks"][0]
        rules = record["spec"]["rules"]

        def points(card: str) -> int:
            """A card's penalty under the record's rules (standard hearts: no spot hearts)."""
            table = {"QS": rules["queen_penalty"], "JD": rules["jack_of_diamonds"]}
            return 1 if card.endswith("H") else int(table.get(card, 0))

        step = 2 if any(hand["passes"]) else 1  # the deal, the pass, then the first trick
        page = browse(
            chromium, tmp_path / "profile", "--dump-dom", f"{process.url}/#game/{number}/1/{step}"
        ).stdout
    finally:
        process.close()
    assert len(hand["kitty"]) == 1, hand  # 52 cards at 3 seats: one left over
    said = f"took the trick and the kitty ({hand['kitty'][0]})."
    assert said in page, page[-2000:]
    body = page.split('id="replay-table"')[1].split("</table>")[0]
    shown = [int(p) for p in re.findall(r'<td class="num">(-?\d+)</td></tr>', body)]
    expected = [0, 0, 0]
    expected[first["winner"]] = sum(points(c) for c in [*first["cards"], *hand["kitty"]])
    assert shown == expected, body


def test_a_database_that_cannot_store_shows_on_the_page(chromium: str, tmp_path: Path) -> None:
    # /api/health said cannot-store while the page's header said "running · 2 tables playing".
    error = "cannot store: database or disk is full"
    api = {
        "/api/health": {"name": "Stub Cup", "status": "cannot-store", "error": error,
                        "ladder": "running", "sessions": 4, "tables": 2, "games": 8,
                        "event": None},
        "/api/standings": {"fit": {"message": "no fit yet"}, "bots": []},
        "/api/games": {"games": []},
    }  # fmt: skip
    dom = stub_dom(chromium, tmp_path, api)
    assert 'class="pill cannot">cannot store<' in dom, dom[:3000]
    assert f"{error}: no table starts until it can (2 tables playing or waiting" in dom


def game_seven_api() -> dict[str, Any]:
    """A stub API serving game 7: one hold hand of two tricks of clubs at four seats."""
    hand = {
        "number": 0, "dealer": 0, "pass_direction": "hold",
        "dealt": [["2C", "3C"], ["4C", "5C"], ["6C", "7C"], ["8C", "9C"]],
        "passes": [[], [], [], []],
        "tricks": [{"leader": 0, "cards": ["2C", "4C", "6C", "8C"], "winner": 3},
                   {"leader": 3, "cards": ["9C", "3C", "5C", "7C"], "winner": 3}],
        "points": [0, 0, 0, 0], "moon": None, "sun": False, "complete": True, "kitty": [],
    }  # fmt: skip
    rules = {"queen_penalty": 13, "jack_of_diamonds": 0, "spot_hearts": False}
    spec = {"table_id": "t1", "board": 4, "seats": ["a", "b", "c", "d"], "rules": rules}
    return {
        "/api/health": {"name": "Stub Cup", "status": "ok", "ladder": "running", "sessions": 4,
                        "tables": 1, "games": 8, "event": None},
        "/api/standings": {"fit": {"message": "no fit yet"}, "bots": []},
        "/api/games": {"games": []},
        "/api/games/7": {"game": 7, "spec": spec, "hands": [hand], "totals": [0, 0, 0, 0],
                         "faults": [], "termination": "completed", "reason": "played out",
                         "withheld": None},
    }  # fmt: skip


def test_a_withheld_replay_opens_at_the_address_s_step_once_its_board_is_done(
    chromium: str, tmp_path: Path
) -> None:
    # Opened at "cards withheld", the replay showed its deal (step 0) once the board was done,
    # the address still asking for step 3.
    api = game_seven_api()
    done = api["/api/games/7"]
    api["/api/games/7"] = {**done, "withheld": "board 4 is still being played at other tables"}
    # The board is done a second after the page opened; the next refresh finds the cards.
    page = stub_page(tmp_path, api, f"API['/api/games/7'] = {json.dumps(done)};")
    dom = browse(
        chromium, tmp_path / "profile", "--allow-file-access-from-files", "--dump-dom",
        page.as_uri() + "#game/7/1/2",
    ).stdout  # fmt: skip
    assert 'id="step-label" class="step">Trick 2 of 2<' in dom, dom[-3000:]


def test_a_mistyped_bot_filter_gives_the_server_s_hint_and_no_paging(
    chromium: str, tmp_path: Path
) -> None:
    # From a full page of games, #bot/ANN (no such account) said "No bot named ANN" with the
    # first list's "Older games" button still there, and not the server's "did you mean 'ann'?".
    games = [
        {"game": n, "table_id": f"g{n}", "board": f"1:{n}", "finished_at": 1_800_000_000,
         "termination": "normal", "rated": True, "withheld": None, "reason": "1 hand played",
         "seats": [{"bot": b, "points": 6, "placing": 1, "status": "normal", "faults": 0}
                   for b in ("ann", "bob", "cat", "dan")]}
        for n in range(40, 15, -1)
    ]  # fmt: skip
    api = {
        "/api/health": {"name": "Stub Cup", "status": "ok", "ladder": "paused", "sessions": 0,
                        "tables": 0, "games": 40, "event": None},
        "/api/standings": {"fit": {"message": "no fit yet"}, "bots": []},
        "/api/games": {"games": games},
    }  # fmt: skip
    refused = json.dumps({"error": "no bot named 'ANN' (names are exact: did you mean 'ann'?)"})
    steps = (
        "document.body.dataset.older = document.getElementById('older').hidden;"
        "const stub = window.fetch;"
        "window.fetch = async (url) => url.includes('bot=')"
        f" ? {{ ok: false, status: 404, json: async () => ({refused}) }} : stub(url);"
        "location.hash = '#bot/ANN';"
    )
    dom = stub_dom(chromium, tmp_path, api, steps)
    assert 'data-older="false"' in dom  # a full page: older games to show, before the filter
    assert "No bot named ANN: did you mean 'ann'?" in dom, dom[-3000:]
    assert '<button id="older" type="button" hidden="">' in dom, dom[-3000:]


@pytest.mark.parametrize(("asked", "shown"), [("1/99", "1/3"), ("7/0", "1/0")])
def test_an_address_past_the_game_s_end_says_what_is_shown(
    chromium: str, tmp_path: Path, asked: str, shown: str
) -> None:
    # #game/7/7/0 of a one-hand game showed hand 1, the address left as typed.
    page = stub_page(tmp_path, game_seven_api(), "document.body.dataset.address = location.hash;")
    dom = browse(
        chromium, tmp_path / "profile", "--allow-file-access-from-files", "--dump-dom",
        page.as_uri() + f"#game/7/{asked}",
    ).stdout  # fmt: skip
    assert f'data-address="#game/7/{shown}"' in dom, dom[-3000:]
