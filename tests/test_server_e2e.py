"""End to end: ``arena serve`` as a process, bots as processes with tokens, over loopback.

Bots enter with their tokens and a wrong token is refused; the ladder plays; standings, games
and replays appear in the API; SIGTERM drains and exits 0; a kill -9 in the middle of a game
loses nothing finished and records that game as interrupted; the admin commands pause the
ladder and ban a bot, whose token is then refused.
"""

from __future__ import annotations

import json
import queue
import resource
import shutil
import signal
import socket
import sqlite3
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from test_server_support import ARENA, ServerProcess

from arena.config import build_config
from arena.errors import ConfigError
from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb
from arena.proto.hearts.v1 import bot_service_pb2_grpc as bot_grpc
from arena.referee import RefereeConfig, RefereeThread, TlsConfig, TokenAccounts
from arena.server.config import server_config_from_dict
from arena.store import Store

CONFIG = 'fit_interval = "100ms"\nmove_time = "2s"\n'
SAMPLES = ("lowcard", "random_bot", "heuristic")
STOP_TIMEOUT_S = 120.0
"""How long a drained server may take to exit (a deadline only against a hang)."""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path / "comp.db", CONFIG)
    yield process
    process.close()


def games(server: ServerProcess) -> int:
    return int(server.get("/api/health")["games"])


def test_bots_enter_with_tokens_the_ladder_plays_and_standings_appear(
    server: ServerProcess,
) -> None:
    tokens = {name: server.add_bot(name) for name in (*SAMPLES, "mine")}
    server.add_bot("idle")  # an account that never connects: a row with nothing yet
    server.start()
    for name in SAMPLES:
        server.bot(name, tokens[name], sample=name)
    server.bot("mine", tokens["mine"], "low")
    intruder = server.bot("intruder", "not-a-token", "low")
    assert intruder.wait(timeout=60) == 2
    assert intruder.stderr is not None and b"UNAUTHENTICATED" in intruder.stderr.read()

    server.wait_for(lambda: games(server) >= 24)
    server.wait_for(lambda: server.get("/api/standings")["fit"]["results"] >= 24)
    check_the_documented_fields(server)
    standings = server.get("/api/standings")
    assert standings["fit"]["status"] == "ok"
    rows = {r["name"]: r for r in standings["bots"]}
    assert set(rows) == {*SAMPLES, "mine", "idle"}
    idle = rows.pop("idle")
    assert idle["games"] == 0 and idle["sessions"] == 0 and idle["status"] == "active"
    for nothing_yet in ("rank", "elo", "points_per_hand", "last_game", "live_mu"):
        assert idle[nothing_yet] is None, nothing_yet
    for row in rows.values():
        assert row["games"] > 0 and row["rank"] is not None
        assert row["low"] <= row["elo"] <= row["high"]
        assert row["sessions"] == 1
    assert "intruder" not in rows
    recent = server.get("/api/games?limit=10")["games"]
    assert len(recent) == 10 and all(g["rated"] for g in recent)
    # A game whose board is done (a board still in play withholds its cards).
    shown = next(g for g in server.get("/api/games?limit=100")["games"] if g["withheld"] is None)
    replay = server.get(f"/api/games/{shown['game']}")
    assert len(replay["hands"][0]["tricks"]) == 13
    assert sorted(replay["spec"]["seats"]) == sorted([*SAMPLES, "mine"])
    # Every board is dealt in its rotations: the same seed with the seats shifted.
    boards: dict[str, set[tuple[str, ...]]] = {}
    for g in server.get("/api/games?limit=500")["games"]:
        boards.setdefault(g["board"], set()).add(tuple(s["bot"] for s in g["seats"]))
    assert any(len(seatings) == 4 for seatings in boards.values())

    assert server.terminate() == 0
    lines = [json.loads(line) for line in server.log.read_text().splitlines()]
    messages = [line["msg"] for line in lines]
    assert "serving" in messages and "drained" in messages and messages[-1] == "stopped"
    # The README's fields of a log line.
    levels = {"debug", "info", "warning", "error", "critical"}
    assert all({"ts", "level", "logger", "msg"} <= set(line) for line in lines)
    assert all(line["level"] in levels and isinstance(line["ts"], float) for line in lines)
    started = next(line for line in lines if line["msg"] == "table started")
    assert {"game", "table", "seats"} <= set(started)
    with sqlite3.connect(server.db) as db:
        assert db.execute("SELECT COUNT(*) FROM server_running").fetchone() == (0,)
        ends = {row[0] for row in db.execute("SELECT termination FROM games")}
    assert ends <= {"normal", "interrupted"}


API_FIELDS = {
    "GET /api/health": {
        "": {"status", "name", "ladder", "mode", "sessions", "tables", "games", "rated"}
        | {"uptime_s", "event", "error"},
    },
    "GET /api/standings": {
        "": {"name", "updated_at", "fit", "bots"},
        "fit": {"status", "message", "results", "boards", "pending"},
        "bots": {"name", "rank", "elo", "se", "low", "high", "los_next", "games", "hands"}
        | {"points", "points_per_hand", "faults", "forfeits", "interrupted", "last_game"}
        | {"live_mu", "live_sigma", "status", "sessions", "playing"},
    },
    "GET /api/games": {
        "": {"games"},
        "games": {"game", "table_id", "board", "seed", "hands", "termination", "reason"}
        | {"started_at", "finished_at", "rated", "withheld", "seats"},
        "seats": {"bot", "points", "placing", "status", "faults"},
    },
    "GET /api/games/N": {
        "": {"spec", "hands", "decisions", "faults", "totals", "placings", "termination"}
        | {"seat_status", "reason", "started_at", "finished_at", "late", "game", "withheld"},
    },
    "GET /api/lobby": {
        "": {"ladder", "sessions", "tables", "owed_boards", "waiting_to_mix", "event"},
        "sessions": {"id", "bot", "table"},
        "tables": {"game", "table_id", "board", "seats", "started_at"},
    },
}
"""Each API answer's fields, by where they sit ("": the answer itself; else the objects under
that key, or in the list under it), as the README lists them."""


def check_the_documented_fields(server: ServerProcess) -> None:
    """Every field of every API answer is in the README's list for its path, and no more."""
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme.split("The JSON API's answers, field by field", 1)[1]
    section = section.split("- An error, on any path", 1)[0]
    bullets = {b.split(":", 1)[0].strip("` \n"): b for b in section.split("\n- ")[1:]}
    assert set(bullets) == set(API_FIELDS)
    lobbies: list[Any] = []  # a lobby with a table in play (between two games it has none)

    def a_table_in_play() -> bool:
        lobbies.append(server.get("/api/lobby"))
        return bool(lobbies[-1]["tables"])

    server.wait_for(a_table_in_play)
    shown = server.get("/api/games?limit=1")["games"][0]["game"]
    answers = {
        "GET /api/health": server.get("/api/health"),
        "GET /api/standings": server.get("/api/standings"),
        "GET /api/games": server.get("/api/games?limit=5"),
        "GET /api/games/N": server.get(f"/api/games/{shown}"),
        "GET /api/lobby": lobbies[-1],
    }
    for path, levels in API_FIELDS.items():
        for key, fields in levels.items():
            answer = answers[path]
            if key == "seats":  # the seats of each game listed
                found: Any = [s for g in answer["games"] for s in g["seats"]]
            else:
                found = answer if key == "" else answer[key]
            objects = found if isinstance(found, list) else [found]
            assert objects, (path, key)
            for got in objects:
                assert set(got) == fields, (path, key, set(got) ^ fields)
            for name in fields:
                assert f"`{name}`" in bullets[path], (path, name)
    hand = answers["GET /api/games/N"]["hands"][0]
    assert "pass_to" in hand and "`pass_to`" in bullets["GET /api/games/N"]


