"""``arena serve`` and ``arena admin`` as a newcomer meets them, run for real: a database that
holds another competition said in the config file's own words, a log that cannot be written or
whose pipe's reader goes while the server is idle, and the admin commands' one line when the
address is wrong (no server, another HTTP server, a TLS server's ports given as http://)."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import re
import signal
import socket
import struct
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from make_certs import self_signed
from test_server_support import ARENA, PORTS, REPO, ServerProcess, serve_piped

EXIT_WAIT_S = 120.0
"""How long a command or a stopping server may take (a deadline only against a hang)."""


def arena(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``arena ARGS`` to completion."""
    return subprocess.run(
        [*ARENA, *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=EXIT_WAIT_S,
        check=False,
    )


def one_error(done: subprocess.CompletedProcess[str], code: int = 2) -> str:
    """The one ``arena: error:`` line a refused command printed (asserting there is only it)."""
    assert done.returncode == code, (done.returncode, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("arena: error: "), done.stderr
    assert "Traceback" not in done.stderr and "Errno" not in done.stderr, done.stderr
    return lines[0]


def test_a_database_of_whole_games_is_refused_in_the_config_files_words(tmp_path: Path) -> None:
    # The identity keeps whole games as `hands` null with the target among the rules: a
    # database made with game_to = 100 said "hands null, not 1" to a config without it, and
    # "[rule] target 100, not 200" to game_to = 200, words no config file has.
    db = tmp_path / "comp.db"
    server = ServerProcess(db, "game_to = 100\n")
    try:
        server.play_a_game()
    finally:
        server.close()
    configs = {
        "hands.toml": "hands = 1\n",
        "longer.toml": "game_to = 200\n",
        "moon.toml": "game_to = 100\n[rule]\nmoon_points = 20\n",
    }
    for name, text in configs.items():
        (tmp_path / name).write_text(text)
    # One after another: each takes the database's lock to read its identity, so run at once
    # one could find another's lock and say so instead (seen once in a full-suite run).
    refused = [
        ServerProcess.cli("serve", "--db", str(db), *PORTS, "--config", str(tmp_path / n))
        for n in configs
    ]
    said = [one_error(done) for done in refused]
    assert "holds another competition (game_to = 100, not hands = 1);" in said[0]
    assert "holds another competition (game_to = 100, not game_to = 200);" in said[1]
    # TOML has no null: a key the file left out is "unset".
    assert "holds another competition ([rule] moon_points unset, not 20);" in said[2]
    assert all("null" not in line for line in said), said


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_log_that_cannot_be_written_stops_the_server_in_one_line(tmp_path: Path) -> None:
    # `--log` on a full disk: logging printed its own "--- Logging error ---" traceback on
    # standard error for every line, and the server served on with no log.
    db = tmp_path / "comp.db"
    ServerProcess.cli_here("bots", "add", "alice", "--db", str(db))
    done = arena("serve", "--db", str(db), *PORTS, "--log", "/dev/full")
    assert "Logging error" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [
        "arena: error: --log /dev/full: cannot write the log (No space left on device), so the "
        "server stopped; free some space or give --log a file where there is room"
    ]


def test_an_idle_server_notices_its_log_pipe_closed(tmp_path: Path) -> None:
    # `arena serve 2>&1 >banner.txt | head -2`: with no bot and no admin action there was
    # nothing more to log, so the closed pipe went unnoticed and the server served on, unlogged,
    # for good. It now looks at the pipe itself and stops as on SIGTERM, exit 141.
    db = tmp_path / "comp.db"
    ServerProcess.cli_here("bots", "add", "alice", "--db", str(db))  # no "starting" notice
    proc = serve_piped(db)
    try:
        assert proc.stdout is not None and proc.stderr is not None
        banner = proc.stdout.readline()
        assert "leaderboard at http://127.0.0.1:" in banner, banner
        proc.stderr.close()  # the log's reader goes; nothing else happens
        assert proc.wait(timeout=EXIT_WAIT_S) == 141
        assert proc.stdout.read() == ""
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=EXIT_WAIT_S)
        assert proc.stdout is not None
        proc.stdout.close()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("comp.db")) == ["comp.db"]


def test_a_new_databases_notice_is_a_line_of_the_json_log(tmp_path: Path) -> None:
    # `arena serve --db new.db 2>&1 >banner.txt | jq`: the notice was a plain line among the
    # JSON ones, and jq's exit on it stopped the server (its log's reader gone).
    db = tmp_path / "new.db"
    proc = serve_piped(db)
    try:
        assert proc.stdout is not None and proc.stderr is not None
        assert "leaderboard at http://127.0.0.1:" in proc.stdout.readline()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=EXIT_WAIT_S) == 0
        lines = [json.loads(line) for line in proc.stderr.read().splitlines()]
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=EXIT_WAIT_S)
    notice = f"--db {db}: no such database yet; starting a new one there"
    (said,) = [line for line in lines if line["msg"] == notice]
    assert (said["level"], said["db"]) == ("info", str(db))
    msgs = [line["msg"] for line in lines]
    assert msgs.index(notice) < msgs.index("stopped"), msgs


