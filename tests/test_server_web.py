"""The leaderboard's HTTP server and JSON API, over real loopback sockets.

Tables are played in-process by the engine (EngineHost) so that the API is tested apart from the
referee; test_server_e2e.py covers the whole path with real bot processes.
"""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from make_certs import self_signed
from test_server_support import EngineHost

from arena.server.accounts import AccountStore
from arena.server.competition import Competition
from arena.server.config import server_config_from_dict
from arena.server.http import HttpServer
from arena.server.ledger import Ledger
from arena.server.webapp import make_handler
from arena.table import GameRecord


@dataclass
class Site:
    competition: Competition
    host: EngineHost
    base: str
    admin_token: str


@asynccontextmanager
async def serving(tmp_path: Path, games: int = 12) -> AsyncIterator[Site]:
    """A competition that has played ``games`` games (then paused), served on a free port."""
    db = tmp_path / "c.db"
    config = server_config_from_dict({"fit_interval": 0, "name": "Test Ladder"})
    ledger = Ledger.open(db, config)
    accounts = AccountStore(db)
    for bot in ("alpha", "beta", "gamma", "delta", "eps"):
        accounts.add(bot)
    admin = accounts.new_admin_token()
    competition = Competition(config, ledger, accounts, seed=4)
    await competition.load()
    host = EngineHost({"alpha": 2, "beta": 2, "gamma": 1, "delta": 1, "eps": 1})
    competition.attach(host)
    enough = asyncio.Event()

    def count(game: int, record: GameRecord) -> None:
        if competition.health()["games"] >= games:
            competition.paused = True
            enough.set()

    competition.on_record(count)
    competition.start()
    await asyncio.wait_for(enough.wait(), 60)
    await competition.wait_recorded()
    server = HttpServer(make_handler(competition), max_body=1024)
    port = await server.start("127.0.0.1", 0)
    try:
        yield Site(competition, host, f"http://127.0.0.1:{port}", admin)
    finally:
        await server.close()
        await competition.close()
        ledger.close()
        accounts.close()


