"""Run a :class:`~arena.client.Bot` against a referee over gRPC: :func:`run` and :func:`serve`.

One session is one ``BotService.Play`` stream (see ``proto/hearts/v1/bot_service.proto``). The
runner says Hello, then for every referee message handles, in the protocol's order, the welcome,
the events (each to its hook), the decision request (the bot's answer goes straight back) and
the shutdown. The bot runs on the caller's thread; gRPC's own thread only drains the outbox, and
a reader thread of the SDK's notes when each referee message arrives (see :meth:`_Runner.session`).

What happens when things go wrong:

* The referee refuses the bot (``UNAUTHENTICATED``, ``PERMISSION_DENIED``, ``FAILED_PRECONDITION``
  for a protocol version it does not speak, ``INVALID_ARGUMENT``, ``UNIMPLEMENTED``):
  :func:`serve` raises :class:`Refused`; :func:`run` prints one line and exits with code 2.
* The connection fails or breaks (``UNAVAILABLE``, ``INTERNAL``, a reset...): reconnect with
  exponential backoff until ``give_up_after`` seconds pass without a welcome (:class:`GaveUp`,
  exit code 1). That is 600 s unless the argument or the environment variable
  ``ARENA_GIVE_UP_S`` says otherwise (seconds, or ``inf`` to keep trying forever); ``arena run``
  sets it short, so that a bot whose director has died does not linger. A referee that restarts
  within the reconnection grace gives the seat back. The new session's Hello names the broken
  one (``resume_session_id``), so that a referee that has not noticed the break yet (a half-open
  connection) ends that session at once and gives this one its seat, instead of timing out on it.
* The referee reports a fault of the bot (a late, illegal or malformed answer): a warning line on
  stderr, then the bot's :meth:`~arena.client.Bot.on_fault` hook. Nothing is hidden.
* The bot's own ``choose_pass``/``choose_play`` raises: the traceback goes to stderr and the SDK
  answers at once with the base class's choice (lowest legal card; highest cards to pass). Why not
  stay silent and let the referee's clock expire: that would stall the whole table for the full
  move deadline and the time bank, and end in a TIMEOUT fault that says nothing of the bug, while
  the referee's substitute would be just as arbitrary. The author sees the bug; the table goes on.
  An exception in an event hook is logged the same way and the event skipped.
* :func:`run` is sent SIGTERM (as ``arena run`` does to stop its bots) or SIGINT (Ctrl-C): it
  stops asking the bot, says Goodbye (so the referee frees the seat at once instead of holding it
  through the reconnection grace), waits up to half a second for the referee to close the stream,
  and exits: code 0 after SIGTERM, 130 after Ctrl-C. A second signal exits at once. A thread of
  the SDK's sees both signals too (see :class:`_SignalWatch`), so that they work while the bot's
  code is in C code, where Python runs no signal handler.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import math
import os
import queue
import random
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import NoReturn

import grpc

import arena
from arena.client.answers import fit_pass, fit_play, pass_codes, play_code
from arena.client.bot import Bot, api_slips, default_pass, default_play, dispatch_event
from arena.client.events import FaultNotice
from arena.client.tls import check_client_pair, client_certificate_refused, http1_server
from arena.client.view import DecisionKind, DecisionView
from arena.client.wire import (
    PROTOCOL_VERSION,
    decision_kind,
    event_of,
    pass_decision,
    play_decision,
    view_of_request,
)
from arena.errors import ArenaError, ConfigError
from arena.pem import NO_CERTIFICATE_BLOCK, holds_certificates
from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb
from arena.proto.hearts.v1 import bot_service_pb2_grpc as bot_grpc
from arena.proto.hearts.v1 import events_pb2 as ev_pb
from arena.table import MAX_PORT
from arena.text import terminal_line, terminal_safe

__all__ = [
    "ENV_ADDRESS",
    "ENV_BOT_NAME",
    "ENV_GIVE_UP",
    "ENV_TLS_CA",
    "ENV_TOKEN",
    "EXIT_GAVE_UP",
    "EXIT_INTERRUPTED",
    "EXIT_REFUSED",
    "EXIT_TERMINATED",
    "ClientSettings",
    "GaveUp",
    "Refused",
    "Removed",
    "SessionEnd",
    "run",
    "serve",
]

ENV_ADDRESS = "ARENA_ADDRESS"
"""The referee's ``host:port``."""
ENV_TOKEN = "ARENA_TOKEN"
"""The bot's secret token."""
ENV_BOT_NAME = "ARENA_BOT_NAME"
"""The bot's display name."""
ENV_TLS_CA = "ARENA_TLS_CA"
"""Path of a PEM CA certificate: connect with TLS and trust this CA."""
ENV_TLS_CERT = "ARENA_TLS_CERT"
"""Path of a PEM client certificate, for referees that ask for one (with ENV_TLS_KEY)."""
ENV_TLS_KEY = "ARENA_TLS_KEY"
"""Path of the client certificate's PEM private key."""
ENV_TLS = "ARENA_TLS"
"""Set to 1 to connect with TLS trusting the system's CAs (no ARENA_TLS_CA needed); 0 for plain
text, refused beside ARENA_TLS_CA or ARENA_TLS_CERT, which ask for TLS."""
ENV_GIVE_UP = "ARENA_GIVE_UP_S"
"""Seconds to keep retrying an unreachable referee before exiting (``inf``: forever)."""

EXIT_REFUSED = 2
"""Exit code of :func:`run` when the referee refuses the bot (token, version, handshake)."""
EXIT_GAVE_UP = 1
"""Exit code of :func:`run` when the referee stays unreachable past ``give_up_after``."""
EXIT_INTERRUPTED = 130
"""Exit code of :func:`run` after Ctrl-C (128 + SIGINT, as shells report it)."""
EXIT_TERMINATED = 0
"""Exit code of :func:`run` after SIGTERM: a stop that was asked for is a clean stop."""

BACKOFF_FIRST_S = 0.1
"""First wait before reconnecting; it doubles with each failure in a row."""
BACKOFF_MAX_S = 5.0
"""Longest wait between two connection attempts."""
BACKOFF_JITTER = 0.2
"""Random spread of each wait (a fraction), so that many bots do not reconnect in lockstep."""
DEFAULT_GIVE_UP_S = 600.0
"""How long :func:`run` keeps trying to reach an unreachable referee before it exits."""
GOODBYE_WAIT_S = 0.5
"""After a Goodbye, how long to wait for the referee to close the stream before closing it."""
KEEPALIVE_TIME_MS = 20_000
"""How often the bot pings a quiet connection (the protocol guide asks for 10 s or more)."""
KEEPALIVE_TIMEOUT_MS = 10_000
"""How long an unanswered ping may wait before the connection counts as broken."""
WELCOME_WAIT_S = 20.0
"""Longest wait for the referee's Welcome after connecting (gRPC's own connection timeout)."""
WELCOME_WAIT_MIN_S = 5.0
"""Shortest wait for a Welcome, however little of the give-up time is left."""

REFUSALS = {
    grpc.StatusCode.UNAUTHENTICATED: "refused the token",
    grpc.StatusCode.PERMISSION_DENIED: "does not let this bot play now",
    grpc.StatusCode.FAILED_PRECONDITION: "does not speak this protocol version",
    grpc.StatusCode.INVALID_ARGUMENT: "could not understand the handshake",
    grpc.StatusCode.UNIMPLEMENTED: "is not a Hearts Arena referee (no BotService)",
}
"""Statuses that retrying cannot fix, and what they mean for the author."""


log = logging.getLogger("arena.client")


_COME_BACK = ("SERVER_SHUTDOWN", "KICKED")
"""Shutdown reasons after which the bot reconnects when the referee says it may."""


class Removed(ArenaError):
    """The referee ended the bot's session for good (the organiser removed it, e.g. a ban)."""


class Refused(ArenaError):
    """The referee refused this bot; retrying with the same settings gets the same answer."""

    def __init__(self, address: str, name: str, code: grpc.StatusCode, detail: str) -> None:
        meaning = REFUSALS.get(code, "refused the session")
        detail = " ".join(detail.split()) or "no details"
        super().__init__(
            f"bot {name!r}: the referee at {address} {meaning} ({code.name}): {detail}"
        )
        self.code = code
        """The gRPC status code."""


class GaveUp(ArenaError):
    """The referee could not be reached for longer than the runner was told to keep trying."""


@dataclass(frozen=True)
class SessionEnd:
    """How :func:`serve` ended: the referee's shutdown notice, or a plain close of the stream."""

    reason: str
    """The ShutdownReason without its prefix (``"NO_MORE_GAMES"``...) or ``"CLOSED"``."""
    message: str
    """The referee's explanation (empty for a plain close)."""


