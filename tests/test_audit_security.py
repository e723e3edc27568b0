"""A security audit of the competition server, as an attacker on the network would probe it: a
real ``arena serve`` on loopback ports, raw sockets for the page's port, raw gRPC for the bots'.

The page's HTTP server must not let one client keep a connection (and a place under its cap) for
as long as it likes, nor keep a stopping server from exiting; it must refuse the ambiguous
requests a proxy in front of it could read otherwise (two Content-Lengths); and no token may be
written anywhere an attacker, or the organiser's log, could read it back.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from test_audit_admin import post, post_as
from test_server_support import ServerProcess

from arena.client import ClientSettings
from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb
from arena.proto.hearts.v1 import bot_service_pb2_grpc as bot_grpc

WAIT_S = 120.0
"""A deadline only against a hang (a condition never reached); never a measured time."""
TCP_ESTABLISHED = 1
"""The state a connection is in while both sides have it open (linux/tcp_states.h)."""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path / "comp.db")
    yield process
    process.close()


def slow_reader(port: int) -> socket.socket:
    """A client that asks for far more than the kernel's buffers hold, then reads nothing."""
    sock = socket.socket()
    # A small receive window, so that the server's side fills (and blocks) soon.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(b"GET /static/app.js HTTP/1.1\r\nHost: x\r\n\r\n" * 400)
    return sock


def tcp_state(sock: socket.socket) -> int:
    """The kernel's state of a connection (the first byte of TCP_INFO)."""
    return int(struct.unpack("B", sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1))[0])


