"""The referee: a grpc.aio server hosting bot sessions, tables and spectators on one event loop.

Every gRPC object lives on the one asyncio loop that runs :class:`Referee`; nothing here blocks
it. A bot's stream is handled by :meth:`Referee._play`: a reader task (the only one that ever
reads the stream), the handshake, then the session waits in the lobby or at a table until it ends,
and the handler closes the stream with the status the ending asks for.

Tables are coarse calls: :meth:`Referee.play_table` takes a :class:`~arena.table.TableSpec` and
returns a :class:`~arena.table.GameRecord`. :func:`serve_forever` runs a standalone referee that
stops cleanly on SIGINT/SIGTERM; :class:`~arena.referee.thread.RefereeThread` runs one on its own
thread for callers that live on another event loop (the trio director).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import inspect
import itertools
import logging
import secrets
import signal
import time
from collections import Counter, deque
from collections.abc import Callable, Coroutine, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Final

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from arena.errors import ConfigError
from arena.proto.hearts.v1 import bot_service_pb2 as bot_pb
from arena.proto.hearts.v1 import events_pb2 as ev_pb
from arena.proto.hearts.v1 import spectator_service_pb2 as spec_pb
from arena.proto.hearts.v1 import spectator_service_pb2_grpc as spec_grpc
from arena.referee import wire
from arena.referee.accounts import MAX_NOTE_LENGTH, MAY_PLAY, Accounts, TokenAccounts, token_key
from arena.referee.config import MAX_MS, PROTOCOL_VERSIONS, RefereeConfig
from arena.referee.game import Seat, TableRun
from arena.referee.lobby import Lobby
from arena.referee.loop import run as run_loop
from arena.referee.session import OVERSIZE_SLACK, Closed, Ending, Session
from arena.referee.spectators import TableFeed, Watcher
from arena.table import MAX_PORT, GameRecord, TableSpec, Termination

__all__ = [
    "BOT_SERVICE",
    "SPECTATOR_SERVICE",
    "Referee",
    "SessionInfo",
    "serve",
    "serve_forever",
]

log = logging.getLogger("arena.referee")

BOT_SERVICE = bot_pb.DESCRIPTOR.services_by_name["BotService"].full_name
"""The bots' gRPC service, ``hearts.v1.BotService`` (health checking answers for it by name)."""
SPECTATOR_SERVICE = spec_pb.DESCRIPTOR.services_by_name["SpectatorService"].full_name
"""The spectators' gRPC service, ``hearts.v1.SpectatorService``."""
DENIED_ADVICE = "stop, and ask the organiser; retrying gets the same answer until they let it play"
"""What a bot refused with PERMISSION_DENIED is told to do (after why it may not play)."""
MS = 1000.0
MAX_BOT_NAME = 64
"""The longest Hello.bot_name accepted (the names of accounts are as long at most)."""
MAX_ECHOED_ID = 100
"""The longest part of an unknown table id a Watch's NOT_FOUND message repeats."""
FINAL_WRITE_S = 1.0
"""How long the last message of a session (a Shutdown) may take to go out."""
LOOKUP_THREADS = 4
"""Account lookups that may run at once (each in a worker thread, off the event loop)."""
CLOSE_LINGER_S = 1.5
"""After a Shutdown, how long the referee waits for the bot to close its side of the stream."""
REFUSALS_LOGGED = 20
"""Refused sessions from one host whose log lines are written in a minute; the rest are counted."""
REFUSAL_WINDOW_S = 60.0
MAX_REFUSING_HOSTS = 1024
"""Hosts whose refusals are counted before those quiet for a minute are forgotten."""
SERVER_STOP_GRACE_S = 1.0
"""After every session was told to stop, how long gRPC waits for streams to close."""
CUT = "CANCELLED"
"""The :attr:`Referee.closed_sessions` key of a stream cancelled under the referee: by the bot,
by a broken connection, or by gRPC itself (a message over its own limit gets RESOURCE_EXHAUSTED
from gRPC, which the handler sees only as a cancellation)."""
CUT_SETTLE_S = 0.1
"""How long a handler whose stream has ended without a word waits for gRPC to say whether it was
cancelled, before it closes the stream with OK."""
HANDLER_FINISH_S = FINAL_WRITE_S + CLOSE_LINGER_S + 1.0
"""On stop, how long the Play handlers get to send their Shutdown, wait for the bot to close its
side, and close the stream with its status, before gRPC's own stop cancels what is left."""


_SOCKET_SCHEMES: Final = ("unix:", "unix-abstract:")
"""gRPC's addresses of local sockets, which have no port."""


def _check_port(address: str) -> None:
    """Refuse an address to listen on that gRPC would misread: no port (it takes 443), a URL, an
    IPv6 address out of brackets, a port past 65535 (127.0.0.1:99999 listened on 34463)."""
    if not isinstance(address, str):
        raise ConfigError(f"referee: the address to listen on is HOST:PORT, got {address!r}")
    if address.startswith(_SOCKET_SCHEMES):
        return
    host, colon, port = address.rpartition(":")
    if "://" in address:
        # gRPC read "http://127.0.0.1:0" as a host name, and the refusal blamed the port.
        raise ConfigError(
            f"referee: cannot listen on {address!r}: give HOST:PORT without a scheme, e.g. "
            "127.0.0.1:50051 (a URL is not an address to listen on)"
        )
    if not (colon and port.isdigit()):
        # gRPC takes a bare host as port 443 (HTTPS's), which no bot was told of.
        raise ConfigError(
            f"referee: cannot listen on {address!r}: give HOST:PORT, e.g. 127.0.0.1:50051 "
            "(port 0: any free one)"
        )
    if ":" in host and not (host.startswith("[") and host.endswith("]")):
        # "::1:0" was read as the address ::0.1.0.0 at port 443, and refused as a port in use.
        raise ConfigError(
            f"referee: cannot listen on {address!r}: an IPv6 address goes in brackets, e.g. "
            "[::1]:50051"
        )
    if int(port) > MAX_PORT:
        raise ConfigError(
            f"referee: cannot listen on {address!r}: a port is 0 (any free one) to {MAX_PORT}"
        )


@dataclass(frozen=True)
class SessionInfo:
    """One session as listed for operators (never with its token)."""

    session_id: str
    """The session's id (as in its Welcome)."""
    bot: str
    """The bot's name."""
    table_id: str | None
    """The table it plays at now, or None while idle in the lobby."""
    peer: str
    """The bot's network address."""


def _as_accounts(accounts: Accounts | Mapping[str, str]) -> Accounts:
    if isinstance(accounts, Mapping):
        return TokenAccounts(accounts)
    # Said now: found at the first handshake, every bot would be refused as an INTERNAL error.
    if not callable(getattr(accounts, "lookup", None)):
        raise ConfigError(
            "referee: accounts must be a mapping of token to bot name, a TokenAccounts, or an "
            f"object with a lookup(token) method, got {accounts!r}"
        )
    return accounts


def _as_config(config: object) -> RefereeConfig:
    """``config``, or the default for None; said now, since a dict (even an empty one, which
    ``config or ...`` took for the default) failed only at start, with an AttributeError."""
    if config is None:
        return RefereeConfig()
    if not isinstance(config, RefereeConfig):
        raise ConfigError(
            "referee: config must be a RefereeConfig, e.g. RefereeConfig(handshake_ms=5000) "
            f"from arena.referee, or None, got {config!r:.80}"
        )
    return config


