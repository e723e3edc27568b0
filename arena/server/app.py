"""``arena serve``: the referee, the competition and the leaderboard in one process, one loop.

:func:`serve` opens the competition database (recovering from a crash first), starts the referee
(grpc.aio) with the hashed-token accounts, attaches the :class:`~arena.server.competition.
Competition` to it, and serves the leaderboard over HTTP, all on one asyncio loop; SQLite and the
rating fit run in worker threads. SIGTERM or SIGINT drains: no new table starts, running tables
get ``drain`` to finish, the rest are recorded INTERRUPTED (not rated), every stream is closed with
a status, and the process exits 0. A second signal stops at once (the tables still running are
recorded INTERRUPTED all the same).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import ssl
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from arena.referee import Referee, RefereeConfig, TlsConfig
from arena.server.accounts import BAN_NOTE, AccountStatus, AccountStore, check_not_a_batch
from arena.server.competition import Competition, EventAccounts, SessionInfo
from arena.server.config import STOP_SIGNALS, ServerConfig
from arena.server.http import HttpServer
from arena.server.ledger import Ledger
from arena.server.logs import EXIT_LOG_GONE, LogHandler
from arena.server.matchmaking import event_schedule
from arena.server.webapp import make_handler
from arena.table import GameRecord, TableSpec

__all__ = ["Ports", "RefereeHost", "check_not_a_batch", "host_port", "serve"]

log = logging.getLogger("arena.server")

LOG_CHECK_S = 1.0
"""How often an idle server looks whether its log's reader (a pipe's) has gone."""
KICK_RECONNECT_MS = 1000
"""A kicked (not banned) session is told it may come back after this long (at most a quarter of
the grace period: a bot kicked in the middle of a game must be back, with the SDK's jitter of a
fifth, before its seat is forfeited)."""


@dataclass(frozen=True)
class Ports:
    """Where a running server listens."""

    bots: int
    """The referee's gRPC port."""
    web: int
    """The leaderboard's HTTP(S) port."""