@dataclass(frozen=True)
class ClientSettings:
    """Where and how to connect: from arguments, else from the environment."""

    address: str
    """The referee's ``host:port``."""
    token: str = field(repr=False)  # a bot's log of its settings must not show it
    """The bot's secret token."""
    name: str
    """The bot's display name."""
    tls: bool = False
    """Whether to connect with TLS."""
    tls_ca: bytes | None = None
    """PEM CA certificate(s) to trust (None with ``tls``: the system's)."""
    tls_cert: bytes | None = None
    """PEM client certificate, for referees that ask for one."""
    tls_key: bytes | None = field(default=None, repr=False)  # a secret, as the token
    """The client certificate's PEM private key."""
    bot_version: str = ""
    """The bot's own version (Hello.bot_version), written to the referee's log with the session."""
    decide_forced_moves: bool = False
    """Ask the bot even when it holds a single legal card (slower; off by default)."""
    give_up_after: float = DEFAULT_GIVE_UP_S
    """Seconds without a welcome after which to stop retrying (``math.inf``: never)."""

    @classmethod
    def resolve(
        cls,
        address: str | None = None,
        token: str | None = None,
        name: str | None = None,
        *,
        tls_ca: str | Path | None = None,
        bot_version: str = "",
        decide_forced_moves: bool = False,
        give_up_after: float | None = None,
    ) -> ClientSettings:
        """Settings from the arguments given, the rest from ``ARENA_*`` variables."""
        # Checked first: a number or bytes here failed deep inside (an AttributeError on
        # startswith, a TypeError from protobuf at the first Hello), with a traceback.
        for arg, value in (
            ("address", address),
            ("token", token),
            ("name", name),
            ("bot_version", bot_version),
        ):
            if value is not None and not isinstance(value, str):
                shown = _shown(value, secret=arg == "token")
                raise ConfigError(f"{arg} must be a string, got {shown}")
        if not isinstance(bot_version, str):  # None: taken here, then refused by serve
            raise ConfigError(f"bot_version must be a string ('' for none), got {bot_version!r}")
        if tls_ca is not None and not isinstance(tls_ca, str | Path):
            raise ConfigError(f"tls_ca must be a path (a str or a Path), got {tls_ca!r}")
        if not isinstance(decide_forced_moves, bool):
            raise ConfigError(
                f"decide_forced_moves must be True or False, got {decide_forced_moves!r}"
            )
        if give_up_after is not None:
            _check_give_up(give_up_after)
        env = os.environ
        # Named as it was given: a bad run(address=...) was said to be ARENA_ADDRESS's, unset.
        address_from = "address" if address else ENV_ADDRESS
        token_from = "token" if token else ENV_TOKEN
        name_from = "name" if name else ENV_BOT_NAME
        address = (address or env.get(ENV_ADDRESS, "")).strip()
        token = token or env.get(ENV_TOKEN, "")
        name = name or env.get(ENV_BOT_NAME, "")
        missing = [
            var
            for var, value in ((ENV_ADDRESS, address), (ENV_TOKEN, token), (ENV_BOT_NAME, name))
            if not value
        ]
        if missing:
            meaning = {
                ENV_ADDRESS: "the referee's host:port",
                ENV_TOKEN: "the bot's token",
                ENV_BOT_NAME: "its name",
            }
            raise ConfigError(
                f"set {' and '.join(missing)} (or pass {'it' if len(missing) == 1 else 'them'} "
                "to run()): " + ", ".join(meaning[var] for var in missing)
            )
        _check_address(address, address_from)
        _check_text(token, token_from, secret=True)
        _check_text(name, name_from)
        if len(name) > MAX_BOT_NAME:
            # Past the referee's limit: refused there at once, but a name past its message size
            # limit (100 kB) was retried as a transient failure for ARENA_GIVE_UP_S.
            raise ConfigError(
                f"{name_from} is {len(name)} characters long: a bot's name is 1 to "
                f"{MAX_BOT_NAME} characters"
            )
        ca_path = tls_ca or env.get(ENV_TLS_CA) or None
        cert_path, key_path = env.get(ENV_TLS_CERT) or None, env.get(ENV_TLS_KEY) or None
        if (cert_path is None) != (key_path is None):
            raise ConfigError(f"set both {ENV_TLS_CERT} and {ENV_TLS_KEY}, or neither")
        tls_flag = env.get(ENV_TLS, "").strip()
        if tls_flag not in ("", "0", "1"):
            # Read as "on" whatever it said, ARENA_TLS=false or =no turned TLS on (and the
            # Node.js bot, reading only "1", left it off): say so instead.
            raise ConfigError(
                f"{ENV_TLS} must be 1 (connect with TLS) or 0 (plain text), got {tls_flag!r}"
            )
        if tls_flag == "0" and (ca_path or cert_path):
            # Which one was meant cannot be guessed: the file used to win silently, so that
            # "0", which this SDK's own message calls plain text, connected with TLS.
            given = "tls_ca" if tls_ca else ENV_TLS_CA if ca_path else ENV_TLS_CERT
            drop = {
                "tls_ca": "leave out tls_ca",
                ENV_TLS_CA: f"unset {ENV_TLS_CA}",
                ENV_TLS_CERT: f"unset {ENV_TLS_CERT} and {ENV_TLS_KEY}",
            }[given]
            raise ConfigError(
                f"{ENV_TLS}=0 asks for plain text, but {given} asks for TLS: unset {ENV_TLS} to "
                f"connect with TLS, or {drop} to connect in plain text"
            )
        tls = bool(ca_path or cert_path or tls_flag == "1")
        if give_up_after is None:
            text = env.get(ENV_GIVE_UP, "").strip()
            give_up_after = _seconds(text, ENV_GIVE_UP) if text else DEFAULT_GIVE_UP_S
        tls_cert = tls_key = None
        if cert_path and key_path:
            tls_cert = _read(cert_path, "client certificate", ENV_TLS_CERT)
            tls_key = _read(key_path, "client key", ENV_TLS_KEY)
            # Checked here, as the CA file is: gRPC, given a pair it cannot use, logged raw
            # lines on each attempt and retried "Failed to create security handshaker".
            check_client_pair(
                tls_cert,
                tls_key,
                f"{ENV_TLS_CERT} {cert_path!r}",
                f"{ENV_TLS_KEY} {key_path!r}",
                key_path,
            )
        return cls(
            address=address,
            token=token,
            name=name,
            tls=tls,
            tls_ca=_read_ca(ca_path, "tls_ca" if tls_ca else ENV_TLS_CA) if ca_path else None,
            tls_cert=tls_cert,
            tls_key=tls_key,
            bot_version=bot_version,
            decide_forced_moves=decide_forced_moves,
            give_up_after=give_up_after,
        )


_TARGET_SCHEMES = ("dns:", "unix:", "unix-abstract:", "ipv4:", "ipv6:", "vsock:")
MAX_BOT_NAME = 64
"""The longest name a referee takes in a Hello (as ``arena.referee.server.MAX_BOT_NAME``)."""


