"""What the SDK finds out about its TLS settings with Python's own ssl module, where gRPC's words
name only a symptom (internal to :mod:`arena.client.remote`).

* :func:`check_client_pair`: a client certificate and key that gRPC could not use (a key of
  another certificate, one under a pass phrase, a file that holds neither) are refused at start,
  naming the file. gRPC itself only logged raw "Invalid private key" lines on every attempt and
  retried "Failed to create security handshaker" for ten minutes.
* :func:`http1_server`: whether the plain-text server a TLS bot failed to shake hands with
  ("WRONG_VERSION_NUMBER", as at a plain-text referee) is an HTTP/1 server (the leaderboard's
  web port): one plain request tells.
* :func:`client_certificate_refused`: whether a referee that hung up on a TLS bot ("Socket
  closed", gRPC's only words) did so because it wants a client certificate the bot does not
  send, or does not accept the one it sends. Told by one more connection, made here: with TLS
  1.3 the server judges the client's certificate only after the handshake has completed on the
  client's side, and a gRPC server that refuses it hangs up at once, before the first HTTP/2
  frame that it sends to every client it accepts. A network failure or a restarting referee
  does not complete a handshake and then hang up without a word.
"""

from __future__ import annotations

import contextlib
import os
import socket
import ssl
import tempfile
from collections.abc import Iterator
from pathlib import Path

from arena.errors import ConfigError
from arena.pem import PairProblem, load_pair

PROBE_TIMEOUT_S = 3.0
"""How long the connection that checks a hang-up may take (a referee answers in milliseconds)."""

_CERTIFICATE_ALERTS = (
    "TLSV13_ALERT_CERTIFICATE_REQUIRED",
    "TLSV1_ALERT_CERTIFICATE_REQUIRED",
    "SSLV3_ALERT_BAD_CERTIFICATE",
    "SSLV3_ALERT_CERTIFICATE_EXPIRED",
    "SSLV3_ALERT_CERTIFICATE_REVOKED",
    "SSLV3_ALERT_CERTIFICATE_UNKNOWN",
    "SSLV3_ALERT_UNSUPPORTED_CERTIFICATE",
    "TLSV1_ALERT_UNKNOWN_CA",
)
"""The ssl module's names of the TLS alerts by which a server that says why (gRPC's only hangs
up) refuses a client's certificate, or the lack of one."""


@contextlib.contextmanager
def _pem_files(cert: bytes, key: bytes) -> Iterator[tuple[str, str]]:
    """``cert`` and ``key`` as files, for the ssl module, which reads a pair from files only;
    in a folder only this user may read, removed on leaving."""
    with tempfile.TemporaryDirectory(prefix="arena-tls-") as folder:
        paths = []
        for name, data in (("cert.pem", cert), ("key.pem", key)):
            path = Path(folder) / name
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            paths.append(str(path))
        yield paths[0], paths[1]


def check_client_pair(
    cert: bytes, key: bytes, cert_name: str, key_name: str, key_path: str = "ENCRYPTED.key"
) -> None:
    """Refuse, in one line naming the file at fault, a client certificate and key that gRPC
    could not use; ``cert_name`` and ``key_name`` say where each came from."""
    with _pem_files(cert, key) as (cert_file, key_file):
        problem = load_pair(ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT), cert_file, key_file)
    if problem is PairProblem.NO_CERTIFICATE:
        raise ConfigError(
            f"{cert_name} holds no usable certificate (-----BEGIN CERTIFICATE-----): give the "
            "client certificate there, and its private key as the key"
        )
    if problem is PairProblem.ENCRYPTED:
        # gRPC cannot decrypt it; OpenSSL would have prompted on the terminal for it (a bot
        # started by `arena run` would hang there).
        raise ConfigError(
            f"{key_name} is encrypted with a pass phrase, which gRPC cannot use; decrypt it "
            f"(openssl pkey -in {key_path} -out bot.key) and give that"
        )
    if problem is PairProblem.MISMATCH:
        raise ConfigError(
            f"{key_name} is not the private key of the client certificate in "
            f"{cert_name}; give the key that was made with that certificate"
        )
    if problem is PairProblem.NO_KEY:
        raise ConfigError(
            f"{key_name} holds no readable private key (-----BEGIN PRIVATE KEY-----): give "
            f"the private key of the client certificate in {cert_name}"
        )


def _host_and_port(address: str) -> tuple[str, int] | None:
    """The host and port of a ``HOST:PORT`` address, as checked at start (None for a gRPC
    target name, ``dns:...``, ``unix:...``, which gRPC resolves its own way)."""
    host, _, port = address.rpartition(":")
    bare = host.removeprefix("[").removesuffix("]")
    if not port.isdigit() or (":" in bare and bare == host):
        return None  # a scheme's colon, not an IPv6 address's (those come in brackets)
    return bare, int(port)


def client_certificate_refused(
    address: str, ca: bytes | None, cert: bytes | None, key: bytes | None
) -> bool:
    """Whether the referee at ``address`` hangs up on a TLS client with these settings because
    of its client certificate (or the lack of one): it closes the connection, or says why in an
    alert, once the handshake is done, before the first HTTP/2 frame it sends a client it takes."""
    where = _host_and_port(address)
    if where is None:
        return False
    host, port = where
    try:
        context = ssl.create_default_context(cadata=ca.decode("ascii", "replace") if ca else None)
    except (ssl.SSLError, ValueError):
        return False
    context.set_alpn_protocols(["h2"])
    if cert is not None and key is not None:
        with _pem_files(cert, key) as (cert_file, key_file):
            if load_pair(context, cert_file, key_file) is not None:
                return False  # check_client_pair says what is wrong, before any connection
    try:
        with (
            socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S) as raw,
            context.wrap_socket(raw, server_hostname=host) as tls,
        ):
            if tls.selected_alpn_protocol() != "h2":
                return False  # not a gRPC server: not this question
            # Nothing is sent: the server's SETTINGS frame comes unasked. Data sent to a server
            # that then hangs up could turn its close into a reset that loses its alert.
            answer = tls.recv(1)
    except ssl.SSLError as e:
        return getattr(e, "reason", None) in _CERTIFICATE_ALERTS
    except OSError:
        return False  # refused, reset, timed out: the network's failure, or a restart
    # A gRPC server that accepts a client sends it a SETTINGS frame at once (HTTP/2's server
    # preface); one that waits for the client's preface first times out above: not certain.
    return answer == b""


def http1_server(address: str) -> bool:
    """Whether a plain-text HTTP/1 server answers at ``address`` (one ``HEAD`` request: a gRPC
    server, which speaks HTTP/2 only, answers it with no ``HTTP/1.x`` status line)."""
    where = _host_and_port(address)
    if where is None:
        return False
    try:
        with socket.create_connection(where, timeout=PROBE_TIMEOUT_S) as raw:
            raw.sendall(b"HEAD / HTTP/1.0\r\n\r\n")
            return raw.recv(8).startswith(b"HTTP/1.")
    except OSError:
        return False
