"""What a newcomer met with the Python SDK's TLS settings, each now one line saying what to change:
a client certificate and key that do not go together (checked at start), a referee that asks for
a client certificate the bot does not send or that it does not accept, a referee's certificate
out of date, a TLS bot at the leaderboard's https port, and ``ARENA_TLS=0`` beside a TLS file.

Real referees on loopback port 0 (and a real ``arena serve`` for its https leaderboard), real bot
processes (sample_bots/lowcard.py, and the Node.js bot where it makes the same promise),
certificates made with the openssl tool.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import ssl
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import make_certs
import pytest
from loopback import closing_port, serving
from test_js_bot import JS_BOT, require_node
from test_server_support import ServerProcess

from arena.client import Bot, ClientSettings, serve
from arena.client.remote import _tls_hint
from arena.client.tls import client_certificate_refused
from arena.errors import ConfigError
from arena.referee import RefereeConfig, RefereeThread, TlsConfig, TokenAccounts

LOWCARD = JS_BOT.parent.parent / "lowcard.py"
EXIT_WAIT_S = 60.0
"""A bot that should exit at once but retries or plays on is stopped after this (a slow machine
starts Python in seconds); never a measured time."""
LOBBY_WAIT_MS = 30_000


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of certificates: ``ca`` signed ``server`` and ``client``; ``stranger`` is a
    client certificate of another CA; ``locked.key`` is client.key under a pass phrase;
    ``old`` has expired and ``future`` is not valid yet (both self-signed)."""
    folder = make_certs.mutual_tls(tmp_path_factory.mktemp("certs"))
    make_certs.dated(folder, "old", "20200101000000Z", "20200102000000Z")
    make_certs.dated(folder, "future", "20990101000000Z", "20990102000000Z")
    return folder


@dataclass
class Referee:
    """A referee started on a free loopback port, with one bot account, ``b``."""

    thread: RefereeThread
    token: str
    """The token of bot ``b``."""

    @property
    def address(self) -> str:
        """Where bots reach it."""
        return f"127.0.0.1:{self.thread.port}"


@contextmanager
def _referee(tls: TlsConfig | None) -> Iterator[Referee]:
    """A referee serving ``tls`` (None: plain text) while in effect."""
    accounts, tokens = TokenAccounts.issue_for(["b"])
    thread = RefereeThread(RefereeConfig(tls=tls), accounts)
    thread.start("127.0.0.1:0")
    try:
        yield Referee(thread, tokens["b"])
    finally:
        thread.stop(0)


@pytest.fixture
def mutual(certs: Path) -> Iterator[Referee]:
    """A referee that requires a client certificate signed by ``ca``."""
    tls = TlsConfig.from_files(
        certs / "server.pem", certs / "server.key", certs / "ca.pem", require_client_cert=True
    )
    with _referee(tls) as referee:
        yield referee


def _environment(address: str, token: str, env: dict[str, str]) -> dict[str, str]:
    """A bot's environment: no ARENA_* of the caller's, gRPC's default log level (as a bot
    author's shell gives it), a short give-up time (where a retry is expected), then ``env``."""
    environment = {
        k: v for k, v in os.environ.items() if not k.startswith("ARENA_") and k != "GRPC_VERBOSITY"
    }
    return environment | {
        "ARENA_ADDRESS": address,
        "ARENA_TOKEN": token,
        "ARENA_BOT_NAME": "b",
        "ARENA_GIVE_UP_S": "1",
        **env,
    }


