"""A small HTTP/1.1 server on asyncio streams, for the leaderboard page and its JSON API.

Why not :mod:`http.server`: it wants a thread per connection, and the competition server's state
lives in the referee's asyncio loop, which must never block. Why not a framework: the page needs
GET of a few resources and POST of a few admin actions, and this file is all of that (about two
hundred lines) with no new dependency. It runs in whatever asyncio loop starts it.

What it does: HTTP/1.1 with keep-alive, ``Content-Length`` bodies (chunked uploads are refused),
bounded header and body sizes, an idle timeout per connection (for a request to come in, and for
each part of an answer to go out), a cap on open connections, and a graceful close. A handler is
an ``async`` function from :class:`Request` to :class:`Response`; an exception in a handler
becomes a 500 with a JSON body, logged, and the server goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import socket
import ssl
import struct
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

__all__ = [
    "DEFAULT_MAX_BODY",
    "DEFAULT_MAX_HEADER",
    "Handler",
    "HttpServer",
    "Request",
    "Response",
    "json_response",
]

DEFAULT_MAX_HEADER = 16 * 1024
"""Largest request line plus headers, in bytes."""
DEFAULT_MAX_BODY = 64 * 1024
"""Largest request body, in bytes (admin actions are a few dozen)."""
DEFAULT_IDLE_S = 15.0
"""A connection that sends no complete request, or takes nothing of an answer, for this long is
closed."""
DEFAULT_MAX_CONNECTIONS = 512
"""Open connections beyond this are answered 503 and closed."""
SEND_CHUNK = 64 * 1024
"""An answer goes out in parts this large, each of which the client must take within the idle
timeout."""
TLS_HANDSHAKE = b"\x16"
"""The first byte of a TLS ClientHello (a handshake record); no HTTP request starts with it."""

log = logging.getLogger("arena.server.http")

_FIELD_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
"""A header's name (RFC 9110's token): no space before the colon, no folded line."""
_SINGLE = frozenset({"content-length", "authorization", "host"})
"""Headers that may be given once: of two, this server would read one and a proxy in front of it
perhaps the other (two Content-Lengths are how requests are smuggled past a proxy)."""


@dataclass(frozen=True)
class Request:
    """One parsed HTTP request."""

    method: str
    """Upper-case method, e.g. ``GET``."""
    path: str
    """The decoded path, without the query (``/api/games/12``)."""
    query: Mapping[str, str]
    """Query parameters (the last value of a repeated name)."""
    headers: Mapping[str, str]
    """Header values by lower-case name."""
    body: bytes = b""
    """The body (empty for GET)."""
    peer: str = ""
    """The client's address, for logs."""
    version: str = "HTTP/1.1"
    """The request line's protocol version (``HTTP/1.0`` or ``HTTP/1.1``)."""

    def json(self) -> Any:
        """The body parsed as JSON (an empty body is an empty object)."""
        return json.loads(self.body) if self.body else {}


@dataclass(frozen=True)
class Response:
    """One HTTP response."""

    status: int
    """Status code."""
    body: bytes = b""
    """The body."""
    content_type: str = "text/plain; charset=utf-8"
    """The Content-Type header."""
    headers: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    """Other headers."""


Handler = Callable[[Request], Awaitable[Response]]
"""What serves a request."""


def json_response(data: Any, status: int = HTTPStatus.OK) -> Response:
    """A JSON response that no cache keeps (standings change as results arrive)."""
    return Response(
        status,
        json.dumps(data, separators=(",", ":"), allow_nan=False).encode("utf-8"),
        "application/json",
        (("Cache-Control", "no-store"),),
    )