def _check_text(value: str, what: str, *, secret: bool = False) -> None:
    """Refuse a setting that is not text UTF-8 can carry: bytes of another encoding (a Latin-1
    terminal's "é"), which Python keeps as lone surrogates, failed in building the Hello."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        shown = "" if secret else f" {value!r}"
        raise ConfigError(
            f"{what}{shown} is not UTF-8 text (it holds bytes of another encoding): give it in "
            "UTF-8"
        ) from None


def _check_address(address: str, what: str = ENV_ADDRESS) -> None:
    """Refuse an address that cannot name a referee (a typo would otherwise retry for minutes);
    ``what`` names where it came from in the message."""
    if address.startswith(_TARGET_SCHEMES):
        return  # a gRPC target name: gRPC itself says what is wrong with it
    scheme, slashes, rest = address.partition("://")
    if slashes:
        # A URL's scheme would be taken for part of the host name and retried for minutes.
        raise ConfigError(
            f"{what} {address!r}: give the referee's HOST:PORT without {scheme}://, "
            f"e.g. {rest.rstrip('/') or '127.0.0.1:50051'}"
        )
    host, sep, port = address.rpartition(":")
    if sep and host and port.isascii() and port.isdigit() and not 0 < int(port) <= MAX_PORT:
        # Said as such: "expected HOST:PORT" alone for 127.0.0.1:99999 left the user to guess.
        raise ConfigError(
            f"{what} {address!r}: port {int(port)} is not a port number, 1 to {MAX_PORT}"
        )
    # ASCII digits only ("５０" passes isdigit), and no space in the host: gRPC cannot read
    # either, and retried them for minutes ("Failed to parse port", "Misformatted domain name").
    if (
        not sep
        or not host
        or not (port.isascii() and port.isdigit())
        or not 0 < int(port) <= MAX_PORT
        or any(c.isspace() or not c.isprintable() for c in host)
    ):
        raise ConfigError(
            f"{what} {address!r}: expected the referee's HOST:PORT, e.g. 127.0.0.1:50051"
        )
    bracketed = host.startswith("[") and host.endswith("]")
    if bracketed and not _is_ipv6(host[1:-1]):
        # gRPC retried "[zz]:50051" for minutes as an unparsable name.
        raise ConfigError(
            f"{what} {address!r}: only an IPv6 address goes in brackets, and {host[1:-1]!r} is "
            f"not one: give HOST:PORT, e.g. 127.0.0.1:50051 or [::1]:50051"
        )
    if ":" in host and not bracketed:
        if not _is_ipv6(host):
            # "127.0.0.1:50051:50051" was told to bracket "127.0.0.1:50051" as an IPv6 address.
            raise ConfigError(
                f"{what} {address!r}: expected the referee's HOST:PORT with one colon, before "
                "the port, e.g. 127.0.0.1:50051 (an IPv6 address in brackets, [::1]:50051)"
            )
        # gRPC retried "::1:50051" for minutes as a misformatted domain name.
        raise ConfigError(f"{what} {address!r}: an IPv6 address goes in brackets, [{host}]:{port}")


def _is_ipv6(text: str) -> bool:
    """Whether ``text`` is an IPv6 address (with a zone, ``fe80::1%eth0``, or without)."""
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def _check_give_up(value: object) -> None:
    """Refuse a ``give_up_after`` that is not a number of seconds, 0 or more (NaN included)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"give_up_after must be a number of seconds, got {value!r}")
    if not value >= 0:  # NaN too: it was slept on ("retrying in nan s", then a ValueError)
        raise ConfigError(f"give_up_after must be 0 or more seconds, got {value!r}")


def _check_bot(bot: object) -> None:
    """Refuse what is not a Bot instance, in one sentence (not an AttributeError from inside)."""
    if isinstance(bot, Bot):
        return
    if isinstance(bot, type):
        # run(MyBot): the class where an instance belongs, the commonest slip of all.
        raise ConfigError(
            f"the bot is the class {bot.__name__}, not a Bot: give an instance, {bot.__name__}()"
        )
    raise ConfigError(f"the bot is {bot!r}, not a Bot: give an instance of a Bot subclass")


