"""The referee's door: tokens, versions, handshakes, message limits, TLS, health, reflection."""

from __future__ import annotations

import base64
import importlib.util
import logging
import re
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from conftest import BOT_READY_MS, BotProcesses
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb
from arena.proto.hearts.v1 import bot_service_pb2_grpc as bot_grpc
from arena.referee import (
    BOT_SERVICE,
    SPECTATOR_SERVICE,
    RefereeConfig,
    RefereeThread,
    TlsConfig,
    TokenAccounts,
)
from arena.referee.accounts import BotIdentity, Standing
from arena.referee.config import MIN_PING_INTERVAL_MS
from arena.referee.session import OVERSIZE_SLACK
from arena.rules import Rules
from arena.table import Clocks, TableSpec, Termination

RESULT_S = 120.0
CALM = Clocks(move_ms=5000, bank_ms=10_000, handshake_ms=30_000)


def status_of(bots: BotProcesses, proc: subprocess.Popen[str]) -> str:
    """The STATUS line a bot printed when its stream ended."""
    lines = [x for x in bots.output(proc).splitlines() if x.startswith("STATUS ")]
    assert lines, "the bot printed no status"
    return lines[-1].removeprefix("STATUS ")


def test_a_wrong_token_is_refused_with_unauthenticated(
    referee: tuple[RefereeThread, TokenAccounts],
    bots: BotProcesses,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="arena.referee")
    proc = bots.start("intruder", token="not-a-token")
    status = status_of(bots, proc)
    assert status.startswith("UNAUTHENTICATED unknown token")
    assert referee[0].idle() == {}
    # And the organiser's log says so, with the name the bot gave: only a count at the stop did.
    lines = [r.getMessage() for r in caplog.records if r.name == "arena.referee"]
    assert any(
        re.fullmatch(
            r"session s\d+-[0-9a-f]{6} from \S+ as 'intruder' refused \(UNAUTHENTICATED\): "
            r"unknown token: .*",
            line,
        )
        for line in lines
    ), lines
    assert not any("not-a-token" in line for line in lines)  # never the token itself


def test_refusals_from_one_host_are_logged_twenty_a_minute_then_counted(
    referee: tuple[RefereeThread, TokenAccounts], caplog: pytest.LogCaptureFixture
) -> None:
    # A client trying tokens as fast as it could got a log line each (611 a second, 700 KB of
    # log in 3 s): a log that could fill the disk.
    caplog.set_level(logging.INFO, logger="arena.referee")
    hello = bot_pb.PlayRequest(
        hello=bot_pb.Hello(bot_name="guess", token="not-a-token", protocol_version=1)
    )
    with grpc.insecure_channel(f"127.0.0.1:{referee[0].port}") as channel:
        stub = bot_grpc.BotServiceStub(channel)
        for _ in range(25):
            with pytest.raises(grpc.RpcError) as refused:
                list(stub.Play(iter([hello]), timeout=RESULT_S))
            assert refused.value.code() is grpc.StatusCode.UNAUTHENTICATED
    lines = [r.getMessage() for r in caplog.records if r.name == "arena.referee"]
    assert sum(" refused (UNAUTHENTICATED): " in line for line in lines) == 20, lines
    assert any(
        line.startswith("20 sessions from ipv4:127.0.0.1 refused within a minute: the rest")
        for line in lines
    ), lines


def test_a_missing_token_is_refused_with_unauthenticated(bots: BotProcesses) -> None:
    proc = bots.start("anonymous", token="")
    assert status_of(bots, proc).startswith("UNAUTHENTICATED no token: set Hello.token")


def test_a_protocol_version_mismatch_says_which_version_to_use(bots: BotProcesses) -> None:
    proc = bots.start("future", "good", "--version=2")
    status = status_of(bots, proc)
    assert status.startswith("FAILED_PRECONDITION protocol version 2 is not spoken here")
    assert "protocol_version to 1" in status


