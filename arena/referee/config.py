"""The referee's own settings (per server, not per table; a table's clocks are in its TableSpec)."""

from __future__ import annotations

import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from arena.errors import ConfigError
from arena.pem import NO_CERTIFICATE_BLOCK, PairProblem, holds_certificates, load_pair
from arena.table import MAX_CLOCK_MS

__all__ = ["PROTOCOL_VERSIONS", "RefereeConfig", "TlsConfig"]

PROTOCOL_VERSIONS: tuple[int, ...] = (1,)
"""The protocol versions this referee speaks (package hearts.v1)."""
SERVER_NAME = "hearts-arena-referee/0.1"
MIN_PING_INTERVAL_MS = 5000
"""The default closest spacing of a bot's HTTP/2 keepalive pings on a quiet stream: gRPC cuts a
connection that pings more often (GOAWAY too_many_pings); the protocol guide asks for 10 s."""
MAX_MS = MAX_CLOCK_MS
"""The longest time setting taken: a day, as a table's clocks and the CLI take.
Longer ones failed far from here: ``grace_ms`` every handshake (``Welcome``'s 32 bits),
``reconnect_after_ms`` the stop (``Shutdown``'s), ``keepalive_ms`` and ``min_ping_interval_ms``
the start (gRPC's options are C ints)."""
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
"""The largest ``max_message_bytes`` taken: gRPC's own limit is set to four times it, a C int."""


@dataclass(frozen=True)
class TlsConfig:
    """A certificate and key for TLS, and optionally the CA client certificates must chain to."""

    cert_chain: bytes
    """The server's PEM certificate chain."""
    private_key: bytes
    """The server's PEM private key."""
    client_ca: bytes | None = None
    """PEM root certificates that client certificates are checked against, if any."""
    require_client_cert: bool = False
    """Refuse clients without a certificate signed by ``client_ca``."""

    def __post_init__(self) -> None:
        # Checked here, not only in from_files: a pair gRPC cannot use made start() say the port
        # was in use, and a str for bytes raised gRPC's bare TypeError.
        for name in ("cert_chain", "private_key"):
            value = getattr(self, name)
            if not isinstance(value, bytes) or not value:
                raise ConfigError(
                    f"TLS: {name} must be the PEM file's bytes (TlsConfig.from_files reads the "
                    f"files), got {value!r:.40}"
                )
        if self.client_ca is not None and not isinstance(self.client_ca, bytes):
            raise ConfigError(
                f"TLS: client_ca must be PEM bytes or None, got {self.client_ca!r:.40}"
            )
        if not isinstance(self.require_client_cert, bool):
            raise ConfigError(
                f"TLS: require_client_cert must be True or False, got {self.require_client_cert!r}"
            )
        if self.require_client_cert and self.client_ca is None:
            raise ConfigError("TLS: requiring client certificates needs a client CA (client_ca)")
        if self.client_ca is not None and not self.require_client_cert:
            # gRPC's server then asks for no client certificate at all: the CA checked nothing,
            # and a certificate from any other CA was let in.
            raise ConfigError(
                "TLS: client_ca checks client certificates only with require_client_cert=True "
                "(without it gRPC asks for none): pass require_client_cert=True, or leave "
                "client_ca out"
            )
        with tempfile.TemporaryDirectory() as folder:  # ssl loads a pair from files only
            cert, key = Path(folder, "cert_chain"), Path(folder, "private_key")
            cert.write_bytes(self.cert_chain)
            key.write_bytes(self.private_key)
            # Not its dates: gRPC serves an expired certificate (the bots refuse it), and a
            # referee made by hand may mean to (from_files refuses it).
            _check_pair(cert, key, "cert_chain", "private_key", dates=False)
        if self.client_ca is not None:
            _check_ca(self.client_ca, "client_ca")

    @classmethod
    def from_files(
        cls,
        cert: Path | str,
        key: Path | str,
        client_ca: Path | str | None = None,
        *,
        require_client_cert: bool = False,
    ) -> TlsConfig:
        """Read the PEM files; a missing file, or a pair no bot could connect to (see
        :func:`_check_pair`), is a :class:`ConfigError` naming the file."""

        def read(path: Path | str) -> bytes:
            try:
                return Path(path).read_bytes()
            except OSError as e:
                raise ConfigError(f"TLS: cannot read {path}: {e.strerror}") from None
            except TypeError:  # None or a number: Path() says only "expected str, bytes..."
                raise ConfigError(f"TLS: a PEM file's path is needed, got {path!r}") from None

        cert_chain, private_key = read(cert), read(key)
        ca = None if client_ca is None else read(client_ca)
        # Checked before the constructor checks the bytes again, so that the error names the file.
        _check_pair(Path(cert), Path(key), str(cert), str(key))
        if ca is not None:
            _check_ca(ca, str(client_ca))
        return cls(
            cert_chain=cert_chain,
            private_key=private_key,
            client_ca=ca,
            require_client_cert=require_client_cert,
        )