def _seconds(text: str, var: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value >= 0:  # NaN too
        raise ConfigError(f"{var} must be a number of seconds, 0 or more (or inf), got {text!r}")
    return value


def _read(path: str | Path, what: str, given: str) -> bytes:
    """A PEM file's bytes; one line if it cannot be read or is not PEM (gRPC would only say, on
    every retry, that it failed to create a security handshaker). ``given``: the variable (or
    argument) that named it, for the message."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ConfigError(
            f"cannot read the TLS {what} {str(path)!r} ({given}): {e.strerror}"
        ) from None
    if b"-----BEGIN " not in data:
        raise ConfigError(
            f"the TLS {what} {str(path)!r} ({given}) is not a PEM file (-----BEGIN ...)"
        )
    return data


def _read_ca(path: str | Path, given: str) -> bytes:
    """The CA certificate(s) to trust, checked to hold at least one usable certificate."""
    data = _read(path, "CA certificate", given)
    _check_ca(data, f"the TLS CA certificate {str(path)!r} ({given})")
    return data


def _check_ca(data: bytes, where: str) -> None:
    """Refuse CA bytes that hold no usable certificate, ``where`` naming them in the message."""
    if not holds_certificates(data):
        raise ConfigError(f"{where} holds no usable certificate ({NO_CERTIFICATE_BLOCK})")


def _shown(value: object, *, secret: bool) -> str:
    """A refused value as an error shows it: a secret (a token, a key) by its type only, since
    a bot's stderr is kept in its log; anything else cut to 80 characters."""
    return f"a value of type {type(value).__name__}" if secret else f"{value!r:.80}"


def _check_settings(settings: ClientSettings) -> None:
    """Refuse hand-made settings that :meth:`ClientSettings.resolve` would have refused.

    Settings built directly skip resolve()'s checks: a number for the address failed inside
    gRPC with an AttributeError, a str CA with a TypeError, and a URL, an address without a
    port or CA bytes that are no certificate were retried until ``give_up_after`` ran out.
    """
    fields: tuple[tuple[str, type | tuple[type, ...], str], ...] = (
        ("address", str, "a string, HOST:PORT"),
        ("token", str, "a string"),
        ("name", str, "a string"),
        ("bot_version", str, "a string"),
        ("tls", bool, "True or False"),
        ("decide_forced_moves", bool, "True or False"),
        ("tls_ca", (bytes, type(None)), "PEM bytes or None (read the file: Path.read_bytes())"),
        ("tls_cert", (bytes, type(None)), "PEM bytes or None (read the file: Path.read_bytes())"),
        ("tls_key", (bytes, type(None)), "PEM bytes or None (read the file: Path.read_bytes())"),
    )
    for field_name, kind, what in fields:
        value = getattr(settings, field_name)
        if not isinstance(value, kind):
            shown = _shown(value, secret=field_name in ("token", "tls_key"))
            raise ConfigError(f"settings.{field_name} must be {what}, got {shown}")
    _check_address(settings.address, "settings.address")
    if (settings.tls_cert is None) != (settings.tls_key is None):
        raise ConfigError("set both settings.tls_cert and settings.tls_key, or neither")
    if not settings.tls and (settings.tls_ca is not None or settings.tls_cert is not None):
        # As ARENA_TLS=0 beside a TLS file: the file would be ignored and the bot connect in
        # plain text, which of the two was meant cannot be guessed.
        given = "settings.tls_ca" if settings.tls_ca is not None else "settings.tls_cert"
        raise ConfigError(
            f"settings.tls is False (plain text), but {given} is for TLS: set tls=True to "
            f"connect with TLS, or leave {given} out"
        )
    if settings.tls_ca is not None:
        _check_ca(settings.tls_ca, "settings.tls_ca")


def run(
    bot: Bot,
    address: str | None = None,
    token: str | None = None,
    name: str | None = None,
    *,
    tls_ca: str | Path | None = None,
    bot_version: str = "",
    decide_forced_moves: bool = False,
    give_up_after: float | None = None,
) -> None:
    """Connect ``bot`` to the referee and play until told to stop; for a bot's ``__main__``.

    The address, token and name come from the arguments or from ``ARENA_ADDRESS``,
    ``ARENA_TOKEN`` and ``ARENA_BOT_NAME``; ``ARENA_TLS_CA`` (a PEM file) turns on TLS;
    ``give_up_after`` from ``ARENA_GIVE_UP_S``, else 600 s. Returns when the referee ends the
    session. A refusal (bad token, protocol version...) or a bad setting prints one line on stderr
    and exits with code 2; a referee unreachable for ``give_up_after`` seconds, or the organiser
    removing the bot, one line and code 1. SIGTERM says Goodbye to the referee and exits with code
    0; Ctrl-C the same with code 130.
    """
    _default_logging()
    runner: _Runner | None = None
    try:
        _check_bot(bot)
        settings = ClientSettings.resolve(
            address,
            token,
            name,
            tls_ca=tls_ca,
            bot_version=bot_version,
            decide_forced_moves=decide_forced_moves,
            give_up_after=give_up_after,
        )
        runner = _Runner(bot, settings)
        with _stop_on_signals(runner):
            _serve(runner, settings.give_up_after)
    except (ConfigError, Refused) as e:
        _fatal(str(e), EXIT_REFUSED)
    except (GaveUp, Removed) as e:
        _fatal(str(e), EXIT_GAVE_UP)
    except (KeyboardInterrupt, _Interrupted):
        pass  # told below, by the signal that stopped it
    else:
        assert runner is not None
        if runner.stop_signal is None:
            return
    if runner is not None and runner.stop_signal == signal.SIGTERM:
        log.info("stopped by SIGTERM")
        raise SystemExit(EXIT_TERMINATED)
    _fatal("interrupted", EXIT_INTERRUPTED)


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
"""The signals on which :func:`run` says Goodbye and exits."""


class _Interrupted(BaseException):
    """A stop signal cut a wait short (a backoff sleep): stop now."""


_NEVER = threading.Event()
"""Never set: where one observer of the stop signals waits while the other exits the process."""


def _exit_now(first: signal.Signals) -> NoReturn:
    """A second stop signal: the user insists, so exit at once, as run() would have after the
    first (code and line), without unwinding through the bot's code.

    Raising in the handler instead unwound through whatever the bot was running: a bare
    ``except:`` in it swallowed the second Ctrl-C, and the unwinding waited on gRPC's teardown.
    The Goodbye was queued at the first signal. Raw writes: the handler may have interrupted a
    write to the same stream.
    """
    if first == signal.SIGTERM:
        line, code = "stopped by SIGTERM", EXIT_TERMINATED
    else:
        line, code = "interrupted", EXIT_INTERRUPTED
    with contextlib.suppress(OSError):
        os.write(sys.stderr.fileno(), f"arena.client: {line}\n".encode())
    os._exit(code)


@contextmanager
def _stop_on_signals(runner: _Runner) -> Iterator[None]:
    """While in effect, SIGTERM and SIGINT ask ``runner`` to stop."""
    if threading.current_thread() is not threading.main_thread():
        yield  # Python lets only the main thread set handlers: signals keep their defaults
        return
    previous = {sig: signal.signal(sig, runner.on_signal) for sig in STOP_SIGNALS}
    try:
        runner.watch = _SignalWatch(runner)
        try:
            yield
        finally:
            runner.watch.close()
            runner.watch = None
    finally:
        for sig, handler in previous.items():
            if handler is not None:  # None: set outside Python, cannot be put back
                signal.signal(sig, handler)


class _SignalWatch:
    """A thread that sees each signal as it comes, through Python's wakeup fd, and tells
    ``runner`` of the stop signals (:meth:`_Runner.on_stop`), as its handler does.

    Why the handler is not enough: Python runs it on the main thread only, between two
    bytecodes. Never while that thread is in C code (a long SQLite query, a C extension's
    computation): the bot heard neither the first Ctrl-C nor the second until the call returned.
    And a signal that comes just as the handler returns to the wait it interrupted (``time.sleep``
    resumes after it) is handled only once that wait ends: a second Ctrl-C could be lost for the
    rest of a long decision. The C-level handler writes the signal's number to the wakeup fd at
    once, wherever the process is, and this thread runs unless the C code holds the GIL.
    """

    def __init__(self, runner: _Runner) -> None:
        self._reader, self._writer = socket.socketpair()
        self._writer.setblocking(False)  # set_wakeup_fd requires it: a signal never waits
        self._previous = signal.set_wakeup_fd(self._writer.fileno(), warn_on_full_buffer=False)
        self._thread = threading.Thread(
            target=self._watch, args=(runner,), name="arena-signals", daemon=True
        )
        self._thread.start()

    def _watch(self, runner: _Runner) -> None:
        seen = 0
        while numbers := self._reader.recv(64):  # b"" once close() has closed the other end
            for number in numbers:
                if number in STOP_SIGNALS:
                    seen += 1
                    runner.on_stop(signal.Signals(number), seen)

    def rearm(self) -> None:
        """Take the wakeup fd back if the bot's code has cleared it (closing an asyncio loop
        that had signal handlers does); one the bot has set and may still use is left to it."""
        mine = self._writer.fileno()
        current = signal.set_wakeup_fd(mine, warn_on_full_buffer=False)
        if current not in (-1, mine):
            signal.set_wakeup_fd(current)

    def close(self) -> None:
        """Put back the wakeup fd found (unless the bot's code has set its own), end the thread."""
        try:
            current = signal.set_wakeup_fd(self._previous)
            if current not in (-1, self._writer.fileno()):
                signal.set_wakeup_fd(current)
        finally:
            self._writer.close()
            self._thread.join()
            self._reader.close()


def _fatal(message: str, code: int) -> None:
    # The message may quote the referee (a ban's reason): its control characters escaped.
    print(f"arena.client: {terminal_line(message)}", file=sys.stderr, flush=True)
    raise SystemExit(code)


class _SafeFormatter(logging.Formatter):
    """Log lines with their control characters escaped: the SDK's lines quote the referee's
    words (a server's name, an organiser's reason), which must not retitle or clear the bot
    author's terminal."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        """The record's line, its message on that one line (a line break in the referee's
        words could forge a log line of the SDK's own)."""
        record.message = terminal_line(record.message)
        return super().formatMessage(record)

    def format(self, record: logging.LogRecord) -> str:
        """The record as the base formatter writes it (a traceback's lines kept), made safe for
        a terminal."""
        return terminal_safe(super().format(record))


def _default_logging() -> None:
    # Only when the author has not set logging up: warnings and game summaries to stderr.
    if logging.getLogger().handlers or log.handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_SafeFormatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False


def serve(bot: Bot, settings: ClientSettings, *, give_up_after: float | None = None) -> SessionEnd:
    """Play sessions with the referee until it ends one for good; reconnect after failures.

    Raises :class:`Refused` when the referee refuses the bot, :class:`GaveUp` when it stays
    unreachable (no welcome) for ``give_up_after`` seconds (None: ``settings.give_up_after``;
    ``math.inf``: keep trying forever), :class:`Removed` when the organiser removes the bot (a
    kick that lets it back is followed by a reconnection instead), and
    :class:`~arena.errors.ConfigError` when the first connection fails on a TLS setting (TLS at
    a plain-text port; a certificate not trusted, out of date or not for the address's host; a
    referee that wants a client certificate the bot does not send, or refuses the one it sends;
    the leaderboard's web port; a host gRPC cannot read as a name, such as ``bot@host``) or the
    settings' client certificate and key do not go together.
    """
    _check_bot(bot)
    if not isinstance(settings, ClientSettings):
        raise ConfigError(
            f"settings must be a ClientSettings, e.g. ClientSettings.resolve(), got {settings!r}"
        )
    _check_settings(settings)
    limit = settings.give_up_after if give_up_after is None else give_up_after
    _check_give_up(limit)
    if settings.tls and settings.tls_cert is not None and settings.tls_key is not None:
        # Settings made by hand have not been through resolve()'s check.
        check_client_pair(
            settings.tls_cert, settings.tls_key, "settings.tls_cert", "settings.tls_key"
        )
    return _serve(_Runner(bot, settings), limit)


def _reconnect_wait(pause: float | None, delay: float, draw: float) -> float:
    """Seconds to wait before the next attempt: the referee's ``pause`` (when it asked for one,
    never less) or the backoff ``delay``, spread by :data:`BACKOFF_JITTER`; ``draw`` in [0, 1)."""
    if pause is not None:
        # Shutdown.reconnect_after_ms is how long to wait: the spread only lengthens it.
        return pause * (1 + BACKOFF_JITTER * draw)
    return delay * (1 + BACKOFF_JITTER * (2 * draw - 1))


def _serve(runner: _Runner, give_up_after: float) -> SessionEnd:
    """:func:`serve` with a runner that a signal handler may ask to stop."""
    settings = runner.settings
    failing_since: float | None = None
    delay = BACKOFF_FIRST_S
    jitter = random.Random()
    ever_welcomed = False
    while True:
        runner.welcomed = False
        runner.went_on = False
        pause: float | None = None  # the referee's own suggestion, when it gives one
        invited = ""  # why the referee ended a session it lets the bot back into
        end: SessionEnd | None = None
        # An attempt counts towards the give-up time, and is cut short by it: a referee that
        # takes the connection and never answers (a stopped process, a frozen machine) held
        # each attempt for gRPC's 20 s, and a 5 s ARENA_GIVE_UP_S gave up after 41 s.
        attempt_at = time.monotonic()
        since = attempt_at if failing_since is None else failing_since
        runner.welcome_within = min(
            WELCOME_WAIT_S, max(WELCOME_WAIT_MIN_S, since + give_up_after - attempt_at)
        )
        outcome = runner.session()
        if isinstance(outcome, _Broken):
            code, detail = outcome.code, outcome.detail
            # Raised here, outside any handler of gRPC's error: nothing of the call travels
            # with it (see _Broken).
            # The Hello itself over the referee's message limit (a token or name of 100 kB):
            # the same Hello every time, so no retry can fit (it retried for ARENA_GIVE_UP_S).
            oversized = (
                code == grpc.StatusCode.RESOURCE_EXHAUSTED
                and not runner.welcomed
                and "over this referee's limit" in detail
            )
            if (code in REFUSALS or oversized) and runner.stop_signal is None:
                untrimmed = settings.token != settings.token.strip()
                if code == grpc.StatusCode.UNAUTHENTICATED and untrimmed:
                    # A token pasted with its line break (a CRLF .env file leaves "\r"): the
                    # referee's "unknown token" alone sent the author to check the characters.
                    # Not named ARENA_TOKEN: the token may have come from run(token=...).
                    detail += "; the token begins or ends with a space or a line break: remove it"
                raise Refused(settings.address, settings.name, code, detail)
        else:
            end = outcome
        if runner.stop_signal is not None:
            return end or SessionEnd("GOODBYE", "the referee did not confirm it")
        now = time.monotonic()
        went_on = runner.welcomed and (runner.went_on or now - runner.welcomed_at >= BACKOFF_MAX_S)
        if end is not None:
            # A restart, or a kick that lets the bot back: come back after the pause asked for.
            if end.reason not in _COME_BACK or not runner.may_reconnect:
                if end.reason == "KICKED":
                    raise Removed(
                        f"the referee at {settings.address} removed bot {settings.name!r}: "
                        f"{end.message or 'no reason given'}"
                    )
                return end
            code, detail = grpc.StatusCode.UNAVAILABLE, end.message
            # Never sooner than the backoff after a session that ended as it began: a referee
            # that welcomed and sent the bot away at once, again and again, had it reconnect
            # ten times a second, forever.
            pause = max(runner.reconnect_after_s, BACKOFF_FIRST_S if went_on else delay)
            invited = (
                "kicked by the referee, which lets the bot back"
                if end.reason == "KICKED"
                else "the referee is restarting"
            )
        ever_welcomed = ever_welcomed or runner.welcomed
        if runner.welcomed:  # the referee is there: the give-up time counts from now
            failing_since = now
            if went_on:
                # Only then a fresh failure: a session that broke right after its welcome (an
                # INTERNAL, a message over the SDK's limit, each time) kept the backoff at its
                # first 0.1 s, and the bot reconnected ten times a second, forever.
                delay = BACKOFF_FIRST_S
        elif failing_since is None:
            failing_since = attempt_at
        left = failing_since + give_up_after - now
        hint = (
            ""
            if runner.welcomed or invited
            else _tls_hint(settings, detail, first=not ever_welcomed)
            or _not_grpc_hint(detail)
            or _bad_host_hint(detail)
            or _unknown_host_hint(detail)
        )
        if _TOO_BIG in detail:
            # gRPC's words alone read as a network failure of the bot's; it is the referee's.
            hint = (
                ": the referee sent a message larger than this SDK accepts "
                f"({MAX_RECEIVE_BYTES} bytes); report it to the organiser"
            )
        certain = _tls_mismatch(settings, detail) or _not_grpc(detail) or _bad_host(detail)
        if (
            not certain
            and not ever_welcomed
            and not invited
            and settings.tls
            and "Socket closed" in detail
            and client_certificate_refused(
                settings.address, settings.tls_ca, settings.tls_cert, settings.tls_key
            )
        ):
            # gRPC says only "Socket closed", as for a network failure; one more connection
            # tells them apart (see arena.client.tls).
            hint, certain = _refused_certificate_hint(settings), True
        if hint and not ever_welcomed and certain:
            # These settings have never worked, and the answer is the TLS handshake's own (or
            # an HTTP/1 server's): it would fail the same way for the ten minutes of retries.
            raise ConfigError(f"cannot connect to {settings.address} ({code.name}){hint}")
        if left < 0:
            raise GaveUp(
                f"the referee at {settings.address} has been unreachable for "
                f"{now - failing_since:.0f} s ({code.name}: {detail or 'no details'}){hint}"
            )
        # Never sleep past the give-up time: the last attempt is made as it runs out.
        wait = min(left, _reconnect_wait(pause, delay, jitter.random()))
        if invited:
            # Not a broken connection: the referee asked for this and said when to come back.
            log.info("%s (%s); reconnecting in %.1f s", invited, detail or "no reason given", wait)
        else:
            log.warning(
                "%s %s (%s: %s)%s; retrying in %.1f s",
                "lost the connection to" if runner.welcomed else "cannot connect to",
                settings.address,
                code.name,
                detail or "no details",
                hint,
                wait,
            )
        if not runner.sleep(wait):
            return SessionEnd("GOODBYE", "stopped while waiting to reconnect")
        if pause is None or not went_on:
            delay = min(delay * 2, BACKOFF_MAX_S)


def _tls_hint(settings: ClientSettings, detail: str, *, first: bool = True) -> str:
    """What to change when a connection fails the way a TLS mismatch makes it fail ("" if not);
    ``first``: no session of this run has been welcomed yet.

    gRPC's own words name the symptom only: a plain-text bot at a TLS referee sees "Socket
    closed", a TLS bot at a plain-text one "WRONG_VERSION_NUMBER", an untrusted certificate
    "CERTIFICATE_VERIFY_FAILED", a certificate for another host name "Hostname Verification
    Check failed", a TLS bot that a referee refuses for its client certificate (or the lack of
    one) "Socket closed" again.
    """
    if not settings.tls and "Socket closed" in detail:
        if not first:
            return ""  # plain text has worked in this run: a restart, or the network
        return (
            f": if the referee uses TLS, set {ENV_TLS}=1 (or {ENV_TLS_CA} to the CA certificate "
            "the organiser gives)"
        )
    if settings.tls and "Socket closed" in detail:
        if not first:
            return ""  # the certificate has been accepted in this run: a restart, or the network
        # Retried: a referee restarting, or a network failure, looks the same to gRPC.
        if settings.tls_cert is None:
            return (
                f": if the referee asks for a client certificate, set {ENV_TLS_CERT} and "
                f"{ENV_TLS_KEY} to the certificate and key the organiser gives"
            )
        return (
            f": if the referee asks for a client certificate, check that {ENV_TLS_CERT} is one "
            "the referee accepts (the organiser gives it)"
        )
    if settings.tls and "WRONG_VERSION_NUMBER" in detail:
        if http1_server(settings.address):
            # Not a plain-text referee: unsetting ARENA_TLS, as said below, would not help.
            return _not_grpc_hint("http1.x server")
        return (
            f": the referee does not speak TLS on this port; unset {_tls_variables(settings)} "
            "(or ask the organiser for the TLS port)"
        )
    if settings.tls and _EXPIRED in detail:
        return (
            ": the referee's certificate has expired (or the CA certificate that signed it): "
            "the organiser must renew it"
        )
    if settings.tls and _NOT_YET_VALID in detail:
        return (
            ": the referee's certificate is not valid yet: check this machine's clock (or ask "
            "the organiser, whose certificate may start later)"
        )
    if settings.tls and "CERTIFICATE_VERIFY_FAILED" in detail:
        return (
            f": the referee's certificate is not trusted; set {ENV_TLS_CA} to the CA certificate "
            "that signed it (the organiser gives it)"
        )
    if settings.tls and _HOSTNAME_MISMATCH in detail:
        host = settings.address.rpartition(":")[0]
        return (
            f": the referee's certificate is not for the host {host}; set {ENV_ADDRESS} to a "
            "host name the certificate holds (the organiser gives it)"
        )
    return ""


def _tls_variables(settings: ClientSettings) -> str:
    """The variables that turn TLS on in ``settings``, in words ("ARENA_TLS and ARENA_TLS_CA"):
    a bot with only a client certificate was told to unset two it never set."""
    names = []
    if os.environ.get(ENV_TLS) == "1" or not (settings.tls_ca or settings.tls_cert):
        names.append(ENV_TLS)
    if settings.tls_ca is not None:
        names.append(ENV_TLS_CA)
    if settings.tls_cert is not None:
        names += [ENV_TLS_CERT, ENV_TLS_KEY]
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]