def test_kill_9_loses_nothing_finished_and_the_running_game_is_interrupted(
    server: ServerProcess, tmp_path: Path
) -> None:
    # A long move clock, and a bot that stops answering in its third hand: when the server is
    # killed, a table is certainly in the middle of a game.
    server.config_path.write_text('move_time = "120s"\ntime_bank = "0s"\nfit_interval = "100ms"\n')
    tokens = {name: server.add_bot(name) for name in ("a", "b", "c", "hang")}
    server.start()
    for name in ("a", "b", "c"):
        server.bot(name, tokens[name], "low")
    server.bot("hang", tokens["hang"], "hang", str(13 * 2 + 3))
    server.wait_for(lambda: games(server) >= 2 and len(server.get("/api/lobby")["tables"]) == 1)
    before = server.get("/api/games?limit=100")["games"]
    running = server.get("/api/lobby")["tables"]
    server.kill()
    server.stop_bots()

    server.start()
    after = server.get("/api/games?limit=100")["games"]
    by_number = {g["game"]: g for g in after}
    for game in before:
        # Nothing finished is lost or changed (a board in play before the kill may be done
        # after it, its seed shown).
        now = by_number[game["game"]]
        if game["withheld"] is not None:
            assert now["seed"] is not None or now["withheld"] is not None
            now = {**now, "seed": None, "withheld": game["withheld"]}
        assert now == game
    (table,) = running
    interrupted = by_number[table["game"]]
    assert interrupted["termination"] == "interrupted" and not interrupted["rated"]
    assert "not rated" in interrupted["reason"]
    # Its rotation is owed again (the board withheld until then): it was never dealt again.
    assert interrupted["withheld"] is not None
    standings = {r["name"]: r for r in server.get("/api/standings")["bots"]}
    assert standings["hang"]["games"] == len(before)
    assert standings["hang"]["interrupted"] == 1
    # The ladder goes on after the restart, numbering on from where it stopped.
    for name in ("a", "b", "c"):
        server.bot(name, tokens[name], "low")
    server.bot("hang", tokens["hang"], "low")
    server.wait_for(lambda: games(server) >= len(after) + 2)
    newest = server.get("/api/games?limit=1")["games"][0]
    assert newest["game"] > table["game"]
    dealt_again = [
        g
        for g in server.get("/api/games?limit=100")["games"]
        if g["game"] > table["game"]
        and g["board"] == table["board"]
        and [s["bot"] for s in g["seats"]] == table["seats"]
    ]
    assert [g["termination"] for g in dealt_again] == ["normal"], dealt_again
    assert server.terminate() == 0


def open_files_limit(pid: int) -> int:
    """The soft limit on open files of process ``pid`` (Linux: /proc/PID/limits)."""
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            return int(line.split()[3])
    raise AssertionError(f"no open-files line in /proc/{pid}/limits")


@pytest.mark.skipif(not Path("/proc/self/limits").exists(), reason="needs Linux's /proc")
def test_the_server_lifts_its_open_files_limit(server: ServerProcess) -> None:
    # Under the usual soft limit of 1,024, a thousand idle connections to the bots' port took
    # every descriptor: no new bot, no page and no `arena admin` could connect meanwhile.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    low = 512 if hard == resource.RLIM_INFINITY else min(512, hard // 2)
    resource.setrlimit(resource.RLIMIT_NOFILE, (low, hard))
    try:
        server.start()  # inherits the low soft limit
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert server.proc is not None
    wanted = 65536 if hard == resource.RLIM_INFINITY else min(hard, 65536)
    assert open_files_limit(server.proc.pid) == wanted


def test_a_hard_limit_on_open_files_too_low_for_the_server_is_one_line(tmp_path: Path) -> None:
    # Under a hard `ulimit -n` of 20 to 32 the server died of a segmentation fault or an abort
    # ("Failed to open /dev/urandom"), blamed its database, or served without reading its
    # accounts; `arena run` refuses its own shortfall in one line.
    def low_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (24, 24))

    db = tmp_path / "comp.db"
    done = subprocess.run(
        [*ARENA, "serve", "--db", str(db), "--port", "0", "--web-port", "0"],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=low_limit,
        check=False,
    )
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr == (
        "arena: error: the limit on open files (ulimit -n) is 24, and arena serve needs at least "
        "64, and one more for each connection: raise it, e.g. ulimit -n 4096\n"
    )
    assert list(tmp_path.iterdir()) == []  # nothing made


def test_a_revoked_token_is_refused_as_revoked_not_as_unknown(server: ServerProcess) -> None:
    # The token was forgotten: its bot was told "unknown token: check the token the organiser
    # gave", as for a typing mistake, and its author could not tell what had happened.
    token = server.add_bot("leaky")
    server.start()
    revoked = server.cli("bots", "revoke", "leaky", "--db", str(server.db), "--reason", "leaked")
    assert revoked.returncode == 0, revoked.stderr
    bot = server.bot("leaky", token, "low")
    assert bot.wait(timeout=60) == 2
    assert bot.stderr is not None
    said = bot.stderr.read().decode()
    assert "PERMISSION_DENIED" in said and "may not play now (revoked: leaked)" in said, said
    assert "unknown token" not in said


