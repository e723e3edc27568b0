"""A session's write lock (``arena.referee.session.WriteLock``) on a real event loop: one holder
at a time, waiters served in order, no barging past a woken waiter, and a waiter cancelled after
it was woken passing the lock on (asyncio.Lock's guarantees)."""

from __future__ import annotations

import asyncio

import pytest
from conftest import on_referee_loop

from arena.referee.session import WriteLock


async def _hold(lock: WriteLock, order: list[str], name: str) -> None:
    if not lock.try_acquire():
        await lock.acquire()
    order.append(name)
    await asyncio.sleep(0)
    lock.release()


def test_one_holder_at_a_time_and_waiters_in_order() -> None:
    async def body() -> None:
        lock = WriteLock()
        assert lock.try_acquire()
        assert not lock.try_acquire()
        order: list[str] = []
        tasks = [asyncio.create_task(_hold(lock, order, n)) for n in "abc"]
        await asyncio.sleep(0)
        assert order == []  # all three wait for the holder
        lock.release()
        await asyncio.wait_for(asyncio.gather(*tasks), 5)
        assert order == ["a", "b", "c"]
        assert lock.try_acquire()  # free again once the last one released it

    on_referee_loop(body)


def test_a_newcomer_does_not_take_the_lock_from_a_woken_waiter() -> None:
    async def body() -> None:
        lock = WriteLock()
        assert lock.try_acquire()
        order: list[str] = []
        waiter = asyncio.create_task(_hold(lock, order, "waiter"))
        await asyncio.sleep(0)
        lock.release()  # wakes the waiter, which has not run yet
        assert not lock.try_acquire()
        await asyncio.wait_for(_hold(lock, order, "newcomer"), 5)
        await waiter
        assert order == ["waiter", "newcomer"]

    on_referee_loop(body)


def test_a_waiter_cancelled_after_its_wake_up_passes_the_lock_on() -> None:
    async def body() -> None:
        lock = WriteLock()
        assert lock.try_acquire()
        order: list[str] = []
        first = asyncio.create_task(_hold(lock, order, "first"))
        second = asyncio.create_task(_hold(lock, order, "second"))
        await asyncio.sleep(0)
        lock.release()  # wakes the first waiter...
        first.cancel()  # ...which is cancelled before it runs
        with pytest.raises(asyncio.CancelledError):
            await first
        await asyncio.wait_for(second, 5)
        assert order == ["second"]

    on_referee_loop(body)


def test_a_waiter_cancelled_while_waiting_leaves_the_others_their_turn() -> None:
    async def body() -> None:
        lock = WriteLock()
        assert lock.try_acquire()
        order: list[str] = []
        first = asyncio.create_task(_hold(lock, order, "first"))
        second = asyncio.create_task(_hold(lock, order, "second"))
        await asyncio.sleep(0)
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        lock.release()
        await asyncio.wait_for(second, 5)
        assert order == ["second"]
        assert lock.try_acquire()

    on_referee_loop(body)