def _refused_certificate_hint(settings: ClientSettings) -> str:
    """What to change when the referee refuses the bot's client certificate, or its lack of one."""
    if settings.tls_cert is None:
        return (
            f": the referee asks for a client certificate; set {ENV_TLS_CERT} and {ENV_TLS_KEY} "
            "to the certificate and key the organiser gives"
        )
    return (
        f": the referee refused the client certificate in {ENV_TLS_CERT} (not signed by a CA "
        f"it trusts, or out of date); set {ENV_TLS_CERT} and {ENV_TLS_KEY} to the certificate "
        "and key the organiser gives"
    )


_TOO_BIG = "CLIENT: Received message larger than max"
"""gRPC's words when the referee sends a message over the channel's receive limit."""
MAX_RECEIVE_BYTES = 4 * 1024 * 1024
"""The largest referee message the SDK reads: gRPC's default receive limit (a real referee's
messages are a few KiB)."""

_NO_ALPN = "missing selected ALPN property"
"""gRPC's words when a TLS server does not offer HTTP/2 (an https web server's port)."""


def _not_grpc(detail: str) -> bool:
    """Whether a failed connection reached a server that does not speak HTTP/2 at all (an
    HTTP/1 server, such as the leaderboard's web port, over TLS or not): certainly not a
    referee, since a gRPC server always agrees on HTTP/2 in the TLS handshake."""
    return "Failed parsing HTTP/2" in detail or "http1.x server" in detail or _NO_ALPN in detail