def _duration(name: str, value: object, unit: str = "milliseconds") -> float:
    """A time given to a call (in ``unit``), or a ConfigError naming it (a string or None
    raised a bare TypeError from the division by 1000)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise ConfigError(f"{name} must be a number of {unit}, got {value!r}")
    if value < 0:
        # Taken as no wait at all: wait_for_bots(..., -1) answered at once, stop(-1) as stop(0).
        raise ConfigError(f"{name} must be 0 or more {unit}, got {value!r}")
    return value


def _check_kick(call: str, reason: object, *, capped: bool = True, **flags: object) -> None:
    """A ConfigError for a ``reason`` that is not text (or, ``capped``, longer than a ban's) or
    a flag that is not True or False, raised before anything is done: protobuf refused them deep
    inside, as a bare TypeError, and kick_bot(forfeit=True) had by then forfeited the seats but
    ended no session."""
    if not isinstance(reason, str):
        raise ConfigError(
            f"{call}: reason must be a string (shown to the bot and kept in the record), "
            f"got {reason!r:.60}"
        )
    if capped and len(reason) > MAX_NOTE_LENGTH:
        # As a ban's: the same organiser's text, told to the bot the same way.
        raise ConfigError(
            f"{call}: the reason is {len(reason)} characters long: give at most "
            f"{MAX_NOTE_LENGTH} (it is told to the bot, as a ban's is)"
        )
    for name, value in flags.items():
        if not isinstance(value, bool):
            raise ConfigError(f"{call}: {name} must be True or False, got {value!r:.60}")


LOGGED_TEXT_LENGTH = 100
"""How much of a Hello's free text (bot_version, client_library, a resume_session_id that names
no session) the log keeps: all of it, up to the message size limit, let one bot write 94 MB of
log in two seconds by reconnecting."""


def _logged(text: str) -> str:
    """``text`` as the log keeps it: cut at :data:`LOGGED_TEXT_LENGTH`, saying how long it was."""
    if len(text) <= LOGGED_TEXT_LENGTH:
        return text
    return f"{text[: LOGGED_TEXT_LENGTH - 1]}… ({len(text)} characters)"


def _identity_problem(answer: object) -> str | None:
    """What keeps an account lookup's answer from the :class:`Identity` shape the handshake
    reads, or None. Named, because a BotIdentity given ``status="active"`` (the text, not the
    enum) was refused as "an answer of the wrong kind (BotIdentity)", the referee's own class."""
    for field in ("name", "status", "note"):
        if not hasattr(answer, field):
            return f"it has no {field}"
    if not isinstance(answer.name, str):  # type: ignore[attr-defined]
        return f"its name is {answer.name!r:.60}, not a string"  # type: ignore[attr-defined]
    if not answer.name:  # type: ignore[attr-defined]
        # Welcomed under no name, the session could never be seated (no table names "").
        return "its name is empty"
    status = answer.status  # type: ignore[attr-defined]
    if not isinstance(getattr(status, "value", None), str):
        return (
            f"its status is {status!r:.60}, not an enum whose value is a string: give "
            "arena.referee.Standing.ACTIVE (may play) or Standing.BANNED"
        )
    if not isinstance(answer.note, str):  # type: ignore[attr-defined]
        return f"its note is {answer.note!r:.60}, not a string"  # type: ignore[attr-defined]
    return None