def _abort(writer: asyncio.StreamWriter) -> None:
    """Cut a connection off, with what its client has not read yet."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        # A reset, not a close: closed, the socket kept up to megabytes of unread answer in the
        # kernel, and the connection open on the client's side, for as long as it did not read.
        # ValueError: uvloop's stand-in for the socket of a connection the client reset
        # ("negative file descriptor"), which escaped as a traceback on the JSON log.
        with contextlib.suppress(OSError, ValueError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


class _BadRequest(Exception):
    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


class HttpServer:
    """Serves one handler on one port until closed."""

    def __init__(
        self,
        handler: Handler,
        *,
        max_header: int = DEFAULT_MAX_HEADER,
        max_body: int = DEFAULT_MAX_BODY,
        idle_s: float = DEFAULT_IDLE_S,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
    ) -> None:
        self._handler = handler
        self._max_header = max_header
        self._max_body = max_body
        self._idle_s = idle_s
        self._max_connections = max_connections
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._closing = False

    async def start(
        self, host: str = "127.0.0.1", port: int = 0, tls: ssl.SSLContext | None = None
    ) -> int:
        """Listen, and return the port (useful with port 0); ``::`` takes IPv4 clients too."""
        if host == "::":
            # asyncio makes an IPv6 socket IPv6-only, so that "every address" would turn away
            # every IPv4 client (the page's 127.0.0.1 address among them), where the bots' port
            # (gRPC) takes both: one socket for both families, as gRPC's.
            sock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
                sock.bind((host, port))
            except BaseException:
                sock.close()
                raise
            self._server = await asyncio.start_server(
                self._serve, sock=sock, limit=self._max_header, **self._tls(tls)
            )
        else:
            self._server = await asyncio.start_server(
                self._serve, host, port, limit=self._max_header, **self._tls(tls)
            )
        return int(self._server.sockets[0].getsockname()[1])

    def _tls(self, tls: ssl.SSLContext | None) -> dict[str, Any]:
        """The TLS arguments of the listening socket: a handshake gets the idle timeout too
        (asyncio's own 60 s held a connection that never finished one four times as long)."""
        if tls is None:
            return {}
        return {"ssl": tls, "ssl_handshake_timeout": self._idle_s}

    async def close(self) -> None:
        """Stop listening and close every connection (a request being answered is cut short)."""
        self._closing = True
        if self._server is not None:
            self._server.close()
        # Again until none is left: a connection accepted as the listening stopped began after
        # the first round, and its request read the closed database (an ERROR traceback).
        while self._connections:
            tasks = list(self._connections)
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._closing:  # accepted as the server stopped: nothing is answered any more
            _abort(writer)
            return
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        peername = writer.get_extra_info("peername")
        peer = f"{peername[0]}:{peername[1]}" if isinstance(peername, tuple) else str(peername)
        try:
            await self._converse(reader, writer, peer)
        except (TimeoutError, ConnectionError):
            # A client that took nothing of an answer for the idle timeout: cut off, as one that
            # sends no request is. It held its connection (and a place under the cap) for as
            # long as it liked, and 512 of them kept the page from everyone for good.
            _abort(writer)
        except RuntimeError:
            # uvloop's word for a write to a connection the client reset meanwhile ("unable to
            # perform operation on <TCPTransport closed=True>"): the client is gone. Anything
            # else is a fault of ours (a handler's own errors are 500s), left to be seen.
            if not writer.transport.is_closing():
                raise
            _abort(writer)
        except asyncio.CancelledError:
            # The server closing (close() cancels every connection): at once, whatever the
            # client has not read yet; waiting for a client that reads nothing kept a stopping
            # server from exiting. Not raised on: the connection's task ends here, and Python
            # 3.11's stream callback asks a cancelled one for its exception, which printed a
            # traceback on standard error for each connection open at a stop.
            _abort(writer)
        finally:
            self._connections.discard(task)
            await self._close(writer)

    async def _close(self, writer: asyncio.StreamWriter) -> None:
        """Close a connection once its last answer is out, or cut it off after the idle timeout
        (a client that reads none of it)."""
        writer.close()
        try:
            async with asyncio.timeout(self._idle_s):
                await writer.wait_closed()
        except Exception:  # the timeout, or the client gone: nothing left to wait for
            _abort(writer)
        except BaseException:
            _abort(writer)
            raise

    async def _converse(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: str
    ) -> None:
        """Answer the requests of one connection until either side ends it."""
        if len(self._connections) > self._max_connections:
            await self._send(
                writer,
                json_response({"error": "too many connections"}, HTTPStatus.SERVICE_UNAVAILABLE),
                keep_alive=False,
            )
            return
        keep_alive = True
        while keep_alive:
            try:
                async with asyncio.timeout(self._idle_s):
                    request = await self._read(reader, peer)
            except (TimeoutError, asyncio.IncompleteReadError, ConnectionError):
                return
            except _BadRequest as e:
                await self._send(
                    writer, json_response({"error": str(e)}, e.status), keep_alive=False
                )
                return
            if request is None:
                return
            # HTTP/1.0 closes unless asked to keep the connection, HTTP/1.1 keeps it unless
            # asked to close (RFC 9112 9.3): a 1.0 client was answered "keep-alive" and its
            # connection held open until the idle timeout.
            asked = {t.strip() for t in request.headers.get("connection", "").lower().split(",")}
            if request.version == "HTTP/1.0":
                keep_alive = "keep-alive" in asked
            else:
                keep_alive = "close" not in asked
            try:
                response = await self._handler(request)
            except Exception:
                log.exception("http handler failed", extra={"path": request.path, "peer": peer})
                response = json_response(
                    {"error": "internal error"}, HTTPStatus.INTERNAL_SERVER_ERROR
                )
            await self._send(writer, response, keep_alive, head=request.method == "HEAD")

    async def _read(self, reader: asyncio.StreamReader, peer: str) -> Request | None:
        try:
            first = await reader.readexactly(1)
        except asyncio.IncompleteReadError:
            return None  # the client closed a kept-alive connection: normal
        if first == TLS_HANDSHAKE:
            # An https:// client on this plain port would otherwise wait out the idle timeout
            # for a request line that never comes; answered at once, in plain text, it fails
            # with "wrong version number", which says what is wrong.
            raise _BadRequest(
                HTTPStatus.BAD_REQUEST, "this port speaks plain HTTP, not TLS: use http://"
            )
        try:
            head = first + await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as e:
            if not (first + e.partial).strip():
                return None  # the client closed a kept-alive connection: normal
            raise
        except asyncio.LimitOverrunError:
            raise _BadRequest(
                HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE,
                f"request headers over {self._max_header} bytes",
            ) from None
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise _BadRequest(HTTPStatus.BAD_REQUEST, f"bad request line {lines[0][:80]!r}")
        method, target, version = parts
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if not line:
                continue
            name, sep, value = line.partition(":")
            if not sep or not _FIELD_NAME.fullmatch(name):
                raise _BadRequest(HTTPStatus.BAD_REQUEST, f"bad header line {line[:80]!r}")
            key = name.lower()
            if key in _SINGLE and key in headers:
                raise _BadRequest(
                    HTTPStatus.BAD_REQUEST, f"header {name!r} given twice: give it once"
                )
            headers[key] = value.strip()
        if "transfer-encoding" in headers:
            raise _BadRequest(HTTPStatus.LENGTH_REQUIRED, "send a Content-Length, not chunks")
        text = headers.get("content-length", "0")
        # Digits only: int() takes "-1" (refused as a body too large), "+5" and "1_0".
        if not (text.isascii() and text.isdigit()):
            raise _BadRequest(
                HTTPStatus.BAD_REQUEST, f"Content-Length {text[:40]!r} is not a number of bytes"
            )
        length = int(text)
        if length > self._max_body:
            raise _BadRequest(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"body of {length} bytes; the limit is {self._max_body}",
            )
        body = await reader.readexactly(length) if length else b""
        try:
            # Bytes past ASCII sent as they are (curl sends "?limit=٣" so) are UTF-8, as a
            # percent-escape is: read as the head's Latin-1, an error echoed "limit='Ù£'".
            target = target.encode("latin-1").decode("utf-8")
        except UnicodeDecodeError:
            raise _BadRequest(
                HTTPStatus.BAD_REQUEST, "the request target is not UTF-8: percent-encode it"
            ) from None
        if target.startswith("/"):
            # The usual form, a path: urlsplit read "//api/health" as the host "api" and the
            # path "/health", and the 404 named a path the client never asked for.
            raw_path, _, raw_query = target.partition("#")[0].partition("?")
        else:
            url = urlsplit(target)
            raw_path, raw_query = url.path, url.query
        # Blank values kept and repeats refused: "bot=" would otherwise vanish (every game, not
        # an error) and "limit=2&limit=3" would quietly mean the last.
        query: dict[str, str] = {}
        for name, value in parse_qsl(raw_query, keep_blank_values=True):
            if name in query:
                raise _BadRequest(
                    HTTPStatus.BAD_REQUEST, f"parameter {name!r} given twice: give it once"
                )
            query[name] = value
        return Request(
            method=method.upper(),
            path=unquote(raw_path),
            query=query,
            headers=headers,
            body=body,
            peer=peer,
            version=version,
        )

    async def _send(
        self,
        writer: asyncio.StreamWriter,
        response: Response,
        keep_alive: bool,
        head: bool = False,
    ) -> None:
        """Send ``response``; TimeoutError if the client takes none of a part of it within the
        idle timeout (a client that never reads would otherwise hold its connection for good)."""
        try:
            reason = HTTPStatus(response.status).phrase
        except ValueError:
            reason = ""
        lines = [
            f"HTTP/1.1 {response.status} {reason}",
            f"Content-Type: {response.content_type}",
            f"Content-Length: {len(response.body)}",
            "Connection: " + ("keep-alive" if keep_alive else "close"),
            "X-Content-Type-Options: nosniff",
        ]
        lines += [f"{name}: {value}" for name, value in response.headers]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        body = b"" if head else response.body
        for start in range(0, max(len(body), 1), SEND_CHUNK):
            writer.write(body[start : start + SEND_CHUNK])
            async with asyncio.timeout(self._idle_s):
                await writer.drain()