def test_admin_pauses_and_bans_and_a_banned_token_is_refused(server: ServerProcess) -> None:
    tokens = {name: server.add_bot(name) for name in ("a", "b", "c", "d")}
    admin = server.admin_token()
    server.start()
    procs = {name: server.bot(name, tokens[name], "low") for name in tokens}
    server.wait_for(lambda: games(server) >= 4)
    base = ["--url", server.url, "--token", admin]
    refused = server.cli("admin", "pause", "--url", server.url, "--token", "nope")
    assert refused.returncode == 2 and "401" in refused.stderr
    # https:// on the plain page is answered at once (well within its 15 s idle timeout, which
    # the client used to wait out), and said plainly.
    tls = server.url.replace("http://", "https://")
    wrong = server.cli("admin", "pause", "--url", tls, "--token", admin, timeout=10)
    assert wrong.returncode == 2 and wrong.stderr.strip().count("\n") == 0, wrong.stderr
    assert f"the server at {tls} did not speak TLS" in wrong.stderr
    assert f"try --url {server.url}" in wrong.stderr
    assert server.cli("admin", "pause", *base).returncode == 0
    server.wait_for(lambda: server.get("/api/lobby")["tables"] == [])
    paused_at = games(server)
    assert server.get("/api/health")["ladder"] == "paused"
    assert server.cli("admin", "ban", "d", "--reason", "testing bans", *base).returncode == 0
    server.wait_for(
        lambda: (
            server.get("/api/lobby")["sessions"]
            and all(s["bot"] != "d" for s in server.get("/api/lobby")["sessions"])
        )
    )
    assert games(server) == paused_at  # paused: no table started meanwhile
    assert procs["d"].wait(timeout=60) == 1  # removed for good: the SDK exits 1, one line
    assert procs["d"].stderr is not None
    assert b"removed bot 'd': testing bans" in procs["d"].stderr.read()
    again = server.bot("d", tokens["d"], "low")
    assert again.wait(timeout=60) == 2
    assert again.stderr is not None and b"PERMISSION_DENIED" in again.stderr.read()
    kicked = server.cli("admin", "kick", "no-such-session", *base)
    assert kicked.returncode == 2 and "no session" in kicked.stderr
    victim = next(s["id"] for s in server.get("/api/lobby")["sessions"] if s["bot"] == "a")
    kicked = server.cli("admin", "kick", victim, "--reason", "testing kicks", *base)
    assert kicked.returncode == 0, kicked.stderr
    # A kick lets the bot back: the SDK reconnects, with a new session.
    server.wait_for(
        lambda: any(
            s["bot"] == "a" and s["id"] != victim for s in server.get("/api/lobby")["sessions"]
        )
    )
    assert procs["a"].poll() is None
    # A kicked bot is told to come back well inside the grace period (5 s by default, a fifth of
    # jitter in the SDK), so that one kicked in the middle of a game takes its seat back.
    with grpc.insecure_channel(f"127.0.0.1:{server.bots_port}") as channel:
        hello = bot_pb.Hello(bot_name="b", token=tokens["b"], protocol_version=1)
        outgoing: queue.Queue[bot_pb.PlayRequest | None] = queue.Queue()
        outgoing.put(bot_pb.PlayRequest(hello=hello))
        stream = bot_grpc.BotServiceStub(channel).Play(iter(outgoing.get, None), timeout=60)
        welcome = next(iter(stream)).welcome
        kicked = server.cli("admin", "kick", welcome.session_id, *base)
        assert kicked.returncode == 0, kicked.stderr
        (shutdown,) = [m.shutdown for m in stream if m.HasField("shutdown")]
        outgoing.put(None)
    assert shutdown.may_reconnect and 0 < shutdown.reconnect_after_ms <= 5000 // 4
    assert server.cli("admin", "resume", *base).returncode == 0
    assert server.get("/api/health")["ladder"] == "running"
    assert server.terminate() == 0
    assert "no such database" not in server.errors  # the accounts made it: nothing to say


