"""A session's inbox (``arena.referee.session.Inbox``) on a real event loop: order, waking, and
a waiter cancelled after it was woken passing the entry on (asyncio.Queue's guarantees)."""

from __future__ import annotations

import asyncio

import pytest
from conftest import on_referee_loop

from arena.referee.session import Inbound, Inbox, Wake


def _entry(at: float) -> Inbound:
    return (at, Wake())


def test_entries_come_out_in_order_and_a_waiter_wakes_for_the_next() -> None:
    async def body() -> None:
        inbox = Inbox()
        assert inbox.empty() and inbox.qsize() == 0
        with pytest.raises(asyncio.QueueEmpty):
            inbox.get_nowait()
        inbox.put_nowait(_entry(1.0))
        inbox.put_nowait(_entry(2.0))
        assert inbox.qsize() == 2
        assert (await inbox.get())[0] == 1.0
        assert inbox.get_nowait()[0] == 2.0
        waiting = asyncio.create_task(inbox.get())
        await asyncio.sleep(0)
        assert not waiting.done()
        inbox.put_nowait(_entry(3.0))
        assert (await asyncio.wait_for(waiting, 5))[0] == 3.0
        assert inbox.empty()

    on_referee_loop(body)


def test_a_timed_out_wait_leaves_the_inbox_usable() -> None:
    async def body() -> None:
        inbox = Inbox()
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.01):
                await inbox.get()
        inbox.put_nowait(_entry(4.0))
        assert (await inbox.get())[0] == 4.0

    on_referee_loop(body)


def test_a_waiter_cancelled_after_its_wake_up_passes_the_entry_on() -> None:
    async def body() -> None:
        inbox = Inbox()
        first = asyncio.create_task(inbox.get())
        second = asyncio.create_task(inbox.get())
        await asyncio.sleep(0)
        inbox.put_nowait(_entry(5.0))  # wakes the first waiter...
        first.cancel()  # ...which is cancelled before it runs
        with pytest.raises(asyncio.CancelledError):
            await first
        assert (await asyncio.wait_for(second, 5))[0] == 5.0

    on_referee_loop(body)


def test_an_entry_put_back_is_read_first_again() -> None:
    async def body() -> None:
        inbox = Inbox()
        for at in (1.0, 2.0, 3.0):
            inbox.put_nowait(_entry(at))
        first = inbox.get_nowait()
        inbox.put_back(first)  # the table's step back from a message it is not to judge
        assert [inbox.get_nowait()[0] for _ in range(3)] == [1.0, 2.0, 3.0]
        assert inbox.empty()

    on_referee_loop(body)