def _check_ca(pem: bytes, name: str) -> None:
    """Refuse CA certificates that are not PEM (``name``: the file, or the field)."""
    if not holds_certificates(pem):
        raise ConfigError(f"TLS: {name} holds no PEM CA certificate ({NO_CERTIFICATE_BLOCK})")


def _check_pair(
    cert_file: Path, key_file: Path, cert: str, key: str, *, dates: bool = True
) -> None:
    """Refuse, in one line naming the file (or field) at fault, a certificate chain and private
    key that a bot could not connect to: no certificate, no key, a key of another certificate, a
    key under a pass phrase, or (``dates``) a certificate expired or not valid yet. ``cert`` and
    ``key`` name the files ``cert_file`` and ``key_file`` in the message."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    problem = load_pair(context, cert_file, key_file)
    if problem is PairProblem.NO_CERTIFICATE:
        raise ConfigError(
            f"TLS: {cert} holds no readable PEM certificate (-----BEGIN CERTIFICATE-----): give "
            "the server's certificate chain as the certificate file"
        )
    if problem is PairProblem.ENCRYPTED:
        # gRPC cannot decrypt it, and would fail to bind; OpenSSL would have prompted for it.
        raise ConfigError(
            f"TLS: the private key {key} is encrypted with a pass phrase, which the server "
            f"cannot use; decrypt it (openssl pkey -in {key} -out KEY.pem) and give that"
        )
    if problem is PairProblem.MISMATCH:
        raise ConfigError(
            f"TLS: {key} is not the private key of the certificate in {cert}; give the key "
            "that was made with that certificate"
        )
    if problem is PairProblem.NO_KEY:
        raise ConfigError(
            f"TLS: {key} holds no readable PEM private key (-----BEGIN PRIVATE KEY-----): "
            f"give the private key of the certificate in {cert} as the key file"
        )
    if not dates:
        return
    probe = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    probe.load_verify_locations(cert_file)
    wrong = _validity_problem(context, probe)
    if wrong:
        raise ConfigError(
            f"TLS: the certificate in {cert} {wrong}, so every bot would refuse it; make or "
            "get one valid now"
        )


_EXPIRED, _NOT_YET_VALID = 10, 9
"""OpenSSL's verify codes X509_V_ERR_CERT_HAS_EXPIRED and X509_V_ERR_CERT_NOT_YET_VALID."""


def _validity_problem(server: ssl.SSLContext, client: ssl.SSLContext) -> str:
    """What is wrong with the dates of the server's certificate chain ("" if nothing), found by
    a handshake in memory with a client that trusts the chain itself: the ssl module has no
    public way to read a certificate's dates, and a bot's TLS library checks them this way.
    Only the dates are judged; the host name and the issuer are the bots' business."""
    client.check_hostname = False
    client.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN  # the leaf itself may be the anchor
    to_server, to_client = ssl.MemoryBIO(), ssl.MemoryBIO()
    server_end = server.wrap_bio(to_server, to_client, server_side=True)
    client_end = client.wrap_bio(to_client, to_server)
    # The memory BIOs are shared crosswise, so a few rounds complete the handshake.
    for _ in range(8):
        for end in (client_end, server_end):
            try:
                end.do_handshake()
            except ssl.SSLWantReadError:
                continue
            except ssl.SSLCertVerificationError as e:
                if e.verify_code == _EXPIRED:
                    return "has expired"
                if e.verify_code == _NOT_YET_VALID:
                    return "is not valid yet (check this machine's clock)"
                return ""
            except ssl.SSLError:
                return ""
        if client_end.version() is not None and server_end.version() is not None:
            return ""
    return ""


_LEAST: Final[Mapping[str, int]] = {
    "max_message_bytes": 1024,
    "inbox_limit": 1,
    "handshake_ms": 1,
    "max_sessions_per_token": 1,
}
"""The smallest value of the settings whose least is not 0, so that one message gives the
whole range ("-1: must be >= 0", then "0: must be at least 1" sent users round twice)."""
_WHAT: Final[Mapping[str, str]] = {
    "handshake_ms": ": the time a bot has to send its Hello (default 5000)"
}
"""What a setting is, said when it is refused."""