def test_oversized_hello_is_refused_by_the_message_limit(server: ServerProcess) -> None:
    server.config_path.write_text("max_message_bytes = 4096\n")
    token = server.add_bot("a")
    server.start()
    with grpc.insecure_channel(f"127.0.0.1:{server.bots_port}") as channel:
        stub = bot_grpc.BotServiceStub(channel)
        hello = bot_pb.Hello(bot_name="a" * 8000, token=token, protocol_version=1)
        stream = stub.Play(iter([bot_pb.PlayRequest(hello=hello)]), timeout=30)
        with pytest.raises(grpc.RpcError) as refused:
            list(stream)
    assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "over this referee's limit of 4096 bytes" in (refused.value.details() or "")
    assert server.terminate() == 0


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and localhost, made with the openssl tool."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("the openssl command is needed to make a test certificate")
    cert, key = folder / "server.pem", folder / "server.key"
    subprocess.run(
        [
            *(openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"),
            *("-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=arena"),
            *("-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def test_tls_for_bots_and_the_page(server: ServerProcess, tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    tokens = {name: server.add_bot(name) for name in ("a", "b", "c", "d")}
    server.start("--tls-cert", str(cert), "--tls-key", str(key))
    server.env["ARENA_TLS_CA"] = str(cert)
    server.tls_context = ssl.create_default_context(cafile=str(cert))
    for name in tokens:
        server.bot(name, tokens[name], "low")
    server.wait_for(lambda: games(server) >= 4)
    assert server.url.startswith("https://")
    # Plain text reaches neither door.
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        urllib.request.urlopen(f"http://127.0.0.1:{server.web_port}/healthz", timeout=10)
    with grpc.insecure_channel(f"127.0.0.1:{server.bots_port}") as channel:
        check = health_pb2_grpc.HealthStub(channel).Check
        with pytest.raises(grpc.RpcError):
            check(health_pb2.HealthCheckRequest(), timeout=10)
    admin = server.admin_token()
    paused = server.cli("admin", "pause", "--url", server.url, "--token", admin, "--ca", str(cert))
    assert paused.returncode == 0, paused.stderr
    plain = server.url.replace("https://", "http://")
    wrong = server.cli("admin", "pause", "--url", plain, "--token", admin, timeout=10)
    assert wrong.returncode == 2 and wrong.stderr.strip().count("\n") == 0, wrong.stderr
    assert f"try --url {server.url}" in wrong.stderr
    untrusted = server.cli("admin", "pause", "--url", server.url, "--token", admin)
    assert untrusted.returncode == 2 and "give its certificate with --ca FILE" in untrusted.stderr
    assert server.terminate() == 0


def test_health_checks_and_the_session_limit_per_token(server: ServerProcess) -> None:
    server.config_path.write_text("max_sessions = 2\n")
    token = server.add_bot("solo")
    server.start()
    # On the way out, whatever happened, every bot closes its side (its request iterator ends),
    # so that no gRPC thread is left waiting for one more message.
    with grpc.insecure_channel(f"127.0.0.1:{server.bots_port}") as channel, ExitStack() as done:
        reply = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(), timeout=10
        )
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
        stub = bot_grpc.BotServiceStub(channel)
        hello = bot_pb.PlayRequest(
            hello=bot_pb.Hello(bot_name="solo", token=token, protocol_version=1)
        )
        outboxes: list[queue.SimpleQueue[bot_pb.PlayRequest | None]] = []
        streams = []
        for _ in range(3):
            outbox: queue.SimpleQueue[bot_pb.PlayRequest | None] = queue.SimpleQueue()
            outbox.put(hello)
            done.callback(outbox.put, None)
            outboxes.append(outbox)
            stream = iter(stub.Play(iter(outbox.get, None), timeout=60))
            assert next(stream).HasField("welcome")
            streams.append(stream)
        # The third session took the place of the oldest idle one, which was told so; once it
        # closes its side, as a bot does on a Shutdown, its stream ends with OK.
        first = next(streams[0])
        assert first.shutdown.reason == bot_pb.SHUTDOWN_REASON_REPLACED_BY_NEW_SESSION
        outboxes[0].put(None)
        assert list(streams[0]) == []
        sessions = server.get("/api/lobby")["sessions"]
        assert [s["bot"] for s in sessions] == ["solo", "solo"]
        assert server.get("/api/health")["sessions"] == 2
        with urllib.request.urlopen(server.url + "/healthz", timeout=10) as r:
            assert r.status == 200 and r.read() == b"ok"
        # A drain tells every session why it ends while the bots still hold their side open;
        # each then closes its side, as the SDK does on a Shutdown, and its stream ends with OK.
        # They must answer while the server drains, not after it has exited: the referee waits
        # only a moment for a bot to close first, and the server's stop then cancels whatever
        # stream is left (UNAVAILABLE "Cancelling all calls").
        assert server.proc is not None
        server.proc.send_signal(signal.SIGTERM)
        for stream in streams[1:]:
            told = next(m for m in stream if m.HasField("shutdown"))
            assert told.shutdown.reason == bot_pb.SHUTDOWN_REASON_SERVER_SHUTDOWN
        for outbox in outboxes[1:]:
            outbox.put(None)
        for stream in streams[1:]:
            assert list(stream) == []
        assert server.proc.wait(timeout=STOP_TIMEOUT_S) == 0


def test_fixed_event_plays_its_schedule_and_refuses_outsiders(server: ServerProcess) -> None:
    server.config_path.write_text(
        '[event]\nentrants = ["a", "b", "c", "d"]\nboards = 2\nstart = 2000-01-01T00:00:00Z\n'
    )
    tokens = {name: server.add_bot(name) for name in ("a", "b", "c", "d", "outsider")}
    server.start()
    entrants = [server.bot(name, tokens[name], "low") for name in ("a", "b", "c", "d")]
    outsider = server.bot("outsider", tokens["outsider"], "low")
    assert outsider.wait(timeout=60) == 2
    assert outsider.stderr is not None
    assert b"not entered in the event" in outsider.stderr.read()
    server.wait_for(lambda: server.get("/api/health")["ladder"] == "over")
    lobby = server.get("/api/lobby")
    # Its start as the config wrote it (2000-01-01T00:00:00Z), in seconds since the epoch.
    assert lobby["event"] == {"tables": 8, "done": 8, "start": 946684800.0, "end": None}
    played = server.get("/api/games?limit=100")["games"]
    assert len(played) == 8 and all(g["rated"] for g in played)
    assert len({g["board"] for g in played}) == 2
    # The event over, the bots are told there are no more games, and exit 0.
    assert [bot.wait(timeout=60) for bot in entrants] == [0, 0, 0, 0]
    assert server.terminate() == 0


def told_no_more_games(server: ServerProcess, name: str, token: str) -> None:
    """Connect as bot ``name`` and check that the server says there are no more games."""
    with grpc.insecure_channel(f"127.0.0.1:{server.bots_port}") as channel, ExitStack() as done:
        outbox: queue.SimpleQueue[bot_pb.PlayRequest | None] = queue.SimpleQueue()
        hello = bot_pb.Hello(bot_name=name, token=token, protocol_version=1)
        outbox.put(bot_pb.PlayRequest(hello=hello))
        done.callback(outbox.put, None)  # whatever happens, the bot closes its side
        stream = iter(bot_grpc.BotServiceStub(channel).Play(iter(outbox.get, None), timeout=60))
        assert next(stream).welcome.message == "Hearts Arena event"
        told = next(m for m in stream if m.HasField("shutdown")).shutdown
        assert told.reason == bot_pb.SHUTDOWN_REASON_NO_MORE_GAMES
        assert told.message == "no more games: Hearts Arena event is over"
        outbox.put(None)


def logged(server: ServerProcess, level: str) -> dict[str, dict[str, Any]]:
    """The server log's lines of ``level``, by message (the last of each)."""
    lines = [json.loads(line) for line in server.log.read_text().splitlines()]
    return {line["msg"]: line for line in lines if line.get("level") == level}


def test_an_event_that_cannot_be_played_is_warned_about(server: ServerProcess) -> None:
    server.config_path.write_text(
        '[event]\nentrants = ["a", "b", "C", "zed"]\nboards = 1\n'
        "start = 2020-01-01T00:00:00Z\nend = 2020-01-01T01:00:00Z\n"
    )
    tokens = {name: server.add_bot(name) for name in ("a", "b", "c")}
    server.start()
    assert server.get("/api/health")["ladder"] == "over"
    # An event given no name is not called a ladder: not in the banner, nor to the bots.
    assert server.banner.startswith("serving 'Hearts Arena event': ")
    told_no_more_games(server, "a", tokens["a"])
    assert server.terminate() == 0
    warned = logged(server, "warning")
    missing = next(v for k, v in warned.items() if k.startswith("event entrants without"))
    assert missing["missing"] == ["zed"]
    # 'C' is c's but for the case: sent to `arena bots add C`, which refuses it, it waited on.
    spelled = next(v for k, v in warned.items() if k.startswith("event entrants spelled"))
    assert spelled["entrants"] == {"C": "c"}
    assert "the event's end is already past: no table will start" in warned
    # The warnings' advice can be followed: no table has started, so the mended event replaces
    # the one the database was made with (it was refused as "another competition").
    server.config_path.write_text('[event]\nentrants = ["a", "b", "c", "zed"]\nboards = 1\n')
    server.add_bot("zed")
    server.cli_here("bots", "ban", "b", "--db", str(server.db))
    server.start()
    # Banned before the start, b is at every table: the event is over at once, and said why.
    assert server.get("/api/health")["ladder"] == "over"
    told_no_more_games(server, "a", tokens["a"])
    assert server.terminate() == 0
    warned = logged(server, "warning")
    replaced = warned["the database's competition never started a table: this config replaces it"]
    assert replaced["was"] == 'event.entrants ["a", "b", "C", "zed"], not ["a", "b", "c", "zed"]'
    assert warned[next(k for k in warned if k.startswith("event entrants banned"))]["banned"] == [
        "b"
    ]
    over = logged(server, "info")["event over: bots sent home"]
    assert over["why"] == "every table left seats a banned entrant (b)"


def test_a_database_keeps_its_competition_and_bad_settings_are_one_line(
    server: ServerProcess, tmp_path: Path
) -> None:
    # Started aloud, as `bots add` starts one: a mistyped --db would otherwise run unnoticed.
    starting = server.cli("bots", "add", "p0", "--db", str(server.db))
    assert f"--db {server.db}: no such database yet; starting a new one there" in starting.stderr
    server.play_a_game()
    other = tmp_path / "three.toml"
    other.write_text("players = 3\n")
    refused = server.cli("serve", "--db", str(server.db), "--config", str(other), "--port", "0")
    assert refused.returncode == 2
    # Said in the config's words; never "delete the database": it holds the accounts and games.
    assert refused.stderr == (
        f"arena: error: --db {server.db}: holds another competition (players 4, not 3); a "
        "competition keeps its table size, rules, hands per table, seed and event: set them "
        "back in --config, or give a new --db to start another competition\n"
    )
    other.write_text('[rule]\nmoon = "best"\n[event]\nentrants = ["a", "b", "c", "d"]\n')
    refused = server.cli("serve", "--db", str(server.db), "--config", str(other), "--port", "0")
    assert refused.returncode == 2
    assert (
        "holds another competition (a ladder, not an [event]; [rule] moon 'add', not 'best'); "
        in refused.stderr
    ), refused.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text("players = 9\n")
    refused = server.cli("serve", "--db", str(server.db), "--config", str(bad))
    assert refused.returncode == 2
    assert refused.stderr.strip().count("\n") == 0 and "players = 9" in refused.stderr


def test_a_missing_database_is_refused_or_started_aloud(tmp_path: Path) -> None:
    typo = tmp_path / "typo.db"
    commands = (("bots", "list"), ("bots", "ban", "x"), ("bots", "revoke", "x"))
    for refused in ServerProcess.clis(*((*command, "--db", str(typo)) for command in commands)):
        assert refused.returncode == 2 and "no such database" in refused.stderr
    assert not typo.exists()
    added = ServerProcess.cli("bots", "add", "x", "--db", str(typo))
    assert added.returncode == 0 and "starting a new one there" in added.stderr
    assert "x" in ServerProcess.cli("bots", "list", "--db", str(typo), "--json").stdout
    again = ServerProcess.cli("bots", "add", "y", "--db", str(typo))
    assert again.returncode == 0 and "new one" not in again.stderr
    other = tmp_path / "other.db"
    admin = ServerProcess.cli("admin", "token", "--db", str(other))
    assert admin.returncode == 0 and f"--db {other}: no such database yet" in admin.stderr
    assert admin.stdout.strip() and admin.stdout.strip() not in admin.stderr  # token: stdout only
    # Another program's database is refused as it is, not given the competition's tables.
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE notes (body TEXT)")
    db.close()
    before = foreign.read_bytes()
    for command in (("bots", "add", "x"), ("admin", "token")):
        refused = ServerProcess.cli(*command, "--db", str(foreign))
        assert refused.returncode == 2 and refused.stderr == (
            f"arena: error: {foreign}: not a Hearts Arena database (it holds other tables: notes)\n"
        )
    assert foreign.read_bytes() == before


def test_a_malformed_admin_url_is_one_line_and_nothing_is_sent() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        urls = (
            ("notaurl", "not a URL"),
            (
                f"127.0.0.1:{port}",
                f"no http:// or https:// in front (e.g. http://127.0.0.1:{port})",
            ),
            ("http://127.0.0.1:notaport", "port 'notaport' is not a number from 1 to 65535"),
            (f"ftp://127.0.0.1:{port}", "ftp:// is not http:// or https://"),
            # The admin path is added to the address: a path of its own would be sent doubled.
            (f"http://127.0.0.1:{port}/api", "the address takes no path (/api)"),
        )
        runs = ServerProcess.clis(
            *(("admin", "pause", "--url", url, "--token", "t") for url, _ in urls)
        )
        for done, (url, says) in zip(runs, urls, strict=True):
            assert done.returncode == 2, done.stderr
            assert done.stderr.strip().count("\n") == 0 and "Traceback" not in done.stderr
            assert done.stderr.startswith(f"arena: error: --url {url}: {says}; ")
            assert "give the leaderboard's address as http://HOST:PORT" in done.stderr
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()  # no connection was tried


def pause_at_a_referee(
    config: RefereeConfig, scheme: str, *flags: str
) -> tuple[str, subprocess.CompletedProcess[str]]:
    """``arena admin pause`` at a bare referee's bots' port (``scheme``://): the URL, the run."""
    referee = RefereeThread(config, TokenAccounts())
    port = referee.start("127.0.0.1:0")
    try:
        url = f"{scheme}://127.0.0.1:{port}"
        return url, ServerProcess.cli("admin", "pause", "--url", url, "--token", "t", *flags)
    finally:
        referee.stop(0)


@pytest.mark.parametrize(
    ("scheme", "says"),
    [
        # http.client.BadStatusLine came out as a traceback, exit 1.
        ("http", "did not answer in HTTP"),
        # It said "did not speak TLS ...: try --url http://" the same port, refused again.
        ("https", "speaks gRPC without TLS, not HTTPS"),
    ],
)
def test_an_admin_url_at_the_bots_grpc_port_is_one_line(scheme: str, says: str) -> None:
    # The bots' port (50051) for the page's (8080).
    url, done = pause_at_a_referee(RefereeConfig(), scheme)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"arena: error: the server at {url} {says}: if that is the bots' port (--port), give the "
        "leaderboard's port (--web-port) instead, as http://HOST:PORT (https:// if the server "
        "was started with --tls-cert)\n"
    )


def test_an_admin_url_urlsplit_lets_through_is_refused_before_anything_is_sent() -> None:
    # An unclosed bracket was a traceback (ValueError, exit 1); an empty ? or # took the admin
    # path into it, so that POST / was sent and answered 405; a user@ was looked up as part of
    # the host name ("Name or service not known"); and of "8080:1" the port named was "1".
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        urls = (
            (f"http://[::1:{port}", "an IPv6 address goes in brackets, with the port after them"),
            (f"http://::1:{port}", "an IPv6 address goes in brackets: http://[::1]:8080"),
            (f"http://[nope]:{port}", "[nope] is not an IPv6 address"),
            (f"http://127.0.0.1:{port}#", "the address takes no ?query or #fragment"),
            (f"http://127.0.0.1:{port}/?", "the address takes no ?query or #fragment"),
            (f"http://admin@127.0.0.1:{port}", "the address takes no user@ part"),
            (f"http://127.0.0.1:{port}:1", f"port '{port}:1' is not a number from 1 to 65535"),
            ("http://127.0.0.1:", "no port after the ':'"),
        )
        runs = ServerProcess.clis(
            *(("admin", "pause", "--url", url, "--token", "t") for url, _ in urls)
        )
        for done, (url, says) in zip(runs, urls, strict=True):
            assert done.returncode == 2, done.stderr
            assert done.stderr.strip().count("\n") == 0 and "Traceback" not in done.stderr
            assert done.stderr.startswith(f"arena: error: --url {url}: {says}"), done.stderr
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()  # no connection was tried


def test_an_https_admin_url_at_the_bots_tls_port_is_one_line(tmp_path: Path) -> None:
    # TLS is spoken there and the certificate trusted, but gRPC hangs up on HTTP/1.1, in the
    # handshake or just after it: that said "did not speak TLS ... try --url http://..." or
    # "cannot reach the server ...: Remote end closed connection without response".
    cert, key = self_signed(tmp_path)
    config = RefereeConfig(tls=TlsConfig.from_files(cert, key))
    url, done = pause_at_a_referee(config, "https", "--ca", str(cert))
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"arena: error: the server at {url} speaks gRPC, not HTTP/1.1: if that is the bots' "
        "port (--port), give the leaderboard's port (--web-port) instead, as "
        "http://HOST:PORT (https:// if the server was started with --tls-cert)\n"
    )


def test_a_bad_host_a_batch_database_or_a_bad_event_is_one_line(tmp_path: Path) -> None:
    db = tmp_path / "comp.db"
    ports = ("--port", "0", "--web-port", "0")
    for host, says in (
        ("999.1.1.1", "--host 999.1.1.1: not an address or name this machine can resolve"),
        ("192.0.2.1", "--host 192.0.2.1: not an address of this machine"),  # TEST-NET-1
        # It read "--host : not an address or name this machine can resolve".
        ("", "--host '': no address was given; give one of this machine's addresses"),
    ):
        done = ServerProcess.cli("serve", "--db", str(db), "--host", host, *ports)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(f"arena: error: {says}") and done.stderr.count("\n") == 1
        assert not db.exists()
    batch = tmp_path / "batch.db"
    config = build_config(bots=["a=true", "b=true", "c=true", "d=true"], db=batch)
    with Store.open(batch) as store:
        store.claim(config.run_id, "batch", config.identity(), 40)
    done = ServerProcess.cli("serve", "--db", str(batch), *ports)
    assert done.returncode == 2 and done.stderr == (
        f"arena: error: --db {batch}: holds a batch run (arena run), not a competition; give "
        "the competition's database, or a new file to start one\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("batch")) == [
        "batch.db"
    ]  # as it was: no side file left by the look
    entrants = 'entrants = ["alice", "bob", "carol", "dave"]\n'
    for event, says in (
        (entrants + 'candidate = "alice"\n', "event.candidate = 'alice' only makes sense with"),
        ('entrants = ["a b", "bob", "carol", "dave"]\n', "event.entrants: bot name 'a b' has ' '"),
        (entrants + "[rule]\nplayers = 3\n", "set the table size with players = K"),
    ):
        toml = tmp_path / "event.toml"
        toml.write_text("[event]\n" + event)
        done = ServerProcess.cli("serve", "--db", str(db), "--config", str(toml), *ports)
        assert done.returncode == 2 and says in done.stderr, done.stderr
        assert done.stderr.count("\n") == 1 and not db.exists()


def test_admin_with_a_bad_ca_file_is_one_line(tmp_path: Path) -> None:
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate")
    cas = ((tmp_path / "none.pem", "no such file"), (junk, "not a PEM certificate"))
    runs = ServerProcess.clis(
        *(
            ("admin", "resume", "--url", "https://127.0.0.1:9", "--ca", str(ca), "--token", "t")
            for ca, _ in cas
        )
    )
    for done, (_, says) in zip(runs, cas, strict=True):
        assert done.returncode == 2 and says in done.stderr, done.stderr
        assert done.stderr.strip().count("\n") == 0


def test_a_bad_certificate_is_one_line_and_makes_no_database(tmp_path: Path) -> None:
    junk, db = tmp_path / "junk.pem", tmp_path / "x.db"
    junk.write_text("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
    flags = ("--port", "0", "--web-port", "0", "--tls-cert", str(junk), "--tls-key", str(junk))
    done = ServerProcess.cli("serve", "--db", str(db), *flags)
    assert done.returncode == 2, done.stderr
    assert f"TLS: {junk} holds no readable PEM certificate" in done.stderr
    assert done.stderr.strip().count("\n") == 0 and not db.exists()


def test_a_missing_certificate_or_key_is_one_line_naming_its_flag(tmp_path: Path) -> None:
    # It said "TLS: cannot read none.pem: No such file or directory": neither the flag nor what
    # the file should hold.
    cert, key = self_signed(tmp_path)
    db, missing = tmp_path / "x.db", tmp_path / "none.pem"
    ports = ("--port", "0", "--web-port", "0")
    cases = (
        (
            ("--tls-cert", str(missing), "--tls-key", str(key)),
            f"--tls-cert {missing}: no such file; give the server's certificate chain (a PEM file)",
        ),
        (
            ("--tls-cert", str(cert), "--tls-key", str(tmp_path)),
            f"--tls-key {tmp_path}: is a folder; give the server's private key (a PEM file)",
        ),
    )
    runs = ServerProcess.clis(*(("serve", "--db", str(db), *ports, *flags) for flags, _ in cases))
    for done, (_, says) in zip(runs, cases, strict=True):
        assert done.returncode == 2 and done.stderr == f"arena: error: {says}\n", done.stderr
    assert not db.exists()


def test_a_log_that_is_the_database_or_a_certificate_is_refused(tmp_path: Path) -> None:
    # `--db c.db --log c.db` served on: the log's lines appended to the database file, which
    # SQLite then wrote over (the log lost, text in the database).
    cert, key = self_signed(tmp_path)
    db = tmp_path / "c.db"
    ports = ("--port", "0", "--web-port", "0", "--tls-cert", str(cert), "--tls-key", str(key))
    settings = tmp_path / "comp.toml"
    settings.write_text('name = "c"\n')
    cases = (
        (str(db), f"--log {db}: is the --db {db} (or SQLite's file beside it)"),
        (f"{db}-wal", f"--log {db}-wal: is the --db {db} (or SQLite's file beside it)"),
        # Its lock file: another start read the log's lines as the running server's pid.
        (f"{db}.lock", f"--log {db}.lock: is the --db {db} (or SQLite's file beside it)"),
        (str(key), f"--log {key}: is the --tls-key file"),
        # The settings, which the next start could not read.
        (str(settings), f"--log {settings}: is the --config file"),
    )
    before = key.read_bytes()
    runs = ServerProcess.clis(
        *(
            ("serve", "--db", str(db), *ports, "--config", str(settings), "--log", log)
            for log, _ in cases
        )
    )
    for done, (_, says) in zip(runs, cases, strict=True):
        assert done.returncode == 2, done.stderr
        assert done.stderr == f"arena: error: {says}; give the log a file of its own\n"
    assert not db.exists() and key.read_bytes() == before
    assert settings.read_text() == 'name = "c"\n'


def test_a_busy_port_or_database_is_one_line(server: ServerProcess) -> None:
    server.start()
    try:
        refusals = (
            (
                ("--port", str(server.bots_port), "--web-port", "0"),
                "already in use); pick another port",
            ),
            (
                ("--port", "0", "--web-port", str(server.web_port)),
                "already in use); pick another port",
            ),
            (("--port", "-5"), "--port -5: a port is 0 (any free one) to 65535"),
            (("--web-port", "70000"), "--web-port 70000: a port is 0"),
            (("--port", "0", "--web-port", "0"), "another arena serve (pid"),
            (("--log", "/no/such/folder/log.jsonl"), "--log /no/such/folder/log.jsonl: No such"),
        )
        # All at once: the running server holds its ports and database throughout.
        runs = server.clis(*(("serve", "--db", str(server.db), *flags) for flags, _ in refusals))
        for refused, (_, says) in zip(runs, refusals, strict=True):
            assert refused.returncode == 2, refused.stderr
            assert says in refused.stderr and refused.stderr.strip().count("\n") == 0
    finally:
        assert server.terminate() == 0


def test_a_database_named_with_url_characters_is_served_and_fitted(tmp_path: Path) -> None:
    # '#', '?' and '%' mean something in the file: URI the page and the fit read through; a name
    # holding them opened another file (an empty 'comp ' beside it: every game page a 500, the fit
    # never done) or none at all (a traceback that left the lock behind).
    server = ServerProcess(tmp_path / "comp #1 %41?.db", 'fit_interval = "100ms"\n')
    try:
        tokens = {name: server.add_bot(name) for name in "abcd"}
        server.start()
        for name in "abcd":
            server.bot(name, tokens[name], "low")
        server.wait_for(lambda: server.get("/api/standings")["fit"]["results"] >= 2)
        (newest, *_) = server.get("/api/games?limit=5")["games"]
        assert server.get(f"/api/games/{newest['game']}")["game"] == newest["game"]
        assert server.terminate() == 0
    finally:
        server.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "comp #1 %41?.db",
        "comp #1 %41?.log",
        "comp #1 %41?.toml",
    ]


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _has_ipv6_loopback(), reason="this machine has no IPv6 loopback (::1)")
@pytest.mark.parametrize(("host", "reach"), [("::1", "[::1]"), ("::", "127.0.0.1")])
def test_an_ipv6_host_serves_bots_and_the_page(tmp_path: Path, host: str, reach: str) -> None:
    # '::1' was handed to gRPC unbracketed ('::1:0': host ::0.1.0.0) and the server did not
    # start; under '::' (every address) the page took IPv6 clients alone, so the address the
    # banner gives (127.0.0.1) did not answer while the bots' port did.
    server = ServerProcess(tmp_path / "comp.db", 'fit_interval = "100ms"\n')
    try:
        tokens = {name: server.add_bot(name) for name in "abcd"}
        server.start("--host", host)
        shown = "127.0.0.1" if host == "::" else "[::1]"
        assert f"bots connect to {shown}:" in server.banner
        assert f"leaderboard at http://{shown}:" in server.banner
        server.host = reach
        for name in "abcd":
            server.bot(name, tokens[name], "low")
        with urllib.request.urlopen(f"{server.url}/healthz", timeout=30) as answer:
            assert answer.read() == b"ok"
        server.wait_for(lambda: games(server) >= 2)
        assert server.terminate() == 0
    finally:
        server.close()


