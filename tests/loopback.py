"""Loopback ports that misbehave on purpose, for the bots' connection-failure tests."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

CONNECTION_WAIT_S = 60.0
"""How long a handler waits on its connection (the bot under test may be slow to close it)."""


@contextmanager
def serving(handle: Callable[[socket.socket], None]) -> Iterator[int]:
    """A port of 127.0.0.1 that hands each connection to ``handle`` on a thread of its own,
    while in effect."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.1)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            connection.settimeout(CONNECTION_WAIT_S)
            threading.Thread(target=handle, args=(connection,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        server.close()


def closing_port() -> AbstractContextManager[int]:
    """A port that ends each connection at once, cleanly (a referee that cannot be told from a
    broken network: a restart, a proxy with nothing behind it), while in effect."""

    def hang_up(connection: socket.socket) -> None:
        # A FIN, not a reset: gRPC then says "Socket closed" every time.
        with connection, contextlib.suppress(OSError):
            connection.shutdown(socket.SHUT_WR)
            while connection.recv(4096):
                pass

    return serving(hang_up)