def test_clients_that_reset_their_connection_leave_the_json_log_whole(tmp_path: Path) -> None:
    # A client that sent a request and reset its connection (SO_LINGER 0) before reading the
    # answer, as load balancers' health checks do, put a 50-line traceback on stderr ("Unhandled
    # exception in client_connected_cb": uvloop's errors for the gone connection) among the
    # JSON lines.
    proc = serve_piped(tmp_path / "comp.db")
    try:
        assert proc.stdout is not None and proc.stderr is not None
        banner = proc.stdout.readline()
        web = int(re.search(r"leaderboard at http://127\.0\.0\.1:(\d+)/", banner)[1])  # type: ignore[index]
        for _ in range(10):
            with socket.create_connection(("127.0.0.1", web), timeout=30) as client:
                client.sendall(b"GET /api/games?limit=500 HTTP/1.1\r\nHost: x\r\n\r\n")
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            time.sleep(0.05)  # each reset as the server answers, not all before it reads one
        with urllib.request.urlopen(f"http://127.0.0.1:{web}/api/health", timeout=30) as answer:
            assert answer.status == 200  # and the page serves on
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=EXIT_WAIT_S) == 0
        logged = proc.stderr.read().splitlines()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=EXIT_WAIT_S)
    assert [line for line in logged if not line.startswith("{")] == [], logged
    assert [json.loads(line)["level"] for line in logged].count("error") == 0, logged


def free_port() -> int:
    """A loopback port nothing listens on (bound by the system, then let go)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_admin_with_no_server_running_says_what_to_check() -> None:
    # It said only "cannot reach the server at http://127.0.0.1:8080: [Errno 111] Connection
    # refused", with nothing on what to do.
    url = f"http://127.0.0.1:{free_port()}"
    # Exit 1: nothing answers there, which trying again later may mend (the server starting).
    line = one_error(arena("admin", "pause", "--url", url, "--token", "x"), code=1)
    assert line == (
        f"arena: error: cannot reach the server at {url} (Connection refused): is arena serve "
        'running there? give --url the address it printed after "leaderboard at" (its '
        "--web-port)"
    )


class _NotArena(http.server.BaseHTTPRequestHandler):
    """Another HTTP server: 404 with an empty body for everything."""

    def do_POST(self) -> None:
        """Answer 404, empty."""
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


@pytest.fixture
def not_arena() -> Iterator[str]:
    """The address of an HTTP server on loopback that is not arena serve."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotArena)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=EXIT_WAIT_S)


def test_admin_at_another_http_server_says_it_is_not_arena(not_arena: str) -> None:
    # It said "arena: error: pause: 404 " and no more.
    line = one_error(arena("admin", "pause", "--url", not_arena, "--token", "x"))
    assert line == (
        f"arena: error: pause: the server at {not_arena} answered 404 Not Found, not as arena "
        'serve does: give --url the address it printed after "leaderboard at" (its --web-port)'
    )


def test_http_urls_for_a_tls_servers_ports_say_which_port_it_is(tmp_path: Path) -> None:
    # http:// to the bots' port of a TLS server said "if it was started with --tls-cert, try
    # https://", which then said it was the bots' port; http:// to its leaderboard said "if".
    cert = self_signed(tmp_path, "server")
    server = ServerProcess(tmp_path / "comp.db")
    try:
        token = server.admin_token()
        server.start("--tls-cert", str(cert), "--tls-key", str(cert.with_suffix(".key")))
        bots = f"http://127.0.0.1:{server.bots_port}"
        web = f"http://127.0.0.1:{server.web_port}"
        refused = ServerProcess.clis(
            ("admin", "pause", "--url", bots, "--token", token),
            ("admin", "pause", "--url", web, "--token", token),
        )
        said = [one_error(done) for done in refused]
        assert said[0].startswith(
            f"arena: error: the server at {bots} speaks gRPC over TLS, not HTTP/1.1: that is "
            "the bots' port (--port); give the leaderboard's port (--web-port) instead"
        ), said[0]
        assert said[1] == (
            f"arena: error: the server at {web} speaks TLS (it was started with --tls-cert): "
            f"try --url https://127.0.0.1:{server.web_port}"
        )
        assert server.terminate() == 0, server.errors
    finally:
        server.close()