def test_an_admin_ban_without_a_reason_keeps_the_earlier_one(server: ServerProcess) -> None:
    # As `arena bots ban` does: a second ban, or one made twice by two organisers, said
    # "banned by the organiser" over the reason the first gave.
    server.add_bot("a")
    admin = server.admin_token()
    server.start()
    base = ["--url", server.url, "--token", admin]

    def note() -> str:
        listed = server.cli("bots", "list", "--db", str(server.db), "--json")
        (account,) = json.loads(listed.stdout)
        return str(account["note"])

    assert server.cli("admin", "ban", "a", "--reason", "plays too slowly", *base).returncode == 0
    assert server.cli("admin", "ban", "a", *base).returncode == 0
    assert note() == "plays too slowly"
    assert server.cli("admin", "unban", "a", *base).returncode == 0
    assert server.cli("admin", "ban", "a", "--reason", "again", *base).returncode == 0
    assert note() == "again"
    assert server.terminate() == 0


@pytest.mark.parametrize(
    ("config", "says"),
    [
        # gRPC's limit overflowed its C int: a traceback.
        ("max_message_bytes = 1000000000000\n", "max_message_bytes = 1000000000000; give 1024"),
        # The schedule of a billion boards was being made in memory: the start hung.
        ('players = 3\n[event]\nentrants = ["a", "b", "c"]\nboards = 1000000000\n', "boards"),
    ],
)
def test_a_huge_setting_is_one_line_not_a_traceback_or_a_hang(
    tmp_path: Path, config: str, says: str
) -> None:
    refusal = refused_config(tmp_path, config)
    assert refusal.startswith("arena: error: server config: ") and says in refusal