def _not_grpc_hint(detail: str) -> str:
    """What to change when the address is an HTTP/1 server's ("" if it is not)."""
    if not _not_grpc(detail):
        return ""
    return (
        f": the server there does not speak gRPC (an HTTP/1 server: the leaderboard's web "
        f"port?); set {ENV_ADDRESS} to the referee's port for bots (arena serve --port)"
    )


_BAD_HOST = ("Misformatted domain name", "Unparsable name")
"""gRPC's words when the address's host cannot be a host name at all (``bot@host``, ``a..b``,
a non-ASCII name): its resolver's own verdict, the same on every retry, unlike a name not found,
which a DNS server may yet learn."""


def _bad_host(detail: str) -> bool:
    """Whether a failed connection's address has a host that gRPC cannot read as a name."""
    return any(words in detail for words in _BAD_HOST)


def _bad_host_hint(detail: str) -> str:
    """What to change when gRPC cannot read the address's host as a name ("" if it can)."""
    if not _bad_host(detail):
        return ""
    return (
        f": that host is not a valid host name; set {ENV_ADDRESS} to the referee's HOST:PORT, "
        "the host a name of ASCII letters, digits, '-' and '.' or an IP address (IPv6 in "
        "brackets), e.g. 127.0.0.1:50051"
    )


def _unknown_host_hint(detail: str) -> str:
    """What to check when the address's host name is not found ("" if it is another failure).

    Retried all the same: the name may not exist yet (a container that has not started)."""
    if "Domain name not found" not in detail:
        return ""
    return f": no such host; check the host name in {ENV_ADDRESS} (the organiser gives it)"


_HOSTNAME_MISMATCH = "Hostname Verification Check failed"
"""gRPC's words when the referee's certificate, trusted, names another host than the address."""
_EXPIRED = "certificate has expired"
"""gRPC's words (BoringSSL's) when a certificate of the referee's chain is past its end date."""
_NOT_YET_VALID = "certificate is not yet valid"
"""gRPC's words when a certificate of the referee's chain starts later than this machine's now."""


def _tls_mismatch(settings: ClientSettings, detail: str) -> bool:
    """Whether a failed connection is certainly a TLS setting's fault (TLS to a plain-text
    port, an untrusted or out-of-date certificate, or one for another host); a plain-text bot's
    "Socket closed" may be a restart too, and so may a TLS bot's (see arena.client.tls for how
    a refused client certificate is told apart)."""
    return settings.tls and (
        "WRONG_VERSION_NUMBER" in detail
        or "CERTIFICATE_VERIFY_FAILED" in detail
        or _HOSTNAME_MISMATCH in detail
    )


@dataclass(frozen=True)
class _Broken:
    """The status that ended a stream, read off gRPC's error, which is then let go."""

    code: grpc.StatusCode
    """The call's status code (UNKNOWN for an error that is not a call's)."""
    detail: str
    """The status details, on one line."""

    @classmethod
    def of(cls, error: grpc.RpcError) -> _Broken:
        """The status of ``error``; its traceback is dropped (see :meth:`_Runner.session`)."""
        call = error if isinstance(error, grpc.Call) else None
        broken = cls(
            call.code() if call is not None else grpc.StatusCode.UNKNOWN,
            " ".join(((call.details() if call is not None else None) or "").split()),
        )
        # A failed call raises itself: its traceback holds the frames that refer to the call,
        # a cycle only the garbage collector would free, perhaps not before the interpreter's
        # finalization. Without the traceback, the call goes with the session's last reference.
        error.__traceback__ = None
        return broken


_Arrival = tuple[float, bot_pb.PlayResponse] | _Broken | None
"""What the reader thread hands on: a message with its arrival time (:func:`time.monotonic`),
the status that broke the stream, or None at its end."""


def _read_stream(
    responses: Iterator[bot_pb.PlayResponse], inbox: queue.SimpleQueue[_Arrival]
) -> None:
    """Put each message of ``responses`` in ``inbox`` as it arrives, timed; then how it ended."""
    try:
        for response in responses:
            inbox.put((time.monotonic(), response))
    except grpc.RpcError as e:
        inbox.put(_Broken.of(e))
    except Exception as e:  # not gRPC's: the session must still end, and say why
        inbox.put(_Broken(grpc.StatusCode.UNKNOWN, f"{type(e).__name__}: {e}"))
    else:
        inbox.put(None)