def raw(port: int, data: bytes) -> bytes:
    """Send ``data`` on a new connection; everything the server answers until it closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT_S) as sock:
        sock.sendall(data)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


def test_a_client_that_reads_no_answer_is_cut_off_and_the_page_serves_on(
    server: ServerProcess,
) -> None:
    server.start()
    held = slow_reader(server.web_port)
    # One byte a second: a slowloris client, beside the one that reads nothing.
    trickle = socket.create_connection(("127.0.0.1", server.web_port))
    try:
        trickle.sendall(b"G")
        # Others are served meanwhile.
        assert server.get("/api/health")["status"] == "ok"
        # The server cuts the reader off after its idle timeout (it kept the connection, and a
        # place under the 512-connection cap, for as long as the client held it: 512 such
        # clients answered everyone else 503 for good).
        deadline = time.monotonic() + WAIT_S
        while tcp_state(held) == TCP_ESTABLISHED:
            assert time.monotonic() < deadline, "the server never let go of a client not reading"
            with contextlib.suppress(OSError):  # cut off itself, as it may be first
                trickle.sendall(b"E")
            time.sleep(1)
        with pytest.raises(OSError):  # reset: the answers it did not read are gone
            while held.recv(65536):
                pass
        # The one that trickles is cut off too (its request never completes), with no answer.
        trickle.settimeout(WAIT_S)
        # (A byte it sent after the close may be answered with a reset instead.)
        with contextlib.suppress(ConnectionResetError):
            assert trickle.recv(65536) == b""
        assert server.get("/api/health")["status"] == "ok"
    finally:
        held.close()
        trickle.close()


def test_a_stop_does_not_wait_for_clients_that_read_nothing(server: ServerProcess) -> None:
    server.start()
    held = slow_reader(server.web_port)
    # And a kept-alive connection at rest, as a browser with the page open keeps one.
    idle = socket.create_connection(("127.0.0.1", server.web_port))
    try:
        idle.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert idle.recv(65536).startswith(b"HTTP/1.1 200")
        # Before, the server drained, logged "stopped"... and waited, past any drain, until the
        # client went away; then Python 3.11 printed a CancelledError traceback for each
        # connection open at the stop (the idle one's too).
        assert server.terminate() == 0
        assert "Traceback" not in server.errors, server.errors
    finally:
        held.close()
        idle.close()


@pytest.mark.parametrize(
    ("headers", "says"),
    [
        (b"Content-Length: 0\r\nContent-Length: 5\r\n", b"given twice"),
        (b"Content-Length : 5\r\n", b"bad header line"),
        (b"X-A: 1\r\n Content-Length: 5\r\n", b"bad header line"),
        (b"Authorization: Bearer a\r\nAuthorization: Bearer b\r\n", b"given twice"),
    ],
    ids=["two-content-lengths", "space-before-colon", "folded-line", "two-authorizations"],
)
def test_an_ambiguous_request_is_refused(
    server: ServerProcess, headers: bytes, says: bytes
) -> None:
    server.start()
    # Read as the last one (or with the space taken off), as a proxy in front might not: the
    # proxy and the server would cut the stream into different requests (request smuggling).
    request = b"POST /api/admin/pause HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\nhello"
    answer = raw(server.web_port, request)
    assert answer.startswith(b"HTTP/1.1 400"), answer
    assert says in answer, answer
    assert server.get("/api/health")["status"] == "ok"


def test_no_token_is_shown_logged_or_stored_in_clear(server: ServerProcess) -> None:
    token = server.add_bot("alice")
    admin = server.admin_token()
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{server.bots_port}")
    stub = bot_grpc.BotServiceStub(channel)

    def hello(token: str, name: str = "alice") -> bot_pb.Welcome:
        """One session: Hello with markup in bot_version, then (once the referee has logged the
        session) Goodbye; the Welcome."""
        logged = threading.Event()

        def messages() -> Iterator[bot_pb.PlayRequest]:
            yield bot_pb.PlayRequest(
                hello=bot_pb.Hello(
                    bot_name=name,
                    token=token,
                    protocol_version=1,
                    bot_version="<script>alert(1)</script>",
                )
            )
            logged.wait(WAIT_S)
            yield bot_pb.PlayRequest(goodbye=bot_pb.Goodbye(reason="<script>alert(2)</script>"))

        answers: Iterator[bot_pb.PlayResponse] = iter(stub.Play(messages(), timeout=WAIT_S))
        try:
            welcome: bot_pb.Welcome = next(answers).welcome
            # A session that leaves at once is welcomed without a line in the log.
            server.wait_for(lambda: f"session {welcome.session_id}:" in server.log.read_text())
        finally:
            logged.set()
        for _ in answers:  # the Shutdown, then the end of the stream
            pass
        return welcome

    try:
        assert hello(token, name="bob").bot_name == "alice"  # the token's name, not Hello's
        for wrong in (token + "x", token.upper()):
            with pytest.raises(grpc.RpcError) as refused:
                hello(wrong)
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
            assert wrong not in (refused.value.details() or "")
    finally:
        channel.close()
    for given in ("", "Bearer " + admin + "x", "Bearer " + token, "Basic " + admin):
        code, answer = post_as(server, "pause", b"{}", given)
        assert code == 401
        said = json.dumps(answer)
        assert token not in said and admin not in said, said
    shown = [
        server.get(path) for path in ("/api/health", "/api/standings", "/api/lobby", "/api/games")
    ]
    with urllib.request.urlopen(server.url + "/", timeout=WAIT_S) as page:
        shown.append(page.read().decode())
    assert server.terminate() == 0
    written = [
        json.dumps(shown),
        server.banner,
        server.errors,
        server.log.read_text(),
        *(path.read_bytes().decode("latin-1") for path in server.db.parent.glob("comp.db*")),
    ]
    for secret in (token, admin):
        for text in written:
            assert secret not in text
    # The markup a bot sent is in the log as data (JSON-escaped text), for the organiser.
    assert "<script>alert(1)</script>" in server.log.read_text()


def test_a_session_that_leaves_at_once_leaves_its_line_in_the_log(server: ServerProcess) -> None:
    """A Hello followed at once by a Goodbye was welcomed but left no line in the server's log:
    a stolen token tried out that way left no trace."""
    token = server.add_bot("alice")
    server.start()
    hello = bot_pb.Hello(bot_name="alice", token=token, protocol_version=1, bot_version="probe")
    with grpc.insecure_channel(f"127.0.0.1:{server.bots_port}") as channel:
        answers = list(
            bot_grpc.BotServiceStub(channel).Play(
                iter(
                    [
                        bot_pb.PlayRequest(hello=hello),
                        bot_pb.PlayRequest(goodbye=bot_pb.Goodbye(reason="just looking")),
                    ]
                ),
                timeout=WAIT_S,
            )
        )
    session = answers[0].welcome.session_id
    assert session
    # The log is written as the handshake goes: given time only against a hang.
    server.wait_for(lambda: f"session {session}: bot 'alice'" in server.log.read_text(), 30.0)
    assert "'probe'" in server.log.read_text()


def test_an_admin_text_that_is_no_unicode_is_a_clear_400(server: ServerProcess) -> None:
    """JSON may carry a lone surrogate ("\\ud800"), which no database or gRPC status can hold:
    a ban with it was a 500 "internal error" that banned nobody."""
    server.add_bot("dave")
    admin = server.admin_token()
    server.start()
    for action, body in (
        ("ban", b'{"bot": "dave", "reason": "\\ud800"}'),
        ("kick", b'{"session": "s", "reason": "x\\udfff"}'),
    ):
        code, answer = post(server, action, body, admin)
        assert code == 400
        said = answer["error"]
        assert said.startswith("reason is not valid Unicode text"), said
    listed = server.cli_here("bots", "list", "--json", "--db", str(server.db))
    assert json.loads(listed)[0]["status"] == "active"  # the bad ban changed nothing


def test_client_settings_never_show_the_token_or_the_key() -> None:
    """A bot author logging its settings (``log.info("%s", settings)``) wrote its token, and its
    TLS private key, in clear."""
    settings = ClientSettings(
        address="127.0.0.1:1", token="s3cret-token", name="b", tls=True, tls_key=b"PRIVATE KEY"
    )
    shown = repr(settings)
    assert "s3cret-token" not in shown and "PRIVATE KEY" not in shown, shown
    assert "address='127.0.0.1:1'" in shown and "name='b'" in shown


def test_a_refused_admin_request_is_logged_without_its_token(server: ServerProcess) -> None:
    """An organiser had no way to see someone trying admin tokens: a refusal left no line."""
    admin = server.admin_token()
    server.start()
    for given in ("", f"Bearer {admin}x"):
        assert post_as(server, "pause", b"{}", given)[0] == 401

    def refusals() -> list[dict[str, str]]:
        lines = [json.loads(line) for line in server.log.read_text().splitlines() if line]
        return [line for line in lines if line.get("msg") == "admin action refused"]

    server.wait_for(lambda: len(refusals()) == 2, 30.0)
    assert [r["why"] for r in refusals()] == ["no token", "wrong token"]
    assert all(r["action"] == "pause" and r["peer"].startswith("127.0.0.1:") for r in refusals())
    assert admin not in server.log.read_text()

    # An action the server refuses with the right token is said as refused too, with why: the
    # log showed only "admin action", as for one done.
    status, _ = post_as(server, "kick", b'{"session": "s99"}', f"Bearer {admin}")
    assert status == 400
    server.wait_for(lambda: len(refusals()) == 3, 30.0)
    kick = refusals()[2]
    assert (kick["action"], kick["why"]) == ("kick", "no session 's99'; GET /api/lobby lists them")
    assert kick["peer"].startswith("127.0.0.1:")
