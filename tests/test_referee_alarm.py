"""A seat's deadline alarm (``arena.referee.game._Alarm``), on a real event loop and real timers.

The alarm replaces a timer per request with one left in place, so what matters is that a request
still expires at its own deadline (never at an earlier request's), that a sooner deadline moves
the timer, that a stopped alarm stays silent, that a request still being written at its deadline
gets ``write_s`` more before the alarm cancels the write, and that this cancellation is told apart
from anyone else's. The end-to-end timeouts (a bot that is slow or
silent) are in test_referee_faults.py.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from conftest import on_referee_loop

from arena.referee.game import _Alarm
from arena.referee.session import Expired, Inbound, Session


class _Peerless:
    """The one thing a Session asks of its stream up front (the alarm never reads or writes)."""

    def peer(self) -> str:
        return "ipv4:127.0.0.1:9"


def _session() -> Session:
    return Session(_Peerless(), "s1", inbox_limit=8, max_message_bytes=1 << 16)  # type: ignore[arg-type]


async def _next(session: Session, within_s: float) -> tuple[Inbound, float] | None:
    """The next inbox entry and when it came (``time.monotonic()``), or None."""
    try:
        async with asyncio.timeout(within_s):
            item = await session.inbox.get()
    except TimeoutError:
        return None
    return item, time.monotonic()


def test_a_request_expires_at_its_deadline_with_a_marker() -> None:
    async def body() -> None:
        session, alarm = _session(), _Alarm()
        due = time.monotonic() + 0.05
        alarm.set(due, session, 7)
        got = await _next(session, 5)
        assert got is not None
        (at, marker), seen = got
        assert marker == Expired(7)
        assert seen >= at >= due - 0.001  # a loop's timers may round to the millisecond
        alarm.stop()

    on_referee_loop(body)


def test_a_timer_set_for_an_earlier_request_waits_for_the_open_one() -> None:
    async def body() -> None:
        session, alarm = _session(), _Alarm()
        start = time.monotonic()
        alarm.set(start + 0.03, session, 1)
        alarm.clear()  # request 1 was answered in time
        alarm.set(start + 0.12, session, 2)
        got = await _next(session, 5)
        assert got is not None
        (_, marker), seen = got
        assert marker == Expired(2)  # never request 1's
        assert seen >= start + 0.12 - 0.001
        assert session.inbox.empty()
        alarm.stop()

    on_referee_loop(body)


def test_a_sooner_deadline_moves_the_timer() -> None:
    async def body() -> None:
        session, alarm = _session(), _Alarm()
        start = time.monotonic()
        alarm.set(start + 60, session, 1)
        alarm.clear()
        alarm.set(start + 0.03, session, 2)
        got = await _next(session, 5)
        assert got is not None and got[0][1] == Expired(2)
        alarm.stop()

    on_referee_loop(body)


def test_an_answered_request_and_a_stopped_alarm_stay_silent() -> None:
    async def body() -> None:
        session, alarm = _session(), _Alarm()
        alarm.set(time.monotonic() + 0.02, session, 1)
        alarm.clear()
        assert await _next(session, 0.1) is None
        alarm.set(time.monotonic() + 0.02, session, 2)
        alarm.stop()
        assert await _next(session, 0.1) is None

    on_referee_loop(body)


def test_a_write_held_up_past_the_deadline_is_cancelled_and_claimed() -> None:
    async def body() -> None:
        session, alarm = _session(), _Alarm()
        alarm.set(time.monotonic() + 0.03, session, 1)
        alarm.sending = True
        with pytest.raises(asyncio.CancelledError):
            await asyncio.get_running_loop().create_future()  # a write that never completes
        assert alarm.claim()  # the alarm's own cancellation: a timeout
        alarm.clear()
        current = asyncio.current_task()
        assert current is not None and current.cancelling() == 0
        await asyncio.sleep(0)  # the task goes on, not cancelled again
        assert session.inbox.empty()  # no marker while writing: the cancellation says it
        alarm.stop()

    on_referee_loop(body)


def test_a_write_past_the_deadline_gets_write_s_more_before_it_is_cancelled() -> None:
    # Cancelled at the deadline itself, every session of a table of 1 ms moves was cut while
    # its request was written; now the write gets write_s more, and the table then records a
    # timeout (game.py puts the Expired marker first once the write is done).
    async def body() -> None:
        session, alarm = _session(), _Alarm()
        alarm.write_s = 60.0
        alarm.set(time.monotonic() + 0.02, session, 1)
        alarm.sending = True
        written = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_later(0.1, written.set_result, None)
        await written  # a write that completes well after the deadline: not cancelled
        assert alarm.overdue and not alarm.cancelled
        assert session.inbox.empty()
        alarm.clear()
        # The next request starts afresh, and a write stuck past write_s is cancelled.
        alarm.write_s = 0.02
        alarm.set(time.monotonic() + 0.02, session, 2)
        assert not alarm.overdue
        alarm.sending = True
        with pytest.raises(asyncio.CancelledError):
            await asyncio.get_running_loop().create_future()
        assert alarm.overdue and alarm.claim()
        alarm.stop()

    on_referee_loop(body)


def test_someone_elses_cancellation_is_not_claimed() -> None:
    async def body() -> None:
        session, alarm = _session(), _Alarm()

        async def table() -> str:
            alarm.set(time.monotonic() + 60, session, 1)
            alarm.sending = True
            try:
                await asyncio.get_running_loop().create_future()
            except asyncio.CancelledError:
                if not alarm.claim():
                    raise
                return "timeout"
            finally:
                alarm.clear()
            return "answered"

        task = asyncio.create_task(table())
        await asyncio.sleep(0.01)
        task.cancel()  # the referee stopping, say
        with pytest.raises(asyncio.CancelledError):
            await task
        alarm.stop()

    on_referee_loop(body)