def test_a_protocol_version_left_unset_is_a_mismatch_too(bots: BotProcesses) -> None:
    # proto3 cannot tell 0 from unset: the .proto says which status a bot that forgot it gets.
    proc = bots.start("forgetful", "good", "--version=0")
    status = status_of(bots, proc)
    assert status.startswith("FAILED_PRECONDITION protocol version 0 is not spoken here")
    assert "protocol_version to 1" in status


def test_a_banned_bot_is_refused_with_permission_denied(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses
) -> None:
    bots.token("cheat")
    referee[1].ban("cheat", "caught peeking")
    proc = bots.start("cheat")
    # And it says what to do, as the contract promises of every refusal.
    assert status_of(bots, proc) == (
        f"PERMISSION_DENIED bot 'cheat' may not play now ({Standing.BANNED.value}: caught peeking)"
        ": stop, and ask the organiser; retrying gets the same answer until they let it play"
    )


def test_a_first_message_that_is_not_hello_is_invalid(bots: BotProcesses) -> None:
    proc = bots.start("rude", "nohello")
    # Which message it was, not "another message".
    assert status_of(bots, proc) == (
        "INVALID_ARGUMENT the first message of a session must be a Hello, got a Decision"
    )
    proc = bots.start("hasty", "goodbyefirst")
    assert status_of(bots, proc) == (
        "INVALID_ARGUMENT the first message of a session must be a Hello, got a Goodbye"
    )
    # A kind of a later revision was "an empty PlayRequest (no field set)": a field was set.
    proc = bots.start("ahead", "laterkindfirst")
    assert status_of(bots, proc) == (
        "INVALID_ARGUMENT the first message of a session must be a Hello, got a PlayRequest of "
        "no kind this referee knows (4 bytes of fields it does not read: a later revision's?)"
    )


def test_a_stream_closed_before_its_hello_is_invalid_and_logged(
    referee: tuple[RefereeThread, TokenAccounts], caplog: pytest.LogCaptureFixture
) -> None:
    # It ended with OK and no line in the log, unlike every other failed handshake.
    caplog.set_level(logging.INFO, logger="arena.referee")
    from arena.proto.hearts.v1 import bot_service_pb2_grpc as bot_grpc

    with (
        grpc.insecure_channel(f"127.0.0.1:{referee[0].port}") as channel,
        pytest.raises(grpc.RpcError) as refused,
    ):
        list(bot_grpc.BotServiceStub(channel).Play(iter(()), timeout=30))
    assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    wanted = "the stream ended before a Hello: send Hello as the first message"
    assert refused.value.details() == wanted
    deadline = time.monotonic() + 30
    while not any(
        "refused (INVALID_ARGUMENT): " + wanted in r.getMessage() for r in caplog.records
    ):
        assert time.monotonic() < deadline, [r.getMessage() for r in caplog.records]
        time.sleep(0.01)