@dataclass(frozen=True)
class RefereeConfig:
    """How a referee serves: limits, security, shutdown."""

    address: str = "127.0.0.1:0"
    """Where :meth:`Referee.start` listens unless told otherwise (port 0: any free port)."""
    max_message_bytes: int = 64 * 1024
    """Largest message accepted from a bot; a bigger one ends its stream with RESOURCE_EXHAUSTED
    and a message naming the limit (gRPC itself refuses four times as much)."""
    inbox_limit: int = 64
    """Messages a session may have waiting unread; one more is a flood (RESOURCE_EXHAUSTED)."""
    handshake_ms: int = 5000
    """Time a new stream has to send its Hello."""
    max_sessions_per_token: int = 64
    """Sessions one token may hold at once (a bot's pool of processes shares its token)."""
    grace_ms: int = 5000
    """Reconnection grace announced in Welcome (each table applies its own FaultPolicy.grace_ms)."""
    shutdown_grace_ms: int = 5000
    """On stop, how long running games get to finish before they are recorded INTERRUPTED."""
    write_timeout_ms: int = 2000
    """How long a message to a bot may wait to be sent (a bot not reading): outside a decision,
    from the write's start; a request, from its deadline (then a timeout) on."""
    time_warning_ms: int = 1000
    """A seat whose time bank falls below this gets a TimeWarning (once per game)."""
    reconnect_after_ms: int = 1000
    """Suggested wait before reconnecting, sent in a server-shutdown notice."""
    keep_finished: int = 64
    """Finished tables remembered for spectators (ListTables include_finished, late Watch)."""
    spectator_queue: int = 4096
    """Events a spectator may fall behind by before its stream is ended."""
    max_spectators: int = 256
    """Spectator streams open at once."""
    tls: TlsConfig | None = None
    """Serve TLS with this certificate; None serves plain TCP (loopback and tests)."""
    server_version: str = SERVER_NAME
    """Sent in Welcome."""
    welcome_message: str = ""
    """A note for bot authors, sent in Welcome."""
    keepalive_ms: int = 20_000
    """HTTP/2 keepalive ping interval, to notice dead peers between games."""
    min_ping_interval_ms: int = MIN_PING_INTERVAL_MS
    """The closest spacing of a bot's own keepalive pings (sent with no data between them) the
    referee takes; a bot pinging faster is cut off with UNAVAILABLE "Too many pings"."""
    options: tuple[tuple[str, int | str], ...] = field(default=())
    """Extra gRPC server options."""

    def __post_init__(self) -> None:
        for name in (
            "max_message_bytes",
            "inbox_limit",
            "handshake_ms",
            "grace_ms",
            "shutdown_grace_ms",
            "write_timeout_ms",
            "time_warning_ms",
            "reconnect_after_ms",
            "keep_finished",
            "spectator_queue",
            "max_spectators",
            "keepalive_ms",
            "min_ping_interval_ms",
            "max_sessions_per_token",
        ):
            value = getattr(self, name)
            low = _LEAST.get(name, 0)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ConfigError(
                    f"referee.{name} must be a whole number >= {low}, got {value!r}"
                    f"{_WHAT.get(name, '')}"
                )
            if name.endswith("_ms") and value > MAX_MS:
                raise ConfigError(
                    f"referee.{name} must be at most a day ({MAX_MS} ms), got {value!r}"
                )
        for name in ("address", "server_version", "welcome_message"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise ConfigError(f"referee.{name} must be a string, got {value!r}")
        if self.tls is not None and not isinstance(self.tls, TlsConfig):
            raise ConfigError(
                # The type only: a (cert, key) tuple's repr put the whole private key in the text.
                f"referee.tls must be a TlsConfig (TlsConfig.from_files(cert, key)) or None, "
                f"got a value of type {type(self.tls).__name__}"
            )
        if not isinstance(self.options, tuple | list) or not all(
            isinstance(o, tuple) and len(o) == 2 and isinstance(o[0], str) for o in self.options
        ):
            raise ConfigError(
                "referee.options must be (name, value) pairs of gRPC server options, like "
                f"(('grpc.max_concurrent_streams', 100),), got {self.options!r}"
            )
        if self.max_message_bytes > MAX_MESSAGE_BYTES:
            raise ConfigError(
                f"referee.max_message_bytes must be at most {MAX_MESSAGE_BYTES} (256 MiB), got "
                f"{self.max_message_bytes}; a bot's messages are a few hundred bytes"
            )