def refused_config(tmp_path: Path, config: str) -> str:
    """What `arena serve` says on refusing ``config`` (asserted one line, exit 2, no database)."""
    toml = tmp_path / "comp.toml"
    toml.write_text(config)
    db = tmp_path / "comp.db"
    flags = ("--port", "0", "--web-port", "0", "--config", str(toml))
    done = ServerProcess.cli("serve", "--db", str(db), *flags, timeout=30)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert not db.exists()
    return done.stderr


@pytest.mark.parametrize(
    ("config", "says"),
    [
        # -1 is not "a random ladder" here but one more fixed one: refused, as by `arena run`.
        ("seed = -1\n", "seed = -1; give a whole number from 0 to 9223372036854775807"),
        ("seed = 9223372036854775808\n", "seed = 9223372036854775808; give a whole number"),
        ('hands = "3"\n', "hands = '3'; expected a whole number, not a string"),
        # The rules read text (as --rule gives it): these were taken as 13 and true.
        ('[rule]\nqueen_penalty = "13"\n', "[rule] queen_penalty = '13': expected a whole number"),
        ('[rule]\nkitty = "yes"\n', "[rule] kitty = 'yes': expected true or false"),
        (
            '[event]\nentrants = ["a", "b", "c", "d"]\nboards = "2"\n',
            "event.boards = '2'; expected a whole number, not a string",
        ),
        # Said as the file spells the value, not as Python does ("True", "datetime.time(18, 0)").
        ("players = true\n", "players = true; expected a whole number"),
        ("name = false\n", 'name = false; give the competition a name in quotes (name = "'),
        # Sent in every Welcome: 4.5 MB of name made each too large for the SDK to read, and
        # no bot could ever connect; a control character retitled the bot authors' terminals.
        ('name = "' + "N" * 201 + '"\n', "name is 201 characters long; give one of at most 200"),
        ('name = "Ladder \\u001b]0;x\\u0007"\n', "name holds \\x1b, a control character"),
        (
            '[event]\nentrants = ["a", "b", "c", "d"]\nstart = 18:00:00\n',
            "event.start = 18:00:00; write a date-time like",
        ),
        (
            '[event]\nentrants = ["a", "b", "c", "d"]\nformat = true\n',
            "event.format = true; choose round-robin or gauntlet",
        ),
        # A date in quotes, as a bare one (start = 2027-06-01) is: it was taken as midnight UTC.
        (
            '[event]\nentrants = ["a", "b", "c", "d"]\nstart = "2027-06-01"\n',
            "event.start = '2027-06-01'; write a date-time like",
        ),
    ],
)
def test_a_setting_of_another_toml_type_or_a_bad_seed_is_one_line(
    tmp_path: Path, config: str, says: str
) -> None:
    refusal = refused_config(tmp_path, config)
    assert refusal.startswith(f"arena: error: server config: {says}"), refusal