def test_a_goodbyes_reason_is_in_the_referees_log(
    referee: tuple[RefereeThread, TokenAccounts],
    bots: BotProcesses,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # bot_service.proto: Goodbye.reason is "free text for the referee's log"; it went only into
    # the Shutdown sent back to the bot.
    caplog.set_level(logging.INFO, logger="arena.referee")
    said = bot_pb.PlayRequest(goodbye=bot_pb.Goodbye(reason="done for today \x1b[2J"))
    hello = bot_pb.PlayRequest(
        hello=bot_pb.Hello(bot_name="leaver", token=bots.token("leaver"), protocol_version=1)
    )
    with grpc.insecure_channel(f"127.0.0.1:{referee[0].port}") as channel:
        answers = list(bot_grpc.BotServiceStub(channel).Play(iter([hello, said]), timeout=30))
    assert answers[-1].shutdown.message == "goodbye (done for today \x1b[2J)"
    wanted = re.compile(
        r"session s\d+-[0-9a-f]{6} \(leaver\) said goodbye: 'done for today \\x1b\[2J'"
    )
    deadline = time.monotonic() + 30
    while not any(wanted.fullmatch(r.getMessage()) for r in caplog.records):
        assert time.monotonic() < deadline, [r.getMessage() for r in caplog.records]
        time.sleep(0.01)


@pytest.mark.parametrize("name", ["", "x" * 65])
def test_a_bot_name_out_of_bounds_is_invalid(bots: BotProcesses, name: str) -> None:
    proc = bots.start(name, token=bots.token("named"))
    assert status_of(bots, proc).startswith(
        f"INVALID_ARGUMENT Hello.bot_name must be 1 to 64 characters, got {len(name)}"
    )


def test_the_welcome_says_which_bot_the_token_is(bots: BotProcesses, tmp_path: Path) -> None:
    log = tmp_path / "zed.b64"
    proc = bots.start("zed", "good", f"--record={log}", token=bots.token("alice"))
    bots.ready("alice")  # the referee knows the session by its token's bot
    deadline = time.monotonic() + BOT_READY_MS / 1000
    while not (log.exists() and log.read_text().strip()):
        assert time.monotonic() < deadline, "the bot recorded no Welcome"
        time.sleep(0.01)
    proc.terminate()
    proc.communicate(timeout=30)
    first = bot_pb.PlayResponse.FromString(base64.b64decode(log.read_text().split()[0]))
    assert first.welcome.bot_name == "alice"


def test_no_hello_in_time_is_deadline_exceeded(tmp_path: Path) -> None:
    accounts = TokenAccounts()
    referee = RefereeThread(RefereeConfig(handshake_ms=200), accounts)
    referee.start("127.0.0.1:0")
    bots = BotProcesses(referee, accounts, tmp_path)
    try:
        proc = bots.start("mute", "mute")
        assert status_of(bots, proc).startswith("DEADLINE_EXCEEDED no Hello within 200 ms")
    finally:
        bots.kill_all()
        referee.stop(0)


class GatedAccounts(TokenAccounts):
    """An in-memory account table whose lookups wait until the test opens the gate, as a slow
    account database would."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.waiting = threading.Event()

    def lookup(self, token: str) -> BotIdentity | None:
        self.waiting.set()
        self.gate.wait(RESULT_S)
        return super().lookup(token)


def test_a_slow_account_lookup_does_not_stall_the_referee(tmp_path: Path) -> None:
    accounts = GatedAccounts()
    referee = RefereeThread(RefereeConfig(), accounts)
    referee.start("127.0.0.1:0")
    bots = BotProcesses(referee, accounts, tmp_path)
    try:
        bots.start("patient")
        assert accounts.waiting.wait(BOT_READY_MS / 1000), "the bot never got to its lookup"
        # The lookup is stuck; the event loop must go on serving everything else.
        with grpc.insecure_channel(f"127.0.0.1:{referee.port}") as channel:
            check = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=10
            )
        assert check.status == health_pb2.HealthCheckResponse.SERVING
        assert referee.idle() == {}
        accounts.gate.set()
        bots.ready("patient")
    finally:
        accounts.gate.set()
        bots.kill_all()
        referee.stop(0)


def test_a_burst_of_hellos_on_one_token_replaces_idle_sessions_not_refused() -> None:
    # Six Hellos at once on a token allowed two sessions, nothing playing: some were refused
    # "too many sessions for this token (4, all playing)", counting sessions already ended and
    # taking those still being welcomed for busy ones. Each takes an idle one's place instead.
    accounts = GatedAccounts()
    referee = RefereeThread(RefereeConfig(max_sessions_per_token=2), accounts)
    referee.start("127.0.0.1:0")
    token = accounts.issue("burst")
    hello = bot_pb.PlayRequest(
        hello=bot_pb.Hello(bot_name="burst", token=token, protocol_version=1)
    )
    firsts: list[str] = []
    closers: list[threading.Event] = []

    def connect(channel: grpc.Channel) -> None:
        close = threading.Event()
        closers.append(close)

        def requests() -> Iterator[bot_pb.PlayRequest]:
            yield hello
            close.wait(RESULT_S)

        stream = iter(bot_grpc.BotServiceStub(channel).Play(requests(), timeout=RESULT_S))
        try:
            first = next(stream)
            firsts.append("welcome" if first.HasField("welcome") else str(first))
        except grpc.RpcError as e:
            firsts.append(f"{e.code().name} {e.details()}")
        finally:
            close.set()  # its side closes; the channel's end cancels the rest

    try:
        with grpc.insecure_channel(f"127.0.0.1:{referee.port}") as channel:
            threads = [threading.Thread(target=connect, args=(channel,)) for _ in range(6)]
            for thread in threads:
                thread.start()
            assert accounts.waiting.wait(BOT_READY_MS / 1000), "no Hello reached its lookup"
            time.sleep(0.5)  # the other Hellos reach theirs: then all are answered at once
            accounts.gate.set()
            for thread in threads:
                thread.join(RESULT_S)
    finally:
        accounts.gate.set()
        for close in closers:
            close.set()
        referee.stop(0)
    assert firsts == ["welcome"] * 6, firsts


def test_an_account_lookup_past_the_handshake_timeout_is_unavailable(tmp_path: Path) -> None:
    accounts = GatedAccounts()
    referee = RefereeThread(RefereeConfig(handshake_ms=300), accounts)
    referee.start("127.0.0.1:0")
    bots = BotProcesses(referee, accounts, tmp_path)
    try:
        proc = bots.start("stuck")
        assert status_of(bots, proc) == (
            "UNAVAILABLE the referee's account store did not answer within 300 ms: retry in a while"
        )
    finally:
        accounts.gate.set()
        bots.kill_all()
        referee.stop(0)


class _SessionEnds(logging.Handler):
    """Notes the referee's log line of a session's end (Session.end logs it at DEBUG)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.ended = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("session ") and " ends: " in record.getMessage():
            self.ended.set()


class EndGatedAccounts(TokenAccounts):
    """An in-memory account table whose lookups answer only once the referee has seen a session
    end: the handshake of a bot that leaves right after its Hello then always succeeds after
    the reader has seen it leave (otherwise a race the token check usually lost)."""

    def __init__(self, ended: threading.Event) -> None:
        super().__init__()
        self.ended = ended

    def lookup(self, token: str) -> BotIdentity | None:
        self.ended.wait(RESULT_S)
        return super().lookup(token)


@pytest.mark.parametrize("leaving", ["goodbye", "end of its side"])
def test_a_bot_that_leaves_right_after_its_hello_is_still_welcomed(leaving: str) -> None:
    # The .proto: the referee answers a Hello with a Welcome, and a Shutdown is only ever the
    # last message. A bot that said Goodbye (or closed its side, as `grpcurl -d` does) while
    # its token was being checked got a Shutdown alone, or an OK with no message at all.
    ends = _SessionEnds()
    logger = logging.getLogger("arena.referee")
    level = logger.level
    logger.addHandler(ends)
    logger.setLevel(logging.DEBUG)
    accounts = EndGatedAccounts(ends.ended)
    token = accounts.issue("brief")
    referee = RefereeThread(RefereeConfig(), accounts)
    try:
        referee.start("127.0.0.1:0")
        messages = [
            bot_pb.PlayRequest(hello=bot_pb.Hello(bot_name="b", token=token, protocol_version=1))
        ]
        if leaving == "goodbye":
            messages.append(bot_pb.PlayRequest(goodbye=bot_pb.Goodbye(reason="just checking")))
        with grpc.insecure_channel(f"127.0.0.1:{referee.port}") as channel:
            play = channel.stream_stream(
                "/hearts.v1.BotService/Play",
                request_serializer=bot_pb.PlayRequest.SerializeToString,
                response_deserializer=bot_pb.PlayResponse.FromString,
            )
            call = play(iter(messages))
            got = list(call)
            assert call.code() is grpc.StatusCode.OK
        assert got, "the stream closed with OK and no message: no Welcome"
        assert got[0].HasField("welcome"), f"the first message is not a Welcome: {got[0]}"
        assert got[0].welcome.bot_name == "brief"
        if leaving == "goodbye":
            assert len(got) == 2
            assert got[1].shutdown.reason == bot_pb.SHUTDOWN_REASON_GOODBYE
        else:
            assert len(got) == 1
        assert referee.idle() == {}
    finally:
        ends.ended.set()
        referee.stop(0)
        logger.removeHandler(ends)
        logger.setLevel(level)


class NameAccounts:
    """A custom account store that answers with a bare bot name, not an Identity."""

    def __init__(self, tokens: dict[str, str]) -> None:
        self.tokens = tokens

    def lookup(self, token: str) -> str | None:
        return self.tokens.get(token)


def test_an_account_store_answering_with_the_wrong_kind_is_said_clearly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    token = "plain-token"
    referee = RefereeThread(RefereeConfig(), NameAccounts({token: "plain"}))  # type: ignore[arg-type]
    referee.start("127.0.0.1:0")
    bots = BotProcesses(referee, TokenAccounts(), tmp_path)
    try:
        with caplog.at_level("ERROR", logger="arena.referee"):
            proc = bots.start("plain", token=token)
            assert status_of(bots, proc) == (
                "INTERNAL the referee could not check the token: its account store gave an "
                "answer of the wrong kind (str): retry with backoff, and tell the organiser"
            )
        assert "accounts.lookup returned 'plain': it must return an Identity" in caplog.text
        assert referee.idle() == {}
    finally:
        bots.kill_all()
        referee.stop(0)


def test_a_message_over_the_size_limit_is_refused(
    referee: tuple[RefereeThread, TokenAccounts],
    bots: BotProcesses,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level("INFO", logger="arena.referee"):
        proc = bots.start("huge", "huge")
        assert status_of(bots, proc).startswith(
            "RESOURCE_EXHAUSTED a message of 200012 bytes is over this referee's limit of 65536 "
            "bytes (Welcome.max_message_bytes)"
        )
    # The organiser's log says so too (it said nothing of a session cut after its welcome).
    assert re.search(
        r"session s\d+-[0-9a-f]{6} \(huge\) ended \(RESOURCE_EXHAUSTED\): "
        r"a message of 200012 bytes",
        caplog.text,
    ), caplog.text


def test_garbage_on_the_socket_leaves_the_referee_serving(
    referee: tuple[RefereeThread, TokenAccounts], bots: BotProcesses
) -> None:
    for payload in (b"\x00" * 64, b"GET / HTTP/1.1\r\n\r\n", bytes(range(256)) * 16):
        with socket.create_connection(("127.0.0.1", referee[0].port)) as raw:
            raw.sendall(payload)
    with grpc.insecure_channel(f"127.0.0.1:{referee[0].port}") as channel:
        check = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
        assert check.status == health_pb2.HealthCheckResponse.SERVING
    names = ("n1", "n2", "n3", "n4")
    for n in names:
        bots.start(n)
    bots.ready(*names)
    record = referee[0].submit(TableSpec("after", Rules(), 3, names, "3", clocks=CALM))
    assert record.result(RESULT_S).termination is Termination.NORMAL


def test_health_and_reflection_are_served(
    referee: tuple[RefereeThread, TokenAccounts],
) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{referee[0].port}") as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", BOT_SERVICE, SPECTATOR_SERVICE):
            reply = health.Check(health_pb2.HealthCheckRequest(service=service))
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        (reply,) = list(stub.ServerReflectionInfo(iter([request])))
        listed = {s.name for s in reply.list_services_response.service}
        assert {BOT_SERVICE, SPECTATOR_SERVICE, "grpc.health.v1.Health"} <= listed


def _self_signed(directory: Path, name: str) -> tuple[Path, Path]:
    """A self-signed certificate for localhost and 127.0.0.1, made with the openssl CLI."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("the openssl command is needed to make a test certificate")
    cert, key = directory / f"{name}.pem", directory / f"{name}.key"
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            f"/CN={name}",
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


@pytest.mark.parametrize("mutual", [False, True], ids=["tls", "mutual-tls"])
def test_a_game_runs_over_tls(tmp_path: Path, mutual: bool) -> None:
    cert, key = _self_signed(tmp_path, "localhost")
    client_cert, client_key = _self_signed(tmp_path, "bot")
    tls = TlsConfig.from_files(
        cert, key, client_cert if mutual else None, require_client_cert=mutual
    )
    accounts = TokenAccounts()
    referee = RefereeThread(RefereeConfig(tls=tls), accounts)
    referee.start("127.0.0.1:0")
    bots = BotProcesses(referee, accounts, tmp_path)
    try:
        creds = [f"--tls-ca={cert}"]
        if mutual:
            creds += [f"--tls-cert={client_cert}", f"--tls-key={client_key}"]
        names = ("t1", "t2", "t3", "t4")
        for n in names:
            bots.start(n, "good", *creds)
        # A client speaking plain text (or, with mutual TLS, without a certificate) gets nowhere.
        outsider = bots.start("t1", "good", *([f"--tls-ca={cert}"] if mutual else []))
        assert referee.wait_for_bots(names, BOT_READY_MS)
        record = referee.submit(TableSpec("tls", Rules(), 5, names, "5", clocks=CALM))
        assert record.result(RESULT_S).termination is Termination.NORMAL
        assert status_of(bots, outsider).startswith("UNAVAILABLE")
        assert referee.idle() == {n: 1 for n in names}
    finally:
        bots.kill_all()
        referee.stop(0)


GUIDE = Path(__file__).resolve().parent.parent / "proto" / "hearts" / "v1" / "README.md"


def test_the_guide_gives_the_keepalive_spacing_the_referee_takes() -> None:
    # A bot author's gRPC library may ping on its own; the guide must say how often it may.
    text = " ".join(GUIDE.read_text().split())
    floor_s = MIN_PING_INTERVAL_MS // 1000
    assert (
        f"the referee sends an HTTP/2 ping every {RefereeConfig().keepalive_ms // 1000} s" in text
    )
    assert f"the referee takes a ping at most every {floor_s} s" in text
    asked = re.search(r"space them at least (\d+) s apart", text)
    assert asked is not None and int(asked[1]) >= 2 * floor_s  # a margin for timer jitter


def _ping_in_the_lobby(port: int, token: str, every_ms: int, stay_s: float) -> grpc.RpcError | None:
    """A raw bot that pings every ``every_ms`` while it waits in the lobby, then says Goodbye
    after ``stay_s``: the error that cut it off first, or None if it left as it meant to."""
    options = [
        ("grpc.keepalive_time_ms", every_ms),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.max_pings_without_data", 0),
    ]
    with grpc.insecure_channel(f"127.0.0.1:{port}", options=options) as channel:
        play = channel.stream_stream(
            "/hearts.v1.BotService/Play",
            request_serializer=bot_pb.PlayRequest.SerializeToString,
            response_deserializer=bot_pb.PlayResponse.FromString,
        )
        hello = bot_pb.Hello(bot_name="pinger", token=token, protocol_version=1)
        done = threading.Event()

        def requests() -> Iterator[bot_pb.PlayRequest]:
            yield bot_pb.PlayRequest(hello=hello)
            done.wait(stay_s)  # quiet meanwhile, waiting in the lobby as a bot does
            yield bot_pb.PlayRequest(goodbye=bot_pb.Goodbye(reason="done"))

        stream = iter(play(requests()))
        try:
            assert next(stream).HasField("welcome")
            assert next(stream).shutdown.reason == bot_pb.SHUTDOWN_REASON_GOODBYE
        except grpc.RpcError as error:
            return error
        finally:
            done.set()
    return None


def test_a_bot_pinging_faster_than_the_guide_allows_is_cut_off_as_it_says(
    referee: tuple[RefereeThread, TokenAccounts],
) -> None:
    token = referee[1].issue("pinger")
    error = _ping_in_the_lobby(referee[0].port, token, MIN_PING_INTERVAL_MS // 5, 60.0)
    assert isinstance(error, grpc.Call)
    assert error.code() is grpc.StatusCode.UNAVAILABLE
    assert "Too many pings" in (error.details() or "")


def test_a_bot_pinging_as_often_as_the_referee_takes_stays_connected() -> None:
    # The referee passed gRPC an option name it does not know, which left gRPC's own floor of
    # 5 minutes: a bot pinging every 10 s, as the guide allows, was cut off at its third ping,
    # after 30 s. Here the floor is lower, so that four pings fit in a short test (gRPC's client
    # pings about once a second at most: the floor cannot go lower than that and still be seen
    # to hold; the test above sees it hold at the default).
    floor_ms = 1000
    accounts = TokenAccounts()
    thread = RefereeThread(RefereeConfig(min_ping_interval_ms=floor_ms), accounts)
    thread.start("127.0.0.1:0")
    try:
        token = accounts.issue("pinger")
        assert _ping_in_the_lobby(thread.port, token, 2 * floor_ms, 9.0) is None
    finally:
        thread.stop(0)


def test_the_bots_version_is_logged_with_its_session(
    referee: tuple[RefereeThread, TokenAccounts],
    bots: BotProcesses,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Hello.bot_version is "for diagnostics": the referee's log is where an organiser finds it.
    caplog.set_level(logging.INFO, logger="arena.referee")
    bots.start("versioned")
    bots.ready("versioned")
    lines = [r.getMessage() for r in caplog.records if r.name == "arena.referee"]
    assert any(
        "bot 'versioned'" in line
        and "bot_version 'test'" in line
        and "client 'tests/bots/raw_bot.py'" in line
        for line in lines
    ), lines


def _closed(referee: RefereeThread, streams: int) -> dict[str, int]:
    """``closed_sessions`` once it counts ``streams`` streams (a handler ends after its bot)."""
    deadline = time.monotonic() + RESULT_S
    while True:
        counts = dict(referee.call(lambda r: r.closed_sessions))
        if sum(counts.values()) >= streams or time.monotonic() > deadline:
            return counts
        time.sleep(0.01)


def test_streams_cut_under_the_referee_are_not_counted_as_closed_ok(
    referee: tuple[RefereeThread, TokenAccounts],
) -> None:
    # closed_sessions is "by the status the referee closed them with": a stream gRPC refused
    # itself, or one the bot cancelled, was not closed with OK, whatever the referee's reader
    # saw (the end of the stream, as when a bot closes its side).
    thread, accounts = referee
    token = accounts.issue("door")
    hello = bot_pb.PlayRequest(hello=bot_pb.Hello(bot_name="door", token=token, protocol_version=1))
    too_big = bot_pb.PlayRequest(
        decision=bot_pb.Decision(
            request_id=1,
            play_card=bot_pb.PlayCard(
                card="X" * (OVERSIZE_SLACK * RefereeConfig().max_message_bytes)
            ),
        )
    )
    with grpc.insecure_channel(f"127.0.0.1:{thread.port}") as channel:
        play = channel.stream_stream(
            "/hearts.v1.BotService/Play",
            request_serializer=bot_pb.PlayRequest.SerializeToString,
            response_deserializer=bot_pb.PlayResponse.FromString,
        )
        # Over gRPC's own limit: gRPC refuses it, before the referee sees a message.
        with pytest.raises(grpc.RpcError) as refused:
            list(play(iter([too_big])))
        assert isinstance(refused.value, grpc.Call)
        assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        # Welcomed, then cancelled by the bot.
        welcomed = threading.Event()

        def hello_then_wait() -> Iterator[bot_pb.PlayRequest]:
            yield hello
            welcomed.wait()

        cancelled = play(hello_then_wait())
        assert next(cancelled).HasField("welcome")
        cancelled.cancel()
        welcomed.set()
        # Welcomed, then the bot closes its side without a word: the referee closes with OK.
        welcomed.clear()
        quiet = play(hello_then_wait())
        assert next(quiet).HasField("welcome")
        welcomed.set()
        assert list(quiet) == []
        assert quiet.code() is grpc.StatusCode.OK
        # Refused at the handshake.
        with pytest.raises(grpc.RpcError):
            list(
                play(
                    iter([bot_pb.PlayRequest(hello=bot_pb.Hello(bot_name="x", protocol_version=1))])
                )
            )
    assert _closed(thread, 4) == {"CANCELLED": 2, "OK": 1, "UNAUTHENTICATED": 1}


def test_reflection_is_v1alpha_only_as_the_guides_say(
    referee: tuple[RefereeThread, TokenAccounts],
) -> None:
    # grpcio-reflection offers no grpc.reflection.v1 service: the guides say reflection is
    # v1alpha only. Once it does, serve v1 beside v1alpha and change the guides.
    assert importlib.util.find_spec("grpc_reflection.v1") is None, (
        "grpcio-reflection now has v1: serve it in Referee.start and update the guides"
    )
    with grpc.insecure_channel(f"127.0.0.1:{referee[0].port}") as channel:
        v1 = channel.stream_stream(
            "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
            request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
            response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
        )
        with pytest.raises(grpc.RpcError) as missing:
            list(v1(iter([reflection_pb2.ServerReflectionRequest(list_services="")])))
    assert isinstance(missing.value, grpc.Call)
    assert missing.value.code() is grpc.StatusCode.UNIMPLEMENTED
    guide = " ".join(GUIDE.read_text().split())
    assert "Reflection is served as `grpc.reflection.v1alpha.ServerReflection` only" in guide
    readme = " ".join((GUIDE.parents[3] / "README.md").read_text().split())
    assert "reflection as `grpc.reflection.v1alpha` only" in readme


def test_a_hellos_long_free_text_is_cut_in_the_log(
    referee: tuple[RefereeThread, TokenAccounts], caplog: pytest.LogCaptureFixture
) -> None:
    # bot_version and client_library went to the log whole, each up to the message size limit:
    # a bot reconnecting with 64 KB of them wrote 94 MB of log in two seconds.
    from arena.proto.hearts.v1 import bot_service_pb2_grpc as bot_grpc

    caplog.set_level(logging.INFO, logger="arena.referee")
    token = referee[1].issue("verbose")
    hello = bot_pb.Hello(
        bot_name="verbose",
        token=token,
        protocol_version=1,
        bot_version="v" * 20_000,
        client_library="c" * 20_000,
        resume_session_id="r" * 20_000,  # names no session: logged as ignored
    )
    goodbye = bot_pb.Goodbye(reason="done")
    with grpc.insecure_channel(f"127.0.0.1:{referee[0].port}") as channel:
        answers = list(
            bot_grpc.BotServiceStub(channel).Play(
                iter([bot_pb.PlayRequest(hello=hello), bot_pb.PlayRequest(goodbye=goodbye)]),
                timeout=30,
            )
        )
    session = answers[0].welcome.session_id
    (line,) = [
        r.getMessage() for r in caplog.records if f"session {session}: bot" in r.getMessage()
    ]
    assert f"bot_version '{'v' * 99}… (20000 characters)'" in line
    assert f"client '{'c' * 99}… (20000 characters)'" in line
    assert len(line) < 400
    (ignored,) = [
        r.getMessage() for r in caplog.records if "names no live session" in r.getMessage()
    ]
    assert f"Hello.resume_session_id '{'r' * 99}… (20000 characters)' names no" in ignored
    assert len(ignored) < 300