class Referee:
    """A referee server: sessions, lobby, tables, spectators, health and reflection."""

    def __init__(
        self,
        config: RefereeConfig | None = None,
        accounts: Accounts | Mapping[str, str] | None = None,
    ) -> None:
        """A referee; ``accounts`` maps tokens to bot names (a mapping, or a hashed store)."""
        self.config = _as_config(config)
        self.accounts: Accounts = _as_accounts(accounts if accounts is not None else {})
        # Lookups may block (a database, a remote service), so they run in worker threads of
        # their own, never on the event loop: a slow account store delays handshakes only.
        self._lookups = ThreadPoolExecutor(
            max_workers=LOOKUP_THREADS, thread_name_prefix="referee-accounts"
        )
        self._server: grpc.aio.Server | None = None
        self._health = health.aio.HealthServicer()  # type: ignore[attr-defined]
        self._lobby = Lobby()
        self._sessions: dict[str, Session] = {}
        self._by_key: dict[bytes, list[Session]] = {}
        self._session_ids = itertools.count(1)
        self._refusals: dict[str, tuple[float, int, int]] = {}
        """Per host refusing sessions: when its minute began, refusals logged, refusals not."""
        # A tag of this start in every session id: counted from s1 again after a restart, a
        # bot's stale Hello.resume_session_id (kept over a crash, as the protocol asks) named
        # another live session of its token, which it then ended.
        self._session_tag = secrets.token_hex(3)
        self._request_ids = itertools.count(1)
        self._game_ids = itertools.count(1)
        self._running: dict[str, TableRun] = {}
        self._hosting: set[str] = set()
        """The ids of the tables hosted now, waiting for their bots or playing: an id is
        reserved from the call on, since a table is in ``_running`` only once its bots came."""
        self._seating: set[asyncio.Future[None]] = set()
        """One future per table waiting for its bots in the lobby, done once it stops waiting."""
        self._feeds: dict[str, TableFeed] = {}
        self._finished: deque[TableFeed] = deque()
        """The feeds of finished tables still shown, oldest first."""
        self._spectators = 0
        self._stopping = False
        self._stopped = asyncio.Event()
        self._grace: asyncio.Timeout | None = None
        """While a stop waits for its games: its deadline, which a later stop may bring nearer."""
        self._hurry_at: float | None = None
        """The nearest deadline a later stop asked for (the loop's clock), if any."""
        self._no_more_games = False
        """Whether a stop said the bots' work is done (``finished``)."""
        self._readers: set[asyncio.Task[None]] = set()
        self._handlers: set[asyncio.Task[Any]] = set()
        """The tasks running Play handlers (gRPC's own task per call)."""
        self.closed_sessions: Counter[str] = Counter()
        """Play streams ended so far, refused handshakes included, by the status the referee
        closed them with ("OK", "UNAUTHENTICATED", "RESOURCE_EXHAUSTED", ...), or :data:`CUT`
        for a stream that ended under it before it could close it (the referee cannot know what
        the bot saw then). Logged when the referee stops: a cheap health signal for operators
        and tests."""
        self.port = 0
        """The port the server listens on, once started."""

    # ---- life cycle -------------------------------------------------------------------------

    async def start(self, address: str | None = None) -> int:
        """Listen on ``address`` (default: ``config.address``; port 0: any free port); the port."""
        # A second server on the same referee listened on a new port (the old one still
        # open, and no longer stopped by stop()); one after stop() welcomed no bot, answering
        # each handshake INTERNAL with a traceback from the stopped account lookups.
        if self._stopping:
            raise ConfigError(
                "referee: this Referee has stopped and cannot start again; make a new "
                "Referee(config, accounts)"
            )
        if self._server is not None:
            raise ConfigError(
                f"referee: already started (listening on port {self.port}); call start() once"
            )
        cfg = self.config
        address = cfg.address if address is None else address
        _check_port(address)
        options: list[tuple[str, Any]] = [
            # gRPC's own limit is set above ours, so that a message over ours reaches the
            # referee, which can say what to do (gRPC's refusal only quotes two numbers).
            ("grpc.max_receive_message_length", cfg.max_message_bytes * OVERSIZE_SLACK),
            ("grpc.so_reuseport", 0),
            ("grpc.keepalive_time_ms", cfg.keepalive_ms),
            ("grpc.keepalive_timeout_ms", max(1000, cfg.keepalive_ms // 2)),
            # The name gRPC reads; "min_recv_ping_interval_without_data_ms" was silently
            # ignored, leaving gRPC's 5 minutes: a bot pinging every 10 s, as the guide allows,
            # was cut off after its third ping.
            ("grpc.http2.min_ping_interval_without_data_ms", cfg.min_ping_interval_ms),
            ("grpc.keepalive_permit_without_calls", 1),
            *cfg.options,
        ]
        server = grpc.aio.server(options=options)
        play = grpc.stream_stream_rpc_method_handler(
            self._play,
            request_deserializer=wire.RequestDecoder(cfg.max_message_bytes),
            response_serializer=wire.encode_response,
        )
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(BOT_SERVICE, {"Play": play}),)
        )
        spec_grpc.add_SpectatorServiceServicer_to_server(_Spectators(self), server)
        health_pb2_grpc.add_HealthServicer_to_server(self._health, server)
        reflection.enable_server_reflection(
            (BOT_SERVICE, SPECTATOR_SERVICE, health.SERVICE_NAME, reflection.SERVICE_NAME), server
        )
        try:
            if cfg.tls is not None:
                credentials = grpc.ssl_server_credentials(
                    [(cfg.tls.private_key, cfg.tls.cert_chain)],
                    root_certificates=cfg.tls.client_ca,
                    require_client_auth=cfg.tls.require_client_cert,
                )
                port = server.add_secure_port(address, credentials)
            else:
                port = server.add_insecure_port(address)
        except RuntimeError:  # newer grpcio raises where older ones returned port 0
            port = 0
        if port == 0:
            raise ConfigError(
                f"referee: cannot listen on {address!r}: the port is in use or the address is "
                "not this machine's; pick another port (0: any free one)"
            )
        await server.start()
        self._server = server
        self.port = port
        for name in ("", BOT_SERVICE, SPECTATOR_SERVICE):
            await self._health.set(name, health_pb2.HealthCheckResponse.SERVING)
        log.info("referee listening on port %d%s", port, " (TLS)" if cfg.tls else "")
        return port

    async def stop(self, grace_ms: int | None = None, *, finished: bool = False) -> None:
        """Stop: running games get ``grace_ms`` to finish, then are recorded INTERRUPTED;
        every session is told why and its stream closes with OK. ``finished`` says there are
        no more games (the batch or the event is over: bots should exit) rather than that the
        server is going down for a while (bots may reconnect later). A call while a stop is
        under way waits for it to end; its ``grace_ms``, if shorter, cuts the games' grace
        short, and its ``finished=True`` holds."""
        if grace_ms is not None:
            # Checked before anything stops: read only once a game runs, a string raised a
            # TypeError halfway through, and the bots were never told.
            _duration("stop: grace_ms", grace_ms)
        if self._stopping:
            # A later stop may only hurry the first: a shorter grace cuts its wait short (as a
            # second signal does under serve); stop(0) waited out the first one's whole grace.
            self._no_more_games |= finished
            if grace_ms is not None:
                when = asyncio.get_running_loop().time() + grace_ms / MS
                self._hurry_at = when if self._hurry_at is None else min(self._hurry_at, when)
                if self._grace is not None:  # made with a deadline no later than _hurry_at
                    self._grace.reschedule(min(self._grace.when() or when, self._hurry_at))
            await self._stopped.wait()
            return
        self._stopping = True
        self._no_more_games = finished
        # The tables still waiting for their bots end now, unplayed, rather than when their
        # wait runs out: stop() returned while a play_table() went on waiting (and under a
        # RefereeThread, the table's future was cancelled instead of given a record).
        self._lobby.close()
        if self._seating:
            await asyncio.wait(list(self._seating))
        for name in ("", BOT_SERVICE, SPECTATOR_SERVICE):
            await self._health.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
        grace = self.config.shutdown_grace_ms if grace_ms is None else grace_ms
        tasks = [r.task for r in self._running.values() if r.task is not None]
        if tasks:
            try:
                deadline = asyncio.get_running_loop().time() + grace / MS
                if self._hurry_at is not None:
                    deadline = min(deadline, self._hurry_at)
                async with asyncio.timeout_at(deadline) as self._grace:
                    await asyncio.wait(tasks)
            except TimeoutError:
                pass
            finally:
                self._grace = None
        for run in list(self._running.values()):
            run.interrupt("the referee is stopping")
        tasks = [r.task for r in self._running.values() if r.task is not None]
        if tasks:
            await asyncio.wait(tasks)
        if self._no_more_games:
            shutdown = bot_pb.Shutdown(
                reason=bot_pb.SHUTDOWN_REASON_NO_MORE_GAMES,
                message="no more games: the referee's work is done",
                may_reconnect=False,
            )
        else:
            shutdown = bot_pb.Shutdown(
                reason=bot_pb.SHUTDOWN_REASON_SERVER_SHUTDOWN,
                message="the referee is shutting down",
                may_reconnect=True,
                reconnect_after_ms=self.config.reconnect_after_ms,
            )
        for session in list(self._sessions.values()):
            session.end(Ending(None, shutdown.message, shutdown))
        for feed in self._feeds.values():
            feed.close()
        # gRPC's stop cancels every call still open once its grace runs out; a handler may still
        # be waiting (up to CLOSE_LINGER_S) for a slow bot to close its side, and a cancelled
        # call would end with UNAVAILABLE instead of the OK promised above. So they finish first.
        if self._handlers:
            await asyncio.wait(list(self._handlers), timeout=HANDLER_FINISH_S)
        server, self._server = self._server, None
        if server is not None:
            # And let go of it: it holds this referee's handlers, which hold the referee, a
            # cycle through gRPC's own server object that the collector cannot see. Neither
            # was ever freed, nor gRPC's hold on each event loop a referee had run on: about
            # 255 KB a referee in a process that hosts referee after referee.
            await server.stop(SERVER_STOP_GRACE_S)
        for reader in list(self._readers):
            reader.cancel()  # the server has stopped: no stream is left to ruin
        if self._readers:
            await asyncio.wait(list(self._readers))
        self._lookups.shutdown(wait=False, cancel_futures=True)
        closed = ", ".join(f"{n} {code}" for code, n in sorted(self.closed_sessions.items()))
        log.info("referee stopped; Play streams closed: %s", closed or "none")
        self._stopped.set()

    async def __aenter__(self) -> Referee:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop(0)

    @property
    def stopping(self) -> bool:
        """Whether :meth:`stop` has been called."""
        return self._stopping

    # ---- tables -----------------------------------------------------------------------------

    def idle(self) -> dict[str, int]:
        """Sessions waiting in the lobby, per bot name."""
        return self._lobby.counts()

    def dismiss_idle(self, message: str) -> int:
        """Tell every session waiting in the lobby there are no more games (they close); how many.

        For a host whose work is done while the referee stays up (a finished event): the bots
        exit instead of waiting for games that will not come.
        """
        if not isinstance(message, str):  # protobuf's bare TypeError otherwise
            raise ConfigError(f"dismiss_idle: message must be a string, got {message!r:.60}")
        shutdown = bot_pb.Shutdown(
            reason=bot_pb.SHUTDOWN_REASON_NO_MORE_GAMES, message=message, may_reconnect=False
        )
        idle = [s for s in self._sessions.values() if s.owner is self._lobby and not s.closed]
        for session in idle:
            session.end(Ending(None, message, shutdown))
        return len(idle)

    async def wait_for_bots(self, bots: Mapping[str, int] | Iterable[str], timeout_ms: int) -> bool:
        """Wait until the lobby holds these bots (names, or name to session count)."""
        expected = "bots must be a list of bot names (or a mapping of name to sessions), got"
        if isinstance(bots, str):  # a sequence of names too, of one letter each: never there
            raise ConfigError(f"{expected} the string {bots!r}: give [{bots!r}]")
        timeout = _duration("wait_for_bots: timeout_ms", timeout_ms)
        if isinstance(bots, Mapping):
            needed = dict(bots)
        elif isinstance(bots, Iterable):
            needed = dict(Counter(bots))
        else:  # None counted as no bots at all: "all there" at once
            raise ConfigError(f"{expected} {bots!r}")
        for name, count in needed.items():
            if not isinstance(name, str) or not isinstance(count, int) or isinstance(count, bool):
                raise ConfigError(f"{expected} {name!r}: {count!r}")
            if count < 1:
                # A count of 0 or less was "there" at once, so the wait answered True for a bot
                # that never connected.
                raise ConfigError(
                    f"wait_for_bots: bot {name!r}: wait for 1 or more sessions, got {count}"
                )
        return await self._lobby.wait_for(needed, timeout / MS)

    async def play_table(self, spec: TableSpec, *, wait_ms: int | None = None) -> GameRecord:
        """Play one table with idle sessions of its bots and return the game's record.

        Waits up to ``wait_ms`` (default: the spec's handshake clock) for every seat's bot to be
        in the lobby at once; a bot still missing then has its seat played by the fallback after
        the grace period (a forfeit), so this always returns. The sessions go back to the lobby.
        A table whose spec is not ``watchable`` is never shown to spectators (ListTables omits
        it, Watch answers NOT_FOUND): its deal is played at other tables too.
        """
        if not isinstance(spec, TableSpec):  # a dict from to_dict(): TableSpec.from_dict(it)
            raise ConfigError(
                f"play_table takes a TableSpec (TableSpec.from_dict for its dict form), "
                f"got {type(spec).__name__} {spec!r:.60}"
            )
        if spec.table_id in self._hosting:
            # Checked against the tables waiting for their bots too: two of one id both
            # playing shared one entry of _running, and the second to end raised KeyError
            # and never gave its bots back to the lobby.
            raise ConfigError(
                f"table {spec.table_id!r} is already being played (or waits for its bots): "
                "give each table at the referee its own table_id"
            )
        if self._stopped.is_set():
            # Answered at once with a record, a host's `while True: await play_table(...)` never
            # let the loop run again: 100 % CPU, unplayed records by the thousand, no signal heard.
            raise ConfigError(
                f"play_table: the referee has stopped, so table {spec.table_id!r} cannot start: "
                "check referee.stopping before starting a table"
            )
        if self._stopping:
            await self._stopped.wait()  # then the answer, once the stop is done (see above)
            return _unplayed(spec, "the referee is stopping")
        wait = spec.clocks.handshake_ms if wait_ms is None else _duration("wait_ms", wait_ms)
        self._hosting.add(spec.table_id)
        try:
            return await self._watched(spec, wait)
        finally:
            self._hosting.discard(spec.table_id)

    async def _watched(self, spec: TableSpec, wait: float) -> GameRecord:
        """:meth:`play_table`'s work, its table id reserved: the table's feed, then the game."""
        feed = TableFeed(
            spec.table_id,
            spec.seats,
            wire.rules_message(spec.rules),
            self.config.spectator_queue,
        )
        if spec.watchable:
            # An unwatchable table's feed is still written (it costs the table nothing new, and
            # the per-card path stays as it is) but never reachable from the spectator service.
            self._open(feed)
        try:
            return await self._host(spec, feed, wait)
        finally:
            if spec.watchable:
                self._retire(feed)

    async def _host(self, spec: TableSpec, feed: TableFeed, wait: float) -> GameRecord:
        """:meth:`play_table`'s work, once the table's feed is open."""
        seating = asyncio.get_running_loop().create_future()
        self._seating.add(seating)
        try:
            sessions = await self._lobby.take(spec.seats, wait / MS)
        finally:
            self._seating.discard(seating)
            seating.set_result(None)
        if self._stopping:
            for s in sessions:
                if s is not None:
                    self._lobby.add(s)
            return _unplayed(spec, "the referee is stopping")
        try:
            run = TableRun(
                spec,
                sessions,
                game_id=f"g{next(self._game_ids)}-{spec.table_id}",
                config=self.config,
                request_ids=self._request_ids,
                feed=feed,
            )
        except BaseException:
            # A table that cannot be set up gives its bots back: taken from the lobby and held
            # by no one, they would sit out every later table until they reconnected.
            for s in sessions:
                if s is not None and not s.closed:
                    self._lobby.add(s)
            raise
        task = asyncio.create_task(run.run(), name=f"table {spec.table_id}")
        run.task = task
        self._running[spec.table_id] = run
        try:
            try:
                # Shielded: cancelled at once, the game would stop mid-write with no GameEnded to
                # its bots and no record (a host's asyncio.wait_for, Future.cancel()).
                return await asyncio.shield(task)
            except asyncio.CancelledError:
                if not task.done():
                    run.interrupt("its host cancelled the table")
                    await task  # a second cancel stops waiting for the game to unwind
                raise
        finally:
            if not task.done():
                task.cancel()
                await asyncio.wait([task])
            del self._running[spec.table_id]
            for session in run.live_sessions():
                # Still the table's if the game failed before letting its sessions go.
                if session.owner is None or session.owner is run:
                    self._released(session)

    def _released(self, session: Session) -> None:
        """A session its table let go: a running table's seat that waits for its bot (one that
        never came, or is away within the grace period) takes it at once, as it would take a
        new connection; else it waits in the lobby. (In the lobby alone, the seat waited out its
        grace period and was forfeited with its bot idle beside it.)"""
        for run in self._running.values():
            seat = run.claimable(session.key, session.bot)
            if seat is not None and run.resume(seat, session):
                log.info(
                    "session %s (%s), free again, took its seat at table %s",
                    session.id,
                    session.bot,
                    run.spec.table_id,
                )
                return
        self._lobby.add(session)

    def _open(self, feed: TableFeed) -> None:
        """Show a table to spectators for as long as it is hosted (waiting or playing), however
        many tables are opened meanwhile: only finished ones are forgotten (:meth:`_retire`)."""
        self._feeds.pop(feed.table_id, None)  # an id used again lists in its new table's place
        self._feeds[feed.table_id] = feed

    def _retire(self, feed: TableFeed) -> None:
        """A table's game is over (or never started): its feed ends and is kept among the last
        ``config.keep_finished`` finished ones."""
        feed.close()  # idempotent: a game that ran has closed it already
        self._finished.append(feed)
        while len(self._finished) > self.config.keep_finished:
            old = self._finished.popleft()
            if self._feeds.get(old.table_id) is old:
                del self._feeds[old.table_id]

    def _feed(self, table_id: str) -> TableFeed | None:
        return self._feeds.get(table_id)

    def _table_summaries(self, include_finished: bool) -> list[spec_pb.TableSummary]:
        return [
            f.summary()
            for f in self._feeds.values()
            if include_finished or f.status != spec_pb.TABLE_STATUS_FINISHED
        ]

    # ---- one bot stream ---------------------------------------------------------------------

    async def _play(self, _requests: object, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        """The BotService.Play handler: read, authenticate, hold the session, close with status."""
        session = Session(
            context,
            f"s{next(self._session_ids)}-{self._session_tag}",
            self.config.inbox_limit,
            self.config.max_message_bytes,
        )
        # The reader outlives this handler by a moment: it must not be cancelled while its read
        # is pending (that ruins the stream's status), and the read ends by itself once the
        # handler has closed the stream. The set owns it until then; stop() sweeps stragglers.
        reader = asyncio.create_task(session.read_loop(), name=f"reader {session.id}")
        self._readers.add(reader)
        reader.add_done_callback(self._readers.discard)
        handler = asyncio.current_task()
        if handler is not None:
            self._handlers.add(handler)
            handler.add_done_callback(self._handlers.discard)
        ending: Ending | None = None
        cut = False
        try:
            ending = await self._handshake(session)
            if ending is not None and ending.code is not None:
                # One line per refusal: an organiser asked why a bot cannot connect finds it
                # here (the bot was told the same; the count alone came at the stop).
                claimed = session.hello.bot_name if session.hello is not None else ""
                if self._refusal_logged(session.peer):
                    log.info(
                        "session %s from %s%s refused (%s): %s",
                        session.id,
                        session.peer,
                        f" as {claimed[:MAX_BOT_NAME]!r}" if claimed else "",
                        ending.code_name,
                        ending.message,
                    )
            if ending is None:
                ending = await session.ending
                if ending.code is not None:
                    # As a refusal is: a session cut with an error status (flooding, a message
                    # over the limit) left no line saying why.
                    log.info(
                        "session %s (%s) ended (%s): %s",
                        session.id,
                        session.bot,
                        ending.code_name,
                        ending.message,
                    )
            if ending.code is None and ending.shutdown is None:
                # The stream ended, or broke, under the referee. A bot that only closed its
                # side gets OK; for a cancelled stream gRPC's cancellation of this handler
                # follows the end of the stream by a moment: wait for it, or the stream would
                # be counted as closed with OK. Forgotten first: a bot reconnecting meanwhile
                # must not find this session counted against its token's limit.
                self._forget(session)
                await asyncio.sleep(CUT_SETTLE_S)
        except asyncio.CancelledError:
            # gRPC cancels the handler of a stream that ended under it: the bot cancelled it or
            # its connection broke, or gRPC refused a message itself (one over its own limit,
            # OVERSIZE_SLACK times the referee's). The reader may have ended the session first,
            # seeing only the end of the stream, as if the bot had closed its side.
            cut = True
            session.cut()
            raise
        finally:
            self._forget(session)
            if not session.closed:
                session.end(ending or Ending(None, "the handler finished"))
            # The status the stream is closed with below: a refusal's own, where the session
            # had ended already (a stream ended before its Hello), else the session's.
            closed = session.ending.result()
            if ending is not None and ending.code is not None:
                closed = ending
            self.closed_sessions[CUT if cut else closed.code_name] += 1
            if session.said_goodbye and session.hello is not None:
                # Goodbye.reason is free text for this log (bot_service.proto): kept nowhere else.
                log.info(
                    "session %s (%s) said goodbye: %r",
                    session.id,
                    session.bot,
                    _logged(session.goodbye_reason),
                )
        if ending.shutdown is not None:
            shutdown = bot_pb.PlayResponse(shutdown=ending.shutdown)
            if await session.send_final(shutdown, FINAL_WRITE_S) and not reader.done():
                # Let the bot close its side first: closing under a bot that is still writing an
                # answer fails its write, and a failed write hides the Shutdown from it.
                await asyncio.wait([reader], timeout=CLOSE_LINGER_S)
        if ending.code is not None:
            await context.abort(ending.code, ending.message)

    async def _handshake(self, session: Session) -> Ending | None:
        """Check the Hello and seat the session (lobby or its old seat); an Ending refuses it."""
        cfg = self.config
        try:
            async with asyncio.timeout(cfg.handshake_ms / MS):
                _, first = await session.inbox.get()
        except TimeoutError:
            return Ending(
                grpc.StatusCode.DEADLINE_EXCEEDED,
                f"no Hello within {cfg.handshake_ms} ms of opening the stream: "
                "send Hello as the first message",
            )
        if isinstance(first, Closed):
            if first.goodbye:
                return Ending(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    "the first message of a session must be a Hello, got a Goodbye",
                )
            # The reader ended it (an oversized first message, say): close as it said
            # (Session.end resolves the ending as it queues the Closed marker).
            ending = session.ending.result()
            if ending.code is None and ending.shutdown is None:
                # The end of the stream, with nothing sent. A stream cut under the referee (gRPC
                # refusing a message over its own limit, a cancel) ends so too, and gRPC's
                # cancellation of this handler follows by a moment: waited for, as the handler
                # does after a session, so that a cut is counted as one. Else the bot closed its
                # side: refused as any first message that is no Hello, so that it has its
                # status and its line in the log (it had OK).
                await asyncio.sleep(CUT_SETTLE_S)
                return Ending(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    "the stream ended before a Hello: send Hello as the first message",
                )
            return ending
        if isinstance(first, wire.Play):
            first = first.full()
        if not isinstance(first, bot_pb.PlayRequest) or not first.HasField("hello"):
            # Named, as a Goodbye is: "another message" left the author to guess which.
            if isinstance(first, wire.Malformed):
                got = f"{first.size} bytes that are not a PlayRequest ({first.error})"
            elif isinstance(first, bot_pb.PlayRequest) and first.WhichOneof("kind"):
                got = f"a {first.WhichOneof('kind').capitalize()}"  # type: ignore[union-attr]
            elif isinstance(first, bot_pb.PlayRequest) and first.ByteSize():
                got = wire.unknown_kind(first)
            else:
                got = "an empty PlayRequest (no field set)"
            return Ending(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"the first message of a session must be a Hello, got {got}",
            )
        hello = first.hello
        session.hello = hello  # its claimed name is logged with a refusal
        if not 1 <= len(hello.bot_name) <= MAX_BOT_NAME:
            return Ending(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"Hello.bot_name must be 1 to {MAX_BOT_NAME} characters, got "
                f"{len(hello.bot_name)}: set the bot's name (ARENA_BOT_NAME for the SDKs)",
            )
        supported = ", ".join(str(v) for v in PROTOCOL_VERSIONS)
        if hello.protocol_version not in PROTOCOL_VERSIONS:
            return Ending(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"protocol version {hello.protocol_version} is not spoken here: set "
                f"Hello.protocol_version to {supported} (package hearts.v1) and update the bot "
                "or its SDK",
            )
        if not hello.token:
            return Ending(
                grpc.StatusCode.UNAUTHENTICATED,
                "no token: set Hello.token to the token the organiser gave this bot",
            )
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(cfg.handshake_ms / MS):
                identity = await loop.run_in_executor(
                    self._lookups, self.accounts.lookup, hello.token
                )
        except TimeoutError:
            log.warning("account lookup took longer than %d ms", cfg.handshake_ms)
            return Ending(
                grpc.StatusCode.UNAVAILABLE,
                f"the referee's account store did not answer within {cfg.handshake_ms} ms: "
                "retry in a while",
            )
        except Exception:
            log.exception("account lookup failed")
            # The contract (bot_service.proto) promises each refusal says what to do.
            return Ending(
                grpc.StatusCode.INTERNAL,
                "the referee could not check the token (a fault of the referee): retry with "
                "backoff, and tell the organiser",
            )
        problem = None if identity is None else _identity_problem(identity)
        if problem is not None:
            # A custom store's mistake (a bare name, say): say what it should answer, in the log
            # for its author and in the status for the bot, instead of an AttributeError.
            log.error(
                "accounts.lookup returned %r: it must return an Identity (name, status, note: "
                "e.g. arena.referee.BotIdentity(name)) or None, and %s",
                identity,
                problem,
            )
            return Ending(
                grpc.StatusCode.INTERNAL,
                "the referee could not check the token: its account store gave an answer of the "
                f"wrong kind ({type(identity).__name__}): retry with backoff, and tell the "
                "organiser",
            )
        if identity is None:
            return Ending(
                grpc.StatusCode.UNAUTHENTICATED,
                "unknown token: check the token the organiser gave this bot (it is "
                "case-sensitive); retrying with the same token gets the same answer",
            )
        if identity.status.value != MAY_PLAY:
            # Cut as a ban's reason is: the status travels in the call's metadata, which drops
            # one of more than 8 KiB (see MAX_NOTE_LENGTH), and a custom store may keep more.
            said = identity.note
            if len(said) > MAX_NOTE_LENGTH:
                said = said[: MAX_NOTE_LENGTH - 1] + "…"
            note = f": {said}" if said else ""
            # What to do, as the contract promises of every refusal: "banned: cheating" alone
            # left the bot's author to guess whether a retry could ever succeed.
            return Ending(
                grpc.StatusCode.PERMISSION_DENIED,
                f"bot {identity.name!r} may not play now ({identity.status.value}{note}): "
                f"{DENIED_ADVICE}",
            )
        if self._stopping:
            return Ending(
                grpc.StatusCode.UNAVAILABLE, "the referee is shutting down: retry with backoff"
            )
        session.bot = identity.name
        session.key = token_key(hello.token)
        session.decide_forced = hello.decide_forced_moves
        return await self._admit(session)

    async def _admit(self, session: Session) -> Ending | None:
        """Welcome an authenticated session: it takes back its bot's seat if a game holds one for
        its token, else it waits in the lobby. A session named by Hello.resume_session_id (of
        the same token) is ended first and its seat, if any, is this one's. A token may hold
        several sessions; at the limit the oldest idle one is replaced, and if none is idle the
        new one is refused."""
        key = session.key
        # Nothing below awaits before the Welcome's write has taken the session's write lock,
        # so that a seat taken back cannot be lost (nor its table write a request) in between.
        claim = self._replace(session)
        mine = self._by_key.setdefault(key, [])
        # Sessions ended but not yet gone count for nothing, and one still being welcomed is as
        # idle as one in the lobby: a burst of Hellos on one token was refused "too many
        # sessions (4, all playing)" at a limit of 2 with nothing playing.
        live = [s for s in mine if not s.closed]
        if len(live) >= self.config.max_sessions_per_token:
            idle = [s for s in live if s.owner is self._lobby or s.owner is None]
            if not idle:
                return Ending(
                    grpc.StatusCode.RESOURCE_EXHAUSTED,
                    f"too many sessions for this token ({len(live)}, all playing): close one, "
                    "or retry after a delay",
                )
            idle[0].end(
                Ending(
                    None,
                    "replaced by a new session with the same token",
                    bot_pb.Shutdown(
                        reason=bot_pb.SHUTDOWN_REASON_REPLACED_BY_NEW_SESSION,
                        message=f"a new session ({session.id}) with this token took this one's "
                        "place: the token's session limit was reached",
                    ),
                )
            )
        if claim is None:
            for run in self._running.values():
                seat = run.claimable(key, session.bot)
                if seat is not None:
                    claim = (run, seat)
                    break
        mine.append(session)
        self._sessions[session.id] = session
        # The seat is taken back before the Welcome is written: the Welcome's write holds the
        # session's write lock from its start, so the table's next request still follows it,
        # and the seat is never away across an await (a table noticing it away would count a
        # disconnect, at once with no grace period).
        if claim is not None and not claim[0].resume(claim[1], session):
            claim = None
        welcome = bot_pb.Welcome(
            session_id=session.id,
            protocol_version=session.hello.protocol_version if session.hello else 1,
            server_version=self.config.server_version,
            message=self.config.welcome_message,
            decide_forced_moves=session.decide_forced,
            # A table may hold its seats longer or shorter than the referee's default.
            reconnect_grace_ms=claim[0].spec.faults.grace_ms if claim else self.config.grace_ms,
            max_message_bytes=self.config.max_message_bytes,
            resumed=claim is not None,
            bot_name=session.bot,
        )
        response = bot_pb.PlayResponse(welcome=welcome)
        hello = session.hello
        if hello is not None:
            # Hello.bot_version and client_library are for diagnostics: the log is where an
            # organiser looks them up (a game's record does not carry them). Before the Welcome
            # is written, so that a session that leaves at once (a token tried out with a Hello
            # and a Goodbye) leaves its line too.
            log.info(
                "session %s: bot %r (Hello.bot_name %r, bot_version %r, client %r) from %s",
                session.id,
                session.bot,
                hello.bot_name,
                _logged(hello.bot_version),
                _logged(hello.client_library),
                session.peer,
            )
        if session.closed:
            # The bot left right after its Hello (a Goodbye, or the end of its side of the
            # stream: `grpcurl -d` sends one message and closes), and the reader saw it while the
            # token was checked. The handshake succeeded all the same, so the Welcome still goes
            # first, before the Shutdown or the OK that end the session (a bot checking its
            # token this way got nothing but an OK). A seat it took back is away again.
            await session.send_final(response, FINAL_WRITE_S)
            return None
        try:
            await session.send(response)
        except Exception:
            return None  # the session has ended: a seat it took back is away again
        if claim is not None:
            log.info("session %s (%s) took back its seat", session.id, session.bot)
            return None
        self._lobby.add(session)
        return None

    def _refusal_logged(self, peer: str) -> bool:
        """Whether a refusal of a session from ``peer`` gets its log line: at most
        :data:`REFUSALS_LOGGED` a minute from one host, the rest counted in one line the next
        minute (a client trying tokens as fast as it could grew the log by 700 KB in 3 s)."""
        host = peer.rpartition(":")[0] or peer
        now = time.monotonic()
        start, logged, skipped = self._refusals.get(host, (now, 0, 0))
        if now - start >= REFUSAL_WINDOW_S:
            if skipped:
                log.info(
                    "%d more refusals of sessions from %s in the minute before were not logged",
                    skipped,
                    host,
                )
            start, logged, skipped = now, 0, 0
        if len(self._refusals) > MAX_REFUSING_HOSTS:  # forget hosts long quiet
            self._refusals = {
                h: entry for h, entry in self._refusals.items() if now - entry[0] < REFUSAL_WINDOW_S
            }
        if logged < REFUSALS_LOGGED:
            self._refusals[host] = (start, logged + 1, skipped)
            return True
        if not skipped:
            log.info(
                "%d sessions from %s refused within a minute: the rest of this minute's are "
                "counted, not logged",
                logged,
                host,
            )
        self._refusals[host] = (start, logged, skipped + 1)
        return False

    def _replace(self, session: Session) -> tuple[TableRun, Seat] | None:
        """End the session a reconnect names in Hello.resume_session_id, if it is a live one of
        the same token (its connection may be half-open: silently dead, but not noticed yet);
        the seat it played, for the new session to take, if any. Any other id is ignored."""
        hello = session.hello
        wanted = hello.resume_session_id if hello is not None else ""
        old = self._sessions.get(wanted) if wanted else None
        if old is None or old is session or old.closed or old.key != session.key:
            if wanted:
                log.info(
                    "session %s (%s): Hello.resume_session_id %r names no live session of its "
                    "token; ignored",
                    session.id,
                    session.bot,
                    _logged(wanted),
                )
            return None
        claim: tuple[TableRun, Seat] | None = None
        for run in self._running.values():
            seat = run.seat_of(old)
            if seat is not None:
                claim = (run, seat)
                break
        # Ending it tells its table at once (the seat is away until the caller seats the new
        # session, without an await between); a Decision its reader still delivers goes to the
        # new session, which holds the seat (Session.heir).
        old.heir = session
        old.end(
            Ending(
                None,
                f"replaced by a reconnect of the same bot (session {session.id})",
                bot_pb.Shutdown(
                    reason=bot_pb.SHUTDOWN_REASON_REPLACED_BY_NEW_SESSION,
                    message=f"a reconnect of this bot (session {session.id}) took this "
                    "session's place: it named this session in Hello.resume_session_id",
                ),
            )
        )
        self._forget(old)  # not counted against the token's session limit any more
        log.info(
            "session %s (%s) replaces session %s, which it named in Hello.resume_session_id",
            session.id,
            session.bot,
            old.id,
        )
        return claim

    def _forget(self, session: Session) -> None:
        self._sessions.pop(session.id, None)
        mine = self._by_key.get(session.key)
        if mine is not None and session in mine:
            mine.remove(session)
            if not mine:
                del self._by_key[session.key]

    # ---- sessions, for operators ------------------------------------------------------------

    def sessions(self) -> list[SessionInfo]:
        """Every authenticated session now, idle or seated."""
        out = []
        for session in self._sessions.values():
            if session.closed:
                continue
            table = next(
                (t for t, run in self._running.items() if run.seat_of(session) is not None), None
            )
            out.append(SessionInfo(session.id, session.bot, table, session.peer))
        return out

    def sessions_on_other_tokens(self, tokens: Mapping[str, bytes]) -> list[str]:
        """The ids of the idle sessions of the bots in ``tokens`` opened with another token than
        the one given (its digest, ``accounts.token_key(token)``): a token replaced since."""
        return [
            session.id
            for session in self._sessions.values()
            # In the lobby, as idle() counts them (a scan of every table's seats for each
            # session ran each time the ladder formed tables).
            if session.owner is self._lobby
            and not session.closed
            and session.bot in tokens
            and not hmac.compare_digest(session.key, tokens[session.bot])
        ]

    def kick(
        self,
        session_id: str,
        reason: str,
        *,
        may_reconnect: bool = True,
        reconnect_after_ms: int | None = None,
    ) -> bool:
        """End one session with a KICKED shutdown (its seat, if any, is then away); found?"""
        _check_kick("kick", reason, may_reconnect=may_reconnect)
        if reconnect_after_ms is not None and (
            isinstance(reconnect_after_ms, bool)
            or not isinstance(reconnect_after_ms, int)
            or not 0 <= reconnect_after_ms <= MAX_MS
        ):
            raise ConfigError(
                f"kick: reconnect_after_ms must be a whole number from 0 to {MAX_MS} (ms: at "
                f"most a day) or None (the config's), got {reconnect_after_ms!r:.60}"
            )
        after = self.config.reconnect_after_ms if reconnect_after_ms is None else reconnect_after_ms
        return self._end_kicked(session_id, reason, may_reconnect, after)

    def _end_kicked(self, session_id: str, reason: str, may_reconnect: bool, after: int) -> bool:
        """:meth:`kick` once its arguments are checked; found?"""
        session = self._sessions.get(session_id)
        if session is None or session.closed:
            return False
        session.end(
            Ending(
                None,
                f"kicked: {reason}",
                bot_pb.Shutdown(
                    reason=bot_pb.SHUTDOWN_REASON_KICKED,
                    message=reason,
                    may_reconnect=may_reconnect,
                    reconnect_after_ms=after if may_reconnect else 0,
                ),
            )
        )
        return True

    def kick_bot(
        self, bot: str, reason: str, *, may_reconnect: bool = False, forfeit: bool = False
    ) -> int:
        """End every session of a bot (e.g. banned); how many were ended. With ``forfeit``
        (the bot may never come back: a ban), every seat it holds at a running table is
        forfeited at once, as :meth:`forfeit_token` does."""
        if not isinstance(bot, str):  # no session's bot: "0 ended" would hide the mistake
            raise ConfigError(f"kick_bot: bot must be a bot's name (a string), got {bot!r:.60}")
        _check_kick("kick_bot", reason, may_reconnect=may_reconnect, forfeit=forfeit)
        if forfeit:
            # Before the sessions end: a seat left to the grace period had its moves played by
            # the fallback, counted as one absence, and a game shorter than the grace ended
            # "normal" for a bot banned in the middle of it.
            for run in list(self._running.values()):
                for key in {s.key for s in run.seats if s.bot == bot and s.key is not None}:
                    run.forfeit_gone(
                        key, f"its bot was removed for good ({reason}): the seat is forfeited"
                    )
        ids = [s.id for s in self._sessions.values() if s.bot == bot and not s.closed]
        return sum(self.kick(i, reason, may_reconnect=may_reconnect) for i in ids)

    def forfeit_token(self, key: bytes, reason: str) -> list[tuple[str, int]]:
        """Forfeit at once every seat of a running table held by the token whose digest is
        ``key`` (``accounts.token_key``), its bot gone for good, and end the token's sessions;
        (table id, seat) of each seat it held."""
        if not isinstance(key, bytes):
            # The token itself matched no digest: nothing was forfeited, and nothing said so.
            raise ConfigError(
                # Never the value itself: it may be the token, and this line may be logged.
                "forfeit_token takes the token's digest, token_key(token) from "
                f"arena.referee.accounts (bytes), got a {type(key).__name__}"
            )
        # Not capped: the director's reason names the crashed bot's log, a path of any length,
        # and a refusal would leave the crashed bot's seats to play on through the grace.
        _check_kick("forfeit_token", reason, capped=False)
        # Forfeited before the sessions end, so that a decision open on one moves straight to
        # the fallback instead of waiting out the grace for a bot that will not return.
        hits = [
            (table_id, index)
            for table_id, run in list(self._running.items())
            for index in run.forfeit_gone(key, reason)
        ]
        for session in list(self._by_key.get(key, [])):
            self._end_kicked(session.id, reason, False, 0)
        return hits

    async def lobby_changed(self) -> None:
        """Return when a session next enters or leaves the lobby."""
        await self._lobby.changed()


class _Spectators(spec_grpc.SpectatorServiceServicer):
    """SpectatorService: list tables, watch one."""

    def __init__(self, referee: Referee) -> None:
        self._referee = referee

    async def ListTables(
        self, request: spec_pb.ListTablesRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> spec_pb.ListTablesResponse:
        """The tables, oldest first."""
        return spec_pb.ListTablesResponse(
            tables=self._referee._table_summaries(request.include_finished)
        )

    # Written with context.write, not as an async generator: a generator's yield waits on its
    # write with nothing else, and a spectator that stops reading must not hold its place.
    async def Watch(  # type: ignore[override]
        self, request: spec_pb.WatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> None:
        """One table's public events, live, until its game ends."""
        referee = self._referee
        feed = referee._feed(request.table_id)
        if feed is None:
            await context.abort(
                grpc.StatusCode.NOT_FOUND, _unknown_table(referee, request.table_id)
            )
        if referee.stopping:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "the referee is shutting down")
        if referee._spectators >= referee.config.max_spectators:
            await context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED, "too many spectators: retry later"
            )
        watcher = feed.subscribe(request.from_start)
        referee._spectators += 1
        held: asyncio.Task[None] | None = None
        try:
            while True:
                batch = await watcher.next_batch()
                if batch is None:
                    break
                events = [ev_pb.Event.FromString(e) for e in batch]
                response = spec_pb.WatchResponse(table_id=request.table_id, events=events)
                held = await _deliver(context, response, watcher, referee.config.write_timeout_ms)
                if held is not None:
                    break
        finally:
            referee._spectators -= 1
            feed.unsubscribe(watcher)
        if held is not None:
            # Its place is already free. gRPC sends a status only after the message it still
            # holds for this stream (it refuses the status until then, and logs an error), so
            # the status waits for the spectator to read that message, or for its connection
            # to go, which fails the write: then nothing more can reach it, and the stream ends
            # as a cancelled one does (quietly; a status would fail, and be logged as an error).
            try:
                await held
            except Exception:
                raise asyncio.CancelledError from None
        if watcher.overflowed:
            await context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                "this spectator fell too far behind the table and was dropped",
            )
        if held is not None:
            await context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                "this spectator stopped reading the table's last events and was dropped",
            )