def test_a_name_may_hold_any_text_but_control_characters() -> None:
    # The refusal of control characters took in every character str.isprintable() refuses:
    # the ideographic space of a CJK title, a no-break space, an emoji sequence's joiner.
    for name in ("春季\u3000杯", "Team\u00a0A", "👨\u200d👩\u200d👧 league", "x" * 200):
        assert server_config_from_dict({"name": name}).name == name
    for bad in ("a\x9bb", "a\tb", "a\u2028b"):
        with pytest.raises(ConfigError, match=r"a control character"):
            server_config_from_dict({"name": bad})


def test_one_port_for_bots_and_page_is_refused_before_anything_starts(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])
    db = tmp_path / "comp.db"
    done = ServerProcess.cli("serve", "--db", str(db), "--port", port, "--web-port", port)
    assert done.returncode == 2 and done.stderr == (
        f"arena: error: --web-port {port}: the same port as --port; give the page a port of its "
        "own (0: any free one)\n"
    )
    assert not db.exists()


def test_accounts_are_not_added_to_a_batch_database(tmp_path: Path) -> None:
    # `arena bots add x --db arena.db` (the batch's, for comp.db) added an account that no
    # server could use (arena serve refuses that database) and changed the batch's file.
    batch = tmp_path / "arena.db"
    config = build_config(bots=["a=true", "b=true", "c=true", "d=true"], db=batch)
    with Store.open(batch) as store:
        store.claim(config.run_id, "batch", config.identity(), 40)
    for command in (("bots", "add", "x"), ("bots", "list"), ("admin", "token")):
        done = ServerProcess.cli(*command, "--db", str(batch))
        assert done.returncode == 2 and done.stderr == (
            f"arena: error: --db {batch}: holds a batch run (arena run), not a competition; "
            "give the competition's database, or a new file to start one\n"
        ), done.stderr
        assert done.stdout == ""
    with sqlite3.connect(batch) as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    db.close()
    assert not any(name.startswith("server_") for name in tables)