def test_a_tls_certificate_that_is_no_regular_file_is_not_called_missing(tmp_path: Path) -> None:
    # /dev/null exists: "--tls-cert /dev/null: no such file" sent the reader looking for a typo.
    key = tmp_path / "server.key"
    key.write_text("not used\n")
    line = one_error(
        arena(
            "serve",
            "--db",
            str(tmp_path / "comp.db"),
            *PORTS,
            "--tls-cert",
            os.devnull,
            "--tls-key",
            str(key),
        )
    )
    assert line == (
        f"arena: error: --tls-cert {os.devnull}: not a regular file; give the server's "
        "certificate chain (a PEM file)"
    )
    assert not (tmp_path / "comp.db").exists()


def test_sigterm_of_an_idle_server_still_exits_zero(tmp_path: Path) -> None:
    # The log pipe is looked at once a second: a server stopped by SIGTERM must stop as before,
    # its log still read to the end (the watch must not take a live pipe for a closed one).
    db = tmp_path / "comp.db"
    ServerProcess.cli_here("bots", "add", "alice", "--db", str(db))
    proc = serve_piped(db)
    try:
        assert proc.stdout is not None
        assert "leaderboard at" in proc.stdout.readline()
        proc.send_signal(signal.SIGTERM)
        _, log = proc.communicate(timeout=EXIT_WAIT_S)
        assert proc.returncode == 0, log
        assert log.splitlines()[-1].endswith('"msg":"stopped"}'), log
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=EXIT_WAIT_S)


def full_pipe() -> tuple[int, int]:
    """A pipe whose buffer is already full: the next write to it blocks until it is read."""
    read, write = os.pipe()
    os.set_blocking(write, False)
    with contextlib.suppress(BlockingIOError):
        while True:
            os.write(write, b"\n" * 4096)
    os.set_blocking(write, True)
    return read, write


def blocked_writing(pid: int) -> bool:
    """Whether the process's main thread waits in a write to a full pipe (Linux /proc)."""
    try:
        return "pipe_write" in Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/wchan").exists(), reason="needs Linux /proc wchan")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_signal_during_the_start_stops_it_cleanly(tmp_path: Path, sig: signal.Signals) -> None:
    # The signal handlers came only once both ports listened: a Ctrl-C while gRPC's server
    # started ended in gRPC's traceback (InvalidStateError), and a SIGTERM there killed the
    # process with the new database, its lock and its WAL left behind. The server is held in
    # its start by a log pipe that is full (its first log line, written in the start, waits),
    # signalled there, and then let go.
    db = tmp_path / "comp.db"
    read, write = full_pipe()
    proc = subprocess.Popen(
        [*ARENA, "serve", "--db", str(db), *PORTS],
        stdout=subprocess.PIPE,
        stderr=write,
        cwd=REPO,
    )
    os.close(write)
    try:
        deadline = time.monotonic() + EXIT_WAIT_S  # only against a hang
        while not blocked_writing(proc.pid):
            assert proc.poll() is None and time.monotonic() < deadline, "never logged"
            time.sleep(0.05)
        proc.send_signal(sig)
        log = b""
        while chunk := os.read(read, 65536):  # let it go, and read the log to its end
            log += chunk
        assert proc.stdout is not None
        banner = proc.stdout.read().decode()
        assert proc.wait(timeout=EXIT_WAIT_S) == 0, log[-2000:]
    finally:
        os.close(read)
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=EXIT_WAIT_S)
        if proc.stdout is not None:
            proc.stdout.close()
    text = log.decode(errors="replace")
    assert "Traceback" not in text and "Error" not in text, text[-2000:]
    left = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("comp.db"))
    # Stopped before serving: no banner, no database; or, if the signal came just after the
    # start, stopped as a running server stops: banner given, database kept, lock let go.
    assert left == (["comp.db"] if banner else []), (banner, left)


def test_a_database_with_two_names_is_refused(tmp_path: Path) -> None:
    # Under each name its own lock file and SQLite journal: two servers (or a server and a
    # batch) wrote one file at once.
    db = tmp_path / "comp.db"
    ServerProcess.cli_here("bots", "add", "alice", "--db", str(db))
    os.link(db, tmp_path / "other.db")
    for name in ("comp.db", "other.db"):
        done = ServerProcess.cli("serve", "--db", str(tmp_path / name), *PORTS)
        said = one_error(done)
        assert said == (
            f"arena: error: --db {tmp_path / name}: the database file has 2 names (hard links);"
            " one writer per file cannot be ensured, and SQLite could corrupt it: give it one"
            " name (copy it rather than link it)"
        )