def _run(
    address: str, token: str, env: dict[str, str], command: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a bot (lowcard.py unless ``command``) to its exit; a bot still running after
    :data:`EXIT_WAIT_S` fails the test."""
    try:
        return subprocess.run(
            command or [sys.executable, str(LOWCARD)],
            env=_environment(address, token, env),
            capture_output=True,
            text=True,
            timeout=EXIT_WAIT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"the bot did not exit: {e.stderr!r}") from None


def _command(language: str) -> list[str] | None:
    """The bot to run: lowcard.py (None) or the Node.js sample bot."""
    return [require_node(), str(JS_BOT)] if language == "node" else None


def _own_line(done: subprocess.CompletedProcess[str]) -> str:
    """The single line either bot wrote of its own, checked to have exited with code 2 (the
    Python bot's standard error may hold gRPC's own log lines beside it)."""
    assert done.returncode == 2, done.stderr
    lines = [x for x in done.stderr.splitlines() if x.startswith(("arena.client:", "b:"))]
    assert len(lines) == 1, done.stderr
    return lines[0]


def _one_line(done: subprocess.CompletedProcess[str], code: int = 2) -> str:
    """The single line the bot wrote on stderr, checked to have exited with ``code``."""
    assert done.returncode == code, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("arena.client: "), done.stderr
    return lines[0]


def _tls(certs: Path, cert: str | None = None, key: str | None = None) -> dict[str, str]:
    """The bot's TLS variables: trust ``ca``; with ``cert`` and ``key``, send that pair."""
    env = {"ARENA_TLS_CA": str(certs / "ca.pem")}
    if cert is not None and key is not None:
        env |= {"ARENA_TLS_CERT": str(certs / cert), "ARENA_TLS_KEY": str(certs / key)}
    return env


@pytest.mark.parametrize(
    ("cert", "key", "told"),
    [
        ("client.pem", "server.key", "is not the private key of the client certificate"),
        ("client.pem", "locked.key", "is encrypted with a pass phrase"),
        ("client.key", "client.pem", "holds no usable certificate"),
        ("client.pem", "client.pem", "holds no readable private key"),
    ],
    ids=["key-of-another-certificate", "encrypted-key", "swapped", "certificate-as-key"],
)
def test_a_client_certificate_and_key_that_do_not_fit_are_refused_at_start(
    certs: Path, mutual: Referee, cert: str, key: str, told: str
) -> None:
    # gRPC wrote raw "Invalid private key" lines for each attempt and retried for ARENA_GIVE_UP_S
    # (ten minutes by default), then exited 1 "unreachable ... Failed to create security
    # handshaker", naming neither variable; the CA file is checked at start, so is the pair.
    done = _run(mutual.address, mutual.token, _tls(certs, cert, key))
    line = _one_line(done)
    assert told in line, line
    assert str(certs / key) in line or str(certs / cert) in line, line
    assert "ARENA_TLS_KEY" in line or "ARENA_TLS_CERT" in line, line


@pytest.mark.parametrize(
    ("variable", "file", "told"),
    [
        ("ARENA_TLS_KEY", "missing.key", "cannot read the TLS client key '{file}' (ARENA_TLS_KEY)"),
        ("ARENA_TLS_CERT", "missing.pem", "cannot read the TLS client certificate '{file}' (ARE"),
        ("ARENA_TLS_CA", "missing.pem", "cannot read the TLS CA certificate '{file}' (ARENA_TLS"),
        # OpenSSL's words named the C file it failed in: "no start line: cadata does not
        # contain a certificate (_ssl.c:4020)".
        ("ARENA_TLS_CA", "client.key", "(ARENA_TLS_CA) holds no usable certificate (no -----BEG"),
    ],
    ids=["missing-key", "missing-certificate", "missing-ca", "key-as-ca"],
)
def test_a_tls_file_that_cannot_be_used_is_named_with_its_variable(
    certs: Path, variable: str, file: str, told: str
) -> None:
    env = _tls(certs, "client.pem", "client.key") | {variable: str(certs / file)}
    line = _one_line(_run("127.0.0.1:1", "t", env))  # refused before it connects
    assert told.format(file=certs / file) in line, line
    assert "_ssl.c" not in line, line


@pytest.mark.parametrize(
    ("pair", "told"),
    [
        (None, "the referee asks for a client certificate; set ARENA_TLS_CERT and ARENA_TLS_KEY"),
        (
            ("stranger.pem", "stranger.key"),
            "the referee refused the client certificate in ARENA_TLS_CERT",
        ),
    ],
    ids=["no-certificate", "certificate-of-another-ca"],
)
def test_a_referee_that_wants_another_client_certificate_is_said_at_once(
    certs: Path, mutual: Referee, pair: tuple[str, str] | None, told: str
) -> None:
    # gRPC said only "Socket closed", retried for ten minutes, with no word of ARENA_TLS_CERT.
    # The referee asked for a certificate and closed the connection right after the handshake,
    # before any HTTP/2 frame: no network failure looks like that.
    done = _run(mutual.address, mutual.token, _tls(certs, *(pair or (None, None))))
    line = _one_line(done)
    assert line.startswith(f"arena.client: cannot connect to {mutual.address} ("), line
    assert told in line, line


def test_a_client_certificate_the_referee_accepts_still_plays(certs: Path, mutual: Referee) -> None:
    # The other side of the test above: the right pair is not taken for a refused one.
    env = _environment(mutual.address, mutual.token, _tls(certs, "client.pem", "client.key"))
    bot = subprocess.Popen(
        [sys.executable, str(LOWCARD)], env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        assert mutual.thread.wait_for_bots(["b"], LOBBY_WAIT_MS), "the bot did not connect"
        bot.send_signal(signal.SIGTERM)
        assert bot.wait(EXIT_WAIT_S) == 0
    finally:
        bot.kill()
        _, err = bot.communicate()
    assert "connected to" in err, err


def test_a_tls_failure_that_may_be_the_network_is_retried_with_the_certificate_hint(
    certs: Path,
) -> None:
    # A connection closed during the TLS handshake ("Handshake read failed (Socket closed)") may
    # be a restart or a proxy with nothing behind it: retried, as before, but each retry line
    # (and the last) now names the client certificate's variables, since a referee that wants
    # one looks the same to gRPC ("Socket closed").
    with closing_port() as port:
        done = _run(f"127.0.0.1:{port}", "t", _tls(certs))
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    retries = [line for line in lines if "retrying in" in line]
    assert retries and "has been unreachable for" in lines[-1], done.stderr
    hint = "if the referee asks for a client certificate, set ARENA_TLS_CERT and ARENA_TLS_KEY"
    for line in [*retries, lines[-1]]:
        assert "Socket closed" in line and hint in line, line


def _alerting_port(certs: Path) -> AbstractContextManager[int]:
    """A TLS server (Python's ssl, which says why in an alert, where gRPC's only hangs up) that
    requires a client certificate signed by ``ca``, while in effect."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=certs / "ca.pem")
    context.load_cert_chain(certs / "server.pem", certs / "server.key")
    context.verify_mode = ssl.CERT_REQUIRED
    context.set_alpn_protocols(["h2"])

    def answer(connection: socket.socket) -> None:
        with contextlib.suppress(OSError), context.wrap_socket(connection, server_side=True) as t:
            t.sendall(b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")  # an HTTP/2 SETTINGS frame
            t.recv(1)

    return serving(answer)


def test_the_hang_up_check_tells_a_refused_certificate_from_other_failures(
    certs: Path, mutual: Referee
) -> None:
    # The check behind the exit at once (arena.client.tls): only a refusal of the certificate
    # counts, never a port that hangs up on everyone, nor a referee that takes the certificate.
    ca = (certs / "ca.pem").read_bytes()
    pair = (certs / "client.pem").read_bytes(), (certs / "client.key").read_bytes()
    stranger = (certs / "stranger.pem").read_bytes(), (certs / "stranger.key").read_bytes()
    assert client_certificate_refused(mutual.address, ca, None, None)
    assert client_certificate_refused(mutual.address, ca, *stranger)
    assert not client_certificate_refused(mutual.address, ca, *pair)
    with closing_port() as port:
        assert not client_certificate_refused(f"127.0.0.1:{port}", ca, None, None)
    with _alerting_port(certs) as port:
        assert client_certificate_refused(f"127.0.0.1:{port}", ca, None, None)
        assert client_certificate_refused(f"127.0.0.1:{port}", ca, *stranger)
        assert not client_certificate_refused(f"127.0.0.1:{port}", ca, *pair)
    with socket.socket() as s:  # a port that was free a moment ago: connection refused
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    assert not client_certificate_refused(f"127.0.0.1:{free}", ca, None, None)


def test_the_certificate_hint_names_what_to_check_when_one_is_sent() -> None:
    with_pair = ClientSettings("127.0.0.1:1", "t", "b", tls=True, tls_cert=b"c", tls_key=b"k")
    hint = _tls_hint(with_pair, "failed to connect: Socket closed")
    assert "ARENA_TLS_CERT" in hint and "one the referee accepts" in hint, hint
    plain = ClientSettings("127.0.0.1:1", "t", "b")
    assert "ARENA_TLS_CERT" not in _tls_hint(plain, "Socket closed")


def test_a_plain_text_bot_welcomed_before_is_not_told_to_turn_tls_on() -> None:
    # A referee restarting behind a port forwarder hangs up as a TLS one does on plain text:
    # after a session of this run was welcomed in plain text, the hint was wrong.
    plain = ClientSettings("127.0.0.1:1", "t", "b")
    assert "ARENA_TLS=1" in _tls_hint(plain, "Socket closed")
    assert _tls_hint(plain, "Socket closed", first=False) == ""


@pytest.mark.parametrize(
    ("name", "told"),
    [
        ("old", "the referee's certificate has expired"),
        ("future", "the referee's certificate is not valid yet"),
    ],
    ids=["expired", "not-yet-valid"],
)
@pytest.mark.parametrize("language", ["python", "node"])
def test_a_referee_certificate_out_of_date_is_said_so(
    certs: Path, name: str, told: str, language: str
) -> None:
    # gRPC says "certificate has expired"; the bot said "not trusted; set ARENA_TLS_CA to the CA
    # that signed it", which the author had done (the Node.js bot retried, and exited 1).
    # TlsConfig itself is made by hand: from_files (and `arena serve`) refuse such a
    # certificate, another referee may not.
    tls = TlsConfig((certs / f"{name}.pem").read_bytes(), (certs / f"{name}.key").read_bytes())
    env = {"ARENA_TLS_CA": str(certs / f"{name}.pem")}
    with _referee(tls) as referee:
        done = _run(referee.address, referee.token, env, _command(language))
    line = _own_line(done)
    assert told in line, line
    assert "the organiser must renew it" in line or "this machine's clock" in line, line
    assert "not trusted" not in line, line


@pytest.fixture(scope="module")
def https_leaderboard(
    certs: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    """`arena serve` with TLS: the bots' port and the leaderboard's (https) port."""
    server = ServerProcess(tmp_path_factory.mktemp("serve") / "comp.db")
    try:
        server.start(
            "--tls-cert", str(certs / "server.pem"), "--tls-key", str(certs / "server.key")
        )
        yield server
    finally:
        server.close()


@pytest.mark.parametrize("language", ["python", "node"])
def test_a_tls_bot_at_the_https_leaderboard_port_is_told_the_bots_port(
    certs: Path, https_leaderboard: ServerProcess, language: str
) -> None:
    # The Python SDK retried "Cannot check peer: missing selected ALPN property" for ten minutes
    # and exited 1, where the protocol guide promises exit 2 and one line naming the bots' port.
    address = f"127.0.0.1:{https_leaderboard.web_port}"
    line = _own_line(_run(address, "t", _tls(certs), _command(language)))
    assert "does not speak gRPC" in line, line
    assert "set ARENA_ADDRESS to the referee's port for bots (arena serve --port)" in line


@pytest.mark.parametrize(
    ("files", "language"),
    [
        (("ARENA_TLS_CA",), "python"),
        (("ARENA_TLS_CERT", "ARENA_TLS_KEY"), "python"),
        (("ARENA_TLS_CA",), "node"),
        (("ARENA_TLS_CERT", "ARENA_TLS_KEY"), "node"),
    ],
    ids=["ca", "client-certificate", "ca-node", "client-certificate-node"],
)
def test_arena_tls_0_beside_a_tls_file_is_refused_in_one_line(
    certs: Path, files: tuple[str, ...], language: str
) -> None:
    # ARENA_TLS=0, which the SDK's own message calls "plain text", was silently overridden by
    # ARENA_TLS_CA or ARENA_TLS_CERT: the bot connected with TLS (here, at a plain-text
    # referee: "the referee does not speak TLS on this port; unset ARENA_TLS").
    paths = {
        "ARENA_TLS_CA": "ca.pem",
        "ARENA_TLS_CERT": "client.pem",
        "ARENA_TLS_KEY": "client.key",
    }
    env = {"ARENA_TLS": "0"} | {var: str(certs / paths[var]) for var in files}
    with _referee(None) as referee:
        done = _run(referee.address, referee.token, env, _command(language))
    line = _own_line(done)
    assert f"ARENA_TLS=0 asks for plain text, but {files[0]} asks for TLS" in line, line


def test_resolve_refuses_arena_tls_0_beside_a_ca_argument(
    certs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARENA_TLS", "0")
    for var in ("ARENA_TLS_CA", "ARENA_TLS_CERT", "ARENA_TLS_KEY"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ConfigError, match=r"ARENA_TLS=0 asks for plain text, but tls_ca"):
        ClientSettings.resolve("127.0.0.1:1", "t", "b", tls_ca=certs / "ca.pem")


def test_serve_refuses_settings_whose_certificate_and_key_do_not_fit(certs: Path) -> None:
    # ClientSettings made by hand skip resolve(): serve() checks the pair itself.
    settings = ClientSettings(
        "127.0.0.1:1",
        "t",
        "b",
        tls=True,
        tls_ca=(certs / "ca.pem").read_bytes(),
        tls_cert=(certs / "client.pem").read_bytes(),
        tls_key=(certs / "server.key").read_bytes(),
    )
    with pytest.raises(ConfigError, match="is not the private key of the client certificate"):
        serve(Bot(), settings, give_up_after=0)


def test_a_tls_config_made_by_hand_is_checked_as_from_files_checks_files(certs: Path) -> None:
    # Made with the constructor, bytes that are no certificate made start() say the port was in
    # use, a str raised gRPC's bare TypeError, and a client CA without require_client_cert
    # checked nothing: gRPC then asks for no client certificate, and one of any CA got in.
    server, key = (certs / "server.pem").read_bytes(), (certs / "server.key").read_bytes()
    ca = (certs / "ca.pem").read_bytes()
    # An RSA key beside the EC certificate: "holds no readable PEM private key", of a key
    # OpenSSL read well (its certificate is of another algorithm).
    rsa = certs / "rsa.key"
    make_certs.openssl(certs, "genpkey", "-algorithm", "RSA", "-out", str(rsa))
    cases: list[tuple[Callable[[], object], str]] = [
        (
            lambda: TlsConfig(server, rsa.read_bytes()),
            r"^TLS: private_key is not the private key of the certificate in cert_chain",
        ),
        (lambda: TlsConfig(b"abc", key), r"^TLS: cert_chain holds no readable PEM certificate"),
        (lambda: TlsConfig(server, b"def"), r"^TLS: private_key holds no readable PEM private"),
        (
            lambda: TlsConfig(server, (certs / "client.key").read_bytes()),
            r"^TLS: private_key is not the private key of the certificate in cert_chain",
        ),
        (
            lambda: TlsConfig("abc", "def"),  # type: ignore[arg-type]
            r"^TLS: cert_chain must be the PEM file's bytes \(TlsConfig.from_files reads",
        ),
        (
            lambda: TlsConfig(server, key, client_ca=b"nothing", require_client_cert=True),
            r"^TLS: client_ca holds no PEM CA certificate",
        ),
        (
            lambda: TlsConfig(server, key, client_ca=ca),
            r"^TLS: client_ca checks client certificates only with require_client_cert=True",
        ),
        (
            lambda: TlsConfig.from_files(
                certs / "server.pem", certs / "server.key", certs / "ca.pem"
            ),
            r"only with require_client_cert=True \(without it gRPC asks for none\): pass",
        ),
        (
            lambda: TlsConfig(server, key, ca, require_client_cert="yes"),  # type: ignore[arg-type]
            r"^TLS: require_client_cert must be True or False, got 'yes'$",
        ),
    ]
    for made, says in cases:
        with pytest.raises(ConfigError, match=says):
            made()
    # What from_files makes, the constructor takes; the file's name still leads its errors.
    assert TlsConfig(server, key, ca, require_client_cert=True).client_ca == ca
    with pytest.raises(ConfigError, match=r"^TLS: \S+/ca.pem holds no readable PEM private key"):
        TlsConfig.from_files(certs / "server.pem", certs / "ca.pem")