def test_a_second_ctrl_c_while_the_server_closes_still_exits_0(server: ServerProcess) -> None:
    # An operator presses Ctrl-C twice. With no table to hurry, the second came while the
    # server was closing its workers, after it had given up its signal handlers: the process
    # died with KeyboardInterrupt (exit 130) and its fit worker's traceback from a spawn it broke.
    server.start()
    assert server.proc is not None
    server.proc.send_signal(signal.SIGINT)
    server.wait_for(lambda: "referee stopped" in server.log.read_text())
    if server.proc.poll() is None:  # still closing, as it is for some time after the referee
        server.proc.send_signal(signal.SIGINT)
    code = server.proc.wait(timeout=STOP_TIMEOUT_S)
    errors = server.proc.communicate()[1]
    assert code == 0, errors + server.log.read_text()
    assert "Traceback" not in errors + server.log.read_text()
    assert '"msg":"stopped"' in server.log.read_text()


def test_a_bot_banned_in_the_middle_of_a_game_forfeits_it_at_once(server: ServerProcess) -> None:
    # It was left to the grace period: the fallback played its moves as one absence, and a game
    # shorter than the grace ended "normal" for a bot that could never come back to it.
    server.config_path.write_text(CONFIG + 'grace = "60s"\n')
    tokens = {name: server.add_bot(name) for name in ("a", "b", "c", "d")}
    admin = server.admin_token()
    server.start()
    for name in ("a", "b", "c"):
        server.bot(name, tokens[name], "low")
    # Every decision 1 s: a game of 14 s or more, longer than `admin ban` takes to start
    # on a loaded machine (at 0.2 s a decision, CI saw the game end first, "normal").
    slow = server.bot("d", tokens["d"], "slow", "1", "1")
    server.wait_for(lambda: bool(server.get("/api/lobby")["tables"]))
    (table,) = server.get("/api/lobby")["tables"]
    base = ["--url", server.url, "--token", admin]
    # The reason is the organiser's free text, which reaches the bot's terminal and every
    # `arena replay` of the game: a title-setting sequence and a line break in it went there raw.
    reason = "testing \x1b]0;bans\x07\nbans"
    banned = server.cli("admin", "ban", "d", "--reason", reason, *base)
    assert banned.returncode == 0, banned.stderr
    server.wait_for(lambda: games(server) >= 1, timeout_s=30)  # not the 60 s grace
    with sqlite3.connect(server.db) as db:
        status, faults, record = db.execute(
            "SELECT s.status, s.faults, g.record FROM seats s JOIN games g USING (run_id, game)"
            " WHERE g.table_id = ? AND s.bot = 'd'",
            (table["table_id"],),
        ).fetchone()
    assert (status, faults) == ("disconnect", 1)
    (fault,) = json.loads(record)["faults"]
    assert fault["detail"] == f"its bot was removed for good ({reason}): the seat is forfeited"
    shown = "testing \\x1b]0;bans\\x07\\nbans"
    assert slow.wait(timeout=60) == 1  # removed for good: the SDK exits 1, one line
    assert slow.stderr is not None
    told = slow.stderr.read().decode()
    assert shown in told and "\x1b" not in told and "\x07" not in told, told
    # Nor does its line break start a line (one that could pass for a log line of the SDK's).
    assert not any(line.startswith("bans") for line in told.splitlines()), told
    replayed = subprocess.run(
        [*ARENA, "replay", table["table_id"], "--db", str(server.db)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert replayed.returncode == 0, replayed.stderr
    lines = [line for line in replayed.stdout.splitlines() if "removed for good" in line]
    assert len(lines) == 2, replayed.stdout  # its FAULT line and the game's "ended:" line
    assert all(f"removed for good ({shown})" in line for line in lines), replayed.stdout
    assert "\x1b" not in replayed.stdout and "\x07" not in replayed.stdout
    assert server.terminate() == 0


def test_a_second_signal_interrupts_the_tables_and_the_drained_line_counts_them(
    server: ServerProcess,
) -> None:
    # The drained line said "interrupting": 0 after a second SIGTERM: the tables it had just
    # interrupted were no longer running when the drain returned.
    server.config_path.write_text(CONFIG + 'drain = "60s"\n')
    tokens = {name: server.add_bot(name) for name in ("a", "b", "c", "d")}
    server.start()
    for name in ("a", "b", "c"):
        server.bot(name, tokens[name], "low")
    server.bot("d", tokens["d"], "slow", "1", "0.2")  # every decision 0.2 s: a long game
    server.wait_for(lambda: bool(server.get("/api/lobby")["tables"]))
    assert server.proc is not None
    server.proc.send_signal(signal.SIGTERM)
    server.wait_for(lambda: '"msg":"draining"' in server.log.read_text())
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(timeout=STOP_TIMEOUT_S) == 0
    lines = [json.loads(line) for line in server.log.read_text().splitlines()]
    (drained,) = [line for line in lines if line["msg"] == "drained"]
    assert drained["interrupting"] == 1, drained
    with sqlite3.connect(server.db) as db:
        ends = [row[0] for row in db.execute("SELECT termination FROM games")]
    db.close()
    assert ends == ["interrupted"]
