"""A referee on its own thread and event loop, driven from another thread (the trio director).

Only coarse calls cross the thread boundary (start, submit a table, stop): the per-decision path
stays inside the referee's asyncio loop, as DESIGN.md requires. A submitted table comes back as a
:class:`concurrent.futures.Future`, which trio code can await with ``trio.to_thread.run_sync``
or by polling ``done()`` from a callback.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import inspect
import threading
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import Any, TypeVar

from arena.errors import ConfigError
from arena.referee.accounts import Accounts
from arena.referee.config import RefereeConfig
from arena.referee.loop import run as run_loop
from arena.referee.server import Referee, _as_accounts, _as_config, _duration
from arena.table import GameRecord, TableSpec

__all__ = ["RefereeThread"]

START_TIMEOUT_S = 30.0
STOPPED = "the referee has stopped (or is stopping): it takes no more tables or calls"
T = TypeVar("T")


class RefereeThread:
    """Runs a :class:`Referee` on a daemon thread with its own asyncio loop."""

    def __init__(
        self,
        config: RefereeConfig | None = None,
        accounts: Accounts | Mapping[str, str] | None = None,
    ) -> None:
        """Prepare (not start) a referee thread."""
        self.config = _as_config(config)
        # Checked here, as Referee(...) does: refused only at start(), the mistake was found
        # far from where it was made, and only by a caller that got as far as starting.
        self._accounts = _as_accounts(accounts if accounts is not None else {})
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._referee: Referee | None = None
        self._started = threading.Event()
        self._start_error: BaseException | None = None
        self._stop_request: asyncio.Event | None = None
        self._stop_grace_ms: int | None = None
        self._stop_finished = False
        self._lock = threading.Lock()
        self._closing = False
        """Whether the referee was asked to stop (or its loop ended): nothing more is handed
        to its loop."""
        self._pending: dict[concurrent.futures.Future[Any], Coroutine[Any, Any, Any]] = {}
        """The futures handed out for coroutines on the loop, not resolved yet."""
        self.port = 0
        """The port the referee listens on, once started."""

    @property
    def referee(self) -> Referee:
        """The referee (to be used only from its own loop, e.g. via :meth:`call`)."""
        if self._referee is None:
            raise ConfigError("the referee thread has not been started")
        return self._referee

    def start(self, address: str | None = None) -> int:
        """Start the thread and the server on ``address`` (default ``config.address``); the port."""
        if self._thread is not None:
            if self._thread.is_alive():
                raise ConfigError("the referee thread was already started; call start() once")
            raise ConfigError(
                "this referee thread has stopped and cannot start again; make a new "
                "RefereeThread(config, accounts)"
            )
        self._thread = threading.Thread(
            target=lambda: self._run(address), name="referee", daemon=True
        )
        self._thread.start()
        if not self._started.wait(START_TIMEOUT_S):
            raise ConfigError(f"the referee did not start within {START_TIMEOUT_S:.0f} s")
        if self._start_error is not None:
            error = self._start_error
            # Its loop ends by itself; joined, and this object is as new, so that start() may
            # be called again (as Referee's may). A failed start left a "referee" thread
            # behind, and a second start() said it had started already.
            self._thread.join(START_TIMEOUT_S)
            self._thread, self._loop, self._referee, self._stop_request = None, None, None, None
            self._started = threading.Event()
            self._start_error = None
            self._closing = False
            raise error
        return self.port

    def _run(self, address: str | None) -> None:
        try:
            run_loop(self._main(address))
        finally:
            # What was handed to the loop and never ran must not leave its caller waiting for
            # ever (a call() made as the referee stopped), nor warn "never awaited" at exit.
            with self._lock:
                self._closing = True
                pending, self._pending = self._pending, {}
            for future, coroutine in pending.items():
                with contextlib.suppress(concurrent.futures.InvalidStateError):
                    # Not cancel(): asyncio would pass a cancel on to the closed loop.
                    future.set_exception(ConfigError(STOPPED))
                if inspect.getcoroutinestate(coroutine) == inspect.CORO_CREATED:
                    coroutine.close()

    def _schedule(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run ``coroutine`` on the referee's loop; its future (ConfigError if the referee
        stops, or has stopped, before it runs)."""
        with self._lock:
            # Under the lock that stop() takes to ask the loop to stop: a coroutine handed over
            # before that request starts before the referee stops, and none is handed over after.
            try:
                loop = self._running_loop()
                if self._closing:
                    raise ConfigError(STOPPED)
                future = asyncio.run_coroutine_threadsafe(coroutine, loop)
            except RuntimeError:  # the loop closed: the referee stopped by itself
                coroutine.close()
                raise ConfigError(STOPPED) from None
            except BaseException:
                coroutine.close()  # never handed over: it must not warn "never awaited"
                raise
            self._pending[future] = coroutine
        future.add_done_callback(self._forget)
        return future

    def _forget(self, future: concurrent.futures.Future[Any]) -> None:
        with self._lock:
            self._pending.pop(future, None)

    async def _main(self, address: str | None) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop_request = asyncio.Event()
        try:
            self._referee = Referee(self.config, self._accounts)
            self.port = await self._referee.start(address)
        except BaseException as e:
            self._start_error = e
            self._started.set()
            return
        self._started.set()
        await self._stop_request.wait()
        await self._referee.stop(self._stop_grace_ms, finished=self._stop_finished)

    def submit(
        self, spec: TableSpec, *, wait_ms: int | None = None
    ) -> concurrent.futures.Future[GameRecord]:
        """Play a table on the referee's loop; the future resolves to its record (an
        ``interrupted`` one if the referee stops first; ConfigError if it has stopped)."""
        if not isinstance(spec, TableSpec):
            # Here, on the caller's thread, as play_table says it: in the future, a dict for a
            # spec showed only once someone asked for the result.
            raise ConfigError(
                f"submit takes a TableSpec (TableSpec.from_dict for its dict form), got "
                f"{type(spec).__name__} {spec!r:.60}"
            )
        if wait_ms is not None:
            _duration("wait_ms", wait_ms)
        return self._schedule(self.referee.play_table(spec, wait_ms=wait_ms))

    def call(self, function: Callable[[Referee], T]) -> T:
        """Run ``function(referee)`` on the referee's loop and return its result (a quick look:
        a function that returns a coroutine is refused, see :meth:`wait_for_bots`)."""

        async def run() -> T:
            result = function(self.referee)
            if inspect.iscoroutine(result):
                # Handed back, it was never awaited: call(lambda r: r.wait_for_bots(...))
                # answered a coroutine object, which reads as true, and warned at exit.
                name = getattr(result, "__qualname__", "a coroutine")
                result.close()
                raise ConfigError(
                    f"call() runs a plain function on the referee's loop, and this one returned "
                    f"a coroutine ({name}) that nothing would await: use the thread's own "
                    "wait_for_bots(...), submit(spec) for play_table, or stop()"
                )
            return result

        return _result(self._schedule(run()))

    def idle(self) -> dict[str, int]:
        """Sessions waiting in the lobby, per bot name."""
        return self.call(Referee.idle)

    def wait_for_bots(self, bots: Mapping[str, int] | Iterable[str], timeout_ms: int) -> bool:
        """Block until these bots wait in the lobby (names, or name to count); False on timeout."""
        return _result(self._schedule(self.referee.wait_for_bots(bots, timeout_ms)))

    def stop(
        self, grace_ms: int | None = None, timeout_s: float | None = None, *, finished: bool = False
    ) -> bool:
        """Stop the referee (games get ``grace_ms`` to finish) and join the thread (idempotent);
        True once it has stopped, False if ``timeout_s`` ran out first (it goes on stopping).

        ``finished``: tell the bots there are no more games (see :meth:`Referee.stop`). A call
        while a stop is under way may cut its grace short (``stop(0)``: at once).
        """
        if grace_ms is not None:
            # Here, on the caller's thread: on the referee's, a bad value ended its loop with a
            # traceback, and stop() returned as if it had stopped.
            _duration("stop: grace_ms", grace_ms)
        if timeout_s is not None:
            _duration("stop: timeout_s", timeout_s, "seconds")
        thread, loop, referee = self._thread, self._loop, self._referee
        if thread is None or loop is None or self._stop_request is None:
            return True
        if not thread.is_alive():
            return True
        if self._start_error is not None:  # the loop is ending by itself (or has closed)
            thread.join(timeout_s)
            return not thread.is_alive()
        with self._lock:
            again, self._closing = self._closing, True
            with contextlib.suppress(RuntimeError):  # closed meanwhile: it stopped by itself
                if again and referee is not None:
                    # A stop under way (one whose timeout_s ran out, say): this one's grace
                    # may cut it short. Before, stop(0) waited out the first one's whole grace.
                    hurry = referee.stop(grace_ms, finished=finished)
                    try:
                        asyncio.run_coroutine_threadsafe(hurry, loop)
                    except RuntimeError:
                        hurry.close()
                        raise
                else:
                    self._stop_grace_ms = grace_ms
                    self._stop_finished = finished
                    loop.call_soon_threadsafe(self._stop_request.set)
        thread.join(timeout_s)
        return not thread.is_alive()

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None or self._thread is None or not self._thread.is_alive():
            raise ConfigError("the referee thread is not running")
        return self._loop

    def __enter__(self) -> RefereeThread:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop(0)


def _result(future: concurrent.futures.Future[T]) -> T:
    """The result of a coroutine run on the referee's loop; ConfigError if the referee's end
    cancelled it (asyncio cancels what still runs when its loop finishes)."""
    try:
        return future.result()
    except concurrent.futures.CancelledError:
        raise ConfigError(STOPPED) from None