class _Runner:
    """One bot's sessions: the channel, the handshake, and the handling of each message."""

    def __init__(self, bot: Bot, settings: ClientSettings) -> None:
        self.bot = bot
        self.settings = settings
        self.seat = 0
        self.welcomed = False
        self.went_on = False
        """Whether the session went on past its welcome: it brought an event or a request, or
        lasted :data:`BACKOFF_MAX_S` (a lobby). Only such a session restarts the backoff."""
        self.welcomed_at = 0.0
        """When the session's welcome came (:func:`time.monotonic`)."""
        self.welcome_within = WELCOME_WAIT_S
        """How long the next session waits for its Welcome before it counts as failed."""
        self.may_reconnect = False
        self.reconnect_after_s = 0.0
        self.resume_id = ""
        """The session_id of the last Welcome while that session may still be live at the
        referee (its stream broke under the bot); sent as Hello.resume_session_id, so that the
        referee ends it at once even if it looks alive there, and gives this bot its seat."""
        self.warned_kinds: set[int] = set()
        self.stop_signal: signal.Signals | None = None
        """The signal that asked this runner to stop (it then says Goodbye and asks no more)."""
        self.outbox: _Outbox | None = None
        """The open session's outbox, where a stop request puts the Goodbye."""
        self.sleeping = False
        """Whether the runner waits to reconnect, a wait a stop request cuts short."""
        self.deciding = False
        """Whether the bot's choose_pass/choose_play runs now (a stop waits for its answer)."""
        self.watch: _SignalWatch | None = None
        """The thread that sees the stop signals beside :meth:`on_signal`, while run() runs."""
        self.signals_handled = 0
        """How many times :meth:`on_signal` has run."""
        self._firsts: dict[str, tuple[int, object]] = {}
        """Which observer of the stop signals (the handler, the watch) was first to act on the
        first ("told") and on the second ("leave"), with its thread: both see each signal, and
        each line is written once."""
        for slip in api_slips(type(bot)):
            log.warning("%s", slip)  # in the bot's log, where its author looks
        # Events are only translated for the hooks a bot overrides (most override none).
        self.hooked = {
            kind
            for kind, hook in _HOOKS.items()
            if getattr(type(bot), hook) is not getattr(Bot, hook)
        }

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        """The SIGTERM/SIGINT handler: say Goodbye, stop asking the bot; a second signal: go now.

        It runs on the main thread between two bytecodes of whatever runs there. So it raises
        only where that is safe (in a backoff sleep), and otherwise only queues the Goodbye: a
        SimpleQueue's put may be called from a signal handler, and gRPC's thread sends it.
        """
        self.signals_handled += 1
        self.on_stop(signal.Signals(signum), self.signals_handled)
        if self.sleeping and "leave" not in self._firsts:  # not while the exit is under way
            raise _Interrupted

    def on_stop(self, sig: signal.Signals, count: int) -> None:
        """The ``count``-th stop signal that one observer (:meth:`on_signal` on the main thread,
        or :class:`_SignalWatch`'s thread) has seen: the first stops, the second exits at once.

        Both see most signals, but neither sees one twice, so neither exits early; and the other
        sees the second signal where one cannot (see :class:`_SignalWatch`). Whichever acts first
        on a signal acts alone (a dict's setdefault is one step for the two threads).
        """
        if self.stop_signal is None:
            self.stop_signal = sig
        me = (threading.get_ident(), object())
        if count > 1:
            leaver = self._firsts.setdefault("leave", me)
            if leaver is me:
                _exit_now(self.stop_signal)
            if leaver[0] != me[0]:
                _NEVER.wait()  # the other thread is writing the line and exiting: not a word more
            return  # this handler interrupted the exit on this thread (its write): let it go on
        if self._firsts.setdefault("told", me) is not me:
            return  # the other observer has acted on this signal
        if self.deciding:
            # The stop comes only once the bot answers, which may be long: say so at once. A raw
            # write, because a log handler's lock may be held by the code this interrupted.
            again = "; Ctrl-C again to quit now" if sig == signal.SIGINT else ""
            with contextlib.suppress(OSError):
                os.write(
                    sys.stderr.fileno(),
                    f"arena.client: {sig.name}: stopping after this decision{again}\n".encode(),
                )
        outbox = self.outbox
        if outbox is not None:
            outbox.goodbye(f"received {sig.name}")

    def sleep(self, seconds: float) -> bool:
        """Wait before reconnecting; False if a stop signal came (before or during the wait)."""
        try:
            self.sleeping = True
            # Checked after the flag is up: a signal from here on raises instead.
            if self.stop_signal is not None:
                return False
            time.sleep(seconds)
        except _Interrupted:
            return False
        finally:
            self.sleeping = False
        return self.stop_signal is None

    def _channel(self) -> grpc.Channel:
        s = self.settings
        # The receive limit is said, not left to gRPC's default, so that the hint at a larger
        # message names it. Keepalive: the referee's own pings keep the connection open but tell
        # the bot nothing; without pings of its own, a bot whose referee vanished (a machine
        # gone, a network cut: no FIN, no reset) waited on the silent stream for ever, and never
        # reconnected nor gave up. Spaced as the protocol guide asks; without data between them
        # (a lobby), or gRPC stops after two. The wait for the answer is ping_timeout_ms in
        # gRPC 1.85 (keepalive_timeout_ms alone left an unanswered ping waiting for ever).
        options = [
            ("grpc.max_receive_message_length", MAX_RECEIVE_BYTES),
            ("grpc.keepalive_time_ms", KEEPALIVE_TIME_MS),
            ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_MS),
            ("grpc.http2.max_pings_without_data", 0),
            ("grpc.http2.ping_timeout_ms", KEEPALIVE_TIMEOUT_MS),
        ]
        if not s.tls:
            return grpc.insecure_channel(s.address, options)
        credentials = grpc.ssl_channel_credentials(
            root_certificates=s.tls_ca, private_key=s.tls_key, certificate_chain=s.tls_cert
        )
        return grpc.secure_channel(s.address, credentials, options)

    def _hello(self) -> bot_pb.PlayRequest:
        s = self.settings
        return bot_pb.PlayRequest(
            hello=bot_pb.Hello(
                bot_name=s.name,
                token=s.token,
                protocol_version=PROTOCOL_VERSION,
                bot_version=s.bot_version,
                decide_forced_moves=s.decide_forced_moves,
                client_library=f"arena-python/{arena.__version__}",
                resume_session_id=self.resume_id,
            )
        )

    def session(self) -> SessionEnd | _Broken:
        """One stream, from Hello to its end, or to the status that broke it.

        Every gRPC object of the session is done with when this returns: the call cancelled,
        the channel closed, gRPC's thread that sent the outbox finished, and the call let go.
        Why so thorough: gRPC's objects hold locks that its threads take, and those are daemon
        threads, which the interpreter stops wherever they are when it begins to finalize,
        holding what they hold. A call still alive then (a failed call is: it raised itself,
        and its traceback refers back to it, so only the garbage collector frees it) is freed
        during finalization, and its ``__del__`` waits forever for the lock of a thread that
        will never run again: the process prints its last line and never exits. Forced with a
        refused token, that is exactly the stall seen once in a while under load.
        """
        outbox = _Outbox()
        outbox.put(self._hello())
        end: SessionEnd | _Broken = SessionEnd("CLOSED", "")
        self.may_reconnect = False
        try:
            with self._channel() as channel:
                responses = bot_grpc.BotServiceStub(channel).Play(iter(outbox))
                cancel: Callable[[], object] = responses.cancel
                outbox.cancel = cancel
                self.outbox = outbox
                if self.stop_signal is not None:  # it came before there was an outbox to tell
                    outbox.goodbye(f"received {self.stop_signal.name}")
                # Messages are read, and their arrival timed, on a thread of their own: read
                # here, a request that came while the bot was still busy with the one before
                # (late, past its deadline) was timed from when the bot was free, and its view
                # showed the whole move time left although the referee's clock had run out.
                inbox: queue.SimpleQueue[_Arrival] = queue.SimpleQueue()
                reader = threading.Thread(
                    target=_read_stream, args=(responses, inbox), name="arena-inbox", daemon=True
                )
                reader.start()
                welcome_by = time.monotonic() + self.welcome_within
                try:
                    while True:
                        if self.welcomed:
                            arrival = inbox.get()
                        else:
                            try:
                                arrival = inbox.get(timeout=max(0.0, welcome_by - time.monotonic()))
                            except queue.Empty:
                                end = _Broken(
                                    grpc.StatusCode.DEADLINE_EXCEEDED,
                                    f"no Welcome within {self.welcome_within:.0f} s of "
                                    "connecting: the address takes connections but does not "
                                    "answer as a referee (stopped, overloaded, or not one)",
                                )
                                break
                        if isinstance(arrival, _Broken):
                            end = arrival
                            break
                        if arrival is None:
                            break
                        received_at, response = arrival
                        if response.HasField("welcome"):
                            self._welcome(response.welcome)
                        if response.events or response.HasField("request"):
                            self.went_on = True
                        # Once stopping, the bot is asked nothing more and its hooks are not called.
                        if self.stop_signal is None:
                            for event in response.events:
                                self._event(event)
                        if response.HasField("request") and self.stop_signal is None:
                            answer = self._decide(response.request, received_at)
                            if answer is not None:
                                outbox.put(answer)
                        if response.HasField("shutdown"):
                            end = self._shutdown(response.shutdown)
                            outbox.close()
                except KeyboardInterrupt:
                    # Only without run()'s handler (serve() called directly): a best effort.
                    outbox.goodbye("interrupted")
                    raise
                finally:
                    self.outbox = None
                    outbox.close()  # gRPC's sending thread leaves its wait for the next message
                    cancel()  # nothing if the call is over already
                    reader.join()  # the cancel ends its read at once, if the stream had not
                # Leaving the block closes the channel: it waits for gRPC to finish with its calls.
        finally:
            # The sending thread's last step takes the call's lock; it has nothing left to
            # wait for once the call is over, so this returns at once.
            outbox.join_sender()
        return end

    def _welcome(self, welcome: bot_pb.Welcome) -> None:
        self.welcomed = True
        self.welcomed_at = time.monotonic()
        self.resume_id = welcome.session_id
        known_as = welcome.bot_name or self.settings.name
        log.info(
            "connected to %s as %r (session %s%s; a dropped connection may take its seat back "
            "within %d ms)%s",
            self.settings.address,
            known_as,
            welcome.session_id,
            ", seat resumed" if welcome.resumed else "",
            welcome.reconnect_grace_ms,
            f": {welcome.message}" if welcome.message else "",
        )
        if welcome.protocol_version not in (0, PROTOCOL_VERSION):
            # The Welcome names the version the bot asked for; another is the referee's error,
            # and its messages may not mean what this SDK reads in them.
            log.warning(
                "the referee says it speaks protocol version %d on this session, but this SDK "
                "asked for %d; playing on (report it to the organiser)",
                welcome.protocol_version,
                PROTOCOL_VERSION,
            )
        if known_as != self.settings.name:
            log.warning(
                "the referee knows this token as bot %r, not %r (ARENA_BOT_NAME): standings "
                "and records show %r",
                known_as,
                self.settings.name,
                known_as,
            )

    def _shutdown(self, shutdown: bot_pb.Shutdown) -> SessionEnd:
        try:
            reason = bot_pb.ShutdownReason.Name(shutdown.reason).removeprefix("SHUTDOWN_REASON_")
        except ValueError:
            # A reason from a newer referee: the session is over all the same (Name raised, and
            # the bot died with a traceback). Not one to come back after: that needs a known one.
            reason = f"REASON_{shutdown.reason}"
            log.warning(
                "the referee ends the session for a reason unknown to this SDK (%d); "
                "taking it as the end (update the arena package)",
                shutdown.reason,
            )
        self.resume_id = ""  # the referee has ended that session: there is nothing to replace
        self.may_reconnect = shutdown.may_reconnect
        self.reconnect_after_s = shutdown.reconnect_after_ms / 1000
        log.info("the referee ends the session (%s): %s", reason, shutdown.message or "-")
        return SessionEnd(reason, shutdown.message)

    def _event(self, message: ev_pb.Event) -> None:
        which = message.WhichOneof("kind")
        if which not in self.hooked and which not in _ALWAYS:
            return
        try:
            event = event_of(message, self.seat)
        except (ArenaError, ValueError, KeyError) as unreadable:
            # A referee message this SDK cannot read is a bug to report, not a reason to stop;
            # one line says which (a card spelled wrongly, an enum value from a newer protocol).
            log.error("cannot read the referee's %s event (%s); skipped", which, unreadable)
            return
        except Exception:
            log.exception("could not read a %s event; skipped", which)
            return
        if event is None:
            return
        if isinstance(event, FaultNotice):
            _log_fault(event)
        elif which == "game_started":
            self.seat = message.game_started.your_seat
        if which in self.hooked:
            try:
                dispatch_event(self.bot, event)
            except Exception:
                log.exception("the bot's %s hook raised; event skipped", _HOOKS[which])
        if which == "game_ended":
            # After the bot's hook, so that the line says the bot is done with the game:
            # `arena check-bot` waits for it before judging a check (a hook's error included).
            e = message.game_ended
            log.info(
                "game %s over: totals %s, places %s",
                e.game_id,
                list(e.game_totals),
                list(e.placings),
            )

    def _decide(
        self, request: bot_pb.DecisionRequest, received_at: float
    ) -> bot_pb.PlayRequest | None:
        kind = decision_kind(request)
        if kind is None:
            # The protocol asks an SDK to let an unknown kind time out rather than guess.
            if request.kind not in self.warned_kinds:
                self.warned_kinds.add(request.kind)
                # ERROR, as every request left unanswered (the README; `arena run` counts them).
                log.error(
                    "the referee asks for a decision of kind %d, unknown to this SDK; "
                    "not answering it (update the arena package)",
                    request.kind,
                )
            return None
        rid = request.request_id
        try:
            view = view_of_request(request, kind, received_at)
        except (ArenaError, ValueError, KeyError) as e:
            # The referee's fault (a card spelled wrongly, an enum value from a newer protocol):
            # one line saying what, not a traceback through the SDK that reads as the bot's bug.
            log.error(
                "cannot read the referee's decision request %d (%s); not answering it "
                "(report it to the organiser)",
                rid,
                e,
            )
            return None
        except Exception:
            log.exception("could not read decision request %d; not answering it", rid)
            return None
        unanswerable = _unanswerable(view)
        if unanswerable:
            # Neither the bot nor the SDK's fallback can answer it: the fallback raised from
            # inside the handler of the bot's own error, and the bot died with two tracebacks.
            log.error(
                "the referee's decision request %d %s; not answering it (report it to the "
                "organiser)",
                rid,
                unanswerable,
            )
            return None
        if self.watch is not None:
            self.watch.rearm()  # the bot's code may have cleared it since the last decision
        self.deciding = True
        try:
            return self._answer(kind, rid, view)
        finally:
            self.deciding = False

    def _answer(self, kind: DecisionKind, rid: int, view: DecisionView) -> bot_pb.PlayRequest:
        """The bot's answer to one decision (the SDK's own if the bot's code raises)."""
        if kind is DecisionKind.PLAY:
            try:
                card: object = self.bot.choose_play(view)
            except Exception:
                fallback = default_play(view)
                # The game and request named: a log that two processes of the bot share (or
                # two games in turn) did not say which game's decision it was.
                log.exception(
                    "choose_play raised (game %s, hand %d, trick %d, request %d); playing %s "
                    "instead",
                    view.game_id,
                    view.hand_number,
                    view.trick_number,
                    rid,
                    fallback,
                )
                return play_decision(rid, fallback)
            code, wrong = play_code(card)
            code, cut = fit_play(code)
            wrong = wrong or cut
            if wrong is not None:
                # Sent as it is: the referee judges it and says which rule it broke.
                log.warning(
                    "%s (hand %d, trick %d); sending %r for the referee to judge",
                    wrong,
                    view.hand_number,
                    view.trick_number,
                    code,
                )
            return play_decision(rid, code)
        try:
            chosen: object = self.bot.choose_pass(view)
        except Exception:
            fallback_pass = default_pass(view)
            log.exception(
                "choose_pass raised (game %s, hand %d, request %d); passing %s instead",
                view.game_id,
                view.hand_number,
                rid,
                " ".join(map(str, fallback_pass)),
            )
            return pass_decision(rid, fallback_pass)
        codes, wrong = pass_codes(chosen)
        codes, cut = fit_pass(codes)
        wrong = wrong or cut
        if wrong is not None:
            log.warning(
                "%s (hand %d); sending %s for the referee to judge",
                wrong,
                view.hand_number,
                codes,
            )
        return pass_decision(rid, codes)