def _unknown_table(referee: Referee, table_id: str) -> str:
    """Watch's NOT_FOUND message: what was asked (cut short, since a status message travels in
    a header gRPC caps at 16 KiB, and an echo past that reaches the spectator as a bare
    RESOURCE_EXHAUSTED "metadata size exceeds hard limit") and where the right id is."""
    shown = repr(table_id[:MAX_ECHOED_ID]) + ("..." if len(table_id) > MAX_ECHOED_ID else "")
    # A viewer that passes GameStarted.game_id (or TableSummary.game_id) is told the table's id.
    # Only watchable tables are in the feeds, so the hint shows nothing a listing does not.
    games = [f.table_id for f in referee._feeds.values() if table_id and f.game_id == table_id]
    if games:
        return (
            f"no table {shown} to watch: that is the game id of table {games[-1]!r};"
            " WatchRequest.table_id takes the table's id (TableSummary.table_id)"
        )
    return (
        f"no table {shown} to watch: ListTables shows the tables"
        " (a table whose deal is played at other tables too, a duplicate board's"
        " rotation, is never shown; of the finished ones, only the last"
        f" {referee.config.keep_finished} are kept)"
    )


async def _deliver(
    context: grpc.aio.ServicerContext[Any, Any],
    response: spec_pb.WatchResponse,
    watcher: Watcher,
    timeout_ms: int,
) -> asyncio.Task[None] | None:
    """Write one response to a spectator; None once written, or the write still held back if
    the spectator has stopped reading.

    A spectator whose stream does not take the write (it reads nothing, and HTTP/2 flow control
    holds the write back) must not keep its place among ``max_spectators`` for as long as its
    connection lives: while the table plays, it is let go as soon as it falls ``spectator_queue``
    events behind (the write is left pending, not awaited); once the table's feed has ended no
    event can queue behind it any more, so each remaining write gets ``timeout_ms``, as a
    message to a bot not reading does.
    """
    write = asyncio.ensure_future(context.write(response))
    try:
        if not watcher.ended.is_set():
            ended = asyncio.ensure_future(watcher.ended.wait())
            try:
                await asyncio.wait((write, ended), return_when=asyncio.FIRST_COMPLETED)
            finally:
                ended.cancel()
        if not write.done() and not watcher.overflowed:
            await asyncio.wait((write,), timeout=timeout_ms / MS)
    except BaseException:  # cancelled: the referee stops, or the spectator hung up
        write.cancel()
        raise
    if not write.done():
        return write
    write.result()  # a failed write (the spectator went away) ends the stream
    return None