class RefereeHost:
    """The competition's view of the referee: lobby, sessions, tables, kicks, lobby changes."""

    def __init__(
        self, referee: Referee, on_change: Callable[[], None], grace_ms: int = 5000
    ) -> None:
        self._referee = referee
        self._on_change = on_change
        self._kick_reconnect_ms = min(KICK_RECONNECT_MS, grace_ms // 4)

    def idle(self) -> Mapping[str, int]:
        """Sessions waiting in the lobby, per bot."""
        return self._referee.idle()

    def sessions(self) -> Sequence[SessionInfo]:
        """Every authenticated session, idle or seated."""
        return [
            SessionInfo(s.session_id, s.bot, s.table_id, str(s.peer))
            for s in self._referee.sessions()
        ]

    async def play_table(self, spec: TableSpec) -> GameRecord:
        """One table on the referee."""
        return await self._referee.play_table(spec)

    def kick(self, session_id: str, reason: str, *, for_good: bool = False) -> bool:
        """End one session; it may reconnect unless ``for_good``."""
        return self._referee.kick(
            session_id,
            reason or "kicked by the organiser",
            may_reconnect=not for_good,
            reconnect_after_ms=self._kick_reconnect_ms,
        )

    def dismiss_idle(self, message: str) -> int:
        """Tell the waiting sessions there are no more games."""
        return self._referee.dismiss_idle(message)

    def replaced(self, tokens: Mapping[str, bytes]) -> Sequence[str]:
        """The waiting sessions opened with another token than their bot's in ``tokens``."""
        return self._referee.sessions_on_other_tokens(tokens)

    def kick_bot(self, bot: str, reason: str) -> int:
        """End every session of a bot and forfeit the seats it holds (banned: it may not
        reconnect)."""
        return self._referee.kick_bot(bot, reason or BAN_NOTE, may_reconnect=False, forfeit=True)

    async def watch(self) -> None:
        """Poke the competition whenever the lobby changes (runs until cancelled)."""
        while True:
            await self._referee.lobby_changed()
            self._on_change()


def host_port(host: str, port: int) -> str:
    """``HOST:PORT`` as gRPC and bots read it: an IPv6 address in brackets (``[::1]:50051``;
    bare, gRPC read ``::1:0`` as host ``::0.1.0.0`` and refused to listen)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def web_tls(tls: TlsConfig | None, cert: Path | None, key: Path | None) -> ssl.SSLContext | None:
    """The leaderboard's TLS context (the same certificate as the referee's), or None."""
    if tls is None or cert is None or key is None:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context


def _warn_about_event(config: ServerConfig, accounts: AccountStore) -> None:
    """Say what will keep a fixed event from being played (it starts anyway: bots may be added,
    and a finished event's database is still served for its page)."""
    event = config.event
    if event is None:
        return
    known = {a.name for a in accounts.accounts()}
    missing = [name for name in event.entrants if name not in known]
    # Names are exact, and `arena bots add Alice` refuses a name 'alice' has but for its case:
    # the warning below sent the organiser to a command that could not help.
    folded = {name.casefold(): name for name in known}
    spelled = {n: folded[n.casefold()] for n in missing if n.casefold() in folded}
    if spelled:
        log.warning(
            "event entrants spelled unlike their accounts (names are exact): write them in "
            "[event] entrants as the accounts spell them",
            extra={"entrants": spelled},
        )
        missing = [n for n in missing if n not in spelled]
    if missing:
        log.warning(
            "event entrants without an account: add them with `arena bots add NAME --db ...`",
            extra={"missing": missing},
        )
    banned = [
        a.name
        for a in accounts.accounts()
        if a.name in event.entrants and a.status is AccountStatus.BANNED
    ]
    if banned:
        # Else the event could be over at once (every table seats one of them), said nowhere.
        log.warning(
            "event entrants banned: none of their tables is played, and once every table left"
            " seats one of them the event is over (`arena bots unban NAME --db ...`)",
            extra={"banned": banned},
        )
    if event.end is not None and event.end <= time.time():
        log.warning(
            "the event's end is already past: no table will start", extra={"end": event.end}
        )


async def _watch_log(handler: LogHandler) -> None:
    """Notice a log pipe's reader gone while nothing is logged (runs until cancelled)."""
    while not handler.gone:
        await asyncio.sleep(LOG_CHECK_S)
        handler.check_reader()


async def serve(
    db: Path,
    config: ServerConfig,
    *,
    host: str = "127.0.0.1",
    port: int = 50051,
    web_port: int = 8080,
    tls_cert: Path | None = None,
    tls_key: Path | None = None,
    ready: Callable[[Ports], None] | None = None,
    stop: asyncio.Event | None = None,
    log_handler: LogHandler | None = None,
) -> int:
    """Run the competition server until SIGTERM/SIGINT (or ``stop`` is set, or the reader of
    ``log_handler``'s log goes: then the status is :data:`EXIT_LOG_GONE`); the exit status.

    A start that fails (an exception before ``ready`` has returned) removes the database if it
    made it, so that the next start does not take an empty one for the competition's."""
    loop = asyncio.get_running_loop()
    total = None
    if config.event is not None:
        event = config.event
        total = len(
            event_schedule(
                event.entrants,
                players=config.players,
                boards=event.boards,
                seed=config.seed,
                format=event.format,
                candidate=event.candidate,
            )
        )
    tls = None
    if tls_cert is not None or tls_key is not None:
        if tls_cert is None or tls_key is None:
            from arena.errors import ConfigError

            raise ConfigError("--tls-cert and --tls-key go together: give both")
        tls = TlsConfig.from_files(tls_cert, tls_key)  # checked before the database is made
    check_not_a_batch(db)
    stop = stop or asyncio.Event()
    log_gone = False

    def on_log_gone() -> None:
        # A closed pipe, as SIGPIPE stops a Unix tool: a server that ran on for weeks with no
        # log (faults, refusals, bans) while looking healthy is worse than one that stops.
        nonlocal log_gone
        log_gone = True
        stop.set()

    def heard_log_gone() -> None:  # in whichever thread logged
        with contextlib.suppress(RuntimeError):  # the loop closed: the server has stopped
            loop.call_soon_threadsafe(on_log_gone)

    accounts: AccountStore | None = None
    competition: Competition | None = None
    referee: Referee | None = None
    web: HttpServer | None = None
    watcher: asyncio.Task[None] | None = None
    log_watch: asyncio.Task[None] | None = None
    signals = 0
    hurried: int | None = None  # the tables in play when a second signal interrupted them
    background: set[asyncio.Task[None]] = set()
    started = False

    def on_signal(number: int) -> None:
        nonlocal signals, hurried
        signals += 1
        log.warning("signal", extra={"signal": signal.Signals(number).name, "count": signals})
        if signals > 2:
            # A third: the operator wants out whatever is left to do (a shutdown that hangs).
            for sig in STOP_SIGNALS:
                loop.remove_signal_handler(sig)
            signal.raise_signal(number)
            return
        stop.set()
        if signals > 1 and referee is not None and not referee.stopping:
            # A second signal: interrupt the tables now instead of waiting out the drain.
            hurried = competition.running if competition is not None else 0
            hurry = loop.create_task(referee.stop(0))
            background.add(hurry)
            hurry.add_done_callback(background.discard)

    # Taken from before the database is made: a Ctrl-C in the start (gRPC's server starting)
    # ended in gRPC's traceback, and a SIGTERM there killed the process with a new database,
    # its lock and WAL left behind. Now either stops the start, as a start that fails.
    for sig in STOP_SIGNALS:
        # An inherited ignore is kept, as the start kept it: `nohup arena serve &` drained and
        # exited when the ssh session that started it dropped (SIGHUP), a script's `&` on Ctrl-C.
        if signal.getsignal(sig) is not signal.SIG_IGN:
            loop.add_signal_handler(sig, on_signal, sig)
    ledger = Ledger.open(db, config, total)
    forget_log = (
        log_handler.when_gone(heard_log_gone) if log_handler is not None else (lambda: None)
    )
    try:
        accounts = AccountStore(db)
        competition = Competition(config, ledger, accounts)
        await competition.load()
        _warn_about_event(config, accounts)
        lookup = (
            accounts if config.event is None else EventAccounts(accounts, config.event.entrants)
        )
        referee = Referee(
            RefereeConfig(
                max_message_bytes=config.max_message_bytes,
                handshake_ms=config.clocks.handshake_ms,
                grace_ms=config.faults.grace_ms,
                shutdown_grace_ms=0,
                max_sessions_per_token=config.max_sessions,
                tls=tls,
                welcome_message=config.name,
            ),
            lookup,
        )
        bots_port = await referee.start(host_port(host, port))
        adapter = RefereeHost(referee, competition.poke, config.faults.grace_ms)
        competition.attach(adapter)
        watcher = loop.create_task(adapter.watch())
        web = HttpServer(make_handler(competition))
        try:
            web_bound = await web.start(host, web_port, web_tls(tls, tls_cert, tls_key))
        except OSError as e:
            from arena.errors import ConfigError

            raise ConfigError(
                f"leaderboard page: cannot listen on {host_port(host, web_port)}: "
                f"{e.strerror or e}; "
                "pick another --web-port (0: any free one)"
            ) from None
        if stop.is_set():
            # Stopped before serving (a signal, or the log's reader gone): no table has
            # started and no banner promised anything; a database made for it is removed.
            log.info("stopped before serving")
            return EXIT_LOG_GONE if log_gone else 0
        competition.start()
        ports = Ports(bots_port, web_bound)
        log.info(
            "serving",
            extra={
                "bots_port": bots_port,
                "web_port": web_bound,
                "host": host,
                "db": str(db),
                "mode": config.kind,
                "tls": tls is not None,
            },
        )
        if ready is not None:
            ready(ports)
        started = True
        if log_handler is not None:
            log_watch = loop.create_task(_watch_log(log_handler))
        await stop.wait()
        left = await competition.drain(config.drain_ms / 1000)
        # After a second signal the tables were interrupted already (their tasks are done, so
        # none is left): the line counts those, as it counts the ones a plain drain leaves.
        log.info("drained", extra={"interrupting": left if hurried is None else hurried})
        await referee.stop(0)
        await competition.wait_recorded()
        return EXIT_LOG_GONE if log_gone else 0
    finally:
        # The handlers stay to the end (the loop's close removes them): a second Ctrl-C that
        # came once the tables were done, as the fit worker was being stopped, killed the server
        # mid-way (exit 130, and the worker's traceback from its half-made start).
        if watcher is not None:
            watcher.cancel()
        if log_watch is not None:
            log_watch.cancel()
        if referee is not None and not referee.stopping:
            await referee.stop(0)
        if competition is not None:
            await competition.wait_recorded()
            await competition.close()
        if web is not None:
            await web.close()
        if accounts is not None:
            accounts.close()  # before the ledger, which may remove the file
        ledger.close(discard=not started)
        forget_log()
        log.info("stopped")