def _unanswerable(view: DecisionView) -> str:
    """What makes a request impossible to answer ("" if it can be answered)."""
    if view.kind is DecisionKind.PLAY and not view.legal:
        return "offers no card to play (no legal card, and no card in hand)"
    # The fallback passes from the hand, the bot from the legal cards: both must hold enough.
    held = min(len(set(view.legal)), len(view.hand))
    if view.kind is DecisionKind.PASS and held < view.pass_count:
        return f"asks to pass {view.pass_count} cards out of {held}"
    return ""


_HOOKS = {
    "game_started": "on_game_start",
    "hand_started": "on_hand_start",
    "cards_dealt": "on_cards_dealt",
    "cards_received": "on_cards_received",
    "card_played": "on_card_played",
    "trick_won": "on_trick",
    "hand_ended": "on_hand_end",
    "game_ended": "on_game_end",
    "fault_notice": "on_fault",
    "seat_faulted": "on_seat_fault",
    "time_warning": "on_time_warning",
}
"""Event field name -> the Bot hook that receives it."""
_ALWAYS = frozenset({"fault_notice", "game_started", "game_ended"})
"""Events the runner reads itself, hooked or not (to log them, or to learn its seat)."""


def _log_fault(event: FaultNotice) -> None:
    kind = event.kind.name if event.kind is not None else "UNKNOWN"
    sent = f"; you sent {event.answer!r}" if event.answer else ""
    # The referee's message names the substitute already; other referees' may not.
    played = " ".join(map(str, event.substitute))
    instead = f"; played {played} instead" if played and played not in event.message else ""
    limit = f"/{event.faults_allowed} allowed" if event.faults_allowed else ""
    forfeited = "; the seat is FORFEITED for the rest of the game" if event.forfeited else ""
    log.warning(
        "FAULT %s in game %s hand %d (request %d): %s%s%s [faults %d%s]%s",
        kind,
        event.game_id,
        event.hand_number,
        event.request_id,
        event.message,
        sent,
        instead,
        event.faults,
        limit,
        forfeited,
    )


class _Outbox:
    """What the bot sends on one stream, drained by gRPC's thread: messages until a close.

    After a Goodbye nothing more is sent; if the referee has not closed the stream within
    :data:`GOODBYE_WAIT_S`, the stream is cancelled from this side.
    """

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[bot_pb.PlayRequest | None] = queue.SimpleQueue()
        self.cancel: Callable[[], object] | None = None
        """Cancels the stream's call, when a Goodbye goes unanswered."""
        self._sender: threading.Thread | None = None
        """gRPC's thread that drains this outbox (known once it asks for the first message)."""

    def join_sender(self) -> None:
        """Wait for gRPC's sending thread to end (call it once the call is over and closed)."""
        if self._sender is not None and self._sender is not threading.current_thread():
            self._sender.join()

    def put(self, message: bot_pb.PlayRequest) -> None:
        """Send ``message`` (safe from a signal handler)."""
        self._queue.put(message)

    def goodbye(self, reason: str) -> None:
        """Say Goodbye (safe from a signal handler)."""
        self._queue.put(bot_pb.PlayRequest(goodbye=bot_pb.Goodbye(reason=reason)))

    def close(self) -> None:
        """End the stream from this side once what is queued has gone."""
        self._queue.put(None)

    def __iter__(self) -> Iterator[bot_pb.PlayRequest]:
        self._sender = threading.current_thread()
        leaving = False
        while True:
            try:
                item = self._queue.get(timeout=GOODBYE_WAIT_S if leaving else None)
            except queue.Empty:
                if self.cancel is not None:
                    self.cancel()  # the referee did not confirm the Goodbye: hang up
                return
            if item is None:
                return
            if leaving:
                continue  # an answer or a second Goodbye queued after the first: too late
            yield item
            leaving = item.HasField("goodbye")
