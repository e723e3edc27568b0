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


@pytest.mark.parametrize("woken", [True, False], ids=["after-its-wake-up", "while-waiting"])
def test_a_cancelled_waiter_leaves_the_lock_to_the_next(woken: bool) -> None:
    # Cancelled after the release woke it (it must pass the lock on), or before any release.
    async def body() -> None:
        lock = WriteLock()
        assert lock.try_acquire()
        order: list[str] = []
        first = asyncio.create_task(_hold(lock, order, "first"))
        second = asyncio.create_task(_hold(lock, order, "second"))
        await asyncio.sleep(0)
        if woken:
            lock.release()  # wakes the first waiter, cancelled below before it runs
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        if not woken:
            lock.release()
        await asyncio.wait_for(second, 5)
        assert order == ["second"]
        assert lock.try_acquire()  # free once the second released it

    on_referee_loop(body)