def fetch(
    url: str, method: str = "GET", body: Any = None, token: str | None = None
) -> tuple[int, Any]:
    """(status, parsed JSON or text) of one request."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            status, raw, kind = response.status, response.read(), response.headers["Content-Type"]
    except urllib.error.HTTPError as e:
        status, raw, kind = e.code, e.read(), e.headers["Content-Type"]
    return status, json.loads(raw) if kind == "application/json" else raw.decode()


def run(test: Callable[[Site], Awaitable[None]], tmp_path: Path) -> None:
    async def main() -> None:
        async with serving(tmp_path) as site:
            await test(site)

    asyncio.run(main())


async def get(url: str, **kw: Any) -> tuple[int, Any]:
    return await asyncio.to_thread(fetch, url, **kw)


def test_health_standings_games_and_replay(tmp_path: Path) -> None:
    async def check(site: Site) -> None:
        status, health = await get(site.base + "/api/health")
        assert status == 200 and health["status"] == "ok" and health["games"] >= 12
        assert health["ladder"] == "paused" and health["name"] == "Test Ladder"
        assert await get(site.base + "/healthz") == (200, "ok")
        status, standings = await get(site.base + "/api/standings")
        assert status == 200
        names = {r["name"] for r in standings["bots"]}
        assert names == {"alpha", "beta", "gamma", "delta", "eps"}
        for row in standings["bots"]:
            assert row["games"] > 0 and row["faults"] == 0 and row["status"] == "active"
        status, games = await get(site.base + "/api/games?limit=5")
        assert status == 200 and len(games["games"]) == 5
        numbers = [g["game"] for g in games["games"]]
        assert numbers == sorted(numbers, reverse=True)
        newest = games["games"][0]
        assert newest["rated"] and len(newest["seats"]) == 4
        status, older = await get(site.base + f"/api/games?limit=100&before={numbers[-1]}")
        assert [g["game"] for g in older["games"]] == list(range(numbers[-1] - 1, -1, -1))
        status, mine = await get(site.base + "/api/games?bot=gamma&limit=100")
        assert mine["games"] and all(
            "gamma" in [s["bot"] for s in g["seats"]] for g in mine["games"]
        )
        # Every game of the bot, newest first, also below `before` (the query was rewritten).
        _, every = await get(site.base + "/api/games?limit=500")
        its = [g["game"] for g in every["games"] if "gamma" in [s["bot"] for s in g["seats"]]]
        assert [g["game"] for g in mine["games"]] == its[:100]
        _, below = await get(site.base + f"/api/games?bot=gamma&limit=3&before={its[1]}")
        assert [g["game"] for g in below["games"]] == its[2:5]
        status, typo = await get(site.base + "/api/games?bot=gamm")
        assert status == 404 and typo["error"].startswith("no bot named 'gamm'")
        status, record = await get(site.base + f"/api/games/{newest['game']}")
        assert status == 200 and record["game"] == newest["game"]
        (hand,) = record["hands"]
        assert len(hand["tricks"]) == 13 and sum(hand["points"]) in (26, 78)
        assert hand["pass_to"] == [1, 2, 3, 0]  # hand 0 passes left
        status, lobby = await get(site.base + "/api/lobby")
        assert status == 200 and len(lobby["sessions"]) == 7 and lobby["tables"] == []
        # A draining server tells load balancers to look elsewhere.
        site.competition.draining = True
        assert await get(site.base + "/healthz") == (503, "draining")
        assert (await get(site.base + "/api/health"))[1]["ladder"] == "draining"

    run(check, tmp_path)


def test_missing_things_and_bad_arguments_are_clear(tmp_path: Path) -> None:
    async def check(site: Site) -> None:
        assert (await get(site.base + "/api/games/99999"))[0] == 404
        assert (await get(site.base + "/api/games/abc"))[0] == 400
        # Digits of other scripts pass str.isdigit() (a superscript two made int() fail: a 500).
        for odd in ("%C2%B2", "%D9%A1%D9%A2"):
            status, body = await get(site.base + "/api/games/" + odd)
            assert status == 400 and body["error"].endswith(": give a game number")
        assert (await get(site.base + "/api/games?limit=x"))[0] == 400
        status, body = await get(site.base + "/nothing-here")
        assert status == 404 and "nothing at /nothing-here" in body["error"]
        # A path, not a host: "//api/health" was read as host "api", path "/health".
        status, body = await get(site.base + "//api/health")
        assert status == 404 and body["error"] == "nothing at //api/health"
        assert (await get(site.base + "/static/nope.js"))[0] == 404
        assert (await get(site.base + "/api/standings", method="DELETE"))[0] == 405
        huge = str(2**63)
        assert (await get(site.base + f"/api/games/{huge}"))[0] == 404
        for query, says in (
            (f"before={huge}", f"before={huge}: give 0 to {2**63 - 1}"),
            ("before=-5", "before=-5: give 0 to"),
            ("limit=0", "limit=0: give 1 to 500"),
            ("limit=501", "limit=501: give 1 to 500"),
            ("limit=%2B5", "limit='+5' is not a whole number"),
            ("limit=1_0", "limit='1_0' is not a whole number"),
            ("lmit=3", "unknown parameter 'lmit': give limit, before or bot"),
            ("limit=2&limit=3", "parameter 'limit' given twice: give it once"),
            ("bot=", "bot is empty: give a bot's name, or leave bot out for every game"),
        ):
            status, body = await get(site.base + "/api/games?" + query)
            assert status == 400 and body["error"].startswith(says)
        # More digits than int() converts (4,300) were a 500 with a traceback in the log.
        endless = "9" * 4301
        status, body = await get(site.base + f"/api/games/{endless}")
        assert (status, body["error"]) == (404, f"no game {endless}")
        for name, says in (("limit", "give 1 to 500"), ("before", f"give 0 to {2**63 - 1}")):
            status, body = await get(site.base + f"/api/games?{name}={endless}")
            assert (status, body["error"]) == (400, f"{name}={endless}: {says}")
        # Leading zeros before a game that exists: its record, as "0003" gets game 3's.
        status, body = await get(site.base + "/api/games/" + "0" * 4301 + "1")
        assert (status, body["game"]) == (200, 1)
        status, body = await get(site.base + f"/api/games?before=-{endless}")
        assert status == 400 and body["error"].endswith(f": give 0 to {2**63 - 1}")

        def allowed(path: str, method: str) -> tuple[int, str]:
            request = urllib.request.Request(site.base + path, method=method)
            try:
                urllib.request.urlopen(request, timeout=10)
            except urllib.error.HTTPError as e:
                return e.code, e.headers["Allow"]
            raise AssertionError(f"{method} {path} was served")

        assert await asyncio.to_thread(allowed, "/api/standings", "POST") == (405, "GET, HEAD")
        assert await asyncio.to_thread(allowed, "/api/admin/pause", "GET") == (405, "POST")
        # An action that does not exist was a 405 "use POST", which then answered a 404.
        for method in ("GET", "PUT", "DELETE"):
            status, body = await get(site.base + "/api/admin/nothing", method=method)
            assert (status, body["error"]) == (
                404,
                "no admin action 'nothing'; known: pause, resume, kick, ban, unban",
            )
        # A mistyped admin path was told "use GET, HEAD", where GET is a 404 as well.
        for typo in ("/api/amdin/pause", "/admin/pause", "/nope"):
            status, body = await get(site.base + typo, method="POST")
            assert (status, body["error"]) == (404, f"nothing at {typo}")
        status, body = await get(site.base + "/api/admin", method="POST")
        assert status == 404
        assert body["error"].startswith("no admin action given: POST /api/admin/ACTION, one of ")

    run(check, tmp_path)


def test_every_api_path_refuses_a_parameter_it_does_not_take(tmp_path: Path) -> None:
    # /api/standings?bot=x answered the whole table, as if the filter worked; /api/games refused.
    async def check(site: Site) -> None:
        def head(url: str) -> int:
            try:
                with urllib.request.urlopen(
                    urllib.request.Request(url, method="HEAD"), timeout=10
                ) as r:
                    return int(r.status)
            except urllib.error.HTTPError as e:
                return e.code

        for path in ("/api/standings", "/api/health", "/api/lobby", "/api/games/1"):
            assert await asyncio.to_thread(head, f"{site.base}{path}?bot=alpha") == 400
            status, body = await get(f"{site.base}{path}/?limit=3")
            assert status == 400 and body == {
                "error": f"unknown parameter 'limit': {path} takes no parameters"
            }
        status, body = await get(site.base + "/api/games?bot=alpha&sort=new")
        assert status == 400 and body == {
            "error": "unknown parameter 'sort': give limit, before or bot"
        }
        # The admin actions take their arguments in the body, and only those they read.
        url, token = site.base + "/api/admin/", site.admin_token
        status, body = await get(url + "pause?now=1", method="POST", body={}, token=token)
        assert status == 400 and body["error"] == (
            "unknown parameter 'now': /api/admin/pause takes no parameters; send its arguments "
            "as a JSON body"
        )
        for action, args, says in (
            ("ban", {"bot": "beta", "reson": "x"}, "unknown argument 'reson': give bot or reason"),
            ("pause", {"now": True}, "unknown argument 'now': pause takes none"),
        ):
            status, body = await get(url + action, method="POST", body=args, token=token)
            assert status == 400 and body["error"] == says
        _, standings = await get(site.base + "/api/standings")
        assert all(r["status"] != "banned" for r in standings["bots"])
        # Unchanged: the page and its files, and a path that is not there.
        assert (await get(site.base + "/?from=mail"))[0] == 200
        assert (await get(site.base + "/api/nothing?x=1"))[0] == 404

    run(check, tmp_path)


def test_page_and_its_files_are_served_with_a_strict_policy(tmp_path: Path) -> None:
    async def check(site: Site) -> None:
        def page(path: str) -> tuple[str, str, str]:
            with urllib.request.urlopen(site.base + path, timeout=10) as r:
                return (
                    r.headers["Content-Type"],
                    r.headers["Content-Security-Policy"],
                    r.read().decode(),
                )

        kind, csp, html = await asyncio.to_thread(page, "/")
        assert kind.startswith("text/html") and "default-src 'self'" in csp
        assert '<script src="/static/app.js"' in html and "http" not in html.split("<body>")[0]
        kind, _, js = await asyncio.to_thread(page, "/static/app.js")
        assert kind.startswith("text/javascript") and "/api/standings" in js
        kind, _, css = await asyncio.to_thread(page, "/static/style.css")
        assert kind.startswith("text/css") and ".card" in css

    run(check, tmp_path)


def test_admin_needs_the_token_and_can_pause_kick_and_ban(tmp_path: Path) -> None:
    async def check(site: Site) -> None:
        url = site.base + "/api/admin/"
        status, body = await get(url + "pause", method="POST", body={})
        assert status == 401 and "Bearer" in body["error"]
        status, body = await get(url + "pause", method="POST", body={}, token="wrong")
        assert status == 401 and body["error"].startswith("that is not the admin token")
        token = site.admin_token
        status, body = await get(url + "resume", method="POST", body={}, token=token)
        assert status == 200 and body["ladder"] == "running"
        status, body = await get(url + "pause", method="POST", body={}, token=token)
        assert status == 200 and body["ladder"] == "paused"
        await site.competition.wait_recorded()
        status, body = await get(url + "kick", method="POST", body={"session": "x#9"}, token=token)
        assert status == 400 and "no session 'x#9'" in body["error"]
        status, body = await get(
            url + "kick", method="POST", body={"session": "alpha#1"}, token=token
        )
        assert status == 200 and site.host.kicked == ["alpha#1"]
        status, body = await get(
            url + "ban", method="POST", body={"bot": "beta", "reason": "flooding"}, token=token
        )
        assert status == 200 and body == {"banned": "beta", "sessions_ended": 2}
        _, standings = await get(site.base + "/api/standings")
        beta = next(r for r in standings["bots"] if r["name"] == "beta")
        assert beta["status"] == "banned"
        status, body = await get(url + "ban", method="POST", body={"bot": "nobody"}, token=token)
        assert status == 400 and "no bot named 'nobody'" in body["error"]
        status, body = await get(url + "unban", method="POST", body={"bot": "beta"}, token=token)
        assert status == 200
        status, body = await get(url + "explode", method="POST", body={}, token=token)
        assert status == 404

    run(check, tmp_path)


def test_oversized_or_malformed_requests_are_refused_and_the_server_goes_on(
    tmp_path: Path,
) -> None:
    async def check(site: Site) -> None:
        port = int(site.base.rsplit(":", 1)[1])

        def raw(data: bytes) -> bytes:
            with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                s.sendall(data)
                chunks = []
                while chunk := s.recv(65536):
                    chunks.append(chunk)
                return b"".join(chunks)

        big = b"POST /api/admin/pause HTTP/1.1\r\nContent-Length: 5000\r\n\r\n" + b"x" * 5000
        assert (await asyncio.to_thread(raw, big)).startswith(b"HTTP/1.1 413")
        assert (await asyncio.to_thread(raw, b"GARBAGE\r\n\r\n")).startswith(b"HTTP/1.1 400")
        headers = b"GET / HTTP/1.1\r\n" + b"X-Filler: " + b"y" * 70000 + b"\r\n\r\n"
        assert (await asyncio.to_thread(raw, headers)).startswith(b"HTTP/1.1 431")
        chunked = b"POST /api/admin/pause HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
        assert (await asyncio.to_thread(raw, chunked)).startswith(b"HTTP/1.1 411")
        # A target's bytes past ASCII, as curl sends "?limit=٣", are UTF-8 (the error echoed
        # them read as Latin-1, "limit='Ù£'"); bytes that are not UTF-8 are said to be so.
        utf8 = "GET /api/games?limit=٣ HTTP/1.1\r\nConnection: close\r\n\r\n".encode()
        answer = await asyncio.to_thread(raw, utf8)
        assert answer.startswith(b"HTTP/1.1 400"), answer
        said = json.loads(answer.partition(b"\r\n\r\n")[2])["error"]
        assert said.startswith("limit='٣' is not a whole number"), said
        latin = b"GET /api/games?bot=caf\xe9 HTTP/1.1\r\nConnection: close\r\n\r\n"
        answer = await asyncio.to_thread(raw, latin)
        assert answer.startswith(b"HTTP/1.1 400") and b"not UTF-8: percent-encode it" in answer
        # A TLS ClientHello (an https:// client) is answered at once, in plain text, rather than
        # left to wait for a request line until the idle timeout (longer than raw's timeout).
        hello = b"\x16\x03\x01\x00\xc0\x01\x00\x00\xbc\x03\x03" + bytes(32)
        answer = await asyncio.to_thread(raw, hello)
        assert answer.startswith(b"HTTP/1.1 400") and b"plain HTTP, not TLS" in answer
        # Two requests on one kept-alive connection, the second closing it.
        two = (
            b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
            b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        answer = await asyncio.to_thread(raw, two)
        assert answer.count(b"HTTP/1.1 200 OK") == 2
        # HTTP/1.0 closes after the answer unless it asks to keep the connection: it was told
        # "keep-alive" and held open until the idle timeout (longer than raw's). A 1.1 client's
        # "close" among other tokens closes too.
        for request in (
            b"GET /healthz HTTP/1.0\r\n\r\n",
            b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close, TE\r\n\r\n",
        ):
            answer = await asyncio.to_thread(raw, request)
            assert answer.startswith(b"HTTP/1.1 200 OK") and b"Connection: close\r\n" in answer
        kept = b"GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n" * 2
        kept += b"GET /healthz HTTP/1.0\r\n\r\n"
        assert (await asyncio.to_thread(raw, kept)).count(b"HTTP/1.1 200 OK") == 3
        assert (await get(site.base + "/healthz"))[0] == 200

    run(check, tmp_path)


def test_a_tls_handshake_never_finished_is_cut_off_at_the_idle_timeout(tmp_path: Path) -> None:
    # asyncio's own handshake timeout (60 s) held such a connection four times the idle
    # timeout that every other unfinished request gets.
    cert = self_signed(tmp_path, "web")
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert, tmp_path / "web.key")

    async def never(request: object) -> Any:
        raise AssertionError("no request comes")

    async def body() -> bytes:
        server = HttpServer(never, idle_s=0.5)
        port = await server.start("127.0.0.1", 0, tls)
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"\x16\x03\x01")  # the start of a ClientHello, and no more
            # A bound only against a hang: the old 60 s would run past it.
            said = await asyncio.wait_for(reader.read(), 30)
            writer.close()
            return said
        finally:
            await server.close()

    assert asyncio.run(body()) == b""