def _unplayed(spec: TableSpec, reason: str) -> GameRecord:
    """The record of a table that never started."""
    now = time.time()
    n = len(spec.seats)
    return GameRecord(
        spec=spec,
        hands=(),
        decisions=(),
        faults=(),
        totals=(0,) * n,
        placings=(1,) * n,
        termination=Termination.INTERRUPTED,
        seat_status=(Termination.NORMAL,) * n,
        reason=f"interrupted before it started: {reason}",
        started_at=now,
        finished_at=now,
    )


async def serve(
    config: RefereeConfig,
    accounts: Accounts | Mapping[str, str],
    address: str | None = None,
    *,
    main: Callable[[Referee], Coroutine[Any, Any, object]] | None = None,
    ready: Callable[[int], None] | None = None,
) -> int:
    """Run a referee until SIGINT/SIGTERM (or until ``main(referee)`` returns); exit status.

    On the first signal, running games get ``config.shutdown_grace_ms`` to finish before they
    are recorded INTERRUPTED; a second signal interrupts them at once. Every stream is closed
    with a status: once ``main`` has returned, "no more games" (the bots exit); after a signal
    or an exception, "shutting down" (they may reconnect). Then ``main``, if it has not
    returned, is cancelled.
    """
    # Said before anything listens: a main or ready that cannot be called failed once the
    # referee served, with a bare TypeError (main's inside an ExceptionGroup).
    for name, given in (("main", main), ("ready", ready)):
        if given is not None and not callable(given):
            raise ConfigError(f"serve: {name} must be a function or None, got {given!r:.60}")
    loop = asyncio.get_running_loop()
    referee = Referee(config, accounts)
    port = await referee.start(address)
    signalled = asyncio.Event()
    signals = 0

    def on_signal() -> None:
        nonlocal signals
        signals += 1
        signalled.set()
        if signals > 1:
            for run in list(referee._running.values()):
                run.interrupt("a second stop signal")

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)
    waiter = asyncio.ensure_future(signalled.wait())
    worker: asyncio.Future[object] | None = None
    try:
        if ready is not None:
            ready(port)
        if main is not None:
            work = main(referee)
            if not inspect.isawaitable(work):
                raise ConfigError(
                    f"serve: main must be an async function of the referee (async def "
                    f"main(referee): ...), and it returned {work!r:.60}"
                )
            worker = asyncio.ensure_future(work)
        awaited: list[asyncio.Future[Any]] = [waiter] if worker is None else [waiter, worker]
        await asyncio.wait(awaited, return_when=asyncio.FIRST_COMPLETED)
    finally:
        # Whatever ended the wait (a signal, main's return or its exception, a ready() that
        # raised, a cancel): the referee stops and tells its bots. Under a TaskGroup, a main that
        # raised cancelled the stop, and left the bots waiting on a referee that never answered.
        waiter.cancel()
        # main's own return means its work is done: the bots are told there are no more games
        # and exit (told "shutting down", they kept retrying to reconnect for minutes). A
        # signal or an exception reads as "down for a while", as before.
        done = (
            worker is not None
            and worker.done()
            and not worker.cancelled()
            and worker.exception() is None
            and not signalled.is_set()
        )
        try:
            await referee.stop(finished=done)
            if worker is not None and not worker.done():
                # Its tables have ended (their records are its to keep): a main waiting on
                # anything else (a sleep, its next play_table) was waited for, without end, and
                # no further signal could end the process.
                worker.cancel()
                await asyncio.wait([worker])
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
    if worker is not None and not worker.cancelled():
        worker.result()  # main's own exception, as itself (it was an ExceptionGroup)
    return 0


def serve_forever(
    config: RefereeConfig,
    accounts: Accounts | Mapping[str, str],
    address: str | None = None,
    *,
    main: Callable[[Referee], Coroutine[Any, Any, object]] | None = None,
    ready: Callable[[int], None] | None = None,
) -> int:
    """Blocking :func:`serve` on a new event loop (for a CLI command or a process's main)."""
    with contextlib.suppress(KeyboardInterrupt):
        return run_loop(serve(config, accounts, address, main=main, ready=ready))
    return 130
